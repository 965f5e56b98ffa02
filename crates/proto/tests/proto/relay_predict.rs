//! Issue 4's relay with prediction, end to end over the deterministic simulator: a
//! server session and client sessions, each driving a `BoxGame` engine through
//! requests, on a 100 ms RTT link with 10 ms jitter and 5% loss.

use crate::support::relay_world::{MS, TICK_US, World, link};
use tickwire_proto::wire::relay;
use tickwire_proto::wire::relay::{Hello, PlayerStep, UpdateHead, Welcome};
use tickwire_proto::{
    CHANNEL_RELIABLE, CHANNEL_UNRELIABLE, ClientSessionEvent, EndpointConfig, GameShape, InputDelay, JitterModel,
    LinkConfig, LossModel, NetEvent as Event, RejectReason, RelayClientSessionConfig, RelayServerSessionConfig,
    ServerSessionEvent,
};

const SECOND: u64 = 1_000_000;
const MAX_PREDICTION: u32 = 16;

fn configs() -> (RelayServerSessionConfig, RelayClientSessionConfig) {
    let s = RelayServerSessionConfig {
        game: GameShape::new(8, 2),
        checksum_interval: 30,
        ..RelayServerSessionConfig::default()
    };
    let c = RelayClientSessionConfig {
        game: GameShape::new(8, 2),
        max_prediction: MAX_PREDICTION,
        ..RelayClientSessionConfig::default()
    };
    (s, c)
}

/// The oracle for M3/M5's prediction distance at this link (ticksync.md 3.2):
/// `P_min = (L*_ε + E[d] + S_s/2) / T` with `L*_ε = u_min + Q_{1-ε}(j_u) + (k_c - 1)·T`.
/// Jitter is |N(0, σ)|: Q_.99 = 2.576σ, mean 0.798σ. With 5% loss a 1% late rate
/// also needs the second copy to be in time, one client send interval later.
fn prediction_floor(sigma_ms: f64, one_way_ms: f64) -> (f64, f64) {
    let t = TICK_US / 1000.0;
    let lead = one_way_ms + 2.576 * sigma_ms + t;
    let down = one_way_ms + 0.798 * sigma_ms;
    let s_s = 3.0 * t;
    let jitter_only = (lead + down + s_s / 2.0) / t;
    (jitter_only, jitter_only + 2.0)
}

