//! The sessions' reliable side channel over real loopback sockets: P2P both ways
//! (before and during the match), relay client and server both ways, the bounds on
//! both sides, and a member whose messages pile up unread costing no other member.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tickwire_proto::{ClientSessionEvent, GameShape, PeerId};
use tickwire_runtime::{
    EngineLoop, FullQueue, HostConfig, HostError, MAX_MESSAGE_SIZE, MAX_UNREAD_MESSAGE_BYTES, MessageTarget, Networked,
    P2pSession, P2pSettings, RelayClient, RelayClientSettings, RelayServer, RelayServerSettings, RequestKind,
    SessionEvent, SessionFailure, UNREAD_OVERHEAD,
};

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// What each session type calls to confirm a save; every machine agrees on the checksum.
trait Saves: EngineLoop {
    fn save(&mut self, tick: u32);
}
impl Saves for P2pSession {
    fn save(&mut self, tick: u32) {
        self.confirm_save(tick, u64::from(tick)).unwrap();
    }
}
impl Saves for RelayClient {
    fn save(&mut self, tick: u32) {
        self.confirm_save(tick, u64::from(tick)).unwrap();
    }
}

/// Runs one frame of a session the way a trivial game would.
fn frame<S: Saves>(s: &mut S, mut input: impl FnMut(&mut S)) {
    for _ in 0..s.ticks_due().unwrap() {
        input(s);
        s.advance().unwrap();
        while let Some(r) = s.poll_request() {
            if r.kind == RequestKind::Save {
                s.save(r.tick);
            }
        }
    }
}

/// The messages polled now, with their connection.
fn messages<S: EngineLoop>(s: &mut S) -> Vec<(PeerId, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(e) = s.poll_event() {
        if let SessionEvent::Message { peer, len } = e {
            let payload = s.message().expect("a message event has its payload").to_vec();
            assert_eq!(payload.len(), len);
            out.push((peer, payload));
        }
    }
    out
}

fn p2p_pair() -> (P2pSession, P2pSession) {
    let game = GameShape::new(2, 2);
    let mut a = P2pSession::new(P2pSettings::new(game, HostConfig::new(local()))).unwrap();
    let mut b = P2pSession::new(P2pSettings::new(game, HostConfig::new(local()))).unwrap();
    a.add_local_player(0).unwrap();
    a.add_remote_player(1, b.local_addr()).unwrap();
    b.add_remote_player(0, a.local_addr()).unwrap();
    b.add_local_player(1).unwrap();
    a.start().unwrap();
    b.start().unwrap();
    (a, b)
}

fn both(a: &mut P2pSession, b: &mut P2pSession) {
    frame(a, |s| s.add_input(0, &[1, 0]).unwrap());
    frame(b, |s| s.add_input(1, &[2, 0]).unwrap());
}

