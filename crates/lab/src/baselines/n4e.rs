//! Baseline (b): Unity Netcode for Entities' prediction clock, as
//! /work/shared/reference/ticksync.md section 1.3 describes it (lines 47-51 and 60):
//!
//! - line 47: each server tick computes `age = serverTick − mostRecentFullCommandTick`
//!   and keeps `ServerCommandAge = (7·old + age)/8` (Q24.8 there, ticks here), sent on
//!   every snapshot ([`ServerAge`]);
//! - line 48: `commandAge = ServerCommandAge + TargetCommandSlack`, slack 2 ticks,
//!   target 0;
//! - line 49: a 64-slot ring of the time-scale corrections applied over the last RTT is
//!   subtracted from the reported age (dead-time compensation);
//! - line 50: `scale = clamp(1 + 0.1·commandAge, 0.9, 1.1)`;
//! - line 51: at an error of 10 ticks or more the client re-derives its tick as
//!   `latestSnapshotEstimate + slack + ceil(RTT·rate)` and snaps to it, but never
//!   backwards (N4E logs "Large serverTick prediction error" instead);
//! - line 60: 4 commands per packet (2 copies at 2 ticks per packet, 4 at every tick).
//!
//! The RTT that sizes the compensation window is N4E's `EstimatedRTT`, a TCP-style
//! EWMA with α = 1/8 (line 66).

/// Ticks of slack the loop holds the command age at (line 48).
pub const SLACK_TICKS: f64 = 2.0;
/// `CommandAgeCorrectionFraction` (line 50).
pub const GAIN: f64 = 0.1;
/// The time-scale range (line 50).
pub const MIN_SCALE: f64 = 0.9;
pub const MAX_SCALE: f64 = 1.1;
/// Errors of this many ticks or more are snapped (line 51).
pub const SNAP_TICKS: f64 = 10.0;
/// Slots of the dead-time ring (line 49), one per client tick.
pub const RING: usize = 64;
/// Commands per packet: slack + additional = 4 (line 60), the newest 4 ticks' inputs
/// in every packet.
pub const COMMANDS_PER_PACKET: u32 = 4;

/// The server's side: the command age, averaged per server tick (line 47).
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerAge {
    ema: Option<f64>,
}

impl ServerAge {
    /// One server tick: `newest` is the newest command tick received so far.
    pub fn tick(&mut self, server_tick: u32, newest: Option<u32>) {
        let Some(newest) = newest else { return };
        let age = server_tick as f64 - newest as f64;
        let e = self.ema.get_or_insert(age);
        *e = (7.0 * *e + age) / 8.0;
    }

    /// The `ServerCommandAge` a snapshot carries (ticks; negative: early).
    pub fn report(&self) -> Option<f64> {
        self.ema
    }
}

/// The client's side: the reported age, the dead-time ring and the RTT estimate.
#[derive(Debug, Clone)]
pub struct N4eClient {
    reported: Option<f64>,
    /// Ticks gained (positive) or given up by dilation and snaps, per client tick.
    ring: [f64; RING],
    /// The ring slot of the next client tick.
    head: usize,
    srtt_us: Option<f64>,
    /// The newest snapshot's server tick and the local time (ticks) it arrived.
    snapshot: Option<(f64, f64)>,
}

impl Default for N4eClient {
    fn default() -> Self {
        N4eClient { reported: None, ring: [0.0; RING], head: 0, srtt_us: None, snapshot: None }
    }
}

impl N4eClient {
    /// A snapshot of server tick `server_tick` arrived at local time `local_ticks`
    /// (µs / tick) with the server's command age.
    pub fn on_snapshot(&mut self, server_tick: f64, local_ticks: f64, age: Option<f64>) {
        if age.is_some() {
            self.reported = age;
        }
        if self.snapshot.is_none_or(|s| server_tick > s.0) {
            self.snapshot = Some((server_tick, local_ticks));
        }
    }

    /// An RTT sample (µs): `EstimatedRTT` is an EWMA with α = 1/8.
    pub fn on_rtt(&mut self, rtt_us: f64) {
        let s = self.srtt_us.get_or_insert(rtt_us);
        *s += (rtt_us - *s) / 8.0;
    }

    /// The client ran a tick at time scale `scale`: it gained `scale − 1` of a tick on
    /// real time, which the server's reports show one RTT later.
    pub fn on_tick(&mut self, scale: f64) {
        self.ring[self.head] = scale - 1.0;
        self.head = (self.head + 1) % RING;
    }

    /// The ticks gained over the last RTT (at most the ring's 64 ticks).
    fn in_flight(&self, tick_us: f64) -> f64 {
        let n = self.srtt_us.map_or(0, |r| ((r / tick_us).ceil() as usize).min(RING));
        (1..=n).map(|k| self.ring[(self.head + RING - k) % RING]).sum()
    }

