//! External carriers through the C ABI: sessions and hosts bound to `"remote:<id>"`,
//! whose datagrams this test moves with `tw_*_pull_datagrams` and
//! `tw_*_push_datagrams` as an engine would over Steam or EOS. A P2P pair agrees on
//! every confirmed tick; addresses read back as remotes; every argument rule of the
//! four exports holds; UDP hosts and local sessions refuse them.

use crate::support::abi_engine;

use std::ffi::{CStr, CString, c_char};
use std::ptr;
use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

const SEED: u64 = 23;
const PERIOD: u32 = 4;

fn bind_to(cfg: &mut tw_session_config, text: &str) {
    cfg.bind_address = [0; 64];
    for (d, s) in cfg.bind_address.iter_mut().zip(text.bytes()) {
        *d = s as c_char;
    }
}

fn carried_config(id: u64, max_datagram: u32) -> tw_session_config {
    let mut cfg = session_config(tw_session_mode::P2p, 2);
    bind_to(&mut cfg, &format!("remote:{id}"));
    cfg.host.max_datagram_size = max_datagram;
    cfg
}

/// Moves every datagram each session has for the other, in batches of at most 8 items
/// (so that a pull is cut short and resumed), dropping every `drop_every`-th one.
fn carry(sessions: [(*mut tw_session, u64); 2], drop_every: u64, count: &mut u64, largest: &mut usize) {
    let mut items = [tw_datagram { remote: 0, data: ptr::null(), len: 0, age_us: 0 }; 8];
    let mut buffer = vec![0u8; 8 * TW_MAX_DATAGRAM_SIZE as usize];
    for (i, &(from, from_id)) in sessions.iter().enumerate() {
        let (to, to_id) = sessions[1 - i];
        loop {
            let mut n = usize::MAX;
            // SAFETY: live session; items, buffer and n valid for their sizes.
            ok(unsafe {
                tw_session_pull_datagrams(
                    from,
                    items.as_mut_ptr(),
                    items.len(),
                    buffer.as_mut_ptr(),
                    buffer.len(),
                    &mut n,
                )
            });
            assert!(n <= items.len());
            let mut delivered = Vec::new();
            for d in &items[..n] {
                assert_eq!(d.remote, to_id, "a pair's datagrams go to the other");
                assert_eq!(d.age_us, 0);
                *largest = (*largest).max(d.len as usize);
                *count += 1;
                if *count % drop_every != 0 {
                    delivered.push(tw_datagram { remote: from_id, ..*d });
                }
            }
            let mut taken = usize::MAX;
            // SAFETY: live session, items valid (data point into `buffer`, alive).
            ok(unsafe { tw_session_push_datagrams(to, delivered.as_ptr(), delivered.len(), &mut taken) });
            assert_eq!(taken, delivered.len());
            if n < items.len() {
                break;
            }
        }
    }
}

#[test]
fn a_p2p_pair_bound_to_remotes_agrees_on_every_confirmed_tick_over_the_engines_carrier() {
    let (ida, idb) = (76_561_198_000_000_011u64, 76_561_198_000_000_022u64);
    let a = create(&carried_config(ida, 1170));
    let b = create(&carried_config(idb, 1170));
    assert_eq!(local_address(a.0), format!("remote:{ida}"));
    let (addr_a, addr_b) = (cstr(&local_address(a.0)), cstr(&local_address(b.0)));
    // SAFETY: live sessions, NUL-terminated addresses.
    unsafe {
        ok(tw_session_add_local_player(a.0, 0));
        ok(tw_session_add_remote_player(a.0, 1, addr_b.as_ptr()));
        ok(tw_session_add_remote_player(b.0, 0, addr_a.as_ptr()));
        ok(tw_session_add_local_player(b.0, 1));
    }
    let mut slots = 0u32;
    // SAFETY: live session, writable out.
    ok(unsafe { tw_session_state_slots(a.0, &mut slots) });
    // SAFETY: live sessions.
    unsafe {
        ok(tw_session_start(a.0));
        ok(tw_session_start(b.0));
    }
    let (mut ea, mut eb) = (Engine::new(2, slots as usize), Engine::new(2, slots as usize));
    let (mut events_a, mut events_b) = (Vec::new(), Vec::new());
    let (mut count, mut largest) = (0, 0);
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        frame(a.0, &mut ea, &[0], SEED, PERIOD, &mut events_a);
        frame(b.0, &mut eb, &[1], SEED, PERIOD, &mut events_b);
        carry([(a.0, ida), (b.0, idb)], 20, &mut count, &mut largest);
        std::thread::sleep(Duration::from_millis(2));
    }
    let confirmed = ea.confirmed_at_advance.min(eb.confirmed_at_advance);
    assert!(confirmed > 120, "the match ran over the carrier: confirmed {confirmed}");
    for t in 0..confirmed as usize {
        let (ca, cb) = (ea.checksums.get(t).copied().flatten(), eb.checksums.get(t).copied().flatten());
        assert!(ca.is_some(), "no checksum for confirmed tick {t}");
        assert_eq!(ca, cb, "tick {t} differs");
    }
    for e in events_a.iter().chain(&events_b) {
        assert_ne!(e.kind, tw_session_event_kind::Desync as u32);
    }
    assert!(events_a.iter().any(|e| e.kind == tw_session_event_kind::PeerConnected as u32));
    assert!(largest <= 1170, "a datagram of {largest} bytes over the carrier's 1170");
    assert!(count > 200);
}

