//! Reconciling a player whose inputs reached the peers differently (equivocation).
//!
//! Every peer reports, with its checksums, running digests of the inputs it received
//! from every player (`forensics.rs`). For player `L`, the peers other than `L`'s own
//! vote with those digests. An honest peer sends every peer the same report, so every
//! honest peer sees the same votes; with a strict majority (four peers against one
//! liar: the oral-messages bound, n >= 3f + 1) they all settle on the same inputs for
//! `L`, whatever `L` told each. Naming alone (the digests' culprit) left the peers it
//! lied to and the others playing different games for the rest of the match.
//!
//! - A peer in the majority names `L` ([`Event::InputsDisagree`]) and reports no desync
//!   with the minority: the minority repairs.
//! - A peer in the minority was lied to. It asks a majority peer for `L`'s inputs
//!   since the last check it agreed on, checks them against the majority's digest,
//!   corrects its input queue and resimulates from the check state kept for
//!   forensics (`check_slots`). From then on it takes `L`'s inputs from that peer and
//!   ignores `L`'s own, so the lie stops there.
//! - Without a majority (three peers, or a liar that told three stories) nothing is
//!   decided here: the checksums' desync is reported, naming `L`, as before.
//!
//! Wire, reliable channel (every byte checked; the first byte cannot start an input
//! message, whose version sits in bits 5-7):
//! ```text
//! request: u8 0x25, u16 player, u32 from, u32 to     ticks from..to (to = u32::MAX:
//!                                                     as far as the peer has them)
//! inputs:  u8 0x26, u16 player, u32 from, u8 count, count * (u8 status, input bytes)
//! ```
//! A peer answers one request per peer per tick, about a player that is not the
//! asker's and not its own, with at most [`MAX_REPAIR_TICKS`] confirmed inputs.

use super::super::desync::{InputDigest, digest_step};
use super::{Event, P2pSession, PlayerKind};
use crate::clock::Micros;
use crate::engine::{InputStatus, Tick};
use crate::transport::PeerId;
use crate::wire::Reader;

/// First byte of a request for a player's inputs.
pub(crate) const KIND_REPAIR_REQUEST: u8 = 0x25;
/// First byte of the answer.
pub(crate) const KIND_REPAIR: u8 = 0x26;
/// Most ticks one answer carries.
pub(crate) const MAX_REPAIR_TICKS: Tick = 128;
/// Check ticks whose votes are kept while they are counted.
const BALLOTS: usize = 8;
/// Check ticks whose running digests are kept to check a repair against.
const SNAPSHOTS: usize = 16;
/// Check intervals a desync that the votes may explain waits for them.
const DEFER_CHECKS: Tick = 4;
/// A request not answered within this is sent again (the peer refused it: too soon
/// after its last answer to us, or its history moved on).
const REASK_US: Micros = 250_000;

/// The votes of one check tick: per peer (session order), its digests if reported.
/// Allocated once, reused for later ticks.
#[derive(Debug, Clone)]
struct Ballot {
    tick: Option<Tick>,
    has: Vec<bool>,
    digests: Vec<InputDigest>,
}

/// A request for `player`'s inputs, sent or to send.
#[derive(Debug, Clone, Copy)]
struct Ask {
    peer: PeerId,
    from: Tick,
    to: Tick,
    /// A repair: the majority's digest by check tick `to`, which the answer must give.
    /// None: a forward, taken as the source sends it.
    verify: Option<InputDigest>,
    /// When it was last sent.
    sent_at: Option<Micros>,
}

/// What this side knows of one player's agreement.
#[derive(Debug, Clone, Copy, Default)]
struct Agreement {
    /// The check tick by which this side's inputs of the player agree with the majority.
    agreed: Tick,
    named: bool,
    /// After this side was found in the minority: the peer the player's inputs come
    /// from (its own are ignored).
    source: Option<PeerId>,
    ask: Option<Ask>,
    /// When the last forward was asked for (one a tick at most).
    forward_at: Option<Micros>,
}

/// A desync with a peer that the votes of its tick may explain.
#[derive(Debug, Clone, Copy)]
struct Deferred {
    peer_index: usize,
    tick: Tick,
    local: u64,
    remote: u64,
    culprit: usize,
}

