//! What a relay client is told of the other players (issue 18, missing 4): a client
//! that joins a match in progress gets `PlayerJoined` for every player already there,
//! once, and a resync (a new snapshot on the same connection) does not repeat them.

use crate::support::relay_world::{World, link};
use tickwire_proto::{ClientSessionEvent, GameShape, RelayClientSessionConfig, RelayServerSessionConfig};

const SECOND: u64 = 1_000_000;

/// How many times client `i` was told that `player` joined.
fn joins_seen(w: &World, i: usize, player: u32) -> usize {
    w.count_events(i, |e| matches!(e, ClientSessionEvent::PlayerJoined { player: p, .. } if *p == player))
}

#[test]
fn a_late_joiner_is_told_of_every_player_already_present_once() {
    let s = RelayServerSessionConfig { game: GameShape::new(4, 2), ..RelayServerSessionConfig::default() };
    let c = RelayClientSessionConfig { game: GameShape::new(4, 2), ..RelayClientSessionConfig::default() };
    let mut w = World::new(71, link(0.02), s, c);
    for _ in 0..3 {
        w.add_client();
    }
    w.run_for(4 * SECOND);
    let late = w.add_client();
    w.run_for(4 * SECOND);
    let players: Vec<u32> = (0..4).map(|i| w.clients[i].session.player().expect("joined")).collect();
    for i in 0..4 {
        for (j, &p) in players.iter().enumerate() {
            let seen = joins_seen(&w, i, p);
            if i == j {
                assert_eq!(seen, 0, "client {i} is not told that it joined itself (JOINED says so)");
            } else {
                assert_eq!(seen, 1, "client {i} told once that player {p} is here: {:?}", w.clients[i].events);
            }
        }
    }
    // The late joiner heard of the others at the tick of its snapshot, before any later
    // join: they were there when it came.
    let tick = w.joined_tick(late);
    for e in &w.clients[late].events {
        if let ClientSessionEvent::PlayerJoined { tick: t, .. } = e {
            assert!(*t <= tick + 1, "present at the snapshot (tick {tick}), told at tick {t}");
        }
    }
    // A new snapshot on the same connection: the same players, nothing told again.
    w.clients[late].session.request_snapshot();
    w.run_for(3 * SECOND);
    let resyncs = w.count_events(late, |e| matches!(e, ClientSessionEvent::Resyncing { .. }));
    let rejoined = w.count_events(late, |e| matches!(e, ClientSessionEvent::Joined { .. }));
    assert_eq!((resyncs, rejoined), (1, 2), "resynced once: {:?}", w.clients[late].events);
    for &p in &players[..3] {
        assert_eq!(joins_seen(&w, late, p), 1, "player {p} not announced again after the resync");
    }
}
