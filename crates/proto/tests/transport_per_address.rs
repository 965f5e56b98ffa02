//! One source address cannot hold every incoming connection of a server (issue 13:
//! one IP held every slot by reconnecting idle connections). Past
//! `max_incoming_per_ip`, its handshakes are refused with SERVER_FULL while another
//! address still gets in; a slot it gives back is usable again. An IPv6 host owns a
//! whole /64, so IPv6 addresses count by that prefix (issue 30, finding 8), and an
//! IPv4-mapped IPv6 address counts as its IPv4 address.
//!
//! Its tests read the process's heap peak (`support/heap.rs` installs a counting
//! global allocator; they take turns): hence a binary of its own, not a module of
//! `tests/proto/`, so that no other test's allocations land in their window.

#[path = "support/datagrams.rs"]
#[allow(dead_code)] // shared with tests/proto/ (which uses all of it); this binary uses a part
mod datagrams;
#[path = "support/heap.rs"]
mod heap;

use datagrams::drain;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use tickwire_proto::{DisconnectReason, Endpoint, EndpointConfig, NetEvent as Event, PeerId};

struct Client {
    ep: Endpoint,
    addr: SocketAddr,
    peer: PeerId,
}

/// Runs the handshakes of `clients` with `server` at `sa` until nothing moves.
fn shuttle(server: &mut Endpoint, sa: SocketAddr, clients: &mut [Client], now: u64) {
    loop {
        let mut moved = false;
        for c in clients.iter_mut() {
            for (_, d) in drain(&mut c.ep) {
                server.handle_datagram(now, c.addr, &d);
                moved = true;
            }
        }
        for (to, d) in drain(server) {
            if let Some(c) = clients.iter_mut().find(|c| c.addr == to) {
                c.ep.handle_datagram(now, sa, &d);
            }
            moved = true;
        }
        if !moved {
            return;
        }
    }
}

fn client(ip: impl Into<IpAddr>, port: u16, sa: SocketAddr, seed: u64) -> Client {
    let mut ep = Endpoint::new(EndpointConfig { seed, ..EndpointConfig::default() }, 0).unwrap();
    let peer = ep.connect(0, sa).unwrap();
    Client { ep, addr: SocketAddr::from((ip, port)), peer }
}

fn refused_full(c: &mut Client) -> bool {
    std::iter::from_fn(|| c.ep.poll_event())
        .any(|e| matches!(e, Event::Disconnected { reason: DisconnectReason::ServerFull, .. }))
}

#[test]
fn one_address_holds_at_most_its_share_of_the_incoming_connections() {
    let heap = heap::HeapWatch::start();
    let cfg = EndpointConfig { max_incoming: 64, max_incoming_per_ip: 4, seed: 1, ..EndpointConfig::default() };
    let mut server = Endpoint::new(cfg, 0).unwrap();
    let sa = SocketAddr::from(([10, 0, 0, 1], 7000));
    let mut squatter: Vec<Client> = (0..10).map(|i| client([192, 0, 2, 9], 5000 + i, sa, 100 + i as u64)).collect();
    shuttle(&mut server, sa, &mut squatter, 1);
    let connected = squatter.iter().filter(|c| c.ep.is_connected(c.peer)).count();
    assert_eq!(connected, 4, "one address got {connected} connections");
    let refused = squatter.iter_mut().map(refused_full).filter(|&r| r).count();
    assert_eq!(refused, 6, "the others were told SERVER_FULL");
    // Another address is not affected.
    let mut other = vec![client([198, 51, 100, 7], 6000, sa, 7)];
    shuttle(&mut server, sa, &mut other, 2);
    assert!(other[0].ep.is_connected(other[0].peer));
    // One of the squatter's connections closes: that address may connect once more.
    let gone = squatter.iter().position(|c| c.ep.is_connected(c.peer)).unwrap();
    let peer = squatter[gone].peer;
    squatter[gone].ep.disconnect(3, peer);
    shuttle(&mut server, sa, &mut squatter, 3);
    let mut again = vec![client([192, 0, 2, 9], 5100, sa, 55)];
    shuttle(&mut server, sa, &mut again, 4);
    assert!(again[0].ep.is_connected(again[0].peer), "a freed place is usable again");
    heap.report("one_address_holds_at_most_its_share_of_the_incoming_connections", 8 << 20);
}

