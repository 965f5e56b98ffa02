//! The encrypted handshake: a server endpoint that admits match secrets or connect
//! tokens, a real client endpoint over a hostile link, and an on-path attacker.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::Input;
use super::decoders::{PID, patch_prefix};
use super::endpoint::message;
use super::relay::reason;
use tickwire_proto::fuzzing;
use tickwire_proto::token::{self, ConnectToken, SEALED_PRIVATE_SIZE, TOKEN_NONCE_SIZE, TokenParams};
use tickwire_proto::wire::{
    self, Cipher, CipherOffer, ConnectResponse, MAX_DATAGRAM_SIZE, Packet, SecurityMode, TAG_SIZE, TokenPart,
    decode_packet,
};
use tickwire_proto::{
    Admission, Binding, CHANNEL_RELIABLE, CHANNEL_SEQUENCED, CHANNEL_UNRELIABLE, Endpoint, EndpointConfig, KEY_SIZE,
    Micros, NetEvent as Event, PacketProtection, PeerId, Presented, Secret, Security, TokenAdmission,
};

const MAX_OPS: usize = 2048;
/// The most datagrams in flight; beyond, the oldest is lost.
const LINK_CAPACITY: usize = 256;

const SERVER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)), 5000);
/// Another address of the server's (a token may name it).
const ELSEWHERE: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 9, 9, 9)), 5000);
const CLIENT: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 2, 2)), 6000);

/// The attacker's source addresses: 0 spoofs the client's.
const SOURCES: [SocketAddr; 3] = [
    CLIENT,
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 3, 3)), 7000),
    SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 7001),
];

/// A client's proof of `psk`, computed as `transport::crypto::proof` does (a copy: that
/// module is private; [`Harness::sniff`] checks that the two agree on every genuine one).
/// A response with a connect token binds the server address dialled: always `SERVER`.
fn proof(psk: &[u8; KEY_SIZE], r: &ConnectResponse) -> [u8; 16] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(psk).expect("HMAC takes any key length");
    mac.update(b"tickwire proof");
    mac.update(&PID.to_le_bytes());
    mac.update(&r.client_salt.to_le_bytes());
    mac.update(&r.cookie_time.to_le_bytes());
    mac.update(&r.cookie_mac.to_le_bytes());
    mac.update(&[r.security as u8]);
    mac.update(&r.client_public);
    if r.token.is_some() {
        let mut a = [0u8; 19];
        a[0] = 4;
        a[1..5].copy_from_slice(&[10, 0, 1, 1]);
        a[17..].copy_from_slice(&SERVER.port().to_le_bytes());
        mac.update(&a);
    }
    if let Some(b) = r.binding {
        mac.update(&[1]);
        mac.update(&b.initiator.to_le_bytes());
        mac.update(&b.responder.to_le_bytes());
    }
    mac.update(&[r.ciphers.bits()]);
    mac.finalize().into_bytes()[..16].try_into().expect("16 bytes")
}

/// What a datagram is: the bytes a real endpoint sent, from its address (maybe late or
/// twice); those truncated, flipped or sent from another address; or the attacker's,
/// `rightful` if they prove a key (and show a token) the server's configuration admits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Origin {
    Genuine,
    Tampered,
    Forged { rightful: bool, psk: [u8; KEY_SIZE], token: Option<[u8; TOKEN_NONCE_SIZE]> },
}

/// A forged datagram that proves nothing.
const FORGED: Origin = Origin::Forged { rightful: false, psk: [0; KEY_SIZE], token: None };

/// What the attacker saw: the last challenge (salt, cookie) to each of its addresses; the
/// client's salt and public key; the last Accepted to the client (client salt, server
/// salt, public key, tag); the session salt, the next sequence number each way.
#[derive(Default, Clone, Copy)]
struct Sniffed {
    cookie: [(u64, u64, u64); 3],
    client_salt: u64,
    client_public: [u8; KEY_SIZE],
    accepted: (u64, u64, [u8; KEY_SIZE], Cipher, [u8; TAG_SIZE]),
    salt: u32,
    seq: [u16; 2],
}

