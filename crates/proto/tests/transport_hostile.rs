//! Hostile peers that passed the handshake (issue 13): frames on the wrong channel, a
//! sequence number far ahead, and floods of empty frames. Each test reproduces an
//! attack that used to work; the attacker builds its packets with the crate's own wire
//! encoders.

use std::net::SocketAddr;

use tickwire_proto::transport::{CHANNEL_RELIABLE, CHANNEL_UNRELIABLE, Endpoint, EndpointConfig, Event, PeerId};
use tickwire_proto::wire::{self, MAX_DATAGRAM_SIZE, PayloadHeader};

fn pid() -> u32 {
    EndpointConfig::default().protocol_id
}

fn drain(ep: &mut Endpoint) -> Vec<(SocketAddr, Vec<u8>)> {
    let mut out = Vec::new();
    let mut buf = [0u8; MAX_DATAGRAM_SIZE];
    while let Some((to, n)) = ep.poll_transmit(&mut buf) {
        out.push((to, buf[..n].to_vec()));
    }
    out
}

fn addr(i: u32) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, i as u8], 40_000 + i as u16))
}

/// A client and a server joined by a perfect, instant link that the test drives by hand.
struct Pair {
    server: Endpoint,
    client: Endpoint,
    sa: SocketAddr,
    ca: SocketAddr,
    /// The server's id for the client, and the client's for the server.
    sp: PeerId,
    cp: PeerId,
}

impl Pair {
    fn new() -> Pair {
        let server =
            Endpoint::new(EndpointConfig { max_incoming: 8, seed: 11, ..EndpointConfig::default() }, 0).unwrap();
        let client = Endpoint::new(EndpointConfig { seed: 4, ..EndpointConfig::default() }, 0).unwrap();
        let mut p = Pair { server, client, sa: addr(20), ca: addr(21), sp: 0, cp: 0 };
        p.cp = p.client.connect(0, p.sa).unwrap();
        p.shuttle(1);
        assert!(p.client.is_connected(p.cp));
        p.sp = p.server.peers().next().unwrap();
        while p.server.poll_event().is_some() {}
        while p.client.poll_event().is_some() {}
        p
    }

    /// Moves every queued datagram both ways until both sides are quiet.
    fn shuttle(&mut self, now: u64) {
        loop {
            let up = drain(&mut self.client);
            let down = drain(&mut self.server);
            if up.is_empty() && down.is_empty() {
                return;
            }
            for (_, d) in up {
                self.server.handle_datagram(now, self.ca, &d);
            }
            for (_, d) in down {
                self.client.handle_datagram(now, self.sa, &d);
            }
        }
    }

    /// One real datagram from the client (its header carries the connection's salt and
    /// its current sequence number), not yet delivered.
    fn client_datagram(&mut self, now: u64, channel: u8, data: &[u8]) -> Vec<u8> {
        self.client.send(self.cp, channel, data).unwrap();
        self.client.flush(now);
        let mut out = drain(&mut self.client);
        assert_eq!(out.len(), 1);
        out.pop().unwrap().1
    }

    /// Messages the server's owner gets now.
    fn server_messages(&mut self) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        while let Some(e) = self.server.poll_event() {
            match e {
                Event::Message { data, .. } => got.push(data),
                other => panic!("unexpected {other:?}"),
            }
        }
        got
    }
}

fn header_of(datagram: &[u8]) -> PayloadHeader {
    match wire::decode_packet(datagram, pid()).unwrap() {
        wire::Packet::Payload { header, .. } => header,
        p => panic!("{p:?}"),
    }
}

/// A payload datagram with `header` and raw frame bytes.
fn payload(header: &PayloadHeader, frames: &[u8]) -> Vec<u8> {
    let mut d = Vec::new();
    wire::encode_payload_header(&mut d, pid(), header);
    d.extend_from_slice(frames);
    d
}

