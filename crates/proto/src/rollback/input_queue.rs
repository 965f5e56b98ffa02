//! One player's inputs by tick, with prediction and the first-mismatch marker.
//!
//! A single ring holds, for each tick, either the *confirmed* input (ticks before
//! [`InputQueue::next_needed`]) or the input that was *used* when the tick was last
//! simulated with a prediction. When the real input for a predicted tick arrives it is
//! compared with the one used; the earliest difference is remembered as the first
//! mismatch, which is where the session rolls back to. Confirmed inputs must arrive
//! in order (the message layer resends until acked, so gaps never need buffering).

use super::PredictionMode;
use crate::engine::{InputStatus, Tick};

/// What [`InputQueue::add_confirmed`] did with an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AddOutcome {
    /// Stored; it was the next tick expected.
    Added,
    /// Already confirmed (a redundant copy); ignored.
    Duplicate,
    /// Not the next tick expected; ignored (the sender resends).
    Gap,
    /// At or after the player's disconnect tick; ignored.
    AfterDisconnect,
}

/// Per-player input history and prediction. Allocates only in [`InputQueue::new`].
#[derive(Debug, Clone)]
pub(super) struct InputQueue {
    size: usize,
    mask: usize,
    ring: Vec<u8>,
    zero: Vec<u8>,
    /// Every tick before this one is confirmed.
    next: Tick,
    /// Ticks in `next..=predicted_hi` were simulated with a recorded prediction.
    predicted_hi: Option<Tick>,
    first_mismatch: Option<Tick>,
    disconnect_at: Option<Tick>,
    mode: PredictionMode,
    custom: Vec<u8>,
    has_custom: bool,
}

impl InputQueue {
    /// A queue of `input_size`-byte inputs remembering `capacity` ticks (rounded up to a
    /// power of two). The session keeps every tick it still needs within that span.
    pub(super) fn new(input_size: usize, capacity: usize, mode: PredictionMode) -> Self {
        let cap = capacity.max(2).next_power_of_two();
        InputQueue {
            size: input_size,
            mask: cap - 1,
            ring: vec![0; cap * input_size],
            zero: vec![0; input_size],
            next: 0,
            predicted_hi: None,
            first_mismatch: None,
            disconnect_at: None,
            mode,
            custom: vec![0; input_size],
            has_custom: false,
        }
    }

    /// Starts the queue at `tick`: earlier ticks are treated as confirmed and unknown
    /// (a spectator joining from a snapshot). Clears predictions and disconnects.
    pub(super) fn start_at(&mut self, tick: Tick) {
        self.next = tick;
        self.predicted_hi = None;
        self.first_mismatch = None;
        self.disconnect_at = None;
    }

    /// Ticks remembered.
    pub(super) fn capacity(&self) -> usize {
        self.mask + 1
    }

    /// The first tick whose input is not confirmed yet (every earlier one is).
    pub(super) fn next_needed(&self) -> Tick {
        self.next
    }

    /// Like [`InputQueue::next_needed`], but a disconnected player whose inputs are
    /// known up to the disconnect tick needs nothing more: `Tick::MAX`.
    pub(super) fn confirmed_until(&self) -> Tick {
        match self.disconnect_at {
            Some(d) if self.next >= d => Tick::MAX,
            _ => self.next,
        }
    }

    /// The tick from which this player counts as disconnected, if any.
    pub(super) fn disconnect_tick(&self) -> Option<Tick> {
        self.disconnect_at
    }

    /// The earliest tick simulated with a prediction that turned out wrong.
    pub(super) fn first_mismatch(&self) -> Option<Tick> {
        self.first_mismatch
    }

    /// Forgets the mismatch (the session has rolled back past it).
    pub(super) fn clear_mismatch(&mut self) {
        self.first_mismatch = None;
    }

    /// Marks `tick` as mismatched (used for disconnects: every peer resimulates from
    /// the disconnect tick with identical inputs).
    pub(super) fn force_mismatch(&mut self, tick: Tick) {
        self.first_mismatch = Some(self.first_mismatch.map_or(tick, |m| m.min(tick)));
    }

    /// Sets the engine's own prediction for this player (None: back to the mode).
    pub(super) fn set_prediction(&mut self, input: Option<&[u8]>) {
        match input {
            Some(b) if b.len() == self.size => {
                self.custom.copy_from_slice(b);
                self.has_custom = true;
            }
            _ => self.has_custom = false,
        }
    }

    fn slot(&self, tick: Tick) -> std::ops::Range<usize> {
        let i = (tick as usize & self.mask) * self.size;
        i..i + self.size
    }

    /// Declares the player disconnected from tick `d` on (kept at the earliest tick
    /// ever declared). Returns whether the disconnect tick moved.
    pub(super) fn disconnect(&mut self, d: Tick) -> bool {
        if self.disconnect_at.is_some_and(|x| x <= d) {
            return false;
        }
        self.disconnect_at = Some(d);
        if self.next > d {
            // Inputs after the disconnect tick no longer count as confirmed.
            self.next = d;
        }
        true
    }

