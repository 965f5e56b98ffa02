//! Real UDP over 127.0.0.1 through the C ABI only: connect, reliable and unreliable
//! messages both ways, the read-message buffer contract, stats, the link simulator,
//! disconnect reasons, destroy. Every wait has a deadline.

use crate::support::common;

use std::ffi::CStr;
use std::ptr;
use std::time::{Duration, Instant};

use common::*;
use tickwire::*;

const WAIT: Duration = Duration::from_secs(5);

fn connected_address(p: &Polled) -> String {
    // SAFETY: the caller checked the kind; the library NUL-terminates the address.
    unsafe { CStr::from_ptr(p.event.data.connected.address.as_ptr()) }.to_str().unwrap().to_owned()
}

fn disconnect_reason(p: &Polled) -> u32 {
    // SAFETY: the caller checked the kind.
    unsafe { p.event.data.disconnected.reason }
}

fn send(h: *mut tw_host, peer: u32, channel: u32, data: &[u8]) -> tw_result {
    // SAFETY: live host; the slice is valid for its length.
    unsafe { tw_host_send(h, peer, channel, data.as_ptr(), data.len()) }
}

fn message_from(peer: u32, channel: u32) -> impl FnMut(&Polled) -> bool {
    move |p| {
        // SAFETY: the message member is read only for MESSAGE events.
        p.kind == tw_event_kind::Message as u32 && p.peer == peer && unsafe { p.event.data.message.channel } == channel
    }
}

/// A server and a client host, connected. Returns (server, client, peer id of the
/// client on the server, peer id of the server on the client).
fn connected_pair(max_clients: u32) -> (HostGuard, HostGuard, u32, u32, Pump) {
    let server = loopback_host(max_clients);
    let client = loopback_host(0);
    let server_addr = local_address(server.0);
    let client_addr = local_address(client.0);
    let server_on_client = connect(client.0, &server_addr);
    let mut pump = Pump::new(&[server.0, client.0]);
    let c = pump.wait(1, WAIT, is_kind(tw_event_kind::Connected));
    assert_eq!(c.peer, server_on_client);
    assert_eq!(connected_address(&c), server_addr);
    let s = pump.wait(0, WAIT, is_kind(tw_event_kind::Connected));
    assert_ne!(s.peer, 0);
    assert_eq!(connected_address(&s), client_addr);
    (server, client, s.peer, server_on_client, pump)
}

