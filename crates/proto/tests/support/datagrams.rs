//! Moving an endpoint's datagrams by hand, for tests that play the network.

use std::net::SocketAddr;

use tickwire_proto::Endpoint;
use tickwire_proto::wire::MAX_DATAGRAM_SIZE;

/// Every datagram `ep` has to send now, with its destination.
pub fn drain(ep: &mut Endpoint) -> Vec<(SocketAddr, Vec<u8>)> {
    let mut out = Vec::new();
    let mut buf = [0u8; MAX_DATAGRAM_SIZE];
    while let Some((to, n)) = ep.poll_transmit(&mut buf) {
        out.push((to, buf[..n].to_vec()));
    }
    out
}
