//! The network scenarios S0-S9 of ticksync.md section 3.1, and the far links
//! (F1, F2) and wide matches (W1-W4) that check a relay holds at scale.

use tickwire_proto::{JitterModel, LinkConfig, LossModel, Micros};

const MS: u64 = 1_000;
const SEC: u64 = 1_000_000;

/// Something that changes during a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change {
    /// New uplink (client to server) configuration.
    Up(LinkConfig),
    /// New downlink configuration.
    Down(LinkConfig),
    /// New client clock rate error, ppm.
    ClientDrift(f64),
    /// The server stops for this long (its ticks then catch up).
    ServerHitch(Micros),
    /// The client's frame loop stops for this long.
    ClientHitch(Micros),
    /// The client renders at this many frames per second from now on.
    ClientFps(f64),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub id: &'static str,
    pub about: &'static str,
    pub duration: Micros,
    pub up: LinkConfig,
    pub down: LinkConfig,
    pub client_drift_ppm: f64,
    pub server_drift_ppm: f64,
    /// Timed changes, in order.
    pub changes: Vec<(Micros, Change)>,
    /// Clients in the match: the measured one (player 0) and `clients - 1` more on
    /// links like its own, each sending inputs of `input_size` bytes that change
    /// every tick. Only tickwire runs a match of more than one client (the baselines
    /// model one client's time sync, not a server's step stream).
    pub clients: usize,
    /// Bytes per input (at least 4: the measured client's inputs start with their
    /// sequence number).
    pub input_size: usize,
}

fn link(latency_ms: u64, sigma_ms: f64) -> LinkConfig {
    let jitter = if sigma_ms > 0.0 { JitterModel::Gaussian { sigma_us: sigma_ms * 1000.0 } } else { JitterModel::None };
    LinkConfig { latency_us: latency_ms * MS, jitter, ..LinkConfig::perfect() }
}

fn base(id: &'static str, about: &'static str, up: LinkConfig, down: LinkConfig) -> Scenario {
    Scenario {
        id,
        about,
        duration: 300 * SEC,
        up,
        down,
        client_drift_ppm: 0.0,
        server_drift_ppm: 0.0,
        changes: Vec::new(),
        clients: 1,
        input_size: 4,
    }
}

/// The far links and wide matches that check a relay holds at scale, 300 s like the others.
fn scale() -> Vec<Scenario> {
    let far = LinkConfig { latency_us: 400 * MS, ..LinkConfig::perfect() };
    let far_lossy = LinkConfig {
        latency_us: 400 * MS,
        jitter: JitterModel::Uniform { max_us: 200 * MS },
        loss: LossModel::Bernoulli { p: 0.25 },
        duplicate: 0.25,
        reorder: 0.10,
        reorder_delay_us: 100 * MS,
        ..LinkConfig::perfect()
    };
    let busy = LinkConfig {
        latency_us: 70 * MS,
        jitter: JitterModel::Uniform { max_us: 60 * MS },
        loss: LossModel::Bernoulli { p: 0.08 },
        ..LinkConfig::perfect()
    };
    let perfect = LinkConfig::perfect();
    let wide =
        |id, about, clients, input_size, l: LinkConfig| Scenario { clients, input_size, ..base(id, about, l, l) };
    vec![
        wide("F1", "far link: 400 ms each way, no loss, 3 clients", 3, 4, far),
        wide(
            "F2",
            "far link: 500±100 ms each way, 25% loss, 25% duplicates, 10% reordering, 3 clients",
            3,
            4,
            far_lossy,
        ),
        wide("W1", "wide match: 16 clients x 64 B inputs, perfect link", 16, 64, perfect),
        wide("W2", "wide match: 64 clients x 16 B inputs, perfect link", 64, 16, perfect),
        wide("W3", "wide match: 16 clients on 100±30 ms, 8% loss", 16, 4, busy),
        wide("W4", "wide match: 32 clients on 100±30 ms, 8% loss", 32, 4, busy),
    ]
}

