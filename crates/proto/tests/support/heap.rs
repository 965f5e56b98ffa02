//! Heap figures for the hostile-peer tests: each test measures the peak heap growth of
//! its own run (the tests of a binary take turns: the counter is process-wide), prints
//! it, and asserts a bound.

use std::sync::{Mutex, MutexGuard};

use tickwire_testkit::counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Holds this test's turn and its heap baseline.
pub struct HeapWatch {
    _turn: MutexGuard<'static, ()>,
    baseline: u64,
}

impl HeapWatch {
    pub fn start() -> HeapWatch {
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let baseline = counting_alloc::live_bytes();
        counting_alloc::reset_peak();
        HeapWatch { _turn: turn, baseline }
    }

    /// The peak growth since `start`, printed after `what` and asserted below `limit`.
    pub fn report(&self, what: &str, limit: u64) -> u64 {
        let peak = counting_alloc::peak_bytes().saturating_sub(self.baseline);
        eprintln!("{what}: heap peak +{:.2} MB", peak as f64 / 1e6);
        assert!(peak < limit, "{what}: the heap grew by {peak} bytes, over {limit}");
        peak
    }
}
