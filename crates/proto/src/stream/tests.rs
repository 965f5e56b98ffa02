use super::ledger::Run;
use super::*;
use crate::clock::Micros;
use crate::engine::Tick;

fn plan(copies: u8) -> SendPlan {
    SendPlan { copies, resend_copies: copies, resend_after: Some(300_000), window: 64 }
}

/// Sends everything due or owed as a copy, of ticks `..=newest`.
fn send_all(s: &mut SendLedger, now: Micros, newest: Tick, p: &SendPlan) -> Vec<(Tick, Reason)> {
    let chosen: Vec<_> = s.due(now, 0..newest + 1, p).collect();
    for &(t, r) in &chosen {
        s.book(t, now, r);
    }
    chosen
}

/// Takes the receiver's acknowledgement as a sender does, with `newest` the newest tick.
fn take_ack(s: &mut SendLedger, next: Tick, sack: &[u8], newest: Tick) {
    s.ack(next, newest + 1);
    s.sack(next, sack, newest + 1);
}

#[test]
fn new_ticks_go_at_once_with_their_copies_then_stop() {
    let mut s = SendLedger::new(10, ROOM);
    let p = plan(2);
    // Three ticks formed: each goes once, then once more as a copy.
    let a = send_all(&mut s, 0, 12, &p);
    assert_eq!(a, vec![(10, Reason::Due), (11, Reason::Due), (12, Reason::Due)]);
    let b = send_all(&mut s, 50_000, 15, &p);
    assert_eq!(
        b,
        vec![
            (13, Reason::Due),
            (14, Reason::Due),
            (15, Reason::Due),
            (10, Reason::Copy),
            (11, Reason::Copy),
            (12, Reason::Copy)
        ]
    );
    // No acknowledgement at all for a while: nothing more until the resend timeout.
    let c = send_all(&mut s, 100_000, 15, &p);
    assert_eq!(c, vec![(13, Reason::Copy), (14, Reason::Copy), (15, Reason::Copy)]);
    assert!(send_all(&mut s, 200_000, 15, &p).is_empty());
    let d = send_all(&mut s, 350_000, 15, &p);
    assert_eq!(d, vec![(10, Reason::Due), (11, Reason::Due), (12, Reason::Due)], "resent after 300 ms");
    // The resend is a round of its own copies.
    let e = send_all(&mut s, 400_000, 15, &p);
    assert_eq!(
        e,
        vec![
            (13, Reason::Due),
            (14, Reason::Due),
            (15, Reason::Due),
            (10, Reason::Copy),
            (11, Reason::Copy),
            (12, Reason::Copy)
        ]
    );
    assert!(s.book(10, 400_000, Reason::Due), "sent before");
}

#[test]
fn a_resend_round_has_its_own_copy_count() {
    let mut s = SendLedger::new(0, ROOM);
    let p = SendPlan { copies: 3, resend_copies: 1, resend_after: Some(50_000), window: 64 };
    for now in [0, 10_000, 20_000] {
        send_all(&mut s, now, 0, &p);
    }
    assert!(send_all(&mut s, 30_000, 0, &p).is_empty(), "three copies, then it waits");
    assert_eq!(send_all(&mut s, 70_000, 0, &p), vec![(0, Reason::Due)]);
    assert!(send_all(&mut s, 80_000, 0, &p).is_empty(), "one copy a resend");
    assert_eq!(send_all(&mut s, 120_000, 0, &p), vec![(0, Reason::Due)]);
}

#[test]
fn acknowledged_and_held_ticks_are_not_sent_again() {
    let mut s = SendLedger::new(0, ROOM);
    let p = plan(1);
    send_all(&mut s, 0, 9, &p);
    // Ticks 0..=3 acknowledged; 5 and 7 held past the gap at 4.
    take_ack(&mut s, 4, &[0b101], 9);
    assert_eq!(s.acked(), 4);
    let resent: Vec<_> = s.due(400_000, 0..10, &p).map(|x| x.0).collect();
    assert_eq!(resent, vec![4, 6, 8, 9]);
    // An older acknowledgement changes nothing.
    take_ack(&mut s, 2, &[], 9);
    assert_eq!(s.acked(), 4);
}

