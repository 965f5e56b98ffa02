//! The baselines, modelled: one client and one server on seeded simulated links, in
//! true time, each with its own (drifting) clock: the input path of a relay topology.
//! The client samples an input per tick and sends every `k_c` ticks; the server
//! consumes inputs once per tick and answers every `k_s` ticks with its command age,
//! acks and its tick. Three designs from ticksync.md, each in its own file with the
//! lines it models: (a) seed 000's fixed rule ([`seed000`]), (b) Unity N4E's slack and
//! proportional dilation on the server's command age with dead-time compensation
//! ([`n4e`]), (c) lightyear's open-loop `RTT/2 + 4·jitter` timeline ([`lightyear`]).
//! (tickwire itself is not modelled: its rows run the product's sessions, see
//! [`super::relay`].)

mod lightyear;
mod n4e;
mod seed000;

use tickwire_proto::{
    DriftClock, FixedRuleInterpolation, InterpConfig, LinkConditioner, Micros, RemoteTimeline, StepKind, Tick,
    TickClock, TickClockConfig, TickEvent,
};

use super::model::{Controller, FrameRecord, InputRecord, LabConfig, RunRecord, ServerTickRecord};
use super::scenario::{Change, Scenario};
use lightyear::LightyearClient;
use n4e::{N4eClient, ServerAge};

#[derive(Debug, Clone)]
struct UpPacket {
    newest: Tick,
    oldest: Tick,
}

#[derive(Debug, Clone)]
struct DownPacket {
    sent: Micros,
    server_tick: Tick,
    /// N4E's `ServerCommandAge` (ticks), which only the N4E client reads.
    age: Option<f64>,
    ack: Option<Tick>,
    consumed: Option<Tick>,
    /// (client tick, µs the server held it) for an RTT sample.
    echo: Option<(Tick, f64)>,
}

enum ServerPolicy {
    /// Seed 000's remote tick, and the next input to integrate.
    Seed(FixedRuleInterpolation, Option<Tick>),
    /// Client tick c is consumed at server tick c.
    Aligned,
}

struct Server {
    clock: DriftClock,
    tick: Tick,
    policy: ServerPolicy,
    /// The newest client tick received, and the command age kept from it.
    newest: Option<Tick>,
    age: ServerAge,
    ack: Option<Tick>,
    consumed: Option<Tick>,
    echo: Option<(Tick, Micros)>,
    hitch_until: Micros,
    /// The client tick the server is consuming now (the server's tick, or seed 000's
    /// remote tick): what the client's clock action is measured against.
    consuming: f64,
}

enum ClientCtl {
    None,
    /// Boxed: its 64-slot ring makes it ten times the others.
    N4e(Box<N4eClient>),
    Lightyear(LightyearClient),
}

struct Client {
    clock: Option<TickClock>,
    drift: DriftClock,
    ctl: ClientCtl,
    interp: Box<dyn RemoteTimeline>,
    /// The newest ticks each packet carries ([`window_ticks`]).
    window: u32,
    acked: Option<Tick>,
    consumed: Option<Tick>,
    newest_server_tick: Option<Tick>,
    sent_local: Vec<Micros>,
    next_frame_local: Micros,
    frame_us: f64,
    hitch_until: Micros,
}

/// The newest ticks each design's packet carries, when a packet leaves every `k_c`
/// ticks: seed 000 each input once, lightyear each in 10 packets, N4E its 4 newest
/// commands whatever the schedule (so 2 copies at every other tick and 4 at every
/// tick).
fn window_ticks(controller: Controller, k_c: u32) -> u32 {
    match controller {
        Controller::Seed000 => seed000::COPIES * k_c,
        Controller::N4e => n4e::COMMANDS_PER_PACKET.max(k_c),
        _ => lightyear::COPIES * k_c,
    }
}

