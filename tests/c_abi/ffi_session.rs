//! `tw_session` end to end through the C ABI, over real UDP on 127.0.0.1 with the link
//! simulator: two P2P peers agree on the checksum of every confirmed tick; synctest
//! catches injected nondeterminism; a replay recorded by a P2P peer reproduces its
//! checksums; a spectator joining mid-match ends in sync.

use crate::support::abi_engine;

use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

const SEED: u64 = 11;
const PERIOD: u32 = 4;

/// Two P2P peers on 127.0.0.1, player 0 on `a`, player 1 on `b`, with a link
/// simulator on both sides' outbound traffic; started.
struct Pair {
    a: SessionGuard,
    b: SessionGuard,
    ea: Engine,
    eb: Engine,
    events_a: Vec<tw_session_event>,
    events_b: Vec<tw_session_event>,
}

impl Pair {
    fn new(latency_us: u64, jitter_us: f64, loss: f64, setup_a: impl FnOnce(*mut tw_session)) -> Pair {
        let cfg = session_config(tw_session_mode::P2p, 2);
        let a = create(&cfg);
        let b = create(&cfg);
        let (addr_a, addr_b) = (cstr(&local_address(a.0)), cstr(&local_address(b.0)));
        let sim = link(latency_us, jitter_us, loss);
        // SAFETY: live sessions, NUL-terminated addresses, valid configs.
        unsafe {
            for s in [a.0, b.0] {
                ok(tw_session_set_link_sim(s, tw_direction::Outbound as u32, &sim));
            }
            ok(tw_session_add_local_player(a.0, 0));
            ok(tw_session_add_remote_player(a.0, 1, addr_b.as_ptr()));
            ok(tw_session_add_remote_player(b.0, 0, addr_a.as_ptr()));
            ok(tw_session_add_local_player(b.0, 1));
        }
        setup_a(a.0);
        let mut slots = 0u32;
        // SAFETY: live session, writable out.
        ok(unsafe { tw_session_state_slots(a.0, &mut slots) });
        assert_eq!(slots, 8 + 2 + 8, "max_prediction + 2 + check slots");
        // SAFETY: live sessions.
        unsafe {
            ok(tw_session_start(a.0));
            ok(tw_session_start(b.0));
        }
        Pair {
            ea: Engine::new(2, slots as usize),
            eb: Engine::new(2, slots as usize),
            a,
            b,
            events_a: Vec::new(),
            events_b: Vec::new(),
        }
    }

    fn frame(&mut self) {
        frame(self.a.0, &mut self.ea, &[0], SEED, PERIOD, &mut self.events_a);
        frame(self.b.0, &mut self.eb, &[1], SEED, PERIOD, &mut self.events_b);
    }

