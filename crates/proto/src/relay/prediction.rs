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

mod inputs;
mod pending;

use std::collections::VecDeque;

use inputs::{PlayerSlot, StepInputs, UsedInputs};
use pending::PendingInputs;

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

/// What [`Predictor::dump_authoritative`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DumpOutcome {
    /// The `DumpState` is this batch's first request.
    Asked,
    /// The tick is not authoritative yet (or there is no timeline).
    NotYet,
    /// Its snapshot is no longer kept.
    Gone,
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

/// Where the predictor's timeline stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timeline {
    /// No authoritative state: before the first snapshot, or dropped by
    /// [`Predictor::reset`] until the next one. Nothing is simulated.
    Unsynced,
    /// Restored from a snapshot, no canonical step applied since: nobody else's input
    /// is known to repeat, so nothing is predicted yet.
    Restored,
    /// Canonical steps applied since the snapshot: the newest one (`Predictor::newest`)
    /// is the default guess of the other players' inputs.
    Following,
}

/// The batch of requests being built (one engine tick).
#[derive(Debug, Clone, Copy)]
struct Batch {
    /// The current tick when the batch began: ticks below it are simulated again.
    start: Tick,
    state: BatchState,
}

/// Whether the engine's state, as this batch leaves it, is still the predicted one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BatchState {
    /// Still the predicted timeline's: a canonical step as predicted is relabelled for
    /// free.
    Predicted,
    /// The batch loaded (or restored) an authoritative state: every further step is
    /// applied. `advances`: the canonical advances so far, bounded by
    /// `max_catchup_ticks`.
    Rewound { advances: u32 },
}

/// Prediction and reconciliation. See the module docs.
pub(crate) struct Predictor {
    cfg: PredictorConfig,
    size: usize,
    me: Option<usize>,
    timeline: Timeline,
    auth: Tick,
    cur: Tick,
    pending: PendingInputs,
    players: Vec<PlayerSlot>,
    /// The newest canonical step applied: the default guess (read while
    /// [`Timeline::Following`]).
    newest: StepInputs,
    /// The canonical step being applied; it becomes `newest` once applied.
    staged: StepInputs,
    used: UsedInputs,
    ring: StateRing,
    requests: RequestQueue,
    batch: Batch,
    changes: VecDeque<(u32, Tick, bool)>,
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
        Predictor {
            size: s,
            me: None,
            timeline: Timeline::Unsynced,
            auth: 0,
            cur: 0,
            pending: PendingInputs::new(cfg.pending_capacity, s),
            players: (0..n).map(|_| PlayerSlot::new(s)).collect(),
            newest: StepInputs::new(n, s),
            staged: StepInputs::new(n, s),
            used: UsedInputs::new(cfg.max_prediction as usize + 2, n, s),
            // One batch saves at most max_catchup + max_prediction + 1 ticks; all of them
            // must still be in the ring when the engine confirms them.
            // RelayClientSessionConfig::state_slots tells the engine this size up front.
            ring: StateRing::new((cfg.max_prediction + cfg.max_catchup_ticks) as usize + 4, 0),
            requests: RequestQueue::new(n, s, (cfg.max_prediction + cfg.max_catchup_ticks) as usize + 4),
            batch: Batch { start: 0, state: BatchState::Predicted },
            changes: VecDeque::with_capacity(64),
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
        self.timeline != Timeline::Unsynced
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
        u64::from(self.pending.len())
    }

    /// Forgets the timeline until the next [`Predictor::restore`], keeping the counters
    /// and the engine's custom predictions. `new_connection`: our inputs start over
    /// (a new connection numbers them afresh); otherwise their accounting goes on
    /// (a resync on the same connection), and steps before the snapshot must be passed
    /// to [`Predictor::skip_step`].
    pub(crate) fn reset(&mut self, new_connection: bool) {
        self.timeline = Timeline::Unsynced;
        if new_connection {
            self.pending.start_over();
        }
        self.used.clear();
        self.requests.clear();
    }