#[test]
fn an_ack_beyond_the_newest_tick_is_held_there() {
    let mut s = SendLedger::new(0, ROOM);
    take_ack(&mut s, 1_001, &[0xff; SACK_BYTES], 5);
    assert_eq!(s.acked(), 6, "acknowledged only up to the newest tick");
    let next: Vec<_> = s.due(0, 0..9, &plan(1)).map(|x| x.0).collect();
    assert_eq!(next, vec![6, 7, 8], "ticks formed later still go");
    // Bits past the limit are ignored too.
    let mut s = SendLedger::new(0, ROOM);
    send_all(&mut s, 0, 3, &plan(1));
    take_ack(&mut s, 0, &[0xff], 2);
    let resent: Vec<_> = s.due(400_000, 0..4, &plan(1)).map(|x| x.0).collect();
    assert_eq!(resent, vec![0, 3], "1 and 2 held; 3 is past the newest the ack may name");
}

#[test]
fn the_window_bounds_what_goes_past_the_ack() {
    let mut s = SendLedger::new(0, ROOM);
    let p = SendPlan { window: 4, ..plan(1) };
    let a: Vec<_> = send_all(&mut s, 0, 100, &p).iter().map(|x| x.0).collect();
    assert_eq!(a, vec![0, 1, 2, 3]);
    take_ack(&mut s, 2, &[], 100);
    let b: Vec<_> = send_all(&mut s, 1_000, 100, &p).iter().map(|x| x.0).collect();
    assert_eq!(b, vec![4, 5]);
    // The ring bounds it too, whatever the plan says.
    let mut s = SendLedger::new(0, 8);
    let wide = SendPlan { window: 1_000, ..plan(1) };
    assert_eq!(send_all(&mut s, 0, 100, &wide).len(), 8);
}

#[test]
fn rebase_starts_the_stream_again() {
    let mut s = SendLedger::new(0, ROOM);
    let p = SendPlan { window: 4, ..plan(2) };
    send_all(&mut s, 0, 100, &p);
    take_ack(&mut s, 2, &[0b1], 100);
    s.rebase(50);
    assert_eq!((s.start(), s.acked(), s.sent_end()), (50, 50, 50));
    let c = send_all(&mut s, 2_000, 100, &p);
    assert_eq!(c, vec![(50, Reason::Due), (51, Reason::Due), (52, Reason::Due), (53, Reason::Due)], "fresh records");
    // Back to before a tick it had sent: nothing of the old stream is remembered.
    s.rebase(1);
    let d: Vec<_> = send_all(&mut s, 3_000, 100, &p).iter().map(|x| x.1).collect();
    assert_eq!(d, vec![Reason::Due; 4]);
}

#[test]
fn a_contiguous_run_starts_at_the_oldest_tick_owed() {
    // One copy in each of 3 datagrams, then a refresh every 50 ms.
    let mut s = SendLedger::new(0, ROOM);
    let p = SendPlan { copies: 3, resend_copies: 1, resend_after: Some(50_000), window: usize::MAX };
    let mut runs = Vec::new();
    for (i, now) in (0..6).map(|i| (i, i as Micros * 10_000)) {
        let r = s.run(now, 0..i + 1, &p, 255, 100_000);
        s.book_run(r.ticks.clone(), now, &p);
        runs.push(r.ticks);
    }
    assert_eq!(runs, vec![0..1, 0..2, 0..3, 1..4, 2..5, 3..6]);
    assert_eq!(s.sent_end(), 6);
    // Tick 0 was last carried at 20 ms: at 100 ms it is due a refresh, and the run
    // carries everything after it.
    let r = s.run(100_000, 0..6, &p, 255, 100_000);
    assert_eq!(r, Run { ticks: 0..6, resend: true });
    // Acknowledged ticks are not carried, however owed.
    s.ack(5, s.sent_end());
    assert_eq!(s.run(100_000, 0..6, &p, 255, 100_000).ticks, 5..6);
    // Nothing owed: an empty run at the newest.
    s.ack(6, s.sent_end());
    assert_eq!(s.run(100_000, 0..6, &p, 255, 100_000).ticks, 6..6);
}

