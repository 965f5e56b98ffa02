//! The relay server as an engine-facing session: the master clock that
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
//! - a dropped client's slot is kept for `reconnect_timeout_us`, and freed at once
//!   when the client closed its connection on purpose (reason `Client`); a wrong
//!   token, a malformed Hello or a client built for another game is refused and
//!   counted.
//!
//! The engine loop: `on_event` for every transport event; `ticks_due(now)`; that many
//! times `advance()` and run every request (answering `Save` with `confirm_save`,
//! `DumpState` with `provide_state`); `poll_event` until None; `send_messages`.

mod admission;
mod config;
mod events;
mod hosted;
mod stats;

use crate::game::CheckedConfig;
use std::collections::VecDeque;

use super::join::{self, Welcome};
use super::relay_server::{RelayServer, RelayServerEvent, StreamStats};
use crate::clock::Micros;
use crate::engine::StateRing;
use crate::engine::{AdvanceStatus, InputStatus, Request, RequestQueue, Tick};
use crate::jitter::JitterStats;
use crate::tick::TickClock;
use crate::transport::{CHANNEL_UNRELIABLE, Credential, DisconnectReason, Event, PeerId, SecretRng, Transport};
use admission::{Slot, SlotState};
pub(crate) use config::SERVER_STATE_SLOTS;
pub use config::{RelayServerSessionConfig, ServerMode, ServerSessionError};
pub use events::{KickCause, RejectReason, ServerSessionEvent};
pub use stats::ServerSessionStats;
use stats::add_jitter;

/// A connection that has not said Hello yet.
struct Connecting {
    peer: PeerId,
    since: Micros,
    /// What it proved in its handshake.
    credential: Credential,
}

/// The relay server session. See the module docs.
pub struct RelayServerSession {
    cfg: RelayServerSessionConfig,
    relay: RelayServer,
    clock: TickClock,
    slots: Vec<Slot>,
    /// Connections that have not said Hello yet.
    connecting: Vec<Connecting>,
    ring: StateRing,
    requests: RequestQueue,
    /// The tick a DumpState was asked for in the current batch.
    snapshot_tick: Option<Tick>,
    /// Welcomes to send, and their buffers once sent (reused by the next ones).
    outbox: Vec<(PeerId, Vec<u8>)>,
    spare_messages: Vec<Vec<u8>>,
    /// Connections to close, with what each is told.
    to_disconnect: Vec<(PeerId, DisconnectReason)>,
    /// Ticks whose save was asked for a checksum report.
    check_ticks: [Option<Tick>; 2],
    /// Session tokens come from here: a cryptographic generator seeded with
    /// `token_seed` (OS randomness in production), never the simulator's `Rng`.
    token_rng: SecretRng,
    now: Micros,
    events: VecDeque<ServerSessionEvent>,
    stats: ServerSessionStats,
    /// Jitter counters of players that are gone, so the totals never go back.
    gone: JitterStats,
    zero: Vec<u8>,
    /// A relay-only server's hosted match ([`ServerMode::RelayOnly`]); None when the
    /// engine runs the game.
    hosted: Option<hosted::Hosted>,
}

impl RelayServerSession {
    /// A session on `cfg` (validated first), its clock starting at `now`.
    pub fn new(cfg: RelayServerSessionConfig, now: Micros) -> Result<Self, ServerSessionError> {
        cfg.validate().map_err(ServerSessionError::Config)?;
        let relay = RelayServer::new(cfg.sync_config(), now).map_err(|e| {
            let mut p = crate::game::ConfigProblems::new();
            p.push("relay", e.0);
            ServerSessionError::Config(p)
        })?;
        let mut clock = TickClock::new(cfg.clock(), 0);
        clock.advance(now);
        Ok(RelayServerSession {
            relay,
            clock,
            slots: vec![Slot::FREE; cfg.game.players],
            connecting: Vec::new(),
            ring: StateRing::new(SERVER_STATE_SLOTS, 0),
            requests: RequestQueue::new(cfg.game.players, cfg.game.input_size, 2),
            snapshot_tick: None,
            outbox: Vec::with_capacity(cfg.game.players),
            spare_messages: Vec::with_capacity(cfg.game.players),
            to_disconnect: Vec::new(),
            check_ticks: [None; 2],
            token_rng: SecretRng::new(cfg.seed, &cfg.token_seed.0),
            now,
            events: VecDeque::new(),
            stats: ServerSessionStats::default(),
            gone: JitterStats::default(),
            zero: vec![0; cfg.game.input_size],
            hosted: (cfg.mode == ServerMode::RelayOnly).then(hosted::Hosted::new),
            cfg,
        })
    }

