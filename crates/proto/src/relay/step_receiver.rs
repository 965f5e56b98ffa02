//! The relay client's side of the step stream: steps arrive in any order, in pieces,
//! as deltas; they leave in tick order, whole and in full, for the [`StepQueue`].
//!
//! Room for [`CLIENT_STEP_WINDOW`] steps from the next one expected is made up front
//! (one slot per tick, reused in a ring). What arrives outside it is dropped: the
//! server sends nothing there unless it is lying or far ahead of what we told it, and
//! it sends again whatever we do not acknowledge.

use super::messages::{self, StepRules};
use super::step_codec::{self, Entry, FRAGMENT_BYTES, StepForm};
use super::step_queue::StepQueue;
use super::step_sender::{CLIENT_STEP_WINDOW, SACK_BYTES};
use crate::request::Tick;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Empty,
    /// Pieces of a body: how many there are, and which arrived.
    Partial {
        count: u8,
        seen: [u64; 4],
        last_len: Option<usize>,
    },
    Complete,
}

#[derive(Debug)]
struct Slot {
    tick: Tick,
    form: StepForm,
    state: SlotState,
    bytes: Vec<u8>,
}

/// What one entry did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// Kept (a whole step, or a piece of one).
    Kept,
    /// Already held, already delivered, or outside the room: dropped.
    Ignored,
    /// A full step past the one expected: the server started our stream again there
    /// (we fell behind what it keeps). Everything held before it was dropped.
    Restarted,
    /// Inconsistent with what is held (pieces that do not match): dropped and counted.
    Refused,
}

/// The client's reorder and reassembly room. See the module docs.
#[derive(Debug)]
pub struct StepReceiver {
    /// The next step to deliver in order (None before the first full step).
    next: Option<Tick>,
    /// The full encoding of step `next - 1` (deltas are against it).
    last_full: Vec<u8>,
    slots: Vec<Slot>,
    scratch: Vec<u8>,
    /// Steps whose delta did not fit the step before (never from a correct server).
    pub broken: u64,
}

impl StepReceiver {
    /// Room for steps of up to `step_bytes` bytes as they arrive (one slot per step in
    /// the window) and `full_bytes` in full (the one being rebuilt and the one before
    /// it). A larger step grows its buffer once.
    pub fn new(step_bytes: usize, full_bytes: usize) -> Self {
        let slots = (0..CLIENT_STEP_WINDOW)
            .map(|_| Slot {
                tick: 0,
                form: StepForm::Full,
                state: SlotState::Empty,
                bytes: Vec::with_capacity(step_bytes),
            })
            .collect();
        StepReceiver {
            next: None,
            last_full: Vec::with_capacity(full_bytes),
            slots,
            scratch: Vec::with_capacity(full_bytes),
            broken: 0,
        }
    }

    /// The next step expected in order.
    pub fn next(&self) -> Option<Tick> {
        self.next
    }

    /// Forgets everything: the stream starts again at the next full step.
    pub fn reset(&mut self) {
        self.next = None;
        self.last_full.clear();
        for s in &mut self.slots {
            s.state = SlotState::Empty;
        }
    }

    fn slot(&mut self, tick: Tick) -> &mut Slot {
        let n = self.slots.len();
        &mut self.slots[tick as usize % n]
    }

    /// Takes one entry of an update.
    pub fn take(&mut self, e: &Entry<'_>) -> Taken {
        let mut outcome = Taken::Kept;
        match self.next {
            None if e.form != StepForm::Full => return Taken::Ignored,
            None => self.next = Some(e.tick),
            Some(next) if e.form == StepForm::Full && e.tick > next => {
                self.reset();
                self.next = Some(e.tick);
                outcome = Taken::Restarted;
            }
            Some(next) if e.tick < next || e.tick - next >= CLIENT_STEP_WINDOW as Tick => return Taken::Ignored,
            Some(_) => {}
        }
        let slot = self.slot(e.tick);
        if slot.tick != e.tick || slot.form != e.form {
            slot.state = SlotState::Empty;
        }
        slot.tick = e.tick;
        slot.form = e.form;
        let Some((index, count)) = e.fragment else {
            if slot.state != SlotState::Complete {
                slot.bytes.clear();
                slot.bytes.extend_from_slice(e.bytes);
                slot.state = SlotState::Complete;
            }
            return outcome;
        };
        if slot.state == SlotState::Empty {
            slot.state = SlotState::Partial { count, seen: [0; 4], last_len: None };
            slot.bytes.clear();
        }
        let SlotState::Partial { count: c, ref mut seen, ref mut last_len } = slot.state else { return Taken::Ignored };
        if c != count {
            slot.state = SlotState::Empty;
            return Taken::Refused;
        }
        let (word, bit) = (index as usize / 64, index as usize % 64);
        if seen[word] & (1 << bit) != 0 {
            return Taken::Ignored;
        }
        seen[word] |= 1 << bit;
        let at = index as usize * FRAGMENT_BYTES;
        if slot.bytes.len() < at + e.bytes.len() {
            slot.bytes.resize(at + e.bytes.len(), 0);
        }
        slot.bytes[at..at + e.bytes.len()].copy_from_slice(e.bytes);
        if index + 1 == count {
            *last_len = Some(at + e.bytes.len());
        }
        let got: u32 = seen.iter().map(|w| w.count_ones()).sum();
        if got == count as u32 {
            let len = last_len.expect("the last piece arrived");
            slot.bytes.truncate(len);
            slot.state = SlotState::Complete;
        }
        outcome
    }

