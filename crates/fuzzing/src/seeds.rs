//! The committed corpus: a handful of valid inputs per target, built from real
//! messages, and a regression input for each defect of hostile input a target can express
//! (`regress-<what>`). `cargo test -p tickwire-fuzzing --test fuzz_corpus -- --ignored
//! write_corpus` writes them to `fuzz/corpus/<target>/`.
//!
//! The session and endpoint inputs are operation streams: each builder below writes
//! the bytes in the order its target reads them (see the targets' match arms).

use tickwire_proto::token::{SEALED_PRIVATE_SIZE, TOKEN_NONCE_SIZE};
use tickwire_proto::wire::p2p::{Header, KIND_INPUT, KIND_SPECTATE, KIND_SPECTATOR_ACK};
use tickwire_proto::wire::relay::{Hello, MarginReport, PlayerStep, StepForm, UpdateHead, Welcome};
use tickwire_proto::wire::{self, AckFields, ConnectResponse, PayloadHeader, SecurityMode, TokenPart};
use tickwire_proto::{DesyncDump, DisconnectReason, InputStatus, ReplayRecorder};

use super::decoders::PID;

/// An operation stream under construction.
#[derive(Default, Clone)]
struct B(Vec<u8>);

impl B {
    fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }
    /// A length byte and the bytes.
    fn blob(&mut self, b: &[u8]) -> &mut Self {
        self.u8(b.len() as u8).bytes(b)
    }
    /// `Input::tick_near`: the base tick moved by `d`.
    fn near(&mut self, d: i8) -> &mut Self {
        self.u8(1).u8((d as i16 + 128) as u8)
    }
    /// `Input::tick_near`: any tick.
    fn any(&mut self, t: u32) -> &mut Self {
        self.u8(0).u32(t)
    }
    fn done(&self) -> Vec<u8> {
        self.0.clone()
    }
}

