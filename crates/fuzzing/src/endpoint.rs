//! The transport targets: one [`Endpoint`] facing forged datagrams, and two endpoints
//! over an in-memory link that the input drops, duplicates, reorders and corrupts.

use std::collections::{BTreeSet, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::Input;
use super::decoders::{PID, patch_prefix};
use super::relay::reason;
use tickwire_proto::wire::{
    self, AckFields, ConnectResponse, MAX_DATAGRAM_SIZE, Packet, PayloadHeader, SecurityMode, TAG_SIZE, decode_packet,
};
use tickwire_proto::{
    CHANNEL_RELIABLE, CHANNEL_SEQUENCED, CHANNEL_UNRELIABLE, DisconnectReason, Endpoint, EndpointConfig,
    MAX_UNRELIABLE, Micros, NetEvent as Event, PeerId, Security,
};

/// Operations one input may ask for (each takes at least one byte anyway).
const MAX_OPS: usize = 4096;
const ADDRS: usize = 4;

fn addr(i: usize) -> SocketAddr {
    match i {
        3 => SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 4003),
        _ => SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1 + i as u8)), 4000 + i as u16),
    }
}

fn config(seed: u64, max_incoming: u32) -> EndpointConfig {
    EndpointConfig { protocol_id: PID, max_incoming, seed, ..EndpointConfig::default() }
}

/// The [`endpoint`] target's endpoint: insecure plaintext. Its peers are forged by
/// hand from the input (no X25519, no proof, no packet keys), and on an encrypted
/// endpoint every forged connect response would be refused before a connection exists
/// and every forged payload would fail authentication before the frame parser, the
/// budgets and the channels saw it. What this target is for (the cookie, the
/// amplification limit, the frame and reliability code behind the tag) is the same
/// code either way; the encrypted handshake has its own target
/// ([`super::handshake`]), and [`endpoint_pair`] runs encrypted.
fn plaintext(seed: u64, max_incoming: u32) -> EndpointConfig {
    EndpointConfig { security: Security::InsecurePlaintext, ..config(seed, max_incoming) }
}

/// What the forged peer at one address has learnt from what the endpoint sent it.
#[derive(Debug, Default, Clone, Copy)]
struct Forged {
    /// Its salt as a client (it chose it), or ours when we dial it (we chose it).
    client_salt: u64,
    cookie: (u64, u64),
    /// The connection salt, once a connected packet from the endpoint showed it.
    salt: u32,
    next_seq: u16,
}

/// The endpoint under test and what its events promised so far.
struct One {
    ep: Endpoint,
    forged: [Forged; ADDRS],
    /// Connections we opened (the endpoint dials), by peer id.
    dialled: BTreeSet<PeerId>,
    /// Peers announced (Connected) and not yet gone; peers gone.
    live: BTreeSet<PeerId>,
    gone: BTreeSet<PeerId>,
    buf: Vec<u8>,
}

impl One {
    /// Addresses that may receive anything: an established connection, or one we dial.
    fn privileged(&self) -> BTreeSet<SocketAddr> {
        self.ep
            .peers()
            .filter(|&p| self.ep.is_connected(p) || self.dialled.contains(&p))
            .filter_map(|p| self.ep.peer_addr(p))
            .collect()
    }

    /// Drains what the endpoint sent: learns salts and cookies from it, and checks that
    /// nothing went to an address outside `privileged` except, when `reply_to` is
    /// `(from, len)`, replies to `from` that add up to no more than `len` bytes.
    fn drain(&mut self, privileged: &BTreeSet<SocketAddr>, reply_to: Option<(SocketAddr, usize)>) {
        let mut replied = 0usize;
        while let Some((to, n)) = self.ep.poll_transmit(&mut self.buf) {
            assert!(n <= MAX_DATAGRAM_SIZE);
            if !privileged.contains(&to) {
                match reply_to {
                    Some((from, len)) if from == to => {
                        replied += n;
                        assert!(replied <= len, "{replied} bytes answered a {len}-byte datagram from unproven {to}");
                    }
                    _ => panic!("{n} bytes to {to}, which never proved its address and did not just write"),
                }
            }
            let Some(i) = (0..ADDRS).find(|&i| addr(i) == to) else { continue };
            let f = &mut self.forged[i];
            match decode_packet(&self.buf[..n], PID) {
                Ok(Packet::Challenge { cookie_time, cookie_mac, .. }) => f.cookie = (cookie_time, cookie_mac),
                Ok(Packet::ConnectRequest { client_salt, .. }) => f.client_salt = client_salt,
                Ok(Packet::ConnectResponse(r)) => f.client_salt = r.client_salt,
                Ok(Packet::Payload { header, .. }) => f.salt = header.salt,
                Ok(Packet::Disconnect { salt, .. }) => f.salt = salt,
                _ => {}
            }
        }
        while let Some(e) = self.ep.poll_event() {
            match e {
                Event::Connected { peer, .. } => {
                    assert!(!self.gone.contains(&peer), "peer {peer} connected after it was gone");
                    assert!(self.live.insert(peer), "peer {peer} connected twice");
                }
                Event::Disconnected { peer, .. } => {
                    assert!(self.live.remove(&peer) || self.dialled.contains(&peer), "unknown peer {peer} left");
                    assert!(self.gone.insert(peer), "peer {peer} disconnected twice");
                }
                Event::Message { peer, data, .. } => {
                    assert!(self.live.contains(&peer), "a message from peer {peer}, which is not connected");
                    self.ep.recycle(data);
                }
            }
        }
    }

