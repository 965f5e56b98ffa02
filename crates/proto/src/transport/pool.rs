//! Free lists of byte buffers, so steady-state traffic allocates nothing. Two sizes: a
//! datagram's worth, and small ones for small messages, so that a message is held in a
//! buffer sized to it (an empty message in none at all), not in a datagram's worth.

use crate::wire::MAX_DATAGRAM_SIZE;

/// Buffers of each size made when a pool is created: what an engine's stall of a
/// second and a half asks for at once when it ends (`tests/relay_predict_alloc.rs`; 16
/// were too few there). More are made as traffic first needs them and kept, up to the
/// pool's limit. The lists themselves grow as buffers come back, not to the limit up
/// front: that was 4,096 entries of each size, 197 KB of every host, which a process
/// running thousands of hosts paid for each.
const PREFILL: usize = 64;

/// The small size: covers a game's input and update messages. A received message of at
/// most this many bytes comes in a buffer of this capacity.
pub const SMALL_BUFFER: usize = 256;

/// Keeps up to `limit` cleared buffers of each size for reuse.
#[derive(Debug)]
pub(super) struct BufPool {
    /// Capacity at least [`MAX_DATAGRAM_SIZE`].
    free: Vec<Vec<u8>>,
    /// Capacity in `SMALL_BUFFER..MAX_DATAGRAM_SIZE`.
    small: Vec<Vec<u8>>,
    limit: usize,
}

impl BufPool {
    /// A pool holding up to `limit` buffers of each size, with a few made now. The lists
    /// grow as buffers come back and keep their room, so traffic that has reached its
    /// peak once allocates nothing; a higher peak allocates once more.
    pub(super) fn new(limit: usize) -> Self {
        let n = PREFILL.min(limit);
        let free = (0..n).map(|_| Vec::with_capacity(MAX_DATAGRAM_SIZE)).collect();
        let small = (0..n).map(|_| Vec::with_capacity(SMALL_BUFFER)).collect();
        BufPool { free, small, limit }
    }

    /// An empty buffer with room for at least one datagram.
    pub(super) fn get(&mut self) -> Vec<u8> {
        self.free.pop().unwrap_or_else(|| Vec::with_capacity(MAX_DATAGRAM_SIZE))
    }

    /// An empty buffer for a message of `len` bytes (at most a datagram): none at all
    /// for an empty one, a small one for a small one.
    pub(super) fn get_for(&mut self, len: usize) -> Vec<u8> {
        match len {
            0 => Vec::new(),
            1..=SMALL_BUFFER => self.small.pop().unwrap_or_else(|| Vec::with_capacity(SMALL_BUFFER)),
            _ => self.get(),
        }
    }

    /// Returns a buffer. Oversized buffers (reassembled messages) are dropped so the
    /// pool's memory stays bounded, and tiny ones so `get_for` keeps its promise.
    pub(super) fn put(&mut self, mut buf: Vec<u8>) {
        let cap = buf.capacity();
        let list = if (MAX_DATAGRAM_SIZE..=4 * MAX_DATAGRAM_SIZE).contains(&cap) {
            &mut self.free
        } else if (SMALL_BUFFER..MAX_DATAGRAM_SIZE).contains(&cap) {
            &mut self.small
        } else {
            return;
        };
        if list.len() < self.limit {
            buf.clear();
            list.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_sized_to_the_message_and_come_back_to_their_list() {
        let mut pool = BufPool::new(2);
        assert_eq!(pool.get_for(0).capacity(), 0);
        let small = pool.get_for(1);
        assert_eq!(small.capacity(), SMALL_BUFFER);
        let big = pool.get_for(SMALL_BUFFER + 1);
        assert!(big.capacity() >= MAX_DATAGRAM_SIZE);
        let (ps, pb) = (small.as_ptr(), big.as_ptr());
        pool.put(small);
        pool.put(big);
        let (small, big) = (pool.get_for(SMALL_BUFFER), pool.get());
        assert_eq!((small.as_ptr(), big.as_ptr()), (ps, pb));
        // Tiny and huge buffers are not kept; each list keeps at most `limit`.
        pool.put(Vec::with_capacity(8));
        pool.put(Vec::with_capacity(1 << 20));
        for _ in 0..5 {
            pool.put(Vec::with_capacity(SMALL_BUFFER));
        }
        assert_eq!(pool.small.len(), 2);
        assert_eq!(pool.free.len(), 1);
    }
}