/// The reconciliation's state (see the module's comment).
#[derive(Debug, Clone)]
pub(super) struct Reconcile {
    ballots: Vec<Ballot>,
    /// Running digests at check ticks (None: unused), allocated once.
    snapshots: Vec<(Option<Tick>, Vec<InputDigest>)>,
    /// The votes on one player while they are counted (reused).
    votes: Vec<(Option<PeerId>, InputDigest)>,
    players: Vec<Agreement>,
    deferred: Vec<Deferred>,
    /// Answers to send, one per peer at most.
    answers: Vec<(PeerId, Vec<u8>)>,
    /// When each peer (session order) was last answered.
    answered_at: Vec<Option<Micros>>,
}

impl Reconcile {
    pub(super) fn new(players: usize, peers: usize, start: &[InputDigest]) -> Self {
        let ballot = Ballot { tick: None, has: vec![false; peers], digests: vec![0; peers * players] };
        let mut snapshots = vec![(None, vec![0; players]); SNAPSHOTS];
        snapshots[0] = (Some(0), start.to_vec());
        Reconcile {
            ballots: vec![ballot; BALLOTS],
            snapshots,
            votes: Vec::with_capacity(peers + 1),
            players: vec![Agreement::default(); players],
            deferred: Vec::new(),
            answers: Vec::new(),
            answered_at: vec![None; peers],
        }
    }

    /// Whether `player`'s inputs come from another peer than its own.
    pub(super) fn forwarded(&self, player: usize) -> bool {
        self.players[player].source.is_some()
    }

    /// Keeps the running digests at check tick `tick` (in place of the same tick's,
    /// else of the oldest).
    pub(super) fn snapshot(&mut self, tick: Tick, raw: &[InputDigest]) {
        let i = self.snapshots.iter().position(|s| s.0 == Some(tick)).unwrap_or_else(|| oldest(&self.snapshots));
        self.snapshots[i].0 = Some(tick);
        self.snapshots[i].1.copy_from_slice(raw);
    }

    fn raw_at(&self, tick: Tick) -> Option<&[InputDigest]> {
        self.snapshots.iter().find(|s| s.0 == Some(tick)).map(|s| s.1.as_slice())
    }

    fn vote(&mut self, tick: Tick, peer_index: usize, digests: &[InputDigest]) {
        let players = self.players.len();
        if digests.len() != players {
            return;
        }
        let i = match self.ballots.iter().position(|b| b.tick == Some(tick)) {
            Some(i) => i,
            None => {
                let i = self.ballots.iter().enumerate().min_by_key(|(_, b)| b.tick).map_or(0, |(i, _)| i);
                self.ballots[i].tick = Some(tick);
                self.ballots[i].has.fill(false);
                i
            }
        };
        let b = &mut self.ballots[i];
        b.has[peer_index] = true;
        b.digests[peer_index * players..][..players].copy_from_slice(digests);
    }
}

/// The entry of the oldest (or no) tick.
fn oldest<T>(entries: &[(Option<Tick>, T)]) -> usize {
    entries.iter().enumerate().min_by_key(|(_, e)| e.0).map_or(0, |(i, _)| i)
}

impl P2pSession {
    /// Whether a desync with peer `pi` at `tick`, whose digests name `culprit`, waits
    /// for the votes: `culprit` is a third peer's player, and enough peers vote on it
    /// for a majority.
    pub(super) fn defers(&self, pi: usize, culprit: usize) -> bool {
        let PlayerKind::Remote(owner) = self.players[culprit].kind() else { return false };
        if owner == self.peers[pi].id {
            return false;
        }
        let voters = 1 + self.peers.iter().filter(|p| p.id != owner && !p.phase.is_gone()).count();
        voters >= 3
    }

    /// Records peer `pi`'s digests of check tick `tick`, and a desync they may explain.
    pub(super) fn record_vote(
        &mut self,
        pi: usize,
        tick: Tick,
        theirs: &[InputDigest],
        desync: Option<(u64, u64, usize)>,
    ) {
        self.recon.vote(tick, pi, theirs);
        if let Some((local, remote, culprit)) = desync {
            self.recon.deferred.push(Deferred { peer_index: pi, tick, local, remote, culprit });
        }
        self.decide(tick);
    }

