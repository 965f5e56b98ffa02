//! Who is who on a relay server (issue 30): a player's slot belongs to the credential
//! that first claimed it, its session token cannot be computed from other tokens, and
//! the backend's identity of each player (a connect token's client id and user data)
//! reaches the server's engine.

use crate::support::relay_world::{World, link};
use crate::support::serve_world::{T0, server_addr, token_client_endpoint};
use crate::support::xoshiro_attack;
use tickwire_proto::wire::relay::{self, Hello, SessionToken};
use tickwire_proto::{
    Admission, CHANNEL_RELIABLE, Credential, DisconnectReason, EndpointConfig, GameShape, KEY_SIZE, NetEvent as Event,
    NodeId, PacketProtection, PeerId, Presented, Proven, RejectReason, RelayClientSessionConfig,
    RelayServerSessionConfig, Secret, Security, ServerSessionEvent, TokenAdmission,
};

const SECOND: u64 = 1_000_000;
const KEY: [u8; KEY_SIZE] = [0x5e; KEY_SIZE];

fn configs(players: usize) -> (RelayServerSessionConfig, RelayClientSessionConfig) {
    let s = RelayServerSessionConfig { game: GameShape::new(players, 2), ..RelayServerSessionConfig::default() };
    let c = RelayClientSessionConfig { game: GameShape::new(players, 2), ..RelayClientSessionConfig::default() };
    (s, c)
}

/// A relay world whose server admits connect tokens minted with `KEY`.
fn token_world(seed: u64, players: usize) -> World {
    let (s, c) = configs(players);
    let admission = Admission::Tokens(TokenAdmission { key: Secret(KEY), public_addresses: vec![server_addr()] });
    let server = EndpointConfig {
        max_incoming: 16,
        security: Security::Encrypted { admission, presented: Presented::Open, packets: PacketProtection::Aead },
        ..EndpointConfig::default()
    };
    let mut w = World::with_server_endpoint(seed, link(0.0), s, c, server);
    let (node, now) = (w.server_node, w.net.local_now(w.server_node));
    w.net.endpoint(node).set_unix_time(now, Some(T0));
    w
}

/// A client endpoint showing a fresh connect token for `client_id` (`n` makes each
/// token's nonce and key its own).
fn token_client(client_id: u64, n: u8) -> EndpointConfig {
    token_client_endpoint(&KEY, client_id, format!("account {client_id}").into_bytes(), n)
}

/// A bare endpoint beside the world (no session), connected to the server: a modified
/// client that says whatever it likes.
fn rogue(w: &mut World, cfg: EndpointConfig) -> (NodeId, PeerId) {
    let node = w.net.add(cfg);
    let now = w.net.local_now(node);
    let peer = w.net.endpoint(node).connect(now, server_addr()).unwrap();
    w.run_for(SECOND);
    assert!(w.net.endpoint(node).is_connected(peer), "the rogue's handshake completed");
    (node, peer)
}

fn say_hello(w: &mut World, (node, peer): (NodeId, PeerId), token: SessionToken) {
    let mut b = Vec::new();
    relay::encode_hello(&mut b, &Hello { token, input_size: 2, max_players: w.client_cfg.game.players as u16 });
    w.net.endpoint(node).send(peer, CHANNEL_RELIABLE, &b).unwrap();
    w.net.flush(node);
    w.run_for(SECOND);
}

/// Whether `node` was sent a Welcome (a slot).
fn welcomed(w: &mut World, node: NodeId) -> bool {
    w.net.take_events(node).into_iter().any(
        |e| matches!(&e, Event::Message { channel: CHANNEL_RELIABLE, data, .. } if relay::decode_welcome(data).is_ok()),
    )
}

fn low64(t: SessionToken) -> u64 {
    u64::from_le_bytes(t.0[..8].try_into().unwrap())
}

