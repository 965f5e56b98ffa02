//! The engine's fixed-step clock, with bounded time dilation.
//!
//! Each frame the engine passes the current time; the clock answers how many ticks to
//! simulate now and how far into the next tick rendering should interpolate. A time
//! sync controller steers it with a *time scale* (dilation), bounded and asymmetric:
//! catching up (running fast) is allowed to be quicker than slowing down, because
//! being behind makes inputs late while being ahead only costs latency.
//!
//! Large corrections are discrete *snaps*, made only beyond a threshold or after a
//! hitch and always reported as a [`TickEvent`]. The tick number never goes backwards:
//! a backward snap holds the clock (no ticks due) until real time has caught up.

use std::collections::VecDeque;

use crate::clock::Micros;
use crate::engine::Tick;
use crate::game::ConfigProblems;

/// Settings of a [`TickClock`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TickClockConfig {
    /// Length of one tick in microseconds (16 667 at 60 Hz).
    pub tick_us: f64,
    /// Frame deltas above this are treated as a hitch: the excess is dropped (and
    /// reported) instead of being simulated all at once.
    pub max_frame_us: u64,
    /// Largest speed-up, as a fraction (0.10 = run up to 10% fast).
    pub max_speedup: f64,
    /// Largest slow-down, as a fraction (0.05 = run down to 5% slow).
    pub max_slowdown: f64,
    /// Phase errors larger than this many ticks are corrected by a snap, not dilation.
    pub snap_threshold_ticks: f64,
}

impl Default for TickClockConfig {
    fn default() -> Self {
        TickClockConfig {
            tick_us: 1e6 / 60.0,
            max_frame_us: 250_000,
            max_speedup: 0.10,
            max_slowdown: 0.05,
            snap_threshold_ticks: 10.0,
        }
    }
}

impl TickClockConfig {
    /// Checks the settings; the error names the first bad field.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.tick_us.is_finite() && self.tick_us >= 100.0) {
            return Err(format!("tick_us {} must be at least 100", self.tick_us));
        }
        let mut p = ConfigProblems::new();
        self.check_dilation("", &mut p);
        if let Some(first) = p.iter().next() {
            return Err(format!("{} {}", first.field, first.message));
        }
        if (self.max_frame_us as f64) < self.tick_us {
            return Err(format!("max_frame_us {} is shorter than a tick", self.max_frame_us));
        }
        Ok(())
    }

    /// Checks the dilation bounds, the settings that are not the game's shape (a
    /// session takes `tick_us` and `max_frame_us` from its [`GameShape`](crate::GameShape)),
    /// each under `prefix` and its name.
    pub(crate) fn check_dilation(&self, prefix: &str, problems: &mut ConfigProblems) {
        for (name, v) in [("max_speedup", self.max_speedup), ("max_slowdown", self.max_slowdown)] {
            if !(0.0..=0.5).contains(&v) {
                problems.push(format!("{prefix}{name}"), format!("{v} is not in [0, 0.5]"));
            }
        }
        if !(self.snap_threshold_ticks.is_finite() && self.snap_threshold_ticks >= 1.0) {
            problems.push(
                format!("{prefix}snap_threshold_ticks"),
                format!("{} is below 1 tick", self.snap_threshold_ticks),
            );
        }
    }
}

/// Discrete things the clock did, for the engine and for metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TickEvent {
    /// The clock jumped from tick `from` to tick `to` without simulating the ticks between.
    SnapForward {
        /// The tick before the snap.
        from: Tick,
        /// The tick after it.
        to: Tick,
    },
    /// The clock holds for `ticks` ticks' worth of real time (it never runs backwards).
    SnapBack {
        /// The tick the clock holds at.
        at: Tick,
        /// How far back the snap went, in ticks (positive).
        ticks: f64,
    },
    /// A frame took `frame_us`; only `max_frame_us` of it was simulated.
    Hitch {
        /// The tick when the frame began.
        at: Tick,
        /// The frame's length in microseconds.
        frame_us: u64,
    },
}

/// Events one `advance` and one `snap` can raise, so queueing them never allocates
/// (the owner drains them every frame).
const EVENTS_RESERVED: usize = 4;

/// Fixed-step accumulator with dilation. See the module docs.
#[derive(Debug, Clone)]
pub struct TickClock {
    cfg: TickClockConfig,
    tick: Tick,
    /// Simulated time not yet turned into ticks, in microseconds of *tick time*.
    /// Negative while holding after a backward snap.
    acc_us: f64,
    scale: f64,
    last_now: Option<Micros>,
    events: VecDeque<TickEvent>,
}

impl TickClock {
    /// A clock at `start_tick`, running at scale 1.0; it starts counting at the first `advance`.
    pub fn new(cfg: TickClockConfig, start_tick: Tick) -> Self {
        TickClock {
            cfg,
            tick: start_tick,
            acc_us: 0.0,
            scale: 1.0,
            last_now: None,
            events: VecDeque::with_capacity(EVENTS_RESERVED),
        }
    }

    /// The clock's config.
    pub fn config(&self) -> &TickClockConfig {
        &self.cfg
    }

