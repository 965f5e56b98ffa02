//! A drifting machine clock, for scenario S6 (clock drift and drift steps).

use crate::clock::Micros;

/// A machine's local clock as a function of the simulation's true time:
/// `local(t) = offset + t * (1 + ppm * 1e-6)`, piecewise when the rate changes.
///
/// The simulation keeps one true timeline (the oracle's) and gives each simulated
/// machine a `DriftClock`; a machine reads `local(true_now)` and, to schedule a timer for
/// local time `L`, the driver wakes it at `true_time_of(L)`.
///
/// Arithmetic is integer microseconds plus a rounded drift term, so a whole number of
/// ppm over a round interval comes out exact (+1000 ppm over 1e9 µs is exactly +1e6 µs)
/// and runs are reproducible across platforms. Readings are monotonic (non-decreasing)
/// and clamp at 0, so a negative offset reads 0 until the clock "starts".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriftClock {
    ppm: f64,
    /// The true time of the last rate change (0 at creation).
    anchor_true: Micros,
    /// The unclamped local reading at `anchor_true`; may be negative.
    anchor_local: i128,
}

/// Beyond this a clock would stand still or run backwards, which breaks monotonicity.
const PPM_LIMIT: f64 = 999_999.0;

fn sanitize_ppm(ppm: f64) -> f64 {
    if ppm.is_nan() { 0.0 } else { ppm.clamp(-PPM_LIMIT, PPM_LIMIT) }
}

impl DriftClock {
    /// A clock running at `1 + ppm * 1e-6` times true speed that reads `offset_us` at true
    /// time 0. `ppm` is clamped to ±999 999 (NaN counts as 0).
    pub fn new(ppm: f64, offset_us: i64) -> Self {
        DriftClock { ppm: sanitize_ppm(ppm), anchor_true: 0, anchor_local: offset_us as i128 }
    }

    /// A clock that agrees with true time.
    pub fn exact() -> Self {
        Self::new(0.0, 0)
    }

    /// The current rate error in parts per million.
    pub fn ppm(&self) -> f64 {
        self.ppm
    }

    /// The local reading at true time `true_now`.
    ///
    /// Times before the last [`set_ppm`](Self::set_ppm) are extrapolated with the current
    /// rate (old segments are not kept); simulations only move forward, so this only
    /// matters for callers looking into the past.
    pub fn local(&self, true_now: Micros) -> Micros {
        u64::try_from(self.raw(true_now).max(0)).unwrap_or(u64::MAX)
    }

