//! What an on-path attacker can do to a handshake with what it sees (issue 30,
//! findings 5 and 6). Before: one forged `Denied` ended any handshake with a reason of
//! the attacker's choice, one forged `Challenge` that arrived first poisoned the
//! cookie (the handshake timed out), and a connection "to" one server of a backend
//! could be redirected to another server of the same backend, which accepted it.

use std::net::SocketAddr;

use crate::support::hand_net::{HandNet, connected, encrypted, pid};
use tickwire_proto::token::{self, ConnectToken, TokenParams};
use tickwire_proto::wire::{self, Packet};
use tickwire_proto::{
    Admission, Binding, DisconnectReason, EndpointConfig, KEY_SIZE, NetEvent as Event, Presented, Secret,
    TokenAdmission,
};

const KEY: [u8; KEY_SIZE] = [0x3c; KEY_SIZE];
const T0: u64 = 1_700_000_000;

fn secret_server(max_incoming: u32) -> EndpointConfig {
    let admission = Admission::Secrets { players: Some(Secret([1; KEY_SIZE])), spectators: None };
    encrypted(admission, Presented::Open, max_incoming, 11)
}

fn secret_client(seed: u64) -> EndpointConfig {
    encrypted(Admission::default(), Presented::Secret(Secret([1; KEY_SIZE])), 0, seed)
}

fn client_salt(d: &[u8]) -> u64 {
    match wire::decode_packet(d, pid()) {
        Ok(Packet::ConnectRequest { client_salt, .. }) => client_salt,
        other => panic!("not a request: {other:?}"),
    }
}

/// A forged `Denied` that arrives before the server's answer, with each reason an
/// attacker might pick, no longer ends the handshake: the client still connects.
#[test]
fn a_forged_denial_does_not_end_a_handshake() {
    for reason in [DisconnectReason::SecurityMismatch, DisconnectReason::AuthFailed, DisconnectReason::ServerFull] {
        let mut net = HandNet::new();
        let s = net.add(secret_server(8));
        let c = net.add(secret_client(20));
        let (sa, ca) = (net.addr(s), net.addr(c));
        let now = net.now;
        let cp = net.ep(c).connect(now, sa).unwrap();
        let request = net.take(c).pop().unwrap().1;
        let salt = client_salt(&request);
        // The attacker saw the request and answers first, untagged and tagged (a tag it
        // cannot make).
        let mut d = Vec::new();
        wire::encode_denied(&mut d, pid(), salt, reason, None);
        net.inject(sa, c, &d);
        wire::encode_denied(&mut d, pid(), salt, reason, Some(&[0xAA; 16]));
        net.inject(sa, c, &d);
        assert_eq!(net.events(c), vec![], "{reason:?}: the handshake ended on a forged denial");
        assert_eq!(net.ep(c).endpoint_stats().unverified_denials, 2);
        net.inject(ca, s, &request);
        net.settle();
        assert!(connected(&mut net, c, cp), "{reason:?}: the genuine server's answer still connects");
        assert_eq!(net.ep(c).unverified_denial(cp), None);
    }
}

/// A forged `Challenge` (a cookie the server never made) that arrives first no longer
/// shuts the genuine one out: both are answered, in turn, and the genuine one connects
/// one resend interval later.
#[test]
fn a_forged_challenge_that_arrives_first_does_not_poison_the_handshake() {
    let mut net = HandNet::new();
    let s = net.add(secret_server(8));
    let c = net.add(secret_client(21));
    let (sa, ca) = (net.addr(s), net.addr(c));
    let now = net.now;
    let cp = net.ep(c).connect(now, sa).unwrap();
    let request = net.take(c).pop().unwrap().1;
    let mut d = Vec::new();
    wire::encode_challenge(&mut d, pid(), client_salt(&request), now, 0xDEAD_BEEF);
    net.inject(sa, c, &d);
    let poisoned = net.take(c);
    assert_eq!(poisoned.len(), 1, "the forged challenge was answered");
    net.inject(ca, s, &poisoned[0].1);
    assert!(net.take(s).is_empty(), "the server ignores a response to a cookie it never made");
    // The genuine exchange: its challenge is kept and answered at the next resend.
    net.inject(ca, s, &request);
    net.settle();
    net.now += EndpointConfig::default().handshake_retry_us;
    let now = net.now;
    net.ep(c).update(now);
    net.settle();
    assert!(connected(&mut net, c, cp), "the genuine challenge was answered too");
    assert!(net.ep(s).endpoint_stats().bad_cookie >= 1);
}

/// A refusal of a proof that held is tagged with the proven key: the client takes it
/// as fact at once (a full server), and a Denied with a wrong tag changes nothing.
#[test]
fn a_refusal_after_a_valid_proof_is_authenticated_and_final() {
    let mut net = HandNet::new();
    let s = net.add(secret_server(1));
    let first = net.add(secret_client(22));
    let fp = net.connect(first, s);
    assert!(connected(&mut net, first, fp));
    let c = net.add(secret_client(23));
    let cp = net.connect(c, s);
    assert_eq!(net.events(c), vec![Event::Disconnected { peer: cp, reason: DisconnectReason::ServerFull }]);
    assert_eq!(net.ep(c).endpoint_stats().unverified_denials, 0, "the refusal was authenticated");
    // A stranger without the secret: its refusal cannot be tagged (its proof did not
    // hold), so it is a hint only, and the handshake runs to its timeout.
    let stranger = net.add(encrypted(Admission::default(), Presented::Secret(Secret([9; KEY_SIZE])), 0, 24));
    let sp = net.connect(stranger, s);
    assert_eq!(net.events(stranger), vec![]);
    let unverified = DisconnectReason::DeniedUnverified;
    assert_eq!(net.time_out_handshakes(stranger), vec![Event::Disconnected { peer: sp, reason: unverified }]);
    assert_eq!(net.ep(stranger).unverified_denial(sp), Some(DisconnectReason::AuthFailed));
}