    /// Counts the votes of check tick `tick`, for every remote player whose voters
    /// have all reported.
    pub(super) fn decide(&mut self, tick: Tick) {
        let Some(bi) = self.recon.ballots.iter().position(|b| b.tick == Some(tick)) else { return };
        if self.checks.digests(tick).is_none_or(<[InputDigest]>::is_empty) {
            return;
        }
        let players = self.players.len();
        let mut votes = std::mem::take(&mut self.recon.votes);
        for player in 0..players {
            let PlayerKind::Remote(owner) = self.players[player].kind() else { continue };
            let mine = self.checks.digests(tick).expect("checked above")[player];
            votes.clear();
            votes.push((None, mine));
            let b = &self.recon.ballots[bi];
            let mut complete = true;
            for (pi, p) in self.peers.iter().enumerate() {
                if p.id == owner || p.phase.is_gone() {
                    continue;
                }
                if !b.has[pi] {
                    complete = false;
                    break;
                }
                votes.push((Some(p.id), b.digests[pi * players + player]));
            }
            if !complete || votes.iter().all(|v| v.1 == mine) {
                if complete {
                    let a = &mut self.recon.players[player];
                    a.agreed = a.agreed.max(tick);
                }
                continue;
            }
            let count = |v: InputDigest| votes.iter().filter(|x| x.1 == v).count();
            match votes.iter().map(|x| x.1).find(|&v| count(v) * 2 > votes.len()) {
                Some(m) if m == mine => {
                    let a = &mut self.recon.players[player];
                    a.agreed = a.agreed.max(tick);
                    self.explained(tick, player, None);
                }
                Some(m) => {
                    let from = self.recon.players[player].agreed;
                    let repairable = tick - from <= MAX_REPAIR_TICKS
                        && self.recon.raw_at(from).is_some()
                        && self.ring.latest_at_or_before(from).is_some_and(|(s, _)| s == from);
                    if !repairable {
                        // Too far back to repair: the desync stands.
                        self.flush_deferred(tick, player);
                        continue;
                    }
                    let source = votes.iter().find(|x| x.1 == m).and_then(|x| x.0).expect("a peer voted the majority");
                    let a = &mut self.recon.players[player];
                    a.source = Some(source);
                    // A repair replaces a forward in flight (its answer is then stale).
                    if a.ask.is_none_or(|k| k.verify.is_none()) {
                        a.ask = Some(Ask { peer: source, from, to: tick, verify: Some(m), sent_at: None });
                    }
                    self.explained(tick, player, Some(source));
                }
                None => self.flush_deferred(tick, player),
            }
        }
        self.recon.votes = votes;
    }

    /// The votes explain the desyncs of `tick` naming `player`: they are dropped, and
    /// the player named (once).
    fn explained(&mut self, tick: Tick, player: usize, source: Option<PeerId>) {
        self.recon.deferred.retain(|d| !(d.tick == tick && d.culprit == player));
        let a = &mut self.recon.players[player];
        if !std::mem::replace(&mut a.named, true) {
            self.events.push_back(Event::InputsDisagree { player, tick, source });
        }
    }

    /// Reports the deferred desyncs of `tick` naming `player` (no majority).
    fn flush_deferred(&mut self, tick: Tick, player: usize) {
        let (now, keep): (Vec<Deferred>, Vec<Deferred>) =
            self.recon.deferred.iter().partition(|d| d.tick == tick && d.culprit == player);
        self.recon.deferred = keep;
        for d in now {
            self.report_desync(d.peer_index, d.tick, d.local, d.remote, Some(d.culprit));
        }
    }

    /// Reports the deferred desyncs whose votes never came (a voter that stopped
    /// reporting): after [`DEFER_CHECKS`] check intervals they stand.
    pub(super) fn expire_deferred(&mut self) {
        let wait = DEFER_CHECKS * self.cfg.desync_interval;
        let old: Vec<Deferred> =
            self.recon.deferred.iter().copied().filter(|d| d.tick + wait < self.next_check).collect();
        self.recon.deferred.retain(|d| d.tick + wait >= self.next_check);
        for d in old {
            self.report_desync(d.peer_index, d.tick, d.local, d.remote, Some(d.culprit));
        }
    }

