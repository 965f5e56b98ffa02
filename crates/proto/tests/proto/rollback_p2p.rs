//! P2P rollback sessions on the deterministic network simulator: every confirmed tick
//! has the same checksum on every peer, under latency and loss, for 10 minutes of
//! game time.

use crate::support::toy_game::{Mesh, TICK_US};
use tickwire_proto::{LinkConfig, LossModel, P2pConfig, RollbackEvent as Event};

const SEC: u64 = 1_000_000;

fn link(latency_ticks: u64, loss: f64) -> LinkConfig {
    LinkConfig { latency_us: latency_ticks * TICK_US, loss: LossModel::Bernoulli { p: loss }, ..LinkConfig::perfect() }
}

fn ten_minutes(peers: usize, per_peer: usize, delay: u32, seed: u64) {
    let cfg = P2pConfig { input_delay: delay, ..P2pConfig::default() };
    let mut mesh = Mesh::new(seed, peers, per_peer, link(6, 0.05), cfg);
    let start = mesh.net.now();
    mesh.run_until(start + 600 * SEC);
    let confirmed = mesh.confirmed();
    assert!(confirmed > 35_000, "10 minutes at 60 Hz confirm ~36000 ticks, got {confirmed}");
    let compared = mesh.assert_in_sync(0, confirmed);
    assert_eq!(mesh.desyncs(), 0, "no desync on a deterministic game");
    for (i, p) in mesh.peers.iter().enumerate() {
        let st = p.session.stats();
        assert!(st.rollbacks > 1_000, "peer {i}: predictions were corrected by rollbacks ({})", st.rollbacks);
        assert!(st.max_rollback <= 9, "peer {i}: rollback depth {} within the window", st.max_rollback);
        assert!(st.frames_ahead.abs() < 2.0, "peer {i}: frames ahead {}", st.frames_ahead);
        assert!(p.events.iter().all(|e| !matches!(e, Event::RollbackTooFar { .. })));
        let expected = (peers as u64 - 1) * confirmed as u64 / 10;
        assert!(
            st.checks_compared > expected * 9 / 10,
            "peer {i}: desync detection was active ({} of ~{expected} checks)",
            st.checks_compared
        );
        assert_eq!(st.desyncs, 0);
        eprintln!("peer {i}: {st:?}, sims {} resims {}", p.game.advances, p.game.resimulated);
    }
    eprintln!("{compared} ticks compared on {peers} peers");
}

#[test]
fn two_peers_ten_minutes_latency_6_loss_5_percent() {
    ten_minutes(2, 1, 0, 11);
}

#[test]
fn four_peers_ten_minutes_latency_6_loss_5_percent() {
    ten_minutes(4, 1, 2, 12);
}

/// Bytes the endpoint of `mesh.peers[i]` sent to `mesh.peers[j]`.
fn bytes_sent(mesh: &mut Mesh, i: usize, j: usize) -> u64 {
    let (node, id) = (mesh.peers[i].node, mesh.peers[i].ids[j]);
    mesh.net.endpoint(node).stats(id).expect("connected").bytes_sent
}

/// Runs two peers for `secs` with inputs changing every tick; returns the bytes both
/// sent, the ticks confirmed everywhere (checked in sync) and the input refreshes.
fn run_pair(seed: u64, link: LinkConfig, redundancy: u8, secs: u64) -> (u64, u32, u64) {
    let cfg = P2pConfig { input_redundancy: redundancy, ..P2pConfig::default() };
    let mut mesh = Mesh::new(seed, 2, 1, link, cfg);
    mesh.period = 1;
    let start = mesh.net.now();
    mesh.run_until(start + secs * SEC);
    let confirmed = mesh.confirmed();
    mesh.assert_in_sync(0, confirmed);
    assert_eq!(mesh.desyncs(), 0);
    for p in &mesh.peers {
        assert!(p.events.iter().all(|e| !matches!(e, Event::RollbackTooFar { .. } | Event::PeerDisconnected { .. })));
        assert!(p.session.stats().max_rollback <= 9);
    }
    let refreshes = mesh.peers.iter().map(|p| p.session.stats().input_refreshes).sum();
    (bytes_sent(&mut mesh, 0, 1) + bytes_sent(&mut mesh, 1, 0), confirmed, refreshes)
}

