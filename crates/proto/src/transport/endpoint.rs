//! The endpoint: every connection of one socket, the stateless handshake, and the
//! dispatch of datagrams to connections.
//!
//! The handshake is in `handshake.rs`; this file holds the connections and the
//! dispatch of what arrives for them.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use super::budget::{BackoffKey, Backoffs};
use super::connection::{Connection, PackMode, PayloadError, Unsealed, max_unreliable_for};
use super::connections::Connections;
use super::credential::{Binding, Credential};
use super::crypto::SecretRng;
use super::handshake::{SpentCookies, address_key};
use super::inbox::Inbox;
use super::peer_map::{PeerMap, peer_map};
use super::pool::BufPool;
use super::security::{Admission, Security};
use super::timers::TimerQueue;
use super::token::TOKEN_NONCE_SIZE;
use super::transmits::Transmits;
use super::{ChannelKind, ConfigError, ConnectionStats, DisconnectReason, EndpointConfig, EndpointStats, PeerId};
use crate::clock::Micros;
use crate::wire::{self, Cipher, DecodeError, MAX_DATAGRAM_SIZE, Packet, decode_packet};

/// How long a challenge cookie stays valid.
pub const COOKIE_LIFETIME_US: Micros = 10_000_000;
/// Longest we sit on received data before sending an ack-only packet.
pub const MAX_ACK_DELAY_US: Micros = 20_000;
/// Copies of a disconnect packet (there is no reliability left to resend it).
const DISCONNECT_COPIES: usize = 3;

/// Hands out peer ids. Shared (an `Arc`) so that the engine thread can name a
/// connection before the network thread has created it.
#[derive(Debug, Clone, Default)]
pub struct PeerIdAllocator(Arc<AtomicU32>);

impl PeerIdAllocator {
    /// An allocator whose next id is `next` (tests of the ids' wrap-around).
    #[cfg(test)]
    pub(super) fn starting_at(next: PeerId) -> Self {
        PeerIdAllocator(Arc::new(AtomicU32::new(next.wrapping_sub(1))))
    }

    /// A fresh id, never 0.
    pub fn next(&self) -> PeerId {
        loop {
            let id = self.0.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
            if id != 0 {
                return id;
            }
        }
    }
}

/// Something the endpoint tells its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The handshake completed (either direction); `credential` is what the peer
    /// proved in it, and `binding` who both ends are, if the initiator bound them
    /// (the responder checked its own id; `Endpoint::connect_bound`).
    Connected {
        /// The connection's id.
        peer: PeerId,
        /// The peer's address.
        addr: SocketAddr,
        /// What the peer proved.
        credential: Credential,
        /// Who both ends are, if the handshake was bound.
        binding: Option<Binding>,
    },
    /// The connection ended. Emitted once per peer that was announced or requested.
    Disconnected {
        /// The connection's id.
        peer: PeerId,
        /// Why it ended.
        reason: DisconnectReason,
    },
    /// A whole message arrived. Give `data` back with [`Endpoint::recycle`] to avoid
    /// allocating. `data` is sized to the message (an empty one holds no allocation).
    Message {
        /// The sender.
        peer: PeerId,
        /// The channel it came on.
        channel: u8,
        /// The message.
        data: Vec<u8>,
    },
}

