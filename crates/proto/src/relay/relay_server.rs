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
use super::step_codec::{self, ENTRY_HEAD, FRAGMENT_BYTES, FRAGMENT_HEAD, StepForm};
use super::step_history::{StepHistory, StepView};
use super::step_receiver::CLIENT_STEP_WINDOW;
use crate::clock::Micros;
use crate::engine::Tick;
use crate::game::ConfigProblems;
use crate::jitter::{JitterBuffer, JitterConfig, JitterStats, KickReason, PushOutcome};
use crate::stream::{Reason, SendLedger, SendPlan};
use crate::sync::redundancy::{RedundancyConfig, RedundancyPlanner};
use crate::transport::{CHANNEL_UNRELIABLE, ConfigError, DisconnectReason, EndpointConfig, Event, PeerId, Transport};
use crate::wire::MAX_DATAGRAM_SIZE;

#[derive(Debug, Clone, PartialEq)]
/// Settings of a [`RelayServer`].
pub struct RelayServerConfig {
    /// Settings for the endpoint the caller makes for this server: [`RelayServerConfig::validate`]
    /// checks them, and the server only borrows the endpoint on each call.
    pub endpoint: EndpointConfig,
    /// Tick length in microseconds.
    pub tick_us: f64,
    /// Server ticks between updates to each client (k_s).
    pub send_interval: u32,
    /// The per-client jitter buffer's policies and limits.
    pub jitter: JitterConfig,
    /// Most steps past a client's acknowledged one that are sent (the window also
    /// follows the measured round trip and loss; this caps it). 16..=256.
    pub step_window: usize,
    /// Most datagrams one update to one client takes (new steps beyond them wait for
    /// the next update). 1..=64.
    pub max_update_datagrams: usize,
    /// Bytes per second one client's updates may take before redundant copies of
    /// steps are left out (new steps and resends always go). 0: no cap.
    pub bandwidth_cap: u64,
    /// Copies of each step on lossy links (the measured downlink loss picks how many).
    pub redundancy: RedundancyConfig,
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
            step_window: CLIENT_STEP_WINDOW,
            max_update_datagrams: 16,
            bandwidth_cap: 0,
            // A step lost in every copy stalls the client's whole timeline for a
            // resend timeout (unlike an input, which costs one substitute): aim lower.
            // Its steps are its bandwidth: independent loss until bursts are measured.
            redundancy: RedundancyConfig { residual_loss: 1e-4, burst_prior: 0.0, ..RedundancyConfig::default() },
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
    Joined {
        /// The transport's peer.
        peer: PeerId,
        /// The player id it was given.
        player: u32,
    },
    /// The connection of an automatically admitted player closed.
    Left {
        /// The transport's peer.
        peer: PeerId,
        /// Its player id.
        player: u32,
        /// Why the connection closed.
        reason: DisconnectReason,
    },
    /// The jitter buffer asked for this client to be removed. `jitter`: its counters
    /// at removal (the server no longer has them).
    Kicked {
        /// The transport's peer.
        peer: PeerId,
        /// Its player id.
        player: u32,
        /// Why the jitter buffer asked for it.
        reason: KickReason,
        /// The jitter buffer's counters at removal.
        jitter: JitterStats,
    },
    /// The client needs a step the server no longer keeps. It stays a player, with
    /// updates but no steps, until its owner sends it a snapshot and restarts its
    /// stream there ([`RelayServer::rebase`]).
    FellBehind {
        /// The transport's peer.
        peer: PeerId,
        /// Its player id.
        player: u32,
    },
}

/// Why [`RelayServer::admit`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AdmitError {
    #[error("player {0} is already in the game")]
    /// That player id already has a peer.
    PlayerInUse(u32),
    #[error("peer {0} is already a player")]
    /// That peer already plays another player id.
    PeerInUse(PeerId),
}

