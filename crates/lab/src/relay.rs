//! tickwire's rows of the lab: the product's own [`RelayServer`] and [`RelayClient`]
//! (tick clock, input-lead loop, jitter buffer, redundancy, interpolation, wire
//! messages and the real transport) on the deterministic [`SimNet`], one measured
//! client (player 0) and, in the wide scenarios, more clients beside it, with the
//! scenario's links, drift, hitches and frame rates. Nothing of the sync logic is
//! modelled here: this file only drives the sessions the way an engine does and
//! records the ground truth (when each input was sampled, when its first copy reached
//! the server, when the server consumed it) for the metrics.

use std::net::SocketAddr;
use tickwire_proto::wire::relay::{
    KIND_CLIENT_INPUTS, KIND_SERVER_UPDATE, PlayerStep, StepRules, UpdateView, decode_client_input_spans,
    decode_server_update_into,
};

use tickwire_proto::{
    Binding, ConnectionStats, DisconnectReason, Endpoint, EndpointConfig, JitterStats, LatePolicy, Micros,
    NetEvent as Event, NodeId, PeerId, RelayClient, RelayClientConfig, RelayServer, RelayServerConfig,
    RelayServerEvent, SendError, SimNet, StepKind, Tick, Transport,
};

use super::model::{FrameRecord, InputRecord, LabConfig, RunRecord, ServerTickRecord};
use super::scenario::{Change, Scenario};

/// The session configurations the lab runs for tickwire: the product defaults, with
/// the lab's tick rate, the server's send interval and ε; the client's send schedule
/// is the product's unless the lab fixes it ([`LabConfig::fixed_k_c`]).
pub fn configs(cfg: &LabConfig, late: Option<LatePolicy>) -> (RelayServerConfig, RelayClientConfig) {
    let mut s = RelayServerConfig { tick_us: cfg.tick_us, send_interval: cfg.k_s, ..RelayServerConfig::default() };
    if let Some(p) = late {
        s.jitter.late = p;
    }
    let mut c = RelayClientConfig::default();
    c.tick.tick_us = cfg.tick_us;
    if cfg.fixed_k_c {
        c.send_interval = cfg.k_c;
        c.every_tick_when_lossy = false;
    }
    c.lead.late_rate = cfg.epsilon;
    c.interp.tick_us = cfg.tick_us;
    c.interp.send_interval = cfg.k_s;
    c.interp.late_rate = cfg.epsilon;
    (s, c)
}

