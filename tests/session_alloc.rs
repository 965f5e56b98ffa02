//! A running P2P session allocates nothing per tick on the engine thread: two
//! `tw_session`s over 127.0.0.1 with simulated latency, jitter and loss (so there are
//! rollbacks and checksum reports), driven through the C ABI, counted with
//! the counting allocator (which sees every thread, network threads included) after a
//! warm-up. One test in this binary, so nothing else is counted (hence a binary of its
//! own, not a module of `tests/c_abi/`). Both sessions have
//! a log function at DEBUG: a log that is on costs nothing either (its records reuse
//! buffers made when it was set).

use tickwire_testkit::counting_alloc;
#[path = "support/abi_engine.rs"]
mod abi_engine;

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

static LOG_RECORDS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn count_log(_user: *mut c_void, _level: u32, _message: *const c_char, _len: usize) {
    LOG_RECORDS.fetch_add(1, Ordering::Relaxed);
}

#[test]
fn steady_state_session_ticks_do_not_allocate() {
    let cfg = session_config(tw_session_mode::P2p, 2);
    let a = create(&cfg);
    let b = create(&cfg);
    let (addr_a, addr_b) = (cstr(&local_address(a.0)), cstr(&local_address(b.0)));
    // Latency, jitter and 2% loss: rollbacks happen (inputs change every 3 ticks and
    // arrive a few ticks late), and the link simulators drop datagrams, whose buffers
    // must go back to their pool (they once did not: 14 allocations in this window).
    let sim = link(20_000, 4_000.0, 0.02);
    // SAFETY: live sessions, valid pointers.
    unsafe {
        for s in [a.0, b.0] {
            ok(tw_session_set_link_sim(s, tw_direction::Outbound as u32, &sim));
            ok(tw_session_set_log(s, Some(count_log), std::ptr::null_mut(), tw_log_level::Debug as u32));
        }
        ok(tw_session_add_local_player(a.0, 0));
        ok(tw_session_add_remote_player(a.0, 1, addr_b.as_ptr()));
        ok(tw_session_add_remote_player(b.0, 0, addr_a.as_ptr()));
        ok(tw_session_add_local_player(b.0, 1));
        ok(tw_session_start(a.0));
        ok(tw_session_start(b.0));
    }
    let slots = stats(a.0).state_slots as usize;
    let (mut ea, mut eb) = (Engine::new(2, slots), Engine::new(2, slots));
    ea.record = false;
    eb.record = false;
    let mut events = Vec::with_capacity(4096);
    let mut run = |d: Duration, events: &mut Vec<tw_session_event>| {
        let end = Instant::now() + d;
        while Instant::now() < end {
            frame(a.0, &mut ea, &[0], 5, 3, events);
            frame(b.0, &mut eb, &[1], 5, 3, events);
            events.clear();
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    run(Duration::from_secs(4), &mut events);
    let before_stats = stats(a.0);
    assert_eq!(before_stats.running, 1);
    let before = counting_alloc::allocations();
    run(Duration::from_secs(4), &mut events);
    let allocs = counting_alloc::allocations() - before;
    let after = stats(a.0);
    let ticks = after.current_tick - before_stats.current_tick;
    let rollbacks = after.rollbacks - before_stats.rollbacks;
    println!(
        "{allocs} allocations over {ticks} ticks ({rollbacks} rollbacks, {} checks)",
        after.checks_compared - before_stats.checks_compared
    );
    assert!(ticks > 180, "ticks ran: {ticks}");
    assert!(rollbacks > 20, "rollbacks happened: {rollbacks}");
    // As in runtime_alloc: the transport's pools grow to the largest number of buffers
    // in flight at once, which depends on thread scheduling, so a loaded machine may
    // raise that high-water mark once or twice. Allocating per tick would show
    // hundreds here.
    assert!(allocs <= u64::from(ticks) / 30, "{allocs} allocations over {ticks} ticks");
    // The log was on and heard the start (the note, connections, synchronization).
    assert!(LOG_RECORDS.load(Ordering::Relaxed) >= 4, "{} log records", LOG_RECORDS.load(Ordering::Relaxed));
}
