//! One source address cannot hold every incoming connection of a server (issue 13:
//! one IP held every slot by reconnecting idle connections). Past
//! `max_incoming_per_ip`, its handshakes are refused with SERVER_FULL while another
//! address still gets in; a slot it gives back is usable again.

#[path = "support/datagrams.rs"]
mod datagrams;
#[path = "support/heap.rs"]
mod heap;

use datagrams::drain;
use std::net::SocketAddr;

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

fn client(ip: [u8; 4], port: u16, sa: SocketAddr, seed: u64) -> Client {
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