    /// The session's config.
    pub fn config(&self) -> &RelayServerSessionConfig {
        &self.cfg
    }

    /// Snapshots the engine keeps: `Save` slots are in `0..state_slots()`.
    pub fn state_slots(&self) -> usize {
        self.ring.len()
    }

    /// The last tick run (0 before the first).
    pub fn last_tick(&self) -> Tick {
        self.relay.last_tick()
    }

    /// The tick the next `advance` runs: the one after [`last_tick`](Self::last_tick),
    /// as every session's `current_tick` is the next tick to simulate.
    pub fn current_tick(&self) -> Tick {
        self.relay.last_tick().saturating_add(1)
    }

    /// The tick `event` concerns, for an event just polled (before the next tick
    /// runs): for a join or a return, the first tick whose canonical step includes the
    /// player; for a player its jitter buffer kicked, the last tick run (the step
    /// being formed lost it); otherwise the next tick.
    pub fn event_tick(&self, event: &ServerSessionEvent) -> Tick {
        match *event {
            ServerSessionEvent::PlayerJoined { player, .. } | ServerSessionEvent::PlayerReconnected { player, .. } => {
                self.relay.joined_at(player).unwrap_or_else(|| self.current_tick())
            }
            ServerSessionEvent::PlayerKicked { cause: KickCause::Jitter(_), .. } => self.last_tick(),
            _ => self.current_tick(),
        }
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

    /// What `player` was sent of the step stream, while it is connected.
    pub fn stream_stats(&self, player: u32) -> Option<StreamStats> {
        self.relay.stream_stats(self.peer_of(player)?)
    }

    /// What the connection of `player` proved (a connect token's client id and user
    /// data, or a secret's class), while its slot is taken (connected, or waiting for
    /// it to come back).
    pub fn player_credential(&self, player: u32) -> Option<&Credential> {
        let s = self.slots.get(player as usize)?;
        (s.state != SlotState::Free).then_some(&s.credential)
    }

    /// The peer playing `player` now.
    pub fn peer_of(&self, player: u32) -> Option<PeerId> {
        match self.slots.get(player as usize)?.state {
            SlotState::Active { peer } => Some(peer),
            _ => None,
        }
    }

    /// The player whose slot the connection `peer` holds now.
    pub fn player_on(&self, peer: PeerId) -> Option<u32> {
        let active = |s: &Slot| matches!(s.state, SlotState::Active { peer: p } if p == peer);
        self.slots.iter().position(active).map(|p| p as u32)
    }

    /// Nobody is here or expected: no connection waits to say Hello, and every slot
    /// is free (none waits for its player to come back).
    pub fn is_vacant(&self) -> bool {
        self.connecting.is_empty() && self.slots.iter().all(|s| s.state == SlotState::Free)
    }

    /// Every connection the session knows: its players' and those that have not said
    /// Hello yet.
    pub fn connections(&self) -> impl Iterator<Item = PeerId> + '_ {
        let players = self.slots.iter().filter_map(|s| match s.state {
            SlotState::Active { peer } => Some(peer),
            _ => None,
        });
        players.chain(self.connecting.iter().map(|c| c.peer))
    }

