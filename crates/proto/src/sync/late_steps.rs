//! What the lead loop calibrates on: the steps the client's inputs missed, as the
//! server's updates count them, and the margin quantile level that holds them at the
//! aim.
//!
//! The server counts, in every update, running totals for this client: the steps it
//! ran on a substitute, the first copies that came after their step had run on one,
//! and its consumption shift (an underflow raises it, a merge lowers it). Updates are
//! lost on the way like any datagram, and their margin reports with them; running
//! totals let the next update that arrives count every step exactly. (Counting late
//! steps from the reports that got through, against substitutions that were all
//! counted, took a third of the lost reports' late copies for inputs that never
//! arrived: on the lab's S3c, 33% loss each way, 0.4-1% of the inputs, where 0.13%
//! were.)
//!
//! - The steps missed for lateness are the dropped late copies and the slips (an
//!   underflow each, a merge one however many it took). A run of slips past its first
//!   few is held until the margins show whether it was a stall (counted) or a latency
//!   step (dropped: the step's cost, not the tail's).
//! - The substitutions no late copy followed are inputs lost in every copy, which no
//!   lead saves: the late budget is what is left of `aim · ε` after them.
//! - The level is calibrated on the ratio of late steps to the level predicted (see
//!   [`LateSteps::level`]).

use super::lead::LeadConfig;
use crate::engine::Tick;

/// What a server update says of the client's inputs: its running counts, which a lost
/// or reordered update does not disturb (the next one carries them all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerTally {
    /// The server's tick when it sent the update.
    pub server_tick: Tick,
    /// Its consumption shift for this client (see
    /// [`JitterBuffer::shift`](crate::jitter::JitterBuffer::shift)).
    pub shift: i64,
    /// Steps it ran on a substitute for this client's missing input (wrapping).
    pub substituted: u16,
    /// The client's inputs whose first copy came after their step had run on a
    /// substitute (wrapping).
    pub late_substituted: u16,
}

/// Merging more than this many extra steps between two updates is a discontinuity.
const RESET_SHIFT_TICKS: i64 = 6;
/// More underflows than this between two updates (2 s of server ticks at 60 Hz, an
/// update interval no live connection reaches) is not information but garbage or a
/// lie: the loop re-acquires and learns nothing from that update. The shift comes from
/// the wire, and a margin offset by it becomes a clock snap of the same size.
const MAX_SLIP_PER_UPDATE: i64 = 120;
/// The most server ticks one update's counts are spread over in the averages: a
/// longer gap (updates lost for seconds, or a server tick from the wire far ahead)
/// weighs as this much.
const MAX_TALLY_TICKS: u32 = 600;
/// Server ticks per calibration memory (≈ 160 s at 60 Hz). Late steps come in clusters
/// (a burst of loss, a stall): with 40 s of memory each cluster moved the level, and
/// the lead, for a minute after it, and on the lab's S3c the lead swung by two ticks.
/// Both averages start at the aim, so a link's own ratio takes over within minutes.
const CALIBRATION_SAMPLES: f64 = 9600.0;
/// Slips one run of them (updates in a row that each show the server waited) may add to
/// the realized rate at once: a whole hitch is not the lead's fault and must not hold
/// the lead up for minutes. More are held (see `held_late`) and counted, up to
/// [`MAX_STALL_STEPS`], if they were a stall. (A run, not an update: the server keeps
/// sending its updates while it waits, each with the few ticks it waited since the
/// last.)
const MAX_SLIP_RUN: f64 = 4.0;
const MAX_STALL_STEPS: f64 = 32.0;
/// How far (ticks) the margins' location may be, when a hold ends, from where it was
/// before the run of slips that began it, for them to count as a stall's: the lab's
/// smallest latency step is 2.4 ticks, and the location's noise a few hundredths.
const STALL_RETURN_TICKS: f64 = 0.5;
/// Margin reports to wait before counting held late steps. The location they are
/// judged on is a median that forgets 1% a report: after a latency step it moves once
/// the new margins outweigh the old, some 70 reports on; twice that, to be sure.
const STEP_HOLD_REPORTS: u64 = 128;
/// Margin reports held late steps may wait beyond [`STEP_HOLD_REPORTS`] for the path
/// to hold still when the location is back (four tail-shape windows).
const SETTLE_WAIT_REPORTS: u64 = 256;

