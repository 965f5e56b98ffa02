//! Addresses through the C ABI: host names (resolved off the caller's thread), IPv6
//! literals, and the automatic bind (NULL or "" bind_address: dual-stack).
//!
//! No test needs the internet: "localhost" comes from /etc/hosts (or the system's
//! equivalent) and names under ".invalid" never resolve (RFC 6761).

use crate::support::common;

use std::ffi::{CString, c_char};
use std::ptr;
use std::time::{Duration, Instant};

use common::*;
use tickwire::*;

/// A host bound to `bind` (NULL when None).
fn host_at(bind: Option<&str>, max_clients: u32) -> Result<HostGuard, (tw_result, String)> {
    let mut cfg = default_config();
    cfg.max_clients = max_clients;
    match bind {
        Some(b) => create_host(&cfg, b),
        None => {
            let mut h: *mut tw_host = ptr::null_mut();
            // SAFETY: valid config, NULL bind address (allowed), writable out pointer.
            let r = unsafe { tw_host_create(&cfg, ptr::null(), &mut h) };
            if r == tw_result::Ok { Ok(HostGuard(h)) } else { Err((r, last_error())) }
        }
    }
}

fn port_of(addr: &str) -> u16 {
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

/// Whether this machine has an IPv6 loopback (containers may not).
fn has_ipv6_loopback() -> bool {
    std::net::UdpSocket::bind("[::1]:0").is_ok()
}

fn try_connect(h: *mut tw_host, text: &str) -> (tw_result, u32) {
    let c = CString::new(text).unwrap();
    let mut peer = 0u32;
    // SAFETY: live host, NUL-terminated text, writable out pointer.
    let r = unsafe { tw_host_connect(h, c.as_ptr(), &mut peer) };
    (r, peer)
}

/// Connects `client` to `server` by `text` and checks a message goes both ways.
fn connect_and_talk(server: &HostGuard, client: &HostGuard, text: &str) {
    let peer = connect(client.0, text);
    // Sent before the name is resolved: held, then delivered in order.
    // SAFETY: live host, valid bytes.
    unsafe {
        assert_eq!(tw_host_send(client.0, peer, TW_CHANNEL_RELIABLE, b"one".as_ptr(), 3), tw_result::Ok);
        assert_eq!(tw_host_send(client.0, peer, TW_CHANNEL_RELIABLE, b"two".as_ptr(), 3), tw_result::Ok);
    }
    let mut pump = Pump::new(&[server.0, client.0]);
    let c = pump.wait(1, Duration::from_secs(10), is_kind(tw_event_kind::Connected));
    assert_eq!(c.peer, peer);
    // SAFETY: a CONNECTED event's member, NUL-terminated.
    let seen = unsafe { std::ffi::CStr::from_ptr(c.event.data.connected.address.as_ptr()) };
    assert_eq!(seen.to_str().unwrap(), local_address(server.0), "shown as the server's own address, IPv4 unmapped");
    for want in [&b"one"[..], b"two"] {
        let m = pump.wait(0, Duration::from_secs(10), is_kind(tw_event_kind::Message));
        assert_eq!(m.payload.as_deref(), Some(want), "{text}");
    }
}

#[test]
fn connect_by_localhost_from_an_ipv4_host() {
    let server = loopback_host(4);
    let client = loopback_host(0);
    let port = port_of(&local_address(server.0));
    connect_and_talk(&server, &client, &format!("localhost:{port}"));
}

#[test]
fn an_ipv6_literal_connects_from_an_ipv6_socket_and_is_refused_from_an_ipv4_one() {
    if !has_ipv6_loopback() {
        eprintln!("skipped: no IPv6 loopback here");
        return;
    }
    let server = host_at(Some("[::1]:0"), 4).unwrap();
    let port = port_of(&local_address(server.0));
    let client = host_at(Some("[::1]:0"), 0).unwrap();
    connect_and_talk(&server, &client, &format!("[::1]:{port}"));

    let v4 = loopback_host(0);
    let (r, peer) = try_connect(v4.0, &format!("[::1]:{port}"));
    assert_eq!(r, tw_result::InvalidArgument);
    assert_eq!(peer, 0);
    let msg = last_error();
    assert!(msg.contains("IPv6") && msg.contains("empty"), "{msg}");
}

#[test]
fn the_automatic_bind_is_dual_stack_and_reaches_both_families() {
    let v4_server = loopback_host(4);
    let v4_port = port_of(&local_address(v4_server.0));
    for bind in [None, Some("")] {
        let client = host_at(bind, 0).unwrap_or_else(|e| panic!("{e:?}"));
        let local = local_address(client.0);
        assert!(local.starts_with("[::]:") || local.starts_with("0.0.0.0:"), "{local}");
        connect_and_talk(&v4_server, &client, &format!("127.0.0.1:{v4_port}"));
        if has_ipv6_loopback() {
            assert!(local.starts_with("[::]:"), "IPv6 is there, the bind should use it: {local}");
            let v6_server = host_at(Some("[::1]:0"), 4).unwrap();
            let v6_port = port_of(&local_address(v6_server.0));
            connect_and_talk(&v6_server, &client, &format!("[::1]:{v6_port}"));
            // A name on a dual-stack socket takes the IPv4 address first: the server
            // bound to 127.0.0.1 is reached.
            let c2 = host_at(bind, 0).unwrap();
            connect_and_talk(&v4_server, &c2, &format!("localhost:{v4_port}"));
        }
    }
}

#[test]
fn an_unresolvable_name_is_a_disconnect_with_its_reason_soon() {
    let client = loopback_host(0);
    let t0 = Instant::now();
    let (r, peer) = try_connect(client.0, "example.invalid:7777");
    assert_eq!(r, tw_result::Ok, "{}", last_error());
    assert_ne!(peer, 0);
    assert!(t0.elapsed() < Duration::from_millis(200), "the call waited: {:?}", t0.elapsed());
    let mut pump = Pump::new(&[client.0]);
    let d = pump.wait(0, Duration::from_secs(20), is_kind(tw_event_kind::Disconnected));
    assert_eq!(d.peer, peer);
    // SAFETY: a DISCONNECTED event's member.
    assert_eq!(unsafe { d.event.data.disconnected.reason }, tw_disconnect_reason::ResolveFailed as u32);
    // The peer is gone: sending to it is refused.
    // SAFETY: live host.
    let r = unsafe { tw_host_send(client.0, peer, TW_CHANNEL_RELIABLE, b"x".as_ptr(), 1) };
    assert_eq!(r, tw_result::UnknownPeer);
}

#[test]
fn disconnecting_while_the_name_resolves_reports_the_disconnect_once() {
    let client = loopback_host(0);
    let (r, peer) = try_connect(client.0, "localhost:9");
    assert_eq!(r, tw_result::Ok);
    // SAFETY: live host.
    assert_eq!(unsafe { tw_host_disconnect(client.0, peer) }, tw_result::Ok, "{}", last_error());
    let mut pump = Pump::new(&[client.0]);
    let d = pump.wait(0, Duration::from_secs(5), is_kind(tw_event_kind::Disconnected));
    assert_eq!(d.peer, peer);
    let until = Instant::now() + Duration::from_millis(300);
    while Instant::now() < until {
        pump.step();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(pump.backlog[0].iter().all(|p| p.peer != peer), "{:?}", pump.backlog[0].len());
}

#[test]
fn hostile_addresses_are_refused_at_once() {
    let h = loopback_host(0);
    let long_name = format!("{}:80", "a".repeat(300));
    let huge = "x".repeat(1 << 20);
    let label = format!("{}.com:80", "b".repeat(64));
    let texts: Vec<&str> = vec![
        "localhost",
        "localhost:",
        "localhost:0",
        "localhost:65536",
        ":80",
        "local host:80",
        "local\thost:80",
        "evil\u{1b}[2J:80",
        "caf\u{e9}.example:80",
        "-x.example:80",
        "a..b:80",
        "::1:80",
        "[::1:80",
        "[localhost]:80",
        "127.1:80",
        "999.1.1.1:80",
        &long_name,
        &huge,
        &label,
    ];
    for text in texts {
        let t0 = Instant::now();
        let (r, peer) = try_connect(h.0, text);
        assert_eq!(r, tw_result::InvalidArgument, "{:?}", &text[..text.len().min(40)]);
        assert_eq!(peer, 0);
        let msg = last_error();
        assert!(msg.starts_with("tw_host_connect: "), "{msg}");
        assert!(msg.len() < 400, "the message repeats hostile input in full: {} bytes", msg.len());
        assert!(t0.elapsed() < Duration::from_millis(100));
    }
    // What follows a NUL is not part of a C string: "localhost" without a port.
    let bytes = b"localhost\0:80\0";
    let mut peer = 0u32;
    // SAFETY: live host, NUL-terminated, writable out pointer.
    let r = unsafe { tw_host_connect(h.0, bytes.as_ptr().cast::<c_char>(), &mut peer) };
    assert_eq!(r, tw_result::InvalidArgument);
    // Not UTF-8.
    // SAFETY: live host, NUL-terminated, writable out pointer.
    let r = unsafe { tw_host_connect(h.0, c"\xff\xfe:80".as_ptr(), &mut peer) };
    assert_eq!(r, tw_result::InvalidArgument);
}

#[test]
fn a_bind_address_is_never_a_name() {
    let e = host_at(Some("localhost:0"), 0).err().expect("names are not looked up for binding");
    assert_eq!(e.0, tw_result::InvalidArgument);
}