#[test]
fn four_clients_ten_minutes_100ms_rtt_jitter_and_5_percent_loss() {
    let (scfg, ccfg) = configs();
    let mut w = World::new(41, link(0.05), scfg, ccfg);
    for _ in 0..4 {
        w.add_client();
    }
    let minutes: u64 = std::env::var("RELAY_MINUTES").ok().and_then(|m| m.parse().ok()).unwrap_or(10);
    w.run_for(minutes * 60 * SECOND);
    let seconds = (minutes * 60) as f64;

    let st = w.server.stats();
    let ticks = st.tick as f64;
    println!("server: {st:?}");
    let mut late_total = 0u64;
    let players = w.server_players();
    for (&p, j) in &players {
        let late = j.ticks - j.normal;
        late_total += late;
        println!(
            "player {p}: M1 late {:.3}% (empty {}, lost {}, merges {}) of {} ticks",
            100.0 * late as f64 / j.ticks as f64,
            j.underflows,
            j.lost,
            j.merges,
            j.ticks
        );
    }
    let (pmin, pmin_loss) = prediction_floor(10.0, 50.0);
    for i in 0..4 {
        let c = &w.clients[i];
        let s = c.session.stats();
        let p = s.prediction;
        let mean_p = c.distance_sum / c.distance_n as f64;
        println!(
            "client {i}: M3 resimulated {:.1} ticks/s (max depth {}, max {} per frame, {} re-predictions of {} canonical ticks); \
             P mean {:.2} max {} vs P_min {:.2} (jitter only) / {:.2} (with loss cover), P/P_min {:.2}; \
             M5 local mispredictions {} ({} late inputs, {} on time), remote {}; checks {} ({} missed)",
            p.resimulated as f64 / seconds,
            p.max_resim_depth,
            c.resim_per_frame_max,
            p.repredictions,
            p.canonical_ticks,
            mean_p,
            c.distance_max,
            pmin,
            pmin_loss,
            mean_p / pmin,
            p.local_mispredictions,
            p.local_late,
            p.local_mispredicted_on_time,
            p.remote_mispredictions,
            s.checks_compared,
            s.checks_missed,
        );
        assert_eq!(s.desyncs, 0, "client {i}: desyncs");
        assert!(!c.events.iter().any(|e| matches!(e, ClientSessionEvent::Desync { .. })));
        assert!(
            s.checks_compared as f64 > 0.9 * ticks / 30.0,
            "client {i}: only {} checksum comparisons",
            s.checks_compared
        );
        let compared = w.assert_same_states(i, w.joined_tick(i));
        assert!(compared as f64 > 0.99 * ticks, "client {i}: compared {compared} of {ticks} ticks");
        // The local player is mispredicted only where its input was late: by the
        // session's own account, and counted from the engines' side against the
        // server's count of ticks that did not use this player's input on time.
        assert_eq!(p.local_mispredicted_on_time, 0, "client {i}: local mispredictions with on-time inputs");
        assert!(p.local_mispredictions <= p.local_late, "client {i}");
        let j = players[&c.session.player().unwrap()];
        let (engine_side, predicted) = w.local_mispredicted_ticks(i);
        println!(
            "client {i}: own player predicted at {predicted} ticks, with a wrong input at {engine_side}; the server used no on-time input at {} ticks",
            j.ticks - j.normal
        );
        assert!(predicted as f64 > 0.95 * ticks, "client {i}: only {predicted} ticks were predicted");
        assert!(
            engine_side <= j.ticks - j.normal,
            "client {i}: {engine_side} local mispredictions, {} late ticks",
            j.ticks - j.normal
        );
        // Re-simulation is bounded by the maximum prediction.
        assert!(p.max_resim_depth <= MAX_PREDICTION, "client {i}: re-prediction depth {}", p.max_resim_depth);
        assert!(c.distance_max <= MAX_PREDICTION);
        let resim_per_s = p.resimulated as f64 / seconds;
        assert!(resim_per_s <= MAX_PREDICTION as f64 * 20.0, "client {i}: {resim_per_s} resimulated ticks/s");
        // Re-prediction is paid only when needed: most canonical ticks are confirmed.
        assert!(p.confirmed_predictions as f64 > 0.5 * p.canonical_ticks as f64, "client {i}: {p:?}");
        assert!(mean_p > pmin * 0.8 && mean_p < pmin_loss + 4.0, "client {i}: prediction distance {mean_p}");
        assert_eq!(s.malformed, 0);
        assert_eq!(s.reconnects, 0);
    }
    let late_rate = late_total as f64 / (4.0 * ticks);
    println!("M1 over all clients: {:.3}%", 100.0 * late_rate);
    assert!(late_rate < 0.02, "late rate {late_rate}");
}

