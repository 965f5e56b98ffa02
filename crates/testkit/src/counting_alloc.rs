//! A global allocator that counts allocations, for the steady-state allocation tests.
//! A test binary installs it with
//! `#[global_allocator] static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;`
//! and reads [`allocations`] before and after the code under test.
//!
//! A thread can be set aside with [`set_aside_this_thread`]: its allocations are
//! counted apart ([`set_aside_allocations`]), so that a test can hold one part of a
//! program to a bound the other part does not meet yet.
//!
//! It also tracks the bytes allocated and not yet freed, on every thread
//! ([`live_bytes`]), and their highest value ([`peak_bytes`], restarted from the
//! current value with [`reset_peak`]): what the hostile-peer tests report as peak
//! memory. Requested sizes are counted, not the allocator's rounding or its own
//! bookkeeping.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static SET_ASIDE: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // Const-initialised and without a destructor, so reading them inside the
    // allocator never allocates or registers anything.
    static THREAD_ALLOCS: Cell<u64> = const { Cell::new(0) };
    static ASIDE: Cell<bool> = const { Cell::new(false) };
}

/// Allocations and reallocations so far, on every thread not set aside. Use it when
/// the code under test runs on other threads too (the network thread); it also sees
/// the test harness's own threads, so count only after a warm-up long enough for
/// libtest to have set itself up.
pub fn allocations() -> u64 {
    ALLOCS.load(Ordering::Relaxed)
}

/// Allocations and reallocations so far on the calling thread only: for sans-IO code
/// that runs entirely on the test's thread, immune to the harness's threads.
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCS.with(|c| c.get())
}

/// Allocations and reallocations so far on the threads set aside.
pub fn set_aside_allocations() -> u64 {
    SET_ASIDE.load(Ordering::Relaxed)
}

/// Counts this thread's allocations apart from now on.
pub fn set_aside_this_thread() {
    ASIDE.with(|a| a.set(true));
}

/// Bytes allocated and not yet freed, on every thread.
pub fn live_bytes() -> u64 {
    LIVE.load(Ordering::Relaxed)
}

/// The highest [`live_bytes`] since the start or the last [`reset_peak`].
pub fn peak_bytes() -> u64 {
    PEAK.load(Ordering::Relaxed).max(live_bytes())
}

/// Restarts [`peak_bytes`] from the current [`live_bytes`].
pub fn reset_peak() {
    PEAK.store(live_bytes(), Ordering::Relaxed);
}

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes as u64, Ordering::Relaxed) + bytes as u64;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    LIVE.fetch_sub(bytes as u64, Ordering::Relaxed);
}

fn count() {
    let aside = ASIDE.try_with(Cell::get).unwrap_or(false);
    if aside { &SET_ASIDE } else { &ALLOCS }.fetch_add(1, Ordering::Relaxed);
    // try_with: a thread being torn down has no counter left; its allocations still
    // count in the totals above.
    let _ = THREAD_ALLOCS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: forwards every call to the system allocator unchanged; it only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as our caller's.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        shrank(l.size());
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as our caller's.
        let q = unsafe { System.realloc(p, l, n) };
        if !q.is_null() {
            // The old block is gone, the new one live (no moment with both counted).
            shrank(l.size());
            grew(n);
        }
        q
    }
}