#[test]
fn a_run_longer_than_a_datagram_starts_where_it_must() {
    let mut s = SendLedger::new(0, ROOM);
    let p = SendPlan { copies: 8, resend_copies: 1, resend_after: Some(50_000), window: usize::MAX };
    // Two ticks a datagram: never-sent ticks go before copies of sent ones.
    let r = s.run(0, 0..5, &p, 2, 100_000);
    assert_eq!(r.ticks, 0..2);
    s.book_run(r.ticks, 0, &p);
    let r = s.run(10_000, 0..5, &p, 2, 100_000);
    assert_eq!(r.ticks, 2..4, "the oldest never sent");
    s.book_run(r.ticks, 10_000, &p);
    let r = s.run(20_000, 0..5, &p, 2, 100_000);
    assert_eq!(r.ticks, 3..5, "the newest that fit, with the one never sent");
    s.book_run(r.ticks, 20_000, &p);
    let r = s.run(30_000, 0..5, &p, 2, 100_000);
    assert_eq!(r.ticks, 3..5, "all sent and none late: the newest");
    s.book_run(r.ticks, 30_000, &p);
    // Ticks 0 and 1 unacknowledged past the late timeout go before the newest.
    let r = s.run(100_000, 0..5, &p, 2, 100_000);
    assert_eq!(r.ticks, 0..2);
}

#[test]
fn a_stream_that_never_resends_gives_up_after_its_copies() {
    // A relay client's inputs: each in `copies` datagrams, from the newest few ticks.
    let mut s = SendLedger::new(100, 16);
    let p = SendPlan { copies: 2, resend_copies: 0, resend_after: None, window: 16 };
    let mut runs = Vec::new();
    for next in [102, 104, 106, 108] {
        let r = s.run(next as Micros * 1_000, next - 4..next, &p, 255, 0);
        s.book_run(r.ticks.clone(), next as Micros * 1_000, &p);
        runs.push(r.ticks);
    }
    assert_eq!(runs, vec![100..102, 100..104, 102..106, 104..108]);
    // However long it waits, nothing that went in its copies goes again.
    assert_eq!(s.run(10_000_000, 100..106, &p, 255, 0).ticks, 106..106);
}

#[test]
fn a_lower_ack_is_the_receivers_latest_word() {
    let mut s = SendLedger::new(0, ROOM);
    let p = SendPlan { copies: 1, resend_copies: 1, resend_after: Some(50_000), window: usize::MAX };
    let r = s.run(0, 0..10, &p, 255, 50_000);
    s.book_run(r.ticks, 0, &p);
    s.set_ack(8);
    assert_eq!(s.run(10_000, 0..10, &p, 255, 50_000).ticks, 10..10);
    s.set_ack(4);
    assert_eq!(s.acked(), 4);
    assert_eq!(s.run(60_000, 0..10, &p, 255, 50_000), Run { ticks: 4..10, resend: true });
}

#[test]
fn the_receive_window_turns_arrivals_into_the_ack_and_bitmap() {
    let mut w = ReceiveWindow::new();
    let mut sack = [0xff; SACK_BYTES];
    assert_eq!(w.ack(&mut sack), (None, 0));
    assert_eq!(sack, [0; SACK_BYTES]);
    w.set(3, true);
    assert_eq!(w.ack(&mut sack).0, None, "nothing before the start");
    w.start(250);
    for t in [252, 254, 250 + 255, 250 + 256] {
        w.set(t, true);
    }
    assert!(!w.fits(250 + 256) && w.fits(250 + 255) && !w.fits(249));
    let (next, len) = w.ack(&mut sack);
    assert_eq!((next, len), (Some(250), SACK_BYTES));
    assert_eq!(sack[0], 0b1010, "252 and 254 past the gap at 251");
    assert_eq!(sack[SACK_BYTES - 1], 0b0100_0000, "the last tick of the room");
    // 250 taken in order, then 251 arrives and is taken: 252 is next, then taken too.
    w.set(250, true);
    w.advance();
    w.set(251, true);
    w.advance();
    w.advance();
    w.set(250 + 255, false);
    assert_eq!(w.ack(&mut sack), (Some(253), 1));
    assert_eq!(sack[0], 0b1, "254");
    w.reset();
    assert_eq!(w.ack(&mut sack), (None, 0));
}

#[test]
fn what_the_receiver_holds_is_not_sent_again() {
    let mut s = SendLedger::new(0, ROOM);
    let mut w = ReceiveWindow::new();
    w.start(0);
    let p = plan(1);
    send_all(&mut s, 0, 40, &p);
    for t in (0..40).filter(|t| t % 3 != 1) {
        w.set(t, true);
    }
    w.advance();
    let mut sack = [0; SACK_BYTES];
    let (next, len) = w.ack(&mut sack);
    take_ack(&mut s, next.unwrap(), &sack[..len], 40);
    let resent: Vec<_> = s.due(400_000, 0..41, &p).map(|x| x.0).collect();
    let lost: Vec<_> = (1..40).filter(|t| t % 3 == 1).chain([40]).collect();
    assert_eq!(resent, lost);
}