/// At 10 ticks of latency an input waits ~20 ticks for its ack. Repeating every
/// unacked input in every message (input_redundancy 0) sends each one ~20 times; the
/// default sends it in 8 messages, then every 50 ms until acked: fewer bytes, the
/// same progress. With a round trip shorter than 8 ticks nothing changes at all.
#[test]
fn inputs_in_flight_are_not_repeated_in_every_message() {
    let (all_bytes, all_confirmed, all_refreshes) = run_pair(21, link(10, 0.0), 0, 60);
    let (bytes, confirmed, refreshes) = run_pair(21, link(10, 0.0), 8, 60);
    assert_eq!(all_refreshes, 0, "redundancy 0 repeats everything, never refreshes");
    assert!(refreshes > 0, "inputs unacked after 8 copies were refreshed");
    assert_eq!(confirmed, all_confirmed, "same progress");
    assert!(bytes * 10 < all_bytes * 9, "in-flight inputs not repeated every tick: {bytes} B vs {all_bytes} B");
    eprintln!("latency 10: {bytes} B vs {all_bytes} B with every unacked input in every message");

    let short = run_pair(22, link(2, 0.0), 0, 60);
    assert_eq!(run_pair(22, link(2, 0.0), 8, 60), short, "acked within 8 copies: byte for byte the same");
}

/// Bursts of loss longer than 8 messages lose every copy of some inputs; they go
/// again within 50 ms. Play goes on, in sync, nearly as fast as when every message
/// repeats every unacked input.
#[test]
fn inputs_lost_in_a_long_burst_are_refreshed() {
    let bursty = LinkConfig { latency_us: 3 * TICK_US, loss: LossModel::bursty(0.05, 6.0), ..LinkConfig::perfect() };
    let (all_bytes, all_confirmed, _) = run_pair(23, bursty, 0, 120);
    let (bytes, confirmed, refreshes) = run_pair(23, bursty, 8, 120);
    eprintln!(
        "bursty: {confirmed} ticks, {bytes} B, {refreshes} refreshes; all unacked every time: {all_confirmed} ticks, {all_bytes} B"
    );
    assert!(refreshes > 0, "some bursts outlasted 8 copies");
    assert!(confirmed > 6_800, "2 minutes at 60 Hz confirm ~7200 ticks, got {confirmed}");
    assert!(confirmed * 100 >= all_confirmed * 98, "{confirmed} vs {all_confirmed} ticks");
}

/// Mean rollback depth of each peer between two points of a run.
fn depths(before: &[(u64, u64)], mesh: &Mesh) -> Vec<f64> {
    mesh.peers
        .iter()
        .zip(before)
        .map(|(p, b)| {
            let st = p.session.stats();
            (st.resimulated - b.1) as f64 / (st.rollbacks - b.0).max(1) as f64
        })
        .collect()
}

fn rollback_counts(mesh: &Mesh) -> Vec<(u64, u64)> {
    mesh.peers.iter().map(|p| (p.session.stats().rollbacks, p.session.stats().resimulated)).collect()
}

/// At latency 0 every input arrives the frame after it was made: when the peers run
/// the same tick each frame, every rollback is 1 tick deep. A peer that starts a tick
/// late (its first message from a peer was lost) must be pulled onto the others' tick.
/// Both sides measuring the same one-tick offset with a one-tick bias (comparing
/// their count before the tick being run against the peers' count after their frame)
/// made the agreement gate hold that offset for good: 2-tick rollbacks on one side.
#[test]
fn a_peer_that_starts_a_tick_late_is_pulled_level() {
    for n in [2, 4] {
        let mut mesh = Mesh::new(41, n, 1, LinkConfig::perfect(), P2pConfig::default());
        mesh.period = 1;
        let (a, b) = (mesh.peers[0].node, mesh.peers[1].node);
        mesh.net.set_link(a, b, LinkConfig { loss: LossModel::Bernoulli { p: 1.0 }, ..LinkConfig::perfect() });
        mesh.frame();
        mesh.net.set_link(a, b, LinkConfig::perfect());
        for _ in 0..3 {
            mesh.frame();
        }
        let ticks: Vec<u32> = mesh.peers.iter().map(|p| p.session.current_tick()).collect();
        assert!(ticks[1] < ticks[0], "peer 1 started late: {ticks:?}");
        let start = mesh.net.now();
        mesh.run_until(start + 10 * SEC);
        let before = rollback_counts(&mesh);
        mesh.run_until(start + 30 * SEC);
        let confirmed = mesh.confirmed();
        mesh.assert_in_sync(0, confirmed);
        let ticks: Vec<u32> = mesh.peers.iter().map(|p| p.session.current_tick()).collect();
        assert!(ticks.iter().all(|&t| t == ticks[0]), "{n} peers level: {ticks:?}");
        for (i, d) in depths(&before, &mesh).into_iter().enumerate() {
            eprintln!("{n} peers, peer {i}: mean rollback depth {d:.3}");
            assert!(d < 1.01, "{n} peers, peer {i}: mean rollback depth {d:.2}, 1 when level");
        }
    }
}
