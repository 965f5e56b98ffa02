//! Tests of the step encodings and entries.

use super::*;
use crate::relay::messages::{self, PlayerStep};
use crate::rng::Rng;

fn full(players: &[PlayerStep]) -> Vec<u8> {
    let mut b = Vec::new();
    messages::write_step(&mut b, players);
    b
}

/// A random step: some of players 0..8, inputs of 2 bytes drawn from few values (so
/// parts repeat), merges and substitutes.
fn random_step(rng: &mut Rng) -> Vec<PlayerStep> {
    let mut step = Vec::new();
    for player in 0..8u32 {
        if rng.next_u64() % 4 == 0 {
            continue;
        }
        let accepted = [1u8, 1, 1, 1, 0, 2][(rng.next_u64() % 6) as usize];
        let inputs = (0..accepted.max(1)).map(|_| vec![(rng.next_u64() % 3) as u8, 0]).collect();
        step.push(PlayerStep { player, accepted, inputs });
    }
    step
}

#[test]
fn deltas_rebuild_every_step_exactly() {
    let rules = StepRules { max_input: 2, input_size: Some(2), max_players: Some(8) };
    for seed in 0..20 {
        let mut rng = Rng::new(seed);
        let mut prev = full(&[]);
        let (mut delta, mut rebuilt) = (Vec::new(), Vec::new());
        for _ in 0..200 {
            let cur = full(&random_step(&mut rng));
            encode_delta(&mut delta, &prev, &cur);
            check_body(StepForm::Delta, &delta, &rules).unwrap();
            expand_delta(&mut rebuilt, &prev, &delta).unwrap();
            assert_eq!(rebuilt, cur, "seed {seed}");
            prev = cur;
        }
    }
}

#[test]
fn an_unchanged_input_costs_one_bit() {
    let step = |b: u8| -> Vec<PlayerStep> {
        (0..16).map(|p| PlayerStep { player: p, accepted: 1, inputs: vec![vec![b; 16]] }).collect()
    };
    let (a, b) = (full(&step(1)), full(&step(1)));
    let mut delta = Vec::new();
    encode_delta(&mut delta, &a, &b);
    // Count, roster flag, 2 bytes of bitmap: against 16 × 23 + 1 bytes in full.
    assert_eq!((delta.len(), b.len()), (4, 369));
    let mut c = step(1);
    c[5].inputs[0][3] = 9;
    encode_delta(&mut delta, &a, &full(&c));
    assert_eq!(delta.len(), 4 + 2 + 17, "one part changed: its accepted count, input count and input");
}

#[test]
fn a_delta_that_does_not_fit_its_previous_step_is_refused() {
    let p = |player, b: u8| PlayerStep { player, accepted: 1, inputs: vec![vec![b]] };
    let (a, b) = (full(&[p(0, 1), p(1, 2)]), full(&[p(0, 1), p(1, 3)]));
    let mut delta = Vec::new();
    encode_delta(&mut delta, &a, &b);
    let mut out = Vec::new();
    // Against a step with other players (same count, other roster: player 1's "same"
    // part is not there), and against one with fewer players.
    assert!(expand_delta(&mut out, &full(&[p(0, 1), p(2, 2)]), &delta).is_ok(), "roster same by count: rebuilt");
    let (c, d) = (full(&[p(3, 1), p(4, 1)]), full(&[p(3, 1), p(5, 1)]));
    encode_delta(&mut delta, &c, &d);
    assert_eq!(delta[1], 1, "another roster is listed");
    assert_eq!(
        expand_delta(&mut out, &full(&[p(4, 2), p(5, 1)]), &delta),
        Err(DecodeError::BadLength),
        "player 3 is not in it"
    );
    assert!(expand_delta(&mut out, &full(&[p(0, 1)]), &[2, 0, 0b11]).is_err(), "roster of 2 against 1 player");
    assert!(expand_delta(&mut out, &[], &[1, 0, 1]).is_err());
}

#[test]
fn bodies_are_checked_against_the_rules() {
    let rules = StepRules { max_input: 2, input_size: Some(2), max_players: Some(4) };
    let p = |player, input: &[u8]| PlayerStep { player, accepted: 1, inputs: vec![input.to_vec()] };
    assert!(check_body(StepForm::Full, &full(&[p(0, &[1, 2]), p(3, &[3, 4])]), &rules).is_ok());
    for bad in [
        full(&[p(0, &[1, 2]), p(4, &[3, 4])]),
        full(&[p(2, &[1, 2]), p(2, &[3, 4])]),
        full(&[p(0, &[1])]),
        vec![1, 0, 0, 0, 0, 2, 1, 2, 0, 0],
    ] {
        assert!(check_body(StepForm::Full, &bad, &rules).is_err(), "{bad:?}");
    }
    // Deltas: a roster flag other than 0/1, a listed roster out of order, a short bitmap.
    assert!(check_body(StepForm::Delta, &[1, 2, 1], &rules).is_err());
    assert!(check_body(StepForm::Delta, &[2, 1, 3, 0, 0, 0, 1, 0, 0, 0, 0b11], &rules).is_err());
    assert!(check_body(StepForm::Delta, &[9, 0, 0xff], &rules).is_err());
    assert!(check_body(StepForm::Delta, &[2, 0, 0b11], &rules).is_ok());
}

#[test]
fn entries_and_pieces_read_back_and_lies_are_refused() {
    let rules = StepRules::any(8);
    let body = full(&[PlayerStep { player: 0, accepted: 1, inputs: vec![vec![1]] }]);
    let mut b = Vec::new();
    write_entry(&mut b, 3, StepForm::Full, &body);
    let piece = vec![7u8; FRAGMENT_BYTES];
    write_fragment_head(&mut b, 4, StepForm::Delta, 1, 3, piece.len());
    b.extend_from_slice(&piece);
    let mut r = Reader::new(&b);
    let e = read_entry(&mut r, 100, &rules).unwrap();
    assert_eq!(e, Entry { tick: 103, form: StepForm::Full, fragment: None, bytes: &body });
    let e = read_entry(&mut r, 100, &rules).unwrap();
    assert_eq!((e.tick, e.form, e.fragment, e.bytes.len()), (104, StepForm::Delta, Some((1, 3)), FRAGMENT_BYTES));
    assert!(r.is_empty());
    let lie = |index: u8, count: u8, len: usize| {
        let mut b = Vec::new();
        write_fragment_head(&mut b, 0, StepForm::Full, index, count, len);
        b.extend(std::iter::repeat_n(0, len));
        read_entry(&mut Reader::new(&b), 0, &rules).map(|e| e.fragment)
    };
    assert!(lie(0, 2, FRAGMENT_BYTES).is_ok() && lie(1, 2, 1).is_ok());
    assert!(lie(2, 2, 1).is_err(), "index past the count");
    assert!(lie(0, 1, 1).is_err(), "a body in one piece is not a fragment");
    assert!(lie(0, 2, 10).is_err(), "a short middle piece");
    assert!(lie(1, 2, 0).is_err(), "an empty last piece");
    // Past the end of the tick range; an unknown form.
    let mut b = Vec::new();
    write_entry(&mut b, 1, StepForm::Full, &body);
    assert!(read_entry(&mut Reader::new(&b), Tick::MAX - 1, &rules).is_err());
    b[2] = 5;
    assert!(read_entry(&mut Reader::new(&b), 0, &rules).is_err());
}