/// Frames until `got` returns Some, or panics after 5 s.
fn until<T>(mut step: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(t) = step() {
            return t;
        }
        assert!(Instant::now() < deadline, "timed out");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn p2p_peers_exchange_messages_in_order_before_and_during_the_match() {
    let (mut a, mut b) = p2p_pair();
    // Before the connection is up the peer is not connected.
    assert!(matches!(a.send_message(MessageTarget::Player(1), b"early"), Err(SessionFailure::State(_))));
    until(|| {
        both(&mut a, &mut b);
        (a.peer_of(1).is_some() && a.send_message(MessageTarget::Player(1), b"loadout:red").is_ok()).then_some(())
    });
    let mut got = Vec::new();
    until(|| {
        both(&mut a, &mut b);
        got.extend(messages(&mut b));
        (!got.is_empty()).then_some(())
    });
    assert_eq!(got, vec![(b.peer_of(0).unwrap(), b"loadout:red".to_vec())]);
    assert_eq!(b.player_of(got[0].0), Some(0));

    // During the match, both ways, in order, a large one among small ones.
    until(|| {
        both(&mut a, &mut b);
        a.is_running().then_some(())
    });
    let big = vec![9u8; MAX_MESSAGE_SIZE];
    for m in [&b"one"[..], &big, b"", b"three"] {
        b.send_message(MessageTarget::All, m).unwrap();
    }
    a.send_message(MessageTarget::Player(1), b"hello b").unwrap();
    let (mut at_a, mut at_b) = (Vec::new(), Vec::new());
    until(|| {
        both(&mut a, &mut b);
        at_a.extend(messages(&mut a).into_iter().map(|m| m.1));
        at_b.extend(messages(&mut b).into_iter().map(|m| m.1));
        (at_a.len() == 4 && !at_b.is_empty()).then_some(())
    });
    assert_eq!(at_a, vec![b"one".to_vec(), big.clone(), Vec::new(), b"three".to_vec()]);
    assert_eq!(at_b, vec![b"hello b".to_vec()]);
    assert_eq!(b.message_stats().sent, 4);
    assert_eq!(a.message_stats().received, 4);

    // Bad targets and sizes are refused with nothing sent.
    assert!(matches!(a.send_message(MessageTarget::Player(0), b"x"), Err(SessionFailure::Argument(_))));
    assert!(matches!(a.send_message(MessageTarget::Player(2), b"x"), Err(SessionFailure::Argument(_))));
    let too_big = vec![0u8; MAX_MESSAGE_SIZE + 1];
    assert!(matches!(
        a.send_message(MessageTarget::All, &too_big),
        Err(SessionFailure::Host(HostError::TooLarge { .. }))
    ));
    // The send side is bounded: four of the largest fill the room, the fifth waits.
    let mut refused = None;
    for i in 0..8 {
        if let Err(e) = a.send_message(MessageTarget::Player(1), &big) {
            refused = Some((i, e));
            break;
        }
    }
    let (i, e) = refused.expect("the send queue bound refused a message");
    assert!(i <= 4, "{i} messages of {MAX_MESSAGE_SIZE} bytes were accepted");
    assert!(matches!(e, SessionFailure::Host(HostError::QueueFull(FullQueue::MessageQueue { .. }))), "{e:?}");
    // And recovers once the peer has acknowledged them.
    until(|| {
        both(&mut a, &mut b);
        messages(&mut b);
        a.send_message(MessageTarget::Player(1), b"again").is_ok().then_some(())
    });
}

fn relay() -> (RelayServer, RelayClient, RelayClient) {
    let game = GameShape::new(2, 2);
    let mut server = RelayServer::new(RelayServerSettings::new(game, HostConfig::new(local()))).unwrap();
    server.start().unwrap();
    let client = || {
        let mut c = RelayClient::new(RelayClientSettings::new(game, HostConfig::new(local()))).unwrap();
        c.set_server(server.local_addr()).unwrap();
        c.start().unwrap();
        c
    };
    let (c0, c1) = (client(), client());
    (server, c0, c1)
}

fn serve(server: &mut RelayServer) {
    for _ in 0..server.ticks_due().unwrap() {
        server.advance().unwrap();
        while let Some(r) = server.poll_request() {
            match r.kind {
                RequestKind::Save => server.confirm_save(r.tick, u64::from(r.tick)).unwrap(),
                RequestKind::DumpState => server.provide_state(r.tick, &[7; 8]).unwrap(),
                _ => {}
            }
        }
    }
}

/// Runs a client's frame; true once it has seen JOINED.
fn play(c: &mut RelayClient, joined: &mut bool, inbox: &mut Vec<Vec<u8>>) {
    frame(c, |c| c.add_local_input(&[3, 3]).unwrap());
    while let Some(e) = c.poll_event() {
        match e {
            SessionEvent::RelayClient(ClientSessionEvent::Joined { .. }) => *joined = true,
            SessionEvent::Message { peer, .. } => {
                assert_eq!(Some(peer), c.server_peer());
                inbox.push(c.message().unwrap().to_vec());
            }
            _ => {}
        }
    }
}

#[test]
fn relay_clients_and_server_exchange_messages_and_a_flood_left_unread_costs_only_its_sender() {
    let (mut server, mut c0, mut c1) = relay();
    assert!(matches!(c0.send_message(b"too soon"), Err(SessionFailure::State(_))));
    let (mut j0, mut j1) = (false, false);
    let (mut in0, mut in1) = (Vec::new(), Vec::new());
    until(|| {
        serve(&mut server);
        messages(&mut server);
        play(&mut c0, &mut j0, &mut in0);
        play(&mut c1, &mut j1, &mut in1);
        (j0 && j1).then_some(())
    });
    // The slots go in the order the Hellos arrived.
    let (p0, p1) = (c0.local_player().unwrap(), c1.local_player().unwrap());

    // Client to server, server to one client and to all.
    c0.send_message(b"gg from 0").unwrap();
    c1.send_message(b"gg from 1").unwrap();
    server.send_message(MessageTarget::Player(p1), b"only 1").unwrap();
    server.send_message(MessageTarget::All, b"everyone").unwrap();
    let mut at_server = Vec::new();
    until(|| {
        serve(&mut server);
        at_server.extend(messages(&mut server).into_iter().map(|(peer, m)| (server.player_of(peer).unwrap(), m)));
        play(&mut c0, &mut j0, &mut in0);
        play(&mut c1, &mut j1, &mut in1);
        (at_server.len() == 2 && in0.len() == 1 && in1.len() == 2).then_some(())
    });
    at_server.sort();
    let mut want = vec![(p0, b"gg from 0".to_vec()), (p1, b"gg from 1".to_vec())];
    want.sort();
    assert_eq!(at_server, want);
    assert_eq!(in0, vec![b"everyone".to_vec()]);
    assert_eq!(in1, vec![b"only 1".to_vec(), b"everyone".to_vec()]);

    // Client 0 sends as fast as its bound allows while the server's engine ticks but
    // polls no event: client 0's unread messages stop at MAX_UNREAD_MESSAGE_BYTES and the
    // rest are dropped and counted; client 1's message still gets through.
    let chunk = vec![5u8; 4096];
    let room = MAX_UNREAD_MESSAGE_BYTES / (chunk.len() + UNREAD_OVERHEAD);
    let mut sent = 0u64;
    until(|| {
        serve(&mut server);
        for _ in 0..8 {
            if c0.send_message(&chunk).is_ok() {
                sent += 1;
            }
        }
        play(&mut c0, &mut j0, &mut in0);
        play(&mut c1, &mut j1, &mut in1);
        (server.message_stats().dropped_unread > 0).then_some(())
    });
    c1.send_message(b"still here").unwrap();
    let stats_before = server.message_stats();
    until(|| {
        serve(&mut server);
        play(&mut c0, &mut j0, &mut in0);
        play(&mut c1, &mut j1, &mut in1);
        (server.message_stats().received > stats_before.received).then_some(())
    });
    let polled = messages(&mut server);
    let from0 = polled.iter().filter(|(p, _)| server.player_of(*p) == Some(p0)).count();
    assert!(from0 <= room + 1, "{from0} unread messages from client 0 were kept (room for {room})");
    assert!(polled.iter().any(|(p, m)| server.player_of(*p) == Some(p1) && m == b"still here"));
    eprintln!("flood: client 0 sent {sent}, kept {from0}, dropped {}", server.message_stats().dropped_unread);
}

/// A connection that never said Hello (not a player) sends on the message channel: the
/// relay server drops and counts it, and the engine never sees it. A player's
/// connection on the same server still gets through.
#[test]
fn a_relay_server_drops_messages_from_connections_that_hold_no_slot() {
    let (mut server, mut c0, _c1) = relay();
    let mut stranger_cfg = HostConfig::new(local());
    stranger_cfg.endpoint.channels.push(tickwire_proto::ChannelKind::Reliable);
    let mut stranger = tickwire_runtime::Host::start(stranger_cfg).unwrap();
    let peer = stranger.connect(server.local_addr()).unwrap();
    let mut joined = false;
    let mut inbox = Vec::new();
    let mut at_server = Vec::new();
    let mut connected = false;
    until(|| {
        serve(&mut server);
        at_server.extend(messages(&mut server));
        play(&mut c0, &mut joined, &mut inbox);
        while let Some(e) = stranger.poll_event() {
            if matches!(e, tickwire_runtime::HostEvent::Connected { .. }) {
                connected = true;
                stranger.send(peer, tickwire_runtime::MESSAGE_CHANNEL, b"let me in").unwrap();
                stranger.flush().unwrap();
            }
        }
        (connected && joined && server.message_stats().dropped_refused == 1).then_some(())
    });
    c0.send_message(b"a player").unwrap();
    until(|| {
        serve(&mut server);
        at_server.extend(messages(&mut server));
        play(&mut c0, &mut joined, &mut inbox);
        (!at_server.is_empty()).then_some(())
    });
    assert_eq!(at_server, vec![(server.peer_of(c0.local_player().unwrap()).unwrap(), b"a player".to_vec())]);
    assert_eq!(server.message_stats().received, 1);
}

/// Client `c` sends `n` messages of `chunk` (waiting for room on its side) while the
/// server's engine ticks without polling events; returns once the server has counted
/// every one of them, kept or dropped.
fn flood_unread(server: &mut RelayServer, c: &mut RelayClient, joined: &mut bool, n: u64, chunk: &[u8]) {
    let counted = |s: &RelayServer| s.message_stats().received + s.message_stats().dropped_unread;
    let before = counted(server);
    let mut sent = 0;
    let mut inbox = Vec::new();
    until(|| {
        serve(server);
        while sent < n && c.send_message(chunk).is_ok() {
            sent += 1;
        }
        play(c, joined, &mut inbox);
        (counted(server) - before == n).then_some(())
    });
}

/// Issue 31, item 6 (a): a connection's unread messages when its slot is taken by a
/// new connection. Client 0 floods its slot's room while the server's engine polls no
/// event, then leaves; a new client takes the slot and floods too.
///
/// Held before: every message names the connection it came on, so the old messages
/// are never attributed to the newcomer (`player_of` of the old connection is None,
/// the newcomer's is the slot). Failed before: the room was counted per connection,
/// so the newcomer (or the same member reconnecting) got a fresh
/// MAX_UNREAD_MESSAGE_BYTES while the old one's messages still waited: one slot held
/// twice the bound, and more with every reconnection.
#[test]
fn a_slot_taken_by_a_new_connection_shares_the_room_of_the_old_ones_unread_messages() {
    let (mut server, mut c0, mut c1) = relay();
    let (mut j0, mut j1) = (false, false);
    let (mut in0, mut in1) = (Vec::new(), Vec::new());
    until(|| {
        serve(&mut server);
        messages(&mut server);
        play(&mut c0, &mut j0, &mut in0);
        play(&mut c1, &mut j1, &mut in1);
        (j0 && j1).then_some(())
    });
    let slot = c0.local_player().unwrap();
    let old = server.peer_of(slot).unwrap();
    let chunk = vec![5u8; 4096];
    let room = (MAX_UNREAD_MESSAGE_BYTES / (chunk.len() + UNREAD_OVERHEAD)) as u64;
    flood_unread(&mut server, &mut c0, &mut j0, 2 * room, &chunk);
    let kept_old = server.message_stats().received;
    assert_eq!(kept_old, room, "the old connection filled its slot's room");

    // Client 0 leaves; its slot frees; a newcomer takes it. Events are not polled
    // (the engine is busy), so the old messages still wait.
    drop(c0);
    until(|| {
        serve(&mut server);
        play(&mut c1, &mut j1, &mut in1);
        server.peer_of(slot).is_none().then_some(())
    });
    let mut c2 = RelayClient::new(RelayClientSettings::new(GameShape::new(2, 2), HostConfig::new(local()))).unwrap();
    c2.set_server(server.local_addr()).unwrap();
    c2.start().unwrap();
    let mut j2 = false;
    let mut in2 = Vec::new();
    until(|| {
        serve(&mut server);
        play(&mut c1, &mut j1, &mut in1);
        play(&mut c2, &mut j2, &mut in2);
        j2.then_some(())
    });
    assert_eq!(c2.local_player(), Some(slot), "the newcomer holds the freed slot");
    let new = server.peer_of(slot).unwrap();
    assert_ne!(new, old, "connection ids are never reused");
    flood_unread(&mut server, &mut c2, &mut j2, 2 * room, &chunk);
    // Another player is not affected.
    c1.send_message(b"still here").unwrap();
    let before = server.message_stats().received;
    until(|| {
        serve(&mut server);
        play(&mut c1, &mut j1, &mut in1);
        play(&mut c2, &mut j2, &mut in2);
        (server.message_stats().received > before).then_some(())
    });

    let polled = messages(&mut server);
    let from_old = polled.iter().filter(|(p, _)| *p == old).count() as u64;
    let from_new = polled.iter().filter(|(p, _)| *p == new).count() as u64;
    assert_eq!(from_old, kept_old, "the old connection's messages are still there, under its own id");
    assert_eq!(server.player_of(old), None, "and attributed to no player: the slot is someone else's now");
    assert_eq!(server.player_of(new), Some(slot));
    assert!(from_old + from_new <= room, "the slot held {from_old} + {from_new} unread messages, its room is {room}");
    assert!(polled.iter().any(|(p, m)| server.player_of(*p) == c1.local_player() && m == b"still here"));
}

/// Issue 31, item 6 (b): a flood of the smallest messages. Empty messages cost their
/// sender nothing against its send bound (counted in bytes), so a modified or buggy
/// client can send thousands a frame; on the server each counts UNREAD_OVERHEAD, so
/// one member's unread messages stop at MAX_UNREAD_MESSAGE_BYTES / UNREAD_OVERHEAD and
/// the other member's message still gets through, first among that member's.
/// Held before this change (it cannot have failed before): the bound was already in
/// bytes with the per-message overhead.
#[test]
fn a_flood_of_empty_messages_is_bounded_per_member_and_starves_no_other() {
    let (mut server, mut c0, mut c1) = relay();
    let (mut j0, mut j1) = (false, false);
    let (mut in0, mut in1) = (Vec::new(), Vec::new());
    until(|| {
        serve(&mut server);
        messages(&mut server);
        play(&mut c0, &mut j0, &mut in0);
        play(&mut c1, &mut j1, &mut in1);
        (j0 && j1).then_some(())
    });
    let room = (MAX_UNREAD_MESSAGE_BYTES / UNREAD_OVERHEAD) as u64;
    // Twice the room, sent in bursts of 500 a frame, interleaved with client 1's one.
    let mut sent = 0u64;
    let counted = |s: &RelayServer| s.message_stats().received + s.message_stats().dropped_unread;
    let mut told = false;
    until(|| {
        serve(&mut server);
        for _ in 0..500 {
            if sent < 2 * room && c0.send_message(b"").is_ok() {
                sent += 1;
            }
        }
        if !told && sent >= room / 2 {
            c1.send_message(b"from 1").unwrap();
            told = true;
        }
        play(&mut c0, &mut j0, &mut in0);
        play(&mut c1, &mut j1, &mut in1);
        (counted(&server) == 2 * room + 1).then_some(())
    });
    let stats = server.message_stats();
    assert_eq!(stats.received, room + 1, "{stats:?}");
    assert_eq!(stats.dropped_unread, room);
    let polled = messages(&mut server);
    let p0 = c0.local_player();
    assert_eq!(polled.iter().filter(|(p, _)| server.player_of(*p) == p0).count() as u64, room);
    assert!(polled.iter().any(|(p, m)| server.player_of(*p) == c1.local_player() && m == b"from 1"));
}
