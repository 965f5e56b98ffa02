//! A long memory of the *shape* of the margin distribution's late tail, apart from
//! its *location*.
//!
//! The lead loop holds a low quantile (about ε) of arrival margins. A quantile that
//! low, read from a memory short enough to follow a latency step, is set by a handful
//! of samples: on a heavy-tailed link (a queue that stalls now and then) it jumps up
//! after each stall and sinks back as the stall leaves the memory, so the lead swings
//! and the inputs that arrive in the quiet stretches are late. Where the tail sits
//! relative to the median is a property of the path that changes slowly; where the
//! median sits changes at once with a latency step or a route flap. So the two are
//! estimated apart: the location as the median of the last [`WINDOW`] samples, the
//! shape as a histogram of `sample − location` that remembers several minutes. (The
//! lead loop places the shape on its own, slower median: see
//! [`InputLeadController`](super::lead::InputLeadController).)
//!
//! While the location is moving (a step in progress) samples measure the step, not
//! the shape, and are kept out: otherwise every route flap would read as tail.

use super::histogram::ForgettingHistogram;

/// Samples in the location window (about a second of inputs at 60 Hz).
const WINDOW: usize = 64;
/// Per-sample forgetting of the shape (about 20,000 samples, five and a half minutes
/// at 60 Hz: a 1% tail then holds some 200 samples).
const SHAPE_FORGET: f64 = 0.99995;
/// The location moving more than this (ticks) over one window is a step in progress.
const STEP_TICKS: f64 = 0.5;
/// Shape samples needed before the shape is trusted.
const MIN_WEIGHT: f64 = 2_000.0;

#[derive(Debug, Clone)]
pub(super) struct TailShape {
    recent: [f64; WINDOW],
    /// Location (window median) after each of the last `WINDOW` samples.
    locations: [f64; WINDOW],
    count: usize,
    settled: bool,
    shape: ForgettingHistogram,
}

impl Default for TailShape {
    fn default() -> Self {
        Self::new()
    }
}

impl TailShape {
    pub(super) fn new() -> Self {
        TailShape {
            recent: [0.0; WINDOW],
            locations: [0.0; WINDOW],
            count: 0,
            settled: false,
            shape: ForgettingHistogram::new(-64.0, 32.0, 1.0 / 32.0, SHAPE_FORGET),
        }
    }

    /// The median of the location window, once it is full.
    #[cfg(test)]
    pub(super) fn location(&self) -> Option<f64> {
        (self.count >= WINDOW).then(|| self.locations[(self.count - 1) % WINDOW])
    }

    /// The location has held still over the last window (no step in progress).
    pub(super) fn settled(&self) -> bool {
        self.settled
    }

    /// Takes one sample (finite values only).
    pub(super) fn add(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        let i = self.count % WINDOW;
        self.recent[i] = x;
        self.count += 1;
        if self.count < WINDOW {
            return;
        }
        let mut sorted = self.recent;
        let (_, median, _) = sorted.select_nth_unstable_by(WINDOW / 2, |a, b| a.total_cmp(b));
        let location = *median;
        // `locations[i]` still holds the location of one window ago. The sample taken
        // into the shape is the one from the middle of the window: a step anywhere
        // near it moves the location between those two medians, so neither the step's
        // first samples (before the median has moved) nor the last ones count as tail.
        let settled = self.count >= 2 * WINDOW && (location - self.locations[i]).abs() <= STEP_TICKS;
        self.locations[i] = location;
        self.settled = settled;
        if settled {
            let middle = self.recent[(self.count - 1 - WINDOW / 2) % WINDOW];
            self.shape.add(middle - location);
        }
    }

    /// The `level` quantile of the shape alone (sample minus location); add a location
    /// to place it. None until the shape holds enough samples.
    pub(super) fn shape_quantile(&self, level: f64) -> Option<f64> {
        if self.shape.weight() < MIN_WEIGHT {
            return None;
        }
        self.shape.quantile(level)
    }

    /// Moves the location window by `delta` (the caller re-based its samples); the
    /// shape is relative and stays.
    pub(super) fn shift(&mut self, delta: f64) {
        self.recent.iter_mut().chain(self.locations.iter_mut()).for_each(|v| *v += delta);
    }

    /// Forgets the location (after a discontinuity); the shape of the path's tail is
    /// kept.
    pub(super) fn clear_location(&mut self) {
        self.count = 0;
        self.settled = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn the_tail_survives_a_quiet_stretch_and_follows_a_step() {
        let mut t = TailShape::new();
        let mut rng = Rng::new(9);
        // Margins around 3 ticks; one sample in 100 is 6 ticks late (a stall).
        for k in 0..20_000 {
            let x = 3.0 + 0.2 * rng.normal() - if k % 100 == 0 { 6.0 } else { 0.0 };
            t.add(x);
        }
        let q = t.shape_quantile(0.005).expect("enough samples") + t.location().unwrap();
        assert!(q < 0.0, "the stalls are the 0.5% tail: {q}");
        // Two thousand quiet samples: a short memory would have forgotten the stalls.
        for _ in 0..2_000 {
            t.add(3.0 + 0.2 * rng.normal());
        }
        let quiet = t.shape_quantile(0.005).unwrap() + t.location().unwrap();
        assert!(quiet < 0.5, "tail kept through a quiet stretch: {quiet}");
        // A +4 tick step in the margins: the location follows within a window, and the
        // step's transient does not widen the tail.
        for _ in 0..300 {
            t.add(7.0 + 0.2 * rng.normal());
        }
        let after = t.shape_quantile(0.005).unwrap() + t.location().unwrap();
        assert!((after - (quiet + 4.0)).abs() < 0.5, "{quiet} then {after}");
        assert!((t.location().unwrap() - 7.0).abs() < 0.1);
    }

    #[test]
    fn nothing_until_enough_samples() {
        let mut t = TailShape::new();
        for _ in 0..100 {
            t.add(1.0);
        }
        assert_eq!(t.shape_quantile(0.01), None);
        t.add(f64::NAN);
        t.clear_location();
        assert_eq!(t.location(), None);
    }
}
