//! Maps keyed by [`PeerId`], with a hash that costs one multiplication.
//!
//! The standard map's SipHash is there for keys an attacker chooses: a chosen set of
//! colliding keys would make every lookup walk a long chain. Peer ids are never
//! chosen by anyone outside: the endpoint hands them out in sequence
//! ([`PeerIdAllocator`](super::PeerIdAllocator)), whoever connects. So these maps
//! skip the keyed hash, which was a visible part of a server's cost per datagram
//! (a connection's lookup, its inbox queue, its send budget on both threads). Maps
//! keyed by anything from the wire (addresses, token nonces, client ids) keep SipHash.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::PeerId;

/// A map from peer ids, hashed by [`PeerIdHasher`].
pub type PeerMap<V> = HashMap<PeerId, V, BuildHasherDefault<PeerIdHasher>>;

/// An empty [`PeerMap`].
pub fn peer_map<V>() -> PeerMap<V> {
    PeerMap::default()
}

/// Fibonacci hashing of a peer id: the id times 2^64 / φ. Sequential ids spread over
/// the low bits (the table's bucket) and the high bits (its tag) alike.
#[derive(Debug, Default, Clone, Copy)]
pub struct PeerIdHasher(u64);

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for PeerIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ u64::from(n)).wrapping_mul(GOLDEN);
    }

    /// Any other key shape (not used for peer ids; kept correct rather than fast).
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(GOLDEN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn sequential_ids_land_in_distinct_buckets_and_tags() {
        let build = BuildHasherDefault::<PeerIdHasher>::default();
        // A table of 1,024 buckets (hashbrown takes the bucket from the low bits and a
        // 7-bit tag from the top ones): 1,024 sequential ids must not pile up.
        let mut buckets = vec![0u32; 1024];
        let mut tags = [0u32; 128];
        for id in 1..=1024u32 {
            let h = build.hash_one(id);
            buckets[(h & 1023) as usize] += 1;
            tags[(h >> 57) as usize] += 1;
        }
        assert!(buckets.iter().all(|&n| n <= 2), "{:?}", buckets.iter().max());
        assert!(tags.iter().all(|&n| (4..=12).contains(&n)), "{tags:?}");
        let mut m = peer_map();
        for id in 1..=1000u32 {
            m.insert(id, id * 2);
        }
        assert!((1..=1000u32).all(|id| m[&id] == id * 2));
        assert_eq!(m.get(&1001), None);
    }
}