/// What the server sent one client of the step stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Update datagrams and their bytes (relay payload, before the transport's header).
    pub datagrams: u64,
    /// Bytes of those update datagrams.
    pub bytes: u64,
    /// Steps sent for the first time, sent again after their resend timeout, sent as
    /// redundant copies, and copies left out under the bandwidth cap.
    pub steps: u64,
    /// Steps sent again after their resend timeout.
    pub resent: u64,
    /// Redundant copies of steps sent.
    pub copies: u64,
    /// Redundant copies left out under the bandwidth cap.
    pub copies_capped: u64,
    /// Updates that could not take every step due (they went in the next one).
    pub full_updates: u64,
    /// Copies each step is planned to get now, from this client's downlink loss and
    /// its bursts (an acknowledgement stops them sooner).
    pub planned_copies: u8,
}

/// Counters of messages the server refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelayServerStats {
    /// Input messages that failed strict decoding or carried an input of the wrong size.
    pub malformed: u64,
    /// Input messages from peers that are not players.
    pub unknown_peer: u64,
    /// Players' parts left out of a step: past the 255th player, or past the largest
    /// step the wire carries (merges of many inputs from many players).
    pub left_out: u64,
}

struct Client {
    peer: PeerId,
    jitter: JitterBuffer,
    /// Margin reports since the last update, newest last; only the newest
    /// [`MARGINS_SENT`] are ever sent, so older ones are dropped in batches.
    margins: Vec<MarginReport>,
    /// Highest client tick received with all before it (for the client's redundancy).
    input_ack: Option<Tick>,
    /// What this client was sent of the step stream and what it acknowledged. Its
    /// start is the first step it gets, sent in full; every later one goes as a delta.
    stream: SendLedger,
    sent: StreamStats,
    /// Bytes the bandwidth cap still allows (negative: over it), and when it was filled.
    allowance: f64,
    allowance_at: Micros,
    /// It needs a step the server no longer keeps: no steps until [`RelayServer::rebase`].
    behind: bool,
    /// The first step that includes this client (it needs nothing earlier).
    joined_at: Tick,
    /// The client tick of the first input consumed (real or substituted).
    first_input: Option<Tick>,
    /// Newest input tick of any packet so far, and the client's send interval as
    /// seen: the smallest step between the newest inputs of successive packets (loss
    /// only makes steps longer, and reordered packets are not steps forward). It falls
    /// at once, and is taken again as the least of the last [`INTERVAL_STEPS`] steps,
    /// so that it rises too: a client sends every tick only while its link is lossy.
    newest_seen: Option<Tick>,
    send_interval: Option<u32>,
    /// The least step and the steps counted since the interval was last taken again.
    interval_least: u32,
    interval_steps: u32,
    /// Copies of each step to this client, from its downlink's loss and bursts.
    redundancy: RedundancyPlanner,
}

impl Client {
    /// The oldest step this client still needs.
    fn needs_from(&self) -> Tick {
        self.stream.acked()
    }
}

/// A client's send interval (ticks) until two of its packets show it: the default
/// client's.
const ASSUMED_SEND_INTERVAL: u32 = 2;
/// Longest send interval a client may use (ticks).
const MAX_SEND_INTERVAL: u32 = 32;
/// Steps between a client's packets over which its send interval is taken again.
const INTERVAL_STEPS: u32 = 32;

/// Checksum reports repeated in every update (a check every few dozen ticks is then
/// sent in many updates, so loss rarely hides one).
const CHECKS_KEPT: usize = 2;

/// Margin reports one update carries at most (the newest).
const MARGINS_SENT: usize = 64;

/// Copies of each step before the transport has seen enough packets to measure loss.
const STARTING_COPIES: u8 = 2;
/// Round trip assumed before the transport has measured one.
const ASSUMED_RTT_US: f64 = 200_000.0;

/// Zero bytes that empty substitutes are filled with (inputs are at most 255 bytes).
const ZEROS: [u8; 255] = [0; 255];

