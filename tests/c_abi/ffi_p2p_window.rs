//! P2P `max_prediction` through the C ABI (issue 13, item 7): every value the header
//! documents, 0..=64, creates a session, and a pair of peers over loopback UDP runs
//! with it: one peer runs ahead until the window is full (exactly `max_prediction`
//! ticks), the other catches up, the first rolls back over the whole window, and both
//! agree on every confirmed tick. 65 is refused, naming `max_prediction`.

use crate::support::abi_engine;

use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

const SEED: u64 = 23;

fn p2p_config(max_prediction: u32) -> tw_session_config {
    let mut cfg = session_config(tw_session_mode::P2p, 2);
    cfg.max_prediction = max_prediction;
    cfg
}

/// Pumps the session's network (the tick count is not used: the test decides when
/// each peer advances).
fn pump(s: *mut tw_session) {
    let mut n = 0u32;
    // SAFETY: live session, writable out.
    ok(unsafe { tw_session_ticks_due(s, &mut n) });
}

/// Gives `player`'s input for the session's next tick and advances once.
fn step(s: *mut tw_session, e: &mut Engine, player: u32) -> tw_result {
    let st = stats(s);
    let input = input_for(SEED, player as usize, st.current_tick + st.input_delay, 1);
    // SAFETY: live session, valid input.
    ok(unsafe { tw_session_push_input(s, player, input.as_ptr().cast(), input.len()) });
    // SAFETY: live session.
    let r = unsafe { tw_session_advance(s) };
    assert!(!r.is_err(), "advance: {r:?}: {}", last_error());
    e.run_requests(s);
    r
}

fn drain_events(s: *mut tw_session) -> Vec<u32> {
    let mut kinds = Vec::new();
    let mut ev = tw_session_event::zeroed();
    // SAFETY: live session, writable event.
    while unsafe { tw_session_poll_event(s, &mut ev) } == tw_result::Ok {
        kinds.push(ev.kind);
    }
    kinds
}

/// Runs a pair with `max_prediction` = `mp` (and `input_delay`, `sparse_saving`)
/// through a full window and back.
fn run_pair(mp: u32, input_delay: u32, sparse_saving: bool) {
    let mut cfg = p2p_config(mp);
    cfg.input_delay = input_delay;
    cfg.sparse_saving = u32::from(sparse_saving);
    let (a, b) = p2p_pair(&cfg, &cfg);
    let mut slots = 0u32;
    // SAFETY: live session, writable out.
    ok(unsafe { tw_session_state_slots(a.0, &mut slots) });
    assert!(slots > mp, "max_prediction {mp}: {slots} state slots");
    // SAFETY: live sessions.
    unsafe {
        ok(tw_session_start(a.0));
        ok(tw_session_start(b.0));
    }
    let (mut ea, mut eb) = (Engine::new(2, slots as usize), Engine::new(2, slots as usize));
    // The state after every ADVANCE (a resimulated tick overwrites its predicted one):
    // lockstep never saves.
    ea.record_after_advance = true;
    eb.record_after_advance = true;
    let end = Instant::now() + Duration::from_secs(10);
    let synchronized = tw_session_event_kind::Synchronized as u32;
    let (mut sync_a, mut sync_b) = (false, false);
    while !(sync_a && sync_b) {
        assert!(Instant::now() < end, "max_prediction {mp}: the peers never synchronized");
        pump(a.0);
        pump(b.0);
        sync_a |= drain_events(a.0).contains(&synchronized);
        sync_b |= drain_events(b.0).contains(&synchronized);
        std::thread::sleep(Duration::from_millis(1));
    }

    // a runs ahead alone: exactly `mp` ticks past b's inputs, then the window is full.
    let mut ahead = 0;
    loop {
        pump(a.0);
        match step(a.0, &mut ea, 0) {
            tw_result::Ok => ahead += 1,
            tw_result::WindowFull => break,
            r => panic!("max_prediction {mp}: a's advance {ahead}: {r:?}"),
        }
        assert!(ahead <= mp, "max_prediction {mp}: a ran {ahead} ticks ahead");
    }
    assert_eq!(ahead, mp, "max_prediction {mp}: ticks a predicted before the window was full");

    // Then both run to tick `target`: a rolls back over its whole window as b's inputs
    // (new every tick) arrive.
    let target = mp + 20;
    while stats(a.0).current_tick < target || stats(b.0).current_tick < target {
        assert!(
            Instant::now() < end,
            "max_prediction {mp}: stuck at a {} b {}",
            stats(a.0).current_tick,
            stats(b.0).current_tick
        );
        pump(b.0);
        if stats(b.0).current_tick < target {
            step(b.0, &mut eb, 1);
        }
        pump(a.0);
        if stats(a.0).current_tick < target {
            step(a.0, &mut ea, 0);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // Until every tick up to the target is confirmed on both, then compare.
    while stats(a.0).confirmed_tick < target || stats(b.0).confirmed_tick < target {
        assert!(Instant::now() < end, "max_prediction {mp}: ticks never confirmed");
        for (s, e, p) in [(a.0, &mut ea, 0), (b.0, &mut eb, 1)] {
            pump(s);
            // Keep advancing a little past the target so the last inputs go out.
            if stats(s).current_tick < target + 4 {
                step(s, e, p);
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // One more advance each: it runs the rollback onto the inputs that just arrived
    // (with the window full it still does, and only that).
    step(a.0, &mut ea, 0);
    step(b.0, &mut eb, 1);
    for t in 1..=target as usize {
        let (ca, cb) = (ea.checksums.get(t).copied().flatten(), eb.checksums.get(t).copied().flatten());
        assert!(ca.is_some(), "max_prediction {mp}: no checksum of tick {t}");
        assert_eq!(ca, cb, "max_prediction {mp}: tick {t} differs");
    }
    let sa = stats(a.0);
    // With an input delay the other peer's inputs arrive before they are needed.
    if mp > 0 && input_delay == 0 {
        assert!(sa.max_rollback >= mp, "max_prediction {mp}: a rolled back at most {} ticks", sa.max_rollback);
    }
    assert_eq!(sa.desyncs + stats(b.0).desyncs, 0, "max_prediction {mp}");
}

#[test]
fn every_documented_max_prediction_runs_a_p2p_pair() {
    for mp in 0..=64 {
        run_pair(mp, 0, false);
    }
}

#[test]
fn the_widest_windows_run_with_the_longest_input_delay_and_sparse_saving() {
    for mp in [32, 33, 48, 63, 64] {
        run_pair(mp, 32, false);
        run_pair(mp, 0, true);
        run_pair(mp, 32, true);
    }
}

#[test]
fn max_prediction_65_is_refused_by_name() {
    let mut s = std::ptr::null_mut();
    // SAFETY: valid config and out pointer.
    let r = unsafe { tw_session_create(&p2p_config(65), &mut s) };
    assert_eq!(r, tw_result::InvalidArgument);
    assert!(s.is_null(), "out_session written on failure");
    let msg = last_error();
    assert!(msg.starts_with("tw_session_create: ") && msg.contains("max_prediction"), "{msg}");
}
