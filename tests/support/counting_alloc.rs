//! A global allocator that counts allocations, for the steady-state allocation tests.
//! A test binary installs it with
//! `#[global_allocator] static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;`
//! and reads [`allocations`] before and after the code under test.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // Const-initialised and without a destructor, so reading it inside the allocator
    // never allocates or registers anything.
    static THREAD_ALLOCS: Cell<u64> = const { Cell::new(0) };
}

/// Allocations and reallocations so far, on every thread. Use it when the code under
/// test runs on other threads too (the network thread); it also sees the test
/// harness's own threads, so count only after a warm-up long enough for libtest to
/// have set itself up.
#[allow(dead_code)]
pub fn allocations() -> u64 {
    ALLOCS.load(Ordering::Relaxed)
}

/// Allocations and reallocations so far on the calling thread only: for sans-IO code
/// that runs entirely on the test's thread, immune to the harness's threads.
#[allow(dead_code)]
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCS.with(|c| c.get())
}

fn count() {
    ALLOCS.fetch_add(1, Ordering::Relaxed);
    // try_with: a thread being torn down has no counter left; its allocations still
    // count in ALLOCS.
    let _ = THREAD_ALLOCS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: forwards every call to the system allocator unchanged; it only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(p, l, n) }
    }
}
