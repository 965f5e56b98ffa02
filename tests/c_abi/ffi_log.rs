//! The log hook through the C ABI (`tw_session_set_log`, `tw_host_set_log`): records
//! arrive only from inside `poll_event`, on the polling thread; `min_level` filters; a
//! flood of malformed datagrams becomes a few per-second summaries that account for
//! every refused datagram; a full queue says how many records it dropped; calls on
//! the same object from inside the hook get `TW_RESULT_BUSY`; NULL turns it off.

use crate::support::abi_engine;
use crate::support::common;

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::net::UdpSocket;
use std::sync::Mutex;
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use abi_engine::{Engine, ResultExt, SessionGuard, create, input_for, ok, p2p_pair, session_config, stats};
use common::{HostGuard, connect, create_host, default_config, local_address, loopback_host, poll_one};
use tickwire::*;

/// The tests share 2 cores with their network threads: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

thread_local! {
    /// Set while this thread is inside a `poll_event` call.
    static IN_POLL: Cell<bool> = const { Cell::new(false) };
}

#[derive(Debug, Clone)]
struct Record {
    thread: ThreadId,
    in_poll: bool,
    level: u32,
    text: String,
}

/// What a hook's `user` points at.
#[derive(Default)]
struct Sink {
    records: Mutex<Vec<Record>>,
    /// If set, the hook calls back into this session and keeps the results.
    reenter: Option<*mut tw_session>,
    reentry_results: Mutex<Vec<tw_result>>,
}

impl Sink {
    fn texts(&self) -> Vec<String> {
        self.records.lock().unwrap().iter().map(|r| r.text.clone()).collect()
    }
    fn has(&self, needle: &str) -> bool {
        self.records.lock().unwrap().iter().any(|r| r.text.contains(needle))
    }
}

unsafe extern "C" fn on_log(user: *mut c_void, level: u32, message: *const c_char, len: usize) {
    // SAFETY: `user` is the test's Sink, alive for the hook's life.
    let sink = unsafe { &*(user as *const Sink) };
    // SAFETY: the library passes `len` bytes of text plus a NUL.
    let bytes = unsafe { std::slice::from_raw_parts(message.cast::<u8>(), len + 1) };
    assert_eq!(bytes[len], 0, "the text is NUL-terminated");
    assert!(len <= 255);
    let text = std::str::from_utf8(&bytes[..len]).expect("UTF-8").to_owned();
    sink.records.lock().unwrap().push(Record {
        thread: thread::current().id(),
        in_poll: IN_POLL.with(|f| f.get()),
        level,
        text,
    });
    if let Some(s) = sink.reenter {
        let mut n = 0;
        let mut results = sink.reentry_results.lock().unwrap();
        // SAFETY: the session is live (we are inside a call on it).
        unsafe {
            results.push(tw_session_ticks_due(s, &mut n));
            results.push(tw_session_set_log(s, None, std::ptr::null_mut(), 0));
        }
    }
}

fn user(sink: &Sink) -> *mut c_void {
    sink as *const Sink as *mut c_void
}

/// Polls every event of `s`, marked as inside poll_event for the hook.
fn poll_session(s: *mut tw_session, events: &mut Vec<tw_session_event>) {
    let mut e = tw_session_event::zeroed();
    IN_POLL.with(|f| f.set(true));
    // SAFETY: live session, writable event.
    while unsafe { tw_session_poll_event(s, &mut e) } == tw_result::Ok {
        events.push(e);
    }
    IN_POLL.with(|f| f.set(false));
}

/// One engine frame without the event poll (ticks, inputs, advance, requests).
fn step(s: *mut tw_session, engine: &mut Engine, local: usize) {
    let mut n = 0u32;
    // SAFETY (whole function): live session, valid pointers.
    ok(unsafe { tw_session_ticks_due(s, &mut n) });
    for _ in 0..n {
        let st = stats(s);
        engine.confirmed_at_advance = st.confirmed_tick;
        let input = input_for(5, local, st.current_tick + st.input_delay, 7);
        ok(unsafe { tw_session_push_input(s, local as u32, input.as_ptr().cast(), input.len()) });
        let r = unsafe { tw_session_advance(s) };
        assert!(!r.is_err(), "advance: {r:?}");
        engine.run_requests(s);
    }
}

/// A two-player engine with as many snapshot slots as the session asks for.
fn engine_for(s: *mut tw_session) -> Engine {
    let mut slots = 0;
    // SAFETY: live session, valid pointer.
    ok(unsafe { tw_session_state_slots(s, &mut slots) });
    Engine::new(2, slots as usize)
}

