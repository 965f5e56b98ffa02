//! A relay-only server (issue 36): no engine on the server. Its matches start from
//! the game's initial state, joiners start from a snapshot a client uploads and
//! others vouch for, and checksums come from the players' majority.

use crate::support::relay_world::{World, link};
use tickwire_proto::{
    ClientSessionEvent, GameShape, RelayClientSessionConfig, RelayServerSessionConfig, ServerMode, ServerSessionStats,
};

const SECOND: u64 = 1_000_000;

fn hosted_world(seed: u64, loss: f64) -> World {
    let game = GameShape::new(4, 2);
    let s = RelayServerSessionConfig {
        mode: ServerMode::RelayOnly,
        checksum_interval: 30,
        ..RelayServerSessionConfig::new(game)
    };
    let c = RelayClientSessionConfig { game, ..RelayClientSessionConfig::default() };
    World::new(seed, link(loss), s, c)
}

/// Compares the authoritative states of clients `i` and `j` at every tick both have
/// from `from` on; returns how many ticks.
fn same_states(w: &World, i: usize, j: usize, from: u32) -> usize {
    let (a, b) = (&w.clients[i], &w.clients[j]);
    let to = a.session.authoritative_tick().min(b.session.authoritative_tick());
    assert!(to > from + 60, "clients {i} and {j}: authoritative ticks barely past {from} ({to})");
    for t in from as usize..=to as usize {
        let (x, y) = (a.game.checksums.get(t).copied().flatten(), b.game.checksums.get(t).copied().flatten());
        assert!(x.is_some(), "client {i} has no state at tick {t}");
        assert_eq!(x, y, "clients {i} and {j}: states at the start of tick {t} differ");
    }
    (to - from + 1) as usize
}

fn desyncs(w: &World, i: usize) -> usize {
    w.count_events(i, |e| matches!(e, ClientSessionEvent::Desync { .. }))
}

fn server_stats(w: &World) -> ServerSessionStats {
    w.server.stats()
}

#[test]
fn a_relay_only_match_plays_in_sync_and_a_joiner_starts_from_a_clients_snapshot() {
    for seed in [3, 4, 5] {
        let mut w = hosted_world(seed, 0.02);
        for _ in 0..3 {
            w.add_client();
        }
        w.run_for(4 * SECOND);
        let first = server_stats(&w);
        assert_eq!(first.snapshots_sent, 3, "seed {seed}: one Welcome each: {first:?}");
        assert!((0..3).all(|i| w.clients[i].session.is_synchronized()), "seed {seed}: the first three play");
        let late = w.add_client();
        w.run_for(8 * SECOND);
        let s = server_stats(&w);
        assert!(w.server.pending_requests() == 0, "a relay-only server asks nothing of an engine");
        assert!(s.snapshots_from_clients >= 1, "seed {seed}: the joiner's snapshot came from a client: {s:?}");
        assert_eq!(s.snapshot_uploads_refused, 0, "seed {seed}: honest clients agree: {s:?}");
        assert!(s.checks_sent >= 10, "seed {seed}: the players' checksums were handed out: {s:?}");
        assert_eq!(s.minority_checks, 0, "seed {seed}: nobody disagreed: {s:?}");
        let joined = w.joined_tick(late);
        for i in 0..4 {
            assert!(w.clients[i].session.is_synchronized(), "seed {seed}: client {i} plays");
            assert_eq!(desyncs(&w, i), 0, "seed {seed}: client {i}: {:?}", w.clients[i].events);
            let st = w.clients[i].session.stats();
            assert!(st.checks_compared >= 8, "seed {seed}: client {i} compared its checksums: {st:?}");
        }
        // The joiner's states are the others', from the snapshot on.
        for i in 0..3 {
            assert!(same_states(&w, i, late, joined) > 300);
        }
        // The first three started together from the game's initial state, or from one
        // another's snapshots.
        assert!(same_states(&w, 0, 1, w.joined_tick(1).max(w.joined_tick(0))) > 300);
        let dumps: u64 = w.clients.iter().map(|c| c.game.dumps).sum();
        assert!(dumps >= 1, "the engines dumped states for the server");
    }
}

