//! What the relay server sends one client of the canonical step stream, and when.
//!
//! Steps stream at the server's tick rate whatever the round trip: every update
//! carries each step not sent yet, and delivery never waits for an acknowledgement.
//! Acknowledgements (a cumulative one and a bitmap of the steps held past it) only
//! stop the sending:
//! - a new step goes out in the next update, then again in the following ones until
//!   it has gone `copies` times (redundancy, from the measured loss);
//! - a step still not acknowledged a resend timeout after its last copy (from the
//!   measured round trip) goes out again, with its copies;
//! - steps are sent only within a window past the acknowledged one (from the round
//!   trip and the loss, capped by the client's room), so a stalled client is not sent
//!   what it could not keep.
//!
//! New steps and resends always go; a bandwidth cap only removes redundant copies,
//! so it degrades delivery on lossy links and never stalls it.

use std::collections::VecDeque;

use crate::clock::Micros;
use crate::engine::Tick;

/// Steps past the acknowledged one a client can hold (its reorder room): the most
/// any window reaches.
pub(crate) const CLIENT_STEP_WINDOW: usize = 256;

/// Bytes of the bitmap of steps held past the acknowledged one (bit j of byte i: step
/// `ack + 2 + 8i + j`).
pub(crate) const SACK_BYTES: usize = (CLIENT_STEP_WINDOW - 1).div_ceil(8);

/// How one update is to send: the figures of the client's link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SendPlan {
    /// Copies of each step (at least 1).
    pub copies: u8,
    /// A step not acknowledged this long after its last copy is sent again.
    pub resend_after: Micros,
    /// Most steps past the acknowledged one to send.
    pub window: usize,
}

/// One step's sending record.
#[derive(Debug, Clone, Copy, Default)]
struct Sent {
    /// Copies sent in the current round (a resend starts a new one).
    copies: u8,
    last: Micros,
    /// The client said it holds it.
    held: bool,
}

/// Why a step is chosen for an update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// Never sent, or its resend timeout passed: always sent.
    Due,
    /// A redundant copy: sent while the bandwidth allows.
    Copy,
}

/// One client's step stream. See the module docs.
#[derive(Debug)]
pub(crate) struct StepSender {
    /// The first step this client gets (sent in full; every later one as a delta).
    base: Tick,
    /// Every step before this one is acknowledged.
    acked: Tick,
    /// Records of the steps from `acked` on that were considered so far.
    sent: VecDeque<Sent>,
}

impl StepSender {
    pub(crate) fn new(base: Tick) -> Self {
        StepSender { base, acked: base, sent: VecDeque::with_capacity(CLIENT_STEP_WINDOW) }
    }

    /// The first step of this client's stream.
    pub(crate) fn base(&self) -> Tick {
        self.base
    }

    /// The oldest step the client still needs.
    pub(crate) fn needs_from(&self) -> Tick {
        self.acked
    }

    /// Starts the stream again at `base` (the client was sent a snapshot there).
    pub(crate) fn rebase(&mut self, base: Tick) {
        *self = StepSender { base, acked: base, sent: std::mem::take(&mut self.sent) };
        self.sent.clear();
    }

    /// Takes the client's acknowledgement: every step up to `ack` (never beyond
    /// `newest`, the last step formed: a lying ack must not stop resends of steps to
    /// come), and the bitmap `sack` of steps past it.
    pub(crate) fn on_ack(&mut self, ack: Tick, sack: &[u8], newest: Tick) {
        let ack = ack.min(newest);
        if ack >= self.acked {
            let n = (ack - self.acked + 1) as usize;
            self.sent.drain(..n.min(self.sent.len()));
            self.acked = ack.saturating_add(1);
        }
        for (i, &byte) in sack.iter().enumerate().take(SACK_BYTES) {
            for j in 0..8 {
                if byte & (1 << j) == 0 {
                    continue;
                }
                let Some(tick) = ack.checked_add(2 + (8 * i + j) as Tick).filter(|&t| t <= newest) else { continue };
                if let Some(s) = tick.checked_sub(self.acked).and_then(|k| self.sent.get_mut(k as usize)) {
                    s.held = true;
                }
            }
        }
    }

