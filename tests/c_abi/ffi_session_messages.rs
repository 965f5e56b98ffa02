//! The session message side channel through the C ABI, over real UDP on 127.0.0.1:
//! P2P both ways, relay client and server both ways, the size and queue bounds, bad
//! arguments and the modes without messages, and a client whose messages pile up
//! unread on the server costing no other client.

use crate::support::abi_engine;

use std::ptr;
use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

const SEED: u64 = 5;
const PERIOD: u32 = 4;

/// A message as the engine saw it: the event's connection and player, and the payload.
#[derive(Debug, Clone, PartialEq)]
struct Received {
    peer: u32,
    player: u32,
    data: Vec<u8>,
}

/// Polls every event, reading each message's payload right away (the next poll would
/// release it); returns the other events' kinds too.
fn poll(s: *mut tw_session, messages: &mut Vec<Received>) -> Vec<u32> {
    let mut kinds = Vec::new();
    let mut e = tw_session_event::zeroed();
    // SAFETY (whole function): live session, valid pointers.
    while unsafe { tw_session_poll_event(s, &mut e) } == tw_result::Ok {
        kinds.push(e.kind);
        if e.kind == tw_session_event_kind::Message as u32 {
            let m = unsafe { e.data.message };
            let mut buf = vec![0u8; TW_SESSION_MESSAGE_MAX_SIZE as usize];
            let mut n = 0;
            ok(unsafe { tw_session_read_message(s, buf.as_mut_ptr(), buf.len(), &mut n) });
            assert_eq!(n, m.size as usize);
            buf.truncate(n);
            messages.push(Received { peer: e.peer, player: m.player, data: buf });
        }
    }
    kinds
}

/// The ticks of one frame (inputs for `local`, advance, requests), without polling
/// events.
fn ticks(s: *mut tw_session, engine: &mut Engine, local: &[usize], relay_client: Option<&mut u32>) {
    let mut n = 0u32;
    // SAFETY (whole function): live session, valid pointers.
    ok(unsafe { tw_session_ticks_due(s, &mut n) });
    let mut pushed = relay_client;
    for _ in 0..n {
        if let Some(p) = pushed.as_deref_mut() {
            let input = input_for(SEED, 0, *p, PERIOD);
            *p += 1;
            ok(unsafe { tw_session_push_input(s, TW_LOCAL_PLAYER, input.as_ptr().cast(), input.len()) });
        } else {
            let st = stats(s);
            engine.confirmed_at_advance = st.confirmed_tick;
            for &p in local {
                let input = input_for(SEED, p, st.current_tick + st.input_delay, PERIOD);
                ok(unsafe { tw_session_push_input(s, p as u32, input.as_ptr().cast(), input.len()) });
            }
        }
        let r = unsafe { tw_session_advance(s) };
        assert!(!r.is_err(), "advance: {r:?}: {}", last_error());
        engine.run_requests(s);
    }
}

fn send(s: *mut tw_session, target: u32, data: &[u8]) -> tw_result {
    // SAFETY: live session, valid bytes.
    unsafe { tw_session_send_message(s, target, data.as_ptr().cast(), data.len()) }
}

fn message_stats(s: *mut tw_session) -> tw_session_message_stats {
    let mut st = tw_session_message_stats::default();
    // SAFETY: live session, writable storage.
    ok(unsafe { tw_session_get_message_stats(s, &mut st) });
    st
}

