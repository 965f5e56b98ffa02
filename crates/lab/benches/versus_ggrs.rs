//! tickwire's P2P rollback against GGRS 0.13, side by side in one process (issue 5,
//! item 11). Not part of the test suite: it prints a table and asserts nothing about
//! speed.
//!
//! Run it with
//!
//! ```sh
//! cargo bench -p tickwire-lab --bench versus_ggrs                 # 3,000 measured frames per run
//! BENCH_FRAMES=600 cargo bench -p tickwire-lab --bench versus_ggrs   # a quicker look
//! BENCH_ONLY='*/*/10,4/1/0' cargo bench -p tickwire-lab --bench versus_ggrs   # rows P/period/latency
//! BENCH_DETAIL=1 cargo bench -p tickwire-lab --bench versus_ggrs   # what each library sends, and stalls
//! BENCH_TW_REDUNDANCY=0 cargo bench -p tickwire-lab --bench versus_ggrs   # diagnostic: tickwire with a
//!                                  # non-default P2pConfig::input_redundancy (0 = GGRS's way)
//! ```
//!
//! # What runs
//! The same toy game for both libraries (8 x i64 of state per player, a 2-byte input per
//! player from a seeded generator that changes every `period` frames), one player per
//! peer, 2 and 4 peers in a full mesh, input change period 1 and 5 and 30 frames, link
//! latency 0, 3, 6 and 10 ticks one way with uniform jitter of 0-4 ms and 5% Bernoulli
//! loss. Both libraries use their defaults otherwise: prediction window 8, input delay
//! 0, every frame saved, repeat-last prediction, checksums compared every 10 frames.
//!
//! # The network
//! Both libraries go through the same in-process simulated network: one
//! `tickwire_proto::netsim::LinkConditioner` per direction, with the same
//! `LinkConfig` and the same seed per direction for both libraries. Time is simulated:
//! engine frame `f` happens at `f * 16,666.7` µs. Each frame first delivers every
//! datagram due by then, on every peer, then runs each peer's engine frame.
//! - tickwire: a `P2pSession` over a `tickwire_proto::transport::Endpoint` per peer (the
//!   transport's handshake, acks and headers included); the datagrams the endpoints emit
//!   are carried by the links in preallocated buffers. Each datagram is handed to its
//!   endpoint at its arrival time and the session gets every message with that time,
//!   as tickwire's runtime does (its network thread receives while the engine runs and
//!   stamps `received_at`); time sync measures from it. `BENCH_TW_FRAME_TIMES=1` hands
//!   everything over at the frame time instead, as a game thread polling once a frame.
//! - GGRS: a `NonBlockingSocket<usize>` whose `send_to` puts a clone of the `Message` on
//!   the link and whose `receive_all_messages` returns what the link delivered. Its
//!   wire size is what GGRS's own UDP socket would send (bincode 1, fixed-width
//!   integers), computed from the message's fields (checked once, outside this repo,
//!   against `bincode::serialize` on 87,000 messages of 2-4 player sessions: equal).
//!
//! # Time and GGRS's wall-clock timers
//! tickwire's core is sans-IO and sees only the simulated time. GGRS reads the wall
//! clock itself (`instant::Instant`, `SystemTime`) for its 200 ms timers (quality
//! reports, keepalives, resending when no input arrived) and its ping. Running in real
//! time would take 50 s per run, so the runs are simulated as fast as the machine goes
//! and GGRS's timers fire far less often per frame than at a real 60 Hz: its quality
//! reports (two messages per peer pair per 200 ms, 46 bytes) are mostly missing from its
//! wire bytes, which flatters GGRS by about 3.8 B per frame per remote peer at 60 Hz (the
//! table prints the bytes measured; the note under it gives the corrected figure) and
//! its ping reads ~0 on every peer, which only shifts both sides' frame-advantage
//! estimates alike. GGRS's sync handshake (retried every 200 ms of wall time) is run
//! before the measured frames with a 1 ms sleep per simulated frame, and no GGRS peer
//! advances before all are synchronized. The engine honours GGRS's `WaitRecommendation`
//! by skipping that many frames; tickwire dilates its own tick clock.
//!
//! Two more differences in GGRS's favour: its peers all start on the same frame (the
//! harness waits for every session to be synchronized, which a real engine cannot
//! know), while tickwire's sessions each start when they have heard from every peer,
//! as they would in a game; and GGRS's "prediction window 8" stops at 7 predicted
//! frames (`current - confirmed < 8`, with `confirmed` the last confirmed frame) where
//! tickwire's goes to 8, so at 6 and 10 ticks of latency GGRS stalls more and
//! simulates fewer ticks per frame (column tick/f) and rolls back less deep.
//!
//! # What is measured (after a warm-up of 300 frames, per engine frame per peer)
//! - library CPU: the time spent inside the library's calls made from the engine loop,
//!   timed with `Instant` around each call (the calibrated cost of the timer itself is
//!   subtracted), the game's own work (copying and hashing its state, stepping it)
//!   excluded. tickwire: every session *and* endpoint call (receive, timers, events,
//!   encode, send, packetize) since its transport is part of it. GGRS: `add_local_input`,
//!   `advance_frame` (which polls the socket), the `GameStateCell` save and load, the
//!   request and event handling; the time spent inside our socket (cloning messages,
//!   the link) is subtracted, so GGRS is charged nothing for serializing its messages,
//!   which its real UDP socket does with bincode. p50 and p99 over all (peer, frame).
//! - heap allocations: counted by the counting global allocator inside the same calls;
//!   the game allocates nothing. For GGRS the allocations inside our socket are
//!   subtracted too (a real socket allocates there as well).
//! - wire bytes: the sizes of the datagrams offered to the links (lost ones included),
//!   payload only (no IP/UDP headers), divided by frames and peers; datagrams likewise.
//! - rollbacks seen by the engine: a `Load` of frame `s` when the next frame to simulate
//!   is `c` is a rollback of depth `c - s`; mean and max depth, rollbacks per second of
//!   game time per peer.
//! - ticks/f: ticks actually simulated per frame (below 1 when the prediction window is
//!   full or frames were skipped).
//!
//! Every run must end with the same checksum on every peer at every frame confirmed
//! everywhere, and no desync reported; otherwise it is printed as VOID.