/// Every scenario, in order.
pub fn all() -> Vec<Scenario> {
    let s1 = link(50, 5.0);
    let lossy = |p: f64| LinkConfig { loss: LossModel::Bernoulli { p }, ..s1 };
    let heavy = LinkConfig {
        latency_us: 40 * MS,
        jitter: JitterModel::pareto_with_p99_p999(30_000.0, 80_000.0)
            .unwrap_or(JitterModel::Gaussian { sigma_us: 10_000.0 }),
        loss: LossModel::bursty(0.01, 3.0),
        ..LinkConfig::perfect()
    };
    let step =
        |d: i64, l: LinkConfig| LinkConfig { latency_us: (l.latency_us as i64 + d * MS as i64).max(0) as u64, ..l };
    let mut v = vec![
        base("S0", "loopback, same process", link(0, 0.0), link(0, 0.0)),
        base("S1", "50/50 ms, gaussian jitter 5 ms", s1, s1),
        base("S2", "heavy-tailed jitter (p99 30, p99.9 80 ms), bursty loss 1%", heavy, heavy),
        base("S3a", "S1 + 1% loss", lossy(0.01), lossy(0.01)),
        base("S3", "S1 + 5% loss", lossy(0.05), lossy(0.05)),
        base("S3c", "S1 + 33% loss", lossy(0.33), lossy(0.33)),
        base(
            "S3d",
            "S1 + Gilbert-Elliott loss 5%, bursts of 3",
            LinkConfig { loss: LossModel::bursty(0.05, 3.0), ..s1 },
            LinkConfig { loss: LossModel::bursty(0.05, 3.0), ..s1 },
        ),
        base("S4", "asymmetric 80 ms up / 20 ms down", link(80, 5.0), link(20, 5.0)),
    ];
    let mut s5 = base("S5", "+50 ms step both ways at 60 s", s1, s1);
    s5.changes = vec![(60 * SEC, Change::Up(step(50, s1))), (60 * SEC, Change::Down(step(50, s1)))];
    v.push(s5);
    let mut s5b = base("S5b", "+150 ms up at 60 s, -100 ms down at 150 s", s1, s1);
    s5b.up = step(50, s1);
    s5b.down = step(50, s1);
    s5b.changes = vec![(60 * SEC, Change::Up(step(200, s1))), (150 * SEC, Change::Down(step(-50, s1)))];
    v.push(s5b);
    let mut s5c = base("S5c", "route flap: +/-40 ms every 10 s", s1, s1);
    s5c.changes = (1..30)
        .map(|k| {
            let d = if k % 2 == 1 { 40 } else { 0 };
            (k * 10 * SEC, Change::Up(step(d, s1)))
        })
        .flat_map(|(t, c)| {
            let Change::Up(l) = c else { unreachable!() };
            [(t, Change::Up(l)), (t, Change::Down(l))]
        })
        .collect();
    v.push(s5c);
    let mut s6 = base("S6", "client +1000 ppm, server -1000 ppm... then a drift step", s1, s1);
    s6.about = "clock drift: client +1000 ppm vs server, flipping to -1000 ppm at 150 s";
    s6.client_drift_ppm = 1000.0;
    s6.changes = vec![(150 * SEC, Change::ClientDrift(-1000.0))];
    v.push(s6);
    let mut s6b = base("S6b", "clock drift: client -100 ppm", s1, s1);
    s6b.client_drift_ppm = -100.0;
    v.push(s6b);
    let reorder = LinkConfig { reorder: 0.02, reorder_delay_us: 20 * MS, duplicate: 0.01, ..s1 };
    v.push(base("S7", "reordering 2%, duplication 1%", reorder, reorder));
    let mut s8 = base("S8", "server hitch 200 ms every 30 s; client hitch 2 s; client at 10 fps for 10 s", s1, s1);
    s8.changes = (1..10).map(|k| (k * 30 * SEC, Change::ServerHitch(200 * MS))).collect();
    s8.changes.push((100 * SEC, Change::ClientHitch(2 * SEC)));
    s8.changes.push((200 * SEC, Change::ClientFps(10.0)));
    s8.changes.push((210 * SEC, Change::ClientFps(144.0)));
    s8.changes.sort_by_key(|c| c.0);
    v.push(s8);
    v.push(base("S9", "RTT 400 ms (200/200), jitter 5 ms", link(200, 5.0), link(200, 5.0)));
    v.extend(scale());
    v
}

/// Looks a scenario up by id (case-insensitive).
pub fn by_id(id: &str) -> Option<Scenario> {
    all().into_iter().find(|s| s.id.eq_ignore_ascii_case(id))
}
