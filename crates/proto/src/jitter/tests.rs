use super::*;
use crate::engine::Tick;

fn cfg() -> JitterConfig {
    JitterConfig {
        max_depth: 3,
        hard_cap: 10,
        max_starved_ticks: 5,
        late: LatePolicy::Delay,
        ..JitterConfig::default()
    }
}

#[test]
fn steady_inputs_are_consumed_one_per_tick_with_margins() {
    let mut j = JitterBuffer::new(cfg());
    // Inputs for client ticks 100.. arrive 0.5 tick before the server tick that eats them.
    for i in 0..50u32 {
        let out = j.push(i as f64 - 0.5, 100 + i, &[i as u8]);
        if i > 0 {
            assert_eq!(out, PushOutcome::Queued { margin: 0.5 });
        }
        let s = j.pop(i).unwrap();
        assert_eq!((s.kind, s.accepted, s.first_client_tick), (StepKind::Normal, 1, 100 + i));
        assert_eq!(s.inputs, &[vec![i as u8]]);
    }
    assert_eq!(j.stats().normal, 50);
}

#[test]
fn underflow_repeats_and_delays_then_merge_catches_up() {
    let mut j = JitterBuffer::new(cfg());
    j.push(-0.5, 10, &[1]);
    assert_eq!(j.pop(0).unwrap().accepted, 1);
    // Tick 1: nothing arrived.
    let s = j.pop(1).unwrap();
    assert_eq!((s.kind, s.accepted), (StepKind::Underflow, 0));
    assert_eq!(s.inputs, &[vec![1]], "repeat last");
    // Input 11 arrives late (its tick was 1); it is consumed at tick 2 instead.
    assert!(matches!(j.push(1.2, 11, &[2]), PushOutcome::Queued { margin } if margin > 0.0));
    assert_eq!(j.stats().late_arrivals, 0, "after the underflow its new deadline is tick 2");
    // A burst: 12..=16 arrive at once; depth 5 > 3 merges 3 of them with 11.
    for t in 12..=16 {
        j.push(1.3, t, &[t as u8]);
    }
    let s = j.pop(2).unwrap();
    assert_eq!((s.kind, s.accepted), (StepKind::Merged, 4));
    assert_eq!(s.inputs, &[vec![2], vec![12], vec![13], vec![14]]);
    assert_eq!(j.depth(), 2);
    assert_eq!(j.shift(), 1 - 3, "one underflow, one merge of 4");
}

#[test]
fn duplicates_and_lost_inputs() {
    let mut j = JitterBuffer::new(JitterConfig { underflow: UnderflowPolicy::Empty, ..cfg() });
    j.push(0.0, 5, &[5]);
    assert_eq!(j.push(0.0, 5, &[5]), PushOutcome::Duplicate);
    j.pop(0).unwrap();
    assert_eq!(j.push(0.5, 5, &[5]), PushOutcome::Duplicate, "already consumed");
    // 6 is lost for good; 7 arrives.
    j.push(0.9, 7, &[7]);
    let s = j.pop(1).unwrap();
    assert_eq!((s.kind, s.accepted, s.first_client_tick), (StepKind::Lost, 1, 6));
    assert_eq!(s.inputs, &[Vec::<u8>::new()], "empty policy");
    let s = j.pop(2).unwrap();
    assert_eq!((s.kind, s.first_client_tick), (StepKind::Normal, 7));
    assert_eq!(j.push(2.5, 8, &[0; 300]), PushOutcome::TooLarge);
}

#[test]
fn contiguous_received_stops_at_a_gap() {
    let mut j = JitterBuffer::new(cfg());
    assert_eq!(j.contiguous_received(), None);
    j.push(0.0, 10, &[0]);
    j.push(0.0, 11, &[0]);
    j.push(0.0, 13, &[0]);
    assert_eq!(j.contiguous_received(), Some(11), "12 is missing");
    j.push(0.1, 12, &[0]);
    assert_eq!(j.contiguous_received(), Some(13));
    j.pop(0).unwrap();
    assert_eq!(j.contiguous_received(), Some(13), "consumed inputs stay acknowledged");
}