use tickwire_testkit::counting_alloc;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::rc::Rc;
use std::time::{Duration, Instant};

use ggrs::{
    Config, DesyncDetection, GgrsEvent, GgrsRequest, Message, NonBlockingSocket, P2PSession, PlayerType,
    PredictRepeatLast, SessionBuilder, SessionState,
};
use tickwire_proto::netsim::{JitterModel, LinkConditioner, LinkConfig, LossModel};
use tickwire_proto::rollback::{AdvanceStatus, Event, P2pConfig, P2pSession, PlayerKind, Request, message};
use tickwire_proto::transport::{Endpoint, EndpointConfig, Event as NetEvent, PeerId};
use tickwire_proto::wire::{FrameReader, MAX_DATAGRAM_SIZE, Packet, decode_packet};

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

const WORDS: usize = 8;
const MAX_PLAYERS: usize = 4;
const TICK_US: f64 = 1e6 / 60.0;
const WARMUP: u64 = 300;
const JITTER_MAX_US: u64 = 4_000;
const LOSS: f64 = 0.05;
const DESYNC_INTERVAL: u32 = 10;

fn frame_time(f: u64) -> u64 {
    (f as f64 * TICK_US).round() as u64
}

// ---------------------------------------------------------------------------------
// The toy game, shared by both libraries. It never allocates.

#[derive(Clone, Copy, Debug)]
struct GameState {
    words: [i64; WORDS * MAX_PLAYERS],
    players: usize,
}

impl GameState {
    fn new(players: usize) -> Self {
        let mut words = [0i64; WORDS * MAX_PLAYERS];
        for (i, w) in words.iter_mut().enumerate().take(players * WORDS) {
            *w = (i as i64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D);
        }
        GameState { words, players }
    }

    /// One tick: each player's input stirs its 8 words, which also feel a neighbour.
    fn step(&mut self, mut input_of: impl FnMut(usize) -> [u8; 2]) {
        let n = self.players * WORDS;
        for p in 0..self.players {
            let v = u16::from_le_bytes(input_of(p)) as i64;
            for k in 0..WORDS {
                let i = p * WORDS + k;
                let neighbour = self.words[(i + 3) % n];
                self.words[i] = self.words[i].rotate_left(7).wrapping_add(v.wrapping_mul(2 * k as i64 + 1)) ^ neighbour;
            }
        }
    }

    fn checksum(&self) -> u64 {
        let mut h: u64 = 0x6A09_E667_F3BC_C909;
        for &w in &self.words[..self.players * WORDS] {
            h = (h ^ w as u64).wrapping_mul(0x0000_0100_0000_01B3);
            h ^= h >> 29;
        }
        h
    }
}

/// Player `p`'s input for frame `f`: 10 buttons from a hash, changing every `period` frames.
fn input_for(seed: u64, p: usize, f: u64, period: u64) -> [u8; 2] {
    let mut x =
        seed ^ (p as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (f / period).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    ((x & 0x3ff) as u16).to_le_bytes()
}

// ---------------------------------------------------------------------------------
// Scenario and link.

#[derive(Clone, Copy)]
struct Scenario {
    peers: usize,
    period: u64,
    latency_ticks: u64,
    seed: u64,
}

fn link_config(latency_ticks: u64) -> LinkConfig {
    LinkConfig {
        latency_us: (latency_ticks as f64 * TICK_US).round() as u64,
        jitter: JitterModel::Uniform { max_us: JITTER_MAX_US },
        loss: LossModel::Bernoulli { p: LOSS },
        ..LinkConfig::perfect()
    }
}

fn link_seed(seed: u64, from: usize, to: usize) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (((from as u64) << 32) | to as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93)
}

// ---------------------------------------------------------------------------------
// Measuring.

/// Time and allocations spent in library calls during one engine frame of one peer.
#[derive(Default, Clone, Copy)]
struct Meter {
    ns: u64,
    sections: u64,
    allocs: u64,
}

impl Meter {
    #[inline(always)]
    fn start() -> (Instant, u64) {
        (Instant::now(), counting_alloc::allocations())
    }

    #[inline(always)]
    fn stop(&mut self, s: (Instant, u64)) {
        let ns = s.0.elapsed().as_nanos() as u64;
        self.allocs += counting_alloc::allocations() - s.1;
        self.ns += ns;
        self.sections += 1;
    }
}