impl Event {
    /// The peer the event is about.
    pub fn peer(&self) -> PeerId {
        match self {
            Event::Connected { peer, .. } | Event::Disconnected { peer, .. } | Event::Message { peer, .. } => *peer,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
/// Why a message could not be queued.
pub enum SendError {
    #[error("unknown or disconnected peer {0}")]
    /// No live connection has this id.
    UnknownPeer(PeerId),
    #[error("channel {0} is not configured")]
    /// The endpoint has no such channel.
    BadChannel(u8),
    #[error("message of {size} bytes exceeds the limit of {max} for this channel")]
    /// The message is larger than the channel takes.
    TooLarge {
        /// The message's size in bytes.
        size: usize,
        /// The channel's limit.
        max: usize,
    },
    #[error("send queue full ({queued} bytes queued, limit {limit})")]
    /// The connection's send queue is full.
    QueueFull {
        /// Bytes already queued.
        queued: usize,
        /// The queue's limit in bytes.
        limit: usize,
    },
    #[error("peer id {0} is already in use")]
    /// A connection already has this id.
    PeerIdInUse(PeerId),
    #[error("already connected or connecting to {0}")]
    /// A connection to this address exists or is being made.
    AddressInUse(SocketAddr),
    /// The transport itself cannot take messages (the network thread stopped, or its
    /// command queue is full); the text says which.
    #[error("{0}")]
    Unavailable(String),
}

/// Outgoing datagrams the endpoint holds between two drains by its driver without
/// growing its queue (a burst after a stall may go past it once).
const QUEUES_RESERVED: usize = 256;

/// Every connection of one socket (see the module docs). The owner feeds it
/// datagrams and time, and drains its events and outgoing datagrams.
pub struct Endpoint {
    pub(super) cfg: EndpointConfig,
    pub(super) ids: PeerIdAllocator,
    /// Every salt, cookie secret and ephemeral key comes from here.
    pub(super) rng: SecretRng,
    pub(super) cookie_secret: (u64, u64),
    /// Every connection, in one dense array with an index (`connections.rs`).
    pub(super) conns: Connections,
    pub(super) by_addr: HashMap<SocketAddr, PeerId>,
    pub(super) incoming: u32,
    /// Incoming connections per source host (an IPv4 address or an IPv6 /64, see
    /// `handshake::address_key`; only hosts that hold one).
    pub(super) incoming_per_ip: HashMap<IpAddr, u32>,
    pub(super) transmits: Transmits,
    /// Events for the owner, one bounded queue per peer, served round-robin.
    pub(super) inbox: Inbox,
    pub(super) pool: BufPool,
    pub(super) stats: EndpointStats,
    scratch: Vec<PeerId>,
    /// What touching a connection owes (`touched`): its place among the changed
    /// connections and its timer's settling.
    pub(super) changed: Changed,
    /// A received packet's frames, decrypted.
    opened: Vec<u8>,
    /// Each accepted connection's `Accepted` datagram, to repeat it if it was lost.
    pub(super) accepted: PeerMap<Vec<u8>>,
    /// Connect tokens held by live connections (by nonce), and each peer's.
    pub(super) tokens_in_use: HashMap<[u8; TOKEN_NONCE_SIZE], PeerId>,
    pub(super) token_of: PeerMap<[u8; TOKEN_NONCE_SIZE]>,
    /// Connect-token client ids held by live connections (at most one each), and
    /// each peer's.
    pub(super) clients_in_use: HashMap<u64, PeerId>,
    pub(super) client_of: PeerMap<u64>,
    /// Our own id for handshakes bound to us ([`Binding::responder`]); None: a bound
    /// handshake is refused (it was meant for someone else).
    pub(super) local_id: Option<u32>,
    /// The stated reasons of unauthenticated refusals of our handshakes that then timed
    /// out (bounded; `dial.rs`).
    pub(super) claims: VecDeque<(PeerId, DisconnectReason)>,
    /// Cookies that opened a connection (none opens a second).
    pub(super) spent_cookies: SpentCookies,
    /// Addresses and client ids dropped for misbehaving, waiting out their backoff.
    pub(super) backoffs: Backoffs,
    /// The newest Unix time (seconds) the owner told us, with our time when it was
    /// read; None while unknown (never told, or the clock unreadable or before 1970).
    wall_clock: Option<(Micros, u64)>,
}

impl Endpoint {
    /// An endpoint on `cfg` (validated first), with no connections.
    pub fn new(cfg: EndpointConfig, _now: Micros) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let mut rng = SecretRng::new(cfg.seed, &cfg.key_seed.0);
        let cookie_secret = (rng.next_u64(), rng.next_u64());
        Ok(Endpoint {
            cfg,
            ids: PeerIdAllocator::default(),
            rng,
            cookie_secret,
            conns: Connections::new(),
            by_addr: HashMap::new(),
            incoming: 0,
            incoming_per_ip: HashMap::new(),
            transmits: Transmits::with_capacity(QUEUES_RESERVED),
            inbox: Inbox::default(),
            pool: BufPool::new(4096),
            stats: EndpointStats::default(),
            scratch: Vec::new(),
            changed: Changed::default(),
            opened: Vec::with_capacity(MAX_DATAGRAM_SIZE),
            accepted: peer_map(),
            tokens_in_use: HashMap::new(),
            token_of: peer_map(),
            clients_in_use: HashMap::new(),
            client_of: peer_map(),
            spent_cookies: SpentCookies::default(),
            backoffs: Backoffs::default(),
            claims: VecDeque::new(),
            local_id: None,
            wall_clock: None,
        })
    }

    /// Tells the endpoint the wall clock: `unix_secs` is the Unix time in seconds read
    /// at `now` (None: the clock cannot be read or reads before 1970). Connect tokens
    /// expire in Unix time and the endpoint is fed a monotonic `now`, so a token server's
    /// owner calls this as it goes, before handing over datagrams: the newest value
    /// counts, so a clock stepped since (NTP, a suspend) is followed. While it is
    /// unknown every token is refused (`TokenExpired`, counted in
    /// `EndpointStats::tokens_refused_clock_unknown`): a clock that cannot be trusted
    /// must not let every token look unexpired. Endpoints that take no tokens ignore it.
    pub fn set_unix_time(&mut self, now: Micros, unix_secs: Option<u64>) {
        self.wall_clock = unix_secs.map(|secs| (now, secs));
    }

    /// Whether the endpoint needs the wall clock ([`Endpoint::set_unix_time`]): it
    /// checks connect tokens.
    pub fn wants_unix_time(&self) -> bool {
        matches!(&self.cfg.security, Security::Encrypted { admission: Admission::Tokens(_), .. })
    }

    /// The Unix time at `now`, from the newest reading (None while unknown). A `now`
    /// before the reading (not sent by a monotonic driver) counts as the reading's.
    pub(super) fn unix_secs(&self, now: Micros) -> Option<u64> {
        self.wall_clock.map(|(at, secs)| secs.saturating_add(now.saturating_sub(at) / 1_000_000))
    }

    /// Our own id in bound handshakes ([`Binding`]): a P2P session sets the lowest
    /// index of its local players once it knows them.
    pub fn set_local_id(&mut self, id: Option<u32>) {
        self.local_id = id;
    }

    /// The endpoint's config.
    pub fn config(&self) -> &EndpointConfig {
        &self.cfg
    }

    /// The largest unreliable or sequenced message [`Endpoint::send`] takes: one
    /// datagram of the config's `max_datagram_size` ([`MAX_UNRELIABLE`](super::MAX_UNRELIABLE)
    /// at the default 1,200).
    pub fn max_unreliable(&self) -> usize {
        max_unreliable_for(self.cfg.max_datagram_size)
    }

    /// The allocator this endpoint names new connections with.
    pub fn peer_id_allocator(&self) -> PeerIdAllocator {
        self.ids.clone()
    }

    /// Starts connecting to `addr`; `Connected` or `Disconnected` follows.
    pub fn connect(&mut self, now: Micros, addr: SocketAddr) -> Result<PeerId, SendError> {
        let id = self.ids.next();
        self.connect_with_id(now, addr, id)?;
        Ok(id)
    }

    /// Like [`Endpoint::connect`] with an id taken from [`Endpoint::peer_id_allocator`].
    pub fn connect_with_id(&mut self, now: Micros, addr: SocketAddr, peer: PeerId) -> Result<(), SendError> {
        self.connect_bound(now, addr, peer, None)
    }

    /// Like [`Endpoint::connect_with_id`], binding who both ends are into the handshake
    /// ([`Binding`]): the other end must have `binding.responder` as its own id
    /// ([`Endpoint::set_local_id`]), or the handshake fails there.
    pub fn connect_bound(
        &mut self,
        now: Micros,
        addr: SocketAddr,
        peer: PeerId,
        binding: Option<Binding>,
    ) -> Result<(), SendError> {
        self.inbox.now = self.inbox.now.max(now);
        if peer == 0 || self.conns.contains_key(&peer) {
            return Err(SendError::PeerIdInUse(peer));
        }
        if self.by_addr.contains_key(&addr) {
            return Err(SendError::AddressInUse(addr));
        }
        let salt = self.rng.next_u64();
        let mut conn = Connection::new(peer, addr, true, salt, &self.cfg, now);
        conn.binding = binding;
        self.prepare_initiator(&mut conn);
        self.insert_connection(conn);
        self.by_addr.insert(addr, peer);
        self.send_handshake(now, peer);
        Ok(())
    }

    /// Closes a connection (or abandons an attempt). The peer is told; a `Disconnected`
    /// event with reason `Client` (we initiated) or `Kicked` (we accepted) follows.
    /// Unknown peers are ignored.
    pub fn disconnect(&mut self, now: Micros, peer: PeerId) {
        if let Some(c) = self.conns.get(&peer) {
            let reason = if c.initiator { DisconnectReason::Client } else { DisconnectReason::Kicked };
            self.disconnect_with(now, peer, reason);
        }
    }

    /// Closes a connection telling the peer why: `reason` is what its `Disconnected`
    /// event says (for example `ServerFull` or `VersionMismatch` for a client the
    /// game refused, so that it knows whether trying again can help). Our own event
    /// carries the same reason. Unknown peers are ignored.
    pub fn disconnect_with(&mut self, now: Micros, peer: PeerId, reason: DisconnectReason) {
        self.inbox.now = self.inbox.now.max(now);
        if self.conns.contains_key(&peer) {
            self.close(peer, reason, true);
        }
    }

    /// Changes the silence timeout (`EndpointConfig::timeout_us`; `Micros::MAX`: never)
    /// of every connection, and of those to come. A connection admitted with a
    /// connect token keeps the timeout its token names. Keepalives follow: a
    /// connection sends one after a quarter of its timeout at most. Error: 0.
    pub fn set_timeout(&mut self, timeout_us: Micros) -> Result<(), ConfigError> {
        if timeout_us == 0 {
            return Err(ConfigError("timeout_us must be > 0".into()));
        }
        let old = self.cfg.timeout_us;
        self.cfg.timeout_us = timeout_us;
        for c in self.conns.values_mut() {
            mark_changed(c, &mut self.changed);
            if c.timeout_us == old {
                c.timeout_us = timeout_us;
            }
        }
        Ok(())
    }

    /// Closes every connection, telling each peer (reason `Client` or `Server`).
    pub fn shutdown(&mut self, now: Micros) {
        self.inbox.now = self.inbox.now.max(now);
        let peers: Vec<PeerId> = self.conns.keys().copied().collect();
        for peer in peers {
            let reason = if self.conns[&peer].initiator { DisconnectReason::Client } else { DisconnectReason::Server };
            self.close(peer, reason, true);
        }
    }

    /// Queues a message; it leaves at the next [`Endpoint::flush`]. Allowed while the
    /// connection is still being established (it waits for the handshake).
    pub fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), SendError> {
        let kind = *self.cfg.channels.get(channel as usize).ok_or(SendError::BadChannel(channel))?;
        let max = if kind == ChannelKind::Reliable { self.cfg.max_message_size } else { self.max_unreliable() };
        if data.len() > max {
            return Err(SendError::TooLarge { size: data.len(), max });
        }
        let conn = touched(&mut self.conns, &mut self.changed, peer).ok_or(SendError::UnknownPeer(peer))?;
        let queued = conn.queued_bytes();
        if queued + data.len() > self.cfg.send_queue_limit_bytes {
            return Err(SendError::QueueFull { queued, limit: self.cfg.send_queue_limit_bytes });
        }
        conn.queue(channel, data, &mut self.pool);
        Ok(())
    }

    /// Packs everything queued into datagrams (at most `max_datagrams_per_flush` per
    /// connection; the rest waits for the next flush). Call once per tick. What the send
    /// pace (`PeerLimits`) holds back leaves from [`Endpoint::update`] once the pace
    /// allows: [`Endpoint::next_timeout`] names that time.
    pub fn flush(&mut self, now: Micros) {
        let max = self.cfg.max_datagrams_per_flush;
        let prefetch = self.cfg.prefetch;
        let mut conns = self.conns.values_mut().filter(|c| c.is_connected()).peekable();
        while let Some(c) = conns.next() {
            // The next connection (and its key) starts loading while this one packs: a
            // server flushing to every client a tick otherwise waits for each in turn.
            if let Some(n) = conns.peek() {
                if let Some(p) = prefetch {
                    p.value::<Connection>(n);
                }
                if let Some(s) = &n.sealing {
                    s.keys.prefetch_seal();
                }
            }
            mark_changed(c, &mut self.changed);
            c.pack(now, PackMode::Flush, max, &mut self.pool, &mut self.transmits);
        }
    }

    /// A hint that a datagram from `from` comes next to [`Endpoint::handle_datagram`]:
    /// its connection, and the key that opens it, start loading (a caller with a batch
    /// of datagrams gives the next one's sender while it hands over the current one).
    /// Changes nothing.
    pub fn prefetch_for(&self, from: SocketAddr) {
        // Without an owner's prefetch, and without sealed packets or with the crate's
        // own keys (whose hint does nothing), the lookup would be wasted on every
        // datagram.
        let keys = self.cfg.aead.is_some() && self.cfg.security.seals_packets();
        if self.cfg.prefetch.is_none() && !keys {
            return;
        }
        let Some(c) = self.by_addr.get(&from).and_then(|peer| self.conns.get(peer)) else { return };
        if let Some(p) = self.cfg.prefetch {
            p.value(c);
        }
        if let Some(s) = c.sealing.as_ref().filter(|_| keys) {
            s.keys.prefetch_open();
        }
    }

    /// Sends `frames` (raw frame bytes, truncated to what a datagram holds) to a
    /// connected peer in one packet, sealed with the connection's key: a test plays a
    /// peer that holds valid credentials and breaks the protocol or floods. Only with
    /// the `test-hooks` feature; returns false for a peer that is not connected.
    #[cfg(feature = "test-hooks")]
    pub fn send_raw_frames(&mut self, now: Micros, peer: PeerId, frames: &[u8]) -> bool {
        let Some(c) = touched(&mut self.conns, &mut self.changed, peer).filter(|c| c.is_connected()) else {
            return false;
        };
        c.send_raw(now, frames, &mut self.pool, &mut self.transmits);
        true
    }

    /// Takes one datagram from the network. Anything malformed is counted and dropped.
    pub fn handle_datagram(&mut self, now: Micros, from: SocketAddr, data: &[u8]) {
        self.inbox.now = self.inbox.now.max(now);
        self.stats.datagrams_received += 1;
        self.stats.bytes_received += data.len() as u64;
        let packet = match decode_packet(data, self.cfg.protocol_id) {
            Ok(p) => p,
            Err(e) => return self.count_decode_error(from, e),
        };
        match packet {
            Packet::ConnectRequest { version, client_salt, security } => {
                self.on_request(now, from, version, client_salt, security)
            }
            Packet::ConnectResponse(r) => self.on_response(now, from, &r),
            Packet::Challenge { client_salt, cookie_time, cookie_mac } => {
                self.on_challenge(now, from, client_salt, cookie_time, cookie_mac)
            }
            Packet::Accepted { client_salt, server_salt, server_public, cipher, confirm } => {
                let head = &data[..data.len() - confirm.len()];
                self.on_accepted(now, from, client_salt, server_salt, &server_public, cipher, head, &confirm)
            }
            Packet::Denied { client_salt, reason, tag } => self.on_denied(from, client_salt, reason, tag),
            Packet::Payload { header, .. } => {
                let Some(peer) = self.connected(from, header.salt).map(|c| c.peer) else {
                    self.stats.unknown_sender += 1;
                    return;
                };
                let c = touched(&mut self.conns, &mut self.changed, peer).expect("looked up above");
                let header_len = header.encoded_len();
                let (seq, frames) = match c.unseal(header.seq, header.seq_high, data, header_len, &mut self.opened) {
                    Ok(Some(seq)) => (Some(seq), &self.opened[..]),
                    Ok(None) => (None, &data[header_len..]),
                    Err(why) => return self.count_unsealed(why),
                };
                match c.on_payload(now, &header, seq, frames, data.len(), &mut self.pool, &mut self.inbox) {
                    Ok(()) => {}
                    Err(PayloadError::Malformed(_) | PayloadError::WrongChannel(_)) => {
                        c.malformed += 1;
                        self.stats.malformed += 1;
                    }
                    Err(PayloadError::OverBudget) => self.stats.over_budget += 1,
                    Err(PayloadError::Flooding) => {
                        self.stats.over_budget += 1;
                        self.stats.flooding += 1;
                        self.back_off(now, peer);
                        self.close(peer, DisconnectReason::Flooding, true);
                    }
                    Err(PayloadError::Violation(_)) => {
                        let peer = c.peer;
                        self.back_off(now, peer);
                        self.close(peer, DisconnectReason::ProtocolError, true);
                    }
                }
            }
            Packet::Disconnect { salt, seq, reason, tag } => {
                let Some(peer) = self.connected(from, salt).map(|c| c.peer) else {
                    self.stats.unknown_sender += 1;
                    return;
                };
                let c = touched(&mut self.conns, &mut self.changed, peer).expect("looked up above");
                let head_len = data.len() - tag.len();
                if let Err(why) = c.unseal(seq, None, data, head_len, &mut self.opened) {
                    return self.count_unsealed(why);
                }
                self.close(peer, reason, false);
            }
        }
    }

    fn count_unsealed(&mut self, why: Unsealed) {
        match why {
            Unsealed::Replayed => self.stats.replayed += 1,
            Unsealed::Forged => self.stats.forged += 1,
        }
    }

    fn count_decode_error(&mut self, from: SocketAddr, e: DecodeError) {
        match e {
            DecodeError::WrongProtocol(_) => self.stats.wrong_protocol += 1,
            DecodeError::WrongVersion(_) => self.stats.wrong_version += 1,
            _ => {
                self.stats.malformed += 1;
                if let Some(c) = self.by_addr.get(&from).and_then(|p| touched(&mut self.conns, &mut self.changed, *p)) {
                    c.malformed += 1;
                }
            }
        }
    }

    /// The established connection at `from`, if `salt` proves the sender is its peer.
    fn connected(&mut self, from: SocketAddr, salt: u32) -> Option<&mut Connection> {
        let peer = *self.by_addr.get(&from)?;
        touched(&mut self.conns, &mut self.changed, peer).filter(|c| c.is_connected() && c.salt == salt)
    }

    /// `peer`, about to be dropped for misbehaving, makes its address (and its connect
    /// token's client id) wait before a new handshake is admitted: otherwise it is
    /// back at once, and each round costs us a handshake and a flood. Only for
    /// connections we accepted (we refuse handshakes, not dials of our own).
    fn back_off(&mut self, now: Micros, peer: PeerId) {
        let Some(c) = self.conns.get(&peer).filter(|c| !c.initiator) else { return };
        self.backoffs.dropped(now, BackoffKey::Address(address_key(c.addr.ip())));
        if let Some(&id) = self.client_of.get(&peer) {
            self.backoffs.dropped(now, BackoffKey::ClientId(id));
        }
    }

    /// Removes a connection and reports it. `notify` sends the peer redundant
    /// disconnect packets (only meaningful once connected).
    pub(super) fn close(&mut self, peer: PeerId, reason: DisconnectReason, notify: bool) {
        let Some(mut c) = self.conns.remove(&peer) else { return };
        if c.listed_changed {
            // The list holds live connections only, so it never outgrows them.
            self.changed.list.retain(|&p| p != peer);
        }
        self.by_addr.remove(&c.addr);
        self.accepted.remove(&peer);
        if let Some(client_id) = self.client_of.remove(&peer) {
            self.clients_in_use.remove(&client_id);
        }
        if let Some(nonce) = self.token_of.remove(&peer) {
            self.tokens_in_use.remove(&nonce);
        }
        if !c.initiator {
            self.incoming -= 1;
            let key = address_key(c.addr.ip());
            if let Some(n) = self.incoming_per_ip.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    self.incoming_per_ip.remove(&key);
                }
            }
        }
        if notify && c.is_connected() {
            // The copies are the same packet (one sequence number, one tag): the peer
            // takes the first that arrives and its replay window drops the others.
            let mut first = self.pool.get();
            wire::encode_disconnect(&mut first, self.cfg.protocol_id, c.salt, c.next_seq(), reason);
            c.seal_disconnect(&mut first);
            for _ in 0..DISCONNECT_COPIES {
                self.transmits.push(c.addr, &first);
            }
            self.pool.put(first);
        }
        c.release(&mut self.pool);
        if reason == DisconnectReason::Flooding {
            // Its backlog is the flood itself: the owner only hears that it ended.
            let pool = &mut self.pool;
            self.inbox.discard_messages(peer, |b| pool.put(b));
        }
        self.inbox.push(Event::Disconnected { peer, reason });
    }

    /// Runs timers: handshake retries and timeouts, connection timeouts, keepalives,
    /// delayed acks and reliable resends. Call whenever [`Endpoint::next_timeout`] passes
    /// (calling more often is harmless).
    pub fn update(&mut self, now: Micros) {
        self.inbox.now = self.inbox.now.max(now);
        let mut peers = std::mem::take(&mut self.scratch);
        peers.clear();
        // Only the connections whose timers are due (`timers.rs`); the others are left
        // untouched (touching one would forget its timer and list it as changed). An
        // idle connection's rates decay when its keepalive or its timeout comes due.
        self.settle_timers();
        self.changed.timers.take_due(now, &mut self.conns, &mut peers);
        let max = self.cfg.max_datagrams_per_flush;
        for &peer in &peers {
            let Some(c) = touched(&mut self.conns, &mut self.changed, peer) else { continue };
            if !c.is_connected() {
                if now.saturating_sub(c.created_at) >= self.cfg.connect_timeout_us {
                    self.handshake_timed_out(peer);
                } else if now.saturating_sub(c.last_send) >= self.cfg.handshake_retry_us {
                    self.send_handshake(now, peer);
                }
                continue;
            }
            // Silence, or data never acknowledged although the peer talks: a peer that
            // keeps a connection alive without acknowledging would otherwise be sent
            // resends for as long as it likes.
            let unacked_for = c.unacked_since().map_or(0, |t| now.saturating_sub(t));
            let not_acknowledging = unacked_for >= c.unacked_limit(c.timeout_us);
            if now.saturating_sub(c.last_recv) >= c.timeout_us || not_acknowledging {
                self.stats.unacknowledged_drops += not_acknowledging as u64;
                self.close(peer, DisconnectReason::Timeout, false);
                continue;
            }
            // What a flush left for the pace goes with the resends once it may.
            let mode = if c.flush_held() { PackMode::Flush } else { PackMode::ResendsOnly };
            c.pack(now, mode, max, &mut self.pool, &mut self.transmits);
            if now.saturating_sub(c.last_send) >= c.keepalive_us(self.cfg.keepalive_interval_us) || c.ack_due(now) {
                c.send_empty(now, &mut self.pool, &mut self.transmits);
            }
            c.roll_rates(now);
        }
        self.scratch = peers;
    }

    /// The next time [`Endpoint::update`] has work to do, if any connection exists.
    pub fn next_timeout(&mut self) -> Option<Micros> {
        // Only the timers of the connections touched since the last call are computed
        // again (`timers.rs`), not every connection's.
        self.settle_timers();
        let next = self.changed.timers.next(&self.conns);
        // Every test run checks the queue against a walk of every connection.
        debug_assert_eq!(
            next,
            self.conns.values().map(|c| timer_of(c, &self.cfg)).min(),
            "the timer queue lost a connection's timer"
        );
        next
    }

    /// Computes the timers of the connections touched since the last settle.
    fn settle_timers(&mut self) {
        let cfg = &self.cfg;
        self.changed.timers.settle(&mut self.conns, |c| kept_timer(c, cfg));
    }

    /// A peer id no live connection holds. The allocator's ids wrap after 2^32 of
    /// them, and a server that has accepted that many may still hold a connection
    /// from the first round: its id is skipped, not given to a second connection.
    pub(super) fn free_peer_id(&self) -> PeerId {
        loop {
            let peer = self.ids.next();
            if !self.conns.contains_key(&peer) {
                return peer;
            }
        }
    }

    /// Adds a new connection (its timer is settled with the next call that needs it).
    pub(super) fn insert_connection(&mut self, conn: Connection) {
        let peer = conn.peer;
        self.conns.insert(conn);
        self.changed.timers.reserve_for(self.conns.len());
        touched(&mut self.conns, &mut self.changed, peer);
    }

    /// Copies the next outgoing datagram into `out` (which must hold the config's
    /// `max_datagram_size` bytes, at most [`MAX_DATAGRAM_SIZE`]: no datagram is
    /// larger) and returns its destination and length.
    pub fn poll_transmit(&mut self, out: &mut [u8]) -> Option<(SocketAddr, usize)> {
        let max = self.cfg.max_datagram_size;
        assert!(out.len() >= max, "poll_transmit needs a {max}-byte buffer");
        let (addr, n) = self.transmits.pop(out)?;
        self.stats.datagrams_sent += 1;
        self.stats.bytes_sent += n as u64;
        Some((addr, n))
    }

    /// The next event. Peers take turns: one peer's backlog never holds back another
    /// peer's events (each peer's own events keep their order).
    pub fn poll_event(&mut self) -> Option<Event> {
        self.inbox.pop().map(|(_, e)| e)
    }

    /// Like [`Endpoint::poll_event`], with the time the event happened (the `now` of the
    /// call that produced it): for a message, when its datagram arrived, however long
    /// it then waited to be polled.
    pub fn poll_event_timed(&mut self) -> Option<(Micros, Event)> {
        self.inbox.pop()
    }

    /// Events waiting to be polled, all peers.
    pub fn pending_events(&self) -> usize {
        self.inbox.len()
    }

    /// Gives a message buffer back for reuse.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        self.pool.put(buf);
    }

    /// `peer`'s connection figures, if it has a connection.
    pub fn stats(&self, peer: PeerId) -> Option<ConnectionStats> {
        let mut s = self.conns.get(&peer)?.stats();
        s.recv_queue_bytes = self.inbox.bytes(peer) as u64;
        Some(s)
    }

    /// The figures for the whole endpoint.
    pub fn endpoint_stats(&self) -> EndpointStats {
        EndpointStats { connections: self.conns.len() as u64, queued_events: self.inbox.len() as u64, ..self.stats }
    }

    /// The bytes queued for `peer` that `send` checks `send_queue_limit_bytes` against
    /// (unsent messages, unacknowledged reliable ones): `ConnectionStats::
    /// send_queue_bytes` without building the rest of the statistics.
    pub fn queued_bytes(&self, peer: PeerId) -> Option<usize> {
        self.conns.get(&peer).map(Connection::queued_bytes)
    }

    /// Calls `f` with the queued bytes (as [`Endpoint::queued_bytes`]) and the next
    /// timer (as in [`Endpoint::next_timeout`]) of every connection that anything
    /// touched since the last call, and forgets them: what a caller that mirrors the
    /// send queues needs to look at, instead of every connection each time, and the
    /// only timers that can have come earlier since it last walked them all.
    pub fn drain_changed(&mut self, mut f: impl FnMut(PeerId, usize, Micros)) {
        for peer in self.changed.list.drain(..) {
            if let Some(c) = self.conns.get_mut(&peer) {
                c.listed_changed = false;
                f(peer, c.queued_bytes(), kept_timer(c, &self.cfg));
            }
        }
    }

    /// The AEAD that seals `peer`'s packets (both directions): `None` before its
    /// handshake completes, and on a plaintext or carrier-protected connection.
    pub fn cipher(&self, peer: PeerId) -> Option<Cipher> {
        self.conns.get(&peer)?.sealing.as_ref().map(|s| s.keys.cipher())
    }

    /// Whether `peer`'s handshake has completed and it is not closed.
    pub fn is_connected(&self, peer: PeerId) -> bool {
        self.conns.get(&peer).is_some_and(|c| c.is_connected())
    }

    /// Peers with a connection in any state, in the table's order (the same for the
    /// same history of connections).
    pub fn peers(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.conns.keys().copied()
    }

    /// `peer`'s address, if it has a connection.
    pub fn peer_addr(&self, peer: PeerId) -> Option<SocketAddr> {
        self.conns.get(&peer).map(|c| c.addr)
    }
}