#[test]
fn substitute_policy_keeps_consumption_aligned() {
    let mut j = JitterBuffer::new(JitterConfig { late: LatePolicy::Substitute, ..cfg() });
    j.push(-0.5, 10, &[1]);
    assert_eq!(j.pop(0).unwrap().accepted, 1);
    // Tick 1: input 11 is missing: substituted, not delayed.
    let s = j.pop(1).unwrap();
    assert_eq!((s.kind, s.accepted, s.first_client_tick), (StepKind::Lost, 1, 11));
    assert_eq!(s.inputs, &[vec![1]]);
    assert_eq!(j.shift(), 0, "no slip");
    // 11 arrives 0.3 tick after its tick ran: dropped, reported 0.3 late; a second
    // copy is a plain duplicate.
    assert!(matches!(j.push(1.3, 11, &[2]), PushOutcome::Late { margin } if (margin + 0.3).abs() < 1e-9));
    assert_eq!(j.push(1.4, 11, &[2]), PushOutcome::Duplicate);
    // 12 on time is consumed at tick 2.
    j.push(1.5, 12, &[3]);
    let s = j.pop(2).unwrap();
    assert_eq!((s.kind, s.first_client_tick), (StepKind::Normal, 12));
    // Dropped late: it counts as a late arrival, and as one whose step ran on a
    // substitute (the substituted inputs that never arrive are the rest of `lost`).
    assert_eq!(j.stats().late_substituted, 1);
    assert!(j.stats().late_arrivals >= j.stats().late_substituted);
}

#[test]
fn adaptive_substitutes_a_short_gap_and_waits_on_a_long_one() {
    let mut j = JitterBuffer::new(JitterConfig { late: LatePolicy::Adaptive { substitute_run: 2 }, ..cfg() });
    j.push(-0.5, 10, &[1]);
    assert_eq!(j.pop(0).unwrap().kind, StepKind::Normal);
    // Two missing inputs in a row are jitter: substituted, no slip.
    assert_eq!(j.pop(1).unwrap().kind, StepKind::Lost);
    assert_eq!(j.pop(2).unwrap().kind, StepKind::Lost);
    assert_eq!(j.shift(), 0);
    // The third empty tick means the stream itself is late: wait for it.
    let s = j.pop(3).unwrap();
    assert_eq!((s.kind, s.accepted, s.first_client_tick), (StepKind::Underflow, 0, 13));
    assert_eq!(j.shift(), 1);
    // It comes: consumed a tick later than planned, the slip stays (that lead is
    // what the late stream now needs).
    assert!(matches!(j.push(3.5, 13, &[4]), PushOutcome::Queued { margin } if margin > 0.0));
    let s = j.pop(4).unwrap();
    assert_eq!((s.kind, s.first_client_tick), (StepKind::Normal, 13));
    assert_eq!(j.shift(), 1);
    // One miss after the stream is back is substituted again.
    assert_eq!(j.pop(5).unwrap().kind, StepKind::Lost);
}

