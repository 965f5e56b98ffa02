//! The baselines, modelled: one client and one server on seeded simulated links, in
//! true time, each with its own (drifting) clock: the input path of a relay topology.
//! The client samples an input per tick and sends every `k_c` ticks; the server
//! consumes inputs once per tick and answers every `k_s` ticks with margins, acks and
//! its tick. Three designs from ticksync.md: (a) seed 000's fixed rule, (b) Unity
//! N4E's slack and proportional dilation on the server's command age, (c) lightyear's
//! open-loop RTT/2 + 4 jitter lead. (tickwire itself is not modelled: its rows run the
//! product's sessions, see [`super::relay`].)

use tickwire_proto::{
    DriftClock, FixedRuleInterpolation, InterpConfig, LinkConditioner, Micros, RemoteTimeline, StepKind, Tick,
    TickClock, TickClockConfig, TickEvent,
};

use super::model::{Controller, FrameRecord, InputRecord, LabConfig, RunRecord, ServerTickRecord};
use super::scenario::{Change, Scenario};

#[derive(Debug, Clone)]
struct UpPacket {
    newest: Tick,
    oldest: Tick,
}

#[derive(Debug, Clone)]
struct DownPacket {
    sent: Micros,
    server_tick: Tick,
    /// (client tick, arrival margin in ticks) of first copies since the last packet.
    margins: Vec<(Tick, f64)>,
    ack: Option<Tick>,
    consumed: Option<Tick>,
    /// (client tick, µs the server held it) for an RTT sample.
    echo: Option<(Tick, f64)>,
}

enum ServerPolicy {
    Seed(FixedRuleInterpolation, Option<Tick>),
    /// Client tick c is consumed at server tick c.
    Aligned,
}

struct Server {
    clock: DriftClock,
    tick: Tick,
    policy: ServerPolicy,
    /// (client tick, arrival margin in ticks) of first copies since the last packet.
    margins: Vec<(Tick, f64)>,
    ack: Option<Tick>,
    consumed: Option<Tick>,
    echo: Option<(Tick, Micros)>,
    hitch_until: Micros,
    /// True time the last tick ran (for the simulation position).
    last_tick_at: Micros,
}

enum ClientCtl {
    None,
    /// `fresh_from`: reports for inputs before this tick predate the last snap.
    N4e {
        margin_ema: Option<f64>,
        fresh_from: Tick,
    },
    Lightyear,
}

struct Client {
    clock: Option<TickClock>,
    drift: DriftClock,
    ctl: ClientCtl,
    interp: Box<dyn RemoteTimeline>,
    start_local: Micros,
    start_pos: f64,
    copies: u32,
    acked: Option<Tick>,
    consumed: Option<Tick>,
    newest_server_tick: Option<Tick>,
    newest_server_local: Micros,
    srtt: Option<f64>,
    rtt_jitter: f64,
    sent_local: Vec<Micros>,
    next_frame_local: Micros,
    frame_us: f64,
    hitch_until: Micros,
    last_scale: f64,
}

