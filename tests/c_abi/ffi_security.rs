//! Security through the C ABI, over real UDP on 127.0.0.1: a relay server with a
//! connect key admits only clients holding a token minted for it (refusals come out as
//! SERVER_LOST or RECONNECTING with the reason), a P2P match with a secret keeps
//! strangers out while its peers play, a spectator with the spectators' secret watches,
//! and `tw_connect_token_generate` checks its arguments.

use crate::support::abi_engine;

use std::ffi::CString;
use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

const SEED: u64 = 31;
const PERIOD: u32 = 5;

fn security() -> tw_security_config {
    let mut s = std::mem::MaybeUninit::<tw_security_config>::uninit();
    // SAFETY: writable storage of the right size.
    ok(unsafe { tw_security_config_init_default(s.as_mut_ptr()) });
    // SAFETY: fully written.
    unsafe { s.assume_init() }
}

fn key() -> [u8; 32] {
    let mut k = [0u8; 32];
    // SAFETY: 32 writable bytes.
    ok(unsafe { tw_generate_key(k.as_mut_ptr(), k.len()) });
    k
}

fn token(key: &[u8; 32], client_id: u64, addresses: &str, expire: u32) -> [u8; 1024] {
    let mut t = [0u8; 1024];
    let a = CString::new(addresses).unwrap();
    let pid = session_config(tw_session_mode::RelayClient, 2).host.protocol_id;
    // SAFETY: valid pointers and sizes.
    ok(unsafe {
        tw_connect_token_generate(
            key.as_ptr(),
            32,
            pid,
            client_id,
            a.as_ptr(),
            expire,
            0,
            std::ptr::null(),
            0,
            t.as_mut_ptr(),
            t.len(),
        )
    });
    t
}

fn with_token(t: &[u8; 1024]) -> tw_security_config {
    let mut s = security();
    s.connect_token = *t;
    s.connect_token_size = TW_CONNECT_TOKEN_SIZE;
    s
}

struct Relay {
    server: SessionGuard,
    es: Engine,
    server_events: Vec<tw_session_event>,
    clients: Vec<(SessionGuard, Engine, Vec<tw_session_event>, u32)>,
    addr: CString,
}

impl Relay {
    fn new(key: &[u8; 32]) -> Relay {
        let mut sec = security();
        sec.has_connect_key = 1;
        sec.connect_key = *key;
        let mut cfg = session_config(tw_session_mode::RelayServer, 2);
        cfg.host.security = &sec; // read while the session is created, not kept
        let server = create(&cfg);
        let addr = cstr(&local_address(server.0));
        let mut slots = 0;
        // SAFETY: live session, valid pointers.
        unsafe {
            ok(tw_session_state_slots(server.0, &mut slots));
            ok(tw_session_start(server.0));
        }
        Relay { server, es: Engine::new(2, slots as usize), server_events: Vec::new(), clients: Vec::new(), addr }
    }

    fn add_client(&mut self, sec: &tw_security_config) -> usize {
        self.add_client_with(sec, session_config(tw_session_mode::RelayClient, 2).host.connect_timeout_ms)
    }

    /// A client whose handshakes give up after `connect_timeout_ms`.
    fn add_client_with(&mut self, sec: &tw_security_config, connect_timeout_ms: u32) -> usize {
        let mut cfg = session_config(tw_session_mode::RelayClient, 2);
        cfg.max_prediction = 16;
        cfg.host.security = sec;
        cfg.host.connect_timeout_ms = connect_timeout_ms;
        let s = create(&cfg);
        let mut slots = 0;
        // SAFETY: live session, valid pointers.
        unsafe {
            ok(tw_session_state_slots(s.0, &mut slots));
            ok(tw_session_set_server(s.0, self.addr.as_ptr()));
            ok(tw_session_start(s.0));
        }
        let mut e = Engine::new(2, slots as usize);
        e.state.iter_mut().for_each(|w| *w = -1);
        self.clients.push((s, e, Vec::new(), 0));
        self.clients.len() - 1
    }

