//! Issue 31, finding 3: one liar harms only itself. A peer that sends different inputs
//! to different peers (equivocation) desyncs the honest peers from each other; the
//! desync must be reported as the liar's, on every honest peer, and never as a
//! desync between honest peers.
//!
//! The liar is an honest session behind a hook that rewrites its messages to some
//! peers (the victims): from tick `from` on, its input goes to them with one bit
//! flipped, the same at every resend. Covering its tracks, it sends them no checksum
//! reports, so that its own checksums, which match the peers that got its real
//! inputs, never show; else its reports go as they are.

#[path = "support/forge.rs"]
mod forge;
#[path = "support/toy_game.rs"]
mod toy_game;

use forge::equivocate;
use tickwire_proto::{DesyncDump, LinkConfig, LossModel, P2pConfig, RollbackEvent as Event};

use toy_game::{Mesh, TICK_US};

const SEC: u64 = 1_000_000;

/// The player a desync event blames, if any (one player per peer here: peer `i`
/// plays player `i`). Before the fix the only one named was the reporting peer
/// (`peer`): the honest peers named each other, and none the liar.
fn blamed(e: &Event) -> Option<usize> {
    match *e {
        Event::Desync { culprit, .. } => culprit,
        _ => None,
    }
}

fn run(n: usize, liar: usize, victims: &[usize], cover: bool, seed: u64) {
    let link = LinkConfig { latency_us: 3 * TICK_US, loss: LossModel::Bernoulli { p: 0.02 }, ..LinkConfig::perfect() };
    let cfg = P2pConfig::default();
    let interval = cfg.desync_interval;
    let mut mesh = Mesh::new(seed, n, 1, link, cfg);
    mesh.run_until(2 * SEC);
    // Far enough ahead that no input of these ticks has left the liar yet.
    let from = mesh.peers[liar].session.current_tick() + 30;
    equivocate(&mut mesh, liar, victims, from, cover);
    let mut dumps: Vec<Vec<DesyncDump>> = vec![Vec::new(); n];
    let end = mesh.net.now() + 10 * SEC;
    while mesh.net.now() < end {
        mesh.frame();
        for (i, p) in mesh.peers.iter_mut().enumerate() {
            if let Some(b) = p.session.take_desync_dump() {
                dumps[i].push(DesyncDump::decode(&b).expect("strict decode"));
            }
        }
    }
    for h in (0..n).filter(|&h| h != liar) {
        let desyncs: Vec<Event> =
            mesh.peers[h].events.iter().copied().filter(|e| matches!(e, Event::Desync { .. })).collect();
        let Some(&Event::Desync { tick, .. }) = desyncs.first() else {
            panic!("{n} peers: honest peer {h} saw no desync");
        };
        assert!(tick > from && tick <= from + interval, "{n} peers: peer {h} caught it at {tick}, from {from}");
        for e in &desyncs {
            assert_eq!(blamed(e), Some(liar), "{n} peers: honest peer {h} must blame the liar: {e:?}");
        }
        assert!(!dumps[h].is_empty(), "{n} peers: peer {h} dumped its first desync");
        for d in &dumps[h] {
            assert_eq!(d.culprit, Some(liar), "{n} peers: peer {h}'s dump blames the liar");
        }
    }
}

#[test]
fn three_peers_every_honest_peer_names_the_liar() {
    run(3, 1, &[2], true, 71);
}

#[test]
fn four_peers_every_honest_peer_names_the_liar() {
    run(4, 1, &[2, 3], true, 72);
}

/// A liar that reports its true checksums and digests to everyone: the peers it lied
/// to also compare with it, and name it from its own digests.
#[test]
fn a_liar_whose_reports_are_true_is_named_too() {
    run(3, 0, &[1], false, 73);
    run(4, 2, &[0], false, 74);
}