#[test]
fn from_a_client_that_sends_every_tick_a_burst_of_loss_is_substituted() {
    let adaptive = JitterConfig { late: LatePolicy::Adaptive { substitute_run: 2 }, max_starved_ticks: 60, ..cfg() };
    let mut j = JitterBuffer::new(adaptive);
    j.set_send_interval(1);
    j.push(-0.5, 10, &[1]);
    assert_eq!(j.pop(0).unwrap().kind, StepKind::Normal);
    // Ten packets lost in a row: ten inputs substituted, no slip.
    for s in 1..=10 {
        assert_eq!(j.pop(s).unwrap().kind, StepKind::Lost, "tick {s}");
    }
    assert_eq!(j.shift(), 0);
    // The next packet to get through carries every input since: the ten are late
    // (dropped, with how late), the newest is on time, and the lead is unchanged.
    for t in 11..=20 {
        assert!(matches!(j.push(10.5, t, &[2]), PushOutcome::Late { margin } if margin < 0.0), "{t}");
    }
    j.push(10.5, 21, &[3]);
    let s = j.pop(11).unwrap();
    assert_eq!((s.kind, s.first_client_tick), (StepKind::Normal, 21));
    assert_eq!(j.shift(), 0);
    // A silence longer than any burst the copies cover is the stream itself late:
    // the buffer waits from its 17th empty tick.
    for s in 12..12 + LOSSY_SUBSTITUTE_RUN {
        assert_eq!(j.pop(s).unwrap().kind, StepKind::Lost, "tick {s}");
    }
    assert_eq!(j.pop(28).unwrap().kind, StepKind::Underflow);
    assert_eq!(j.shift(), 1);
    // The stream was late itself: for a while after the wait a silence is waited for
    // from its third empty tick, as its clock catching up rather than loss.
    j.push(28.5, 38, &[4]);
    assert_eq!(j.pop(29).unwrap().kind, StepKind::Normal);
    assert_eq!(j.pop(30).unwrap().kind, StepKind::Lost);
    assert_eq!(j.pop(31).unwrap().kind, StepKind::Lost);
    assert_eq!(j.pop(32).unwrap().kind, StepKind::Underflow);
    assert_eq!(j.shift(), 2);
    // A second of steady inputs later, a silence is taken for loss again.
    for s in 33..=100u32 {
        j.push(f64::from(s) - 0.5, s + 8, &[5]);
        assert_eq!(j.pop(s).unwrap().kind, StepKind::Normal, "tick {s}");
    }
    for s in 101..101 + LOSSY_SUBSTITUTE_RUN {
        assert_eq!(j.pop(s).unwrap().kind, StepKind::Lost, "tick {s}");
    }
    assert_eq!(j.pop(101 + LOSSY_SUBSTITUTE_RUN).unwrap().kind, StepKind::Underflow);
    // The same silence from a client that sends every other tick waits from its
    // third empty tick, as before.
    let mut j = JitterBuffer::new(adaptive);
    j.set_send_interval(2);
    j.push(-0.5, 10, &[1]);
    j.pop(0).unwrap();
    assert_eq!(j.pop(1).unwrap().kind, StepKind::Lost);
    assert_eq!(j.pop(2).unwrap().kind, StepKind::Lost);
    assert_eq!(j.pop(3).unwrap().kind, StepKind::Underflow);
    assert_eq!(j.shift(), 1);
}

#[test]
fn a_wait_for_lost_inputs_is_taken_back_in_one_step() {
    let mut j = JitterBuffer::new(JitterConfig { late: LatePolicy::Delay, ..cfg() });
    j.push(-0.5, 10, &[1]);
    j.pop(0).unwrap();
    // Inputs 11..=14 are lost in a burst; the buffer waits three ticks.
    for s in 1..=3 {
        assert_eq!(j.pop(s).unwrap().kind, StepKind::Underflow);
    }
    assert_eq!(j.shift(), 3);
    // 15 arrives: 11..=14 were lost. The three waits stand in for three of them,
    // so this one step skips all four and the slip is gone.
    j.push(3.2, 15, &[5]);
    let s = j.pop(4).unwrap();
    assert_eq!((s.kind, s.accepted, s.first_client_tick), (StepKind::Merged, 4, 11));
    assert_eq!(s.inputs, &[vec![1], vec![1], vec![1], vec![1]], "substitutes for the lost inputs");
    assert_eq!(j.shift(), 0);
    let s = j.pop(5).unwrap();
    assert_eq!((s.kind, s.first_client_tick), (StepKind::Normal, 15));
    // A shorter loss than the wait: only the lost input is skipped, with 17.
    for s in 6..=8 {
        assert_eq!(j.pop(s).unwrap().kind, StepKind::Underflow);
    }
    j.push(8.5, 17, &[7]);
    let s = j.pop(9).unwrap();
    assert_eq!((s.kind, s.accepted, s.first_client_tick), (StepKind::Merged, 2, 16));
    assert_eq!(j.shift(), 2, "the rest of the wait was a real delay");
}

