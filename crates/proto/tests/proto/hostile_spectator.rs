//! A spectator fed by a host that lies (issue 31, "look for more of the same kind"):
//! every number of the host's messages that the spectator can check against what it
//! already knows is checked, and a contradiction is refused and counted instead of
//! moving the spectator's clock or catch-up for good.
//!
//! The messages are forged with the public wire format and handed to the session as
//! the endpoint would deliver them from the host's connection.

use crate::support::toy_game;
use tickwire_proto::wire::p2p::{Header, KIND_SPECTATE, KIND_SPECTATOR_ACK, encode};
use tickwire_proto::{AdvanceStatus, GameShape, PeerId, SpectatorConfig, SpectatorSession, Tick};

const HOST: PeerId = 1;
const PLAYERS: usize = 2;
/// The first byte of the host's snapshot message (`rollback::p2p::KIND_SNAPSHOT_BYTE`,
/// which the crate does not export).
const SNAPSHOT_KIND: u8 = 0x24;

fn cfg() -> SpectatorConfig {
    SpectatorConfig { game: GameShape::new(PLAYERS, 2), ..SpectatorConfig::default() }
}

/// The host's confirmed inputs for `count` ticks from `first` (every input `[7, 7]`),
/// with the given disconnect entries (player, tick).
fn spectate(first: Tick, count: u8, disconnects: &[(u16, Tick)]) -> Vec<u8> {
    let end = first + count as Tick;
    let h = Header {
        kind: KIND_SPECTATE,
        tick: end,
        ack: 0,
        confirmed: end,
        advantage: 0.0,
        first,
        count,
        players: PLAYERS as u8,
        loading: false,
    };
    let mut out = Vec::new();
    encode(&mut out, &h, 2, |_, _| &[7u8, 7][..], disconnects.iter().copied(), std::iter::empty(), &[]);
    out
}

/// The host's join snapshot for a spectator: `u8 kind, u32 tick, state` (reliable).
fn snapshot(tick: Tick, state: &[u8]) -> Vec<u8> {
    let mut m = vec![SNAPSHOT_KIND];
    m.extend_from_slice(&tick.to_le_bytes());
    m.extend_from_slice(state);
    m
}

/// Plays as the engine would, `n` times; returns how many advances played a tick.
fn play(s: &mut SpectatorSession, n: usize) -> usize {
    let mut played = 0;
    for _ in 0..n {
        if s.advance() == AdvanceStatus::Advanced {
            played += 1;
        }
        while s.poll_request().is_some() {}
    }
    played
}

/// A spectator that has received and played ticks 0..40 from tick 0.
fn watching() -> SpectatorSession {
    let mut s = SpectatorSession::new(cfg(), HOST).unwrap();
    s.handle_message(HOST, &spectate(0, 40, &[]));
    play(&mut s, 100);
    assert_eq!(s.current_tick(), 40);
    assert_eq!(s.malformed(), 0);
    s
}

/// Before: a disconnect entry at a tick whose inputs the host had already confirmed
/// (here tick 0, for every player) took every queue back to "disconnected since 0":
/// the spectator then counted Tick::MAX as received, ran at catch-up speed past
/// everything the host had sent, with made-up (disconnected) inputs, for good.
#[test]
fn a_disconnect_before_inputs_already_confirmed_is_refused() {
    let mut s = watching();
    s.handle_message(HOST, &spectate(40, 0, &[(0, 0), (1, 0)]));
    assert_eq!(s.malformed(), 1, "the contradiction is counted");
    assert_eq!(s.frames_behind(), 0, "nothing more was received");
    assert_eq!(play(&mut s, 50), 0, "and nothing is played");
    assert_eq!(s.current_tick(), 40);
    // The honest feed goes on.
    s.handle_message(HOST, &spectate(40, 5, &[]));
    assert_eq!(play(&mut s, 50), 5);
    assert_eq!(s.current_tick(), 45);
}

/// A disconnect entry for a player the match does not have is refused and counted
/// (before, it was skipped without a trace while the rest of the message was taken).
#[test]
fn a_disconnect_of_a_player_that_does_not_exist_is_refused() {
    let mut s = watching();
    s.handle_message(HOST, &spectate(40, 5, &[(PLAYERS as u16, 42)]));
    assert_eq!(s.malformed(), 1);
    assert_eq!(s.frames_behind(), 0, "the message was refused whole");
}

/// Before: a host that declared every player disconnected from a tick still to come
/// made the spectator count Tick::MAX as received once it got there, and play on at
/// catch-up speed past every tick the host ever sent. Now it plays what was sent and
/// then waits.
#[test]
fn every_player_disconnected_does_not_run_the_spectator_past_what_was_sent() {
    let mut s = watching();
    s.handle_message(HOST, &spectate(40, 5, &[(0, 45), (1, 45)]));
    assert_eq!(s.malformed(), 0, "a disconnect still to come is consistent");
    assert_eq!(s.frames_behind(), 5);
    play(&mut s, 200);
    assert_eq!(s.current_tick(), 45, "played up to the disconnect tick, no further");
    // Ticks the host does send after it are played (with both players disconnected).
    s.handle_message(HOST, &spectate(45, 3, &[(0, 45), (1, 45)]));
    play(&mut s, 200);
    assert_eq!(s.current_tick(), 48);
}

