//! The synctest session: it passes a deterministic game and catches an injected
//! nondeterminism, reporting the tick and both checksums.

#[path = "support/toy_game.rs"]
mod toy_game;

use tickwire_proto::{AdvanceStatus, RollbackEvent as Event, SyncTestSession};
use toy_game::{Answer, Game, input_for};

/// Runs `ticks` ticks; returns the mismatch events.
fn run(game: &mut Game, distance: u32, ticks: u32) -> Vec<Event> {
    let players = 2;
    let mut s = SyncTestSession::new(players, 2, distance).unwrap();
    let nondeterministic = game.nondeterministic;
    *game = Game::new(players, s.state_slots());
    let mut events = Vec::new();
    for t in 0..ticks {
        for p in 0..players {
            s.add_input(p, &input_for(3, p, t, 3)).unwrap();
        }
        assert_eq!(s.advance(), AdvanceStatus::Advanced);
        game.nondeterministic = nondeterministic;
        while let Some(r) = s.poll_request() {
            if let Some(Answer::Saved(tick, c)) = game.apply(r) {
                s.confirm_save(tick, c).unwrap();
            }
        }
        while let Some(e) = s.poll_event() {
            events.push(e);
        }
    }
    events
}

#[test]
fn deterministic_game_passes_at_every_distance() {
    for d in [1, 2, 7] {
        let mut g = Game::new(2, 1);
        let ev = run(&mut g, d, 2_000);
        assert!(ev.is_empty(), "distance {d}: {ev:?}");
        // Each tick is simulated once, and from tick d-1 on d more ticks are resimulated.
        let (n, d) = (2_000u64, d as u64);
        assert_eq!(g.advances, n + d * (n - d + 1));
        assert_eq!(g.resimulated, d * (n - d + 1));
    }
}

#[test]
fn injected_nondeterminism_is_caught_with_tick_and_both_checksums() {
    let mut g = Game::new(2, 1);
    g.nondeterministic = true;
    let ev = run(&mut g, 2, 200);
    let first = ev.first().expect("a mismatch is reported");
    match *first {
        Event::SyncTestMismatch { tick, expected, actual } => {
            assert!(tick > 0 && tick < 20, "found early, at tick {tick}");
            assert_ne!(expected, actual);
        }
        ref e => panic!("unexpected event {e:?}"),
    }
    assert!(ev.len() > 10, "keeps reporting: {}", ev.len());
}
