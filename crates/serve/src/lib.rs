//! `tickwire serve`: a headless server of many relay-only matches on one UDP port,
//! for fleets. Matches come from connect tokens ([`tickwire_proto::MatchServer`]); the
//! server runs no game code. Around it: the Agones SDK's calls when the server runs in
//! an Agones pod ([`agones`]), a Prometheus endpoint and an optional local admin
//! endpoint ([`metrics`], [`http`]), JSON-line logs, and a drain on SIGTERM.
//!
//! One thread runs the matches: it sleeps to the next tick of any match (the matches
//! of one tick rate tick together), takes what the host's network thread received,
//! runs every due match, and flushes once.

pub mod agones;
pub mod http;
pub mod metrics;
pub mod realtime;
mod report;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tickwire_proto::{
    Admission, EndpointConfig, MatchServer, MatchServerConfig, MatchServerEvent, Micros, NetEvent, PacketProtection,
    Presented, RelayServerSessionConfig, Secret, Security, ServerMode, TokenAdmission,
};
use tickwire_runtime::{Host, HostConfig, HostEvent};

pub use report::Summary;
use report::{Report, Shared};

/// How `tickwire serve` runs.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The UDP address to listen on.
    pub bind: SocketAddr,
    /// The addresses tokens name, when not the bound one (behind a load balancer).
    pub public: Vec<SocketAddr>,
    /// The key the game's backend mints tokens with.
    pub key: Secret,
    /// The game's protocol id; tokens for another are refused.
    pub protocol_id: u32,
    /// Most matches at once.
    pub max_matches: usize,
    /// Most connections at once (players and handshakes).
    pub max_clients: u32,
    /// Most connections from one IP address (0: no limit). The default is the
    /// transport's own (8): players behind one NAT fit, and one host cannot take the
    /// server's capacity.
    pub max_clients_per_ip: u32,
    /// Ticks between the checksums the clients report.
    pub checksum_interval: u32,
    /// How long a dropped player's slot waits for it.
    pub reconnect_timeout_us: Micros,
    /// After SIGTERM: how long live matches may go on before they are cut short.
    pub drain_timeout_us: Micros,
    /// Where to serve `/metrics` (None: nowhere).
    pub metrics: Option<SocketAddr>,
    /// Where to serve the admin endpoint (`GET /matches`, `POST /matches/ID/end`);
    /// None: nowhere. Keep it on localhost.
    pub admin: Option<SocketAddr>,
    /// The Agones SDK sidecar's HTTP address (None: not in an Agones pod).
    pub agones: Option<SocketAddr>,
    /// Agones Health every this long.
    pub health_period: Duration,
    /// One JSON object a line on stdout for every event, else plain text.
    pub json_logs: bool,
    /// The match thread and the network thread at this SCHED_FIFO priority
    /// ([`realtime`]); None: fair ones.
    pub realtime_priority: Option<u8>,
}

impl ServeConfig {
    /// The defaults around `bind` and `key`.
    pub fn new(bind: SocketAddr, key: Secret) -> Self {
        ServeConfig {
            bind,
            public: Vec::new(),
            key,
            protocol_id: EndpointConfig::default().protocol_id,
            max_matches: 1000,
            max_clients: 4096,
            max_clients_per_ip: EndpointConfig::default().max_incoming_per_ip,
            checksum_interval: 30,
            reconnect_timeout_us: 30_000_000,
            drain_timeout_us: 25_000_000,
            metrics: None,
            admin: None,
            agones: None,
            health_period: Duration::from_secs(5),
            json_logs: false,
            realtime_priority: None,
        }
    }

    fn host(&self) -> HostConfig {
        let mut host = HostConfig::new(self.bind);
        host.endpoint = EndpointConfig {
            protocol_id: self.protocol_id,
            max_incoming: self.max_clients,
            max_incoming_per_ip: self.max_clients_per_ip,
            security: Security::Encrypted {
                admission: Admission::Tokens(TokenAdmission {
                    key: self.key.clone(),
                    public_addresses: self.public.clone(),
                }),
                presented: Presented::Open,
                packets: PacketProtection::Aead,
            },
            ..host.endpoint.clone()
        };
        host
    }

