//! A relay client's prediction and reconciliation (seed 003's model), as requests.
//!
//! The client keeps two timelines in one engine state:
//! - the *authoritative* tick `a`: the state at the start of `a` is the server's,
//!   reached only through canonical steps;
//! - the *current* (predicted) tick `c >= a`: the authoritative state advanced with
//!   the local inputs the server has not consumed yet (the pending queue) and a guess
//!   for everyone else (their last canonical input, or the engine's own guess).
//!
//! Every advance is followed by a save, so each tick in `a..=c` has a snapshot. When
//! canonical step `a` arrives it is compared with the inputs the prediction used for
//! tick `a`. If every player's input, the set of players, and our accepted count (1)
//! agree, the predicted state at `a + 1` *is* the authoritative one: the tick is
//! relabelled and the engine does nothing. Otherwise the client re-predicts:
//! `Load(a)`, `Advance(canonical…)` (authoritative), `Save`, then `Advance(predicted…)`
//! up to the target tick, each followed by a `Save`. Re-prediction is thus only paid
//! when needed (accepted count ≠ 1 "nudges" the timeline, a guess was wrong, or a
//! player came or went), and its depth never exceeds `max_prediction`.
//!
//! Which local input each step used is known exactly: the server says which client
//! tick it consumed first, and the accepted counts say how many each step consumed
//! after that (Hypersomnia's ledger; D2K's "commands ≤ N ran at TIC T").
//!
//! No allocation after construction, except the presence-change queue past 64 entries.

use std::collections::VecDeque;

use super::messages::PlayerStep;
use crate::engine::StateRing;
use crate::engine::{InputStatus, Request, RequestQueue, Tick};

/// Settings of a [`Predictor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PredictorConfig {
    /// Bytes per input.
    pub input_size: usize,
    /// Player slots (player ids are `0..max_players`).
    pub max_players: usize,
    /// Most ticks predicted beyond the authoritative one.
    pub max_prediction: u32,
    /// Most canonical (authoritative) advances per batch: bounds the work of catching
    /// up after a join or a stall. Relabelled ticks cost nothing and do not count.
    pub max_catchup_ticks: u32,
    /// Local inputs remembered while the server has not consumed them (power of two).
    pub pending_capacity: usize,
}

/// Counters of a relay client's prediction and reconciliation (`Predictor`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PredictorStats {
    /// Canonical steps applied (authoritative ticks reached).
    pub canonical_ticks: u64,
    /// Canonical steps whose predicted tick was right: relabelled for free.
    pub confirmed_predictions: u64,
    /// Times the client loaded an authoritative state and re-predicted.
    pub repredictions: u64,
    /// Ticks simulated a second (or later) time: `Advance { resimulating: true }` (M3).
    pub resimulated: u64,
    /// The deepest re-prediction: ticks between the loaded tick and the predicted one.
    pub max_resim_depth: u32,
    /// Predicted ticks simulated for the first time.
    pub predicted_ticks: u64,
    /// Canonical ticks where our own input was not the one we predicted (or our
    /// accepted count was not 1) (M5, local).
    pub local_mispredictions: u64,
    /// Canonical ticks where the server did not use our input on time: accepted count
    /// ≠ 1, or it substituted another input for ours (M1 seen from the client).
    pub local_late: u64,
    /// Local mispredictions at ticks where our input *was* on time. Always 0 unless the
    /// bookkeeping is broken (a test checks it).
    pub local_mispredicted_on_time: u64,
    /// Canonical ticks where some other player's input or presence was mispredicted (M5).
    pub remote_mispredictions: u64,
    /// Local inputs dropped because the pending queue was full (the server stopped
    /// consuming them for a long time).
    pub pending_overflow: u64,
}

/// What happened to a canonical step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepOutcome {
    /// The prediction was right: no engine work.
    Confirmed,
    /// Advanced authoritatively (after a load if the prediction was wrong).
    Applied,
    /// The snapshot this needed to load is gone (should not happen); the client needs
    /// a new snapshot.
    Lost,
}

