//! Carrier packet protection (`PacketProtection::Carrier`): over a carrier that
//! authenticates the remote and encrypts (Steam, EOS), the full handshake still runs
//! (cookie, X25519, the proof of a secret or token, the binding, the refusals), but
//! packets after it carry no AEAD tag: the carrier protects them. Both ends must
//! choose it, and the choice is covered by the handshake's proof, so nobody on the
//! path can make one end drop its AEAD. (The AEAD itself: `transport_crypto.rs`.)

use std::net::SocketAddr;

use crate::support::hand_net::{HandNet, connected, messages, pid};
use tickwire_proto::token::{self, ConnectToken, TokenParams};
use tickwire_proto::wire::{self, Packet, TAG_SIZE};
use tickwire_proto::{
    Admission, CHANNEL_RELIABLE, CHANNEL_UNRELIABLE, Credential, DisconnectReason, EndpointConfig, KEY_SIZE,
    NetEvent as Event, PacketProtection, PeerId, Presented, Secret, Security, TokenAdmission,
};

const SECRET: [u8; KEY_SIZE] = [5; KEY_SIZE];

/// An endpoint that admits `admission`, shows `presented` and protects its packets so.
fn cfg(admission: Admission, presented: Presented, packets: PacketProtection, max_incoming: u32) -> EndpointConfig {
    EndpointConfig {
        max_incoming,
        seed: 11 + max_incoming as u64,
        security: Security::Encrypted { admission, presented, packets },
        ..EndpointConfig::default()
    }
}

/// A match peer: admits holders of `secret`, shows it.
fn peer(secret: [u8; KEY_SIZE], packets: PacketProtection, max_incoming: u32) -> EndpointConfig {
    let admission = Admission::Secrets { players: Some(Secret(SECRET)), spectators: None };
    cfg(admission, Presented::Secret(Secret(secret)), packets, max_incoming)
}

/// Node 0 the server, node 1 the client, with the match secret and `packets`:
/// connected, the events of both taken and returned.
fn pair(packets: PacketProtection) -> (HandNet, PeerId, PeerId, Vec<Event>, Vec<Event>) {
    let mut net = HandNet::new();
    net.add(peer(SECRET, packets, 8));
    net.add(peer(SECRET, packets, 0));
    let cp = net.connect(1, 0);
    assert!(net.ep(1).is_connected(cp), "{packets:?}: connected");
    let sp = net.peer_of(0, 1).expect("the server has the client");
    let (se, ce) = (net.events(0), net.events(1));
    (net, cp, sp, se, ce)
}

fn payload_frames(d: &[u8]) -> usize {
    match wire::decode_packet(d, pid()).unwrap() {
        Packet::Payload { frames, .. } => frames.len(),
        p => panic!("not a payload: {p:?}"),
    }
}

#[test]
fn a_carrier_pair_proves_the_secret_and_sends_packets_without_a_tag() {
    let (mut net, cp, sp, se, ce) = pair(PacketProtection::Carrier);
    let credential = |events: &[Event]| {
        events.iter().find_map(|e| match e {
            Event::Connected { credential, .. } => Some(credential.clone()),
            _ => None,
        })
    };
    assert_eq!(credential(&se), Some(Credential::PlayerSecret), "the server saw the secret proven");
    assert_eq!(credential(&ce), Some(Credential::PlayerSecret), "the client saw the server prove it");

    // Both ways, both kinds of channel.
    let (sa, ca) = (net.addr(0), net.addr(1));
    for (from, to, p, fa, channel) in [
        (1, 0, cp, ca, CHANNEL_UNRELIABLE),
        (1, 0, cp, ca, CHANNEL_RELIABLE),
        (0, 1, sp, sa, CHANNEL_UNRELIABLE),
        (0, 1, sp, sa, CHANNEL_RELIABLE),
    ] {
        let msg = format!("from {from} on {channel}: the inputs of tick 42").into_bytes();
        let d = net.packet(from, p, channel, &msg);
        assert!(d.windows(msg.len()).any(|w| w == msg), "the carrier encrypts, we do not: the message is as sent");
        net.inject(fa, to, &d);
        assert_eq!(messages(&net.events(to)), vec![msg], "from {from} on {channel}");
    }
    net.settle();

    // The same message as the first packet of a fresh pair costs the tag under the
    // AEAD, nothing under the carrier.
    let (mut aead, acp, _, _, _) = pair(PacketProtection::Aead);
    let (mut carrier, ccp, _, _, _) = pair(PacketProtection::Carrier);
    let msg = [0x42u8; 32];
    let with_tag = aead.packet(1, acp, CHANNEL_UNRELIABLE, &msg);
    let without = carrier.packet(1, ccp, CHANNEL_UNRELIABLE, &msg);
    assert_eq!(with_tag.len(), without.len() + TAG_SIZE, "the AEAD's 16-byte tag and nothing else");
    assert_eq!(payload_frames(&with_tag), payload_frames(&without) + TAG_SIZE);
    assert_eq!(without.len(), 41, "a 32-byte input in 41 bytes, as on a plaintext connection");

    // Leaving works as on any connection: the peer hears why.
    let now = net.now;
    net.ep(1).disconnect(now, cp);
    net.settle();
    assert!(
        net.events(0).contains(&Event::Disconnected { peer: sp, reason: DisconnectReason::Client }),
        "the server heard the client leave"
    );
}

