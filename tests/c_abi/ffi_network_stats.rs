//! Issue 18, missing 3: a net overlay's figures per remote player
//! (`tw_session_network_stats`, GGPO's `ggpo_get_network_stats`), through the C ABI on
//! loopback with the link simulator's latency.

use crate::support::abi_engine;

use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

const SEED: u64 = 51;
const PERIOD: u32 = 5;

fn network_stats(s: *mut tw_session, player: u32) -> (tw_result, tw_network_stats) {
    // SAFETY: zeroed plain-old-data struct; live session, writable output.
    let mut st: tw_network_stats = unsafe { std::mem::zeroed() };
    let r = unsafe { tw_session_network_stats(s, player, &mut st) };
    (r, st)
}

#[test]
fn overlay_figures_follow_the_link() {
    assert_eq!(unsafe { tw_network_stats_size() }, std::mem::size_of::<tw_network_stats>());
    assert_eq!(std::mem::size_of::<tw_network_stats>(), 128);
    let cfg = session_config(tw_session_mode::P2p, 2);
    let (a, b) = p2p_pair(&cfg, &cfg);
    // Before the peers connect: nothing to say yet, and the output is untouched.
    let (r, st) = network_stats(a.0, 1);
    assert_eq!(r, tw_result::Empty, "{}", last_error());
    assert_eq!(st.rtt_us, 0.0);
    // Bad arguments name what is wrong.
    let (r, _) = network_stats(a.0, 0);
    assert_eq!(r, tw_result::InvalidArgument);
    assert!(last_error().contains("local"), "{}", last_error());
    let (r, _) = network_stats(a.0, 2);
    assert_eq!(r, tw_result::InvalidArgument);
    // SAFETY: live session, NULL output on purpose; NULL session.
    unsafe {
        assert_eq!(tw_session_network_stats(a.0, 1, std::ptr::null_mut()), tw_result::NullArgument);
        let mut st: tw_network_stats = std::mem::zeroed();
        assert_eq!(tw_session_network_stats(std::ptr::null_mut(), 1, &mut st), tw_result::NullArgument);
    }
    // 40 ms each way: an RTT near 80 ms, about 2.4 ticks of the peer's inputs
    // predicted (no input delay), and our inputs unacknowledged for about a round trip.
    let slow = link(40_000, 0.0, 0.0);
    // SAFETY: live sessions, valid config.
    unsafe {
        ok(tw_session_set_link_sim(a.0, tw_direction::Outbound as u32, &slow));
        ok(tw_session_set_link_sim(b.0, tw_direction::Outbound as u32, &slow));
        ok(tw_session_start(a.0));
        ok(tw_session_start(b.0));
    }
    let (mut ea, mut eb) = (Engine::new(2, 18), Engine::new(2, 18));
    let (mut va, mut vb) = (Vec::new(), Vec::new());
    let mut samples = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(4) {
        frame(a.0, &mut ea, &[0], SEED, PERIOD, &mut va);
        frame(b.0, &mut eb, &[1], SEED, PERIOD, &mut vb);
        if start.elapsed() > Duration::from_secs(2) {
            let (r, st) = network_stats(a.0, 1);
            assert_eq!(r, tw_result::Ok, "{}", last_error());
            samples.push(st);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(va.iter().any(|e| e.kind == tw_session_event_kind::Synchronized as u32));
    let n = samples.len() as f64;
    let mean = |f: fn(&tw_network_stats) -> f64| samples.iter().map(f).sum::<f64>() / n;
    let rtt = mean(|s| s.rtt_us);
    let predicted = mean(|s| s.predicted_ticks as f64);
    let send_queue = mean(|s| s.send_queue as f64);
    let ahead = mean(|s| s.frames_ahead as f64);
    let last = samples.last().unwrap();
    eprintln!(
        "{} samples: rtt {rtt:.0} us, predicted {predicted:.2}, send queue {send_queue:.2}, ahead {ahead:.2}, last {last:?}",
        samples.len()
    );
    assert_eq!((last.player, last.peer != 0), (1, true));
    assert!((75_000.0..=120_000.0).contains(&rtt), "RTT of two 40 ms legs: {rtt}");
    assert!((1.0..=5.0).contains(&predicted), "about 40 ms of the peer's inputs predicted: {predicted}");
    assert!((3.0..=9.0).contains(&send_queue), "about a round trip unacknowledged: {send_queue}");
    assert!(ahead.abs() < 1.5, "the peers run in step: {ahead}");
    assert!(last.kbps_sent > 0.5 && last.kbps_received > 0.5, "inputs flow both ways: {last:?}");
    assert!(last.silent_us < 100_000, "heard within the last frames: {}", last.silent_us);
    assert_eq!(last.loss, 0.0);
    assert_eq!(last.reserved, 0);
    // No rendezvous: no path, and no address.
    assert_eq!((last.path, last.path_address[0]), (tw_path::None as u32, 0));

    // Not P2P: the call says which mode it was.
    let sync = create(&session_config(tw_session_mode::Synctest, 2));
    let (r, _) = network_stats(sync.0, 1);
    assert_eq!(r, tw_result::InvalidState);
    assert!(last_error().contains("SyncTest"), "{}", last_error());
}
