//! The relay server's canonical steps, kept until every client has them, stored flat
//! and in wire format: each step is encoded once, when it is formed, into one byte
//! ring, so resending it to a client is a copy and no step owns a vector of its own.
//!
//! Memory is reserved when a player is admitted (room for the whole history at two
//! inputs per player per step, well above what merges add), so forming, keeping,
//! trimming and resending steps allocate nothing in steady state. A history that ever
//! needs more grows once and keeps the room.

use std::collections::VecDeque;

use super::messages::{self, PlayerStep};
use crate::request::Tick;
use crate::wire::{MAX_DATAGRAM_SIZE, Reader};

/// Most players a step can list (its count is one byte).
pub const MAX_STEP_PLAYERS: usize = u8::MAX as usize;

/// Recent canonical steps, oldest first, and the step being formed.
#[derive(Debug)]
pub struct StepHistory {
    /// The kept steps' encodings, back to back, oldest first.
    bytes: VecDeque<u8>,
    /// Per kept step, oldest first: its tick and the length of its encoding.
    steps: VecDeque<(Tick, usize)>,
    /// The newest step's encoding (while it is formed, and after).
    current: Vec<u8>,
    /// Players written into `current`.
    current_players: usize,
    /// Most steps kept at once.
    capacity: usize,
}

impl StepHistory {
    /// A history of at most `capacity` steps (checked by the caller's trimming).
    pub fn new(capacity: usize) -> Self {
        StepHistory {
            bytes: VecDeque::new(),
            steps: VecDeque::with_capacity(capacity + 1),
            current: Vec::with_capacity(MAX_DATAGRAM_SIZE),
            current_players: 0,
            capacity,
        }
    }

    /// Makes room for full histories of `players` players with inputs of up to
    /// `input_size` bytes (call when a player is admitted).
    pub fn reserve(&mut self, players: usize, input_size: usize) {
        let step = 1 + players.min(MAX_STEP_PLAYERS) * (6 + 2 * (1 + input_size));
        let total = (self.capacity + 1) * step;
        self.bytes.reserve(total.saturating_sub(self.bytes.len()));
        self.current.reserve(step.saturating_sub(self.current.len()));
    }

    /// Starts forming a step (its players follow with [`StepHistory::push_player`]).
    pub fn begin(&mut self) {
        self.current.clear();
        self.current.push(0);
        self.current_players = 0;
    }

    /// Adds one player's part to the step being formed, in player order. Players past
    /// the 255th cannot be listed and are left out.
    pub fn push_player<'a>(&mut self, player: u32, accepted: u8, inputs: impl ExactSizeIterator<Item = &'a [u8]>) {
        if self.current_players == MAX_STEP_PLAYERS {
            return;
        }
        messages::write_step_player(&mut self.current, player, accepted, inputs);
        self.current_players += 1;
    }

    /// Ends the step being formed as the step of `tick` and keeps it.
    pub fn finish(&mut self, tick: Tick) {
        self.current[0] = self.current_players as u8;
        self.bytes.extend(self.current.iter());
        self.steps.push_back((tick, self.current.len()));
    }

    /// The newest step (the one last formed).
    pub fn newest(&self) -> StepView<'_> {
        StepView { encoded: &self.current }
    }

    /// Steps kept.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// The tick of the oldest step kept.
    pub fn oldest_tick(&self) -> Option<Tick> {
        self.steps.front().map(|s| s.0)
    }

    /// Drops the oldest step.
    pub fn pop_oldest(&mut self) {
        if let Some((_, len)) = self.steps.pop_front() {
            self.bytes.drain(..len);
        }
    }

    /// The index of the first step kept with a tick of at least `tick` (`len()` if none).
    pub fn first_from(&self, tick: Tick) -> usize {
        self.steps.partition_point(|s| s.0 < tick)
    }

    /// The tick of the step at `index`.
    pub fn tick_at(&self, index: usize) -> Option<Tick> {
        self.steps.get(index).map(|s| s.0)
    }

    /// Encoded sizes of the steps from `index` on, oldest first.
    pub fn sizes_from(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        self.steps.range(index.min(self.steps.len())..).map(|s| s.1)
    }

    /// Appends the encodings of `n` steps from `index` on to `out` (a ServerUpdate's
    /// steps).
    pub fn write_steps(&self, out: &mut Vec<u8>, index: usize, n: usize) {
        let start: usize = self.steps.range(..index).map(|s| s.1).sum();
        let len: usize = self.steps.range(index..index + n).map(|s| s.1).sum();
        let (a, b) = self.bytes.as_slices();
        let end = start + len;
        if start < a.len() {
            out.extend_from_slice(&a[start..end.min(a.len())]);
        }
        if end > a.len() {
            out.extend_from_slice(&b[start.saturating_sub(a.len())..end - a.len()]);
        }
    }
}

/// A step in wire format: its players in id order.
#[derive(Debug, Clone, Copy)]
pub struct StepView<'a> {
    encoded: &'a [u8],
}

impl<'a> StepView<'a> {
    /// A view of one step in wire format (checked by decoding beforehand: a short
    /// encoding just ends the iteration early).
    pub fn new(encoded: &'a [u8]) -> Self {
        StepView { encoded }
    }

