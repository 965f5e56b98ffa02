//! The relay server's steady-state ticks allocate nothing: a server session and four
//! client sessions over the simulator on a 100 ms RTT link with 10 ms jitter and 5%
//! loss, and every 10 s a 300 ms outage of one client's link (so inputs arrive late,
//! out of order and in bursts that are merged, steps are resent until acknowledged,
//! and checksums go out with the updates).
//!
//! Only the server's side is counted: every call into the server session (`on_event`,
//! `ticks_due`, `advance`, `poll_request`, `confirm_save`, `provide_state`,
//! `poll_event`, `send_messages`) and every call the simulator makes into the server's
//! endpoint (`handle_datagram`, `update`, `next_timeout`, `flush`, `poll_event`,
//! `poll_transmit`; `recycle` runs inside `on_event`), seen through the net's endpoint
//! probe. The engine's work, the clients and the simulator's own bookkeeping are not.
//!
//! Joins, snapshots and reconnects may allocate (a slot's buffers are reserved when a
//! player is admitted, a Welcome carries a fresh state): they are not per tick. The
//! warm-up covers the joins and the counter is shown to see them.
//!
//! It installs a counting global allocator, which is the whole process's (every test
//! of the binary would run on it, beside the counted one): hence a binary of its own,
//! not a module of `tests/proto/`.

use tickwire_testkit::counting_alloc;
#[path = "support/relay_game.rs"]
#[allow(dead_code)] // shared with tests/proto/ (which uses all of it); this binary uses a part
mod relay_game;
#[path = "support/relay_world.rs"]
#[allow(dead_code)] // shared with tests/proto/ (which uses all of it); this binary uses a part
mod relay_world;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use relay_game::Answer;
use relay_world::{FRAME_US, World, link};
use tickwire_proto::{
    AdvanceStatus, GameShape, LinkConfig, LossModel, RelayClientSessionConfig, RelayServerSessionConfig,
    ServerSessionEvent,
};

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

const SECOND: u64 = 1_000_000;
const WARMUP_US: u64 = 20 * SECOND;
const COUNTED_US: u64 = 70 * SECOND;
/// One client's link outage every 10 s: longer than the bursts of loss the server
/// substitutes from a client that sends every tick (`LOSSY_SUBSTITUTE_RUN`, 16 ticks),
/// so it waits (the test wants the merge that ends a wait).
const OUTAGE_US: u64 = 600_000;

/// The server's node, and the allocations made inside calls the net made into its
/// endpoint (the endpoint probe below).
static SERVER_NODE: AtomicUsize = AtomicUsize::new(usize::MAX);
static PROBE_ENTERED_AT: AtomicU64 = AtomicU64::new(0);
static ENDPOINT_ALLOCS: AtomicU64 = AtomicU64::new(0);