/// Client `c`'s handshake with node 0 was refused without proof: it goes on until its
/// connect timeout, then ends `DeniedUnverified`, the stated reason kept as a hint.
fn assert_refused_unverified(net: &mut HandNet, c: usize, cp: PeerId, reason: DisconnectReason, why: &str) {
    assert_eq!(net.events(c), vec![], "{why}: an unauthenticated refusal ended the handshake");
    let unverified = DisconnectReason::DeniedUnverified;
    assert_eq!(net.time_out_handshakes(c), vec![Event::Disconnected { peer: cp, reason: unverified }], "{why}");
    assert_eq!(net.ep(c).unverified_denial(cp), Some(reason), "{why}: the stated reason, as a hint");
    assert_eq!(net.peer_of(0, c), None, "{why}: the server has no connection");
    assert!(!net.events(0).iter().any(|e| matches!(e, Event::Connected { .. })), "{why}");
}

#[test]
fn a_wrong_secret_is_refused_under_carrier_protection() {
    let mut net = HandNet::new();
    net.add(peer(SECRET, PacketProtection::Carrier, 8));
    net.add(peer([6; KEY_SIZE], PacketProtection::Carrier, 0));
    let cp = net.connect(1, 0);
    assert_refused_unverified(&mut net, 1, cp, DisconnectReason::AuthFailed, "wrong secret");
    let st = net.ep(0).endpoint_stats();
    assert_eq!((st.auth_refused, st.security_mismatch, st.connections), (1, 0, 0));
}

/// Carrier protection only when both ends chose it: AEAD against carrier, either way
/// round, and plaintext against carrier, are refused with the mismatch reason on the
/// client (a hint to a client that proves a key, as fact to a plaintext one), and
/// counted on the server.
#[test]
fn carrier_and_aead_or_plaintext_ends_do_not_connect() {
    let aead = || peer(SECRET, PacketProtection::Aead, 8);
    let carrier = || peer(SECRET, PacketProtection::Carrier, 8);
    let plain =
        || EndpointConfig { max_incoming: 8, security: Security::InsecurePlaintext, ..EndpointConfig::default() };
    let client = |c: EndpointConfig| EndpointConfig { max_incoming: 0, seed: 4, ..c };
    for (server, client, name) in [
        (carrier(), client(aead()), "aead client, carrier server"),
        (aead(), client(carrier()), "carrier client, aead server"),
        (carrier(), client(plain()), "plaintext client, carrier server"),
        (plain(), client(carrier()), "carrier client, plaintext server"),
    ] {
        let plaintext_client = client.security.is_plaintext();
        let mut net = HandNet::new();
        net.add(server);
        net.add(client);
        let cp = net.connect(1, 0);
        let mismatch = DisconnectReason::SecurityMismatch;
        if plaintext_client {
            assert_eq!(net.events(1), vec![Event::Disconnected { peer: cp, reason: mismatch }], "{name}");
        } else {
            assert_refused_unverified(&mut net, 1, cp, mismatch, name);
        }
        let st = net.ep(0).endpoint_stats();
        assert_eq!((st.security_mismatch, st.connections), (1, 0), "{name}");
        assert!(net.events(0).is_empty(), "{name}");
    }
}

/// A man in the middle rewrites an AEAD client's choice to "carrier" on the way to a
/// carrier server (both hold the secret): the proof covers the choice, so it no
/// longer holds, and nothing connects. Neither side can be made to drop its AEAD.
#[test]
fn the_choice_is_covered_by_the_proof() {
    let mut net = HandNet::new();
    let s = net.add(peer(SECRET, PacketProtection::Carrier, 8));
    let c = net.add(peer(SECRET, PacketProtection::Aead, 0));
    let (sa, ca) = (net.addr(s), net.addr(c));
    let now = net.now;
    let cp = net.ep(c).connect(now, sa).unwrap();
    // The security byte: after the prefix (6) and the client salt (8) in a request,
    // and after the cookie (16) as well in a response.
    let rewrite = |d: &mut Vec<u8>, at: usize| {
        assert_eq!(d[at], 0, "the AEAD client asks for AEAD");
        d[at] = 2;
    };
    let mut req = net.take(c).pop().unwrap().1;
    rewrite(&mut req, 14);
    net.inject(ca, s, &req);
    let challenge = net.take(s).pop().expect("a challenge: the request asks for what the server does").1;
    net.inject(sa, c, &challenge);
    let mut resp = net.take(c).pop().unwrap().1;
    rewrite(&mut resp, 30);
    net.inject(ca, s, &resp);
    let st = net.ep(s).endpoint_stats();
    assert_eq!((st.auth_refused, st.connections), (1, 0), "the proof does not hold for the rewritten choice");
    assert!(!net.events(s).iter().any(|e| matches!(e, Event::Connected { .. })));
    for (_, d) in net.take(s) {
        net.inject(sa, c, &d);
    }
    assert!(!net.ep(c).is_connected(cp));
}

