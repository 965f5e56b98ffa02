//! The relay server as an engine-facing session (issue 4): the master clock that
//! never waits, one jitter buffer per client ([`RelayServer`]), and the engine's
//! simulation driven by the same requests as every other session.
//!
//! Each tick the server forms the canonical step (every present player's input, each
//! client's accepted count) and asks the engine to `Advance` with it (authoritative).
//! Around it:
//! - a client that says Hello becomes a player: a new slot and a random session
//!   token, or with a valid token its old slot (reconnect, or a resync on the same
//!   connection). The engine is asked to `Save` and `DumpState` the state at the
//!   start of the tick; its bytes ([`RelayServerSession::provide_state`]) go to the
//!   client as a Welcome on the reliable channel, and the client receives every
//!   canonical step from that tick on;
//! - every `checksum_interval` ticks the engine saves its state and its checksum goes
//!   out with the updates, for the clients' desync checks;
//! - a dropped client's slot is kept for `reconnect_timeout_us`; a wrong token, a
//!   malformed Hello or a client built for another game is refused and counted.
//!
//! The engine loop: `on_event` for every transport event; `ticks_due(now)`; that many
//! times `advance()` and run every request (answering `Save` with `confirm_save`,
//! `DumpState` with `provide_state`); `poll_event` until None; `send_messages`.

use std::collections::VecDeque;

use super::join::{self, Welcome};
use super::relay_server::{RelayServer, RelayServerConfig, RelayServerEvent};
use crate::clock::Micros;
use crate::jitter::{JitterStats, KickReason};
use crate::rng::Rng;
use crate::rollback::{AdvanceStatus, InputStatus, Request, RequestQueue, StateRing, Tick};
use crate::tick::{TickClock, TickClockConfig};
use crate::transport::{CHANNEL_RELIABLE, CHANNEL_UNRELIABLE, DisconnectReason, Event, PeerId, Transport};

/// Settings of a [`RelayServerSession`].
#[derive(Debug, Clone, PartialEq)]
pub struct RelayServerSessionConfig {
    /// The sync layer (tick rate, send interval, jitter buffers). Its input size and
    /// admission are set by the session.
    pub relay: RelayServerConfig,
    /// Bytes per input, 1..=64.
    pub input_size: usize,
    /// Player slots, 1..=64.
    pub max_players: usize,
    /// Send the engine's checksum every this many ticks (0: no desync detection).
    pub checksum_interval: u32,
    /// A dropped player's slot waits this long for it to come back with its token.
    pub reconnect_timeout_us: Micros,
    /// A connection that has not said Hello within this time is closed.
    pub hello_timeout_us: Micros,
    /// The transport's reliable channel (join handshake and snapshots).
    pub reliable_channel: u8,
    /// Seeds the session tokens. Pass OS randomness in production.
    pub seed: u64,
}

impl Default for RelayServerSessionConfig {
    fn default() -> Self {
        RelayServerSessionConfig {
            relay: RelayServerConfig::default(),
            input_size: 2,
            max_players: 8,
            checksum_interval: 30,
            reconnect_timeout_us: 30_000_000,
            hello_timeout_us: 5_000_000,
            reliable_channel: CHANNEL_RELIABLE,
            seed: 0x7469_636b_7769_7265,
        }
    }
}

/// Snapshots a relay server's engine holds: the tick being sent to a joining client,
/// and the next one being saved.
pub const SERVER_STATE_SLOTS: usize = 2;

impl RelayServerSessionConfig {
    /// Checks the settings without building a session (what [`RelayServerSession::new`]
    /// checks).
    pub fn validate(&self) -> Result<(), ServerSessionError> {
        let bad = ServerSessionError::InvalidConfig;
        if !(1..=64).contains(&self.input_size) || !(1..=64).contains(&self.max_players) {
            return Err(bad(format!(
                "input_size {} and max_players {} must be in 1..=64",
                self.input_size, self.max_players
            )));
        }
        self.sync_config().validate().map_err(|e| bad(e.0))?;
        self.clock().validate().map_err(bad)
    }

    /// Snapshots the engine must hold for a server with these settings.
    pub fn state_slots(&self) -> usize {
        SERVER_STATE_SLOTS
    }

    /// The sync layer's settings as the session runs it.
    fn sync_config(&self) -> RelayServerConfig {
        let mut relay_cfg = self.relay.clone();
        relay_cfg.input_size = Some(self.input_size);
        relay_cfg.jitter.max_input_size = relay_cfg.jitter.max_input_size.max(self.input_size);
        relay_cfg.auto_admit = false;
        relay_cfg
    }