/// The mean cost of an empty `Meter::start` / `Meter::stop` pair, in ns.
fn calibrate() -> f64 {
    let mut m = Meter::default();
    for _ in 0..200_000 {
        let s = Meter::start();
        m.stop(std::hint::black_box(s));
    }
    let mut m = Meter::default();
    let n = 1_000_000;
    let t = Instant::now();
    for _ in 0..n {
        let s = Meter::start();
        m.stop(std::hint::black_box(s));
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

/// What one run of one library produced.
struct Results {
    cpu_ns: Vec<f64>,
    /// The same without the timer overhead taken out.
    cpu_raw_ns: Vec<f64>,
    allocs: u64,
    bytes: u64,
    datagrams: u64,
    /// Bytes of GGRS's wall-clock-timed messages (quality reports, replies, keepalives).
    timed_bytes: u64,
    rollbacks: u64,
    depth_sum: u64,
    depth_max: u64,
    ticks: u64,
    frames: u64,
    peers: usize,
    void: Option<String>,
    compared: u64,
    /// Peer-frames in which no new tick was simulated, and of those, the ones where
    /// the library refused to advance (prediction window full) or the engine skipped
    /// the frame on GGRS's wait recommendation.
    idle: u64,
    stalled: u64,
    skipped: u64,
    /// Per message kind (BENCH_DETAIL=1): name, count, bytes.
    kinds: Vec<(&'static str, u64, u64)>,
    /// Input messages, the ticks they carry in all, checksum reports carried.
    input_msgs: u64,
    carried: u64,
    reports: u64,
    /// tickwire: messages that carried inputs again after their first copies (whole run).
    resends: u64,
    /// tickwire, BENCH_DETAIL=1: each peer's tick, frames ahead and time scale at the end.
    peers_line: String,
}

impl Results {
    fn new(frames: u64, peers: usize) -> Self {
        Results {
            cpu_ns: Vec::with_capacity(frames as usize * peers),
            cpu_raw_ns: Vec::with_capacity(frames as usize * peers),
            allocs: 0,
            bytes: 0,
            datagrams: 0,
            timed_bytes: 0,
            rollbacks: 0,
            depth_sum: 0,
            depth_max: 0,
            ticks: 0,
            frames,
            peers,
            void: None,
            compared: 0,
            idle: 0,
            stalled: 0,
            skipped: 0,
            kinds: Vec::new(),
            input_msgs: 0,
            carried: 0,
            reports: 0,
            resends: 0,
            peers_line: String::new(),
        }
    }

    fn kind(&mut self, name: &'static str, bytes: usize) {
        match self.kinds.iter_mut().find(|k| k.0 == name) {
            Some(k) => {
                k.1 += 1;
                k.2 += bytes as u64;
            }
            None => self.kinds.push((name, 1, bytes as u64)),
        }
    }

    /// Notes one peer-frame that simulated `new` new ticks.
    fn frame_done(&mut self, new: u64, stalled: bool, skipped: bool) {
        if new == 0 {
            self.idle += 1;
            self.stalled += stalled as u64;
            self.skipped += skipped as u64;
        }
    }

    /// The diagnostic lines BENCH_DETAIL=1 prints under a library's row.
    fn detail(&self) -> String {
        let pf = |x: u64| self.per_peer_frame(x);
        let mut out = format!(
            "idle frames {:.3}/f (window full {:.3}, skipped {:.3}); B per simulated tick {:.1}; input msgs {:.2}/f carrying {:.2} ticks each, {:.3} reports/f; late refreshes {}",
            pf(self.idle),
            pf(self.stalled),
            pf(self.skipped),
            self.bytes as f64 / self.ticks.max(1) as f64,
            pf(self.input_msgs),
            self.carried as f64 / self.input_msgs.max(1) as f64,
            pf(self.reports),
            self.resends,
        );
        if !self.peers_line.is_empty() {
            let _ = write!(out, "\n{:>23} peers at the end:{}", "", self.peers_line);
        }
        for (name, count, bytes) in &self.kinds {
            let _ = write!(
                out,
                "\n{:>23} {name}: {:.3}/f, {:.1} B each, {:.1} B/f",
                "",
                pf(*count),
                *bytes as f64 / *count as f64,
                pf(*bytes)
            );
        }
        out
    }

    fn sample(&mut self, m: &Meter, calib: f64) {
        self.cpu_ns.push((m.ns as f64 - m.sections as f64 * calib).max(0.0));
        self.cpu_raw_ns.push(m.ns as f64);
        self.allocs += m.allocs;
    }

    fn rollback(&mut self, depth: u64) {
        self.rollbacks += 1;
        self.depth_sum += depth;
        self.depth_max = self.depth_max.max(depth);
    }

    fn per_peer_frame(&self, x: u64) -> f64 {
        x as f64 / (self.frames as f64 * self.peers as f64)
    }

    fn percentile(&self, q: f64) -> f64 {
        percentile(&self.cpu_ns, q)
    }

    fn depth_mean(&self) -> f64 {
        if self.rollbacks == 0 { 0.0 } else { self.depth_sum as f64 / self.rollbacks as f64 }
    }

    fn rollbacks_per_sec(&self) -> f64 {
        self.rollbacks as f64 / self.peers as f64 / (self.frames as f64 / 60.0)
    }
}

fn percentile(samples: &[f64], q: f64) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * q).round() as usize;
    v.get(i).copied().unwrap_or(0.0)
}

/// Compares per-frame checksums of every peer over `0..=last`; `None` marks a frame
/// a peer never saved.
fn compare_checksums(sums: &[Vec<Option<u64>>], last: u64, out: &mut Results) {
    if last < out.frames / 2 {
        out.void = Some(format!("only {last} frames confirmed everywhere"));
        return;
    }
    for f in 0..=last as usize {
        let first = sums[0].get(f).copied().flatten();
        if first.is_none() {
            out.void = Some(format!("peer 0 has no checksum for confirmed frame {f}"));
            return;
        }
        for (i, s) in sums.iter().enumerate().skip(1) {
            if s.get(f).copied().flatten() != first {
                out.void = Some(format!("frame {f}: peer {i} differs from peer 0"));
                return;
            }
        }
    }
    out.compared = last + 1;
}

// ---------------------------------------------------------------------------------
// tickwire: P2pSession over Endpoints over the links.

/// Datagrams in flight live in preallocated buffers; the links carry buffer indices.
struct TwNet {
    n: usize,
    links: Vec<LinkConditioner<u32>>,
    bufs: Vec<[u8; MAX_DATAGRAM_SIZE]>,
    meta: Vec<(usize, usize)>,
    free: Vec<u32>,
    addrs: Vec<SocketAddr>,
    /// Scratch: (arrival time, buffer) of the datagrams due at one peer.
    due: Vec<(u64, u32)>,
}

impl TwNet {
    fn new(s: &Scenario) -> Self {
        let n = s.peers;
        let slots = 8_192;
        TwNet {
            n,
            links: (0..n * n)
                .map(|k| LinkConditioner::new(link_config(s.latency_ticks), link_seed(s.seed, k / n, k % n)))
                .collect(),
            bufs: vec![[0; MAX_DATAGRAM_SIZE]; slots],
            meta: vec![(0, 0); slots],
            free: (0..slots as u32).rev().collect(),
            addrs: (0..n)
                .map(|i| SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(127, 0, 2, i as u8 + 1), 7000)))
                .collect(),
            due: Vec::with_capacity(slots),
        }
    }

    /// Puts a datagram on the link `from -> to` at `now`.
    fn send(&mut self, now: u64, from: usize, to: usize, data: &[u8]) {
        let slot = self.free.pop().expect("datagram buffers exhausted");
        self.bufs[slot as usize][..data.len()].copy_from_slice(data);
        self.meta[slot as usize] = (from, data.len());
        let link = &mut self.links[from * self.n + to];
        let before = link.in_flight();
        link.send(now, data.len(), slot);
        if link.in_flight() == before {
            self.free.push(slot); // lost
        }
    }
}

struct TwPeer {
    ep: Endpoint,
    session: Option<P2pSession>,
    game: GameState,
    slots: Vec<GameState>,
    sums: Vec<Option<u64>>,
    ids: Vec<PeerId>,
    desyncs: u64,
    /// Messages delivered with their arrival time (see `deliver_tw`).
    inbox: VecDeque<(u64, NetEvent)>,
}

