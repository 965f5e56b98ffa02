//! Issue 18, defect 8: a relay client whose round trip outgrows `max_prediction` gets
//! input delay for the rest, and now says so (`InputDelayChanged` with the spill)
//! instead of adding it silently.

use crate::support::relay_world::{World, link};
use tickwire_proto::{ClientSessionEvent, GameShape, RelayClientSessionConfig, RelayServerSessionConfig};

const SECOND: u64 = 1_000_000;

/// (delay, spill) of every `InputDelayChanged` client 0 saw.
fn delay_events(max_prediction: u32) -> (Vec<(u32, u32)>, u32) {
    let s = RelayServerSessionConfig { game: GameShape::new(2, 2), ..RelayServerSessionConfig::default() };
    let c =
        RelayClientSessionConfig { game: GameShape::new(2, 2), max_prediction, ..RelayClientSessionConfig::default() };
    // 50 ms each way (± 10 ms): a round trip of about 6 ticks, plus the server's buffer.
    let mut w = World::new(101, link(0.0), s, c);
    w.add_client();
    w.run_for(10 * SECOND);
    let events = w.clients[0]
        .events
        .iter()
        .filter_map(|e| match *e {
            ClientSessionEvent::InputDelayChanged { delay, spill } => Some((delay, spill)),
            _ => None,
        })
        .collect();
    (events, w.clients[0].session.stats().input_delay)
}

#[test]
fn latency_past_the_prediction_window_is_told_as_input_delay() {
    let (events, delay) = delay_events(6);
    eprintln!("max_prediction 6: {events:?}, delay now {delay}");
    let &(last_delay, last_spill) = events.last().expect("the spill into delay was told");
    assert!(last_spill >= 1 && last_delay == last_spill, "delay of {last_delay} is all spill ({last_spill})");
    assert_eq!(last_delay, delay, "the last event says the delay in force");
    assert!(events.len() <= 10, "at most once a second over 10 s: {}", events.len());
    // A window that covers the round trip: prediction hides it, no delay, no event.
    let (events, delay) = delay_events(24);
    assert!(events.is_empty() && delay == 0, "max_prediction 24: {events:?}, delay {delay}");
}
