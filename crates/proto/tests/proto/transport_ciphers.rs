//! Which AEAD seals a connection's packets (issue 35): AES-256-GCM when both ends run
//! it in hardware (`EndpointConfig::aes_gcm`), ChaCha20-Poly1305 otherwise. The
//! client's offer is under its proof and the server's pick under its key
//! confirmation, so that nobody on the path can change either.

use crate::support::hand_net::{HandNet, connected, encrypted, messages, pid};
use tickwire_proto::wire::{self, Cipher, CipherOffer, Packet};
use tickwire_proto::{Admission, CHANNEL_UNRELIABLE, EndpointConfig, KEY_SIZE, Presented, Secret};

const S: usize = 0;
const C: usize = 1;

/// A server (node `S`) that admits holders of a match secret, and a client (node `C`)
/// that holds it; `aes`: whether each runs AES-256-GCM in hardware.
fn net(server_aes: bool, client_aes: bool) -> HandNet {
    let secret = Secret([7; KEY_SIZE]);
    let admission = Admission::Secrets { players: Some(secret.clone()), spectators: None };
    let mut net = HandNet::new();
    net.add(EndpointConfig { aes_gcm: server_aes, ..encrypted(admission, Presented::Open, 8, 11) });
    net.add(EndpointConfig { aes_gcm: client_aes, ..encrypted(Admission::default(), Presented::Secret(secret), 0, 4) });
    net
}

#[test]
fn aes_gcm_only_when_both_ends_run_it_in_hardware() {
    for (server_aes, client_aes) in [(true, true), (true, false), (false, true), (false, false)] {
        let mut net = net(server_aes, client_aes);
        let cp = net.connect(C, S);
        assert!(connected(&mut net, C, cp), "server {server_aes}, client {client_aes}");
        let sp = net.peer_of(S, C).expect("the server has the client");
        net.events(S);
        let want = if server_aes && client_aes { Cipher::Aes256Gcm } else { Cipher::ChaCha20Poly1305 };
        assert_eq!(net.ep(C).cipher(cp), Some(want));
        assert_eq!(net.ep(S).cipher(sp), Some(want));
        // Packets go both ways, sealed and opened with it.
        let up = net.packet(C, cp, CHANNEL_UNRELIABLE, b"up");
        let ca = net.addr(C);
        net.inject(ca, S, &up);
        assert_eq!(messages(&net.events(S)), [b"up".to_vec()]);
        let down = net.packet(S, sp, CHANNEL_UNRELIABLE, b"down");
        let sa = net.addr(S);
        net.inject(sa, C, &down);
        assert_eq!(messages(&net.events(C)), [b"down".to_vec()]);
        assert_eq!(net.ep(S).endpoint_stats().forged + net.ep(C).endpoint_stats().forged, 0);
    }
}

/// Runs the handshake of `C` to `S` by hand up to the client's connect response,
/// which it returns undelivered.
fn response(net: &mut HandNet) -> Vec<u8> {
    let (now, sa, ca) = (net.now, net.addr(S), net.addr(C));
    net.ep(C).connect(now, sa).expect("connect");
    let request = net.take(C).pop().expect("a request").1;
    net.inject(ca, S, &request);
    let challenge = net.take(S).pop().expect("a challenge").1;
    net.inject(sa, C, &challenge);
    net.take(C).pop().expect("a response").1
}

#[test]
fn an_offer_changed_on_the_path_fails_the_proof() {
    let mut net = net(true, true);
    let genuine = response(&mut net);
    let Ok(Packet::ConnectResponse(mut r)) = wire::decode_packet(&genuine, pid()) else { panic!("a response") };
    assert_eq!(r.ciphers, CipherOffer::new(true));
    // A man in the middle strips AES-256-GCM from the offer (to make both ends use the
    // slower cipher), keeping the proof.
    r.ciphers = CipherOffer::CHACHA_ONLY;
    let mut forged = Vec::new();
    wire::encode_connect_response(&mut forged, pid(), &r);
    let ca = net.addr(C);
    net.inject(ca, S, &forged);
    let st = net.ep(S).endpoint_stats();
    assert_eq!((st.auth_refused, st.connections), (1, 0), "the proof covers the offer");
    // The genuine response still gets in (its cookie is spent only by a success).
    net.inject(ca, S, &genuine);
    assert_eq!(net.ep(S).endpoint_stats().connections, 1);
}

#[test]
fn a_pick_changed_on_the_path_fails_the_confirmation_or_the_offer() {
    for (aes, lie) in [(true, Cipher::ChaCha20Poly1305), (false, Cipher::Aes256Gcm)] {
        let mut net = net(aes, aes);
        let r = response(&mut net);
        let ca = net.addr(C);
        net.inject(ca, S, &r);
        let accepted = net.take(S).pop().expect("an Accepted").1;
        let Ok(Packet::Accepted { client_salt, server_salt, server_public, cipher, confirm }) =
            wire::decode_packet(&accepted, pid())
        else {
            panic!("an Accepted")
        };
        assert_ne!(cipher, lie);
        let mut forged = Vec::new();
        wire::encode_accepted_head(&mut forged, pid(), client_salt, server_salt, &server_public, lie);
        forged.extend_from_slice(&confirm);
        let sa = net.addr(S);
        net.inject(sa, C, &forged);
        assert_eq!(net.ep(C).endpoint_stats().forged, 1, "aes {aes}: a pick of {lie:?} was taken");
        assert!(net.events(C).is_empty());
        // The genuine one still connects it, with the genuine pick.
        net.inject(sa, C, &accepted);
        let cp = net.ep(C).peers().next().expect("the dial");
        assert!(net.ep(C).is_connected(cp));
        assert_eq!(net.ep(C).cipher(cp), Some(cipher));
    }
}
