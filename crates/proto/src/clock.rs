//! Monotonic time in microseconds.
//!
//! The core never reads a wall clock: every call takes `now` (µs) from a [`Clock`].
//! The runtime brings its own system clock (tickwire-runtime's `SystemClock`);
//! deterministic tests and the lab use [`ManualClock`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Microseconds on some monotonic timeline. Only differences are meaningful.
pub type Micros = u64;

/// A monotonic microsecond clock.
pub trait Clock {
    /// The current time in microseconds. Never decreases.
    fn now_us(&self) -> Micros;
}

/// A clock that moves only when told to. Clones share the same time, so a test can hold
/// one handle and give another to the code under test.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock that reads `start` until advanced.
    pub fn new(start: Micros) -> Self {
        ManualClock { now: Arc::new(AtomicU64::new(start)) }
    }
    /// Moves time forward by `us`.
    pub fn advance(&self, us: Micros) {
        self.now.fetch_add(us, Ordering::SeqCst);
    }
    /// Sets the time. Panics if that would move it backwards: a monotonic clock that
    /// goes back is a bug in the test, not something the core must survive.
    pub fn set(&self, t: Micros) {
        let prev = self.now.swap(t, Ordering::SeqCst);
        assert!(t >= prev, "ManualClock moved backwards: {prev} -> {t}");
    }
}

impl Clock for ManualClock {
    fn now_us(&self) -> Micros {
        self.now.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_clones_share_time() {
        let a = ManualClock::new(10);
        let b = a.clone();
        a.advance(5);
        assert_eq!(b.now_us(), 15);
        b.set(100);
        assert_eq!(a.now_us(), 100);
    }

    #[test]
    #[should_panic(expected = "backwards")]
    fn manual_clock_refuses_to_go_back() {
        let c = ManualClock::new(10);
        c.set(9);
    }
}
