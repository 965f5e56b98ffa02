//! Many relay-only matches on one endpoint, made by connect tokens (issue 36): each
//! match plays in sync and apart from the others, a mid-match joiner starts from a
//! client's snapshot, a vacant match ends, and tokens that name no match, another
//! shape, one match too many or a new match while draining are refused.

use crate::support::relay_world::link;
use crate::support::serve_world::ServeWorld;
use tickwire_proto::{
    ClaimRefusal, ClientSessionEvent, DisconnectReason, GameShape, MatchEnd, MatchServerConfig, MatchServerEvent,
    ServeClaim,
};

const SECOND: u64 = 1_000_000;

fn claim(match_id: u64) -> ServeClaim {
    ServeClaim { match_id, players: 4, input_size: 2, tick_rate_hz: 60 }
}

/// Why client `i`'s connection first ended (for good, or to retry: a full server is
/// worth trying again).
fn disconnected(w: &ServeWorld, i: usize) -> Option<DisconnectReason> {
    w.clients[i].events.iter().find_map(|e| match e {
        ClientSessionEvent::Disconnected { reason } | ClientSessionEvent::Interrupted { reason } => Some(*reason),
        _ => None,
    })
}

#[test]
fn matches_made_by_tokens_play_in_sync_apart_and_end_when_vacant() {
    let matches = 6u64;
    let mut w = ServeWorld::new(17, link(0.02), MatchServerConfig::default());
    // Three players each, the matches' ids far apart; client ids unique.
    let id = |m: u64| 1_000 + m * 7_919;
    let mut of_match: Vec<Vec<usize>> = vec![Vec::new(); matches as usize];
    for m in 0..matches {
        for p in 0..3 {
            of_match[m as usize].push(w.add_client(m * 10 + p, claim(id(m))));
        }
        w.run_for(SECOND / 5);
    }
    w.run_for(4 * SECOND);
    assert_eq!(w.server.match_count(), matches as usize);
    // One joiner in each match, mid-match.
    for m in 0..matches {
        of_match[m as usize].push(w.add_client(m * 10 + 3, claim(id(m))));
    }
    w.run_for(8 * SECOND);
    for (m, members) in of_match.iter().enumerate() {
        let s = w.server.session(id(m as u64)).expect("live").stats();
        assert_eq!(s.players, 4, "match {m}: {s:?}");
        assert!(s.snapshots_from_clients >= 1, "match {m}: the joiner's snapshot came from a client: {s:?}");
        assert_eq!(s.minority_checks + s.snapshot_uploads_refused, 0, "match {m}: {s:?}");
        assert!(s.checks_sent >= 10, "match {m}: checksums compared: {s:?}");
        let joiner = members[3];
        let joined = w.joined_tick(joiner);
        for &i in members {
            assert!(w.clients[i].session.is_synchronized(), "match {m}: client {i} plays");
            let desyncs = w.count_events(i, |e| matches!(e, ClientSessionEvent::Desync { .. }));
            assert_eq!(desyncs, 0, "match {m}: client {i}");
            assert_eq!(w.clients[i].session.stats().malformed, 0, "match {m}: client {i}: nothing stray");
            if i != joiner {
                assert!(w.same_states(i, joiner, joined) > 300);
            }
        }
    }
    // The matches are apart: their games went their own ways (different inputs).
    let last = |i: usize| w.clients[i].game.checksums.iter().rev().find_map(|c| *c).expect("a state");
    assert_ne!(last(of_match[0][0]), last(of_match[1][0]));
    let started = w.events.iter().filter(|e| matches!(e, MatchServerEvent::MatchStarted { .. })).count();
    assert_eq!(started, matches as usize, "one start per match");

    // Everyone of match 0 leaves: it ends; the others play on.
    for &i in &of_match[0] {
        w.leave(i);
    }
    w.run_for(2 * SECOND);
    let ended: Vec<(u64, MatchEnd)> = w
        .events
        .iter()
        .filter_map(|e| match e {
            MatchServerEvent::MatchEnded { match_id, end, .. } => Some((*match_id, *end)),
            _ => None,
        })
        .collect();
    assert_eq!(ended, vec![(id(0), MatchEnd::Vacant)]);
    assert_eq!(w.server.match_count(), matches as usize - 1);
    // The owner ends match 1: its clients are told, and it is gone.
    let now = w.net.local_now(w.server_node);
    assert!(w.server.end_match(now, w.net.endpoint(w.server_node), id(1)));
    w.run_for(2 * SECOND);
    for &i in &of_match[1] {
        assert_eq!(disconnected(&w, i), Some(DisconnectReason::Server), "client {i} of the ended match");
    }
    for &i in &of_match[2] {
        assert!(w.clients[i].session.is_synchronized(), "client {i} of another match plays on");
    }
    assert_eq!(w.server.match_count(), matches as usize - 2);
    assert_eq!(w.server.stats().matches_ended, 2);
}