fn run_tickwire(s: &Scenario, frames: u64, calib: f64) -> Results {
    let n = s.peers;
    let total = WARMUP + frames;
    let mut net = TwNet::new(s);
    let mut peers: Vec<TwPeer> = (0..n)
        .map(|i| TwPeer {
            ep: Endpoint::new(
                EndpointConfig {
                    max_incoming: n as u32 + 2,
                    seed: s.seed ^ (i as u64 + 1),
                    ..EndpointConfig::default()
                },
                0,
            )
            .expect("endpoint config"),
            session: None,
            game: GameState::new(n),
            slots: Vec::new(),
            sums: vec![None; total as usize + 64],
            ids: vec![0; n],
            desyncs: 0,
            inbox: VecDeque::with_capacity(1024),
        })
        .collect();
    let mut buf = vec![0u8; MAX_DATAGRAM_SIZE];
    let mut res = Results::new(frames, n);
    let detail = detail_wanted();
    let mut scratch = Vec::new();
    let stamp = std::env::var_os("BENCH_TW_FRAME_TIMES").is_none_or(|v| v == "0");

    // Transport handshakes (not measured).
    for (i, p) in peers.iter_mut().enumerate() {
        for j in i + 1..n {
            p.ids[j] = p.ep.connect(0, net.addrs[j]).expect("connect");
        }
    }
    let mut frame = 0u64;
    loop {
        let now = frame_time(frame);
        deliver_tw(&mut net, &mut peers, now, None, false);
        for (i, p) in peers.iter_mut().enumerate() {
            p.ep.update(now);
            while let Some(e) = p.ep.poll_event() {
                if let NetEvent::Connected { peer, addr } = e {
                    let j = net.addrs.iter().position(|a| *a == addr).expect("known address");
                    p.ids[j] = peer;
                }
            }
            p.ep.flush(now);
            while let Some((to, len)) = p.ep.poll_transmit(&mut buf) {
                let j = net.addrs.iter().position(|a| *a == to).expect("known address");
                net.send(now, i, j, &buf[..len]);
            }
        }
        frame += 1;
        let connected = peers.iter().enumerate().all(|(i, p)| (0..n).all(|j| j == i || p.ep.is_connected(p.ids[j])));
        if connected {
            break;
        }
        assert!(frame < 60 * 60, "tickwire mesh did not connect");
    }
    let start = frame;
    for (i, p) in peers.iter_mut().enumerate() {
        let kinds: Vec<PlayerKind> =
            (0..n).map(|j| if j == i { PlayerKind::Local } else { PlayerKind::Remote(p.ids[j]) }).collect();
        let mut cfg = P2pConfig { desync_interval: DESYNC_INTERVAL, ..P2pConfig::default() };
        if let Some(k) = std::env::var("BENCH_TW_REDUNDANCY").ok().and_then(|v| v.parse().ok()) {
            cfg.input_redundancy = k;
        }
        let session = P2pSession::new(cfg, &kinds, frame_time(start)).expect("session");
        p.slots = vec![p.game; session.state_slots()];
        p.session = Some(session);
    }

    let mut meters = vec![Meter::default(); n];
    for f in 0..total {
        let now = frame_time(start + f);
        let measuring = f >= WARMUP;
        meters.iter_mut().for_each(|m| *m = Meter::default());
        deliver_tw(&mut net, &mut peers, now, Some(&mut meters), stamp);
        for (i, p) in peers.iter_mut().enumerate() {
            let m = &mut meters[i];
            let session = p.session.as_mut().expect("session");
            let (ticks0, depth0) = (res.ticks, res.depth_sum);
            let mut window_full = false;
            let t = Meter::start();
            p.ep.update(now);
            while let Some((at, e)) = p.inbox.pop_front().or_else(|| p.ep.poll_event().map(|e| (now, e))) {
                match e {
                    NetEvent::Message { peer, data, .. } => {
                        session.handle_message(at, peer, &data);
                        p.ep.recycle(data);
                    }
                    NetEvent::Disconnected { peer, .. } => session.peer_disconnected(peer),
                    NetEvent::Connected { .. } => {}
                }
            }
            let due = session.ticks_due(now);
            m.stop(t);
            for _ in 0..due {
                let tick = session.current_tick() + session.input_delay();
                let input = input_for(s.seed, i, tick as u64, s.period);
                let t = Meter::start();
                session.add_local_input(i, &input).expect("local input");
                let current = session.current_tick();
                window_full |= session.advance() == AdvanceStatus::WindowFull;
                m.stop(t);
                loop {
                    let t = Meter::start();
                    let Some(r) = session.poll_request() else {
                        m.stop(t);
                        break;
                    };
                    m.stop(t);
                    let saved = match r {
                        Request::Save { tick, slot } => {
                            p.slots[slot] = p.game;
                            let c = p.game.checksum();
                            p.sums[tick as usize] = Some(c);
                            Some((tick, c))
                        }
                        Request::Load { tick, slot } => {
                            p.game = p.slots[slot];
                            if measuring {
                                res.rollback((current - tick) as u64);
                            }
                            None
                        }
                        Request::Advance { inputs, .. } => {
                            p.game.step(|q| {
                                let (b, _) = inputs.get(q);
                                [b[0], b[1]]
                            });
                            if measuring {
                                res.ticks += 1;
                            }
                            None
                        }
                        Request::Restore { .. } | Request::DumpState { .. } => unreachable!("no spectators, no desync"),
                    };
                    if let Some((tick, c)) = saved {
                        let t = Meter::start();
                        session.confirm_save(tick, c).expect("save was requested");
                        m.stop(t);
                    }
                }
            }
            let t = Meter::start();
            while let Some(e) = session.poll_event() {
                if matches!(e, Event::Desync { .. }) {
                    p.desyncs += 1;
                }
            }
            session.send_messages(now, &mut p.ep);
            p.ep.flush(now);
            m.stop(t);
            loop {
                let t = Meter::start();
                let Some((to, len)) = p.ep.poll_transmit(&mut buf) else {
                    m.stop(t);
                    break;
                };
                m.stop(t);
                let j = net.addrs.iter().position(|a| *a == to).expect("known address");
                net.send(now, i, j, &buf[..len]);
                if measuring {
                    res.bytes += len as u64;
                    res.datagrams += 1;
                    if detail {
                        classify_tw(&buf[..len], &mut scratch, &mut res);
                    }
                }
            }
            if measuring {
                res.frame_done((res.ticks - ticks0) - (res.depth_sum - depth0), window_full, false);
            }
        }
        if measuring {
            for m in &meters {
                res.sample(m, calib);
            }
        }
    }
    // `ticks` counted every Advance, resimulated ones too: a rollback of depth d
    // resimulates d ticks.
    res.ticks -= res.depth_sum;

    let last = peers.iter().map(|p| p.session.as_ref().expect("session").confirmed_tick() as u64).min().unwrap_or(0);
    let sums: Vec<Vec<Option<u64>>> = peers.iter().map(|p| p.sums.clone()).collect();
    compare_checksums(&sums, last, &mut res);
    res.resends = peers.iter().map(|p| p.session.as_ref().expect("session").stats().input_refreshes).sum();
    if detail {
        for p in &peers {
            let st = p.session.as_ref().expect("session").stats();
            let _ = write!(
                res.peers_line,
                " [tick {} ahead {:+.2} scale {:.4}]",
                st.current_tick, st.frames_ahead, st.time_scale
            );
        }
    }
    let desyncs: u64 = peers.iter().map(|p| p.desyncs).sum();
    if desyncs > 0 && res.void.is_none() {
        res.void = Some(format!("{desyncs} desync events"));
    }
    res
}

