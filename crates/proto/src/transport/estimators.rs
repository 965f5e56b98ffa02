//! Round-trip time and rate estimation for one connection.

use crate::clock::Micros;

/// Resend timeout before any RTT sample exists.
pub(super) const INITIAL_RTO_US: f64 = 500_000.0;
pub(super) const MIN_RTO_US: f64 = 10_000.0;
pub(super) const MAX_RTO_US: f64 = 3_000_000.0;

/// Smoothed RTT, variation and jitter from RTT samples (RFC 6298 gains).
#[derive(Debug, Default, Clone)]
pub(super) struct RttEstimator {
    samples: u64,
    pub srtt: f64,
    pub rttvar: f64,
    pub min: f64,
    pub jitter: f64,
    last: f64,
    /// The peer's typical ack delay (already removed from samples, but it still delays
    /// acks, so it belongs in the resend timeout).
    pub peer_ack_delay: f64,
}

impl RttEstimator {
    pub(super) fn sample(&mut self, rtt_us: f64) {
        let r = rtt_us.max(0.0);
        if self.samples == 0 {
            self.srtt = r;
            self.rttvar = r / 2.0;
            self.min = r;
            self.last = r;
        } else {
            self.rttvar += ((self.srtt - r).abs() - self.rttvar) / 4.0;
            self.srtt += (r - self.srtt) / 8.0;
            self.min = self.min.min(r);
            self.jitter += ((r - self.last).abs() - self.jitter) / 16.0;
            self.last = r;
        }
        self.samples += 1;
    }

    pub(super) fn observe_ack_delay(&mut self, delay_us: f64) {
        self.peer_ack_delay += (delay_us - self.peer_ack_delay) / 8.0;
    }

    /// Resend timeout: srtt + 4 rttvar (at least 2 ms) + the peer's ack delay.
    pub(super) fn rto(&self) -> f64 {
        if self.samples == 0 {
            return INITIAL_RTO_US;
        }
        (self.srtt + (4.0 * self.rttvar).max(2_000.0) + self.peer_ack_delay).clamp(MIN_RTO_US, MAX_RTO_US)
    }
}

/// Bytes and packets per second, over windows of at least one second.
#[derive(Debug, Default, Clone)]
pub(super) struct RateMeter {
    window_start: Micros,
    bytes: u64,
    packets: u64,
    pub bytes_per_sec: f64,
    pub packets_per_sec: f64,
}

impl RateMeter {
    pub(super) fn new(now: Micros) -> Self {
        RateMeter { window_start: now, ..Default::default() }
    }
    pub(super) fn record(&mut self, now: Micros, bytes: usize) {
        self.roll(now);
        self.bytes += bytes as u64;
        self.packets += 1;
    }
    /// Closes the window once a second has passed, so idle links decay to zero.
    pub(super) fn roll(&mut self, now: Micros) {
        let elapsed = now.saturating_sub(self.window_start);
        if elapsed >= 1_000_000 {
            let secs = elapsed as f64 / 1e6;
            self.bytes_per_sec = self.bytes as f64 / secs;
            self.packets_per_sec = self.packets as f64 / secs;
            self.bytes = 0;
            self.packets = 0;
            self.window_start = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtt_converges_and_tracks_min_and_jitter() {
        let mut e = RttEstimator::default();
        assert_eq!(e.rto(), INITIAL_RTO_US);
        for i in 0..200 {
            e.sample(if i % 2 == 0 { 90_000.0 } else { 110_000.0 });
        }
        assert!((e.srtt - 100_000.0).abs() < 3_000.0, "{}", e.srtt);
        assert_eq!(e.min, 90_000.0);
        assert!((e.jitter - 20_000.0).abs() < 1_000.0, "{}", e.jitter);
        assert!(e.rto() > e.srtt && e.rto() < 200_000.0, "{}", e.rto());
    }

    #[test]
    fn rate_meter_reports_per_second() {
        let mut m = RateMeter::new(0);
        for i in 0..100 {
            m.record(i * 10_000, 100);
        }
        m.roll(1_000_000);
        assert!((m.bytes_per_sec - 10_000.0).abs() < 1.0);
        assert!((m.packets_per_sec - 100.0).abs() < 0.01);
        m.roll(2_000_000);
        assert_eq!(m.bytes_per_sec, 0.0);
    }
}