/// Steps until `done` says so, or panics after 10 s.
fn until(mut step: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !step() {
        assert!(Instant::now() < deadline, "timed out");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn p2p_peers_message_each_other_and_the_buffer_contract_holds() {
    let cfg = session_config(tw_session_mode::P2p, 2);
    let (a, b) = p2p_pair(&cfg, &cfg);
    // Not started: nothing to send on.
    assert_eq!(send(a.0, 1, b"x"), tw_result::InvalidState);
    // SAFETY: live sessions.
    unsafe {
        ok(tw_session_start(a.0));
        ok(tw_session_start(b.0));
    }
    let mut slots = 0;
    // SAFETY: live session, valid pointer.
    ok(unsafe { tw_session_state_slots(a.0, &mut slots) });
    let (mut ea, mut eb) = (Engine::new(2, slots as usize), Engine::new(2, slots as usize));
    let (mut at_a, mut at_b) = (Vec::new(), Vec::new());
    let step = |ea: &mut Engine, eb: &mut Engine, at_a: &mut Vec<Received>, at_b: &mut Vec<Received>| {
        ticks(a.0, ea, &[0], None);
        ticks(b.0, eb, &[1], None);
        poll(a.0, at_a);
        poll(b.0, at_b);
    };
    until(|| {
        step(&mut ea, &mut eb, &mut at_a, &mut at_b);
        stats(a.0).running == 1 && stats(b.0).running == 1
    });

    ok(send(a.0, 1, b"to player 1"));
    ok(send(b.0, TW_SESSION_MESSAGE_TARGET_ALL, b"to everyone"));
    ok(send(b.0, 0, b""));
    until(|| {
        step(&mut ea, &mut eb, &mut at_a, &mut at_b);
        at_a.len() == 2 && at_b.len() == 1
    });
    let (mut peer_a, mut peer_b) = (0, 0);
    // SAFETY: live sessions, valid pointers.
    unsafe {
        ok(tw_session_player_peer(a.0, 1, &mut peer_b));
        ok(tw_session_player_peer(b.0, 0, &mut peer_a));
    }
    assert_eq!(at_b, vec![Received { peer: peer_a, player: 0, data: b"to player 1".to_vec() }]);
    assert_eq!(
        at_a,
        vec![
            Received { peer: peer_b, player: 1, data: b"to everyone".to_vec() },
            Received { peer: peer_b, player: 1, data: Vec::new() },
        ]
    );
    assert_eq!(message_stats(b.0).sent, 2);
    assert_eq!(message_stats(a.0).received, 2);

    // The read contract, step by step: too small keeps the payload and says the size,
    // then a read releases it, then there is nothing to read.
    ok(send(b.0, 0, b"twelve bytes"));
    let mut e = tw_session_event::zeroed();
    until(|| {
        ticks(a.0, &mut ea, &[0], None);
        ticks(b.0, &mut eb, &[1], None);
        // SAFETY: live session, valid pointer.
        while unsafe { tw_session_poll_event(a.0, &mut e) } == tw_result::Ok {
            if e.kind == tw_session_event_kind::Message as u32 {
                return true;
            }
        }
        false
    });
    assert_eq!(unsafe { e.data.message }.size, 12);
    let mut small = [0u8; 4];
    let mut n = 0;
    // SAFETY (block): live session, buffers valid for the lengths given.
    unsafe {
        assert_eq!(tw_session_read_message(a.0, small.as_mut_ptr(), small.len(), &mut n), tw_result::BufferTooSmall);
        assert_eq!(n, 12);
        assert_eq!(tw_session_read_message(a.0, ptr::null_mut(), 0, &mut n), tw_result::BufferTooSmall);
        let mut buf = [0u8; 64];
        ok(tw_session_read_message(a.0, buf.as_mut_ptr(), buf.len(), &mut n));
        assert_eq!(&buf[..n], b"twelve bytes");
        assert_eq!(tw_session_read_message(a.0, buf.as_mut_ptr(), buf.len(), &mut n), tw_result::InvalidState);
        assert!(last_error().contains("tw_session_read_message"), "{}", last_error());
    }

    // Bounds and bad arguments.
    let big = vec![1u8; TW_SESSION_MESSAGE_MAX_SIZE as usize];
    assert_eq!(send(a.0, 1, &vec![0u8; big.len() + 1]), tw_result::MessageTooLarge);
    assert_eq!(send(a.0, 0, b"me"), tw_result::InvalidArgument, "a local player");
    assert_eq!(send(a.0, 2, b"nobody"), tw_result::InvalidArgument, "no such player");
    // SAFETY (block): NULLs are the point.
    unsafe {
        assert_eq!(tw_session_send_message(ptr::null_mut(), 1, b"x".as_ptr().cast(), 1), tw_result::NullArgument);
        assert_eq!(tw_session_send_message(a.0, 1, ptr::null(), 1), tw_result::NullArgument);
        ok(tw_session_send_message(a.0, 1, ptr::null(), 0));
        assert_eq!(tw_session_read_message(a.0, ptr::null_mut(), 0, ptr::null_mut()), tw_result::NullArgument);
        assert_eq!(tw_session_get_message_stats(a.0, ptr::null_mut()), tw_result::NullArgument);
        assert_eq!(tw_session_message_stats_size(), 64);
    }
    // The send side is bounded: four of the largest fit, then QUEUE_FULL until acked.
    let mut accepted = 0;
    while send(a.0, 1, &big) == tw_result::Ok {
        accepted += 1;
        assert!(accepted <= 4, "more than TW_SESSION_MESSAGE_QUEUE_BYTES accepted");
    }
    assert_eq!(send(a.0, 1, &big), tw_result::QueueFull);
    assert!(last_error().contains("session message"), "{}", last_error());
    until(|| {
        step(&mut ea, &mut eb, &mut at_a, &mut at_b);
        send(a.0, 1, b"after the queue drained") == tw_result::Ok
    });
}

#[test]
fn modes_without_messages_say_so() {
    let cfg = session_config(tw_session_mode::Synctest, 2);
    let s = create(&cfg);
    // SAFETY: live session.
    ok(unsafe { tw_session_start(s.0) });
    assert_eq!(send(s.0, TW_SESSION_MESSAGE_TARGET_ALL, b"x"), tw_result::InvalidState);
    assert!(last_error().contains("SyncTest"), "{}", last_error());
    let mut n = 0;
    // SAFETY: live session, valid pointer.
    assert_eq!(unsafe { tw_session_read_message(s.0, ptr::null_mut(), 0, &mut n) }, tw_result::InvalidState);
    assert_eq!(message_stats(s.0), tw_session_message_stats::default());
    let spectator = create(&session_config(tw_session_mode::Spectator, 2));
    assert_eq!(send(spectator.0, TW_SESSION_MESSAGE_TARGET_ALL, b"x"), tw_result::InvalidState);
}

struct Client {
    s: SessionGuard,
    e: Engine,
    pushed: u32,
    got: Vec<Received>,
    joined: bool,
}

#[test]
fn relay_clients_and_server_message_each_other_and_an_unread_flood_costs_only_its_sender() {
    let players = 2;
    let server = create(&session_config(tw_session_mode::RelayServer, players));
    let addr = cstr(&local_address(server.0));
    let mut slots = 0;
    // SAFETY: live session, valid pointers.
    unsafe {
        ok(tw_session_state_slots(server.0, &mut slots));
        ok(tw_session_start(server.0));
    }
    let mut es = Engine::new(players as usize, slots as usize);
    let mut clients: Vec<Client> = (0..2)
        .map(|_| {
            let s = create(&session_config(tw_session_mode::RelayClient, players));
            let mut slots = 0;
            // SAFETY: live session, NUL-terminated address, valid pointer.
            unsafe {
                ok(tw_session_state_slots(s.0, &mut slots));
                ok(tw_session_set_server(s.0, addr.as_ptr()));
                ok(tw_session_start(s.0));
            }
            let mut e = Engine::new(players as usize, slots as usize);
            e.state.iter_mut().for_each(|w| *w = -1);
            Client { s, e, pushed: 0, got: Vec::new(), joined: false }
        })
        .collect();
    assert_eq!(send(clients[0].s.0, TW_SESSION_MESSAGE_TARGET_ALL, b"early"), tw_result::InvalidState);
    assert_eq!(send(clients[0].s.0, 0, b"not a target"), tw_result::InvalidArgument);

    let mut at_server = Vec::new();
    let mut frame = |clients: &mut [Client], at_server: &mut Vec<Received>, read_server: bool| {
        ticks(server.0, &mut es, &[], None);
        if read_server {
            poll(server.0, at_server);
        }
        for c in clients.iter_mut() {
            ticks(c.s.0, &mut c.e, &[], Some(&mut c.pushed));
            let kinds = poll(c.s.0, &mut c.got);
            c.joined |= kinds.contains(&(tw_session_event_kind::Joined as u32));
        }
    };
    until(|| {
        frame(&mut clients, &mut at_server, true);
        clients.iter().all(|c| c.joined)
    });

    // The slots go in the order the Hellos arrived.
    let (p0, p1) = (stats(clients[0].s.0).local_player, stats(clients[1].s.0).local_player);
    ok(send(clients[0].s.0, TW_SESSION_MESSAGE_TARGET_ALL, b"from client 0"));
    ok(send(clients[1].s.0, TW_SESSION_MESSAGE_TARGET_ALL, b"from client 1"));
    ok(send(server.0, p1, b"to player 1"));
    ok(send(server.0, TW_SESSION_MESSAGE_TARGET_ALL, b"to all"));
    until(|| {
        frame(&mut clients, &mut at_server, true);
        at_server.len() == 2 && clients[0].got.len() == 1 && clients[1].got.len() == 2
    });
    let mut from: Vec<(u32, Vec<u8>)> = at_server.iter().map(|m| (m.player, m.data.clone())).collect();
    from.sort();
    let mut want = vec![(p0, b"from client 0".to_vec()), (p1, b"from client 1".to_vec())];
    want.sort();
    assert_eq!(from, want);
    assert!(clients.iter().all(|c| c.got.iter().all(|m| m.player == TW_NO_PLAYER)));
    let data = |c: &Client| c.got.iter().map(|m| m.data.clone()).collect::<Vec<_>>();
    assert_eq!(data(&clients[0]), vec![b"to all".to_vec()]);
    assert_eq!(data(&clients[1]), vec![b"to player 1".to_vec(), b"to all".to_vec()]);
    assert_eq!(send(server.0, 5, b"x"), tw_result::InvalidArgument);

    // Client 0 sends as fast as its bound allows while the server's engine polls no
    // events: its unread messages stop at TW_SESSION_MESSAGE_UNREAD_BYTES, the rest are
    // dropped and counted, and client 1's message still arrives.
    let chunk = vec![3u8; 4096];
    until(|| {
        for _ in 0..8 {
            let r = send(clients[0].s.0, TW_SESSION_MESSAGE_TARGET_ALL, &chunk);
            assert!(matches!(r, tw_result::Ok | tw_result::QueueFull), "{r:?}");
        }
        frame(&mut clients, &mut at_server, false);
        message_stats(server.0).dropped_unread > 0
    });
    ok(send(clients[1].s.0, TW_SESSION_MESSAGE_TARGET_ALL, b"still heard"));
    let before = message_stats(server.0).received;
    until(|| {
        frame(&mut clients, &mut at_server, false);
        message_stats(server.0).received > before
    });
    at_server.clear();
    poll(server.0, &mut at_server);
    let room = TW_SESSION_MESSAGE_UNREAD_BYTES as usize / (chunk.len() + 64);
    let kept = at_server.iter().filter(|m| m.player == p0).count();
    assert!(kept <= room + 1, "{kept} unread messages of client 0 were kept (room for {room})");
    assert!(at_server.iter().any(|m| m.player == p1 && m.data == b"still heard"));
}
