//! A free list of byte buffers, so steady-state traffic allocates nothing.

use crate::wire::MAX_DATAGRAM_SIZE;

/// Buffers made when a pool is created.
const PREFILL: usize = 64;

/// Keeps up to `limit` cleared buffers for reuse.
#[derive(Debug)]
pub struct BufPool {
    free: Vec<Vec<u8>>,
    limit: usize,
}

impl BufPool {
    /// A pool holding up to `limit` buffers. The free list is reserved up front and a
    /// few buffers are made now, so a new traffic peak after warm-up does not allocate.
    pub fn new(limit: usize) -> Self {
        let mut free = Vec::with_capacity(limit);
        free.extend((0..PREFILL.min(limit)).map(|_| Vec::with_capacity(MAX_DATAGRAM_SIZE)));
        BufPool { free, limit }
    }
    /// An empty buffer with room for at least one datagram.
    pub fn get(&mut self) -> Vec<u8> {
        self.free.pop().unwrap_or_else(|| Vec::with_capacity(MAX_DATAGRAM_SIZE))
    }
    /// Returns a buffer. Oversized buffers (reassembled messages) are dropped so the
    /// pool's memory stays bounded, and undersized ones so `get` keeps its promise.
    pub fn put(&mut self, mut buf: Vec<u8>) {
        let cap = buf.capacity();
        if self.free.len() < self.limit && (MAX_DATAGRAM_SIZE..=4 * MAX_DATAGRAM_SIZE).contains(&cap) {
            buf.clear();
            self.free.push(buf);
        }
    }
}