    /// Queues this tick's requests and answers on the reliable channel.
    pub(super) fn send_repairs<T: crate::transport::Transport + ?Sized>(&mut self, endpoint: &mut T) {
        for (peer, msg) in self.recon.answers.drain(..) {
            if endpoint.send(peer, self.cfg.reliable_channel, &msg).is_err() {
                self.stats.send_errors += 1;
            }
        }
        let (now, tick_us) = (self.now, self.cfg.game.tick_us() as Micros);
        for player in 0..self.recon.players.len() {
            let Some(source) = self.recon.players[player].source else { continue };
            if self.peers.iter().any(|p| p.id == source && p.phase.is_gone()) {
                // The source left: another peer that is not the player's takes over.
                let owner = match self.players[player].kind() {
                    PlayerKind::Remote(o) => o,
                    PlayerKind::Local => 0,
                };
                let next = self.peers.iter().find(|p| p.id != owner && !p.phase.is_gone()).map(|p| p.id);
                let a = &mut self.recon.players[player];
                a.source = next;
                a.ask = a.ask.filter(|k| Some(k.peer) == next);
                if next.is_none() {
                    continue;
                }
            }
            let a = &mut self.recon.players[player];
            let Some(source) = a.source else { continue };
            if a.ask.is_none() && a.forward_at.is_none_or(|t| now >= t + tick_us) {
                let from = self.players[player].queue.next_needed();
                a.ask = Some(Ask { peer: source, from, to: Tick::MAX, verify: None, sent_at: None });
                a.forward_at = Some(now);
            }
            let Some(ask) = a.ask.as_mut().filter(|k| k.sent_at.is_none_or(|t| now >= t + REASK_US)) else {
                continue;
            };
            ask.sent_at = Some(now);
            let mut msg = [0u8; 11];
            msg[0] = KIND_REPAIR_REQUEST;
            msg[1..3].copy_from_slice(&(player as u16).to_le_bytes());
            msg[3..7].copy_from_slice(&ask.from.to_le_bytes());
            msg[7..11].copy_from_slice(&ask.to.to_le_bytes());
            if endpoint.send(ask.peer, self.cfg.reliable_channel, &msg).is_err() {
                self.stats.send_errors += 1;
                ask.sent_at = None;
            }
        }
    }

    /// A request from peer `pi` for a player's inputs: answered from the input history
    /// if it asks about a player that is neither its own nor ours, at most once per
    /// tick per peer.
    pub(super) fn on_repair_request(&mut self, pi: usize, data: &[u8]) {
        let mut r = Reader::new(data);
        let parsed = (|| Some((r.u8().ok()?, r.u16().ok()?, r.u32().ok()?, r.u32().ok()?)))();
        let Some((_, player, from, to)) = parsed.filter(|_| r.is_empty()) else {
            self.stats.malformed += 1;
            return;
        };
        let player = player as usize;
        let asker = self.peers[pi].id;
        let theirs_or_ours = match self.players.get(player).map(|p| p.kind()) {
            Some(PlayerKind::Remote(owner)) => owner == asker,
            _ => true,
        };
        // One answer a half tick: an asker paces its forwards at a tick.
        let pace = self.cfg.game.tick_us() as Micros / 2;
        let too_soon = self.recon.answered_at[pi].is_some_and(|t| self.now < t + pace);
        if theirs_or_ours || from > to || too_soon {
            self.stats.malformed += 1;
            return;
        }
        let q = &self.players[player].queue;
        let oldest = q.next_needed().saturating_sub(q.capacity() as Tick / 2);
        if from < oldest {
            self.stats.malformed += 1;
            return;
        }
        let end = to.min(q.next_needed()).min(from.saturating_add(MAX_REPAIR_TICKS));
        let count = end.saturating_sub(from);
        let s = self.cfg.game.input_size;
        let mut msg = Vec::with_capacity(8 + count as usize * (1 + s));
        msg.push(KIND_REPAIR);
        msg.extend_from_slice(&(player as u16).to_le_bytes());
        msg.extend_from_slice(&from.to_le_bytes());
        msg.push(count as u8);
        for t in from..end {
            match q.disconnect_tick() {
                Some(d) if t >= d => {
                    msg.push(InputStatus::Disconnected as u8);
                    msg.extend(std::iter::repeat_n(0, s));
                }
                _ => {
                    msg.push(InputStatus::Confirmed as u8);
                    msg.extend_from_slice(q.confirmed(t).expect("confirmed input in history"));
                }
            }
        }
        self.recon.answered_at[pi] = Some(self.now);
        self.recon.answers.retain(|a| a.0 != asker);
        self.recon.answers.push((asker, msg));
    }

