//! A relay client's steady-state ticks allocate nothing: a server session and two
//! client sessions over real endpoints and a fixed-latency wire that drops every 20th
//! datagram (so steps are resent, inputs repeated, and remote inputs changing every
//! few dozen ticks force re-predictions). Only the clients' side is counted (the
//! server is not held to it). Then matches that stall both clients for 1.5 s: the
//! recovery (a burst of updates, steps to catch up on, merged steps, clock jumps)
//! allocates nothing either, whichever datagrams the wire drops.
//!
//! It installs a counting global allocator, which is the whole process's (every test
//! of the binary would run on it, beside the counted one): hence a binary of its own,
//! not a module of `tests/proto/`.

use tickwire_testkit::counting_alloc;
#[path = "support/relay_game.rs"]
#[allow(dead_code)] // shared with tests/proto/ (which uses all of it); this binary uses a part
mod relay_game;

use std::net::SocketAddr;

use relay_game::{Answer, BoxGame, input_for};
use tickwire_proto::wire::MAX_DATAGRAM_SIZE;
use tickwire_proto::{
    AdvanceStatus, ClientSessionStats, Endpoint, EndpointConfig, GameShape, RelayClientSession,
    RelayClientSessionConfig, RelayServerSession, RelayServerSessionConfig,
};

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

const WIRE_SLOTS: usize = 2048;
const LATENCY_US: u64 = 50_000;
const FRAME_US: u64 = 4_000;

/// A preallocated FIFO delay line, dropping every `drop_every`th datagram.
struct Wire {
    drop_every: u64,
    bufs: Vec<[u8; MAX_DATAGRAM_SIZE]>,
    meta: Vec<(u64, usize, usize, usize)>,
    head: usize,
    len: usize,
    sent: u64,
}

impl Wire {
    fn push(&mut self, deliver_at: u64, from: usize, to: usize, data: &[u8]) {
        self.sent += 1;
        if self.sent % self.drop_every == 0 {
            return;
        }
        assert!(self.len < WIRE_SLOTS, "wire full");
        let i = (self.head + self.len) % WIRE_SLOTS;
        self.bufs[i][..data.len()].copy_from_slice(data);
        self.meta[i] = (deliver_at, from, to, data.len());
        self.len += 1;
    }
}

struct ClientSide {
    ep: Endpoint,
    session: RelayClientSession,
    game: BoxGame,
    pushed: u64,
}

#[test]
fn steady_state_client_ticks_do_not_allocate() {
    run_match(None, 20);
}

/// Both clients' engine stops mid-match (nothing delivered to them, nothing sent):
/// afterwards a burst of updates, a pile of canonical steps to catch up on, inputs
/// waiting for acks and a clock that jumps. The pools are sized for that too.
#[test]
fn a_client_stall_does_not_allocate_either() {
    // On a link that drops every 17th to 23rd datagram the clients send every tick (it
    // loses more than ε/2), and the server substitutes a 1.5 s stall's first ticks as
    // it would a burst of loss, then waits (`LatePolicy::Adaptive`). Below that loss
    // the clients send every other tick and the server waits from a 2 s stall's third
    // tick; whether it then merges a client's burst into one step depends on which of
    // its datagrams the wire drops: some must (the merge path is what that stall is
    // for). None may allocate.
    let mut merging_runs = 0;
    for (drop_every, stall) in [17, 19, 20, 21, 23]
        .map(|d| (d, 50_000_000..51_500_000))
        .into_iter()
        .chain([211, 307, 401].map(|d| (d, 50_000_000..52_000_000)))
    {
        let stats = run_match(Some(stall), drop_every);
        merging_runs += (drop_every > 200 && stats.iter().any(|st| st.sync.merged_steps > 0)) as u32;
        for st in stats {
            // The clocks jumped, and the clients caught up without a new snapshot.
            assert!(st.sync.clock_corrections > 0, "dropping every {drop_every}th: {st:?}");
            assert_eq!(st.resyncs, 0, "dropping every {drop_every}th: caught up without a new snapshot");
        }
    }
    assert!(merging_runs >= 2, "only {merging_runs} of 3 stalls made the server merge a burst of inputs");
}

