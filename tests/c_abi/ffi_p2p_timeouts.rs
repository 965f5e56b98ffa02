//! Issue 18, missing 1 and 2 are here too: dropping a player on purpose, a disconnect
//! timeout of 0 (never), and timeouts changed after create.
//!
//! Issue 18, 1: a P2P session's `disconnect_timeout_ms` longer than the host's
//! `timeout_ms` (the transport's silence timeout) was silently cut to the latter: with
//! 10 s asked, the peer was dropped after 5 s. The session's timeout is the one that
//! holds: the transport waits at least as long.

use crate::support::abi_engine;

use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

const SEED: u64 = 41;
const PERIOD: u32 = 5;

#[test]
fn the_sessions_disconnect_timeout_holds_past_the_hosts_timeout() {
    let mut cfg = session_config(tw_session_mode::P2p, 2);
    cfg.host.timeout_ms = 1_500;
    cfg.disconnect_timeout_ms = 3_000;
    let (a, b) = p2p_pair(&cfg, &cfg);
    // SAFETY: live sessions.
    unsafe {
        ok(tw_session_start(a.0));
        ok(tw_session_start(b.0));
    }
    let (mut ea, mut eb) = (Engine::new(2, 18), Engine::new(2, 18));
    let (mut va, mut vb) = (Vec::new(), Vec::new());
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        frame(a.0, &mut ea, &[0], SEED, PERIOD, &mut va);
        frame(b.0, &mut eb, &[1], SEED, PERIOD, &mut vb);
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(va.iter().any(|e| e.kind == tw_session_event_kind::Synchronized as u32));
    // B goes silent: everything it sends is lost from now on.
    let mut silence = link(0, 0.0, 0.0);
    silence.loss_kind = tw_loss_kind::Bernoulli as u32;
    silence.loss_probability = 1.0;
    // SAFETY: live session, valid config.
    ok(unsafe { tw_session_set_link_sim(b.0, tw_direction::Outbound as u32, &silence) });
    let silent_since = Instant::now();
    va.clear();
    let mut dropped_after = None;
    while dropped_after.is_none() && silent_since.elapsed() < Duration::from_secs(8) {
        frame(a.0, &mut ea, &[0], SEED, PERIOD, &mut va);
        frame(b.0, &mut eb, &[1], SEED, PERIOD, &mut vb);
        if va.iter().any(|e| e.kind == tw_session_event_kind::PeerDisconnected as u32) {
            dropped_after = Some(silent_since.elapsed());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let after = dropped_after.expect("the silent peer was dropped");
    eprintln!("dropped after {after:?} of silence (host timeout 1.5 s, disconnect timeout 3 s)");
    assert!(after >= Duration::from_millis(2_900), "dropped after {after:?}: the host's 1.5 s cut it short");
    assert!(after < Duration::from_millis(4_500), "dropped after {after:?}");
}

/// Issue 18, missing 1: `tw_session_disconnect_player` drops a remote player on
/// purpose, as `ggpo_disconnect_player` does. Both sides see PEER_DISCONNECTED with
/// reason KICKED_BY_ENGINE, and the match goes on with that player's inputs marked
/// disconnected.
#[test]
fn disconnect_player_drops_the_peer_and_the_match_goes_on() {
    let cfg = session_config(tw_session_mode::P2p, 2);
    let (a, b) = p2p_pair(&cfg, &cfg);
    // SAFETY: live sessions.
    unsafe {
        ok(tw_session_start(a.0));
        ok(tw_session_start(b.0));
        // Not running yet: nothing to disconnect.
        assert_eq!(tw_session_disconnect_player(a.0, 1), tw_result::InvalidState, "{}", last_error());
        assert!(last_error().contains("not running"), "{}", last_error());
    }
    let (mut ea, mut eb) = (Engine::new(2, 18), Engine::new(2, 18));
    let (mut va, mut vb) = (Vec::new(), Vec::new());
    let end = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < end {
        frame(a.0, &mut ea, &[0], SEED, PERIOD, &mut va);
        frame(b.0, &mut eb, &[1], SEED, PERIOD, &mut vb);
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(va.iter().any(|e| e.kind == tw_session_event_kind::Synchronized as u32));
    assert_eq!(ea.disconnected_inputs, 0);
    // SAFETY: live session.
    unsafe {
        assert_eq!(tw_session_disconnect_player(a.0, 0), tw_result::InvalidArgument);
        assert!(last_error().contains("player 0 plays on this machine"), "{}", last_error());
        assert_eq!(tw_session_disconnect_player(a.0, 2), tw_result::InvalidArgument);
        assert!(last_error().contains("player 2"), "{}", last_error());
        ok(tw_session_disconnect_player(a.0, 1));
        assert_eq!(tw_session_disconnect_player(a.0, 1), tw_result::InvalidState);
        assert!(last_error().contains("already disconnected"), "{}", last_error());
    }
    let tick_at_drop = stats(a.0).current_tick;
    va.clear();
    vb.clear();
    let end = Instant::now() + Duration::from_millis(1000);
    while Instant::now() < end {
        frame(a.0, &mut ea, &[0], SEED, PERIOD, &mut va);
        frame(b.0, &mut eb, &[1], SEED, PERIOD, &mut vb);
        std::thread::sleep(Duration::from_millis(2));
    }
    let reason_of = |events: &[tw_session_event]| -> Vec<u32> {
        events
            .iter()
            .filter(|e| e.kind == tw_session_event_kind::PeerDisconnected as u32)
            // SAFETY: the kind says the peer member is live.
            .map(|e| unsafe { e.data.peer.reason })
            .collect()
    };
    let kicked = tw_disconnect_reason::KickedByEngine as u32;
    assert_eq!(reason_of(&va), [kicked], "the dropping side");
    assert_eq!(reason_of(&vb), [kicked], "the dropped side is told why");
    let after = stats(a.0).current_tick;
    assert!(after > tick_at_drop + 30, "the match went on: tick {tick_at_drop} -> {after}");
    assert!(ea.disconnected_inputs > 30, "player 1's inputs are marked disconnected: {}", ea.disconnected_inputs);
    // A relay or local session has no such call.
    let sync = create(&session_config(tw_session_mode::Synctest, 2));
    // SAFETY: live session.
    assert_eq!(unsafe { tw_session_disconnect_player(sync.0, 1) }, tw_result::InvalidState);
}

/// Starts a P2P pair from `cfg`, runs it until both are synchronized, then makes B
/// silent (everything it sends is lost). Returns the sessions, the engines and A's
/// events so far.
struct Silenced {
    a: SessionGuard,
    b: SessionGuard,
    ea: Engine,
    eb: Engine,
    va: Vec<tw_session_event>,
    vb: Vec<tw_session_event>,
}

impl Silenced {
    fn start(cfg: &tw_session_config) -> Silenced {
        let (a, b) = p2p_pair(cfg, cfg);
        // SAFETY: live sessions.
        unsafe {
            ok(tw_session_start(a.0));
            ok(tw_session_start(b.0));
        }
        let mut m = Silenced { a, b, ea: Engine::new(2, 18), eb: Engine::new(2, 18), va: Vec::new(), vb: Vec::new() };
        m.run(Duration::from_millis(1500));
        assert!(m.va.iter().any(|e| e.kind == tw_session_event_kind::Synchronized as u32));
        m
    }

    fn run(&mut self, d: Duration) {
        let end = Instant::now() + d;
        while Instant::now() < end {
            frame(self.a.0, &mut self.ea, &[0], SEED, PERIOD, &mut self.va);
            frame(self.b.0, &mut self.eb, &[1], SEED, PERIOD, &mut self.vb);
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// B's outbound traffic all lost (`silent`), or back to a clean link.
    fn silence_b(&mut self, silent: bool) {
        let mut l = link(0, 0.0, 0.0);
        if silent {
            l.loss_kind = tw_loss_kind::Bernoulli as u32;
            l.loss_probability = 1.0;
        }
        // SAFETY: live session, valid config.
        ok(unsafe { tw_session_set_link_sim(self.b.0, tw_direction::Outbound as u32, &l) });
    }

    /// Runs until A drops B or `limit` passes; how long it took.
    fn time_to_drop(&mut self, limit: Duration) -> Option<Duration> {
        let since = Instant::now();
        self.va.clear();
        while since.elapsed() < limit {
            frame(self.a.0, &mut self.ea, &[0], SEED, PERIOD, &mut self.va);
            frame(self.b.0, &mut self.eb, &[1], SEED, PERIOD, &mut self.vb);
            if self.va.iter().any(|e| e.kind == tw_session_event_kind::PeerDisconnected as u32) {
                return Some(since.elapsed());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        None
    }
}

/// Issue 18, missing 2: `disconnect_timeout_ms` 0 means never, as in GGPO. A peer
/// silent far longer than the host's timeout is reported interrupted (with "never" as
/// the time left) and not dropped, by the session or by the transport; when it speaks
/// again the match goes on.
#[test]
fn a_disconnect_timeout_of_zero_never_drops_a_silent_peer() {
    let mut cfg = session_config(tw_session_mode::P2p, 2);
    cfg.host.timeout_ms = 1_000;
    cfg.disconnect_timeout_ms = 0;
    cfg.disconnect_notify_ms = 300;
    let mut m = Silenced::start(&cfg);
    m.silence_b(true);
    assert_eq!(m.time_to_drop(Duration::from_millis(3_000)), None, "dropped although the timeout is 0 (never)");
    let interrupted: Vec<u64> =
        m.va.iter()
            .filter(|e| e.kind == tw_session_event_kind::PeerInterrupted as u32)
            // SAFETY: the kind says the peer member is live.
            .map(|e| unsafe { e.data.peer.disconnect_in_us })
            .collect();
    assert_eq!(interrupted, [u64::MAX], "one notice, never dropped");
    let stalled = stats(m.a.0).current_tick;
    m.silence_b(false);
    m.va.clear();
    m.run(Duration::from_millis(1_500));
    assert!(m.va.iter().any(|e| e.kind == tw_session_event_kind::PeerResumed as u32), "B heard again");
    assert!(!m.va.iter().any(|e| e.kind == tw_session_event_kind::PeerDisconnected as u32));
    assert!(stats(m.a.0).current_tick > stalled + 30, "the match goes on");
    assert_eq!(m.ea.disconnected_inputs, 0, "B was never disconnected");
}

/// Issue 18, missing 2: `tw_session_set_timeouts` changes the timeouts after create,
/// checked as at create; a longer one holds past the transport's timeout set at create
/// (the transport follows), a shorter one drops sooner.
#[test]
fn timeouts_can_be_changed_after_create() {
    let mut cfg = session_config(tw_session_mode::P2p, 2);
    cfg.host.timeout_ms = 1_000;
    cfg.disconnect_timeout_ms = 1_500;
    cfg.disconnect_notify_ms = 500;
    // SAFETY (whole test): live sessions.
    unsafe {
        assert_eq!(tw_session_set_timeouts(std::ptr::null_mut(), 1_000, 500), tw_result::NullArgument);
        let sync = create(&session_config(tw_session_mode::Synctest, 2));
        assert_eq!(tw_session_set_timeouts(sync.0, 1_000, 500), tw_result::InvalidState);
        assert!(last_error().contains("tw_session_set_timeouts"), "{}", last_error());
    }
    let mut m = Silenced::start(&cfg);
    // SAFETY: live session.
    unsafe {
        for (timeout, notify) in [(800, 800), (800, 900)] {
            assert_eq!(tw_session_set_timeouts(m.a.0, timeout, notify), tw_result::InvalidArgument);
            let e = last_error();
            assert!(
                e.contains(&format!("disconnect_notify_ms ({notify}) must be below disconnect_timeout_ms ({timeout})")),
                "{e}"
            );
        }
        // Either one off is fine.
        ok(tw_session_set_timeouts(m.a.0, 0, 900));
        ok(tw_session_set_timeouts(m.a.0, 900, 0));
        // Longer than the transport's 2.5 s (1.5 s + 1 s) chosen at create.
        ok(tw_session_set_timeouts(m.a.0, 3_500, 500));
    }
    m.silence_b(true);
    let after = m.time_to_drop(Duration::from_secs(6)).expect("the silent peer was dropped");
    eprintln!("dropped after {after:?} of silence (set to 3.5 s; 1.5 s at create)");
    assert!(after >= Duration::from_millis(3_400), "dropped after {after:?}: the old timeout cut it short");
    assert!(after < Duration::from_millis(5_000), "dropped after {after:?}");

    // Shorter than at create: dropped sooner.
    let mut m = Silenced::start(&cfg);
    // SAFETY: live session.
    ok(unsafe { tw_session_set_timeouts(m.a.0, 700, 200) });
    m.silence_b(true);
    let after = m.time_to_drop(Duration::from_secs(3)).expect("the silent peer was dropped");
    assert!(after >= Duration::from_millis(600), "dropped after {after:?}");
    assert!(after < Duration::from_millis(1_300), "dropped after {after:?}: the 1.5 s of create held");
}

/// A loading screen mid-match, over the C ABI and real UDP. B's engine keeps calling
/// `tw_session_ticks_due` and polling events but advances nothing for 3 s, twice the
/// progress timeout. Unannounced, A drops it as NO_PROGRESS within about the progress
/// timeout; announced with `tw_session_set_loading`, A waits (its loading grace) and
/// the match goes on after it. Only P2P has the call.
#[test]
fn a_loading_screen_announced_keeps_the_peer_an_unannounced_one_drops_it() {
    // SAFETY: NULL and live handles.
    unsafe {
        assert_eq!(tw_session_set_loading(std::ptr::null_mut(), 1), tw_result::NullArgument);
        let sync = create(&session_config(tw_session_mode::Synctest, 2));
        assert_eq!(tw_session_set_loading(sync.0, 1), tw_result::InvalidState);
        assert!(last_error().contains("tw_session_set_loading"), "{}", last_error());
    }
    let cfg = session_config(tw_session_mode::P2p, 2);
    assert_eq!((cfg.progress_timeout_ms, cfg.loading_grace_ms), (1_500, 10_000), "the defaults");
    for announce in [true, false] {
        let mut m = Silenced::start(&cfg);
        let log = std::sync::Mutex::new(Vec::<String>::new());
        // SAFETY: live session; `log` outlives the hook (removed below).
        ok(unsafe { tw_session_set_log(m.a.0, Some(keep_log), &log as *const _ as *mut std::ffi::c_void, 4) });
        // SAFETY: live session.
        ok(unsafe { tw_session_set_loading(m.b.0, u32::from(announce)) });
        m.va.clear();
        let since = Instant::now();
        let mut dropped = None;
        while since.elapsed() < Duration::from_secs(3) && dropped.is_none() {
            frame(m.a.0, &mut m.ea, &[0], SEED, PERIOD, &mut m.va);
            // B's loading frame: the loop goes on, nothing advances.
            let mut n = 0u32;
            let mut e = tw_session_event::zeroed();
            // SAFETY: live session, valid pointers.
            unsafe {
                ok(tw_session_ticks_due(m.b.0, &mut n));
                while tw_session_poll_event(m.b.0, &mut e) == tw_result::Ok {}
            }
            dropped =
                m.va.iter()
                    .find(|e| e.kind == tw_session_event_kind::PeerDisconnected as u32)
                    // SAFETY: the kind says the peer member is live.
                    .map(|e| (since.elapsed(), unsafe { e.data.peer.reason }));
            std::thread::sleep(Duration::from_millis(2));
        }
        if !announce {
            let (after, reason) = dropped.expect("the unannounced stall was dropped");
            assert_eq!(reason, tw_disconnect_reason::NoProgress as u32);
            assert!(after >= Duration::from_millis(1_300) && after < Duration::from_millis(2_800), "after {after:?}");
            // The event's log line reads its tick (it read the relay member before).
            // SAFETY: live session.
            ok(unsafe { tw_session_set_log(m.a.0, None, std::ptr::null_mut(), 0) });
            let lines = log.lock().unwrap();
            let line = lines.iter().find(|l| l.contains("no progress")).expect("NO_PROGRESS logged");
            let held = m.va.iter().find(|e| e.kind == tw_session_event_kind::NoProgress as u32).unwrap();
            // SAFETY: the kind says the tick member is live.
            let tick = unsafe { held.data.tick.tick };
            assert!(line.contains(&format!("held at {tick} by peer {}", held.peer)), "{line}");
            continue;
        }
        assert_eq!(dropped, None, "dropped while announcing loading");
        assert!(!m.va.iter().any(|e| e.kind == tw_session_event_kind::NoProgress as u32));
        let stalled = stats(m.a.0).current_tick;
        // SAFETY: live session.
        ok(unsafe { tw_session_set_loading(m.b.0, 0) });
        m.run(Duration::from_millis(1_500));
        assert!(stats(m.a.0).current_tick > stalled + 60, "the match went on after loading");
        assert!(!m.va.iter().any(|e| e.kind == tw_session_event_kind::PeerDisconnected as u32));
        assert_eq!(stats(m.a.0).desyncs, 0);
        // SAFETY: live session.
        ok(unsafe { tw_session_set_log(m.a.0, None, std::ptr::null_mut(), 0) });
    }
}

/// A log hook that keeps every line in the `Mutex<Vec<String>>` at `user`.
unsafe extern "C" fn keep_log(user: *mut std::ffi::c_void, _level: u32, message: *const std::ffi::c_char, len: usize) {
    // SAFETY: `user` is the test's vector, alive while the hook is set; the library
    // passes `len` bytes of text.
    let (log, bytes) = unsafe {
        (&*(user as *const std::sync::Mutex<Vec<String>>), std::slice::from_raw_parts(message.cast::<u8>(), len))
    };
    log.lock().unwrap().push(String::from_utf8_lossy(bytes).into_owned());
}