    fn run_for(&mut self, d: Duration) {
        let end = Instant::now() + d;
        while Instant::now() < end {
            frame(self.server.0, &mut self.es, &[], SEED, PERIOD, &mut self.server_events);
            for (i, (s, e, events, pushed)) in self.clients.iter_mut().enumerate() {
                relay_client_frame(s.0, e, i, pushed, (SEED, PERIOD), events);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The reasons of client `i`'s events of `kind`.
    fn reasons(&self, i: usize, kind: tw_session_event_kind) -> Vec<u32> {
        let events = &self.clients[i].2;
        // SAFETY: the kind says the relay member is live.
        events.iter().filter(|e| e.kind == kind as u32).map(|e| unsafe { e.data.relay.reason }).collect()
    }

    fn joined(&self, i: usize) -> bool {
        self.clients[i].2.iter().any(|e| e.kind == tw_session_event_kind::Joined as u32)
    }
}

#[test]
fn a_connect_key_admits_only_holders_of_a_token_for_this_server() {
    let k = key();
    let mut m = Relay::new(&k);
    let addr = m.addr.to_str().unwrap().to_string();
    let good = with_token(&token(&k, 1, &addr, 60));
    let elsewhere = with_token(&token(&k, 2, "127.0.0.1:9", 60));
    let other_key = with_token(&token(&key(), 3, &addr, 60));
    let none = security();
    let mut plaintext = security();
    plaintext.mode = tw_security_mode::InsecurePlaintext as u32;
    let g = m.add_client(&good);
    m.run_for(Duration::from_millis(1500));
    assert!(m.joined(g), "the token holder joined: {:?}", m.clients[g].2.iter().map(|e| e.kind).collect::<Vec<_>>());
    // Refusals of credentials that prove nothing cannot be authenticated: the clients
    // try until their connect timeout (1 s here), then give up with DENIED_UNVERIFIED,
    // the server's stated reason only a hint in the log (issue 30, finding 5). A
    // plaintext client authenticates nothing and takes SECURITY_MISMATCH as said.
    let refused = [
        m.add_client_with(&elsewhere, 1000),
        m.add_client_with(&other_key, 1000),
        m.add_client_with(&none, 1000),
        m.add_client_with(&plaintext, 1000),
    ];
    // The same token again, from another socket, while its first connection lives.
    let reuse = m.add_client(&good);
    m.run_for(Duration::from_millis(2500));
    let unverified = tw_disconnect_reason::DeniedUnverified as u32;
    let lost = |i| m.reasons(i, tw_session_event_kind::ServerLost);
    assert_eq!(lost(refused[0]), [unverified], "a token for another server address");
    assert_eq!(lost(refused[1]), [unverified], "a token minted with another key");
    assert_eq!(lost(refused[2]), [unverified], "no token");
    assert_eq!(lost(refused[3]), [tw_disconnect_reason::SecurityMismatch as u32], "insecure plaintext");
    for &i in &refused {
        assert!(m.reasons(i, tw_session_event_kind::Reconnecting).is_empty(), "refusals are final, not retried");
    }
    // A token in use is worth retrying (the old connection may be timing out).
    let retries = m.reasons(reuse, tw_session_event_kind::Reconnecting);
    assert!(
        !retries.is_empty() && retries.iter().all(|&r| r == tw_disconnect_reason::TokenInUse as u32),
        "{retries:?}"
    );
    for i in refused.into_iter().chain([reuse]) {
        assert!(!m.joined(i), "client {i} got in");
    }
    assert_eq!(stats(m.server.0).players, 1);
    assert!(m.joined(g) && m.reasons(g, tw_session_event_kind::ServerLost).is_empty());
}

#[test]
fn an_expired_token_is_refused_with_its_reason() {
    let k = key();
    let mut m = Relay::new(&k);
    let addr = m.addr.to_str().unwrap().to_string();
    let t = token(&k, 1, &addr, 1);
    std::thread::sleep(Duration::from_millis(2100)); // Unix seconds: past its expiry
    let c = m.add_client(&with_token(&t));
    m.run_for(Duration::from_millis(800));
    assert_eq!(m.reasons(c, tw_session_event_kind::ServerLost), [tw_disconnect_reason::TokenExpired as u32]);
    assert!(!m.joined(c));
}

fn secured_pair(sec_a: &tw_security_config, sec_b: &tw_security_config) -> (SessionGuard, SessionGuard) {
    let mut ca = session_config(tw_session_mode::P2p, 2);
    ca.host.security = sec_a;
    let mut cb = session_config(tw_session_mode::P2p, 2);
    cb.host.security = sec_b;
    p2p_pair(&ca, &cb)
}

fn host_config() -> tw_host_config {
    let mut cfg = std::mem::MaybeUninit::<tw_host_config>::uninit();
    // SAFETY: writable storage.
    ok(unsafe { tw_host_config_init_default(cfg.as_mut_ptr()) });
    // SAFETY: fully written.
    unsafe { cfg.assume_init() }
}

/// A host that dials `to` showing `sec`; returns how its connection ended, if it did
/// within `limit`, and whether it ever connected. Its handshake gives up after 1 s.
fn stranger(sec: &tw_security_config, to: &CString, limit: Duration) -> (Option<u32>, bool) {
    let mut cfg = host_config();
    cfg.security = sec;
    cfg.connect_timeout_ms = 1000;
    let (how, host) = dial(&cfg, to, limit);
    // SAFETY: live host, destroyed once.
    unsafe { tw_host_destroy(host) };
    how
}

/// A host made from `cfg` that dials `to`: how its connection ended within `limit`,
/// whether it connected, and the host (the caller destroys it).
fn dial(cfg: &tw_host_config, to: &CString, limit: Duration) -> ((Option<u32>, bool), *mut tw_host) {
    let bind = cstr("127.0.0.1:0");
    let mut host = std::ptr::null_mut();
    let mut peer = 0;
    // SAFETY: valid pointers.
    unsafe {
        ok(tw_host_create(cfg, bind.as_ptr(), &mut host));
        ok(tw_host_connect(host, to.as_ptr(), &mut peer));
    }
    let (mut ended, mut connected) = (None, false);
    let end = Instant::now() + limit;
    while ended.is_none() && Instant::now() < end {
        let mut e = tw_event::zeroed();
        // SAFETY: live host, writable event.
        while ended.is_none() && unsafe { tw_host_poll_event(host, &mut e) } == tw_result::Ok {
            connected |= e.kind == tw_event_kind::Connected as u32;
            if e.kind == tw_event_kind::Disconnected as u32 {
                // SAFETY: the kind says the disconnected member is live.
                ended = Some(unsafe { e.data.disconnected.reason });
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    ((ended, connected), host)
}

#[test]
fn the_per_address_limit_comes_from_the_host_config() {
    let mut server_cfg = host_config();
    server_cfg.max_clients = 8;
    server_cfg.max_clients_per_ip = 1;
    let bind = cstr("127.0.0.1:0");
    let mut server = std::ptr::null_mut();
    // SAFETY: valid pointers.
    ok(unsafe { tw_host_create(&server_cfg, bind.as_ptr(), &mut server) });
    let mut addr = [0 as std::ffi::c_char; 64];
    let mut len = 0usize;
    // SAFETY: live host, a 64-byte buffer, writable length.
    ok(unsafe { tw_host_local_address(server, addr.as_mut_ptr(), addr.len(), &mut len) });
    // SAFETY: NUL-terminated by the call.
    let to = unsafe { std::ffi::CStr::from_ptr(addr.as_ptr()) }.to_owned();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let s = server as usize;
    let pump = std::thread::spawn(move || {
        let mut e = tw_event::zeroed();
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            // SAFETY: live host, used only by this thread until joined.
            while unsafe { tw_host_poll_event(s as *mut tw_host, &mut e) } == tw_result::Ok {}
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    let client = host_config();
    let (first, h1) = dial(&client, &to, Duration::from_millis(500));
    assert_eq!(first, (None, true), "the first client from 127.0.0.1 connects and stays");
    let (second, h2) = dial(&client, &to, Duration::from_secs(2));
    assert_eq!(second, (Some(tw_disconnect_reason::ServerFull as u32), false), "a second one from the same IP");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    pump.join().unwrap();
    // SAFETY: live hosts, each destroyed once.
    unsafe {
        tw_host_destroy(h1);
        tw_host_destroy(h2);
        tw_host_destroy(server);
    }
}

#[test]
fn a_match_secret_keeps_strangers_out_and_lets_spectators_with_theirs_in() {
    let (secret, spectators) = (key(), key());
    let mut sec = security();
    sec.has_match_secret = 1;
    sec.match_secret = secret;
    sec.has_spectator_secret = 1;
    sec.spectator_secret = spectators;
    let (a, b) = secured_pair(&sec, &sec);
    let mut spec_sec = security();
    spec_sec.has_spectator_secret = 1;
    spec_sec.spectator_secret = spectators;
    let mut spec_cfg = session_config(tw_session_mode::Spectator, 2);
    spec_cfg.host.security = &spec_sec;
    let spec = create(&spec_cfg);
    let spec_addr = cstr(&local_address(spec.0));
    let addr_a = cstr(&local_address(a.0));
    // SAFETY: live sessions, NUL-terminated addresses.
    unsafe {
        ok(tw_session_add_spectator(a.0, spec_addr.as_ptr()));
        ok(tw_session_start(a.0));
        ok(tw_session_start(b.0));
        ok(tw_session_spectate(spec.0, addr_a.as_ptr()));
        ok(tw_session_start(spec.0));
    }
    // Strangers try while the match runs on another thread of ours.
    let (ea, eb, es) = (Engine::new(2, 18), Engine::new(2, 18), Engine::new(2, 1));
    let (sa, sb, ss) = (a.0 as usize, b.0 as usize, spec.0 as usize);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let play = std::thread::spawn(move || {
        let (mut ea, mut eb, mut es) = (ea, eb, es);
        let (mut va, mut vb) = (Vec::new(), Vec::new());
        let mut spec_ticks = 0u32;
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            frame(sa as *mut tw_session, &mut ea, &[0], SEED, PERIOD, &mut va);
            frame(sb as *mut tw_session, &mut eb, &[1], SEED, PERIOD, &mut vb);
            let mut n = 0;
            // SAFETY (block): live session, only used by this thread until joined.
            ok(unsafe { tw_session_ticks_due(ss as *mut tw_session, &mut n) });
            for _ in 0..n {
                if unsafe { tw_session_advance(ss as *mut tw_session) } == tw_result::Ok {
                    spec_ticks += 1;
                }
                es.run_requests(ss as *mut tw_session);
            }
            let mut e = tw_session_event::zeroed();
            while unsafe { tw_session_poll_event(ss as *mut tw_session, &mut e) } == tw_result::Ok {}
            std::thread::sleep(Duration::from_millis(2));
        }
        (va, vb, spec_ticks)
    });
    std::thread::sleep(Duration::from_millis(500));
    // Refused without proof: tried until the connect timeout, then DENIED_UNVERIFIED.
    let auth = Some(tw_disconnect_reason::DeniedUnverified as u32);
    let open = security();
    let mut wrong = security();
    wrong.has_match_secret = 1;
    wrong.match_secret = key();
    for (what, s) in [("no secret", &open), ("a wrong secret", &wrong)] {
        let (ended, connected) = stranger(s, &addr_a, Duration::from_secs(3));
        assert_eq!((ended, connected), (auth, false), "a stranger with {what}");
    }
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (va, vb, spec_ticks) = play.join().unwrap();
    let (st_a, st_b) = (stats(a.0), stats(b.0));
    assert!(st_a.confirmed_tick > 60, "the match went on: confirmed {}", st_a.confirmed_tick);
    // Peer b and the spectator: no stranger.
    assert_eq!((st_a.desyncs, st_b.desyncs, st_a.connected_peers), (0, 0, 2));
    for v in [&va, &vb] {
        assert!(v.iter().any(|e| e.kind == tw_session_event_kind::Synchronized as u32));
    }
    assert!(spec_ticks > 30, "the spectator with the spectators' secret watched {spec_ticks} ticks");
}

#[test]
fn token_generation_checks_its_arguments() {
    let k = key();
    let pid = 7;
    let addrs = cstr("127.0.0.1:7000");
    let mut out = [0u8; 1024];
    let call = |key_size: usize, addrs: &CString, expire: u32, user: &[u8], out: &mut [u8]| {
        // SAFETY: valid pointers for the sizes given.
        let r = unsafe {
            tw_connect_token_generate(
                k.as_ptr(),
                key_size,
                pid,
                1,
                addrs.as_ptr(),
                expire,
                0,
                user.as_ptr(),
                user.len(),
                out.as_mut_ptr(),
                out.len(),
            )
        };
        (r, if r == tw_result::Ok { String::new() } else { last_error() })
    };
    assert_eq!(call(32, &addrs, 60, b"x", &mut out).0, tw_result::Ok);
    let cases: [(tw_result, String, &str); 6] = [
        (call(31, &addrs, 60, b"", &mut out).0, call(31, &addrs, 60, b"", &mut out).1, "key_size"),
        (call(32, &cstr(""), 60, b"", &mut out).0, call(32, &cstr(""), 60, b"", &mut out).1, "server_addresses"),
        (
            call(32, &cstr("nowhere"), 60, b"", &mut out).0,
            call(32, &cstr("nowhere"), 60, b"", &mut out).1,
            "server_addresses",
        ),
        (call(32, &addrs, 0, b"", &mut out).0, call(32, &addrs, 0, b"", &mut out).1, "expire_seconds"),
        (call(32, &addrs, 60, &[0; 257], &mut out).0, call(32, &addrs, 60, &[0; 257], &mut out).1, "user_data"),
        (call(32, &addrs, 60, b"", &mut out[..100]).0, call(32, &addrs, 60, b"", &mut out[..100]).1, "out_size"),
    ];
    for (r, msg, field) in cases {
        assert_eq!(r, tw_result::InvalidArgument, "{field}: {msg}");
        assert!(msg.contains(field), "the message names {field}: {msg}");
    }
    let nine = cstr(&["127.0.0.1:1"; 9].join(","));
    assert_eq!(call(32, &nine, 60, b"", &mut out).0, tw_result::InvalidArgument);
    // A security config with a broken token or impossible mix is refused at create.
    let mut sec = with_token(&out);
    sec.connect_token[0] ^= 0xFF;
    let mut cfg = session_config(tw_session_mode::RelayClient, 2);
    cfg.host.security = &sec;
    let mut s = std::ptr::null_mut();
    // SAFETY: valid pointers.
    assert_eq!(unsafe { tw_session_create(&cfg, &mut s) }, tw_result::InvalidArgument);
    assert!(last_error().contains("connect_token"), "{}", last_error());
    let mut sec = security();
    sec.mode = tw_security_mode::InsecurePlaintext as u32;
    sec.has_match_secret = 1;
    cfg.host.security = &sec;
    // SAFETY: valid pointers.
    assert_eq!(unsafe { tw_session_create(&cfg, &mut s) }, tw_result::InvalidArgument);
    assert!(last_error().contains("INSECURE_PLAINTEXT"), "{}", last_error());
}

/// Issue 30, finding 2, through the C ABI: `tw_security_config_init_default` zero-fills
/// the secrets, so a flag set without copying the bytes in used to mean "open with a
/// secret set". Now creating the session fails with a message naming the field; so
/// does a spectators' secret equal to the match secret, and a zero connect key.
#[test]
fn zero_and_duplicate_secrets_make_create_fail_by_name() {
    let mut zero_match = security();
    zero_match.has_match_secret = 1;
    let mut zero_spectators = security();
    zero_spectators.has_match_secret = 1;
    zero_spectators.match_secret = key();
    zero_spectators.has_spectator_secret = 1;
    let mut same = security();
    same.has_match_secret = 1;
    same.match_secret = key();
    same.has_spectator_secret = 1;
    same.spectator_secret = same.match_secret;
    let mut zero_key = security();
    zero_key.has_connect_key = 1;
    let cases = [
        (tw_session_mode::P2p, &zero_match, "match_secret is all zero bytes"),
        (tw_session_mode::P2p, &zero_spectators, "spectator_secret is all zero bytes"),
        (tw_session_mode::P2p, &same, "spectator_secret equals match_secret"),
        (tw_session_mode::RelayServer, &zero_key, "connect_key is all zero bytes"),
    ];
    for (mode, sec, want) in cases {
        let mut cfg = session_config(mode, 2);
        cfg.host.security = sec;
        let mut s = std::ptr::null_mut();
        // SAFETY: valid config and out pointer.
        let r = unsafe { tw_session_create(&cfg, &mut s) };
        assert_eq!(r, tw_result::InvalidArgument, "{want}");
        assert!(s.is_null(), "{want}: no session was made");
        let msg = last_error();
        assert!(msg.contains(want), "{want}: {msg}");
    }
}