/// Runs one scenario with the real relay sessions. `late` overrides the server's
/// late-input policy (None: the product default).
pub fn run(scenario: &Scenario, cfg: &LabConfig, late: Option<LatePolicy>) -> RunRecord {
    let t_us = cfg.tick_us;
    let seed = cfg.run_seed(scenario);
    let (scfg, ccfg) = configs(cfg, late);
    let max_input = scfg.jitter.max_input_size;
    // The lab's own decoding buffer for the updates the server sends the measured client.
    let mut tap_view = UpdateView::default();
    let mut net = SimNet::new(seed ^ 0x5157, scenario.up);
    let max_incoming = scfg.endpoint.max_incoming.max(scenario.clients as u32 + 4);
    let sn = net.add(EndpointConfig { seed: seed ^ 0x11, max_incoming, ..scfg.endpoint.clone() });
    let cn = net.add(EndpointConfig { seed: seed ^ 0x22, ..EndpointConfig::default() });
    // The measured client's links realise the scenario exactly as the baselines' do.
    let (up_seed, down_seed) = cfg.link_seeds(scenario, 0);
    net.set_link_seeded(cn, sn, scenario.up, up_seed);
    net.set_link_seeded(sn, cn, scenario.down, down_seed);
    net.set_drift(sn, scenario.server_drift_ppm);
    net.set_drift(cn, scenario.client_drift_ppm);
    let mut server = RelayServer::new(scfg, net.local_now(sn)).expect("valid server config");
    let mut client = RelayClient::new(ccfg.clone());
    let saddr = net.addr(sn);
    let local = net.local_now(cn);
    client.connect(local, net.endpoint(cn), saddr).expect("connect");
    // The other clients of a wide match connect once the measured one is player 0.
    let mut others: Vec<Other> = (1..scenario.clients.max(1))
        .map(|i| {
            let node = net.add(EndpointConfig { seed: seed ^ (0x33 + i as u64), ..EndpointConfig::default() });
            let (up_seed, down_seed) = cfg.link_seeds(scenario, i);
            net.set_link_seeded(node, sn, scenario.up, up_seed);
            net.set_link_seeded(sn, node, scenario.down, down_seed);
            net.set_drift(node, scenario.client_drift_ppm);
            Other { node, client: RelayClient::new(ccfg.clone()), newest: 0, pushed: 0, connected: false }
        })
        .collect();
    let mut input = vec![0u8; scenario.input_size.max(4)];
    let mut next_sample: Micros = 1_000_000;

    let mut rec = RunRecord::default();
    let mut changes = scenario.changes.clone();
    changes.reverse();
    let mut frame_us = 1e6 / cfg.frame_hz;
    let mut next_frame_local: Micros = 0;
    let (mut server_hitch_until, mut client_hitch_until) = (0, 0);
    let mut lab = Ledger::default();
    let mut now: Micros = 0;

    loop {
        let next_server =
            net.true_time_of(sn, ((server.last_tick() + 1) as f64 * t_us) as Micros).max(server_hitch_until);
        let next_frame = net.true_time_of(cn, next_frame_local).max(client_hitch_until);
        let next_change = changes.last().map_or(Micros::MAX, |c| c.0);
        // A timer already due is served at once (a microsecond on, so time moves).
        let next_net = net.next_event_at().map_or(Micros::MAX, |t| t.max(now + 1));
        now = next_server.min(next_frame).min(next_change).min(next_net);
        if now >= scenario.duration {
            break;
        }
        net.step(now - net.now());
        if now == next_change {
            let (_, c) = changes.pop().expect("next change exists");
            match c {
                Change::Up(l) => {
                    net.set_link(cn, sn, l);
                    for o in &others {
                        net.set_link(o.node, sn, l);
                    }
                }
                Change::Down(l) => {
                    net.set_link(sn, cn, l);
                    for o in &others {
                        net.set_link(sn, o.node, l);
                    }
                }
                Change::ClientDrift(ppm) => net.set_drift(cn, ppm),
                Change::ServerHitch(d) => server_hitch_until = now + d,
                Change::ClientHitch(d) => client_hitch_until = now + d,
                Change::ClientFps(f) => frame_us = 1e6 / f.max(1.0),
            }
        }
        // The engines take their events only when they run (a hitched engine does not).
        if now >= server_hitch_until {
            let local = net.local_now(sn);
            for e in net.take_events(sn) {
                if let Event::Message { data, .. } = &e {
                    lab.on_server_receives(&mut rec, data, max_input, now);
                }
                server.on_event(local, net.endpoint(sn), e);
            }
            while net.true_time_of(sn, ((server.last_tick() + 1) as f64 * t_us) as Micros).max(server_hitch_until)
                <= now
            {
                let local = net.local_now(sn);
                let before = measured_peer(&server).and_then(|p| server.jitter_stats(p));
                let measured = measured_peer(&server);
                let step = {
                    let mut count = |peer: PeerId, data: &[u8]| {
                        if Some(peer) == measured {
                            count_steps(&mut rec, &mut tap_view, max_input, data);
                        }
                    };
                    server.step(local, &mut SendTap { ep: net.endpoint(sn), on_send: &mut count })
                };
                rec.downlink_steps += u64::from(measured.is_some());
                let mine = step.to_vec().into_iter().find(|p| p.player == 0);
                let after = measured_peer(&server).and_then(|p| server.jitter_stats(p));
                if let (Some(b), Some(a), Some(p)) = (before, after, mine) {
                    lab.on_server_step(&mut rec, &b, &a, &p, now);
                }
                while let Some(e) = server.poll_event() {
                    // A removed player voids the figures from then on: the tests check
                    // that there is none.
                    if matches!(
                        e,
                        RelayServerEvent::Kicked { .. }
                            | RelayServerEvent::Left { .. }
                            | RelayServerEvent::FellBehind { .. }
                    ) {
                        rec.kicks.push((now, format!("{e:?}")));
                    }
                }
                if server.last_tick() % cfg.k_s == 0 && measured_peer(&server).is_some() {
                    lab.update_sent.push((server.last_tick(), now));
                    rec.downlink_sent += 1;
                }
            }
        }
        if now >= client_hitch_until {
            let local = net.local_now(cn);
            for e in net.take_events(cn) {
                if let Event::Message { data, .. } = &e {
                    lab.on_client_receives(&mut rec, data, max_input, now);
                }
                client.on_event(local, net.endpoint(cn), e);
            }
            if now == next_frame {
                next_frame_local = local + frame_us as Micros;
                let server_pos = (net.local_now(sn) as f64 / t_us, server.last_tick());
                lab.frame(&mut rec, &mut client, &mut net, cn, now, server_pos, &mut input);
            }
        }
        let first_admitted = measured_peer(&server).is_some();
        for (i, o) in others.iter_mut().enumerate() {
            if !o.connected && first_admitted {
                let local = net.local_now(o.node);
                o.client.connect(local, net.endpoint(o.node), saddr).expect("connect");
                o.connected = true;
            }
            o.frame(&mut net, i + 1, &mut input, now == next_frame);
        }
        if now >= next_sample {
            next_sample += 1_000_000;
            let slowest = others.iter().map(|o| o.newest).fold(lab.newest_step, Tick::min);
            rec.slowest_step.push((now, slowest));
        }
    }
    rec
}