/// Addresses of the server's connections (all established: it makes one only when a
/// handshake completes).
fn established(server: &Endpoint) -> BTreeSet<SocketAddr> {
    server.peers().filter_map(|p| server.peer_addr(p)).collect()
}

struct Harness {
    server: Endpoint,
    client: Endpoint,
    /// The tokens minted with the server's key for one of its public addresses.
    good_tokens: Vec<ConnectToken>,
    /// The Unix time the server was told at its time 0.
    unix_secs_at_zero: u64,
    client_psk: [u8; KEY_SIZE],
    client_token: Option<ConnectToken>,
    client_peer: Option<PeerId>,
    client_connected: bool,
    /// The keys whose proof opened a server connection at the client's address.
    admitted_at_client: Vec<[u8; KEY_SIZE]>,
    /// Each attacker address's own token, and the attacker's public key.
    forger_tokens: [ConnectToken; 3],
    forger_public: [u8; KEY_SIZE],
    sniffed: Sniffed,
    /// In flight: (to the server, bytes, origin).
    link: VecDeque<(bool, Vec<u8>, Origin)>,
    /// Server connections: address and token nonce.
    server_live: BTreeMap<PeerId, (SocketAddr, Option<[u8; TOKEN_NONCE_SIZE]>)>,
    /// Each way (0: to the server): messages sent, indices delivered, last reliable one.
    sent: [u32; 2],
    delivered: [BTreeSet<u32>; 2],
    last_reliable: [Option<u32>; 2],
}

impl Harness {
    /// The model: whether the server's configuration admits a proof of `psk` showing
    /// `token` at `now` (a good token, unexpired, proving its own key, naming the
    /// address the proof binds, `SERVER`, which must be one of the server's).
    fn admits(&self, now: Micros, psk: &[u8; KEY_SIZE], token: Option<&ConnectToken>) -> bool {
        match self.admission() {
            Admission::Secrets { players, spectators } => {
                let players = players.as_ref().map_or([0; KEY_SIZE], |s| s.0);
                token.is_none() && (*psk == players || spectators.as_ref().is_some_and(|s| s.0 == *psk))
            }
            Admission::Tokens(t) => token.is_some_and(|part| {
                part.expires > self.unix_secs_at_zero + now / 1_000_000
                    && self.good_tokens.iter().any(|g| g == part && g.key.0 == *psk)
                    && t.public_addresses.contains(&SERVER)
                    && part.addresses.contains(&SERVER)
            }),
        }
    }

    /// Learns what an on-path attacker would from a datagram a real endpoint sent.
    fn sniff(&mut self, to: SocketAddr, d: &[u8]) {
        let s = &mut self.sniffed;
        match decode_packet(d, PID) {
            Ok(Packet::ConnectRequest { client_salt, .. }) => s.client_salt = client_salt,
            Ok(Packet::ConnectResponse(r)) => {
                assert_eq!(r.proof, proof(&self.client_psk, &r), "the harness's proof is the transport's");
                (s.client_salt, s.client_public) = (r.client_salt, r.client_public);
            }
            Ok(Packet::Challenge { client_salt, cookie_time, cookie_mac }) => {
                if let Some(i) = SOURCES.iter().position(|&a| a == to) {
                    s.cookie[i] = (client_salt, cookie_time, cookie_mac);
                }
            }
            Ok(Packet::Accepted { client_salt, server_salt, server_public, cipher, confirm }) if to == CLIENT => {
                s.accepted = (client_salt, server_salt, server_public, cipher, confirm);
            }
            Ok(
                Packet::Payload { header: wire::PayloadHeader { salt, seq, .. }, .. }
                | Packet::Disconnect { salt, seq, .. },
            ) if to == CLIENT || to == SERVER => {
                s.salt = salt;
                s.seq[(to == CLIENT) as usize] = seq.wrapping_add(1);
            }
            _ => {}
        }
    }