    /// Moves the steps that are complete and in order into `queue`, checked against
    /// `rules`, and calls `on_step` with each one's tick and full encoding. Stops
    /// when the queue is full (what is held stays held).
    pub fn deliver(&mut self, queue: &mut StepQueue, rules: &StepRules, mut on_step: impl FnMut(Tick, &[u8])) {
        while let Some(next) = self.next {
            let n = self.slots.len();
            let slot = &mut self.slots[next as usize % n];
            if slot.tick != next || slot.state != SlotState::Complete {
                return;
            }
            let ok = match slot.form {
                StepForm::Full => {
                    self.scratch.clear();
                    self.scratch.extend_from_slice(&slot.bytes);
                    step_codec::check_body(StepForm::Full, &self.scratch, rules).is_ok()
                }
                StepForm::Delta => {
                    step_codec::check_body(StepForm::Delta, &slot.bytes, rules).is_ok()
                        && !self.last_full.is_empty()
                        && step_codec::expand_delta(&mut self.scratch, &self.last_full, &slot.bytes).is_ok()
                        && step_codec::check_body(StepForm::Full, &self.scratch, rules).is_ok()
                }
            };
            if !ok {
                // A correct server never sends this: drop it; it is not acknowledged,
                // so it comes again.
                slot.state = SlotState::Empty;
                self.broken += 1;
                return;
            }
            if !queue.push(next, &self.scratch) {
                return;
            }
            slot.state = SlotState::Empty;
            on_step(next, &self.scratch);
            std::mem::swap(&mut self.last_full, &mut self.scratch);
            self.next = Some(next + 1);
        }
    }