    fn datagram(&mut self, now: Micros, from: usize, d: &[u8]) {
        let privileged = self.privileged();
        self.ep.handle_datagram(now, addr(from), d);
        self.drain(&privileged, Some((addr(from), d.len())));
    }

    fn pick_peer(&self, inp: &mut Input<'_>) -> Option<PeerId> {
        let peers: Vec<PeerId> = self.ep.peers().collect();
        (!peers.is_empty()).then(|| peers[inp.below(peers.len())])
    }
}

/// One endpoint (accepting up to two connections, and dialling when asked) fed a
/// sequence of datagrams from four addresses, with timers and sends in between. The
/// harness plays the peers: raw datagrams, or handshake and connected packets built
/// from what the endpoint told each address (cookies, salts). The endpoint is
/// insecure plaintext (`plaintext`: a forged peer needs no keys).
///
/// Oracles: no datagram goes to an address that has neither completed a handshake nor
/// been dialled, except replies to a datagram that address just sent, and those add up
/// to no more bytes than that datagram (no amplification); events keep their contract
/// (one Connected and at most one Disconnected per peer, messages only from connected
/// peers).
pub fn endpoint(data: &[u8]) {
    let mut inp = Input::new(data);
    let mut now: Micros = 1_000_000;
    let mut one = One {
        ep: Endpoint::new(plaintext(7, 2), now).expect("valid config"),
        forged: [Forged::default(); ADDRS],
        dialled: BTreeSet::new(),
        live: BTreeSet::new(),
        gone: BTreeSet::new(),
        buf: vec![0; MAX_DATAGRAM_SIZE],
    };
    let mut d = Vec::with_capacity(2 * MAX_DATAGRAM_SIZE);
    for _ in 0..MAX_OPS {
        if inp.is_empty() {
            break;
        }
        let op = inp.u8();
        let a = (op >> 4) as usize % ADDRS;
        // Bit 6 of a handshake op: claim encryption (the endpoint refuses it with a
        // security mismatch), or give an Accepted or Disconnect key fields from the input.
        let odd = op & 0x40 != 0;
        let f = one.forged[a];
        d.clear();
        match op & 0x0f {
            // A raw datagram, its prefix made ours (odd) or as it is (even).
            0 | 1 => {
                let len = inp.u16() as usize % (MAX_DATAGRAM_SIZE + 8);
                d.extend_from_slice(inp.bytes(len));
                if op & 1 == 1 {
                    patch_prefix(&mut d);
                }
            }
            2 => {
                let salt = inp.u64();
                one.forged[a].client_salt = salt;
                wire::encode_connect_request(&mut d, PID, salt, mode(odd));
            }
            // A response: the cookie this address was given (or not, one time in 8).
            3 => {
                let (t, m) = if inp.u8() & 7 == 0 { (inp.u64(), inp.u64()) } else { f.cookie };
                let salt = if inp.bool() { inp.u64() } else { f.client_salt };
                let r = ConnectResponse {
                    client_salt: salt,
                    cookie_time: t,
                    cookie_mac: m,
                    security: mode(odd),
                    client_public: [0; 32],
                    proof: [0; 16],
                    token: None,
                    binding: None,
                    ciphers: wire::CipherOffer::new(inp.bool()),
                };
                wire::encode_connect_response(&mut d, PID, &r);
            }
            // A connected packet with the salt this address learnt, without its ack
            // fields if odd (they are read from the input either way).
            4 | 5 => {
                let seq = if op & 1 == 0 { f.next_seq } else { inp.u16() };
                one.forged[a].next_seq = seq.wrapping_add(1);
                let acks = AckFields { ack: inp.u16(), ack_bits: inp.u32(), ack_delay: inp.u16() };
                // The long form too: a forged high half of the sequence number must
                // cost one failed open and move nothing.
                let seq_high = inp.bool().then(|| inp.u32());
                let h = PayloadHeader { salt: f.salt, seq, seq_high, acks: (!odd).then_some(acks) };
                wire::encode_payload_header(&mut d, &h);
                let len = inp.u16() as usize % MAX_DATAGRAM_SIZE;
                d.extend_from_slice(inp.bytes(len));
            }
            6 => {
                one.forged[a].next_seq = f.next_seq.wrapping_add(1);
                wire::encode_disconnect(&mut d, PID, f.salt, f.next_seq, reason(inp.u8()));
                if odd {
                    d.extend_from_slice(&inp.array::<TAG_SIZE>());
                }
            }
            // The peer we dial answers as a server would.
            7 => {
                let (t, m) = (inp.u64(), inp.u64());
                wire::encode_challenge(&mut d, PID, f.client_salt, t, m);
            }
            8 => {
                let server_salt = inp.u64();
                let (public, confirm) = if odd { (inp.array(), inp.array()) } else { ([0; 32], [0; TAG_SIZE]) };
                let cipher = wire::Cipher::from_u8(inp.u8() & 1).expect("0 and 1 are ciphers");
                wire::encode_accepted_head(&mut d, PID, f.client_salt, server_salt, &public, cipher);
                d.extend_from_slice(&confirm);
            }
            9 => {
                let tag: Option<[u8; TAG_SIZE]> = odd.then(|| inp.array());
                wire::encode_denied(&mut d, PID, f.client_salt, reason(inp.u8()), tag.as_ref());
            }
            // Time passes; timers run.
            10 => {
                now += inp.u16() as Micros * 100;
                let privileged = one.privileged();
                one.ep.update(now);
                one.drain(&privileged, None);
                continue;
            }
            // The application: sends and flushes, dials, closes.
            11 => {
                let channel = inp.below(3) as u8;
                let len = inp.u16() as usize % 3000;
                let msg = inp.bytes(len);
                let privileged = one.privileged();
                if let Some(peer) = one.pick_peer(&mut inp) {
                    let _ = one.ep.send(peer, channel, msg);
                }
                one.ep.flush(now);
                one.drain(&privileged, None);
                continue;
            }
            12 => {
                if let Ok(peer) = one.ep.connect(now, addr(a)) {
                    one.dialled.insert(peer);
                }
                let privileged = one.privileged();
                one.drain(&privileged, None);
                continue;
            }
            13 => {
                let privileged = one.privileged();
                match one.pick_peer(&mut inp) {
                    Some(peer) if inp.u8() != 0 => one.ep.disconnect(now, peer),
                    _ => one.ep.shutdown(now),
                }
                one.drain(&privileged, None);
                continue;
            }
            _ => {
                let len = inp.u8() as usize;
                d.extend_from_slice(inp.bytes(len));
            }
        }
        one.datagram(now, a, &d);
    }
}

