//! The receiving side of a tick stream: which ticks arrived past the next one expected,
//! as the cumulative acknowledgement and the bitmap of ticks held past it.

use crate::engine::Tick;

/// Ticks a receiver holds from the next one expected: the most any sender's window
/// reaches past the acknowledged tick.
pub const ROOM: usize = 256;

/// Bytes of the bitmap of ticks held past the next one expected (bit `j` of byte `i`:
/// tick `next + 1 + 8i + j`).
pub const SACK_BYTES: usize = (ROOM - 1).div_ceil(8);

const WORDS: usize = ROOM / 64;

/// What a receiver holds of a stream: the next tick expected in order (None before
/// the stream starts), and one bit per tick of the [`ROOM`] from it, in a ring by tick.
#[derive(Debug, Clone, Default)]
pub struct ReceiveWindow {
    next: Option<Tick>,
    held: [u64; WORDS],
}

impl ReceiveWindow {
    /// A window before its stream starts.
    pub fn new() -> Self {
        ReceiveWindow { next: None, held: [0; WORDS] }
    }

    /// The next tick expected in order (None before the stream starts).
    pub fn next(&self) -> Option<Tick> {
        self.next
    }

    /// Forgets everything: the stream has not started.
    pub fn reset(&mut self) {
        self.next = None;
        self.held = [0; WORDS];
    }

    /// Starts the stream at `next`, holding nothing.
    pub fn start(&mut self, next: Tick) {
        self.held = [0; WORDS];
        self.next = Some(next);
    }

    /// Whether `tick` is within the room from the next tick expected.
    pub fn fits(&self, tick: Tick) -> bool {
        self.next.is_some_and(|n| tick >= n && tick - n < ROOM as Tick)
    }

    /// Records whether `tick` is held (whole and ready); ticks outside the room are
    /// ignored.
    pub fn set(&mut self, tick: Tick, held: bool) {
        if !self.fits(tick) {
            return;
        }
        let i = tick as usize % ROOM;
        let bit = 1u64 << (i % 64);
        if held {
            self.held[i / 64] |= bit;
        } else {
            self.held[i / 64] &= !bit;
        }
    }

    /// The next tick expected was taken in order: the one after it is expected now.
    pub fn advance(&mut self) {
        if let Some(n) = self.next {
            self.set(n, false);
            self.next = Some(n.saturating_add(1));
        }
    }

    /// The acknowledgement: the next tick expected (every one before it was taken in
    /// order; None before the stream starts), and the bitmap of ticks held past it in
    /// `sack`, whose used length is returned.
    pub fn ack(&self, sack: &mut [u8; SACK_BYTES]) -> (Option<Tick>, usize) {
        *sack = [0; SACK_BYTES];
        let Some(next) = self.next else { return (None, 0) };
        let origin = next as usize % ROOM;
        let mut len = 0;
        for (w, &word) in self.held.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                // Ticks past `next` by k sit k places after it in the ring.
                let k = (i + ROOM - origin) % ROOM;
                if k == 0 || next.checked_add(k as Tick).is_none() {
                    continue;
                }
                let bit = k - 1;
                sack[bit / 8] |= 1 << (bit % 8);
                len = len.max(bit / 8 + 1);
            }
        }
        (Some(next), len)
    }
}