fn detail_wanted() -> bool {
    std::env::var_os("BENCH_DETAIL").is_some_and(|v| v != "0")
}

/// Sorts one of tickwire's datagrams into what it carries (BENCH_DETAIL=1).
fn classify_tw(datagram: &[u8], scratch: &mut Vec<u8>, res: &mut Results) {
    let Ok(Packet::Payload { frames, .. }) = decode_packet(datagram, EndpointConfig::default().protocol_id) else {
        res.kind("other packet", datagram.len());
        return;
    };
    let mut inputs = 0;
    for f in FrameReader::new(frames) {
        let f = f.expect("own frames decode");
        if let Ok(d) = message::decode(f.data, 2, scratch) {
            res.input_msgs += 1;
            res.carried += d.header.count as u64;
            res.reports += d.reports().count() as u64;
            inputs += 1;
        }
    }
    let name = match (frames.is_empty(), inputs) {
        (true, _) => "acks/keepalive only (transport)",
        (false, 0) => "transport frames, no input message",
        (false, 1) => "one input message",
        _ => "several input messages",
    };
    res.kind(name, datagram.len());
}

/// Hands every datagram due at `now` to its endpoint (timed as library work when
/// `meters` is given: it is the endpoint's receive path).
///
/// With `stamp`, each datagram is handed over at its arrival time, in arrival order,
/// and the messages it completes go to the peer's inbox stamped with that time: what
/// tickwire's runtime does (its network thread receives as datagrams arrive and
/// stamps `HostEvent::Message::received_at`; the session gets that time). Without,
/// everything due is handed over at the frame time `now`, as a game thread polling
/// a socket once per frame would.
fn deliver_tw(net: &mut TwNet, peers: &mut [TwPeer], now: u64, mut meters: Option<&mut Vec<Meter>>, stamp: bool) {
    let n = net.n;
    for to in 0..n {
        net.due.clear();
        for from in 0..n {
            while let Some((at, slot)) = net.links[from * n + to].poll_timed(now) {
                net.due.push((if stamp { at } else { now }, slot));
            }
        }
        net.due.sort_by_key(|d| d.0); // stable: same-time datagrams keep sender order
        for i in 0..net.due.len() {
            let (at, slot) = net.due[i];
            let (from, len) = net.meta[slot as usize];
            let p = &mut peers[to];
            let t = Meter::start();
            p.ep.handle_datagram(at, net.addrs[from], &net.bufs[slot as usize][..len]);
            if stamp {
                while let Some(e) = p.ep.poll_event() {
                    p.inbox.push_back((at, e));
                }
            }
            if let Some(m) = meters.as_deref_mut() {
                m[to].stop(t);
            }
            net.free.push(slot);
        }
    }
}

// ---------------------------------------------------------------------------------
// GGRS: P2PSession over a NonBlockingSocket on the same links.

struct GgrsConfig;

impl Config for GgrsConfig {
    type Input = [u8; 2];
    type InputPredictor = PredictRepeatLast;
    type State = GameState;
    type Address = usize;
}

/// The simulated network shared by the GGRS peers' sockets.
struct GgrsNet {
    n: usize,
    now: u64,
    links: Vec<LinkConditioner<Message>>,
    inbox: Vec<Vec<(usize, Message)>>,
    measuring: bool,
    bytes: u64,
    datagrams: u64,
    timed_bytes: u64,
    /// Time and allocations spent inside the socket, per peer, since the last reset.
    socket_ns: Vec<u64>,
    socket_sections: Vec<u64>,
    socket_allocs: Vec<u64>,
    scan: DebugScan,
    /// BENCH_DETAIL=1: message kinds and inputs carried, counted here.
    detail: bool,
    diag: Results,
    /// Each peer's frame whose input `advance_frame` is about to send.
    sending_frame: Vec<i32>,
}

struct SimSocket {
    me: usize,
    net: Rc<RefCell<GgrsNet>>,
}

impl NonBlockingSocket<usize> for SimSocket {
    fn send_to(&mut self, msg: &Message, addr: &usize) {
        let t = Meter::start();
        let mut net = self.net.borrow_mut();
        let (size, timed) = net.scan.wire_size(msg);
        if net.measuring {
            net.bytes += size as u64;
            net.datagrams += 1;
            if timed {
                net.timed_bytes += size as u64;
            }
            if net.detail {
                let (name, start) = net.scan.variant();
                net.diag.kind(name, size);
                if let Some(start) = start {
                    let carried = (net.sending_frame[self.me] - start + 1).max(1) as u64;
                    net.diag.input_msgs += 1;
                    net.diag.carried += carried;
                }
                if name == "ChecksumReport" {
                    net.diag.reports += 1;
                }
            }
        }
        let (now, k) = (net.now, self.me * net.n + *addr);
        net.links[k].send(now, size, msg.clone());
        net.socket_ns[self.me] += t.0.elapsed().as_nanos() as u64;
        net.socket_sections[self.me] += 1;
        net.socket_allocs[self.me] += counting_alloc::allocations() - t.1;
    }

