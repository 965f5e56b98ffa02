//! Frame-advantage time sync between two peers.
//!
//! Each side measures its *local advantage* over the other once per tick:
//! `my_tick - estimated_remote_tick`, where the estimate is the tick the peer last
//! reported plus the time since (one-way latency = RTT / 2 included) in ticks.
//! Each side also sends its own measurement, so both numbers are known on both
//! sides. Averaged over a window they give the offset estimate
//! `(local - remote) / 2`, in which an error in the latency estimate cancels.
//!
//! The correction is gated: it acts only when *both* sides agree who is ahead
//! (local > 0 and remote < 0, or the reverse); otherwise noise or asymmetric
//! routes could make both sides slow down at once. The session turns the gated
//! estimate into a smooth time scale for its [`crate::tick::TickClock`].

/// Samples averaged.
pub(super) const WINDOW: usize = 32;

/// The advantage windows for one remote peer.
#[derive(Debug, Clone)]
pub(super) struct AdvantageTracker {
    local: [f32; WINDOW],
    remote: [f32; WINDOW],
    at: usize,
    filled: usize,
}

impl Default for AdvantageTracker {
    fn default() -> Self {
        AdvantageTracker { local: [0.0; WINDOW], remote: [0.0; WINDOW], at: 0, filled: 0 }
    }
}

impl AdvantageTracker {
    /// Records this tick's local advantage and the peer's latest report of its own.
    pub(super) fn record(&mut self, local: f32, remote: f32) {
        if !(local.is_finite() && remote.is_finite()) {
            return;
        }
        self.local[self.at] = local;
        self.remote[self.at] = remote;
        self.at = (self.at + 1) % WINDOW;
        self.filled = (self.filled + 1).min(WINDOW);
    }

    fn means(&self) -> Option<(f32, f32)> {
        if self.filled == 0 {
            return None;
        }
        let n = self.filled as f32;
        Some((self.local[..self.filled].iter().sum::<f32>() / n, self.remote[..self.filled].iter().sum::<f32>() / n))
    }

    /// How many ticks this side is ahead of the peer (negative: behind), ungated.
    pub(super) fn frames_ahead(&self) -> f32 {
        self.means().map_or(0.0, |(l, r)| (l - r) / 2.0)
    }

    /// Like [`AdvantageTracker::frames_ahead`], but 0 unless both sides agree on
    /// who is ahead. This is what the clock acts on.
    pub(super) fn agreed_ahead(&self) -> f32 {
        match self.means() {
            Some((l, r)) if (l > 0.0 && r < 0.0) || (l < 0.0 && r > 0.0) => (l - r) / 2.0,
            _ => 0.0,
        }
    }
}

/// How the gated advantage becomes a time scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeSyncConfig {
    /// Fractional rate change per tick of advantage (0.02: 1 tick ahead runs 2% slow).
    pub gain: f32,
    /// Advantages smaller than this (in ticks) are left alone. A dead band of width w
    /// lets peers settle up to w apart, and every tick apart is a tick of rollback for
    /// inputs from the peer behind: 0.5 left a peer of a 4-peer mesh at latency 0 half
    /// a tick behind the others for good (mean rollback 1.5 ticks where 1.1 is
    /// possible). The averaged estimate is steady well within 0.25.
    pub deadzone: f32,
}

impl Default for TimeSyncConfig {
    fn default() -> Self {
        TimeSyncConfig { gain: 0.02, deadzone: 0.25 }
    }
}

impl TimeSyncConfig {
    /// The time scale for an agreed advantage (the clock clamps it to its bounds).
    pub fn scale_for(&self, ahead: f32) -> f64 {
        if ahead.abs() <= self.deadzone {
            1.0
        } else {
            let excess = ahead - self.deadzone * ahead.signum();
            1.0 - (self.gain * excess) as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acts_only_when_both_agree() {
        let mut t = AdvantageTracker::default();
        for _ in 0..WINDOW {
            t.record(2.0, -2.0);
        }
        assert_eq!(t.agreed_ahead(), 2.0);
        for _ in 0..WINDOW {
            t.record(2.0, 1.0);
        }
        assert_eq!(t.agreed_ahead(), 0.0, "both claim to be ahead: latency asymmetry, not offset");
        assert_eq!(t.frames_ahead(), 0.5);
        let c = TimeSyncConfig::default();
        assert_eq!(c.scale_for(0.2), 1.0);
        assert_eq!(c.scale_for(-0.2), 1.0);
        assert!(c.scale_for(0.3) < 1.0 && c.scale_for(-0.3) > 1.0, "a third of a tick is corrected");
        assert!(c.scale_for(3.0) < 1.0 && c.scale_for(-3.0) > 1.0);
    }
}
