//! The sending side of a tick stream: what went, when, and what the receiver holds.
//!
//! A tick goes in rounds. Its first round starts when it is first sent and lasts until
//! it has gone `copies` times (redundancy: one copy per datagram, so a lost datagram
//! costs nothing while another copy arrives). A tick still not acknowledged
//! `resend_after` after its last copy starts a new round of `resend_copies`. Ticks the
//! receiver acknowledged (cumulatively, or in its bitmap of ticks held past a gap) are
//! never sent again, and nothing goes more than `window` ticks past the acknowledged
//! one: the receiver has no room there.

use std::ops::Range;

use super::window::SACK_BYTES;
use crate::clock::Micros;
use crate::engine::Tick;

/// How to send now: the figures of the link and of the receiver.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SendPlan {
    /// Copies of a tick in its first round (at least 1).
    pub copies: u8,
    /// Copies of a tick in each round after a resend.
    pub resend_copies: u8,
    /// A tick not acknowledged this long after its last copy starts a new round (None:
    /// never; what its copies did not deliver is given up).
    pub resend_after: Option<Micros>,
    /// Most ticks past the acknowledged one to send (the receiver's room).
    pub window: usize,
}

/// Why a tick is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Never sent, or its resend timeout passed: it starts a round.
    Due,
    /// A redundant copy within its round.
    Copy,
}

/// Where the next datagram of a contiguous-run format starts, and where it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The ticks to carry (empty: nothing is owed; the datagram may still go for what
    /// else it carries).
    pub ticks: Range<Tick>,
    /// The oldest tick owed starts a new round after its resend timeout (a resend).
    pub resend: bool,
}

/// One tick's sending record.
#[derive(Debug, Clone, Copy, Default)]
struct Record {
    /// Copies sent in the current round (0: never sent).
    copies: u8,
    /// The current round is a resend.
    resent: bool,
    /// The receiver said it holds it.
    held: bool,
    last: Micros,
}

impl Record {
    fn class(&self, now: Micros, plan: &SendPlan) -> Option<Reason> {
        if self.held {
            return None;
        }
        if self.copies == 0 || plan.resend_after.is_some_and(|after| now.saturating_sub(self.last) >= after) {
            return Some(Reason::Due);
        }
        let round = if self.resent { plan.resend_copies } else { plan.copies };
        (self.copies < round).then_some(Reason::Copy)
    }

    /// Sent at `now` for `reason`; true if it had been sent before.
    fn book(&mut self, now: Micros, reason: Option<Reason>) -> bool {
        let before = self.copies > 0;
        match reason {
            Some(Reason::Due) => {
                self.copies = 1;
                self.resent = before;
            }
            Some(Reason::Copy) | None => self.copies = self.copies.saturating_add(1),
        }
        self.last = now;
        before
    }
}

/// The sender's record of one stream. See the module docs.
#[derive(Debug, Clone)]
pub struct SendLedger {
    /// The first tick of the stream.
    start: Tick,
    /// Every tick before this one is acknowledged.
    acked: Tick,
    /// One past the newest tick sent (`start` before any).
    sent_end: Tick,
    /// Records are kept for the ticks in `known_end - records.len() .. known_end`
    /// (from `start` on); a tick reached for the first time gets a fresh one.
    known_end: Tick,
    /// By tick, in a ring of a power of two.
    records: Vec<Record>,
}

impl SendLedger {
    /// A stream from `start` whose records reach over `room` ticks: the most any
    /// window or sender's history spans.
    pub fn new(start: Tick, room: usize) -> Self {
        let n = room.max(1).next_power_of_two();
        SendLedger { start, acked: start, sent_end: start, known_end: start, records: vec![Record::default(); n] }
    }

    /// Starts the stream again at `start`: nothing sent, nothing acknowledged.
    pub fn rebase(&mut self, start: Tick) {
        self.start = start;
        self.acked = start;
        self.sent_end = start;
        self.known_end = start;
    }

    /// The first tick of the stream.
    pub fn start(&self) -> Tick {
        self.start
    }

    /// Every tick before this one is acknowledged: the oldest the receiver needs.
    pub fn acked(&self) -> Tick {
        self.acked
    }

    /// One past the newest tick sent: no honest acknowledgement goes beyond it.
    pub fn sent_end(&self) -> Tick {
        self.sent_end
    }

    fn cap(&self) -> Tick {
        self.records.len() as Tick
    }

    fn record(&mut self, tick: Tick) -> Option<&mut Record> {
        let known = self.known_end.saturating_sub(self.cap()).max(self.start)..self.known_end;
        let mask = self.records.len() - 1;
        known.contains(&tick).then(|| &mut self.records[tick as usize & mask])
    }

    /// The receiver holds every tick before `next`, held at `limit` (one past the
    /// newest tick formed or sent: a lying acknowledgement must not stop what comes
    /// later). Never moves back.
    pub fn ack(&mut self, next: Tick, limit: Tick) {
        self.acked = self.acked.max(next.min(limit));
    }

    /// The receiver's latest word on what it needs, even below an earlier one (the
    /// caller has checked it against [`SendLedger::sent_end`]): a receiver that lost
    /// what it had acknowledged is sent it again, within the records kept.
    pub fn set_ack(&mut self, next: Tick) {
        self.acked = next.max(self.start);
    }