/// Finding 1: tokens came from xoshiro256**, and four of them gave its whole state
/// away. A player with one ordinary connect token joins and leaves six times, learning
/// six of its own session tokens, solves for the generator and predicts the next
/// player's token. Before the fix the prediction was exact and its Hello took the
/// victim's slot, victim connected or not (and in an open match the same held).
#[test]
fn a_player_who_learns_its_own_tokens_cannot_compute_another_players() {
    let mut w = token_world(71, 4);
    let mut learned = Vec::new();
    for _ in 0..6 {
        // The same connect token every time (client id 9).
        let i = w.add_client_with(token_client(9, 1));
        w.run_for(2 * SECOND);
        learned.push(w.clients[i].session.token().expect("joined"));
        // Leave on purpose: the slot and its token are freed at once.
        let node = w.clients[i].node;
        let now = w.net.local_now(node);
        w.net.endpoint(node).shutdown(now);
        w.clients[i].alive = false;
        w.run_for(SECOND / 2);
    }
    let victim = w.add_client_with(token_client(1, 2));
    w.run_for(2 * SECOND);
    let victim_token = w.clients[victim].session.token().expect("victim joined");
    let victim_player = w.clients[victim].session.player().unwrap();
    let victim_peer = w.server.peer_of(victim_player).expect("victim connected");

    let outputs: Vec<u64> = learned.iter().map(|t| low64(*t)).collect();
    let prediction = xoshiro_attack::predict_next(&outputs, 1).map(|p| p[0]);
    eprintln!("the attacker's prediction of the victim's token: {prediction:?}");
    assert_ne!(prediction, Some(low64(victim_token)), "the victim's token was computed from the attacker's");
    assert!(learned.iter().all(|t| *t != victim_token));

    // Whatever it guesses, a Hello with it, on the attacker's own token again, takes
    // nobody's slot.
    let mut guess = [0u8; 16];
    guess[..8].copy_from_slice(&prediction.unwrap_or(outputs[5]).to_le_bytes());
    let r = rogue(&mut w, token_client(9, 1));
    say_hello(&mut w, r, SessionToken(guess));
    assert!(!welcomed(&mut w, r.0), "the guess opened a slot");
    assert_eq!(w.server.peer_of(victim_player), Some(victim_peer), "the victim keeps its slot");
    assert!(
        w.server_events.iter().any(|e| matches!(e, ServerSessionEvent::ConnectionRejected {
            peer, reason: RejectReason::BadToken } if *peer != victim_peer)),
        "the guess was refused as a bad token: {:?}",
        w.server_events
    );
}

/// Tokens are 128 bits and differ in their every byte position over many joins: the
/// upper half is not a constant or a counter.
#[test]
fn session_tokens_are_128_random_bits() {
    let (s, c) = configs(8);
    let mut w = World::new(72, link(0.0), s, c);
    let ids: Vec<usize> = (0..8).map(|_| w.add_client()).collect();
    w.run_for(3 * SECOND);
    let tokens: Vec<SessionToken> = ids.iter().map(|&i| w.clients[i].session.token().expect("joined")).collect();
    for b in 0..16 {
        let distinct: std::collections::BTreeSet<u8> = tokens.iter().map(|t| t.0[b]).collect();
        assert!(distinct.len() >= 4, "byte {b} of 8 tokens takes {} values", distinct.len());
    }
}

/// Findings 1 and 3: a session token that leaked (read over a shoulder, a log, a
/// plaintext capture) is worthless to another player. The slot belongs to the
/// connect token's client id that first claimed it. Before the fix the thief's Hello
/// moved the live victim's slot to the thief, who then received the victim's snapshot.
#[test]
fn a_leaked_session_token_does_not_take_another_players_slot() {
    let mut w = token_world(73, 4);
    let victim = w.add_client_with(token_client(1, 1));
    let thief = w.add_client_with(token_client(2, 2));
    w.run_for(3 * SECOND);
    let victim_token = w.clients[victim].session.token().expect("victim joined");
    let victim_player = w.clients[victim].session.player().unwrap();
    let victim_peer = w.server.peer_of(victim_player).unwrap();
    assert!(w.clients[thief].session.player().is_some(), "the thief plays too");

    // The thief's second account, on a new connection, with the victim's token.
    let r = rogue(&mut w, token_client(3, 3));
    say_hello(&mut w, r, victim_token);
    assert!(!welcomed(&mut w, r.0), "the thief was welcomed into the victim's slot");
    assert_eq!(w.server.peer_of(victim_player), Some(victim_peer), "the victim keeps its slot");
    assert!(
        w.server_events
            .iter()
            .any(|e| matches!(e, ServerSessionEvent::ConnectionRejected { reason: RejectReason::WrongCredential, .. }))
    );
    assert!(w.net.endpoint(w.clients[victim].node).is_connected(w.clients[victim].session.server_peer().unwrap()));

    // The same once the victim has dropped and its slot waits for it.
    w.clients[victim].alive = false;
    w.set_client_link(
        victim,
        tickwire_proto::LinkConfig { loss: tickwire_proto::LossModel::Bernoulli { p: 1.0 }, ..link(0.0) },
    );
    w.run_for(12 * SECOND);
    assert!(w.server.peer_of(victim_player).is_none(), "the victim timed out");
    assert!(w.server.player_credential(victim_player).is_some(), "its slot waits for it");
    let r = rogue(&mut w, token_client(4, 4));
    say_hello(&mut w, r, victim_token);
    assert!(!welcomed(&mut w, r.0), "the thief took the waiting slot");
    assert!(w.server.peer_of(victim_player).is_none());
}

