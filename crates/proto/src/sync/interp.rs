//! Where to play a remote timeline back: the remote-tick estimator and interpolation
//! buffer for snapshots or remote inputs that arrive every `send_interval` ticks.
//!
//! [`AdaptiveInterpolation`] is a receiver-side jitter buffer (NetEQ-like). Each packet
//! stamped with remote tick `R` arriving at local time `t` gives an offset sample
//! `o = R - t/T`. The largest recent offset belongs to the fastest packets (minimum
//! delay); how far each sample falls below it is that packet's jitter. The playback
//! point stays behind the minimum-delay timeline by one send interval (to have a
//! snapshot on each side) plus the jitter quantile for ε plus loss cover (M9), and it
//! moves toward a new target at a limited rate so playback stays smooth.
//!
//! [`FixedRuleInterpolation`] is seed 000's rule, kept as the baseline: hold two send
//! intervals behind the newest packet, with stall, skip, step-back and reset.

use std::collections::VecDeque;

use super::histogram::ForgettingHistogram;
use crate::clock::Micros;
use crate::engine::Tick;

/// Common interface of the estimators, for the lab and the sessions.
pub trait RemoteTimeline {
    /// A packet stamped with remote tick `remote_tick` arrived at local time `now`.
    fn on_packet(&mut self, remote_tick: Tick, now: Micros);
    /// The remote tick (fractional) to render at local time `now`; None before any packet.
    fn playback(&mut self, now: Micros) -> Option<f64>;
    /// Discrete corrections made so far (stalls, skips, step-backs, resets).
    fn corrections(&self) -> u64;
}

#[derive(Debug, Clone, Copy, PartialEq)]
/// Settings of the interpolation buffers.
pub struct InterpConfig {
    /// Tick length in microseconds.
    pub tick_us: f64,
    /// Remote ticks between packets.
    pub send_interval: u32,
    /// Allowed starvation rate ε.
    pub late_rate: f64,
    /// Largest rate change of the playback point while moving to a new delay (0.05 = 5%).
    pub max_slew: f64,
    /// How long the minimum-delay reference remembers a fast packet.
    pub reference_window_us: Micros,
}

impl Default for InterpConfig {
    fn default() -> Self {
        InterpConfig {
            tick_us: 1e6 / 60.0,
            send_interval: 3,
            late_rate: 0.01,
            max_slew: 0.05,
            reference_window_us: 10_000_000,
        }
    }
}

/// Most consecutive losses the buffer covers (each costs a send interval of delay).
const MAX_COVER: usize = 4;
/// Packets the loss-run averages remember (about 25 s at 20 updates a second): runs
/// that cost ε are rare, and a short average would swing the cover, and the delay,
/// with every one.
const RUN_MEMORY: f64 = 512.0;

/// The adaptive interpolation buffer (see the module docs).
#[derive(Debug, Clone)]
pub struct AdaptiveInterpolation {
    cfg: InterpConfig,
    /// Recent (arrival time, offset) pairs, kept as a monotone deque for the window max.
    window: VecDeque<(Micros, f64)>,
    jitter: ForgettingHistogram,
    newest: Option<Tick>,
    expected_next: Option<Tick>,
    /// `run_over[j]`: the share of expected packets that were the j-th or later loss in
    /// a row (an average over the last [`RUN_MEMORY`] packets or so; `run_over[1]` is
    /// the loss rate). Loss cover
    /// reads it directly, so bursts get the cover they need: with independent loss
    /// `p` it is `p^j`, in bursts far more.
    run_over: [f64; MAX_COVER + 2],
    /// Current delay behind the minimum-delay timeline, in ticks.
    delay: f64,
    last_now: Option<Micros>,
    started: bool,
}

impl AdaptiveInterpolation {
    /// An empty buffer on `cfg`; its window is allocated up front.
    pub fn new(cfg: InterpConfig) -> Self {
        // One entry per update in the reference window (twice that for duplicates and
        // bursts), made now so that filling the window never allocates mid-match.
        let per_window = cfg.reference_window_us as f64 / (cfg.send_interval.max(1) as f64 * cfg.tick_us.max(1.0));
        let room = if per_window.is_finite() { (2.0 * per_window) as usize + 16 } else { 16 };
        AdaptiveInterpolation {
            cfg,
            window: VecDeque::with_capacity(room.min(4096)),
            jitter: ForgettingHistogram::new(0.0, 64.0, 1.0 / 32.0, 0.995),
            newest: None,
            expected_next: None,
            run_over: [0.0; MAX_COVER + 2],
            delay: 0.0,
            last_now: None,
            started: false,
        }
    }

    /// Loss estimate from gaps in the remote tick stamps (an EWMA over packets).
    pub fn loss(&self) -> f64 {
        self.run_over[1]
    }