#[test]
fn a_client_joining_at_minute_5_and_one_reconnecting_reach_the_servers_state() {
    let (scfg, ccfg) = configs();
    let catchup = ccfg.max_catchup_ticks as u64;
    let mut w = World::new(42, link(0.05), scfg, ccfg);
    for _ in 0..4 {
        w.add_client();
    }
    w.run_for(120 * SECOND);
    // Client 1 drops off the network for 7 s: both transports time out (5 s), the
    // client reconnects as soon as the link is back and shows its token.
    let player1 = w.clients[1].session.player().expect("player");
    let token1 = w.clients[1].session.token().expect("token");
    w.set_client_link(
        1,
        tickwire_proto::LinkConfig { loss: tickwire_proto::LossModel::Bernoulli { p: 1.0 }, ..link(0.0) },
    );
    w.run_for(7 * SECOND);
    w.set_client_link(1, link(0.05));
    w.run_for(300 * SECOND - w.net.now());
    // Minute 5: a fifth client joins mid-match.
    let joined_at_us = w.net.now();
    let late = w.add_client();
    w.run_for(60 * SECOND);

    // The reconnecting client kept its slot and its token, and is in sync again.
    let c1 = &w.clients[1];
    assert_eq!(c1.session.player(), Some(player1), "slot kept");
    assert_eq!(c1.session.token(), Some(token1));
    assert_eq!(c1.session.stats().reconnects, 1);
    let pos = |f: &dyn Fn(&ClientSessionEvent) -> bool| c1.events.iter().position(f);
    let interrupted = pos(&|e| matches!(e, ClientSessionEvent::Interrupted { .. })).expect("interrupted");
    let rejoined =
        pos(&|e| matches!(e, ClientSessionEvent::Joined { reconnect: true, player, .. } if *player == player1))
            .expect("rejoined");
    assert!(interrupted < rejoined);
    assert!(
        w.server_events
            .iter()
            .any(|e| matches!(e, ServerSessionEvent::PlayerInterrupted { player, .. } if *player == player1))
    );
    assert!(
        w.server_events
            .iter()
            .any(|e| matches!(e, ServerSessionEvent::PlayerReconnected { player, .. } if *player == player1))
    );
    assert!(!w.server_events.iter().any(|e| matches!(e, ServerSessionEvent::PlayerLeft { .. })), "no slot timed out");
    let rejoin_tick = w.joined_tick(1);
    let n = w.assert_same_states(1, rejoin_tick);
    println!("reconnected client: same state as the server at all {n} ticks since tick {rejoin_tick}");
    // Its states before the drop were right too (they are the first timeline's).
    let first_join = c1.events.iter().find_map(|e| match e {
        ClientSessionEvent::Joined { tick, reconnect: false, .. } => Some(*tick),
        _ => None,
    });
    let first_join = first_join.expect("first join") as usize;
    for t in first_join..(118 * 60) {
        assert_eq!(c1.game.checksums[t], w.server_game.checksums[t], "client 1 before the drop, tick {t}");
    }

    // The late joiner got a snapshot from minute 5, caught up in bounded steps, and has
    // the server's state at every tick since.
    let c = &w.clients[late];
    let tick = w.joined_tick(late);
    assert!(tick as f64 >= joined_at_us as f64 / TICK_US, "snapshot from minute 5 (tick {tick})");
    assert!(c.events.iter().any(|e| matches!(e, ClientSessionEvent::Synchronized { .. })));
    assert!(
        c.advances_per_call_max <= catchup + MAX_PREDICTION as u64 + 1,
        "{} advances in one call",
        c.advances_per_call_max
    );
    let n = w.assert_same_states(late, tick);
    println!("late joiner: same state as the server at all {n} ticks since tick {tick}");
    let st = c.session.stats();
    assert_eq!(st.desyncs, 0);
    assert!(st.checks_compared > 50);
    assert_eq!(st.prediction.local_mispredicted_on_time, 0);
    // Everyone else saw the new player arrive, and client 1 leave and come back.
    let new_player = c.session.player().unwrap();
    for i in [0, 2, 3] {
        assert!(
            w.count_events(
                i,
                |e| matches!(e, ClientSessionEvent::PlayerJoined { player, .. } if *player == new_player)
            ) >= 1
        );
        assert!(
            w.count_events(i, |e| matches!(e, ClientSessionEvent::PlayerLeft { player, .. } if *player == player1))
                >= 1
        );
        assert_eq!(w.clients[i].session.stats().desyncs, 0);
        w.assert_same_states(i, w.joined_tick(i));
    }
}

