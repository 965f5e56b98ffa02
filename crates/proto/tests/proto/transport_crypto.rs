//! Encryption and authentication of connections: every packet after the handshake is
//! sealed (ChaCha20-Poly1305, a key per connection and per direction, the header as
//! associated data, a replay window). Each attack from the issue is reproduced against
//! an encrypted pair and, where it worked before, against an insecure-plaintext pair,
//! where it still works: so each test can fail. Who may connect (match secrets, connect
//! tokens): `transport_admission.rs`.

use std::net::SocketAddr;

use crate::support::hand_net::{HandNet, messages};
use tickwire_proto::wire::{
    self, MAX_DATAGRAM_SIZE, PAYLOAD_HEADER_NO_ACKS_SIZE, PAYLOAD_HEADER_SIZE, PROTOCOL_VERSION, Packet, PayloadHeader,
    TAG_SIZE,
};
use tickwire_proto::{
    CHANNEL_RELIABLE, CHANNEL_UNRELIABLE, COOKIE_LIFETIME_US, DisconnectReason, Endpoint, EndpointConfig, JitterModel,
    LinkConditioner, LinkConfig, LossModel, NetEvent as Event, PeerId, Security, SimNet,
};

/// The server and the client of [`pair`].
const S: usize = 0;
const C: usize = 1;

fn pid() -> u32 {
    EndpointConfig::default().protocol_id
}

fn cfg(security: Security, max_incoming: u32, seed: u64) -> EndpointConfig {
    EndpointConfig { max_incoming, seed, security, ..EndpointConfig::default() }
}

/// A server (node `S`) and a client (node `C`) connected, their events drained: the
/// net, the client's id for the server and the server's id for the client.
fn pair(security: Security) -> (HandNet, PeerId, PeerId) {
    let mut net = HandNet::new();
    net.add(cfg(security.clone(), 8, 11));
    net.add(cfg(security, 0, 4));
    let cp = net.connect(C, S);
    assert!(net.ep(C).is_connected(cp));
    let sp = net.peer_of(S, C).expect("the server has the client");
    net.events(S);
    net.events(C);
    (net, cp, sp)
}

fn header_of(datagram: &[u8]) -> PayloadHeader {
    match wire::decode_packet(datagram, pid()).unwrap() {
        Packet::Payload { header, .. } => header,
        p => panic!("not a payload: {p:?}"),
    }
}