/// The measured client's connection at the server: player 0's.
fn measured_peer(server: &RelayServer) -> Option<PeerId> {
    server.players().find(|&(p, _)| p == 0).map(|(_, peer)| peer)
}

/// Another client of a wide match: it sends inputs that change every tick and takes
/// the steps, on the measured client's frames; nothing of it is scored but how far its
/// steps got.
struct Other {
    node: NodeId,
    client: RelayClient,
    /// The newest canonical step it received.
    newest: Tick,
    pushed: u64,
    connected: bool,
}

impl Other {
    fn frame(&mut self, net: &mut SimNet, i: usize, input: &mut [u8], run: bool) {
        // Its events wait for its frame: only the measured client's timing is scored.
        if !run {
            return;
        }
        let local = net.local_now(self.node);
        for e in net.take_events(self.node) {
            self.client.on_event(local, net.endpoint(self.node), e);
        }
        for _ in 0..self.client.ticks_due(local, net.endpoint(self.node)) {
            let mut x =
                (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ self.pushed.wrapping_mul(0xD1B5_4A32_D192_ED03);
            for b in input.iter_mut() {
                x ^= x >> 29;
                x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
                *b = (x >> 56) as u8;
            }
            self.pushed += 1;
            let _ = self.client.push_input(local, net.endpoint(self.node), input);
        }
        while let Some((tick, _)) = self.client.poll_step() {
            self.newest = self.newest.max(tick);
        }
    }
}

/// What the lab knows that the sessions do not: the ground truth, per input.
#[derive(Default)]
struct Ledger {
    /// Client tick of each input sequence number (the payload is the sequence number).
    seq_tick: Vec<Tick>,
    /// The next client tick the server's steps will consume or substitute.
    server_next: Option<Tick>,
    /// (server tick, true send time) of each update sent to the client.
    update_sent: Vec<(Tick, Micros)>,
    newest_update: Option<Tick>,
    depth: u32,
    /// Newest own input the client has seen consumed in the canonical steps.
    known_consumed: Option<Tick>,
    next_tick: Tick,
    snaps: u64,
    resets: u64,
    /// The newest canonical step the measured client received.
    newest_step: Tick,
    /// Decoding buffers, reused for every message the lab reads.
    spans: Vec<(usize, usize)>,
    view: UpdateView,
}

fn seq_of(payload: &[u8]) -> Option<usize> {
    Some(u32::from_le_bytes(payload.get(..4)?.try_into().ok()?) as usize)
}

impl Ledger {
    /// A client message reached the server's engine: the first copy of each input in it
    /// arrived now.
    fn on_server_receives(&mut self, rec: &mut RunRecord, data: &[u8], max_input: usize, now: Micros) {
        if data.first() != Some(&KIND_CLIENT_INPUTS) {
            return;
        }
        let Ok(head) = decode_client_input_spans(data, max_input, &mut self.spans) else { return };
        let first = head.first_tick;
        for i in 0..self.spans.len() {
            let tick = first.wrapping_add(i as Tick);
            if let Some(r) = rec.input_mut(tick) {
                r.first_arrival.get_or_insert(now);
            }
        }
    }

