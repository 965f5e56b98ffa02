//! Request-level tests of the [`Predictor`](super::Predictor): the exact sequences an
//! engine sees for confirmed predictions, wrong guesses, nudges, joins and catch-up.

use super::*;

fn ps(player: u32, accepted: u8, input: u8) -> PlayerStep {
    PlayerStep { player, accepted, inputs: vec![vec![input]; accepted.max(1) as usize] }
}

/// The requests of the batch, in a compact form: (kind, tick, authoritative,
/// resimulating, inputs) with kind L(oad), S(ave), A(dvance), R(estore).
fn drain(p: &mut Predictor) -> Vec<(char, Tick, bool, bool, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(r) = p.poll_request() {
        out.push(match r {
            Request::Load { tick, .. } => ('L', tick, false, false, vec![]),
            Request::Save { tick, .. } => ('S', tick, false, false, vec![]),
            Request::Restore { tick, .. } => ('R', tick, false, false, vec![]),
            Request::Advance { tick, inputs, resimulating, authoritative } => {
                ('A', tick, authoritative, resimulating, inputs.bytes().to_vec())
            }
            Request::DumpState { tick, .. } => ('D', tick, false, false, vec![]),
        });
    }
    for &(k, t, ..) in &out {
        if k == 'S' {
            assert!(p.confirm_save(t, t as u64), "save of {t} still in the ring");
        }
    }
    out
}

fn predictor() -> Predictor {
    let mut p = Predictor::new(PredictorConfig {
        input_size: 1,
        max_players: 2,
        max_prediction: 8,
        max_catchup_ticks: 8,
        pending_capacity: 64,
    });
    p.set_local_player(0);
    p
}

/// One client tick: our input for `client_tick`, then the steps, then prediction.
fn tick(
    p: &mut Predictor,
    client_tick: Tick,
    input: u8,
    steps: &[(Tick, Vec<PlayerStep>)],
) -> Vec<(char, Tick, bool, bool, Vec<u8>)> {
    p.push_local(client_tick, &[input]);
    p.begin_batch();
    for (t, s) in steps {
        assert_ne!(p.on_step(*t, s, Some(100)), StepOutcome::Lost);
    }
    p.finish_batch(true, 0);
    drain(p)
}

#[test]
fn predicts_confirms_for_free_and_repredicts_only_on_a_wrong_guess() {
    let mut p = predictor();
    p.push_local(100, &[1]);
    p.begin_batch();
    p.restore(10, b"state");
    p.on_step(10, &[ps(0, 1, 1), ps(1, 1, 5)], Some(100));
    p.finish_batch(true, 0);
    assert_eq!(
        drain(&mut p),
        vec![
            ('R', 10, false, false, vec![]),
            ('S', 10, false, false, vec![]),
            ('A', 10, true, false, vec![1, 5]),
            ('S', 11, false, false, vec![])
        ]
    );
    // Three ticks ahead: our inputs, the other player's last one repeated.
    assert_eq!(tick(&mut p, 101, 2, &[]), vec![('A', 11, false, false, vec![2, 5]), ('S', 12, false, false, vec![])]);
    tick(&mut p, 102, 2, &[]);
    tick(&mut p, 103, 3, &[]);
    assert_eq!((p.authoritative_tick(), p.current_tick(), p.pending()), (11, 14, 3));
    // Step 11 as predicted: relabelled, no engine work; the prediction moves one on.
    let r = tick(&mut p, 104, 3, &[(11, vec![ps(0, 1, 2), ps(1, 1, 5)])]);
    assert_eq!(r, vec![('A', 14, false, false, vec![3, 5]), ('S', 15, false, false, vec![])]);
    assert_eq!(p.stats().confirmed_predictions, 1);
    // Step 12: the other player changed to 6. Load 12, apply it, save, re-predict
    // 13 and 14 with the new guess, then the new tick 15.
    let r = tick(&mut p, 105, 3, &[(12, vec![ps(0, 1, 2), ps(1, 1, 6)])]);
    assert_eq!(
        r,
        vec![
            ('L', 12, false, false, vec![]),
            ('A', 12, true, true, vec![2, 6]),
            ('S', 13, false, false, vec![]),
            ('A', 13, false, true, vec![3, 6]),
            ('S', 14, false, false, vec![]),
            ('A', 14, false, true, vec![3, 6]),
            ('S', 15, false, false, vec![]),
            ('A', 15, false, false, vec![3, 6]),
            ('S', 16, false, false, vec![]),
        ]
    );
    let st = p.stats();
    assert_eq!((st.repredictions, st.remote_mispredictions, st.local_mispredictions, st.max_resim_depth), (1, 1, 0, 3));
}