/// Prediction and reconciliation. See the module docs.
pub(crate) struct Predictor {
    cfg: PredictorConfig,
    n: usize,
    size: usize,
    me: Option<usize>,
    synced: bool,
    have_canonical: bool,
    auth: Tick,
    cur: Tick,
    pend: Vec<u8>,
    pend_mask: Tick,
    pend_first: Tick,
    pend_next: Tick,
    anchored: bool,
    last_input: Vec<u8>,
    /// The newest canonical step's inputs and presence (the default guess).
    last_bytes: Vec<u8>,
    last_present: Vec<bool>,
    custom: Vec<u8>,
    has_custom: Vec<bool>,
    /// Inputs the prediction used, per tick (ring).
    used_bytes: Vec<u8>,
    used_present: Vec<bool>,
    used_tick: Vec<Option<Tick>>,
    used_mask: usize,
    /// The canonical step being applied.
    canon_bytes: Vec<u8>,
    canon_present: Vec<bool>,
    zero: Vec<u8>,
    ring: StateRing,
    requests: RequestQueue,
    batch_start_cur: Tick,
    rewound: bool,
    canon_advances: u32,
    changes: VecDeque<(u32, Tick, bool)>,
    /// Who the engine has been told is present (by the changes above), ourselves
    /// aside. Kept across resets: a snapshot after a resync or a reconnect shows the
    /// same players again, and only a difference is news; a late joiner's first
    /// canonical step announces everyone already there.
    announced: Vec<bool>,
    auth_log: Vec<(Tick, u64)>,
    /// The next authoritative tick whose checksum is to be logged. Wider than a tick
    /// so that "every tick up to `Tick::MAX` logged" has a value: a tick near the end
    /// of the range can come from the wire (a Welcome), and a tick cursor would wrap.
    auth_logged: u64,
    stats: PredictorStats,
}

const AUTH_LOG: usize = 256;

impl Predictor {
    pub(crate) fn new(cfg: PredictorConfig) -> Self {
        let (n, s) = (cfg.max_players, cfg.input_size);
        let pend_cap = cfg.pending_capacity.max(2).next_power_of_two();
        let used_cap = (cfg.max_prediction as usize + 2).next_power_of_two();
        Predictor {
            n,
            size: s,
            me: None,
            synced: false,
            have_canonical: false,
            auth: 0,
            cur: 0,
            pend: vec![0; pend_cap * s],
            pend_mask: pend_cap as Tick - 1,
            pend_first: 0,
            pend_next: 0,
            anchored: false,
            last_input: vec![0; s],
            last_bytes: vec![0; n * s],
            last_present: vec![false; n],
            custom: vec![0; n * s],
            has_custom: vec![false; n],
            used_bytes: vec![0; used_cap * n * s],
            used_present: vec![false; used_cap * n],
            used_tick: vec![None; used_cap],
            used_mask: used_cap - 1,
            canon_bytes: vec![0; n * s],
            canon_present: vec![false; n],
            zero: vec![0; s],
            // One batch saves at most max_catchup + max_prediction + 1 ticks; all of them
            // must still be in the ring when the engine confirms them.
            // RelayClientSessionConfig::state_slots tells the engine this size up front.
            ring: StateRing::new((cfg.max_prediction + cfg.max_catchup_ticks) as usize + 4, 0),
            requests: RequestQueue::new(n, s, (cfg.max_prediction + cfg.max_catchup_ticks) as usize + 4),
            batch_start_cur: 0,
            rewound: false,
            canon_advances: 0,
            changes: VecDeque::with_capacity(64),
            announced: vec![false; n],
            auth_log: vec![(Tick::MAX, 0); AUTH_LOG],
            auth_logged: 0,
            stats: PredictorStats::default(),
            cfg,
        }
    }

    /// Snapshots the engine keeps: `Save` slots are in `0..state_slots()`.
    pub(crate) fn state_slots(&self) -> usize {
        self.ring.len()
    }

    pub(crate) fn stats(&self) -> PredictorStats {
        self.stats
    }

    /// Whether an authoritative state has been restored.
    pub(crate) fn synced(&self) -> bool {
        self.synced
    }

    /// The authoritative tick: the state at its start is the server's.
    pub(crate) fn authoritative_tick(&self) -> Tick {
        self.auth
    }

    /// The engine's current tick (predicted, or authoritative when equal).
    pub(crate) fn current_tick(&self) -> Tick {
        self.cur
    }

    /// Local inputs the server has not consumed (as far as the steps received tell).
    pub(crate) fn pending(&self) -> u64 {
        u64::from(self.pend_next - self.pend_first)
    }