fn host(bind: &str, max_datagram: u32) -> Result<*mut tw_host, (tw_result, String)> {
    let mut cfg = std::mem::MaybeUninit::<tw_host_config>::uninit();
    // SAFETY: writable storage of the right size.
    ok(unsafe { tw_host_config_init_default(cfg.as_mut_ptr()) });
    // SAFETY: fully written.
    let mut cfg = unsafe { cfg.assume_init() };
    cfg.max_datagram_size = max_datagram;
    let bind = CString::new(bind).unwrap();
    let mut h = ptr::null_mut();
    // SAFETY: valid config, address and out pointer.
    match unsafe { tw_host_create(&cfg, bind.as_ptr(), &mut h) } {
        tw_result::Ok => Ok(h),
        r => Err((r, last_error())),
    }
}

#[test]
fn the_four_exports_check_every_argument_and_the_carrier_settings() {
    // Settings: a carrier's size in 1105..=1200 (0: 1200); none on a UDP host.
    for bad in [1, 1104, 1201, u32::MAX] {
        let (r, msg) = host("remote:5", bad).unwrap_err();
        assert_eq!(r, tw_result::InvalidArgument);
        assert!(msg.contains("max_datagram_size"), "{msg}");
    }
    let (r, msg) = host("127.0.0.1:0", 1200).unwrap_err();
    assert_eq!((r, msg.contains("max_datagram_size")), (tw_result::InvalidArgument, true), "{msg}");
    for text in ["remote:", "remote:x", "remote:-3", "remote:18446744073709551616"] {
        let (r, msg) = host(text, 0).unwrap_err();
        assert_eq!(r, tw_result::InvalidArgument, "{text}: {msg}");
    }
    let h = host("remote:5", 0).unwrap();
    let udp = host("127.0.0.1:0", 0).unwrap();
    let mut addr = [0 as c_char; 64];
    let mut n = 0;
    // SAFETY (whole block): live hosts; every pointer valid for what it claims, or
    // NULL where the case is NULL.
    unsafe {
        ok(tw_host_local_address(h, addr.as_mut_ptr(), addr.len(), &mut n));
        assert_eq!(CStr::from_ptr(addr.as_ptr()).to_str().unwrap(), "remote:5");
        // An external host reaches remotes only; a UDP host none.
        let mut peer = 0u32;
        let ip = cstr("127.0.0.1:7000");
        assert_eq!(tw_host_connect(h, ip.as_ptr(), &mut peer), tw_result::InvalidArgument);
        let remote = cstr("remote:6");
        assert_eq!(tw_host_connect(udp, remote.as_ptr(), &mut peer), tw_result::InvalidArgument);
        ok(tw_host_connect(h, remote.as_ptr(), &mut peer));

        let mut items = [tw_datagram { remote: 0, data: ptr::null(), len: 0, age_us: 0 }; 4];
        let mut buf = [0u8; 1200];
        let mut count = 0usize;
        // NULL host, NULL out_count, NULL items or buffer with a size.
        assert_eq!(tw_host_push_datagrams(ptr::null_mut(), ptr::null(), 0, ptr::null_mut()), tw_result::NullArgument);
        assert_eq!(tw_host_push_datagrams(h, ptr::null(), 1, ptr::null_mut()), tw_result::NullArgument);
        let no_data = [tw_datagram { remote: 6, data: ptr::null(), len: 3, age_us: 0 }];
        assert_eq!(tw_host_push_datagrams(h, no_data.as_ptr(), 1, ptr::null_mut()), tw_result::NullArgument);
        assert!(last_error().contains("items[0].data"), "{}", last_error());
        let p = items.as_mut_ptr();
        assert_eq!(
            tw_host_pull_datagrams(h, p, 4, buf.as_mut_ptr(), buf.len(), ptr::null_mut()),
            tw_result::NullArgument
        );
        assert_eq!(
            tw_host_pull_datagrams(h, ptr::null_mut(), 4, buf.as_mut_ptr(), 9, &mut count),
            tw_result::NullArgument
        );
        assert_eq!(tw_host_pull_datagrams(h, p, 4, ptr::null_mut(), 9, &mut count), tw_result::NullArgument);
        // Nothing pushed is fine; an empty datagram is taken (and refused by the endpoint).
        ok(tw_host_push_datagrams(h, ptr::null(), 0, ptr::null_mut()));
        let empty = [tw_datagram { remote: 6, data: ptr::null(), len: 0, age_us: 0 }];
        let mut taken = 9;
        ok(tw_host_push_datagrams(h, empty.as_ptr(), 1, &mut taken));
        assert_eq!(taken, 1);
        // The connect's handshake request waits to be pulled: too small a buffer says
        // so and loses nothing; zero items take nothing.
        std::thread::sleep(Duration::from_millis(50));
        ok(tw_host_flush(h));
        assert_eq!(tw_host_pull_datagrams(h, p, 4, buf.as_mut_ptr(), 10, &mut count), tw_result::BufferTooSmall);
        assert_eq!(count, 0);
        ok(tw_host_pull_datagrams(h, p, 0, buf.as_mut_ptr(), buf.len(), &mut count));
        assert_eq!(count, 0);
        ok(tw_host_pull_datagrams(h, p, 4, buf.as_mut_ptr(), buf.len(), &mut count));
        assert!(count >= 1, "the handshake request");
        assert_eq!(items[0].remote, 6);
        assert_eq!(items[0].data, buf.as_ptr(), "the first datagram is at the start of the buffer");
        // A UDP host refuses both as a state error.
        assert_eq!(tw_host_push_datagrams(udp, ptr::null(), 0, ptr::null_mut()), tw_result::InvalidState);
        assert_eq!(tw_host_pull_datagrams(udp, p, 4, buf.as_mut_ptr(), buf.len(), &mut count), tw_result::InvalidState);
        tw_host_destroy(h);
        tw_host_destroy(udp);
    }
    // Sessions: a local mode has no transport; a UDP session none to push.
    let synctest = create(&session_config(tw_session_mode::Synctest, 2));
    let udp_p2p = create(&session_config(tw_session_mode::P2p, 2));
    let mut count = 0usize;
    let mut buf = [0u8; 1200];
    let mut items = [tw_datagram { remote: 0, data: ptr::null(), len: 0, age_us: 0 }; 1];
    // SAFETY: live sessions, valid pointers.
    unsafe {
        for s in [synctest.0, udp_p2p.0] {
            assert_eq!(tw_session_push_datagrams(s, ptr::null(), 0, ptr::null_mut()), tw_result::InvalidState);
            let r = tw_session_pull_datagrams(s, items.as_mut_ptr(), 1, buf.as_mut_ptr(), buf.len(), &mut count);
            assert_eq!(r, tw_result::InvalidState);
        }
        assert_eq!(
            tw_session_push_datagrams(ptr::null_mut(), ptr::null(), 0, ptr::null_mut()),
            tw_result::NullArgument
        );
    }
}