/// The relay server's synchronisation layer (see the module docs). It borrows the
/// caller's transport on each call.
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
    /// The steps' mean size as deltas (bytes), for the copies' byte budget.
    step_bytes: f64,
    checks: [(Tick, u64); CHECKS_KEPT],
    n_checks: usize,
    stats: RelayServerStats,
    buf: Vec<u8>,
    input_spans: Vec<(usize, usize)>,
    /// The steps chosen for one client's update.
    chosen: Vec<(Tick, Reason)>,
}

impl RelayServerConfig {
    /// Checks the settings without building a server.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut p = ConfigProblems::new();
        // NaN fails the tick check too.
        if !(self.tick_us.is_finite() && self.tick_us >= 100.0) {
            p.push("tick_us", format!("{} is below 100", self.tick_us));
        }
        if let Some(n) = self.input_size.filter(|&n| n > self.jitter.max_input_size) {
            p.push("input_size", format!("{n} is above jitter.max_input_size ({})", self.jitter.max_input_size));
        }
        self.check_knobs("", &mut p);
        p.into_result().map_err(|p| ConfigError(format!("relay server: {p}")))
    }

    /// Checks the settings that are not the game's shape (a session sets `tick_us` and
    /// `input_size` from its [`GameShape`](crate::GameShape)), each under `prefix` and
    /// its name.
    pub(crate) fn check_knobs(&self, prefix: &str, p: &mut ConfigProblems) {
        if self.send_interval == 0 {
            p.push(format!("{prefix}send_interval"), "0 is below 1 tick");
        }
        let max_input = self.jitter.max_input_size;
        if max_input > crate::game::MAX_INPUT_SIZE {
            p.push(
                format!("{prefix}jitter.max_input_size"),
                format!("{max_input} is above {}", crate::game::MAX_INPUT_SIZE),
            );
        }
        if !(16..=CLIENT_STEP_WINDOW).contains(&self.step_window) {
            p.push(format!("{prefix}step_window"), format!("{} is not in 16..={CLIENT_STEP_WINDOW}", self.step_window));
        }
        if !(1..=64).contains(&self.max_update_datagrams) {
            p.push(format!("{prefix}max_update_datagrams"), format!("{} is not in 1..=64", self.max_update_datagrams));
        }
        p.push_result(&format!("{prefix}endpoint"), self.endpoint.validate().map_err(|e| e.0));
    }
}

impl RelayServer {
    /// Checks the config; the caller creates the endpoint (with `max_incoming` > 0).
    pub fn new(cfg: RelayServerConfig, now: Micros) -> Result<Self, ConfigError> {
        cfg.validate()?;
        Ok(RelayServer {
            steps: StepHistory::new(cfg.step_history.max(1)),
            cfg,
            clients: BTreeMap::new(),
            by_peer: BTreeMap::new(),
            tick: 0,
            last_tick_at: now,
            events: VecDeque::new(),
            to_disconnect: Vec::new(),
            updates_due: false,
            step_bytes: 0.0,
            checks: [(0, 0); CHECKS_KEPT],
            n_checks: 0,
            stats: RelayServerStats::default(),
            buf: Vec::with_capacity(MAX_DATAGRAM_SIZE),
            input_spans: Vec::with_capacity(255),
            chosen: Vec::with_capacity(2 * CLIENT_STEP_WINDOW),
        })
    }

    /// The server's config.
    pub fn config(&self) -> &RelayServerConfig {
        &self.cfg
    }