    /// The acknowledgement to send: the last step taken in order ([`messages::NONE`]
    /// before the first), and the bitmap of steps held past it into `sack`, whose used
    /// length is returned.
    pub fn ack(&self, sack: &mut [u8; SACK_BYTES]) -> (Tick, usize) {
        *sack = [0; SACK_BYTES];
        let Some(next) = self.next else { return (messages::NONE, 0) };
        let mut len = 0;
        for k in 1..CLIENT_STEP_WINDOW as Tick {
            let Some(tick) = next.checked_add(k) else { break };
            let s = &self.slots[tick as usize % self.slots.len()];
            if s.tick == tick && s.state == SlotState::Complete {
                let bit = (k - 1) as usize;
                sack[bit / 8] |= 1 << (bit % 8);
                len = bit / 8 + 1;
            }
        }
        (next.wrapping_sub(1), len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relay::messages::PlayerStep;
    use crate::relay::step_queue::StepQueueSize;

    fn full(tick: Tick, big: bool) -> Vec<u8> {
        let n = if big { 2 * FRAGMENT_BYTES + 10 } else { 2 };
        let mut b = Vec::new();
        messages::write_step(
            &mut b,
            &[PlayerStep { player: 0, accepted: 1, inputs: vec![vec![tick as u8; n.min(255)]] }],
        );
        if big {
            // Many players make a big step.
            b.clear();
            let players: Vec<_> =
                (0..12).map(|p| PlayerStep { player: p, accepted: 1, inputs: vec![vec![tick as u8; 200]] }).collect();
            messages::write_step(&mut b, &players);
        }
        b
    }

    fn delta(prev: &[u8], cur: &[u8]) -> Vec<u8> {
        let mut d = Vec::new();
        step_codec::encode_delta(&mut d, prev, cur);
        d
    }

    fn queue() -> StepQueue {
        StepQueue::new(StepQueueSize {
            steps: 64,
            bytes: 64 * 4000,
            players: 16,
            inputs: 64,
            inputs_per_player: 4,
            input_size: 255,
        })
    }

    fn whole(tick: Tick, form: StepForm, bytes: &[u8]) -> Entry<'_> {
        Entry { tick, form, fragment: None, bytes }
    }

    #[test]
    fn steps_out_of_order_leave_in_order_and_gaps_are_acknowledged_past() {
        let rules = StepRules::any(255);
        let mut r = StepReceiver::new(64, 4096);
        let mut q = queue();
        let steps: Vec<_> = (10..20).map(|t| full(t, false)).collect();
        let deltas: Vec<_> = (1..10).map(|i| delta(&steps[i - 1], &steps[i])).collect();
        assert_eq!(r.take(&whole(11, StepForm::Delta, &deltas[0])), Taken::Ignored, "nothing before the start");
        assert_eq!(r.take(&whole(10, StepForm::Full, &steps[0])), Taken::Kept);
        // 11 lost; 12, 14 arrive.
        r.take(&whole(12, StepForm::Delta, &deltas[1]));
        r.take(&whole(14, StepForm::Delta, &deltas[3]));
        let mut seen = Vec::new();
        r.deliver(&mut q, &rules, |t, b| seen.push((t, b.to_vec())));
        assert_eq!(seen, vec![(10, steps[0].clone())]);
        let mut sack = [0; SACK_BYTES];
        assert_eq!(r.ack(&mut sack), (10, 1));
        assert_eq!(sack[0], 0b101, "12 and 14 held past the gap at 11");
        assert_eq!(r.take(&whole(12, StepForm::Delta, &deltas[1])), Taken::Kept, "a repeat changes nothing");
        r.take(&whole(11, StepForm::Delta, &deltas[0]));
        r.take(&whole(13, StepForm::Delta, &deltas[2]));
        r.deliver(&mut q, &rules, |t, b| seen.push((t, b.to_vec())));
        assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), vec![10, 11, 12, 13, 14]);
        assert!(seen.iter().all(|(t, b)| *b == steps[(t - 10) as usize]), "deltas rebuilt in full");
        assert_eq!(r.ack(&mut sack), (14, 0));
        assert_eq!(r.take(&whole(11, StepForm::Delta, &deltas[0])), Taken::Ignored, "already delivered");
        assert_eq!(r.take(&whole(14 + 1 + CLIENT_STEP_WINDOW as Tick, StepForm::Delta, &deltas[0])), Taken::Ignored);
    }

    #[test]
    fn pieces_are_put_together_in_any_order() {
        let rules = StepRules::any(255);
        let mut r = StepReceiver::new(64, 4096);
        let mut q = queue();
        let (a, b) = (full(1, true), full(2, true));
        let d = delta(&a, &b);
        assert!(d.len() > 2 * FRAGMENT_BYTES, "{}", d.len());
        let pieces = |body: &[u8]| -> Vec<Vec<u8>> { body.chunks(FRAGMENT_BYTES).map(<[u8]>::to_vec).collect() };
        let (pa, pd) = (pieces(&a), pieces(&d));
        let n = pa.len() as u8;
        for i in [2u8, 0, 1] {
            let e = Entry { tick: 1, form: StepForm::Full, fragment: Some((i, n)), bytes: &pa[i as usize] };
            assert_eq!(r.take(&e), Taken::Kept);
        }
        let e = Entry { tick: 2, form: StepForm::Delta, fragment: Some((1, 5)), bytes: &pd[1] };
        assert_eq!(r.take(&e), Taken::Kept);
        let e = Entry { tick: 2, form: StepForm::Delta, fragment: Some((0, pd.len() as u8)), bytes: &pd[0] };
        assert_eq!(r.take(&e), Taken::Refused, "another count for the same step");
        for i in (0..pd.len()).rev() {
            let e = Entry { tick: 2, form: StepForm::Delta, fragment: Some((i as u8, pd.len() as u8)), bytes: &pd[i] };
            r.take(&e);
        }
        let mut seen = Vec::new();
        r.deliver(&mut q, &rules, |t, body| seen.push((t, body.to_vec())));
        assert_eq!(seen, vec![(1, a), (2, b)]);
    }

    #[test]
    fn a_full_step_ahead_restarts_the_stream() {
        let rules = StepRules::any(255);
        let mut r = StepReceiver::new(64, 4096);
        let mut q = queue();
        let steps: Vec<_> = (0..3).map(|t| full(t, false)).collect();
        r.take(&whole(0, StepForm::Full, &steps[0]));
        r.take(&whole(2, StepForm::Delta, &delta(&steps[1], &steps[2])));
        r.deliver(&mut q, &rules, |_, _| {});
        assert_eq!(r.take(&whole(0, StepForm::Full, &steps[0])), Taken::Ignored, "the old start again");
        assert_eq!(r.take(&whole(500, StepForm::Full, &steps[1])), Taken::Restarted);
        let mut seen = Vec::new();
        r.deliver(&mut q, &rules, |t, _| seen.push(t));
        assert_eq!(seen, vec![500]);
        let mut sack = [0; SACK_BYTES];
        assert_eq!(r.ack(&mut sack), (500, 0), "step 2, held before, is gone");
    }
}
