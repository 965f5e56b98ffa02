//! Issue 31, finding 2: progress as a rate. A peer that keeps talking but lets one
//! tick through every 4.5 s held the match at 0.30 ticks/s and was never dropped: the
//! no-progress check only looked for zero progress within the disconnect timeout.

#[path = "support/forge.rs"]
mod forge;
#[path = "support/toy_game.rs"]
mod toy_game;

use forge::dropped;
use tickwire_proto::{DisconnectReason, LinkConfig, P2pConfig, RollbackEvent as Event, Tick};
use toy_game::{Mesh, TICK_US};

const SEC: u64 = 1_000_000;
/// How often the slow peer lets one tick through.
const TRICKLE_US: u64 = 4_500_000;

fn link() -> LinkConfig {
    LinkConfig { latency_us: 3 * TICK_US, ..LinkConfig::perfect() }
}

/// Runs `mesh` until `until`, with peer `slow` frozen except for one frame (one
/// tick) every `TRICKLE_US` from `start` on, while it is alive.
fn trickle(mesh: &mut Mesh, slow: usize, start: u64, until: u64) {
    while mesh.net.now() < until {
        let t = mesh.net.now();
        let on = t >= start && (t - start) % TRICKLE_US >= TICK_US;
        mesh.peers[slow].frozen = on;
        mesh.frame();
    }
}

fn a_peer_that_trickles_ticks_is_dropped(seed: u64, n: usize) {
    let cfg = P2pConfig::default();
    let timeout = cfg.disconnect_timeout_us;
    let mut mesh = Mesh::new(seed, n, 1, link(), cfg);
    let slow = 1;
    let start = 2 * SEC;
    mesh.run_until(start);
    let honest: Vec<usize> = (0..n).filter(|&i| i != slow).collect();
    // Within about the disconnect timeout (plus a second of slack) every honest
    // peer has dropped the slow one.
    let deadline = start + timeout + SEC;
    trickle(&mut mesh, slow, start, deadline);
    for &i in &honest {
        let id = mesh.peers[i].ids[slow];
        let reason = dropped(&mesh, i, id);
        assert_eq!(reason, Some(DisconnectReason::NoProgress), "peer {i}: {:?}", mesh.peers[i].events);
        assert!(
            mesh.peers[i].events.iter().any(|e| matches!(*e, Event::NoProgress { peer, .. } if peer == id)),
            "peer {i} named the slow peer"
        );
    }
    // The honest peers play on at full speed, in sync, and nobody honest is dropped.
    mesh.peers[slow].alive = false;
    mesh.run_until(deadline + SEC);
    let from: Vec<Tick> = honest.iter().map(|&i| mesh.peers[i].session.stats().confirmed_tick).collect();
    mesh.run_until(deadline + 11 * SEC);
    for (k, &i) in honest.iter().enumerate() {
        let c = mesh.peers[i].session.stats().confirmed_tick;
        assert!(c - from[k] >= 58 * 10, "peer {i} confirmed {} ticks in 10 s", c - from[k]);
        for &j in &honest {
            if j != i {
                assert_eq!(dropped(&mesh, i, mesh.peers[i].ids[j]), None, "peer {i} dropped honest peer {j}");
            }
        }
    }
    let end = mesh.confirmed();
    assert!(mesh.assert_in_sync_where_saved(end) > 500, "the honest peers compared states");
    assert_eq!(mesh.desyncs(), 0);
}

#[test]
fn three_peers_a_peer_that_trickles_ticks_is_dropped() {
    a_peer_that_trickles_ticks_is_dropped(51, 3);
}

#[test]
fn four_peers_a_peer_that_trickles_ticks_is_dropped() {
    a_peer_that_trickles_ticks_is_dropped(52, 4);
}
