//! A peer's side of NAT traversal, sans-IO: it registers with the rendezvous, learns
//! the other peers' candidates, runs connectivity checks over every candidate, and
//! picks each peer's path (direct to an address that answered, or through the relay).
//!
//! It sits between the endpoint and the socket. The endpoint knows each remote player
//! only by a fixed address of its slot ([`peer_address`]), which never changes: when a
//! path changes, the connection, its keys and its packet numbers stay as they are, so
//! a match survives a NAT mapping that dies (it goes on through the relay).
//!
//! The owner offers each received datagram to [`Traversal::claim`] first, asks
//! [`Traversal::route`] where each of the endpoint's datagrams goes, sends what
//! [`Traversal::poll_transmit`] gives, runs [`Traversal::update`] at
//! [`Traversal::next_timeout`], and reads [`Traversal::poll_event`].
//!
//! - **Checks** are authenticated under a key from the game's match secret and the
//!   pair's key from the rendezvous ([`super::messages::check_key`]). A check is sent
//!   to each candidate (again every 200 ms, five times); an answer from the address it
//!   went to proves that address both ways. A valid check from an address the peer did
//!   not offer (its NAT mapped it anew for us, a "peer-reflexive" address) is answered
//!   and checked back; when its answer comes, the path moves there if the peer now
//!   sends from it (a NAT that mapped the peer anew mid-match).
//! - **The path** of a peer starts through the relay as soon as the rendezvous has
//!   introduced it, and goes direct when a check succeeds (host addresses first). A
//!   direct path is checked every 250 ms; a second without an answer and it falls
//!   back to the relay, and the checks start again every five seconds.
//! - **Privacy.** A private peer, or any peer paired with one, is told no candidates
//!   and sends no checks: all its datagrams go through the relay, and no peer learns
//!   another's address.

use std::collections::VecDeque;
use std::net::SocketAddr;

use zeroize::Zeroizing;

use super::messages::{
    self, CHECK_SIZE, Check, Info, KIND_CHECK, KIND_CHECK_RESPONSE, KIND_INFO, KIND_REFUSED, KIND_RELAY,
    MAX_RENDEZVOUS_PLAYERS, RELAY_HEADER_SIZE, RefusedReason, TRANSACTION_SIZE, canonical,
};
use super::paths::{
    Claimed, PeerPath, Route, TraversalConfig, TraversalEvent, TraversalStats, peer_address, peer_slot, relay_header,
};
use crate::clock::Micros;
use crate::transport::{KEY_SIZE, SecretRng};
use crate::wire::MAX_DATAGRAM_SIZE;

const FIRST_HELLO_RTO_US: Micros = 250_000;
const MAX_HELLO_RTO_US: Micros = 2_000_000;
/// A registered peer's Hello again this often (it keeps the rendezvous's mapping open).
const REFRESH_US: Micros = 10_000_000;
const CHECK_RTO_US: Micros = 200_000;
const CHECK_SENDS: u32 = 5;
/// A direct path is checked this often while it is used (a 34-byte check each way:
/// little beside a match's inputs, and it keeps the NATs' mappings open).
const CONSENT_US: Micros = 250_000;
/// A direct path that answered nothing this long is dead. Below the P2P session's
/// progress timeout (1.5 s by default): a path dead one way only leaves the other side
/// hearing a peer that makes no progress, which that timeout would drop.
const DEAD_US: Micros = 1_000_000;
/// Checks start again this often while a peer has no direct path.
const RETRY_US: Micros = 5_000_000;
/// Datagrams kept for a peer with no path yet (the endpoint's first handshake packets).
const MAX_HELD: usize = 8;
/// Candidates (offered and peer-reflexive) kept per peer.
const MAX_PEER_CANDIDATES: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Host,
    PeerReflexive,
    Reflexive,
}

#[derive(Debug)]
struct Candidate {
    addr: SocketAddr,
    kind: Kind,
    /// Proved both ways (a check of ours to it was answered from it), and when last.
    answered: Option<Micros>,
    /// When it last sent us a valid check: its datagrams are the peer's, and the
    /// latest such address is where the peer sends from now.
    heard: Option<Micros>,
}

#[derive(Debug)]
struct InFlight {
    transaction: [u8; TRANSACTION_SIZE],
    addr: SocketAddr,
    sends: u32,
    due: Micros,
}