/// Runs one scenario with one of the baselines and returns the record.
pub fn run(scenario: &Scenario, controller: Controller, cfg: &LabConfig) -> RunRecord {
    let t_us = cfg.tick_us;
    let (up_seed, down_seed) = cfg.link_seeds(scenario, 0);
    let mut up: LinkConditioner<UpPacket> = LinkConditioner::new(scenario.up, up_seed);
    let mut down: LinkConditioner<DownPacket> = LinkConditioner::new(scenario.down, down_seed);
    let policy = match controller {
        Controller::Seed000 => ServerPolicy::Seed(
            FixedRuleInterpolation::new(InterpConfig {
                tick_us: t_us,
                send_interval: cfg.k_c,
                ..InterpConfig::default()
            }),
            None,
        ),
        _ => ServerPolicy::Aligned,
    };
    let mut server = Server {
        clock: DriftClock::new(scenario.server_drift_ppm, 0),
        tick: 1000,
        policy,
        margins: Vec::new(),
        ack: None,
        consumed: None,
        echo: None,
        hitch_until: 0,
        last_tick_at: 0,
    };
    let interp_cfg =
        InterpConfig { tick_us: t_us, send_interval: cfg.k_s, late_rate: cfg.epsilon, ..InterpConfig::default() };
    let mut client = Client {
        clock: None,
        drift: DriftClock::new(scenario.client_drift_ppm, 0),
        ctl: match controller {
            Controller::N4e => ClientCtl::N4e { margin_ema: None, fresh_from: 0 },
            Controller::Lightyear => ClientCtl::Lightyear,
            _ => ClientCtl::None,
        },
        interp: Box::new(FixedRuleInterpolation::new(interp_cfg)),
        start_local: 0,
        start_pos: 0.0,
        copies: match controller {
            Controller::Seed000 => 1,
            _ => 2,
        },
        acked: None,
        consumed: None,
        newest_server_tick: None,
        newest_server_local: 0,
        srtt: None,
        rtt_jitter: 0.0,
        sent_local: Vec::new(),
        next_frame_local: 0,
        frame_us: 1e6 / cfg.frame_hz,
        hitch_until: 0,
        last_scale: 1.0,
    };
    let mut rec = RunRecord::default();
    let mut changes = scenario.changes.clone();
    changes.reverse();
    let tick_clock_cfg = TickClockConfig { tick_us: t_us, ..TickClockConfig::default() };
    let mut now: Micros = 0;

    while now < scenario.duration {
        // The next event of each kind, in true time.
        let next_server =
            server.clock.true_time_of(((server.tick + 1 - 1000) as f64 * t_us) as Micros).max(server.hitch_until);
        let next_frame = client.drift.true_time_of(client.next_frame_local).max(client.hitch_until);
        let next_change = changes.last().map_or(Micros::MAX, |c| c.0);
        let next_up = up.next_delivery().unwrap_or(Micros::MAX).max(server.hitch_until);
        let next_down = down.next_delivery().unwrap_or(Micros::MAX);
        now = next_server.min(next_frame).min(next_change).min(next_up).min(next_down);
        if now >= scenario.duration {
            break;
        }
        if now == next_change {
            let (_, c) = changes.pop().expect("next change exists");
            match c {
                Change::Up(l) => up.set_config(l),
                Change::Down(l) => down.set_config(l),
                Change::ClientDrift(ppm) => client.drift.set_ppm(now, ppm),
                Change::ServerHitch(d) => server.hitch_until = now + d,
                Change::ClientHitch(d) => client.hitch_until = now + d,
                Change::ClientFps(f) => client.frame_us = 1e6 / f.max(1.0),
            }
            continue;
        }
        if now == next_up {
            while let Some(p) = up.poll(now) {
                server_receive(&mut server, &mut rec, p, now, cfg);
            }
            continue;
        }
        if now == next_down {
            while let Some(p) = down.poll(now) {
                rec.downlink.push((p.sent, now - p.sent));
                client_receive(&mut client, &mut rec, p, now, &tick_clock_cfg);
            }
            continue;
        }
        if now == next_server {
            server.tick += 1;
            server.last_tick_at = now;
            server_tick(&mut server, &mut rec, now);
            if server.tick % cfg.k_s == 0 {
                let p = DownPacket {
                    sent: now,
                    server_tick: server.tick,
                    margins: std::mem::take(&mut server.margins),
                    ack: server.ack,
                    consumed: server.consumed,
                    echo: server.echo.map(|(tick, at)| (tick, server.clock.local(now).saturating_sub(at) as f64)),
                };
                let size = 24 + 6 * p.margins.len();
                down.send(now, size, p);
                rec.downlink_sent += 1;
            }
            continue;
        }
        // A client frame.
        let local = client.drift.local(now);
        client.next_frame_local = local + client.frame_us as Micros;
        let server_pos = server.clock.local(now) as f64 / t_us;
        client_frame(&mut client, &mut rec, &mut up, now, local, server_pos, cfg);
    }
    if let ServerPolicy::Seed(est, _) = &server.policy {
        rec.seed_corrections = est.corrections();
    }
    rec
}

