//! The relay topology end to end through the C ABI, over real UDP on 127.0.0.1 with the
//! link simulator: a RELAY_SERVER `tw_session` and RELAY_CLIENT sessions, each with an
//! engine answering its requests. Every client's authoritative state equals the
//! server's at every tick it has made authoritative; the net-graph figures are sane;
//! joins, departures, freed slots, refusals, desyncs with a resync, and a reconnect
//! with the session token come out as events.

use crate::support::abi_engine;

use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

const SEED: u64 = 23;
const PERIOD: u32 = 5;
const PLAYERS: u32 = 4;

fn relay_config(mode: tw_session_mode) -> tw_session_config {
    let mut c = session_config(mode, PLAYERS);
    c.max_prediction = 16;
    c
}

struct Client {
    s: SessionGuard,
    e: Engine,
    events: Vec<tw_session_event>,
    pushed: u32,
    index: usize,
}

/// A relay server and its clients on 127.0.0.1, every session's outbound traffic
/// through the link simulator.
struct Match {
    server: SessionGuard,
    es: Engine,
    server_events: Vec<tw_session_event>,
    server_addr: std::ffi::CString,
    clients: Vec<Client>,
    sim: tw_link_sim_config,
}

impl Match {
    fn new(sim: tw_link_sim_config, edit_server: impl FnOnce(&mut tw_session_config)) -> Match {
        let mut cfg = relay_config(tw_session_mode::RelayServer);
        edit_server(&mut cfg);
        let server = create(&cfg);
        let server_addr = cstr(&local_address(server.0));
        let mut slots = 0;
        // SAFETY: live session, valid pointers.
        unsafe {
            ok(tw_session_state_slots(server.0, &mut slots));
            ok(tw_session_set_link_sim(server.0, tw_direction::Outbound as u32, &sim));
            ok(tw_session_start(server.0));
        }
        let mut es = Engine::new(PLAYERS as usize, slots as usize);
        es.record_after_advance = true;
        Match { server, es, server_events: Vec::new(), server_addr, clients: Vec::new(), sim }
    }

    fn add_client(&mut self, edit: impl FnOnce(&mut tw_session_config)) -> usize {
        let mut cfg = relay_config(tw_session_mode::RelayClient);
        edit(&mut cfg);
        let s = create(&cfg);
        let mut slots = 0;
        // SAFETY: live session, valid pointers.
        unsafe {
            ok(tw_session_state_slots(s.0, &mut slots));
            ok(tw_session_set_link_sim(s.0, tw_direction::Outbound as u32, &self.sim));
            ok(tw_session_set_server(s.0, self.server_addr.as_ptr()));
            ok(tw_session_start(s.0));
        }
        let index = self.clients.len();
        let mut e = Engine::new(PLAYERS as usize, slots as usize);
        e.state.iter_mut().for_each(|w| *w = -1); // replaced by the server's snapshot
        self.clients.push(Client { s, e, events: Vec::new(), pushed: 0, index });
        index
    }

    fn frame(&mut self) {
        frame(self.server.0, &mut self.es, &[], SEED, PERIOD, &mut self.server_events);
        for c in &mut self.clients {
            client_frame(c);
        }
    }