/// Already held (this test could not fail before): inputs of a far-future first tick
/// are beyond the window and taken for nothing: they neither move the spectator's
/// clock nor start a catch-up.
#[test]
fn inputs_from_the_far_future_move_nothing() {
    let mut s = watching();
    s.handle_message(HOST, &spectate(4_000_000, 200, &[]));
    s.handle_message(HOST, &spectate(40 + 200, 200, &[]));
    assert_eq!(s.frames_behind(), 0);
    assert_eq!(play(&mut s, 50), 0);
    assert_eq!(s.current_tick(), 40);
    s.handle_message(HOST, &spectate(40, 3, &[]));
    assert_eq!(play(&mut s, 50), 3, "plays at the normal pace: one tick per advance");
}

/// Already held: a second snapshot (the host's join state) once the spectator has
/// started cannot move its clock; a message from another connection is not the host's.
#[test]
fn a_late_snapshot_or_a_stranger_moves_nothing() {
    let mut s = watching();
    s.handle_message(HOST, &snapshot(1_000_000, b"state"));
    s.handle_message(HOST + 1, &spectate(40, 5, &[]));
    assert_eq!(s.current_tick(), 40);
    assert_eq!(s.frames_behind(), 0);
    assert_eq!(s.malformed(), 2);
}

/// A spectator joined from a snapshot at tick 1000 learns, in the first inputs, of a
/// player disconnected long before: honest, and taken (that player's inputs count
/// as disconnected, the other's are played).
#[test]
fn a_disconnect_before_the_snapshot_is_taken() {
    let mut s = SpectatorSession::new(cfg(), HOST).unwrap();
    s.handle_message(HOST, &snapshot(1000, b"state"));
    assert!(s.is_started());
    s.handle_message(HOST, &spectate(1000, 4, &[(1, 700)]));
    assert_eq!(s.malformed(), 0);
    assert_eq!(play(&mut s, 50), 4);
    assert_eq!(s.current_tick(), 1004);
}

/// The host's side: an honest spectator that joins mid-match over a link much faster
/// than a frame (a LAN, localhost) acks the join snapshot's tick before the host has
/// sent it any input message. The host must not take that ack for one of ticks never
/// sent and drop the spectator. It did: `provide_state` (rollback/p2p/forensics.rs) set
/// the spectator's `acked` to the snapshot tick but left `sent_end` at 0, and
/// `handle_message` drops a spectator whose ack passes `sent_end`. The snapshot now
/// counts as sent up to its tick.
#[test]
fn a_spectator_acking_its_snapshot_on_a_fast_link_is_not_dropped() {
    use tickwire_proto::{EndpointConfig, LinkConfig, NetEvent, P2pConfig, Request, RollbackEvent};
    let link = LinkConfig { latency_us: 1_000, ..LinkConfig::perfect() };
    let mut mesh = toy_game::Mesh::new(7, 2, 1, link, P2pConfig::default());
    let start = mesh.net.now();
    mesh.run_until(start + 2_000_000);
    let spec_node = mesh.net.add(EndpointConfig::default());
    let host_addr = mesh.net.addr(mesh.peers[0].node);
    let now = mesh.net.local_now(spec_node);
    let host_on_spec = mesh.net.endpoint(spec_node).connect(now, host_addr).unwrap();
    let mut spec = SpectatorSession::new(cfg(), host_on_spec).unwrap();
    let mut added = None;
    let mut restored = false;
    for _ in 0..300 {
        if added.is_none() {
            let spec_addr = mesh.net.addr(spec_node);
            if let Some(&(id, _)) = mesh.peers[0].connected.iter().find(|c| c.1 == spec_addr) {
                mesh.peers[0].session.add_spectator(id);
                added = Some(id);
            }
        }
        let now = mesh.net.local_now(spec_node);
        let taken = mesh.net.take_events(spec_node);
        let was_started = spec.is_started();
        for e in taken {
            if let NetEvent::Message { peer, data, .. } = e {
                spec.handle_message(peer, &data);
            }
        }
        if !was_started && spec.is_started() {
            // The spectator's ack of the snapshot tick, as `send_messages` writes it,
            // arriving before the host's next frame (the race a fast link allows).
            let h = Header {
                kind: KIND_SPECTATOR_ACK,
                tick: spec.current_tick(),
                ack: spec.current_tick(),
                confirmed: 0,
                advantage: 0.0,
                first: 0,
                count: 0,
                players: 0,
                loading: false,
            };
            let mut ack = Vec::new();
            encode(&mut ack, &h, 2, |_, _| &[][..], std::iter::empty(), std::iter::empty(), &[]);
            let host_now = mesh.net.local_now(mesh.peers[0].node);
            mesh.peers[0].session.handle_message(host_now, added.unwrap(), &ack);
        }
        spec.advance();
        while let Some(r) = spec.poll_request() {
            restored |= matches!(r, Request::Restore { .. });
        }
        spec.send_messages(now, mesh.net.endpoint(spec_node), toy_game::TICK_US);
        mesh.net.flush(spec_node);
        mesh.frame();
    }
    let id = added.expect("the spectator connected");
    assert!(restored, "the spectator restored the join snapshot");
    let dropped =
        mesh.peers[0].events.iter().any(|e| matches!(*e, RollbackEvent::SpectatorDropped { peer } if peer == id));
    assert!(!dropped, "the host dropped an honest spectator");
    assert!(spec.current_tick() > 150, "the spectator plays ({})", spec.current_tick());
}