fn token_for(addresses: Vec<SocketAddr>, n: u8) -> Presented {
    let p = TokenParams {
        protocol_id: pid(),
        client_id: n as u64,
        created: T0 - 60,
        expires: T0 + 3600,
        timeout_secs: 0,
        addresses,
        user_data: vec![],
    };
    let bytes = token::mint(&Secret(KEY), &p, &[n; 56]).expect("mint");
    Presented::Token(Box::new(ConnectToken::decode(&bytes).expect("decode")))
}

fn token_server(net: &mut HandNet, public: SocketAddr, seed: u64) -> usize {
    let admission = Admission::Tokens(TokenAdmission { key: Secret(KEY), public_addresses: vec![public] });
    let s = net.add(encrypted(admission, Presented::Open, 8, seed));
    let now = net.now;
    net.ep(s).set_unix_time(now, Some(T0));
    s
}

/// Finding 6: a backend runs two servers with one key; a client's token names both.
/// The client dials server A; an attacker on the path redirects its handshake to
/// server B. B refuses it (the proof binds the address the client dialled), and no
/// connection comes up on either side. Dialled straight, B accepts the same token.
#[test]
fn a_handshake_redirected_to_another_server_of_the_backend_fails() {
    let mut net = HandNet::new();
    let a_addr = SocketAddr::from(([127, 0, 0, 1], 5000));
    let b_addr = SocketAddr::from(([127, 0, 0, 2], 5001));
    let a = token_server(&mut net, a_addr, 11);
    let b = token_server(&mut net, b_addr, 12);
    assert_eq!((net.addr(a), net.addr(b)), (a_addr, b_addr));
    let c = net.add(encrypted(Admission::default(), token_for(vec![a_addr, b_addr], 1), 0, 20));
    let ca = net.addr(c);
    let now = net.now;
    let cp = net.ep(c).connect(now, a_addr).unwrap();
    // Everything the client sends to A goes to B; B's answers come back as A's.
    for _ in 0..6 {
        for (_, d) in net.take(c) {
            net.inject(ca, b, &d);
        }
        for (_, d) in net.take(b) {
            net.inject(a_addr, c, &d);
        }
    }
    assert!(!net.ep(c).is_connected(cp), "the client was keyed with server B as if it were A");
    assert!(
        !net.events(b).iter().any(|e| matches!(e, Event::Connected { .. })),
        "server B took a handshake meant for A"
    );
    assert_eq!(net.ep(b).endpoint_stats().auth_refused, 1);
    // The same token, dialled at B itself, is good there.
    let c2 = net.add(encrypted(Admission::default(), token_for(vec![a_addr, b_addr], 2), 0, 21));
    let cp2 = net.connect(c2, b);
    assert!(connected(&mut net, c2, cp2));
}

/// Finding 6 with a match secret shared by every peer: A dials B, binding both ends
/// (player 0 to player 1); an attacker redirects the handshake to C, another holder of
/// the secret (player 2). C refuses it, since it is not player 1, and nobody connects;
/// before, A ended up keyed with C while it believed it talked to B. Dialled straight,
/// B accepts, and both sides learn the binding.
#[test]
fn a_bound_handshake_redirected_to_another_holder_of_the_secret_fails() {
    let mut net = HandNet::new();
    let a = net.add(secret_client(30));
    let b = net.add(secret_server(8));
    let c = net.add(secret_server(8));
    net.ep(b).set_local_id(Some(1));
    net.ep(c).set_local_id(Some(2));
    let (aa, ba) = (net.addr(a), net.addr(b));
    let to_b = Binding { initiator: 0, responder: 1 };
    let now = net.now;
    net.ep(a).connect_bound(now, ba, 78, Some(to_b)).unwrap();
    for _ in 0..6 {
        for (_, d) in net.take(a) {
            net.inject(aa, c, &d);
        }
        for (_, d) in net.take(c) {
            net.inject(ba, a, &d);
        }
    }
    assert!(!net.ep(a).is_connected(78), "A was keyed with C as if it were B");
    assert!(!net.events(c).iter().any(|e| matches!(e, Event::Connected { .. })), "C took a handshake meant for B");
    assert_eq!(net.ep(c).endpoint_stats().auth_refused, 1);
    // The same, dialled to B: connects, and both ends see who is who.
    let a2 = net.add(secret_client(31));
    let now = net.now;
    net.ep(a2).connect_bound(now, ba, 5, Some(to_b)).unwrap();
    net.settle();
    let ev = net.events(a2);
    assert!(matches!(ev[..], [Event::Connected { peer: 5, binding: Some(x), .. }] if x == to_b), "{ev:?}");
    let ev = net.events(b);
    assert!(matches!(ev[..], [Event::Connected { binding: Some(x), .. }] if x == to_b), "{ev:?}");
    // An unbound handshake still connects (spectators bind nothing), and says so.
    let a3 = net.add(secret_client(32));
    let p3 = net.connect(a3, b);
    assert!(matches!(net.events(a3)[..], [Event::Connected { peer, binding: None, .. }] if peer == p3));
}