fn p2p() -> (SessionGuard, SessionGuard) {
    let cfg = session_config(tw_session_mode::P2p, 2);
    p2p_pair(&cfg, &cfg)
}

#[test]
fn session_records_come_only_from_poll_event_on_the_engine_thread() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (a, b) = p2p();
    let sink = Sink::default();
    // SAFETY: live session; the sink outlives the hook (cleared below).
    ok(unsafe { tw_session_set_log(a.0, Some(on_log), user(&sink), tw_log_level::Info as u32) });
    // SAFETY: live sessions.
    unsafe {
        ok(tw_session_start(a.0));
        ok(tw_session_start(b.0));
    }
    let (mut ea, mut eb) = (engine_for(a.0), engine_for(b.0));
    // The sessions connect while nobody polls: the records wait in the queue.
    let until = Instant::now() + Duration::from_millis(400);
    while Instant::now() < until {
        step(a.0, &mut ea, 0);
        step(b.0, &mut eb, 1);
        thread::sleep(Duration::from_millis(5));
    }
    assert!(sink.texts().is_empty(), "records outside poll_event: {:?}", sink.texts());
    let (mut eva, mut evb) = (Vec::new(), Vec::new());
    let until = Instant::now() + Duration::from_secs(5);
    while !sink.has("synchronized at tick") && Instant::now() < until {
        step(a.0, &mut ea, 0);
        step(b.0, &mut eb, 1);
        poll_session(a.0, &mut eva);
        poll_session(b.0, &mut evb);
        thread::sleep(Duration::from_millis(5));
    }
    assert!(sink.has("log on: P2p session bound to 127.0.0.1:"), "{:?}", sink.texts());
    assert!(sink.has("connection up: peer"), "{:?}", sink.texts());
    assert!(sink.has("peer 1 (player 1) connected"), "{:?}", sink.texts());
    assert!(sink.has("synchronized at tick"), "{:?}", sink.texts());
    // The other side goes away: its goodbye is news, at INFO, with its reason (the
    // side that accepted the connection closed it).
    drop(b);
    let until = Instant::now() + Duration::from_secs(5);
    while !sink.has("disconnected: closed by the server") && Instant::now() < until {
        step(a.0, &mut ea, 0);
        poll_session(a.0, &mut eva);
        thread::sleep(Duration::from_millis(5));
    }
    assert!(sink.has("connection down: peer 1, reason Server"), "{:?}", sink.texts());
    assert!(sink.has("peer 1 (player 1) disconnected: closed by the server"), "{:?}", sink.texts());
    let level_of = |needle: &str| sink.records.lock().unwrap().iter().find(|r| r.text.contains(needle)).unwrap().level;
    assert_eq!(level_of("connection down"), tw_log_level::Info as u32);
    assert_eq!(level_of("player 1 disconnected from tick"), tw_log_level::Warn as u32);
    let me = thread::current().id();
    for r in sink.records.lock().unwrap().iter() {
        assert_eq!(r.thread, me, "a record on another thread: {r:?}");
        assert!(r.in_poll, "a record outside poll_event: {r:?}");
        assert!((1..=3).contains(&r.level), "below the minimum level: {r:?}");
    }
    // NULL turns it off: nothing more arrives, and nothing is queued meanwhile.
    let before = sink.texts().len();
    // SAFETY: live session.
    ok(unsafe { tw_session_set_log(a.0, None, std::ptr::null_mut(), tw_log_level::Debug as u32) });
    for _ in 0..20 {
        step(a.0, &mut ea, 0);
        poll_session(a.0, &mut eva);
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(sink.texts().len(), before);
}

