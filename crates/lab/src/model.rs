//! What the lab runs and what it records: the controllers it compares, the fixed
//! parameters of a run, and the ground truth of one run (when each input was sampled,
//! reached the server and was consumed; what each server tick did; frame samples)
//! that the metrics score against the oracle.
//!
//! tickwire's rows run the product's relay sessions ([`super::relay`]); the baselines
//! are models of other designs on the same kind of seeded links ([`super::baselines`]).

use tickwire_proto::{LatePolicy, Micros, StepKind, Tick};

use super::scenario::{Change, Scenario};

/// The time-sync designs the lab compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Controller {
    /// tickwire: the product's RelayServer and RelayClient as configured by default
    /// (margin-quantile lead loop, adaptive late policy, redundancy planner,
    /// interpolation), over the real transport.
    Tickwire,
    /// (a) seed 000: fixed rule, two send intervals behind, stall/skip/step-back/reset.
    Seed000,
    /// (b) Unity N4E: command-age EMA, slack 2 ticks, dead-time ring, dilation 0.9-1.1.
    N4e,
    /// (c) lightyear: open loop, lead = RTT/2 + 4 jitter + 3 ticks, dead band, 10 copies.
    Lightyear,
    /// tickwire with the server's late policy set to Delay (Hypersomnia's ledger: a
    /// late input shifts every later one; the default before the adaptive policy): an
    /// experiment that shows what the policy choice does, not one of the baselines.
    TickwireDelay,
}

impl Controller {
    pub const ALL: [Controller; 5] =
        [Controller::Tickwire, Controller::Seed000, Controller::N4e, Controller::Lightyear, Controller::TickwireDelay];
    /// The designs tickwire is compared against.
    pub const BASELINES: [Controller; 3] = [Controller::Seed000, Controller::N4e, Controller::Lightyear];
    /// The product's own sessions (the rows that run a real step stream).
    pub fn is_tickwire(self) -> bool {
        matches!(self, Controller::Tickwire | Controller::TickwireDelay)
    }

    pub fn name(self) -> &'static str {
        match self {
            Controller::Tickwire => "tickwire",
            Controller::TickwireDelay => "tw-delay",
            Controller::Seed000 => "seed000",
            Controller::N4e => "n4e",
            Controller::Lightyear => "lightyear",
        }
    }
}

/// Fixed parameters of a run (ticksync.md notation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabConfig {
    pub tick_us: f64,
    /// Client ticks between input packets: the oracle's reference and the baselines'
    /// clients send on it. Unless `fixed_k_c`, it is the schedule on a link that loses
    /// little, and [`LabConfig::at`] reads a lossy scenario at every tick.
    pub k_c: u32,
    /// Every controller's client, tickwire's included, sends every `k_c` ticks
    /// whatever its link (`tickwire lab --client-send-interval K`). Otherwise tickwire
    /// runs the product's schedule: every `k_c` ticks, and every tick while its
    /// measured uplink loss is above ε/2 (`RelayClientConfig::every_tick_when_lossy`).
    pub fixed_k_c: bool,
    pub k_s: u32,
    pub epsilon: f64,
    pub frame_hz: f64,
    pub seed: u64,
    /// Ignore this much at the start in the metrics.
    pub warmup_us: Micros,
}

impl Default for LabConfig {
    fn default() -> Self {
        LabConfig {
            tick_us: 1e6 / 60.0,
            k_c: 2,
            fixed_k_c: false,
            k_s: 3,
            epsilon: 0.01,
            frame_hz: 144.0,
            seed: 1,
            warmup_us: 10_000_000,
        }
    }
}

impl LabConfig {
    /// The settings `scenario` is run and read at. Unless the schedule is fixed, a
    /// scenario whose uplink loses more than ε/2 is read at every tick: tickwire's
    /// client sends every tick there by its own measurement, so the oracle's reference
    /// and the baselines' clients do too (each lost packet costs an input a send
    /// interval, and an excess against a reference sending half as often would
    /// credit tickwire with the schedule, not its lead).
    pub fn at(&self, scenario: &Scenario) -> LabConfig {
        if self.fixed_k_c {
            return *self;
        }
        let ups = scenario.changes.iter().filter_map(|c| if let Change::Up(l) = c.1 { Some(l) } else { None });
        let loss = std::iter::once(scenario.up).chain(ups).map(|l| l.loss.stationary_loss()).fold(0.0, f64::max);
        let k_c = if loss > self.epsilon / 2.0 { 1 } else { self.k_c };
        LabConfig { k_c, ..*self }
    }

