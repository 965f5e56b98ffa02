//! The relay client's side of the step stream: steps arrive in any order, in pieces,
//! as deltas; they leave in tick order, whole and in full, for the [`StepQueue`].
//!
//! Room for [`CLIENT_STEP_WINDOW`] steps from the next one expected is made up front
//! (one slot per tick, reused in a ring). What arrives outside it is dropped: the
//! server sends nothing there unless it is lying or far ahead of what we told it, and
//! it sends again whatever we do not acknowledge. A server is authenticated, but a
//! hostile or broken one must not take the client's memory either: a body larger than
//! the largest step the game's rules allow is refused, and all slots together hold at
//! most [`HELD_BUDGET`] bytes (what does not fit is dropped, and a correct server sends
//! it again once the steps before it have gone to the engine).

use super::messages::{self, StepRules};
use super::step_codec::{self, Entry, FRAGMENT_BYTES, StepForm};
use super::step_queue::StepQueue;
use crate::engine::Tick;
use crate::stream::{ROOM, ReceiveWindow, SACK_BYTES};

/// Steps past the acknowledged one a client can hold (its reorder room): the most
/// any window of the server's reaches.
pub(crate) const CLIENT_STEP_WINDOW: usize = ROOM;

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

/// Bytes all slots may hold at once (the largest step of 64 players with
/// 64-byte inputs, all changed, is about 4.4 KB: a full window of them is 1.1 MB).
pub(super) const HELD_BUDGET: usize = 4 << 20;

/// What one entry did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Taken {
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
pub(super) struct StepReceiver {
    /// The next step to deliver in order (None before the first full step), and the
    /// steps held whole past it.
    window: ReceiveWindow,
    /// The full encoding of step `next - 1` (deltas are against it).
    last_full: Vec<u8>,
    slots: Vec<Slot>,
    /// What each slot's buffer is made with; one grown far past it shrinks back when
    /// it empties.
    slot_capacity: usize,
    /// The largest body the rules allow.
    max_body: usize,
    scratch: Vec<u8>,
    /// Steps whose delta did not fit the step before (never from a correct server).
    pub broken: u64,
}

impl StepReceiver {
    /// Room for steps of up to `step_bytes` bytes as they arrive (one slot per step in
    /// the window) and `full_bytes` in full (the one being rebuilt and the one before
    /// it). A larger step grows its buffer once.
    pub(super) fn new(step_bytes: usize, full_bytes: usize, rules: &StepRules) -> Self {
        let slots = (0..CLIENT_STEP_WINDOW)
            .map(|_| Slot {
                tick: 0,
                form: StepForm::Full,
                state: SlotState::Empty,
                bytes: Vec::with_capacity(step_bytes),
            })
            .collect();
        StepReceiver {
            window: ReceiveWindow::new(),
            last_full: Vec::with_capacity(full_bytes),
            slots,
            slot_capacity: step_bytes,
            max_body: max_body(rules),
            scratch: Vec::with_capacity(full_bytes),
            broken: 0,
        }
    }

    /// Bytes the slots hold now.
    fn held(&self) -> usize {
        self.slots.iter().filter(|s| s.state != SlotState::Empty).map(|s| s.bytes.len()).sum()
    }

    /// The next step expected in order.
    pub(super) fn next(&self) -> Option<Tick> {
        self.window.next()
    }

    /// Forgets everything: the stream starts again at the next full step.
    pub(super) fn reset(&mut self) {
        self.window.reset();
        self.last_full.clear();
        for s in &mut self.slots {
            empty(s, self.slot_capacity);
        }
    }

    fn slot(&mut self, tick: Tick) -> &mut Slot {
        let n = self.slots.len();
        &mut self.slots[tick as usize % n]
    }

    /// Takes one entry of an update.
    pub(super) fn take(&mut self, e: &Entry<'_>) -> Taken {
        let mut outcome = Taken::Kept;
        match self.window.next() {
            None if e.form != StepForm::Full => return Taken::Ignored,
            None => self.window.start(e.tick),
            Some(next) if e.form == StepForm::Full && e.tick > next => {
                self.reset();
                self.window.start(e.tick);
                outcome = Taken::Restarted;
            }
            Some(_) if !self.window.fits(e.tick) => return Taken::Ignored,
            Some(_) => {}
        }
        let outcome = self.put(e, outcome);
        // Whatever the entry did to its slot, the window says whether the step is whole.
        let slot = self.slot(e.tick);
        let whole = slot.tick == e.tick && slot.state == SlotState::Complete;
        self.window.set(e.tick, whole);
        outcome
    }

