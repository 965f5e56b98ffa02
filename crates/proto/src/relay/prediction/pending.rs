//! Our own inputs that the server has not consumed yet, by client tick.

use crate::engine::Tick;

/// How the pending inputs are numbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Numbering {
    /// From the first input pushed: no step has consumed one of ours on this
    /// connection yet, so which client tick the server takes first is not known, and
    /// an empty queue starts again from the next input pushed.
    Provisional,
    /// From the client tick the server said it consumed first: fixed until a new
    /// connection numbers our inputs afresh.
    Anchored,
}

/// The local inputs sent and not yet consumed, as far as the steps received tell: a
/// ring of `capacity × size` bytes indexed by client tick.
pub(super) struct PendingInputs {
    bytes: Vec<u8>,
    size: usize,
    mask: Tick,
    /// The client tick of the oldest input the server has not consumed.
    first: Tick,
    /// One past the client tick of the newest input pushed.
    next: Tick,
    numbering: Numbering,
    /// The newest input pushed: client ticks the engine skipped repeat it.
    last: Vec<u8>,
}

impl PendingInputs {
    /// Room for `capacity` inputs (rounded up to a power of two, at least 2).
    pub(super) fn new(capacity: usize, size: usize) -> Self {
        let capacity = capacity.max(2).next_power_of_two();
        PendingInputs {
            bytes: vec![0; capacity * size],
            size,
            mask: capacity as Tick - 1,
            first: 0,
            next: 0,
            numbering: Numbering::Provisional,
            last: vec![0; size],
        }
    }

    /// How many inputs the server has not consumed.
    pub(super) fn len(&self) -> Tick {
        self.next - self.first
    }

    /// A new connection: our inputs start over, numbered afresh.
    pub(super) fn start_over(&mut self) {
        self.numbering = Numbering::Provisional;
        self.first = self.next;
    }

    /// Records our input for `client_tick`; skipped ticks repeat the previous input,
    /// as the sync layer sent them. Returns how many of the oldest inputs were dropped
    /// to make room (the server stopped consuming them for a long time).
    pub(super) fn push(&mut self, client_tick: Tick, input: &[u8]) -> u64 {
        if self.next == self.first && self.numbering == Numbering::Provisional {
            self.first = client_tick;
            self.next = client_tick;
        }
        let mut dropped = 0;
        while self.next < client_tick {
            let last = std::mem::take(&mut self.last);
            dropped += self.push_one(&last);
            self.last = last;
        }
        if client_tick == self.next {
            self.last.copy_from_slice(input);
            dropped += self.push_one(input);
        }
        dropped
    }

    fn push_one(&mut self, input: &[u8]) -> u64 {
        let full = self.next - self.first > self.mask;
        if full {
            self.first += 1;
        }
        let at = (self.next & self.mask) as usize * self.size;
        self.bytes[at..at + self.size].copy_from_slice(input);
        self.next = self.next.saturating_add(1);
        u64::from(full)
    }

    /// The input of `client_tick` (one of the pending ones).
    fn input(&self, client_tick: Tick) -> &[u8] {
        let at = (client_tick & self.mask) as usize * self.size;
        &self.bytes[at..at + self.size]
    }

    /// The oldest input the server has not consumed, if any.
    pub(super) fn oldest(&self) -> Option<&[u8]> {
        (self.first < self.next).then(|| self.input(self.first))
    }

    /// The input `k` places after the oldest: the one the server will consume `k`
    /// steps after the next.
    pub(super) fn after_oldest(&self, k: Tick) -> &[u8] {
        self.input(self.first + k)
    }

    /// A step consumed one of our inputs: the first such step fixes the numbering,
    /// from `first_input` (the client tick the server says it consumed first), when
    /// known.
    pub(super) fn anchor(&mut self, first_input: Option<Tick>) {
        if self.numbering == Numbering::Anchored {
            return;
        }
        self.numbering = Numbering::Anchored;
        if let Some(f) = first_input {
            self.first = f;
            self.next = self.next.max(f);
        }
    }

    /// A step consumed `count` of our inputs.
    pub(super) fn consume(&mut self, count: u32) {
        self.first = self.first.saturating_add(count).min(self.next);
    }
}
