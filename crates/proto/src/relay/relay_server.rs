//! The relay server's synchronisation layer: a steady tick that never waits, one input
//! jitter buffer per client, canonical steps, and the feedback each client's lead loop
//! needs (arrival margins and the server's consumption shift).
//!
//! Sans-IO and transport-agnostic in ownership: the caller owns the transport and
//! lends it to each call, so the same session runs on the network thread, in the
//! simulator and in tests. Players have ids of their own (not the transport's peer
//! ids), so a session can give a reconnecting client its old id back.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;

use super::messages::{self, MarginReport};
use super::step_history::{StepHistory, StepView};
use crate::clock::Micros;
use crate::jitter::{JitterBuffer, JitterConfig, JitterStats, KickReason, PushOutcome};
use crate::request::Tick;
use crate::transport::{CHANNEL_UNRELIABLE, ConfigError, DisconnectReason, EndpointConfig, Event, PeerId, Transport};
use crate::wire::MAX_DATAGRAM_SIZE;

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
    /// Every input must be exactly this many bytes (None: any length up to
    /// `jitter.max_input_size`). A message breaking it is dropped and counted, and
    /// empty substitutes are zero-filled to this size, so every input in a step has it.
    pub input_size: Option<usize>,
    /// Most steps kept for clients that have not acknowledged them (a joining client
    /// needs every step from its join tick). A client needing an older step can never
    /// catch up and is dropped ([`RelayServerEvent::FellBehind`]).
    pub step_history: usize,
    /// Admit every peer as a player as soon as it connects (the bare sync layer).
    /// Sessions that check identity first turn this off and call [`RelayServer::admit`].
    pub auto_admit: bool,
}

impl Default for RelayServerConfig {
    fn default() -> Self {
        RelayServerConfig {
            endpoint: EndpointConfig { max_incoming: 16, ..EndpointConfig::default() },
            tick_us: 1e6 / 60.0,
            send_interval: 3,
            jitter: JitterConfig { max_input_size: 64, ..JitterConfig::default() },
            max_steps_per_update: 32,
            input_size: None,
            step_history: 600,
            auto_admit: true,
        }
    }
}

/// What the server tells its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelayServerEvent {
    /// A peer was admitted automatically (`auto_admit`).
    Joined { peer: PeerId, player: u32 },
    /// The connection of an automatically admitted player closed.
    Left { peer: PeerId, player: u32, reason: DisconnectReason },
    /// The jitter buffer asked for this client to be removed. `jitter`: its counters
    /// at removal (the server no longer has them).
    Kicked { peer: PeerId, player: u32, reason: KickReason, jitter: JitterStats },
    /// The client needs a step the server no longer keeps; it was removed.
    FellBehind { peer: PeerId, player: u32, jitter: JitterStats },
}

/// Why [`RelayServer::admit`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AdmitError {
    #[error("player {0} is already in the game")]
    PlayerInUse(u32),
    #[error("peer {0} is already a player")]
    PeerInUse(PeerId),
}

/// Counters of messages the server refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelayServerStats {
    /// Input messages that failed strict decoding or carried an input of the wrong size.
    pub malformed: u64,
    /// Input messages from peers that are not players.
    pub unknown_peer: u64,
}

struct Client {
    peer: PeerId,
    jitter: JitterBuffer,
    /// Margin reports since the last update, newest last; only the newest
    /// [`MARGINS_SENT`] are ever sent, so older ones are dropped in batches.
    margins: Vec<MarginReport>,
    /// Highest client tick received with all before it (for the client's redundancy).
    input_ack: Option<Tick>,
    /// Highest step tick the client has acknowledged.
    step_ack: Option<Tick>,
    /// The first step that includes this client (it needs nothing earlier).
    joined_at: Tick,
    /// The client tick of the first input consumed (real or substituted).
    first_input: Option<Tick>,
    /// Newest input tick of any packet so far, and the client's send interval as
    /// seen: the smallest step between the newest inputs of successive packets (loss
    /// only makes steps longer, and reordered packets are not steps forward).
    newest_seen: Option<Tick>,
    send_interval: Option<u32>,
}

impl Client {
    /// The oldest step this client still needs.
    fn needs_from(&self) -> Tick {
        self.step_ack.map_or(self.joined_at, |a| a.saturating_add(1)).max(self.joined_at)
    }
}