    /// One server tick: what the jitter buffer's ledger says it did, and which inputs
    /// it consumed (by their payloads) or substituted.
    fn on_server_step(
        &mut self,
        rec: &mut RunRecord,
        before: &JitterStats,
        after: &JitterStats,
        step: &PlayerStep,
        now: Micros,
    ) {
        let kind = if after.underflows > before.underflows {
            StepKind::Underflow
        } else if after.lost > before.lost {
            StepKind::Lost
        } else if after.merges > before.merges {
            StepKind::Merged
        } else {
            StepKind::Normal
        };
        if kind != StepKind::Underflow {
            let payload_tick =
                |i: usize| step.inputs.get(i).and_then(|p| seq_of(p)).and_then(|s| self.seq_tick.get(s).copied());
            let first = *self.server_next.get_or_insert_with(|| payload_tick(0).unwrap_or(0));
            for i in 0..step.accepted as usize {
                let tick = first + i as Tick;
                let real = kind != StepKind::Lost && payload_tick(i) == Some(tick);
                if let Some(r) = rec.input_mut(tick) {
                    r.consumed = Some(now);
                    r.substituted = !real;
                }
            }
            self.server_next = Some(first + Tick::from(step.accepted));
        }
        if rec.inputs.is_empty() {
            return; // the client has not started yet: nothing to score
        }
        rec.server_ticks.push(ServerTickRecord { at: now, kind, depth: self.depth });
    }

    /// A server message reached the client's engine.
    fn on_client_receives(&mut self, rec: &mut RunRecord, data: &[u8], max_input: usize, now: Micros) {
        if data.first() != Some(&KIND_SERVER_UPDATE) {
            return;
        }
        if decode_server_update_into(data, &StepRules::any(max_input), &mut self.view).is_err() {
            return;
        }
        let head = self.view.head.expect("decoded");
        let tick = head.server_tick;
        self.depth = head.depth as u32;
        if self.newest_update.is_none_or(|n| tick > n) {
            self.newest_update = Some(tick);
            if let Ok(i) = self.update_sent.binary_search_by_key(&tick, |s| s.0) {
                let sent = self.update_sent[i].1;
                rec.downlink.push((sent, now - sent));
            }
        }
    }

