//! The relay server's synchronisation layer: a steady tick that never waits, one input
//! jitter buffer per client, canonical steps, and the feedback each client's lead loop
//! needs (arrival margins and the server's consumption shift).
//!
//! Sans-IO and transport-agnostic in ownership: the caller owns the [`Endpoint`] and
//! lends it to each call, so the same session runs on the network thread, in the
//! simulator and in tests.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;

use super::messages::{self, MarginReport, PlayerStep};
use crate::core::clock::Micros;
use crate::core::jitter::{JitterBuffer, JitterConfig, JitterStats, KickReason, PushOutcome};
use crate::core::transport::{CHANNEL_UNRELIABLE, ConfigError, DisconnectReason, EndpointConfig, Event, PeerId, Transport};
use crate::core::wire::MAX_DATAGRAM_SIZE;

#[derive(Debug, Clone, PartialEq)]
pub struct RelayServerConfig {
    pub endpoint: EndpointConfig,
    /// Tick length in microseconds.
    pub tick_us: f64,
    /// Server ticks between updates to each client (k_s).
    pub send_interval: u32,
    pub jitter: JitterConfig,
    /// Most steps one update repeats for a client that has not acknowledged them.
    pub max_steps_per_update: usize,
}

impl Default for RelayServerConfig {
    fn default() -> Self {
        RelayServerConfig {
            endpoint: EndpointConfig { max_incoming: 16, ..EndpointConfig::default() },
            tick_us: 1e6 / 60.0,
            send_interval: 3,
            jitter: JitterConfig { max_input_size: 64, ..JitterConfig::default() },
            max_steps_per_update: 32,
        }
    }
}

/// What the server tells its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelayServerEvent {
    Joined { peer: PeerId, addr: SocketAddr },
    Left { peer: PeerId, reason: DisconnectReason },
    /// The jitter buffer asked for this client to be removed.
    Kicked { peer: PeerId, reason: KickReason },
}

struct Client {
    jitter: JitterBuffer,
    margins: Vec<MarginReport>,
    /// Highest client tick received with all before it (for the client's redundancy).
    input_ack: Option<u32>,
    /// Highest step tick the client has acknowledged.
    step_ack: Option<u64>,
    /// The first step that includes this client (it needs nothing earlier).
    joined_at: u64,
}

pub struct RelayServer {
    cfg: RelayServerConfig,
    clients: BTreeMap<PeerId, Client>,
    tick: u64,
    last_tick_at: Micros,
    /// Recent canonical steps, oldest first, for redundancy until acknowledged.
    steps: VecDeque<(u64, Vec<PlayerStep>)>,
    events: VecDeque<RelayServerEvent>,
    buf: Vec<u8>,
    input_spans: Vec<(usize, usize)>,
}

impl RelayServer {
    /// Checks the config; the caller creates the endpoint (with `max_incoming` > 0).
    pub fn new(cfg: RelayServerConfig, now: Micros) -> Result<Self, ConfigError> {
        // NaN fails the tick check too.
        let tick_ok = cfg.tick_us.is_finite() && cfg.tick_us >= 100.0;
        if cfg.send_interval == 0 || !tick_ok || cfg.jitter.max_input_size > 255 {
            return Err(ConfigError(format!(
                "relay server: send_interval {} must be > 0, tick_us {} >= 100, max_input_size {} <= 255",
                cfg.send_interval, cfg.tick_us, cfg.jitter.max_input_size
            )));
        }
        cfg.endpoint.validate()?;
        Ok(RelayServer {
            cfg,
            clients: BTreeMap::new(),
            tick: 0,
            last_tick_at: now,
            steps: VecDeque::new(),
            events: VecDeque::new(),
            buf: Vec::with_capacity(MAX_DATAGRAM_SIZE),
            input_spans: Vec::new(),
        })
    }

    pub fn config(&self) -> &RelayServerConfig {
        &self.cfg
    }

    /// The last step run.
    pub fn tick(&self) -> u64 {
        self.tick
    }

    pub fn clients(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.clients.keys().copied()
    }

    pub fn jitter_stats(&self, peer: PeerId) -> Option<JitterStats> {
        self.clients.get(&peer).map(|c| c.jitter.stats())
    }

    pub fn poll_event(&mut self) -> Option<RelayServerEvent> {
        self.events.pop_front()
    }

    /// The server's simulation position: the last step plus the elapsed part of one.
    fn position(&self, now: Micros) -> f64 {
        self.tick as f64 + (now.saturating_sub(self.last_tick_at) as f64 / self.cfg.tick_us).min(1.0)
    }

    /// Handles one event from the endpoint (call for every event it produces).
    pub fn on_event<T: Transport + ?Sized>(&mut self, now: Micros, ep: &mut T, e: Event) {
        {
            match e {
                Event::Connected { peer, addr } => {
                    self.clients.insert(
                        peer,
                        Client { jitter: JitterBuffer::new(self.cfg.jitter), margins: Vec::new(), input_ack: None, step_ack: None, joined_at: self.tick + 1 },
                    );
                    self.events.push_back(RelayServerEvent::Joined { peer, addr });
                }
                Event::Disconnected { peer, reason } => {
                    if self.clients.remove(&peer).is_some() {
                        self.events.push_back(RelayServerEvent::Left { peer, reason });
                    }
                }
                Event::Message { peer, channel, data } => {
                    if channel == CHANNEL_UNRELIABLE {
                        self.on_inputs(now, peer, &data);
                    }
                    ep.recycle(data);
                }
            }
        }
    }

