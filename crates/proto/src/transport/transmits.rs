//! The endpoint's outgoing datagrams, back to back in one buffer until the driver takes
//! them ([`Endpoint::poll_transmit`](super::Endpoint::poll_transmit)).
//!
//! Why one buffer: a server's flush writes a datagram to every client, and a server
//! sleeps to its next tick in between. Held in a pooled datagram-sized buffer each (as
//! they were), a flush of 64 updates wrote 64 buffers some 1.2 KiB apart, every one of
//! them on a page whose translation the sleep had evicted (docs/benchmarks.md, "A
//! server's tick after its sleep": about half a cold page per client a tick). Back to
//! back, 64 datagrams of 300 bytes take five pages, written in order. A connection packs
//! into one scratch buffer that stays hot (the pool's newest) and the datagram is copied
//! here: a few hundred bytes, where a cold page costs a few hundred nanoseconds.

use std::collections::VecDeque;
use std::net::SocketAddr;

use crate::wire::MAX_DATAGRAM_SIZE;

/// Bytes kept for reuse once the queue is drained: a flush of a few thousand small
/// datagrams. A burst beyond it (a stalled driver's backlog) gives the rest back.
const RETAINED_BYTES: usize = 1 << 20;

/// The oldest datagrams' bytes are moved out of the way once this many have been taken
/// while others still wait (a driver that never drains the queue completely).
const COMPACT_AFTER: usize = 64 * 1024;

/// Datagrams waiting for the driver, oldest first.
#[derive(Debug)]
pub(super) struct Transmits {
    /// The datagrams' bytes, back to back; the oldest starts at `head`.
    bytes: Vec<u8>,
    head: usize,
    /// Each datagram's destination and length, in `bytes`'s order.
    queue: VecDeque<(SocketAddr, u16)>,
}

impl Transmits {
    /// Room for `datagrams` datagrams' places in the queue and a page of bytes; the bytes
    /// grow to a server's flush once and are kept (up to [`RETAINED_BYTES`]). A process
    /// of thousands of client endpoints thus holds a page each, not a flush's worth.
    pub(super) fn with_capacity(datagrams: usize) -> Self {
        Transmits { bytes: Vec::with_capacity(4096), head: 0, queue: VecDeque::with_capacity(datagrams) }
    }

    /// Queues `datagram` (at most [`MAX_DATAGRAM_SIZE`] bytes) for `to`.
    pub(super) fn push(&mut self, to: SocketAddr, datagram: &[u8]) {
        assert!(datagram.len() <= MAX_DATAGRAM_SIZE, "a datagram of {} bytes", datagram.len());
        self.bytes.extend_from_slice(datagram);
        self.queue.push_back((to, datagram.len() as u16));
    }

    /// Copies the oldest datagram into `out` (at least its length) and returns its
    /// destination and length.
    pub(super) fn pop(&mut self, out: &mut [u8]) -> Option<(SocketAddr, usize)> {
        let (to, n) = self.queue.pop_front()?;
        let n = usize::from(n);
        out[..n].copy_from_slice(&self.bytes[self.head..self.head + n]);
        self.head += n;
        if self.queue.is_empty() {
            self.bytes.clear();
            self.head = 0;
            self.bytes.shrink_to(RETAINED_BYTES);
        } else if self.head >= COMPACT_AFTER && self.head * 2 >= self.bytes.len() {
            // At most half of what is held moves, and only after at least as much was
            // taken since the last move: the copying stays linear in what passes.
            self.bytes.drain(..self.head);
            self.head = 0;
        }
        Some((to, n))
    }

    /// Datagrams waiting.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.queue.len()
    }

    /// Bytes held, taken or not (for tests of the bound).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn addr(i: usize) -> SocketAddr {
        SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 4000 + i as u16))
    }

    /// Against a plain queue of owned datagrams: pushes and pops interleaved at random,
    /// with lengths from 0 to the largest, each datagram comes out whole, in order, to
    /// its address; and what is held stays bounded by what waits.
    #[test]
    fn matches_a_queue_of_owned_datagrams() {
        for seed in 0..40 {
            let mut rng = Rng::new(seed);
            let mut t = Transmits::with_capacity(4);
            let mut model: VecDeque<(SocketAddr, Vec<u8>)> = VecDeque::new();
            let mut out = [0u8; MAX_DATAGRAM_SIZE];
            let mut made = 0usize;
            for _ in 0..4000 {
                // Bursts of pushes, then drains that are sometimes partial.
                if rng.below(3) != 0 {
                    let n = if rng.below(8) == 0 { MAX_DATAGRAM_SIZE } else { rng.below(400) as usize };
                    let d: Vec<u8> = (0..n).map(|j| (made * 31 + j) as u8).collect();
                    t.push(addr(made % 300), &d);
                    model.push_back((addr(made % 300), d));
                    made += 1;
                } else {
                    for _ in 0..rng.below(6) {
                        let got = t.pop(&mut out);
                        let want = model.pop_front();
                        assert_eq!(got.map(|(a, n)| (a, out[..n].to_vec())), want, "seed {seed}");
                    }
                }
                assert_eq!(t.len(), model.len());
                let waiting: usize = model.iter().map(|(_, d)| d.len()).sum();
                assert!(t.held() <= 2 * waiting + COMPACT_AFTER, "seed {seed}: {}", t.held());
            }
            while let Some(want) = model.pop_front() {
                let (a, n) = t.pop(&mut out).expect("one is waiting");
                assert_eq!((a, out[..n].to_vec()), want);
            }
            assert_eq!((t.pop(&mut out), t.held()), (None, 0));
        }
    }

    #[test]
    fn a_drained_queue_gives_back_a_burst_beyond_what_it_keeps() {
        let mut t = Transmits::with_capacity(1);
        let d = [7u8; MAX_DATAGRAM_SIZE];
        for i in 0..2 * RETAINED_BYTES / MAX_DATAGRAM_SIZE {
            t.push(addr(i), &d);
        }
        assert!(t.bytes.capacity() > RETAINED_BYTES);
        let mut out = [0u8; MAX_DATAGRAM_SIZE];
        while t.pop(&mut out).is_some() {}
        assert!(t.bytes.capacity() <= RETAINED_BYTES);
    }

    #[test]
    #[should_panic(expected = "a datagram of 1201 bytes")]
    fn a_datagram_over_the_limit_is_a_bug_of_ours() {
        Transmits::with_capacity(1).push(addr(0), &[0; MAX_DATAGRAM_SIZE + 1]);
    }
}
