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
//!
//! With four peers the others outvote it (`p2p/reconcile.rs`): every honest peer plays
//! the majority's inputs for the liar, the ones in the minority repair, and no desync
//! is reported between honest peers; with three there is no majority, and the desync
//! is reported, naming the liar.

use crate::support::forge::{equivocate, rewrite};
use tickwire_proto::{DesyncDump, LinkConfig, LossModel, P2pConfig, RollbackEvent as Event};

use crate::support::toy_game::{Mesh, TICK_US};

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
    if n >= 4 {
        return outvoted(&mut mesh, liar, victims, from);
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

/// Four peers or more: every honest peer names the liar (`InputsDisagree`, once), none
/// reports a desync with another honest peer, the peers in the minority took the
/// majority's inputs (from an honest peer) and repaired, and every honest peer played
/// the same game from the first lie to the end.
fn outvoted(mesh: &mut Mesh, liar: usize, victims: &[usize], from: u32) {
    let n = mesh.peers.len();
    let honest: Vec<usize> = (0..n).filter(|&h| h != liar).collect();
    let minority: Vec<usize> = if victims.len() * 2 > honest.len() {
        honest.iter().copied().filter(|h| !victims.contains(h)).collect()
    } else {
        victims.to_vec()
    };
    for &h in &honest {
        let p = &mesh.peers[h];
        let named: Vec<&Event> = p.events.iter().filter(|e| matches!(e, Event::InputsDisagree { .. })).collect();
        let [Event::InputsDisagree { player, tick, source }] = named[..] else {
            panic!("{n} peers: honest peer {h} must name the liar once: {:?}", p.events);
        };
        assert_eq!(*player, liar, "{n} peers: peer {h}");
        assert!(
            *tick > from && *tick <= from + 2 * P2pConfig::default().desync_interval,
            "peer {h}: {tick}, from {from}"
        );
        let honest_ids: Vec<_> = honest.iter().filter(|&&j| j != h).map(|&j| p.ids[j]).collect();
        assert!(
            !p.events.iter().any(|e| matches!(e, Event::Desync { peer, .. } if honest_ids.contains(peer))),
            "{n} peers: peer {h} reported a desync with an honest peer: {:?}",
            p.events
        );
        if minority.contains(&h) {
            let src = source.expect("the minority takes the majority's inputs");
            assert!(honest_ids.contains(&src), "peer {h} takes them from an honest peer");
            assert!(p.session.stats().repairs >= 1, "peer {h} repaired");
        } else {
            assert_eq!(*source, None, "peer {h} had the majority's inputs");
            assert_eq!(p.session.stats().repairs, 0);
        }
    }
    mesh.peers[liar].alive = false;
    let end = mesh.confirmed();
    assert!(end > from + 300, "the match went on: {end}");
    mesh.assert_in_sync(from.saturating_sub(30), end);
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

/// The other way round: the liar is a voter. Peer 0 plays honestly but tells peers 2
/// and 3 that player 1's inputs reached it otherwise (its digests of player 1 altered).
/// It is outvoted: nobody's inputs change, no honest peer repairs or reports a desync,
/// and every honest peer plays the same game. (Peers 2 and 3 see a dispute over
/// player 1, `InputsDisagree` with no source: from where they stand, player 1's peer
/// or peer 0 lied.)
#[test]
fn a_peer_that_misreports_digests_changes_nobodys_inputs() {
    let link = LinkConfig { latency_us: 3 * TICK_US, loss: LossModel::Bernoulli { p: 0.02 }, ..LinkConfig::perfect() };
    let mut mesh = Mesh::new(75, 4, 1, link, P2pConfig::default());
    mesh.run_until(2 * SEC);
    let from = mesh.confirmed();
    rewrite(&mut mesh, 0, &[2, 3], |m| {
        if m.digests.len() == 4 {
            m.digests[1] ^= 0x5a5a;
        }
    });
    mesh.run_until(12 * SEC);
    for h in 1..4 {
        let p = &mesh.peers[h];
        assert_eq!(p.session.stats().repairs, 0, "peer {h} changed inputs it had right");
        assert!(
            !p.events.iter().any(|e| matches!(e, Event::Desync { .. } | Event::PeerDisconnected { .. })),
            "peer {h}: {:?}",
            p.events
        );
        for e in &p.events {
            if let Event::InputsDisagree { player, source, .. } = *e {
                assert_eq!((player, source), (1, None), "peer {h}: only player 1's inputs are in dispute, and kept");
            }
        }
    }
    assert!(mesh.peers[2].events.iter().any(|e| matches!(e, Event::InputsDisagree { .. })), "the dispute is seen");
    mesh.peers[0].alive = false;
    let end = mesh.confirmed();
    mesh.assert_in_sync(from, end);
}

/// The reconciliation's messages from a peer are checked: an answer nobody asked for,
/// a request about the asker's own player, a second request within a tick and a
/// truncated one are refused (counted as malformed), and change nothing.
#[test]
fn repair_messages_nobody_asked_for_are_refused() {
    let mut mesh =
        Mesh::new(76, 4, 1, LinkConfig { latency_us: 3 * TICK_US, ..LinkConfig::perfect() }, P2pConfig::default());
    mesh.run_until(2 * SEC);
    let now = mesh.net.now();
    let from1 = mesh.peers[0].ids[1];
    let s = &mut mesh.peers[0].session;
    let req = |player: u16, from: u32, to: u32| {
        let mut m = vec![0x25];
        m.extend_from_slice(&player.to_le_bytes());
        m.extend_from_slice(&from.to_le_bytes());
        m.extend_from_slice(&to.to_le_bytes());
        m
    };
    let base = s.stats().malformed;
    let t = s.confirmed_tick() - 20;
    // Unasked answer: player 2, 1 tick.
    let mut answer = vec![0x26, 2, 0];
    answer.extend_from_slice(&t.to_le_bytes());
    answer.extend_from_slice(&[1, 0, 9, 9]);
    s.handle_message(now, from1, &answer);
    s.handle_message(now, from1, &req(1, t, t + 10)); // its own player
    s.handle_message(now, from1, &req(2, t, t + 10)); // served
    s.handle_message(now, from1, &req(2, t, t + 10)); // again within the tick
    s.handle_message(now, from1, &req(2, t, t + 10)[..7]); // truncated
    s.handle_message(now, from1, &req(2, t + 10, t)); // backwards
    assert_eq!(s.stats().malformed - base, 5, "{:?}", s.stats());
    assert_eq!(s.stats().repairs, 0);
    mesh.run_until(4 * SEC);
    assert_eq!(mesh.desyncs(), 0);
    let end = mesh.confirmed();
    mesh.assert_in_sync(0, end);
}