#[test]
fn merges_a_pile_up_but_not_a_steady_deep_queue() {
    // The client's loop grows its lead from 1 to 12 ticks by dilation (one tick per
    // 20, 5% fast) and holds it: the queue gets 12 deep and is never merged.
    let mut j = JitterBuffer::new(JitterConfig { max_depth: 4, hard_cap: 100, ..cfg() });
    let mut sent: Tick = 0;
    for s in 0..600 {
        let lead = (1 + s / 20).min(12);
        while sent <= s + lead {
            j.push(s as f64, sent, &[0]);
            sent += 1;
        }
        assert_eq!(j.pop(s).unwrap().kind, StepKind::Normal, "tick {s}");
    }
    assert_eq!(j.depth(), 12);
    // A burst of 8 on top: the queue spans 20 ticks against a usual 13, more than 4
    // over, so this step merges the 3 beyond that with its own input.
    for t in sent..sent + 8 {
        j.push(600.0, t, &[0]);
    }
    let s = j.pop(600).unwrap();
    assert_eq!((s.kind, s.accepted), (StepKind::Merged, 20 - (13 + 4) + 1));
}

#[test]
fn late_margin_is_negative() {
    let mut j = JitterBuffer::new(cfg());
    j.push(0.0, 0, &[0]);
    j.pop(0).unwrap();
    // Input 1 is due at tick 1 but arrives at position 1.4: 0.4 tick late.
    assert!(matches!(j.push(1.4, 1, &[1]), PushOutcome::Queued { margin } if (margin + 0.4).abs() < 1e-9));
    assert_eq!(j.stats().late_arrivals, 1);
}

#[test]
fn kicks_on_overflow_and_starvation() {
    let mut j = JitterBuffer::new(cfg());
    for t in 0..12 {
        j.push(0.0, t, &[0]);
    }
    assert_eq!(j.pop(0).unwrap_err(), KickReason::Overflow);
    let mut j = JitterBuffer::new(cfg());
    j.push(0.0, 0, &[0]);
    j.pop(0).unwrap();
    for s in 1..=5 {
        assert!(j.pop(s).is_ok());
    }
    assert_eq!(j.pop(6).unwrap_err(), KickReason::Starved);
}

#[test]
fn an_input_far_beyond_the_stream_is_an_overflow() {
    // Two inputs in a row, then one two billion ticks ahead: the queue is only 3
    // deep, but it reaches past the hard cap.
    let mut j = JitterBuffer::new(cfg());
    j.push(0.0, 0, &[0]);
    j.push(0.0, 1, &[1]);
    j.push(0.0, 2_000_000_000, &[2]);
    assert_eq!(j.pop(0).unwrap_err(), KickReason::Overflow);
}

#[test]
fn a_stream_back_from_a_long_silence_merges_in_bounded_steps() {
    // Default config: the server waits 290 ticks for a silent client (under the
    // starvation limit), then the client's stream resumes 290 ticks on. The ticks
    // waited for are merged back, at most `hard_cap` (120) inputs a step, and no
    // input of the new stream is lost.
    let mut j = JitterBuffer::new(JitterConfig::default());
    j.push(0.0, 0, &[0]);
    assert_eq!(j.pop(0).unwrap().kind, StepKind::Normal);
    let mut server = 1;
    for _ in 0..290 {
        assert!(j.pop(server).is_ok());
        server += 1;
    }
    for t in 291..301 {
        j.push(server as f64, t, &[t as u8]);
    }
    let mut merged = Vec::new();
    let mut last_input = Vec::new();
    loop {
        let s = j.pop(server).expect("not kicked");
        server += 1;
        assert!(s.accepted as usize <= 120 && s.inputs.len() == s.accepted as usize, "{:?}", (s.kind, s.accepted));
        if s.kind != StepKind::Merged {
            // The wait is taken back; the stream goes on from its next input.
            assert_eq!((s.kind, s.first_client_tick), (StepKind::Normal, 292));
            break;
        }
        merged.push(s.accepted);
        last_input = s.inputs.last().cloned().unwrap_or_default();
    }
    assert_eq!(last_input, vec![(291 % 256) as u8], "the first input of the new stream is in the last merge");
    assert!(merged.len() >= 3, "290 ticks in steps of at most 120: {merged:?}");
}