    /// The server's master clock: steady, at the relay's tick length.
    fn clock(&self) -> TickClockConfig {
        TickClockConfig { tick_us: self.relay.tick_us, ..TickClockConfig::default() }
    }
}

/// Misuse of a server session, or a bad config.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerSessionError {
    #[error("invalid relay server config: {0}")]
    InvalidConfig(String),
    #[error("tick {0} was not requested")]
    UnexpectedTick(Tick),
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    /// The Hello did not decode.
    Malformed,
    /// Another input size or player count: a client for another game.
    WrongGame,
    /// A token no slot has (forged, or its slot timed out).
    BadToken,
    /// Every slot is taken.
    Full,
    /// No Hello within the timeout.
    NoHello,
}

/// Why a player was removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KickCause {
    /// Its jitter buffer overflowed or starved.
    Jitter(KickReason),
    /// It needed a step the server no longer keeps.
    FellBehind,
}

/// What the server session tells the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerSessionEvent {
    /// A new player, in the steps from the next tick on.
    PlayerJoined {
        player: u32,
        peer: PeerId,
    },
    /// A player came back with its token (or asked for a new snapshot).
    PlayerReconnected {
        player: u32,
        peer: PeerId,
    },
    /// A player's connection dropped; its slot waits for it.
    PlayerInterrupted {
        player: u32,
        reason: DisconnectReason,
    },
    /// A dropped player did not come back in time; its slot is free.
    PlayerLeft {
        player: u32,
    },
    PlayerKicked {
        player: u32,
        peer: PeerId,
        cause: KickCause,
    },
    ConnectionRejected {
        peer: PeerId,
        reason: RejectReason,
    },
}

/// Figures of a server session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerSessionStats {
    /// The last tick run.
    pub tick: u64,
    pub players: u32,
    /// Over all players and ticks (M1, M11): ticks without that player's real input
    /// because nothing had arrived (empty), because its input was lost for good
    /// (substituted), and ticks that merged several inputs.
    pub empty_steps: u64,
    pub substituted_steps: u64,
    pub merged_steps: u64,
    /// Inputs whose first copy arrived after the tick that needed it (substituted, so
    /// dropped). Under the `Delay` late policy lateness shows as empty steps instead
    /// (the input is used a tick later), and this stays 0.
    pub late_inputs: u64,
    /// Input messages refused: malformed or wrong-size, or from non-players.
    pub malformed: u64,
    pub unknown_peer: u64,
    /// Reliable messages that were not a valid Hello.
    pub bad_hello: u64,
    pub bad_tokens: u64,
    pub rejected: u64,
    pub snapshots_sent: u64,
    /// Players that asked for a new snapshot on their own connection.
    pub resyncs: u64,
    pub checks_sent: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Free,
    Active { peer: PeerId },
    Away { since: Micros },
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    state: SlotState,
    token: u64,
    /// Waiting for a snapshot (just joined, came back, or resyncing).
    needs_snapshot: bool,
    reconnected: bool,
}

impl Slot {
    const FREE: Slot = Slot { state: SlotState::Free, token: 0, needs_snapshot: false, reconnected: false };
}

/// The relay server session. See the module docs.
pub struct RelayServerSession {
    cfg: RelayServerSessionConfig,
    relay: RelayServer,
    clock: TickClock,
    slots: Vec<Slot>,
    /// Connections that have not said Hello yet, with when they connected.
    connecting: Vec<(PeerId, Micros)>,
    ring: StateRing,
    requests: RequestQueue,
    /// The tick a DumpState was asked for in the current batch.
    snapshot_tick: Option<Tick>,
    /// Welcomes to send, and their buffers once sent (reused by the next ones).
    outbox: Vec<(PeerId, Vec<u8>)>,
    spare_messages: Vec<Vec<u8>>,
    to_disconnect: Vec<PeerId>,
    /// Ticks whose save was asked for a checksum report.
    check_ticks: [Option<Tick>; 2],
    rng: Rng,
    now: Micros,
    events: VecDeque<ServerSessionEvent>,
    stats: ServerSessionStats,
    /// Jitter counters of players that are gone, so the totals never go back.
    gone: JitterStats,
    zero: Vec<u8>,
}