    /// The last step run (0 before the first; the next step is one after it).
    pub fn last_tick(&self) -> Tick {
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

    /// The player `peer` plays, if it is one.
    pub fn player_of(&self, peer: PeerId) -> Option<u32> {
        self.by_peer.get(&peer).copied()
    }

    /// The first step that includes `player`.
    pub fn joined_at(&self, player: u32) -> Option<Tick> {
        self.clients.get(&player).map(|c| c.joined_at)
    }

    /// What `peer` was sent of the step stream.
    pub fn stream_stats(&self, peer: PeerId) -> Option<StreamStats> {
        self.by_peer.get(&peer).map(|p| self.clients[p].sent)
    }

    /// The counters of `peer`'s jitter buffer, if it is a player.
    pub fn jitter_stats(&self, peer: PeerId) -> Option<JitterStats> {
        self.by_peer.get(&peer).map(|p| self.clients[p].jitter.stats())
    }

    /// Inputs queued in `peer`'s jitter buffer now.
    pub fn jitter_depth(&self, peer: PeerId) -> Option<usize> {
        self.by_peer.get(&peer).map(|p| self.clients[p].jitter.depth())
    }

    /// The counters of refused messages.
    pub fn stats(&self) -> RelayServerStats {
        self.stats
    }

    /// The next event, oldest first.
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
            stream: SendLedger::new(self.tick + 1, CLIENT_STEP_WINDOW),
            sent: StreamStats::default(),
            allowance: 0.0,
            allowance_at: self.last_tick_at,
            behind: false,
            joined_at: self.tick + 1,
            first_input: None,
            newest_seen: None,
            send_interval: None,
            interval_least: u32::MAX,
            interval_steps: 0,
            redundancy: RedundancyPlanner::new(self.cfg.redundancy, u32::from(STARTING_COPIES)),
        };
        self.clients.insert(player, c);
        self.by_peer.insert(peer, player);
        let input_size = self.cfg.input_size.unwrap_or(self.cfg.jitter.max_input_size);
        self.steps.reserve(self.clients.len(), input_size);
        Ok(())
    }

    /// Starts `peer`'s step stream again at `tick` (it was sent a snapshot of the state
    /// at the start of that tick), whether it fell behind or not.
    pub fn rebase(&mut self, peer: PeerId, tick: Tick) {
        if let Some(c) = self.by_peer.get(&peer).and_then(|p| self.clients.get_mut(p)) {
            c.stream.rebase(tick);
            c.behind = false;
        }
    }

    /// Whether `peer` fell behind the steps kept and waits for a snapshot.
    pub fn is_behind(&self, peer: PeerId) -> bool {
        self.by_peer.get(&peer).is_some_and(|p| self.clients[p].behind)
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
        let Ok(head) = messages::decode_client_input_spans(data, max, &mut self.input_spans) else {
            self.stats.malformed += 1;
            return;
        };
        let first_tick = head.first_tick;
        if let Some(n) = self.cfg.input_size {
            if self.input_spans.iter().any(|&(_, len)| len != n) {
                self.stats.malformed += 1;
                return;
            }
        }
        let inputs = self.input_spans.iter().map(|&(o, n)| &data[o..o + n]);
        let count = self.input_spans.len();
        if head.step_ack != messages::NONE {
            // Every step up to the ack (never beyond the last one formed: a lying ack
            // must not stop resends of steps to come), and the bitmap of those past it.
            let limit = self.tick.saturating_add(1);
            let next = head.step_ack.saturating_add(1).min(limit);
            c.stream.ack(next, limit);
            c.stream.sack(next, head.sack, limit);
        }
        if count > 0 {
            // Ticks from the wire: a message reaching past `Tick::MAX` is held there.
            let top = first_tick.saturating_add(count as Tick - 1);
            if let Some(step) =
                c.newest_seen.and_then(|prev| top.checked_sub(prev)).filter(|d| (1..=MAX_SEND_INTERVAL).contains(d))
            {
                c.send_interval = Some(c.send_interval.map_or(step, |k| k.min(step)));
                c.interval_least = c.interval_least.min(step);
                c.interval_steps += 1;
                if c.interval_steps == INTERVAL_STEPS {
                    c.send_interval = Some(c.interval_least);
                    (c.interval_least, c.interval_steps) = (u32::MAX, 0);
                }
            }
            c.newest_seen = Some(c.newest_seen.map_or(top, |p| p.max(top)));
        }
        // Copies of one input are a send interval apart.
        let k = c.send_interval.unwrap_or(ASSUMED_SEND_INTERVAL);
        c.jitter.set_send_interval(k);
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
                    if !self.steps.push_player(player, accepted, inputs) {
                        self.stats.left_out += 1;
                    }
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
        if let Some(index) = self.steps.index_of(tick) {
            let len = self.steps.body_len(index, StepForm::Delta) as f64;
            self.step_bytes += (len - self.step_bytes) / 64.0;
        }
        // Keep what some client still needs, within the history limit (and the newest
        // step, which the next one is a delta against).
        let needed = self.clients.values().filter(|c| !c.behind).map(Client::needs_from).min();
        while let Some(t) = self.steps.oldest_tick() {
            let len = self.steps.len();
            let acked_by_all = needed.is_none_or(|n| t < n);
            if len > self.cfg.step_history.max(1) || (len > 1 && acked_by_all) {
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
        for (&player, c) in self.clients.iter_mut() {
            if c.needs_from() < oldest && !c.behind {
                c.behind = true;
                self.events.push_back(RelayServerEvent::FellBehind { peer: c.peer, player });
            }
            let copies = step_copies(&self.cfg, c, ep, now, self.step_bytes);
            c.sent.planned_copies = copies;
            let plan = send_plan(&self.cfg, c, ep, copies);
            let cap = self.cfg.bandwidth_cap as f64;
            if cap > 0.0 {
                // At most a tenth of a second's allowance (or two datagrams) saved up.
                let dt = now.saturating_sub(c.allowance_at) as f64 / 1e6;
                c.allowance = (c.allowance + cap * dt).min((cap / 10.0).max(2.0 * MAX_DATAGRAM_SIZE as f64));
            }
            c.allowance_at = now;
            self.chosen.clear();
            if !c.behind {
                self.chosen.extend(c.stream.due(now, 0..self.tick.saturating_add(1), &plan));
            }
            let checks = &self.checks[..self.n_checks];
            let mut update = Update::new(c, player, self.tick, checks, ep.max_unreliable());
            update.begin(&mut self.buf, c, true);
            'steps: for &(tick, reason) in &self.chosen {
                let Some(index) = self.steps.index_of(tick) else { continue };
                let form = if tick == c.stream.start() { StepForm::Full } else { StepForm::Delta };
                let len = self.steps.body_len(index, form);
                let pieces = if ENTRY_HEAD + len <= update.room_empty() { 1 } else { step_codec::fragments_of(len) };
                let size = if pieces == 1 { ENTRY_HEAD + len } else { len + pieces * FRAGMENT_HEAD };
                // What this update has taken so far counts against the allowance too.
                let spent = update.bytes as usize + self.buf.len();
                if reason == Reason::Copy && cap > 0.0 && c.allowance < (spent + size) as f64 {
                    c.sent.copies_capped += 1;
                    continue;
                }
                for piece in 0..pieces {
                    let piece_len = if pieces == 1 { len } else { FRAGMENT_BYTES.min(len - piece * FRAGMENT_BYTES) };
                    let head = if pieces == 1 { ENTRY_HEAD } else { FRAGMENT_HEAD };
                    if !update.fits(&self.buf, head + piece_len) {
                        update.send(&mut self.buf, c, ep);
                        if update.datagrams == self.cfg.max_update_datagrams {
                            c.sent.full_updates += 1;
                            break 'steps;
                        }
                        update.begin(&mut self.buf, c, false);
                    }
                    let offset = (tick - update.base) as u16;
                    if pieces == 1 {
                        step_codec::write_entry_head(&mut self.buf, offset, form, len);
                        self.steps.write_body(&mut self.buf, index, form, 0..len);
                    } else {
                        let at = piece * FRAGMENT_BYTES;
                        step_codec::write_fragment_head(
                            &mut self.buf,
                            offset,
                            form,
                            piece as u8,
                            pieces as u8,
                            piece_len,
                        );
                        self.steps.write_body(&mut self.buf, index, form, at..at + piece_len);
                    }
                    update.entries += 1;
                }
                let again = c.stream.book(tick, now, reason);
                match reason {
                    Reason::Due if again => c.sent.resent += 1,
                    Reason::Due => c.sent.steps += 1,
                    Reason::Copy => c.sent.copies += 1,
                }
            }
            if update.entries > 0 || update.datagrams == 0 {
                update.send(&mut self.buf, c, ep);
            }
            if cap > 0.0 {
                c.allowance -= update.bytes as f64;
            }
        }
        ep.flush(now);
    }
}

