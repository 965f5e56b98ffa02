//! The rendezvous service, sans-IO: it introduces the peers of a match to one another
//! and relays what cannot go direct. One UDP port, every match.
//!
//! - **Who may come in.** A peer presents a ticket (a connect token minted by the game's
//!   backend with this service's key, [`super::MatchClaim`] in its user data) in a Hello
//!   that proves the ticket's key. The match is made by its first ticket and ends when
//!   its time is up or every member has left. A slot belongs to the client id that
//!   first took it; a Hello is taken only with a sequence number above the last one
//!   from that slot (so a captured Hello replayed from elsewhere moves nobody).
//! - **What it tells.** Each member gets an Info sealed under its ticket's key: the
//!   address the service sees it at, and for each other member a pair key (from a
//!   cryptographic generator) and that member's candidates (its host addresses and the
//!   address the service sees it at), or none when either of the pair is private.
//!   A member's Hello is answered; a member that arrives or moves is told to the others.
//! - **What it relays.** A datagram `0xE4 | to slot | bytes` from a member's address
//!   goes to that slot's member as `0xE4 | from slot | bytes`: the bytes are the peers'
//!   own packets, sealed end to end under keys the service never has. A match's relay
//!   has a byte budget per second; a stranger's datagram, one to nobody, and one over
//!   the budget are dropped and counted. An answer is never larger than what asked for
//!   it (a Hello is padded to [`super::HELLO_SIZE`]), so the service amplifies nothing.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

use zeroize::Zeroizing;

use super::messages::{
    self, Hello, Info, KIND_HELLO, KIND_RELAY, PeerEntry, RELAY_HEADER_SIZE, RefusedReason, canonical,
};
use super::ticket::MatchClaim;
use crate::clock::Micros;
use crate::token;
use crate::transport::{KEY_SIZE, Secret, SecretRng};
use crate::wire::MAX_DATAGRAM_SIZE;

/// How a rendezvous runs.
#[derive(Clone)]
pub struct RendezvousConfig {
    /// The key the game's backend mints tickets with.
    pub key: Secret,
    /// The game's protocol id: tickets for another are refused.
    pub protocol_id: u32,
    /// The service's public addresses: a ticket must name one (empty: not checked).
    pub public_addresses: Vec<SocketAddr>,
    /// Relayed bytes per second one match may use (its burst: one second's worth).
    pub relay_bytes_per_sec: u32,
    /// How long a match lives from its first Hello, relay and all (microseconds).
    pub match_lifetime_us: Micros,
    /// A member silent this long (no Hello, nothing relayed) leaves its match.
    pub member_timeout_us: Micros,
    /// Matches held at once; more are refused.
    pub max_matches: usize,
    /// Tickets opened per second at most (each costs a decryption): the rest dropped.
    pub max_opens_per_sec: u32,
}

impl std::fmt::Debug for RendezvousConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RendezvousConfig")
            .field("protocol_id", &self.protocol_id)
            .field("public_addresses", &self.public_addresses)
            .field("relay_bytes_per_sec", &self.relay_bytes_per_sec)
            .field("match_lifetime_us", &self.match_lifetime_us)
            .finish_non_exhaustive()
    }
}

impl RendezvousConfig {
    /// The defaults with `key` and `protocol_id`: 32 KB/s of relay per match (a 2-player
    /// 60 Hz match uses a few KB/s), two hours a match, members gone after 30 s of
    /// silence, 10,000 matches, 2,000 tickets opened a second.
    pub fn new(key: Secret, protocol_id: u32) -> Self {
        RendezvousConfig {
            key,
            protocol_id,
            public_addresses: Vec::new(),
            relay_bytes_per_sec: 32 * 1024,
            match_lifetime_us: 2 * 3600 * 1_000_000,
            member_timeout_us: 30_000_000,
            max_matches: 10_000,
            max_opens_per_sec: 2_000,
        }
    }
}

/// What a rendezvous has done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RendezvousStats {
    /// Matches held now.
    pub matches: usize,
    /// Members of them now.
    pub members: usize,
    /// Matches made since start.
    pub matches_made: u64,
    /// Hellos taken (a member in, refreshed or moved).
    pub hellos: u64,
    /// Datagrams relayed, and their bytes (past the relay's header).
    pub relayed_datagrams: u64,
    /// Bytes relayed.
    pub relayed_bytes: u64,
    /// Hellos refused (with a Refused sent back).
    pub refused: u64,
    /// Relay datagrams over their match's budget.
    pub over_budget: u64,
    /// Datagrams from addresses that are no member's (relay without a ticket).
    pub strangers: u64,
    /// Datagrams that do not read, replays, datagrams to nobody, tickets over the
    /// opening budgets (per source address, and overall).
    pub dropped: u64,
}