    /// The delay the buffer is moving toward, in ticks.
    pub fn target_delay(&self) -> f64 {
        let s = self.cfg.send_interval as f64;
        let j = self.jitter.quantile(1.0 - self.cfg.late_rate).unwrap_or(0.0);
        // Loss cover: survive k consecutive losses, the smallest k for which the share
        // of packets lost beyond k in a row is at most ε (p^(k+1) for independent loss).
        let k = (0..=MAX_COVER).find(|&k| self.run_over[k + 1] <= self.cfg.late_rate).unwrap_or(MAX_COVER);
        s + j + k as f64 * s
    }

    /// Current delay behind the minimum-delay timeline, in ticks.
    pub fn delay(&self) -> f64 {
        self.delay
    }

    fn reference(&self) -> Option<f64> {
        self.window.front().map(|&(_, o)| o)
    }
}

impl RemoteTimeline for AdaptiveInterpolation {
    fn on_packet(&mut self, remote_tick: Tick, now: Micros) {
        let o = remote_tick as f64 - now as f64 / self.cfg.tick_us;
        // Window maximum: drop samples that can never be the max again.
        while self.window.back().is_some_and(|&(_, x)| x <= o) {
            self.window.pop_back();
        }
        self.window.push_back((now, o));
        while self.window.front().is_some_and(|&(t, _)| now.saturating_sub(t) > self.cfg.reference_window_us) {
            self.window.pop_front();
        }
        let reference = self.reference().expect("just pushed");
        self.jitter.add(reference - o);
        if let Some(exp) = self.expected_next {
            if remote_tick >= exp {
                let missed = ((remote_tick - exp) / self.cfg.send_interval.max(1)) as f64;
                // One update per expected packet: `missed` losses then one arrival.
                for i in 1..=missed.min(16.0) as usize {
                    for (j, r) in self.run_over.iter_mut().enumerate().skip(1) {
                        *r += ((i >= j) as u8 as f64 - *r) / RUN_MEMORY;
                    }
                }
                for r in self.run_over.iter_mut().skip(1) {
                    *r -= *r / RUN_MEMORY;
                }
            }
        }
        if self.newest.is_none_or(|n| remote_tick > n) {
            self.newest = Some(remote_tick);
            self.expected_next = Some(remote_tick.saturating_add(self.cfg.send_interval));
        }
        if !self.started {
            self.started = true;
            self.delay = self.target_delay();
        }
    }

    fn playback(&mut self, now: Micros) -> Option<f64> {
        let reference = self.reference()?;
        let dt = self.last_now.map_or(0.0, |l| now.saturating_sub(l) as f64 / self.cfg.tick_us);
        self.last_now = Some(now);
        let target = self.target_delay();
        let step = self.cfg.max_slew * dt;
        self.delay += (target - self.delay).clamp(-step, step);
        Some(now as f64 / self.cfg.tick_us + reference - self.delay)
    }

    fn corrections(&self) -> u64 {
        0
    }
}

/// Seed 000's fixed rule, for comparison (see the module docs).
#[derive(Debug, Clone)]
pub struct FixedRuleInterpolation {
    cfg: InterpConfig,
    remote_tick: Option<i64>,
    newest: Option<i64>,
    unsynced: bool,
    tick_origin: Option<Micros>,
    ticks_run: i64,
    corrections: u64,
}

impl FixedRuleInterpolation {
    /// An empty buffer on `cfg`.
    pub fn new(cfg: InterpConfig) -> Self {
        FixedRuleInterpolation {
            cfg,
            remote_tick: None,
            newest: None,
            unsynced: false,
            tick_origin: None,
            ticks_run: 0,
            corrections: 0,
        }
    }

    /// One local tick of seed 000's `synchronize_connection_remote_ticks`.
    fn local_tick(&mut self) {
        let s = self.cfg.send_interval as i64;
        let Some(rt) = self.remote_tick.as_mut() else { return };
        *rt += 1;
        if !self.unsynced {
            return;
        }
        self.unsynced = false;
        let newest = self.newest.expect("set with remote_tick");
        let diff = newest - *rt;
        if diff >= 3 * s {
            *rt += (diff - 2 * s).min(4 * s);
        } else if (0..s).contains(&diff) {
            *rt -= 1;
        } else if diff < 0 && -diff <= 2 * s {
            *rt -= s;
        } else if diff < 0 {
            *rt = newest - 2 * s;
        } else {
            return; // inside the sweet spot: no correction
        }
        self.corrections += 1;
    }
}

impl RemoteTimeline for FixedRuleInterpolation {
    fn on_packet(&mut self, remote_tick: Tick, now: Micros) {
        let r = i64::from(remote_tick);
        if self.remote_tick.is_none() {
            self.remote_tick = Some(r - 2 * self.cfg.send_interval as i64);
            self.tick_origin = Some(now);
        }
        if self.newest.is_none_or(|n| r > n) {
            self.newest = Some(r);
            self.unsynced = true;
        }
    }

    fn playback(&mut self, now: Micros) -> Option<f64> {
        let origin = self.tick_origin?;
        let due = (now.saturating_sub(origin) as f64 / self.cfg.tick_us) as i64;
        while self.ticks_run < due {
            self.ticks_run += 1;
            self.local_tick();
        }
        self.remote_tick.map(|r| r as f64)
    }