/// A host bound to `remote:<id>` with the given security mode and match secret.
fn secured_host(id: u64, mode: tw_security_mode, server: bool) -> Result<*mut tw_host, (tw_result, String)> {
    let mut sec = std::mem::MaybeUninit::<tw_security_config>::uninit();
    let mut cfg = std::mem::MaybeUninit::<tw_host_config>::uninit();
    // SAFETY: writable storage of the right sizes.
    unsafe {
        ok(tw_security_config_init_default(sec.as_mut_ptr()));
        ok(tw_host_config_init_default(cfg.as_mut_ptr()));
    }
    // SAFETY: fully written.
    let (mut sec, mut cfg) = unsafe { (sec.assume_init(), cfg.assume_init()) };
    sec.mode = mode as u32;
    sec.has_match_secret = 1;
    sec.match_secret = [0x5a; 32];
    cfg.security = &sec;
    cfg.max_clients = if server { 4 } else { 0 };
    let bind = CString::new(if id == 0 { "127.0.0.1:0".to_string() } else { format!("remote:{id}") }).unwrap();
    let mut h = ptr::null_mut();
    // SAFETY: valid config (its security alive for the call), address and out pointer.
    match unsafe { tw_host_create(&cfg, bind.as_ptr(), &mut h) } {
        tw_result::Ok => Ok(h),
        r => Err((r, last_error())),
    }
}

