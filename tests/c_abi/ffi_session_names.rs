//! Sessions given host names and IPv6 through the C ABI: a P2P pair and a relay
//! client by "localhost", the automatic bind, and names that do not resolve (".invalid",
//! RFC 6761), which come out as events, never as a blocked call.

use crate::support::abi_engine;

use std::ffi::{CStr, c_char};
use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

const SEED: u64 = 31;
const PERIOD: u32 = 4;

fn port_of(addr: &str) -> u16 {
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

fn set_bind(c: &mut tw_session_config, bind: &str) {
    c.bind_address = [0; 64];
    for (d, s) in c.bind_address.iter_mut().zip(bind.as_bytes()) {
        *d = *s as c_char;
    }
}

fn has_kind(events: &[tw_session_event], k: tw_session_event_kind) -> bool {
    events.iter().any(|e| e.kind == k as u32)
}

fn kinds(events: &[tw_session_event]) -> Vec<u32> {
    events.iter().map(|e| e.kind).collect()
}

/// Calls `f` until it returns within a bounded time (a call that blocked on a lookup
/// would show here).
#[track_caller]
fn quick<T>(f: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    let r = f();
    assert!(t0.elapsed() < Duration::from_millis(200), "the call took {:?}", t0.elapsed());
    r
}

/// A P2P pair whose peers know each other as "localhost:port" (`bind` for both).
fn p2p_by_name(bind: &str) {
    let mut cfg = session_config(tw_session_mode::P2p, 2);
    set_bind(&mut cfg, bind);
    let (a, b) = (create(&cfg), create(&cfg));
    let name_a = cstr(&format!("localhost:{}", port_of(&local_address(a.0))));
    let name_b = cstr(&format!("localhost:{}", port_of(&local_address(b.0))));
    // SAFETY: live sessions, NUL-terminated addresses.
    unsafe {
        ok(tw_session_add_local_player(a.0, 0));
        quick(|| ok(tw_session_add_remote_player(a.0, 1, name_b.as_ptr())));
        quick(|| ok(tw_session_add_remote_player(b.0, 0, name_a.as_ptr())));
        ok(tw_session_add_local_player(b.0, 1));
        quick(|| ok(tw_session_start(a.0)));
        quick(|| ok(tw_session_start(b.0)));
    }
    let mut slots = 0u32;
    // SAFETY: live session, writable out.
    ok(unsafe { tw_session_state_slots(a.0, &mut slots) });
    let (mut ea, mut eb) = (Engine::new(2, slots as usize), Engine::new(2, slots as usize));
    let (mut ev_a, mut ev_b) = (Vec::new(), Vec::new());
    let end = Instant::now() + Duration::from_secs(15);
    while !(has_kind(&ev_a, tw_session_event_kind::Synchronized)
        && has_kind(&ev_b, tw_session_event_kind::Synchronized))
    {
        assert!(Instant::now() < end, "not synchronized by name: {:?} / {:?}", kinds(&ev_a), kinds(&ev_b));
        frame(a.0, &mut ea, &[0], SEED, PERIOD, &mut ev_a);
        frame(b.0, &mut eb, &[1], SEED, PERIOD, &mut ev_b);
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(!has_kind(&ev_a, tw_session_event_kind::Fatal) && !has_kind(&ev_b, tw_session_event_kind::Fatal));
}

#[test]
fn a_p2p_pair_by_localhost() {
    p2p_by_name("127.0.0.1:0");
}

#[test]
fn a_p2p_pair_by_localhost_on_the_automatic_bind() {
    p2p_by_name("");
}

#[test]
fn a_p2p_peer_whose_name_does_not_resolve_ends_the_session_with_a_fatal_event() {
    let cfg = session_config(tw_session_mode::P2p, 2);
    let a = create(&cfg);
    let bad = cstr("peer.example.invalid:7000");
    // SAFETY: live session, NUL-terminated address.
    unsafe {
        ok(tw_session_add_local_player(a.0, 0));
        quick(|| ok(tw_session_add_remote_player(a.0, 1, bad.as_ptr())));
        ok(tw_session_start(a.0));
    }
    let mut events = Vec::new();
    let end = Instant::now() + Duration::from_secs(20);
    while !has_kind(&events, tw_session_event_kind::Fatal) {
        assert!(Instant::now() < end, "no FATAL: {:?}", kinds(&events));
        let mut n = 0u32;
        // SAFETY: live session.
        if unsafe { tw_session_ticks_due(a.0, &mut n) } != tw_result::Ok {
            break;
        }
        let mut ev = tw_session_event::zeroed();
        // SAFETY: live session, writable event.
        while unsafe { tw_session_poll_event(a.0, &mut ev) } == tw_result::Ok {
            events.push(ev);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let fatal = events.iter().find(|e| e.kind == tw_session_event_kind::Fatal as u32).unwrap();
    // SAFETY: a FATAL event's member, NUL-terminated.
    let msg = unsafe { CStr::from_ptr(fatal.data.fatal.message.as_ptr()) }.to_string_lossy().into_owned();
    assert!(msg.contains("player 1") && msg.contains("example.invalid"), "{msg}");
}

/// A relay server on `server_bind` and a client on `client_bind` that joins it by
/// `server_text(port)`; returns once the client has joined.
fn relay_join(server_bind: &str, client_bind: &str, server_text: impl Fn(u16) -> String) {
    let mut cfg = session_config(tw_session_mode::RelayServer, 2);
    set_bind(&mut cfg, server_bind);
    let server = create(&cfg);
    let port = port_of(&local_address(server.0));
    let mut slots = 0u32;
    // SAFETY: live session.
    unsafe {
        ok(tw_session_state_slots(server.0, &mut slots));
        ok(tw_session_start(server.0));
    }
    let mut ccfg = session_config(tw_session_mode::RelayClient, 2);
    set_bind(&mut ccfg, client_bind);
    let client = create(&ccfg);
    let text = cstr(&server_text(port));
    // SAFETY: live session, NUL-terminated address.
    unsafe {
        quick(|| ok(tw_session_set_server(client.0, text.as_ptr())));
        quick(|| ok(tw_session_start(client.0)));
    }
    let mut client_slots = 0u32;
    // SAFETY: live session.
    ok(unsafe { tw_session_state_slots(client.0, &mut client_slots) });
    let mut es = Engine::new(2, slots as usize);
    let mut ec = Engine::new(2, client_slots as usize);
    let (mut ev_s, mut ev_c, mut pushed) = (Vec::new(), Vec::new(), 0u32);
    let end = Instant::now() + Duration::from_secs(15);
    while !has_kind(&ev_c, tw_session_event_kind::Joined) {
        assert!(Instant::now() < end, "{:?}: no JOINED: {:?}", text, kinds(&ev_c));
        frame(server.0, &mut es, &[], SEED, PERIOD, &mut ev_s);
        relay_client_frame(client.0, &mut ec, 0, &mut pushed, (SEED, PERIOD), &mut ev_c);
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_relay_client_joins_by_localhost() {
    relay_join("127.0.0.1:0", "127.0.0.1:0", |p| format!("localhost:{p}"));
}

#[test]
fn a_relay_client_on_the_automatic_bind_joins_an_ipv6_server_and_an_ipv4_one() {
    if std::net::UdpSocket::bind("[::1]:0").is_ok() {
        relay_join("[::1]:0", "", |p| format!("[::1]:{p}"));
    }
    relay_join("127.0.0.1:0", "", |p| format!("127.0.0.1:{p}"));
    relay_join("127.0.0.1:0", "", |p| format!("localhost:{p}"));
}

#[test]
fn an_ipv6_server_from_the_default_ipv4_bind_is_refused_clearly() {
    let cfg = session_config(tw_session_mode::RelayClient, 2);
    let client = create(&cfg);
    let text = cstr("[::1]:7000");
    // SAFETY: live session, NUL-terminated address.
    let r = unsafe { tw_session_set_server(client.0, text.as_ptr()) };
    assert_eq!(r, tw_result::InvalidArgument);
    let msg = last_error();
    assert!(msg.contains("IPv6") && msg.contains("bind address empty"), "{msg}");
}

#[test]
fn a_relay_server_name_that_does_not_resolve_is_server_lost_with_its_reason() {
    let cfg = session_config(tw_session_mode::RelayClient, 2);
    let client = create(&cfg);
    let text = cstr("relay.example.invalid:7000");
    // SAFETY: live session, NUL-terminated address.
    unsafe {
        quick(|| ok(tw_session_set_server(client.0, text.as_ptr())));
        quick(|| ok(tw_session_start(client.0)));
    }
    let mut slots = 0u32;
    // SAFETY: live session.
    ok(unsafe { tw_session_state_slots(client.0, &mut slots) });
    let mut e = Engine::new(2, slots as usize);
    let (mut events, mut pushed) = (Vec::new(), 0u32);
    let end = Instant::now() + Duration::from_secs(20);
    while !has_kind(&events, tw_session_event_kind::ServerLost) {
        assert!(Instant::now() < end, "no SERVER_LOST: {:?}", kinds(&events));
        relay_client_frame(client.0, &mut e, 0, &mut pushed, (SEED, PERIOD), &mut events);
        std::thread::sleep(Duration::from_millis(5));
    }
    let lost = events.iter().find(|e| e.kind == tw_session_event_kind::ServerLost as u32).unwrap();
    // SAFETY: the kind says the relay member is live.
    assert_eq!(unsafe { lost.data.relay.reason }, tw_disconnect_reason::ResolveFailed as u32);
    // No tick follows.
    let mut n = 0u32;
    // SAFETY: live session.
    ok(unsafe { tw_session_ticks_due(client.0, &mut n) });
    assert_eq!(n, 0);
    // And advance answers as after any SERVER_LOST (issue 18, 7: both ways the same).
    // SAFETY: live session.
    assert_eq!(unsafe { tw_session_advance(client.0) }, tw_result::Finished);
}

#[test]
fn session_addresses_refuse_bad_names_at_once() {
    let cfg = session_config(tw_session_mode::RelayClient, 2);
    let client = create(&cfg);
    for bad in ["relay.example.com", "relay..example.com:7000", "relay.example.com:0", "[relay]:7000", "x:99999"] {
        let text = cstr(bad);
        // SAFETY: live session, NUL-terminated address.
        let r = unsafe { tw_session_set_server(client.0, text.as_ptr()) };
        assert_eq!(r, tw_result::InvalidArgument, "{bad}");
        assert!(last_error().starts_with("tw_session_set_server: "), "{}", last_error());
    }
}

/// Pumps `sessions` (ticks due, events) until `done` holds for the events of the last
/// one, or panics after `limit`.
fn pump_until(
    sessions: &[*mut tw_session],
    limit: Duration,
    mut done: impl FnMut(&[tw_session_event]) -> bool,
) -> Vec<tw_session_event> {
    let mut last = Vec::new();
    let end = Instant::now() + limit;
    while !done(&last) {
        assert!(Instant::now() < end, "not done: {:?}", kinds(&last));
        for (i, &s) in sessions.iter().enumerate() {
            let mut n = 0u32;
            // SAFETY: live session, writable out.
            let r = unsafe { tw_session_ticks_due(s, &mut n) };
            assert!(!r.is_err(), "{r:?}: {}", last_error());
            let mut ev = tw_session_event::zeroed();
            // SAFETY: live session, writable event.
            while unsafe { tw_session_poll_event(s, &mut ev) } == tw_result::Ok {
                if i + 1 == sessions.len() {
                    last.push(ev);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    last
}

#[test]
fn a_spectator_reaches_its_host_by_localhost() {
    let spec = create(&session_config(tw_session_mode::Spectator, 2));
    let spec_addr = cstr(&local_address(spec.0));
    // The watched peer: its own remote player never comes, so its match never runs,
    // but it accepts the spectator it registered.
    let host = create(&session_config(tw_session_mode::P2p, 2));
    let nobody = cstr("127.0.0.1:9");
    let name = cstr(&format!("localhost:{}", port_of(&local_address(host.0))));
    // SAFETY: live sessions, NUL-terminated addresses.
    unsafe {
        ok(tw_session_add_local_player(host.0, 0));
        ok(tw_session_add_remote_player(host.0, 1, nobody.as_ptr()));
        ok(tw_session_add_spectator(host.0, spec_addr.as_ptr()));
        ok(tw_session_start(host.0));
        quick(|| ok(tw_session_spectate(spec.0, name.as_ptr())));
        quick(|| ok(tw_session_start(spec.0)));
    }
    pump_until(&[host.0, spec.0], Duration::from_secs(15), |ev| has_kind(ev, tw_session_event_kind::PeerConnected));
}

#[test]
fn a_spectator_whose_host_name_does_not_resolve_ends_with_a_fatal_event() {
    let spec = create(&session_config(tw_session_mode::Spectator, 2));
    let name = cstr("host.example.invalid:7000");
    // SAFETY: live session, NUL-terminated address.
    unsafe {
        quick(|| ok(tw_session_spectate(spec.0, name.as_ptr())));
        ok(tw_session_start(spec.0));
    }
    let events = pump_until(&[spec.0], Duration::from_secs(20), |ev| has_kind(ev, tw_session_event_kind::Fatal));
    let fatal = events.iter().find(|e| e.kind == tw_session_event_kind::Fatal as u32).unwrap();
    // SAFETY: a FATAL event's member, NUL-terminated.
    let msg = unsafe { CStr::from_ptr(fatal.data.fatal.message.as_ptr()) }.to_string_lossy().into_owned();
    assert!(msg.contains("watched host") && msg.contains("example.invalid"), "{msg}");
}
