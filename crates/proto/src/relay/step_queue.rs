//! The relay client's canonical steps waiting for the engine, in a fixed amount of
//! memory made up front.
//!
//! Steps are kept as the server encoded them, back to back in a byte ring, and only
//! the front one is decoded into [`PlayerStep`]s (in player entries and input buffers
//! made for the largest step a datagram can carry). So neither a pile of steps after
//! a stall nor a merge of many inputs in one step allocates: when the ring or the
//! entry list is full, the queue takes no more, and since the client acknowledges only
//! the steps it took, the server sends the rest again.

use std::collections::VecDeque;

use super::messages::{self, PlayerStep, StepParts};
use crate::engine::Tick;

/// Steps waiting for the engine (see the module docs).
#[derive(Debug)]
pub(super) struct StepQueue {
    /// Encoded steps; `entries` say where each one is.
    ring: Vec<u8>,
    /// (tick, offset in `ring`, length), oldest first.
    entries: VecDeque<(Tick, usize, usize)>,
    max_steps: usize,
    /// The oldest step, decoded (empty when there is none).
    front: Vec<PlayerStep>,
    parts: StepParts,
}

/// How much a [`StepQueue`] holds and what one step can contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StepQueueSize {
    /// Steps held at most.
    pub steps: usize,
    /// Bytes of encoded steps held at most (at least one datagram's worth).
    pub bytes: usize,
    /// Players in one step.
    pub players: usize,
    /// Inputs in one step, all players together, and for one player.
    pub inputs: usize,
    pub inputs_per_player: usize,
    /// Bytes of one input.
    pub input_size: usize,
}

impl StepQueue {
    pub(super) fn new(size: StepQueueSize) -> Self {
        StepQueue {
            ring: vec![0; size.bytes.max(crate::wire::MAX_DATAGRAM_SIZE)],
            entries: VecDeque::with_capacity(size.steps),
            max_steps: size.steps,
            front: Vec::with_capacity(size.players),
            parts: StepParts::prefilled(size.players, size.inputs_per_player, size.inputs, size.input_size),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends step `tick`, encoded as `bytes` (checked by the caller's decoding).
    /// False when the queue is full: nothing was kept.
    pub(super) fn push(&mut self, tick: Tick, bytes: &[u8]) -> bool {
        if self.entries.len() >= self.max_steps {
            return false;
        }
        let Some(at) = self.free_at(bytes.len()) else { return false };
        if self.entries.is_empty() && messages::decode_step_into(bytes, &mut self.front, &mut self.parts).is_err() {
            self.parts.recycle(&mut self.front);
            return false;
        }
        self.ring[at..at + bytes.len()].copy_from_slice(bytes);
        self.entries.push_back((tick, at, bytes.len()));
        true
    }

    /// Where `n` more bytes fit in the ring after the newest step, if they do.
    fn free_at(&self, n: usize) -> Option<usize> {
        let cap = self.ring.len();
        let (Some(&(_, oldest, _)), Some(&(_, newest, len))) = (self.entries.front(), self.entries.back()) else {
            return (n <= cap).then_some(0);
        };
        let end = newest + len;
        if newest >= oldest {
            // Not wrapped: after the newest, or else from the start up to the oldest.
            if end + n <= cap { Some(end) } else { (n <= oldest).then_some(0) }
        } else {
            (end + n <= oldest).then_some(end)
        }
    }

    /// The oldest step.
    pub(super) fn front(&self) -> Option<(Tick, &[PlayerStep])> {
        self.entries.front().map(|&(t, _, _)| (t, self.front.as_slice()))
    }

    /// Drops the oldest step and decodes the next one.
    pub(super) fn pop_front(&mut self) {
        self.entries.pop_front();
        self.parts.recycle(&mut self.front);
        while let Some(&(_, at, len)) = self.entries.front() {
            if messages::decode_step_into(&self.ring[at..at + len], &mut self.front, &mut self.parts).is_ok() {
                return;
            }
            // Checked when it arrived, so never; a step that cannot be read is skipped.
            self.parts.recycle(&mut self.front);
            self.entries.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(players: &[PlayerStep]) -> Vec<u8> {
        let mut b = Vec::new();
        messages::write_step(&mut b, players);
        b
    }

    fn step(t: u8, inputs: usize) -> Vec<PlayerStep> {
        vec![
            PlayerStep { player: 0, accepted: 1, inputs: vec![vec![t, 0]] },
            PlayerStep { player: 2, accepted: inputs as u8, inputs: (0..inputs).map(|i| vec![t, i as u8]).collect() },
        ]
    }

    fn size(steps: usize, bytes: usize) -> StepQueueSize {
        StepQueueSize { steps, bytes, players: 4, inputs: 64, inputs_per_player: 32, input_size: 2 }
    }

    #[test]
    fn delivers_in_order_through_wrap_arounds() {
        let mut q = StepQueue::new(size(8, 1200));
        let mut next_in: Tick = 0;
        let mut next_out: Tick = 0;
        for round in 0..200 {
            // Uneven sizes so the ring wraps at every possible place.
            for _ in 0..(round % 3 + 1) {
                let s = step(next_in as u8, 1 + (next_in % 30) as usize);
                if !q.push(next_in, &encoded(&s)) {
                    break;
                }
                next_in += 1;
            }
            for _ in 0..(round % 2 + 1) {
                let Some((t, players)) = q.front() else { break };
                assert_eq!(t, next_out);
                assert_eq!(players, step(t as u8, 1 + (t % 30) as usize).as_slice());
                q.pop_front();
                next_out += 1;
            }
        }
        assert!(next_out > 150, "steps went through: {next_out}");
        assert_eq!(q.len(), (next_in - next_out) as usize);
    }

    #[test]
    fn refuses_steps_beyond_its_room() {
        let mut q = StepQueue::new(size(3, 1200));
        for t in 0..3 {
            assert!(q.push(t, &encoded(&step(t as u8, 1))));
        }
        assert!(!q.push(3, &encoded(&step(3, 1))), "entry list full");
        q.pop_front();
        assert!(q.push(3, &encoded(&step(3, 1))));
        let mut big = StepQueue::new(size(100, 1200));
        let s = encoded(&step(0, 200));
        assert!(big.push(0, &s) && !big.push(1, &s), "{} bytes do not fit twice in 1200", s.len());
        assert_eq!(big.front().unwrap().1[1].inputs.len(), 200);
    }

    #[test]
    fn an_unreadable_step_is_refused() {
        let mut q = StepQueue::new(size(4, 1200));
        assert!(!q.push(0, &[1, 0, 0]));
        assert!(q.is_empty() && q.front().is_none());
    }
}