/// One side of [`endpoint_pair`]: its peer id for the other side and what it sent.
#[derive(Default)]
struct Side {
    peer: Option<PeerId>,
    /// Lengths of the reliable messages sent, in order; how many the other side got.
    reliable_sent: Vec<u16>,
    reliable_got: usize,
    unreliable_sent: u32,
    /// Unreliable and sequenced messages received (by index).
    unreliable_got: BTreeSet<u32>,
    sequenced_last: Option<u32>,
    bytes_sent: usize,
    closed: Option<DisconnectReason>,
}

/// The bytes of message `idx` of `len` bytes from `side`: every one differs.
pub(super) fn message(side: usize, idx: u32, len: usize, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&idx.to_le_bytes());
    out.push(side as u8);
    out.extend((out.len()..len.max(5)).map(|j| (idx as usize * 31 + j * 7 + side) as u8));
}

struct Pair {
    eps: [Endpoint; 2],
    sides: [Side; 2],
    /// Datagrams in flight: (to side, bytes).
    link: VecDeque<(usize, Vec<u8>)>,
    /// Corrupted datagrams delivered to each side.
    corrupted: [u64; 2],
    buf: Vec<u8>,
    scratch: Vec<u8>,
}

/// Most datagrams in flight; beyond, the oldest is lost.
const LINK_CAPACITY: usize = 512;
/// Bytes each side may queue in reliable messages over a whole input.
const RELIABLE_BUDGET: usize = 256 * 1024;

