//! Issue 15, 1: a bandwidth cap per client degrades gracefully. Under the cap the
//! server leaves out redundant copies of steps first and never new steps or resends,
//! so the match never stalls; the bytes sent per client are reported.

use crate::support::relay_world::{World, link};
use tickwire_proto::{GameShape, RelayClientSessionConfig, RelayServerSessionConfig, ServerSessionEvent};

const SECOND: u64 = 1_000_000;

/// Runs 2 clients for 40 s on 100 ms RTT with 8% loss each way; returns per client
/// (update bytes per second over the last 20 s, copies, copies left out) and the
/// slowest client's authoritative tick with the server's.
fn run(cap: u64) -> (Vec<(f64, u64, u64)>, u32, u32) {
    let mut scfg = RelayServerSessionConfig { game: GameShape::new(4, 2), ..RelayServerSessionConfig::default() };
    scfg.relay.bandwidth_cap = cap;
    let ccfg = RelayClientSessionConfig {
        game: GameShape::new(4, 2),
        max_prediction: 16,
        ..RelayClientSessionConfig::default()
    };
    let mut w = World::new(11, link(0.08), scfg, ccfg);
    w.add_client();
    w.add_client();
    w.run_for(20 * SECOND);
    let before: Vec<_> = (0..2).map(|p| w.server.stream_stats(p).expect("connected")).collect();
    w.run_for(20 * SECOND);
    assert!(!w.server_events.iter().any(|e| matches!(e, ServerSessionEvent::PlayerKicked { .. })));
    let figures = (0..2)
        .map(|p| {
            let s = w.server.stream_stats(p).expect("connected");
            ((s.bytes - before[p as usize].bytes) as f64 / 20.0, s.copies, s.copies_capped)
        })
        .collect();
    let slowest = w.clients.iter().map(|c| c.session.authoritative_tick()).min().unwrap();
    for i in 0..2 {
        w.assert_same_states(i, w.joined_tick(i));
    }
    (figures, slowest, w.server.last_tick())
}

#[test]
fn a_bandwidth_cap_leaves_out_copies_first_and_never_stalls() {
    let (free, slowest_free, tick_free) = run(0);
    let (capped, slowest_capped, tick_capped) = run(1_500);
    println!("no cap: {free:?}, slowest {slowest_free} of {tick_free}");
    println!("1500 B/s cap: {capped:?}, slowest {slowest_capped} of {tick_capped}");
    for i in 0..2 {
        let (bytes_free, copies_free, capped_free) = free[i];
        let (bytes_capped, copies_capped, left_out) = capped[i];
        assert_eq!(capped_free, 0, "nothing is left out without a cap");
        assert!(left_out > 1000, "client {i}: copies left out under the cap: {left_out}");
        assert!(copies_capped < copies_free / 2, "client {i}: copies {copies_capped} against {copies_free}");
        assert!(bytes_capped < 0.7 * bytes_free, "client {i}: {bytes_capped:.0} B/s against {bytes_free:.0} B/s");
    }
    // Under the cap the new steps and resends still go: every client keeps up.
    assert!(tick_capped - slowest_capped < 40, "slowest client {slowest_capped} of {tick_capped}");
}

/// `max_update_datagrams` bounds each update: 16 players' 64-byte inputs changing every
/// tick make about 1 KB a step, 3 steps and their copies an update, and one datagram
/// each is all that goes (the rest waits; nothing is sent twice).
#[test]
fn an_update_takes_at_most_max_update_datagrams() {
    let mut scfg = RelayServerSessionConfig { game: GameShape::new(16, 64), ..RelayServerSessionConfig::default() };
    scfg.relay.max_update_datagrams = 1;
    let ccfg = RelayClientSessionConfig {
        game: GameShape::new(16, 64),
        max_prediction: 16,
        ..RelayClientSessionConfig::default()
    };
    let mut w = World::new(13, link(0.0), scfg, ccfg);
    w.input_period = 1;
    for _ in 0..16 {
        w.add_client();
    }
    w.run_for(3 * SECOND);
    let before = w.server.stream_stats(0).expect("connected");
    let tick_before = w.server.last_tick();
    w.run_for(5 * SECOND);
    let after = w.server.stream_stats(0).expect("connected");
    let updates = u64::from((w.server.last_tick() - tick_before) / 3);
    let datagrams = after.datagrams - before.datagrams;
    println!("{datagrams} datagrams in {updates} updates; {} updates could not take every step", after.full_updates);
    assert!(datagrams <= updates + 1, "{datagrams} datagrams in {updates} updates");
    assert!(after.full_updates > before.full_updates, "the cap was reached");
}
