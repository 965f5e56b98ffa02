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
use super::step_codec::{self, StepForm};
use crate::engine::Tick;
use crate::wire::{MAX_DATAGRAM_SIZE, Reader};

/// Most players a step can list (its count is one byte).
pub(crate) const MAX_STEP_PLAYERS: usize = u8::MAX as usize;

/// One kept step: its tick, where its encodings start in the ring (counted from the
/// first byte ever kept), and their lengths (the full one, then the delta).
#[derive(Debug, Clone, Copy)]
struct Kept {
    tick: Tick,
    at: u64,
    full: usize,
    delta: usize,
}

/// Recent canonical steps, oldest first, and the step being formed.
#[derive(Debug)]
pub(crate) struct StepHistory {
    /// The kept steps' encodings (each full, then as a delta against the step
    /// before it), back to back, oldest first.
    bytes: VecDeque<u8>,
    /// Bytes dropped from the front of `bytes` so far.
    dropped: u64,
    steps: VecDeque<Kept>,
    /// The newest step's full encoding (while it is formed, and after).
    current: Vec<u8>,
    /// The step before it, in full (an empty step before the first).
    previous: Vec<u8>,
    /// The newest step as a delta.
    delta: Vec<u8>,
    /// Players written into `current`.
    current_players: usize,
    /// Most steps kept at once.
    capacity: usize,
}

impl StepHistory {
    /// A history of at most `capacity` steps (checked by the caller's trimming).
    pub(crate) fn new(capacity: usize) -> Self {
        StepHistory {
            bytes: VecDeque::new(),
            dropped: 0,
            steps: VecDeque::with_capacity(capacity + 1),
            current: Vec::with_capacity(MAX_DATAGRAM_SIZE),
            previous: vec![0],
            delta: Vec::with_capacity(MAX_DATAGRAM_SIZE),
            current_players: 0,
            capacity,
        }
    }

    /// Makes room for full histories of `players` players with inputs of up to
    /// `input_size` bytes (call when a player is admitted).
    pub(crate) fn reserve(&mut self, players: usize, input_size: usize) {
        let players = players.min(MAX_STEP_PLAYERS);
        let step = 1 + players * (6 + 2 * (1 + input_size));
        // A delta is at most the full step plus its roster flag and bitmap.
        let both = 2 * step + 1 + players.div_ceil(8);
        let total = (self.capacity + 1) * both;
        self.bytes.reserve(total.saturating_sub(self.bytes.len()));
        for v in [&mut self.current, &mut self.previous, &mut self.delta] {
            v.reserve(both.saturating_sub(v.len()));
        }
    }

    /// Starts forming a step (its players follow with [`StepHistory::push_player`]).
    pub(crate) fn begin(&mut self) {
        std::mem::swap(&mut self.current, &mut self.previous);
        self.current.clear();
        self.current.push(0);
        self.current_players = 0;
    }

    /// Adds one player's part to the step being formed, in player order. Players past
    /// the 255th cannot be listed, nor a part past [`step_codec::MAX_STEP_BYTES`] (255
    /// pieces on the wire; only merges of many inputs from many players reach it): they
    /// are left out of this step, and false is returned.
    pub(crate) fn push_player<'a>(
        &mut self,
        player: u32,
        accepted: u8,
        inputs: impl ExactSizeIterator<Item = &'a [u8]>,
    ) -> bool {
        if self.current_players == MAX_STEP_PLAYERS {
            return false;
        }
        let before = self.current.len();
        messages::write_step_player(&mut self.current, player, accepted, inputs);
        if self.current.len() > step_codec::MAX_STEP_BYTES {
            self.current.truncate(before);
            return false;
        }
        self.current_players += 1;
        true
    }

    /// Ends the step being formed as the step of `tick` and keeps it.
    pub(crate) fn finish(&mut self, tick: Tick) {
        self.current[0] = self.current_players as u8;
        step_codec::encode_delta(&mut self.delta, &self.previous, &self.current);
        let at = self.dropped + self.bytes.len() as u64;
        self.bytes.extend(self.current.iter());
        self.bytes.extend(self.delta.iter());
        self.steps.push_back(Kept { tick, at, full: self.current.len(), delta: self.delta.len() });
    }

    /// The newest step (the one last formed).
    pub(crate) fn newest(&self) -> StepView<'_> {
        StepView { encoded: &self.current }
    }

    /// Steps kept.
    pub(crate) fn len(&self) -> usize {
        self.steps.len()
    }

    /// The tick of the oldest step kept.
    pub(crate) fn oldest_tick(&self) -> Option<Tick> {
        self.steps.front().map(|s| s.tick)
    }

    /// Drops the oldest step.
    pub(crate) fn pop_oldest(&mut self) {
        if let Some(k) = self.steps.pop_front() {
            self.bytes.drain(..k.full + k.delta);
            self.dropped += (k.full + k.delta) as u64;
        }
    }

    /// The index of the step of `tick`, if it is kept (steps are one per tick).
    pub(crate) fn index_of(&self, tick: Tick) -> Option<usize> {
        let i = tick.checked_sub(self.oldest_tick()?)? as usize;
        (i < self.steps.len()).then_some(i)
    }

    /// The byte range in `bytes` of step `index`'s encoding in `form`.
    fn range(&self, index: usize, form: StepForm) -> std::ops::Range<usize> {
        let k = self.steps[index];
        let start = (k.at - self.dropped) as usize;
        match form {
            StepForm::Full => start..start + k.full,
            StepForm::Delta => start + k.full..start + k.full + k.delta,
        }
    }

    /// The length of step `index`'s encoding in `form`.
    pub(crate) fn body_len(&self, index: usize, form: StepForm) -> usize {
        self.range(index, form).len()
    }

    /// Appends bytes `part` of step `index`'s encoding in `form` to `out`.
    pub(crate) fn write_body(&self, out: &mut Vec<u8>, index: usize, form: StepForm, part: std::ops::Range<usize>) {
        let whole = self.range(index, form);
        let (start, end) = (whole.start + part.start, (whole.start + part.end).min(whole.end));
        let (a, b) = self.bytes.as_slices();
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

    /// Whether the step lists no player.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The players' parts, in increasing player id order.
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
    /// The player id.
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
    use crate::relay::step_codec;

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
        assert_eq!((h.len(), h.oldest_tick(), h.index_of(11), h.index_of(12)), (2, Some(10), Some(1), None));
        let body = |h: &StepHistory, i, form| {
            let mut out = Vec::new();
            h.write_body(&mut out, i, form, 0..h.body_len(i, form));
            out
        };
        let (wa, wb) = wire.split_at(messages::step_size(&a));
        assert_eq!(body(&h, 0, StepForm::Full), wa);
        assert_eq!(body(&h, 1, StepForm::Full), wb);
        let mut expanded = Vec::new();
        step_codec::expand_delta(&mut expanded, wa, &body(&h, 1, StepForm::Delta)).unwrap();
        assert_eq!(expanded, wb, "the delta is against the step before");
        h.pop_oldest();
        assert_eq!(body(&h, 0, StepForm::Full), wb);
        let mut part = Vec::new();
        h.write_body(&mut part, 0, StepForm::Full, 1..3);
        assert_eq!(part, wb[1..3]);
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
            for (i, s) in expected.iter().enumerate() {
                let mut out = Vec::new();
                h.write_body(&mut out, i, StepForm::Full, 0..h.body_len(i, StepForm::Full));
                let mut wire = Vec::new();
                messages::write_step(&mut wire, s);
                assert_eq!(out, wire, "tick {t}");
            }
        }
        assert_eq!(h.bytes.capacity(), cap);
    }
}