#[test]
fn accepted_counts_nudge_the_timeline_and_joins_repredict() {
    let mut p = predictor();
    p.push_local(100, &[1]);
    p.begin_batch();
    p.restore(10, b"state");
    p.on_step(10, &[ps(0, 1, 1)], Some(100));
    p.finish_batch(true, 0);
    drain(&mut p);
    for (c, i) in [(101, 2), (102, 3)] {
        tick(&mut p, c, i, &[]);
    }
    assert_eq!((p.authoritative_tick(), p.current_tick()), (11, 13));
    // Step 11 used none of our inputs (they were late): our input 2 now goes to
    // tick 12, so the prediction is one tick further ahead.
    let r = tick(&mut p, 103, 4, &[(11, vec![ps(0, 0, 1)])]);
    assert_eq!(r[0], ('L', 11, false, false, vec![]));
    assert_eq!(r[1], ('A', 11, true, true, vec![1, 0]));
    assert_eq!((p.authoritative_tick(), p.current_tick(), p.pending()), (12, 15, 3));
    let predicted: Vec<_> = r.iter().filter(|x| x.0 == 'A' && !x.2).map(|x| (x.1, x.4[0])).collect();
    assert_eq!(predicted, vec![(12, 2), (13, 3), (14, 4)]);
    assert_eq!(p.stats().local_late, 1);
    assert_eq!(p.stats().local_mispredicted_on_time, 0);
    // A merge of two: the timeline moves back by one.
    let r = tick(&mut p, 104, 5, &[(12, vec![PlayerStep { player: 0, accepted: 2, inputs: vec![vec![2], vec![3]] }])]);
    assert_eq!(r[1], ('A', 12, true, true, vec![3, 0]), "a merge applies the newest input");
    assert_eq!((p.authoritative_tick(), p.current_tick(), p.pending()), (13, 15, 2));
    // Player 1 appears: its presence was not predicted.
    let r = tick(&mut p, 105, 5, &[(13, vec![ps(0, 1, 4), ps(1, 1, 9)])]);
    assert_eq!(r[0], ('L', 13, false, false, vec![]));
    assert_eq!(p.poll_presence_change(), Some((1, 13, true)));
    // and is then predicted to repeat its input.
    assert_eq!(r.last().map(|x| x.0), Some('S'));
    assert!(r.iter().filter(|x| x.0 == 'A' && !x.2).all(|x| x.4[1] == 9));
}

#[test]
fn catching_up_is_bounded_and_prediction_waits_for_it() {
    let mut p = Predictor::new(PredictorConfig {
        input_size: 1,
        max_players: 1,
        max_prediction: 8,
        max_catchup_ticks: 4,
        pending_capacity: 64,
    });
    p.set_local_player(0);
    p.push_local(0, &[1]);
    p.begin_batch();
    p.restore(50, b"s");
    let mut applied = 0;
    for t in 50..60 {
        if !p.can_take_step() {
            break;
        }
        p.on_step(t, &[ps(0, 0, 0)], None);
        applied += 1;
    }
    p.finish_batch(false, 0);
    assert_eq!(applied, 4);
    let r = drain(&mut p);
    assert_eq!(r.iter().filter(|x| x.0 == 'A').count(), 4);
    assert!(r.iter().filter(|x| x.0 == 'A').all(|x| x.2 && !x.3), "authoritative, first time");
    assert_eq!(p.current_tick(), p.authoritative_tick(), "no prediction while behind");
}

#[test]
fn the_engines_own_guess_replaces_repeat_last() {
    let mut p = predictor();
    p.push_local(100, &[1]);
    p.begin_batch();
    p.restore(10, b"state");
    p.on_step(10, &[ps(0, 1, 1), ps(1, 1, 5)], Some(100));
    p.finish_batch(true, 0);
    drain(&mut p);
    p.set_prediction(1, Some(&[7]));
    assert_eq!(tick(&mut p, 101, 2, &[]), vec![('A', 11, false, false, vec![2, 7]), ('S', 12, false, false, vec![])]);
    // A right guess costs nothing when the step comes.
    let r = tick(&mut p, 102, 2, &[(11, vec![ps(0, 1, 2), ps(1, 1, 7)])]);
    assert_eq!(r, vec![('A', 12, false, false, vec![2, 7]), ('S', 13, false, false, vec![])]);
    assert_eq!(p.stats().confirmed_predictions, 1);
    p.set_prediction(1, None);
    let r = tick(&mut p, 103, 2, &[]);
    assert_eq!(r[0].4, vec![2, 7], "back to repeating the last canonical input (7)");
}

/// A Welcome with tick 0xFFFFFFFF: logging the checksums of authoritative
/// ticks walked `auth_logged..=auth` with `auth_logged += 1`, which wrapped to 0 past
/// `Tick::MAX` in a release build and looped forever inside `tw_session_advance`.
/// No loop may be bounded by a number from the wire.
#[test]
fn a_snapshot_at_the_last_tick_does_not_hang_the_checksum_log() {
    for tick in [Tick::MAX, Tick::MAX - 1, Tick::MAX - 300] {
        let mut p = predictor();
        p.restore(tick, &[1, 2, 3]);
        drain(&mut p);
        for _ in 0..3 {
            p.begin_batch();
            p.finish_batch(true, 0);
            drain(&mut p);
        }
        assert_eq!(p.authoritative_checksum(tick), Some(tick as u64), "the restored tick's checksum is logged");
    }
}