#[test]
fn round_trip_reliable_and_unreliable() {
    let (server, client, client_on_server, server_on_client, mut pump) = connected_pair(4);

    // Reliable, in order, including an empty message and one that needs fragments.
    let big: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + 3) as u8).collect();
    let msgs: Vec<Vec<u8>> = vec![b"hello".to_vec(), Vec::new(), big.clone(), b"last".to_vec()];
    for m in &msgs {
        assert_eq!(send(client.0, server_on_client, TW_CHANNEL_RELIABLE, m), tw_result::Ok, "{}", last_error());
    }
    for m in &msgs {
        let got = pump.wait(0, WAIT, message_from(client_on_server, TW_CHANNEL_RELIABLE));
        assert_eq!(got.payload.as_deref(), Some(&m[..]), "reliable messages arrive whole and in order");
    }

    // Unreliable: may be lost, so resend until one arrives (loopback rarely drops).
    let end = Instant::now() + WAIT;
    let got = loop {
        assert!(Instant::now() < end, "no unreliable message arrived");
        assert_eq!(send(client.0, server_on_client, TW_CHANNEL_UNRELIABLE, b"ping"), tw_result::Ok, "{}", last_error());
        pump.step();
        if let Some(pos) = pump.backlog[0].iter().position(message_from(client_on_server, TW_CHANNEL_UNRELIABLE)) {
            break pump.backlog[0].remove(pos);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(got.payload.as_deref(), Some(&b"ping"[..]));

    // And back, on the sequenced channel too.
    assert_eq!(send(server.0, client_on_server, TW_CHANNEL_RELIABLE, b"pong"), tw_result::Ok);
    let back = pump.wait(1, WAIT, message_from(server_on_client, TW_CHANNEL_RELIABLE));
    assert_eq!(back.payload.as_deref(), Some(&b"pong"[..]));

    // Stats on both sides show the traffic. They are snapshots the network thread
    // publishes every few milliseconds, so wait for one that includes it.
    let end = Instant::now() + WAIT;
    let (ps, hs) = loop {
        let mut ps = std::mem::MaybeUninit::<tw_peer_stats>::uninit();
        let mut hs = std::mem::MaybeUninit::<tw_host_stats>::uninit();
        // SAFETY: live hosts, writable stats.
        unsafe {
            assert_eq!(
                tw_host_peer_stats(client.0, server_on_client, ps.as_mut_ptr()),
                tw_result::Ok,
                "{}",
                last_error()
            );
            assert_eq!(tw_host_get_stats(server.0, hs.as_mut_ptr()), tw_result::Ok, "{}", last_error());
        }
        // SAFETY: both written on OK.
        let (ps, hs) = unsafe { (ps.assume_init(), hs.assume_init()) };
        if ps.bytes_sent >= big.len() as u64 && ps.packets_received > 0 && hs.bytes_received >= big.len() as u64 {
            break (ps, hs);
        }
        assert!(Instant::now() < end, "stats never showed the traffic: {ps:?} {hs:?}");
        pump.step();
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(ps.packets_sent > 0, "{ps:?}");
    assert!(ps.srtt_us > 0.0 && ps.srtt_us < 1_000_000.0, "{ps:?}");
    assert!(ps.min_rtt_us > 0.0 && ps.min_rtt_us <= ps.srtt_us * 4.0, "{ps:?}");
    assert!((0.0..=1.0).contains(&ps.loss), "{ps:?}");
    assert!(ps.rto_us > 0.0, "{ps:?}");
    assert_eq!(hs.connections, 1, "{hs:?}");
    assert!(hs.datagrams_received > 0 && hs.datagrams_sent > 0, "{hs:?}");
}

#[test]
fn read_message_buffer_contract() {
    let (server, client, client_on_server, server_on_client, _pump) = connected_pair(4);
    let payload: Vec<u8> = (0..100u8).collect();
    assert_eq!(send(client.0, server_on_client, TW_CHANNEL_RELIABLE, &payload), tw_result::Ok);
    assert_eq!(send(client.0, server_on_client, TW_CHANNEL_RELIABLE, b"second"), tw_result::Ok);
    // SAFETY: live host.
    assert_eq!(unsafe { tw_host_flush(client.0) }, tw_result::Ok);

    // Poll the server by hand so the payload stays unread.
    let end = Instant::now() + WAIT;
    let mut ev = tw_event::zeroed();
    loop {
        assert!(Instant::now() < end, "the message did not arrive");
        // SAFETY: live host, writable event.
        let r = unsafe { tw_host_poll_event(server.0, &mut ev) };
        if r == tw_result::Ok && ev.kind == tw_event_kind::Message as u32 {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(ev.peer, client_on_server);
    // SAFETY: kind is MESSAGE.
    assert_eq!(unsafe { ev.data.message.size }, 100);

    let mut buf = [0xAAu8; 128];
    let mut n = 0usize;
    // SAFETY: live host; buffers valid for the lengths given.
    unsafe {
        assert_err(
            tw_host_read_message(server.0, buf.as_mut_ptr(), 10, &mut n),
            tw_result::BufferTooSmall,
            "tw_host_read_message",
            "100 bytes",
        );
        assert_eq!(n, 100);
        assert!(buf.iter().all(|&b| b == 0xAA), "nothing copied on BUFFER_TOO_SMALL");
        n = 0;
        assert_err(
            tw_host_read_message(server.0, ptr::null_mut(), 0, &mut n),
            tw_result::BufferTooSmall,
            "tw_host_read_message",
            "100 bytes",
        );
        assert_eq!(n, 100);
        // The message was kept: read it now.
        assert_eq!(tw_host_read_message(server.0, buf.as_mut_ptr(), buf.len(), &mut n), tw_result::Ok);
        assert_eq!(n, 100);
        assert_eq!(&buf[..100], &payload[..]);
        assert_eq!(buf[100], 0xAA, "nothing written past the payload");
        // Read once only.
        assert_err(
            tw_host_read_message(server.0, buf.as_mut_ptr(), buf.len(), &mut n),
            tw_result::InvalidState,
            "tw_host_read_message",
            "no unread message",
        );
    }

    // An unread payload is released by the next poll.
    loop {
        assert!(Instant::now() < end, "the second message did not arrive");
        // SAFETY: live host, writable event.
        let r = unsafe { tw_host_poll_event(server.0, &mut ev) };
        if r == tw_result::Ok && ev.kind == tw_event_kind::Message as u32 {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: live host, writable event.
    let r = unsafe { tw_host_poll_event(server.0, &mut ev) };
    assert!(r == tw_result::Empty || r == tw_result::Ok);
    if r == tw_result::Empty || ev.kind != tw_event_kind::Message as u32 {
        // SAFETY: live host, valid buffers.
        let r = unsafe { tw_host_read_message(server.0, buf.as_mut_ptr(), buf.len(), &mut n) };
        assert_eq!(r, tw_result::InvalidState, "a payload survived the next poll");
    }
}

#[test]
fn send_errors_on_a_connected_peer() {
    let mut cfg = default_config();
    cfg.max_clients = 2;
    cfg.max_message_size = 1000;
    cfg.send_queue_limit_bytes = 1000;
    let server = create_host(&cfg, "127.0.0.1:0").unwrap_or_else(|e| panic!("{e:?}"));
    let mut ccfg = default_config();
    ccfg.max_message_size = 1000;
    // Room for both 900-byte messages below and for the 1-byte flood: the per-peer limit
    // has its own test (send_queue_limit_is_enforced_synchronously).
    ccfg.send_queue_limit_bytes = 1 << 20;
    let client = create_host(&ccfg, "127.0.0.1:0").unwrap_or_else(|e| panic!("{e:?}"));
    let peer = connect(client.0, &local_address(server.0));
    let mut pump = Pump::new(&[server.0, client.0]);
    pump.wait(1, WAIT, is_kind(tw_event_kind::Connected));

    assert_err(
        send(client.0, peer, TW_CHANNEL_RELIABLE, &[0u8; 1001]),
        tw_result::MessageTooLarge,
        "tw_host_send",
        "1001",
    );
    assert_err(send(client.0, peer, 7, b"x"), tw_result::InvalidArgument, "tw_host_send", "channel 7");
    // One datagram is the limit off the reliable channel.
    let fits = vec![2u8; 900];
    let over = vec![2u8; TW_MAX_UNRELIABLE_SIZE as usize + 1];
    for channel in [TW_CHANNEL_UNRELIABLE, TW_CHANNEL_SEQUENCED] {
        assert_eq!(send(client.0, peer, channel, &fits), tw_result::Ok, "{}", last_error());
        assert_err(send(client.0, peer, channel, &over), tw_result::MessageTooLarge, "tw_host_send", "");
    }
    // Without flushing, sends pile up in the bounded queue to the network thread until
    // it reports back-pressure instead of growing without bound.
    let mut saw_full = false;
    for _ in 0..100_000 {
        let r = send(client.0, peer, TW_CHANNEL_UNRELIABLE, b"x");
        if r == tw_result::QueueFull {
            assert!(last_error().starts_with("tw_host_send: "), "{}", last_error());
            saw_full = true;
            break;
        }
        assert_eq!(r, tw_result::Ok, "{}", last_error());
    }
    assert!(saw_full, "100000 sends without a flush never reported QUEUE_FULL");
}

fn numbered(i: u32, len: usize) -> Vec<u8> {
    let mut v = i.to_le_bytes().to_vec();
    v.resize(len.max(4), (i % 251) as u8);
    v
}

fn host_stats(h: *mut tw_host) -> tw_host_stats {
    let mut hs = std::mem::MaybeUninit::<tw_host_stats>::uninit();
    // SAFETY: live host, writable stats.
    assert_eq!(unsafe { tw_host_get_stats(h, hs.as_mut_ptr()) }, tw_result::Ok, "{}", last_error());
    // SAFETY: written on OK.
    unsafe { hs.assume_init() }
}

/// `send_queue_limit_bytes` is enforced by `tw_host_send` itself: a message that could
/// take the peer's send queue over it is refused with QUEUE_FULL at once, and every
/// message that was accepted arrives, in order, once the queue drains.
#[test]
fn send_queue_limit_is_enforced_synchronously() {
    const LIMIT: u32 = 4000;
    const SIZE: usize = 1000;
    let server = loopback_host(2);
    let mut ccfg = default_config();
    ccfg.max_message_size = SIZE as u32;
    ccfg.send_queue_limit_bytes = LIMIT;
    let client = create_host(&ccfg, "127.0.0.1:0").unwrap_or_else(|e| panic!("{e:?}"));
    let peer = connect(client.0, &local_address(server.0));
    let mut pump = Pump::new(&[server.0, client.0]);
    pump.wait(1, WAIT, is_kind(tw_event_kind::Connected));
    let from_client = pump.wait(0, WAIT, is_kind(tw_event_kind::Connected)).peer;

    // Nothing is flushed, so nothing drains: exactly LIMIT / SIZE messages fit.
    let mut next = 0u32;
    loop {
        let r = send(client.0, peer, TW_CHANNEL_RELIABLE, &numbered(next, SIZE));
        if r != tw_result::Ok {
            assert_err(r, tw_result::QueueFull, "tw_host_send", "send_queue_limit_bytes");
            break;
        }
        next += 1;
        assert!(next <= LIMIT, "tw_host_send never refused a message over the limit");
    }
    assert_eq!(next, LIMIT / SIZE as u32, "accepted exactly what fits in the limit");
    // The limit covers the whole connection, every channel.
    assert_err(
        send(client.0, peer, TW_CHANNEL_UNRELIABLE, b"x"),
        tw_result::QueueFull,
        "tw_host_send",
        "send queue to peer",
    );
    assert_eq!(send(client.0, peer, TW_CHANNEL_UNRELIABLE, &[]), tw_result::Ok, "an empty message takes no room");

    // Keep sending, retrying refused messages on later "frames" while the queue drains
    // (the peer acknowledges): ten times the limit goes through.
    let total = 10 * LIMIT / SIZE as u32;
    let end = Instant::now() + WAIT;
    let mut refused = 0u32;
    while next < total {
        assert!(Instant::now() < end, "sending stalled at message {next} of {total}");
        match send(client.0, peer, TW_CHANNEL_RELIABLE, &numbered(next, SIZE)) {
            tw_result::Ok => next += 1,
            tw_result::QueueFull => {
                refused += 1;
                pump.step();
                std::thread::sleep(Duration::from_millis(1));
            }
            r => panic!("unexpected {r:?}: {}", last_error()),
        }
    }
    assert!(refused > 0, "the queue never filled while sending {total} messages");

    // Every accepted message arrives, whole and in order.
    for i in 0..total {
        let got = pump.wait(0, WAIT, message_from(from_client, TW_CHANNEL_RELIABLE));
        assert_eq!(got.payload.as_deref(), Some(&numbered(i, SIZE)[..]), "reliable message {i}");
    }
    assert_eq!(host_stats(client.0).sends_rejected, 0, "the network thread dropped nothing");
}

#[test]
fn disconnect_is_seen_on_both_sides_with_reasons() {
    let (server, client, client_on_server, server_on_client, mut pump) = connected_pair(4);
    // SAFETY: live host.
    assert_eq!(unsafe { tw_host_disconnect(client.0, server_on_client) }, tw_result::Ok, "{}", last_error());
    let d = pump.wait(0, WAIT, is_kind(tw_event_kind::Disconnected));
    assert_eq!(d.peer, client_on_server);
    assert_eq!(disconnect_reason(&d), tw_disconnect_reason::Client as u32);
    let d = pump.wait(1, WAIT, is_kind(tw_event_kind::Disconnected));
    assert_eq!(d.peer, server_on_client);
    // The peer is gone: sends and stats say so.
    assert_err(send(client.0, server_on_client, TW_CHANNEL_RELIABLE, b"x"), tw_result::UnknownPeer, "tw_host_send", "");
    let mut ps = std::mem::MaybeUninit::<tw_peer_stats>::uninit();
    // SAFETY: live host, writable stats.
    let r = unsafe { tw_host_peer_stats(server.0, client_on_server, ps.as_mut_ptr()) };
    assert_err(r, tw_result::UnknownPeer, "tw_host_peer_stats", "");
}

#[test]
fn server_full_and_connect_timeout() {
    let server = loopback_host(1);
    let addr = local_address(server.0);
    let first = loopback_host(0);
    let mut cfg = default_config();
    cfg.connect_timeout_ms = 1500;
    let second = create_host(&cfg, "127.0.0.1:0").unwrap_or_else(|e| panic!("{e:?}"));
    let mut pump = Pump::new(&[server.0, first.0, second.0]);
    let p1 = connect(first.0, &addr);
    let c = pump.wait(1, WAIT, is_kind(tw_event_kind::Connected));
    assert_eq!(c.peer, p1);
    let p2 = connect(second.0, &addr);
    let d = pump.wait(2, WAIT, is_kind(tw_event_kind::Disconnected));
    assert_eq!(d.peer, p2);
    assert_eq!(disconnect_reason(&d), tw_disconnect_reason::ServerFull as u32);

    // Nobody listens on the port of a host that was just destroyed.
    let gone_addr = {
        let tmp = loopback_host(0);
        local_address(tmp.0)
    };
    let p3 = connect(second.0, &gone_addr);
    let d = pump.wait(2, WAIT, |p| p.kind == tw_event_kind::Disconnected as u32 && p.peer == p3);
    assert_eq!(disconnect_reason(&d), tw_disconnect_reason::Timeout as u32);
}

#[test]
fn link_simulator_drops_everything_at_full_loss() {
    let (_server, client, client_on_server, server_on_client, mut pump) = connected_pair(4);
    let mut lossy = default_link();
    lossy.loss_kind = tw_loss_kind::Bernoulli as u32;
    lossy.loss_probability = 1.0;
    // SAFETY: live host, valid config.
    let r = unsafe { tw_host_set_link_sim(client.0, tw_direction::Outbound as u32, &lossy) };
    assert_eq!(r, tw_result::Ok, "{}", last_error());
    for _ in 0..20 {
        assert_eq!(send(client.0, server_on_client, TW_CHANNEL_UNRELIABLE, b"lost"), tw_result::Ok);
        pump.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !pump.backlog[0].iter().any(message_from(client_on_server, TW_CHANNEL_UNRELIABLE)),
        "a message crossed a link with loss 1.0"
    );
    // Off again: traffic flows.
    // SAFETY: live host; NULL turns the simulator off.
    assert_eq!(unsafe { tw_host_set_link_sim(client.0, tw_direction::Outbound as u32, ptr::null()) }, tw_result::Ok);
    assert_eq!(send(client.0, server_on_client, TW_CHANNEL_RELIABLE, b"through"), tw_result::Ok);
    let got = pump.wait(0, WAIT, message_from(client_on_server, TW_CHANNEL_RELIABLE));
    assert_eq!(got.payload.as_deref(), Some(&b"through"[..]));
}

#[test]
fn destroy_with_live_connections_returns_promptly() {
    let (server, client, _, _, _pump) = connected_pair(4);
    let t = Instant::now();
    // SAFETY: live hosts, each destroyed once (forget the guards).
    unsafe {
        tw_host_destroy(client.0);
        tw_host_destroy(server.0);
    }
    std::mem::forget(client);
    std::mem::forget(server);
    // The documented bound is about 1 s each; allow slack for a loaded machine.
    assert!(t.elapsed() < Duration::from_secs(5), "destroy took {:?}", t.elapsed());
}

/// A bare host acknowledges a one-way stream of unreliable messages sparsely: a server
/// that only receives 160 inputs, 8 ms apart, answers with about 10 ack-only packets
/// (one per 16), not one per 20 ms ack delay (about 60).
#[test]
fn one_way_unreliable_inputs_cost_the_receiver_one_ack_per_16() {
    let (server, client, _client_on_server, server_on_client, mut pump) = connected_pair(4);
    // Quiet first: the handshake's packets are behind us.
    std::thread::sleep(Duration::from_millis(100));
    pump.step();
    let stats = |h: *mut tw_host| {
        let mut st = std::mem::MaybeUninit::<tw_host_stats>::uninit();
        // SAFETY: live host, writable stats.
        assert_eq!(unsafe { tw_host_get_stats(h, st.as_mut_ptr()) }, tw_result::Ok, "{}", last_error());
        // SAFETY: filled on OK.
        unsafe { st.assume_init() }
    };
    let before = stats(server.0).datagrams_sent;
    let inputs = 160;
    for i in 0..inputs {
        assert_eq!(send(client.0, server_on_client, TW_CHANNEL_UNRELIABLE, &[i as u8; 32]), tw_result::Ok);
        pump.step();
        std::thread::sleep(Duration::from_millis(8));
    }
    // Statistics are published within 20 ms of a change.
    std::thread::sleep(Duration::from_millis(60));
    pump.step();
    let received = pump.backlog[0].iter().filter(|p| p.kind == tw_event_kind::Message as u32).count();
    let acks = stats(server.0).datagrams_sent - before;
    println!("{received} inputs received, {acks} packets sent back");
    assert!(received >= inputs * 9 / 10, "{received} of {inputs} arrived");
    // One per 16 received, and at most a keepalive (1 s apart) on top.
    let expected = received as u64 / 16;
    assert!(acks >= expected.saturating_sub(1) && acks <= expected + 2, "{acks} packets for {received} inputs");
}