    /// Puts an entry in its slot (within the room); `outcome` if it is kept.
    fn put(&mut self, e: &Entry<'_>, outcome: Taken) -> Taken {
        // The bytes this entry would add: more than a step can hold, or than the
        // budget has left, is refused.
        let (index, count) = e.fragment.unwrap_or((0, 1));
        let end = index as usize * FRAGMENT_BYTES + e.bytes.len();
        let least = (count as usize - 1) * FRAGMENT_BYTES + 1;
        if end > self.max_body || least > self.max_body || self.held() + e.bytes.len() > HELD_BUDGET {
            return Taken::Refused;
        }
        let capacity = self.slot_capacity;
        let slot = self.slot(e.tick);
        if slot.tick != e.tick || slot.form != e.form {
            empty(slot, capacity);
        }
        slot.tick = e.tick;
        slot.form = e.form;
        if e.fragment.is_none() {
            if slot.state != SlotState::Complete {
                slot.bytes.clear();
                slot.bytes.extend_from_slice(e.bytes);
                slot.state = SlotState::Complete;
            }
            return outcome;
        }
        if slot.state == SlotState::Empty {
            slot.state = SlotState::Partial { count, seen: [0; 4], last_len: None };
            slot.bytes.clear();
        }
        let SlotState::Partial { count: c, ref mut seen, ref mut last_len } = slot.state else { return Taken::Ignored };
        if c != count {
            empty(slot, capacity);
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
    pub(super) fn deliver(&mut self, queue: &mut StepQueue, rules: &StepRules, mut on_step: impl FnMut(Tick, &[u8])) {
        while let Some(next) = self.window.next() {
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
                empty(slot, self.slot_capacity);
                self.window.set(next, false);
                self.broken += 1;
                return;
            }
            if !queue.push(next, &self.scratch) {
                return;
            }
            empty(slot, self.slot_capacity);
            on_step(next, &self.scratch);
            std::mem::swap(&mut self.last_full, &mut self.scratch);
            self.window.advance();
        }
    }

    /// The acknowledgement to send: the last step taken in order ([`messages::NONE`]
    /// before the first), and the bitmap of steps held past it into `sack`, whose used
    /// length is returned.
    pub(super) fn ack(&self, sack: &mut [u8; SACK_BYTES]) -> (Tick, usize) {
        match self.window.ack(sack) {
            (Some(next), len) => (next.wrapping_sub(1), len),
            (None, len) => (messages::NONE, len),
        }
    }
}

/// Empties a slot; a buffer grown far past `capacity` (by a rare big step) shrinks back.
fn empty(slot: &mut Slot, capacity: usize) {
    slot.state = SlotState::Empty;
    slot.bytes.clear();
    if slot.bytes.capacity() > 4 * capacity.max(64) {
        slot.bytes.shrink_to(capacity);
    }
}

/// The largest body `rules` allow: every player (up to 255) with a merge of 255 inputs
/// of the largest size, as a delta with a listed roster; at most what 255 pieces carry.
fn max_body(rules: &StepRules) -> usize {
    let players = rules.max_players.map_or(255, |m| (m as usize).min(255));
    let input = rules.input_size.unwrap_or(rules.max_input);
    let part = 2 + 255 * (1 + input);
    (2 + players * (4 + part) + players.div_ceil(8)).min(step_codec::MAX_FRAGMENTS * FRAGMENT_BYTES)
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
        let mut r = StepReceiver::new(64, 4096, &StepRules::any(255));
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
        let mut r = StepReceiver::new(64, 4096, &StepRules::any(255));
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
    fn a_hostile_server_cannot_take_the_clients_memory() {
        // 4 players of 2-byte inputs: a body of more than 4 × 771 bytes is no step.
        let rules = StepRules { max_input: 2, input_size: Some(2), max_players: Some(4) };
        let mut r = StepReceiver::new(64, 4096, &rules);
        let big = vec![0u8; FRAGMENT_BYTES];
        let first = Entry { tick: 0, form: StepForm::Full, fragment: Some((0, 200)), bytes: &big };
        assert_eq!(r.take(&first), Taken::Refused, "a body claimed 200 pieces long");
        let piece = |tick, i| Entry { tick, form: StepForm::Full, fragment: Some((i, 3)), bytes: &big };
        assert_eq!(r.take(&piece(0, 0)), Taken::Kept, "3 pieces fit 4 players' merges");
        // Pieces for every slot of the window, past the budget of held bytes.
        let rules = StepRules::any(255);
        let mut r = StepReceiver::new(64, 4096, &rules);
        let mut refused = 0;
        for t in 0..CLIENT_STEP_WINDOW as Tick {
            // (The stream starts at a full step; every later one is a delta.)
            let form = if t == 0 { StepForm::Full } else { StepForm::Delta };
            for i in 0..20u8 {
                let e = Entry { tick: t, form, fragment: Some((i, 250)), bytes: &big };
                refused += (r.take(&e) == Taken::Refused) as u32;
            }
        }
        assert!(r.held() <= HELD_BUDGET, "{} bytes held", r.held());
        assert!(refused > 0 && r.held() > HELD_BUDGET - FRAGMENT_BYTES);
        // Emptied slots give their room back.
        r.reset();
        assert_eq!(r.held(), 0);
        assert!(r.slots.iter().all(|s| s.bytes.capacity() <= 4 * 64), "grown buffers shrink back");
    }

    #[test]
    fn a_full_step_ahead_restarts_the_stream() {
        let rules = StepRules::any(255);
        let mut r = StepReceiver::new(64, 4096, &StepRules::any(255));
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