#[test]
fn an_injected_desync_is_detected_with_the_tick_and_both_checksums() {
    let (scfg, ccfg) = configs();
    let mut w = World::new(43, link(0.05), scfg, ccfg);
    w.add_client();
    w.add_client();
    let from = 1_000;
    w.clients[1].game.desync_from = Some(from);
    w.run_for(40 * SECOND);
    let desyncs: Vec<_> = w.clients[1]
        .events
        .iter()
        .filter_map(|e| match *e {
            ClientSessionEvent::Desync { tick, local, remote } => Some((tick, local, remote)),
            _ => None,
        })
        .collect();
    // The first state that differs is the start of tick `from + 1`; the first check
    // at or after it is the first multiple of the interval.
    let first_check = (from + 1).div_ceil(30) * 30;
    let &(tick, local, remote) = desyncs.first().expect("desync detected");
    assert_eq!(tick, first_check);
    assert_ne!(local, remote);
    assert_eq!(Some(remote), w.server_game.checksums[tick as usize], "the server's checksum");
    assert_eq!(Some(local), w.clients[1].game.checksums[tick as usize], "our authoritative checksum");
    // Every check after it fails too (the states never meet again); none before.
    assert!(desyncs.len() as u64 + 2 >= w.clients[1].session.stats().checks_compared - (first_check as u64 / 30));
    assert_eq!(w.clients[1].session.stats().desyncs, desyncs.len() as u64);
    assert_eq!(w.clients[0].session.stats().desyncs, 0, "the honest client is in sync");
    w.assert_same_states(0, w.joined_tick(0));

    // Recovery: the engine fixes its bug and asks for a fresh snapshot; from then on
    // its states are the server's again.
    w.clients[1].game.desync_from = None;
    w.clients[1].session.request_snapshot();
    let desyncs_before = w.clients[1].session.stats().desyncs;
    w.run_for(20 * SECOND);
    let c = &w.clients[1];
    assert!(c.events.iter().any(|e| matches!(e, ClientSessionEvent::Resyncing { .. })));
    assert_eq!(c.session.stats().resyncs, 1);
    assert_eq!(w.server.stats().resyncs, 1);
    let since = w.joined_tick(1);
    assert!(since > tick, "a new snapshot ({since})");
    // Checks of ticks before the new snapshot that were still on their way may fail;
    // none after it.
    let late_desyncs =
        c.events.iter().filter(|e| matches!(e, ClientSessionEvent::Desync { tick, .. } if *tick >= since)).count();
    assert_eq!(late_desyncs, 0);
    assert!(c.session.stats().desyncs - desyncs_before <= 2);
    w.assert_same_states(1, since);
}

/// A bare endpoint next to the world, for sending what no honest session sends.
fn rogue(w: &mut World) -> (usize, u32) {
    let node = w.net.add(EndpointConfig::default());
    let addr = w.net.addr(w.server_node);
    let now = w.net.local_now(node);
    let peer = w.net.endpoint(node).connect(now, addr).unwrap();
    (node, peer)
}

fn hello(token: u64, input_size: u16) -> Vec<u8> {
    let mut b = Vec::new();
    let mut t = [0u8; 16];
    t[..8].copy_from_slice(&token.to_le_bytes());
    relay::encode_hello(&mut b, &Hello { token: relay::SessionToken(t), input_size, max_players: 8 });
    b
}