const KEY: [u8; KEY_SIZE] = [7; KEY_SIZE];
const T0: u64 = 1_700_000_000;

/// A relay server that admits connect tokens, with carrier protection, and a client
/// with a token for it: they connect, the server learns the backend's identity of the
/// client and the client that it is the server the token was for.
#[test]
fn a_connect_token_admits_under_carrier_protection() {
    let mut net = HandNet::new();
    let public = SocketAddr::from(([127, 0, 0, 1], 5000));
    let admission = Admission::Tokens(TokenAdmission { key: Secret(KEY), public_addresses: vec![public] });
    let s = net.add(cfg(admission, Presented::Open, PacketProtection::Carrier, 8));
    assert_eq!(net.addr(s), public);
    net.ep(s).set_unix_time(0, Some(T0));
    let p = TokenParams {
        protocol_id: pid(),
        client_id: 77,
        created: T0 - 60,
        expires: T0 + 60,
        timeout_secs: 0,
        addresses: vec![public],
        user_data: vec![9; 8],
    };
    let bytes = token::mint(&Secret(KEY), &p, &[3; 56]).expect("mint");
    let presented = Presented::Token(Box::new(ConnectToken::decode(&bytes).expect("decode")));
    let c = net.add(cfg(Admission::default(), presented, PacketProtection::Carrier, 0));
    let cp = net.connect(c, s);
    let ce = net.events(c);
    assert!(
        ce.iter()
            .any(|e| matches!(e, Event::Connected { peer, credential: Credential::TokenServer, .. } if *peer == cp)),
        "{ce:?}"
    );
    let se = net.events(s);
    let id = se.iter().find_map(|e| match e {
        Event::Connected { credential: Credential::ConnectToken(t), .. } => Some(t.client_id),
        _ => None,
    });
    assert_eq!(id, Some(77), "{se:?}");
    let sp = net.peer_of(s, c).unwrap();
    let d = net.packet(c, cp, CHANNEL_RELIABLE, b"join");
    net.inject(net.addr(c), s, &d);
    assert_eq!(messages(&net.events(s)), vec![b"join".to_vec()]);
    let d = net.packet(s, sp, CHANNEL_UNRELIABLE, b"step");
    net.inject(net.addr(s), c, &d);
    assert_eq!(messages(&net.events(c)), vec![b"step".to_vec()]);

    // An AEAD client with the same token is refused: the mismatch, counted.
    let aead = net.add(cfg(Admission::default(), Presented::Open, PacketProtection::Aead, 0));
    let _ = net.connect(aead, s);
    assert!(!connected(&mut net, aead, cp));
    assert_eq!(net.ep(s).endpoint_stats().security_mismatch, 1);
}

/// The carrier may deliver a datagram twice (or someone may replay one): once
/// connected, each packet is delivered once, as on a plaintext connection; the
/// sequence number is rebuilt from the header and the ack window drops duplicates.
#[test]
fn duplicated_packets_are_delivered_once() {
    let (mut net, cp, sp, _, _) = pair(PacketProtection::Carrier);
    let ca = net.addr(1);
    let packets: Vec<Vec<u8>> = (0..4u8).map(|i| net.packet(1, cp, CHANNEL_UNRELIABLE, &[i; 20])).collect();
    let before = net.ep(0).stats(sp).unwrap().packets_received;
    for d in [&packets[0], &packets[0], &packets[2], &packets[1], &packets[2], &packets[0], &packets[3], &packets[3]] {
        net.inject(ca, 0, d);
    }
    let got = messages(&net.events(0));
    assert_eq!(got, vec![vec![0; 20], vec![2; 20], vec![1; 20], vec![3; 20]], "each once, in arrival order");
    assert_eq!(net.ep(0).stats(sp).unwrap().packets_received - before, 4);
    // Reliable too: a duplicated reliable packet is one message.
    let d = net.packet(1, cp, CHANNEL_RELIABLE, b"once");
    net.inject(ca, 0, &d);
    net.inject(ca, 0, &d);
    assert_eq!(messages(&net.events(0)), vec![b"once".to_vec()]);
}