impl Pair {
    fn collect(&mut self) {
        for s in 0..2 {
            while let Some((to, n)) = self.eps[s].poll_transmit(&mut self.buf) {
                assert_eq!(to, addr(1 - s), "side {s} sent to a stranger");
                if self.link.len() == LINK_CAPACITY {
                    self.link.pop_front();
                }
                self.link.push_back((1 - s, self.buf[..n].to_vec()));
            }
        }
    }

    fn deliver(&mut self, now: Micros, to: usize, d: &[u8]) {
        self.eps[to].handle_datagram(now, addr(1 - to), d);
        let forged = self.eps[to].endpoint_stats().forged;
        let corrupted = self.corrupted[to];
        assert!(forged <= corrupted, "side {to}: {forged} packets failed authentication, {corrupted} were corrupted");
        self.events(to);
    }

    /// Takes side `s`'s events and checks the delivery guarantees. They hold whatever
    /// the link corrupted: the connection is encrypted, so a datagram with a flipped
    /// bit fails authentication and is dropped like a lost one.
    fn events(&mut self, s: usize) {
        while let Some(e) = self.eps[s].poll_event() {
            match e {
                Event::Connected { peer, .. } => self.sides[s].peer = Some(peer),
                Event::Disconnected { reason, .. } => {
                    let corrupted = self.corrupted[s];
                    assert_ne!(reason, DisconnectReason::ProtocolError, "side {s} closed (corrupted: {corrupted})");
                    self.sides[s].closed.get_or_insert(reason);
                }
                Event::Message { channel, data, .. } => {
                    self.check(s, channel, &data);
                    self.eps[s].recycle(data);
                }
            }
        }
    }

    fn check(&mut self, s: usize, channel: u8, data: &[u8]) {
        let from = 1 - s;
        assert!(data.len() >= 5 && data[4] as usize == from, "side {s} got a message that is not its peer's");
        let idx = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
        match channel {
            CHANNEL_RELIABLE => {
                let want = self.sides[s].reliable_got;
                assert_eq!(idx as usize, want, "side {s}: reliable message {idx} where {want} was next");
                let len = self.sides[from].reliable_sent[want] as usize;
                message(from, idx, len, &mut self.scratch);
                assert!(data == self.scratch.as_slice(), "side {s}: reliable message {idx} altered");
                self.sides[s].reliable_got += 1;
            }
            CHANNEL_UNRELIABLE | CHANNEL_SEQUENCED => {
                assert!(idx < self.sides[from].unreliable_sent, "side {s}: message {idx} never sent");
                message(from, idx, data.len(), &mut self.scratch);
                assert!(data == self.scratch.as_slice(), "side {s}: message {idx} altered");
                assert!(self.sides[s].unreliable_got.insert(idx), "side {s}: message {idx} delivered twice");
                if channel == CHANNEL_SEQUENCED {
                    let last = self.sides[s].sequenced_last.replace(idx);
                    assert!(last.is_none_or(|l| idx > l), "side {s}: sequenced {idx} after {last:?}");
                }
            }
            other => panic!("side {s}: a message on channel {other}"),
        }
    }

    fn update(&mut self, now: Micros) {
        for s in 0..2 {
            self.eps[s].flush(now);
            self.eps[s].update(now);
            self.events(s); // timeouts
        }
        self.collect();
    }
}

