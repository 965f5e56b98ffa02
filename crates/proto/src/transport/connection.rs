//! One connection's protocol state once the handshake has started: packet sequence and
//! acks, the per-channel queues, packing into datagrams, and delivery of what arrives.

use std::cell::Cell;
use std::collections::VecDeque;
use std::net::SocketAddr;

use super::acks::{ACK_WINDOW, LossWindow, RecvAcks, ReportedAcks, SeqVerdict};
use super::budget::{Admit, RecvBudget, SendPace};
use super::credential::Binding;
use super::crypto::{Ephemeral, PacketKeys, ReplayWindow, full_sequence};
use super::dial::MAX_COOKIES;
use super::endpoint::MAX_ACK_DELAY_US;
use super::estimators::{RateMeter, RttEstimator};
use super::inbox::Inbox;
use super::pool::BufPool;
use super::reliable::{ReliableReceiver, ReliableSender, Violation, WINDOW, max_unfragmented_for, sequenced_accept};
use super::sent_ring::{SENT_RING, SentRing};
use super::transmits::Transmits;
use super::{
    ChannelKind, ConnectionStats, DisconnectReason, EndpointConfig, Event, MAX_CHANNELS, PeerId, UnreliableAcks,
};
use crate::clock::Micros;
use crate::wire::{
    ACK_DELAY_UNIT_US, AckFields, DecodeError, Frame, FrameKind, FrameReader, MAX_DATAGRAM_SIZE, PayloadHeader,
    TAG_SIZE, Writer, encode_payload_header, max_frames_size, write_frame,
};

/// Packets of unreliable data received without sending anything before an ack-only
/// packet goes back (see `Connection::owe_ack`): half the ack window.
pub const ACK_EVERY_UNRELIABLE: u16 = 16;

/// How many of our next packets carry the ack fields after a packet with reliable
/// frames arrives. A lost ack of reliable data costs the peer a resend timeout, so it
/// goes out a few times; after anything else, once (see `Connection::acks_owed`).
const RELIABLE_ACK_REPEATS: u8 = 3;

/// The frame bytes around an unreliable or sequenced message: header byte, sequence
/// number (sequenced) and a two-byte length.
pub(crate) const UNRELIABLE_FRAME_OVERHEAD: usize = 1 + 2 + 2;

/// Largest unreliable or sequenced message on an endpoint of the largest datagram
/// limit ([`MAX_DATAGRAM_SIZE`]): one frame in an otherwise empty packet. An endpoint
/// of a smaller limit takes less: [`max_unreliable_for`], `Endpoint::max_unreliable`.
pub const MAX_UNRELIABLE: usize = max_unreliable_for(MAX_DATAGRAM_SIZE);
const _: () = assert!(MAX_UNRELIABLE == 1159, "TW_MAX_UNRELIABLE_SIZE is part of the C ABI");

/// Largest unreliable or sequenced message an endpoint whose datagrams are at most
/// `max_datagram_size` bytes sends (`EndpointConfig::max_datagram_size`): one frame in
/// an otherwise empty packet. [`MAX_UNRELIABLE`] at 1,200.
pub const fn max_unreliable_for(max_datagram_size: usize) -> usize {
    max_frames_size(max_datagram_size).saturating_sub(UNRELIABLE_FRAME_OVERHEAD)
}

/// Where frames may end in a datagram of at most `max_datagram_size` bytes: room is
/// left for the tag, also on a connection without one, so that message limits do not
/// depend on the protection.
fn frames_end(max_datagram_size: usize) -> usize {
    max_datagram_size - TAG_SIZE
}

/// How far our next sequence number may run ahead of the newest packet the peer has
/// acknowledged before our packets carry the long header (bits 16-47 as well). The
/// receiver rebuilds a short header's number as the one nearest to what it expects,
/// which is right up to 32,768 ahead of the newest packet it has; the peer has at
/// least the one it acknowledged, so below this bound (half of that, a margin for
/// packets in flight and reordered) a short header is always read right. Honest
/// traffic acknowledges every 16 packets or sooner, so the long form appears only
/// after a run of thousands of lost packets (or acks): the steady state pays nothing.
const LONG_HEADER_AFTER: u64 = 1 << 14;

/// An encrypted connection's keys and what it has authenticated so far.
pub(super) struct Sealing {
    pub keys: PacketKeys,
    pub replay: ReplayWindow,
}

/// Why a received packet was refused before anything was read from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unsealed {
    /// Already received, or older than the replay window.
    Replayed,
    /// The tag does not authenticate it (forged, tampered, truncated, or sealed with
    /// another connection's keys).
    Forged,
}

/// Where the handshake stands (for the initiating side; an accepted connection starts
/// `Connected`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Handshake {
    Requesting,
    /// Answering every challenge heard (each may be forged: `dial.rs`).
    Responding {
        cookies: Cookies,
    },
    Connected,
}

