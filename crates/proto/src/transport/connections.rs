//! The endpoint's connections: one dense array, and a small index from peer id to slot.
//!
//! A server finds a client's connection for every datagram it receives and every one
//! it sends, once a tick each, after a sleep that left the memory cold. In a hash table
//! that holds the connections inline, each bucket is a whole connection (1,472 bytes
//! aligned to 64, so 1,536), and the lookup's key compare read a line of its own per
//! client: `perf annotate` put half of `Endpoint::connected`'s time on that one load
//! (docs/benchmarks.md). Here the index's buckets are 8 bytes (a peer id and a slot),
//! eight to a line and shared by all the clients of a tick, and the connection itself
//! is the only line of its own a lookup reads. A flush walks the array in order.
//!
//! Removing a connection moves the last one into its slot, so the array stays dense;
//! the order of iteration is then the order of inserts and removals, the same for the
//! same history of connections.

use std::ops::Index;

use super::PeerId;
use super::connection::Connection;
use super::peer_map::{PeerMap, peer_map};

/// Every connection of an endpoint, each keyed by its own `peer`.
pub(super) struct Connections {
    /// Each connection's slot in `slots`.
    index: PeerMap<u32>,
    slots: Vec<Connection>,
}

impl Connections {
    pub(super) fn new() -> Self {
        Connections { index: peer_map(), slots: Vec::new() }
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(super) fn contains_key(&self, peer: &PeerId) -> bool {
        self.index.contains_key(peer)
    }

    pub(super) fn get(&self, peer: &PeerId) -> Option<&Connection> {
        self.index.get(peer).map(|&slot| &self.slots[slot as usize])
    }

    pub(super) fn get_mut(&mut self, peer: &PeerId) -> Option<&mut Connection> {
        self.index.get(peer).map(|&slot| &mut self.slots[slot as usize])
    }

    /// Adds `conn` under its own peer id. A peer id names one connection at a time:
    /// the endpoint hands out ids that are not in use (`Endpoint::free_peer_id`).
    pub(super) fn insert(&mut self, conn: Connection) {
        let peer = conn.peer;
        assert!(!self.index.contains_key(&peer), "peer {peer} already has a connection");
        let slot = u32::try_from(self.slots.len()).expect("fewer than 2^32 connections");
        self.index.insert(peer, slot);
        self.slots.push(conn);
    }

    /// Takes `peer`'s connection out; the last connection moves into its slot.
    pub(super) fn remove(&mut self, peer: &PeerId) -> Option<Connection> {
        let slot = self.index.remove(peer)? as usize;
        let conn = self.slots.swap_remove(slot);
        if let Some(moved) = self.slots.get(slot) {
            *self.index.get_mut(&moved.peer).expect("every connection is indexed") = slot as u32;
        }
        Some(conn)
    }

    /// Peer ids, in the array's order.
    pub(super) fn keys(&self) -> impl Iterator<Item = &PeerId> + '_ {
        self.slots.iter().map(|c| &c.peer)
    }

    pub(super) fn values(&self) -> std::slice::Iter<'_, Connection> {
        self.slots.iter()
    }

    pub(super) fn values_mut(&mut self) -> std::slice::IterMut<'_, Connection> {
        self.slots.iter_mut()
    }
}

impl Index<&PeerId> for Connections {
    type Output = Connection;

    fn index(&self, peer: &PeerId) -> &Connection {
        self.get(peer).expect("no connection for this peer")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::EndpointConfig;
    use std::collections::BTreeMap;
    use std::net::SocketAddr;

    fn conn(peer: PeerId) -> Connection {
        let addr = format!("10.0.0.1:{}", 1000 + peer).parse().unwrap();
        Connection::new(peer, addr, true, u64::from(peer), &EndpointConfig::default(), 0)
    }

    /// A seeded generator of the test's operations (xorshift).
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn answers_as_a_map_would_through_inserts_and_removals() {
        for seed in 1..=30u64 {
            let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut table = Connections::new();
            let mut model: BTreeMap<PeerId, SocketAddr> = BTreeMap::new();
            let mut next_id = 1;
            for _ in 0..600 {
                if next(&mut rng) % 3 != 0 || model.is_empty() {
                    let peer = next_id;
                    next_id += 1 + (next(&mut rng) % 3) as u32;
                    table.insert(conn(peer));
                    model.insert(peer, conn(peer).addr);
                } else {
                    let nth = (next(&mut rng) % model.len() as u64) as usize;
                    let peer = *model.keys().nth(nth).unwrap();
                    let removed = table.remove(&peer).expect("present");
                    assert_eq!((removed.peer, removed.addr), (peer, model.remove(&peer).unwrap()));
                    assert!(table.remove(&peer).is_none(), "seed {seed}: removed once");
                }
                assert_eq!(table.len(), model.len());
                let mut keys: Vec<PeerId> = table.keys().copied().collect();
                keys.sort_unstable();
                assert_eq!(keys, model.keys().copied().collect::<Vec<_>>(), "seed {seed}");
                for (peer, addr) in &model {
                    assert!(table.contains_key(peer));
                    assert_eq!(table[peer].addr, *addr, "seed {seed}: peer {peer}");
                    assert_eq!(table.get_mut(peer).map(|c| c.peer), Some(*peer));
                }
                assert!(table.get(&next_id).is_none() && !table.contains_key(&0));
            }
            assert!(table.values().zip(table.keys()).all(|(c, p)| c.peer == *p));
        }
    }

    #[test]
    #[should_panic(expected = "already has a connection")]
    fn a_peer_id_names_one_connection_at_a_time() {
        let mut table = Connections::new();
        table.insert(conn(3));
        table.insert(conn(3));
    }
}