fn server_endpoint_probe(node: usize, entering: bool) {
    if node != SERVER_NODE.load(Ordering::Relaxed) {
        return;
    }
    let now = counting_alloc::thread_allocations();
    if entering {
        PROBE_ENTERED_AT.store(now, Ordering::Relaxed);
    } else {
        ENDPOINT_ALLOCS.fetch_add(now - PROBE_ENTERED_AT.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

/// Allocations made on the server's side, by call.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    on_event: u64,
    ticks_due: u64,
    advance: u64,
    poll_request: u64,
    answers: u64,
    poll_event: u64,
    send_messages: u64,
}

impl Tally {
    fn session(&self) -> u64 {
        self.on_event
            + self.ticks_due
            + self.advance
            + self.poll_request
            + self.answers
            + self.poll_event
            + self.send_messages
    }
}

/// Runs `f`, adding the allocations it made to `slot`.
fn counted<R>(slot: &mut u64, f: impl FnOnce() -> R) -> R {
    let before = counting_alloc::thread_allocations();
    let r = f();
    *slot += counting_alloc::thread_allocations() - before;
    r
}

/// One frame: the server's part counted call by call, then the clients (not counted).
fn frame(w: &mut World, t: &mut Tally) -> u64 {
    w.net.step(FRAME_US);
    let s = w.server_node;
    let now = w.net.local_now(s);
    for e in w.net.take_events(s) {
        let ep = w.net.endpoint(s);
        counted(&mut t.on_event, || w.server.on_event(now, ep, e));
    }
    let mut ticks = 0;
    for _ in 0..counted(&mut t.ticks_due, || w.server.ticks_due(now)) {
        assert_eq!(counted(&mut t.advance, || w.server.advance()), AdvanceStatus::Advanced);
        ticks += 1;
        loop {
            let before = counting_alloc::thread_allocations();
            let r = w.server.poll_request();
            t.poll_request += counting_alloc::thread_allocations() - before;
            let Some(r) = r else { break };
            match w.server_game.apply(r) {
                Some(Answer::Saved(tick, c)) => {
                    counted(&mut t.answers, || w.server.confirm_save(tick, c)).expect("save requested")
                }
                Some(Answer::State(tick, b)) => {
                    counted(&mut t.answers, || w.server.provide_state(tick, &b)).expect("dump requested")
                }
                None => {}
            }
        }
    }
    while let Some(e) = counted(&mut t.poll_event, || w.server.poll_event()) {
        w.server_events.push(e);
    }
    let ep = w.net.endpoint(s);
    counted(&mut t.send_messages, || w.server.send_messages(now, ep));
    for i in 0..w.clients.len() {
        w.client_frame(i);
    }
    ticks
}

#[test]
fn steady_state_server_ticks_do_not_allocate() {
    let scfg = RelayServerSessionConfig {
        game: GameShape::new(4, 2),
        checksum_interval: 30,
        ..RelayServerSessionConfig::default()
    };
    let ccfg = RelayClientSessionConfig { game: GameShape::new(4, 2), ..RelayClientSessionConfig::default() };
    let mut w = World::new(23, link(0.05), scfg, ccfg);
    SERVER_NODE.store(w.server_node, Ordering::Relaxed);
    w.net.set_endpoint_probe(Some(server_endpoint_probe));
    for _ in 0..4 {
        w.add_client();
    }

    let mut warm = Tally::default();
    while w.net.now() < WARMUP_US {
        frame(&mut w, &mut warm);
    }
    let warm_endpoint = ENDPOINT_ALLOCS.load(Ordering::Relaxed);
    let joined = w.server_events.iter().filter(|e| matches!(e, ServerSessionEvent::PlayerJoined { .. })).count();
    assert_eq!(joined, 4, "every client joined during the warm-up");
    assert_eq!(w.server.stats().players, 4);
    assert!(warm.answers > 0, "the counter sees the server session: the Welcomes' snapshots allocate ({warm:?})");
    assert!(warm_endpoint > 0, "the probe sees the server's endpoint: new connections allocate");

    let before = w.server.stats();
    let events_before = w.server_events.len();
    let mut t = Tally::default();
    let mut ticks = 0;
    let start = w.net.now();
    let end = start + COUNTED_US;
    while w.net.now() < end {
        // Every 10 s one client's link goes down for 600 ms: its inputs then arrive in a
        // burst that is merged, and its steps pile up unacknowledged and are resent.
        let into = (w.net.now() - start) % (10 * SECOND);
        let victim = ((w.net.now() - start) / (10 * SECOND)) as usize % 4;
        if into < FRAME_US {
            w.set_client_link(victim, LinkConfig { loss: LossModel::Bernoulli { p: 1.0 }, ..link(0.05) });
        } else if (OUTAGE_US..OUTAGE_US + FRAME_US).contains(&into) {
            w.set_client_link(victim, link(0.05));
        }
        ticks += frame(&mut w, &mut t);
    }
    let endpoint = ENDPOINT_ALLOCS.load(Ordering::Relaxed) - warm_endpoint;
    let st = w.server.stats();
    println!("warm-up (joins): session {warm:?}, endpoint {warm_endpoint}");
    println!("{ticks} server ticks counted: session {t:?}, endpoint {endpoint}");
    println!("server: {st:?}");

    // The steady state under test: four players all along, with the lossy link's work.
    assert!(ticks >= 60 * 60, "the server ran {ticks} ticks");
    assert_eq!(st.players, 4);
    assert_eq!(&w.server_events[events_before..], &[], "no one joined, left or was kicked while counting");
    assert!(st.empty_steps > before.empty_steps, "late inputs left empty steps: {st:?}");
    assert!(st.merged_steps > before.merged_steps, "inputs piled up and were merged: {st:?}");
    assert!(st.checks_sent > before.checks_sent + 100, "checksums went out: {st:?}");
    assert!(w.clients.iter().all(|c| c.session.authoritative_tick() + 60 > st.tick), "the clients kept up");

    assert_eq!(t.session(), 0, "allocations in the server session's steady state: {t:?}");
    assert_eq!(endpoint, 0, "allocations in the server endpoint's steady state");
}
