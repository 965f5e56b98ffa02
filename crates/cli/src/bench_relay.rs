//! `tickwire bench relay`: what a relay server costs per tick and per client, measured
//! on the protocol crate's sessions in the deterministic simulator (no sockets, no
//! threads): one [`RelayServerSession`] and N [`RelayClientSession`]s over a
//! [`SimNet`], each with a small engine that answers its requests. Not a test: it
//! prints numbers, it asserts nothing.
//!
//! - **Server CPU per tick**: wall time spent inside the server session's own calls
//!   (`on_event`, `ticks_due`, `advance`, running its requests, `poll_event`,
//!   `send_messages`, which includes the endpoint's sealing of what it sends), divided
//!   by the server ticks run. The clients, the simulated links and the endpoint's
//!   receive path are not counted.
//! - **Bytes per client per second**: UDP payload bytes the server sent to each client
//!   (down) and each client sent to the server (up), counted by the simulator as they
//!   leave the sender, averaged over the clients and the run.
//! - **Slowest tick rate**: the slowest client's authoritative tick, ticks per second
//!   over the second half of the run (60 when it keeps up with the server).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::bench::BUILD;

use tickwire_proto::{
    EndpointConfig, GameShape, JitterModel, LinkConfig, LossModel, Micros, NodeId, RelayClientSession,
    RelayClientSessionConfig, RelayServerSession, RelayServerSessionConfig, Request, ServerSessionEvent, SimNet, Tick,
};

const MS: u64 = 1_000;
const SECOND: u64 = 1_000_000;
/// The simulated frame every session runs at.
const FRAME_US: u64 = 4 * MS;

/// One row of the table.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub label: String,
    pub clients: usize,
    pub input_size: usize,
    /// Every byte of a client's input changes every this many ticks (1: every tick).
    pub input_period: u64,
    /// Each direction of every client's link.
    pub link: LinkConfig,
    /// Game time.
    pub seconds: u64,
}

/// A link of `latency_ms` ± `jitter_ms` one way (uniform), with `loss_pct` loss.
pub fn link(latency_ms: f64, jitter_ms: f64, loss_pct: f64) -> LinkConfig {
    let floor = (latency_ms - jitter_ms).max(0.0);
    LinkConfig {
        latency_us: (floor * 1000.0) as u64,
        jitter: if jitter_ms > 0.0 {
            JitterModel::Uniform { max_us: (2.0 * jitter_ms * 1000.0) as u64 }
        } else {
            JitterModel::None
        },
        loss: if loss_pct > 0.0 { LossModel::Bernoulli { p: loss_pct / 100.0 } } else { LossModel::None },
        ..LinkConfig::perfect()
    }
}

/// The preset scale runs: many clients on a perfect link, a far lossy link, and 16 and 32
/// clients on a lossy 100 ms link.
pub fn presets(seconds: u64) -> Vec<Scenario> {
    let row = |label: &str, clients, input_size, link| Scenario {
        label: label.to_string(),
        clients,
        input_size,
        input_period: 1,
        link,
        seconds,
    };
    let far = LinkConfig { duplicate: 0.25, reorder: 0.10, reorder_delay_us: 100 * MS, ..link(500.0, 100.0, 25.0) };
    vec![
        row("perfect link", 64, 16, LinkConfig::perfect()),
        row("perfect link", 16, 64, LinkConfig::perfect()),
        row("500±100 ms, 25% loss/dup, 10% reorder", 3, 2, far),
        row("100±30 ms, 8% loss", 16, 2, link(100.0, 30.0, 8.0)),
        row("100±30 ms, 8% loss", 32, 2, link(100.0, 30.0, 8.0)),
    ]
}

/// What one run measured.
pub struct Row {
    /// Server ticks and the time in its calls, up to the first kick (or the end).
    pub server_ticks: Tick,
    pub server_time: Duration,
    /// Bytes per client per second, up to the first kick (or the end).
    pub down_bps: f64,
    pub up_bps: f64,
    pub slowest_rate: f64,
    pub kicks: usize,
    /// Game time of the first kick, seconds.
    pub first_kick: Option<f64>,
}

