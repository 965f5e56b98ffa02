//! The tick stream target: a sender's ledger and a receiver's window over a lossy
//! link, fed arbitrary plans, times, ticks, acknowledgements and bitmaps besides the
//! receiver's own.

use std::collections::BTreeSet;
use std::ops::Range;

use super::Input;
use tickwire_proto::fuzzing::{ROOM, Reason, ReceiveWindow, SACK_BYTES, SendLedger, SendPlan};
use tickwire_proto::{Micros, Tick};

const MAX_OPS: usize = 4096;
/// The most ticks of the held set the target remembers (the oldest go first).
const MAX_HELD_KEPT: usize = 4096;

/// The sender, the receiver and what the target knows of both.
struct Pair {
    ledger: SendLedger,
    /// The ledger's ring: what any span reaches at most.
    cap: u64,
    window: ReceiveWindow,
    /// Ticks the receiver holds past its next (what its bitmap must say).
    held_model: BTreeSet<Tick>,
    /// Ticks the receiver acknowledged in its bitmap after they were sent: the
    /// sender's `due` must never name them again (until the stream starts over).
    sacked: BTreeSet<Tick>,
    /// The receiver was told of ticks that were never sent (its next may pass what was).
    tampered: bool,
    plan: SendPlan,
    now: Micros,
    /// The newest tick formed; the sender holds `floor..=newest`.
    newest: Tick,
    floor: Tick,
}

impl Pair {
    fn avail(&self) -> Range<Tick> {
        self.floor.min(self.newest)..self.newest.saturating_add(1)
    }

    /// Checks the ticks the ledger hands out and books them: the `i`-th is sent if bit
    /// `i % 64` of one mask is set, and lost if that of another is.
    fn send_set(&mut self, inp: &mut Input<'_>) {
        let (send, lose) = (inp.u64(), inp.u64());
        let acked = self.ledger.acked();
        let avail = self.avail();
        let chosen: Vec<(Tick, Reason)> = self.ledger.due(self.now, avail.clone(), &self.plan).collect();
        assert!(chosen.len() as u64 <= self.cap, "{} ticks from a ring of {}", chosen.len(), self.cap);
        let copies_from = chosen.iter().position(|c| c.1 == Reason::Copy).unwrap_or(chosen.len());
        assert!(chosen[copies_from..].iter().all(|c| c.1 == Reason::Copy), "every due tick before the copies");
        for part in [&chosen[..copies_from], &chosen[copies_from..]] {
            assert!(part.windows(2).all(|w| w[0].0 < w[1].0), "oldest first, each once: {part:?}");
        }
        for &(t, _) in &chosen {
            self.check_sendable(t, acked, &avail);
            assert!(!self.sacked.contains(&t), "tick {t} went again after the receiver said it holds it");
        }
        for (i, (t, r)) in chosen.into_iter().enumerate() {
            if send & (1 << (i % 64)) != 0 {
                self.ledger.book(t, self.now, r);
                self.arrive(t, lose & (1 << (i % 64)) != 0);
            }
        }
    }

    /// Asks where a run of at most `room` ticks starts, checks it against what `due`
    /// owes, and books it (if sent; its `i`-th tick lost if bit `i % 64` of a mask is).
    fn send_run(&mut self, inp: &mut Input<'_>) {
        let room = (inp.u8() as usize).max(1);
        let late_after = inp.u16() as Micros * 100;
        let (send, lose) = (inp.bool(), inp.u64());
        let acked = self.ledger.acked();
        let avail = self.avail();
        let owed = self.ledger.due(self.now, avail.clone(), &self.plan).count();
        let run = self.ledger.run(self.now, avail.clone(), &self.plan, room, late_after);
        assert!(run.ticks.start <= run.ticks.end && run.ticks.len() <= room, "{run:?} within {room}");
        assert_eq!(owed > 0, !run.ticks.is_empty(), "a run exactly when something is owed: {run:?}");
        for t in run.ticks.clone() {
            self.check_sendable(t, acked, &avail);
        }
        if send {
            self.ledger.book_run(run.ticks.clone(), self.now, &self.plan);
            for (i, t) in run.ticks.enumerate() {
                self.arrive(t, lose & (1 << (i % 64)) != 0);
            }
        }
    }

