//! Moving an endpoint's datagrams by hand, for tests that play the network.

use std::net::SocketAddr;

use tickwire_proto::Endpoint;
use tickwire_proto::wire::{self, MAX_DATAGRAM_SIZE};

/// Every datagram `ep` has to send now, with its destination.
pub fn drain(ep: &mut Endpoint) -> Vec<(SocketAddr, Vec<u8>)> {
    let mut out = Vec::new();
    let mut buf = [0u8; MAX_DATAGRAM_SIZE];
    while let Some((to, n)) = ep.poll_transmit(&mut buf) {
        out.push((to, buf[..n].to_vec()));
    }
    out
}

/// A plaintext connect response as a hand-made client writes it (no key, no proof):
/// what a test that forges a client against an insecure-plaintext endpoint sends.
pub fn plain_response(out: &mut Vec<u8>, protocol_id: u32, client_salt: u64, cookie_time: u64, cookie_mac: u64) {
    let r = wire::ConnectResponse {
        client_salt,
        cookie_time,
        cookie_mac,
        security: wire::SecurityMode::InsecurePlaintext,
        client_public: [0; 32],
        proof: [0; 16],
        token: None,
        binding: None,
        ciphers: wire::CipherOffer::CHACHA_ONLY,
    };
    wire::encode_connect_response(out, protocol_id, &r);
}
