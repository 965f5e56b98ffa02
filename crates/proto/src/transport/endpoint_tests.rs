//! The endpoint's tests that reach inside it (its id allocator, its address map).

use std::net::SocketAddr;

use super::endpoint::{Endpoint, PeerIdAllocator};
use super::{EndpointConfig, PeerId};
use crate::wire::MAX_DATAGRAM_SIZE;

/// Moves every datagram between the server and the clients until nothing moves.
fn shuttle(server: &mut Endpoint, sa: SocketAddr, clients: &mut [(SocketAddr, Endpoint)]) {
    let mut buf = [0u8; MAX_DATAGRAM_SIZE];
    loop {
        let mut moved = false;
        for (addr, c) in clients.iter_mut() {
            while let Some((_, n)) = c.poll_transmit(&mut buf) {
                server.handle_datagram(0, *addr, &buf[..n]);
                moved = true;
            }
        }
        while let Some((to, n)) = server.poll_transmit(&mut buf) {
            if let Some((_, c)) = clients.iter_mut().find(|(a, _)| *a == to) {
                c.handle_datagram(0, sa, &buf[..n]);
            }
            moved = true;
        }
        if !moved {
            return;
        }
    }
}

/// After 2^32 ids the allocator wraps: a server that still holds a connection from
/// the first round skips that id (it replaced the old connection in the table
/// before, leaving its address, token and inbox entries to the new one).
#[test]
fn an_accepted_connection_never_takes_a_live_ones_id() {
    let sa: SocketAddr = "10.0.0.1:4000".parse().unwrap();
    let cfg = |seed| EndpointConfig { seed, max_incoming: 8, max_incoming_per_ip: 0, ..EndpointConfig::default() };
    let mut server = Endpoint::new(cfg(1), 0).unwrap();
    server.ids = PeerIdAllocator::starting_at(u32::MAX);
    let mut clients: Vec<(SocketAddr, Endpoint)> = Vec::new();
    for i in 0..3u16 {
        let mut c = Endpoint::new(cfg(10 + u64::from(i)), 0).unwrap();
        c.connect(0, sa).unwrap();
        clients.push((SocketAddr::from(([10, 0, 1, 1], 5000 + i)), c));
        if i == 0 {
            shuttle(&mut server, sa, &mut clients);
            // The first takes u32::MAX; the allocator wraps past 0 to 1 next. Make
            // the next id the first's again, as 2^32 more handshakes would.
            server.ids = PeerIdAllocator::starting_at(u32::MAX);
        }
    }
    shuttle(&mut server, sa, &mut clients);
    let mut peers: Vec<PeerId> = server.peers().collect();
    peers.sort_unstable();
    assert_eq!(peers, vec![1, 2, u32::MAX], "three connections under three ids");
    for (addr, _) in &clients {
        let p = server.by_addr[addr];
        assert_eq!(server.peer_addr(p), Some(*addr), "each address names its own connection");
        assert!(server.is_connected(p));
    }
}