    /// The seed of one scenario's networks: the lab's seed mixed with the scenario id,
    /// so scenarios differ and every controller of a scenario gets the same links.
    pub fn run_seed(&self, scenario: &Scenario) -> u64 {
        self.seed ^ (scenario.id.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64)) << 8)
    }

    /// The seeds of client `client`'s uplink and downlink in `scenario` (client 0 is
    /// the measured one). Every controller's run takes its links from here, so all of
    /// them meet the same realisation of the scenario's links, not only the same
    /// distribution.
    pub fn link_seeds(&self, scenario: &Scenario, client: usize) -> (u64, u64) {
        let seed = self.run_seed(scenario) ^ (client as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (seed ^ 0x55, seed ^ 0xAA)
    }
}

/// What happened to one client input (times in true µs).
#[derive(Debug, Clone, Copy, Default)]
pub struct InputRecord {
    pub sampled: Micros,
    pub first_arrival: Option<Micros>,
    pub consumed: Option<Micros>,
    /// The input was replaced by a substitute (lost, or late on a tick-aligned server).
    pub substituted: bool,
}

/// One server tick's outcome for the client.
#[derive(Debug, Clone, Copy)]
pub struct ServerTickRecord {
    pub at: Micros,
    pub kind: StepKind,
    pub depth: u32,
}

/// Samples over time, for plots and for the time-based metrics.
#[derive(Debug, Clone, Copy, Default)]
pub struct FrameRecord {
    pub at: Micros,
    pub scale: f64,
    /// Client tick minus the newest client tick it knows the server consumed (M3).
    pub prediction: f64,
    /// The server's true tick position now, and the remote tick being rendered (M9).
    pub server_pos: f64,
    pub playback: Option<f64>,
    /// Rendering has passed the newest server packet received.
    pub starved: bool,
    /// Queued client inputs at the server (jitter-buffer depth), last server tick.
    pub depth: u32,
    /// The controller's own clock action (M6): the client's tick minus the server
    /// tick that consumes inputs now (the server's tick on a tick-aligned server, the
    /// remote-tick estimate of seed 000's server), in ticks. Unlike the lead measured
    /// at consumption it does not move when the server slips its stream.
    pub clock_lead: f64,
}

/// Everything a run recorded.
#[derive(Debug, Clone, Default)]
pub struct RunRecord {
    pub first_tick: Tick,
    pub inputs: Vec<InputRecord>,
    pub server_ticks: Vec<ServerTickRecord>,
    pub frames: Vec<FrameRecord>,
    /// True one-way downlink delays of delivered server packets (µs) with send times.
    pub downlink: Vec<(Micros, Micros)>,
    pub downlink_sent: u64,
    pub snaps: Vec<Micros>,
    /// Seed 000's server-side tick corrections (stall, skip, step back, reset).
    pub seed_corrections: u64,
    /// When the client's lead loop re-acquired (forgot its history and started over):
    /// a correction as much as a snap (M7).
    pub resets: Vec<Micros>,
    /// Set if the client's tick ever decreased (it must not).
    pub tick_went_back: bool,
    /// Players the server removed (kicked, fell behind, left), with when and why.
    pub kicks: Vec<(Micros, String)>,
    /// Once a second: the newest canonical step the slowest client of the match has
    /// received (0 before its first).
    pub slowest_step: Vec<(Micros, Tick)>,
    /// Copies of the measured client's inputs it sent (an input in each packet or
    /// message that carried it), and the bytes of those packets or messages: the
    /// model's packet size for a baseline, the input messages' payload (before the
    /// transport's header and tag) for tickwire.
    pub uplink_copies: u64,
    pub uplink_bytes: u64,
    /// Likewise downward: the steps in the updates the server sent the measured client
    /// (a step in each update that carried it), those updates' bytes, and the server
    /// ticks while the client had a slot (tickwire only).
    pub downlink_copies: u64,
    pub downlink_bytes: u64,
    pub downlink_steps: u64,
}

impl RunRecord {
    /// The record of client tick `tick`, if the client has sampled it.
    pub fn input_mut(&mut self, tick: Tick) -> Option<&mut InputRecord> {
        let i = tick.checked_sub(self.first_tick)? as usize;
        self.inputs.get_mut(i)
    }
}

/// Runs one scenario with one controller and returns the record.
pub fn run(scenario: &Scenario, controller: Controller, cfg: &LabConfig) -> RunRecord {
    match controller {
        Controller::Tickwire => super::relay::run(scenario, cfg, None),
        Controller::TickwireDelay => super::relay::run(scenario, cfg, Some(LatePolicy::Delay)),
        Controller::Seed000 | Controller::N4e | Controller::Lightyear => {
            super::baselines::run(scenario, controller, cfg)
        }
    }
}