    fn on_inputs(&mut self, now: Micros, peer: PeerId, data: &[u8]) {
        let pos = self.position(now);
        let max = self.cfg.jitter.max_input_size;
        let Some(c) = self.clients.get_mut(&peer) else { return };
        let Ok((step_ack, first_tick)) = messages::decode_client_input_spans(data, max, &mut self.input_spans) else {
            return; // malformed: dropped (the transport already authenticated the peer)
        };
        let inputs = self.input_spans.iter().map(|&(o, n)| &data[o..o + n]);
        let count = self.input_spans.len();
        if step_ack != messages::NONE {
            let ack = widen(self.tick, step_ack);
            c.step_ack = Some(c.step_ack.map_or(ack, |a| a.max(ack)));
        }
        let newest = first_tick as u64 + count as u64;
        let k = 2; // copies are k_c apart; the copy index is informative only
        for (i, input) in inputs.enumerate() {
            let tick = first_tick.wrapping_add(i as u32);
            let copy = ((newest - 1 - (first_tick as u64 + i as u64)) / k) as u8;
            match c.jitter.push(pos, tick as u64, input) {
                PushOutcome::Queued { margin } | PushOutcome::Late { margin } => c.margins.push(MarginReport { tick, margin, copy }),
                PushOutcome::Duplicate | PushOutcome::TooLarge => {}
            }
        }
        // Only a contiguous ack lets the client stop resending: an input behind a gap
        // must keep being sent until it arrives.
        c.input_ack = c.jitter.contiguous_received().map(|t| t as u32);
    }

    /// Runs one server tick: consumes one step per client and forms the canonical
    /// step. Returns it (players in id order). Every `send_interval` ticks, sends each
    /// client its update.
    pub fn step<T: Transport + ?Sized>(&mut self, now: Micros, ep: &mut T) -> &[PlayerStep] {
        self.tick += 1;
        self.last_tick_at = now;
        let tick = self.tick;
        let mut players = Vec::with_capacity(self.clients.len());
        let mut kicked = Vec::new();
        for (&peer, c) in self.clients.iter_mut() {
            match c.jitter.pop(tick) {
                Ok(s) => {
                    let accepted = s.accepted.min(255) as u8;
                    players.push(PlayerStep { player: peer, accepted, inputs: s.inputs.to_vec() });
                }
                Err(reason) => kicked.push((peer, reason)),
            }
        }
        for (peer, reason) in kicked {
            self.clients.remove(&peer);
            ep.disconnect(now, peer);
            self.events.push_back(RelayServerEvent::Kicked { peer, reason });
        }
        self.steps.push_back((tick, players));
        while self.steps.len() > 4 * self.cfg.max_steps_per_update {
            self.steps.pop_front();
        }
        if tick % self.cfg.send_interval as u64 == 0 {
            self.send_updates(now, ep);
        }
        &self.steps.back().expect("just pushed").1
    }

    fn send_updates<T: Transport + ?Sized>(&mut self, now: Micros, ep: &mut T) {
        let peers: Vec<PeerId> = self.clients.keys().copied().collect();
        for peer in peers {
            let c = self.clients.get_mut(&peer).expect("listed");
            let from = c.step_ack.map_or(c.joined_at, |a| a + 1).max(c.joined_at);
            let first_idx = self.steps.iter().position(|(t, _)| *t >= from).unwrap_or(self.steps.len());
            // Newest margins first if they do not all fit; steps fill the rest.
            let take_margins = c.margins.len().min(64);
            let margins = &c.margins[c.margins.len() - take_margins..];
            let head = 25 + 7 * take_margins;
            let mut n = 0usize;
            let mut size = head;
            for (_, s) in self.steps.iter().skip(first_idx).take(self.cfg.max_steps_per_update) {
                let sz = messages::step_size(s);
                if size + sz > crate::core::transport::MAX_UNRELIABLE {
                    break;
                }
                size += sz;
                n += 1;
            }
            let first_step = self.steps.get(first_idx).map_or(self.tick + 1, |s| s.0);
            let input_ack = c.input_ack.unwrap_or(messages::NONE);
            let uh = messages::UpdateHead {
                server_tick: self.tick as u32,
                your_player: peer,
                shift: c.jitter.shift() as i32,
                input_ack,
                depth: c.jitter.depth().min(255) as u8,
            };
            messages::encode_server_update_head(&mut self.buf, &uh, margins, first_step as u32, n as u8);
            for (_, s) in self.steps.iter().skip(first_idx).take(n) {
                messages::write_step(&mut self.buf, s);
            }
            c.margins.clear();
            let _ = ep.send(peer, CHANNEL_UNRELIABLE, &self.buf);
        }
        ep.flush(now);
    }
}

/// The u64 tick nearest `reference` whose low 32 bits are `v`.
pub fn widen(reference: u64, v: u32) -> u64 {
    let base = reference & !0xFFFF_FFFF;
    let cands = [base.wrapping_sub(1 << 32), base, base.wrapping_add(1 << 32)];
    cands
        .iter()
        .map(|b| b | v as u64)
        .min_by_key(|&c| c.abs_diff(reference))
        .expect("three candidates")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widen_picks_the_nearest() {
        assert_eq!(widen(100, 99), 99);
        assert_eq!(widen(100, 101), 101);
        assert_eq!(widen((1 << 32) + 5, 0xFFFF_FFFE), (1 << 32) - 2);
        assert_eq!(widen((1 << 32) - 2, 3), (1 << 32) + 3);
    }
}
