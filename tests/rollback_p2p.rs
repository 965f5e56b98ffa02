//! P2P rollback sessions on the deterministic network simulator: every confirmed tick
//! has the same checksum on every peer, under latency and loss, for 10 minutes of
//! game time.

#[path = "support/toy_game.rs"]
mod toy_game;

use tickwire::core::netsim::{LinkConfig, LossModel};
use tickwire::core::rollback::{Event, P2pConfig};
use toy_game::{Mesh, TICK_US};

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
        assert!(st.checks_compared > expected * 9 / 10, "peer {i}: desync detection was active ({} of ~{expected} checks)", st.checks_compared);
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
