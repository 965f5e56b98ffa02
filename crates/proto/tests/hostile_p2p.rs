//! A P2P peer that lies: numbers in its messages that contradict what the receiver
//! knows. Each lie closes that peer with a reason and nothing else stalls; a peer
//! that stops making progress while still talking is dropped at the timeout.
//!
//! The forged messages are handed to the session as the endpoint would deliver them
//! from the peer's connection (what a corrupted or hostile datagram becomes once the
//! transport has accepted it).
//!
//! Its tests read the process's heap peak (`support/heap.rs` installs a counting
//! global allocator; they take turns): hence a binary of its own, not a module of
//! `tests/proto/`, so that no other test's allocations land in their window.

#[path = "support/heap.rs"]
mod heap;
#[path = "support/toy_game.rs"]
#[allow(dead_code)] // shared with tests/proto/ (which uses all of it); this binary uses a part
mod toy_game;

use tickwire_proto::wire::p2p::{Header, KIND_INPUT, encode};
use tickwire_proto::{DisconnectReason, LinkConfig, P2pConfig, PeerId, RollbackEvent as Event, Tick};
use toy_game::{Mesh, TICK_US};

const SEC: u64 = 1_000_000;

fn link() -> LinkConfig {
    LinkConfig { latency_us: 3 * TICK_US, ..LinkConfig::perfect() }
}

/// A message "from" the peer behind `from` on `mesh.peers[to]`, with the given numbers.
fn forge(mesh: &mut Mesh, to: usize, from: usize, tick: Tick, ack: Tick, confirmed: Tick) {
    let h = Header {
        kind: KIND_INPUT,
        tick,
        ack,
        confirmed,
        advantage: 0.0,
        first: ack,
        count: 0,
        players: 1,
        loading: false,
    };
    let mut out = Vec::new();
    encode(&mut out, &h, 2, |_, _| &[0u8, 0][..], std::iter::empty(), std::iter::empty(), &[]);
    let now = mesh.net.local_now(mesh.peers[to].node);
    let id = mesh.peers[to].ids[from];
    mesh.peers[to].session.handle_message(now, id, &out);
}

fn dropped(mesh: &Mesh, on: usize, peer: PeerId) -> Option<DisconnectReason> {
    mesh.peers[on].events.iter().find_map(|e| match *e {
        Event::PeerDisconnected { peer: p, reason } if p == peer => Some(reason),
        _ => None,
    })
}

fn confirmed(mesh: &Mesh, i: usize) -> Tick {
    mesh.peers[i].session.stats().confirmed_tick
}

/// Before: `acked = max(acked, ack)` took the lie, the receiver stopped sending its
/// inputs, and both peers waited for each other forever while exchanging empty
/// messages (so the silence timeout never fired), with no event at all.
#[test]
fn an_ack_beyond_every_input_sent_closes_that_peer_and_play_goes_on() {
    let heap = heap::HeapWatch::start();
    let mut mesh = Mesh::new(31, 3, 1, link(), P2pConfig::default());
    mesh.run_until(2 * SEC);
    let before = confirmed(&mesh, 0);
    assert!(before > 90, "the match runs ({before})");
    let tick = mesh.peers[0].session.current_tick();
    forge(&mut mesh, 0, 1, tick, tick + 100_000, tick);
    mesh.run_until(8 * SEC);
    let liar = mesh.peers[0].ids[1];
    assert_eq!(dropped(&mesh, 0, liar), Some(DisconnectReason::ProtocolError), "the lying connection is closed");
    // Peers 0 and 2 keep playing (peer 1's player is disconnected for them). Their
    // states are not compared: peer 1, cut off from peer 0, proposes peer 0's player
    // disconnected to peer 2, and a participant of a mesh can always split it that
    // way (or by sending different inputs to different peers). What is guaranteed is
    // that nobody stalls and the closed connection has a reason; checksums then
    // report the split as DESYNC.
    for i in [0, 2] {
        let c = confirmed(&mesh, i);
        assert!(c > before + 300, "peer {i} kept confirming ticks: {before} -> {c}");
    }
    heap.report("an_ack_beyond_every_input_sent_closes_that_peer_and_play_goes_on", 16 << 20);
}