/// Real packets from a connected client, altered on the way: bits flipped in the
/// authenticated header fields, the encrypted frames and the tag; truncated by one
/// byte, by a tag's length, to the bare header; replayed; delivered out of order.
/// Nothing altered or replayed is received (no event, no packet counted), each is
/// counted as forged or replayed on the endpoint and the connection, and the genuine
/// packets still get through afterwards, each exactly once in whatever order.
#[test]
fn tampered_truncated_replayed_and_reordered_packets() {
    let (mut net, cp, sp) = pair(Security::default());
    let ca = net.addr(C);
    let start = net.ep(S).stats(sp).unwrap();
    let inputs: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i; 24]).collect();
    let packets: Vec<Vec<u8>> = inputs.iter().map(|m| net.packet(C, cp, CHANNEL_UNRELIABLE, m)).collect();

    let (mut forged, mut replayed) = (0u64, 0u64);
    for k in 0..3 {
        let p = &packets[k];
        let (n, h) = (p.len(), header_of(p).encoded_len());
        let mut altered = Vec::new();
        // seq (low byte, high byte); frames; last ciphertext byte; first and last tag
        // bytes; and ack, ack_bits, ack_delay when the packet has them.
        let mut bits = vec![(5, 6), (6, 0), (h, 0), (h + 3, 5), (n - 17, 1), (n - 16, 0), (n - 1, 7)];
        if h == PAYLOAD_HEADER_SIZE {
            bits.extend([(7, 0), (9, 3), (13, 7)]);
        }
        for (byte, bit) in bits {
            let mut d = p.clone();
            d[byte] ^= 1 << bit;
            altered.push(d);
        }
        for len in [n - 1, n - TAG_SIZE, h] {
            altered.push(p[..len].to_vec());
        }
        // The kind says whether the ack fields are there, and it is authenticated: the
        // same bytes read with acks stripped (or invented) do not open.
        let mut other_form = vec![0u8; 1];
        if h == PAYLOAD_HEADER_SIZE {
            other_form[0] = 8;
            other_form.extend_from_slice(&p[1..PAYLOAD_HEADER_NO_ACKS_SIZE]);
            other_form.extend_from_slice(&p[PAYLOAD_HEADER_SIZE..]);
        } else {
            other_form[0] = 6;
            other_form.extend_from_slice(&p[1..h]);
            other_form.extend_from_slice(&[0; PAYLOAD_HEADER_SIZE - PAYLOAD_HEADER_NO_ACKS_SIZE]);
            other_form.extend_from_slice(&p[h..]);
        }
        assert_ne!(header_of(&other_form).encoded_len(), h);
        altered.push(other_form);
        let before = net.ep(S).stats(sp).unwrap();
        for d in &altered {
            net.inject(ca, S, d);
        }
        let after = net.ep(S).stats(sp).unwrap();
        assert!(net.events(S).is_empty(), "packet {k}: an altered packet produced an event");
        assert_eq!(
            (after.packets_received, after.bytes_received),
            (before.packets_received, before.bytes_received),
            "packet {k}: an altered packet was received"
        );
        assert_eq!(after.forged - before.forged, altered.len() as u64, "packet {k}: each alteration counted as forged");
        forged += altered.len() as u64;

        // The genuine packet is still taken (the forgeries did not use up its sequence
        // number), once.
        net.inject(ca, S, p);
        assert_eq!(messages(&net.events(S)), vec![inputs[k].clone()]);
        net.inject(ca, S, p);
        assert!(net.events(S).is_empty(), "packet {k} replayed");
        replayed += 1;
    }

    // Fields read before the tag is checked: a kind flipped to another one, or a
    // flipped salt, is dropped as malformed, foreign or from a stranger; a kind
    // flipped to the other form of a connected packet (8 to 9, the long form) as
    // forged, since the tag covers the kind, or as replayed when the ciphertext bytes
    // it now reads as the sequence number's high bits put it behind the replay window
    // (which depends on the keys, so on the seeds: either way it is never delivered).
    let counted = |net: &mut HandNet| {
        let s = net.ep(S).endpoint_stats();
        (s.malformed + s.wrong_version + s.wrong_protocol + s.unknown_sender, s.forged + s.replayed)
    };
    let before = counted(&mut net);
    let forged_at_start = net.ep(S).endpoint_stats().forged;
    assert_eq!(packets[3][0], wire::PacketKind::PayloadNoAcks as u8);
    for (byte, bit) in [(0, 0), (0, 4), (1, 0), (3, 4), (4, 2)] {
        let mut d = packets[3].clone();
        d[byte] ^= 1 << bit;
        net.inject(ca, S, &d);
    }
    let after = counted(&mut net);
    assert_eq!((after.0 - before.0, after.1 - before.1), (4, 1));
    if net.ep(S).endpoint_stats().forged > forged_at_start {
        forged += 1;
    } else {
        replayed += 1;
    }
    assert!(net.events(S).is_empty());

    // Out of order: each packet is delivered once (the replay window takes a fresh
    // packet in any order).
    let order = [7, 4, 6, 3, 5];
    for k in order {
        net.inject(ca, S, &packets[k]);
    }
    let want: Vec<Vec<u8>> = order.iter().map(|&k| inputs[k].clone()).collect();
    assert_eq!(messages(&net.events(S)), want);
    // Then every packet again, forwards and backwards: all replays.
    for p in packets.iter().chain(packets.iter().rev()) {
        net.inject(ca, S, p);
    }
    assert!(net.events(S).is_empty(), "a replay was delivered");
    replayed += 2 * packets.len() as u64;

    let conn = net.ep(S).stats(sp).unwrap();
    assert_eq!(conn.packets_received - start.packets_received, packets.len() as u64, "each genuine packet once");
    assert_eq!((conn.forged, conn.replayed), (forged, replayed), "the connection's counters");
    let ep = net.ep(S).endpoint_stats();
    assert_eq!((ep.forged, ep.replayed), (forged, replayed), "the endpoint's counters");
    assert_eq!(ep.connections, 1);

    // The connection works both ways.
    net.ep(C).send(cp, CHANNEL_RELIABLE, b"still up").unwrap();
    net.ep(S).send(sp, CHANNEL_RELIABLE, b"and down").unwrap();
    let now = net.now;
    net.ep(C).flush(now);
    net.ep(S).flush(now);
    net.settle();
    assert_eq!(messages(&net.events(S)), vec![b"still up".to_vec()]);
    assert_eq!(messages(&net.events(C)), vec![b"and down".to_vec()]);
}