    fn admission(&self) -> &Admission {
        let Security::Encrypted { admission, .. } = &self.server.config().security else { unreachable!() };
        admission
    }

    /// Moves what both endpoints sent onto the link (the attacker reads it all),
    /// checking that the server writes only to `privileged` addresses, or replies to
    /// `reply_to = (from, len)` adding up to no more than `len` bytes.
    fn collect(&mut self, privileged: &BTreeSet<SocketAddr>, reply_to: Option<(SocketAddr, usize)>) {
        let (mut replied, mut out, mut buf) = (0, Vec::new(), [0; MAX_DATAGRAM_SIZE]);
        while let Some((to, n)) = self.server.poll_transmit(&mut buf) {
            if !privileged.contains(&to) {
                let Some((from, len)) = reply_to.filter(|r| r.0 == to) else {
                    panic!("the server sent {n} bytes to {to}, which holds no connection and did not write");
                };
                replied += n;
                assert!(replied <= len, "{replied} bytes answered a {len}-byte datagram from unproven {from}");
            }
            out.push((to, buf[..n].to_vec()));
        }
        while let Some((to, n)) = self.client.poll_transmit(&mut buf) {
            assert_eq!(to, SERVER, "the client wrote to a stranger");
            out.push((to, buf[..n].to_vec()));
        }
        for (to, d) in out {
            self.sniff(to, &d);
            if to == SERVER || to == CLIENT {
                if self.link.len() == LINK_CAPACITY {
                    self.link.pop_front();
                }
                self.link.push_back((to == SERVER, d, Origin::Genuine));
            }
        }
    }

    /// A datagram to the server or the client, from `from` (by default the other end).
    fn datagram(&mut self, now: Micros, to_server: bool, from: Option<SocketAddr>, d: &[u8], origin: Origin) {
        let from = from.unwrap_or(if to_server { CLIENT } else { SERVER });
        let established = established(&self.server);
        if to_server {
            self.server.handle_datagram(now, from, d);
            self.collect(&established, (!established.contains(&from)).then_some((from, d.len())));
            self.server_events(now, Some((from, origin)));
        } else {
            self.client.handle_datagram(now, from, d);
            self.collect(&established, None);
            self.client_events(Some(origin));
        }
    }

    /// Runs both endpoints' timers (`timers`) and flushes them; `established`: the
    /// server's connections before the operation.
    fn tick(&mut self, now: Micros, timers: bool, established: BTreeSet<SocketAddr>) {
        for ep in [&mut self.server, &mut self.client] {
            if timers {
                ep.update(now);
            }
            ep.flush(now);
        }
        self.collect(&established, None);
        self.server_events(now, None);
        self.client_events(None);
    }

    /// The server's events after a datagram `(from, origin)`, or timers (`None`).
    fn server_events(&mut self, now: Micros, cause: Option<(SocketAddr, Origin)>) {
        while let Some(e) = self.server.poll_event() {
            match e {
                Event::Connected { peer, addr, .. } => {
                    let Some((from, origin)) = cause else { panic!("server peer {peer} connected on a timer") };
                    assert_eq!(addr, from, "server peer {peer} connected for another address than the sender's");
                    let (psk, token) = match origin {
                        Origin::Genuine => {
                            let (psk, part) = (self.client_psk, self.client_token.as_ref());
                            assert!(self.admits(now, &psk, part), "a client without the right credential connected");
                            (psk, part.map(|p| p.nonce))
                        }
                        Origin::Forged { rightful: true, psk, token } => (psk, token),
                        _ => panic!("a {origin:?} datagram from {from} opened server connection {peer}"),
                    };
                    if from == CLIENT {
                        self.admitted_at_client.push(psk);
                    }
                    if let (Admission::Tokens(_), Some(nonce)) = (self.admission(), token) {
                        let twice = self.server_live.values().any(|l| l.1 == Some(nonce));
                        assert!(!twice, "two live connections hold one connect token");
                    }
                    assert!(self.server_live.insert(peer, (addr, token)).is_none(), "peer {peer} connected twice");
                    let (n, max) = (self.server.endpoint_stats().connections, self.server.config().max_incoming);
                    assert!(n <= max as u64, "{n} connections, max_incoming {max}");
                }
                Event::Disconnected { peer, .. } => {
                    if let Some((from, o @ (Origin::Tampered | Origin::Forged { rightful: false, .. }))) = cause {
                        panic!("a {o:?} datagram from {from} closed server connection {peer}");
                    }
                    assert!(self.server_live.remove(&peer).is_some(), "server peer {peer} left, never connected");
                }
                Event::Message { peer, channel, data } => {
                    let live = self.server_live.get(&peer).expect("a message from a peer that is not connected");
                    assert_eq!(live.0, CLIENT, "a message on a connection only the attacker could have opened");
                    self.check_message(0, channel, &data);
                    self.server.recycle(data);
                }
            }
        }
    }

