//! A relay-only server's side of a hosted match ([`crate::relay::hosted`]): the
//! snapshots it asks its clients for, and the checksums it takes from them.
//!
//! Snapshots. When a player waits for one, the server names the tick being formed
//! and asks one client that holds the timeline (the donor, in turn over the slots)
//! for its state at the start of it, and up to [`WITNESSES`] others for the state's
//! digest. The upload is taken only when its digest is the one its donor declared
//! and a strict majority of those asked agree with it; otherwise, or after
//! [`ASK_TIMEOUT_US`], the next donor is asked. So one lying client can neither hand
//! a joiner a forged state nor block the join. Before any client holds a timeline
//! the match is new: its first players start from the game's initial state (an
//! empty snapshot).
//!
//! Checksums. Each client reports its checksum at every check tick; the server hands
//! out the first value a strict majority of the players present agree on, and counts
//! the reports that differ from it. Reports are taken only for check ticks the
//! server has reached, and only the newest [`CHECK_WINDOW`] check ticks are kept.

use std::collections::VecDeque;

use super::RelayServerSession;
use super::admission::SlotState;
use crate::clock::Micros;
use crate::engine::Tick;
use crate::relay::hosted::{self, StateAsk, StateDigest};
use crate::transport::PeerId;

/// Clients asked for the digest of a snapshot beside its donor.
pub(crate) const WITNESSES: usize = 2;
/// A state ask not settled in this time goes to the next donor. The donor dumps its
/// state once the asked tick is authoritative there (a round trip and its input lead
/// after the ask), then uploads it.
pub(crate) const ASK_TIMEOUT_US: Micros = 5_000_000;
/// Check ticks whose reports are kept.
pub(crate) const CHECK_WINDOW: usize = 8;

/// A state ask in flight.
#[derive(Debug)]
struct Ask {
    tick: Tick,
    donor: PeerId,
    witnesses: Vec<PeerId>,
    asked_at: Micros,
    /// The digests reported so far, by whom.
    digests: Vec<(PeerId, StateDigest)>,
    /// The donor's state, once it came with the digest it declared.
    upload: Option<(StateDigest, Vec<u8>)>,
}

impl Ask {
    fn asked(&self, peer: PeerId) -> bool {
        self.donor == peer || self.witnesses.contains(&peer)
    }
}

/// The reports of one check tick, by player slot.
#[derive(Debug)]
struct CheckVotes {
    tick: Tick,
    votes: Vec<Option<u64>>,
    /// The value handed out, once a majority agreed.
    settled: Option<u64>,
}

/// A relay-only server's state of its hosted match.
#[derive(Debug)]
pub(super) struct Hosted {
    ask: Option<Ask>,
    /// Where the search for the next donor starts.
    next_donor: usize,
    /// Some client was welcomed into the match: from now on its state is theirs.
    started: bool,
    checks: VecDeque<CheckVotes>,
    /// Asks and nothing else: the Welcomes go through the session's own outbox.
    outbox: Vec<(PeerId, Vec<u8>)>,
    scratch: Vec<(Tick, u64)>,
}

impl Hosted {
    pub(super) fn new() -> Self {
        Hosted {
            ask: None,
            next_donor: 0,
            started: false,
            checks: VecDeque::with_capacity(CHECK_WINDOW),
            outbox: Vec::new(),
            scratch: Vec::with_capacity(hosted::MAX_CHECKS),
        }
    }

    /// A Welcome went out: the match's state is with its clients from now on.
    pub(super) fn welcomed(&mut self) {
        self.started = true;
    }
}

impl RelayServerSession {
    fn hosted_mut(&mut self) -> &mut Hosted {
        self.hosted.as_mut().expect("a relay-only session")
    }

    /// The slots whose clients hold the match's timeline on their connection: welcomed
    /// on it and not behind the steps kept.
    fn holds_timeline(&self, slot: usize) -> Option<PeerId> {
        let s = &self.slots[slot];
        match s.state {
            SlotState::Active { peer } if !s.needs_snapshot && !self.relay.is_behind(peer) => Some(peer),
            _ => None,
        }
    }

    /// Each tick of a relay-only server (`t`, the tick being formed): the state ask's
    /// timeout, and a new ask (or the initial state) for players waiting for a snapshot.
    pub(super) fn hosted_tick(&mut self, t: Tick) {
        let now = self.now;
        if let Some((donor, asked_at)) = self.hosted_mut().ask.as_ref().map(|a| (a.donor, a.asked_at)) {
            let donor_gone = self.slot_of_peer(donor).is_none();
            if donor_gone || now.saturating_sub(asked_at) >= ASK_TIMEOUT_US {
                self.stats.state_asks_failed += 1;
                self.hosted_mut().ask = None;
            }
        }
        if self.hosted_mut().ask.is_some() || !self.slots.iter().any(|s| s.snapshot_due(now)) {
            return;
        }
        let n = self.slots.len();
        let start = self.hosted_mut().next_donor;
        let holders: Vec<(usize, PeerId)> =
            (0..n).map(|k| (start + k) % n).filter_map(|i| self.holds_timeline(i).map(|p| (i, p))).collect();
        let Some(&(donor_slot, donor)) = holders.first() else {
            if !self.hosted_mut().started {
                // A new match: its first players start from the game's initial state.
                self.welcome_waiting(t, &[]);
            }
            return;
        };
        let witnesses: Vec<PeerId> = holders[1..].iter().take(WITNESSES).map(|&(_, p)| p).collect();
        let h = self.hosted_mut();
        h.next_donor = donor_slot + 1;
        for (i, &peer) in std::iter::once(&donor).chain(&witnesses).enumerate() {
            let mut msg = Vec::new();
            hosted::encode_state_ask(&mut msg, &StateAsk { tick: t, upload: i == 0 });
            h.outbox.push((peer, msg));
        }
        h.ask = Some(Ask {
            tick: t,
            donor,
            witnesses,
            asked_at: now,
            digests: Vec::with_capacity(1 + WITNESSES),
            upload: None,
        });
    }

