//! Steady-state rollback ticks allocate nothing: two P2P sessions over real
//! endpoints and a lossy fixed-latency wire (rollbacks every few ticks), and a synctest
//! session, counted with the shared counting allocator after a warm-up.
//!
//! It installs a counting global allocator, which is the whole process's (every test
//! of the binary would run on it, beside the counted one): hence a binary of its own,
//! not a module of `tests/proto/`.

use tickwire_testkit::counting_alloc;
#[path = "support/toy_game.rs"]
#[allow(dead_code)] // shared with tests/proto/ (which uses all of it); this binary uses a part
mod toy_game;

use std::net::SocketAddr;

use tickwire_proto::wire::MAX_DATAGRAM_SIZE;
use tickwire_proto::{
    Endpoint, EndpointConfig, GameShape, NetEvent, P2pConfig, P2pSession, PlayerKind, SyncTestSession,
};
use toy_game::{Answer, Game, TICK_US, input_for, run_requests};

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

const WIRE_SLOTS: usize = 512;

/// A preallocated FIFO delay line between two endpoints, dropping every 20th datagram.
struct Wire {
    bufs: Vec<[u8; MAX_DATAGRAM_SIZE]>,
    meta: Vec<(u64, usize, usize)>,
    head: usize,
    len: usize,
    latency: u64,
    sent: u64,
}

impl Wire {
    fn push(&mut self, deliver_at: u64, to: usize, data: &[u8]) {
        self.sent += 1;
        if self.sent % 20 == 0 {
            return;
        }
        assert!(self.len < WIRE_SLOTS, "wire full");
        let i = (self.head + self.len) % WIRE_SLOTS;
        self.bufs[i][..data.len()].copy_from_slice(data);
        self.meta[i] = (deliver_at, to, data.len());
        self.len += 1;
    }
}

struct Side {
    ep: Endpoint,
    addr: SocketAddr,
    session: Option<P2pSession>,
    game: Game,
    player: usize,
}

fn step(sides: &mut [Side; 2], wire: &mut Wire, buf: &mut [u8; MAX_DATAGRAM_SIZE], now: u64) {
    for (i, s) in sides.iter_mut().enumerate() {
        s.ep.update(now);
        while let Some(e) = s.ep.poll_event() {
            if let NetEvent::Message { peer, data, .. } = e {
                if let Some(session) = s.session.as_mut() {
                    session.handle_message(now, peer, &data);
                }
                s.ep.recycle(data);
            }
        }
        if let Some(session) = s.session.as_mut() {
            for _ in 0..session.ticks_due(now) {
                let t = session.current_tick() + session.input_delay();
                session.add_local_input(s.player, &input_for(9, s.player, t, 2)).unwrap();
                session.advance();
                run_requests(session, &mut s.game);
            }
            while session.poll_event().is_some() {}
            session.send_messages(now, &mut s.ep);
        }
        s.ep.flush(now);
        while let Some((_, n)) = s.ep.poll_transmit(&mut buf[..]) {
            wire.push(now + wire.latency, 1 - i, &buf[..n]);
        }
    }
    while wire.len > 0 && wire.meta[wire.head].0 <= now {
        let (_, to, n) = wire.meta[wire.head];
        let from = sides[1 - to].addr;
        sides[to].ep.handle_datagram(now, from, &wire.bufs[wire.head][..n]);
        wire.head = (wire.head + 1) % WIRE_SLOTS;
        wire.len -= 1;
    }
}

/// One test: the allocator counts every thread, so a second test running in parallel
/// (or the harness reporting it) would be counted too.
#[test]
fn steady_state_ticks_do_not_allocate() {
    p2p_steady_state_ticks_do_not_allocate();
    synctest_steady_state_ticks_do_not_allocate();
}