    fn receive_all_messages(&mut self) -> Vec<(usize, Message)> {
        let t = Meter::start();
        let mut net = self.net.borrow_mut();
        let out = std::mem::take(&mut net.inbox[self.me]);
        net.socket_ns[self.me] += t.0.elapsed().as_nanos() as u64;
        net.socket_sections[self.me] += 1;
        net.socket_allocs[self.me] += counting_alloc::allocations() - t.1;
        out
    }
}

/// GGRS's `Message` keeps its fields private; its `Debug` text shows them all. This
/// reads that text (written into a fixed buffer, no allocation) and adds up the bytes
/// `bincode::serialize` gives the message, as GGRS's own UDP socket sends it: u16 magic,
/// u32 enum tag, u64 vector lengths, fixed-width integers.
struct DebugScan {
    buf: Box<[u8; 16_384]>,
    len: usize,
}

impl std::fmt::Write for DebugScan {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl DebugScan {
    fn new() -> Self {
        DebugScan { buf: Box::new([0; 16_384]), len: 0 }
    }

    /// The variant of the message last sized, and an input's start frame.
    fn variant(&self) -> (&'static str, Option<i32>) {
        let text = std::str::from_utf8(&self.buf[..self.len]).expect("utf-8");
        let body = &text[text.find("body: ").expect("message body") + 6..];
        let name = [
            "SyncRequest",
            "SyncReply",
            "InputAck",
            "QualityReport",
            "QualityReply",
            "ChecksumReport",
            "KeepAlive",
            "Input",
        ]
        .into_iter()
        .find(|v| body.starts_with(v) && !body[v.len()..].starts_with(|c: char| c.is_ascii_alphanumeric()))
        .expect("known variant");
        let start = (name == "Input").then(|| {
            let at = &body[body.find("start_frame: ").expect("start frame") + 13..];
            at[..at.find(|c: char| c != '-' && !c.is_ascii_digit()).unwrap_or(at.len())].parse().expect("frame number")
        });
        (name, start)
    }