impl RelayServerSession {
    pub fn new(cfg: RelayServerSessionConfig, now: Micros) -> Result<Self, ServerSessionError> {
        cfg.validate()?;
        let bad = ServerSessionError::InvalidConfig;
        let relay = RelayServer::new(cfg.sync_config(), now).map_err(|e| bad(e.0))?;
        let mut clock = TickClock::new(cfg.clock(), 0);
        clock.advance(now);
        Ok(RelayServerSession {
            relay,
            clock,
            slots: vec![Slot::FREE; cfg.max_players],
            connecting: Vec::new(),
            ring: StateRing::new(SERVER_STATE_SLOTS, 0),
            requests: RequestQueue::new(cfg.max_players, cfg.input_size, 2),
            snapshot_tick: None,
            outbox: Vec::with_capacity(cfg.max_players),
            spare_messages: Vec::with_capacity(cfg.max_players),
            to_disconnect: Vec::new(),
            check_ticks: [None; 2],
            rng: Rng::new(cfg.seed),
            now,
            events: VecDeque::new(),
            stats: ServerSessionStats::default(),
            gone: JitterStats::default(),
            zero: vec![0; cfg.input_size],
            cfg,
        })
    }

    pub fn config(&self) -> &RelayServerSessionConfig {
        &self.cfg
    }

    /// Snapshots the engine keeps: `Save` slots are in `0..state_slots()`.
    pub fn state_slots(&self) -> usize {
        self.ring.len()
    }

    /// The last tick run (the next `Advance` is for the one after).
    pub fn tick(&self) -> u64 {
        self.relay.tick()
    }

    /// The sync layer, for its per-client figures.
    pub fn relay(&self) -> &RelayServer {
        &self.relay
    }

    /// `player`'s jitter-buffer counters, while it is connected.
    pub fn jitter_stats(&self, player: u32) -> Option<JitterStats> {
        match self.slots.get(player as usize)?.state {
            SlotState::Active { peer } => self.relay.jitter_stats(peer),
            _ => None,
        }
    }

    /// The peer playing `player` now.
    pub fn peer_of(&self, player: u32) -> Option<PeerId> {
        match self.slots.get(player as usize)?.state {
            SlotState::Active { peer } => Some(peer),
            _ => None,
        }
    }

    fn slot_of_peer(&self, peer: PeerId) -> Option<usize> {
        self.slots.iter().position(|s| s.state == SlotState::Active { peer })
    }