    /// The step as it goes on the wire.
    pub fn encoded(&self) -> &'a [u8] {
        self.encoded
    }

    /// Players listed.
    pub fn len(&self) -> usize {
        self.encoded.first().map_or(0, |&n| n as usize)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn players(&self) -> StepPlayers<'a> {
        StepPlayers { encoded: self.encoded, r: Reader::new(self.encoded.get(1..).unwrap_or(&[])), left: self.len() }
    }

    /// An owned copy (allocates; for tests and tools).
    pub fn to_vec(&self) -> Vec<PlayerStep> {
        self.players()
            .map(|p| PlayerStep {
                player: p.player,
                accepted: p.accepted,
                inputs: p.inputs().map(<[u8]>::to_vec).collect(),
            })
            .collect()
    }
}

/// The players of a [`StepView`].
pub struct StepPlayers<'a> {
    encoded: &'a [u8],
    r: Reader<'a>,
    left: usize,
}

impl<'a> StepPlayers<'a> {
    /// The next player's part. The encoding is the server's own, so it always reads;
    /// were it short, the iteration would just end.
    fn read(&mut self) -> Option<StepPlayer<'a>> {
        let player = self.r.u32().ok()?;
        let accepted = self.r.u8().ok()?;
        let n_inputs = self.r.u8().ok()?;
        let start = self.encoded.len() - self.r.remaining();
        for _ in 0..n_inputs {
            let len = self.r.u8().ok()? as usize;
            self.r.bytes(len).ok()?;
        }
        let end = self.encoded.len() - self.r.remaining();
        Some(StepPlayer { player, accepted, n_inputs, inputs: &self.encoded[start..end] })
    }
}

impl<'a> Iterator for StepPlayers<'a> {
    type Item = StepPlayer<'a>;

    fn next(&mut self) -> Option<StepPlayer<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let p = self.read();
        if p.is_none() {
            self.left = 0;
        }
        p
    }
}

/// One player's part of a step.
#[derive(Debug, Clone, Copy)]
pub struct StepPlayer<'a> {
    pub player: u32,
    /// The client's accepted count for this tick (0, 1, or k for a merge).
    pub accepted: u8,
    n_inputs: u8,
    /// The inputs' encodings (length byte, bytes), back to back.
    inputs: &'a [u8],
}

impl<'a> StepPlayer<'a> {
    /// The inputs applied: `accepted` of them, or one substitute when accepted is 0.
    pub fn inputs(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let mut r = Reader::new(self.inputs);
        (0..self.n_inputs).map_while(move |_| {
            let len = r.u8().ok()? as usize;
            r.bytes(len).ok()
        })
    }

    /// The last input applied (what the engine simulates with).
    pub fn last_input(&self) -> Option<&'a [u8]> {
        self.inputs().last()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(history: &mut StepHistory, tick: Tick, players: &[PlayerStep]) {
        history.begin();
        for p in players {
            history.push_player(p.player, p.accepted, p.inputs.iter().map(Vec::as_slice));
        }
        history.finish(tick);
    }

    #[test]
    fn steps_are_kept_in_wire_format_and_read_back() {
        let a = vec![
            PlayerStep { player: 0, accepted: 1, inputs: vec![vec![1, 2]] },
            PlayerStep { player: 3, accepted: 2, inputs: vec![vec![3, 4], vec![5, 6]] },
        ];
        let b = vec![PlayerStep { player: 3, accepted: 0, inputs: vec![vec![0, 0]] }];
        let mut h = StepHistory::new(8);
        h.reserve(2, 2);
        step(&mut h, 10, &a);
        let mut wire = Vec::new();
        messages::write_step(&mut wire, &a);
        assert_eq!(h.newest().encoded(), &wire[..]);
        assert_eq!(h.newest().to_vec(), a);
        assert_eq!(h.newest().players().nth(1).unwrap().last_input(), Some(&[5u8, 6][..]));
        step(&mut h, 11, &b);
        messages::write_step(&mut wire, &b);
        assert_eq!(h.newest().to_vec(), b);
        assert_eq!((h.len(), h.oldest_tick(), h.first_from(11), h.tick_at(1)), (2, Some(10), 1, Some(11)));
        assert_eq!(h.sizes_from(0).collect::<Vec<_>>(), vec![messages::step_size(&a), messages::step_size(&b)]);
        let mut out = Vec::new();
        h.write_steps(&mut out, 0, 2);
        assert_eq!(out, wire, "both steps, back to back");
        h.pop_oldest();
        out.clear();
        h.write_steps(&mut out, 0, 1);
        assert_eq!(out, wire[messages::step_size(&a)..]);
    }

    #[test]
    fn the_ring_wraps_without_growing() {
        let mut h = StepHistory::new(4);
        h.reserve(1, 1);
        let cap = h.bytes.capacity();
        let mut expected = VecDeque::new();
        for t in 0..100u32 {
            let p = [PlayerStep { player: 7, accepted: 1, inputs: vec![vec![t as u8]] }];
            step(&mut h, t, &p);
            expected.push_back(p);
            if h.len() > 4 {
                h.pop_oldest();
                expected.pop_front();
            }
            let mut out = Vec::new();
            h.write_steps(&mut out, 1, h.len() - 1);
            let mut wire = Vec::new();
            for s in expected.iter().skip(1) {
                messages::write_step(&mut wire, s);
            }
            assert_eq!(out, wire, "tick {t}");
        }
        assert_eq!(h.bytes.capacity(), cap);
    }
}