    /// `local(true_now) - true_now`: the clock offset an oracle compares estimates against.
    pub fn offset_at(&self, true_now: Micros) -> i64 {
        let d = self.local(true_now) as i128 - true_now as i128;
        d.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    /// The earliest true time at which the clock reads `local` or later: when a timer set
    /// for local time `local` fires. `local(true_time_of(l)) >= l`, equal whenever the clock
    /// ever shows `l` (a fast clock skips some values); for a clock at or above true speed,
    /// `true_time_of(local(t)) == t`. Returns `u64::MAX` if the clock never gets there.
    pub fn true_time_of(&self, local: Micros) -> Micros {
        let target = local as i128;
        // Inverting the rate in f64 lands within a microsecond or two of the answer at
        // simulation magnitudes; a short walk makes it exact. (Drivers ask this for
        // every timer of every event, so the bisection below is only the fallback.)
        let guess = self.anchor_true as f64 + (target - self.anchor_local) as f64 / (1.0 + self.ppm * 1e-6);
        if (1.0..1e15).contains(&guess) {
            let mut t = guess.round() as u64;
            for _ in 0..16 {
                if self.raw(t) < target {
                    t += 1;
                } else if self.raw(t - 1) >= target {
                    t -= 1;
                } else {
                    return t;
                }
                if t == 0 {
                    break;
                }
            }
        }
        // `raw` is monotonic in t, so bisect for the first t with raw(t) >= target; this is
        // exact at any magnitude, where inverting the rate in f64 would be off by ulps.
        let (mut lo, mut hi) = (0u64, u64::MAX);
        if self.raw(lo) >= target {
            return 0;
        }
        if self.raw(hi) < target {
            return u64::MAX;
        }
        // Invariant: raw(lo) < target <= raw(hi).
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.raw(mid) >= target {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }

    /// Changes the rate from true time `true_now` on, without a jump: the reading at
    /// `true_now` is the same under the old and the new rate (a drift step, not a time step).
    /// Loses at most half a microsecond to rounding per call.
    pub fn set_ppm(&mut self, true_now: Micros, ppm: f64) {
        self.anchor_local = self.raw(true_now);
        self.anchor_true = true_now;
        self.ppm = sanitize_ppm(ppm);
    }

    /// The unclamped reading. Monotonic in `t`: the drift term `round(dt * ppm * 1e-6)` is a
    /// correctly rounded product with a fixed factor, so it never decreases by more than
    /// the `dt` it rides on increases (|ppm * 1e-6| < 1).
    fn raw(&self, t: Micros) -> i128 {
        let dt = t as i128 - self.anchor_true as i128;
        let drift = (dt as f64 * (self.ppm * 1e-6)).round() as i128;
        self.anchor_local + dt + drift
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn drift_accumulates_exactly() {
        assert_eq!(DriftClock::new(1000.0, 0).local(1_000_000_000), 1_001_000_000);
        assert_eq!(DriftClock::new(-100.0, 5000).local(1_000_000_000), 1_000_000_000 - 100_000 + 5000);
        assert_eq!(DriftClock::new(100.0, 0).offset_at(3_600_000_000), 360_000); // 100 ppm = 0.36 s/h
        assert_eq!(DriftClock::exact().local(123_456), 123_456);
        assert_eq!(DriftClock::new(0.0, 2_000).offset_at(10), 2_000);
    }

    #[test]
    fn negative_offset_clamps_at_zero_and_stays_monotonic() {
        let c = DriftClock::new(-1000.0, -5_000);
        assert_eq!(c.local(0), 0);
        assert_eq!(c.local(4_000), 0);
        let mut prev = 0;
        for t in (0..20_000_000).step_by(997) {
            let l = c.local(t);
            assert!(l >= prev, "local went back at t={t}");
            prev = l;
        }
        assert_eq!(c.local(10_000_000), 10_000_000 - 10_000 - 5_000);
    }

    #[test]
    fn inverse_round_trips() {
        let mut rng = Rng::new(11);
        for &(ppm, offset) in &[(0.0, 0i64), (100.0, 7), (1000.0, -3000), (-100.0, 250), (-1000.0, -42), (350_000.0, 0)]
        {
            let c = DriftClock::new(ppm, offset);
            for _ in 0..2000 {
                let t = rng.below(10_000_000_000);
                let l = c.local(t);
                let back = c.true_time_of(l);
                // Earliest time showing l: it shows l, and a microsecond earlier it did not.
                assert_eq!(c.local(back), l, "ppm {ppm} t {t}");
                assert!(back <= t);
                if l > 0 {
                    assert!(back == 0 || c.local(back - 1) < l, "ppm {ppm} t {t} not earliest");
                }
                if ppm >= 0.0 && l > 0 {
                    assert_eq!(back, t, "a clock at or above true speed is injective");
                }
                // Scheduling for any local value lands on the first reading >= it.
                let want = rng.below(10_000_000_000);
                let at = c.true_time_of(want);
                assert!(c.local(at) >= want && c.local(at) <= want + 1);
            }
        }
        assert_eq!(DriftClock::new(0.0, 0).true_time_of(0), 0);
        assert_eq!(DriftClock::new(0.0, 1000).true_time_of(500), 0);
        assert_eq!(DriftClock::new(0.0, 0).true_time_of(u64::MAX), u64::MAX);
    }

    #[test]
    fn drift_step_keeps_time_continuous() {
        let mut c = DriftClock::new(100.0, 1_000);
        let step_at = 300_000_000;
        let before = c.local(step_at);
        c.set_ppm(step_at, -100.0);
        assert_eq!(c.local(step_at), before, "no jump at the step");
        assert_eq!(c.ppm(), -100.0);
        // Before the step the clock gained 100 ppm; after it loses 100 ppm.
        assert_eq!(before, 1_000 + 300_000_000 + 30_000);
        assert_eq!(c.local(step_at + 1_000_000_000), before + 1_000_000_000 - 100_000);
        let mut prev = 0;
        for t in (step_at - 5_000..step_at + 5_000).step_by(7) {
            assert!(c.local(t) >= prev, "monotonic across the step");
            prev = c.local(t);
        }
        // Nonsense rates are clamped rather than running the clock backwards.
        c.set_ppm(step_at, -5e6);
        assert_eq!(c.ppm(), -999_999.0);
        c.set_ppm(step_at, f64::NAN);
        assert_eq!(c.ppm(), 0.0);
    }
}