    /// Forgets the timeline until the next [`Predictor::restore`], keeping the counters
    /// and the engine's custom predictions. `new_connection`: our inputs start over
    /// (a new connection numbers them afresh); otherwise their accounting goes on
    /// (a resync on the same connection), and steps before the snapshot must be passed
    /// to [`Predictor::skip_step`].
    pub(crate) fn reset(&mut self, new_connection: bool) {
        self.synced = false;
        self.have_canonical = false;
        if new_connection {
            self.anchored = false;
            self.pend_first = self.pend_next;
        }
        self.used_tick.fill(None);
        self.requests.clear();
        self.last_present.fill(false);
    }

    /// Our player slot.
    pub(crate) fn set_local_player(&mut self, player: u32) {
        self.me = Some(player as usize).filter(|&p| p < self.n);
        if let Some(me) = self.me {
            // Our own slot is told by Joined, never as another player.
            self.announced[me] = false;
        }
    }

    /// The engine's guess for `player` (None: repeat its last canonical input).
    pub(crate) fn set_prediction(&mut self, player: usize, input: Option<&[u8]>) {
        if player >= self.n {
            return;
        }
        match input {
            Some(b) if b.len() == self.size => {
                self.custom[player * self.size..(player + 1) * self.size].copy_from_slice(b);
                self.has_custom[player] = true;
            }
            _ => self.has_custom[player] = false,
        }
    }

    /// Records our input for client tick `client_tick`. Skipped ticks (the engine
    /// pushed nothing) repeat the previous input, as the sync layer sent them.
    pub(crate) fn push_local(&mut self, client_tick: Tick, input: &[u8]) {
        if self.pend_next == self.pend_first && !self.anchored {
            self.pend_first = client_tick;
            self.pend_next = client_tick;
        }
        while self.pend_next < client_tick {
            let last = std::mem::take(&mut self.last_input);
            self.push_one(&last);
            self.last_input = last;
        }
        if client_tick == self.pend_next {
            self.last_input.copy_from_slice(input);
            self.push_one(input);
        }
    }

    fn push_one(&mut self, input: &[u8]) {
        if self.pend_next - self.pend_first > self.pend_mask {
            self.pend_first += 1;
            self.stats.pending_overflow += 1;
        }
        let at = (self.pend_next & self.pend_mask) as usize * self.size;
        self.pend[at..at + self.size].copy_from_slice(input);
        self.pend_next = self.pend_next.saturating_add(1);
    }

    fn pending_input(&self, client_tick: Tick) -> &[u8] {
        let at = (client_tick & self.pend_mask) as usize * self.size;
        &self.pend[at..at + self.size]
    }

    /// Starts the authoritative timeline from the server's snapshot of the start of
    /// `tick`: `Restore` then `Save`. Call between `begin_batch` and the steps.
    pub(crate) fn restore(&mut self, tick: Tick, state: &[u8]) {
        self.ring.clear();
        self.used_tick.fill(None);
        self.requests.push_restore(tick, state);
        self.auth = tick;
        self.cur = tick;
        self.batch_start_cur = tick;
        self.rewound = true;
        self.synced = true;
        self.have_canonical = false;
        self.last_present.fill(false);
        self.auth_logged = tick as u64;
        self.save(tick);
    }

    /// Starts a batch of work (one engine tick): clears the request queue and logs the
    /// checksums of ticks that became authoritative.
    pub(crate) fn begin_batch(&mut self) {
        self.requests.clear();
        self.batch_start_cur = self.cur;
        self.rewound = false;
        self.canon_advances = 0;
        self.log_auth_checksums();
    }

    /// Whether this batch may take another canonical step.
    pub(crate) fn can_take_step(&self) -> bool {
        self.canon_advances < self.cfg.max_catchup_ticks
    }

    fn save(&mut self, t: Tick) {
        let slot = self.ring.slot_for_save(t);
        self.requests.push_save(t, slot);
    }

    /// Our accepted count in `players`, with the canonical inputs staged.
    fn stage(&mut self, players: &[PlayerStep], first_input: Option<Tick>) -> u32 {
        let s = self.size;
        self.canon_bytes.fill(0);
        self.canon_present.fill(false);
        let mut mine = 0u32;
        for p in players {
            let i = p.player as usize;
            if i >= self.n {
                continue; // decoding refuses these; never index out of range anyway
            }
            self.canon_present[i] = true;
            if let Some(b) = p.inputs.last().filter(|b| b.len() == s) {
                self.canon_bytes[i * s..(i + 1) * s].copy_from_slice(b);
            }
            if Some(i) == self.me {
                mine = u32::from(p.accepted);
            }
        }
        // The first step that consumed one of our inputs fixes which input that was.
        if mine > 0 && !self.anchored {
            self.anchored = true;
            if let Some(f) = first_input {
                self.pend_first = f;
                self.pend_next = self.pend_next.max(f);
            }
        }
        mine
    }