/// Issue attack (a): an on-path attacker reads the connection's salt and sequence
/// number off the wire and sends the server disconnects "from" the player: in the old
/// 11-byte layout (no sequence number), and 13-byte ones for the next sequence numbers,
/// bare or with a made-up tag. Returns the net after it, and the client's and server's
/// ids.
fn forge_disconnects(security: Security) -> (HandNet, PeerId, PeerId) {
    let (mut net, cp, sp) = pair(security);
    let ca = net.addr(C);
    let real = net.packet(C, cp, CHANNEL_UNRELIABLE, b"input");
    net.inject(ca, S, &real);
    assert_eq!(messages(&net.events(S)), vec![b"input".to_vec()]);
    let h = header_of(&real);

    let mut old = vec![7u8, PROTOCOL_VERSION];
    old.extend_from_slice(&pid().to_le_bytes());
    old.extend_from_slice(&h.salt.to_le_bytes());
    old.push(DisconnectReason::Client as u8);
    assert_eq!(old.len(), 11);
    net.inject(ca, S, &old);
    for ahead in 1..=4 {
        for reason in [DisconnectReason::Client, DisconnectReason::Kicked] {
            let mut d = Vec::new();
            wire::encode_disconnect(&mut d, pid(), h.salt, h.seq.wrapping_add(ahead), reason);
            assert_eq!(d.len(), 13);
            net.inject(ca, S, &d);
            d.extend_from_slice(&[0xA5; TAG_SIZE]);
            net.inject(ca, S, &d);
        }
    }
    (net, cp, sp)
}

#[test]
fn forged_disconnects_do_not_remove_a_player() {
    let (mut net, cp, sp) = forge_disconnects(Security::default());
    assert!(net.events(S).is_empty(), "no disconnect");
    assert!(net.ep(S).is_connected(sp));
    let st = net.ep(S).endpoint_stats();
    assert_eq!((st.connections, st.forged, st.malformed), (1, 16, 1), "16 forged, the 11-byte one malformed");
    // The player is still there, and its own disconnect (the sequence number the
    // forgeries tried first) is taken.
    let ca = net.addr(C);
    let input = net.packet(C, cp, CHANNEL_UNRELIABLE, b"next input");
    net.inject(ca, S, &input);
    assert_eq!(messages(&net.events(S)), vec![b"next input".to_vec()]);
    let now = net.now;
    net.ep(C).disconnect(now, cp);
    net.settle();
    assert_eq!(net.events(S), vec![Event::Disconnected { peer: sp, reason: DisconnectReason::Client }]);

    // Contrast: on an insecure plaintext connection the same forgery removes the player.
    let (mut net, _, sp) = forge_disconnects(Security::InsecurePlaintext);
    assert_eq!(net.events(S), vec![Event::Disconnected { peer: sp, reason: DisconnectReason::Client }]);
    assert_eq!(net.ep(S).endpoint_stats().connections, 0);
}