    /// Stores the real input for `tick`. The bytes must be `input_size` long (the
    /// caller checks). If the tick was simulated with a different prediction, the
    /// first mismatch moves to it.
    pub(super) fn add_confirmed(&mut self, tick: Tick, input: &[u8]) -> AddOutcome {
        debug_assert_eq!(input.len(), self.size);
        if self.disconnect_at.is_some_and(|d| tick >= d) {
            return AddOutcome::AfterDisconnect;
        }
        if tick < self.next {
            return AddOutcome::Duplicate;
        }
        if tick > self.next {
            return AddOutcome::Gap;
        }
        let r = self.slot(tick);
        if self.predicted_hi.is_some_and(|hi| tick <= hi) && self.ring[r.clone()] != *input {
            self.force_mismatch(tick);
        }
        self.ring[r].copy_from_slice(input);
        self.next = tick + 1;
        if self.predicted_hi.is_some_and(|hi| hi < self.next) {
            self.predicted_hi = None;
        }
        AddOutcome::Added
    }

    /// Replaces the confirmed input of `tick` (still remembered, before any disconnect)
    /// with `input`, and marks the tick mismatched if it changed, so that the session
    /// resimulates from it: the peers agreed this player's input was another than the
    /// one received (see `p2p/reconcile.rs`). Returns whether it changed.
    pub(super) fn correct(&mut self, tick: Tick, input: &[u8]) -> bool {
        debug_assert_eq!(input.len(), self.size);
        if self.confirmed(tick).is_none() || self.disconnect_at.is_some_and(|d| tick >= d) {
            return false;
        }
        let r = self.slot(tick);
        if self.ring[r.clone()] == *input {
            return false;
        }
        self.ring[r].copy_from_slice(input);
        self.force_mismatch(tick);
        true
    }

    /// The confirmed input of `tick`, if it is confirmed and still remembered.
    pub(super) fn confirmed(&self, tick: Tick) -> Option<&[u8]> {
        let in_range = tick < self.next && (self.next - tick) as usize <= self.capacity();
        in_range.then(|| &self.ring[self.slot(tick)])
    }

    /// The input to simulate `tick` with, and its status. A prediction is recorded so
    /// that the real input can be checked against it later.
    pub(super) fn input_for(&mut self, tick: Tick) -> (&[u8], InputStatus) {
        if self.disconnect_at.is_some_and(|d| tick >= d) {
            return (&self.zero, InputStatus::Disconnected);
        }
        if tick < self.next {
            let r = self.slot(tick);
            return (&self.ring[r], InputStatus::Confirmed);
        }
        let r = self.slot(tick);
        if self.has_custom {
            self.ring[r.clone()].copy_from_slice(&self.custom);
        } else if self.mode == PredictionMode::RepeatLast && self.next > 0 {
            let last = self.slot(self.next - 1);
            self.ring.copy_within(last, r.start);
        } else {
            self.ring[r.clone()].fill(0);
        }
        self.predicted_hi = Some(self.predicted_hi.map_or(tick, |h| h.max(tick)));
        (&self.ring[r], InputStatus::Predicted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicts_repeat_last_and_finds_first_mismatch() {
        let mut q = InputQueue::new(2, 16, PredictionMode::RepeatLast);
        assert_eq!(q.add_confirmed(0, &[1, 1]), AddOutcome::Added);
        assert_eq!(q.input_for(0), (&[1u8, 1][..], InputStatus::Confirmed));
        for t in 1..5 {
            assert_eq!(q.input_for(t), (&[1u8, 1][..], InputStatus::Predicted));
        }
        assert_eq!(q.add_confirmed(1, &[1, 1]), AddOutcome::Added);
        assert_eq!(q.first_mismatch(), None);
        assert_eq!(q.add_confirmed(3, &[2, 2]), AddOutcome::Gap);
        assert_eq!(q.add_confirmed(2, &[2, 2]), AddOutcome::Added);
        assert_eq!(q.add_confirmed(3, &[1, 1]), AddOutcome::Added);
        assert_eq!(q.first_mismatch(), Some(2), "the earliest wrong guess wins");
        assert_eq!(q.add_confirmed(1, &[9, 9]), AddOutcome::Duplicate);
        assert_eq!(q.confirmed(2), Some(&[2u8, 2][..]));
    }

    #[test]
    fn custom_prediction_and_zero_mode() {
        let mut q = InputQueue::new(1, 8, PredictionMode::Zero);
        q.add_confirmed(0, &[5]);
        assert_eq!(q.input_for(1).0, &[0]);
        q.set_prediction(Some(&[7]));
        assert_eq!(q.input_for(2).0, &[7]);
        q.add_confirmed(1, &[0]);
        assert_eq!(q.first_mismatch(), None);
        q.add_confirmed(2, &[7]);
        assert_eq!(q.first_mismatch(), None);
    }

    #[test]
    fn disconnect_supersedes_later_inputs() {
        let mut q = InputQueue::new(1, 8, PredictionMode::RepeatLast);
        for t in 0..6 {
            q.add_confirmed(t, &[t as u8]);
        }
        assert!(q.disconnect(4));
        assert!(!q.disconnect(5), "only an earlier tick moves it");
        assert_eq!(q.next_needed(), 4);
        assert_eq!(q.confirmed_until(), Tick::MAX);
        assert_eq!(q.input_for(3), (&[3u8][..], InputStatus::Confirmed));
        assert_eq!(q.input_for(4), (&[0u8][..], InputStatus::Disconnected));
        assert_eq!(q.add_confirmed(4, &[4]), AddOutcome::AfterDisconnect);
    }
}