    fn run_for(&mut self, d: Duration, mut also: impl FnMut(&mut Match)) {
        let end = Instant::now() + d;
        while Instant::now() < end {
            self.frame();
            also(self);
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Compares client `i`'s authoritative checksums with the server's over every
    /// tick from its latest join to its authoritative tick; returns how many.
    fn assert_in_sync(&self, i: usize) -> usize {
        let c = &self.clients[i];
        let from = latest_join(&c.events).expect("joined").1;
        let to = stats(c.s.0).confirmed_tick;
        let mut compared = 0;
        for t in from..to {
            let server = self.es.checksums.get(t as usize).copied().flatten();
            let client = c.e.checksums.get(t as usize).copied().flatten();
            assert!(server.is_some(), "the server has no checksum for tick {t}");
            assert_eq!(client, server, "client {i}: authoritative state at tick {t} differs from the server's");
            compared += 1;
        }
        compared
    }
}

/// One frame of a relay client's engine loop.
fn client_frame(c: &mut Client) {
    relay_client_frame(c.s.0, &mut c.e, c.index, &mut c.pushed, (SEED, PERIOD), &mut c.events);
}

fn kinds(events: &[tw_session_event]) -> Vec<u32> {
    events.iter().map(|e| e.kind).collect()
}

fn of_kind(events: &[tw_session_event], k: tw_session_event_kind) -> Vec<tw_session_event> {
    events.iter().filter(|e| e.kind == k as u32).copied().collect()
}

/// The (player, tick) of the latest JOINED event.
fn latest_join(events: &[tw_session_event]) -> Option<(u32, u32)> {
    // SAFETY: the kind says the relay member is live.
    of_kind(events, tw_session_event_kind::Joined).last().map(|e| unsafe { (e.data.relay.player, e.data.relay.tick) })
}

fn player_stats(s: *mut tw_session, player: u32) -> Option<tw_relay_player_stats> {
    let mut st = std::mem::MaybeUninit::<tw_relay_player_stats>::uninit();
    // SAFETY: live session, writable storage.
    match unsafe { tw_session_player_stats(s, player, st.as_mut_ptr()) } {
        // SAFETY: written on OK.
        tw_result::Ok => Some(unsafe { st.assume_init() }),
        tw_result::Empty => None,
        r => panic!("tw_session_player_stats: {r:?}: {}", last_error()),
    }
}

#[test]
fn four_clients_match_the_servers_state_over_udp() {
    let mut m = Match::new(link(25_000, 5_000.0, 0.01), |_| {});
    for _ in 0..4 {
        m.add_client(|_| {});
    }
    m.run_for(Duration::from_secs(6), |_| {});

    let ss = stats(m.server.0);
    println!(
        "server: tick {} players {} empty {} merged {} late {} checks sent {}",
        ss.current_tick, ss.players, ss.empty_steps, ss.merged_steps, ss.late_inputs, ss.checks_compared
    );
    assert_eq!((ss.running, ss.mode, ss.players, ss.connected_peers), (1, tw_session_mode::RelayServer as u32, 4, 4));
    assert!(ss.checks_compared > 10, "the server sent checksums: {}", ss.checks_compared);
    let joined = of_kind(&m.server_events, tw_session_event_kind::PlayerJoined);
    assert_eq!(joined.len(), 4, "{:?}", kinds(&m.server_events));
    // SAFETY: the kind says the relay member is live.
    let mut players: Vec<u32> = joined.iter().map(|e| unsafe { e.data.relay.player }).collect();
    players.sort_unstable();
    assert_eq!(players, vec![0, 1, 2, 3]);
    // One snapshot serves every client waiting for one at that tick.
    assert!((1..=4).contains(&m.es.dumps_provided), "snapshots asked for: {}", m.es.dumps_provided);

    for i in 0..4 {
        let c = &m.clients[i];
        let st = stats(c.s.0);
        let (player, join_tick) = latest_join(&c.events).expect("the client joined");
        let compared = m.assert_in_sync(i);
        println!(
            "client {i}: player {player} joined at {join_tick}; tick {} authoritative {} compared {compared}; \
             rtt {:.1} ms lead {:.2} depth {} P {} resim {} rollbacks {} late {} merged {} empty {} \
             scale {:.3} corrections {} interp {:.2} delay {} mispredicted local {} remote {} checks {}",
            st.current_tick,
            st.confirmed_tick,
            st.rtt_us / 1000.0,
            st.lead_ticks,
            st.server_buffer_depth,
            st.prediction_distance,
            st.resimulated_ticks,
            st.rollbacks,
            st.late_inputs,
            st.merged_steps,
            st.empty_steps,
            st.time_scale,
            st.clock_corrections,
            st.interp_delay_ticks,
            st.input_delay,
            st.local_mispredictions,
            st.remote_mispredictions,
            st.checks_compared,
        );
        assert!(compared > 200, "client {i}: compared only {compared} ticks");
        assert_eq!(c.e.restored_at, Some(join_tick), "the snapshot came as a RESTORE of the join tick");
        let k = kinds(&c.events);
        for want in [tw_session_event_kind::PeerConnected, tw_session_event_kind::Synchronized] {
            assert!(k.contains(&(want as u32)), "client {i}: {k:?}");
        }
        assert!(!k.contains(&(tw_session_event_kind::Desync as u32)), "client {i}: {k:?}");
        assert_eq!((st.running, st.players, st.local_player, st.desyncs), (1, 1, player, 0));
        assert!(st.checks_compared > 5, "client {i}: compared {} server checksums", st.checks_compared);
        // The simulated 2 x 25 ms shows in the round trip, and the lead covers half of it.
        assert!(st.rtt_us > 45_000.0 && st.rtt_us < 200_000.0, "client {i}: rtt {}", st.rtt_us);
        assert!(st.lead_ticks > 1.0 && st.lead_ticks < 12.0, "client {i}: lead {}", st.lead_ticks);
        assert!(
            st.prediction_distance >= 1 && st.prediction_distance <= 16,
            "client {i}: P {}",
            st.prediction_distance
        );
        assert!(st.confirmed_tick <= st.current_tick);
        assert!((0.85..=1.15).contains(&st.time_scale), "client {i}: scale {}", st.time_scale);
        assert!(st.server_buffer_depth <= 8, "client {i}: depth {}", st.server_buffer_depth);
        // Remote inputs change every 5 ticks: predictions of them go wrong and are redone.
        assert!(
            st.rollbacks > 10 && st.resimulated_ticks > st.rollbacks,
            "client {i}: {} / {}",
            st.rollbacks,
            st.resimulated_ticks
        );
        assert!(c.e.resimulated > 0 && c.e.predicted > 0, "RESIMULATING and PREDICTED requests seen");
        // The server's view of this player.
        let ps = player_stats(m.server.0, player).expect("a connected player");
        let event = joined.iter().find(|e| unsafe { e.data.relay.player } == player).unwrap();
        let mut peer = 0;
        // SAFETY: live session, writable out.
        ok(unsafe { tw_session_player_peer(m.server.0, player, &mut peer) });
        assert_eq!((ps.player, ps.peer, peer), (player, event.peer, event.peer));
        assert!(ps.ticks > 200 && ps.normal_steps > ps.ticks / 2, "{ps:?}");
        assert!(ps.rtt_us > 45_000.0, "{ps:?}");
        assert!(ps.duplicates > 0, "inputs are sent with redundancy: {ps:?}");
        // The step stream to it over ~6 s at 1% loss: updates every 3 ticks, with
        // copies of steps (the loss asks for some), nothing capped without a cap.
        assert!(ps.update_bytes > 6 * 20 * 40, "{ps:?}");
        assert!(ps.step_copies > 0 && ps.copies_capped == 0, "{ps:?}");
    }
}

/// A relay client's net graph names its send schedule: every `client_send_interval`
/// ticks on a clean link, every tick while the uplink loses more than half of
/// `late_rate`, with the copies the loss asks for.
#[test]
fn the_stats_say_a_lossy_uplink_is_sent_every_tick() {
    let figures = |loss: f64| {
        let mut m = Match::new(link(25_000, 2_000.0, loss), |_| {});
        m.add_client(|_| {});
        m.run_for(Duration::from_secs(4), |_| {});
        m.assert_in_sync(0);
        let st = stats(m.clients[0].s.0);
        (st.input_send_interval, st.input_copies)
    };
    let (clean, lossy) = (figures(0.0), figures(0.2));
    println!(
        "clean: every {} ticks, {} copies; 20% loss: every {} ticks, {} copies",
        clean.0, clean.1, lossy.0, lossy.1
    );
    // (A client starts at 2 copies and drops to 1 after 200 clean packets, some 7 s.)
    assert!(clean.0 == 2 && (1..=2).contains(&clean.1), "the default schedule on a clean link: {clean:?}");
    assert_eq!(lossy.0, 1, "every tick at 20% loss");
    assert!(lossy.1 >= 3, "copies at 20% loss: {}", lossy.1);
    // A server has no send schedule of inputs.
    let m = Match::new(link(25_000, 2_000.0, 0.0), |_| {});
    assert_eq!((stats(m.server.0).input_send_interval, stats(m.server.0).input_copies), (0, 0));
}

#[test]
fn departures_freed_slots_and_refusals_are_events() {
    let mut m = Match::new(link(10_000, 2_000.0, 0.0), |c| {
        c.num_players = 2;
        c.slot_timeout_ms = 600;
        c.host.timeout_ms = 700;
    });
    let edit = |c: &mut tw_session_config| c.num_players = 2;
    m.add_client(edit);
    m.add_client(edit);
    m.run_for(Duration::from_secs(2), |_| {});
    assert_eq!(of_kind(&m.server_events, tw_session_event_kind::PlayerJoined).len(), 2);
    // A third client finds the server full; one for another game is refused too.
    m.add_client(edit);
    m.add_client(|c| {
        c.num_players = 2;
        c.input_size = 3;
    });
    m.run_for(Duration::from_secs(1), |_| {});
    let rejected = of_kind(&m.server_events, tw_session_event_kind::ConnectionRejected);
    // SAFETY: the kind says the rejected member is live.
    let reasons: Vec<u32> = rejected.iter().map(|e| unsafe { e.data.rejected.reason }).collect();
    let count = |r: tw_reject_reason| reasons.iter().filter(|&&x| x == r as u32).count();
    // The client for another game is refused once; the one that found the server full
    // tries again with backoff (at once, then 250 ms, 500 ms, ...).
    assert_eq!(count(tw_reject_reason::WrongGame), 1, "{reasons:?}");
    assert!(count(tw_reject_reason::Full) >= 2, "the full client retried: {reasons:?}");
    assert_eq!(stats(m.server.0).rejected_connections as usize, reasons.len());
    // Each is told why: another game is final (VERSION_MISMATCH), a full server is not.
    let lost = of_kind(&m.clients[3].events, tw_session_event_kind::ServerLost);
    assert_eq!(lost.len(), 1, "refused client 3 was told: {:?}", kinds(&m.clients[3].events));
    // SAFETY: the kind says the relay member is live.
    assert_eq!(unsafe { lost[0].data.relay.reason }, tw_disconnect_reason::VersionMismatch as u32);
    assert!(of_kind(&m.clients[2].events, tw_session_event_kind::ServerLost).is_empty(), "a full server is not final");
    let retrying = of_kind(&m.clients[2].events, tw_session_event_kind::Reconnecting);
    assert_eq!(retrying.len(), 1, "{:?}", kinds(&m.clients[2].events));
    // SAFETY: as above.
    assert_eq!(unsafe { retrying[0].data.relay.reason }, tw_disconnect_reason::ServerFull as u32);
    for i in [2, 3] {
        assert!(latest_join(&m.clients[i].events).is_none());
    }
    // Client 0 drops without a word (its datagrams stop; the engine is gone): the
    // server times it out after 700 ms, keeps its slot for 600 ms more, then frees it;
    // client 1 sees player 0 gone from the canonical steps.
    let leaving = latest_join(&m.clients[0].events).unwrap().0;
    let c0 = m.clients.remove(0);
    // SAFETY: live session, valid config.
    unsafe { ok(tw_session_set_link_sim(c0.s.0, tw_direction::Outbound as u32, &link(10_000, 0.0, 1.0))) };
    let mut left_at = None;
    let mut freed_after = None;
    m.run_for(Duration::from_millis(2500), |m| {
        if left_at.is_none() && !of_kind(&m.server_events, tw_session_event_kind::PlayerLeft).is_empty() {
            left_at = Some(Instant::now());
        }
        let freed = !of_kind(&m.server_events, tw_session_event_kind::PlayerSlotFreed).is_empty();
        if let (Some(at), None, true) = (left_at, freed_after, freed) {
            freed_after = Some(at.elapsed());
        }
    });
    drop(c0);
    let left = of_kind(&m.server_events, tw_session_event_kind::PlayerLeft);
    assert_eq!(left.len(), 1, "{:?}", kinds(&m.server_events));
    // SAFETY: the kind says the relay member is live.
    let l = unsafe { left[0].data.relay };
    assert_eq!((l.player, l.reason), (leaving, tw_disconnect_reason::Timeout as u32));
    // SAFETY: as above.
    assert_eq!(
        unsafe { of_kind(&m.server_events, tw_session_event_kind::PlayerSlotFreed)[0].data.relay.player },
        leaving
    );
    let freed_after = freed_after.expect("the slot was freed");
    assert!(freed_after >= Duration::from_millis(550), "freed {freed_after:?} after PLAYER_LEFT");
    let client_left = of_kind(&m.clients[0].events, tw_session_event_kind::PlayerLeft);
    // SAFETY: as above.
    assert!(client_left.iter().any(|e| unsafe { e.data.relay.player } == leaving), "{:?}", kinds(&m.clients[0].events));
    m.assert_in_sync(0);
    // The client that found the server full (now index 1) gets the freed slot at one of
    // its retries (perhaps already during the run above).
    m.run_for(Duration::from_secs(4), |_| {});
    let (player, _) = latest_join(&m.clients[1].events).unwrap_or_else(|| panic!("{:?}", kinds(&m.clients[1].events)));
    assert_eq!(player, leaving, "it took the freed slot");
    assert_eq!(stats(m.server.0).players, 2);
    m.assert_in_sync(1);
}

/// Issue 18, 6: a client that quits (`tw_session_destroy`) frees its slot at once. A
/// one-slot server whose slot waits 30 s for a dropped player takes the next one now.
#[test]
fn a_client_that_quits_frees_its_slot_at_once() {
    let one = |c: &mut tw_session_config| c.num_players = 1;
    let mut m = Match::new(link(10_000, 2_000.0, 0.0), |c| {
        c.num_players = 1;
        assert_eq!(c.slot_timeout_ms, 30_000);
    });
    m.add_client(one);
    m.run_for(Duration::from_secs(1), |_| {});
    assert_eq!(latest_join(&m.clients[0].events).map(|j| j.0), Some(0), "{:?}", kinds(&m.clients[0].events));
    let quitter = m.clients.remove(0);
    let quit_at = Instant::now();
    drop(quitter); // tw_session_destroy
    let mut freed_after = None;
    m.run_for(Duration::from_millis(1500), |m| {
        if freed_after.is_none() && !of_kind(&m.server_events, tw_session_event_kind::PlayerSlotFreed).is_empty() {
            freed_after = Some(quit_at.elapsed());
        }
    });
    let left = of_kind(&m.server_events, tw_session_event_kind::PlayerLeft);
    assert_eq!(left.len(), 1, "{:?}", kinds(&m.server_events));
    // SAFETY: the kind says the relay member is live.
    let l = unsafe { left[0].data.relay };
    assert_eq!((l.player, l.reason), (0, tw_disconnect_reason::Client as u32));
    let freed_after = freed_after.unwrap_or_else(|| panic!("slot not freed: {:?}", kinds(&m.server_events)));
    assert!(freed_after < Duration::from_secs(1), "freed {freed_after:?} after the quit");
    // The next player takes the slot at once.
    m.add_client(one);
    m.run_for(Duration::from_secs(2), |_| {});
    assert_eq!(latest_join(&m.clients[0].events).map(|j| j.0), Some(0), "{:?}", kinds(&m.clients[0].events));
    assert!(of_kind(&m.server_events, tw_session_event_kind::ConnectionRejected).is_empty());
    assert_eq!(stats(m.server.0).players, 1);
}

/// One relay client frame like [`client_frame`], returning what each advance answered
/// (any status; an error fails).
fn client_frame_answers(c: &mut Client) -> Vec<tw_result> {
    let mut n = 0u32;
    let mut answers = Vec::new();
    // SAFETY (whole function): live session, valid pointers.
    ok(unsafe { tw_session_ticks_due(c.s.0, &mut n) });
    for _ in 0..n {
        let input = input_for(SEED, c.index, c.pushed, PERIOD);
        c.pushed += 1;
        ok(unsafe { tw_session_push_input(c.s.0, TW_LOCAL_PLAYER, input.as_ptr().cast(), input.len()) });
        let r = unsafe { tw_session_advance(c.s.0) };
        assert!(!r.is_err(), "advance: {r:?}: {}", last_error());
        answers.push(r);
        c.e.run_requests(c.s.0);
    }
    let mut e = tw_session_event::zeroed();
    while unsafe { tw_session_poll_event(c.s.0, &mut e) } == tw_result::Ok {
        c.events.push(e);
    }
    answers
}

/// Issue 18, 7: at the prediction cap a relay client's advance answers WINDOW_FULL, as
/// P2P's does (`ffi_p2p_window`), with one PREDICTION_WINDOW_FULL naming the server; OK
/// again once the server's steps come back.
#[test]
fn a_relay_client_at_the_prediction_cap_answers_window_full() {
    let mut m = Match::new(link(10_000, 2_000.0, 0.0), |_| {});
    m.add_client(|_| {});
    m.run_for(Duration::from_secs(2), |_| {});
    assert!(
        !of_kind(&m.clients[0].events, tw_session_event_kind::Synchronized).is_empty(),
        "{:?}",
        kinds(&m.clients[0].events)
    );
    // The server's datagrams are lost for a second (less than the transport's timeout).
    let dead = link(10_000, 0.0, 1.0);
    // SAFETY: live session, valid config.
    unsafe { ok(tw_session_set_link_sim(m.server.0, tw_direction::Outbound as u32, &dead)) };
    let mut answers = Vec::new();
    let end = Instant::now() + Duration::from_secs(1);
    while Instant::now() < end {
        frame(m.server.0, &mut m.es, &[], SEED, PERIOD, &mut m.server_events);
        answers.extend(client_frame_answers(&mut m.clients[0]));
        std::thread::sleep(Duration::from_millis(2));
    }
    let full = answers.iter().filter(|&&r| r == tw_result::WindowFull).count();
    assert!(full > 20, "WINDOW_FULL at the cap: {answers:?}");
    assert_eq!(answers.last(), Some(&tw_result::WindowFull));
    let st = stats(m.clients[0].s.0);
    assert_eq!(st.current_tick - st.confirmed_tick, 16, "predicting max_prediction ticks ahead: {st:?}");
    let events = of_kind(&m.clients[0].events, tw_session_event_kind::PredictionWindowFull);
    assert_eq!(events.len(), 1, "one event per stall: {:?}", kinds(&m.clients[0].events));
    // SAFETY: the kind says the tick member is live.
    assert_eq!(unsafe { events[0].data.tick.tick }, st.current_tick);
    assert_ne!(events[0].peer, 0, "the server's connection");
    // The steps come back: OK again, and in sync.
    // SAFETY: live session, valid config.
    unsafe { ok(tw_session_set_link_sim(m.server.0, tw_direction::Outbound as u32, &m.sim)) };
    let mut after = Vec::new();
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        frame(m.server.0, &mut m.es, &[], SEED, PERIOD, &mut m.server_events);
        after.extend(client_frame_answers(&mut m.clients[0]));
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(after.last(), Some(&tw_result::Ok), "{after:?}");
    m.assert_in_sync(0);
}

/// Issue 18, 7: after SERVER_LOST no tick is due any more, and advance answers FINISHED
/// with no request (it used to keep giving ticks, and OK with nothing to run).
#[test]
fn after_server_lost_no_tick_is_due_and_advance_answers_finished() {
    let mut m = Match::new(link(10_000, 2_000.0, 0.0), |_| {});
    m.add_client(|_| {});
    m.run_for(Duration::from_secs(2), |_| {});
    let Match { server, clients, .. } = m;
    drop(server); // the server shuts down: final
    let mut c = clients.into_iter().next().unwrap();
    let end = Instant::now() + Duration::from_secs(2);
    while of_kind(&c.events, tw_session_event_kind::ServerLost).is_empty() {
        assert!(Instant::now() < end, "no SERVER_LOST: {:?}", kinds(&c.events));
        client_frame_answers(&mut c);
        std::thread::sleep(Duration::from_millis(2));
    }
    let lost = of_kind(&c.events, tw_session_event_kind::ServerLost);
    // SAFETY: the kind says the relay member is live.
    assert_eq!(unsafe { lost[0].data.relay.reason }, tw_disconnect_reason::Server as u32);
    let tick = stats(c.s.0).current_tick;
    let mut due = 0;
    let end = Instant::now() + Duration::from_millis(500);
    while Instant::now() < end {
        let mut n = 0u32;
        let mut r = tw_request::zeroed();
        let input = [1u8, 2];
        // SAFETY: live session, valid pointers.
        unsafe {
            ok(tw_session_ticks_due(c.s.0, &mut n));
            due += n;
            ok(tw_session_push_input(c.s.0, TW_LOCAL_PLAYER, input.as_ptr().cast(), input.len()));
            assert_eq!(tw_session_advance(c.s.0), tw_result::Finished, "{}", last_error());
            assert_eq!(tw_session_poll_request(c.s.0, &mut r), tw_result::Empty);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(due, 0, "no tick is due once the server is lost");
    assert_eq!(stats(c.s.0).current_tick, tick, "nothing was simulated");
}

#[test]
fn a_desync_is_reported_and_a_new_snapshot_recovers() {
    let mut m = Match::new(link(10_000, 2_000.0, 0.0), |c| c.desync_interval = 10);
    m.add_client(|_| {});
    m.add_client(|_| {});
    m.run_for(Duration::from_millis(1500), |_| {});
    // From the next tick on, client 1's engine simulates player 0 differently.
    let from = stats(m.clients[1].s.0).current_tick + 5;
    m.clients[1].e.desync_from = Some(from);
    let mut resynced = false;
    m.run_for(Duration::from_secs(3), |m| {
        let c = &mut m.clients[1];
        if !resynced && !of_kind(&c.events, tw_session_event_kind::Desync).is_empty() {
            c.e.desync_from = None; // the engine bug is fixed; ask for the server's state
            // SAFETY: live session.
            ok(unsafe { tw_session_request_snapshot(c.s.0) });
            resynced = true;
        }
    });
    let c = &m.clients[1];
    let d = of_kind(&c.events, tw_session_event_kind::Desync);
    assert!(!d.is_empty(), "{:?}", kinds(&c.events));
    // SAFETY: the kind says the desync member is live.
    let d = unsafe { d[0].data.desync };
    assert!(d.tick >= from && d.tick < from + 40, "found soon after it began at {from}: tick {}", d.tick);
    assert_eq!(Some(d.local_checksum), c.e.checksums[d.tick as usize], "the client's own checksum");
    assert_eq!(Some(d.remote_checksum), m.es.checksums[d.tick as usize], "the server's checksum");
    let k = kinds(&c.events);
    let resync = k.iter().position(|&x| x == tw_session_event_kind::Resyncing as u32).expect("RESYNCING");
    assert!(k[resync..].contains(&(tw_session_event_kind::Joined as u32)), "joined again: {k:?}");
    assert_eq!(stats(c.s.0).resyncs, 1);
    assert!(m.assert_in_sync(1) > 60, "in sync after the new snapshot");
    assert!(of_kind(&m.clients[0].events, tw_session_event_kind::Desync).is_empty());
    assert_eq!(stats(m.server.0).resyncs, 1, "the resync, seen by the server");
    assert!(
        of_kind(&m.server_events, tw_session_event_kind::PlayerReconnected).is_empty(),
        "the same connection and slot"
    );
}

#[test]
fn a_client_cut_off_for_longer_than_the_timeout_gets_its_slot_back() {
    let short = |c: &mut tw_session_config| {
        c.host.timeout_ms = 700;
        c.host.connect_timeout_ms = 700;
    };
    let mut m = Match::new(link(10_000, 2_000.0, 0.0), short);
    m.add_client(short);
    m.add_client(short);
    m.run_for(Duration::from_millis(1500), |_| {});
    let (player, _) = latest_join(&m.clients[1].events).unwrap();
    // Cut client 1 off both ways: both transports time out.
    let dead = link(10_000, 0.0, 1.0);
    // SAFETY: live session, valid configs.
    unsafe {
        ok(tw_session_set_link_sim(m.clients[1].s.0, tw_direction::Outbound as u32, &dead));
        ok(tw_session_set_link_sim(m.clients[1].s.0, tw_direction::Inbound as u32, &dead));
    }
    m.run_for(Duration::from_millis(1500), |_| {});
    assert!(
        !of_kind(&m.clients[1].events, tw_session_event_kind::Reconnecting).is_empty(),
        "{:?}",
        kinds(&m.clients[1].events)
    );
    assert!(!of_kind(&m.server_events, tw_session_event_kind::PlayerLeft).is_empty(), "{:?}", kinds(&m.server_events));
    // SAFETY: live session, valid config.
    unsafe {
        ok(tw_session_set_link_sim(m.clients[1].s.0, tw_direction::Outbound as u32, &m.sim));
        ok(tw_session_set_link_sim(m.clients[1].s.0, tw_direction::Inbound as u32, std::ptr::null()));
    }
    m.run_for(Duration::from_secs(3), |_| {});
    let back = of_kind(&m.server_events, tw_session_event_kind::PlayerReconnected);
    assert_eq!(back.len(), 1, "{:?}", kinds(&m.server_events));
    // SAFETY: the kind says the relay member is live.
    assert_eq!(unsafe { back[0].data.relay.player }, player, "the same slot");
    let joins = of_kind(&m.clients[1].events, tw_session_event_kind::Joined);
    // SAFETY: as above.
    let last = unsafe { joins.last().unwrap().data.relay };
    assert_eq!((joins.len(), last.player, last.reconnect), (2, player, 1));
    assert_eq!(stats(m.clients[1].s.0).reconnects, 1);
    assert!(m.assert_in_sync(1) > 60);
    m.assert_in_sync(0);
}

/// Issue 18, missing 1: the server's engine kicks a player on purpose. The client sees
/// SERVER_LOST with reason KICKED_BY_ENGINE and does not reconnect; the server sees
/// PLAYER_KICKED (reason ENGINE, the engine's code) and PLAYER_SLOT_FREED, and the slot
/// takes the next player at once. (The relay's own kicks keep the slot: see
/// `relay_catch_up::a_kicked_client_comes_back_to_its_slot`.)
#[test]
fn the_servers_engine_kicks_a_player_for_good_and_frees_its_slot() {
    let one = |c: &mut tw_session_config| c.num_players = 1;
    let mut m = Match::new(link(10_000, 2_000.0, 0.0), one);
    // SAFETY: live session.
    unsafe {
        assert_eq!(tw_session_kick_player(m.server.0, 0, 7), tw_result::InvalidState, "{}", last_error());
        assert!(last_error().contains("free"), "{}", last_error());
        assert_eq!(tw_session_kick_player(m.server.0, 1, 7), tw_result::InvalidArgument);
        assert!(last_error().contains("player 1"), "{}", last_error());
    }
    m.add_client(one);
    m.run_for(Duration::from_secs(1), |_| {});
    assert_eq!(latest_join(&m.clients[0].events).map(|j| j.0), Some(0), "{:?}", kinds(&m.clients[0].events));
    let mut peer = 0;
    // SAFETY: live session, valid pointer.
    unsafe {
        ok(tw_session_player_peer(m.server.0, 0, &mut peer));
        ok(tw_session_kick_player(m.server.0, 0, 0xC0FFEE));
        assert_eq!(tw_session_kick_player(m.server.0, 0, 7), tw_result::InvalidState, "the slot is free now");
        // A client has no such call.
        assert_eq!(tw_session_kick_player(m.clients[0].s.0, 0, 7), tw_result::InvalidState);
    }
    m.run_for(Duration::from_millis(1500), |_| {});
    let kicked = of_kind(&m.server_events, tw_session_event_kind::PlayerKicked);
    assert_eq!(kicked.len(), 1, "{:?}", kinds(&m.server_events));
    // SAFETY: the kind says the relay member is live.
    let k = unsafe { kicked[0].data.relay };
    assert_eq!((k.player, k.reason, k.code), (0, tw_kick_reason::Engine as u32, 0xC0FFEE));
    assert_eq!(kicked[0].peer, peer);
    let freed = of_kind(&m.server_events, tw_session_event_kind::PlayerSlotFreed);
    assert_eq!(freed.len(), 1, "freed at once: {:?}", kinds(&m.server_events));
    let c = &m.clients[0];
    let lost = of_kind(&c.events, tw_session_event_kind::ServerLost);
    assert_eq!(lost.len(), 1, "{:?}", kinds(&c.events));
    // SAFETY: as above.
    assert_eq!(unsafe { lost[0].data.relay.reason }, tw_disconnect_reason::KickedByEngine as u32);
    assert!(of_kind(&c.events, tw_session_event_kind::Reconnecting).is_empty(), "final: {:?}", kinds(&c.events));
    assert!(of_kind(&m.server_events, tw_session_event_kind::PlayerReconnected).is_empty());
    assert_eq!(stats(m.server.0).players, 0);
    // The next player takes the slot at once.
    m.clients.clear();
    m.add_client(one);
    m.run_for(Duration::from_secs(2), |_| {});
    assert_eq!(latest_join(&m.clients[0].events).map(|j| j.0), Some(0), "{:?}", kinds(&m.clients[0].events));
    assert!(of_kind(&m.server_events, tw_session_event_kind::ConnectionRejected).is_empty());
    assert_eq!(stats(m.server.0).players, 1);
}

/// Issue 18, defect 8: a relay client whose round trip outgrows `max_prediction` gets
/// input delay for the rest, and says so with INPUT_DELAY_CHANGED (it was silent).
#[test]
fn latency_past_max_prediction_is_told_as_input_delay() {
    let mut m = Match::new(link(40_000, 2_000.0, 0.0), |_| {});
    m.add_client(|c| c.max_prediction = 3);
    m.run_for(Duration::from_secs(4), |_| {});
    let events = of_kind(&m.clients[0].events, tw_session_event_kind::InputDelayChanged);
    // SAFETY: the kind says the input_delay member is live.
    let told: Vec<(u32, u32)> =
        events.iter().map(|e| unsafe { (e.data.input_delay.ticks, e.data.input_delay.spill) }).collect();
    let st = stats(m.clients[0].s.0);
    eprintln!("told {told:?}; input delay now {}, rtt {:.0} us", st.input_delay, st.rtt_us);
    let &(ticks, spill) = told.last().expect("INPUT_DELAY_CHANGED");
    assert!(spill >= 1 && ticks == spill, "the delay is the spill past max_prediction: {told:?}");
    assert_eq!(ticks, st.input_delay, "the last event says the delay in force");
    assert!(told.len() <= 5, "at most once a second: {told:?}");
    assert_ne!(events[0].peer, 0, "the server's connection");
    m.assert_in_sync(0);
}