/// A client and a server endpoint over an in-memory link. After a clean handshake the
/// input sends messages on every channel from both sides and decides the fate of
/// each datagram: delivered, dropped, duplicated, held back (reordered) or, when the
/// first byte allows it, corrupted. Then the link turns clean for a while.
///
/// Both endpoints are encrypted (the default security), so corruption exercises
/// authentication: a corrupted datagram must be dropped as forged, never delivered.
///
/// Oracles, corrupted datagrams or not: every reliable message arrives exactly once,
/// in order, intact, and all of them once the link is clean (unless a side timed out);
/// unreliable and sequenced messages at most once, intact, sequenced ones in
/// increasing order; no connection closes for a protocol error; each side's
/// authentication failures are only ever the link's corruptions.
pub fn endpoint_pair(data: &[u8]) {
    let mut inp = Input::new(data);
    let may_corrupt = inp.u8() & 1 == 1;
    let mut now: Micros = 1_000_000;
    let mut p = Pair {
        eps: [Endpoint::new(config(1, 0), now).expect("config"), Endpoint::new(config(2, 1), now).expect("config")],
        sides: [Side::default(), Side::default()],
        link: VecDeque::new(),
        corrupted: [0; 2],
        buf: vec![0; MAX_DATAGRAM_SIZE],
        scratch: Vec::new(),
    };
    p.sides[0].peer = Some(p.eps[0].connect(now, addr(1)).expect("dial"));
    // The handshake, on a clean link.
    for _ in 0..8 {
        p.collect();
        while let Some((to, d)) = p.link.pop_front() {
            p.deliver(now, to, &d);
        }
    }
    assert!(p.sides[1].peer.is_some(), "the handshake completes on a clean link");
    let mut msg = Vec::new();
    for _ in 0..MAX_OPS {
        if inp.is_empty() {
            break;
        }
        let op = inp.u8();
        let s = (op >> 7) as usize;
        match op & 0x07 {
            0 | 1 => {
                let len = 5 + inp.u16() as usize % 3000;
                let side = &mut p.sides[s];
                let (Some(peer), true) = (side.peer, side.bytes_sent + len <= RELIABLE_BUDGET) else { continue };
                message(s, side.reliable_sent.len() as u32, len, &mut msg);
                if p.eps[s].send(peer, CHANNEL_RELIABLE, &msg).is_ok() {
                    side.reliable_sent.push(len as u16);
                    side.bytes_sent += len;
                }
            }
            2 => {
                let channel = if op & 8 == 0 { CHANNEL_UNRELIABLE } else { CHANNEL_SEQUENCED };
                let len = (5 + inp.u16() as usize % 1200).min(MAX_UNRELIABLE);
                let side = &mut p.sides[s];
                let Some(peer) = side.peer else { continue };
                message(s, side.unreliable_sent, len, &mut msg);
                if p.eps[s].send(peer, channel, &msg).is_ok() {
                    side.unreliable_sent += 1;
                }
            }
            3 => {
                p.eps[s].flush(now);
                p.collect();
            }
            // One datagram in flight meets its fate.
            4 | 5 => {
                if p.link.is_empty() {
                    continue;
                }
                let i = inp.u16() as usize % p.link.len();
                let fate = (op >> 3) & 0x0f;
                let (to, mut d) = p.link.remove(i).expect("in range");
                match fate {
                    0..=2 => {}                                 // dropped
                    3 | 4 => p.link.push_back((to, d.clone())), // duplicated (a copy stays)
                    5 if may_corrupt && !d.is_empty() => {
                        let at = inp.u16() as usize % d.len();
                        d[at] ^= inp.u8().max(1);
                        p.corrupted[to] += 1;
                    }
                    _ => {}
                }
                if fate > 2 {
                    p.deliver(now, to, &d);
                }
            }
            6 => {
                now += 1 + inp.u16() as Micros * 50;
                p.update(now);
            }
            _ => {
                let n = (op >> 3) as usize & 0x0f;
                for _ in 0..=n {
                    let Some((to, d)) = p.link.pop_front() else { break };
                    p.deliver(now, to, &d);
                }
            }
        }
    }
    // The link turns clean until everything sent has arrived (or a minute has passed).
    let delivered = |p: &Pair| (0..2).all(|s| p.sides[1 - s].reliable_got == p.sides[s].reliable_sent.len());
    for _ in 0..6000 {
        if delivered(&p) || p.sides.iter().any(|s| s.closed.is_some()) {
            break;
        }
        now += 10_000;
        p.update(now);
        while let Some((to, d)) = p.link.pop_front() {
            p.deliver(now, to, &d);
        }
    }
    let closed = p.sides.iter().any(|s| s.closed.is_some());
    if !closed {
        let got: Vec<_> = (0..2).map(|s| (p.sides[s].reliable_sent.len(), p.sides[1 - s].reliable_got)).collect();
        assert!(delivered(&p), "reliable messages (sent, delivered) per side after a clean minute: {got:?}");
    }
}

/// A handshake op's claim: encryption if `odd` (the plaintext endpoint refuses it with
/// a security mismatch), else plaintext.
fn mode(odd: bool) -> SecurityMode {
    if odd { SecurityMode::Encrypted } else { SecurityMode::InsecurePlaintext }
}
