//! A direction that loses tens of thousands of packets in a row comes back (issue 30,
//! finding 7). The header carries the low 16 bits of a packet's sequence number and
//! the receiver rebuilds the rest from the newest packet it authenticated; after more
//! than 32,768 losses in a row that guess was wrong for every later packet, which then
//! failed authentication: the direction was dead for good while the connection stayed
//! up. Each test plays a link whose one direction drops everything for a while, with
//! the other direction alive, and a timeout long enough that only the lost packets can
//! be the cause.

use crate::support::hand_net::{HandNet, messages};
use tickwire_proto::wire::{self, PAYLOAD_HEADER_NO_ACKS_SIZE, PAYLOAD_HEADER_SIZE, Packet, PacketKind, TAG_SIZE};
use tickwire_proto::{CHANNEL_UNRELIABLE, EndpointConfig, NetEvent as Event, PeerId, Security};

const S: usize = 0;
const C: usize = 1;
/// Time between two of the client's packets: 2,000 a second, under the send pace.
const STEP_US: u64 = 500;
/// The messages the tests send are this long.
const INPUT: usize = 32;

/// What one run saw on the wire and at the server.
struct Run {
    /// Datagrams from the client that the dead direction dropped, by length.
    dropped_lens: Vec<usize>,
    /// The client's datagrams once the link came back.
    after: Vec<Vec<u8>>,
    /// Messages the server received once the link came back, in order.
    delivered: Vec<Vec<u8>>,
    disconnected: bool,
    forged: u64,
    replayed: u64,
}

/// Connects a client to a server, lets a few messages through, then drops every
/// datagram from the client for `lost` of its packets (one unreliable message each)
/// while the server's datagrams still reach it, then carries everything again while
/// the client sends `after` more messages.
/// A server and a client of `security`, connected, whose connection only the lost
/// packets may end (its timeout is far longer than any test); the two peer ids.
fn connected_pair(security: Security) -> (HandNet, PeerId, PeerId) {
    let cfg = |seed, max_incoming| EndpointConfig {
        seed,
        max_incoming,
        security: security.clone(),
        timeout_us: 3_600_000_000,
        ..EndpointConfig::default()
    };
    let mut net = HandNet::new();
    net.add(cfg(11, 8));
    net.add(cfg(4, 0));
    let cp = net.connect(C, S);
    let sp = net.peer_of(S, C).expect("the server has the client");
    (net, cp, sp)
}

fn run(security: Security, lost: u32, after: u32) -> Run {
    let (mut net, cp, sp) = connected_pair(security);
    let (sa, ca) = (net.addr(S), net.addr(C));
    let mut delivered = Vec::new();
    let mut disconnected = false;
    let step = |net: &mut HandNet, i: u32, carry: bool, out: &mut Vec<Vec<u8>>| {
        net.now += STEP_US;
        let now = net.now;
        let msg = [(i % 251) as u8; INPUT];
        net.ep(C).send(cp, CHANNEL_UNRELIABLE, &msg).expect("send");
        net.ep(C).flush(now);
        net.ep(C).update(now);
        for (_, d) in net.take(C) {
            if carry {
                net.inject(ca, S, &d);
            }
            out.push(d);
        }
        net.ep(S).update(now);
        for (_, d) in net.take(S) {
            net.inject(sa, C, &d);
        }
        net.events(C);
    };
    // A warm-up with every packet through: acks both ways, a replay window with history.
    let mut warm = Vec::new();
    for i in 0..100 {
        step(&mut net, i, true, &mut warm);
    }
    let before = net.ep(S).stats(sp).expect("connected");
    net.events(S);
    let mut dropped = Vec::new();
    for i in 0..lost {
        step(&mut net, i, false, &mut dropped);
    }
    assert!(dropped.len() as u32 >= lost, "{} datagrams lost for {lost} messages", dropped.len());
    let mut sent_after = Vec::new();
    for i in 0..after {
        step(&mut net, i, true, &mut sent_after);
        for e in net.events(S) {
            match e {
                Event::Disconnected { .. } => disconnected = true,
                e => delivered.extend(messages(&[e])),
            }
        }
    }
    disconnected |= !net.ep(S).is_connected(sp) || !net.ep(C).is_connected(cp);
    let now = net.ep(S).stats(sp).unwrap_or(before);
    Run {
        dropped_lens: dropped.iter().map(Vec::len).collect(),
        after: sent_after,
        delivered,
        disconnected,
        forged: now.forged - before.forged,
        replayed: now.replayed - before.replayed,
    }
}

/// Every message after the first two arrives (the first packet after a long gap may be
/// dropped as an implausible jump until the next one confirms it), nothing fails
/// authentication, and the connection stays up.
fn assert_recovered(r: &Run, after: u32) {
    assert!(!r.disconnected, "the connection stays up");
    assert_eq!((r.forged, r.replayed), (0, 0), "no genuine packet fails authentication or counts as replayed");
    assert!(
        r.delivered.len() as u32 >= after - 2,
        "{} of {after} messages delivered after the link came back",
        r.delivered.len()
    );
    let tail: Vec<u8> = r.delivered.iter().rev().take(10).map(|m| m[0]).collect();
    let expected: Vec<u8> = (after - 10..after).rev().map(|i| (i % 251) as u8).collect();
    assert_eq!(tail, expected, "the last messages arrive in order");
}