/// A client's send interval (ticks) until two of its packets show it: the default
/// client's.
const ASSUMED_SEND_INTERVAL: u32 = 2;
/// Longest send interval a client may use (ticks).
const MAX_SEND_INTERVAL: u32 = 32;

/// Checksum reports repeated in every update (a check every few dozen ticks is then
/// sent in many updates, so loss rarely hides one).
const CHECKS_KEPT: usize = 2;

/// Margin reports one update carries at most (the newest).
const MARGINS_SENT: usize = 64;

/// Zero bytes that empty substitutes are filled with (inputs are at most 255 bytes).
const ZEROS: [u8; 255] = [0; 255];

pub struct RelayServer {
    cfg: RelayServerConfig,
    /// By player id (steps list players in this order).
    clients: BTreeMap<u32, Client>,
    by_peer: BTreeMap<PeerId, u32>,
    tick: Tick,
    last_tick_at: Micros,
    /// Recent canonical steps, oldest first, for redundancy until acknowledged.
    steps: StepHistory,
    events: VecDeque<RelayServerEvent>,
    /// Peers to disconnect at the next flush (kicked during a tick).
    to_disconnect: Vec<PeerId>,
    updates_due: bool,
    checks: [(Tick, u64); CHECKS_KEPT],
    n_checks: usize,
    stats: RelayServerStats,
    buf: Vec<u8>,
    input_spans: Vec<(usize, usize)>,
}

impl RelayServerConfig {
    /// Checks the settings without building a server.
    pub fn validate(&self) -> Result<(), ConfigError> {
        // NaN fails the tick check too.
        let tick_ok = self.tick_us.is_finite() && self.tick_us >= 100.0;
        let size_ok = self.input_size.is_none_or(|n| n <= self.jitter.max_input_size);
        if self.send_interval == 0 || !tick_ok || self.jitter.max_input_size > 255 || !size_ok {
            return Err(ConfigError(format!(
                "relay server: send_interval {} must be > 0, tick_us {} >= 100, max_input_size {} <= 255, input_size {:?} <= max_input_size",
                self.send_interval, self.tick_us, self.jitter.max_input_size, self.input_size
            )));
        }
        self.endpoint.validate()
    }
}

