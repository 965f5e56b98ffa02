//! Issue 18, missing 7: input delay per local player (`tw_session_set_player_input_delay`,
//! GGPO's `ggpo_set_frame_delay`) through the C ABI.

use crate::support::abi_engine;

use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

#[track_caller]
fn assert_err(r: tw_result, code: tw_result, func: &str, needle: &str) {
    assert_eq!(r, code, "expected {code:?}; last error: {}", last_error());
    let msg = last_error();
    assert!(msg.contains(func) && msg.contains(needle), "last error {msg:?}: want {func} and {needle:?}");
}

#[test]
fn a_local_players_delay_applies_and_bad_calls_say_why() {
    let cfg = session_config(tw_session_mode::P2p, 2);
    let (a, b) = p2p_pair(&cfg, &cfg);
    // SAFETY (whole test): live sessions.
    unsafe {
        ok(tw_session_set_player_input_delay(a.0, 0, 3));
        assert_err(
            tw_session_set_player_input_delay(a.0, 1, 2),
            tw_result::InvalidArgument,
            "tw_session_set_player_input_delay",
            "remote",
        );
        assert_err(
            tw_session_set_player_input_delay(a.0, 0, 33),
            tw_result::InvalidArgument,
            "tw_session_set_player_input_delay",
            "above 32",
        );
        assert_err(
            tw_session_set_player_input_delay(a.0, 7, 1),
            tw_result::InvalidArgument,
            "tw_session_set_player_input_delay",
            "player 7",
        );
        assert_err(
            tw_session_set_player_input_delay(std::ptr::null_mut(), 0, 1),
            tw_result::NullArgument,
            "tw_session_set_player_input_delay",
            "session",
        );
        ok(tw_session_start(a.0));
        ok(tw_session_start(b.0));
    }
    let (mut ea, mut eb) = (Engine::new(2, 18), Engine::new(2, 18));
    let (mut va, mut vb) = (Vec::new(), Vec::new());
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        frame(a.0, &mut ea, &[0], 71, 5, &mut va);
        frame(b.0, &mut eb, &[1], 71, 5, &mut vb);
        std::thread::sleep(Duration::from_millis(2));
    }
    let (sa, sb) = (stats(a.0), stats(b.0));
    assert_eq!((sa.input_delay, sb.input_delay), (3, 0), "set before start, kept once running");
    let confirmed = sa.confirmed_tick.min(sb.confirmed_tick);
    assert!(confirmed > 60, "ran: {confirmed}");
    let same = (0..confirmed as usize)
        .filter(|&t| ea.checksums.get(t).copied().flatten().is_some())
        .all(|t| eb.checksums.get(t).copied().flatten().is_none_or(|c| Some(c) == ea.checksums[t]));
    assert!(same, "the peers agree on every confirmed tick");
    // While running: back to one delay for all.
    // SAFETY: live session.
    unsafe { ok(tw_session_set_player_input_delay(a.0, 0, 1)) };
    frame(a.0, &mut ea, &[0], 71, 5, &mut va);
    assert_eq!(stats(a.0).input_delay, 1);
    // Not P2P.
    let sync = create(&session_config(tw_session_mode::Synctest, 2));
    // SAFETY: live session.
    unsafe {
        assert_err(
            tw_session_set_player_input_delay(sync.0, 0, 1),
            tw_result::InvalidState,
            "tw_session_set_player_input_delay",
            "SyncTest",
        );
    }
}