    /// The error the loop acts on: the reported age plus the slack, less what the
    /// client already gained and the server has not seen yet (positive: too little
    /// lead).
    pub fn command_age(&self, tick_us: f64) -> Option<f64> {
        Some(self.reported? + SLACK_TICKS - self.in_flight(tick_us))
    }

    /// The time scale and, for a large error, a snap (ticks, positive = ahead) to the
    /// re-derived tick, when that is ahead of `client_tick`. A snap enters the ring as
    /// ticks gained, so the reports still in flight do not undo it.
    pub fn steer(&mut self, client_tick: f64, local_ticks: f64, tick_us: f64) -> (f64, Option<f64>) {
        let Some(age) = self.command_age(tick_us) else { return (1.0, None) };
        let scale = (1.0 + GAIN * age).clamp(MIN_SCALE, MAX_SCALE);
        if age.abs() < SNAP_TICKS {
            return (scale, None);
        }
        let (Some((tick, at)), Some(rtt)) = (self.snapshot, self.srtt_us) else { return (scale, None) };
        let target = tick + (local_ticks - at) + SLACK_TICKS + (rtt / tick_us).ceil();
        if target <= client_tick {
            return (scale, None);
        }
        let jump = target - client_tick;
        let last = (self.head + RING - 1) % RING;
        self.ring[last] += jump;
        (1.0, Some(jump))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: f64 = 1e6 / 60.0;

    #[test]
    fn server_age_is_an_ema_of_seven_eighths_per_tick() {
        let mut a = ServerAge::default();
        a.tick(100, None);
        assert_eq!(a.report(), None, "no command yet, no age");
        a.tick(100, Some(104)); // 4 ticks early
        assert_eq!(a.report(), Some(-4.0));
        a.tick(101, Some(104)); // 3 early: (7·(−4) − 3)/8
        assert!((a.report().unwrap() + 31.0 / 8.0).abs() < 1e-12);
    }

    #[test]
    fn slack_two_is_the_target_and_the_gain_is_a_tenth_within_ten_percent() {
        let mut c = N4eClient::default();
        c.on_snapshot(0.0, 0.0, Some(-2.0));
        assert_eq!(c.steer(0.0, 0.0, T), (1.0, None), "two ticks early: on target");
        c.on_snapshot(0.0, 0.0, Some(-1.5));
        let (s, _) = c.steer(0.0, 0.0, T);
        assert!((s - 1.05).abs() < 1e-12, "half a tick short: 5% fast, {s}");
        c.on_snapshot(0.0, 0.0, Some(5.0));
        assert_eq!(c.steer(0.0, 0.0, T), (MAX_SCALE, None));
        c.on_snapshot(0.0, 0.0, Some(-9.0));
        assert_eq!(c.steer(0.0, 0.0, T), (MIN_SCALE, None), "slows down to 0.9, not 0.95");
    }

    #[test]
    fn the_dead_time_ring_subtracts_what_the_server_has_not_seen() {
        let mut c = N4eClient::default();
        c.on_rtt(100_000.0); // 6 ticks in flight
        c.on_snapshot(0.0, 0.0, Some(-1.0));
        // Five ticks at 1.1 gained half a tick the report does not show yet.
        for _ in 0..5 {
            c.on_tick(1.1);
        }
        let (s, _) = c.steer(0.0, 0.0, T);
        assert!((s - 1.05).abs() < 1e-9, "compensated error 0.5 tick: {s}");
        // Older than the RTT, gains are in the report already.
        for _ in 0..6 {
            c.on_tick(1.0);
        }
        let (s, _) = c.steer(0.0, 0.0, T);
        assert!((s - 1.1).abs() < 1e-9, "{s}");
    }

    #[test]
    fn ten_ticks_off_snaps_forward_to_the_re_derived_tick_never_back() {
        let mut c = N4eClient::default();
        c.on_rtt(100_000.0); // 6 ticks
        for _ in 0..8 {
            c.on_tick(1.0);
        }
        // Snapshot of tick 500 at local tick 1000, now local 1003: the server is at
        // 503, and the client should sample 503 + 2 + 6.
        c.on_snapshot(500.0, 1000.0, Some(8.0)); // 10 ticks short
        assert_eq!(c.steer(500.0, 1003.0, T), (1.0, Some(11.0)));
        // The same stale report right after: the snap is in flight, no second snap.
        assert_eq!(c.steer(511.0, 1003.0, T).1, None);
        // Far ahead: no snap back, the slowest scale instead.
        let mut c = N4eClient::default();
        c.on_rtt(100_000.0);
        c.on_snapshot(500.0, 1000.0, Some(-20.0));
        assert_eq!(c.steer(530.0, 1000.0, T), (MIN_SCALE, None));
    }
}