/// Finding 3: the token's identity reaches the server's engine, in the join event and
/// by player.
#[test]
fn the_backend_identity_of_each_player_reaches_the_server_engine() {
    let mut w = token_world(74, 4);
    let a = w.add_client_with(token_client(1001, 1));
    let b = w.add_client_with(token_client(2002, 2));
    w.run_for(3 * SECOND);
    for (i, id) in [(a, 1001u64), (b, 2002)] {
        let player = w.clients[i].session.player().expect("joined");
        let joined = w.server_events.iter().find_map(|e| match *e {
            ServerSessionEvent::PlayerJoined { player: p, proven, .. } if p == player => Some(proven),
            _ => None,
        });
        assert_eq!(joined, Some(Proven::ConnectToken { client_id: id }));
        let Some(Credential::ConnectToken(t)) = w.server.player_credential(player) else {
            panic!("player {player}: {:?}", w.server.player_credential(player))
        };
        assert_eq!(t.client_id, id);
        let text = format!("account {id}");
        assert_eq!(&t.user_data[..text.len()], text.as_bytes());
        assert!(t.user_data[text.len()..].iter().all(|&b| b == 0), "zero-padded");
    }
}

/// At most one live connection per client id, as netcode: a second token for the same
/// player is refused while the first connection lives, and let in once it ends.
#[test]
fn one_live_connection_per_client_id() {
    let mut w = token_world(75, 4);
    let first = w.add_client_with(token_client(7, 1));
    w.run_for(2 * SECOND);
    assert!(w.clients[first].session.player().is_some());
    let node = w.net.add(token_client(7, 2));
    let now = w.net.local_now(node);
    let peer = w.net.endpoint(node).connect(now, server_addr()).unwrap();
    w.run_for(SECOND);
    assert!(!w.net.endpoint(node).is_connected(peer), "a second connection for client id 7");
    assert!(w.net.endpoint(w.server_node).endpoint_stats().auth_refused >= 1);
    let events = w.net.take_events(node);
    assert!(
        events.iter().all(|e| !matches!(e, Event::Connected { .. })),
        "the second connection never came up: {events:?}"
    );
    // The first leaves; the same account may now come in (and gets its own slot back).
    let n1 = w.clients[first].node;
    let now = w.net.local_now(n1);
    w.net.endpoint(n1).shutdown(now);
    w.clients[first].alive = false;
    w.run_for(SECOND);
    let again = w.add_client_with(token_client(7, 3));
    w.run_for(3 * SECOND);
    assert!(w.clients[again].session.player().is_some(), "{:?}", w.clients[again].events);
}

/// A client that crashed lost its session token; with a new connect token for the same
/// client id it comes back to its own slot (the backend's identity owns at most one),
/// not a second one.
#[test]
fn a_client_that_lost_its_session_token_gets_its_own_slot_back() {
    let mut w = token_world(76, 4);
    let a = w.add_client_with(token_client(9, 1));
    let other = w.add_client_with(token_client(10, 2));
    w.run_for(3 * SECOND);
    let player = w.clients[a].session.player().unwrap();
    // Crash: silence, then the server times the connection out.
    w.clients[a].alive = false;
    w.set_client_link(
        a,
        tickwire_proto::LinkConfig { loss: tickwire_proto::LossModel::Bernoulli { p: 1.0 }, ..link(0.0) },
    );
    w.run_for(12 * SECOND);
    assert!(w.server.peer_of(player).is_none());
    let back = w.add_client_with(token_client(9, 3));
    w.run_for(3 * SECOND);
    assert_eq!(w.clients[back].session.player(), Some(player), "{:?}", w.clients[back].events);
    assert!(w.server_events.iter().any(|e| matches!(e,
        ServerSessionEvent::PlayerReconnected { player: p, proven: Proven::ConnectToken { client_id: 9 }, .. } if *p == player)));
    assert_eq!(w.server.stats().players, 2, "no second slot");
    assert!(w.clients[other].session.player().is_some());
    let _ = DisconnectReason::ClientIdInUse;
}