    /// Our player slot.
    pub(crate) fn set_local_player(&mut self, player: u32) {
        self.me = Some(player as usize).filter(|&p| p < self.players.len());
        if let Some(me) = self.me {
            // Our own slot is told by Joined, never as another player.
            self.players[me].announced = false;
        }
    }

    /// The engine's guess for `player` (None: repeat its last canonical input).
    pub(crate) fn set_prediction(&mut self, player: usize, input: Option<&[u8]>) {
        if let Some(slot) = self.players.get_mut(player) {
            slot.set_guess(input);
        }
    }

    /// Records our input for client tick `client_tick`. Skipped ticks (the engine
    /// pushed nothing) repeat the previous input, as the sync layer sent them.
    pub(crate) fn push_local(&mut self, client_tick: Tick, input: &[u8]) {
        self.stats.pending_overflow += self.pending.push(client_tick, input);
    }

    /// Starts the authoritative timeline from the server's snapshot of the start of
    /// `tick`: `Restore` then `Save`. Call between `begin_batch` and the steps.
    pub(crate) fn restore(&mut self, tick: Tick, state: &[u8]) {
        self.ring.clear();
        self.used.clear();
        self.requests.push_restore(tick, state);
        self.auth = tick;
        self.cur = tick;
        self.batch.start = tick;
        self.rewind();
        self.timeline = Timeline::Restored;
        self.auth_logged = tick as u64;
        self.save(tick);
    }

    /// Starts a batch of work (one engine tick): clears the request queue and logs the
    /// checksums of ticks that became authoritative.
    pub(crate) fn begin_batch(&mut self) {
        self.requests.clear();
        self.batch = Batch { start: self.cur, state: BatchState::Predicted };
        self.log_auth_checksums();
    }

    /// The engine's state no longer is the predicted one from here on in this batch.
    fn rewind(&mut self) {
        if self.batch.state == BatchState::Predicted {
            self.batch.state = BatchState::Rewound { advances: 0 };
        }
    }

    /// Whether this batch may take another canonical step.
    pub(crate) fn can_take_step(&self) -> bool {
        let advances = match self.batch.state {
            BatchState::Predicted => 0,
            BatchState::Rewound { advances } => advances,
        };
        advances < self.cfg.max_catchup_ticks
    }

    fn save(&mut self, t: Tick) {
        let slot = self.ring.slot_for_save(t);
        self.requests.push_save(t, slot);
    }

    /// Our accepted count in `players`, with the canonical inputs staged.
    fn stage(&mut self, players: &[PlayerStep], first_input: Option<Tick>) -> u32 {
        let s = self.size;
        self.staged.clear();
        let mut mine = 0u32;
        for p in players {
            let i = p.player as usize;
            if i >= self.players.len() {
                continue; // decoding refuses these; never index out of range anyway
            }
            let bytes = self.staged.mark_present(i);
            if let Some(b) = p.inputs.last().filter(|b| b.len() == s) {
                bytes.copy_from_slice(b);
            }
            if Some(i) == self.me {
                mine = u32::from(p.accepted);
            }
        }
        // The first step that consumed one of our inputs fixes which input that was.
        if mine > 0 {
            self.pending.anchor(first_input);
        }
        mine
    }

    /// A step from before the snapshot: only its accounting of our inputs matters.
    pub(crate) fn skip_step(&mut self, players: &[PlayerStep], first_input: Option<Tick>) {
        let mine = self.stage(players, first_input);
        self.pending.consume(mine);
    }