/// Copies of each step to `c` now: from its downlink's measured loss and bursts (the
/// planner waits for enough packets), within the copies' byte budget (a copy of the
/// stream is a step's delta, at the mean size of the steps, every tick).
fn step_copies<T: Transport + ?Sized>(
    cfg: &RelayServerConfig,
    c: &mut Client,
    ep: &mut T,
    now: Micros,
    step_bytes: f64,
) -> u8 {
    if let Some(s) = ep.stats(c.peer) {
        let cap = cfg.redundancy.copy_cap((step_bytes + ENTRY_HEAD as f64) * 1e6 / cfg.tick_us);
        c.redundancy.update(now, s.loss, s.loss_counts, cap, None);
    }
    c.redundancy.copies().clamp(1, u8::MAX as u32) as u8
}

/// How to send to `c` now: `copies` of each step, the resend timeout and the window
/// from the measured round trip.
fn send_plan<T: Transport + ?Sized>(cfg: &RelayServerConfig, c: &Client, ep: &mut T, copies: u8) -> SendPlan {
    let st = ep.stats(c.peer);
    let (rtt, var) = match st {
        Some(s) if s.srtt_us > 0.0 => (s.srtt_us, s.rtt_var_us),
        _ => (ASSUMED_RTT_US, ASSUMED_RTT_US / 2.0),
    };
    // The client acknowledges in its next input packet: its send interval, ours, and
    // a tick of slack on top of the round trip and its spread.
    let ack_delay = (c.send_interval.unwrap_or(ASSUMED_SEND_INTERVAL) + cfg.send_interval + 1) as f64 * cfg.tick_us;
    let resend_after = (rtt + 4.0 * var + ack_delay) as Micros;
    // Enough for a round trip and a resend timeout of steps in flight, and the copies.
    let in_flight = (2.0 * (rtt + 4.0 * var) + ack_delay) / cfg.tick_us;
    let window = in_flight as usize + copies as usize * cfg.send_interval as usize + 32;
    SendPlan {
        copies,
        resend_copies: copies,
        resend_after: Some(resend_after),
        window: window.clamp(16, cfg.step_window),
    }
}