impl RelayServer {
    /// Checks the config; the caller creates the endpoint (with `max_incoming` > 0).
    pub fn new(cfg: RelayServerConfig, now: Micros) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let history = cfg.step_history.max(4 * cfg.max_steps_per_update);
        Ok(RelayServer {
            steps: StepHistory::new(history),
            cfg,
            clients: BTreeMap::new(),
            by_peer: BTreeMap::new(),
            tick: 0,
            last_tick_at: now,
            events: VecDeque::new(),
            to_disconnect: Vec::new(),
            updates_due: false,
            checks: [(0, 0); CHECKS_KEPT],
            n_checks: 0,
            stats: RelayServerStats::default(),
            buf: Vec::with_capacity(MAX_DATAGRAM_SIZE),
            input_spans: Vec::with_capacity(255),
        })
    }

    pub fn config(&self) -> &RelayServerConfig {
        &self.cfg
    }

    /// The last step run.
    pub fn tick(&self) -> Tick {
        self.tick
    }

    /// The players' peers, in player order.
    pub fn clients(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.clients.values().map(|c| c.peer)
    }

    /// `(player, peer)` pairs, in player order.
    pub fn players(&self) -> impl Iterator<Item = (u32, PeerId)> + '_ {
        self.clients.iter().map(|(&p, c)| (p, c.peer))
    }

    pub fn player_of(&self, peer: PeerId) -> Option<u32> {
        self.by_peer.get(&peer).copied()
    }

    /// The first step that includes `player`.
    pub fn joined_at(&self, player: u32) -> Option<Tick> {
        self.clients.get(&player).map(|c| c.joined_at)
    }

    pub fn jitter_stats(&self, peer: PeerId) -> Option<JitterStats> {
        self.by_peer.get(&peer).map(|p| self.clients[p].jitter.stats())
    }

    /// Inputs queued in `peer`'s jitter buffer now.
    pub fn jitter_depth(&self, peer: PeerId) -> Option<usize> {
        self.by_peer.get(&peer).map(|p| self.clients[p].jitter.depth())
    }

    pub fn stats(&self) -> RelayServerStats {
        self.stats
    }

    pub fn poll_event(&mut self) -> Option<RelayServerEvent> {
        self.events.pop_front()
    }

    /// Makes `peer` player `player` from the next step on, with a fresh jitter buffer.
    pub fn admit(&mut self, peer: PeerId, player: u32) -> Result<(), AdmitError> {
        if self.clients.contains_key(&player) {
            return Err(AdmitError::PlayerInUse(player));
        }
        if self.by_peer.contains_key(&peer) {
            return Err(AdmitError::PeerInUse(peer));
        }
        let c = Client {
            peer,
            jitter: JitterBuffer::new(self.cfg.jitter),
            margins: Vec::with_capacity(2 * MARGINS_SENT),
            input_ack: None,
            step_ack: None,
            joined_at: self.tick + 1,
            first_input: None,
            newest_seen: None,
            send_interval: None,
        };
        self.clients.insert(player, c);
        self.by_peer.insert(peer, player);
        let input_size = self.cfg.input_size.unwrap_or(self.cfg.jitter.max_input_size);
        self.steps.reserve(self.clients.len(), input_size);
        Ok(())
    }

    /// Removes `peer`'s player (from the next step on); returns its id.
    pub fn remove(&mut self, peer: PeerId) -> Option<u32> {
        let player = self.by_peer.remove(&peer)?;
        self.clients.remove(&player);
        Some(player)
    }

    /// The smallest player id not in use.
    pub fn free_player(&self) -> u32 {
        (0..).find(|p| !self.clients.contains_key(p)).expect("fewer than 2^32 players")
    }

    /// The server engine's checksum of its state at the start of `tick`; the newest
    /// few go out with every update for the clients' desync checks.
    pub fn report_checksum(&mut self, tick: Tick, checksum: u64) {
        if self.n_checks == CHECKS_KEPT {
            self.checks.copy_within(1.., 0);
            self.n_checks -= 1;
        }
        self.checks[self.n_checks] = (tick, checksum);
        self.n_checks += 1;
    }

    /// The server's simulation position: the last step plus the elapsed part of one.
    fn position(&self, now: Micros) -> f64 {
        self.tick as f64 + (now.saturating_sub(self.last_tick_at) as f64 / self.cfg.tick_us).min(1.0)
    }

    /// Handles one event from the endpoint (call for every event it produces).
    pub fn on_event<T: Transport + ?Sized>(&mut self, now: Micros, ep: &mut T, e: Event) {
        match e {
            Event::Connected { peer, .. } if self.cfg.auto_admit => {
                let player = self.free_player();
                if self.admit(peer, player).is_ok() {
                    self.events.push_back(RelayServerEvent::Joined { peer, player });
                }
            }
            Event::Connected { .. } => {}
            Event::Disconnected { peer, reason } => {
                if let Some(player) = self.remove(peer) {
                    self.events.push_back(RelayServerEvent::Left { peer, player, reason });
                }
            }
            Event::Message { peer, channel, data } => {
                if channel == CHANNEL_UNRELIABLE {
                    self.handle_inputs(now, peer, &data);
                }
                ep.recycle(data);
            }
        }
    }

    /// Takes a ClientInputs message from `peer`. Messages from peers that are not
    /// players, or that fail strict decoding, are dropped and counted.
    pub fn handle_inputs(&mut self, now: Micros, peer: PeerId, data: &[u8]) {
        let pos = self.position(now);
        let max = self.cfg.jitter.max_input_size;
        let Some(c) = self.by_peer.get(&peer).and_then(|p| self.clients.get_mut(p)) else {
            self.stats.unknown_peer += 1;
            return;
        };
        let Ok((step_ack, first_tick)) = messages::decode_client_input_spans(data, max, &mut self.input_spans) else {
            self.stats.malformed += 1;
            return;
        };
        if let Some(n) = self.cfg.input_size {
            if self.input_spans.iter().any(|&(_, len)| len != n) {
                self.stats.malformed += 1;
                return;
            }
        }
        let inputs = self.input_spans.iter().map(|&(o, n)| &data[o..o + n]);
        let count = self.input_spans.len();
        if step_ack != messages::NONE {
            // Never beyond the last step run: a lying ack must not stop resends.
            let ack = step_ack.min(self.tick);
            c.step_ack = Some(c.step_ack.map_or(ack, |a| a.max(ack)));
        }
        if count > 0 {
            // Ticks from the wire: a message reaching past `Tick::MAX` is held there.
            let top = first_tick.saturating_add(count as Tick - 1);
            if let Some(step) =
                c.newest_seen.and_then(|prev| top.checked_sub(prev)).filter(|d| (1..=MAX_SEND_INTERVAL).contains(d))
            {
                c.send_interval = Some(c.send_interval.map_or(step, |k| k.min(step)));
            }
            c.newest_seen = Some(c.newest_seen.map_or(top, |p| p.max(top)));
        }
        // Copies of one input are a send interval apart.
        let k = c.send_interval.unwrap_or(ASSUMED_SEND_INTERVAL);
        for (i, input) in inputs.enumerate() {
            let tick = first_tick.wrapping_add(i as u32);
            let copy = ((count - 1 - i) as u32 / k).min(u8::MAX as u32) as u8;
            match c.jitter.push(pos, tick, input) {
                PushOutcome::Queued { margin } | PushOutcome::Late { margin } => {
                    if c.margins.len() == 2 * MARGINS_SENT {
                        c.margins.drain(..MARGINS_SENT);
                    }
                    c.margins.push(MarginReport { tick, margin, copy });
                }
                // Overflow: the next tick kicks this client (its queue is past the cap).
                PushOutcome::Duplicate | PushOutcome::TooLarge | PushOutcome::Overflow => {}
            }
        }
        // Only a contiguous ack lets the client stop resending: an input behind a gap
        // must keep being sent until it arrives.
        c.input_ack = c.jitter.contiguous_received();
    }

    /// Runs one server tick: consumes one step per client and forms the canonical
    /// step. Returns it (players in id order). Every `send_interval` ticks, sends each
    /// client its update.
    pub fn step<T: Transport + ?Sized>(&mut self, now: Micros, ep: &mut T) -> StepView<'_> {
        self.tick_step(now);
        self.flush(now, ep);
        self.steps.newest()
    }

    /// [`RelayServer::step`] without the sending: forms the canonical step (players in
    /// id order). [`RelayServer::flush`] then sends what is due.
    pub fn tick_step(&mut self, now: Micros) -> StepView<'_> {
        self.tick += 1;
        self.last_tick_at = now;
        let tick = self.tick;
        let fill = self.cfg.input_size;
        self.steps.begin();
        // Walks the players by id so that kicked ones can go at once.
        let mut after = Bound::Unbounded;
        while let Some((&player, c)) = self.clients.range_mut((after, Bound::Unbounded)).next() {
            after = Bound::Excluded(player);
            match c.jitter.pop(tick) {
                Ok(s) => {
                    let accepted = s.accepted.min(255) as u8;
                    if c.first_input.is_none() && accepted > 0 {
                        c.first_input = Some(s.first_client_tick);
                    }
                    let inputs = s.inputs.iter().map(|i| match fill {
                        Some(n) if i.is_empty() => &ZEROS[..n],
                        _ => i.as_slice(),
                    });
                    self.steps.push_player(player, accepted, inputs);
                }
                Err(reason) => {
                    let (peer, jitter) = (c.peer, c.jitter.stats());
                    self.remove(peer);
                    self.to_disconnect.push(peer);
                    self.events.push_back(RelayServerEvent::Kicked { peer, player, reason, jitter });
                }
            }
        }
        self.steps.finish(tick);
        // Keep what some client still needs, within the history limit.
        let needed = self.clients.values().map(Client::needs_from).min();
        let keep = 4 * self.cfg.max_steps_per_update;
        while let Some(t) = self.steps.oldest_tick() {
            let len = self.steps.len();
            let acked_by_all = needed.is_none_or(|n| t < n);
            if len > self.cfg.step_history.max(keep) || (len > keep && acked_by_all) {
                self.steps.pop_oldest();
            } else {
                break;
            }
        }
        if tick % self.cfg.send_interval == 0 {
            self.updates_due = true;
        }
        self.steps.newest()
    }

    /// Closes the connections of kicked clients and sends the updates due.
    pub fn flush<T: Transport + ?Sized>(&mut self, now: Micros, ep: &mut T) {
        for peer in self.to_disconnect.drain(..) {
            ep.disconnect(now, peer);
        }
        if std::mem::take(&mut self.updates_due) {
            self.send_updates(now, ep);
        }
    }

    fn send_updates<T: Transport + ?Sized>(&mut self, now: Micros, ep: &mut T) {
        let oldest = self.steps.oldest_tick().unwrap_or(self.tick + 1);
        let checks = &self.checks[..self.n_checks];
        // Walks the players by id so that ones fallen behind can go at once.
        let mut after = Bound::Unbounded;
        while let Some((&player, c)) = self.clients.range_mut((after, Bound::Unbounded)).next() {
            after = Bound::Excluded(player);
            let from = c.needs_from();
            if from < oldest {
                let (peer, jitter) = (c.peer, c.jitter.stats());
                // (Not `remove`: `checks` borrows the server.)
                self.clients.remove(&player);
                self.by_peer.remove(&peer);
                ep.disconnect(now, peer);
                self.events.push_back(RelayServerEvent::FellBehind { peer, player, jitter });
                continue;
            }
            let first_idx = self.steps.first_from(from);
            // Newest margins first if they do not all fit; steps fill the rest.
            let take_margins = c.margins.len().min(MARGINS_SENT);
            let margins = &c.margins[c.margins.len() - take_margins..];
            let mut n = 0usize;
            let mut size = messages::update_head_size(take_margins, checks.len());
            for sz in self.steps.sizes_from(first_idx).take(self.cfg.max_steps_per_update) {
                if size + sz > crate::transport::MAX_UNRELIABLE {
                    break;
                }
                size += sz;
                n += 1;
            }
            let first_step = self.steps.tick_at(first_idx).unwrap_or(self.tick + 1);
            let uh = messages::UpdateHead {
                server_tick: self.tick,
                your_player: player,
                shift: c.jitter.shift() as i32,
                input_ack: c.input_ack.unwrap_or(messages::NONE),
                depth: c.jitter.depth().min(255) as u8,
                first_input: c.first_input.unwrap_or(messages::NONE),
                substituted: c.jitter.stats().lost as u32,
            };
            messages::encode_server_update_head(&mut self.buf, &uh, margins, checks, first_step, n as u8);
            self.steps.write_steps(&mut self.buf, first_idx, n);
            c.margins.clear();
            let _ = ep.send(c.peer, CHANNEL_UNRELIABLE, &self.buf);
        }
        ep.flush(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_numbers_follow_the_clients_send_interval() {
        // A client sending every 4 ticks with two copies: packets carry ticks 1..4,
        // 1..8, (5..12 lost), 9..16. In the last one, ticks 9..12 arrive first as the
        // second copy (one send interval old), 13..16 as the first.
        let mut server = RelayServer::new(RelayServerConfig::default(), 0).unwrap();
        server.admit(7, 1).unwrap();
        let mut buf = Vec::new();
        let mut send = |server: &mut RelayServer, first: u32, last: u32| {
            let inputs: Vec<[u8; 1]> = (first..=last).map(|t| [t as u8]).collect();
            messages::encode_client_inputs(&mut buf, messages::NONE, first, inputs.iter().map(|i| &i[..]));
            server.handle_inputs(0, 7, &buf);
        };
        send(&mut server, 1, 4);
        send(&mut server, 1, 8);
        send(&mut server, 9, 16);
        let c = &server.clients[&1];
        assert_eq!(c.send_interval, Some(4));
        let copy_of = |tick: u32| c.margins.iter().find(|m| m.tick == tick).map(|m| m.copy);
        // (The first packet's copies are numbered by the assumed interval of 2.)
        assert_eq!((copy_of(5), copy_of(8)), (Some(0), Some(0)));
        assert!((9..=12).all(|t| copy_of(t) == Some(1)), "{:?}", c.margins);
        assert!((13..=16).all(|t| copy_of(t) == Some(0)), "{:?}", c.margins);
    }

    #[test]
    fn inputs_at_the_end_of_the_tick_range_do_not_overflow() {
        // A client's ticks come from the wire: a message running past Tick::MAX is taken
        // up to the end (the ticks beyond wrap to old ticks: duplicates, dropped).
        let mut server = RelayServer::new(RelayServerConfig::default(), 0).unwrap();
        server.admit(7, 1).unwrap();
        let mut buf = Vec::new();
        let inputs = [[1u8], [2], [3], [4]];
        messages::encode_client_inputs(&mut buf, messages::NONE, Tick::MAX - 1, inputs.iter().map(|i| &i[..]));
        server.handle_inputs(0, 7, &buf);
        assert_eq!(server.clients[&1].input_ack, Some(Tick::MAX));
        for _ in 0..4 {
            server.tick_step(0);
        }
        assert_eq!(server.clients[&1].first_input, Some(Tick::MAX - 1));
    }
}