    /// One client frame, as an engine runs it: due ticks, one input each, the canonical
    /// steps, then rendering. An input is its sequence number, then (wider inputs)
    /// bytes that change every tick. `server` is the server's local time in ticks and
    /// its tick.
    #[allow(clippy::too_many_arguments)]
    fn frame(
        &mut self,
        rec: &mut RunRecord,
        client: &mut RelayClient,
        net: &mut SimNet,
        cn: usize,
        now: Micros,
        server: (f64, Tick),
        input: &mut [u8],
    ) {
        let (server_pos, server_tick) = server;
        let local = net.local_now(cn);
        let max_input = input.len();
        let n = with_uplink_tap(net.endpoint(cn), rec, &mut self.spans, max_input, |t| client.ticks_due(local, t));
        for _ in 0..n {
            let seq = self.seq_tick.len() as u32;
            input[..4].copy_from_slice(&seq.to_le_bytes());
            for (k, b) in input[4..].iter_mut().enumerate() {
                *b = (seq as u8).wrapping_mul(31).wrapping_add(k as u8);
            }
            let pushed = with_uplink_tap(net.endpoint(cn), rec, &mut self.spans, max_input, |t| {
                client.push_input(local, t, input)
            });
            let Ok(tick) = pushed else { continue };
            self.seq_tick.push(tick);
            if rec.inputs.is_empty() {
                rec.first_tick = tick;
            }
            if tick < self.next_tick {
                rec.tick_went_back = true;
            }
            self.next_tick = tick + 1;
            let i = (tick - rec.first_tick) as usize;
            if rec.inputs.len() <= i {
                rec.inputs.resize(i + 1, InputRecord::default());
            }
            rec.inputs[i].sampled = now;
        }
        while let Some((tick, step)) = client.poll_step() {
            self.newest_step = self.newest_step.max(tick);
            let me = client.player();
            if let Some(p) = step.iter().find(|p| Some(p.player) == me) {
                for input in &p.inputs {
                    if let Some(&t) = seq_of(input).and_then(|s| self.seq_tick.get(s)) {
                        self.known_consumed = Some(self.known_consumed.map_or(t, |k| k.max(t)));
                    }
                }
            }
        }
        let snaps = client.snaps();
        for _ in self.snaps..snaps {
            rec.snaps.push(now);
        }
        self.snaps = snaps;
        // The client's corrections are its snaps and its lead loop's re-acquisitions.
        let resets = client.stats(local, net.endpoint(cn)).clock_corrections - snaps;
        for _ in self.resets..resets {
            rec.resets.push(now);
        }
        self.resets = resets;
        if !client.started() {
            return;
        }
        let playback = client.remote_playback(local);
        let starved = matches!((self.newest_update, playback), (Some(n), Some(p)) if p > n as f64);
        let prediction = self.known_consumed.map_or(0.0, |c| self.next_tick as f64 - c as f64);
        rec.frames.push(FrameRecord {
            at: now,
            scale: client.time_scale(),
            prediction,
            server_pos,
            playback,
            starved,
            depth: self.depth,
            // The tick the client samples next against the tick the server runs: the
            // client clock's own action (the server runs ticks of the same numbering).
            clock_lead: self.next_tick as f64 - server_tick as f64,
        });
    }
}

/// Runs `f` with the measured client's transport tapped: the copies of its inputs in
/// what it sends are counted into `rec` ([`count_inputs`]).
fn with_uplink_tap<R>(
    ep: &mut Endpoint,
    rec: &mut RunRecord,
    spans: &mut Vec<(usize, usize)>,
    max_input: usize,
    f: impl FnOnce(&mut SendTap) -> R,
) -> R {
    let mut count = |_: PeerId, data: &[u8]| count_inputs(rec, spans, max_input, data);
    f(&mut SendTap { ep, on_send: &mut count })
}

/// The copies of the measured client's inputs in a message it sent, and its bytes.
fn count_inputs(rec: &mut RunRecord, spans: &mut Vec<(usize, usize)>, max_input: usize, data: &[u8]) {
    if data.first() == Some(&KIND_CLIENT_INPUTS) && decode_client_input_spans(data, max_input, spans).is_ok() {
        rec.uplink_copies += spans.len() as u64;
        rec.uplink_bytes += data.len() as u64;
    }
}

/// The steps in an update the server sent the measured client, and its bytes.
fn count_steps(rec: &mut RunRecord, view: &mut UpdateView, max_input: usize, data: &[u8]) {
    if data.first() == Some(&KIND_SERVER_UPDATE)
        && decode_server_update_into(data, &StepRules::any(max_input), view).is_ok()
    {
        rec.downlink_copies += view.n_entries() as u64;
        rec.downlink_bytes += data.len() as u64;
    }
}

/// A transport that shows every message sent through it to `on_send` (peer, bytes)
/// and hands everything on to the endpoint as it is: the lab counts the copies the
/// measured client's inputs and its steps travel in.
struct SendTap<'a> {
    ep: &'a mut Endpoint,
    on_send: &'a mut dyn FnMut(PeerId, &[u8]),
}

impl Transport for SendTap<'_> {
    fn connect_bound(&mut self, now: Micros, addr: SocketAddr, binding: Option<Binding>) -> Result<PeerId, SendError> {
        Transport::connect_bound(self.ep, now, addr, binding)
    }
    fn set_local_id(&mut self, id: Option<u32>) {
        Transport::set_local_id(self.ep, id);
    }
    fn disconnect(&mut self, now: Micros, peer: PeerId) {
        Transport::disconnect(self.ep, now, peer);
    }
    fn disconnect_with(&mut self, now: Micros, peer: PeerId, reason: DisconnectReason) {
        Transport::disconnect_with(self.ep, now, peer, reason);
    }
    fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), SendError> {
        (self.on_send)(peer, data);
        Transport::send(self.ep, peer, channel, data)
    }
    fn flush(&mut self, now: Micros) {
        Transport::flush(self.ep, now);
    }
    fn recycle(&mut self, buf: Vec<u8>) {
        Transport::recycle(self.ep, buf);
    }
    fn stats(&mut self, peer: PeerId) -> Option<ConnectionStats> {
        Transport::stats(self.ep, peer)
    }
    fn max_unreliable(&self) -> usize {
        Transport::max_unreliable(self.ep)
    }
}