/// The client's tick clock: N4E and lightyear dilate within ±10% (ticksync.md lines
/// 50 and 90) and decide their snaps themselves; seed 000's client does not steer.
fn clock_config(cfg: &LabConfig) -> TickClockConfig {
    TickClockConfig {
        tick_us: cfg.tick_us,
        max_speedup: 0.10,
        max_slowdown: 0.10,
        snap_threshold_ticks: 0.0,
        ..TickClockConfig::default()
    }
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
        newest: None,
        age: ServerAge::default(),
        ack: None,
        consumed: None,
        echo: None,
        hitch_until: 0,
        consuming: 1000.0,
    };
    let interp_cfg =
        InterpConfig { tick_us: t_us, send_interval: cfg.k_s, late_rate: cfg.epsilon, ..InterpConfig::default() };
    let mut client = Client {
        clock: None,
        drift: DriftClock::new(scenario.client_drift_ppm, 0),
        ctl: match controller {
            Controller::N4e => ClientCtl::N4e(Box::default()),
            Controller::Lightyear => ClientCtl::Lightyear(LightyearClient::default()),
            _ => ClientCtl::None,
        },
        interp: Box::new(FixedRuleInterpolation::new(interp_cfg)),
        window: window_ticks(controller, cfg.k_c),
        acked: None,
        consumed: None,
        newest_server_tick: None,
        sent_local: Vec::new(),
        next_frame_local: 0,
        frame_us: 1e6 / cfg.frame_hz,
        hitch_until: 0,
    };
    let mut rec = RunRecord::default();
    let mut changes = scenario.changes.clone();
    changes.reverse();
    let tick_clock_cfg = clock_config(cfg);
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
                server_receive(&mut server, &mut rec, p, now);
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
            server_tick(&mut server, &mut rec, now, cfg);
            if server.tick % cfg.k_s == 0 {
                let p = DownPacket {
                    sent: now,
                    server_tick: server.tick,
                    age: server.age.report(),
                    ack: server.ack,
                    consumed: server.consumed,
                    echo: server.echo.map(|(tick, at)| (tick, server.clock.local(now).saturating_sub(at) as f64)),
                };
                down.send(now, 32, p);
                rec.downlink_sent += 1;
            }
            continue;
        }
        // A client frame.
        let local = client.drift.local(now);
        client.next_frame_local = local + client.frame_us as Micros;
        let server_pos = server.clock.local(now) as f64 / t_us;
        client_frame(&mut client, &mut rec, &mut up, now, local, (server_pos, server.consuming), cfg);
    }
    if let ServerPolicy::Seed(est, _) = &server.policy {
        rec.seed_corrections = est.corrections();
    }
    rec
}

