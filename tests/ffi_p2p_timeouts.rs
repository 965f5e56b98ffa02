//! Issue 18, 1: a P2P session's `disconnect_timeout_ms` longer than the host's
//! `timeout_ms` (the transport's silence timeout) was silently cut to the latter: with
//! 10 s asked, the peer was dropped after 5 s. The session's timeout is the one that
//! holds: the transport waits at least as long.

#[path = "support/abi_engine.rs"]
mod abi_engine;

use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

const SEED: u64 = 41;
const PERIOD: u32 = 5;

#[test]
fn the_sessions_disconnect_timeout_holds_past_the_hosts_timeout() {
    let mut cfg = session_config(tw_session_mode::P2p, 2);
    cfg.host.timeout_ms = 1_500;
    cfg.disconnect_timeout_ms = 3_000;
    let (a, b) = p2p_pair(&cfg, &cfg);
    // SAFETY: live sessions.
    unsafe {
        ok(tw_session_start(a.0));
        ok(tw_session_start(b.0));
    }
    let (mut ea, mut eb) = (Engine::new(2, 18), Engine::new(2, 18));
    let (mut va, mut vb) = (Vec::new(), Vec::new());
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        frame(a.0, &mut ea, &[0], SEED, PERIOD, &mut va);
        frame(b.0, &mut eb, &[1], SEED, PERIOD, &mut vb);
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(va.iter().any(|e| e.kind == tw_session_event_kind::Synchronized as u32));
    // B goes silent: everything it sends is lost from now on.
    let mut silence = link(0, 0.0, 0.0);
    silence.loss_kind = tw_loss_kind::Bernoulli as u32;
    silence.loss_probability = 1.0;
    // SAFETY: live session, valid config.
    ok(unsafe { tw_session_set_link_sim(b.0, tw_direction::Outbound as u32, &silence) });
    let silent_since = Instant::now();
    va.clear();
    let mut dropped_after = None;
    while dropped_after.is_none() && silent_since.elapsed() < Duration::from_secs(8) {
        frame(a.0, &mut ea, &[0], SEED, PERIOD, &mut va);
        frame(b.0, &mut eb, &[1], SEED, PERIOD, &mut vb);
        if va.iter().any(|e| e.kind == tw_session_event_kind::PeerDisconnected as u32) {
            dropped_after = Some(silent_since.elapsed());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let after = dropped_after.expect("the silent peer was dropped");
    eprintln!("dropped after {after:?} of silence (host timeout 1.5 s, disconnect timeout 3 s)");
    assert!(after >= Duration::from_millis(2_900), "dropped after {after:?}: the host's 1.5 s cut it short");
    assert!(after < Duration::from_millis(4_500), "dropped after {after:?}");
}