    fn run_for(&mut self, d: Duration, mut also: impl FnMut(&mut Pair)) {
        let end = Instant::now() + d;
        while Instant::now() < end {
            self.frame();
            also(self);
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Asserts equal checksums at every tick before both peers' confirmed tick;
    /// returns that tick.
    fn assert_in_sync(&self) -> u32 {
        // Not the confirmed ticks read now: inputs received after a peer's last advance
        // are confirmed already, but their corrections wait for its next one.
        let confirmed = self.ea.confirmed_at_advance.min(self.eb.confirmed_at_advance);
        for t in 0..confirmed as usize {
            let (ca, cb) = (self.ea.checksums.get(t).copied().flatten(), self.eb.checksums.get(t).copied().flatten());
            assert!(ca.is_some(), "peer a saved no checksum for confirmed tick {t}");
            assert_eq!(ca, cb, "tick {t} differs");
        }
        confirmed
    }
}

fn kinds(events: &[tw_session_event]) -> Vec<u32> {
    events.iter().map(|e| e.kind).collect()
}

#[test]
fn p2p_peers_agree_on_every_confirmed_tick_over_udp() {
    let mut pair = Pair::new(30_000, 10_000.0, 0.02, |_| {});
    pair.run_for(Duration::from_secs(6), |_| {});
    let confirmed = pair.assert_in_sync();
    let (sa, sb) = (stats(pair.a.0), stats(pair.b.0));
    println!(
        "confirmed {confirmed}; a: tick {} rollbacks {} resim {} max {} ahead {:.2} scale {:.3} checks {} bytes {}/{}; b: rollbacks {} checks {}",
        sa.current_tick,
        sa.rollbacks,
        sa.resimulated_ticks,
        sa.max_rollback,
        sa.frames_ahead,
        sa.time_scale,
        sa.checks_compared,
        sa.bytes_sent,
        sa.bytes_received,
        sb.rollbacks,
        sb.checks_compared
    );
    // About 6 s at 60 Hz, less the connection time and the latency.
    assert!(confirmed > 200, "ticks confirmed: {confirmed}");
    assert!(sa.rollbacks + sb.rollbacks > 10, "predictions were wrong and rolled back");
    assert!(pair.ea.resimulated > 0 && pair.ea.predicted > 0, "RESIMULATING and PREDICTED requests seen");
    assert!(sa.checks_compared > 10 && sb.checks_compared > 10, "checksums were compared");
    assert_eq!(sa.desyncs + sb.desyncs, 0);
    assert_eq!((sa.running, sb.running, sa.connected_peers, sb.connected_peers), (1, 1, 1, 1));
    assert!(sa.bytes_sent > 0 && sa.bytes_received > 0);
    for events in [&pair.events_a, &pair.events_b] {
        let k = kinds(events);
        assert!(k.contains(&(tw_session_event_kind::PeerConnected as u32)), "{k:?}");
        assert!(k.contains(&(tw_session_event_kind::Synchronized as u32)), "{k:?}");
        assert!(!k.contains(&(tw_session_event_kind::Desync as u32)), "{k:?}");
    }
    // The connected event names the remote player; the peer maps back to it.
    let connected = pair.events_a.iter().find(|e| e.kind == tw_session_event_kind::PeerConnected as u32).unwrap();
    // SAFETY: the kind says the peer member is live.
    assert_eq!(unsafe { connected.data.peer.player }, 1);
    let mut peer = 0;
    // SAFETY: live session, writable out.
    ok(unsafe { tw_session_player_peer(pair.a.0, 1, &mut peer) });
    assert_eq!(peer, connected.peer);
    let mut ps = std::mem::MaybeUninit::<tw_peer_stats>::uninit();
    // SAFETY: live session, writable storage.
    ok(unsafe { tw_session_peer_stats(pair.a.0, peer, ps.as_mut_ptr()) });
    // SAFETY: written on success.
    let ps = unsafe { ps.assume_init() };
    assert!(ps.srtt_us > 40_000.0, "the simulated 2 x 30 ms shows in the RTT: {}", ps.srtt_us);
}

#[test]
fn synctest_catches_injected_nondeterminism() {
    let mut cfg = session_config(tw_session_mode::Synctest, 2);
    cfg.check_distance = 3;
    let run = |nondeterministic: bool| -> (u64, Vec<tw_session_event>, u32) {
        let s = create(&cfg);
        let mut slots = 0;
        // SAFETY: live session, valid pointers.
        ok(unsafe { tw_session_state_slots(s.0, &mut slots) });
        assert_eq!(slots, 2 * 5, "check_distance + 2 for the saved states, as many for the resimulated");
        let mut e = Engine::new(2, slots as usize);
        e.nondeterministic = nondeterministic;
        // SAFETY: live session.
        ok(unsafe { tw_session_start(s.0) });
        let mut events = Vec::new();
        for t in 0..300u32 {
            for p in 0..2 {
                let input = input_for(3, p, t, 5);
                // SAFETY: live session, valid input.
                ok(unsafe { tw_session_push_input(s.0, p as u32, input.as_ptr().cast(), input.len()) });
            }
            // SAFETY: live session.
            ok(unsafe { tw_session_advance(s.0) });
            e.run_requests(s.0);
            let mut ev = tw_session_event::zeroed();
            // SAFETY: live session, writable event.
            while unsafe { tw_session_poll_event(s.0, &mut ev) } == tw_result::Ok {
                events.push(ev);
            }
        }
        let st = stats(s.0);
        assert_eq!(st.current_tick, 300);
        // Tick c re-simulates the 3 ticks up to it once c + 1 >= 3: every tick from 2 on.
        assert_eq!(e.resimulated, 3 * (300 - 2), "every tick rolled back 3 ticks");
        (st.synctest_mismatches, events, st.current_tick)
    };
    let (clean, events, _) = run(false);
    assert_eq!(clean, 0, "a deterministic game passes: {:?}", kinds(&events));
    assert!(events.is_empty());
    let (mismatches, events, _) = run(true);
    assert!(mismatches > 10, "nondeterminism caught: {mismatches}");
    let first =
        events.iter().find(|e| e.kind == tw_session_event_kind::SynctestMismatch as u32).expect("mismatch event");
    // SAFETY: the kind says synctest_mismatch is live.
    let m = unsafe { first.data.synctest_mismatch };
    assert_ne!(m.expected_checksum, m.actual_checksum);
    assert!(m.tick > 0 && m.tick < 20, "caught early: tick {}", m.tick);
}

#[test]
fn a_replay_recorded_over_udp_reproduces_the_checksums() {
    let initial = Engine::new(2, 1).serialize();
    let mut pair = Pair::new(20_000, 5_000.0, 0.02, |a| {
        // SAFETY: live session, valid bytes.
        ok(unsafe { tw_session_start_recording(a, initial.as_ptr().cast(), initial.len()) });
    });
    pair.run_for(Duration::from_secs(4), |_| {});
    // Through a buffer (size query first), and through a file.
    let mut need = 0;
    // SAFETY: live session; NULL buffer with length 0 asks for the size.
    let r = unsafe { tw_session_copy_replay(pair.a.0, std::ptr::null_mut(), 0, &mut need) };
    assert_eq!(r, tw_result::BufferTooSmall, "{}", last_error());
    let mut bytes = vec![0u8; need];
    let mut n = 0;
    // SAFETY: buffer valid for its length.
    ok(unsafe { tw_session_copy_replay(pair.a.0, bytes.as_mut_ptr().cast(), bytes.len(), &mut n) });
    assert_eq!(n, need);
    let path = std::env::temp_dir().join(format!("tickwire-ffi-replay-{}.twrp", std::process::id()));
    let cpath = cstr(path.to_str().unwrap());
    // SAFETY: live session, NUL-terminated path.
    ok(unsafe { tw_session_save_replay(pair.a.0, cpath.as_ptr()) });
    let recorded = pair.ea.checksums.clone();
    let final_a = pair.ea.checksum();
    let current_a = stats(pair.a.0).current_tick;
    drop(pair);

    for from_file in [true, false] {
        let cfg = session_config(tw_session_mode::Replay, 2);
        let s = create(&cfg);
        // SAFETY: live session, valid path or bytes.
        unsafe {
            if from_file {
                ok(tw_session_load_replay_file(s.0, cpath.as_ptr()));
            } else {
                ok(tw_session_load_replay(s.0, bytes.as_ptr().cast(), bytes.len()));
            }
            ok(tw_session_start(s.0));
        }
        let mut e = Engine::new(2, 1);
        e.state.iter_mut().for_each(|w| *w = -7);
        e.record = false;
        let mut compared = 0;
        let end = loop {
            // SAFETY: live session.
            let r = unsafe { tw_session_advance(s.0) };
            e.run_requests(s.0);
            if r == tw_result::Finished {
                break stats(s.0).current_tick;
            }
            ok(r);
            let t = stats(s.0).current_tick as usize;
            if let Some(Some(c)) = recorded.get(t) {
                assert_eq!(e.checksum(), *c, "tick {t}");
                compared += 1;
            }
        };
        assert_eq!(e.restored_at, Some(0), "the initial state came back as a RESTORE");
        assert!(end > 150, "a few seconds recorded: {end} ticks");
        assert!(compared + 1 >= end, "compared {compared} of {end}");
        let expected = match recorded.get(end as usize) {
            Some(&Some(c)) => c,
            _ => {
                assert_eq!(end, current_a, "a tick without a save is the current one");
                final_a
            }
        };
        assert_eq!(e.checksum(), expected, "final checksum at tick {end}");
        // Played to the end: no tick is due any more, as after a relay client's
        // SERVER_LOST (it kept giving ticks that only answered FINISHED).
        std::thread::sleep(Duration::from_millis(60));
        let mut due = 99;
        // SAFETY: live session, valid pointer.
        ok(unsafe { tw_session_ticks_due(s.0, &mut due) });
        assert_eq!(due, 0, "no tick due after the end");
        // SAFETY: live session.
        assert_eq!(unsafe { tw_session_advance(s.0) }, tw_result::Finished);
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_spectator_joining_mid_match_ends_in_sync() {
    let mut spec_cfg = session_config(tw_session_mode::Spectator, 2);
    spec_cfg.spectator_catchup_speed = 3;
    let spec = create(&spec_cfg);
    let spec_addr = cstr(&local_address(spec.0));
    let mut pair = Pair::new(15_000, 5_000.0, 0.01, |a| {
        // SAFETY: live session, NUL-terminated address.
        ok(unsafe { tw_session_add_spectator(a, spec_addr.as_ptr()) });
    });
    pair.run_for(Duration::from_millis(1500), |_| {});
    let host_addr = cstr(&local_address(pair.a.0));
    // SAFETY: live session, NUL-terminated address.
    unsafe {
        ok(tw_session_spectate(spec.0, host_addr.as_ptr()));
        ok(tw_session_start(spec.0));
    }
    let mut es = Engine::new(2, 1);
    es.state.iter_mut().for_each(|w| *w = 0);
    let mut sums: Vec<(u32, u64)> = Vec::new();
    let mut spec_events = Vec::new();
    pair.run_for(Duration::from_secs(4), |p| {
        let mut n = 0;
        // SAFETY: live session, writable out.
        ok(unsafe { tw_session_ticks_due(spec.0, &mut n) });
        for _ in 0..n {
            // SAFETY: live session.
            let r = unsafe { tw_session_advance(spec.0) };
            assert!(!r.is_err(), "{r:?}: {}", last_error());
            es.run_requests(spec.0);
            if let Some((t, c)) = es.last_advanced.take() {
                sums.push((t + 1, c));
            }
        }
        let mut e = tw_session_event::zeroed();
        // SAFETY: live session, writable event.
        while unsafe { tw_session_poll_event(spec.0, &mut e) } == tw_result::Ok {
            spec_events.push(e);
        }
        let _ = p;
    });
    let restored = es.restored_at.expect("the spectator restored the host's snapshot");
    assert!(restored > 30, "a mid-match snapshot, tick {restored}");
    assert_eq!(pair.ea.dumps_provided, 1, "the host engine was asked for the snapshot once");
    assert!(kinds(&spec_events).contains(&(tw_session_event_kind::PeerConnected as u32)));
    // Issue 18, 4: a spectator says when it can play (its snapshot or the first inputs
    // arrived), once, as P2P does.
    let synced = kinds(&spec_events).iter().filter(|&&k| k == tw_session_event_kind::Synchronized as u32).count();
    assert_eq!(synced, 1, "SYNCHRONIZED once: {:?}", kinds(&spec_events));
    let host_confirmed = stats(pair.a.0).confirmed_tick;
    let spec_tick = stats(spec.0).current_tick;
    assert!(
        host_confirmed.saturating_sub(spec_tick) <= 15,
        "caught up: host confirmed {host_confirmed}, spectator {spec_tick}"
    );
    let mut compared = 0;
    for &(t, c) in &sums {
        if let Some(Some(h)) = pair.ea.checksums.get(t as usize) {
            assert_eq!(c, *h, "spectator state at tick {t}");
            compared += 1;
        }
    }
    assert!(compared > 150, "compared {compared} ticks");
    let (t, c) = *sums.last().unwrap();
    assert_eq!(Some(c), pair.ea.checksums[t as usize], "ends in sync at tick {t}");
    pair.assert_in_sync();
}

#[test]
fn a_desync_is_reported_and_dumped_and_a_leaving_peer_is_disconnected() {
    let mut pair = Pair::new(10_000, 2_000.0, 0.0, |_| {});
    pair.eb.desync_from = Some(120);
    let mut dump = None;
    let path = std::env::temp_dir().join(format!("tickwire-ffi-desync-{}.twds", std::process::id()));
    let cpath = cstr(path.to_str().unwrap());
    pair.run_for(Duration::from_secs(5), |p| {
        if dump.is_some() || !p.events_a.iter().any(|e| e.kind == tw_session_event_kind::DesyncDumpReady as u32) {
            return;
        }
        let mut need = 0;
        // SAFETY: live session; a 1-byte buffer is too small for any dump.
        let r = unsafe { tw_session_take_desync_dump(p.a.0, [0u8; 1].as_mut_ptr().cast(), 1, &mut need) };
        assert_eq!(r, tw_result::BufferTooSmall, "{}", last_error());
        let mut bytes = vec![0u8; need];
        let mut n = 0;
        // SAFETY: buffer valid for its length.
        ok(unsafe { tw_session_take_desync_dump(p.a.0, bytes.as_mut_ptr().cast(), bytes.len(), &mut n) });
        assert_eq!(n, need);
        // SAFETY: as above; released by the take.
        assert_eq!(
            unsafe { tw_session_take_desync_dump(p.a.0, bytes.as_mut_ptr().cast(), bytes.len(), &mut n) },
            tw_result::Empty
        );
        dump = Some(bytes);
    });
    let desync =
        pair.events_a.iter().find(|e| e.kind == tw_session_event_kind::Desync as u32).expect("peer a saw the desync");
    // SAFETY: the kind says desync is live.
    let d = unsafe { desync.data.desync };
    assert!(d.tick >= 120 && d.tick < 200, "found soon after it began: tick {}", d.tick);
    assert_ne!(d.local_checksum, d.remote_checksum);
    assert_eq!(Some(d.local_checksum), pair.ea.checksums[d.tick as usize]);
    assert_eq!(Some(d.remote_checksum), pair.eb.checksums[d.tick as usize]);
    let dump = tickwire_proto::DesyncDump::decode(&dump.expect("a dump was ready")).expect("a valid dump");
    assert_eq!(
        (dump.tick, dump.local, dump.remote, dump.peer),
        (d.tick, d.local_checksum, d.remote_checksum, desync.peer)
    );
    assert!(!dump.inputs.is_empty(), "the inputs around the tick");
    assert_eq!(dump.state.as_deref().map(<[u8]>::len), Some(2 * 8 * 8), "the engine's state bytes");
    assert!(pair.ea.dumps_provided >= 1);
    // Peer b also found it; its next dump goes to a file.
    assert!(pair.events_b.iter().any(|e| e.kind == tw_session_event_kind::Desync as u32));
    // SAFETY: live session, NUL-terminated path.
    let r = unsafe { tw_session_write_desync_dump(pair.b.0, cpath.as_ptr()) };
    assert_eq!(r, tw_result::Ok, "{}", last_error());
    assert!(tickwire_proto::DesyncDump::decode(&std::fs::read(&path).unwrap()).is_ok());
    std::fs::remove_file(&path).unwrap();

    // Peer b leaves: a is told, agrees on a disconnect tick for player 1, and goes on.
    let Pair { a, b, mut ea, .. } = pair;
    drop(b);
    let before = stats(a.0).current_tick;
    let mut events = Vec::new();
    let end = Instant::now() + Duration::from_secs(1);
    while Instant::now() < end {
        frame(a.0, &mut ea, &[0], SEED, PERIOD, &mut events);
        std::thread::sleep(Duration::from_millis(2));
    }
    let k = kinds(&events);
    assert!(k.contains(&(tw_session_event_kind::PeerDisconnected as u32)), "{k:?}");
    let pd = events
        .iter()
        .find(|e| e.kind == tw_session_event_kind::PlayerDisconnected as u32)
        .expect("player disconnected");
    // SAFETY: the kind says player is live.
    assert_eq!(unsafe { pd.data.player.player }, 1);
    assert!(stats(a.0).current_tick > before + 30, "the survivor keeps simulating");
    assert_eq!(stats(a.0).connected_peers, 0);
}
