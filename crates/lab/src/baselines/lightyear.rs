//! Baseline (c): lightyear's input timeline (`cBournhonesque/lightyear`,
//! `crates/core/sync/src/timeline/{sync,input}.rs`, `ping/estimator.rs`), as
//! /work/shared/reference/ticksync.md section 1.4 describes it (lines 79-91):
//!
//! - lines 80-82: RTT EWMA α = 1/12, absolute-deviation EWMA β = 1/6, jitter =
//!   deviation/2, samples clamped to `min(srtt + 3·dev, 3·srtt, srtt + 500 ms)` but
//!   never below `1.2·srtt` ([`RttFilter`]);
//! - line 83: the remote (server) tick is `R + RTT/2` on each packet, an offset
//!   smoothed by an EMA whose α goes from 0.10 (jitter ≤ 1 ms) to 0.02 (≥ 10 ms), and
//!   advanced on real time between packets;
//! - line 85: target = `remote + RTT/2 + (4·jitter + 1 tick) + 1 tick + 1 tick`
//!   (input delay 0): the margins are 3 whole ticks above `RTT/2 + 4·jitter`;
//! - line 89: dead band |err| ≤ 1 tick, inside which the speed relaxes 10% toward 1.0
//!   per sample;
//! - line 90: outside it, 3 consecutive same-sign errors before acting, then speed
//!   `1 ± 0.05·2·|err|/10` (0.01 per tick of error, at most ±10%);
//! - line 91: |err| > 10 ticks resyncs by a snap, and the first sync always snaps.
//!
//! It has no server feedback (line 86): the server reuses the last input when one is
//! missing. Each input is sent in 10 packets: lightyear's default input redundancy
//! (`InputConfig::packet_redundancy`, as read from its source).

/// Copies of each input (lightyear's default packet redundancy).
pub const COPIES: u32 = 10;
/// Whole ticks of margin above `RTT/2 + 4·jitter` (line 85).
pub const MARGIN_TICKS: f64 = 3.0;
/// Dead band, ticks (line 89).
pub const DEAD_BAND: f64 = 1.0;
/// Same-sign samples needed outside the band (line 90).
pub const SAME_SIGN: u32 = 3;
/// Speed per tick of error: 0.05·2/10 (line 90), and its bound.
pub const GAIN: f64 = 0.01;
pub const MAX_DILATION: f64 = 0.10;
/// Errors beyond this many ticks resync (line 91).
pub const RESYNC_TICKS: f64 = 10.0;

/// lightyear's RTT and jitter estimator (lines 80-82).
#[derive(Debug, Clone, Copy, Default)]
pub struct RttFilter {
    srtt: Option<f64>,
    dev: f64,
}

impl RttFilter {
    /// One sample (µs). The first sets the mean; the deviation starts at 0.
    pub fn sample(&mut self, rtt: f64) {
        let Some(s) = self.srtt else {
            self.srtt = Some(rtt);
            return;
        };
        let ceiling = (s + 3.0 * self.dev).min(3.0 * s).min(s + 500_000.0).max(1.2 * s);
        let x = rtt.min(ceiling);
        self.dev += ((x - s).abs() - self.dev) / 6.0;
        self.srtt = Some(s + (x - s) / 12.0);
    }

    pub fn rtt(&self) -> Option<f64> {
        self.srtt
    }

    /// Jitter: half the deviation (line 81).
    pub fn jitter(&self) -> f64 {
        self.dev / 2.0
    }
}

/// The client's input timeline.
#[derive(Debug, Clone, Copy)]
pub struct LightyearClient {
    pub rtt: RttFilter,
    /// Remote tick minus local time in ticks (line 83).
    offset: Option<f64>,
    speed: f64,
    /// The sign of the last errors outside the band and how many in a row.
    run: (i8, u32),
    synced: bool,
}

impl Default for LightyearClient {
    fn default() -> Self {
        LightyearClient { rtt: RttFilter::default(), offset: None, speed: 1.0, run: (0, 0), synced: false }
    }
}

impl LightyearClient {
    /// A server packet stamped with tick `remote` reached the client at local time
    /// `local_ticks` (µs / tick): the remote estimate moves toward `R + RTT/2`.
    pub fn on_packet(&mut self, remote: f64, local_ticks: f64, tick_us: f64) {
        let Some(rtt) = self.rtt.rtt() else { return };
        let sample = remote + rtt / 2.0 / tick_us - local_ticks;
        let j_ms = self.rtt.jitter() / 1000.0;
        let alpha = 0.10 - (0.10 - 0.02) * ((j_ms - 1.0) / 9.0).clamp(0.0, 1.0);
        let o = self.offset.get_or_insert(sample);
        *o += alpha * (sample - *o);
    }

