//! The synctest session: it passes a deterministic game and catches an injected
//! nondeterminism, reporting the tick and both checksums.

use crate::support::toy_game::{Answer, Game, input_for};
use tickwire_proto::{AdvanceStatus, GameShape, RollbackEvent as Event, SyncTestSession};

/// Runs `ticks` ticks; returns the mismatch events.
fn run(game: &mut Game, distance: u32, ticks: u32) -> Vec<Event> {
    let players = 2;
    let mut s = SyncTestSession::new(GameShape::new(players, 2), distance).unwrap();
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

/// Issue 18, missing 5: the two states of a mismatch are handed over, as GGPO users
/// diff them with `log_game_state`: the saved one hashes to the expected checksum,
/// the resimulated one to the actual one. One pair at a time; taking both lets the
/// next mismatch be captured.
#[test]
fn a_mismatch_hands_over_the_saved_and_the_resimulated_state() {
    use tickwire_proto::SyncTestState;
    let players = 2;
    let mut s = SyncTestSession::new(GameShape::new(players, 2), 2).unwrap();
    let mut g = Game::new(players, s.state_slots());
    g.nondeterministic = true;
    let checksum_of = |bytes: &[u8]| {
        let mut probe = Game::new(players, 1);
        probe.deserialize(bytes);
        probe.checksum()
    };
    let (mut mismatches, mut captured) = (Vec::new(), Vec::new());
    for t in 0..120 {
        for p in 0..players {
            s.add_input(p, &input_for(3, p, t, 3)).unwrap();
        }
        s.advance();
        while let Some(r) = s.poll_request() {
            match g.apply(r) {
                Some(Answer::Saved(tick, c)) => s.confirm_save(tick, c).unwrap(),
                Some(Answer::State(tick, b)) => s.provide_state(tick, &b).unwrap(),
                None => {}
            }
        }
        while let Some(e) = s.poll_event() {
            match e {
                Event::SyncTestMismatch { tick, expected, actual } => mismatches.push((tick, expected, actual)),
                Event::SyncTestStatesReady { tick } => {
                    assert_eq!(s.ready_states(), Some(tick));
                    let saved = s.take_state(SyncTestState::Saved).expect("saved state");
                    assert_eq!(s.take_state(SyncTestState::Saved), None, "taken once");
                    let resimulated = s.take_state(SyncTestState::Resimulated).expect("resimulated state");
                    assert_eq!(s.ready_states(), None, "both taken: released");
                    captured.push((tick, checksum_of(&saved), checksum_of(&resimulated)));
                }
                e => panic!("unexpected {e:?}"),
            }
        }
    }
    assert!(mismatches.len() > 10, "a nondeterministic game keeps mismatching");
    assert!(captured.len() > 5, "one pair per mismatch taken in time: {}", captured.len());
    for (tick, saved, resim) in &captured {
        // A tick is resimulated in several batches; the pair is one of its mismatches.
        assert!(
            mismatches.contains(&(*tick, *saved, *resim)),
            "tick {tick}: the states hash to the checksums compared ({saved:x}, {resim:x}): {mismatches:x?}"
        );
    }
    // A state not asked for is refused.
    assert!(s.provide_state(5, &[0; 8]).is_err());
}

/// An engine that ignores DumpState requests loses nothing but the capture: the next
/// mismatch is asked for again.
#[test]
fn unanswered_dumps_are_asked_again_at_the_next_mismatch() {
    let mut s = SyncTestSession::new(GameShape::new(2, 2), 2).unwrap();
    let mut g = Game::new(2, s.state_slots());
    g.nondeterministic = true;
    let mut dumps = 0;
    for t in 0..60 {
        for p in 0..2 {
            s.add_input(p, &input_for(3, p, t, 3)).unwrap();
        }
        s.advance();
        while let Some(r) = s.poll_request() {
            dumps += matches!(r, tickwire_proto::Request::DumpState { .. }) as u32;
            if let Some(Answer::Saved(tick, c)) = g.apply(r) {
                s.confirm_save(tick, c).unwrap();
            }
        }
        assert!(s.ready_states().is_none());
    }
    assert!(dumps > 10, "asked again and again: {dumps}");
}