    /// The client's events after a datagram of `origin`, or the application or timers.
    fn client_events(&mut self, origin: Option<Origin>) {
        while let Some(e) = self.client.poll_event() {
            match e {
                Event::Connected { .. } => {
                    assert_eq!(origin, Some(Origin::Genuine), "the client connected on a {origin:?} datagram");
                    let proven = self.admitted_at_client.contains(&self.client_psk);
                    assert!(proven, "the client connected, the server never admitted a proof of its key");
                    self.client_connected = true;
                }
                Event::Disconnected { .. } => {
                    // Nothing the attacker sends ends the client's handshake or its
                    // connection: an unauthenticated denial is advisory.
                    if let Some(o @ (Origin::Tampered | Origin::Forged { .. })) = origin {
                        panic!("a {o:?} datagram ended the client's handshake or connection");
                    }
                    (self.client_connected, self.client_peer) = (false, None);
                }
                Event::Message { channel, data, .. } => {
                    assert!(self.client_connected, "a message before the client connected");
                    self.check_message(1, channel, &data);
                    self.client.recycle(data);
                }
            }
        }
    }

    /// A message delivered one way (0: to the server) is one the other side sent, intact,
    /// delivered once (a replay delivers nothing); reliable ones in order.
    fn check_message(&mut self, way: usize, channel: u8, data: &[u8]) {
        assert!(data.len() >= 5 && data[4] as usize == way, "way {way}: a message nobody sent: {data:?}");
        let idx = u32::from_le_bytes(data[..4].try_into().expect("4 bytes"));
        assert!(idx < self.sent[way], "way {way}: message {idx} never sent");
        let mut sent = Vec::new();
        message(way, idx, data.len(), &mut sent);
        assert!(data == sent, "way {way}: message {idx} altered");
        assert!(self.delivered[way].insert(idx), "way {way}: message {idx} delivered twice");
        if channel == CHANNEL_RELIABLE {
            let last = self.last_reliable[way].replace(idx);
            assert!(last.is_none_or(|l| idx > l), "way {way}: reliable {idx} after {last:?}");
        }
    }
}