    /// The serialized size of `msg`, and whether it is one of the messages GGRS sends on
    /// wall-clock timers (quality report or reply, keepalive).
    fn wire_size(&mut self, msg: &Message) -> (usize, bool) {
        self.len = 0;
        write!(self, "{msg:?}").expect("message text fits the buffer");
        let text = std::str::from_utf8(&self.buf[..self.len]).expect("utf-8");
        let body = &text[text.find("body: ").expect("message body") + 6..];
        let variant = &body[..body.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(body.len())];
        let head = 2 + 4; // magic, variant tag
        match variant {
            "SyncRequest" | "SyncReply" | "InputAck" => (head + 4, false),
            "QualityReport" => (head + 2 + 16, true),
            "QualityReply" => (head + 16, true),
            "ChecksumReport" => (head + 16 + 4, false),
            "KeepAlive" => (head, true),
            "Input" => {
                let statuses = body.matches("ConnectionStatus {").count();
                let hex = &body[body.find("bytes: 0x").expect("input bytes") + 9..];
                let digits = hex.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(hex.len());
                // status vec (len + (bool, i32) each), disconnect_requested, start_frame,
                // ack_frame, bytes vec (len + bytes)
                (head + 8 + statuses * 5 + 1 + 4 + 4 + 8 + digits / 2, false)
            }
            other => panic!("unknown GGRS message variant {other}"),
        }
    }
}

fn run_ggrs(s: &Scenario, frames: u64, calib: f64) -> Results {
    let n = s.peers;
    let total = WARMUP + frames;
    let net = Rc::new(RefCell::new(GgrsNet {
        n,
        now: 0,
        links: (0..n * n)
            .map(|k| LinkConditioner::new(link_config(s.latency_ticks), link_seed(s.seed, k / n, k % n)))
            .collect(),
        inbox: (0..n).map(|_| Vec::new()).collect(),
        measuring: false,
        bytes: 0,
        datagrams: 0,
        timed_bytes: 0,
        socket_ns: vec![0; n],
        socket_sections: vec![0; n],
        socket_allocs: vec![0; n],
        scan: DebugScan::new(),
        detail: detail_wanted(),
        diag: Results::new(0, 0),
        sending_frame: vec![0; n],
    }));
    let mut sessions: Vec<P2PSession<GgrsConfig>> = (0..n)
        .map(|i| {
            let mut b = SessionBuilder::<GgrsConfig>::new()
                .with_num_players(n)
                .expect("players")
                .with_max_prediction_window(8)
                .with_input_delay(0)
                .with_fps(60)
                .expect("fps")
                .with_desync_detection_mode(DesyncDetection::On { interval: DESYNC_INTERVAL });
            for j in 0..n {
                let kind = if j == i { PlayerType::Local } else { PlayerType::Remote(j) };
                b = b.add_player(kind, j).expect("player");
            }
            b.start_p2p_session(SimSocket { me: i, net: net.clone() }).expect("session")
        })
        .collect();
    let mut games = vec![GameState::new(n); n];
    let mut sums = vec![vec![None; total as usize + 64]; n];
    let mut skip = vec![0u32; n];
    let mut desyncs = 0u64;
    let mut res = Results::new(frames, n);

    // Sync handshake (not measured). GGRS retries on wall-clock timers: let time pass.
    let mut frame = 0u64;
    while sessions.iter().any(|s| s.current_state() != SessionState::Running) {
        deliver_ggrs(&net, frame_time(frame));
        for s in sessions.iter_mut() {
            s.poll_remote_clients();
            s.events().for_each(drop);
        }
        frame += 1;
        std::thread::sleep(Duration::from_millis(1));
        assert!(frame < 60 * 60, "GGRS sessions did not synchronize");
    }
    let start = frame;

    let mut meters = vec![Meter::default(); n];
    for f in 0..total {
        let now = frame_time(start + f);
        let measuring = f >= WARMUP;
        deliver_ggrs(&net, now);
        {
            let mut g = net.borrow_mut();
            g.measuring = measuring;
            g.socket_ns.iter_mut().for_each(|x| *x = 0);
            g.socket_sections.iter_mut().for_each(|x| *x = 0);
            g.socket_allocs.iter_mut().for_each(|x| *x = 0);
        }
        for (i, session) in sessions.iter_mut().enumerate() {
            let m = &mut meters[i];
            *m = Meter::default();
            let game = &mut games[i];
            let (ticks0, depth0) = (res.ticks, res.depth_sum);
            let skipped = skip[i] > 0;
            if skipped {
                skip[i] -= 1;
                let t = Meter::start();
                session.poll_remote_clients();
                m.stop(t);
            } else {
                net.borrow_mut().sending_frame[i] = session.current_frame();
                let input = input_for(s.seed, i, session.current_frame() as u64, s.period);
                let t = Meter::start();
                session.add_local_input(i, input).expect("local input");
                let current = session.current_frame();
                let requests = session.advance_frame().expect("advance_frame");
                m.stop(t);
                for r in requests {
                    match r {
                        GgrsRequest::SaveGameState { cell, frame } => {
                            let c = game.checksum();
                            sums[i][frame as usize] = Some(c);
                            let state = *game;
                            let t = Meter::start();
                            cell.save(frame, Some(state), Some(c as u128));
                            drop(cell);
                            m.stop(t);
                        }
                        GgrsRequest::LoadGameState { cell, frame } => {
                            let t = Meter::start();
                            let state = cell.load().expect("saved state");
                            drop(cell);
                            m.stop(t);
                            *game = state;
                            if measuring {
                                res.rollback((current - frame) as u64);
                            }
                        }
                        GgrsRequest::AdvanceFrame { inputs } => {
                            game.step(|q| inputs[q].0);
                            if measuring {
                                res.ticks += 1;
                            }
                            let t = Meter::start();
                            drop(inputs);
                            m.stop(t);
                        }
                    }
                }
            }
            let t = Meter::start();
            for e in session.events() {
                match e {
                    GgrsEvent::WaitRecommendation { skip_frames } => skip[i] = skip_frames,
                    GgrsEvent::DesyncDetected { .. } => desyncs += 1,
                    _ => {}
                }
            }
            m.stop(t);
            if measuring {
                res.frame_done((res.ticks - ticks0) - (res.depth_sum - depth0), !skipped, skipped);
            }
        }
        if measuring {
            let g = net.borrow();
            for (i, m) in meters.iter_mut().enumerate() {
                // Take out the socket's share (its time, its timer calls, its allocations).
                m.ns = m.ns.saturating_sub(g.socket_ns[i]);
                m.sections += g.socket_sections[i];
                m.allocs -= g.socket_allocs[i];
                res.sample(m, calib);
            }
        }
    }
    res.ticks -= res.depth_sum;
    {
        let g = net.borrow();
        res.bytes = g.bytes;
        res.datagrams = g.datagrams;
        res.timed_bytes = g.timed_bytes;
        res.kinds = g.diag.kinds.clone();
        res.input_msgs = g.diag.input_msgs;
        res.carried = g.diag.carried;
        res.reports = g.diag.reports;
    }
    // `confirmed_frame` is the last frame whose inputs are all in: states up to the
    // next one are final.
    let last = sessions.iter().map(|s| s.confirmed_frame().max(0) as u64 + 1).min().unwrap_or(0);
    compare_checksums(&sums, last, &mut res);
    if desyncs > 0 && res.void.is_none() {
        res.void = Some(format!("{desyncs} desync events"));
    }
    res
}

/// Moves every message due at `now` into its receiver's inbox.
fn deliver_ggrs(net: &Rc<RefCell<GgrsNet>>, now: u64) {
    let mut g = net.borrow_mut();
    g.now = now;
    let n = g.n;
    for k in 0..n * n {
        while let Some(msg) = g.links[k].poll(now) {
            g.inbox[k % n].push((k / n, msg));
        }
    }
}

// ---------------------------------------------------------------------------------
// The table.

fn show(r: &Results, f: impl Fn(&Results) -> String) -> String {
    if r.void.is_some() { "VOID".into() } else { f(r) }
}

fn ratio(a: f64, b: f64) -> String {
    if b == 0.0 { if a == 0.0 { "-".into() } else { "inf".into() } } else { format!("{:.2}", a / b) }
}

struct Tally {
    runs: usize,
    cpu50: usize,
    cpu99: usize,
    raw50: usize,
    raw99: usize,
    zero_allocs: usize,
    bytes: usize,
    bytes_corrected: usize,
    void: usize,
}

/// BENCH_ONLY="P/per/L,..." (each part a number or `*`) runs only those rows.
fn selected(only: &str, peers: usize, period: u64, latency: u64) -> bool {
    let want = [peers as u64, period, latency];
    only.is_empty()
        || only.split(',').any(|pat| {
            let parts: Vec<&str> = pat.trim().split('/').collect();
            parts.len() == 3 && parts.iter().zip(want).all(|(p, w)| *p == "*" || p.parse() == Ok(w))
        })
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` (the test suite) runs this
    // binary without it: then a smoke run of two short rows checks that the harness
    // still works and both libraries still agree, without the suite paying for the
    // full table (minutes in a debug build).
    let smoke = !std::env::args().any(|a| a == "--bench");
    let frames: u64 =
        std::env::var("BENCH_FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(if smoke { 120 } else { 3_000 });
    let only = std::env::var("BENCH_ONLY").unwrap_or(if smoke { "2/1/3,4/5/0".to_string() } else { String::new() });
    if smoke {
        println!(
            "smoke run (no --bench): figures mean nothing here; `cargo bench -p tickwire-lab --bench versus_ggrs` measures"
        );
    }
    let detail = detail_wanted();
    let calib = calibrate();
    println!(
        "tickwire vs GGRS 0.13.0: {frames} measured frames per run after {WARMUP} warm-up frames, 60 Hz, one player per peer"
    );
    println!(
        "link per direction: latency L ticks + uniform jitter 0-{} ms, {}% loss, same seeds for both; timer overhead {calib:.1} ns per timed call subtracted",
        JITTER_MAX_US / 1000,
        LOSS * 100.0
    );
    println!();
    println!(
        "{:>2} {:>3} {:>3} | {:<8} | {:>9} {:>9} | {:>11} | {:>8} {:>6} | {:>7} {:>4} {:>6} | {:>6} | sync",
        "P",
        "per",
        "L",
        "library",
        "cpu p50",
        "cpu p99",
        "allocs/f",
        "B/f/peer",
        "dg/f",
        "rb mean",
        "max",
        "rb/s",
        "tick/f"
    );
    println!("{}", "-".repeat(120));
    let mut tally = Tally {
        runs: 0,
        cpu50: 0,
        cpu99: 0,
        raw50: 0,
        raw99: 0,
        zero_allocs: 0,
        bytes: 0,
        bytes_corrected: 0,
        void: 0,
    };
    let wall = Instant::now();
    let mut seed = 1;
    for peers in [2usize, 4] {
        for period in [1u64, 5, 30] {
            for latency_ticks in [0u64, 3, 6, 10] {
                seed += 1;
                if !selected(&only, peers, period, latency_ticks) {
                    continue;
                }
                let s = Scenario { peers, period, latency_ticks, seed };
                let tw = run_tickwire(&s, frames, calib);
                let gg = run_ggrs(&s, frames, calib);
                for (name, r) in [("tickwire", &tw), ("ggrs", &gg)] {
                    let lead = if name == "tickwire" {
                        format!("{peers:>2} {period:>3} {latency_ticks:>3}")
                    } else {
                        " ".repeat(10)
                    };
                    println!(
                        "{lead} | {name:<8} | {:>9} {:>9} | {:>11} | {:>8} {:>6} | {:>7} {:>4} {:>6} | {:>6} | {}",
                        show(r, |r| format!("{:.2}µs", r.percentile(0.50) / 1e3)),
                        show(r, |r| format!("{:.2}µs", r.percentile(0.99) / 1e3)),
                        show(r, |r| if r.allocs < 100 {
                            format!("{:.3} ({})", r.per_peer_frame(r.allocs), r.allocs)
                        } else {
                            format!("{:.2}", r.per_peer_frame(r.allocs))
                        }),
                        show(r, |r| format!("{:.1}", r.per_peer_frame(r.bytes))),
                        show(r, |r| format!("{:.2}", r.per_peer_frame(r.datagrams))),
                        show(r, |r| format!("{:.2}", r.depth_mean())),
                        show(r, |r| format!("{}", r.depth_max)),
                        show(r, |r| format!("{:.1}", r.rollbacks_per_sec())),
                        show(r, |r| format!("{:.3}", r.ticks as f64 / (r.frames as f64 * r.peers as f64))),
                        match &r.void {
                            None => format!("ok ({} frames equal)", r.compared),
                            Some(why) => format!("VOID: {why}"),
                        },
                    );
                    if detail {
                        println!("{:>23} {}", "", r.detail());
                    }
                }
                tally.runs += 1;
                if tw.void.is_some() || gg.void.is_some() {
                    tally.void += 1;
                    println!("{:>10} | {:<8} | VOID", "", "tw/ggrs");
                    continue;
                }
                let (c50, c99) = (tw.percentile(0.5) / gg.percentile(0.5), tw.percentile(0.99) / gg.percentile(0.99));
                let (tb, gb) = (tw.per_peer_frame(tw.bytes), gg.per_peer_frame(gg.bytes));
                // GGRS's quality traffic at a real 60 Hz: one report (24 B) and one reply
                // (22 B) per remote peer per 200 ms = 12 frames; the measured part replaced.
                let gb_corrected = gb - gg.per_peer_frame(gg.timed_bytes) + (peers - 1) as f64 * 46.0 / 12.0;
                tally.cpu50 += (c50 <= 0.5) as usize;
                tally.cpu99 += (c99 <= 0.5) as usize;
                tally.raw50 += (percentile(&tw.cpu_raw_ns, 0.5) <= 0.5 * percentile(&gg.cpu_raw_ns, 0.5)) as usize;
                tally.raw99 += (percentile(&tw.cpu_raw_ns, 0.99) <= 0.5 * percentile(&gg.cpu_raw_ns, 0.99)) as usize;
                tally.zero_allocs += (tw.allocs == 0) as usize;
                tally.bytes += (tb <= gb) as usize;
                tally.bytes_corrected += (tb <= gb_corrected) as usize;
                println!(
                    "{:>10} | {:<8} | {:>9} {:>9} | {:>11} | {:>8} {:>6} | {:>7} {:>4} {:>6} | {:>6} | GGRS B/f/peer with 60 Hz quality reports: {gb_corrected:.1} (ratio {})",
                    "",
                    "tw/ggrs",
                    format!("{c50:.2}"),
                    format!("{c99:.2}"),
                    ratio(tw.per_peer_frame(tw.allocs), gg.per_peer_frame(gg.allocs)),
                    ratio(tb, gb),
                    ratio(tw.per_peer_frame(tw.datagrams), gg.per_peer_frame(gg.datagrams)),
                    ratio(tw.depth_mean(), gg.depth_mean()),
                    ratio(tw.depth_max as f64, gg.depth_max as f64),
                    ratio(tw.rollbacks_per_sec(), gg.rollbacks_per_sec()),
                    ratio(tw.ticks as f64, gg.ticks as f64),
                    ratio(tb, gb_corrected),
                );
            }
        }
    }
    println!();
    let ok = tally.runs - tally.void;
    println!("targets over the {ok} runs not void ({} void):", tally.void);
    println!("  library CPU p50 <= 0.5 x GGRS: {}/{ok};  p99 <= 0.5 x GGRS: {}/{ok}", tally.cpu50, tally.cpu99);
    println!(
        "    (the same with the timer overhead left in, which charges tickwire for its more numerous timed calls: p50 {}/{ok}, p99 {}/{ok})",
        tally.raw50, tally.raw99
    );
    println!("  0 heap allocations per frame in steady state (tickwire): {}/{ok}", tally.zero_allocs);
    println!(
        "  wire bytes per frame <= GGRS: {}/{ok} as measured, {}/{ok} against GGRS with its quality reports at a real 60 Hz",
        tally.bytes, tally.bytes_corrected
    );
    println!("total wall time {:.1} s", wall.elapsed().as_secs_f64());
    if smoke && (tally.runs == 0 || tally.void > 0) {
        eprintln!(
            "smoke run failed: {} of {} runs void (checksums differ or a library stalled)",
            tally.void, tally.runs
        );
        std::process::exit(1);
    }
}
