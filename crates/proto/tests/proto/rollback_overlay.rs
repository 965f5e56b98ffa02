//! The per-peer figures of a net overlay (`P2pSession::peer_sync_stats`, GGPO's
//! `ggpo_get_network_stats`): what they say on links whose answer is known.

use crate::support::toy_game::{Mesh, TICK_US};
use tickwire_proto::{LinkConfig, P2pConfig, PeerSyncStats};

const SEC: u64 = 1_000_000;

fn mesh(latency_ticks: u64, delay: u32) -> Mesh {
    let link = LinkConfig { latency_us: latency_ticks * TICK_US, ..LinkConfig::perfect() };
    Mesh::new(31, 2, 1, link, P2pConfig { input_delay: delay, ..P2pConfig::default() })
}

/// Peer `i`'s figures of the other peer (player `1 - i`), averaged over `frames`.
fn averaged(mesh: &mut Mesh, i: usize, frames: usize) -> (f64, f64, f64, f64, f64, f64) {
    let mut sum = [0.0f64; 6];
    for _ in 0..frames {
        mesh.frame();
        let s: PeerSyncStats = mesh.peers[i].session.peer_sync_stats(1 - i).expect("remote player, heard");
        let v = [
            s.local_frame_advantage as f64,
            s.remote_frame_advantage as f64,
            s.frames_ahead as f64,
            s.send_queue as f64,
            s.recv_queue as f64,
            s.predicted_ticks as f64,
        ];
        for (a, b) in sum.iter_mut().zip(v) {
            *a += b;
        }
        assert!(s.silent_us <= 3 * TICK_US, "heard every tick or two, silent {} us", s.silent_us);
    }
    let n = frames as f64;
    (sum[0] / n, sum[1] / n, sum[2] / n, sum[3] / n, sum[4] / n, sum[5] / n)
}

/// 6 ticks each way, no input delay: the peer's inputs arrive 6 ticks after their
/// tick ran here, so about 6 ticks are predicted and none wait; our inputs wait a
/// round trip (12 ticks) for their acknowledgement. The peers run in step.
#[test]
fn far_peer_without_delay_is_predicted_for_the_one_way_latency() {
    let mut m = mesh(6, 0);
    let start = m.net.now();
    m.run_until(start + 5 * SEC);
    for i in 0..2 {
        let (local, remote, ahead, send_q, recv_q, predicted) = averaged(&mut m, i, 120);
        eprintln!(
            "peer {i}: local {local:.2} remote {remote:.2} ahead {ahead:.2} send {send_q:.1} recv {recv_q:.1} predicted {predicted:.1}"
        );
        assert!(local.abs() < 1.0 && remote.abs() < 1.0 && ahead.abs() < 0.5, "in step");
        assert!((5.0..=8.0).contains(&predicted), "one-way latency of 6 ticks predicted: {predicted}");
        assert_eq!(recv_q, 0.0, "nothing arrives ahead of its tick");
        assert!((11.0..=15.0).contains(&send_q), "a round trip of 12 ticks unacknowledged: {send_q}");
    }
}

/// 1 tick each way and 4 ticks of input delay: the peer's inputs arrive about 3
/// ticks before they are needed, nothing is predicted.
#[test]
fn near_peer_with_delay_holds_inputs_ahead() {
    let mut m = mesh(1, 4);
    let start = m.net.now();
    m.run_until(start + 5 * SEC);
    for i in 0..2 {
        let (_, _, ahead, send_q, recv_q, predicted) = averaged(&mut m, i, 120);
        eprintln!("peer {i}: ahead {ahead:.2} send {send_q:.1} recv {recv_q:.1} predicted {predicted:.1}");
        assert!(ahead.abs() < 0.5);
        assert_eq!(predicted, 0.0, "delay covers the latency");
        assert!((2.0..=4.5).contains(&recv_q), "inputs held ahead of their tick: {recv_q}");
        assert!((1.0..=7.0).contains(&send_q), "delay plus a short round trip: {send_q}");
    }
}

/// A peer whose engine stalls for half a second falls behind: the other side sees
/// itself ahead (local advantage positive), the stalled side sees the other ahead
/// (its remote advantage reported positive), before the clocks close the gap.
#[test]
fn a_stalled_peer_shows_as_behind_on_both_sides() {
    let mut m = mesh(2, 0);
    let start = m.net.now();
    m.run_until(start + 3 * SEC);
    m.peers[1].frozen = true;
    m.run_until(start + 3 * SEC + SEC / 2);
    m.peers[1].frozen = false;
    m.frame();
    m.frame();
    let a = m.peers[0].session.peer_sync_stats(1).unwrap();
    let b = m.peers[1].session.peer_sync_stats(0).unwrap();
    eprintln!("after the stall: {a:?} / {b:?}");
    assert!(a.local_frame_advantage > 5.0, "peer 0 measures itself ahead: {a:?}");
    assert!(b.local_frame_advantage < -5.0, "peer 1 measures itself behind: {b:?}");
    assert!(b.remote_frame_advantage > 5.0, "peer 1 hears peer 0's measure: {b:?}");
    // None for a local player or one that does not exist.
    assert!(m.peers[0].session.peer_sync_stats(0).is_none());
    assert!(m.peers[0].session.peer_sync_stats(7).is_none());
}