    /// Handles one transport event (call for every event the transport produces).
    pub fn on_event<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, e: Event) {
        self.now = self.now.max(now);
        match e {
            Event::Connected { peer, credential, .. } => {
                self.connecting.push(Connecting { peer, since: self.now, credential })
            }
            Event::Disconnected { peer, reason } => {
                self.connecting.retain(|c| c.peer != peer);
                if let Some(i) = self.slot_of_peer(peer) {
                    self.forget_peer(peer);
                    self.events.push_back(ServerSessionEvent::PlayerInterrupted { player: i as u32, reason });
                    if reason == DisconnectReason::Client {
                        // It said it is leaving: nobody comes back with its token.
                        self.free_slot(i);
                    } else {
                        self.slots[i].set_away(self.now);
                    }
                }
            }
            Event::Message { peer, channel, data } => {
                if channel == CHANNEL_UNRELIABLE {
                    self.relay.handle_inputs(self.now, peer, &data);
                } else if channel == self.cfg.reliable_channel {
                    self.on_reliable(peer, &data);
                } else {
                    self.stats.bad_hello += 1;
                }
                transport.recycle(data);
            }
        }
    }
    /// A message on the reliable channel: a Hello, or a hosted match's client reports.
    fn on_reliable(&mut self, peer: PeerId, data: &[u8]) {
        match (self.hosted.is_some(), crate::relay::hosted::kind_of(data)) {
            (true, Some(crate::relay::hosted::KIND_STATE_REPORT)) => self.on_state_report(peer, data),
            (true, Some(crate::relay::hosted::KIND_CHECKS)) => self.on_checks(peer, data),
            _ => self.on_hello(peer, data),
        }
    }

    /// Runs the steady tick clock (never dilated) and the timers; returns how many
    /// ticks to simulate now.
    pub fn ticks_due(&mut self, now: Micros) -> u32 {
        self.now = self.now.max(now);
        for i in 0..self.slots.len() {
            if let SlotState::Away { since } = self.slots[i].state {
                if self.now.saturating_sub(since) >= self.cfg.reconnect_timeout_us {
                    self.free_slot(i);
                }
            }
        }
        while let Some(peer) = self
            .connecting
            .iter()
            .find(|c| self.now.saturating_sub(c.since) >= self.cfg.hello_timeout_us)
            .map(|c| c.peer)
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
        let t = self.relay.last_tick() + 1;
        let now = self.now;
        if self.hosted.is_some() {
            // No engine: the step goes to the clients, and the snapshots and checksums
            // come from them.
            self.hosted_tick(t);
            self.relay.tick_step(now);
            self.drain_relay_events(|_| false);
            return AdvanceStatus::Advanced;
        }
        let snapshot = self.slots.iter().any(|s| s.snapshot_due(now));
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
        let s = self.cfg.game.input_size;
        self.requests.begin_advance_flagged(t, false, true);
        let mut next = step.players().peekable();
        for p in 0..self.cfg.game.players as u32 {
            match next.next_if(|x| x.player == p) {
                Some(x) => {
                    let input = x.last_input().filter(|b| b.len() == s).unwrap_or(self.zero.as_slice());
                    self.requests.push_input(input, InputStatus::Confirmed);
                }
                None => self.requests.push_input(&self.zero, InputStatus::Disconnected),
            }
        }
        // Falling behind is noticed only when updates are sent (`send_messages`).
        self.drain_relay_events(|_| false);
        AdvanceStatus::Advanced
    }

    /// Frees the slots of players the sync layer removed, and starts the catch-ups of
    /// those that fell behind. `unacknowledged(peer)`: whether anything sent to `peer`
    /// waits for its acknowledgement.
    fn drain_relay_events(&mut self, mut unacknowledged: impl FnMut(PeerId) -> bool) {
        while let Some(e) = self.relay.poll_event() {
            let (peer, player, cause, jitter) = match e {
                RelayServerEvent::Kicked { peer, player, reason, jitter } => {
                    (peer, player, KickCause::Jitter(reason), jitter)
                }
                RelayServerEvent::FellBehind { peer, player } => {
                    let slot = player as usize;
                    let in_flight = unacknowledged(peer);
                    let Some(s) = self.slots.get_mut(slot) else { continue };
                    // Each catch-up costs a state dump and the whole state on the link:
                    // a player that keeps needing them although they reach it is not
                    // acknowledging its steps. While something sent to it is still
                    // unacknowledged (its last snapshot, during a long stall of its
                    // downlink, or our updates to a dark link), the link is at fault,
                    // not the player: not booked. (A client that withholds even the
                    // transport's acknowledgements is closed by the transport within
                    // its timeout.)
                    if !in_flight && !s.catch_up_needed(self.now) {
                        self.kick(slot, peer, KickCause::CatchUpFlood);
                        continue;
                    }
                    // A snapshot of a coming tick, and its steps from there.
                    s.needs_snapshot = true;
                    self.stats.catch_ups += 1;
                    self.events.push_back(ServerSessionEvent::PlayerCatchingUp { player, peer });
                    continue;
                }
                RelayServerEvent::Joined { .. } | RelayServerEvent::Left { .. } => continue,
            };
            // The sync layer has already let go of the player: keep its counters. Its
            // slot waits for its token, as after a drop.
            add_jitter(&mut self.gone, &jitter);
            if let Some(slot) = self.slots.get_mut(player as usize) {
                slot.set_away(self.now);
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
            self.relay.report_checksum(tick, checksum);
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
        self.welcome_waiting(tick, state);
        Ok(())
    }

    /// Welcomes every player waiting for a snapshot (and allowed one now, and in the
    /// steps since `tick`) with `state`, the game's state at the start of `tick`.
    fn welcome_waiting(&mut self, tick: Tick, state: &[u8]) {
        // A relay-only server's clients report their checksums at its check ticks.
        let report_interval = if self.hosted.is_some() { self.cfg.checksum_interval } else { 0 };
        for i in 0..self.slots.len() {
            let SlotState::Active { peer } = self.slots[i].state else { continue };
            let joined = self.relay.joined_at(i as u32).is_some_and(|j| j <= tick);
            if !self.slots[i].snapshot_due(self.now) || !joined {
                continue;
            }
            self.slots[i].needs_snapshot = false;
            if self.relay.is_behind(peer) {
                self.relay.rebase(peer, tick);
            }
            let mut msg = self.spare_messages.pop().unwrap_or_default();
            let w = Welcome {
                player: i as u16,
                token: self.slots[i].token,
                tick,
                input_size: self.cfg.game.input_size as u16,
                max_players: self.cfg.game.players as u16,
                report_interval,
                state,
            };
            join::encode_welcome(&mut msg, &w);
            self.outbox.push((peer, msg));
        }
    }

    /// The next event, oldest first.
    pub fn poll_event(&mut self) -> Option<ServerSessionEvent> {
        self.events.pop_front()
    }

    /// Sends what is due: the clients' updates, snapshots, and closes refused
    /// connections. Call once per frame, after advancing.
    pub fn send_messages<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) {
        self.now = self.now.max(now);
        for (peer, reason) in self.to_disconnect.drain(..) {
            transport.disconnect_with(now, peer, reason);
        }
        for (peer, msg) in self.outbox.drain(..) {
            // (`slot_of_peer` spelled out: the outbox is borrowed.)
            let slot = self.slots.iter().position(|s| s.state == SlotState::Active { peer });
            if transport.send(peer, self.cfg.reliable_channel, &msg).is_ok() {
                self.stats.snapshots_sent += 1;
                if let Some(h) = &mut self.hosted {
                    h.welcomed();
                }
                if let Some(i) = slot {
                    self.slots[i].snapshot_sent(now);
                }
            } else if let Some(i) = slot {
                // Try again next tick.
                self.slots[i].needs_snapshot = true;
            }
            if self.spare_messages.len() < self.cfg.game.players {
                self.spare_messages.push(msg);
            }
        }
        for (peer, msg) in self.take_hosted_outbox() {
            // An ask the transport refuses times out and goes to the next donor.
            let _ = transport.send(peer, self.cfg.reliable_channel, &msg);
        }
        self.relay.flush(now, transport);
        // After the transport's flush, what it still holds for a peer is what waits
        // for the peer's acknowledgement.
        transport.flush(now);
        self.drain_relay_events(|peer| transport.stats(peer).is_some_and(|s| s.send_queue_bytes > 0));
    }

    /// The figures now, summed over current and departed players.
    pub fn stats(&self) -> ServerSessionStats {
        let mut j = self.gone;
        for (_, peer) in self.relay.players() {
            if let Some(s) = self.relay.jitter_stats(peer) {
                add_jitter(&mut j, &s);
            }
        }
        let r = self.relay.stats();
        ServerSessionStats {
            tick: self.relay.last_tick(),
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