    /// A step from before the snapshot: only its accounting of our inputs matters.
    pub(crate) fn skip_step(&mut self, players: &[PlayerStep], first_input: Option<Tick>) {
        let mine = self.stage(players, first_input);
        self.pend_first = self.pend_first.saturating_add(mine).min(self.pend_next);
    }

    /// Applies canonical step `tick` (which must be the authoritative tick).
    /// `first_input` is the client tick of our first consumed input, once known.
    pub(crate) fn on_step(&mut self, tick: Tick, players: &[PlayerStep], first_input: Option<Tick>) -> StepOutcome {
        debug_assert_eq!(tick, self.auth);
        let s = self.size;
        let mine = self.stage(players, first_input);
        // Whether the server used the input we gave for the tick it consumed.
        let on_time = match self.me {
            Some(m) if mine == 1 && self.pend_first < self.pend_next => {
                self.pending_input(self.pend_first) == &self.canon_bytes[m * s..(m + 1) * s]
            }
            _ => false,
        };
        if !on_time {
            self.stats.local_late += 1;
        }
        let predicted = tick < self.cur && self.used_tick[tick as usize & self.used_mask] == Some(tick);
        let matched = predicted && self.compare(tick, mine, on_time);
        self.pend_first = self.pend_first.saturating_add(mine).min(self.pend_next);
        let outcome = if !self.rewound && matched {
            self.stats.confirmed_predictions += 1;
            self.auth = tick + 1;
            StepOutcome::Confirmed
        } else {
            if !self.rewound {
                self.rewound = true;
                if tick < self.cur {
                    let Some(slot) = self.ring.slot_of(tick) else { return StepOutcome::Lost };
                    self.requests.push_load(tick, slot);
                    self.ring.invalidate_after(tick);
                    let depth = self.cur - tick;
                    self.cur = tick;
                    self.stats.repredictions += 1;
                    self.stats.max_resim_depth = self.stats.max_resim_depth.max(depth);
                }
            }
            let resim = tick < self.batch_start_cur;
            self.requests.begin_advance_flagged(tick, resim, true);
            for i in 0..self.n {
                let status = if self.canon_present[i] { InputStatus::Confirmed } else { InputStatus::Disconnected };
                self.requests.push_input(&self.canon_bytes[i * s..(i + 1) * s], status);
            }
            self.stats.resimulated += resim as u64;
            self.canon_advances += 1;
            self.save(tick + 1);
            self.cur = tick + 1;
            self.auth = tick + 1;
            StepOutcome::Applied
        };
        for i in 0..self.n {
            if self.canon_present[i] != self.announced[i] && Some(i) != self.me {
                self.announced[i] = self.canon_present[i];
                self.changes.push_back((i as u32, tick, self.canon_present[i]));
            }
        }
        self.have_canonical = true;
        self.last_bytes.copy_from_slice(&self.canon_bytes);
        self.last_present.copy_from_slice(&self.canon_present);
        self.stats.canonical_ticks += 1;
        outcome
    }

    /// Whether the prediction of `tick` used exactly the canonical inputs.
    fn compare(&mut self, tick: Tick, mine: u32, on_time: bool) -> bool {
        let (n, s) = (self.n, self.size);
        let base = (tick as usize & self.used_mask) * n;
        let (mut local_ok, mut remote_ok) = (true, true);
        for i in 0..n {
            let same = self.used_present[base + i] == self.canon_present[i]
                && (!self.canon_present[i]
                    || self.used_bytes[(base + i) * s..(base + i + 1) * s] == self.canon_bytes[i * s..(i + 1) * s]);
            if Some(i) == self.me {
                local_ok = same && mine == 1;
            } else {
                remote_ok &= same;
            }
        }
        if !local_ok {
            self.stats.local_mispredictions += 1;
            self.stats.local_mispredicted_on_time += on_time as u64;
        }
        if !remote_ok {
            self.stats.remote_mispredictions += 1;
        }
        local_ok && remote_ok
    }

