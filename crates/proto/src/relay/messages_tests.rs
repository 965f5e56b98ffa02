//! Tests of the relay message codecs.

use super::*;
use crate::relay::step_codec::StepForm;

/// ClientInputs decoded into borrowed slices (allocates; the product decodes spans).
fn decode_client_inputs<'a>(
    data: &'a [u8],
    max_input: usize,
    inputs: &mut Vec<&'a [u8]>,
) -> Result<InputsHead<'a>, DecodeError> {
    let mut spans = Vec::new();
    let head = decode_client_input_spans(data, max_input, &mut spans)?;
    inputs.clear();
    inputs.extend(spans.iter().map(|&(o, n)| &data[o..o + n]));
    Ok(head)
}

#[test]
fn client_inputs_round_trip_and_reject_lies() {
    let mut b = Vec::new();
    let ins: Vec<&[u8]> = vec![b"ab", b"", b"xyz"];
    encode_client_inputs(&mut b, 7, &[0b101, 1], 100, ins.iter().copied());
    let mut out = Vec::new();
    let sack = [0b101u8, 1];
    let head = InputsHead { step_ack: 7, sack: &sack, first_tick: 100 };
    assert_eq!(decode_client_inputs(&b, 8, &mut out), Ok(head));
    assert_eq!(out, ins);
    let mut spans = Vec::new();
    assert_eq!(decode_client_input_spans(&b, 8, &mut spans), Ok(head));
    assert_eq!(spans.iter().map(|&(o, n)| &b[o..o + n]).collect::<Vec<_>>(), ins);
    assert!(decode_client_input_spans(&b, 2, &mut spans).is_err());
    assert!(decode_client_inputs(&b, 2, &mut out).is_err(), "input over the maximum");
    for n in 0..b.len() {
        assert!(decode_client_inputs(&b[..n], 8, &mut out).is_err());
    }
    let mut t = b.clone();
    t.push(0);
    assert!(decode_client_inputs(&t, 8, &mut out).is_err());
    drop(out);
    // A bitmap longer than the client's room is a lie.
    let long = [0u8; SACK_BYTES + 1];
    let mut b = Vec::new();
    encode_client_inputs(&mut b, 7, &long, 100, ins.iter().copied());
    let mut spans = Vec::new();
    assert_eq!(decode_client_input_spans(&b, 8, &mut spans).map(|h| h.sack.len()), Ok(SACK_BYTES), "cut at encoding");
    b[5] = SACK_BYTES as u8 + 1;
    b.insert(6, 0);
    assert_eq!(decode_client_input_spans(&b, 8, &mut spans), Err(DecodeError::BadLength));
}

#[test]
fn server_update_round_trips() {
    let margins = [MarginReport { tick: 5, margin: -1.5, copy: 1 }, MarginReport { tick: 6, margin: 2.25, copy: 0 }];
    let steps = [
        vec![
            PlayerStep { player: 1, accepted: 1, inputs: vec![vec![1, 2]] },
            PlayerStep { player: 2, accepted: 0, inputs: vec![vec![]] },
        ],
        vec![PlayerStep { player: 1, accepted: 2, inputs: vec![vec![3], vec![4]] }],
    ];
    let mut b = Vec::new();
    let head = UpdateHead {
        server_tick: 900,
        your_player: 2,
        shift: -3,
        input_ack: 41,
        depth: 5,
        first_input: 17,
        substituted: 0xFFFE,
        late_substituted: 0xFFFD,
    };
    let checks = [(870, 0xDEAD_BEEF_0123_4567u64), (900, 1)];
    encode_server_update_head(&mut b, &head, &margins, &checks, 80);
    assert_eq!(b.len(), update_head_size(margins.len(), checks.len()));
    let (full0, full1) = (encoded(&steps[0]), encoded(&steps[1]));
    let mut delta1 = Vec::new();
    step_codec::encode_delta(&mut delta1, &full0, &full1);
    step_codec::write_entry(&mut b, 0, StepForm::Full, &full0);
    step_codec::write_entry(&mut b, 1, StepForm::Delta, &delta1);
    let piece = vec![0u8; step_codec::FRAGMENT_BYTES];
    step_codec::write_fragment_head(&mut b, 7, StepForm::Delta, 0, 3, piece.len());
    b.extend_from_slice(&piece);
    set_entry_count(&mut b, margins.len(), checks.len(), 3);
    let u = decode_server_update(&b, 8).unwrap();
    assert_eq!(u.head, head);
    assert_eq!(u.margins, margins);
    assert_eq!(u.checks, checks);
    assert_eq!(
        u.entries,
        vec![
            (80, StepForm::Full, None, full0.clone()),
            (81, StepForm::Delta, None, delta1.clone()),
            (87, StepForm::Delta, Some((0, 3)), piece.clone()),
        ]
    );
    let mut v = UpdateView::with_datagram_capacity();
    decode_server_update_into(&b, &StepRules::any(8), &mut v).unwrap();
    assert_eq!(v.n_entries(), 3);
    assert_eq!(step_accepted(&full0, 2), Some(0));
    for n in 0..b.len() {
        assert!(decode_server_update(&b[..n], 8).is_err());
    }
    // accepted 2 with one input is a lie.
    let bad = one_step_update(&[PlayerStep { player: 1, accepted: 2, inputs: vec![vec![1]] }]);
    assert_eq!(decode_server_update(&bad, 8), Err(DecodeError::BadLength));
}