#[test]
fn two_peers_an_ack_from_the_future_is_not_a_deadlock() {
    let heap = heap::HeapWatch::start();
    let mut mesh = Mesh::new(32, 2, 1, link(), P2pConfig::default());
    mesh.run_until(2 * SEC);
    let before = confirmed(&mesh, 0);
    let tick = mesh.peers[0].session.current_tick();
    forge(&mut mesh, 0, 1, tick, tick.wrapping_add(100_000), tick);
    mesh.run_until(6 * SEC);
    assert_eq!(dropped(&mesh, 0, mesh.peers[0].ids[1]), Some(DisconnectReason::ProtocolError));
    for i in 0..2 {
        let c = confirmed(&mesh, i);
        assert!(c > before + 150, "peer {i} plays on alone: {before} -> {c}");
        assert!(
            mesh.peers[i].events.iter().any(|e| matches!(e, Event::PeerDisconnected { .. })),
            "peer {i} was told its peer is gone"
        );
    }
    heap.report("two_peers_an_ack_from_the_future_is_not_a_deadlock", 16 << 20);
}

/// A peer cannot have confirmed ticks it has not simulated.
#[test]
fn confirmed_beyond_the_senders_own_tick_closes_that_peer() {
    let heap = heap::HeapWatch::start();
    let mut mesh = Mesh::new(33, 2, 1, link(), P2pConfig::default());
    mesh.run_until(2 * SEC);
    let tick = mesh.peers[0].session.current_tick();
    forge(&mut mesh, 0, 1, tick, 1, tick + 5_000);
    mesh.run_until(3 * SEC);
    assert_eq!(dropped(&mesh, 0, mesh.peers[0].ids[1]), Some(DisconnectReason::ProtocolError));
    heap.report("confirmed_beyond_the_senders_own_tick_closes_that_peer", 16 << 20);
}

/// An ack within range but ahead of what the peer really has (a corrupted datagram
/// that happened to pass) must not stop the resends for good: the peer's next honest
/// message, with its real ack, brings them back.
#[test]
fn an_ack_ahead_of_the_truth_is_corrected_by_the_next_message() {
    let heap = heap::HeapWatch::start();
    let mut mesh = Mesh::new(34, 2, 1, link(), P2pConfig::default());
    mesh.run_until(2 * SEC);
    // Peer 1 stops hearing peer 0 for a moment, so it really lacks some inputs...
    let (a, b) = (mesh.peers[0].node, mesh.peers[1].node);
    mesh.net.set_link(a, b, LinkConfig { loss: tickwire_proto::LossModel::Bernoulli { p: 1.0 }, ..link() });
    mesh.run_until(2 * SEC + 200_000);
    // ...while peer 0 is told it has everything peer 0 ever sent.
    let tick = mesh.peers[0].session.current_tick();
    let sent = tick + mesh.peers[0].session.input_delay();
    forge(&mut mesh, 0, 1, tick, sent, 0);
    mesh.net.set_link(a, b, link());
    let before = confirmed(&mesh, 1);
    mesh.run_until(6 * SEC);
    let after = confirmed(&mesh, 1);
    assert!(after > before + 150, "peer 1 got the missing inputs again: {before} -> {after}");
    assert_eq!(dropped(&mesh, 0, mesh.peers[0].ids[1]), None, "a plausible ack closes nothing");
    heap.report("an_ack_ahead_of_the_truth_is_corrected_by_the_next_message", 16 << 20);
}

/// A peer that keeps talking but whose inputs stop coming blocks every tick: after
/// the disconnect timeout the others are told (NoProgress) and drop it, and play on.
#[test]
fn a_peer_that_talks_but_never_progresses_is_dropped_at_the_timeout() {
    let heap = heap::HeapWatch::start();
    let cfg = P2pConfig::default();
    let timeout = cfg.disconnect_timeout_us;
    let mut mesh = Mesh::new(35, 2, 1, link(), cfg);
    mesh.run_until(2 * SEC);
    mesh.peers[1].frozen = true;
    let before = confirmed(&mesh, 0);
    mesh.run_until(2 * SEC + timeout + 2 * SEC);
    let peer = mesh.peers[0].ids[1];
    assert!(
        mesh.peers[0].events.iter().any(|e| matches!(*e, Event::NoProgress { peer: p, .. } if p == peer)),
        "peer 0 was told who blocks: {:?}",
        mesh.peers[0].events
    );
    assert_eq!(dropped(&mesh, 0, peer), Some(DisconnectReason::NoProgress));
    assert!(confirmed(&mesh, 0) > before + 60, "peer 0 plays on after the drop");
    // The frozen side blames nobody else: its own engine is what stalls.
    assert!(
        !mesh.peers[1].events.iter().any(|e| matches!(e, Event::NoProgress { peer: p, .. } if *p != 0)),
        "{:?}",
        mesh.peers[1].events
    );
    heap.report("a_peer_that_talks_but_never_progresses_is_dropped_at_the_timeout", 16 << 20);
}