/// An encrypted server (secrets, open or tokens; 1 to 3 slots) faces a real client with
/// the right credential, a wrong one or none over a link that drops, duplicates
/// (replays), holds back, truncates, flips and re-sources datagrams, and an on-path
/// attacker that forges requests, connect responses (any or computed keys, proofs and
/// token parts), Accepteds, Denieds and tagged Disconnects from three addresses, one
/// the client's. A forgery proving a credential the server admits is rightful.
///
/// Oracles: a server connection opens only on the client's unaltered response while
/// `Harness::admits` its credential, or on a rightful forgery; the client connects
/// only on a genuine Accepted once the server admitted its key; nothing tampered or
/// unrightful closes a server connection or the client's; a delivered message is one
/// the other side sent, intact, once, reliable ones in order; the server holds at most
/// `max_incoming` connections, two never on one token, and writes only to them or to a
/// datagram's sender, no more bytes in all than that datagram.
pub fn handshake(data: &[u8]) {
    let mut inp = Input::new(data);
    let now: Micros = 1_000_000;
    // Bit 0: tokens; 1-2: slots; 3-4: per IP; 5-6: public addresses; 7: attacker's tokens good.
    let setup = inp.u8();
    let max_incoming = 1 + (setup >> 1 & 3) as u32 % 3;
    let max_incoming_per_ip = [0, 1, 8][(setup >> 3 & 3) as usize % 3];
    let unix_secs_at_zero = 1_700_000_000 + inp.u16() as u64;
    // Keys from one byte each (0: the all-zero key of an open endpoint).
    let (k, wrong, cred, r) = (inp.u8(), inp.u8(), inp.u8(), inp.u8());
    let (created, expires) = (unix_secs_at_zero - 60, unix_secs_at_zero + 2 + inp.u8() as u64 % 32);
    let admission = if setup & 1 == 0 {
        let players = (k & 1 == 1).then_some(Secret([k; KEY_SIZE]));
        let spectators = (k & 3 == 3).then_some(Secret([k ^ 0x5a; KEY_SIZE]));
        Admission::Secrets { players, spectators }
    } else {
        let public_addresses =
            [&[SERVER][..], &[ELSEWHERE], &[ELSEWHERE, SERVER]][(setup >> 5 & 3) as usize % 3].to_vec();
        Admission::Tokens(TokenAdmission { key: Secret([k; KEY_SIZE]), public_addresses })
    };
    // Tokens name the server's first public address (its own in secrets mode).
    let public = if let Admission::Tokens(t) = &admission { t.public_addresses[..1].to_vec() } else { vec![SERVER] };
    // A token minted with the key `[key; 32]` for `addrs`, from one byte of randomness.
    let mut good_tokens = Vec::new();
    let mut mint = |key, addrs: &[SocketAddr], expires, r: u8| {
        let random: [u8; TOKEN_NONCE_SIZE + KEY_SIZE] = std::array::from_fn(|i| (r as usize * 7 + i * 13) as u8);
        let (client_id, timeout_secs, addresses, user_data) = (r as u64, r as u32 % 4, addrs.to_vec(), vec![r; 8]);
        let p = TokenParams { protocol_id: PID, client_id, created, expires, timeout_secs, addresses, user_data };
        let bytes = token::mint(&Secret([key; KEY_SIZE]), &p, &random).expect("valid token parameters");
        let t = ConnectToken::decode(&bytes).expect("a minted token reads back");
        let for_us =
            |a: &TokenAdmission| a.key.0 == [key; KEY_SIZE] && addrs.iter().any(|x| a.public_addresses.contains(x));
        if matches!(&admission, Admission::Tokens(a) if for_us(a)) {
            good_tokens.push(t.clone());
        }
        t
    };
    // The client's credential: the right one, a wrong one, none, or the other kind.
    let presented = match (cred % 4, &admission) {
        (0, Admission::Secrets { players: Some(p), spectators }) => {
            Presented::Secret(spectators.as_ref().filter(|_| cred & 4 != 0).unwrap_or(p).clone())
        }
        (0, Admission::Secrets { players: None, .. }) | (2, _) => Presented::Open,
        (1, _) | (3, Admission::Tokens(_)) => Presented::Secret(Secret([wrong; KEY_SIZE])),
        // A token: good, or minted with another key, for another address, or expired.
        _ => Presented::Token(Box::new(match cred >> 2 & 3 {
            0 => mint(k, &public, expires, r),
            1 => mint(wrong, &public, expires, r),
            2 => mint(k, &[SocketAddr::new(ELSEWHERE.ip(), 1)], expires, r),
            _ => mint(k, &public, unix_secs_at_zero, r),
        })),
    };
    let client_psk = *fuzzing::presented_key(&presented);
    let client_token = if let Presented::Token(t) = &presented { Some((**t).clone()) } else { None };
    // The attacker's own tokens: good ones when the input says so (other players).
    let forger_tokens =
        std::array::from_fn(|i| mint(if setup & 0x80 != 0 { k } else { wrong }, &public, expires, 200 + i as u8));
    // Which ends run AES-256-GCM in hardware: both, one or neither.
    let config = |seed, max_incoming, admission, presented, aes_gcm| EndpointConfig {
        protocol_id: PID,
        max_incoming,
        max_incoming_per_ip,
        seed,
        security: Security::Encrypted { admission, presented, packets: PacketProtection::Aead },
        aes_gcm,
        ..EndpointConfig::default()
    };
    let server = config(1, max_incoming, admission, Presented::Open, cred & 0x10 != 0);
    let client = config(2, 0, Admission::default(), presented, cred & 0x20 != 0);
    // An all-zero connect key or shown secret is refused at configuration:
    // nothing to run.
    let (Ok(mut server), Ok(client)) = (Endpoint::new(server, now), Endpoint::new(client, now)) else {
        assert!(k == 0 || wrong == 0, "a config without a zero key was refused");
        return;
    };
    server.set_unix_time(0, Some(unix_secs_at_zero));
    let mut h = Harness {
        server,
        client,
        good_tokens,
        unix_secs_at_zero,
        client_psk,
        client_token,
        client_peer: None,
        client_connected: false,
        admitted_at_client: Vec::new(),
        forger_tokens,
        forger_public: x25519_dalek::x25519([0x42; KEY_SIZE], x25519_dalek::X25519_BASEPOINT_BYTES),
        sniffed: Sniffed::default(),
        link: VecDeque::new(),
        server_live: BTreeMap::new(),
        sent: [0; 2],
        delivered: Default::default(),
        last_reliable: [None; 2],
    };
    h.client_peer = h.client.connect(now, SERVER).ok();
    h.collect(&BTreeSet::new(), None);
    run(&mut h, &mut inp, now);
}