/// Runs the scenarios and prints the table.
pub fn run(scenarios: &[Scenario], argv: &[String]) -> ExitCode {
    println!("$ tickwire {}", argv.join(" "));
    println!(
        "build: {BUILD}; relay server and client sessions on the link simulator, 60 Hz, inputs changing every tick\n\
         server CPU per tick: wall time in the server session's calls (on_event, ticks_due, advance, its requests,\n\
         send_messages) / ticks; bytes: UDP payload per client per second, both up to the first kick if\n\
         any; tick rate: the slowest client's authoritative ticks per second over the second half of the run\n"
    );
    println!(
        "{:<38} {:>7} {:>6} {:>7} {:>14} {:>9} {:>9} {:>12} {:>6} {:>13}",
        "link",
        "clients",
        "input",
        "game s",
        "server µs/tick",
        "down B/s",
        "up B/s",
        "slowest tk/s",
        "kicks",
        "first kick s"
    );
    for sc in scenarios {
        let r = measure(sc);
        println!(
            "{:<38} {:>7} {:>4} B {:>7} {:>14.1} {:>9.0} {:>9.0} {:>12.2} {:>6} {:>13}",
            sc.label,
            sc.clients,
            sc.input_size,
            sc.seconds,
            r.server_time.as_secs_f64() * 1e6 / r.server_ticks.max(1) as f64,
            r.down_bps,
            r.up_bps,
            r.slowest_rate,
            r.kicks,
            r.first_kick.map_or("-".to_string(), |t| format!("{t:.1}")),
        );
    }
    ExitCode::SUCCESS
}

/// An engine that answers requests: its state is a running hash of every input it
/// advanced with, its snapshots are copies of that hash.
struct HashEngine {
    state: u64,
    slots: Vec<u64>,
}

impl HashEngine {
    fn new(slots: usize) -> Self {
        HashEngine { state: 0xcbf2_9ce4_8422_2325, slots: vec![0; slots.max(1)] }
    }

    /// Runs `r`; returns a save's checksum or a dump's bytes for the session.
    fn apply(&mut self, r: Request<'_>) -> Answer {
        match r {
            Request::Save { tick, slot } => {
                self.slots[slot] = self.state;
                Answer::Saved(tick, self.state)
            }
            Request::Load { slot, .. } => {
                self.state = self.slots[slot];
                Answer::None
            }
            Request::Advance { tick, inputs, .. } => {
                let mut h = self.state ^ u64::from(tick);
                for &b in inputs.bytes() {
                    h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
                }
                self.state = h;
                Answer::None
            }
            Request::Restore { state, .. } => {
                self.state = state.get(..8).map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
                Answer::None
            }
            Request::DumpState { tick, slot } => Answer::State(tick, self.slots[slot]),
        }
    }
}

enum Answer {
    None,
    Saved(Tick, u64),
    State(Tick, u64),
}

