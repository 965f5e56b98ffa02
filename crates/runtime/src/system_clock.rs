//! The system's clocks: the one place the runtime reads the time. The protocol crate
//! only ever sees the microseconds (and the Unix seconds) this hands it.

use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, SystemTimeError, UNIX_EPOCH};

use tickwire_proto::{Clock, Micros};

/// The process's monotonic clock, counted from the first one made in the process.
///
/// Every host of the process reads the same timeline, so that what falls on a grid of
/// it (the steady engines' stall checks, `engine_polls.rs`) falls on the same instants
/// for all of them, and the network thread wakes once for many hosts. With an origin
/// per host (the clock's creation), the grids of 512 client hosts in one process lay
/// at random offsets from one another: the thread woke 55 times a frame instead of a
/// few (docs/benchmarks.md, issue 35).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SystemClock {
    origin: Instant,
}

/// The zero of every [`SystemClock`] in the process.
static ORIGIN: OnceLock<Instant> = OnceLock::new();

impl SystemClock {
    /// The process's clock (its zero is when the first was made).
    pub(crate) fn new() -> Self {
        SystemClock { origin: *ORIGIN.get_or_init(Instant::now) }
    }
    /// Converts an `Instant` to this clock's timeline (saturating at 0 for the past).
    pub(crate) fn micros_at(&self, t: Instant) -> Micros {
        t.saturating_duration_since(self.origin).as_micros() as Micros
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now_us(&self) -> Micros {
        self.micros_at(Instant::now())
    }
}

/// The wall clock: the Unix time in whole seconds, read now (connect tokens expire in
/// it). Read afresh each time, so a clock stepped by NTP or a resume is followed.
pub(crate) fn unix_secs() -> Option<u64> {
    unix_secs_of(SystemTime::now().duration_since(UNIX_EPOCH))
}

/// A reading of the wall clock, or None where it is unknown: before 1970 (the clock
/// cannot be read as Unix time), or in 1970's first second (a clock reset to zero, not
/// a time at which any token was minted). A token server refuses every token while it
/// is unknown rather than take them all for unexpired.
fn unix_secs_of(since_epoch: Result<Duration, SystemTimeError>) -> Option<u64> {
    since_epoch.ok().map(|d| d.as_secs()).filter(|&s| s > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_is_monotonic() {
        let c = SystemClock::new();
        let a = c.now_us();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = c.now_us();
        assert!(b >= a + 1_000, "{a} {b}");
    }

    #[test]
    fn clocks_made_apart_read_one_timeline() {
        let a = SystemClock::new();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = SystemClock::new();
        let (ta, tb) = (a.now_us(), b.now_us());
        // Read one after the other: equal but for the microseconds between the reads
        // (a clock made later with its own zero would be 5 ms behind).
        assert!(tb >= ta && tb - ta < 1_000, "{ta} {tb}");
        let t = Instant::now();
        assert_eq!(a.micros_at(t), b.micros_at(t));
    }

    #[test]
    fn a_wall_clock_before_1970_or_at_zero_is_unknown() {
        // The error `duration_since` gives for a time before the epoch.
        let before = UNIX_EPOCH.duration_since(UNIX_EPOCH + Duration::from_secs(5));
        assert_eq!(unix_secs_of(before), None);
        assert_eq!(unix_secs_of(Ok(Duration::from_millis(999))), None);
        assert_eq!(unix_secs_of(Ok(Duration::from_secs(1_700_000_000))), Some(1_700_000_000));
        // This machine's clock is past 2023 (when this was written).
        assert!(unix_secs().is_some_and(|s| s > 1_700_000_000));
    }
}