/// The cookies (time, MAC) of the challenges a handshake answers: at most
/// [`MAX_COOKIES`], the oldest making way for a new one. Each handshake send answers
/// one of them, in turn, so that an honest handshake sends no more than it did with
/// one cookie (a genuine challenge per request resent), and one forged cookie costs at
/// most one resend interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Cookies {
    list: [(u64, u64); MAX_COOKIES],
    len: u8,
    /// Where the next cookie goes once the list is full.
    next: u8,
    /// Sends so far (modulo a multiple of every list length): the next send answers
    /// cookie `turn % len`.
    turn: u8,
}

impl Cookies {
    pub(super) fn one(cookie: (u64, u64)) -> Self {
        let mut c = Cookies::default();
        c.add(cookie);
        c
    }

    /// Adds a cookie not yet held; false if it was.
    pub(super) fn add(&mut self, cookie: (u64, u64)) -> bool {
        if self.iter().any(|c| c == cookie) {
            return false;
        }
        if (self.len as usize) < MAX_COOKIES {
            self.list[self.len as usize] = cookie;
            self.len += 1;
        } else {
            self.list[self.next as usize] = cookie;
            self.next = (self.next + 1) % MAX_COOKIES as u8;
        }
        true
    }

    /// The cookie to answer now; the next call gives the next one (a cookie added
    /// since is answered next: the count runs on, only its index wraps).
    pub(super) fn take_turn(&mut self) -> (u64, u64) {
        let c = self.list[self.turn as usize % self.len.max(1) as usize];
        self.turn = self.turn.wrapping_add(1) % (MAX_COOKIES as u8 * 60);
        c
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.list[..self.len as usize].iter().copied()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PackMode {
    /// Everything queued and due: the engine's per-tick flush.
    Flush,
    /// Only reliable units already sent whose timeout expired: keeps delivery going
    /// while the engine is not flushing (a hitch, a load).
    ResendsOnly,
}

#[derive(Debug, thiserror::Error)]
pub(super) enum PayloadError {
    #[error("malformed frames: {0}")]
    Malformed(#[from] DecodeError),
    /// A frame whose kind its channel does not carry, or on a channel that does not
    /// exist. Dropped and counted like a malformed datagram, not fatal: one flipped bit
    /// must not end a match.
    #[error("frame kind does not match channel {0}")]
    WrongChannel(u8),
    /// Over the peer's budget: dropped unread, counted.
    #[error("over the peer's budget")]
    OverBudget,
    /// Over the peer's budget for long enough: close the connection.
    #[error("flooding: over the peer's budget for too long")]
    Flooding,
    #[error("protocol violation: {0}")]
    Violation(#[from] Violation),
}

#[derive(Debug)]
struct QueuedMessage {
    channel: u8,
    kind: FrameKind,
    seq: u16,
    data: Vec<u8>,
}

pub(super) struct Connection {
    pub peer: PeerId,
    pub addr: SocketAddr,
    /// We sent the connection request (we are the "client" of this connection).
    pub initiator: bool,
    pub state: Handshake,
    pub client_salt: u64,
    pub salt: u32,
    /// The initiator's ephemeral key until the server's `Accepted` arrives. Boxed, as
    /// the packet keys are (`crypto.rs`, `PacketKey`): the connection moves when the
    /// endpoint's table grows, and the secret must not leave unwiped copies behind.
    pub ephemeral: Option<Box<Ephemeral>>,
    /// What a `Denied` we could not authenticate said (`dial.rs`): kept for the log if
    /// the handshake then times out.
    pub claimed_denial: Option<DisconnectReason>,
    /// The initiator's binding of both ends (`Endpoint::connect_bound`).
    pub binding: Option<Binding>,
    /// Keys once the handshake is done; `None` on an insecure plaintext connection and
    /// on a carrier-protected one (`PacketProtection::Carrier`), whose handshake proved
    /// the peer and then dropped its keys. Both go the one untagged way: no tag is
    /// written or read, the sequence number is rebuilt from the header against the
    /// newest packet accepted, and the ack window (`RecvAcks`) drops duplicates and
    /// packets too old. What that gives up beside the encryption is this: the AEAD also
    /// makes the peer the only sender a packet can come from, and moves the replay
    /// window only for packets it authenticated. A carrier gives the first itself (it
    /// proves the remote and carries only its datagrams to this connection), so the
    /// only sender left is the peer we admitted, who could send any frames over an
    /// AEAD connection too; the second then protects against nobody.
    pub sealing: Option<Sealing>,
    /// Drop the connection after this long without a valid packet (the endpoint's
    /// timeout, or the one a connect token names).
    pub timeout_us: Micros,
    /// Packets refused: replayed, or failing authentication.
    replayed: u64,
    forged: u64,
    pub created_at: Micros,
    pub last_recv: Micros,
    /// When the peer last acknowledged a reliable unit (see `unacked_since`).
    reliable_acked_at: Option<Micros>,
    pub last_send: Micros,
    pub malformed: u64,
    implausible_seq: u64,
    over_budget: u64,
    backpressured: u64,
    budget: RecvBudget,
    pace: SendPace,
    /// A flush the pace held back: what it had no room for leaves on the connection's
    /// timer once the pace allows ([`Connection::flush_held`]), not at the engine's
    /// next flush, which may never come.
    flush_held: bool,
    max_recv_queue_bytes: usize,
    /// Where frames may end in our datagrams (the endpoint's `max_datagram_size` less
    /// the tag).
    frames_end: usize,
    /// Largest reliable message sent as one unit at our datagram limit.
    max_unfragmented: usize,
    channels: ChannelKinds,
    /// The full sequence number of our next packet (the nonce; the header has its low
    /// 16 bits).
    next_seq: u64,
    sent: SentRing,
    recv: RecvAcks,
    /// The newest of our packets the peer has acknowledged, as a full number: what
    /// decides the header form (see [`LONG_HEADER_AFTER`]) and where loss is counted.
    newest_ack: Option<u64>,
    reported: ReportedAcks,
    loss_cursor: u64,
    loss: LossWindow,
    rtt: RttEstimator,
    /// When an ack-only packet is due if nothing else goes back first (see
    /// `Connection::owe_ack`).
    ack_due_at: Option<Micros>,
    unreliable_acks: UnreliableAcks,
    /// Packets with only unreliable or sequenced frames received since we last sent
    /// anything: they are acknowledged by whatever we send next, and on their own only
    /// every [`ACK_EVERY_UNRELIABLE`] packets.
    unacked_unreliable: u16,
    /// How many of our next packets carry the ack fields: set when a packet arrives,
    /// counted down by each packet that carries them. At zero there is nothing new to
    /// acknowledge, and a packet goes without them (8 bytes fewer): the acks already
    /// sent said it all.
    acks_owed: u8,
    unreliable: VecDeque<QueuedMessage>,
    unreliable_bytes: usize,
    seq_send: Vec<u16>,
    seq_recv: Vec<Option<u16>>,
    reliable_send: Vec<ReliableSender>,
    /// What `reliable_send` holds, kept beside the connection's other fields: a
    /// server's connections send no reliable data in most ticks, and a look into the
    /// senders' own allocation on every send, flush and timer was a cache miss per
    /// client a tick. Updated by `note_reliable` after every change to the senders.
    reliable: ReliableHeld,
    reliable_recv: Vec<Option<ReliableReceiver>>,
    packets_sent: u64,
    packets_received: u64,
    bytes_sent: u64,
    bytes_received: u64,
    resent: u64,
    send_rate: RateMeter,
    recv_rate: RateMeter,
    /// When this connection next has timer work, as last computed; `None` once
    /// anything may have changed it (see `endpoint::touched`).
    pub next_timer: Cell<Option<Micros>>,
    /// Listed in the endpoint's changed connections (see `endpoint::touched`).
    pub listed_changed: bool,
    /// Listed to have its timer settled, and the timer of its live entry in the
    /// endpoint's timer queue (`timers.rs`).
    pub timer_unsettled: bool,
    pub queued_timer: Option<Micros>,
}

/// What a connection's reliable senders hold, summed over its channels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ReliableHeld {
    /// Units queued or sent and not acknowledged yet.
    units: usize,
    /// Their bytes not acknowledged yet (`ReliableSender::queued_bytes`).
    queued_bytes: usize,
}

/// The kinds of a connection's channels, inline: every received frame's channel is
/// checked against them, and a separate allocation per connection was a cache miss per
/// datagram on a server's receive path.
#[derive(Debug, Clone, Copy)]
struct ChannelKinds {
    kinds: [ChannelKind; MAX_CHANNELS],
    len: u8,
}

impl ChannelKinds {
    /// The configuration's kinds (validated: 1 to [`MAX_CHANNELS`] of them).
    fn new(kinds: &[ChannelKind]) -> Self {
        let mut c = ChannelKinds { kinds: [ChannelKind::Unreliable; MAX_CHANNELS], len: kinds.len() as u8 };
        c.kinds[..kinds.len()].copy_from_slice(kinds);
        c
    }

    /// Channel `ch`'s kind, if the connection has that channel.
    fn get(&self, ch: u8) -> Option<ChannelKind> {
        (ch < self.len).then(|| self.kinds[ch as usize])
    }
}

impl Connection {
    pub(super) fn new(
        peer: PeerId,
        addr: SocketAddr,
        initiator: bool,
        client_salt: u64,
        cfg: &EndpointConfig,
        now: Micros,
    ) -> Self {
        let (channels, limits) = (&cfg.channels, &cfg.limits);
        let n = channels.len();
        Connection {
            peer,
            addr,
            initiator,
            state: if initiator { Handshake::Requesting } else { Handshake::Connected },
            client_salt,
            salt: 0,
            ephemeral: None,
            claimed_denial: None,
            binding: None,
            sealing: None,
            timeout_us: cfg.timeout_us,
            replayed: 0,
            forged: 0,
            created_at: now,
            last_recv: now,
            reliable_acked_at: None,
            last_send: now,
            malformed: 0,
            implausible_seq: 0,
            over_budget: 0,
            backpressured: 0,
            budget: RecvBudget::new(limits, now),
            pace: SendPace::new(limits, now),
            flush_held: false,
            max_recv_queue_bytes: limits.max_recv_queue_bytes,
            frames_end: frames_end(cfg.max_datagram_size),
            max_unfragmented: max_unfragmented_for(cfg.max_datagram_size),
            channels: ChannelKinds::new(channels),
            next_seq: 0,
            sent: SentRing::new(),
            recv: RecvAcks::default(),
            newest_ack: None,
            reported: ReportedAcks::default(),
            loss_cursor: 0,
            loss: LossWindow::new(),
            rtt: RttEstimator::default(),
            ack_due_at: None,
            unreliable_acks: cfg.unreliable_acks,
            unacked_unreliable: 0,
            acks_owed: 0,
            unreliable: VecDeque::new(),
            unreliable_bytes: 0,
            seq_send: vec![0; n],
            seq_recv: vec![None; n],
            reliable_send: (0..n).map(|_| ReliableSender::default()).collect(),
            reliable: ReliableHeld::default(),
            reliable_recv: channels
                .iter()
                .map(|k| (*k == ChannelKind::Reliable).then(|| ReliableReceiver::new(cfg.max_message_size)))
                .collect(),
            packets_sent: 0,
            packets_received: 0,
            bytes_sent: 0,
            bytes_received: 0,
            resent: 0,
            send_rate: RateMeter::new(now),
            recv_rate: RateMeter::new(now),
            next_timer: Cell::new(None),
            listed_changed: false,
            timer_unsettled: false,
            queued_timer: None,
        }
    }

    pub(super) fn is_connected(&self) -> bool {
        self.state == Handshake::Connected
    }

    pub(super) fn queued_bytes(&self) -> usize {
        debug_assert_eq!(self.reliable, self.reliable_held(), "the reliable senders' summary is stale");
        self.unreliable_bytes + self.reliable.queued_bytes
    }

    /// The reliable senders' summary, taken from the senders themselves.
    fn reliable_held(&self) -> ReliableHeld {
        ReliableHeld {
            units: self.reliable_send.iter().map(|r| r.units.len()).sum(),
            queued_bytes: self.reliable_send.iter().map(ReliableSender::queued_bytes).sum(),
        }
    }

    /// Takes the summary of the reliable senders again (`reliable`), after a change.
    fn note_reliable(&mut self) {
        self.reliable = self.reliable_held();
    }

    /// Queues a message; the caller has validated channel and size.
    pub(super) fn queue(&mut self, channel: u8, data: &[u8], pool: &mut BufPool) {
        let ch = channel as usize;
        match self.channels.kinds[ch] {
            ChannelKind::Reliable => {
                self.reliable_send[ch].push(data, self.max_unfragmented, pool);
                self.note_reliable();
            }
            kind => {
                let (kind, seq) = if kind == ChannelKind::Sequenced {
                    let s = self.seq_send[ch];
                    self.seq_send[ch] = s.wrapping_add(1);
                    (FrameKind::Sequenced, s)
                } else {
                    (FrameKind::Unreliable, 0)
                };
                let mut buf = pool.get_for(data.len());
                buf.extend_from_slice(data);
                self.unreliable_bytes += data.len();
                self.unreliable.push_back(QueuedMessage { channel, kind, seq, data: buf });
            }
        }
    }

    /// Writes the header of our next packet into `buf` and returns it: with the ack
    /// fields while `acks_owed`, and in the long form while the peer's acks lag more
    /// than [`LONG_HEADER_AFTER`] behind our sequence number (it may have lost so many
    /// of our packets that it could not rebuild the number from 16 bits).
    fn begin_packet(&self, now: Micros, buf: &mut Vec<u8>) -> PayloadHeader {
        let acks = (self.acks_owed > 0).then(|| {
            let (ack, ack_bits, age) = self.recv.header_fields(now);
            AckFields { ack, ack_bits, ack_delay: (age / ACK_DELAY_UNIT_US).min(u16::MAX as u64) as u16 }
        });
        let peer_expects = self.newest_ack.map_or(0, |n| n + 1);
        let long = self.next_seq - peer_expects > LONG_HEADER_AFTER;
        let seq_high = long.then_some((self.next_seq >> 16) as u32);
        let header = PayloadHeader { salt: self.salt, seq: self.next_seq as u16, seq_high, acks };
        encode_payload_header(buf, &header);
        header
    }

    /// Seals and queues a packet begun by `begin_packet` (`header` is what it
    /// returned).
    fn finish_packet(
        &mut self,
        now: Micros,
        mut buf: Vec<u8>,
        header: &PayloadHeader,
        pool: &mut BufPool,
        out: &mut Transmits,
    ) {
        if let Some(s) = &self.sealing {
            let (head, body) = buf.split_at_mut(header.encoded_len());
            let tag = s.keys.seal(self.next_seq, head, body);
            buf.extend_from_slice(&tag);
        }
        if header.acks.is_some() {
            self.acks_owed = self.acks_owed.saturating_sub(1);
        }
        self.sent.insert(self.next_seq, now);
        self.next_seq += 1;
        self.last_send = now;
        self.ack_due_at = None;
        self.unacked_unreliable = 0;
        self.packets_sent += 1;
        self.bytes_sent += buf.len() as u64;
        self.send_rate.record(now, buf.len());
        out.push(self.addr, &buf);
        pool.put(buf);
    }

    /// Packs queued messages and due reliable units into at most `max_datagrams`
    /// datagrams of at most the endpoint's `max_datagram_size` bytes (at most
    /// [`MAX_DATAGRAM_SIZE`]). Unreliable messages go first:
    /// they are the time-critical ones.
    pub(super) fn pack(
        &mut self,
        now: Micros,
        mode: PackMode,
        max_datagrams: u32,
        pool: &mut BufPool,
        out: &mut Transmits,
    ) {
        let rto = self.rtt.rto() as Micros;
        let max_frames = self.pace.max_frames();
        if mode == PackMode::Flush {
            self.flush_held = false;
        }
        for _ in 0..max_datagrams {
            if !self.pace.ready(now) {
                // Paced: resends wait for their timer, a flush's messages for
                // `pace_ready_at` (unless nothing of it is left to send).
                self.flush_held = mode == PackMode::Flush && self.has_unsent();
                return;
            }
            let mut buf = pool.get();
            let header = self.begin_packet(now, &mut buf);
            let mut w = Writer::new(&mut buf);
            let mut frames = 0u32;
            if mode == PackMode::Flush {
                while let Some(m) = self.unreliable.front() {
                    let f = Frame { channel: m.channel, kind: m.kind, seq: m.seq, fragment: None, data: &m.data };
                    if frames == max_frames || w.len() + f.encoded_len() > self.frames_end {
                        break;
                    }
                    write_frame(&mut w, &f);
                    frames += 1;
                    let m = self.unreliable.pop_front().expect("front exists");
                    self.unreliable_bytes -= m.data.len();
                    pool.put(m.data);
                }
            }
            let senders = if self.reliable.units == 0 { &mut [][..] } else { &mut self.reliable_send[..] };
            'channels: for (ch, sender) in senders.iter_mut().enumerate() {
                for u in sender.units.iter_mut().take(WINDOW as usize) {
                    if frames == max_frames {
                        break 'channels;
                    }
                    if u.acked || (mode == PackMode::ResendsOnly && u.last_sent.is_none()) || !u.due(now, rto) {
                        continue;
                    }
                    let f = Frame {
                        channel: ch as u8,
                        kind: FrameKind::Reliable,
                        seq: u.seq,
                        fragment: u.fragment,
                        data: &u.data,
                    };
                    if w.len() + f.encoded_len() > self.frames_end {
                        continue;
                    }
                    write_frame(&mut w, &f);
                    frames += 1;
                    if u.sends > 0 {
                        self.resent += 1;
                    }
                    u.sends += 1;
                    u.last_sent = Some(now);
                    u.first_sent.get_or_insert(now);
                    self.sent.push_unit(ch as u8, u.seq);
                }
            }
            if frames == 0 {
                pool.put(buf);
                return;
            }
            self.pace.sent(now, frames, buf.len());
            self.finish_packet(now, buf, &header, pool, out);
        }
    }

    /// Messages queued that never left: unreliable ones, or reliable units not sent yet.
    fn has_unsent(&self) -> bool {
        !self.unreliable.is_empty()
            || (self.reliable.units > 0
                && self
                    .reliable_send
                    .iter()
                    .any(|s| s.units.iter().take(WINDOW as usize).any(|u| u.last_sent.is_none())))
    }

    /// Whether a flush left messages that the pace held back (see `flush_held`).
    pub(super) fn flush_held(&self) -> bool {
        self.flush_held
    }

    /// When the pace lets the next datagram leave (in the past when it would now).
    pub(super) fn pace_ready_at(&self) -> Micros {
        self.pace.ready_at()
    }

    /// A packet with no frames: carries acks and keeps the connection alive.
    pub(super) fn send_empty(&mut self, now: Micros, pool: &mut BufPool, out: &mut Transmits) {
        let mut buf = pool.get();
        let header = self.begin_packet(now, &mut buf);
        self.pace.sent(now, 0, buf.len());
        self.finish_packet(now, buf, &header, pool, out);
    }

    /// A packet carrying `frames` as they are, valid or not, sealed like any other (the
    /// `test-hooks` feature: hostile-peer tests play a peer with valid credentials).
    #[cfg(feature = "test-hooks")]
    pub(super) fn send_raw(&mut self, now: Micros, frames: &[u8], pool: &mut BufPool, out: &mut Transmits) {
        let mut buf = pool.get();
        let header = self.begin_packet(now, &mut buf);
        buf.extend_from_slice(&frames[..frames.len().min(self.frames_end - buf.len())]);
        self.finish_packet(now, buf, &header, pool, out);
    }

    /// Notes the ack-only packet a packet with frames (`reliable` ones or not) may be
    /// owed. Reliable data is acknowledged within
    /// the ack delay: the sender's resends and its window wait for it. Unreliable data
    /// needs acks only for the sender's loss and RTT figures: with
    /// [`UnreliableAcks::Sparse`] a one-way stream (a client's inputs) is acknowledged
    /// by the traffic going back, or every [`ACK_EVERY_UNRELIABLE`] packets when there
    /// is none. That spacing keeps
    /// every packet inside some ack's window ([`ACK_WINDOW`] = 33) even when one ack
    /// in a row is lost, so the sender's loss figure stays exact.
    fn owe_ack(&mut self, now: Micros, reliable: bool) {
        if reliable || self.unreliable_acks == UnreliableAcks::Prompt {
            self.ack_due_at.get_or_insert(now + MAX_ACK_DELAY_US);
            return;
        }
        self.unacked_unreliable = self.unacked_unreliable.saturating_add(1);
        if self.unacked_unreliable >= ACK_EVERY_UNRELIABLE {
            // Due now: the next `update` sends it.
            self.ack_due_at = Some(now);
        }
    }

    /// The longest this connection stays silent: the endpoint's keepalive interval, or
    /// a quarter of the connection's own timeout when that is shorter.
    pub(super) fn keepalive_us(&self, interval_us: Micros) -> Micros {
        interval_us.min(self.timeout_us / 4).max(1)
    }

    /// Whether an ack-only packet is owed now: reliable data arrived and nothing has
    /// gone back for [`MAX_ACK_DELAY_US`], or enough unreliable packets arrived (see
    /// `owe_ack`).
    pub(super) fn ack_due(&self, now: Micros) -> bool {
        self.ack_due_at.is_some_and(|t| now >= t)
    }

    pub(super) fn ack_deadline(&self) -> Option<Micros> {
        self.ack_due_at
    }

    /// Since when reliable data has waited for the peer without any progress: the
    /// later of when the oldest unacknowledged unit was first sent and when the peer
    /// last acknowledged any unit. None when nothing sent is unacknowledged. A bad link
    /// delays single units (resends back off to 8 RTO) but keeps acknowledging others;
    /// a peer that acknowledges nothing while it talks makes no progress at all.
    pub(super) fn unacked_since(&self) -> Option<Micros> {
        if self.reliable.units == 0 {
            return None;
        }
        let oldest = self.reliable_send.iter().filter_map(ReliableSender::oldest_unacked).min()?;
        Some(self.reliable_acked_at.map_or(oldest, |a| a.max(oldest)))
    }

    /// How long reliable data may wait without any acknowledgement before the peer
    /// counts as not acknowledging: the connection timeout, but never less than four
    /// of the longest resend intervals (8 RTO), so that a slow, lossy link whose
    /// resends have backed off is not mistaken for it.
    pub(super) fn unacked_limit(&self, timeout_us: Micros) -> Micros {
        timeout_us.max(4 * ((self.rtt.rto() as Micros) << 3))
    }

    pub(super) fn next_resend(&self) -> Option<Micros> {
        debug_assert_eq!(self.reliable, self.reliable_held(), "the reliable senders' summary is stale");
        if self.reliable.units == 0 {
            return None;
        }
        let rto = self.rtt.rto() as Micros;
        self.reliable_send.iter().filter_map(|s| s.next_resend(rto)).min()
    }

    /// Opens an encrypted packet into `out` (its frames), in this order: the full
    /// sequence number rebuilt (from `low_seq` and, in the long form, `high_seq`), the
    /// replay window (before any decryption), then the tag. Only an authenticated
    /// packet is recorded, so a forged number, long form or not, costs one AEAD open
    /// and moves nothing. `bytes` is the whole datagram, `header_len` the part the tag
    /// covers as associated data (the long form's high bits with it). `Ok(Some(seq))`:
    /// the frames are in `out`, and `seq` is the packet's authenticated number;
    /// `Ok(None)`: an insecure plaintext or carrier-protected connection, whose frames
    /// are `bytes[header_len..]` as they are (not copied); nothing is counted as forged
    /// or replayed on it (duplicates are dropped, uncounted, by `on_payload`).
    pub(super) fn unseal(
        &mut self,
        low_seq: u16,
        high_seq: Option<u32>,
        bytes: &[u8],
        header_len: usize,
        out: &mut Vec<u8>,
    ) -> Result<Option<u64>, Unsealed> {
        let Some(s) = &mut self.sealing else { return Ok(None) };
        out.clear();
        let refuse = |c: &mut u64, why| {
            *c += 1;
            Err(why)
        };
        if bytes.len() < header_len + TAG_SIZE {
            return refuse(&mut self.forged, Unsealed::Forged);
        }
        let Some(seq) = full_sequence(low_seq, high_seq, s.replay.newest()) else {
            return refuse(&mut self.replayed, Unsealed::Replayed);
        };
        if !s.replay.is_fresh(seq) {
            return refuse(&mut self.replayed, Unsealed::Replayed);
        }
        let (header, rest) = bytes.split_at(header_len);
        let (body, tag) = rest.split_at(rest.len() - TAG_SIZE);
        out.extend_from_slice(body);
        if !s.keys.open(seq, header, out, tag.try_into().expect("16 bytes")) {
            out.clear();
            return refuse(&mut self.forged, Unsealed::Forged);
        }
        s.replay.record(seq);
        Ok(Some(seq))
    }

    /// The sequence number a disconnect packet goes out with (it takes one, like a
    /// packet), and the tag that authenticates `packet` (its bytes so far) if the
    /// connection seals its packets. Without a tag (plaintext, carrier), a disconnect
    /// with the connection's salt is taken as it is: over a carrier only the admitted
    /// peer can send one, and it could end the connection anyway by going silent.
    pub(super) fn seal_disconnect(&mut self, packet: &mut Vec<u8>) {
        if let Some(s) = &self.sealing {
            let tag = s.keys.seal(self.next_seq, packet, &mut []);
            packet.extend_from_slice(&tag);
        }
        self.next_seq += 1;
    }

    pub(super) fn next_seq(&self) -> u16 {
        self.next_seq as u16
    }

    /// Handles a connected packet whose salt matched, in this order: its sequence number
    /// (duplicates, stale and implausibly far packets are dropped for free); its frames,
    /// counted (up to one past the per-datagram limit) and checked against their channels;
    /// the peer's budget, charged whatever the content; the owner's backlog of this
    /// peer's messages; and only then delivery. Nothing changes before the datagram is
    /// accepted, so a dropped one leaves no trace but a counter (a backpressured one
    /// also gives its acks). `authenticated` is the number `unseal` authenticated; on
    /// an insecure plaintext or carrier-protected connection it is `None`, and the
    /// number is rebuilt from the header against the newest packet accepted.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_payload(
        &mut self,
        now: Micros,
        header: &PayloadHeader,
        authenticated: Option<u64>,
        frames: &[u8],
        datagram_len: usize,
        pool: &mut BufPool,
        inbox: &mut Inbox,
    ) -> Result<(), PayloadError> {
        // Before the connection's first packet: as old as a packet can be.
        let Some(seq) = authenticated.or_else(|| full_sequence(header.seq, header.seq_high, self.recv.newest())) else {
            return Ok(());
        };
        match self.recv.classify(seq) {
            SeqVerdict::New => {}
            SeqVerdict::Duplicate | SeqVerdict::TooOld => return Ok(()),
            SeqVerdict::Implausible => {
                self.implausible_seq += 1;
                return Ok(());
            }
        }
        let mut count = 0u32;
        let mut bad = None;
        let mut reliable = false;
        for f in FrameReader::new(frames) {
            count += 1;
            if count > self.pace.max_frames() {
                break; // over the limit already: no need to read further
            }
            let f = match f {
                Ok(f) => f,
                Err(e) => {
                    bad = Some(PayloadError::Malformed(e));
                    break;
                }
            };
            let expected = self.channels.get(f.channel).map(|k| match k {
                ChannelKind::Unreliable => FrameKind::Unreliable,
                ChannelKind::Sequenced => FrameKind::Sequenced,
                ChannelKind::Reliable => FrameKind::Reliable,
            });
            if expected != Some(f.kind) {
                bad = Some(PayloadError::WrongChannel(f.channel));
                break;
            }
            reliable |= f.kind == FrameKind::Reliable;
        }
        match self.budget.admit(now, count, datagram_len) {
            Admit::Within => {}
            Admit::Throttled => {
                self.over_budget += 1;
                return Err(PayloadError::OverBudget);
            }
            Admit::Flooding => {
                self.over_budget += 1;
                return Err(PayloadError::Flooding);
            }
        }
        if let Some(e) = bad {
            return Err(e);
        }
        let peer = self.peer;
        if count > 0 && inbox.bytes(peer) >= self.max_recv_queue_bytes {
            // The owner has not taken this peer's earlier messages: drop this datagram
            // without acknowledging it (reliable data comes again), but take its acks
            // and its sign of life.
            self.backpressured += 1;
            self.last_recv = now;
            if let Some(acks) = &header.acks {
                self.process_acks(now, acks, pool);
            }
            return Ok(());
        }
        self.recv.accept(seq, now);
        self.acks_owed = self.acks_owed.max(if reliable { RELIABLE_ACK_REPEATS } else { 1 });
        self.last_recv = now;
        self.packets_received += 1;
        self.bytes_received += datagram_len as u64;
        self.recv_rate.record(now, datagram_len);
        if let Some(acks) = &header.acks {
            self.process_acks(now, acks, pool);
        }
        if count > 0 {
            self.owe_ack(now, reliable);
        }
        for f in FrameReader::new(frames) {
            let f = f?;
            let ch = f.channel as usize;
            match f.kind {
                FrameKind::Unreliable => {}
                FrameKind::Sequenced => {
                    if !sequenced_accept(&mut self.seq_recv[ch], f.seq) {
                        continue;
                    }
                }
                FrameKind::Reliable => {
                    let rx = self.reliable_recv[ch].as_mut().expect("reliable channel has a receiver");
                    rx.on_unit(f.seq, f.fragment, f.data, pool, |data| {
                        inbox.push(Event::Message { peer, channel: f.channel, data })
                    })?;
                    continue;
                }
            }
            let mut data = pool.get_for(f.data.len());
            data.extend_from_slice(f.data);
            inbox.push(Event::Message { peer, channel: f.channel, data });
        }
        Ok(())
    }

    fn process_acks(&mut self, now: Micros, header: &AckFields, pool: &mut BufPool) {
        let ack_delay = header.ack_delay as u64 * ACK_DELAY_UNIT_US;
        let mut fresh = self.reported.take_fresh(header.ack, header.ack_bits, self.next_seq);
        let mut units_acked = false;
        while fresh != 0 {
            let i = fresh.trailing_zeros() as u16;
            fresh &= fresh - 1;
            let seq = header.ack.wrapping_sub(i);
            let Some(p) = self.sent.ack(seq) else { continue };
            if i == 0 {
                // Only the newest acked packet has a known ack delay.
                self.rtt.observe_ack_delay(ack_delay as f64);
                self.rtt.sample(p.age(now).saturating_sub(ack_delay) as f64);
            }
            for (ch, useq) in self.sent.units_of(&p) {
                units_acked = true;
                if self.reliable_send[ch as usize].ack(useq, pool) {
                    self.reliable_acked_at = Some(now);
                }
            }
        }
        if units_acked {
            self.note_reliable();
        }
        // The acknowledged packet's full number is the one in our ring of recent
        // packets with its low bits. An ack that repeats the low bits of the newest one
        // taken is a repeat of it (the peer repeats its acks while it hears nothing new),
        // even when 65,536 packets later the ring holds another packet with those bits:
        // taking it would make us believe the peer caught up, and go back to the short
        // header that it cannot read.
        let Some(acked) = self.sent.get(header.ack).map(|p| self.sent.full_seq(p)) else { return };
        if self.newest_ack.is_some_and(|n| acked <= n || n as u16 == header.ack) {
            return;
        }
        self.newest_ack = Some(acked);
        // Packets that fell out of the peer's ack window without an ack are resolved as
        // lost (or reordered beyond repair, which costs the same).
        let horizon = acked.saturating_sub(ACK_WINDOW as u64 - 1);
        if horizon <= self.loss_cursor {
            return;
        }
        if horizon - self.loss_cursor > SENT_RING as u64 {
            self.loss_cursor = horizon - SENT_RING as u64;
        }
        while self.loss_cursor < horizon {
            // The reported bits answer for a packet within 64 of the acked one (the
            // usual step of one or two); the ring for older ones, after a jump.
            let was_acked = self
                .reported
                .reported_back(acked, acked - self.loss_cursor)
                .or_else(|| self.sent.get_full(self.loss_cursor).map(|p| p.acked()));
            if let Some(was_acked) = was_acked {
                self.loss.push(!was_acked);
            }
            self.loss_cursor += 1;
        }
    }

    pub(super) fn roll_rates(&mut self, now: Micros) {
        self.send_rate.roll(now);
        self.recv_rate.roll(now);
    }

    pub(super) fn stats(&self) -> ConnectionStats {
        ConnectionStats {
            srtt_us: self.rtt.srtt,
            min_rtt_us: self.rtt.min,
            rtt_var_us: self.rtt.rttvar,
            jitter_us: self.rtt.jitter,
            loss: self.loss.fraction(),
            loss_counts: self.loss.counts(),
            sent_bytes_per_sec: self.send_rate.bytes_per_sec,
            recv_bytes_per_sec: self.recv_rate.bytes_per_sec,
            sent_packets_per_sec: self.send_rate.packets_per_sec,
            recv_packets_per_sec: self.recv_rate.packets_per_sec,
            packets_sent: self.packets_sent,
            packets_received: self.packets_received,
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            resent: self.resent,
            malformed: self.malformed,
            replayed: self.replayed,
            forged: self.forged,
            implausible_seq: self.implausible_seq,
            over_budget: self.over_budget,
            backpressured: self.backpressured,
            recv_queue_bytes: 0, // the endpoint fills it in: the queue is its own
            send_queue_bytes: self.queued_bytes() as u64,
            rto_us: self.rtt.rto(),
        }
    }

    /// Returns every buffer to the pool (the connection is being dropped).
    pub(super) fn release(&mut self, pool: &mut BufPool) {
        for m in self.unreliable.drain(..) {
            pool.put(m.data);
        }
        self.unreliable_bytes = 0;
        for s in &mut self.reliable_send {
            s.clear(pool);
        }
        self.note_reliable();
    }
}