type Entry = (&'static str, String, Vec<u8>);

/// Every seed and regression input, as `(target, file name, bytes)`.
pub fn corpus() -> Vec<Entry> {
    let mut c = Vec::new();
    decoders(&mut c);
    endpoint(&mut c);
    endpoint_pair(&mut c);
    handshake(&mut c);
    relay_server(&mut c);
    relay_hosted(&mut c);
    match_server(&mut c);
    relay_client(&mut c);
    p2p(&mut c);
    tick_stream(&mut c);
    nat(&mut c);
    c
}

/// `rendezvous`: records `[to][from][dt u16][len u16][bytes]` (see the target): the
/// rendezvous's real Info for slot 0 handed to the traversal, then relayed datagrams
/// and a stranger's; a Hello replayed from a stranger; relay datagrams to nobody.
fn nat(c: &mut Vec<Entry>) {
    use crate::nat::{KEY, PROTOCOL, RDV, UNIX, hello};
    use tickwire_proto::{Rendezvous, RendezvousConfig, Secret};
    let record = |to: u8, from: u8, dt: u16, bytes: &[u8]| {
        let mut v = vec![to, from];
        v.extend_from_slice(&dt.to_le_bytes());
        v.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
        v.extend_from_slice(bytes);
        v
    };
    // The same rendezvous as the target's, so the same Info.
    let rdv: std::net::SocketAddr = RDV.parse().expect("an address");
    let mut cfg = RendezvousConfig::new(Secret(KEY), PROTOCOL);
    cfg.public_addresses = vec![rdv];
    cfg.relay_bytes_per_sec = 4096;
    let mut r = Rendezvous::new(cfg, 1, &[7; 32]);
    let p0: std::net::SocketAddr = "198.51.100.2:20000".parse().expect("an address");
    r.handle(0, UNIX, p0, &hello(0));
    r.handle(0, UNIX, "198.51.100.3:30000".parse().expect("an address"), &hello(1));
    let mut buf = vec![0u8; 2048];
    let mut info = None;
    while let Some((to, n)) = r.poll_transmit(&mut buf) {
        if to == p0 {
            info = Some(buf[..n].to_vec());
        }
    }
    let info = info.expect("the rendezvous answers slot 0");
    let mut v = record(1, 0, 10, &info);
    v.extend(record(1, 0, 5, &[0xE4, 1, 9, 9, 9, 9]));
    v.extend(record(1, 2, 5, &[0xE5; 31]));
    v.extend(record(1, 4, 300, &[6, 1, 2, 3, 4, 5, 6, 7]));
    v.extend(record(1, 0, 2000, &[0xE3, 4]));
    put(c, "rendezvous", "introduced-then-relayed", v);
    let mut v = record(0, 4, 1, &hello(0));
    v.extend(record(0, 4, 1, &[0xE4, 1, 1, 2, 3]));
    v.extend(record(0, 1, 1, &[0xE4, 2, 1, 2, 3]));
    v.extend(record(0, 1, 1, &[0xE4, 0, 1, 2, 3]));
    v.extend(record(0, 1, 1, &[0xE4, 1, 1, 2, 3]));
    v.extend(record(0, 2, 65535, &hello(1)));
    put(c, "rendezvous", "replays-and-strangers", v);
}

fn put(c: &mut Vec<Entry>, target: &'static str, name: &str, bytes: Vec<u8>) {
    c.push((target, name.to_string(), bytes));
}

fn with(first: u8, rest: &[u8]) -> Vec<u8> {
    let mut v = vec![first];
    v.extend_from_slice(rest);
    v
}

fn p2p_msg(h: &Header, inputs: &[u8], disconnects: &[(u16, u32)], reports: &[(u32, u64)], digests: &[u128]) -> Vec<u8> {
    let mut out = Vec::new();
    let p = h.players as usize;
    wire::p2p::encode(
        &mut out,
        h,
        2,
        |i, j| &inputs[(i * p + j) * 2..][..2],
        disconnects.iter().copied(),
        reports.iter().copied(),
        digests,
    );
    out
}

fn update(head: &UpdateHead, margins: &[MarginReport], checks: &[(u32, u64)], first: u32, steps: usize) -> Vec<u8> {
    let mut out = Vec::new();
    wire::relay::encode_server_update_head(&mut out, head, margins, checks, first);
    let (mut prev, mut full, mut delta) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..steps {
        let players = [
            PlayerStep { player: 0, accepted: 1, inputs: vec![vec![(i / 2) as u8, 1]] },
            PlayerStep { player: 2, accepted: 0, inputs: vec![vec![0, 0]] },
        ];
        full.clear();
        wire::relay::write_step(&mut full, &players);
        wire::relay::encode_delta(&mut delta, &prev, &full);
        let (form, body) = if i == 0 { (StepForm::Full, &full) } else { (StepForm::Delta, &delta) };
        wire::relay::write_entry(&mut out, i as u16, form, body);
        std::mem::swap(&mut prev, &mut full);
    }
    wire::relay::set_entry_count(&mut out, margins.len(), checks.len(), steps as u8);
    out
}

const HEAD: UpdateHead = UpdateHead {
    server_tick: 120,
    your_player: 0,
    shift: -2,
    input_ack: 118,
    depth: 3,
    first_input: 4,
    substituted: 1,
    late_substituted: 0,
};

fn decoders(c: &mut Vec<Entry>) {
    // wire_packet: every kind of datagram, and payloads with every kind of frame.
    let mut b = Vec::new();
    type Encode<'a> = &'a dyn Fn(&mut Vec<u8>);
    let (nonce, sealed) = ([3u8; TOKEN_NONCE_SIZE], [4u8; SEALED_PRIVATE_SIZE]);
    let response = |token| ConnectResponse {
        client_salt: 7,
        cookie_time: 1_000_000,
        cookie_mac: 0xfeed,
        security: SecurityMode::Encrypted,
        client_public: [1; 32],
        proof: [2; 16],
        token,
        binding: None,
        ciphers: wire::CipherOffer::new(true),
    };
    let kinds: [(&str, Encode); 11] = [
        ("connect-request", &|b| wire::encode_connect_request(b, PID, 7, SecurityMode::Encrypted)),
        ("connect-request-plaintext", &|b| wire::encode_connect_request(b, PID, 7, SecurityMode::InsecurePlaintext)),
        ("challenge", &|b| wire::encode_challenge(b, PID, 7, 1_000_000, 0xfeed)),
        ("connect-response", &|b| wire::encode_connect_response(b, PID, &response(None))),
        ("connect-response-token", &|b| {
            let token = TokenPart { expires: 1_700_000_000, nonce: &nonce, sealed: &sealed };
            wire::encode_connect_response(b, PID, &response(Some(token)))
        }),
        ("accepted", &|b| {
            wire::encode_accepted_head(b, PID, 7, 8, &[5; 32], wire::Cipher::Aes256Gcm);
            b.extend_from_slice(&[6; 16]);
        }),
        ("denied", &|b| wire::encode_denied(b, PID, 7, DisconnectReason::ServerFull, None)),
        ("denied-auth-failed", &|b| wire::encode_denied(b, PID, 7, DisconnectReason::AuthFailed, None)),
        ("denied-tagged", &|b| wire::encode_denied(b, PID, 7, DisconnectReason::TokenInUse, Some(&[3; 16]))),
        ("disconnect", &|b| wire::encode_disconnect(b, PID, 99, 3, DisconnectReason::Kicked)),
        ("disconnect-tagged", &|b| {
            wire::encode_disconnect(b, PID, 99, 3, DisconnectReason::Kicked);
            b.extend_from_slice(&[7; 16]);
        }),
    ];
    for (name, enc) in kinds {
        enc(&mut b);
        put(c, "wire_packet", name, with(1, &b));
    }
    let acks = AckFields { ack: 4, ack_bits: 0b1011, ack_delay: 25 };
    let h = PayloadHeader { salt: 0x1234_5678, seq: 9, seq_high: None, acks: Some(acks) };
    wire::encode_payload_header(&mut b, &h);
    b.extend_from_slice(&[0x00, 2, b'h', b'i', 0x41, 3, 0, 1, b'x', 0x82, 7, 0, 3, b'a', b'b', b'c']);
    put(c, "wire_packet", "payload-frames", with(1, &b));
    wire::encode_payload_header(&mut b, &PayloadHeader { acks: None, ..h });
    b.extend_from_slice(&[0x00, 2, b'h', b'i']);
    put(c, "wire_packet", "payload-no-acks", with(1, &b));
    wire::encode_payload_header(&mut b, &PayloadHeader { seq_high: Some(3), ..h });
    b.extend_from_slice(&[0x00, 2, b'h', b'i']);
    put(c, "wire_packet", "payload-long", with(1, &b));
    wire::encode_payload_header(&mut b, &PayloadHeader { seq_high: Some(3), acks: None, ..h });
    b.extend_from_slice(&[0x00, 2, b'h', b'i']);
    put(c, "wire_packet", "payload-long-no-acks", with(1, &b));
    wire::encode_payload_header(&mut b, &h);
    b.extend_from_slice(&[0xC2, 5, 0, 0, 0, 2, 0, 0x80, 8]);
    b.extend_from_slice(&[0xAB; 1024]);
    b.extend_from_slice(&[0xC2, 6, 0, 1, 0, 2, 0, 3, 1, 2, 3]);
    put(c, "wire_packet", "payload-fragments", with(1, &b));

    // p2p_message (input size 2: selector 1).
    let h = Header {
        kind: KIND_INPUT,
        tick: 130,
        ack: 127,
        confirmed: 125,
        advantage: -0.75,
        first: 126,
        count: 4,
        players: 1,
        loading: false,
    };
    put(c, "p2p_message", "inputs", with(1, &p2p_msg(&h, &[1, 0, 1, 0, 2, 0, 2, 0], &[], &[], &[])));
    let h2 = Header { players: 2, count: 2, ..h };
    let m = p2p_msg(&h2, &[1, 2, 3, 4, 5, 6, 7, 8], &[(2, 128)], &[(120, 0xdead), (110, 7)], &[]);
    put(c, "p2p_message", "lists", with(1, &m));
    // The newest report's input digests, one per player.
    let m = p2p_msg(&h2, &[1, 2, 3, 4, 5, 6, 7, 8], &[], &[(120, 0xdead), (110, 7)], &[0xfeed_f00d, 0, 7]);
    put(c, "p2p_message", "digests", with(1, &m));
    let s = Header { kind: KIND_SPECTATE, players: 3, count: 2, ..h };
    put(c, "p2p_message", "spectate", with(1, &p2p_msg(&s, &[9; 12], &[], &[], &[])));
    let a = Header { kind: KIND_SPECTATOR_ACK, count: 0, players: 0, ..h };
    put(c, "p2p_message", "spectator-ack", with(1, &p2p_msg(&a, &[], &[], &[], &[])));
    // An ack 100000 ticks past the sender's tick.
    let lie = Header { ack: 100_130, count: 0, ..h };
    put(c, "p2p_message", "regress-ack-from-the-future", with(1, &p2p_msg(&lie, &[], &[], &[], &[])));

    // relay_messages: Hello (0), Welcome (1), ClientInputs (2, max input 8), ServerUpdate (3).
    wire::relay::encode_hello(&mut b, &Hello { token: wire::relay::SessionToken::NONE, input_size: 2, max_players: 4 });
    put(c, "relay_messages", "hello", with(0, &b));
    let w = Welcome {
        player: 1,
        token: wire::relay::SessionToken([0xab; 16]),
        tick: 300,
        input_size: 2,
        max_players: 4,
        report_interval: 0,
        state: b"state",
    };
    wire::relay::encode_welcome(&mut b, &w);
    put(c, "relay_messages", "welcome", with(1, &b));
    // A Welcome at the last tick.
    wire::relay::encode_welcome(&mut b, &Welcome { tick: u32::MAX, ..w });
    put(c, "relay_messages", "regress-welcome-tick-max", with(1, &b));
    let ins: [&[u8]; 3] = [&[1, 0], &[1, 0], &[2, 0]];
    wire::relay::encode_client_inputs(&mut b, 99, &[0b11], 140, ins.into_iter());
    put(c, "relay_messages", "client-inputs", with(2 | 8 << 2, &b));
    let margins =
        [MarginReport { tick: 139, margin: 1.5, copy: 0 }, MarginReport { tick: 140, margin: -0.25, copy: 1 }];
    // ServerUpdate with max input 2 (index 2), fixed size 2 (0x20) and 4 players (0x40).
    let sel = 3 | 2 << 2 | 0x20 | 0x40;
    put(c, "relay_messages", "server-update", with(sel, &update(&HEAD, &margins, &[(110, 5)], 117, 3)));
    // A shift of i32::MAX.
    let big = UpdateHead { shift: i32::MAX, ..HEAD };
    put(c, "relay_messages", "regress-update-shift-max", with(sel, &update(&big, &margins, &[], 117, 1)));

    // desync_dump.
    let row = vec![(InputStatus::Confirmed, vec![1, 2]), (InputStatus::Disconnected, vec![0, 0])];
    let dump = DesyncDump {
        tick: 50,
        local: 1,
        remote: 2,
        peer: 3,
        culprit: Some(1),
        players: 2,
        input_size: 2,
        first_tick: 48,
        inputs: vec![row; 3],
        state: Some(b"engine state".to_vec()),
    };
    put(c, "desync_dump", "with-state", dump.encode());
    let no_state = DesyncDump { state: None, inputs: Vec::new(), culprit: None, ..dump.clone() };
    put(c, "desync_dump", "no-state", no_state.encode());
    // A version 1 dump (before the culprit field) still decodes.
    let mut v1 = no_state.encode();
    v1[4..6].copy_from_slice(&1u16.to_le_bytes());
    v1.drain(30..34);
    put(c, "desync_dump", "version-1", v1);
    // 51 bytes, no players and 2^32 - 1 ticks (asked for 103 GB), in
    // version 1 as found, and in version 2 (the culprit field makes it 55).
    let mut d =
        DesyncDump { state: None, inputs: Vec::new(), players: 0, input_size: 0, culprit: None, ..dump }.encode();
    d[46..50].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(d.len(), 55);
    put(c, "desync_dump", "regress-dump-103gb-v2", d.clone());
    d[4..6].copy_from_slice(&1u16.to_le_bytes());
    d.drain(30..34);
    put(c, "desync_dump", "regress-dump-103gb", d);

    // stun_response: RFC 5769's sample IPv4 and IPv6 binding responses (§2.2, §2.3;
    // SOFTWARE, XOR-MAPPED-ADDRESS, MESSAGE-INTEGRITY, FINGERPRINT), and an error
    // response (401, no FINGERPRINT).
    const RFC5769_HEAD: [u8; 20] = [
        0x01, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42, 0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87,
        0xdf, 0xae,
    ];
    const SOFTWARE: [u8; 16] =
        [0x80, 0x22, 0x00, 0x0b, 0x74, 0x65, 0x73, 0x74, 0x20, 0x76, 0x65, 0x63, 0x74, 0x6f, 0x72, 0x20];
    let stun = |len: u8, attrs: &[&[u8]]| {
        let mut m = RFC5769_HEAD.to_vec();
        m[3] = len;
        for a in attrs {
            m.extend_from_slice(a);
        }
        m
    };
    let v4 = stun(
        0x3c,
        &[
            &SOFTWARE,
            &[0x00, 0x20, 0x00, 0x08, 0x00, 0x01, 0xa1, 0x47, 0xe1, 0x12, 0xa6, 0x43],
            &[
                0x00, 0x08, 0x00, 0x14, 0x2b, 0x91, 0xf5, 0x99, 0xfd, 0x9e, 0x90, 0xc3, 0x8c, 0x74, 0x89, 0xf9, 0x2a,
                0xf9, 0xba, 0x53, 0xf0, 0x6b, 0xe7, 0xd7,
            ],
            &[0x80, 0x28, 0x00, 0x04, 0xc0, 0x7d, 0x4c, 0x96],
        ],
    );
    put(c, "stun_response", "rfc5769-ipv4", v4);
    let v6 = stun(
        0x48,
        &[
            &SOFTWARE,
            &[
                0x00, 0x20, 0x00, 0x14, 0x00, 0x02, 0xa1, 0x47, 0x01, 0x13, 0xa9, 0xfa, 0xa5, 0xd3, 0xf1, 0x79, 0xbc,
                0x25, 0xf4, 0xb5, 0xbe, 0xd2, 0xb9, 0xd9,
            ],
            &[
                0x00, 0x08, 0x00, 0x14, 0xa3, 0x82, 0x95, 0x4e, 0x4b, 0xe6, 0x7b, 0xf1, 0x17, 0x84, 0xc9, 0x7c, 0x82,
                0x92, 0xc2, 0x75, 0xbf, 0xe3, 0xed, 0x41,
            ],
            &[0x80, 0x28, 0x00, 0x04, 0xc8, 0xfb, 0x0b, 0x4c],
        ],
    );
    put(c, "stun_response", "rfc5769-ipv6", v6);
    let mut error = stun(0x14, &[&[0x00, 0x09, 0x00, 0x10, 0, 0, 4, 1], b"Unauthorized"]);
    error[1] = 0x11;
    put(c, "stun_response", "error-401", error);

    // replay.
    let mut r = ReplayRecorder::new(2, 2, 0, b"initial");
    for t in 0..6u8 {
        r.begin_tick();
        r.push(&[t, 1], InputStatus::Confirmed);
        if t < 4 { r.push(&[t, 2], InputStatus::Confirmed) } else { r.push(&[], InputStatus::Disconnected) }
    }
    put(c, "replay", "two-players", r.bytes().to_vec());
    let mut r = ReplayRecorder::new(1, 3, 5000, &[]);
    r.begin_tick();
    r.push(&[1, 2, 3], InputStatus::Confirmed);
    put(c, "replay", "mid-match", r.bytes().to_vec());
    // Counts no file can hold: every one is refused before anything is reserved.
    let mut h = ReplayRecorder::new(1, 1, 0, &[]).bytes().to_vec();
    for (at, v) in [(8, u32::MAX), (12, u32::MAX), (20, u32::MAX)] {
        h[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    put(c, "replay", "regress-replay-huge-counts", h);
    // Found by fuzzing: no ticks, so nothing checks 2^32 - 1 players of 2^32 - 1 bytes,
    // and playing reserved their product (a capacity-overflow panic).
    let mut h = ReplayRecorder::new(1, 1, 0x0200_0000, &[]).bytes().to_vec();
    h[8..16].fill(0xff);
    put(c, "replay", "regress-no-ticks-huge-players", h);
    // Found by fuzzing: ticks that run past u32::MAX (the last advance counted past it).
    let mut r = ReplayRecorder::new(2, 2, u32::MAX - 2, b"initial");
    for t in 0..6u8 {
        r.begin_tick();
        r.push(&[t, 1], InputStatus::Confirmed);
        r.push(&[t, 2], InputStatus::Confirmed);
    }
    put(c, "replay", "regress-ticks-past-the-last-tick", r.bytes().to_vec());
}

/// `endpoint`: the op byte is `address << 4 | kind`.
fn endpoint(c: &mut Vec<Entry>) {
    // Address 0 connects, talks on every channel, and leaves.
    let mut hs = B::default();
    hs.u8(0x02).u64(0x5a17).u8(0x03).u8(1).u8(0).u8(0x0a).u16(2000);
    let frames = [0x00, 2, b'h', b'i', 0x41, 0, 0, 1, b'x', 0x82, 0, 0, 3, b'a', b'b', b'c'];
    let mut s = hs.clone();
    s.u8(0x04).u16(0).u32(0).u16(0).u16(frames.len() as u16).bytes(&frames);
    s.u8(0x0b).u8(2).u16(10).bytes(b"0123456789").u8(0);
    s.u8(0x0a).u16(500);
    s.u8(0x04).u16(1).u32(1).u16(10).u16(0);
    s.u8(0x06).u8(1);
    put(c, "endpoint", "handshake-talk-leave", s.done());
    // The endpoint dials address 1, which answers as a server.
    let mut s = B::default();
    s.u8(0x1c).u8(0x17).u64(1_000_000).u64(0xc00c).u8(0x18).u64(0x5e4e).u8(0x0a).u16(2000);
    s.u8(0x14).u16(0).u32(0).u16(0).u16(5).bytes(&[0x00, 3, 1, 2, 3]);
    s.u8(0x0b).u8(0).u16(4).bytes(b"ping").u8(0);
    s.u8(0x0d).u8(0).u8(1);
    put(c, "endpoint", "dial-and-talk", s.done());
    // Strangers: junk, an old version, more clients than slots, a stale cookie.
    let mut req = Vec::new();
    wire::encode_connect_request(&mut req, PID, 1, SecurityMode::InsecurePlaintext);
    req[1] = 1;
    let mut s = B::default();
    s.u8(0x20).u16(5).bytes(b"junk!").u8(0x30).u16(req.len() as u16).bytes(&req);
    for a in 0..4u8 {
        s.u8(a << 4 | 0x02).u64(100 + a as u64).u8(a << 4 | 0x03).u8(1).u8(0);
    }
    s.u8(0x0a).u16(60_000).u8(0x0a).u16(60_000).u8(0x03).u8(1).u8(0);
    put(c, "endpoint", "strangers", s.done());
    // A sequence number far ahead, then the honest ones.
    let mut s = hs.clone();
    for seq in [1u16, 0x8000, 2, 3, 4] {
        s.u8(0x05).u16(seq).u16(0).u32(0).u16(0).u16(4).bytes(&[0x00, 2, b'o', b'k']);
    }
    put(c, "endpoint", "regress-seq-jump", s.done());
    // A reliable frame on the unreliable channel.
    let mut s = hs.clone();
    s.u8(0x04).u16(0).u32(0).u16(0).u16(5).bytes(&[0x80, 0, 0, 1, b'r']);
    s.u8(0x04).u16(0).u32(0).u16(0).u16(4).bytes(&[0x00, 2, b'o', b'k']);
    put(c, "endpoint", "regress-wrong-channel-frame", s.done());
    // Full datagrams of empty frames.
    let mut s = hs.clone();
    let empties = [0u8; 1180];
    for _ in 0..6 {
        s.u8(0x04).u16(0).u32(0).u16(0).u16(empties.len() as u16).bytes(&empties);
    }
    put(c, "endpoint", "regress-empty-frame-flood", s.done());
    // One address reconnecting with new salts, again and again.
    let mut s = B::default();
    for salt in 1..40u64 {
        s.u8(0x02).u64(salt).u8(0x03).u8(1).u8(0).u8(0x0a).u16(50);
    }
    put(c, "endpoint", "regress-squat-reconnect", s.done());
}

/// `endpoint_pair`: the op byte is `side << 7 | detail << 3 | kind`.
fn endpoint_pair(c: &mut Vec<Entry>) {
    let mut s = B::default();
    s.u8(0);
    s.u8(0x00).u16(100).u8(0x80).u16(2000).u8(0x02).u16(10).u8(0x8a).u16(20);
    s.u8(0x03).u8(0x83).u8(0x7f).u8(0x06).u16(400).u8(0x7f);
    put(c, "endpoint_pair", "clean", s.done());
    // Drops, duplicates and reordering: send, then decide each datagram's fate.
    let mut s = B::default();
    s.u8(0);
    for _ in 0..4 {
        s.u8(0x00).u16(1500).u8(0x0a).u16(30);
    }
    s.u8(0x03);
    s.u8(0x04).u16(0).u8(0x1c).u16(1).u8(0x34).u16(2).u8(0x7f);
    for _ in 0..6 {
        s.u8(0x06).u16(4000).u8(0x34).u16(3).u8(0x7f);
    }
    put(c, "endpoint_pair", "lossy", s.done());
    // Corruption allowed: a flipped byte in a datagram.
    let mut s = B::default();
    s.u8(1).u8(0x00).u16(50).u8(0x03).u8(0x2c).u16(0).u16(30).u8(0x40).u8(0x06).u16(4000).u8(0x7f);
    put(c, "endpoint_pair", "corrupt", s.done());
}

/// `handshake`: a setup (`setup, unix u16, key, wrong key, credential, token random,
/// token life`), then operations (`detail << 4 | kind`): 0 deliver, 1 a datagram's fate,
/// 3 time, 4 and 5 send, 6 to 8 forged request, response, Accepted, 9 forged Disconnect
/// or Denied, 10 the client leaves or dials, or the server kicks it.
fn handshake(c: &mut Vec<Entry>) {
    let setup = |setup: u8, k: u8, cred: u8| {
        let mut s = B::default();
        s.u8(setup).u16(0).u8(k).u8(9).u8(cred).u8(5).u8(10);
        s
    };
    // The link delivers all that is in flight (16 at a time), and time passes.
    let settle = |s: &mut B| {
        s.u8(0xf0).u8(0xf0).u8(0x03).u16(1000).u8(0xf0);
    };
    // Messages both ways on every channel.
    let talk = |s: &mut B| {
        s.u8(0x04).u16(20).u8(0x14).u16(40).u8(0x24).u16(1500).u8(0x05).u16(30).u8(0x25).u16(2000);
        settle(s);
    };
    // Secrets: the players' key (k = 1), the spectators' (k = 3, credential 4), a wrong
    // one, none, a token instead; an open endpoint (k = 0) and an open client.
    for (name, k, cred) in [
        ("secret-right", 1, 0),
        ("secret-spectator", 3, 4),
        ("secret-wrong", 1, 1),
        ("secret-none", 1, 2),
        ("secret-token-instead", 1, 3),
        ("open", 0, 0),
    ] {
        let mut s = setup(0, k, cred);
        settle(&mut s);
        talk(&mut s);
        s.u8(0x0a);
        settle(&mut s);
        put(c, "handshake", name, s.done());
    }
    // Tokens (public address: the server's): good, minted with another key, for
    // another address, expired; a secret instead, none. Then 60 s pass, and the client
    // dials again with its token, expired by then.
    for (name, cred) in [
        ("token-right", 0),
        ("token-wrong-key", 4),
        ("token-other-address", 8),
        ("token-expired", 12),
        ("token-secret-instead", 1),
        ("token-none", 2),
    ] {
        let mut s = setup(1, 7, cred);
        settle(&mut s);
        talk(&mut s);
        for _ in 0..10 {
            s.u8(0x03).u16(60_000).u8(0xf0);
        }
        s.u8(0x0a);
        settle(&mut s);
        put(c, "handshake", name, s.done());
    }
    // Three slots, and the attacker's good tokens: it asks for a cookie from both its
    // addresses and connects with its own token, and with the client's (no key).
    let mut s = setup(1 | 2 << 1 | 0x80, 7, 0);
    settle(&mut s);
    for a in [1u8, 2] {
        s.u8(a << 4 | 0x06).u64(0xa77ac + a as u64);
        s.u8(a << 4 | 0x07).u8(0).u8(1).u8(3);
        s.u8(a << 4 | 0x07).u8(0).u8(2).u8(0);
    }
    talk(&mut s);
    put(c, "handshake", "token-attacker-slots", s.done());
    // An open server with two slots, filled by the attacker proving the open key.
    let mut s = setup(1 << 1, 0, 0);
    for a in [1u8, 2] {
        s.u8(a << 4 | 0x06).u64(0xa77ac + a as u64);
        s.u8(a << 4 | 0x07).u8(0).u8(0).u8(0);
    }
    settle(&mut s);
    put(c, "handshake", "open-server-full", s.done());
    // A hostile link: the handshake's datagrams duplicated and held back; once
    // connected, truncations, flips, duplicates delivered late (replays), and
    // datagrams delivered from the attacker's addresses.
    let mut s = setup(0, 1, 0);
    for _ in 0..4 {
        s.u8(0x11).u16(0).u8(0x21).u16(0).u8(0x00);
    }
    settle(&mut s);
    for i in 0..4 {
        s.u8(0x04).u16(20).u8(0x25).u16(1500).u8(0x31).u16(i).u16(7).u8(0x41).u16(0).u16(20 + i).u8(1 << i);
    }
    settle(&mut s);
    talk(&mut s);
    // The client's datagram (first in flight, before the server's two fragments) is
    // duplicated twice (each copy a replay), the last copy delivered from an attacker
    // address.
    for i in 0..6 {
        s.u8(0x04).u16(20 + i).u8(0x25).u16(1500);
        s.u8(0x11).u16(0).u8(0x11).u16(2).u8(0x51).u16(2).u8(0x03).u16(300).u8(0xf0);
    }
    settle(&mut s);
    s.u8(0x0a).u8(0x11).u16(0);
    settle(&mut s);
    talk(&mut s);
    put(c, "handshake", "hostile-link", s.done());
    // Forgeries once connected: Accepteds (the genuine fields with a zero key, the
    // attacker's key, any), Disconnects with and without a tag each way, a Denied, junk.
    let mut s = setup(0, 1, 0);
    settle(&mut s);
    s.u8(0x08).u8(1).u8(0x08).u8(2).u8(0x48).u8(3).bytes(&[7; 32]).bytes(&[8; 16]);
    s.u8(0x09).u8(1).bytes(&[9; 16]).u8(0x49).u8(4).u8(0x19).u8(1).bytes(&[9; 16]).u8(0x89).u8(6);
    s.u8(0x1d).u16(20).bytes(&[2; 20]);
    talk(&mut s);
    put(c, "handshake", "forgeries", s.done());
    // Once the client is connected, the attacker, on the path, spoofs the client's
    // address: it asks for a cookie with a salt of its own, and answers the challenge
    // it saw with a proof of nothing (two slots: a full server would not challenge).
    let mut s = setup(1 << 1, 1, 0);
    settle(&mut s);
    s.u8(0x06).u64(0x5ca1ab1e).u8(0x07).u8(0).u8(0).u8(5).bytes(&[0xee; 16]);
    talk(&mut s);
    put(c, "handshake", "regress-spoofed-response-closes-the-connection", s.done());
}

/// `relay_server`: op, peer pick, then the op's fields.
fn relay_server(c: &mut Vec<Entry>) {
    let frame = |s: &mut B, n: usize| {
        for _ in 0..n {
            s.u8(0x06).u8(0).u16(170);
        }
    };
    let inputs = |s: &mut B, pick: u8, n: u8| {
        s.u8(0x01).u8(pick).u8(0).near(0).near(0).u8(n);
        for i in 0..n {
            s.u8(1).u8(i).u8(0);
        }
    };
    let mut s = B::default();
    s.u8(0x00).u8(0).u8(0x03).u8(0).u8(0x11).u8(0);
    frame(&mut s, 3);
    for _ in 0..10 {
        inputs(&mut s, 0, 2);
        frame(&mut s, 2);
    }
    s.u8(0x00).u8(0).u8(0x03).u8(1).u8(0x11).u8(0);
    frame(&mut s, 3);
    s.u8(0x05).u8(0);
    frame(&mut s, 3);
    s.u8(0x00).u8(0).u8(0x03).u8(1).u8(0x11).u8(2);
    frame(&mut s, 5);
    put(c, "relay_server", "join-play-reconnect", s.done());
    // Strangers: no Hello, a wrong game, a bad token, a raw message.
    let mut s = B::default();
    s.u8(0x00).u8(0).u8(0x00).u8(0).u8(0x00).u8(0);
    s.u8(0x03).u8(1).u8(0x30).u8(0).u8(0x03).u8(2).u8(0x11).u8(1).u64(77);
    s.u8(0x04).u8(0).blob(b"\x03junk");
    frame(&mut s, 80);
    put(c, "relay_server", "strangers", s.done());
    // A player that asks for a snapshot every frame.
    let mut s = B::default();
    s.u8(0x00).u8(0).u8(0x03).u8(0).u8(0x11).u8(0);
    frame(&mut s, 3);
    for _ in 0..60 {
        s.u8(0x03).u8(0).u8(0x11).u8(2);
        frame(&mut s, 1);
    }
    put(c, "relay_server", "regress-resync-spam", s.done());
    // Bursts of inputs between two ticks.
    let mut s = B::default();
    s.u8(0x00).u8(0).u8(0x03).u8(0).u8(0x11).u8(0);
    frame(&mut s, 3);
    for k in 0..40u8 {
        s.u8(0x01).u8(0).u8(0).near(0).near((k as i8).wrapping_mul(3)).u8(23);
        for i in 0..23 {
            s.u8(1).u8(i).u8(k);
        }
    }
    frame(&mut s, 10);
    put(c, "relay_server", "regress-input-burst", s.done());
    // Connections that take every slot and come back when dropped.
    let mut s = B::default();
    for round in 0..6u8 {
        for p in 0..5u8 {
            s.u8(0x00).u8(0).u8(0x03).u8(p + round * 5).u8(0x11).u8(0);
        }
        frame(&mut s, 20);
        for _ in 0..5 {
            s.u8(0x05).u8(0);
        }
    }
    put(c, "relay_server", "regress-slot-squat", s.done());
}

/// `relay_hosted`: op, peer pick, then the op's fields.
fn relay_hosted(c: &mut Vec<Entry>) {
    let frame = |s: &mut B, n: usize| {
        for _ in 0..n {
            s.u8(0x08).u8(0).u16(170);
        }
    };
    // Three players join a new match (the initial state), report their checksums, and a
    // fourth joins: the server asks for a snapshot, the donor uploads it, the witnesses
    // agree (answers to the asks seen: op 3 with bit 7 clear picks an ask).
    let mut s = B::default();
    for p in 0..3u8 {
        s.u8(0x00).u8(0).u8(p).u8(0x01).u8(p);
    }
    frame(&mut s, 10);
    for p in 0..3u8 {
        s.u8(0x05).u8(p).u8(0).near(0).u8(1).u8(1);
    }
    s.u8(0x00).u8(0).u8(3).u8(0x01).u8(3);
    frame(&mut s, 3);
    for k in 0..3u8 {
        s.u8(0x03).u8(k).blob(b"the state").u8(1);
    }
    frame(&mut s, 10);
    put(c, "relay_hosted", "join-from-a-client", s.done());
    // A liar's upload (a digest that is not its state's), reports nobody asked for,
    // checksums that are no check ticks, and garbage on the reliable channel.
    let mut s = B::default();
    for p in 0..3u8 {
        s.u8(0x00).u8(0).u8(p).u8(0x01).u8(p);
    }
    frame(&mut s, 10);
    s.u8(0x00).u8(0).u8(3).u8(0x01).u8(3);
    frame(&mut s, 3);
    s.u8(0x03).u8(0).blob(b"forged").u8(0).u8(2);
    s.u8(0x83).u8(1).near(0).u8(1).blob(b"unasked").u8(1);
    s.u8(0x05).u8(1).u8(3).near(3).u8(0).u8(2).near(0).u8(1).u8(0).near(-1).u8(0).u8(1).near(90).u8(1).u8(1);
    s.u8(0x06).u8(2).blob(&[6, 1, 2]);
    s.u8(0x06).u8(2).blob(&[7, 0]);
    frame(&mut s, 400);
    put(c, "relay_hosted", "regress-forged-and-unasked-reports", s.done());
}

/// `match_server`: op, pick, then the op's fields.
fn match_server(c: &mut Vec<Entry>) {
    let join = |s: &mut B, pick: u8, id: u8, players: u8| {
        // A valid claim: match `id`, `players` players, 2-byte inputs at 60 Hz.
        s.u8(0x00).u8(pick).u8(id).u8(players).u8(2).u8(2).u8(0);
        s.u8(0x01).u8(pick).u8(2 | (players << 4));
    };
    let frame = |s: &mut B, n: usize| {
        for _ in 0..n {
            s.u8(0x05).u8(0).u16(333);
        }
    };
    let mut s = B::default();
    for m in 0..4u8 {
        for p in 0..2u8 {
            join(&mut s, m * 2 + p, m, 2);
        }
    }
    frame(&mut s, 20);
    // Another shape for match 0, no claim at all, an open credential.
    s.u8(0x00).u8(9).u8(0).u8(3).u8(2).u8(2).u8(0);
    s.u8(0x00).u8(10).u8(0).u8(2).u8(2).u8(2).u8(3);
    s.u8(0x80).u8(11).u8(0).u8(2).u8(2).u8(2).u8(0);
    frame(&mut s, 10);
    s.u8(0x04).u8(1).u8(1);
    s.u8(0x04).u8(0);
    join(&mut s, 12, 4, 2);
    for _ in 0..8 {
        s.u8(0x03).u8(0);
    }
    frame(&mut s, 100);
    put(c, "match_server", "claims-shapes-drain", s.done());
}

/// `relay_client`: op (bit 7: pick another connection), then the op's fields.
fn relay_client(c: &mut Vec<Entry>) {
    let frame = |s: &mut B, n: usize| {
        for i in 0..n {
            s.u8(0x07).u16(170).u8(i as u8).u8(0);
        }
    };
    let welcome = |s: &mut B, tick: Option<u32>| {
        s.u8(0x02).u8(0x11);
        match tick {
            Some(t) => s.any(t),
            None => s.near(0),
        };
        s.blob(b"state");
    };
    let update = |s: &mut B, shift: Option<u32>, steps: u8| {
        s.u8(0x03).near(2).u8(1);
        match shift {
            Some(v) => s.u8(0).u32(v),
            None => s.u8(1).u8(0xff),
        };
        s.u8(1).u8(2).u8(1).u8(0);
        s.u8(1).near(1).u16(200).u8(0);
        s.u8(0);
        s.near(0).u8(steps);
        for i in 0..steps {
            s.u8(0b0011).u8(1).u8(1).u8(i).u8(0).u8(0).u8(1).u8(0).u8(0);
        }
    };
    let mut s = B::default();
    s.u8(0x00);
    frame(&mut s, 2);
    welcome(&mut s, None);
    for _ in 0..30 {
        update(&mut s, None, 3);
        frame(&mut s, 1);
    }
    s.u8(0x06).u8(0);
    frame(&mut s, 3);
    put(c, "relay_client", "join-play-resync", s.done());
    // A drop, the retry and the rejoin with the token.
    let mut s = B::default();
    s.u8(0x00);
    frame(&mut s, 2);
    welcome(&mut s, None);
    frame(&mut s, 2);
    s.u8(0x01 | 2 << 3);
    frame(&mut s, 20);
    s.u8(0x00);
    frame(&mut s, 2);
    welcome(&mut s, None);
    update(&mut s, None, 2);
    frame(&mut s, 4);
    put(c, "relay_client", "drop-and-rejoin", s.done());
    // A Welcome at tick 0xFFFFFFFF.
    let mut s = B::default();
    s.u8(0x00);
    frame(&mut s, 2);
    welcome(&mut s, Some(u32::MAX));
    for _ in 0..5 {
        update(&mut s, None, 2);
        frame(&mut s, 2);
    }
    put(c, "relay_client", "regress-welcome-tick-max", s.done());
    // Updates with a shift of i32::MAX.
    let mut s = B::default();
    s.u8(0x00);
    frame(&mut s, 2);
    welcome(&mut s, None);
    for k in 0..20 {
        update(&mut s, Some(if k % 2 == 0 { i32::MAX as u32 } else { 0 }), 1);
        frame(&mut s, 2);
    }
    put(c, "relay_client", "regress-update-shift-max", s.done());
    // A shift of i32::MAX in the first report, then honest ones: the lead loop keeps a
    // margin sample 2^31 ticks off, snaps the clock 2^31 ticks ahead, and `ticks_due`
    // records an input for each of those ticks (a hang).
    let mut s = B::default();
    s.u8(0x00);
    frame(&mut s, 2);
    welcome(&mut s, None);
    for k in 0..40 {
        update(&mut s, Some(if k == 0 { i32::MAX as u32 } else { 0 }), 1);
        frame(&mut s, 1);
    }
    put(c, "relay_client", "regress-first-shift-max-snaps-the-clock", s.done());
}

/// `p2p_session` and `spectator`.
fn p2p(c: &mut Vec<Entry>) {
    let frame = |s: &mut B, n: usize| {
        for i in 0..n {
            s.u8(0x06).u16(170).u8(i as u8).u8(0);
        }
    };
    // A message from peer `op >> 5` (0: peer 1) with one tick of inputs.
    let msg = |s: &mut B, op: u8, players: usize, ack: Option<u32>| {
        s.u8(op).u8(0x11).near(1);
        match ack {
            Some(a) => s.any(a),
            None => s.near(0),
        };
        s.near(0).u8(0).near(-2).u8(3).bytes(&[1, 0].repeat(3 * players)).u8(0);
        // A checksum report of the tick 5 back (a desync when it is a check tick), with
        // input digests for the 3 players of the layouts with a second peer.
        if op == 0x20 {
            s.u8(1).near(-5).u64(1).u8(1).bytes(&[0, 1, 2])
        } else {
            s.u8(0)
        };
    };
    // (name, setup byte, players of peer 1 and of peer 2): see the target's layouts.
    for (name, setup, peers) in
        [("two-peers", 0x08u8, [1, 0]), ("three-peers-recording", 0x89, [1, 1]), ("shared-peer-sparse", 0x2a, [2, 0])]
    {
        let mut s = B::default();
        s.u8(setup);
        for _ in 0..40 {
            for (op, players) in [(0x00, peers[0]), (0x20, peers[1])] {
                if players > 0 {
                    msg(&mut s, op, players, None);
                }
            }
            frame(&mut s, 1);
        }
        s.u8(0x05).u8(0);
        frame(&mut s, 5);
        s.u8(0x04).u8(2);
        frame(&mut s, 5);
        put(c, "p2p_session", name, s.done());
    }
    // The reconciliation's messages on the three-peer layout (op 3: raw bytes from
    // peer 1): requests about peer 2's player (served once a tick), about its own
    // (refused), truncated; an answer nobody asked for; a loading announcement.
    {
        let mut s = B::default();
        s.u8(0x09);
        for _ in 0..30 {
            msg(&mut s, 0x00, 1, None);
            msg(&mut s, 0x20, 1, None);
            frame(&mut s, 1);
        }
        let req = |player: u16, from: u32, to: u32| {
            let mut m = vec![0x25];
            m.extend_from_slice(&player.to_le_bytes());
            m.extend_from_slice(&from.to_le_bytes());
            m.extend_from_slice(&to.to_le_bytes());
            m
        };
        s.u8(0x03).blob(&req(2, 0, u32::MAX)).u8(0x03).blob(&req(2, 0, u32::MAX));
        s.u8(0x03).blob(&req(1, 0, 10)).u8(0x03).blob(&req(2, 0, 10)[..7]);
        s.u8(0x03).blob(&[0x26, 2, 0, 0, 0, 0, 0, 1, 0, 7, 7]);
        s.u8(0x85).u8(0x83).u8(1);
        frame(&mut s, 3);
        put(c, "p2p_session", "reconcile-messages", s.done());
    }
    // An ack 100000 ticks ahead of anything sent.
    let mut s = B::default();
    s.u8(0x08);
    for k in 0..30 {
        msg(&mut s, 0x00, 1, (k == 10).then_some(100_010));
        frame(&mut s, 1);
    }
    put(c, "p2p_session", "regress-ack-from-the-future", s.done());
    // Found by fuzzing: a peer proposes its player disconnected from a tick long
    // confirmed (35 back): the session rolls back past its state ring, and a save it
    // asks for is overwritten by a later one of the same batch (confirm_save refuses it).
    let mut s = B::default();
    s.u8(0x08);
    for _ in 0..40 {
        msg(&mut s, 0x00, 1, None);
        frame(&mut s, 1);
    }
    s.u8(0x00).u8(0x11).near(1).near(0).near(0).u8(0).near(0).u8(0).u8(1).u8(1).near(-35).u8(0);
    frame(&mut s, 3);
    put(c, "p2p_session", "regress-disconnect-before-confirmed", s.done());

    // spectator: spectate messages from tick 0, and a snapshot mid-match.
    let spectate = |s: &mut B, first: i8| {
        s.u8(0x00).u8(0x11).near(first + 8).near(0).near(first).u8(0).near(first).u8(8);
        s.bytes(&[3; 48]).u8(0).u8(0);
    };
    let mut s = B::default();
    for k in 0..10 {
        spectate(&mut s, 0);
        s.u8(0x03).u16(170).u8(k % 4);
    }
    put(c, "spectator", "from-the-start", s.done());
    let mut s = B::default();
    s.u8(0x02).near(100).blob(b"snapshot");
    for _ in 0..10 {
        spectate(&mut s, 0);
        s.u8(0x03).u16(170).u8(1);
    }
    put(c, "spectator", "snapshot", s.done());
    // Found by fuzzing: a snapshot at the last tick numbers, then inputs counted past it.
    let mut s = B::default();
    s.u8(0x02).any(u32::MAX - 3).blob(b"snapshot");
    for _ in 0..3 {
        spectate(&mut s, 0);
        s.u8(0x03).u16(170).u8(3);
    }
    put(c, "spectator", "regress-snapshot-at-the-last-tick", s.done());
}

/// `tick_stream`: the ring (an index), the start tick, the plan, then operations.
fn tick_stream(c: &mut Vec<Entry>) {
    // The plan: window (0: none, 2: a u16), resend (0: never, 1: after u16 × 100 µs),
    // copies, copies of a resend.
    let plan = |s: &mut B, window: Option<u16>, resend: Option<u16>, copies: u8, resend_copies: u8| {
        match window {
            None => s.u8(0),
            Some(w) => s.u8(2).u16(w),
        };
        match resend {
            None => s.u8(0),
            Some(r) => s.u8(1).u16(r),
        };
        s.u8(copies).u8(resend_copies);
    };
    let form = |s: &mut B, n: u8| {
        s.u8(0).u8(n);
    };
    // Time: `d` × 100 µs.
    let wait = |s: &mut B, d: u16| {
        s.u8(1).u16(d).u8(1);
    };
    let take = |s: &mut B| {
        s.u8(6).u8(255);
    };
    let ack = |s: &mut B, p2p: bool| {
        s.u8(7).u8(p2p as u8);
    };
    let set = |s: &mut B, send: u64, lose: u64| {
        s.u8(4).u64(send).u64(lose);
    };
    let run = |s: &mut B, room: u8, late: u16, lose: u64| {
        s.u8(5).u8(room).u16(late).u8(1).u64(lose);
    };
    // The relay's steps: a ring of 256, a window of 64, two copies, resends after
    // 300 ms; three steps an update, one in five datagrams lost.
    let mut s = B::default();
    s.u8(5).near(0);
    plan(&mut s, Some(64), Some(3_000), 2, 2);
    for i in 0..60 {
        form(&mut s, 3);
        wait(&mut s, 500);
        set(&mut s, u64::MAX, 0x1084_2108_4210_8421 << (i % 5));
        take(&mut s);
        if i % 2 == 1 {
            ack(&mut s, false);
        }
    }
    put(c, "tick_stream", "relay-steps", s.done());
    // A relay client's inputs: the newest copies × send interval ticks, never resent,
    // with the server's cumulative ack.
    let mut s = B::default();
    s.u8(3).near(0);
    plan(&mut s, None, None, 2, 0);
    for i in 0..60 {
        form(&mut s, 2);
        s.u8(3).u8(1).u8(4);
        wait(&mut s, 333);
        run(&mut s, 255, 0, 0x8888_8888_8888_8888 >> (i % 4));
        take(&mut s);
        ack(&mut s, false);
    }
    put(c, "tick_stream", "relay-inputs", s.done());
    // P2P inputs: 8 messages each, then a refresh every 50 ms; a long round trip
    // (acks a few ticks late), and a burst of loss.
    let mut s = B::default();
    s.u8(5).near(0);
    plan(&mut s, None, Some(500), 8, 1);
    for i in 0..80 {
        form(&mut s, 1);
        wait(&mut s, 167);
        let lose = if (30..45).contains(&i) { u64::MAX } else { 0 };
        run(&mut s, 255, 1_000, lose);
        take(&mut s);
        if i % 6 == 5 {
            ack(&mut s, true);
        }
    }
    put(c, "tick_stream", "p2p-inputs", s.done());
    // Runs longer than a datagram carries: two ticks a message.
    let mut s = B::default();
    s.u8(5).near(0);
    plan(&mut s, None, Some(500), 8, 1);
    for i in 0..60 {
        form(&mut s, 1);
        wait(&mut s, 167);
        run(&mut s, 2, 1_000, if i % 3 == 0 { 1 } else { 0 });
        take(&mut s);
        if i % 4 == 3 {
            ack(&mut s, true);
        }
    }
    put(c, "tick_stream", "long-runs", s.done());
    // Lying receivers: acks and bitmaps far ahead and behind, a start near the end of
    // the tick range, a P2P ack lowered, a receiver told of ticks never sent.
    let mut s = B::default();
    s.u8(4).any(u32::MAX - 300);
    plan(&mut s, Some(40), Some(100), 3, 1);
    for i in 0..20u8 {
        form(&mut s, 20);
        set(&mut s, u64::MAX, 0);
        s.u8(8).any(u32::MAX).blob(&[0xff; 40]).u8(i & 1);
        s.u8(8).near(-100).blob(&[0x55; 8]).u8(0);
        s.u8(9).near(-5);
        s.u8(10).near(i as i8).u8(1);
        take(&mut s);
        ack(&mut s, i % 2 == 0);
        wait(&mut s, 2_000);
        run(&mut s, 7, 50, 0);
    }
    s.u8(11).any(u32::MAX - 2);
    form(&mut s, 255);
    set(&mut s, u64::MAX, 0);
    run(&mut s, 255, 0, 0);
    put(c, "tick_stream", "lying-receiver", s.done());
}
