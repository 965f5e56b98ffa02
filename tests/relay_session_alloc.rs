//! A running relay match allocates nothing per tick: a RELAY_SERVER `tw_session` and two
//! RELAY_CLIENT sessions over 127.0.0.1 through the link simulator (latency, jitter and
//! a little loss, so there are re-predictions, redundant copies and lost datagrams),
//! driven through the C ABI and counted with the counting allocator after a warm-up.
//!
//! The server's engine loop runs on a thread of its own whose allocations are counted
//! apart: the clients' engine loop and every network thread (the server's included)
//! are held to zero allocations, and so is the server's engine loop, in one window.
//!
//! The pools (the transport's buffers, the link simulator's, the hosts' send buffers,
//! the client core's steps and inputs, the interpolation window) are made at creation,
//! sized from the config, so neither filling them nor a scheduling hitch on a loaded
//! machine allocates: one window after a short warm-up must count exactly zero.
//!
//! The counting allocator sees every thread of the process: one test in this binary, so
//! nothing else is counted (hence a binary of its own, not a module of `tests/c_abi/`).

use tickwire_testkit::counting_alloc;
#[path = "support/abi_engine.rs"]
mod abi_engine;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

/// A session handle handed to the server's thread (a session may move between threads
/// between calls; only that thread uses it until it is joined).
struct Handle(*mut tw_session);
// SAFETY: see above.
unsafe impl Send for Handle {}

/// What one measured window saw.
#[derive(Debug)]
struct Window {
    others: u64,
    server: u64,
    server_ticks: u32,
    client_ticks: u32,
    rollbacks: u64,
    /// Advances skipped at the prediction cap (`TW_RESULT_WINDOW_FULL`).
    window_full: u64,
}

/// Runs the match: a warm-up of `warm_up`, then one measured window of 4 s.
fn measure(warm_up: Duration) -> Window {
    let mut cfg = session_config(tw_session_mode::RelayServer, 4);
    cfg.max_prediction = 16;
    let server = create(&cfg);
    let addr = cstr(&local_address(server.0));
    let sim = link(20_000, 4_000.0, 0.02);
    let mut slots = 0;
    // SAFETY: live session, valid pointers.
    unsafe {
        ok(tw_session_state_slots(server.0, &mut slots));
        ok(tw_session_set_link_sim(server.0, tw_direction::Outbound as u32, &sim));
        ok(tw_session_start(server.0));
    }
    let mut es = Engine::new(4, slots as usize);
    es.record = false;
    let mut clients = Vec::new();
    for _ in 0..2 {
        let mut c = session_config(tw_session_mode::RelayClient, 4);
        c.max_prediction = 16;
        let s = create(&c);
        // SAFETY: live session, valid pointers.
        unsafe {
            ok(tw_session_state_slots(s.0, &mut slots));
            ok(tw_session_set_link_sim(s.0, tw_direction::Outbound as u32, &sim));
            ok(tw_session_set_server(s.0, addr.as_ptr()));
            ok(tw_session_start(s.0));
        }
        let mut e = Engine::new(4, slots as usize);
        e.record = false;
        clients.push((s, e, 0u32));
    }
    let first = clients[0].0.0;

    // The server's engine loop, on its own thread, counted apart.
    let stop = Arc::new(AtomicBool::new(false));
    let server_loop = {
        let (stop, h) = (stop.clone(), Handle(server.0));
        std::thread::spawn(move || {
            counting_alloc::set_aside_this_thread();
            let h = h;
            let mut events = Vec::with_capacity(4096);
            while !stop.load(Ordering::Relaxed) {
                frame(h.0, &mut es, &[], 5, 3, &mut events);
                events.clear();
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let mut events = Vec::with_capacity(4096);
    let mut window_full = 0u64;
    let mut run = |d: Duration, events: &mut Vec<tw_session_event>| {
        let end = Instant::now() + d;
        while Instant::now() < end {
            for (i, (s, e, pushed)) in clients.iter_mut().enumerate() {
                let mut n = 0u32;
                // SAFETY: live session, valid pointers.
                unsafe {
                    ok(tw_session_ticks_due(s.0, &mut n));
                    for _ in 0..n {
                        // Inputs change every 3 ticks: remote predictions go wrong.
                        let input = input_for(5, i, *pushed, 3);
                        *pushed += 1;
                        ok(tw_session_push_input(s.0, TW_LOCAL_PLAYER, input.as_ptr().cast(), input.len()));
                        let r = tw_session_advance(s.0);
                        // At the prediction cap a client skips the tick: not an error.
                        // It happens when the server's thread is starved (the suite runs
                        // test binaries side by side on 2 cores); the test bounds how often.
                        window_full += u64::from(r == tw_result::WindowFull);
                        assert!(
                            matches!(r, tw_result::Ok | tw_result::NotSynchronized | tw_result::WindowFull),
                            "{r:?}: {}",
                            last_error()
                        );
                        e.run_requests(s.0);
                    }
                    let mut ev = tw_session_event::zeroed();
                    while tw_session_poll_event(s.0, &mut ev) == tw_result::Ok {
                        events.push(ev);
                    }
                }
            }
            events.clear();
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    run(warm_up, &mut events);
    assert_eq!(stats(first).running, 1, "the client joined and caught up during the warm-up");
    let before = (stats(first), counting_alloc::allocations(), counting_alloc::set_aside_allocations());
    run(Duration::from_secs(4), &mut events);
    let after = stats(first);
    let (others, server_allocs) =
        (counting_alloc::allocations() - before.1, counting_alloc::set_aside_allocations() - before.2);
    stop.store(true, Ordering::Relaxed);
    server_loop.join().unwrap();
    Window {
        others,
        server: server_allocs,
        server_ticks: stats(server.0).current_tick,
        client_ticks: after.current_tick - before.0.current_tick,
        rollbacks: after.rollbacks - before.0.rollbacks,
        window_full,
    }
}

/// One window of a running match measures both: the clients' engine thread with
/// every network thread, and the server's engine thread (counted apart).
#[test]
fn a_running_relay_match_does_not_allocate_per_tick() {
    let w = measure(Duration::from_secs(4));
    println!(
        "clients + network threads: {} allocations over {} client ticks ({} re-predictions); server engine thread: {} over the same window ({} server ticks in all)",
        w.others, w.client_ticks, w.rollbacks, w.server, w.server_ticks
    );
    assert!(w.client_ticks > 200, "ticks ran: {}", w.client_ticks);
    assert!(w.window_full * 10 < u64::from(w.client_ticks), "the clients mostly ran, not waited: {w:?}");
    assert!(w.rollbacks > 20, "predictions were wrong and redone: {}", w.rollbacks);
    assert_eq!(w.others, 0, "clients and network threads: {w:?}");
    // Nothing on the server's engine thread grows after creation.
    assert_eq!(w.server, 0, "server engine thread: {w:?}");
}