struct Peer {
    known: bool,
    relay_only: bool,
    key: Zeroizing<[u8; KEY_SIZE]>,
    candidates: Vec<Candidate>,
    checks: Vec<InFlight>,
    path: PeerPath,
    /// When the direct path last answered a check.
    last_answer: Micros,
    next_consent: Micros,
    next_round: Option<Micros>,
    held: VecDeque<Vec<u8>>,
}

enum Phase {
    Registering {
        rto: Micros,
    },
    Registered,
    /// The ticket is for another slot: nothing more is sent.
    Stopped,
}

/// One peer's NAT traversal for one match.
pub struct Traversal {
    cfg: TraversalConfig,
    rendezvous: SocketAddr,
    rng: SecretRng,
    phase: Phase,
    next_hello: Micros,
    hello_seq: u64,
    /// The wall clock's microseconds less the host clock's at the start: Hellos are
    /// numbered by the wall clock (see [`TraversalConfig::unix_us`]).
    seq_base: u64,
    info_seq: u64,
    last_refused: Option<RefusedReason>,
    peers: Vec<Peer>,
    out: VecDeque<(SocketAddr, Vec<u8>)>,
    events: VecDeque<TraversalEvent>,
    stats: TraversalStats,
}

impl Traversal {
    /// A traversal that starts registering at `now`; `key_seed` (OS randomness) seeds
    /// the transaction ids.
    pub fn new(now: Micros, cfg: TraversalConfig, key_seed: &[u8; KEY_SIZE]) -> Self {
        let rendezvous = canonical(cfg.rendezvous);
        let peers = (0..MAX_RENDEZVOUS_PLAYERS)
            .map(|_| Peer {
                known: false,
                relay_only: true,
                key: Zeroizing::new([0; KEY_SIZE]),
                candidates: Vec::new(),
                checks: Vec::new(),
                path: PeerPath::Pending,
                last_answer: 0,
                next_consent: Micros::MAX,
                next_round: None,
                held: VecDeque::new(),
            })
            .collect();
        let seq_base = cfg.unix_us.saturating_sub(now);
        Traversal {
            cfg,
            rendezvous,
            rng: SecretRng::new(now, key_seed),
            phase: Phase::Registering { rto: FIRST_HELLO_RTO_US },
            next_hello: now,
            hello_seq: 0,
            seq_base,
            info_seq: 0,
            last_refused: None,
            peers,
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: TraversalStats::default(),
        }
    }

    /// The path to the player in `slot`.
    pub fn path(&self, slot: u8) -> PeerPath {
        self.peers.get(slot as usize).map_or(PeerPath::Pending, |p| p.path)
    }