    /// Inputs from peer `pi` that this side asked for. A repair must give the
    /// majority's digest; then the inputs are corrected, the digests and checks after
    /// `from` are done again, and the next advance resimulates from the first
    /// corrected tick.
    pub(super) fn on_repair(&mut self, pi: usize, data: &[u8]) {
        let s = self.cfg.game.input_size;
        let mut r = Reader::new(data);
        let head = (|| Some((r.u8().ok()?, r.u16().ok()?, r.u32().ok()?, r.u8().ok()?)))();
        let Some((_, player, from, count)) = head else {
            self.stats.malformed += 1;
            return;
        };
        let player = player as usize;
        let Ok(body) = r.bytes(count as usize * (1 + s)) else {
            self.stats.malformed += 1;
            return;
        };
        let peer = self.peers[pi].id;
        let Some(ask) = self.recon.players.get(player).and_then(|a| a.ask).filter(|k| k.sent_at.is_some()) else {
            self.stats.malformed += 1;
            return;
        };
        if !r.is_empty() {
            self.stats.malformed += 1;
            return;
        }
        if ask.peer != peer || ask.from != from {
            // The answer to a request this side no longer waits for.
            return;
        }
        let tick = |i: usize| (body[i * (1 + s)], &body[i * (1 + s) + 1..(i + 1) * (1 + s)]);
        let status_ok = (0..count as usize).all(|i| {
            let (st, b) = tick(i);
            st == InputStatus::Confirmed as u8 || (st == InputStatus::Disconnected as u8 && b.iter().all(|&x| x == 0))
        });
        if let Some(m) = ask.verify {
            let whole = ask.to.checked_sub(from) == Some(count as Tick);
            let ok = status_ok
                && whole
                && self.recon.raw_at(from).is_some_and(|raw| {
                    let mut h = raw[player];
                    for i in 0..count as usize {
                        let (st, b) = tick(i);
                        let st = if st == 0 { InputStatus::Confirmed } else { InputStatus::Disconnected };
                        h = digest_step(h, st, b);
                    }
                    h == m
                });
            let a = &mut self.recon.players[player];
            a.ask = None;
            if !ok {
                // Not the majority's inputs: the source lied or the votes moved on.
                self.stats.malformed += 1;
                a.source = None;
                return;
            }
        } else {
            self.recon.players[player].ask = None;
            if !status_ok {
                self.stats.malformed += 1;
                return;
            }
        }
        let q = &mut self.players[player].queue;
        let mut corrected = false;
        for i in 0..count as usize {
            let t = from + i as Tick;
            let (st, b) = tick(i);
            if st != InputStatus::Confirmed as u8 {
                break;
            }
            if t < q.next_needed() {
                // Only a repair, checked against the majority's digest, changes an
                // input this side already holds; a forward only adds the next ones.
                if ask.verify.is_some() {
                    corrected |= q.correct(t, b);
                }
            } else if t == q.next_needed() {
                q.add_confirmed(t, b);
            } else {
                break;
            }
        }
        if ask.verify.is_some() {
            self.stats.repairs += 1;
            self.recon.players[player].agreed = ask.to;
        }
        if corrected {
            self.redo_checks_after(from);
        }
    }

    /// Inputs of ticks from `from` on changed: the digests and checks of later check
    /// ticks are done again (from the running digests kept at `from`, the last tick
    /// this side agreed on).
    fn redo_checks_after(&mut self, from: Tick) {
        let interval = self.cfg.desync_interval;
        let Some(raw) = self.recon.raw_at(from).map(<[InputDigest]>::to_vec) else { return };
        if interval == 0 || from % interval != 0 || self.next_check <= from {
            return;
        }
        self.digests.rewind(from, &raw);
        self.checks.truncate_after(from);
        self.next_check = from + interval;
    }
}