    /// Applies canonical step `tick` (which must be the authoritative tick).
    /// `first_input` is the client tick of our first consumed input, once known.
    pub(crate) fn on_step(&mut self, tick: Tick, players: &[PlayerStep], first_input: Option<Tick>) -> StepOutcome {
        debug_assert_eq!(tick, self.auth);
        let mine = self.stage(players, first_input);
        // Whether the server used the input we gave for the tick it consumed.
        let on_time = match (self.me, self.pending.oldest()) {
            (Some(m), Some(oldest)) if mine == 1 => oldest == self.staged.bytes(m),
            _ => false,
        };
        if !on_time {
            self.stats.local_late += 1;
        }
        let predicted = tick < self.cur && self.used.get(tick).is_some();
        let matched = predicted && self.compare(tick, mine, on_time);
        self.pending.consume(mine);
        let outcome = if self.batch.state == BatchState::Predicted && matched {
            self.stats.confirmed_predictions += 1;
            self.auth = tick + 1;
            StepOutcome::Confirmed
        } else {
            if self.batch.state == BatchState::Predicted {
                self.rewind();
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
            let resim = tick < self.batch.start;
            self.requests.begin_advance_flagged(tick, resim, true);
            for i in 0..self.players.len() {
                let status = if self.staged.is_present(i) { InputStatus::Confirmed } else { InputStatus::Disconnected };
                self.requests.push_input(self.staged.bytes(i), status);
            }
            self.stats.resimulated += resim as u64;
            if let BatchState::Rewound { advances } = &mut self.batch.state {
                *advances += 1;
            }
            self.save(tick + 1);
            self.cur = tick + 1;
            self.auth = tick + 1;
            StepOutcome::Applied
        };
        for (i, slot) in self.players.iter_mut().enumerate() {
            let present = self.staged.is_present(i);
            if present != slot.announced && Some(i) != self.me {
                slot.announced = present;
                self.changes.push_back((i as u32, tick, present));
            }
        }
        if self.timeline == Timeline::Restored {
            self.timeline = Timeline::Following;
        }
        // The staged step is the newest now; the old newest's row is staged over next.
        std::mem::swap(&mut self.newest, &mut self.staged);
        self.stats.canonical_ticks += 1;
        outcome
    }

    /// Whether the prediction of `tick` used exactly the canonical inputs.
    fn compare(&mut self, tick: Tick, mine: u32, on_time: bool) -> bool {
        let Some(used) = self.used.get(tick) else { return false };
        let (mut local_ok, mut remote_ok) = (true, true);
        for i in 0..self.players.len() {
            let same = used.input(i) == self.staged.input(i);
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
        if self.timeline != Timeline::Following || !caught_up {
            return;
        }
        let h = self.pending().saturating_sub(delay as u64).min(self.cfg.max_prediction as u64) as Tick;
        let target = self.auth.saturating_add(h);
        while self.cur < target {
            let t = self.cur;
            let resim = t < self.batch.start;
            let used = self.used.record(t);
            self.requests.begin_advance_flagged(t, resim, false);
            for (i, slot) in self.players.iter().enumerate() {
                let status = if Some(i) == self.me {
                    used.set(i, Some(self.pending.after_oldest(t - self.auth)));
                    InputStatus::Predicted
                } else if let Some(newest) = self.newest.input(i) {
                    used.set(i, Some(slot.prediction(newest)));
                    InputStatus::Predicted
                } else {
                    used.set(i, None);
                    InputStatus::Disconnected
                };
                self.requests.push_input(used.bytes(i), status);
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
        self.synced() && self.cur <= self.batch.start && self.cur.saturating_sub(self.auth) >= self.cfg.max_prediction
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
        while self.synced() && self.auth_logged <= auth {
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

    /// Asks the engine for its saved authoritative state at the start of `tick`
    /// (`DumpState`), first in this batch, before anything this batch saves can take
    /// its slot. Call right after [`Predictor::begin_batch`]: every tick up to the
    /// authoritative one was saved and confirmed in earlier batches.
    pub(crate) fn dump_authoritative(&mut self, tick: Tick) -> DumpOutcome {
        if !self.synced() || tick > self.auth {
            return DumpOutcome::NotYet;
        }
        match self.ring.slot_of(tick) {
            Some(slot) if self.ring.checksum(tick).is_some() => {
                self.requests.push_dump(tick, slot);
                DumpOutcome::Asked
            }
            _ => DumpOutcome::Gone,
        }
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