    fn matches(&self) -> Result<MatchServerConfig, String> {
        let seeding = |e: std::io::Error| format!("seeding the session tokens: {e}");
        let session = RelayServerSessionConfig {
            mode: ServerMode::RelayOnly,
            checksum_interval: self.checksum_interval,
            reconnect_timeout_us: self.reconnect_timeout_us,
            seed: u64::from_le_bytes(tickwire_runtime::os_random_bytes::<8>().map_err(seeding)?),
            token_seed: Secret(tickwire_runtime::os_random_bytes::<32>().map_err(seeding)?),
            ..RelayServerSessionConfig::default()
        };
        Ok(MatchServerConfig { session, max_matches: self.max_matches })
    }
}

/// Between looks at the events when no tick comes sooner: every match of a slow tick
/// rate still sees its joins and leaves promptly, and the stop flag is read.
const LOOK_US: Micros = 16_000;
/// With no match, a look this often.
const IDLE_LOOK_US: Micros = 5_000;
/// A look is skipped when a tick comes within this long after it: the look's work
/// (every event since the last wake, every match's messages, a flush) would make the
/// tick late.
const LOOK_GUARD_US: Micros = 8_000;

/// When the match thread wakes next, from `now` and the next tick instant of any
/// match: the tick, when it comes before a look would (with the guard), else a look.
/// The second value is the tick when the wake is one (its lateness is measured).
fn next_wake(now: Micros, next_tick: Option<Micros>, idle: bool) -> (Micros, Option<Micros>) {
    let look = now + if idle { IDLE_LOOK_US } else { LOOK_US };
    match next_tick {
        Some(t) if t <= look + LOOK_GUARD_US => (t, Some(t)),
        _ => (look, None),
    }
}