struct Member {
    addr: SocketAddr,
    client_id: u64,
    info_key: Zeroizing<[u8; KEY_SIZE]>,
    hello_seq: u64,
    info_seq: u64,
    hosts: Vec<SocketAddr>,
    private: bool,
    last_seen: Micros,
}

struct Match {
    players: u8,
    ends: Micros,
    members: Vec<Option<Member>>,
    /// One key per pair (i < j), at `pair_index`.
    pair_keys: Vec<Zeroizing<[u8; KEY_SIZE]>>,
    budget: f64,
    budget_at: Micros,
}

fn pair_index(players: u8, a: u8, b: u8) -> usize {
    let (i, j) = (a.min(b) as usize, a.max(b) as usize);
    i * players as usize + j
}

/// The rendezvous service's state.
pub struct Rendezvous {
    cfg: RendezvousConfig,
    rng: SecretRng,
    matches: HashMap<u64, Match>,
    by_addr: HashMap<SocketAddr, (u64, u8)>,
    out: VecDeque<(SocketAddr, Vec<u8>)>,
    spare: Vec<Vec<u8>>,
    opens: f64,
    opens_at: Micros,
    per_source: SourceBudgets,
    stats: RendezvousStats,
}

/// Tickets one source address may have opened a second, and its burst.
const OPENS_PER_SOURCE: f64 = 8.0;
/// Source addresses whose budgets are kept; past it, the table starts again (a flood
/// of many addresses then meets the overall budget).
const MAX_SOURCES: usize = 8192;

/// The per-source budgets of ticket openings (a token bucket per IP address).
#[derive(Default)]
struct SourceBudgets(HashMap<std::net::IpAddr, (f64, Micros)>);

impl SourceBudgets {
    fn take(&mut self, now: Micros, ip: std::net::IpAddr) -> bool {
        if self.0.len() >= MAX_SOURCES && !self.0.contains_key(&ip) {
            self.0.clear();
        }
        let (tokens, at) = self.0.entry(ip).or_insert((OPENS_PER_SOURCE, now));
        *tokens = (*tokens + now.saturating_sub(*at) as f64 * OPENS_PER_SOURCE / 1e6).min(OPENS_PER_SOURCE);
        *at = now;
        if *tokens < 1.0 {
            return false;
        }
        *tokens -= 1.0;
        true
    }
}

/// Datagrams waiting to leave at most; more are dropped (counted).
const MAX_QUEUED: usize = 4096;

impl Rendezvous {
    /// A service with `cfg`; `seed` and `key_seed` (OS randomness) seed the generator of
    /// pair keys.
    pub fn new(cfg: RendezvousConfig, seed: u64, key_seed: &[u8; KEY_SIZE]) -> Self {
        let opens = f64::from(cfg.max_opens_per_sec);
        Rendezvous {
            cfg,
            rng: SecretRng::new(seed, key_seed),
            matches: HashMap::new(),
            by_addr: HashMap::new(),
            out: VecDeque::new(),
            spare: Vec::new(),
            opens,
            opens_at: 0,
            per_source: SourceBudgets::default(),
            stats: RendezvousStats::default(),
        }
    }

    /// What it has done, and holds now.
    pub fn stats(&self) -> RendezvousStats {
        RendezvousStats { matches: self.matches.len(), members: self.by_addr.len(), ..self.stats }
    }

    /// A datagram `data` from `from`, received at `now`; `unix_secs` is the wall clock
    /// (tickets expire by it).
    pub fn handle(&mut self, now: Micros, unix_secs: u64, from: SocketAddr, data: &[u8]) {
        let from = canonical(from);
        match data.first() {
            Some(&KIND_HELLO) => self.hello(now, unix_secs, from, data),
            Some(&KIND_RELAY) => self.relay(now, from, data),
            _ => self.stats.dropped += 1,
        }
    }

    /// The next datagram to send, into `buf` (at least [`super::HELLO_SIZE`] bytes).
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<(SocketAddr, usize)> {
        let (to, data) = self.out.pop_front()?;
        let n = data.len().min(buf.len());
        buf[..n].copy_from_slice(&data[..n]);
        self.recycle(data);
        Some((to, n))
    }

    /// Ends the matches whose time is up and drops members silent too long. Its timers
    /// are seconds: call it a few times a second (it walks every match), not per
    /// datagram.
    pub fn update(&mut self, now: Micros) {
        let timeout = self.cfg.member_timeout_us;
        let by_addr = &mut self.by_addr;
        self.matches.retain(|_, m| {
            for slot in m.members.iter_mut() {
                if slot.as_ref().is_some_and(|p| now >= p.last_seen + timeout || now >= m.ends) {
                    by_addr.remove(&slot.take().expect("checked").addr);
                }
            }
            m.members.iter().any(Option::is_some)
        });
    }