    /// The receiver holds the ticks of bitmap `sack` (bit `j` of byte `i`: tick
    /// `next + 1 + 8i + j`), those before `limit` taken.
    pub fn sack(&mut self, next: Tick, sack: &[u8], limit: Tick) {
        for (i, &byte) in sack.iter().enumerate().take(SACK_BYTES) {
            let mut bits = byte;
            while bits != 0 {
                let j = bits.trailing_zeros();
                bits &= bits - 1;
                let Some(tick) = next.checked_add(1 + 8 * i as Tick + j).filter(|&t| t < limit && t >= self.acked)
                else {
                    continue;
                };
                if let Some(r) = self.record(tick) {
                    r.held = true;
                }
            }
        }
    }

    /// The ticks that may go now, of those the sender holds (`avail`): from the
    /// acknowledged one, within the window and the records kept. Ticks reached for the
    /// first time get fresh records.
    fn span(&mut self, avail: &Range<Tick>, plan: &SendPlan) -> Range<Tick> {
        let cap = self.cap();
        let window = Tick::try_from(plan.window).unwrap_or(Tick::MAX);
        let lo = self.acked.max(avail.start).max(self.known_end.saturating_sub(cap));
        let hi = avail.end.min(self.acked.saturating_add(window)).min(lo.saturating_add(cap)).max(lo);
        if hi > self.known_end {
            let mask = self.records.len() - 1;
            for t in self.known_end.max(hi - cap.min(hi))..hi {
                self.records[t as usize & mask] = Record::default();
            }
            self.known_end = hi;
        }
        lo..hi
    }

    /// The ticks to send at `now`, of those the sender holds (`avail`), oldest first,
    /// with why each goes: the [`Reason::Due`] ones first, then the [`Reason::Copy`]
    /// ones. The caller takes what fits and books each tick it sent with
    /// [`SendLedger::book`].
    pub fn due(
        &mut self,
        now: Micros,
        avail: Range<Tick>,
        plan: &SendPlan,
    ) -> impl Iterator<Item = (Tick, Reason)> + '_ {
        let span = self.span(&avail, plan);
        let plan = *plan;
        let mask = self.records.len() - 1;
        let records = &self.records;
        let class = move |t: Tick| records[t as usize & mask].class(now, &plan);
        let due = span.clone().filter(move |&t| class(t) == Some(Reason::Due)).map(|t| (t, Reason::Due));
        let copies = span.filter(move |&t| class(t) == Some(Reason::Copy)).map(|t| (t, Reason::Copy));
        due.chain(copies)
    }

    /// Books `tick` as sent at `now` for `reason`; true if it had been sent before.
    pub fn book(&mut self, tick: Tick, now: Micros, reason: Reason) -> bool {
        let Some(r) = self.record(tick) else { return false };
        let before = r.book(now, Some(reason));
        self.sent_end = self.sent_end.max(tick.saturating_add(1));
        before
    }

    /// Where a datagram carrying one contiguous run of ticks starts, of those the
    /// sender holds (`avail`), and where it ends: at most `room` ticks. It starts at the
    /// oldest tick owed (due, or a copy short), so that every tick owed goes. When the run
    /// from there to the newest tick is longer than a datagram carries, it starts at the
    /// oldest tick never sent or unacknowledged `late_after` after its last copy (a
    /// timeout for an acknowledgement that is late, not merely in flight), or else at
    /// the newest ticks that fit: starting at the oldest owed every time would send
    /// the same old ticks again and again and the new ones never.
    pub fn run(&mut self, now: Micros, avail: Range<Tick>, plan: &SendPlan, room: usize, late_after: Micros) -> Run {
        let span = self.span(&avail, plan);
        let mask = self.records.len() - 1;
        let room = Tick::try_from(room).unwrap_or(Tick::MAX);
        let owed = span.clone().find_map(|t| self.records[t as usize & mask].class(now, plan).map(|r| (t, r)));
        let (first, resend) = match owed {
            Some((t, r)) => (t, r == Reason::Due && self.records[t as usize & mask].copies > 0),
            None => (span.end, false),
        };
        let first = if span.end - first <= room {
            first
        } else {
            let late = |t: &Tick| {
                let r = &self.records[*t as usize & mask];
                !r.held && (r.copies == 0 || now.saturating_sub(r.last) >= late_after)
            };
            (first..span.end - room).find(late).unwrap_or(span.end - room)
        };
        Run { ticks: first..span.end.min(first.saturating_add(room)), resend }
    }

    /// Books a run of ticks ([`SendLedger::run`]) as sent at `now`: each owed tick as
    /// for its reason, each other as one more copy.
    pub fn book_run(&mut self, ticks: Range<Tick>, now: Micros, plan: &SendPlan) {
        for t in ticks.clone() {
            if let Some(r) = self.record(t) {
                let reason = r.class(now, plan);
                r.book(now, reason);
            }
        }
        if !ticks.is_empty() {
            self.sent_end = self.sent_end.max(ticks.end);
        }
    }
}