#[test]
fn hostile_and_malformed_messages_are_dropped_and_counted() {
    let (scfg, ccfg) = configs();
    let mut w = World::new(44, link(0.02), scfg, ccfg);
    w.add_client();
    w.add_client();
    w.run_for(10 * SECOND);
    let players_before = w.server.stats().players;

    // Server side: a forged token, garbage, a client for another game, a connection
    // that never says Hello and sends inputs anyway, and a player sending wrong-sized
    // inputs.
    let rogues: Vec<_> = (0..5).map(|_| rogue(&mut w)).collect();
    w.run_for(SECOND);
    let send = |w: &mut World, (node, peer): (usize, u32), ch: u8, data: &[u8]| {
        w.net.endpoint(node).send(peer, ch, data).unwrap();
        w.net.flush(node);
    };
    send(&mut w, rogues[0], CHANNEL_RELIABLE, &hello(0xBAD_70CE, 2));
    send(&mut w, rogues[1], CHANNEL_RELIABLE, b"\x03not a hello");
    send(&mut w, rogues[2], CHANNEL_RELIABLE, &hello(0, 3));
    let mut inputs = Vec::new();
    relay::encode_client_inputs(&mut inputs, relay::NONE, &[], 0, [&[1u8, 2][..]].into_iter());
    send(&mut w, rogues[3], CHANNEL_UNRELIABLE, &inputs);
    send(&mut w, rogues[4], CHANNEL_RELIABLE, &hello(0, 2));
    w.run_for(SECOND);
    let welcomed = w
        .net
        .take_events(rogues[4].0)
        .into_iter()
        .any(|e| matches!(e, Event::Message { channel: CHANNEL_RELIABLE, .. }));
    assert!(welcomed, "an honest-looking Hello gets a Welcome");
    for bad in [&[1u8, 2, 3][..], &[1u8][..], &[][..]] {
        relay::encode_client_inputs(&mut inputs, relay::NONE, &[], 5, [bad].into_iter());
        send(&mut w, rogues[4], CHANNEL_UNRELIABLE, &inputs);
    }
    send(&mut w, rogues[4], CHANNEL_UNRELIABLE, &[2, 0, 0]);
    w.run_for(7 * SECOND);
    let st = w.server.stats();
    println!("{st:?}");
    assert_eq!(st.bad_tokens, 1);
    assert_eq!(st.bad_hello, 1);
    assert_eq!(st.unknown_peer, 1);
    assert_eq!(st.malformed, 4);
    let rejected = |r: RejectReason| {
        w.server_events
            .iter()
            .any(|e| matches!(e, ServerSessionEvent::ConnectionRejected { reason, .. } if *reason == r))
    };
    assert!(rejected(RejectReason::BadToken) && rejected(RejectReason::Malformed) && rejected(RejectReason::WrongGame));
    assert!(rejected(RejectReason::NoHello), "the silent connection is closed after the Hello timeout");
    assert_eq!(st.rejected, 4);

    // Client side: updates naming a player outside the game or carrying a wrong-sized
    // input, truncated ones, bad Welcomes (truncated, another game, a player outside
    // the game, and one nobody asked for), and messages from a stranger.
    let node = w.clients[0].node;
    let server_peer = w.net.endpoint(node).peers().next().expect("connected");
    let now = w.net.local_now(node);
    let mut evil: Vec<(u32, u8, Vec<u8>)> = Vec::new();
    let update = |players: &[PlayerStep]| {
        let mut b = Vec::new();
        let h = UpdateHead {
            server_tick: 1,
            your_player: 0,
            shift: 0,
            input_ack: relay::NONE,
            depth: 0,
            first_input: relay::NONE,
            substituted: 0,
            late_substituted: 0,
        };
        relay::encode_server_update_head(&mut b, &h, &[], &[], 1);
        let mut step = Vec::new();
        relay::write_step(&mut step, players);
        relay::write_entry(&mut b, 0, relay::StepForm::Full, &step);
        relay::set_entry_count(&mut b, 0, 0, 1);
        b
    };
    evil.push((
        server_peer,
        CHANNEL_UNRELIABLE,
        update(&[PlayerStep { player: 99, accepted: 1, inputs: vec![vec![0, 0]] }]),
    ));
    evil.push((
        server_peer,
        CHANNEL_UNRELIABLE,
        update(&[PlayerStep { player: 0, accepted: 1, inputs: vec![vec![0, 0, 0]] }]),
    ));
    let good_looking = update(&[PlayerStep { player: 0, accepted: 1, inputs: vec![vec![0, 0]] }]);
    evil.push((server_peer, CHANNEL_UNRELIABLE, good_looking[..good_looking.len() - 1].to_vec()));
    let welcome = |player: u16, input_size: u16, state: &[u8]| {
        let mut b = Vec::new();
        relay::encode_welcome(
            &mut b,
            &Welcome {
                player,
                token: relay::SessionToken([1; 16]),
                tick: 5,
                input_size,
                max_players: 8,
                report_interval: 0,
                state,
            },
        );
        b
    };
    evil.push((server_peer, CHANNEL_RELIABLE, welcome(0, 2, &[1, 2, 3])[..10].to_vec()));
    evil.push((server_peer, CHANNEL_RELIABLE, welcome(0, 4, &[1, 2, 3])));
    evil.push((server_peer, CHANNEL_RELIABLE, welcome(9, 2, &[1, 2, 3])));
    evil.push((server_peer, CHANNEL_RELIABLE, welcome(0, 2, &[1, 2, 3])));
    evil.push((server_peer + 1000, CHANNEL_UNRELIABLE, good_looking.clone()));
    evil.push((server_peer, 7, good_looking.clone()));
    let n_evil = evil.len() as u64;
    let before = w.clients[0].session.stats().malformed;
    for (peer, channel, data) in evil {
        let c = &mut w.clients[0];
        c.session.on_event(now, w.net.endpoint(node), Event::Message { peer, channel, data });
    }
    assert_eq!(w.clients[0].session.stats().malformed - before, n_evil);
    // The server's step counters are totals over every player that ever played: they
    // never go back, also when a player is dropped (the rogue's many empty steps stay).
    let mut last = w.server.stats();
    for _ in 0..20 {
        w.run_for(SECOND);
        let now = w.server.stats();
        assert!(
            now.empty_steps >= last.empty_steps && now.substituted_steps >= last.substituted_steps,
            "{last:?} then {now:?}"
        );
        assert!(now.merged_steps >= last.merged_steps && now.late_inputs >= last.late_inputs, "{last:?} then {now:?}");
        last = now;
    }

    // Nobody was hurt: the honest clients are in sync and no player was added.
    // The rogue that joined never acknowledges a step: once the steps it needs are no
    // longer kept, it is sent a snapshot to start again from (not kicked: its inputs
    // still come).
    let rogue_player = w.server_events.iter().find_map(|e| match *e {
        ServerSessionEvent::PlayerJoined { player, peer, .. }
            if w.clients.iter().all(|c| c.session.player() != Some(player)) =>
        {
            Some((player, peer))
        }
        _ => None,
    });
    let (rogue_player, _) = rogue_player.expect("the rogue joined");
    assert!(
        w.server_events
            .iter()
            .any(|e| matches!(e, ServerSessionEvent::PlayerCatchingUp { player, .. } if *player == rogue_player))
    );
    assert!(!w.server_events.iter().any(|e| matches!(e, ServerSessionEvent::PlayerKicked { .. })));
    assert!(!w.server_events.iter().any(|e| matches!(e, ServerSessionEvent::PlayerInterrupted { .. })));
    assert_eq!(w.server.stats().players, players_before + 1, "the honest clients and the rogue that joined");
    for i in 0..2 {
        assert_eq!(w.clients[i].session.stats().desyncs, 0);
        assert_eq!(w.clients[i].session.stats().resyncs, 0);
        w.assert_same_states(i, w.joined_tick(i));
    }
}