fn server_receive(server: &mut Server, rec: &mut RunRecord, p: UpPacket, now: Micros) {
    let local = server.clock.local(now);
    for c in p.oldest..=p.newest {
        if let Some(r) = rec.input_mut(c) {
            r.first_arrival.get_or_insert(now);
        }
    }
    server.newest = Some(server.newest.map_or(p.newest, |n| n.max(p.newest)));
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

/// Marks input `c` consumed now; whether its first copy was there in time.
fn consume(rec: &mut RunRecord, c: Tick, now: Micros) -> bool {
    let Some(r) = rec.input_mut(c) else { return true };
    r.consumed = Some(now);
    let on_time = r.first_arrival.is_some_and(|a| a <= now);
    r.substituted = !on_time;
    on_time
}

fn server_tick(server: &mut Server, rec: &mut RunRecord, now: Micros, cfg: &LabConfig) {
    let s = server.tick;
    server.age.tick(s, server.newest);
    let (kind, depth) = match &mut server.policy {
        ServerPolicy::Seed(est, next) => {
            let Some(target) = est.playback(server.clock.local(now)) else {
                rec.server_ticks.push(ServerTickRecord { at: now, kind: StepKind::Underflow, depth: 0 });
                return;
            };
            let target = target.max(0.0) as Tick;
            let before = server.consuming as Tick;
            server.consuming = target as f64;
            let from = next.unwrap_or(target);
            let through = seed000::integrated_through(target, cfg.k_c);
            for c in from..=through {
                consume(rec, c, now);
            }
            if through >= from {
                *next = Some(through + 1);
                server.consumed = Some(through);
            }
            // Per simulated remote tick, as M1 counts for the other designs: it stalled
            // or stepped back (no new tick ran), skipped ahead (several at once), or
            // ran the tick whose input was integrated in time or missing.
            let kind = if target <= before {
                StepKind::Underflow
            } else if target > before + 1 {
                StepKind::Merged
            } else if rec.input_mut(target).is_some_and(|r| r.substituted) {
                StepKind::Lost
            } else {
                StepKind::Normal
            };
            (kind, 0)
        }
        ServerPolicy::Aligned => {
            server.consuming = s as f64;
            let kind = if rec.input_mut(s).is_none() {
                StepKind::Underflow
            } else if consume(rec, s, now) {
                StepKind::Normal
            } else {
                StepKind::Lost
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
        client.next_frame_local = local;
        rec.first_tick = start;
    }
    client.acked = p.ack.or(client.acked);
    client.consumed = p.consumed.or(client.consumed);
    let rtt = p.echo.and_then(|(tick, held)| {
        let sent = *tick.checked_sub(rec.first_tick).and_then(|i| client.sent_local.get(i as usize))?;
        Some(local.saturating_sub(sent) as f64 - held)
    });
    let clock = client.clock.as_mut().expect("started");
    let local_ticks = local as f64 / tcfg.tick_us;
    match &mut client.ctl {
        ClientCtl::None => {}
        ClientCtl::N4e(n) => {
            if let Some(r) = rtt {
                n.on_rtt(r);
            }
            n.on_snapshot(p.server_tick as f64, local_ticks, p.age);
        }
        ClientCtl::Lightyear(l) => {
            if let Some(r) = rtt {
                l.rtt.sample(r);
            }
            l.on_packet(p.server_tick as f64, local_ticks, tcfg.tick_us);
            // Each packet is a sync sample; the tick being simulated is position − 1
            // (tick c runs when the clock's position passes c + 1).
            let (speed, snap) = l.sample(clock.position() - 1.0, local_ticks, tcfg.tick_us);
            if let Some(s) = snap {
                clock.snap(s);
            }
            clock.set_scale(speed);
        }
    }
    if client.newest_server_tick.is_none_or(|n| p.server_tick > n) {
        client.newest_server_tick = Some(p.server_tick);
    }
    client.interp.on_packet(p.server_tick, local);
}

fn client_frame(
    client: &mut Client,
    rec: &mut RunRecord,
    up: &mut LinkConditioner<UpPacket>,
    now: Micros,
    local: Micros,
    server: (f64, f64),
    cfg: &LabConfig,
) {
    let (server_pos_now, server_consuming) = server;
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
        if let ClientCtl::N4e(n4e) = &mut client.ctl {
            n4e.on_tick(clock.scale());
        }
        if c % cfg.k_c == 0 {
            let window = client.window;
            let oldest =
                (c + 1).saturating_sub(window).max(client.acked.map_or(rec.first_tick, |a| a + 1)).max(rec.first_tick);
            let oldest = oldest.min(c);
            let size = 20 + 2 * (c - oldest + 1) as usize;
            rec.uplink_copies += u64::from(c - oldest + 1);
            rec.uplink_bytes += size as u64;
            up.send(now, size, UpPacket { newest: c, oldest });
        }
    }
    // Steer the clock: N4E every frame on its last report; lightyear on each packet
    // (in `client_receive`); seed 000's client not at all.
    if let ClientCtl::N4e(n4e) = &mut client.ctl {
        let (scale, snap) = n4e.steer(clock.tick() as f64, local as f64 / cfg.tick_us, cfg.tick_us);
        if let Some(s) = snap {
            clock.snap(s);
        }
        clock.set_scale(scale);
    }
    // Render-side figures.
    let newest = client.newest_server_tick;
    let playback = client.interp.playback(local);
    let starved = matches!((newest, playback), (Some(n), Some(p)) if p > n as f64);
    let prediction = client.consumed.map_or(0.0, |c| clock.tick() as f64 - c as f64);
    let depth = rec.server_ticks.last().map_or(0, |s| s.depth);
    rec.frames.push(FrameRecord {
        at: now,
        scale: clock.scale(),
        prediction,
        server_pos: server_pos_now + 1000.0,
        playback,
        starved,
        depth,
        clock_lead: clock.tick() as f64 - server_consuming,
    });
}