    /// The steps to send at `now` with `newest` the last step formed, oldest first, with
    /// why each goes: [`Reason::Due`] ones first in order, then [`Reason::Copy`] ones.
    /// The caller takes what fits and reports each step it sent with [`StepSender::sent`].
    pub(crate) fn due(
        &mut self,
        now: Micros,
        newest: Tick,
        plan: &SendPlan,
    ) -> impl Iterator<Item = (Tick, Reason)> + '_ {
        let end = newest.saturating_add(1).min(self.acked.saturating_add(plan.window.min(CLIENT_STEP_WINDOW) as Tick));
        let wanted = end.saturating_sub(self.acked) as usize;
        if self.sent.len() < wanted {
            self.sent.resize(wanted, Sent::default());
        }
        let acked = self.acked;
        let plan = *plan;
        let classify = move |s: &Sent| -> Option<Reason> {
            if s.held {
                None
            } else if s.copies == 0 || now.saturating_sub(s.last) >= plan.resend_after {
                Some(Reason::Due)
            } else if s.copies < plan.copies {
                Some(Reason::Copy)
            } else {
                None
            }
        };
        let records = self.sent.range(..wanted);
        let due = records.clone().enumerate().filter(move |(_, s)| classify(s) == Some(Reason::Due));
        let copies = records.enumerate().filter(move |(_, s)| classify(s) == Some(Reason::Copy));
        due.map(|(i, _)| (i, Reason::Due))
            .chain(copies.map(|(i, _)| (i, Reason::Copy)))
            .map(move |(i, r)| (acked + i as Tick, r))
    }

    /// Books step `tick` as sent at `now` for `reason`; true if it had been sent before.
    pub(crate) fn sent(&mut self, tick: Tick, now: Micros, reason: Reason) -> bool {
        let Some(s) = tick.checked_sub(self.acked).and_then(|k| self.sent.get_mut(k as usize)) else { return false };
        let before = s.copies > 0;
        s.copies = match reason {
            Reason::Due => 1,
            Reason::Copy => s.copies.saturating_add(1),
        };
        s.last = now;
        before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(copies: u8) -> SendPlan {
        SendPlan { copies, resend_after: 300_000, window: 64 }
    }

    fn send_all(s: &mut StepSender, now: Micros, newest: Tick, p: &SendPlan) -> Vec<(Tick, Reason)> {
        let chosen: Vec<_> = s.due(now, newest, p).collect();
        for &(t, r) in &chosen {
            s.sent(t, now, r);
        }
        chosen
    }

    #[test]
    fn new_steps_go_at_once_with_their_copies_then_stop() {
        let mut s = StepSender::new(10);
        let p = plan(2);
        // Three steps formed: each goes once, then once more as a copy.
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
    }

    #[test]
    fn acknowledged_and_held_steps_are_not_sent_again() {
        let mut s = StepSender::new(0);
        let p = plan(1);
        send_all(&mut s, 0, 9, &p);
        // Steps 0..=3 acknowledged; 5 and 7 held past the gap at 4.
        s.on_ack(3, &[0b101], 9);
        assert_eq!(s.needs_from(), 4);
        let resent: Vec<_> = s.due(400_000, 9, &p).map(|x| x.0).collect();
        assert_eq!(resent, vec![4, 6, 8, 9]);
    }

    #[test]
    fn an_ack_beyond_the_newest_step_is_held_there() {
        let mut s = StepSender::new(0);
        s.on_ack(1_000, &[0xff; SACK_BYTES], 5);
        assert_eq!(s.needs_from(), 6, "acknowledged only up to the newest step");
        let next: Vec<_> = s.due(0, 8, &plan(1)).map(|x| x.0).collect();
        assert_eq!(next, vec![6, 7, 8], "steps formed later still go");
    }

    #[test]
    fn the_window_bounds_what_goes_past_the_ack() {
        let mut s = StepSender::new(0);
        let p = SendPlan { window: 4, ..plan(1) };
        let a: Vec<_> = send_all(&mut s, 0, 100, &p).iter().map(|x| x.0).collect();
        assert_eq!(a, vec![0, 1, 2, 3]);
        s.on_ack(1, &[], 100);
        let b: Vec<_> = send_all(&mut s, 1_000, 100, &p).iter().map(|x| x.0).collect();
        assert_eq!(b, vec![4, 5]);
        s.rebase(50);
        let c: Vec<_> = send_all(&mut s, 2_000, 100, &p).iter().map(|x| x.0).collect();
        assert_eq!((c, s.base()), (vec![50, 51, 52, 53], 50));
    }
}