/// Issue attack (b): a bit flipped in an input on the way. ChaCha20 is a stream cipher:
/// a flipped bit of ciphertext flips the same bit of the input, and only the tag stops
/// it. In plaintext the altered input reaches the game.
#[test]
fn a_flipped_bit_in_an_input_never_reaches_the_game() {
    let input: Vec<u8> = (100..132).collect();
    let (mut net, cp, _) = pair(Security::InsecurePlaintext);
    let ca = net.addr(C);
    let plain = net.packet(C, cp, CHANNEL_UNRELIABLE, &input);
    let at = plain.windows(input.len()).position(|w| w == input).expect("the input in clear");
    let mut d = plain.clone();
    d[at + 5] ^= 0x10;
    net.inject(ca, S, &d);
    let got = messages(&net.events(S));
    assert_eq!(got.len(), 1);
    assert_ne!(got[0], input, "plaintext: the altered input reaches the game");

    let (mut net, cp, sp) = pair(Security::default());
    let sealed = net.packet(C, cp, CHANNEL_UNRELIABLE, &input);
    assert_eq!(sealed.len(), plain.len() + TAG_SIZE, "same layout, plus the tag");
    assert!(!sealed.windows(input.len()).any(|w| w == input), "the input is not in clear");
    for bit in 0..input.len() * 8 {
        let mut d = sealed.clone();
        d[at + bit / 8] ^= 1 << (bit % 8);
        net.inject(ca, S, &d);
    }
    assert!(net.events(S).is_empty(), "an altered input reached the game");
    assert_eq!(net.ep(S).stats(sp).unwrap().forged, input.len() as u64 * 8);
    net.inject(ca, S, &sealed);
    assert_eq!(messages(&net.events(S)), vec![input]);
}

/// Issue attack (c): a client's captured connect response, replayed. From another port
/// or address the cookie does not verify (it names the address it was given to); from
/// the client's own address while its cookie is fresh, the server repeats its
/// `Accepted` (in case it was lost) and makes no second connection.
#[test]
fn a_replayed_connect_response_is_refused() {
    let mut net = HandNet::new();
    net.add(cfg(Security::default(), 8, 11));
    net.add(cfg(Security::default(), 0, 4));
    let (sa, ca) = (net.addr(S), net.addr(C));
    let cp = net.ep(C).connect(0, sa).unwrap();
    let request = net.take(C).pop().unwrap().1;
    net.inject(ca, S, &request);
    let challenge = net.take(S).pop().unwrap().1;
    net.inject(sa, C, &challenge);
    let response = net.take(C).pop().unwrap().1;
    assert!(matches!(wire::decode_packet(&response, pid()), Ok(Packet::ConnectResponse(_))));
    net.inject(ca, S, &response);
    let accepted = net.take(S).pop().unwrap().1;
    net.inject(sa, C, &accepted);
    assert!(net.ep(C).is_connected(cp));
    assert_eq!(net.events(S).len(), 1, "Connected");
    net.events(C);

    let other_port = SocketAddr::new(ca.ip(), ca.port() + 1);
    let other_ip = SocketAddr::from(([127, 0, 0, 99], ca.port()));
    for from in [other_port, other_ip] {
        net.inject(from, S, &response);
    }
    assert!(net.take(S).is_empty(), "nothing answers a replay from elsewhere");
    let st = net.ep(S).endpoint_stats();
    assert_eq!((st.bad_cookie, st.connections), (2, 1));

    net.now = COOKIE_LIFETIME_US / 2;
    net.inject(ca, S, &response);
    let again = net.take(S);
    assert_eq!(again, vec![(ca, accepted.clone())], "the same Accepted, again");
    net.inject(sa, C, &again[0].1);
    assert!(net.events(S).is_empty() && net.events(C).is_empty(), "no second connection");
    assert_eq!(net.ep(S).endpoint_stats().connections, 1);

    // The client leaves; the captured response, replayed from its address while the
    // cookie is still fresh, opens nothing: its cookie is spent.
    let now = net.now;
    net.ep(C).disconnect(now, cp);
    for (_, d) in net.take(C) {
        net.inject(ca, S, &d);
    }
    assert!(matches!(net.events(S).as_slice(), [Event::Disconnected { .. }]));
    net.inject(ca, S, &response);
    assert!(net.take(S).is_empty() && net.events(S).is_empty(), "a spent cookie opens no connection");
    let st = net.ep(S).endpoint_stats();
    assert_eq!((st.bad_cookie, st.connections), (3, 0));

    net.now = COOKIE_LIFETIME_US + 1;
    net.inject(ca, S, &response);
    assert!(net.take(S).is_empty());
    assert_eq!(net.ep(S).endpoint_stats().bad_cookie, 4, "stale");
}

