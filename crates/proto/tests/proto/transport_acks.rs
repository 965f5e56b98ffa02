//! Acknowledgements ride only when there is something new to say (issue 17, row 4): a
//! connected packet carries the 8 bytes of ack fields after a packet arrived since the
//! last ones went out (three times after reliable data, whose lost ack costs a resend
//! timeout), and goes without them otherwise. Before protocol version 6 every packet
//! carried them, and a 32-byte input went in 54 bytes; now in 41.

use crate::support::hand_net::{HandNet, messages};
use tickwire_proto::wire::{self, PAYLOAD_HEADER_NO_ACKS_SIZE, PAYLOAD_HEADER_SIZE, Packet, PayloadHeader};
use tickwire_proto::{
    CHANNEL_RELIABLE, CHANNEL_UNRELIABLE, EndpointConfig, JitterModel, LinkConfig, LossModel, NetEvent as Event,
    Security, SimNet, UnreliableAcks,
};

const S: usize = 0;
const C: usize = 1;

fn header_of(datagram: &[u8]) -> PayloadHeader {
    match wire::decode_packet(datagram, EndpointConfig::default().protocol_id).unwrap() {
        Packet::Payload { header, .. } => header,
        p => panic!("not a payload: {p:?}"),
    }
}

fn plain_pair() -> (HandNet, tickwire_proto::PeerId, tickwire_proto::PeerId) {
    let mut net = HandNet::new();
    let cfg =
        |seed| EndpointConfig { max_incoming: 4, seed, security: Security::InsecurePlaintext, ..Default::default() };
    net.add(cfg(1));
    net.add(cfg(2));
    let cp = net.connect(C, S);
    let sp = net.peer_of(S, C).unwrap();
    net.events(S);
    net.events(C);
    (net, cp, sp)
}

/// The client's inputs carry no ack fields while nothing comes back; the packet after
/// one that came back carries them, once; after reliable data, three packets do.
#[test]
fn ack_fields_ride_only_on_news() {
    let (mut net, cp, sp) = plain_pair();
    let input = [7u8; 32];
    // Whatever the handshake left owed goes first.
    for _ in 0..4 {
        net.packet(C, cp, CHANNEL_UNRELIABLE, &input);
    }
    for _ in 0..5 {
        let d = net.packet(C, cp, CHANNEL_UNRELIABLE, &input);
        assert_eq!(header_of(&d).acks, None);
        assert_eq!(d.len(), PAYLOAD_HEADER_NO_ACKS_SIZE + 2 + 32, "a 32-byte input in 41 bytes, plaintext");
        net.inject(net.addr(C), S, &d);
    }
    assert_eq!(messages(&net.events(S)).len(), 5);

    // The server says something (unreliable): the client's next packet acknowledges
    // it, with the server's sequence number, and the one after goes bare again.
    let down = net.packet(S, sp, CHANNEL_UNRELIABLE, b"state");
    net.inject(net.addr(S), C, &down);
    net.events(C);
    let first = header_of(&net.packet(C, cp, CHANNEL_UNRELIABLE, &input));
    let acks = first.acks.expect("the packet after news carries acks");
    assert_eq!(acks.ack, header_of(&down).seq);
    assert_eq!(header_of(&net.packet(C, cp, CHANNEL_UNRELIABLE, &input)).acks, None);

    // Reliable data: three packets in a row carry the acks (a lost one would cost the
    // server a resend timeout), then none.
    let down = net.packet(S, sp, CHANNEL_RELIABLE, b"join");
    net.inject(net.addr(S), C, &down);
    assert_eq!(messages(&net.events(C)), vec![b"join".to_vec()]);
    let carried: Vec<bool> =
        (0..5).map(|_| header_of(&net.packet(C, cp, CHANNEL_UNRELIABLE, &input)).acks.is_some()).collect();
    assert_eq!(carried, [true, true, true, false, false]);
}

/// Over a lossy link, a one-way stream with sparse acks: the sender's loss figure stays
/// right, although most of its packets carry no ack fields, and those that do are
/// about one for each packet that came back (the receiver's acks and keepalives).
#[test]
fn a_one_way_stream_pays_for_acks_only_when_acks_come_back() {
    let link = LinkConfig {
        latency_us: 30_000,
        jitter: JitterModel::Uniform { max_us: 5_000 },
        loss: LossModel::Bernoulli { p: 0.05 },
        ..LinkConfig::perfect()
    };
    let mut net = SimNet::new(5, link);
    // Sparse: the server acknowledges a one-way stream every 16 packets (what a bare
    // `Host` does); `Prompt` would answer about every other packet.
    let s = net.add(EndpointConfig { max_incoming: 4, unreliable_acks: UnreliableAcks::Sparse, ..Default::default() });
    let c = net.add(EndpointConfig::default());
    let sa = net.addr(s);
    let now = net.now();
    let cp = net.endpoint(c).connect(now, sa).unwrap();
    net.run_until(1_000, 2_000_000, |n| n.endpoint(c).is_connected(cp));
    assert!(net.endpoint(c).is_connected(cp));
    let (start_c, start_s) = (net.endpoint(c).stats(cp).unwrap(), net.endpoint(s).endpoint_stats());
    let mut inputs = 0u32;
    net.run_until(16_667, 60_000_000, |n| {
        n.endpoint(c).send(cp, CHANNEL_UNRELIABLE, &[1; 32]).unwrap();
        inputs += 1;
        n.flush(c);
        n.take_events(s);
        false
    });
    let st = net.endpoint(c).stats(cp).unwrap();
    let sent = st.packets_sent - start_c.packets_sent;
    let back = st.packets_received - start_c.packets_received;
    let bytes = (st.bytes_sent - start_c.bytes_sent) as f64;
    assert!(sent >= inputs as u64, "{sent} packets for {inputs} inputs");
    assert!(back * 10 < sent, "the server sent {back} packets for {sent}: sparse acks");
    // Every input packet costs 7 + 2 + 32 + 16 bytes; the ack fields ride on at most
    // one packet per packet that came back.
    let bare = (PAYLOAD_HEADER_NO_ACKS_SIZE + 2 + 32 + wire::TAG_SIZE) as f64;
    let ack_fields = (PAYLOAD_HEADER_SIZE - PAYLOAD_HEADER_NO_ACKS_SIZE) as f64;
    let with_acks = (bytes - sent as f64 * bare) / ack_fields;
    assert!(with_acks >= 0.0 && with_acks <= back as f64 + 1.0, "{with_acks} packets with acks for {back} back");
    assert!(bytes / (sent as f64) < bare + 1.0, "{} bytes a packet", bytes / sent as f64);
    // The loss figure still sees every packet's fate.
    assert!(st.loss > 0.025 && st.loss < 0.08, "loss {}", st.loss);
    let got = net.endpoint(s).endpoint_stats().datagrams_received - start_s.datagrams_received;
    assert!(got as f64 > 0.9 * sent as f64, "{got} of {sent} arrived");
    assert!(!net.take_events(c).iter().any(|e| matches!(e, Event::Disconnected { .. })));
}
