//! Issue 31, finding 1: disconnects by evidence. One peer telling the others that a
//! third, still-connected player had disconnected removed that player from everyone
//! else's game (receivers took the proposal, relayed it, and the victim was never
//! told). A proposal to drop a third player is now taken only with evidence of this
//! side's own (it lost that player's peer too) or from a majority of the live peers.

use crate::support::forge::{Lie, dropped, forge, plausible};
use crate::support::toy_game::{Mesh, TICK_US};
use tickwire_proto::{LinkConfig, P2pConfig, RollbackEvent as Event, Tick};

const SEC: u64 = 1_000_000;

fn link() -> LinkConfig {
    LinkConfig { latency_us: 3 * TICK_US, ..LinkConfig::perfect() }
}

fn player_dropped(mesh: &Mesh, on: usize, player: usize) -> bool {
    mesh.peers[on].events.iter().any(|e| matches!(*e, Event::PlayerDisconnected { player: p, .. } if p == player))
}

/// Peer 1 tells every other peer but the victim (peer 2, player 2), once a second
/// for 60 s, that player 2 disconnected at their confirmed tick (a tick no check
/// can refuse). Peer 1's own session is honest otherwise.
fn a_lie_about_a_live_player_removes_nobody(seed: u64, n: usize) {
    let (liar, victim) = (1, 2);
    let mut mesh = Mesh::new(seed, n, 1, link(), P2pConfig::default());
    mesh.run_until(2 * SEC);
    let start: Vec<Tick> = (0..n).map(|i| mesh.peers[i].session.stats().confirmed_tick).collect();
    for s in 0..60u64 {
        for to in (0..n).filter(|&i| i != liar && i != victim) {
            let l = plausible(&mesh, to);
            let lie = [(victim as u16, l.confirmed)];
            forge(&mut mesh, to, liar, Lie { disconnects: &lie, ..l });
        }
        mesh.run_until((3 + s) * SEC);
    }
    mesh.run_until(63 * SEC);
    for i in (0..n).filter(|&i| i != liar) {
        assert!(!player_dropped(&mesh, i, victim), "peer {i} dropped the live victim: {:?}", mesh.peers[i].events);
        let c = mesh.peers[i].session.stats().confirmed_tick;
        assert!(c - start[i] >= 58 * 60, "peer {i} confirmed {} ticks in 61 s", c - start[i]);
        for j in (0..n).filter(|&j| j != i && j != liar) {
            assert_eq!(dropped(&mesh, i, mesh.peers[i].ids[j]), None, "peer {i} dropped honest peer {j}");
        }
        // Every peer it lied to names the liar, once, and nobody else.
        if i != victim {
            let named: Vec<_> = mesh.peers[i]
                .events
                .iter()
                .filter_map(|e| match *e {
                    Event::ProposalRefused { by, player, .. } => Some((by, player)),
                    _ => None,
                })
                .collect();
            assert_eq!(named, [(mesh.peers[i].ids[liar], victim)], "peer {i} names the liar once");
        }
    }
    assert!(
        !mesh.peers[victim].events.iter().any(|e| matches!(e, Event::RemovedByPeers { .. })),
        "one proposer is not a majority: the victim is not told it was removed"
    );
    // Everyone, the liar's honest session included, simulated the same match.
    let end = mesh.confirmed();
    assert!(mesh.assert_in_sync_where_saved(end) > 3000, "states compared");
    assert_eq!(mesh.desyncs(), 0, "no desync: the victim was never split off");
}

#[test]
fn three_peers_a_lie_about_a_live_player_removes_nobody() {
    a_lie_about_a_live_player_removes_nobody(61, 3);
}

#[test]
fn four_peers_a_lie_about_a_live_player_removes_nobody() {
    a_lie_about_a_live_player_removes_nobody(62, 4);
}

/// The honest path: a peer whose links all die is dropped by everyone. Peer 0 has
/// the shortest timeout, so it drops it first and proposes it; the others, silent on
/// it past their notify delay themselves, take peer 0's proposal and say so.
fn a_vanished_peer_is_dropped_by_everyone_and_the_event_says_who_proposed(seed: u64, n: usize) {
    let gone = 2;
    let mut mesh = Mesh::new(seed, n, 1, link(), P2pConfig::default());
    mesh.peers[0].session.set_timeouts(2 * SEC, SEC / 2).unwrap();
    mesh.run_until(2 * SEC);
    mesh.peers[gone].alive = false;
    for i in (0..n).filter(|&i| i != gone) {
        let (a, b) = (mesh.peers[i].node, mesh.peers[gone].node);
        mesh.net.set_links(a, b, LinkConfig { loss: tickwire_proto::LossModel::Bernoulli { p: 1.0 }, ..link() });
    }
    mesh.run_until(8 * SEC);
    let from: Vec<Tick> = (0..n).map(|i| mesh.peers[i].session.stats().confirmed_tick).collect();
    mesh.run_until(18 * SEC);
    let mut agreed = Vec::new();
    for i in (0..n).filter(|&i| i != gone) {
        let (tick, by) = mesh.peers[i]
            .events
            .iter()
            .rev()
            .find_map(|e| match *e {
                Event::PlayerDisconnected { player, tick, by } if player == gone => Some((tick, by)),
                _ => None,
            })
            .unwrap_or_else(|| panic!("peer {i} dropped the vanished player: {:?}", mesh.peers[i].events));
        let expected = if i == 0 { None } else { Some(mesh.peers[i].ids[0]) };
        assert_eq!(by, expected, "peer {i}: whose proposal it was");
        agreed.push(tick);
        let c = mesh.peers[i].session.stats().confirmed_tick;
        assert!(c - from[i] >= 58 * 10, "peer {i} confirmed {} ticks in 10 s", c - from[i]);
    }
    assert!(agreed.iter().all(|&t| t == agreed[0]), "one disconnect tick everywhere: {agreed:?}");
    let end = mesh.confirmed();
    assert!(mesh.assert_in_sync_where_saved(end) > 500);
    assert_eq!(mesh.desyncs(), 0);
}

#[test]
fn three_peers_a_vanished_peer_is_dropped_by_everyone_and_the_event_says_who_proposed() {
    a_vanished_peer_is_dropped_by_everyone_and_the_event_says_who_proposed(63, 3);
}

#[test]
fn four_peers_a_vanished_peer_is_dropped_by_everyone_and_the_event_says_who_proposed() {
    a_vanished_peer_is_dropped_by_everyone_and_the_event_says_who_proposed(64, 4);
}

/// A player the others all propose gone is told so once (it would otherwise play
/// on alone, unaware); one proposer of three is not enough (see above).
#[test]
fn a_player_every_other_peer_proposes_gone_is_told_it_was_removed() {
    let victim = 2;
    let mut mesh = Mesh::new(65, 3, 1, link(), P2pConfig::default());
    mesh.run_until(2 * SEC);
    for _ in 0..3 {
        for from in [0, 1] {
            let l = plausible(&mesh, victim);
            let lie = [(victim as u16, l.confirmed)];
            forge(&mut mesh, victim, from, Lie { disconnects: &lie, ..l });
        }
        mesh.run_until(mesh.net.now() + SEC / 4);
    }
    let removed: Vec<&Event> =
        mesh.peers[victim].events.iter().filter(|e| matches!(e, Event::RemovedByPeers { .. })).collect();
    assert_eq!(removed.len(), 1, "told once: {:?}", mesh.peers[victim].events);
    assert!(matches!(*removed[0], Event::RemovedByPeers { player, .. } if player == victim));
}
