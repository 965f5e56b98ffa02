//! Issue 18, missing 5: a synctest mismatch hands over both states (the saved one and
//! the resimulated one) through the C ABI, as GGPO users diff them with
//! `log_game_state`.

use crate::support::abi_engine;

use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

/// The checksum the engine computes, of a serialized state.
fn checksum_of(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for c in bytes.chunks_exact(8) {
        let w = i64::from_le_bytes(c.try_into().unwrap());
        h = (h ^ w as u64).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
    }
    h ^ (h >> 31)
}

fn take(s: *mut tw_session, which: u32, buf: &mut [u8]) -> (tw_result, usize) {
    let mut n = 0usize;
    // SAFETY: live session, valid buffer and output.
    let r = unsafe { tw_session_take_synctest_state(s, which, buf.as_mut_ptr().cast(), buf.len(), &mut n) };
    (r, n)
}

#[test]
fn a_synctest_mismatch_hands_over_both_states() {
    let mut cfg = session_config(tw_session_mode::Synctest, 2);
    cfg.check_distance = 2;
    let s = create(&cfg);
    let slots = {
        let mut n = 0;
        // SAFETY: live session.
        ok(unsafe { tw_session_state_slots(s.0, &mut n) });
        n as usize
    };
    assert_eq!(slots, 8, "two sets of check_distance + 2 slots: saved and resimulated");
    let mut engine = Engine::new(2, slots);
    engine.nondeterministic = true;
    // Nothing yet.
    let mut buf = vec![0u8; 4096];
    assert_eq!(take(s.0, 0, &mut buf).0, tw_result::Empty);
    assert_eq!(take(s.0, 7, &mut buf).0, tw_result::InvalidArgument);
    // SAFETY: live session.
    ok(unsafe { tw_session_start(s.0) });
    let mut events = Vec::new();
    let end = Instant::now() + Duration::from_secs(3);
    let mut pairs = Vec::new();
    while Instant::now() < end && pairs.len() < 3 {
        let before = events.len();
        frame(s.0, &mut engine, &[0, 1], 5, 3, &mut events);
        for e in events[before..].iter().filter(|e| e.kind == tw_session_event_kind::SynctestStatesReady as u32) {
            // SAFETY: the member named by the kind.
            let tick = unsafe { e.data.tick.tick };
            // Too small: the size, and the state stays.
            let (r, need) = take(s.0, tw_synctest_state::Saved as u32, &mut buf[..3]);
            assert_eq!((r, need), (tw_result::BufferTooSmall, 2 * 8 * 8), "{}", last_error());
            let (r, n) = take(s.0, tw_synctest_state::Saved as u32, &mut buf);
            assert_eq!(r, tw_result::Ok, "{}", last_error());
            let saved = checksum_of(&buf[..n]);
            assert_eq!(take(s.0, tw_synctest_state::Saved as u32, &mut buf).0, tw_result::Empty, "taken once");
            let (r, n) = take(s.0, tw_synctest_state::Resimulated as u32, &mut buf);
            assert_eq!(r, tw_result::Ok);
            let resimulated = checksum_of(&buf[..n]);
            pairs.push((tick, saved, resimulated));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let mismatches: Vec<(u32, u64, u64)> = events
        .iter()
        .filter(|e| e.kind == tw_session_event_kind::SynctestMismatch as u32)
        // SAFETY: the member named by the kind.
        .map(|e| unsafe {
            (
                e.data.synctest_mismatch.tick,
                e.data.synctest_mismatch.expected_checksum,
                e.data.synctest_mismatch.actual_checksum,
            )
        })
        .collect();
    eprintln!("{} mismatches, pairs {pairs:x?}", mismatches.len());
    assert!(pairs.len() >= 3, "a pair per mismatch taken: {pairs:?}");
    for p in &pairs {
        assert_ne!(p.1, p.2, "the states differ");
        assert!(mismatches.contains(p), "the states hash to a reported mismatch's checksums: {p:x?}");
    }
    assert!(engine.dumps_provided >= 6);
    // Another mode has no synctest states.
    let p2p = create(&session_config(tw_session_mode::P2p, 2));
    assert_eq!(take(p2p.0, 0, &mut buf).0, tw_result::InvalidState);
}