    fn queue(&mut self, to: SocketAddr, bytes: &[u8]) {
        if self.out.len() >= MAX_QUEUED {
            self.stats.dropped += 1;
            return;
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(bytes);
        self.out.push_back((to, buf));
    }

    fn recycle(&mut self, buf: Vec<u8>) {
        if self.spare.len() < 256 {
            self.spare.push(buf);
        }
    }

    fn refuse(&mut self, to: SocketAddr, reason: RefusedReason) {
        self.stats.refused += 1;
        self.queue(to, &messages::encode_refused(reason));
    }

    fn hello(&mut self, now: Micros, unix_secs: u64, from: SocketAddr, data: &[u8]) {
        let Some(hello) = messages::decode_hello(data) else {
            self.stats.dropped += 1;
            return;
        };
        if hello.protocol_id != self.cfg.protocol_id {
            return self.refuse(from, RefusedReason::BadTicket);
        }
        if hello.expires <= unix_secs {
            return self.refuse(from, RefusedReason::Expired);
        }
        // Opening a ticket is the one costly step a stranger can ask for: bounded per
        // source address first (one flooding address cannot use up what the others
        // need), then in all.
        if !self.per_source.take(now, from.ip()) {
            self.stats.dropped += 1;
            return;
        }
        let rate = f64::from(self.cfg.max_opens_per_sec);
        self.opens = (self.opens + (now.saturating_sub(self.opens_at)) as f64 * rate / 1e6).min(rate);
        self.opens_at = now;
        if self.opens < 1.0 {
            self.stats.dropped += 1;
            return;
        }
        self.opens -= 1.0;
        let Ok(claims) = token::open(&self.cfg.key, hello.protocol_id, hello.expires, hello.nonce, hello.sealed) else {
            return self.refuse(from, RefusedReason::BadTicket);
        };
        let named = self.cfg.public_addresses.is_empty()
            || claims.addresses.iter().any(|a| self.cfg.public_addresses.contains(&canonical(*a)));
        if !hello.proven(&claims.key) || !named {
            return self.refuse(from, RefusedReason::BadTicket);
        }
        let Some(claim) = MatchClaim::from_user_data(&claims.user_data) else {
            return self.refuse(from, RefusedReason::NoMatch);
        };
        match self.admit(now, from, claim, claims.client_id, &claims.key, &hello) {
            Ok(moved) => {
                self.stats.hellos += 1;
                self.tell(claim.match_id, claim.slot);
                if moved {
                    for other in 0..claim.players {
                        if other != claim.slot {
                            self.tell(claim.match_id, other);
                        }
                    }
                }
            }
            Err(Some(reason)) => self.refuse(from, reason),
            Err(None) => self.stats.dropped += 1,
        }
    }

    /// Takes a Hello's member into its match: whether the others must hear of it (it
    /// is new, or moved, or changed what it offers). `Err(None)`: a replay, dropped.
    fn admit(
        &mut self,
        now: Micros,
        from: SocketAddr,
        claim: MatchClaim,
        client_id: u64,
        key: &Secret,
        hello: &Hello,
    ) -> Result<bool, Option<RefusedReason>> {
        if !self.matches.contains_key(&claim.match_id) {
            if self.matches.len() >= self.cfg.max_matches {
                return Err(Some(RefusedReason::Closed));
            }
            let pairs = claim.players as usize * claim.players as usize;
            let mut pair_keys = Vec::with_capacity(pairs);
            for _ in 0..pairs {
                let mut k = Zeroizing::new([0u8; KEY_SIZE]);
                self.rng.fill(&mut *k);
                pair_keys.push(k);
            }
            let budget = f64::from(self.cfg.relay_bytes_per_sec);
            let ends = now.saturating_add(self.cfg.match_lifetime_us);
            let members = (0..claim.players).map(|_| None).collect();
            self.matches.insert(
                claim.match_id,
                Match { players: claim.players, ends, members, pair_keys, budget, budget_at: now },
            );
            self.stats.matches_made += 1;
        }
        let m = self.matches.get_mut(&claim.match_id).expect("made above");
        if m.players != claim.players {
            return Err(Some(RefusedReason::Mismatch));
        }
        if now >= m.ends {
            return Err(Some(RefusedReason::Closed));
        }
        let moved = match &mut m.members[claim.slot as usize] {
            Some(p) if p.client_id != client_id => return Err(Some(RefusedReason::SlotTaken)),
            Some(p) if hello.seq <= p.hello_seq => return Err(None),
            Some(p) => {
                let changed = p.addr != from || p.hosts != hello.hosts || p.private != hello.private;
                p.hello_seq = hello.seq;
                p.hosts.clone_from(&hello.hosts);
                p.private = hello.private;
                p.last_seen = now;
                let old = std::mem::replace(&mut p.addr, from);
                if old != from {
                    self.by_addr.remove(&old);
                }
                changed
            }
            slot @ None => {
                *slot = Some(Member {
                    addr: from,
                    client_id,
                    info_key: messages::info_key(key),
                    hello_seq: hello.seq,
                    info_seq: 0,
                    hosts: hello.hosts.clone(),
                    private: hello.private,
                    last_seen: now,
                });
                true
            }
        };
        // One address, one member: another membership at this address ends (a ticket
        // reused from a second process, or the same player in a new match).
        if let Some(old) = self.by_addr.insert(from, (claim.match_id, claim.slot)) {
            if old != (claim.match_id, claim.slot) {
                if let Some(m) = self.matches.get_mut(&old.0) {
                    m.members[old.1 as usize] = None;
                }
            }
        }
        Ok(moved)
    }

    /// Sends the member at `slot` of `match_id` what it should know now.
    fn tell(&mut self, match_id: u64, slot: u8) {
        let Some(m) = self.matches.get_mut(&match_id) else { return };
        let players = m.players;
        let Some(me) = m.members[slot as usize].as_ref() else { return };
        let mut peers = Vec::with_capacity(players as usize - 1);
        for (j, other) in m.members.iter().enumerate() {
            let Some(other) = other.as_ref().filter(|_| j != slot as usize) else { continue };
            let relay_only = me.private || other.private;
            let mut candidates = Vec::new();
            if !relay_only {
                candidates.extend_from_slice(&other.hosts);
                candidates.push(other.addr);
            }
            peers.push(PeerEntry {
                slot: j as u8,
                relay_only,
                pair_key: *m.pair_keys[pair_index(players, slot, j as u8)],
                candidates,
            });
        }
        let info = Info { slot, players, match_id, reflexive: me.addr, peers };
        let me = m.members[slot as usize].as_mut().expect("checked above");
        me.info_seq += 1;
        let bytes = messages::encode_info(&me.info_key, me.info_seq, &info);
        let to = me.addr;
        self.queue(to, &bytes);
    }

    fn relay(&mut self, now: Micros, from: SocketAddr, data: &[u8]) {
        let Some(&(match_id, slot)) = self.by_addr.get(&from) else {
            self.stats.strangers += 1;
            return;
        };
        let Some(m) = self.matches.get_mut(&match_id) else {
            self.stats.dropped += 1;
            return;
        };
        let to = data.get(1).copied().unwrap_or(u8::MAX);
        let target = m.members.get(to as usize).and_then(Option::as_ref).map(|p| p.addr);
        // A peer's packet is never larger than a datagram of ours: a longer one is
        // nobody's packet, and the relay passes on nothing larger than it takes.
        let fits = (RELAY_HEADER_SIZE + 1..=RELAY_HEADER_SIZE + MAX_DATAGRAM_SIZE).contains(&data.len());
        let (Some(target), true) = (target, fits && to != slot && now < m.ends) else {
            self.stats.dropped += 1;
            return;
        };
        if let Some(p) = m.members[slot as usize].as_mut() {
            p.last_seen = now;
        }
        let rate = f64::from(self.cfg.relay_bytes_per_sec);
        m.budget = (m.budget + now.saturating_sub(m.budget_at) as f64 * rate / 1e6).min(rate);
        m.budget_at = now;
        let bytes = (data.len() - RELAY_HEADER_SIZE) as f64;
        if m.budget < bytes {
            self.stats.over_budget += 1;
            return;
        }
        m.budget -= bytes;
        self.stats.relayed_datagrams += 1;
        self.stats.relayed_bytes += bytes as u64;
        if self.out.len() >= MAX_QUEUED {
            self.stats.dropped += 1;
            return;
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(&[KIND_RELAY, slot]);
        buf.extend_from_slice(&data[RELAY_HEADER_SIZE..]);
        self.out.push_back((target, buf));
    }
}

/// The peers' bytes inside a relay datagram (what the relay carries and cannot read),
/// for recording at the relay.
pub fn relayed_payload(datagram: &[u8]) -> Option<&[u8]> {
    (datagram.len() > RELAY_HEADER_SIZE && datagram[0] == KIND_RELAY).then(|| &datagram[RELAY_HEADER_SIZE..])
}
