//! The endpoint's tests that reach inside it (its id allocator, its address map, its
//! connections' memory).

use std::cell::RefCell;
use std::net::SocketAddr;

use super::connection::Connection;
use super::endpoint::{Endpoint, PeerIdAllocator};
use super::{EndpointConfig, PeerId, Prefetch};
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

thread_local! {
    /// The ranges `record` was given, as (start, length).
    static HINTED: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

fn record(start: *const u8, len: usize) {
    HINTED.with(|h| h.borrow_mut().push((start as usize, len)));
}

fn take_hinted() -> Vec<(usize, usize)> {
    HINTED.with(|h| std::mem::take(&mut *h.borrow_mut()))
}

/// The owner's prefetch is given exactly the connection the endpoint reads next: the
/// next datagram's sender's (nothing for a sender it does not know), and in a flush
/// each connection after the first, the one packed after it.
#[test]
fn the_prefetch_hint_names_the_connection_read_next() {
    let sa: SocketAddr = "10.0.0.1:4000".parse().unwrap();
    let cfg = |seed, prefetch| EndpointConfig {
        seed,
        max_incoming: 8,
        max_incoming_per_ip: 0,
        prefetch,
        ..EndpointConfig::default()
    };
    let mut server = Endpoint::new(cfg(1, Some(Prefetch(record))), 0).unwrap();
    let mut clients: Vec<(SocketAddr, Endpoint)> = Vec::new();
    for i in 0..3u16 {
        let mut c = Endpoint::new(cfg(10 + u64::from(i), None), 0).unwrap();
        c.connect(0, sa).unwrap();
        clients.push((SocketAddr::from(([10, 0, 1, 1], 5000 + i)), c));
    }
    shuttle(&mut server, sa, &mut clients);
    assert_eq!(server.peers().count(), 3);
    let range_of = |server: &Endpoint, addr: &SocketAddr| {
        let c = server.conns.get(&server.by_addr[addr]).expect("a connected client");
        (c as *const Connection as usize, size_of::<Connection>())
    };

    take_hinted();
    server.prefetch_for(clients[1].0);
    assert_eq!(take_hinted(), vec![range_of(&server, &clients[1].0)], "the sender's connection, whole");
    server.prefetch_for("10.9.9.9:9".parse().unwrap());
    assert_eq!(take_hinted(), vec![], "a sender without a connection: no hint");

    server.flush(0);
    let packed: Vec<(usize, usize)> =
        server.conns.values_mut().map(|c| (c as *const Connection as usize, size_of::<Connection>())).collect();
    assert_eq!(take_hinted(), packed[1..], "each connection after the first, in the order packed");
}
