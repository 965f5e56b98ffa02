//! Issue 31, finding 6: under an authenticated flood, a peer dropped as FLOODING
//! reconnected at once (1,513 times in 16 s). An address (and a connect token's client
//! id) dropped for misbehaving now waits a backoff that doubles with each drop before
//! a new handshake from it is admitted; everyone else is untouched.

use std::net::SocketAddr;

use crate::support::hand_net::{HandNet, connected, encrypted, pid};
use tickwire_proto::token::{self, ConnectToken, TokenParams};
use tickwire_proto::{
    Admission, CHANNEL_UNRELIABLE, DisconnectReason, EndpointConfig, KEY_SIZE, NetEvent as Event, PeerId, PeerLimits,
    Presented, Secret, TokenAdmission,
};

const SECOND: u64 = 1_000_000;

fn server() -> EndpointConfig {
    server_admitting(Admission::Secrets { players: Some(Secret([1; KEY_SIZE])), spectators: None })
}

fn server_admitting(admission: Admission) -> EndpointConfig {
    // A small budget (a burst of 200 messages), so that a flood is quick to show.
    let limits = PeerLimits { max_messages_per_sec: 2_000, burst_us: 100_000, ..PeerLimits::default() };
    EndpointConfig { limits, ..encrypted(admission, Presented::Open, 16, 11) }
}

fn client(seed: u64) -> EndpointConfig {
    // Its own pace follows its own (default, far larger) budget: it floods ours.
    encrypted(Admission::default(), Presented::Secret(Secret([1; KEY_SIZE])), 0, seed)
}

/// Node `c` sends `server` messages far over its budget until the server drops it;
/// the reason it was told.
fn flood(net: &mut HandNet, c: usize, server: PeerId) -> DisconnectReason {
    for _ in 0..1_000 {
        let now = net.now;
        for _ in 0..64 {
            if net.ep(c).send(server, CHANNEL_UNRELIABLE, &[7; 8]).is_err() {
                break;
            }
        }
        net.ep(c).flush(now);
        net.settle();
        let gone = net.events(c).into_iter().find_map(|e| match e {
            Event::Disconnected { peer, reason } if peer == server => Some(reason),
            _ => None,
        });
        if let Some(reason) = gone {
            return reason;
        }
        net.now += 1_000;
    }
    panic!("never dropped");
}

/// Node `c` dials node `s`: whether it got in, and if not, why.
fn dial(net: &mut HandNet, c: usize, s: usize) -> Result<PeerId, DisconnectReason> {
    let cp = net.connect(c, s);
    let events = net.events(c);
    if events.iter().any(|e| matches!(e, Event::Connected { peer, .. } if *peer == cp)) {
        return Ok(cp);
    }
    let why = events.iter().find_map(|e| match e {
        Event::Disconnected { peer, reason } if *peer == cp => Some(*reason),
        _ => None,
    });
    Err(why.unwrap_or_else(|| panic!("neither in nor refused: {events:?}")))
}

#[test]
fn a_flooder_waits_a_growing_backoff_and_nobody_else_does() {
    let mut net = HandNet::new();
    let s = net.add(server());
    let liar = net.add(client(21));
    let honest = net.add(client(22));
    let mut hp = net.connect(honest, s);
    assert!(connected(&mut net, honest, hp));
    let mut lp = dial(&mut net, liar, s).expect("the liar gets in at first");
    for (round, wait) in [1, 2, 4, 8].into_iter().enumerate() {
        assert_eq!(flood(&mut net, liar, lp), DisconnectReason::Flooding, "round {round}");
        let dropped_at = net.now;
        // At once, and just short of the wait: refused, told "full" (authenticated:
        // the liar's proof held) and counted.
        let refused_before = net.ep(s).endpoint_stats().backoff_refused;
        assert_eq!(dial(&mut net, liar, s), Err(DisconnectReason::ServerFull), "round {round}: at once");
        net.now = dropped_at + wait * SECOND - 1_000;
        assert_eq!(dial(&mut net, liar, s), Err(DisconnectReason::ServerFull), "round {round}: after {wait} s - 1 ms");
        assert_eq!(net.ep(s).endpoint_stats().backoff_refused, refused_before + 2);
        // Meanwhile another client, from another address, comes and goes as it likes.
        let now = net.now;
        net.ep(honest).disconnect(now, hp);
        net.settle();
        net.events(honest);
        hp = dial(&mut net, honest, s).expect("the honest client is never kept waiting");
        // Once the wait is over, the liar gets in again.
        net.now = dropped_at + wait * SECOND;
        lp = dial(&mut net, liar, s).unwrap_or_else(|r| panic!("round {round}: still refused after {wait} s: {r:?}"));
    }
    // A long quiet spell forgets the past: the next wait is the first one again.
    net.now += 10 * 60 * SECOND;
    assert_eq!(flood(&mut net, liar, lp), DisconnectReason::Flooding);
    let dropped_at = net.now;
    assert!(dial(&mut net, liar, s).is_err());
    net.now = dropped_at + SECOND;
    dial(&mut net, liar, s).expect("one second after a drop long after the last");
    assert!(net.peer_of(s, honest).is_some(), "the honest client kept its connection");
    assert!(net.ep(honest).peers().any(|p| p == hp));
}

const KEY: [u8; KEY_SIZE] = [0x3c; KEY_SIZE];
const T0: u64 = 1_700_000_000;

/// A connect token for `client_id` to `server`, its nonce made of `nonce`.
fn token_client(server: SocketAddr, client_id: u64, nonce: u8) -> EndpointConfig {
    let p = TokenParams {
        protocol_id: pid(),
        client_id,
        created: T0 - 60,
        expires: T0 + 3600,
        timeout_secs: 0,
        addresses: vec![server],
        user_data: vec![],
    };
    let bytes = token::mint(&Secret(KEY), &p, &[nonce; 56]).expect("mint");
    let presented = Presented::Token(Box::new(ConnectToken::decode(&bytes).expect("decode")));
    encrypted(Admission::default(), presented, 0, nonce as u64)
}

/// With connect tokens the client id waits too: the same player flooding, dropped,
/// and back at once from another address with a new token of the backend's, is
/// refused; another player is not.
#[test]
fn a_flooding_client_id_waits_from_any_address() {
    let mut net = HandNet::new();
    // Node 0 is at 127.0.0.1:5000 (`HandNet::add`).
    let public = SocketAddr::from(([127, 0, 0, 1], 5000));
    let admission = Admission::Tokens(TokenAdmission { key: Secret(KEY), public_addresses: vec![public] });
    let s = net.add(server_admitting(admission));
    let now = net.now;
    net.ep(s).set_unix_time(now, Some(T0));
    let liar = net.add(token_client(public, 5, 1));
    let lp = dial(&mut net, liar, s).expect("the liar gets in at first");
    assert_eq!(flood(&mut net, liar, lp), DisconnectReason::Flooding);
    let dropped_at = net.now;
    // The same player from another address, with a new token: refused.
    let again = net.add(token_client(public, 5, 2));
    assert_eq!(dial(&mut net, again, s), Err(DisconnectReason::ServerFull));
    // Another player, from yet another address: in.
    let other = net.add(token_client(public, 6, 3));
    dial(&mut net, other, s).expect("another player is not kept waiting");
    assert_eq!(net.ep(s).endpoint_stats().backoff_refused, 1);
    net.now = dropped_at + SECOND;
    dial(&mut net, again, s).expect("the same player, once its wait is over");
}
