//! Bounded free-lists of byte buffers shared between the engine and the network thread.
//!
//! A message crosses threads as an owned `Vec<u8>`. Instead of allocating one per
//! message, the receiving side hands the emptied buffer back through a bounded channel
//! and the sending side takes one from there first. Both ends only `try_` the channel,
//! so neither side ever blocks: an empty list means "allocate", a full one means "drop".

use super::counted::{self, CountedReceiver, CountedSender};

/// How many idle buffers a free-list keeps.
pub(crate) const POOL_CAPACITY: usize = 1024;

/// Buffers that grew beyond this are freed rather than kept, so one large transfer
/// does not pin memory in the pool for the life of the host.
pub(crate) const MAX_POOLED_CAPACITY: usize = 64 * 1024;

/// Capacity of a freshly allocated buffer: covers a typical game message so it rarely
/// needs to grow.
const FRESH_CAPACITY: usize = 256;

/// One end-to-end free-list. Cloning shares the same list.
#[derive(Debug, Clone)]
pub(crate) struct BufferPool {
    tx: CountedSender<Vec<u8>>,
    rx: CountedReceiver<Vec<u8>>,
    /// Smaller buffers are freed rather than kept.
    min_capacity: usize,
}

impl BufferPool {
    /// A pool that keeps buffers of at least `min_capacity` bytes: the endpoint's
    /// buffers must hold a whole datagram, and a smaller one handed back by the engine
    /// would have to grow (allocate) on its first use there.
    pub(crate) fn new(min_capacity: usize) -> Self {
        let (tx, rx) = counted::bounded(POOL_CAPACITY);
        BufferPool { tx, rx, min_capacity: min_capacity.max(1) }
    }

    /// Puts `count` empty buffers of `capacity` bytes in the list now, so that the
    /// first `count` messages in flight at once find one ready.
    pub(crate) fn prefill(&self, count: usize, capacity: usize) {
        for _ in 0..count.min(POOL_CAPACITY) {
            let _ = self.tx.try_send(Vec::with_capacity(capacity.max(self.min_capacity)));
        }
    }

    /// An empty buffer, reused when one is available.
    pub(crate) fn take(&self) -> Vec<u8> {
        self.rx.try_recv().unwrap_or_else(|_| Vec::with_capacity(FRESH_CAPACITY))
    }

    /// An idle buffer if the list has one (for handing back to a pool elsewhere).
    pub(crate) fn try_take(&self) -> Option<Vec<u8>> {
        self.rx.try_recv().ok()
    }

    /// Whether a buffer of `capacity` bytes is one this list keeps.
    pub(crate) fn keeps(&self, capacity: usize) -> bool {
        (self.min_capacity..=MAX_POOLED_CAPACITY).contains(&capacity)
    }

    /// Returns a buffer to the list; drops it if the list is full or its capacity is
    /// outside the kept range.
    pub(crate) fn give(&self, mut buf: Vec<u8>) {
        if !self.keeps(buf.capacity()) {
            return;
        }
        buf.clear();
        let _ = self.tx.try_send(buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_allocations_and_bounds_size() {
        let p = BufferPool::new(1);
        let mut b = p.take();
        b.extend_from_slice(b"hello");
        let ptr = b.as_ptr();
        p.give(b);
        let b2 = p.take();
        assert!(b2.is_empty());
        assert_eq!(b2.as_ptr(), ptr, "the same allocation comes back");
        p.give(Vec::with_capacity(MAX_POOLED_CAPACITY + 1));
        assert!(p.try_take().is_none(), "oversized buffers are not kept");
        let strict = BufferPool::new(1200);
        strict.give(Vec::with_capacity(16));
        assert!(strict.try_take().is_none(), "undersized buffers are not kept");
        for _ in 0..POOL_CAPACITY + 10 {
            p.give(Vec::with_capacity(8));
        }
        assert_eq!(p.rx.len(), POOL_CAPACITY);
    }
}
