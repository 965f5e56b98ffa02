//! A relay player that leaves on purpose frees its slot at once; one whose connection
//! drops keeps it for `reconnect_timeout_us` (issue 18, defect 6).
//!
//! A client that quits closes its connection with a disconnect packet (what
//! `tw_session_destroy` does through the endpoint's shutdown): the server hears reason
//! `Client`, the client saying it is leaving. Silence, a cut link, or the client
//! reconnecting from the same address while the server still holds its old connection
//! are not a quit: the slot waits for its token.

use crate::support::relay_world::{World, link};
use tickwire_proto::{
    ClientSessionEvent, DisconnectReason, GameShape, LinkConfig, LossModel, RejectReason, RelayClientSessionConfig,
    RelayServerSessionConfig, ServerSessionEvent,
};

const SECOND: u64 = 1_000_000;

/// A one-slot server, whose slot would wait 30 s (the default) for a dropped player.
fn one_slot() -> World {
    let s = RelayServerSessionConfig { game: GameShape::new(1, 2), ..RelayServerSessionConfig::default() };
    let c = RelayClientSessionConfig { game: GameShape::new(1, 2), ..RelayClientSessionConfig::default() };
    assert_eq!(s.reconnect_timeout_us, 30 * SECOND);
    World::new(61, link(0.0), s, c)
}

fn joined(w: &World, i: usize) -> Option<bool> {
    w.clients[i].events.iter().find_map(|e| match *e {
        ClientSessionEvent::Joined { reconnect, .. } => Some(reconnect),
        _ => None,
    })
}

/// Client `i` quits as `tw_session_destroy` does: its endpoint closes every connection
/// with a disconnect packet, and the session is never driven again.
fn quit(w: &mut World, i: usize) {
    let node = w.clients[i].node;
    let now = w.net.local_now(node);
    w.net.endpoint(node).shutdown(now);
    w.clients[i].alive = false;
}

#[test]
fn a_client_that_quits_frees_its_slot_at_once() {
    let mut w = one_slot();
    w.add_client();
    w.run_for(3 * SECOND);
    assert_eq!(joined(&w, 0), Some(false));
    quit(&mut w, 0);
    w.run_for(SECOND / 2);
    let left = w
        .server_events
        .iter()
        .position(|e| *e == ServerSessionEvent::PlayerInterrupted { player: 0, reason: DisconnectReason::Client });
    let freed = w.server_events.iter().position(|e| *e == ServerSessionEvent::PlayerLeft { player: 0 });
    assert!(left.is_some(), "the server heard the client leave: {:?}", w.server_events);
    assert!(freed.is_some_and(|f| f > left.unwrap()), "and freed its slot at once: {:?}", w.server_events);
    // The next player gets the slot now, not 30 s later.
    w.add_client();
    w.run_for(2 * SECOND);
    assert_eq!(joined(&w, 1), Some(false), "{:?}", w.clients[1].events);
    assert_eq!(w.server.stats().rejected, 0);
    assert!(w.server.peer_of(0).is_some(), "the newcomer plays slot 0");
}

#[test]
fn a_client_whose_link_drops_keeps_its_slot() {
    let mut w = one_slot();
    w.add_client();
    w.run_for(3 * SECOND);
    // Gone without a word (a crash, a cable): the server times it out.
    w.clients[0].alive = false;
    w.set_client_link(0, LinkConfig { loss: LossModel::Bernoulli { p: 1.0 }, ..link(0.0) });
    w.run_for(8 * SECOND);
    assert!(
        w.server_events
            .contains(&ServerSessionEvent::PlayerInterrupted { player: 0, reason: DisconnectReason::Timeout }),
        "{:?}",
        w.server_events
    );
    assert!(!w.server_events.iter().any(|e| matches!(e, ServerSessionEvent::PlayerLeft { .. })));
    // The slot waits for its token: a newcomer is refused as full.
    w.add_client();
    w.run_for(2 * SECOND);
    assert_eq!(joined(&w, 1), None);
    assert!(
        w.server_events
            .iter()
            .any(|e| matches!(e, ServerSessionEvent::ConnectionRejected { reason: RejectReason::Full, .. })),
        "{:?}",
        w.server_events
    );
}

#[test]
fn a_client_reconnecting_from_the_same_address_gets_its_slot_back() {
    let mut w = one_slot();
    w.add_client();
    w.run_for(3 * SECOND);
    let (server, client) = (w.server_node, w.clients[0].node);
    // Only the server's datagrams are lost: the client times out and dials again from
    // the same socket while the server still holds its old connection, which the new
    // one replaces. That is no quit.
    let cut = LinkConfig { loss: LossModel::Bernoulli { p: 1.0 }, ..link(0.0) };
    w.net.set_link(server, client, cut);
    w.run_for(6 * SECOND);
    assert!(
        w.clients[0].events.iter().any(|e| matches!(e, ClientSessionEvent::Interrupted { .. })),
        "{:?}",
        w.clients[0].events
    );
    w.net.set_link(server, client, link(0.0));
    w.run_for(3 * SECOND);
    assert!(
        w.server_events.iter().any(|e| matches!(e, ServerSessionEvent::PlayerReconnected { player: 0, .. })),
        "{:?}",
        w.server_events
    );
    assert!(!w.server_events.iter().any(|e| matches!(e, ServerSessionEvent::PlayerLeft { .. })));
    assert_eq!(w.server.stats().bad_tokens, 0);
    assert_eq!(w.clients[0].session.stats().reconnects, 1);
}