/// Once the peer acknowledges again, the client's packets are back to the short header:
/// a 32-byte input costs what it did before the loss.
fn assert_short_again(r: &Run, security: &Security) {
    let tag = if matches!(security, Security::InsecurePlaintext) { 0 } else { TAG_SIZE };
    let last = r.after.last().expect("packets after the loss");
    let len = match wire::decode_packet(last, EndpointConfig::default().protocol_id) {
        Ok(Packet::Payload { header, .. }) => header.encoded_len(),
        p => panic!("not a payload: {p:?}"),
    };
    assert!(len == PAYLOAD_HEADER_NO_ACKS_SIZE || len == PAYLOAD_HEADER_SIZE, "short header, got {len} bytes");
    assert!(
        [PacketKind::Payload as u8, PacketKind::PayloadNoAcks as u8].contains(&last[0]),
        "a short kind, got {}",
        last[0]
    );
    assert_eq!(last.len(), len + 2 + INPUT + tag);
}

#[test]
fn an_encrypted_direction_survives_40000_lost_packets() {
    let after = 200;
    let r = run(Security::default(), 40_000, after);
    assert_recovered(&r, after);
    assert_short_again(&r, &Security::default());
    // While nothing was acknowledged, the long form carried the whole number; before
    // that, the short one did: the steady state is not made longer.
    let short = PAYLOAD_HEADER_NO_ACKS_SIZE + 2 + INPUT + TAG_SIZE;
    assert_eq!(r.dropped_lens[0], short, "the first lost packets still have the short header");
    assert!(*r.dropped_lens.last().unwrap() > short, "the last ones the long header");
}

#[test]
fn an_encrypted_direction_survives_a_full_wrap_of_the_low_bits() {
    // 65,536 and more: the low 16 bits of the next packet match those of the last one
    // received, so a 16-bit guess cannot even tell that packets were lost.
    for lost in [65_536, 70_000] {
        let after = 100;
        let r = run(Security::default(), lost, after);
        assert_recovered(&r, after);
        assert_short_again(&r, &Security::default());
    }
}

#[test]
fn a_plaintext_direction_survives_40000_lost_packets() {
    let after = 100;
    let r = run(Security::InsecurePlaintext, 40_000, after);
    assert_recovered(&r, after);
    assert_short_again(&r, &Security::InsecurePlaintext);
}

/// The long form gives a forger nothing: its high bits are authenticated with the rest
/// of the header, a forged or altered one is one failed open that moves nothing (the
/// genuine packets after it still arrive), and a genuine one replayed is refused.
#[test]
fn a_forged_or_replayed_long_header_moves_nothing() {
    let (mut net, cp, sp) = connected_pair(Security::default());
    let ca = net.addr(C);
    net.events(S);
    // 20,000 packets lost: the client's packets are in the long form by then.
    let mut last = Vec::new();
    for i in 0..20_002u32 {
        net.now += STEP_US;
        last.push(net.packet(C, cp, CHANNEL_UNRELIABLE, &[(i % 251) as u8; INPUT]));
        if last.len() > 2 {
            last.remove(0);
        }
    }
    let (a, b) = (last[0].clone(), last[1].clone());
    let pid = EndpointConfig::default().protocol_id;
    let header = |d: &[u8]| match wire::decode_packet(d, pid) {
        Ok(Packet::Payload { header, .. }) => header,
        p => panic!("not a payload: {p:?}"),
    };
    let h = header(&a);
    assert!(h.seq_high.is_some(), "the long form");
    let before = net.ep(S).stats(sp).expect("connected");
    // Bits of the high half flipped, and a far-ahead high half written over it.
    for k in 7..11 {
        let mut d = a.clone();
        d[k] ^= 0x10;
        net.inject(ca, S, &d);
    }
    let mut far = Vec::new();
    wire::encode_payload_header(&mut far, &wire::PayloadHeader { seq_high: Some(u32::MAX >> 1), ..h });
    far.extend_from_slice(&a[h.encoded_len()..]);
    net.inject(ca, S, &far);
    let mid = net.ep(S).stats(sp).expect("connected");
    assert_eq!((mid.forged - before.forged, mid.replayed - before.replayed), (5, 0), "each is one failed open");
    assert!(messages(&net.events(S)).is_empty());
    // The genuine packets are still fresh and open: nothing forged moved the window.
    // (No packet of the client's reached the server before, so there is no jump to
    // confirm.)
    net.inject(ca, S, &a);
    net.inject(ca, S, &b);
    let got = messages(&net.events(S));
    assert_eq!(got, vec![vec![(20_000 % 251) as u8; INPUT], vec![(20_001 % 251) as u8; INPUT]]);
    // Replayed: refused before any open.
    net.inject(ca, S, &a);
    net.inject(ca, S, &b);
    let after = net.ep(S).stats(sp).expect("connected");
    assert_eq!((after.forged - mid.forged, after.replayed - mid.replayed), (0, 2));
    assert!(messages(&net.events(S)).is_empty());
}