#[test]
fn a_donor_that_uploads_a_forged_state_is_outvoted_and_the_joiner_still_syncs() {
    let mut w = hosted_world(21, 0.0);
    for _ in 0..3 {
        w.add_client();
    }
    w.run_for(4 * SECOND);
    let liar = 1;
    w.clients[liar].game.corrupt_dumps = true;
    let before = server_stats(&w);
    let late = w.add_client();
    w.run_for(4 * SECOND);
    // Donors are asked in turn: within three more snapshots the liar is one.
    for _ in 0..3 {
        w.clients[late].session.request_snapshot();
        w.run_for(3 * SECOND);
    }
    w.run_for(3 * SECOND);
    let s = server_stats(&w);
    assert!(s.snapshot_uploads_refused > before.snapshot_uploads_refused, "the forged upload was refused: {s:?}");
    assert!(s.snapshots_from_clients >= before.snapshots_from_clients + 4, "the others' were taken: {s:?}");
    assert!(w.clients[late].session.is_synchronized());
    let joined = w.joined_tick(late);
    for i in (0..3).filter(|&i| i != liar) {
        assert!(same_states(&w, i, late, joined) > 150);
    }
    assert_eq!(desyncs(&w, late), 0, "{:?}", w.clients[late].events);
    assert!(w.clients[liar].game.dumps >= 1, "the liar was asked");
}

#[test]
fn the_players_majority_sets_the_checksum_and_a_diverging_client_sees_its_desync() {
    let mut w = hosted_world(8, 0.02);
    for _ in 0..3 {
        w.add_client();
    }
    w.run_for(3 * SECOND);
    // One engine goes its own way (player 0 moves differently there from tick 300).
    let odd = 1;
    w.clients[odd].game.desync_from = Some(300);
    w.run_for(6 * SECOND);
    let s = server_stats(&w);
    assert!(desyncs(&w, odd) >= 5, "the odd client is told: {:?}", w.clients[odd].events);
    for i in [0, 2] {
        assert_eq!(desyncs(&w, i), 0, "client {i} agrees with the majority: {:?}", w.clients[i].events);
    }
    assert!(s.minority_checks >= 5 && s.checks_sent >= 10, "{s:?}");
}

#[test]
fn a_players_forged_reports_are_refused_and_harm_nobody() {
    use tickwire_proto::wire::relay as msg;
    let mut w = hosted_world(13, 0.0);
    for _ in 0..3 {
        w.add_client();
    }
    w.run_for(3 * SECOND);
    let evil = 2;
    let node = w.clients[evil].node;
    let server = w.clients[evil].session.server_peer().expect("connected");
    let tick = w.server.last_tick();
    let reliable = w.client_cfg.reliable_channel;
    let mut forged: Vec<Vec<u8>> = Vec::new();
    let mut b = Vec::new();
    // Not a check tick; far in the future; a real check tick twice with two values.
    let next_check = (tick / 30 + 1) * 30;
    for checks in [vec![(31, 1)], vec![(next_check + 600, 7)], vec![(next_check - 30, 1), (next_check - 30, 2)]] {
        msg::encode_checks(&mut b, &checks);
        forged.push(b.clone());
    }
    // A state report nobody asked for, and garbage of each kind.
    let digest = msg::StateDigest::of(b"x");
    msg::encode_state_report(&mut b, &msg::StateReport { tick, digest, state: b"x" });
    forged.push(b.clone());
    forged.push(vec![msg::KIND_CHECKS, 0]);
    forged.push(vec![msg::KIND_STATE_REPORT, 1, 2]);
    let before = server_stats(&w);
    for f in &forged {
        w.net.endpoint(node).send(server, reliable, f).expect("sent");
    }
    w.run_for(6 * SECOND);
    let s = server_stats(&w);
    // The repeated vote and the five others; the honest report of that tick may come
    // before or after the forged one.
    assert!(s.hosted_refused >= before.hosted_refused + 6, "{before:?} -> {s:?}");
    for i in [0, 1] {
        assert_eq!(desyncs(&w, i), 0, "client {i}: {:?}", w.clients[i].events);
        assert!(w.clients[i].session.is_synchronized());
    }
}

#[test]
fn a_relay_only_server_needs_checksums() {
    let game = GameShape::new(2, 2);
    let s = RelayServerSessionConfig {
        mode: ServerMode::RelayOnly,
        checksum_interval: 0,
        ..RelayServerSessionConfig::new(game)
    };
    let e = tickwire_proto::RelayServerSession::new(s, 0).err().expect("refused");
    assert!(e.to_string().contains("checksum_interval"), "{e}");
}