    /// A tick handed out to send: never acknowledged, never past the window or what
    /// the sender holds.
    fn check_sendable(&self, t: Tick, acked: Tick, avail: &Range<Tick>) {
        assert!(t >= acked, "tick {t} was acknowledged (every one before {acked})");
        assert!(avail.contains(&t), "tick {t} is not held by the sender ({avail:?})");
        let window = self.plan.window as u64;
        assert!(
            u64::from(t) < u64::from(acked).saturating_add(window),
            "tick {t} past the window of {window} from {acked}"
        );
    }

    /// A datagram carrying `t` reached the receiver (or was lost): it holds it, and
    /// takes what is in order (unless its consumer is full).
    fn arrive(&mut self, t: Tick, lost: bool) {
        if lost || !self.window.fits(t) {
            return;
        }
        self.window.set(t, true);
        self.held_model.insert(t);
    }

    /// The receiver takes what is whole and in order; its acknowledgement (bitmap
    /// included) must say exactly what it holds.
    fn take_in_order(&mut self, n: u8) {
        for _ in 0..n {
            let Some(next) = self.window.next() else { return };
            if !self.held_model.remove(&next) {
                return;
            }
            self.window.advance();
        }
    }

    fn check_receiver(&self) -> (Option<Tick>, [u8; SACK_BYTES], usize) {
        let mut sack = [0xa5; SACK_BYTES];
        let (next, len) = self.window.ack(&mut sack);
        assert!(len <= SACK_BYTES && sack[len..].iter().all(|&b| b == 0), "bitmap past its length");
        assert!(len == 0 || sack[len - 1] != 0, "bitmap length past its last bit");
        let Some(next) = next else {
            assert!(len == 0);
            return (None, sack, 0);
        };
        let mut said = BTreeSet::new();
        for (i, &b) in sack.iter().enumerate() {
            for j in 0..8 {
                if b & (1 << j) != 0 {
                    said.insert(next + 1 + 8 * i as Tick + j);
                }
            }
        }
        let expected: BTreeSet<Tick> =
            self.held_model.iter().copied().filter(|&t| t > next && u64::from(t - next) < ROOM as u64).collect();
        assert_eq!(said, expected, "the bitmap from {next}");
        (Some(next), sack, len)
    }

    /// The receiver's own acknowledgement, as a relay (cumulative and bitmap, held at
    /// the newest formed) or as a P2P peer (its latest word, checked against what was
    /// sent).
    fn honest_ack(&mut self, p2p: bool) {
        let (next, sack, len) = self.check_receiver();
        let Some(next) = next else { return };
        let sent_end = self.ledger.sent_end();
        assert!(self.tampered || next <= sent_end, "the receiver holds up to {next} of {sent_end} sent");
        if p2p {
            // (As the session does: an ack past what was sent closes the connection.)
            if next <= sent_end {
                self.ledger.set_ack(next);
                assert_eq!(self.ledger.acked(), next.max(self.ledger.start()));
            }
        } else {
            let limit = self.newest.saturating_add(1);
            let before = self.ledger.acked();
            self.ledger.ack(next, limit);
            self.ledger.sack(next, &sack[..len], limit);
            assert_eq!(self.ledger.acked(), before.max(next.min(limit)));
            for t in self.held_model.iter().copied().filter(|&t| t > next && t < limit && t < sent_end) {
                self.sacked.insert(t);
            }
        }
        self.forget_acked();
    }

    /// Any acknowledgement and bitmap: held at the limit, never moving back.
    fn lying_ack(&mut self, inp: &mut Input<'_>) {
        let next = inp.tick_near(self.ledger.acked());
        let bits = inp.blob();
        let limit = if inp.bool() { self.ledger.sent_end() } else { self.newest.saturating_add(1) };
        let before = self.ledger.acked();
        self.ledger.ack(next, limit);
        self.ledger.sack(next, bits, limit);
        let after = self.ledger.acked();
        assert!(after >= before, "the ack moved back from {before} to {after}");
        assert!(after == before || after <= limit, "acked {after} beyond the limit {limit}");
        self.forget_acked();
    }