#[test]
fn a_stream_at_the_end_of_the_tick_range_holds_there() {
    // Client ticks come from the wire: one reaching Tick::MAX must not overflow.
    let mut j = JitterBuffer::new(cfg());
    j.push(0.0, Tick::MAX - 1, &[1]);
    j.push(0.0, Tick::MAX, &[2]);
    assert_eq!(j.contiguous_received(), Some(Tick::MAX));
    assert_eq!(j.pop(0).unwrap().first_client_tick, Tick::MAX - 1);
    assert_eq!(j.pop(1).unwrap().first_client_tick, Tick::MAX);
    for s in 2..5 {
        assert_eq!(j.pop(s).unwrap().kind, StepKind::Underflow, "nothing beyond the end");
    }
}

/// A burst of inputs between two server ticks (unbounded, the server fell to 22 ticks/s
/// and kept 64 MB): the queue never holds more than one input past the hard cap, the
/// rest is refused and counted, and the next tick kicks the client.
#[test]
fn a_burst_between_two_ticks_is_bounded_and_kicked() {
    let mut j = JitterBuffer::new(cfg());
    let mut refused = 0;
    // The stream's start, its far end, then everything in between in reverse: every
    // input lands mid-queue, the costliest insert.
    let ticks = [0, 100_000].into_iter().chain((1..100_000u32).rev());
    for t in ticks {
        if j.push(0.0, t, &[0; 4]) == PushOutcome::Overflow {
            refused += 1;
        }
        assert!(j.queued() <= cfg().hard_cap + 1, "queue bounded at push time ({})", j.queued());
    }
    assert_eq!(refused, 100_001 - (cfg().hard_cap + 1));
    assert_eq!(j.pop(0).unwrap_err(), KickReason::Overflow);
}

/// A stream held up on its path (a FIFO route that stalls for 200 ticks): the server
/// waits, then every input sent meanwhile arrives in one burst, more than `hard_cap`
/// of them. They are the inputs the server waited for, not a flood: the client stays,
/// the wait is taken back by merges, and no input is lost. The same burst without a
/// wait is still refused past the cap and kicked
/// (`a_burst_between_two_ticks_is_bounded_and_kicked`).
#[test]
fn a_stalled_path_delivering_its_backlog_at_once_is_not_kicked() {
    let cfg = JitterConfig::default();
    let mut j = JitterBuffer::new(cfg);
    // Steady state: input t arrives before tick t.
    let mut server = 0;
    for t in 0..100u32 {
        assert_eq!(j.push(server as f64, t, &[t as u8]), PushOutcome::Queued { margin: 0.0 });
        assert_eq!(j.pop(server).unwrap().kind, StepKind::Normal);
        server += 1;
    }
    // The path stalls for 200 ticks: nothing arrives, the server substitutes, then waits.
    for _ in 0..200 {
        assert!(j.pop(server).is_ok());
        server += 1;
    }
    assert!(j.stats().underflows > 150, "{:?}", j.stats());
    // The backlog arrives between two ticks: 200 inputs, well past the hard cap (120).
    let mut refused = 0;
    for t in 100..300u32 {
        if !matches!(j.push(server as f64, t, &[t as u8]), PushOutcome::Queued { .. }) {
            refused += 1;
        }
    }
    assert_eq!(refused, 2, "only the two substituted at the start of the wait come too late");
    // No kick; merges take the wait back within a few steps, and every input from the
    // wait on is consumed.
    let mut consumed = Vec::new();
    for _ in 0..20 {
        let s = j.pop(server).expect("not kicked");
        server += 1;
        if s.kind != StepKind::Lost {
            consumed.extend(s.inputs.iter().map(|i| i[0]));
        }
    }
    assert!(j.queued() < cfg.hard_cap, "the backlog drained: {} queued", j.queued());
    let first = consumed.first().copied();
    assert_eq!(first, Some(102), "the stream resumes with the first input not substituted");
}