/// Issue 13, 4: a frame whose kind does not match its channel (a reliable frame on the
/// unreliable channel, a sequenced one on the reliable channel, a frame on a channel
/// that does not exist) used to close the connection with PROTOCOL_ERROR, and the relay
/// client treats that as final: one flipped bit, or one forged packet, ended a match.
/// Such a datagram is now dropped whole and counted; the connection goes on.
#[test]
fn a_frame_on_the_wrong_channel_is_dropped_and_counted_not_fatal() {
    let mut p = Pair::new();
    let real = p.client_datagram(2, CHANNEL_RELIABLE, b"real");
    let h = header_of(&real);
    let wrong: [&[u8]; 4] = [
        &[0x80, 0, 0, 1, 7],          // reliable frame on channel 0 (unreliable)
        &[0x42, 0, 0, 1, 7],          // sequenced frame on channel 2 (reliable)
        &[0x09, 1, 7],                // unreliable frame on channel 9 (not configured)
        &[0x00, 1, 7, 0x80, 0, 0, 0], // a good frame, then a bad one: nothing delivered
    ];
    let before = p.server.stats(p.sp).unwrap().malformed;
    for (i, frames) in wrong.iter().enumerate() {
        let h = PayloadHeader { seq: h.seq.wrapping_add(1 + i as u16), ..h };
        p.server.handle_datagram(3, p.ca, &payload(&h, frames));
    }
    assert!(p.server.is_connected(p.sp), "a frame on the wrong channel closed the connection");
    assert_eq!(p.server.stats(p.sp).unwrap().malformed - before, wrong.len() as u64, "each one counted");
    assert!(p.server_messages().is_empty(), "nothing of a rejected datagram is delivered");
    assert!(drain(&mut p.server).is_empty(), "no disconnect packets");
    // The connection works as before: the real datagram, and a new one.
    p.server.handle_datagram(4, p.ca, &real);
    let later = p.client_datagram(5, CHANNEL_UNRELIABLE, b"later");
    p.server.handle_datagram(5, p.ca, &later);
    assert_eq!(p.server_messages(), vec![b"real".to_vec(), b"later".to_vec()]);
}

/// Sends `n` numbered unreliable messages from the client, one datagram each, delivered
/// at once; returns the numbers the server's owner got.
fn stream(p: &mut Pair, from: u32, n: u32, now: &mut u64) -> Vec<u32> {
    let mut got = Vec::new();
    for i in from..from + n {
        *now += 16_000;
        let d = p.client_datagram(*now, CHANNEL_UNRELIABLE, &i.to_le_bytes());
        p.server.handle_datagram(*now, p.ca, &d);
        p.shuttle(*now);
        got.extend(p.server_messages().iter().map(|m| u32::from_le_bytes(m[..4].try_into().unwrap())));
    }
    got
}

/// Issue 13, 4: one packet with a sequence number far ahead (forged by anyone who saw
/// the connection's salt, or a corrupted header) moved the receive window, and every
/// later honest packet was "too old": a 10 s outage. A jump beyond what the ack window
/// can absorb is now only accepted once a second packet confirms it.
#[test]
fn a_sequence_jump_does_not_make_honest_packets_too_old() {
    let mut p = Pair::new();
    let mut now = 10;
    assert_eq!(stream(&mut p, 0, 10, &mut now), (0..10).collect::<Vec<_>>());
    let h = header_of(&p.client_datagram(now, CHANNEL_UNRELIABLE, b"x"));
    // Forged packets with the salt, far ahead (the last one as far as a 16-bit sequence
    // can call "newer"), each carrying a message.
    for jump in [30_000u16, 33, 1_000, 32_766] {
        let f = PayloadHeader { seq: h.seq.wrapping_add(jump), ..h };
        p.server.handle_datagram(now, p.ca, &payload(&f, &[0x00, 4, 0xEE, 0xEE, 0xEE, 0xEE]));
    }
    assert!(p.server_messages().is_empty(), "a forged far-ahead packet was delivered");
    assert_eq!(p.server.stats(p.sp).unwrap().implausible_seq, 4, "each one counted");
    assert_eq!(stream(&mut p, 10, 100, &mut now), (10..110).collect::<Vec<_>>(), "honest packets were dropped");
    assert!(p.server.is_connected(p.sp));

    // A real burst of loss (200 packets, more than the 32 the ack bits cover) still
    // resynchronises: at most the first packet after it is lost.
    for i in 0..200u32 {
        now += 1_000;
        p.client_datagram(now, CHANNEL_UNRELIABLE, &i.to_le_bytes());
    }
    let after = stream(&mut p, 1_000, 50, &mut now);
    assert!(after.len() >= 49 && after.iter().all(|&i| i >= 1_000), "after a loss burst: {after:?}");
}