#[test]
fn latency_beyond_the_maximum_prediction_spills_into_input_delay() {
    // RTT 400 ms (S9): about 27 ticks of latency against a maximum prediction of 8.
    let slow = LinkConfig {
        latency_us: 200 * MS,
        jitter: JitterModel::Gaussian { sigma_us: 5_000.0 },
        loss: LossModel::Bernoulli { p: 0.02 },
        ..LinkConfig::perfect()
    };
    let (scfg, mut ccfg) = configs();
    ccfg.max_prediction = 8;
    let mut w = World::new(45, slow, scfg, ccfg);
    w.add_client();
    w.add_client();
    w.run_for(60 * SECOND);
    for i in 0..2 {
        let c = &w.clients[i];
        let s = c.session.stats();
        let mean = c.distance_sum / c.distance_n as f64;
        println!(
            "client {i}: delay {} ticks, prediction distance mean {mean:.2} max {}, {:?}",
            s.input_delay, c.distance_max, s.prediction
        );
        assert!(c.distance_max <= 8, "prediction never passes the maximum");
        assert!(s.input_delay >= 15, "the rest of the latency became input delay: {}", s.input_delay);
        assert!(mean > 2.5, "still predicting: {mean}");
        assert!(s.prediction.max_resim_depth <= 8);
        assert_eq!(s.prediction.local_mispredicted_on_time, 0);
        assert_eq!(s.desyncs, 0);
        w.assert_same_states(i, w.joined_tick(i));
    }
}