/// Runs the match; `stall`: when the clients' side does nothing; the wire drops every
/// `drop_every`th datagram. Returns the clients' figures.
fn run_match(stall: Option<std::ops::Range<u64>>, drop_every: u64) -> Vec<ClientSessionStats> {
    let addrs: Vec<SocketAddr> =
        ["127.0.0.1:1000", "127.0.0.1:2001", "127.0.0.1:2002"].iter().map(|a| a.parse().unwrap()).collect();
    let mut server_ep =
        Endpoint::new(EndpointConfig { max_incoming: 8, seed: 1, ..EndpointConfig::default() }, 0).unwrap();
    let scfg = RelayServerSessionConfig { game: GameShape::new(4, 2), ..RelayServerSessionConfig::default() };
    let mut server = RelayServerSession::new(scfg, 0).unwrap();
    let mut server_game = BoxGame::new(4, server.state_slots());
    let ccfg = RelayClientSessionConfig { game: GameShape::new(4, 2), ..RelayClientSessionConfig::default() };
    let mut clients: Vec<ClientSide> = (0..2)
        .map(|i| {
            let mut ep = Endpoint::new(EndpointConfig { seed: 10 + i as u64, ..EndpointConfig::default() }, 0).unwrap();
            let mut session = RelayClientSession::new(ccfg.clone()).unwrap();
            session.connect(0, &mut ep, addrs[0]).unwrap();
            let game = BoxGame::new(4, session.state_slots());
            ClientSide { ep, session, game, pushed: 0 }
        })
        .collect();
    let mut wire = Wire {
        drop_every,
        bufs: vec![[0; MAX_DATAGRAM_SIZE]; WIRE_SLOTS],
        meta: vec![(0, 0, 0, 0); WIRE_SLOTS],
        head: 0,
        len: 0,
        sent: 0,
    };
    let mut buf = [0u8; MAX_DATAGRAM_SIZE];
    let warmup = 30_000_000;
    let end = 90_000_000;
    let mut counted = 0u64;
    let mut warmup_allocs = 0u64;
    let mut ticks = 0u64;
    let mut repredictions_before = 0;
    let mut now = 0;
    while now < end {
        now += FRAME_US;
        let stalled = stall.as_ref().is_some_and(|s| s.contains(&now));
        // Deliveries (the wire is FIFO: while the clients stall, what is queued behind
        // a datagram for them waits too).
        while wire.len > 0 && wire.meta[wire.head].0 <= now && !(stalled && wire.meta[wire.head].2 != 0) {
            let (_, from, to, n) = wire.meta[wire.head];
            let data = &wire.bufs[wire.head][..n];
            if to == 0 {
                server_ep.handle_datagram(now, addrs[from], data);
            } else {
                let before = counting_alloc::thread_allocations();
                clients[to - 1].ep.handle_datagram(now, addrs[from], data);
                if now >= warmup {
                    counted += counting_alloc::thread_allocations() - before;
                }
            }
            wire.head = (wire.head + 1) % WIRE_SLOTS;
            wire.len -= 1;
        }
        // The server (not counted).
        server_ep.update(now);
        while let Some(e) = server_ep.poll_event() {
            server.on_event(now, &mut server_ep, e);
        }
        for _ in 0..server.ticks_due(now) {
            server.advance();
            while let Some(r) = server.poll_request() {
                match server_game.apply(r) {
                    Some(Answer::Saved(t, c)) => server.confirm_save(t, c).unwrap(),
                    Some(Answer::State(t, b)) => server.provide_state(t, &b).unwrap(),
                    None => {}
                }
            }
        }
        while server.poll_event().is_some() {}
        server.send_messages(now, &mut server_ep);
        while let Some((to, n)) = server_ep.poll_transmit(&mut buf) {
            let dst = addrs.iter().position(|a| *a == to).unwrap();
            wire.push(now + LATENCY_US, 0, dst, &buf[..n]);
        }
        // The clients (counted after the warm-up).
        for (i, c) in clients.iter_mut().enumerate().filter(|_| !stalled) {
            let before = counting_alloc::thread_allocations();
            c.ep.update(now);
            while let Some(e) = c.ep.poll_event() {
                c.session.on_event(now, &mut c.ep, e);
            }
            for _ in 0..c.session.ticks_due(now, &mut c.ep) {
                let input = input_for(7, i, c.pushed);
                c.pushed += 1;
                c.session.add_local_input(&input).unwrap();
                if c.session.advance() == AdvanceStatus::Advanced && now >= warmup {
                    ticks += 1;
                }
                while let Some(r) = c.session.poll_request() {
                    if let Some(Answer::Saved(t, cs)) = c.game.apply(r) {
                        c.session.confirm_save(t, cs).unwrap();
                    }
                }
            }
            while c.session.poll_event().is_some() {}
            c.session.send_messages(now, &mut c.ep);
            let _ = c.session.stats();
            c.ep.flush(now);
            while let Some((to, n)) = c.ep.poll_transmit(&mut buf) {
                let dst = addrs.iter().position(|a| *a == to).unwrap();
                wire.push(now + LATENCY_US, i + 1, dst, &buf[..n]);
            }
            if now >= warmup {
                counted += counting_alloc::thread_allocations() - before;
            } else {
                warmup_allocs += counting_alloc::thread_allocations() - before;
            }
        }
        if now == warmup {
            repredictions_before = clients.iter().map(|c| c.session.stats().prediction.repredictions).sum();
        }
    }
    let repredictions: u64 =
        clients.iter().map(|c| c.session.stats().prediction.repredictions).sum::<u64>() - repredictions_before;
    let resim: u64 = clients.iter().map(|c| c.game.resimulated).sum();
    println!(
        "{ticks} client ticks, {repredictions} re-predictions, {resim} resimulated ticks, {counted} allocations ({warmup_allocs} while joining)"
    );
    assert!(warmup_allocs > 0, "the counter sees the clients' side (joining allocates)");
    assert!(ticks > 2 * 55 * 60, "clients ran: {ticks} ticks");
    assert!(repredictions > 100, "the path under test includes re-predictions: {repredictions}");
    assert_eq!(counted, 0, "allocations on the clients' steady-state path");
    clients.iter().map(|c| c.session.stats()).collect()
}