    /// Handles one transport event (call for every event the transport produces).
    pub fn on_event<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, e: Event) {
        self.now = self.now.max(now);
        match e {
            Event::Connected { peer, .. } => self.connecting.push((peer, self.now)),
            Event::Disconnected { peer, reason } => {
                self.connecting.retain(|c| c.0 != peer);
                if let Some(i) = self.slot_of_peer(peer) {
                    self.forget_peer(peer);
                    self.slots[i].state = SlotState::Away { since: self.now };
                    self.slots[i].needs_snapshot = false;
                    self.events.push_back(ServerSessionEvent::PlayerInterrupted { player: i as u32, reason });
                }
            }
            Event::Message { peer, channel, data } => {
                if channel == CHANNEL_UNRELIABLE {
                    self.relay.handle_inputs(self.now, peer, &data);
                } else if channel == self.cfg.reliable_channel {
                    self.on_hello(peer, &data);
                } else {
                    self.stats.bad_hello += 1;
                }
                transport.recycle(data);
            }
        }
    }

    /// Removes `peer` from the sync layer, keeping its counters.
    fn forget_peer(&mut self, peer: PeerId) {
        if let Some(j) = self.relay.jitter_stats(peer) {
            add_jitter(&mut self.gone, &j);
        }
        self.relay.remove(peer);
    }

    fn reject(&mut self, peer: PeerId, reason: RejectReason) {
        self.connecting.retain(|c| c.0 != peer);
        self.to_disconnect.push(peer);
        self.stats.rejected += 1;
        self.events.push_back(ServerSessionEvent::ConnectionRejected { peer, reason });
    }

    fn on_hello(&mut self, peer: PeerId, data: &[u8]) {
        let Ok(h) = join::decode_hello(data) else {
            self.stats.bad_hello += 1;
            if self.connecting.iter().any(|c| c.0 == peer) {
                self.reject(peer, RejectReason::Malformed);
            }
            return;
        };
        if h.input_size as usize != self.cfg.input_size || h.max_players as usize != self.cfg.max_players {
            return self.reject(peer, RejectReason::WrongGame);
        }
        if let Some(i) = self.slot_of_peer(peer) {
            // A player asking again on its own connection wants a new snapshot.
            if h.token == self.slots[i].token {
                self.slots[i].needs_snapshot = true;
                self.stats.resyncs += 1;
            } else {
                self.stats.bad_tokens += 1;
            }
            return;
        }
        if !self.connecting.iter().any(|c| c.0 == peer) {
            self.stats.bad_hello += 1;
            return;
        }
        let slot = if h.token == 0 {
            match self.slots.iter().position(|s| s.state == SlotState::Free) {
                Some(i) => {
                    self.slots[i].token = join::new_token(&mut self.rng);
                    self.slots[i].reconnected = false;
                    i
                }
                None => return self.reject(peer, RejectReason::Full),
            }
        } else {
            match self.slots.iter().position(|s| s.state != SlotState::Free && s.token == h.token) {
                Some(i) => {
                    if let SlotState::Active { peer: old } = self.slots[i].state {
                        // The old connection is stale (the client gave up on it first).
                        self.forget_peer(old);
                        self.to_disconnect.push(old);
                    }
                    self.slots[i].reconnected = true;
                    i
                }
                None => {
                    self.stats.bad_tokens += 1;
                    return self.reject(peer, RejectReason::BadToken);
                }
            }
        };
        self.connecting.retain(|c| c.0 != peer);
        self.relay.admit(peer, slot as u32).expect("slot and peer are free");
        self.slots[slot].state = SlotState::Active { peer };
        self.slots[slot].needs_snapshot = true;
        let player = slot as u32;
        let e = if self.slots[slot].reconnected {
            ServerSessionEvent::PlayerReconnected { player, peer }
        } else {
            ServerSessionEvent::PlayerJoined { player, peer }
        };
        self.events.push_back(e);
    }

    /// Runs the steady tick clock (never dilated) and the timers; returns how many
    /// ticks to simulate now.
    pub fn ticks_due(&mut self, now: Micros) -> u32 {
        self.now = self.now.max(now);
        for i in 0..self.slots.len() {
            if let SlotState::Away { since } = self.slots[i].state {
                if self.now.saturating_sub(since) >= self.cfg.reconnect_timeout_us {
                    self.slots[i] = Slot::FREE;
                    self.events.push_back(ServerSessionEvent::PlayerLeft { player: i as u32 });
                }
            }
        }
        while let Some(&(peer, _)) =
            self.connecting.iter().find(|c| self.now.saturating_sub(c.1) >= self.cfg.hello_timeout_us)
        {
            self.reject(peer, RejectReason::NoHello);
        }
        self.clock.advance(now)
    }

    fn is_check(&self, t: Tick) -> bool {
        self.cfg.checksum_interval > 0 && t % self.cfg.checksum_interval == 0
    }

    /// Runs one server tick: saves (and dumps, for joining clients) the state at its
    /// start when needed, forms the canonical step and asks the engine to advance
    /// with it. Never waits for anyone.
    pub fn advance(&mut self) -> AdvanceStatus {
        self.requests.clear();
        let t = (self.relay.tick() + 1) as Tick;
        let snapshot = self.slots.iter().any(|s| s.needs_snapshot);
        self.snapshot_tick = None;
        if snapshot || self.is_check(t) {
            let slot = self.ring.slot_for_save(t);
            self.requests.push_save(t, slot);
            if self.is_check(t) {
                self.check_ticks = [Some(t), self.check_ticks[0]];
            }
            if snapshot {
                self.requests.push_dump(t, slot);
                self.snapshot_tick = Some(t);
            }
        }
        let step = self.relay.tick_step(self.now);
        let s = self.cfg.input_size;
        self.requests.begin_advance_flagged(t, false, true);
        let mut next = step.players().peekable();
        for p in 0..self.cfg.max_players as u32 {
            match next.next_if(|x| x.player == p) {
                Some(x) => {
                    let input = x.last_input().filter(|b| b.len() == s).unwrap_or(self.zero.as_slice());
                    self.requests.push_input(input, InputStatus::Confirmed);
                }
                None => self.requests.push_input(&self.zero, InputStatus::Disconnected),
            }
        }
        self.drain_relay_events();
        AdvanceStatus::Advanced
    }

    /// Frees the slots of players the sync layer removed.
    fn drain_relay_events(&mut self) {
        while let Some(e) = self.relay.poll_event() {
            let (peer, player, cause, jitter) = match e {
                RelayServerEvent::Kicked { peer, player, reason, jitter } => {
                    (peer, player, KickCause::Jitter(reason), jitter)
                }
                RelayServerEvent::FellBehind { peer, player, jitter } => (peer, player, KickCause::FellBehind, jitter),
                RelayServerEvent::Joined { .. } | RelayServerEvent::Left { .. } => continue,
            };
            // The sync layer has already let go of the player: keep its counters.
            add_jitter(&mut self.gone, &jitter);
            if let Some(slot) = self.slots.get_mut(player as usize) {
                *slot = Slot::FREE;
            }
            self.events.push_back(ServerSessionEvent::PlayerKicked { player, peer, cause });
        }
    }

    /// The next request of this tick, in order. Run them all before advancing again.
    pub fn poll_request(&mut self) -> Option<Request<'_>> {
        self.requests.poll()
    }

    /// Requests of the last `advance` not polled yet.
    pub fn pending_requests(&self) -> usize {
        self.requests.pending()
    }

    /// The engine's checksum of the state it saved for `tick` (answer to `Save`).
    pub fn confirm_save(&mut self, tick: Tick, checksum: u64) -> Result<(), ServerSessionError> {
        if !self.ring.set_checksum(tick, checksum) {
            return Err(ServerSessionError::UnexpectedTick(tick));
        }
        if self.check_ticks.contains(&Some(tick)) {
            self.relay.report_checksum(tick as u64, checksum);
            self.stats.checks_sent += 1;
        }
        Ok(())
    }

    /// The engine's serialized state for a `DumpState` request: it goes to every
    /// player waiting for a snapshot, with the steps from `tick` on.
    pub fn provide_state(&mut self, tick: Tick, state: &[u8]) -> Result<(), ServerSessionError> {
        if self.snapshot_tick != Some(tick) {
            return Err(ServerSessionError::UnexpectedTick(tick));
        }
        self.snapshot_tick = None;
        for i in 0..self.slots.len() {
            let SlotState::Active { peer } = self.slots[i].state else { continue };
            let joined = self.relay.joined_at(i as u32).is_some_and(|j| j <= tick as u64);
            if !self.slots[i].needs_snapshot || !joined {
                continue;
            }
            self.slots[i].needs_snapshot = false;
            let mut msg = self.spare_messages.pop().unwrap_or_default();
            let w = Welcome {
                player: i as u16,
                token: self.slots[i].token,
                tick,
                input_size: self.cfg.input_size as u16,
                max_players: self.cfg.max_players as u16,
                state,
            };
            join::encode_welcome(&mut msg, &w);
            self.outbox.push((peer, msg));
        }
        Ok(())
    }

    pub fn poll_event(&mut self) -> Option<ServerSessionEvent> {
        self.events.pop_front()
    }

    /// Sends what is due: the clients' updates, snapshots, and closes refused
    /// connections. Call once per frame, after advancing.
    pub fn send_messages<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) {
        self.now = self.now.max(now);
        for peer in self.to_disconnect.drain(..) {
            transport.disconnect(now, peer);
        }
        for (peer, msg) in self.outbox.drain(..) {
            if transport.send(peer, self.cfg.reliable_channel, &msg).is_ok() {
                self.stats.snapshots_sent += 1;
            } else if let Some(i) = self.slots.iter().position(|s| s.state == SlotState::Active { peer }) {
                // (`slot_of_peer` spelled out: the outbox is borrowed.) Try again next tick.
                self.slots[i].needs_snapshot = true;
            }
            if self.spare_messages.len() < self.cfg.max_players {
                self.spare_messages.push(msg);
            }
        }
        self.relay.flush(now, transport);
        self.drain_relay_events();
        transport.flush(now);
    }

    pub fn stats(&self) -> ServerSessionStats {
        let mut j = self.gone;
        for (_, peer) in self.relay.players() {
            if let Some(s) = self.relay.jitter_stats(peer) {
                add_jitter(&mut j, &s);
            }
        }
        let r = self.relay.stats();
        ServerSessionStats {
            tick: self.relay.tick(),
            players: self.slots.iter().filter(|s| matches!(s.state, SlotState::Active { .. })).count() as u32,
            empty_steps: j.underflows,
            substituted_steps: j.lost,
            merged_steps: j.merges,
            late_inputs: j.late_arrivals,
            malformed: r.malformed,
            unknown_peer: r.unknown_peer,
            ..self.stats
        }
    }
}

fn add_jitter(a: &mut JitterStats, b: &JitterStats) {
    a.ticks += b.ticks;
    a.normal += b.normal;
    a.underflows += b.underflows;
    a.lost += b.lost;
    a.merges += b.merges;
    a.merged_steps += b.merged_steps;
    a.late_arrivals += b.late_arrivals;
    a.duplicates += b.duplicates;
}
