//! What a relay client's `ticks_due` and `advance` answer where the other sessions
//! have an answer too (issue 18, defect 7): at the prediction cap `WindowFull`, as P2P
//! (with one `PredictionWindowFull` event per stall), and once the server is gone for
//! good no tick is due and `advance` says `Finished` with no request.

use crate::support::relay_world::{FRAME_US, World, link};
use tickwire_proto::{
    AdvanceStatus, ClientSessionEvent, DisconnectReason, GameShape, LinkConfig, LossModel, RelayClientSessionConfig,
    RelayServerSessionConfig,
};

const SECOND: u64 = 1_000_000;
const MAX_PREDICTION: u32 = 16;

fn world(seed: u64) -> World {
    let s = RelayServerSessionConfig { game: GameShape::new(2, 2), ..RelayServerSessionConfig::default() };
    let c =
        RelayClientSessionConfig { game: GameShape::new(2, 2), max_prediction: MAX_PREDICTION, ..Default::default() };
    let mut w = World::new(seed, link(0.0), s, c);
    w.add_client();
    w.run_for(3 * SECOND);
    assert!(w.clients[0].session.is_synchronized(), "{:?}", w.clients[0].events);
    w
}

fn window_full_events(w: &World) -> usize {
    w.count_events(0, |e| matches!(e, ClientSessionEvent::PredictionWindowFull { .. }))
}

#[test]
fn at_the_prediction_cap_advance_says_window_full() {
    let mut w = world(71);
    assert_eq!(w.clients[0].window_full, 0);
    assert_eq!(w.clients[0].last_status, Some(AdvanceStatus::Advanced));
    // The server's updates stop arriving (its datagrams are lost, for less than the
    // transport's timeout): the client predicts up to its window, then waits.
    let (server, client) = (w.server_node, w.clients[0].node);
    w.net.set_link(server, client, LinkConfig { loss: LossModel::Bernoulli { p: 1.0 }, ..link(0.0) });
    w.run_for(SECOND);
    let c = &w.clients[0];
    assert_eq!(c.last_status, Some(AdvanceStatus::WindowFull), "advance at the cap");
    assert!(c.window_full > 30, "every tick past the window: {}", c.window_full);
    let s = c.session.stats();
    assert_eq!(s.prediction_distance, MAX_PREDICTION, "{s:?}");
    assert_eq!(window_full_events(&w), 1, "one event per stall: {:?}", w.clients[0].events);
    match w.clients[0].events.iter().rev().find(|e| matches!(e, ClientSessionEvent::PredictionWindowFull { .. })) {
        Some(&ClientSessionEvent::PredictionWindowFull { tick }) => assert_eq!(tick, s.current_tick),
        e => panic!("{e:?}"),
    }
    // The updates come back: ticks are simulated again, and the timeline is the server's.
    w.net.set_link(server, client, link(0.0));
    w.run_for(2 * SECOND);
    let c = &w.clients[0];
    assert_eq!(c.last_status, Some(AdvanceStatus::Advanced));
    assert!(c.session.stats().prediction_distance < MAX_PREDICTION);
    w.assert_same_states(0, w.joined_tick(0));
    // A second stall is a second event.
    w.net.set_link(server, client, LinkConfig { loss: LossModel::Bernoulli { p: 1.0 }, ..link(0.0) });
    w.run_for(SECOND);
    assert_eq!(window_full_events(&w), 2);
}

#[test]
fn once_the_server_is_lost_no_tick_is_due_and_advance_says_finished() {
    let mut w = world(72);
    // The server shuts down: final (reason Server), the client's session is over.
    let now = w.net.local_now(w.server_node);
    w.net.endpoint(w.server_node).shutdown(now);
    let node = w.clients[0].node;
    for _ in 0..50 {
        w.net.step(FRAME_US);
        w.client_frame(0);
    }
    assert_eq!(
        w.clients[0].events.last(),
        Some(&ClientSessionEvent::Disconnected { reason: DisconnectReason::Server }),
        "{:?}",
        w.clients[0].events
    );
    let tick = w.clients[0].session.current_tick();
    let mut due = 0;
    for _ in 0..250 {
        w.net.step(FRAME_US);
        let now = w.net.local_now(node);
        let c = &mut w.clients[0];
        due += c.session.ticks_due(now, w.net.endpoint(node));
        c.session.add_local_input(&[1, 2]).unwrap();
        assert_eq!(c.session.advance(), AdvanceStatus::Finished, "advance once the server is lost");
        assert!(c.session.poll_request().is_none());
        assert_eq!(c.session.poll_event(), None, "SERVER_LOST was said once");
        c.session.send_messages(now, w.net.endpoint(node));
    }
    assert_eq!(due, 0, "no tick is due once the server is lost (1 s)");
    assert_eq!(w.clients[0].session.current_tick(), tick, "nothing was simulated");
}