/// When `c` next has timer work (a handshake retry or its timeout, a keepalive, the
/// silence timeout, an owed ack, a resend, the not-acknowledging limit).
/// `c`'s next timer, from its cache (computed and kept when something touched it).
fn kept_timer(c: &Connection, cfg: &EndpointConfig) -> Micros {
    let t = c.next_timer.get().unwrap_or_else(|| {
        let t = timer_of(c, cfg);
        c.next_timer.set(Some(t));
        t
    });
    // Every test run checks that nothing changed a connection without forgetting its
    // timer.
    debug_assert_eq!(t, timer_of(c, cfg), "a stale timer for peer {}", c.peer);
    t
}

fn timer_of(c: &Connection, cfg: &EndpointConfig) -> Micros {
    if !c.is_connected() {
        return (c.last_send + cfg.handshake_retry_us).min(c.created_at + cfg.connect_timeout_us);
    }
    // (`timeout_us` may be `Micros::MAX`: never.)
    let mut t = (c.last_send + c.keepalive_us(cfg.keepalive_interval_us)).min(c.last_recv.saturating_add(c.timeout_us));
    if let Some(a) = c.ack_deadline() {
        t = t.min(a);
    }
    // A resend, or what a flush left, waits for the pace too: a timer kept at a resend
    // already due while the pace holds it back would wake the thread without end.
    let paced = |at: Micros| at.max(c.pace_ready_at());
    if let Some(r) = c.next_resend() {
        t = t.min(paced(r));
    }
    if c.flush_held() {
        t = t.min(paced(0));
    }
    if let Some(o) = c.unacked_since() {
        t = t.min(o.saturating_add(c.unacked_limit(c.timeout_us)));
    }
    t
}

/// The connection to `peer` for a change: its kept timer is forgotten, and it is listed
/// among the changed connections (`Endpoint::drain_changed`). Takes the two fields
/// alone, so the endpoint's others stay free to borrow beside them.
pub(super) fn touched<'a>(
    conns: &'a mut Connections,
    changed: &mut Changed,
    peer: PeerId,
) -> Option<&'a mut Connection> {
    let c = conns.get_mut(&peer)?;
    mark_changed(c, changed);
    Some(c)
}

fn mark_changed(c: &mut Connection, changed: &mut Changed) {
    c.next_timer.set(None);
    changed.timers.unsettle(c);
    if !c.listed_changed {
        c.listed_changed = true;
        changed.list.push(c.peer);
    }
}

/// The connections touched since the owner last drained them, and since their timers
/// were last settled.
#[derive(Debug, Default)]
pub(super) struct Changed {
    /// Touched since the last `drain_changed`, each once (its `listed_changed` flag);
    /// at most one entry per live connection.
    list: Vec<PeerId>,
    timers: TimerQueue,
}
