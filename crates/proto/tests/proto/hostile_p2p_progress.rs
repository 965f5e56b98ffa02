//! Issue 31, finding 2: progress as a rate. A peer that keeps talking but lets one
//! tick through every 4.5 s held the match at 0.30 ticks/s and was never dropped: the
//! no-progress check only looked for zero progress within the disconnect timeout.
//!
//! The watch (`rollback/p2p/progress.rs`): a stall (no confirmed tick for
//! `progress_timeout_us`, P) or a crawl (under half the rate for 2P) by a peer that
//! keeps talking drops it, an honest hitch under P does not, and a stall the engine
//! announces (`set_loading`) is spent from the peer's loading grace first.

use crate::support::forge::dropped;
use crate::support::toy_game::{Mesh, TICK_US};
use tickwire_proto::{DisconnectReason, LinkConfig, P2pConfig, RollbackEvent as Event, Tick};

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
    let timeout = cfg.progress_timeout_us;
    let mut mesh = Mesh::new(seed, n, 1, link(), cfg);
    let slow = 1;
    let start = 2 * SEC;
    mesh.run_until(start);
    let honest: Vec<usize> = (0..n).filter(|&i| i != slow).collect();
    // Within about P (plus a second of slack) every honest peer has dropped the slow
    // one: it is a stall.
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

/// The peers' view of `slow` after running to `until`: for each honest peer, the
/// reason it dropped `slow` (None: still playing with it).
fn reasons(mesh: &Mesh, slow: usize) -> Vec<Option<DisconnectReason>> {
    (0..mesh.peers.len()).filter(|&i| i != slow).map(|i| dropped(mesh, i, mesh.peers[i].ids[slow])).collect()
}

/// A liar that lets a tick through just under every P is never stalled for P; it
/// crawls, and is dropped within 2P (plus slack), not after the 5 s of silence.
fn a_peer_that_crawls_is_dropped(seed: u64, n: usize) {
    let cfg = P2pConfig::default();
    let p = cfg.progress_timeout_us;
    let mut mesh = Mesh::new(seed, n, 1, link(), cfg);
    let slow = n - 1;
    let start = 2 * SEC;
    mesh.run_until(start);
    let every = p - 100_000;
    let until = start + 2 * p + SEC;
    while mesh.net.now() < until {
        let t = mesh.net.now() - start.min(mesh.net.now());
        mesh.peers[slow].frozen = mesh.net.now() >= start && t % every >= TICK_US;
        mesh.frame();
    }
    assert_eq!(reasons(&mesh, slow), vec![Some(DisconnectReason::NoProgress); n - 1], "every honest peer dropped it");
    mesh.peers[slow].alive = false;
    mesh.run_until(until + 2 * SEC);
    assert_eq!(mesh.desyncs(), 0);
}

#[test]
fn three_peers_a_peer_that_crawls_is_dropped() {
    a_peer_that_crawls_is_dropped(53, 3);
}

#[test]
fn four_peers_a_peer_that_crawls_is_dropped() {
    a_peer_that_crawls_is_dropped(54, 4);
}

/// An engine's hitch (it keeps talking, through the network thread) shorter than P
/// drops nobody, however often: back from it, the peer runs at the full rate.
#[test]
fn an_honest_hitch_under_the_progress_timeout_drops_nobody() {
    for (seed, n) in [(55, 3), (56, 4)] {
        let cfg = P2pConfig::default();
        let hitch = cfg.progress_timeout_us - 300_000;
        let mut mesh = Mesh::new(seed, n, 1, link(), cfg);
        let slow = 1;
        mesh.run_until(2 * SEC);
        // Three hitches, 4 s apart: each is followed by full-rate play.
        for k in 0..3u64 {
            let at = 2 * SEC + k * 4 * SEC;
            while mesh.net.now() < at + 4 * SEC {
                let now = mesh.net.now();
                mesh.peers[slow].frozen = now >= at && now < at + hitch;
                mesh.frame();
            }
        }
        assert_eq!(reasons(&mesh, slow), vec![None; n - 1], "{n} peers: {:?}", mesh.peers[0].events);
        for peer in &mesh.peers {
            assert!(!peer.events.iter().any(|e| matches!(e, Event::NoProgress { .. })), "{:?}", peer.events);
        }
        let end = mesh.confirmed();
        assert!(mesh.assert_in_sync_where_saved(end) > 500);
    }
}

/// A stall the engine announces (a loading screen) of 6 s, four times P, drops
/// nobody: the grace (10 s a peer by default) covers it. The match goes on after.
/// The same stall unannounced is dropped after P.
#[test]
fn an_announced_loading_stall_is_spent_from_the_grace() {
    for (seed, n, announce) in [(57, 3, true), (58, 4, true), (57, 3, false)] {
        let mut mesh = Mesh::new(seed, n, 1, link(), P2pConfig::default());
        let slow = 2;
        mesh.run_until(2 * SEC);
        mesh.peers[slow].frozen = true;
        mesh.peers[slow].session.set_loading(announce);
        mesh.run_until(8 * SEC);
        mesh.peers[slow].frozen = false;
        mesh.peers[slow].session.set_loading(false);
        if !announce {
            assert_eq!(reasons(&mesh, slow), vec![Some(DisconnectReason::NoProgress); n - 1]);
            continue;
        }
        let from = mesh.confirmed();
        mesh.run_until(12 * SEC);
        assert_eq!(reasons(&mesh, slow), vec![None; n - 1], "{n} peers: {:?}", mesh.peers[0].events);
        assert!(mesh.confirmed() - from >= 58 * 4, "the match went on after the load: {}", mesh.confirmed() - from);
        assert_eq!(mesh.desyncs(), 0);
        assert!(mesh.peers.iter().all(|p| !p.events.iter().any(|e| matches!(e, Event::NoProgress { .. }))));
    }
}

/// A liar that announces loading for ever holds the match for its grace and is then
/// dropped: the grace is per peer for the whole match, not per announcement.
#[test]
fn loading_for_ever_is_dropped_once_the_grace_is_spent() {
    for (seed, n) in [(59, 3), (60, 4)] {
        let cfg = P2pConfig::default();
        let (grace, p) = (cfg.loading_grace_us, cfg.progress_timeout_us);
        let mut mesh = Mesh::new(seed, n, 1, link(), cfg);
        let slow = 1;
        mesh.run_until(2 * SEC);
        mesh.peers[slow].session.set_loading(true);
        mesh.peers[slow].frozen = true;
        mesh.run_until(2 * SEC + grace - SEC);
        assert_eq!(reasons(&mesh, slow), vec![None; n - 1], "within its grace");
        mesh.run_until(2 * SEC + grace + p + SEC);
        assert_eq!(reasons(&mesh, slow), vec![Some(DisconnectReason::NoProgress); n - 1], "grace spent");
    }
}