/// Where the lead loop's margins stand when an update is counted.
#[derive(Debug, Clone, Copy)]
pub(super) struct Where {
    /// Margin reports taken so far.
    pub(super) samples: u64,
    /// Their fast location (median), in today's terms.
    pub(super) location: Option<f64>,
    /// The tail's location has held still over its last window.
    pub(super) settled: bool,
}

/// One newer update's differences from the last.
#[derive(Debug, Clone, Copy)]
pub(super) struct Update {
    ticks: u32,
    slipped: f64,
    substituted: f64,
    late_copies: f64,
    /// Many merges at once: the server drained a pile-up (after the client's own
    /// hitch, or a burst of arrivals); the loop re-acquires rather than chase it.
    pub(super) pile_up: bool,
    /// A slip only the wire can make up: the loop re-acquires and counts nothing.
    pub(super) absurd: bool,
}

/// The late steps the server's updates count and the level calibrated on them.
#[derive(Debug, Clone)]
pub(super) struct LateSteps {
    /// The newest update's counts.
    tally: Option<ServerTally>,
    /// Slow averages, per server tick, of late steps and of the late fraction the
    /// quantile level predicted, and the level.
    realized: f64,
    predicted: f64,
    level: f64,
    /// Share of inputs lost in every copy, per server tick (slow average).
    unrecoverable: f64,
    /// Slips of the current run of updates that showed some (see [`MAX_SLIP_RUN`]),
    /// and the margins' location when the run began.
    slip_run: f64,
    run_from: Option<f64>,
    /// Slips beyond [`MAX_SLIP_RUN`] in one run, held until the margins' location
    /// shows whether they were a latency step (dropped) or a stall (counted), the
    /// report count at which that is known, and the location before the run that
    /// began the hold.
    held_late: f64,
    held_until: u64,
    held_from: Option<f64>,
}

impl LateSteps {
    pub(super) fn new(cfg: &LeadConfig) -> Self {
        let aim = cfg.late_rate * cfg.aim;
        LateSteps {
            tally: None,
            realized: aim,
            predicted: aim,
            level: aim,
            unrecoverable: 0.0,
            slip_run: 0.0,
            run_from: None,
            held_late: 0.0,
            held_until: 0,
            held_from: None,
        }
    }

    /// Takes an update's running counts: what changed since the last one taken, or
    /// None for the first and for one no newer (reordered or repeated).
    pub(super) fn take(&mut self, tally: ServerTally) -> Option<Update> {
        let Some(prev) = self.tally else {
            self.tally = Some(tally);
            return None;
        };
        // Ticks from the wire: a late (reordered or repeated) update is no news.
        let ticks = tally.server_tick.checked_sub(prev.server_tick).filter(|&t| t > 0)?;
        self.tally = Some(tally);
        // Counts from the wire: none can come to more than the ticks they cover and a
        // merge's worth (a falling count wraps to a huge one and is held to that).
        let most = f64::from(ticks.min(MAX_TALLY_TICKS)) + RESET_SHIFT_TICKS as f64;
        Some(Update {
            ticks,
            slipped: (tally.shift - prev.shift).max(0) as f64 + (tally.shift < prev.shift) as u8 as f64,
            substituted: f64::from(tally.substituted.wrapping_sub(prev.substituted)).min(most),
            late_copies: f64::from(tally.late_substituted.wrapping_sub(prev.late_substituted)).min(most),
            pile_up: prev.shift - tally.shift > RESET_SHIFT_TICKS,
            absurd: tally.shift - prev.shift > MAX_SLIP_PER_UPDATE,
        })
    }