#[test]
fn min_level_filters_and_a_bad_level_is_refused() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let server = loopback_host(4);
    let client = loopback_host(0);
    let (warn, debug) = (Sink::default(), Sink::default());
    // SAFETY (whole block): live hosts; the sinks outlive them (dropped at the end).
    unsafe {
        common::assert_err(
            tw_host_set_log(server.0, Some(on_log), user(&warn), 5),
            tw_result::InvalidArgument,
            "tw_host_set_log",
            "min_level is 5",
        );
        ok(tw_host_set_log(server.0, Some(on_log), user(&warn), tw_log_level::Warn as u32));
        ok(tw_host_set_log(client.0, Some(on_log), user(&debug), tw_log_level::Debug as u32));
    }
    let peer = connect(client.0, &local_address(server.0));
    let until = Instant::now() + Duration::from_secs(5);
    while !(debug.has("connection up") && warn.records.lock().unwrap().is_empty() && server_saw(&server))
        && Instant::now() < until
    {
        IN_POLL.with(|f| f.set(true));
        while poll_one(client.0).is_some() {}
        IN_POLL.with(|f| f.set(false));
        thread::sleep(Duration::from_millis(5));
    }
    assert!(debug.has(&format!("connecting to {} (peer {peer})", local_address(server.0))), "{:?}", debug.texts());
    assert!(debug.has(&format!("connection up: peer {peer} at")), "{:?}", debug.texts());
    assert!(debug.records.lock().unwrap().iter().any(|r| r.level == tw_log_level::Debug as u32));
    assert!(warn.texts().is_empty(), "INFO records passed a WARN log: {:?}", warn.texts());
    drop(client);
    drop(server);
}

/// Polls the server once (so its records are delivered); true once it has seen the
/// connection.
fn server_saw(server: &HostGuard) -> bool {
    IN_POLL.with(|f| f.set(true));
    let mut seen = false;
    while let Some(e) = poll_one(server.0) {
        seen |= e.kind == tw_event_kind::Connected as u32;
    }
    IN_POLL.with(|f| f.set(false));
    seen
}

/// The count a summary starts with ("dropped N datagrams in the last ...").
fn summary_count(text: &str) -> Option<u64> {
    text.strip_prefix("dropped ")?.split(' ').next()?.parse().ok()
}

#[test]
fn a_flood_of_malformed_datagrams_becomes_one_summary_a_second() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let host = create_host(&default_config(), "127.0.0.1:0").unwrap();
    let sink = Sink::default();
    // SAFETY: live host; the sink outlives it (the host is dropped first, below).
    ok(unsafe { tw_host_set_log(host.0, Some(on_log), user(&sink), tw_log_level::Warn as u32) });
    let target = local_address(host.0);
    let attacker = UdpSocket::bind("127.0.0.1:0").unwrap();
    let from = attacker.local_addr().unwrap().to_string();
    // 2.5 s of garbage, 200 datagrams every 10 ms, polled every frame.
    let start = Instant::now();
    let mut sent = 0u64;
    let mut i = 0u32;
    while start.elapsed() < Duration::from_millis(2500) {
        for _ in 0..200 {
            i = i.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let junk = [i as u8, (i >> 8) as u8, 0xff, (i >> 16) as u8, 3, 1, 4, 1, 5];
            if attacker.send_to(&junk[..3 + (i as usize % 6)], &target).is_ok() {
                sent += 1;
            }
        }
        IN_POLL.with(|f| f.set(true));
        while poll_one(host.0).is_some() {}
        IN_POLL.with(|f| f.set(false));
        thread::sleep(Duration::from_millis(10));
    }
    // The last window closes a second after the flood.
    let mut hs = std::mem::MaybeUninit::<tw_host_stats>::uninit();
    let until = Instant::now() + Duration::from_millis(2500);
    let refused = |s: &tw_host_stats| {
        s.malformed
            + s.wrong_protocol
            + s.wrong_version
            + s.unknown_sender
            + s.bad_cookie
            + s.denied
            + s.security_mismatch
            + s.auth_refused
            + s.replayed
            + s.forged
    };
    let mut total_refused = 0;
    while Instant::now() < until {
        IN_POLL.with(|f| f.set(true));
        while poll_one(host.0).is_some() {}
        IN_POLL.with(|f| f.set(false));
        // SAFETY: live host, writable stats.
        ok(unsafe { tw_host_get_stats(host.0, hs.as_mut_ptr()) });
        // SAFETY: written by the call.
        total_refused = refused(unsafe { hs.assume_init_ref() });
        let logged: u64 = sink.texts().iter().filter_map(|t| summary_count(t)).sum();
        if logged == total_refused && total_refused > 0 && Instant::now() > start + Duration::from_millis(3700) {
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    let texts = sink.texts();
    let summaries: Vec<&String> = texts.iter().filter(|t| t.starts_with("dropped ")).collect();
    let logged: u64 = summaries.iter().filter_map(|t| summary_count(t)).sum();
    assert!(sent > 10_000, "sent {sent}");
    assert!(total_refused > sent / 2, "refused {total_refused} of {sent}");
    assert_eq!(logged, total_refused, "the summaries account for every refused datagram: {summaries:#?}");
    assert!((2..=5).contains(&summaries.len()), "one summary a second, not one a datagram: {summaries:#?}");
    for s in &summaries {
        assert!(s.contains(&format!("from {from} (")), "the source is named: {s}");
        assert!(s.contains("malformed") || s.contains("of another protocol"), "{s}");
    }
    for r in sink.records.lock().unwrap().iter() {
        assert!(r.in_poll && r.thread == thread::current().id(), "{r:?}");
        assert_eq!(r.level, tw_log_level::Warn as u32, "{r:?}");
    }
    drop(host);
}

#[test]
fn a_full_queue_says_how_many_records_it_dropped() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let host = loopback_host(0);
    let sink = Sink::default();
    // SAFETY: live host; the sink outlives it.
    ok(unsafe { tw_host_set_log(host.0, Some(on_log), user(&sink), tw_log_level::Debug as u32) });
    // 40 dials to ports nobody listens on, one DEBUG record each, while nobody polls.
    let dials = 40;
    for port in 0..dials {
        connect(host.0, &format!("127.0.0.1:{}", 9 + port));
    }
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        thread::sleep(Duration::from_millis(50));
        // Wait until the thread has taken every dial (its queue is full by then).
        let mut hs = std::mem::MaybeUninit::<tw_host_stats>::uninit();
        // SAFETY: live host, writable stats.
        ok(unsafe { tw_host_get_stats(host.0, hs.as_mut_ptr()) });
        // SAFETY: written by the call.
        if unsafe { hs.assume_init_ref() }.connections >= dials as u64 {
            break;
        }
    }
    IN_POLL.with(|f| f.set(true));
    let _ = poll_one(host.0);
    IN_POLL.with(|f| f.set(false));
    let texts = sink.texts();
    // The note of set_log and 31 dials fill the 32 places; 9 dials are dropped.
    assert_eq!(texts.len(), 33, "{texts:#?}");
    assert!(texts[0].starts_with("log on: host bound to 127.0.0.1:"), "{}", texts[0]);
    assert!(texts[1..32].iter().all(|t| t.starts_with("connecting to 127.0.0.1:")), "{texts:#?}");
    assert!(texts[32].starts_with("9 log records were dropped"), "{}", texts[32]);
    assert_eq!(sink.records.lock().unwrap()[32].level, tw_log_level::Warn as u32);
    drop(host);
}