fn server_receive(server: &mut Server, rec: &mut RunRecord, p: UpPacket, now: Micros, cfg: &LabConfig) {
    let local = server.clock.local(now);
    // Simulation position: the last tick run plus the elapsed part of a tick, capped.
    let since = server.clock.local(now).saturating_sub(server.clock.local(server.last_tick_at)) as f64 / cfg.tick_us;
    let pos = server.tick as f64 + since.min(1.0);
    for c in p.oldest..=p.newest {
        let first = match rec.input_mut(c) {
            Some(r) if r.first_arrival.is_none() => {
                r.first_arrival = Some(now);
                true
            }
            _ => false,
        };
        if !first {
            continue;
        }
        if let ServerPolicy::Aligned = server.policy {
            server.margins.push((c, c as f64 - pos));
        }
    }
    if let ServerPolicy::Seed(est, _) = &mut server.policy {
        est.on_packet(p.newest, local);
    }
    // Highest contiguous input received, for the client's redundancy window.
    let mut ack = server.ack.unwrap_or(rec.first_tick.saturating_sub(1));
    while rec.input_mut(ack + 1).is_some_and(|r| r.first_arrival.is_some()) {
        ack += 1;
    }
    if ack >= rec.first_tick {
        server.ack = Some(ack);
    }
    server.echo = Some((p.newest, local));
}

fn server_tick(server: &mut Server, rec: &mut RunRecord, now: Micros) {
    let s = server.tick;
    let (kind, depth) = match &mut server.policy {
        ServerPolicy::Seed(est, next) => {
            let Some(target) = est.playback(server.clock.local(now)) else {
                rec.server_ticks.push(ServerTickRecord { at: now, kind: StepKind::Underflow, depth: 0 });
                return;
            };
            let target = target.max(0.0) as Tick;
            let from = next.unwrap_or(target);
            let kind = if target < from {
                StepKind::Underflow
            } else {
                let mut kind = if target > from { StepKind::Merged } else { StepKind::Normal };
                for c in from..=target {
                    if let Some(r) = rec.input_mut(c) {
                        r.consumed = Some(now);
                        if r.first_arrival.is_none_or(|a| a > now) {
                            r.substituted = true;
                            kind = StepKind::Lost;
                        }
                    }
                }
                *next = Some(target + 1);
                server.consumed = Some(target);
                kind
            };
            (kind, 0)
        }
        ServerPolicy::Aligned => {
            let kind = match rec.input_mut(s) {
                Some(r) => {
                    r.consumed = Some(now);
                    if r.first_arrival.is_some_and(|a| a <= now) {
                        StepKind::Normal
                    } else {
                        r.substituted = true;
                        StepKind::Lost
                    }
                }
                None => StepKind::Underflow,
            };
            if rec.input_mut(s).is_some() {
                server.consumed = Some(s);
            }
            let depth =
                (0..64).filter(|k| rec.input_mut(s + 1 + k).is_some_and(|r| r.first_arrival.is_some())).count() as u32;
            (kind, depth)
        }
    };
    if rec.inputs.is_empty() {
        return; // the client has not started yet: nothing to score
    }
    rec.server_ticks.push(ServerTickRecord { at: now, kind, depth });
}

fn client_receive(client: &mut Client, rec: &mut RunRecord, p: DownPacket, now: Micros, tcfg: &TickClockConfig) {
    let local = client.drift.local(now);
    if client.clock.is_none() {
        // Start two ticks ahead of the server's stamp: the controllers take it from there.
        let start = p.server_tick + 2;
        let mut clock = TickClock::new(*tcfg, start);
        clock.advance(local);
        client.clock = Some(clock);
        client.start_local = local;
        client.start_pos = start as f64;
        client.next_frame_local = local;
        rec.first_tick = start;
    }
    for &(tick, margin) in &p.margins {
        if let ClientCtl::N4e { margin_ema, fresh_from } = &mut client.ctl {
            if tick < *fresh_from {
                continue;
            }
            let e = margin_ema.get_or_insert(margin);
            *e += (margin - *e) * 0.1;
        }
    }
    client.acked = p.ack.or(client.acked);
    client.consumed = p.consumed.or(client.consumed);
    if let Some((tick, held)) = p.echo {
        if let Some(&sent) = tick.checked_sub(rec.first_tick).and_then(|i| client.sent_local.get(i as usize)) {
            let rtt = local.saturating_sub(sent) as f64 - held;
            let s = client.srtt.get_or_insert(rtt);
            client.rtt_jitter += ((rtt - *s).abs() - client.rtt_jitter) / 8.0;
            *s += (rtt - *s) / 8.0;
        }
    }
    if client.newest_server_tick.is_none_or(|n| p.server_tick > n) {
        client.newest_server_tick = Some(p.server_tick);
        client.newest_server_local = local;
    }
    client.interp.on_packet(p.server_tick, local);
}