    /// Counts an update's late steps and lost inputs, with the margins `at` where they
    /// stand, and calibrates the level.
    pub(super) fn count(&mut self, u: &Update, at: Where, cfg: &LeadConfig) {
        let weight = f64::from(u.ticks.min(MAX_TALLY_TICKS)) / CALIBRATION_SAMPLES;
        // Signed: a late copy can come an update after its substitution was counted.
        let never = u.substituted - u.late_copies;
        self.unrecoverable += never / CALIBRATION_SAMPLES - self.unrecoverable * weight;
        let counted = self.late_steps(u, at);
        self.calibrate(counted, weight, cfg);
    }

    /// The late steps an update adds to the realized rate: its late copies, its slips
    /// up to the run's first [`MAX_SLIP_RUN`], and held slips that turned out to be a
    /// stall's.
    fn late_steps(&mut self, u: &Update, at: Where) -> f64 {
        let before = self.slip_run;
        self.slip_run = if u.slipped > 0.0 { before + u.slipped } else { 0.0 };
        if before == 0.0 && u.slipped > 0.0 {
            self.run_from = at.location;
        }
        // (Only an update that slipped counts or holds any: the run's end is not a
        // negative slip. Taking the run's first slips back there and holding them from
        // that moment judged them against the margins' location at the run's end,
        // which counted a latency step's slips in full and could drop a stall's.)
        let slips_counted = (self.slip_run.min(MAX_SLIP_RUN) - before.min(MAX_SLIP_RUN)).max(0.0);
        self.hold(u.slipped - slips_counted, at.samples);
        u.late_copies + slips_counted + self.release(at)
    }

    /// The measured share of inputs lost in every copy (per server tick).
    pub(super) fn unrecoverable(&self) -> f64 {
        self.unrecoverable.max(0.0)
    }

    /// The margin quantile level the loop holds at its target. The realized late rate
    /// differs from it: the server's late policy turns some late arrivals into one step
    /// and others into none; latency steps cost steps before any margin shows them;
    /// feedback is a round trip old. So the level is the one that, with the ratio of
    /// realized to predicted late steps over the calibration's memory, gives `aim · ε`
    /// less the inputs lost in every copy. Both averages start at the aim, so the level
    /// starts there.
    pub(super) fn level(&self) -> f64 {
        self.level
    }

    /// Holds slips beyond a run's cap (see `held_late`), `samples` the reports taken
    /// so far.
    fn hold(&mut self, extra: f64, samples: u64) {
        if extra > 0.0 {
            if self.held_late == 0.0 {
                self.held_until = samples + STEP_HOLD_REPORTS;
                // Where the margins were before the run: a stall's own late margins
                // may have moved the location by the time its slips pass the cap.
                self.held_from = self.run_from;
            }
            self.held_late += extra;
        }
    }

    /// Held late steps that turned out to be a stall: when the hold ends the margins'
    /// location is back where it was before their run began, and holding still (if it
    /// is back but moving, the decision waits for it to hold still, at most
    /// [`SETTLE_WAIT_REPORTS`]). A latency step moves the location for good, and its
    /// late steps are the step's cost, not the tail's: counting them would hold the lead
    /// high for the calibration's whole memory after every step. (Not whether the
    /// location held still all through: on a bursty link it moves a little with every
    /// burst, and a test of that dropped a third of the late steps of the lab's S3d,
    /// whose lead then fell short of its aim.)
    fn release(&mut self, at: Where) -> f64 {
        if self.held_late == 0.0 || at.samples < self.held_until {
            return 0.0;
        }
        let back = matches!((self.held_from, at.location), (Some(a), Some(b)) if (a - b).abs() <= STALL_RETURN_TICKS);
        if back && !at.settled && at.samples < self.held_until + SETTLE_WAIT_REPORTS {
            // Back, but the path is moving again (on a bursty link, the next burst):
            // decided once it holds still. Decided then and there, more than half of
            // the slips held in the lab's S3d went uncounted.
            return 0.0;
        }
        let held = std::mem::take(&mut self.held_late);
        if back && at.settled { held.min(MAX_STALL_STEPS) } else { 0.0 }
    }