/// The operations: the op byte is `detail << 4 | kind`.
fn run(h: &mut Harness, inp: &mut Input<'_>, mut now: Micros) {
    let (mut d, mut msg) = (Vec::with_capacity(MAX_DATAGRAM_SIZE), Vec::new());
    for _ in 0..MAX_OPS {
        let Some(op) = (!inp.is_empty()).then(|| inp.u8()) else { break };
        let (detail, a) = (op >> 4, (op >> 4) as usize % 3);
        d.clear();
        match op & 0x0f {
            // The next datagrams on the link arrive, in order.
            0 => {
                for _ in 0..=detail {
                    let Some((to_server, d, origin)) = h.link.pop_front() else { break };
                    h.datagram(now, to_server, None, &d, origin);
                }
            }
            // One datagram in flight is lost, duplicated (the copy stays in flight: a
            // replay when it arrives), held back, truncated, flipped, or delivered to
            // the server from an attacker address.
            1 => {
                if h.link.is_empty() {
                    continue;
                }
                let i = inp.u16() as usize % h.link.len();
                let (to_server, mut d, mut origin) = h.link.remove(i).expect("in range");
                let mut from = None;
                match detail % 8 {
                    0 => continue,
                    1 => h.link.push_back((to_server, d.clone(), origin)),
                    2 => {
                        h.link.push_back((to_server, d, origin));
                        continue;
                    }
                    3 => d.truncate(inp.u16() as usize % d.len().max(1)),
                    4 if !d.is_empty() => {
                        let at = inp.u16() as usize % d.len();
                        d[at] ^= inp.u8().max(1);
                    }
                    5 if to_server => from = Some(SOURCES[1 + (detail >> 3) as usize]),
                    _ => {}
                }
                if from.is_some() || matches!(detail % 8, 3 | 4) {
                    origin = Origin::Tampered;
                }
                h.datagram(now, to_server, from, &d, origin);
            }
            3 => {
                now += inp.u16() as Micros * 100;
                h.tick(now, true, established(&h.server));
            }
            // The application sends: the client (4), or the server (5) to its connection
            // at the client's address.
            4 | 5 => {
                let channel = [CHANNEL_UNRELIABLE, CHANNEL_SEQUENCED, CHANNEL_RELIABLE][detail as usize % 3];
                let len = 5 + inp.u16() as usize % if channel == CHANNEL_RELIABLE { 3000 } else { 1000 };
                let way = (op & 1) as usize;
                let to_client = h.server_live.iter().find(|l| l.1.0 == CLIENT).map(|l| *l.0);
                let peer = if way == 0 { h.client_peer } else { to_client };
                message(way, h.sent[way], len, &mut msg);
                let ep = if way == 0 { &mut h.client } else { &mut h.server };
                if peer.is_some_and(|p| ep.send(p, channel, &msg).is_ok()) {
                    h.sent[way] += 1;
                }
                h.tick(now, false, established(&h.server));
            }
            // The attacker asks for a cookie, with the client's salt or its own.
            6 => {
                let salt = if detail & 4 != 0 { h.sniffed.client_salt } else { inp.u64() };
                // The server's mode, or one it refuses (plaintext, carrier protection).
                let mode = match (detail & 8 != 0, detail & 1 != 0) {
                    (false, _) => SecurityMode::Encrypted,
                    (true, false) => SecurityMode::InsecurePlaintext,
                    (true, true) => SecurityMode::Carrier,
                };
                wire::encode_connect_request(&mut d, PID, salt, mode);
                h.datagram(now, true, Some(SOURCES[a]), &d, FORGED);
            }
            7 => {
                let origin = forge_response(h, inp, now, a, &mut d);
                h.datagram(now, true, Some(SOURCES[a]), &d, origin);
            }
            // An Accepted for the client's salt (or any), from the server's address or
            // another: the genuine one's fields or the attacker's.
            8 => {
                let s = h.sniffed;
                let salt = if detail & 1 == 0 { s.client_salt } else { inp.u64() };
                let server_salt = if detail & 2 == 0 { s.accepted.1 } else { inp.u64() };
                let public = match inp.u8() % 4 {
                    0 => s.accepted.2,
                    1 => [0; KEY_SIZE],
                    2 => h.forger_public,
                    _ => inp.array(),
                };
                let confirm = if detail & 4 == 0 { s.accepted.4 } else { inp.array() };
                // The server's pick, or the other cipher (a downgrade, or an upgrade
                // the client did not offer).
                let cipher = match (detail & 16 == 0, s.accepted.3) {
                    (true, c) => c,
                    (false, Cipher::Aes256Gcm) => Cipher::ChaCha20Poly1305,
                    (false, Cipher::ChaCha20Poly1305) => Cipher::Aes256Gcm,
                };
                wire::encode_accepted_head(&mut d, PID, salt, server_salt, &public, cipher);
                d.extend_from_slice(&confirm);
                let from = (detail & 8 != 0).then_some(ELSEWHERE);
                // Every field the genuine one's, from the server: a replay of it.
                let replay = (salt, server_salt, public, cipher, confirm) == s.accepted && from.is_none();
                h.datagram(now, false, from, &d, if replay { Origin::Genuine } else { FORGED });
            }
            // A Denied to the client; a Disconnect with the session salt and any tag (or
            // none), to the server from the client's address, or to the client.
            9 if detail & 8 != 0 => {
                let tag: Option<[u8; TAG_SIZE]> = (detail & 16 != 0).then(|| inp.array());
                wire::encode_denied(&mut d, PID, h.sniffed.client_salt, reason(inp.u8()), tag.as_ref());
                h.datagram(now, false, None, &d, FORGED);
            }
            9 => {
                let to_server = detail & 1 == 0;
                let seq = if detail & 2 == 0 { h.sniffed.seq[!to_server as usize] } else { inp.u16() };
                wire::encode_disconnect(&mut d, PID, h.sniffed.salt, seq, reason(inp.u8()));
                if detail & 4 == 0 {
                    d.extend_from_slice(&inp.array::<TAG_SIZE>());
                }
                h.datagram(now, to_server, None, &d, FORGED);
            }
            // The client leaves, or dials again; or the server kicks the client.
            10 => {
                let before = established(&h.server);
                match (h.client_peer, h.server_live.iter().find(|l| l.1.0 == CLIENT)) {
                    (_, Some((&peer, _))) if detail & 1 == 1 => h.server.disconnect(now, peer),
                    (Some(peer), _) => h.client.disconnect(now, peer),
                    (None, _) => h.client_peer = h.client.connect(now, SERVER).ok(),
                }
                h.tick(now, false, before);
            }
            // Anything at all from an attacker address, with our prefix.
            _ => {
                let len = inp.u16() as usize % (MAX_DATAGRAM_SIZE + 8);
                d.extend_from_slice(inp.bytes(len));
                patch_prefix(&mut d);
                h.datagram(now, true, Some(SOURCES[a]), &d, FORGED);
            }
        }
    }
}