/// `2001:db8:0:<net>::<host>`: hosts of one /64 share `net`.
fn v6(net: u16, host: u16) -> IpAddr {
    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, net, 0x1234, 0, host, 1))
}

fn connected(clients: &[Client]) -> usize {
    clients.iter().filter(|c| c.ep.is_connected(c.peer)).count()
}

#[test]
fn an_ipv6_host_is_counted_by_its_64_prefix() {
    // The heap counter is process-wide: this test takes its turn beside the one that
    // measures (its endpoints counted in that test's peak made it flaky).
    let _turn = heap::HeapWatch::start();
    let cfg = EndpointConfig { max_incoming: 64, max_incoming_per_ip: 4, seed: 2, ..EndpointConfig::default() };
    let mut server = Endpoint::new(cfg, 0).unwrap();
    let sa = SocketAddr::from(([10, 0, 0, 1], 7000));
    // Ten addresses of one /64, each different in its low 64 bits: one host's share.
    let mut host: Vec<Client> = (0..10).map(|i| client(v6(1, i), 5000, sa, 200 + i as u64)).collect();
    shuttle(&mut server, sa, &mut host, 1);
    assert_eq!(connected(&host), 4, "one /64 holds its share only");
    assert_eq!(host.iter_mut().map(refused_full).filter(|&r| r).count(), 6, "the others were told SERVER_FULL");
    // Another /64 (the next one up, same low bits) gets its own share, and no more.
    let mut next: Vec<Client> = (0..5).map(|i| client(v6(2, i), 5000, sa, 300 + i as u64)).collect();
    shuttle(&mut server, sa, &mut next, 2);
    assert_eq!(connected(&next), 4, "another /64 has its own share");
    // One of the first /64's connections closes: another address of it may connect.
    let gone = host.iter().position(|c| c.ep.is_connected(c.peer)).unwrap();
    let peer = host[gone].peer;
    host[gone].ep.disconnect(3, peer);
    shuttle(&mut server, sa, &mut host, 3);
    let mut again = vec![client(v6(1, 999), 5000, sa, 55)];
    shuttle(&mut server, sa, &mut again, 4);
    assert!(again[0].ep.is_connected(again[0].peer), "a freed place is usable again by any address of the /64");
    let mut more = vec![client(v6(1, 1000), 5000, sa, 56)];
    shuttle(&mut server, sa, &mut more, 5);
    assert!(refused_full(&mut more[0]), "and the /64 is full again");
}

#[test]
fn an_ipv4_address_and_its_mapped_form_count_together() {
    let _turn = heap::HeapWatch::start();
    let cfg = EndpointConfig { max_incoming: 64, max_incoming_per_ip: 2, seed: 3, ..EndpointConfig::default() };
    let mut server = Endpoint::new(cfg, 0).unwrap();
    let sa = SocketAddr::from(([10, 0, 0, 1], 7000));
    let mapped = IpAddr::V6(std::net::Ipv4Addr::new(192, 0, 2, 9).to_ipv6_mapped());
    let mut clients = vec![
        client([192, 0, 2, 9], 5000, sa, 1),
        client(mapped, 5001, sa, 2),
        client(mapped, 5002, sa, 3),
        client([192, 0, 2, 9], 5003, sa, 4),
    ];
    shuttle(&mut server, sa, &mut clients, 1);
    assert_eq!(connected(&clients), 2, "one IPv4 host, whichever form its address takes");
    assert_eq!(clients.iter_mut().map(refused_full).filter(|&r| r).count(), 2);
    // A neighbouring IPv4 address is another host: IPv4 counts by the whole address.
    let mut neighbour = vec![client([192, 0, 2, 10], 5000, sa, 5)];
    shuttle(&mut server, sa, &mut neighbour, 2);
    assert!(neighbour[0].ep.is_connected(neighbour[0].peer));
}