/// Plaintext only when both ends chose it: either mismatch is refused, with the reason
/// on the client (as a fact to a plaintext client, as a hint to an encrypted one) and a
/// count on the server.
#[test]
fn a_plaintext_end_and_an_encrypted_end_do_not_connect() {
    for (server, client) in
        [(Security::default(), Security::InsecurePlaintext), (Security::InsecurePlaintext, Security::default())]
    {
        let mut net = HandNet::new();
        net.add(cfg(server.clone(), 8, 11));
        net.add(cfg(client.clone(), 0, 4));
        let cp = net.connect(C, S);
        let why = format!("server {server:?}, client {client:?}");
        let mismatch = DisconnectReason::SecurityMismatch;
        if client.is_plaintext() {
            // A plaintext client authenticates nothing, so it takes the refusal as is.
            assert_eq!(net.events(C), vec![Event::Disconnected { peer: cp, reason: mismatch }], "{why}");
        } else {
            // An encrypted client cannot authenticate a plaintext server's refusal: it
            // tries until its connect timeout, then says so, the reason as a hint.
            assert_eq!(net.events(C), vec![], "{why}");
            let unverified = DisconnectReason::DeniedUnverified;
            assert_eq!(net.time_out_handshakes(C), vec![Event::Disconnected { peer: cp, reason: unverified }], "{why}");
            assert_eq!(net.ep(C).unverified_denial(cp), Some(mismatch), "{why}");
        }
        assert!(net.events(S).is_empty(), "{why}");
        let st = net.ep(S).endpoint_stats();
        assert_eq!((st.security_mismatch, st.connections), (1, 0), "{why}");
    }
}

/// Two clients send the same message as their first packet: same sequence number,
/// same length, other bytes. The server's first packet to one of them, with the same
/// message and sequence number, differs from that client's too. A packet moved to
/// another connection (its salt rewritten) or reflected back to its sender fails
/// authentication there; the genuine packets are still taken after it.
#[test]
fn keys_differ_per_connection_and_per_direction() {
    let mut net = HandNet::new();
    net.add(cfg(Security::default(), 8, 11));
    let (a, b) = (net.add(cfg(Security::default(), 0, 4)), net.add(cfg(Security::default(), 0, 5)));
    let (ap, bp) = (net.connect(a, S), net.connect(b, S));
    let (sap, sbp) = (net.peer_of(S, a).unwrap(), net.peer_of(S, b).unwrap());
    for n in [S, a, b] {
        net.events(n);
    }
    let msg = b"the same input from both players";
    let pa = net.packet(a, ap, CHANNEL_UNRELIABLE, msg);
    let pb = net.packet(b, bp, CHANNEL_UNRELIABLE, msg);
    let down = net.packet(S, sap, CHANNEL_UNRELIABLE, msg);
    let (ha, hb) = (header_of(&pa), header_of(&pb));
    assert_eq!((ha.seq, pa.len()), (hb.seq, pb.len()));
    assert_eq!((header_of(&down).seq, down.len()), (ha.seq, pa.len()));
    assert_ne!(ha.salt, hb.salt);
    let body = |d: &[u8]| d[header_of(d).encoded_len()..].to_vec();
    assert_ne!(body(&pa), body(&pb), "two connections, one key");
    assert_ne!(body(&pa), body(&down), "two directions, one key");

    let (sa, aa, ba) = (net.addr(S), net.addr(a), net.addr(b));
    let mut moved = pa.clone();
    moved[1..5].copy_from_slice(&hb.salt.to_le_bytes());
    net.inject(ba, S, &moved);
    assert!(net.events(S).is_empty());
    let sb = net.ep(S).stats(sbp).unwrap();
    assert_eq!((sb.forged, sb.packets_received), (1, 0), "A's packet on B's connection");

    net.inject(sa, a, &pa);
    assert!(net.events(a).is_empty());
    assert_eq!(net.ep(a).stats(ap).unwrap().forged, 1, "A's packet reflected back to A");

    net.inject(ba, S, &pb);
    net.inject(aa, S, &pa);
    assert_eq!(messages(&net.events(S)), vec![msg.to_vec(), msg.to_vec()]);
    net.inject(sa, a, &down);
    assert_eq!(messages(&net.events(a)), vec![msg.to_vec()]);
}