#[allow(clippy::too_many_arguments)]
fn client_frame(
    client: &mut Client,
    rec: &mut RunRecord,
    up: &mut LinkConditioner<UpPacket>,
    now: Micros,
    local: Micros,
    server_pos_now: f64,
    cfg: &LabConfig,
) {
    let Some(clock) = client.clock.as_mut() else { return };
    let before = clock.tick();
    let n = clock.advance(local);
    if clock.tick() < before {
        rec.tick_went_back = true;
    }
    while let Some(e) = clock.poll_event() {
        if matches!(e, TickEvent::SnapForward { .. } | TickEvent::SnapBack { .. }) {
            rec.snaps.push(now);
        }
    }
    for c in before..before + n {
        let i = (c - rec.first_tick) as usize;
        if rec.inputs.len() <= i {
            rec.inputs.resize(i + 1, InputRecord::default());
            client.sent_local.resize(i + 1, 0);
        }
        rec.inputs[i].sampled = now;
        client.sent_local[i] = local;
        if c % cfg.k_c == 0 {
            let window = client.copies * cfg.k_c;
            let oldest =
                (c + 1).saturating_sub(window).max(client.acked.map_or(rec.first_tick, |a| a + 1)).max(rec.first_tick);
            let oldest = oldest.min(c);
            up.send(now, 20 + 2 * (c - oldest + 1) as usize, UpPacket { newest: c, oldest });
        }
    }
    // Steer the clock.
    let clock = client.clock.as_mut().expect("started");
    let position = clock.position();
    let (scale, snap) = match &mut client.ctl {
        ClientCtl::None => (1.0, None),
        ClientCtl::N4e { margin_ema, fresh_from } => match *margin_ema {
            Some(m) => {
                let err = 2.0 - m;
                if err.abs() >= 10.0 {
                    // After a snap, wait for margins of inputs sent after it.
                    *margin_ema = None;
                    *fresh_from = clock.tick() + 1;
                    (1.0, Some(err))
                } else {
                    ((1.0 + 0.1 * err).clamp(0.9, 1.1), None)
                }
            }
            None => (1.0, None),
        },
        ClientCtl::Lightyear => match (client.srtt, client.newest_server_tick) {
            (Some(rtt), Some(st)) => {
                let since = local.saturating_sub(client.newest_server_local) as f64;
                let server_now = st as f64 + (since + rtt / 2.0) / cfg.tick_us;
                let lead = (rtt / 2.0 + 4.0 * client.rtt_jitter) / cfg.tick_us + 1.0;
                // Tick c runs when the clock's position passes c + 1, so the tick being
                // simulated (lightyear's "client tick") is position - 1.
                let err = server_now + lead - (position - 1.0);
                if err.abs() >= 10.0 { (1.0, Some(err)) } else { ((1.0 + 0.1 * err).clamp(0.9, 1.1), None) }
            }
            _ => (1.0, None),
        },
    };
    if let Some(s) = snap {
        clock.snap(s);
    }
    clock.set_scale(scale);
    client.last_scale = clock.scale();
    // Render-side figures.
    let newest = client.newest_server_tick;
    let playback = client.interp.playback(local);
    let starved = matches!((newest, playback), (Some(n), Some(p)) if p > n as f64);
    let prediction = client.consumed.map_or(0.0, |c| clock.tick() as f64 - c as f64);
    let server_pos = server_pos_now + 1000.0;
    let depth = rec.server_ticks.last().map_or(0, |s| s.depth);
    rec.frames.push(FrameRecord {
        at: now,
        scale: client.last_scale,
        prediction,
        server_pos,
        playback,
        starved,
        depth,
    });
}