    /// The asks to send (the session's `send_messages`).
    pub(super) fn take_hosted_outbox(&mut self) -> Vec<(PeerId, Vec<u8>)> {
        self.hosted.as_mut().map(|h| std::mem::take(&mut h.outbox)).unwrap_or_default()
    }

    /// A client's StateReport: a digest, or a donor's upload with its digest.
    pub(super) fn on_state_report(&mut self, peer: PeerId, data: &[u8]) {
        let Ok(r) = hosted::decode_state_report(data) else {
            self.stats.hosted_refused += 1;
            return;
        };
        let h = self.hosted.as_mut().expect("a relay-only session");
        let Some(a) = h.ask.as_mut().filter(|a| a.tick == r.tick && a.asked(peer)) else {
            // Not asked, or for an ask that is over.
            self.stats.hosted_refused += 1;
            return;
        };
        if a.digests.iter().any(|&(p, _)| p == peer) || (peer == a.donor) == r.state.is_empty() {
            // Twice, or a witness's state, or a donor's digest without its state.
            self.stats.hosted_refused += 1;
            return;
        }
        if peer == a.donor {
            if StateDigest::of(r.state) != r.digest {
                // A donor whose state is not the one it vouches for.
                self.stats.snapshot_uploads_refused += 1;
                h.ask = None;
                return;
            }
            a.upload = Some((r.digest, r.state.to_vec()));
        }
        a.digests.push((peer, r.digest));
        self.settle_ask();
    }

    /// Welcomes the waiting players once a majority of those asked agree with the
    /// upload; drops the ask once they cannot.
    fn settle_ask(&mut self) {
        let h = self.hosted.as_mut().expect("a relay-only session");
        let Some(a) = &h.ask else { return };
        let asked = 1 + a.witnesses.len();
        let need = asked / 2 + 1;
        let Some((digest, _)) = &a.upload else { return };
        let agree = a.digests.iter().filter(|(_, d)| d == digest).count();
        if agree >= need {
            let a = h.ask.take().expect("an ask");
            let (_, state) = a.upload.expect("an upload");
            self.stats.snapshots_from_clients += 1;
            self.welcome_waiting(a.tick, &state);
        } else if asked - (a.digests.len() - agree) < need {
            // Too many differ for the upload to win: another donor.
            self.stats.snapshot_uploads_refused += 1;
            h.ask = None;
        }
    }

    /// A client's checksum report.
    pub(super) fn on_checks(&mut self, peer: PeerId, data: &[u8]) {
        let Some(slot) = self.slot_of_peer(peer) else {
            self.stats.hosted_refused += 1;
            return;
        };
        let mut scratch = std::mem::take(&mut self.hosted_mut().scratch);
        if hosted::decode_checks(data, &mut scratch).is_err() {
            self.stats.hosted_refused += 1;
        }
        for &(t, c) in &scratch {
            self.vote(slot, t, c);
        }
        self.hosted_mut().scratch = scratch;
    }

    fn vote(&mut self, slot: usize, t: Tick, c: u64) {
        let interval = self.cfg.checksum_interval.max(1);
        // The state at the start of `t` exists once step `t - 1` ran.
        let reached = t <= self.relay.last_tick().saturating_add(1);
        if t % interval != 0 || !reached {
            self.stats.hosted_refused += 1;
            return;
        }
        let players = self.slots.len();
        let present = self.slots.iter().filter(|s| matches!(s.state, SlotState::Active { .. })).count();
        let stats = &mut self.stats;
        let h = self.hosted.as_mut().expect("a relay-only session");
        let i = match h.checks.iter().position(|v| v.tick == t) {
            Some(i) => i,
            None if h.checks.front().is_some_and(|v| t < v.tick) && h.checks.len() == CHECK_WINDOW => {
                stats.hosted_refused += 1; // older than every tick kept
                return;
            }
            None => {
                // The oldest tick's reports make room (their buffer too).
                let mut votes = match h.checks.len() == CHECK_WINDOW {
                    true => h.checks.pop_front().map(|v| v.votes).unwrap_or_default(),
                    false => Vec::with_capacity(players),
                };
                votes.clear();
                votes.resize(players, None);
                let at = h.checks.iter().position(|v| v.tick > t).unwrap_or(h.checks.len());
                h.checks.insert(at, CheckVotes { tick: t, votes, settled: None });
                at
            }
        };
        let v = &mut h.checks[i];
        if v.votes[slot].is_some() {
            stats.hosted_refused += 1;
            return;
        }
        v.votes[slot] = Some(c);
        match v.settled {
            Some(agreed) => stats.minority_checks += u64::from(agreed != c),
            None => {
                let agree = v.votes.iter().filter(|x| **x == Some(c)).count();
                if agree > present / 2 {
                    v.settled = Some(c);
                    stats.minority_checks += v.votes.iter().filter(|x| x.is_some_and(|y| y != c)).count() as u64;
                    stats.checks_sent += 1;
                    self.relay.report_checksum(t, c);
                }
            }
        }
    }
}