    /// What it has done.
    pub fn stats(&self) -> TraversalStats {
        self.stats
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<TraversalEvent> {
        self.events.pop_front()
    }

    /// Where a datagram of the endpoint for `to` goes.
    pub fn route(&mut self, to: SocketAddr) -> Route {
        let Some(slot) = peer_slot(to) else { return Route::NotMine };
        match self.peers[slot as usize].path {
            PeerPath::Pending => Route::Hold(slot),
            PeerPath::Direct(addr) => Route::Direct(addr),
            PeerPath::Relayed(via) => {
                self.stats.relayed_out += 1;
                Route::Relay { via, slot }
            }
        }
    }

    /// Keeps a datagram for `slot` until it has a path (the oldest dropped past a few).
    pub fn hold(&mut self, slot: u8, data: &[u8]) {
        let Some(p) = self.peers.get_mut(slot as usize) else { return };
        if p.held.len() >= MAX_HELD {
            p.held.pop_front();
            self.stats.held_dropped += 1;
        }
        p.held.push_back(data.to_vec());
    }

    /// The next datagram of the traversal's own (Hellos, checks, held datagrams now
    /// routed), into `buf` (at least [`super::HELLO_SIZE`] bytes): where, and its length.
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<(SocketAddr, usize)> {
        let (to, data) = self.out.pop_front()?;
        let n = data.len().min(buf.len());
        buf[..n].copy_from_slice(&data[..n]);
        Some((to, n))
    }

    /// The next time [`Traversal::update`] has something to do.
    pub fn next_timeout(&self) -> Option<Micros> {
        if matches!(self.phase, Phase::Stopped) {
            return None;
        }
        let mut t = self.next_hello;
        for p in self.peers.iter().filter(|p| p.known && !p.relay_only) {
            t = t.min(p.next_consent);
            if let Some(r) = p.next_round {
                t = t.min(r);
            }
            for c in &p.checks {
                t = t.min(c.due);
            }
        }
        Some(t)
    }

    /// Runs the timers: Hellos, checks and their retransmissions, the direct paths'
    /// consent and death.
    pub fn update(&mut self, now: Micros) {
        if matches!(self.phase, Phase::Stopped) {
            return;
        }
        if now >= self.next_hello {
            self.send_hello(now);
        }
        for slot in 0..self.peers.len() as u8 {
            self.update_peer(now, slot);
        }
    }

    fn send_hello(&mut self, now: Micros) {
        // Above every Hello of an earlier run with this ticket: numbered by the wall clock.
        self.hello_seq = self.hello_seq.max(self.seq_base.saturating_add(now)).saturating_add(1);
        let hello = messages::encode_hello(&self.cfg.ticket, self.hello_seq, self.cfg.private, &self.cfg.hosts);
        self.out.push_back((self.rendezvous, hello));
        self.next_hello = now
            + match &mut self.phase {
                Phase::Registering { rto } => {
                    let wait = *rto;
                    *rto = (*rto * 2).min(MAX_HELLO_RTO_US);
                    wait
                }
                _ => REFRESH_US,
            };
    }

    fn update_peer(&mut self, now: Micros, slot: u8) {
        let local = self.cfg.local_slot;
        let p = &mut self.peers[slot as usize];
        if !p.known || p.relay_only {
            return;
        }
        // Retransmissions; a check that sent its last is given up.
        let mut sends = Vec::new();
        p.checks.retain_mut(|c| {
            if now < c.due {
                return true;
            }
            if c.sends >= CHECK_SENDS {
                return false;
            }
            c.sends += 1;
            c.due = now + CHECK_RTO_US;
            sends.push((c.addr, c.transaction));
            true
        });
        if let PeerPath::Direct(addr) = p.path {
            if now.saturating_sub(p.last_answer) > DEAD_US {
                // The direct path died (a mapping timed out, a route went): the relay.
                p.path = PeerPath::Relayed(self.rendezvous);
                if let Some(c) = p.candidates.iter_mut().find(|c| c.addr == addr) {
                    c.answered = None;
                }
                p.next_consent = Micros::MAX;
                p.next_round = Some(now);
                self.events.push_back(TraversalEvent::Path { slot, path: p.path });
            } else if now >= p.next_consent {
                p.next_consent = now + CONSENT_US;
                if !p.checks.iter().any(|c| c.addr == addr) {
                    let t = self.transaction();
                    let p = &mut self.peers[slot as usize];
                    p.checks.push(InFlight { transaction: t, addr, sends: 1, due: now + CONSENT_US });
                    sends.push((addr, t));
                }
            }
        }
        let p = &mut self.peers[slot as usize];
        if p.next_round.is_some_and(|r| now >= r) {
            p.next_round = (!matches!(p.path, PeerPath::Direct(_))).then_some(now + RETRY_US);
            let addrs: Vec<SocketAddr> = p.candidates.iter().map(|c| c.addr).collect();
            for addr in addrs {
                if let Some(t) = self.start_check(now, slot, addr) {
                    sends.push((addr, t));
                }
            }
        }
        let key = Zeroizing::new(*self.peers[slot as usize].key);
        for (addr, transaction) in sends {
            let bytes = messages::encode_check(&key, &Check { response: false, from: local, to: slot, transaction });
            self.stats.checks_sent += 1;
            self.out.push_back((addr, bytes.to_vec()));
        }
    }

    fn transaction(&mut self) -> [u8; TRANSACTION_SIZE] {
        let mut t = [0u8; TRANSACTION_SIZE];
        self.rng.fill(&mut t);
        t
    }

    /// A new check to `addr` unless one is in flight: its transaction (the caller sends
    /// the first request).
    fn start_check(&mut self, now: Micros, slot: u8, addr: SocketAddr) -> Option<[u8; TRANSACTION_SIZE]> {
        if self.peers[slot as usize].checks.iter().any(|c| c.addr == addr) {
            return None;
        }
        let t = self.transaction();
        self.peers[slot as usize].checks.push(InFlight { transaction: t, addr, sends: 1, due: now + CHECK_RTO_US });
        Some(t)
    }

    /// Takes a received datagram if it is the traversal's (or a peer's, to deliver).
    pub fn claim<'a>(&mut self, now: Micros, from: SocketAddr, data: &'a [u8]) -> Claimed<'a> {
        if matches!(self.phase, Phase::Stopped) {
            return Claimed::NotMine;
        }
        let from = canonical(from);
        let first = data.first().copied().unwrap_or(0);
        if from == self.rendezvous {
            match first {
                KIND_INFO => self.on_info(now, data),
                KIND_REFUSED => self.on_refused(data),
                KIND_RELAY if (RELAY_HEADER_SIZE + 1..=RELAY_HEADER_SIZE + MAX_DATAGRAM_SIZE).contains(&data.len()) => {
                    let slot = data[1];
                    if self.peers.get(slot as usize).is_some_and(|p| p.known) && slot != self.cfg.local_slot {
                        self.stats.relayed_in += 1;
                        return Claimed::Deliver { from: peer_address(slot), data: &data[RELAY_HEADER_SIZE..] };
                    }
                    self.stats.dropped += 1;
                }
                _ => self.stats.dropped += 1,
            }
            return Claimed::Taken;
        }
        if (first == KIND_CHECK || first == KIND_CHECK_RESPONSE) && data.len() == CHECK_SIZE {
            self.on_check(now, from, data);
            return Claimed::Taken;
        }
        for (slot, p) in self.peers.iter().enumerate() {
            if p.known
                && !p.relay_only
                && p.candidates.iter().any(|c| c.addr == from && (c.heard.is_some() || c.answered.is_some()))
            {
                return Claimed::Deliver { from: peer_address(slot as u8), data };
            }
        }
        Claimed::NotMine
    }

    fn on_refused(&mut self, data: &[u8]) {
        let Some(reason) = (data.len() == 2).then(|| RefusedReason::from_u8(data[1])).flatten() else {
            self.stats.dropped += 1;
            return;
        };
        if self.last_refused != Some(reason) {
            self.last_refused = Some(reason);
            self.events.push_back(TraversalEvent::Refused(reason));
        }
    }

    fn on_info(&mut self, now: Micros, data: &[u8]) {
        let key = messages::info_key(&self.cfg.ticket.key);
        let Some((seq, info)) = messages::decode_info(&key, data).filter(|(seq, _)| *seq > self.info_seq) else {
            self.stats.dropped += 1;
            return;
        };
        self.info_seq = seq;
        if info.slot != self.cfg.local_slot {
            self.phase = Phase::Stopped;
            self.events.push_back(TraversalEvent::WrongSlot { ticket: info.slot, local: self.cfg.local_slot });
            return;
        }
        if matches!(self.phase, Phase::Registering { .. }) {
            self.phase = Phase::Registered;
            self.next_hello = now + REFRESH_US;
            self.events.push_back(TraversalEvent::Registered { reflexive: info.reflexive });
        }
        self.apply(now, &info);
    }

    fn apply(&mut self, now: Micros, info: &Info) {
        let local = self.cfg.local_slot;
        for entry in &info.peers {
            let slot = entry.slot;
            let key = messages::check_key(&self.cfg.match_secret, &entry.pair_key, local, slot);
            let p = &mut self.peers[slot as usize];
            let relay_only = entry.relay_only || self.cfg.private;
            let rekeyed = *p.key != *key;
            p.key = key;
            p.relay_only = relay_only;
            if rekeyed {
                p.checks.clear();
                p.candidates.clear();
            }
            if relay_only {
                p.candidates.clear();
                p.checks.clear();
            } else {
                let hosts = entry.candidates.len().saturating_sub(1);
                for (i, &addr) in entry.candidates.iter().enumerate() {
                    let kind = if i < hosts { Kind::Host } else { Kind::Reflexive };
                    let room = p.candidates.len() < MAX_PEER_CANDIDATES;
                    match p.candidates.iter_mut().find(|c| c.addr == addr) {
                        Some(c) => c.kind = c.kind.min(kind),
                        None if room => p.candidates.push(Candidate { addr, kind, answered: None, heard: None }),
                        None => {}
                    }
                }
                p.next_round = Some(now);
            }
            let was_known = std::mem::replace(&mut p.known, true);
            let relayed = PeerPath::Relayed(self.rendezvous);
            if !was_known || (relay_only && p.path != relayed) {
                self.set_path(slot, relayed);
            }
        }
        self.update(now);
    }

    fn set_path(&mut self, slot: u8, path: PeerPath) {
        let p = &mut self.peers[slot as usize];
        if p.path == path {
            return;
        }
        p.path = path;
        self.events.push_back(TraversalEvent::Path { slot, path });
        // What waited for a path goes now.
        let held: Vec<Vec<u8>> = p.held.drain(..).collect();
        for data in held {
            match path {
                PeerPath::Direct(addr) => self.out.push_back((addr, data)),
                PeerPath::Relayed(via) => {
                    let mut d = relay_header(slot).to_vec();
                    d.extend_from_slice(&data);
                    self.stats.relayed_out += 1;
                    self.out.push_back((via, d));
                }
                PeerPath::Pending => {}
            }
        }
    }

    fn on_check(&mut self, now: Micros, from: SocketAddr, data: &[u8]) {
        let local = self.cfg.local_slot;
        let check = messages::decode_check(data).filter(|c| c.to == local && c.from != local);
        let Some(check) = check.filter(|c| (c.from as usize) < self.peers.len()) else {
            self.stats.dropped += 1;
            return;
        };
        let slot = check.from;
        let p = &mut self.peers[slot as usize];
        if !p.known || p.relay_only || !messages::check_holds(&p.key, data) {
            self.stats.dropped += 1;
            return;
        }
        self.stats.checks_received += 1;
        if check.response {
            let Some(i) = p.checks.iter().position(|c| c.transaction == check.transaction && c.addr == from) else {
                self.stats.dropped += 1;
                return;
            };
            p.checks.swap_remove(i);
            let Some(c) = p.candidates.iter_mut().find(|c| c.addr == from) else { return };
            c.answered = Some(now);
            let (kind, heard) = (c.kind, c.heard);
            // The path in use holds against this address unless this one is of a
            // better kind, or the path in use has gone quiet for two consent rounds,
            // or the peer now sends from this address rather than that one (its NAT
            // mapped it anew: the old mapping is gone, whatever it answered last).
            let current_holds = |addr: SocketAddr| {
                let Some(cur) = p.candidates.iter().find(|c| c.addr == addr) else { return false };
                now.saturating_sub(p.last_answer) <= 2 * CONSENT_US
                    && cur.kind <= kind
                    && !(heard.is_some() && heard > cur.heard)
            };
            match p.path {
                PeerPath::Direct(addr) if addr == from => p.last_answer = now,
                PeerPath::Direct(addr) if current_holds(addr) => {}
                _ => {
                    p.last_answer = now;
                    p.next_consent = now + CONSENT_US;
                    p.next_round = None;
                    self.set_path(slot, PeerPath::Direct(from));
                }
            }
            return;
        }
        // A request: answer it where it came from, and check that address back (it may
        // be a mapping the peer's NAT made for us alone).
        let answer = messages::encode_check(
            &p.key,
            &Check { response: true, from: local, to: slot, transaction: check.transaction },
        );
        self.stats.checks_sent += 1;
        self.out.push_back((from, answer.to_vec()));
        let p = &mut self.peers[slot as usize];
        let room = p.candidates.len() < MAX_PEER_CANDIDATES;
        match p.candidates.iter_mut().find(|c| c.addr == from) {
            Some(c) => c.heard = Some(now),
            None if room => {
                p.candidates.push(Candidate {
                    addr: from,
                    kind: Kind::PeerReflexive,
                    answered: None,
                    heard: Some(now),
                });
            }
            None => return,
        }
        // Checked back unless it is the path in use; an address that answered before is
        // checked again when the peer sends from it while the path is elsewhere (a
        // rebinding: the answer moves the path here, see above).
        if !matches!(p.path, PeerPath::Direct(a) if a == from) {
            if let Some(t) = self.start_check(now, slot, from) {
                let key = Zeroizing::new(*self.peers[slot as usize].key);
                let bytes =
                    messages::encode_check(&key, &Check { response: false, from: local, to: slot, transaction: t });
                self.stats.checks_sent += 1;
                self.out.push_back((from, bytes.to_vec()));
            }
        }
    }
}