/// What [`relay_traffic`] saw on the wire.
#[derive(Default)]
struct Capture {
    /// Every payload datagram's bytes past its header, both directions, in order.
    past_header: Vec<u8>,
    /// Client-to-server payload datagrams, and their bytes.
    up_packets: usize,
    up_bytes: usize,
    inputs: usize,
}

/// Five seconds of a relay client's traffic over a WAN-like link (20 ms, 3 ms jitter,
/// 1% loss): a 32-byte input 60 times a second, eight counters, the i-th going up every
/// 2^i ticks (fields that change every tick, and fields that change seldom).
fn relay_traffic(security: Security) -> Capture {
    let mut server = Endpoint::new(cfg(security.clone(), 8, 11), 0).unwrap();
    let mut client = Endpoint::new(cfg(security, 0, 4), 0).unwrap();
    let (sa, ca) = (SocketAddr::from(([10, 0, 0, 1], 4000)), SocketAddr::from(([10, 0, 0, 2], 5000)));
    let link = LinkConfig {
        latency_us: 20_000,
        jitter: JitterModel::Uniform { max_us: 3_000 },
        loss: LossModel::Bernoulli { p: 0.01 },
        ..LinkConfig::perfect()
    };
    let (mut up, mut down) = (LinkConditioner::<Vec<u8>>::new(link, 21), LinkConditioner::<Vec<u8>>::new(link, 22));
    let cp = client.connect(0, sa).unwrap();
    let mut cap = Capture::default();
    let mut buf = vec![0u8; MAX_DATAGRAM_SIZE];
    let mut next_input = None;
    for now in (1_000..=5_000_000).step_by(1_000) {
        while let Some(d) = up.poll(now) {
            server.handle_datagram(now, ca, &d);
        }
        while let Some(d) = down.poll(now) {
            client.handle_datagram(now, sa, &d);
        }
        while server.poll_event().is_some() || client.poll_event().is_some() {}
        let due = client.is_connected(cp).then(|| *next_input.get_or_insert(now));
        if due.is_some_and(|due| now >= due) {
            let tick = cap.inputs as u32;
            let input: Vec<u8> = (0..8u32).flat_map(|i| (1_000 * i + (tick >> i)).to_le_bytes()).collect();
            client.send(cp, CHANNEL_UNRELIABLE, &input).unwrap();
            cap.inputs += 1;
            next_input = due.map(|due| due + 16_667);
        }
        client.flush(now);
        client.update(now);
        server.update(now);
        for (ep, link, is_up) in [(&mut client, &mut up, true), (&mut server, &mut down, false)] {
            while let Some((_, n)) = ep.poll_transmit(&mut buf) {
                let d = buf[..n].to_vec();
                if let Ok(Packet::Payload { header, .. }) = wire::decode_packet(&d, pid()) {
                    cap.past_header.extend_from_slice(&d[header.encoded_len()..]);
                    if is_up {
                        cap.up_packets += 1;
                        cap.up_bytes += n;
                    }
                }
                let _ = link.send(now, n, d);
            }
        }
    }
    cap
}

