//! Session messages in steady state allocate nothing on either side: two P2P
//! `tw_session`s over 127.0.0.1 send each other a chat line every frame while the
//! match runs, counted with the counting allocator (every thread) after a warm-up.
//! The payload buffers are recycled on both sides (the host's send pool, the session
//! inbox's free list). One test in this binary, so nothing else is counted (hence a
//! binary of its own, not a module of `tests/c_abi/`).

use tickwire_testkit::counting_alloc;
#[path = "support/abi_engine.rs"]
mod abi_engine;

use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

/// The ticks of one frame, as `abi_engine::frame` runs them, without its event poll.
fn ticks(s: *mut tw_session, engine: &mut Engine, local: usize) {
    let mut n = 0u32;
    // SAFETY (whole function): live session, valid pointers.
    ok(unsafe { tw_session_ticks_due(s, &mut n) });
    for _ in 0..n {
        let st = stats(s);
        engine.confirmed_at_advance = st.confirmed_tick;
        let input = input_for(5, local, st.current_tick + st.input_delay, 3);
        ok(unsafe { tw_session_push_input(s, local as u32, input.as_ptr().cast(), input.len()) });
        let r = unsafe { tw_session_advance(s) };
        assert!(!r.is_err(), "advance failed: {r:?}: {}", last_error());
        engine.run_requests(s);
    }
}

#[test]
fn steady_state_messages_do_not_allocate() {
    let cfg = session_config(tw_session_mode::P2p, 2);
    let (a, b) = p2p_pair(&cfg, &cfg);
    // SAFETY: live sessions.
    unsafe {
        ok(tw_session_start(a.0));
        ok(tw_session_start(b.0));
    }
    let slots = stats(a.0).state_slots as usize;
    let (mut ea, mut eb) = (Engine::new(2, slots), Engine::new(2, slots));
    ea.record = false;
    eb.record = false;
    let mut events = Vec::with_capacity(4096);
    let mut buf = [0u8; TW_SESSION_MESSAGE_MAX_SIZE as usize];
    let line = [b'g'; 48];
    let mut received = 0u64;
    let mut run = |d: Duration, events: &mut Vec<tw_session_event>, received: &mut u64| {
        let end = Instant::now() + d;
        while Instant::now() < end {
            for (s, e, local, to) in [(a.0, &mut ea, 0usize, 1u32), (b.0, &mut eb, 1, 0)] {
                if stats(s).running == 1 {
                    // SAFETY: live session, valid bytes.
                    let r = unsafe { tw_session_send_message(s, to, line.as_ptr().cast(), line.len()) };
                    assert!(matches!(r, tw_result::Ok | tw_result::QueueFull), "{r:?}: {}", last_error());
                }
                ticks(s, e, local);
                // The engine loop's event poll: each message is read right after its
                // event (the next poll releases it).
                let mut ev = tw_session_event::zeroed();
                // SAFETY: live session, valid pointers.
                while unsafe { tw_session_poll_event(s, &mut ev) } == tw_result::Ok {
                    if ev.kind == tw_session_event_kind::Message as u32 {
                        let mut n = 0;
                        // SAFETY: live session, buffer valid for its length.
                        ok(unsafe { tw_session_read_message(s, buf.as_mut_ptr(), buf.len(), &mut n) });
                        assert_eq!(&buf[..n], &line[..]);
                    }
                    events.push(ev);
                }
            }
            *received += events.iter().filter(|e| e.kind == tw_session_event_kind::Message as u32).count() as u64;
            events.clear();
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    run(Duration::from_secs(3), &mut events, &mut received);
    assert_eq!(stats(a.0).running, 1);
    let (before, before_ticks, received_before) = (counting_alloc::allocations(), stats(a.0).current_tick, received);
    run(Duration::from_secs(3), &mut events, &mut received);
    let allocs = counting_alloc::allocations() - before;
    let ticks = stats(a.0).current_tick - before_ticks;
    let messages = received - received_before;
    println!("{allocs} allocations over {ticks} ticks and {messages} messages");
    assert!(messages > 200, "messages received: {messages}");
    // As in session_alloc: pools grow to the most buffers in flight at once, which
    // depends on scheduling (a busy machine raises that high-water mark a few times; a
    // loaded run saw 9 here). Both peers send a message every loop turn, over ten a
    // tick, far past any chat: allocating per message would show thousands.
    let bound = (messages / 100).max(u64::from(ticks) / 30);
    assert!(allocs <= bound, "{allocs} allocations over {ticks} ticks and {messages} messages (bound {bound})");
}
