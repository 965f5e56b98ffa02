//! The system's monotonic clock: the one place the runtime reads the time. The
//! protocol crate only ever sees the microseconds this hands it.

use std::time::Instant;

use tickwire_proto::{Clock, Micros};

/// The process's monotonic clock, counted from the moment this value was created.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose zero is now.
    pub fn new() -> Self {
        SystemClock { origin: Instant::now() }
    }
    /// Converts an `Instant` to this clock's timeline (saturating at 0 for the past).
    pub fn micros_at(&self, t: Instant) -> Micros {
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
}