    /// The tick the input timeline aims at now (line 85), if it has an estimate.
    pub fn target(&self, local_ticks: f64, tick_us: f64) -> Option<f64> {
        let rtt = self.rtt.rtt()?;
        let remote = local_ticks + self.offset?;
        Some(remote + rtt / 2.0 / tick_us + 4.0 * self.rtt.jitter() / tick_us + MARGIN_TICKS)
    }

    /// One sync sample with the tick being simulated: the speed to run at and a snap
    /// (ticks) if the first sync or a resync calls for one.
    pub fn sample(&mut self, client_tick: f64, local_ticks: f64, tick_us: f64) -> (f64, Option<f64>) {
        let Some(target) = self.target(local_ticks, tick_us) else { return (self.speed, None) };
        let err = target - client_tick;
        if !self.synced || err.abs() > RESYNC_TICKS {
            self.synced = true;
            self.speed = 1.0;
            self.run = (0, 0);
            return (1.0, Some(err));
        }
        if err.abs() <= DEAD_BAND {
            self.speed += (1.0 - self.speed) * 0.1;
            self.run = (0, 0);
            return (self.speed, None);
        }
        let sign = if err > 0.0 { 1 } else { -1 };
        self.run = if self.run.0 == sign { (sign, self.run.1 + 1) } else { (sign, 1) };
        if self.run.1 >= SAME_SIGN {
            self.speed = (1.0 + GAIN * err).clamp(1.0 - MAX_DILATION, 1.0 + MAX_DILATION);
        }
        (self.speed, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: f64 = 1e6 / 60.0;

    #[test]
    fn rtt_filter_gains_and_outlier_clamp() {
        let mut f = RttFilter::default();
        f.sample(100_000.0);
        assert_eq!((f.rtt(), f.jitter()), (Some(100_000.0), 0.0));
        // With no deviation yet the ceiling is 1.2·srtt: a 300 ms sample counts as 120.
        f.sample(300_000.0);
        assert!((f.rtt().unwrap() - (100_000.0 + 20_000.0 / 12.0)).abs() < 1e-6);
        assert!((f.jitter() - 20_000.0 / 6.0 / 2.0).abs() < 1e-6);
    }

    /// A client synced on a 100 ms RTT without jitter, remote estimate at local time.
    fn synced() -> LightyearClient {
        let mut c = LightyearClient::default();
        c.rtt.sample(100_000.0);
        c.on_packet(1000.0 - 3.0, 1000.0, T); // remote now = local + 0 (R + 3 ticks)
        c
    }

    #[test]
    fn target_is_rtt_half_four_jitter_and_three_ticks_of_margin() {
        let c = synced();
        let t = c.target(1000.0, T).unwrap();
        assert!((t - (1000.0 + 3.0 + 3.0)).abs() < 1e-9, "{t}");
    }

    #[test]
    fn first_sync_snaps_then_dead_band_relaxes_and_three_same_signs_act() {
        let mut c = synced();
        let (_, snap) = c.sample(1000.0, 1000.0, T);
        assert!((snap.unwrap() - 6.0).abs() < 1e-9, "the first sync always snaps");
        // Two samples 3 ticks short: no action yet; the third acts at 1 + 0.01·3.
        assert_eq!(c.sample(1003.0, 1000.0, T), (1.0, None));
        assert_eq!(c.sample(1003.0, 1000.0, T), (1.0, None));
        let (s, _) = c.sample(1003.0, 1000.0, T);
        assert!((s - 1.03).abs() < 1e-12, "{s}");
        // A sign change restarts the count: the speed holds.
        let (s, _) = c.sample(1009.0, 1000.0, T);
        assert!((s - 1.03).abs() < 1e-12, "{s}");
        // Inside the band the speed relaxes 10% toward 1.
        let (s, _) = c.sample(1005.5, 1000.0, T);
        assert!((s - (1.0 + 0.03 * 0.9)).abs() < 1e-12, "{s}");
    }

    #[test]
    fn speed_is_bounded_at_ten_percent_and_beyond_ten_ticks_resyncs() {
        let mut c = synced();
        c.sample(1000.0, 1000.0, T);
        for _ in 0..3 {
            c.sample(996.0, 1000.0, T); // 10 ticks short: 1 + 0.1
        }
        assert!((c.sample(996.0, 1000.0, T).0 - 1.1).abs() < 1e-12);
        let (_, snap) = c.sample(995.5, 1000.0, T);
        assert!((snap.unwrap() - 10.5).abs() < 1e-9);
    }
}