#[test]
fn tokens_without_a_claim_another_shape_past_the_limit_or_while_draining_are_refused() {
    let cfg = MatchServerConfig { max_matches: 2, ..MatchServerConfig::default() };
    let mut w = ServeWorld::new(5, link(0.0), cfg);
    let a = w.add_client(1, claim(100));
    w.run_for(SECOND);
    // Not a claim: the game's own bytes only.
    let shape = GameShape::new(4, 2);
    let bare = w.add_client_with(2, shape, 100, b"account 2".to_vec());
    // Match 100 with another shape.
    let other = ServeClaim { players: 2, ..claim(100) };
    let wrong = w.add_client(3, other);
    // A second match fits; a third does not.
    let b = w.add_client(4, claim(200));
    w.run_for(SECOND);
    let full = w.add_client(5, claim(300));
    w.run_for(SECOND);
    w.server.drain();
    // Draining: full or not, a new match is refused; the live ones take players.
    let c = w.add_client(6, claim(100));
    w.run_for(3 * SECOND);
    assert_eq!(disconnected(&w, bare), Some(DisconnectReason::AuthFailed));
    assert_eq!(disconnected(&w, wrong), Some(DisconnectReason::VersionMismatch));
    assert_eq!(disconnected(&w, full), Some(DisconnectReason::ServerFull));
    for i in [a, b, c] {
        assert!(w.clients[i].session.is_synchronized(), "client {i} plays");
        assert_eq!(disconnected(&w, i), None);
    }
    let refusals: Vec<ClaimRefusal> = w
        .events
        .iter()
        .filter_map(|e| match e {
            MatchServerEvent::Refused { why, .. } => Some(*why),
            _ => None,
        })
        .collect();
    // In the order they first came (a refused client tries again within its
    // reconnect window, and is refused again).
    let mut first: Vec<ClaimRefusal> = Vec::new();
    for r in refusals {
        if !first.contains(&r) {
            first.push(r);
        }
    }
    assert_eq!(first, vec![ClaimRefusal::NoClaim, ClaimRefusal::Shape, ClaimRefusal::Full, ClaimRefusal::Draining]);
    let s = w.server.stats();
    assert!(s.refused_no_claim >= 1 && s.refused_shape >= 1 && s.refused_full >= 1, "{s:?}");
    let late = w.add_client(7, claim(400));
    w.run_for(2 * SECOND);
    assert_eq!(disconnected(&w, late), Some(DisconnectReason::ServerFull));
    assert!(w.server.stats().refused_draining > s.refused_draining);
    assert_eq!(w.server.match_count(), 2);
}

#[test]
fn a_match_server_config_names_its_bad_fields() {
    let mut cfg = MatchServerConfig { max_matches: 0, ..MatchServerConfig::default() };
    cfg.session.checksum_interval = 0;
    let e = tickwire_proto::MatchServer::new(cfg).err().expect("refused");
    let text = e.to_string();
    assert!(text.contains("max_matches") && text.contains("session.checksum_interval"), "{text}");
}