/// One update to one client being written: its datagrams so far, and the one in `buf`.
struct Update<'a> {
    head: messages::UpdateHead,
    checks: &'a [(Tick, u64)],
    /// Entries' ticks are relative to this: the oldest step the client needs.
    base: Tick,
    /// Reports in the datagram being written.
    margins: usize,
    n_checks: usize,
    entries: u8,
    datagrams: usize,
    bytes: u64,
    /// The largest message the transport takes ([`Transport::max_unreliable`]).
    limit: usize,
}

impl<'a> Update<'a> {
    fn new(c: &Client, player: u32, tick: Tick, checks: &'a [(Tick, u64)], limit: usize) -> Self {
        Update {
            head: messages::UpdateHead {
                server_tick: tick,
                your_player: player,
                shift: c.jitter.shift() as i32,
                input_ack: c.input_ack.unwrap_or(messages::NONE),
                depth: c.jitter.depth().min(255) as u8,
                first_input: c.first_input.unwrap_or(messages::NONE),
                // Running counts, wrapping on the wire.
                substituted: c.jitter.stats().lost as u16,
                late_substituted: c.jitter.stats().late_substituted as u16,
            },
            checks,
            base: c.needs_from(),
            margins: 0,
            n_checks: 0,
            entries: 0,
            datagrams: 0,
            bytes: 0,
            limit,
        }
    }

    /// Room for entries in a datagram without reports: at any limit a transport may
    /// have, at least a step's largest piece with its head (`UPDATE_PIECE_SIZE`).
    fn room_empty(&self) -> usize {
        self.limit.saturating_sub(messages::update_head_size(0, 0))
    }