/// Runs the server until `stop` is set, then drains: no new match, the live ones go on
/// until they end or the drain timeout cuts them short. `out` gets every line the
/// server prints (the first is `listening IP:PORT`).
pub fn run(cfg: &ServeConfig, stop: &AtomicBool, out: &mut dyn FnMut(&str)) -> Result<Summary, String> {
    let mut server = MatchServer::new(cfg.matches()?).map_err(|e| format!("settings: {e}"))?;
    // The network thread starts with the host, and takes the match thread's priority.
    if let Some(p) = cfg.realtime_priority {
        realtime::set_fifo(p).map_err(|e| format!("--realtime-priority: {e}"))?;
    }
    let mut host = Host::start(cfg.host()).map_err(|e| format!("binding {}: {e}", cfg.bind))?;
    if let Some(p) = cfg.realtime_priority {
        realtime::keep_new_threads_fair(p).map_err(|e| format!("--realtime-priority: {e}"))?;
    }
    let shared = Arc::new(Mutex::new(Shared::default()));
    let mut report = Report::new(cfg.json_logs);
    out(&format!("listening {}", host.local_addr()));
    // The HTTP threads answer until the process ends.
    let endpoints: [(Option<SocketAddr>, &str, report::Endpoint); 2] =
        [(cfg.metrics, "metrics", report::metrics_endpoint), (cfg.admin, "admin", report::admin_endpoint)];
    for (addr, what, answer) in endpoints {
        let Some(addr) = addr else { continue };
        let s = Arc::clone(&shared);
        let l = http::Listener::start(addr, move |r| answer(&s, r)).map_err(|e| format!("{what} on {addr}: {e}"))?;
        let path = if what == "metrics" { "/metrics" } else { "/matches" };
        out(&format!("{what} http://{}{path}", l.local_addr()));
    }
    let (log_tx, log_rx) = channel();
    let mut agones = cfg.agones.map(|a| agones::Agones::start(a, cfg.health_period, log_tx.clone()));
    if let Some(a) = &agones {
        a.ready(u64::from(cfg.max_clients));
    }
    let mut drain_until: Option<Micros> = None;
    let mut next_report = host.now_us();
    let summary = loop {
        let now = host.now_us();
        while let Some(ev) = host.poll_event() {
            let (at, e) = match ev {
                HostEvent::Message { peer, channel, data, received_at } => {
                    (received_at, NetEvent::Message { peer, channel, data })
                }
                HostEvent::Connected { peer, addr, credential, binding } => {
                    (now, NetEvent::Connected { peer, addr, credential, binding })
                }
                HostEvent::Disconnected { peer, reason } => (now, NetEvent::Disconnected { peer, reason }),
                HostEvent::Fatal { message } => return Err(format!("the network thread stopped: {message}")),
            };
            server.on_event(at, &mut host, e);
        }
        for id in report::take_admin_ends(&shared) {
            if server.end_match(now, &mut host, id) {
                report.ended_by_admin += 1;
            }
        }
        // Every match's messages, and one flush for them all.
        server.run(now, &mut host);
        while let Some(e) = server.poll_event() {
            report.event(now, &e, out);
            if let MatchServerEvent::MatchEnded { .. } = e {
                if drain_until.is_some() {
                    report.drained += 1;
                }
            }
        }
        while let Ok(line) = log_rx.try_recv() {
            report.note(now, &line, out);
        }
        if stop.load(Ordering::Acquire) && drain_until.is_none() {
            server.drain();
            drain_until = Some(now + cfg.drain_timeout_us);
            report.note(now, &format!("draining: {} matches live", server.match_count()), out);
        }
        if now >= next_report {
            next_report = now + 1_000_000;
            report.refresh(&server, &mut host, &shared);
            if let Some(a) = &mut agones {
                a.counts(report.players, server.match_count() as u64);
            }
        }
        if let Some(until) = drain_until {
            if server.match_count() == 0 || now >= until {
                let live: Vec<u64> = server.matches().map(|(id, _, _)| id).collect();
                for id in live {
                    server.end_match(now, &mut host, id);
                    report.cut_short += 1;
                }
                while let Some(e) = server.poll_event() {
                    report.event(now, &e, out);
                }
                let _ = host.flush();
                // The closes go out, and are repeated, on the network thread.
                std::thread::sleep(Duration::from_millis(100));
                break report.summary(&server);
            }
        }
        let at = host.now_us();
        let (wake, tick) = next_wake(at, server.next_tick_at(now), server.match_count() == 0);
        if wake > at {
            std::thread::sleep(Duration::from_micros(wake - at));
        }
        if let Some(t) = tick {
            report.woke(host.now_us().saturating_sub(t));
        }
    };
    report.refresh(&server, &mut host, &shared);
    if let Some(mut a) = agones.take() {
        // The last counts (nobody left), then Shutdown.
        a.counts(report.players, server.match_count() as u64);
        a.shutdown();
    }
    while let Ok(line) = log_rx.try_recv() {
        report.note(host.now_us(), &line, out);
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK_60HZ: f64 = 1_000_000.0 / 60.0;

    /// At 60 Hz every wake is a tick. The loop once looked at the events 16 ms after
    /// a tick whenever it started within 0.67 ms of one: that look woke a fraction of
    /// a millisecond before the next tick, and its work (3 ms at 500 matches) made
    /// that tick late.
    #[test]
    fn at_60_hz_the_loop_wakes_at_every_tick_and_never_just_before_one() {
        for k in 1..1000u64 {
            let tick = (k as f64 * TICK_60HZ).ceil() as Micros;
            for after in [0, 1, 300, 666, 667, 2_000, 9_000, 16_000] {
                let now = tick + after;
                let next = (((now as f64) / TICK_60HZ).ceil() * TICK_60HZ).ceil() as Micros;
                let (wake, t) = next_wake(now, Some(next), false);
                assert_eq!((wake, t), (next, Some(next)), "woken {after} us after tick {k}");
            }
        }
    }

    /// A slow rate (10 Hz) still gets looks every 16 ms, but none within the guard
    /// before its tick; with no match the looks come every 5 ms.
    #[test]
    fn slow_rates_get_looks_that_keep_clear_of_their_tick() {
        let (tick, mut now) = (100_000, 0);
        let mut wakes = Vec::new();
        while now < tick {
            let (wake, t) = next_wake(now, Some(tick), false);
            wakes.push((wake, t));
            now = wake;
        }
        assert_eq!(
            wakes,
            [(16_000, None), (32_000, None), (48_000, None), (64_000, None), (80_000, None), (100_000, Some(100_000))]
        );
        assert_eq!(next_wake(7, None, true), (5_007, None));
        assert_eq!(next_wake(7, None, false), (16_007, None));
    }
}
