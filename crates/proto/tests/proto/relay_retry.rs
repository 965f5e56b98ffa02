//! A relay client retries what may pass (issue 13): a first join that times out, and a
//! server whose endpoint is full, are retried with backoff within the reconnect
//! window instead of ending the session; a refusal that would repeat is final.

use crate::support::relay_world::{World, link};
use tickwire_proto::{
    ClientSessionEvent, DisconnectReason, EndpointConfig, GameShape, LinkConfig, LossModel, RelayClientSessionConfig,
    RelayServerSessionConfig,
};

const SECOND: u64 = 1_000_000;

fn configs() -> (RelayServerSessionConfig, RelayClientSessionConfig) {
    let s = RelayServerSessionConfig { game: GameShape::new(4, 2), ..RelayServerSessionConfig::default() };
    let c = RelayClientSessionConfig { game: GameShape::new(4, 2), ..RelayClientSessionConfig::default() };
    (s, c)
}

fn joined(w: &World, i: usize) -> bool {
    w.clients[i].events.iter().any(|e| matches!(e, ClientSessionEvent::Joined { .. }))
}

fn lost(w: &World, i: usize) -> Option<DisconnectReason> {
    w.clients[i].events.iter().find_map(|e| match *e {
        ClientSessionEvent::Disconnected { reason } => Some(reason),
        _ => None,
    })
}

/// Before: a client without a slot whose first connection timed out was told
/// "gone for good" at once.
#[test]
fn a_first_join_that_times_out_is_retried() {
    let (s, c) = configs();
    let mut w = World::new(41, link(0.0), s, c);
    let i = w.add_client();
    let cut = LinkConfig { loss: LossModel::Bernoulli { p: 1.0 }, ..link(0.0) };
    w.set_client_link(i, cut);
    // Longer than the transport's connect timeout: the attempt fails at least once.
    w.run_for(12 * SECOND);
    assert!(!joined(&w, i));
    assert_eq!(lost(&w, i), None, "still retrying: {:?}", w.clients[i].events);
    assert!(
        w.clients[i].events.iter().any(|e| matches!(e, ClientSessionEvent::Interrupted { .. })),
        "the engine was told it is retrying"
    );
    w.set_client_link(i, link(0.0));
    w.run_for(6 * SECOND);
    assert!(joined(&w, i), "joined once the server was reachable: {:?}", w.clients[i].events);
}

/// Before: SERVER_FULL ended the session. Now the client backs off and gets in once a
/// connection frees up.
#[test]
fn a_full_server_is_retried_with_backoff_until_a_place_frees() {
    let (s, c) = configs();
    let endpoint = EndpointConfig { max_incoming: 1, timeout_us: 2 * SECOND, ..EndpointConfig::default() };
    let mut w = World::with_server_endpoint(42, link(0.0), s, c, endpoint);
    let a = w.add_client();
    w.run_for(2 * SECOND);
    assert!(joined(&w, a));
    let b = w.add_client();
    w.run_for(3 * SECOND);
    assert!(!joined(&w, b));
    assert!(
        w.clients[b].events.iter().any(
            |e| matches!(e, ClientSessionEvent::Interrupted { reason } if *reason == DisconnectReason::ServerFull)
        ),
        "{:?}",
        w.clients[b].events
    );
    assert_eq!(lost(&w, b), None, "a full server is not final");
    // Client A goes silent: the server drops it after its 2 s timeout.
    w.clients[a].alive = false;
    w.run_for(10 * SECOND);
    assert!(joined(&w, b), "got in after the place freed: {:?}", w.clients[b].events);
}

/// The window bounds the retries: a server that never answers ends the session with
/// the reason of the last failure.
#[test]
fn retries_end_with_the_window() {
    let (s, mut c) = configs();
    c.reconnect_window_us = 8 * SECOND;
    let mut w = World::new(43, link(0.0), s, c);
    let i = w.add_client();
    let cut = LinkConfig { loss: LossModel::Bernoulli { p: 1.0 }, ..link(0.0) };
    w.set_client_link(i, cut);
    w.run_for(30 * SECOND);
    assert_eq!(lost(&w, i), Some(DisconnectReason::Timeout), "{:?}", w.clients[i].events);
}