    /// Ends the batch: predicts up to `pending − delay` ticks (at most
    /// `max_prediction`) past the authoritative tick, unless canonical steps are still
    /// waiting (`caught_up` false): then the engine stays authoritative until it has
    /// caught up. Never moves the current tick back without a re-prediction: when the
    /// target drops (the delay grew) the engine simply holds.
    pub(crate) fn finish_batch(&mut self, caught_up: bool, delay: u32) {
        if !self.synced || !caught_up || !self.have_canonical {
            return;
        }
        let h = self.pending().saturating_sub(delay as u64).min(self.cfg.max_prediction as u64) as Tick;
        let target = self.auth.saturating_add(h);
        let (n, s) = (self.n, self.size);
        while self.cur < target {
            let t = self.cur;
            let resim = t < self.batch_start_cur;
            let base = (t as usize & self.used_mask) * n;
            self.used_tick[t as usize & self.used_mask] = Some(t);
            self.requests.begin_advance_flagged(t, resim, false);
            for i in 0..n {
                let (present, status) = if Some(i) == self.me {
                    let c = self.pend_first + (t - self.auth);
                    let at = (c & self.pend_mask) as usize * s;
                    self.used_bytes[(base + i) * s..(base + i + 1) * s].copy_from_slice(&self.pend[at..at + s]);
                    (true, InputStatus::Predicted)
                } else if self.last_present[i] {
                    let src = if self.has_custom[i] { &self.custom } else { &self.last_bytes };
                    self.used_bytes[(base + i) * s..(base + i + 1) * s].copy_from_slice(&src[i * s..(i + 1) * s]);
                    (true, InputStatus::Predicted)
                } else {
                    self.used_bytes[(base + i) * s..(base + i + 1) * s].copy_from_slice(&self.zero);
                    (false, InputStatus::Disconnected)
                };
                self.used_present[base + i] = present;
                self.requests.push_input(&self.used_bytes[(base + i) * s..(base + i + 1) * s], status);
            }
            if resim {
                self.stats.resimulated += 1;
            } else {
                self.stats.predicted_ticks += 1;
            }
            self.save(t + 1);
            self.cur = t + 1;
        }
    }

    /// True when this batch simulated no new tick because the prediction is already
    /// `max_prediction` ticks past the authoritative state: the window is full (its
    /// requests may still hold a correction). Call after [`Predictor::finish_batch`].
    pub(crate) fn window_full(&self) -> bool {
        self.synced && self.cur <= self.batch_start_cur && self.cur.saturating_sub(self.auth) >= self.cfg.max_prediction
    }

    /// The next request of this batch.
    pub(crate) fn poll_request(&mut self) -> Option<Request<'_>> {
        self.requests.poll()
    }

    /// Requests of this batch not polled yet.
    pub(crate) fn pending_requests(&self) -> usize {
        self.requests.pending()
    }

    /// The engine's checksum of a save. False if the tick's snapshot is unknown.
    pub(crate) fn confirm_save(&mut self, tick: Tick, checksum: u64) -> bool {
        self.ring.set_checksum(tick, checksum)
    }

    /// A player who appeared in (`true`) or left (`false`) the canonical steps at `tick`.
    pub(crate) fn poll_presence_change(&mut self) -> Option<(u32, Tick, bool)> {
        self.changes.pop_front()
    }

    fn log_auth_checksums(&mut self) {
        // Only the last AUTH_LOG ticks can be kept: never walk further back than that.
        let auth = self.auth as u64;
        self.auth_logged = self.auth_logged.max((auth + 1).saturating_sub(AUTH_LOG as u64));
        while self.synced && self.auth_logged <= auth {
            let t = self.auth_logged as Tick;
            match self.ring.checksum(t) {
                Some(c) => self.auth_log[t as usize % AUTH_LOG] = (t, c),
                // Saved but not confirmed yet: the engine answers after this batch.
                None if self.ring.slot_of(t).is_some() => break,
                None => {}
            }
            self.auth_logged += 1;
        }
    }

    /// The checksum of the authoritative state at the start of `tick`, if the engine
    /// confirmed its save and it is among the last 256 authoritative ticks.
    pub(crate) fn authoritative_checksum(&self, tick: Tick) -> Option<u64> {
        let (t, c) = self.auth_log[tick as usize % AUTH_LOG];
        (t == tick).then_some(c)
    }

    /// Whether checksums of ticks up to `tick` have been logged (a check older than
    /// that without a checksum will never get one).
    pub(crate) fn checksums_logged_past(&self, tick: Tick) -> bool {
        self.auth_logged > tick as u64
    }
}

#[cfg(test)]
#[path = "prediction_tests.rs"]
mod tests;