fn input(c: usize, k: u64, period: u64, out: &mut [u8]) {
    let mut x =
        (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (k / period.max(1)).wrapping_mul(0xD1B5_4A32_D192_ED03);
    for b in out.iter_mut() {
        x ^= x >> 29;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        *b = (x >> 56) as u8;
    }
}

struct Client {
    node: NodeId,
    session: RelayClientSession,
    engine: HashEngine,
    pushed: u64,
}

/// Runs one scenario.
pub fn measure(sc: &Scenario) -> Row {
    let game = GameShape::new(sc.clients, sc.input_size);
    let scfg = RelayServerSessionConfig::new(game);
    let ccfg = RelayClientSessionConfig::new(game);
    let mut net = SimNet::new(15, sc.link);
    let sn = net.add(EndpointConfig { max_incoming: sc.clients as u32 + 4, ..EndpointConfig::default() });
    let mut server = RelayServerSession::new(scfg, net.now()).expect("server config");
    let mut server_engine = HashEngine::new(server.state_slots());
    let saddr = net.addr(sn);
    let mut clients: Vec<Client> = (0..sc.clients)
        .map(|_| {
            let node = net.add(EndpointConfig::default());
            let mut session = RelayClientSession::new(ccfg.clone()).expect("client config");
            let now = net.local_now(node);
            session.connect(now, net.endpoint(node), saddr).expect("connect");
            let engine = HashEngine::new(session.state_slots());
            Client { node, session, engine, pushed: 0 }
        })
        .collect();
    let mut server_time = Duration::ZERO;
    let mut kicks = 0;
    // (game time, server ticks, server time, bytes down, bytes up) at the first kick.
    let mut at_kick: Option<(Micros, Tick, Duration, u64, u64)> = None;
    let totals = |net: &SimNet, clients: &[Client]| {
        let down: u64 = clients.iter().map(|c| net.traffic(sn, c.node).bytes).sum();
        let up: u64 = clients.iter().map(|c| net.traffic(c.node, sn).bytes).sum();
        (down, up)
    };
    let mut buf = [0u8; 64];
    let half = sc.seconds * SECOND / 2;
    let mut at_half: Option<Vec<Tick>> = None;
    let end = sc.seconds * SECOND;
    while net.now() < end {
        net.step(FRAME_US);
        let now: Micros = net.local_now(sn);
        let events = net.take_events(sn);
        let t0 = Instant::now();
        for e in events {
            server.on_event(now, net.endpoint(sn), e);
        }
        for _ in 0..server.ticks_due(now) {
            server.advance();
            while let Some(r) = server.poll_request() {
                match server_engine.apply(r) {
                    Answer::Saved(t, c) => server.confirm_save(t, c).expect("save was requested"),
                    Answer::State(t, s) => server.provide_state(t, &s.to_le_bytes()).expect("dump was requested"),
                    Answer::None => {}
                }
            }
        }
        while let Some(e) = server.poll_event() {
            kicks += usize::from(matches!(e, ServerSessionEvent::PlayerKicked { .. }));
        }
        server.send_messages(now, net.endpoint(sn));
        server_time += t0.elapsed();
        if kicks > 0 && at_kick.is_none() {
            let (down, up) = totals(&net, &clients);
            at_kick = Some((net.now(), server.last_tick(), server_time, down, up));
        }
        for (i, c) in clients.iter_mut().enumerate() {
            let now = net.local_now(c.node);
            for e in net.take_events(c.node) {
                c.session.on_event(now, net.endpoint(c.node), e);
            }
            for _ in 0..c.session.ticks_due(now, net.endpoint(c.node)) {
                input(i, c.pushed, sc.input_period, &mut buf[..sc.input_size]);
                c.pushed += 1;
                c.session.add_local_input(&buf[..sc.input_size]).expect("input size");
                c.session.advance();
                while let Some(r) = c.session.poll_request() {
                    if let Answer::Saved(t, s) = c.engine.apply(r) {
                        c.session.confirm_save(t, s).expect("save was requested");
                    }
                }
            }
            while c.session.poll_event().is_some() {}
            c.session.send_messages(now, net.endpoint(c.node));
        }
        if at_half.is_none() && net.now() >= half {
            at_half = Some(clients.iter().map(|c| c.session.authoritative_tick()).collect());
        }
    }
    let secs = net.now() as f64 / SECOND as f64;
    let window = secs - half as f64 / SECOND as f64;
    let at_half = at_half.unwrap_or_default();
    let slowest_rate = clients
        .iter()
        .zip(&at_half)
        .map(|(c, &a)| c.session.authoritative_tick().saturating_sub(a) as f64 / window)
        .fold(f64::INFINITY, f64::min);
    let n = sc.clients as f64;
    let (down, up) = totals(&net, &clients);
    let (until, ticks, time, down, up) = at_kick.unwrap_or((net.now(), server.last_tick(), server_time, down, up));
    let secs = until as f64 / SECOND as f64;
    Row {
        server_ticks: ticks,
        server_time: time,
        down_bps: down as f64 / n / secs,
        up_bps: up as f64 / n / secs,
        slowest_rate,
        kicks,
        first_kick: at_kick.map(|k| k.0 as f64 / SECOND as f64),
    }
}