/// Encrypted bytes look random: zlib cannot shrink them. The same traffic in plaintext
/// compresses several-fold (so the measurement can tell). Encryption costs one 16-byte
/// tag per packet. Run with `--nocapture` for the figures.
#[test]
fn encrypted_bytes_on_the_wire_do_not_compress() {
    let (enc, plain) = (relay_traffic(Security::default()), relay_traffic(Security::InsecurePlaintext));
    let ratio = |c: &Capture| {
        let packed = miniz_oxide::deflate::compress_to_vec_zlib(&c.past_header, 6);
        packed.len() as f64 / c.past_header.len() as f64
    };
    let (enc_ratio, plain_ratio) = (ratio(&enc), ratio(&plain));
    eprintln!(
        "zlib compressed/original of payload bytes past the header: encrypted {enc_ratio:.3} ({} B), plaintext \
         {plain_ratio:.3} ({} B)",
        enc.past_header.len(),
        plain.past_header.len()
    );
    let per_input = |c: &Capture| c.up_bytes as f64 / c.inputs as f64;
    eprintln!(
        "bytes up per 32-byte input: encrypted {:.1}, plaintext {:.1} ({} inputs, {} packets up)",
        per_input(&enc),
        per_input(&plain),
        enc.inputs,
        enc.up_packets
    );
    assert!(enc.inputs >= 290, "about five seconds of inputs at 60 Hz: {}", enc.inputs);
    assert!(enc_ratio >= 0.95, "encrypted traffic compressed to {enc_ratio:.3}");
    assert!(plain_ratio < 0.5, "plaintext traffic compressed only to {plain_ratio:.3}");
    assert_eq!((enc.inputs, enc.up_packets), (plain.inputs, plain.up_packets), "the same traffic");
    assert_eq!(enc.up_bytes - plain.up_bytes, TAG_SIZE * enc.up_packets, "one tag per packet, nothing else");
}

/// The first payload leaves the client after two round trips (request/challenge,
/// response/accepted), as netcode's does; over a 25 ms link the first message arrives
/// five one-way delays after `connect`.
#[test]
fn the_first_payload_leaves_after_two_round_trips() {
    let mut net = HandNet::new();
    net.add(cfg(Security::default(), 8, 11));
    net.add(cfg(Security::default(), 0, 4));
    let (sa, ca) = (net.addr(S), net.addr(C));
    let cp = net.ep(C).connect(0, sa).unwrap();
    net.ep(C).send(cp, CHANNEL_UNRELIABLE, b"first").unwrap();
    let mut round_trips = 0;
    loop {
        net.ep(C).flush(0);
        let up = net.take(C);
        assert!(!up.is_empty(), "the client went quiet");
        if up.iter().any(|(_, d)| matches!(wire::decode_packet(d, pid()), Ok(Packet::Payload { .. }))) {
            break;
        }
        round_trips += 1;
        assert!(round_trips < 10);
        for (_, d) in up {
            net.inject(ca, S, &d);
        }
        for (_, d) in net.take(S) {
            net.inject(sa, C, &d);
        }
    }
    assert_eq!(round_trips, 2);

    let mut sim = SimNet::new(7, LinkConfig { latency_us: 25_000, ..LinkConfig::perfect() });
    let s = sim.add(cfg(Security::default(), 8, 11));
    let c = sim.add(cfg(Security::default(), 0, 4));
    let sa = sim.addr(s);
    let cp = sim.endpoint(c).connect(0, sa).unwrap();
    sim.endpoint(c).send(cp, CHANNEL_UNRELIABLE, b"first").unwrap();
    let mut arrived = None;
    sim.run_until(1_000, 1_000_000, |n| {
        n.flush(c);
        let got = n.take_events_timed(s);
        arrived = arrived.or(got.iter().find(|(_, e)| matches!(e, Event::Message { .. })).map(|(t, _)| *t));
        arrived.is_some()
    });
    assert_eq!(arrived, Some(5 * 25_000));
}