#[test]
fn fixed_and_rtt_based_input_delay_shorten_prediction() {
    let mut means = Vec::new();
    for delay in [InputDelay::Fixed(0), InputDelay::Fixed(4), InputDelay::FromRtt { share: 0.5, max: 10 }] {
        let (scfg, mut ccfg) = configs();
        ccfg.input_delay = delay;
        let mut w = World::new(46, link(0.02), scfg, ccfg);
        w.add_client();
        w.add_client();
        w.run_for(60 * SECOND);
        let c = &w.clients[0];
        let s = c.session.stats();
        let mean = c.distance_sum / c.distance_n as f64;
        println!(
            "{delay:?}: delay {} prediction {mean:.2}, resimulated {}, remote mispredictions {}",
            s.input_delay, s.prediction.resimulated, s.prediction.remote_mispredictions
        );
        assert_eq!(s.prediction.local_mispredicted_on_time, 0);
        assert_eq!(s.desyncs, 0);
        w.assert_same_states(0, w.joined_tick(0));
        means.push((mean, s.input_delay, s.prediction.resimulated));
    }
    assert_eq!(means[1].1, 4);
    assert!((means[0].0 - means[1].0 - 4.0).abs() < 0.5, "a 4-tick delay predicts 4 ticks less: {means:?}");
    assert!(means[1].2 < means[0].2, "and resimulates less");
    // Half of a 100 ms round trip is 3 ticks.
    assert_eq!(means[2].1, 3, "{means:?}");
    assert!((means[0].0 - means[2].0 - 3.0).abs() < 0.5, "{means:?}");
}

#[test]
fn a_client_back_after_the_slot_timeout_is_refused_and_gives_up() {
    let (mut scfg, ccfg) = configs();
    scfg.reconnect_timeout_us = 3 * SECOND;
    let mut w = World::new(47, link(0.02), scfg, ccfg);
    w.add_client();
    w.add_client();
    w.run_for(20 * SECOND);
    let player = w.clients[1].session.player().unwrap();
    w.set_client_link(1, LinkConfig { loss: LossModel::Bernoulli { p: 1.0 }, ..link(0.0) });
    w.run_for(12 * SECOND);
    w.set_client_link(1, link(0.02));
    w.run_for(10 * SECOND);
    // The server gave the slot up 3 s after the drop; the old token no longer opens
    // anything, and the client, refused, stops trying.
    let left = w.server_events.iter().position(|e| *e == ServerSessionEvent::PlayerLeft { player });
    let refused = w
        .server_events
        .iter()
        .position(|e| matches!(e, ServerSessionEvent::ConnectionRejected { reason: RejectReason::BadToken, .. }));
    assert!(left.expect("slot freed") < refused.expect("old token refused"));
    assert_eq!(w.server.stats().bad_tokens, 1, "refused once, not retried");
    let c = &w.clients[1];
    assert!(c.events.iter().any(|e| matches!(e, ClientSessionEvent::Interrupted { .. })));
    assert!(matches!(c.events.last(), Some(ClientSessionEvent::Disconnected { .. })), "{:?}", c.events.last());
    assert_eq!(c.session.stats().reconnects, 0);
    // The other client saw the player leave and carried on in sync.
    assert!(w.count_events(0, |e| matches!(e, ClientSessionEvent::PlayerLeft { player: p, .. } if *p == player)) >= 1);
    assert_eq!(w.clients[0].session.stats().desyncs, 0);
    w.assert_same_states(0, w.joined_tick(0));
}