/// One synctest tick: inputs for both players, advance, requests.
fn synctest_tick(s: *mut tw_session, engine: &mut Engine, t: u32) {
    for p in 0..2 {
        let input = input_for(3, p, t, 5);
        // SAFETY: live session, valid input.
        ok(unsafe { tw_session_push_input(s, p as u32, input.as_ptr().cast(), input.len()) });
    }
    // SAFETY: live session.
    ok(unsafe { tw_session_advance(s) });
    engine.run_requests(s);
}

#[test]
fn calls_on_the_same_session_from_the_hook_get_busy() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut cfg = session_config(tw_session_mode::Synctest, 2);
    cfg.check_distance = 3;
    let s = create(&cfg);
    let sink = Sink { reenter: Some(s.0), ..Sink::default() };
    // SAFETY: live session; the sink outlives it.
    ok(unsafe { tw_session_set_log(s.0, Some(on_log), user(&sink), tw_log_level::Debug as u32) });
    // SAFETY: live session.
    ok(unsafe { tw_session_start(s.0) });
    // A synctest whose engine is not deterministic: its mismatch events are logged.
    let mut engine = engine_for(s.0);
    engine.nondeterministic = true;
    let mut events = Vec::new();
    let mut t = 0;
    while sink.records.lock().unwrap().is_empty() && t < 100 {
        synctest_tick(s.0, &mut engine, t);
        poll_session(s.0, &mut events);
        t += 1;
    }
    assert!(sink.has("synctest mismatch at tick"), "{:?}", sink.texts());
    assert_eq!(sink.records.lock().unwrap()[0].level, tw_log_level::Error as u32);
    let results = sink.reentry_results.lock().unwrap().clone();
    assert!(!results.is_empty());
    assert!(results.iter().all(|&r| r == tw_result::Busy), "{results:?}");
    // The refused set_log changed nothing: the hook is still on.
    let n = sink.records.lock().unwrap().len();
    for _ in 0..20 {
        synctest_tick(s.0, &mut engine, t);
        poll_session(s.0, &mut events);
        t += 1;
    }
    assert!(sink.records.lock().unwrap().len() > n, "the hook was turned off by a BUSY call");
    drop(s);
}