/// A connect response from attacker address `a`: a salt and cookie (seen or any), a
/// public key, a token part and a proof (computed with a key it holds, or any).
/// Rightful when the model admits the key it proved, with that token part.
fn forge_response(h: &Harness, inp: &mut Input<'_>, now: Micros, a: usize, d: &mut Vec<u8>) -> Origin {
    let sel = inp.u8();
    let (salt, t, m) = h.sniffed.cookie[a];
    let (client_salt, cookie_time, cookie_mac) = match sel & 3 {
        0 => (salt, t, m),
        1 => (h.sniffed.client_salt, t, m),
        2 => (inp.u64(), t, m),
        _ => (inp.u64(), inp.u64(), inp.u64()),
    };
    let client_public = match sel >> 2 & 3 {
        0 => h.forger_public,
        1 => h.sniffed.client_public,
        2 => [sel >> 4 & 1; KEY_SIZE], // low order: all zero, or all one
        _ => inp.array(),
    };
    let own = &h.forger_tokens[a];
    let mut any = own.clone();
    let token = match inp.u8() % 4 {
        0 => None,
        1 => Some(own),
        2 => h.client_token.as_ref(), // as the client sent it
        _ => {
            let b = inp.blob();
            *any.sealed = [0; SEALED_PRIVATE_SIZE];
            any.sealed[..b.len()].copy_from_slice(b);
            (any.expires, any.nonce) = (inp.u64(), inp.array());
            Some(&any)
        }
    };
    let mut r = ConnectResponse {
        client_salt,
        cookie_time,
        cookie_mac,
        // The server's mode (AEAD), or plaintext or carrier protection, which it refuses.
        security: match (sel & 0x40 != 0, sel & 0x80 != 0) {
            (false, _) => SecurityMode::Encrypted,
            (true, false) => SecurityMode::InsecurePlaintext,
            (true, true) => SecurityMode::Carrier,
        },
        client_public,
        proof: [0; 16],
        token: token.map(|p| TokenPart { expires: p.expires, nonce: &p.nonce, sealed: &p.sealed }),
        // The server has no id of its own: a bound handshake is never for it.
        binding: (sel & 0x20 != 0).then(|| Binding { initiator: inp.u8() as u32, responder: inp.u8() as u32 }),
        ciphers: CipherOffer::new(inp.bool()),
    };
    let secret = |s: &Option<Secret>| s.as_ref().map(|s| s.0);
    let psk = match (inp.u8() % 6, h.admission()) {
        (0, _) => Some([0; KEY_SIZE]),
        (1, Admission::Secrets { players, .. }) => secret(players),
        (2, Admission::Secrets { spectators, .. }) => secret(spectators),
        (3, _) => Some(own.key.0),
        (4, _) => Some([inp.u8(); KEY_SIZE]),
        _ => None,
    };
    let origin = match psk {
        Some(psk) => {
            r.proof = proof(&psk, &r);
            let rightful = r.security == SecurityMode::Encrypted && r.binding.is_none() && h.admits(now, &psk, token);
            Origin::Forged { rightful, psk, token: token.map(|p| p.nonce) }
        }
        None => {
            r.proof = inp.array();
            FORGED
        }
    };
    wire::encode_connect_response(d, PID, &r);
    origin
}