    fn corrections(&self) -> u64 {
        self.corrections
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    const T: f64 = 1e6 / 60.0;

    /// Feeds packets every 3 ticks with base delay 50 ms and |N(0, 5 ms)| jitter; renders
    /// every 4 ms and returns (mean delay behind the newest, starvation rate).
    fn run(est: &mut dyn RemoteTimeline, loss: f64, seed: u64) -> (f64, f64) {
        let mut rng = Rng::new(seed);
        let mut arrivals: Vec<(Micros, Tick)> = Vec::new();
        for k in 0..18_000 {
            let r = 3 * k;
            if rng.chance(loss) {
                continue;
            }
            let d = 50_000.0 + (rng.normal() * 5_000.0).abs();
            arrivals.push(((r as f64 * T + d) as Micros, r));
        }
        arrivals.sort();
        let (mut i, mut newest) = (0, 0);
        let (mut frames, mut starved, mut behind) = (0u64, 0u64, 0.0);
        let mut t = 0;
        while t < 900_000_000 {
            while i < arrivals.len() && arrivals[i].0 <= t {
                est.on_packet(arrivals[i].1, arrivals[i].0);
                newest = newest.max(arrivals[i].1);
                i += 1;
            }
            if let Some(p) = est.playback(t) {
                if t > 60_000_000 {
                    frames += 1;
                    behind += newest as f64 - p;
                    // Interpolating needs the packet at or after p.
                    if p > newest as f64 {
                        starved += 1;
                    }
                }
            }
            t += 4_000;
        }
        (behind / frames as f64, starved as f64 / frames as f64)
    }

    #[test]
    fn adaptive_buffer_is_tight_and_rarely_starves() {
        let (behind, starved) = run(&mut AdaptiveInterpolation::new(InterpConfig::default()), 0.0, 1);
        // D* = S_s + Q_.99(j) = 3 + 0.77 ticks; the delay behind the newest packet is
        // that minus the average age of the newest (≈ S_s/2 + mean jitter).
        assert!(starved < 0.01, "starved {starved}");
        assert!(behind < 3.0, "behind {behind}");
        let (fixed_behind, _) = run(&mut FixedRuleInterpolation::new(InterpConfig::default()), 0.0, 1);
        assert!(behind < fixed_behind, "adaptive {behind} vs fixed {fixed_behind}");
    }

    #[test]
    fn loss_cover_grows_the_delay() {
        let mut lossy = AdaptiveInterpolation::new(InterpConfig::default());
        let (_, starved) = run(&mut lossy, 0.05, 2);
        assert!(lossy.loss() > 0.02 && lossy.loss() < 0.09, "loss {}", lossy.loss());
        assert!(lossy.target_delay() > 5.5, "one loss covered: {}", lossy.target_delay());
        assert!(starved < 0.02, "starved {starved}");
    }

    #[test]
    fn bursts_of_loss_get_more_cover_than_the_same_loss_spread_out() {
        // 5% of packets lost, either one at a time or in runs of three: the runs need
        // two more send intervals of cover for the same ε.
        let feed = |burst: bool| {
            let mut est = AdaptiveInterpolation::new(InterpConfig::default());
            let mut rng = Rng::new(5);
            let mut k: Tick = 0;
            while k < 6_000 {
                let run = if burst && rng.chance(0.05 / 3.0) {
                    3
                } else if !burst && rng.chance(0.05) {
                    1
                } else {
                    0
                };
                k += run; // lost
                est.on_packet(3 * k, ((3 * k) as f64 * T + 50_000.0) as Micros);
                k += 1;
            }
            (est.loss(), est.target_delay())
        };
        let (p_single, d_single) = feed(false);
        let (p_burst, d_burst) = feed(true);
        assert!((p_single - p_burst).abs() < 0.03, "similar loss: {p_single} vs {p_burst}");
        assert!(d_burst >= d_single + 2.0 * 3.0 - 0.5, "runs of 3 need two more intervals: {d_single} vs {d_burst}");
    }

    #[test]
    fn fixed_rule_corrects_in_steps() {
        let mut f = FixedRuleInterpolation::new(InterpConfig::default());
        let at = |tick: f64| (tick * T) as Micros;
        f.on_packet(100, at(0.0));
        assert_eq!(f.playback(at(0.0)), Some(94.0), "starts two send intervals behind");
        // Packets keep coming on time: the sweet spot, no corrections.
        for k in 1..=10 {
            f.on_packet(100 + 3 * k, at(3.0 * k as f64));
            f.playback(at(3.0 * k as f64 + 0.5));
        }
        assert_eq!(f.corrections(), 0);
        // The remote jumps 30 ticks ahead (a hitch on our side): skip forward.
        f.on_packet(160, at(31.0));
        let before = f.playback(at(31.0)).unwrap();
        let after = f.playback(at(32.5)).unwrap();
        assert!(after - before > 5.0, "skipped from {before} to {after}");
        assert!(f.corrections() >= 1);
    }
}