    /// `late_steps` were missed over server ticks that weigh `weight` (ticks over the
    /// memory's length).
    fn calibrate(&mut self, late_steps: f64, weight: f64, cfg: &LeadConfig) {
        self.realized += late_steps / CALIBRATION_SAMPLES - self.realized * weight;
        self.predicted += (self.level - self.predicted) * weight;
        let goal = (cfg.late_rate * cfg.aim - self.unrecoverable()).max(cfg.late_rate / 8.0);
        let ratio = self.realized / self.predicted.max(1e-9);
        // Up to 8ε: with the long shape the quantile is close to the true one, and the
        // server's late policy turns many late arrivals into no late step at all.
        self.level = (goal / ratio.max(1e-3)).clamp(cfg.late_rate / 8.0, cfg.late_rate * 8.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An update of three server ticks with `slipped` slips and nothing else.
    fn slips(slipped: f64) -> Update {
        Update { ticks: 3, slipped, substituted: 0.0, late_copies: 0.0, pile_up: false, absurd: false }
    }

    /// The late steps counted for a run of slips over updates (`run`), then quiet
    /// updates until the hold is decided. The margins' location is 0 at the run's
    /// first update, `during` at its later ones, and `after` once it has ended.
    fn counted_for(run: &[f64], during: f64, after: f64) -> f64 {
        let mut late = LateSteps::new(&LeadConfig::default());
        let at = |samples: u64, location: f64| Where { samples, location: Some(location), settled: true };
        let mut total = 0.0;
        for (i, &s) in run.iter().enumerate() {
            total += late.late_steps(&slips(s), at(100 + 3 * i as u64, if i == 0 { 0.0 } else { during }));
        }
        for k in 0..2 * STEP_HOLD_REPORTS {
            total += late.late_steps(&slips(0.0), at(200 + k, after));
        }
        total
    }

    #[test]
    fn a_stall_whose_path_moves_again_counts_once_it_holds_still() {
        // Ten slips in one update: four count at once, six are held. When the hold
        // ends the location is back, but the path is moving again (the next burst):
        // the six count once it holds still, and are dropped if it never does.
        let counted = |still_at: u64| {
            let mut late = LateSteps::new(&LeadConfig::default());
            let mut total = late.late_steps(&slips(10.0), Where { samples: 100, location: Some(0.0), settled: true });
            for k in 101..100 + STEP_HOLD_REPORTS + SETTLE_WAIT_REPORTS + 50 {
                total +=
                    late.late_steps(&slips(0.0), Where { samples: k, location: Some(0.1), settled: k >= still_at });
            }
            total
        };
        assert_eq!(counted(0), 10.0);
        assert_eq!(counted(100 + STEP_HOLD_REPORTS + 20), 10.0);
        assert_eq!(counted(u64::MAX), MAX_SLIP_RUN);
    }

    #[test]
    fn a_runs_first_slips_count_at_once_whatever_follows() {
        // A short run: every slip counts, whether the margins came back (a stall) or
        // not (a latency step). Taking them back when the run ends would leave the
        // realized rate short of what the server missed.
        assert_eq!(counted_for(&[2.0, 1.0], 0.0, 0.0), 3.0);
        assert_eq!(counted_for(&[2.0, 1.0], 3.0, 3.0), 3.0);
        // A long run: a stall's count in full (the margins come back to where they
        // were, even if they moved while it lasted), a latency step's first four only
        // (they move and stay).
        assert_eq!(counted_for(&[3.0, 3.0, 4.0], 0.0, 0.0), 10.0);
        assert_eq!(counted_for(&[3.0, 3.0, 4.0], 4.0, 0.0), 10.0);
        assert_eq!(counted_for(&[3.0, 3.0, 4.0], 10.0, 10.0), MAX_SLIP_RUN);
    }
}