    /// Starts a datagram in `buf`; the first carries the margins and checks.
    fn begin(&mut self, buf: &mut Vec<u8>, c: &Client, first: bool) {
        let (margins, checks) = if first {
            let take = c.margins.len().min(MARGINS_SENT);
            (&c.margins[c.margins.len() - take..], self.checks)
        } else {
            (&[][..], &[][..])
        };
        messages::encode_server_update_head(buf, &self.head, margins, checks, self.base);
        self.margins = margins.len();
        self.n_checks = checks.len();
        self.entries = 0;
    }

    /// Whether `n` more bytes fit in the datagram in `buf`.
    fn fits(&self, buf: &[u8], n: usize) -> bool {
        self.entries < u8::MAX && buf.len() + n <= self.limit
    }

    /// Sends the datagram in `buf` (its entries are then spent: a datagram goes once).
    fn send<T: Transport + ?Sized>(&mut self, buf: &mut [u8], c: &mut Client, ep: &mut T) {
        messages::set_entry_count(buf, self.margins, self.n_checks, self.entries);
        self.entries = 0;
        if self.datagrams == 0 {
            c.margins.clear();
        }
        self.datagrams += 1;
        self.bytes += buf.len() as u64;
        c.sent.datagrams += 1;
        c.sent.bytes += buf.len() as u64;
        let _ = ep.send(c.peer, CHANNEL_UNRELIABLE, buf);
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
            messages::encode_client_inputs(&mut buf, messages::NONE, &[], first, inputs.iter().map(|i| &i[..]));
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
    fn the_clients_send_interval_rises_again_after_a_window_of_packets() {
        // A client that sent every tick while its link was lossy goes back to every
        // other tick: the server's figure (its copy numbers and resend delay) follows
        // within INTERVAL_STEPS packets, and falls again at once.
        let mut server = RelayServer::new(RelayServerConfig::default(), 0).unwrap();
        server.admit(7, 1).unwrap();
        let mut buf = Vec::new();
        let mut send = |server: &mut RelayServer, newest: u32| {
            let first = newest.saturating_sub(3);
            let inputs: Vec<[u8; 1]> = (first..=newest).map(|t| [t as u8]).collect();
            messages::encode_client_inputs(&mut buf, messages::NONE, &[], first, inputs.iter().map(|i| &i[..]));
            server.handle_inputs(0, 7, &buf);
        };
        let mut tick = 10;
        for _ in 0..40 {
            send(&mut server, tick);
            tick += 1;
        }
        assert_eq!(server.clients[&1].send_interval, Some(1));
        let mut rose_after = None;
        for n in 1..=2 * INTERVAL_STEPS {
            tick += 1;
            send(&mut server, tick);
            tick += 1;
            if rose_after.is_none() && server.clients[&1].send_interval == Some(2) {
                rose_after = Some(n);
            }
        }
        let n = rose_after.expect("the interval rises to 2");
        assert!(n <= 2 * INTERVAL_STEPS, "after {n} packets");
        assert_eq!(server.clients[&1].send_interval, Some(2), "and stays");
        send(&mut server, tick);
        assert_eq!(server.clients[&1].send_interval, Some(1), "falls at once");
    }

    #[test]
    fn inputs_at_the_end_of_the_tick_range_do_not_overflow() {
        // A client's ticks come from the wire: a message running past Tick::MAX is taken
        // up to the end (the ticks beyond wrap to old ticks: duplicates, dropped).
        let mut server = RelayServer::new(RelayServerConfig::default(), 0).unwrap();
        server.admit(7, 1).unwrap();
        let mut buf = Vec::new();
        let inputs = [[1u8], [2], [3], [4]];
        messages::encode_client_inputs(&mut buf, messages::NONE, &[], Tick::MAX - 1, inputs.iter().map(|i| &i[..]));
        server.handle_inputs(0, 7, &buf);
        assert_eq!(server.clients[&1].input_ack, Some(Tick::MAX));
        for _ in 0..4 {
            server.tick_step(0);
        }
        assert_eq!(server.clients[&1].first_input, Some(Tick::MAX - 1));
    }
}