fn encoded(players: &[PlayerStep]) -> Vec<u8> {
    let mut b = Vec::new();
    write_step(&mut b, players);
    b
}

/// A server update head for player 1 at tick 1 with nothing else in it.
fn plain_head() -> UpdateHead {
    UpdateHead {
        server_tick: 1,
        your_player: 1,
        shift: 0,
        input_ack: NONE,
        depth: 0,
        first_input: NONE,
        substituted: 0,
        late_substituted: 0,
    }
}

fn one_step_update(players: &[PlayerStep]) -> Vec<u8> {
    let mut b = Vec::new();
    let h = plain_head();
    encode_server_update_head(&mut b, &h, &[], &[], 1);
    step_codec::write_entry(&mut b, 0, StepForm::Full, &encoded(players));
    set_entry_count(&mut b, 0, 0, 1);
    b
}

#[test]
fn step_rules_refuse_unknown_players_repeats_and_wrong_sizes() {
    let p = |player, input: &[u8]| PlayerStep { player, accepted: 1, inputs: vec![input.to_vec()] };
    let rules = StepRules { max_input: 8, input_size: Some(2), max_players: Some(4) };
    let mut v = UpdateView::default();
    let good = one_step_update(&[p(0, &[1, 2]), p(3, &[3, 4])]);
    assert_eq!(decode_server_update_into(&good, &rules, &mut v), Ok(()));
    let mut out = vec![p(9, &[7; 5]); 3];
    let e = v.entries(&good, &rules).next().unwrap();
    decode_step_into(e.bytes, &mut out, &mut StepParts::default()).unwrap();
    assert_eq!(out, vec![p(0, &[1, 2]), p(3, &[3, 4])]);
    for bad in [
        one_step_update(&[p(0, &[1, 2]), p(4, &[3, 4])]),
        one_step_update(&[p(2, &[1, 2]), p(2, &[3, 4])]),
        one_step_update(&[p(2, &[1, 2]), p(1, &[3, 4])]),
        one_step_update(&[p(0, &[1])]),
    ] {
        assert_eq!(decode_server_update_into(&bad, &rules, &mut v), Err(DecodeError::BadLength));
        assert!(v.head.is_none());
    }
}

/// Counts on the wire are u8 and every entry takes bytes, so a message that claims
/// more entries than it holds fails at the first missing one: nothing is reserved
/// from a count.
#[test]
fn claimed_counts_never_reserve_more_than_the_bytes_hold() {
    // ClientInputs claiming 255 inputs but holding two.
    let mut spans = Vec::new();
    let ci = [KIND_CLIENT_INPUTS, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 1, 7, 0];
    assert!(decode_client_input_spans(&ci, 8, &mut spans).is_err());
    assert!(spans.len() <= 2 && spans.capacity() < 255, "{} spans, capacity {}", spans.len(), spans.capacity());
    // A step claiming 255 players, then one player claiming 255 inputs, holding none.
    let mut parts = StepParts::default();
    let mut out = Vec::new();
    assert!(decode_step_into(&[255], &mut out, &mut parts).is_err());
    assert!(out.len() <= 1 && out.capacity() < 255);
    assert!(decode_step_into(&[1, 0, 0, 0, 0, 1, 255], &mut out, &mut parts).is_err());
    assert_eq!(out.len(), 1);
    assert!(out[0].inputs.is_empty() && out[0].inputs.capacity() < 255);
    // A ServerUpdate claiming 255 margins, checksums or steps and holding none.
    let mut v = UpdateView::default();
    let mut head = one_step_update(&[])[..update_head_size(0, 0)].to_vec();
    // No margins, checksums or steps: it decodes.
    let (margins_at, checks_at, steps_at) = (26, 27, 32);
    head[steps_at] = 0;
    assert_eq!(decode_server_update_into(&head, &StepRules::any(8), &mut v), Ok(()));
    for count_at in [margins_at, checks_at, steps_at] {
        let mut b = head.clone();
        b[count_at] = 255;
        assert!(decode_server_update_into(&b, &StepRules::any(8), &mut v).is_err(), "count at {count_at}");
        assert!(v.head.is_none());
        assert!(v.margins.capacity() < 255 && v.checks.capacity() < 255 && v.n_entries() == 0);
    }
}