/// Moves every datagram between two hosts once; returns the sizes moved.
fn carry_hosts(a: (*mut tw_host, u64), b: (*mut tw_host, u64), sizes: &mut Vec<u32>) {
    let mut items = [tw_datagram { remote: 0, data: ptr::null(), len: 0, age_us: 0 }; 16];
    let mut buffer = vec![0u8; 16 * TW_MAX_DATAGRAM_SIZE as usize];
    for (from, to) in [(a, b), (b, a)] {
        let mut n = 0;
        // SAFETY: live hosts; items and buffer valid for their sizes.
        unsafe {
            ok(tw_host_flush(from.0));
            ok(tw_host_pull_datagrams(
                from.0,
                items.as_mut_ptr(),
                items.len(),
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut n,
            ));
            for d in &mut items[..n] {
                sizes.push(d.len);
                d.remote = from.1;
            }
            ok(tw_host_push_datagrams(to.0, items.as_ptr(), n, ptr::null_mut()));
        }
    }
}

/// Connects `client` to `server` over the test's carrier; the client's events.
fn connect_hosts(server: (*mut tw_host, u64), client: (*mut tw_host, u64)) -> (u32, Vec<tw_event>, Vec<u32>) {
    let to = cstr(&format!("remote:{}", server.1));
    let mut peer = 0;
    // SAFETY: live host, NUL-terminated address.
    ok(unsafe { tw_host_connect(client.0, to.as_ptr(), &mut peer) });
    let (mut events, mut sizes) = (Vec::new(), Vec::new());
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        carry_hosts(server, client, &mut sizes);
        let mut e = tw_event::zeroed();
        // SAFETY: live hosts, writable event.
        unsafe {
            while tw_host_poll_event(server.0, &mut e) == tw_result::Ok {}
            while tw_host_poll_event(client.0, &mut e) == tw_result::Ok {
                events.push(e);
            }
        }
        if events.iter().any(|e| e.kind != tw_event_kind::Message as u32) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    (peer, events, sizes)
}

#[test]
fn carrier_protection_connects_like_encryption_saves_the_tag_and_both_ends_must_choose_it() {
    // Refused on a UDP host: nothing there authenticates a packet.
    let (r, msg) = secured_host(0, tw_security_mode::Carrier, false).unwrap_err();
    assert_eq!(r, tw_result::InvalidArgument);
    assert!(msg.contains("TW_SECURITY_MODE_CARRIER"), "{msg}");

    let mut message_sizes = Vec::new();
    for mode in [tw_security_mode::Encrypted, tw_security_mode::Carrier] {
        let server = (secured_host(31, mode, true).unwrap(), 31);
        let client = (secured_host(32, mode, false).unwrap(), 32);
        let (peer, events, _) = connect_hosts(server, client);
        assert!(events.iter().any(|e| e.kind == tw_event_kind::Connected as u32), "{mode:?} connects");
        // One 32-byte input: its datagram is 16 bytes smaller without our tag.
        let mut sizes = Vec::new();
        // SAFETY: live hosts, a valid message.
        unsafe {
            ok(tw_host_send(client.0, peer, TW_CHANNEL_UNRELIABLE, [9u8; 32].as_ptr(), 32));
            ok(tw_host_flush(client.0));
        }
        carry_hosts(server, client, &mut sizes);
        message_sizes.push(*sizes.iter().max().unwrap());
        // SAFETY: live hosts, destroyed once.
        unsafe {
            tw_host_destroy(client.0);
            tw_host_destroy(server.0);
        }
    }
    assert_eq!(message_sizes[0], message_sizes[1] + 16, "encrypted vs carrier: {message_sizes:?}");

    // An encrypted end and a carrier end refuse each other.
    for (server_mode, client_mode) in [
        (tw_security_mode::Carrier, tw_security_mode::Encrypted),
        (tw_security_mode::Encrypted, tw_security_mode::Carrier),
    ] {
        let server = (secured_host(41, server_mode, true).unwrap(), 41);
        let client = (secured_host(42, client_mode, false).unwrap(), 42);
        let (_, events, _) = connect_hosts(server, client);
        assert!(!events.iter().any(|e| e.kind == tw_event_kind::Connected as u32), "{server_mode:?}/{client_mode:?}");
        let mut stats = std::mem::MaybeUninit::<tw_host_stats>::uninit();
        // SAFETY: live host, writable stats; destroyed once.
        unsafe {
            ok(tw_host_get_stats(server.0, stats.as_mut_ptr()));
            assert!(stats.assume_init().security_mismatch > 0, "the server counted the mismatch");
            tw_host_destroy(client.0);
            tw_host_destroy(server.0);
        }
    }
}