fn p2p_steady_state_ticks_do_not_allocate() {
    let a_addr: SocketAddr = "127.0.0.1:1000".parse().unwrap();
    let b_addr: SocketAddr = "127.0.0.1:2000".parse().unwrap();
    let mut sides = [
        Side {
            ep: Endpoint::new(EndpointConfig { seed: 1, ..EndpointConfig::default() }, 0).unwrap(),
            addr: a_addr,
            session: None,
            game: Game::new(2, 1),
            player: 0,
        },
        Side {
            ep: Endpoint::new(EndpointConfig { seed: 2, max_incoming: 2, ..EndpointConfig::default() }, 0).unwrap(),
            addr: b_addr,
            session: None,
            game: Game::new(2, 1),
            player: 1,
        },
    ];
    let mut wire = Wire {
        bufs: vec![[0; MAX_DATAGRAM_SIZE]; WIRE_SLOTS],
        meta: vec![(0, 0, 0); WIRE_SLOTS],
        head: 0,
        len: 0,
        latency: 4 * TICK_US,
        sent: 0,
    };
    let mut buf = Box::new([0u8; MAX_DATAGRAM_SIZE]);
    let a_peer = sides[0].ep.connect(0, b_addr).unwrap();
    let mut b_peer = None;
    let mut now = 0;
    while b_peer.is_none() || !sides[0].ep.is_connected(a_peer) {
        now += 1_000;
        step(&mut sides, &mut wire, &mut buf, now);
        b_peer = b_peer.or_else(|| sides[1].ep.peers().next());
        assert!(now < 5_000_000, "handshake");
    }
    for (i, remote) in [(0, a_peer), (1, b_peer.unwrap())] {
        let kinds = if i == 0 {
            [PlayerKind::Local, PlayerKind::Remote(remote)]
        } else {
            [PlayerKind::Remote(remote), PlayerKind::Local]
        };
        let session = P2pSession::new(P2pConfig::default(), &kinds, now).unwrap();
        sides[i].game = Game::new(2, session.state_slots());
        sides[i].game.record = false;
        sides[i].session = Some(session);
    }
    let frame = TICK_US;
    for _ in 0..1_200 {
        now += frame;
        step(&mut sides, &mut wire, &mut buf, now);
    }
    let rollbacks_before = sides[0].session.as_ref().unwrap().stats().rollbacks;
    let tick_before = sides[0].session.as_ref().unwrap().current_tick();
    let before = counting_alloc::thread_allocations();
    for _ in 0..3_600 {
        now += frame;
        step(&mut sides, &mut wire, &mut buf, now);
    }
    let allocs = counting_alloc::thread_allocations() - before;
    let st = sides[0].session.as_ref().unwrap().stats();
    assert!(st.current_tick - tick_before > 3_500, "ticks ran: {}", st.current_tick - tick_before);
    assert!(st.rollbacks - rollbacks_before > 500, "rollbacks happened: {}", st.rollbacks - rollbacks_before);
    assert!(st.checks_compared > 300, "desync checks ran");
    assert_eq!(allocs, 0, "{allocs} allocations over 3600 steady-state ticks");
}

fn synctest_steady_state_ticks_do_not_allocate() {
    let mut s = SyncTestSession::new(GameShape::new(2, 2), 4).unwrap();
    let mut game = Game::new(2, s.state_slots());
    game.record = false;
    let mut run = |ticks: u32, s: &mut SyncTestSession| {
        for _ in 0..ticks {
            let t = s.current_tick();
            for p in 0..2 {
                s.add_input(p, &input_for(1, p, t, 3)).unwrap();
            }
            s.advance();
            while let Some(r) = s.poll_request() {
                if let Some(Answer::Saved(tick, c)) = game.apply(r) {
                    s.confirm_save(tick, c).unwrap();
                }
            }
            assert!(s.poll_event().is_none());
        }
    };
    run(100, &mut s);
    let before = counting_alloc::thread_allocations();
    run(3_000, &mut s);
    assert_eq!(counting_alloc::thread_allocations() - before, 0);
}