    fn forget_acked(&mut self) {
        let acked = self.ledger.acked();
        self.sacked.retain(|&t| t >= acked);
        while self.sacked.len() > MAX_HELD_KEPT {
            self.sacked.pop_first();
        }
    }

    fn rebase(&mut self, start: Tick) {
        self.ledger.rebase(start);
        self.window.start(start);
        self.held_model.clear();
        self.sacked.clear();
        self.tampered = false;
        assert_eq!((self.ledger.start(), self.ledger.acked(), self.ledger.sent_end()), (start, start, start));
    }
}

fn any_plan(inp: &mut Input<'_>) -> SendPlan {
    let window = match inp.u8() % 4 {
        0 => usize::MAX,
        1 => inp.u8() as usize,
        _ => inp.u16() as usize,
    };
    let resend_after = match inp.u8() % 3 {
        0 => None,
        _ => Some(inp.u16() as Micros * 100),
    };
    SendPlan { copies: inp.u8().max(1), resend_copies: inp.u8(), resend_after, window }
}

/// The stream's sender and receiver. Input: the ledger's ring (a byte), the start
/// tick, the plan, then operations (a byte each, then its fields).
pub fn tick_stream(data: &[u8]) {
    let mut inp = Input::new(data);
    let cap = [1usize, 2, 3, 16, 64, 256, 1024][inp.below(7)];
    let start = inp.tick_near(1_000);
    let plan = any_plan(&mut inp);
    let mut window = ReceiveWindow::new();
    window.start(start);
    let mut pair = Pair {
        ledger: SendLedger::new(start, cap),
        cap: cap.next_power_of_two() as u64,
        window,
        held_model: BTreeSet::new(),
        sacked: BTreeSet::new(),
        tampered: false,
        plan,
        now: 0,
        newest: start,
        floor: 0,
    };
    for _ in 0..MAX_OPS {
        if inp.is_empty() {
            break;
        }
        match inp.u8() % 12 {
            // New ticks formed.
            0 => pair.newest = pair.newest.saturating_add(inp.u8() as Tick),
            // Time passes (now and then a long while).
            1 => {
                let d = inp.u16() as Micros;
                pair.now = pair.now.saturating_add(if inp.bool() { d * 100 } else { d * 10_000 });
            }
            2 => pair.plan = any_plan(&mut inp),
            // What the sender still holds: from the newest few, or everything.
            3 => pair.floor = if inp.bool() { pair.newest.saturating_sub(inp.u8() as Tick) } else { 0 },
            4 => pair.send_set(&mut inp),
            5 => pair.send_run(&mut inp),
            6 => pair.take_in_order(inp.u8()),
            7 => pair.honest_ack(inp.bool()),
            8 => pair.lying_ack(&mut inp),
            // A peer's latest word on what it needs, checked as the P2P session does.
            9 => {
                let next = inp.tick_near(pair.ledger.acked());
                if next <= pair.ledger.sent_end() {
                    pair.ledger.set_ack(next);
                    assert_eq!(pair.ledger.acked(), next.max(pair.ledger.start()));
                }
            }
            // The receiver told anything: ticks held or not, in or out of its room.
            10 => {
                let t = inp.tick_near(pair.window.next().unwrap_or(start));
                let held = inp.bool();
                pair.tampered = true;
                pair.window.set(t, held);
                if pair.window.fits(t) {
                    if held {
                        pair.held_model.insert(t);
                    } else {
                        pair.held_model.remove(&t);
                    }
                }
                pair.check_receiver();
            }
            _ => {
                let at = inp.tick_near(pair.newest);
                pair.newest = pair.newest.max(at);
                pair.rebase(at);
            }
        }
        assert!(pair.ledger.sent_end() <= pair.newest.saturating_add(1).max(pair.ledger.start()));
        assert!(pair.held_model.len() <= ROOM);
    }
}
