//! Issue 18, missing 10: the catch-up cap of `tw_session_ticks_due`. After a hitch,
//! one call hands out at most `tw_session_config.max_catch_up_ms` worth of ticks
//! (default 250 ms: 15 at 60 Hz); the rest of the time is dropped. The cap is
//! configurable and checked, each problem under the C field's name.

use crate::support::abi_engine;

use std::time::Duration;

use abi_engine::*;
use tickwire::*;

/// Ticks one `tw_session_ticks_due` hands out after a `hitch` of `hitch_ms`, for a
/// started session of `mode` with the catch-up cap `cap_ms` (None: the default).
fn ticks_after_hitch(mode: tw_session_mode, cap_ms: Option<u32>, hitch_ms: u64) -> u32 {
    let mut cfg = session_config(mode, 2);
    if let Some(c) = cap_ms {
        cfg.max_catch_up_ms = c;
    }
    let s = create(&cfg);
    let mut slots = 0;
    let mut e;
    // SAFETY (whole function): live session, valid pointers.
    unsafe {
        ok(tw_session_state_slots(s.0, &mut slots));
        e = Engine::new(2, slots as usize);
        ok(tw_session_start(s.0));
    }
    let mut n = 0u32;
    // Run for a moment, so that the clock has a previous frame.
    for _ in 0..20 {
        ok(unsafe { tw_session_ticks_due(s.0, &mut n) });
        for _ in 0..n {
            if mode == tw_session_mode::Synctest {
                let input = [1u8, 2];
                for p in 0..2 {
                    ok(unsafe { tw_session_push_input(s.0, p, input.as_ptr().cast(), input.len()) });
                }
            }
            ok(unsafe { tw_session_advance(s.0) });
            e.run_requests(s.0);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(hitch_ms));
    ok(unsafe { tw_session_ticks_due(s.0, &mut n) });
    n
}

#[test]
fn ticks_due_after_a_hitch_is_capped_by_max_catch_up_ms() {
    for mode in [tw_session_mode::Synctest, tw_session_mode::RelayServer] {
        // 600 ms of hitch at 60 Hz is 36 ticks: the default cap hands out 15.
        let default = ticks_after_hitch(mode, None, 600);
        assert!((14..=16).contains(&default), "{mode:?}: {default} ticks with the default 250 ms cap");
        let short = ticks_after_hitch(mode, Some(100), 600);
        assert!((5..=7).contains(&short), "{mode:?}: {short} ticks with a 100 ms cap");
        // A long cap lets the whole hitch through (the sleep may take a little longer).
        let long = ticks_after_hitch(mode, Some(2_000), 600);
        assert!((35..=60).contains(&long), "{mode:?}: {long} ticks with a 2 s cap after 600 ms");
    }
}

#[test]
fn a_bad_catch_up_cap_is_refused_naming_the_field() {
    let cases: [(tw_session_mode, u32, &str); 4] = [
        (tw_session_mode::P2p, 0, "tw_session_config.max_catch_up_ms: 0 is not in 1..=10000"),
        (tw_session_mode::Synctest, 10_001, "tw_session_config.max_catch_up_ms: 10001 is not in 1..=10000"),
        (
            tw_session_mode::P2p,
            10,
            "tw_session_config.max_catch_up_ms: 10 is shorter than one tick (16.667 ms at \
             tw_session_config.tick_rate_hz 60)",
        ),
        (
            tw_session_mode::RelayServer,
            16,
            "tw_session_config.max_catch_up_ms: 16 is shorter than one tick (16.667 ms at \
             tw_session_config.tick_rate_hz 60)",
        ),
    ];
    for (mode, cap, want) in cases {
        let mut cfg = session_config(mode, 2);
        cfg.max_catch_up_ms = cap;
        let mut s = std::ptr::null_mut();
        // SAFETY: valid config and out pointer.
        let r = unsafe { tw_session_create(&cfg, &mut s) };
        assert_eq!(r, tw_result::InvalidArgument, "{mode:?} {cap}");
        assert!(s.is_null());
        let e = last_error();
        assert!(e.contains(want), "{mode:?} {cap}: {e}");
    }
    // A synctest's clock is not dilated: a cap shorter than a tick still ticks (over
    // several frames), and is accepted.
    let mut cfg = session_config(tw_session_mode::Synctest, 2);
    cfg.max_catch_up_ms = 10;
    drop(create(&cfg));
}
