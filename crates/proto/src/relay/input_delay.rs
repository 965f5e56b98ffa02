//! How much of a relay client's latency is hidden by prediction and how much is shown
//! as input delay (lightyear's delay/prediction split, N4E's overflow into delay).
//!
//! The client's prediction distance is its pending inputs, about one round trip plus
//! the server's buffering. Showing the world `delay` ticks behind the newest input
//! predicts `delay` ticks less: fewer remote mispredictions and less re-simulation,
//! for a local input that takes effect on screen `delay` ticks later.
//!
//! The delay is the larger of a base (fixed, or a share of the round trip) and the
//! *spill*: whatever part of the pending inputs exceeds `max_prediction`. The spill
//! follows the peak of the pending count over the last window rather than its
//! instantaneous value, which saw-tooths by a server send interval with every update:
//! so the shown world advances one tick per tick instead of in bursts.

use crate::clock::Micros;

/// Where the base input delay comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum InputDelay {
    /// Always this many ticks.
    Fixed(u32),
    /// `share` of the smoothed round trip, in whole ticks, at most `max`; re-evaluated
    /// every second.
    FromRtt {
        /// The fraction of the smoothed round trip to delay by.
        share: f64,
        /// The most ticks of delay.
        max: u32,
    },
}

/// Ticks of pending-count history behind the spill.
const WINDOW_TICKS: u32 = 60;
/// How often the RTT-based delay is re-evaluated.
const RTT_PERIOD_US: Micros = 1_000_000;
/// The RTT-based delay only changes when the new value is this far past a boundary,
/// so an RTT sitting on a tick boundary does not flip it every second.
const RTT_HYSTERESIS_TICKS: f64 = 0.25;

/// The delay in force. See the module docs.
#[derive(Debug, Clone)]
pub(crate) struct DelayPolicy {
    mode: InputDelay,
    max_prediction: u32,
    base: u32,
    peak: u64,
    peak_prev: u64,
    count: u32,
    next_rtt_at: Micros,
}

impl DelayPolicy {
    pub(crate) fn new(mode: InputDelay, max_prediction: u32) -> Self {
        let base = match mode {
            InputDelay::Fixed(d) => d,
            InputDelay::FromRtt { .. } => 0,
        };
        DelayPolicy { mode, max_prediction, base, peak: 0, peak_prev: 0, count: 0, next_rtt_at: 0 }
    }

    /// Forgets the pending history (a new connection).
    pub(crate) fn reset(&mut self) {
        self.peak = 0;
        self.peak_prev = 0;
        self.count = 0;
    }

    /// Feeds the round trip (microseconds) for the RTT-based mode.
    pub(crate) fn on_rtt(&mut self, now: Micros, rtt_us: f64, tick_us: f64) {
        let InputDelay::FromRtt { share, max } = self.mode else { return };
        if now < self.next_rtt_at || rtt_us.is_nan() || rtt_us <= 0.0 {
            return;
        }
        self.next_rtt_at = now + RTT_PERIOD_US;
        let want = share.max(0.0) * rtt_us / tick_us;
        let cur = self.base as f64;
        if want >= cur + 1.0 + RTT_HYSTERESIS_TICKS || want < cur - RTT_HYSTERESIS_TICKS {
            self.base = (want.floor() as u32).min(max);
        }
    }

    /// Feeds the pending-input count once per tick.
    pub(crate) fn on_tick(&mut self, pending: u64) {
        self.peak = self.peak.max(pending);
        self.count += 1;
        if self.count >= WINDOW_TICKS {
            self.peak_prev = self.peak;
            self.peak = pending;
            self.count = 0;
        }
    }

    /// The base delay (before any spill).
    #[cfg(test)]
    pub(crate) fn base(&self) -> u32 {
        self.base
    }

    /// The delay in force: the base, or the spill past `max_prediction` if larger.
    pub(crate) fn effective(&self) -> u32 {
        self.base.max(self.spill())
    }

    /// The pending inputs' recent peak past `max_prediction`: latency that prediction
    /// does not hide and that shows as input delay (when above the base).
    pub(crate) fn spill(&self) -> u32 {
        let peak = self.peak.max(self.peak_prev);
        peak.saturating_sub(self.max_prediction as u64).min(u32::MAX as u64) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spill_follows_the_peak_and_falls_after_a_window() {
        let mut d = DelayPolicy::new(InputDelay::Fixed(1), 8);
        assert_eq!(d.effective(), 1);
        // A saw-tooth between 10 and 12 pending inputs: the spill holds at 12 - 8.
        for i in 0..200 {
            d.on_tick(10 + (i % 3));
            assert!(i < 2 || d.effective() == 4, "tick {i}: {}", d.effective());
        }
        for _ in 0..2 * WINDOW_TICKS {
            d.on_tick(5);
        }
        assert_eq!(d.effective(), 1, "back to the base once the peak has aged out");
    }

    #[test]
    fn rtt_share_with_hysteresis_and_a_cap() {
        let t = 1e6 / 60.0;
        let mut d = DelayPolicy::new(InputDelay::FromRtt { share: 0.5, max: 3 }, 16);
        d.on_rtt(0, 100_000.0, t); // 3 ticks
        assert_eq!(d.base(), 3);
        d.on_rtt(500_000, 20_000.0, t);
        assert_eq!(d.base(), 3, "re-evaluated once a second only");
        d.on_rtt(1_000_000, 2.0 * 2.9 * t, t); // 2.9 ticks: within the hysteresis of 3
        assert_eq!(d.base(), 3);
        d.on_rtt(2_000_000, 2.0 * 2.5 * t, t);
        assert_eq!(d.base(), 2);
        d.on_rtt(3_000_000, 1_000_000.0, t);
        assert_eq!(d.base(), 3, "capped");
    }
}