    /// The number of ticks run so far (the next tick to simulate is this one). It holds
    /// at `Tick::MAX`: a relay client starts its clock from the server's tick.
    pub fn tick(&self) -> Tick {
        self.tick
    }

    /// The current time scale (1.0 = real time).
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Asks for a time scale; it is clamped to the configured bounds.
    pub fn set_scale(&mut self, scale: f64) {
        let s = if scale.is_finite() { scale } else { 1.0 };
        self.scale = s.clamp(1.0 - self.cfg.max_slowdown, 1.0 + self.cfg.max_speedup);
    }

    /// Moves the clock's phase by `ticks` at once (positive = ahead). Used for errors
    /// beyond the snap threshold; returns whether a snap happened.
    pub fn snap(&mut self, ticks: f64) -> bool {
        if !ticks.is_finite() || ticks.abs() < self.cfg.snap_threshold_ticks {
            return false;
        }
        if ticks > 0.0 {
            let whole = ticks.floor();
            let from = self.tick;
            self.tick = self.tick.saturating_add(whole as Tick);
            self.acc_us += (ticks - whole) * self.cfg.tick_us;
            self.events.push_back(TickEvent::SnapForward { from, to: self.tick });
        } else {
            self.acc_us += ticks * self.cfg.tick_us;
            self.events.push_back(TickEvent::SnapBack { at: self.tick, ticks: -ticks });
        }
        true
    }

    /// Feeds the frame's time; returns how many ticks to simulate now. The tick number
    /// advances by that many.
    pub fn advance(&mut self, now: Micros) -> u32 {
        let Some(last) = self.last_now.replace(now) else {
            return 0;
        };
        let mut dt = now.saturating_sub(last);
        if dt > self.cfg.max_frame_us {
            self.events.push_back(TickEvent::Hitch { at: self.tick, frame_us: dt });
            dt = self.cfg.max_frame_us;
        }
        self.acc_us += dt as f64 * self.scale;
        let mut n = 0u32;
        // A nanosecond of tolerance: f64 sums of 1e6/60 land a hair below exact tick
        // boundaries, and one second must be exactly 60 ticks.
        while self.acc_us >= self.cfg.tick_us - 1e-3 {
            self.acc_us -= self.cfg.tick_us;
            self.tick = self.tick.saturating_add(1);
            n += 1;
        }
        n
    }

    /// How far rendering is into the next tick, in [0, 1).
    pub fn alpha(&self) -> f64 {
        (self.acc_us / self.cfg.tick_us).clamp(0.0, 0.999_999)
    }

    /// The clock's position in fractional ticks.
    pub fn position(&self) -> f64 {
        self.tick as f64 + self.acc_us / self.cfg.tick_us
    }

    /// The next event, oldest first.
    pub fn poll_event(&mut self) -> Option<TickEvent> {
        self.events.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: f64 = 1e6 / 60.0;

    #[test]
    fn runs_sixty_ticks_a_second_with_alpha() {
        let mut c = TickClock::new(TickClockConfig::default(), 0);
        assert_eq!(c.advance(0), 0);
        let mut total = 0;
        for f in 1..=144u64 {
            total += c.advance(f * 1_000_000 / 144);
            assert!((0.0..1.0).contains(&c.alpha()));
        }
        assert_eq!(total, 60);
        assert_eq!(c.tick(), 60);
    }

    #[test]
    fn dilation_is_bounded_and_asymmetric() {
        let mut c = TickClock::new(TickClockConfig::default(), 0);
        c.set_scale(2.0);
        assert_eq!(c.scale(), 1.10);
        c.set_scale(0.1);
        assert_eq!(c.scale(), 0.95);
        c.set_scale(f64::NAN);
        assert_eq!(c.scale(), 1.0);
        c.set_scale(1.10);
        c.advance(0);
        let n: u32 = (1..=100u64).map(|f| c.advance(f * 10_000)).sum();
        assert_eq!(n, 66, "1 s at +10% is 66 ticks");
    }

    #[test]
    fn hitch_is_clamped_and_reported() {
        let mut c = TickClock::new(TickClockConfig::default(), 0);
        c.advance(0);
        let n = c.advance(2_000_000);
        assert_eq!(n, 15, "only 250 ms simulated");
        assert!(matches!(c.poll_event(), Some(TickEvent::Hitch { frame_us: 2_000_000, .. })));
    }

    #[test]
    fn snaps_only_beyond_threshold_and_never_go_backwards() {
        let mut c = TickClock::new(TickClockConfig::default(), 100);
        c.advance(0);
        assert!(!c.snap(9.0));
        assert!(c.snap(12.5));
        assert_eq!(c.tick(), 112);
        assert!(matches!(c.poll_event(), Some(TickEvent::SnapForward { from: 100, to: 112 })));
        assert!(c.snap(-20.0));
        let before = c.tick();
        // Holding: about 20 ticks of real time pass with nothing due.
        let mut ticks = Vec::new();
        for f in 1..=60u64 {
            let n = c.advance((f as f64 * T) as u64 + 1);
            ticks.push(n);
            assert!(c.tick() >= before);
        }
        let idle = ticks.iter().take_while(|&&n| n == 0).count();
        assert!((19..=21).contains(&idle), "held for {idle} frames");
    }
}
