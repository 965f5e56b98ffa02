//! A relay client with prediction: the engine-facing session of the server/client
//! topology, built from the sync layer ([`RelayClient`]), the
//! [`Predictor`] and the join/reconnect handshake ([`super::join`]).
//!
//! The engine loop is the rollback sessions' one:
//! ```text
//! on_event(now, transport, e) for every transport event
//! n = ticks_due(now, transport)
//! n times: add_local_input(input); advance(); run every poll_request(), answering
//!          Save with confirm_save(tick, checksum)
//! poll_event() until None; send_messages(now, transport)
//! ```
//! Joining: the client says Hello; the server answers with a Welcome carrying our
//! player slot, a session token and its state at some tick T (a `Restore` request);
//! canonical steps from T follow, applied at most `max_catchup_ticks` per tick, and
//! then the client predicts. If the connection drops, the client reconnects by itself
//! for up to `reconnect_window_us` and presents the token to get its slot back.
//!
//! Desync detection: the server sends checksums of its state at some ticks; when our
//! authoritative state reaches such a tick the checksums are compared, and a
//! mismatch is a [`ClientSessionEvent::Desync`] with both values.

use crate::game::CheckedConfig;
use std::collections::VecDeque;
use std::net::SocketAddr;

use super::client_phase::{Phase, Reattempt, backoff_us, is_transient};
use super::hosted;
use super::hosted_client::ServerDuties;
use super::input_delay::{DelayPolicy, InputDelay};
use super::join::{self, Hello, SessionToken};
use super::prediction::{Predictor, PredictorConfig, PredictorStats, StepOutcome};
use super::relay_client::{RelayClient, RelayClientConfig, SyncStats};
use crate::clock::Micros;
use crate::engine::{AdvanceStatus, Request, Tick};
use crate::game::{ConfigProblems, GameShape, MAX_RELAY_PLAYERS};
use crate::rollback::p2p::MAX_PREDICTION;
use crate::transport::{
    CHANNEL_RELIABLE, CHANNEL_UNRELIABLE, DisconnectReason, Event, PeerId, Proven, SendError, Transport,
};

/// Settings of a [`RelayClientSession`].
#[derive(Debug, Clone, PartialEq)]
pub struct RelayClientSessionConfig {
    /// The match, as the server has it (a Welcome of another shape is refused): player
    /// slots (1..=[`MAX_RELAY_PLAYERS`]), bytes per input (every player's,
    /// 1..=[`MAX_INPUT_SIZE`](crate::MAX_INPUT_SIZE)), the tick rate and the catch-up
    /// cap of the client's tick clock. Default: 8 players of 2 bytes at 60 Hz, 250 ms.
    pub game: GameShape,
    /// The sync layer's own settings (send interval, the tick clock's dilation bounds,
    /// lead loop, redundancy, interpolation of the server's timeline). The session sets
    /// the rest from `game`: its `tick.tick_us`, `tick.max_frame_us`, `interp.tick_us`,
    /// `max_input_size`, `input_size` and `max_players` are not read.
    pub sync: RelayClientConfig,
    /// Most ticks predicted past the authoritative state; latency beyond it becomes
    /// input delay. 1..=[`MAX_PREDICTION`].
    pub max_prediction: u32,
    /// The base input delay.
    pub input_delay: InputDelay,
    /// Most authoritative ticks simulated per `advance` while catching up.
    pub max_catchup_ticks: u32,
    /// Reconnect by ourselves for this long after the connection drops for a reason
    /// worth retrying (silence, a full server, a broken message), backing off from
    /// 250 ms to 4 s between attempts; the same for a first join that fails so (0:
    /// never). A connection the server closed on purpose (kicked, another version,
    /// shut down) is not retried.
    pub reconnect_window_us: Micros,
    /// The transport's reliable channel (for the join handshake).
    pub reliable_channel: u8,
}

impl Default for RelayClientSessionConfig {
    fn default() -> Self {
        RelayClientSessionConfig {
            game: GameShape::new(8, 2),
            sync: RelayClientConfig::default(),
            max_prediction: 16,
            input_delay: InputDelay::Fixed(0),
            max_catchup_ticks: 16,
            reconnect_window_us: 30_000_000,
            reliable_channel: CHANNEL_RELIABLE,
        }
    }
}

impl RelayClientSessionConfig {
    /// The defaults for `game`.
    pub fn new(game: GameShape) -> Self {
        RelayClientSessionConfig { game, ..RelayClientSessionConfig::default() }
    }

    /// Snapshots the engine must hold for a client with these settings: the predicted
    /// window plus the catch-up run, and room for the authoritative anchor.
    pub fn state_slots(&self) -> usize {
        (self.max_prediction + self.max_catchup_ticks) as usize + 4
    }

    /// The sync layer's settings as the session runs it: the only place the shape
    /// reaches it.
    fn sync_config(&self) -> RelayClientConfig {
        let g = &self.game;
        let mut sync = self.sync.clone();
        sync.tick.tick_us = g.tick_us();
        sync.tick.max_frame_us = g.max_frame_us;
        sync.interp.tick_us = g.tick_us();
        sync.max_input_size = g.input_size;
        sync.input_size = Some(g.input_size);
        sync.max_players = Some(g.players as u32);
        sync
    }
}

impl CheckedConfig for RelayClientSessionConfig {
    /// Pushes every problem of these settings into `problems`, each under its field's
    /// name: the shape's under `players`, `input_size`, `tick_rate_hz` and
    /// `max_frame_us`, the sync layer's under `sync.` (`sync.send_interval`, ...).
    fn check(&self, problems: &mut ConfigProblems) {
        let p = problems;
        self.game.check(MAX_RELAY_PLAYERS, p);
        self.game.check_clock(p);
        if !(1..=MAX_PREDICTION).contains(&self.max_prediction) {
            p.push("max_prediction", format!("{} is not in 1..={MAX_PREDICTION}", self.max_prediction));
        }
        if self.max_catchup_ticks == 0 {
            p.push("max_catchup_ticks", "0 is below 1 tick");
        }
        if self.sync.send_interval == 0 {
            p.push("sync.send_interval", "0 is below 1 tick");
        }
        // The clock's tick length and catch-up cap are the shape's (checked above).
        self.sync.tick.check_dilation("sync.tick.", p);
    }
}

/// The shortest time between two `InputDelayChanged` events.
const DELAY_REPORT_US: Micros = 1_000_000;

/// What the client session tells the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientSessionEvent {
    /// The transport connected; the join handshake is under way.
    Connected {
        /// The server's peer id.
        server: PeerId,
        /// The credential this connection proved.
        proven: Proven,
    },
    /// The server's snapshot arrived: we are `player`, starting at `tick`
    /// (`reconnect`: after a drop, in our old slot).
    Joined {
        /// Our player id.
        player: u32,
        /// The tick the snapshot is the start of.
        tick: Tick,
        /// Whether we got our old slot back after a drop.
        reconnect: bool,
    },
    /// Caught up with the server: from now on the engine sees predicted ticks.
    Synchronized {
        /// The first predicted tick.
        tick: Tick,
    },
    /// A player appears in the canonical steps from `tick` on.
    PlayerJoined {
        /// The player id.
        player: u32,
        /// The first tick with this player.
        tick: Tick,
    },
    /// A player is gone from the canonical steps from `tick` on.
    PlayerLeft {
        /// The player id.
        player: u32,
        /// The first tick without this player.
        tick: Tick,
    },
    /// Our authoritative state at the start of `tick` differs from the server's.
    Desync {
        /// The tick whose starting state was compared.
        tick: Tick,
        /// Our checksum.
        local: u64,
        /// The server's checksum.
        remote: u64,
    },
    /// The timeline broke (a snapshot it needed is gone): a new snapshot was asked for.
    Resyncing {
        /// The authoritative tick when the timeline was dropped.
        tick: Tick,
    },
    /// The input delay in force changed to `delay` ticks. `spill` is the part of it
    /// that is latency beyond `max_prediction`: prediction stops there and the rest
    /// shows as delay (raise `max_prediction` to hide more of a long round trip).
    /// At most once per second (the spill follows a one-second peak).
    InputDelayChanged {
        /// The input delay now in force, in ticks.
        delay: u32,
        /// The part of `delay` that is latency beyond `max_prediction`, in ticks.
        spill: u32,
    },
    /// The prediction is `max_prediction` ticks past the authoritative state at `tick`
    /// and no canonical step came: `advance` answers `WindowFull` until one does. Once
    /// per stall.
    PredictionWindowFull {
        /// The authoritative tick the prediction is stuck past.
        tick: Tick,
    },
    /// The connection dropped; reconnecting.
    Interrupted {
        /// Why the connection dropped.
        reason: DisconnectReason,
    },
    /// The connection is gone for good.
    Disconnected {
        /// Why the connection ended.
        reason: DisconnectReason,
    },
}

/// Figures of a client session.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClientSessionStats {
    /// The synchronisation layer's figures.
    pub sync: SyncStats,
    /// The predictor's figures.
    pub prediction: PredictorStats,
    /// The engine's current tick (the start of the next tick it will simulate).
    pub current_tick: Tick,
    /// The newest tick whose starting state is the server's.
    pub authoritative_tick: Tick,
    /// Current minus authoritative tick: the re-simulation depth if the oldest
    /// prediction were wrong (M3's P).
    pub prediction_distance: u32,
    /// Our inputs the server has not consumed yet (as far as we know).
    pub pending_inputs: u64,
    /// The input delay in force (base or spill), in ticks.
    pub input_delay: u32,
    /// Messages dropped: malformed updates or welcomes, strangers, unknown channels.
    pub malformed: u64,
    /// Server checksums compared with ours, and those that found no checksum of ours.
    pub checks_compared: u64,
    /// Server checksums for ticks we logged no checksum of (passed over).
    pub checks_missed: u64,
    /// Checksums that differed from the server's (each also a [`ClientSessionEvent::Desync`]).
    pub desyncs: u64,
    /// Times we got our slot back after a drop.
    pub reconnects: u64,
    /// Times the timeline was dropped for a new snapshot.
    pub resyncs: u64,
}

/// Misuse of a client session, or a bad config.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientSessionError {
    #[error("invalid relay client config: {0}")]
    /// The config is unusable: every bad field, by name.
    Config(ConfigProblems),
    #[error("input of {got} bytes, expected {expected}")]
    /// An input was not the configured input size.
    WrongInputSize {
        /// The configured input size.
        expected: usize,
        /// The size given.
        got: usize,
    },
    #[error("player {0} does not exist")]
    /// A player index at or past the configured player count.
    UnknownPlayer(usize),
    #[error("tick {0} was not requested")]
    /// A save was confirmed for a tick the session did not ask to save.
    UnexpectedTick(Tick),
    #[error(transparent)]
    /// The transport refused a datagram.
    Send(#[from] SendError),
}

const SERVER_CHECKS: usize = 16;

/// The relay client with prediction. See the module docs.
pub struct RelayClientSession {
    cfg: RelayClientSessionConfig,
    relay: RelayClient,
    predictor: Predictor,
    delay: DelayPolicy,
    /// The input delay the engine was last told of (`InputDelayChanged`), and when.
    delay_told: u32,
    delay_told_at: Option<Micros>,
    server_addr: Option<SocketAddr>,
    phase: Phase,
    token: Option<SessionToken>,
    player: Option<u32>,
    snapshot_tick: Tick,
    now: Micros,
    local_input: Vec<u8>,
    server_checks: VecDeque<(Tick, u64)>,
    checks_done_upto: Option<Tick>,
    /// The last advance found the prediction window full (one event per stall).
    stalled: bool,
    events: VecDeque<ClientSessionEvent>,
    stats: ClientSessionStats,
    buf: Vec<u8>,
    /// What a relay-only server asks of us (its Welcome said so), else None.
    duties: Option<ServerDuties>,
}

impl RelayClientSession {
    /// A session on `cfg` (validated first), not connected yet.
    pub fn new(cfg: RelayClientSessionConfig) -> Result<Self, ClientSessionError> {
        cfg.validate().map_err(ClientSessionError::Config)?;
        let predictor = Predictor::new(PredictorConfig {
            input_size: cfg.game.input_size,
            max_players: cfg.game.players,
            max_prediction: cfg.max_prediction,
            max_catchup_ticks: cfg.max_catchup_ticks,
            pending_capacity: 1024,
        });
        // What `config()` shows is what runs.
        let mut cfg = cfg;
        cfg.sync = cfg.sync_config();
        let delay = DelayPolicy::new(cfg.input_delay, cfg.max_prediction);
        Ok(RelayClientSession {
            relay: RelayClient::new(cfg.sync.clone()),
            predictor,
            delay_told: delay.effective(),
            delay,
            delay_told_at: None,
            server_addr: None,
            phase: Phase::Idle,
            token: None,
            player: None,
            snapshot_tick: 0,
            now: 0,
            local_input: vec![0; cfg.game.input_size],
            server_checks: VecDeque::with_capacity(SERVER_CHECKS),
            checks_done_upto: None,
            stalled: false,
            events: VecDeque::with_capacity(64),
            stats: ClientSessionStats::default(),
            buf: Vec::with_capacity(64),
            duties: None,
            cfg,
        })
    }

    /// The session's config.
    pub fn config(&self) -> &RelayClientSessionConfig {
        &self.cfg
    }

    /// Snapshots the engine keeps: `Save` slots are in `0..state_slots()`.
    pub fn state_slots(&self) -> usize {
        self.predictor.state_slots()
    }

    /// Our player slot, once welcomed.
    pub fn player(&self) -> Option<u32> {
        self.player
    }

    /// The session token the server gave us (proof of our slot when reconnecting).
    pub fn token(&self) -> Option<SessionToken> {
        self.token
    }

    /// The engine's current tick (the start of the next tick it will simulate).
    pub fn current_tick(&self) -> Tick {
        self.predictor.current_tick()
    }

    /// The newest tick whose starting state is the server's.
    pub fn authoritative_tick(&self) -> Tick {
        self.predictor.authoritative_tick()
    }

    /// True from the server's Welcome on the current connection until it drops: the
    /// server knows this connection as a player's (it took the Hello).
    pub fn is_welcomed(&self) -> bool {
        matches!(self.phase, Phase::Welcomed { .. } | Phase::CatchingUp { .. } | Phase::Playing { .. })
    }

    /// True once caught up after the (latest) snapshot.
    pub fn is_synchronized(&self) -> bool {
        matches!(self.phase, Phase::Playing { .. })
    }

    /// Starts connecting to the server at `addr`.
    pub fn connect<T: Transport + ?Sized>(
        &mut self,
        now: Micros,
        transport: &mut T,
        addr: SocketAddr,
    ) -> Result<PeerId, ClientSessionError> {
        self.now = self.now.max(now);
        self.server_addr = Some(addr);
        let peer = self.relay.connect(now, transport, addr)?;
        self.phase = Phase::Connecting { peer, retry: None };
        Ok(peer)
    }

    /// Ends the session before any connection, as a lost server does (`Disconnected`
    /// with `reason`, then no ticks and `Finished`): the server's name gave no address.
    pub fn give_up(&mut self, reason: DisconnectReason) {
        if self.phase == Phase::Lost {
            return;
        }
        self.phase = Phase::Lost;
        self.events.push_back(ClientSessionEvent::Disconnected { reason });
    }

    /// Handles one transport event (call for every event the transport produces).
    pub fn on_event<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, e: Event) {
        self.now = self.now.max(now);
        match e {
            Event::Connected { peer, credential, .. } if Some(peer) == self.phase.peer() => {
                if let Phase::Connecting { peer, retry } = self.phase {
                    self.phase = Phase::Joining { peer, hello_sent: false, retry };
                    let proven = credential.proven();
                    self.events.push_back(ClientSessionEvent::Connected { server: peer, proven });
                }
            }
            Event::Disconnected { peer, reason } if Some(peer) == self.phase.peer() => self.on_lost(reason),
            Event::Message { peer, channel, data } => {
                if Some(peer) != self.phase.peer() {
                    self.stats.malformed += 1;
                } else if channel == CHANNEL_UNRELIABLE {
                    self.relay.handle_update(self.now, &data);
                    if let Some(tick) = self.relay.take_restart() {
                        self.on_restart(tick);
                    }
                } else if channel == self.cfg.reliable_channel {
                    self.on_reliable(&data);
                } else {
                    self.stats.malformed += 1;
                }
                transport.recycle(data);
            }
            _ => {}
        }
    }

    /// A message on the reliable channel: a Welcome, or a relay-only server's ask.
    fn on_reliable(&mut self, data: &[u8]) {
        match hosted::kind_of(data) {
            Some(hosted::KIND_STATE_ASK) => {
                let taken = self.is_welcomed() && self.duties.as_mut().is_some_and(|d| d.on_ask(data));
                if !taken {
                    self.stats.malformed += 1;
                }
            }
            _ => self.on_welcome(data),
        }
    }

    fn on_welcome(&mut self, data: &[u8]) {
        let Ok(w) = join::decode_welcome(data) else {
            self.stats.malformed += 1;
            return;
        };
        let ours = w.input_size as usize == self.cfg.game.input_size && w.max_players as usize == self.cfg.game.players;
        // A returning client must get its own token back; a new one any token.
        let token_ok = self.token.is_none_or(|t| t == w.token);
        if !ours || !token_ok {
            self.stats.malformed += 1;
            return;
        }
        let (peer, retry) = match self.phase {
            Phase::Joining { peer, retry, .. } => (peer, retry),
            // A snapshot we did not ask for, from the server that gave us our token: we
            // fell behind the steps it keeps, and it starts us again from there.
            Phase::CatchingUp { peer } | Phase::Playing { peer } if self.token.is_some() => {
                self.drop_timeline();
                (peer, None)
            }
            _ => {
                self.stats.malformed += 1;
                return;
            }
        };
        self.token = Some(w.token);
        self.player = Some(w.player as u32);
        self.predictor.set_local_player(w.player as u32);
        self.duties = (w.report_interval > 0).then(|| ServerDuties::new(w.report_interval));
        self.phase = Phase::Welcomed { peer, tick: w.tick, state: w.state.to_vec(), retry };
    }

    /// The connection dropped (or a join failed): retry within the window when the
    /// reason is worth it, else the session is over.
    fn on_lost(&mut self, reason: DisconnectReason) {
        let run = self.phase.reattempt();
        let retry = Reattempt {
            since: run.map_or(self.now, |r| r.since),
            attempt: run.map_or(0, |r| r.attempt + 1),
            had_slot: run.map_or(self.token.is_some(), |r| r.had_slot),
        };
        let within = is_transient(reason, retry.had_slot)
            && self.server_addr.is_some()
            && self.cfg.reconnect_window_us > 0
            && self.now.saturating_sub(retry.since) <= self.cfg.reconnect_window_us;
        if within {
            // The timeline is dropped at once: nothing is simulated on a dead link.
            self.relay = RelayClient::new(self.cfg.sync.clone());
            self.predictor.reset(true);
            self.duties = None;
            self.delay.reset();
            self.server_checks.clear();
            if run.is_none() {
                self.events.push_back(ClientSessionEvent::Interrupted { reason });
            }
            self.phase = Phase::Retrying { at: self.now + backoff_us(retry.attempt), retry, reason };
        } else {
            self.phase = Phase::Lost;
            self.events.push_back(ClientSessionEvent::Disconnected { reason });
        }
    }

    /// A retry whose time has come: a new connection (the token, if any, goes in the
    /// Hello and gets the slot back).
    fn retry_if_due<T: Transport + ?Sized>(&mut self, transport: &mut T) {
        let Phase::Retrying { at, retry, reason } = self.phase else { return };
        let Some(addr) = self.server_addr else { return };
        if self.now < at {
            return;
        }
        match self.relay.connect(self.now, transport, addr) {
            Ok(peer) => self.phase = Phase::Connecting { peer, retry: Some(retry) },
            Err(_) => {
                self.phase = Phase::Lost;
                self.events.push_back(ClientSessionEvent::Disconnected { reason });
            }
        }
    }

    /// Runs the tick clock (steered by the server's feedback); returns how many ticks
    /// to simulate now. For each: [`RelayClientSession::add_local_input`], then
    /// [`RelayClientSession::advance`]. Ticks the engine skips repeat its last input.
    /// 0 once the server is lost for good ([`ClientSessionEvent::Disconnected`]).
    pub fn ticks_due<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) -> u32 {
        self.now = self.now.max(now);
        if self.phase == Phase::Lost {
            return 0;
        }
        self.retry_if_due(transport);
        let n = self.relay.ticks_due(now, transport);
        self.stats.sync = self.relay.stats(now, transport);
        if let Some(st) = self.phase.peer().and_then(|p| transport.stats(p)) {
            self.delay.on_rtt(now, st.srtt_us, self.cfg.game.tick_us());
        }
        n
    }

    /// Our input for the next [`RelayClientSession::advance`] (kept until replaced).
    pub fn add_local_input(&mut self, input: &[u8]) -> Result<(), ClientSessionError> {
        if input.len() != self.cfg.game.input_size {
            return Err(ClientSessionError::WrongInputSize { expected: self.cfg.game.input_size, got: input.len() });
        }
        self.local_input.copy_from_slice(input);
        Ok(())
    }

    /// The engine's guess for another player's input (None: repeat their last one).
    pub fn set_prediction(&mut self, player: usize, input: Option<&[u8]>) -> Result<(), ClientSessionError> {
        if player >= self.cfg.game.players {
            return Err(ClientSessionError::UnknownPlayer(player));
        }
        if let Some(b) = input.filter(|b| b.len() != self.cfg.game.input_size) {
            return Err(ClientSessionError::WrongInputSize { expected: self.cfg.game.input_size, got: b.len() });
        }
        self.predictor.set_prediction(player, input);
        Ok(())
    }

    /// Runs one due tick: sends our input, applies the canonical steps that arrived
    /// (re-predicting only when a prediction was wrong) and predicts up to the target
    /// tick, all as requests to poll. The answers, as P2P's where they mean the same:
    /// `Advanced`; `NotSynchronized` when no tick is due, no snapshot has arrived yet
    /// or the client is reconnecting (the input still goes to the server);
    /// `WindowFull` when the prediction is already `max_prediction` ticks past the
    /// authoritative state and no step came (no new tick; the requests may still hold a
    /// correction: poll them); `Finished` once the server is lost for good (no request).
    pub fn advance(&mut self) -> AdvanceStatus {
        if self.phase == Phase::Lost {
            self.predictor.begin_batch();
            return AdvanceStatus::Finished;
        }
        if !self.relay.input_due() {
            return AdvanceStatus::NotSynchronized;
        }
        let Ok(c) = self.relay.record_input(self.now, &self.local_input) else { return AdvanceStatus::NotSynchronized };
        self.predictor.push_local(c, &self.local_input);
        self.delay.on_tick(self.predictor.pending());
        let delay = self.delay.effective();
        // At most once a second: while the pending inputs ramp up after a join the
        // delay climbs a tick at a time; the engine hears where it settles.
        let quiet = self.delay_told_at.is_none_or(|t| self.now >= t + DELAY_REPORT_US);
        if delay != self.delay_told && quiet {
            self.delay_told = delay;
            self.delay_told_at = Some(self.now);
            self.events.push_back(ClientSessionEvent::InputDelayChanged { delay, spill: self.delay.spill() });
        }
        self.predictor.begin_batch();
        if let Some(d) = &mut self.duties {
            d.before_batch(&mut self.predictor);
        }
        if !self.predictor.synced() {
            let Phase::Welcomed { peer, tick, ref state, retry } = self.phase else {
                return AdvanceStatus::NotSynchronized;
            };
            self.predictor.restore(tick, state);
            if let Some(d) = &mut self.duties {
                d.restart(tick);
            }
            self.phase = Phase::CatchingUp { peer };
            self.snapshot_tick = tick;
            self.checks_done_upto = None;
            let reconnect = retry.is_some_and(|r| r.had_slot);
            self.stats.reconnects += reconnect as u64;
            let player = self.player.unwrap_or(0);
            self.events.push_back(ClientSessionEvent::Joined { player, tick, reconnect });
        }
        let first_input = self.relay.first_input();
        let mut broken = false;
        while let Some((tick, players)) = self.relay.peek_step() {
            let auth = self.predictor.authoritative_tick();
            if tick < auth {
                self.predictor.skip_step(players, first_input);
            } else if tick > auth {
                broken = true; // the steps we need never came
                break;
            } else if !self.predictor.can_take_step() {
                break;
            } else if self.predictor.on_step(tick, players, first_input) == StepOutcome::Lost {
                broken = true;
                break;
            }
            self.relay.discard_step();
        }
        if broken {
            self.resync();
            return AdvanceStatus::NotSynchronized;
        }
        let caught_up = self.relay.queued_steps() == 0;
        self.predictor.finish_batch(caught_up, self.delay.effective());
        let full = self.predictor.window_full();
        if full && !self.stalled {
            let tick = self.predictor.current_tick();
            self.events.push_back(ClientSessionEvent::PredictionWindowFull { tick });
        }
        self.stalled = full;
        if let (true, Phase::CatchingUp { peer }) = (caught_up, &self.phase) {
            self.phase = Phase::Playing { peer: *peer };
            self.events.push_back(ClientSessionEvent::Synchronized { tick: self.predictor.authoritative_tick() });
        }
        while let Some((player, tick, joined)) = self.predictor.poll_presence_change() {
            let e = if joined {
                ClientSessionEvent::PlayerJoined { player, tick }
            } else {
                ClientSessionEvent::PlayerLeft { player, tick }
            };
            self.events.push_back(e);
        }
        self.check_desyncs();
        if let Some(d) = &mut self.duties {
            d.after_batch(&self.predictor);
        }
        if full { AdvanceStatus::WindowFull } else { AdvanceStatus::Advanced }
    }

    /// Drops the timeline and asks the server for a new snapshot on this connection,
    /// for example to recover from a desync: a `Restore` of the server's state and a
    /// catch-up follow, as when joining.
    pub fn request_snapshot(&mut self) {
        self.resync();
    }

    /// Only a client with a timeline (restored, on a connection) can drop it.
    fn resync(&mut self) {
        let (Phase::CatchingUp { peer } | Phase::Playing { peer }) = self.phase else { return };
        self.drop_timeline();
        self.phase = Phase::Joining { peer, hello_sent: false, retry: None };
    }

    /// Drops the timeline (a snapshot restores a new one).
    fn drop_timeline(&mut self) {
        let tick = self.predictor.authoritative_tick();
        self.predictor.reset(false);
        if let Some(d) = &mut self.duties {
            d.forget_timeline();
        }
        self.stats.resyncs += 1;
        self.events.push_back(ClientSessionEvent::Resyncing { tick });
    }

    /// The server started our steps again at `tick`: we fell behind the steps it keeps,
    /// and a snapshot of that tick is on its way (unless it is here already).
    fn on_restart(&mut self, tick: Tick) {
        match self.phase {
            Phase::Welcomed { tick: t, .. } if t == tick => {}
            Phase::CatchingUp { .. } if self.snapshot_tick == tick => {}
            Phase::Welcomed { peer, retry, .. } => {
                // An older snapshot: the steps after it will not come.
                self.phase = Phase::Joining { peer, hello_sent: true, retry };
            }
            Phase::CatchingUp { peer } | Phase::Playing { peer } => {
                self.drop_timeline();
                self.phase = Phase::Joining { peer, hello_sent: true, retry: None };
            }
            Phase::Idle | Phase::Connecting { .. } | Phase::Joining { .. } | Phase::Retrying { .. } | Phase::Lost => {}
        }
    }

    fn check_desyncs(&mut self) {
        while let Some((t, c)) = self.relay.take_check() {
            let done = self.checks_done_upto.is_some_and(|d| t <= d) || t < self.snapshot_tick;
            if done || self.server_checks.iter().any(|&(x, _)| x == t) {
                continue;
            }
            if self.server_checks.len() == SERVER_CHECKS {
                self.server_checks.pop_front();
            }
            self.server_checks.push_back((t, c));
        }
        while let Some(&(t, remote)) = self.server_checks.front() {
            if let Some(local) = self.predictor.authoritative_checksum(t) {
                self.stats.checks_compared += 1;
                if local != remote {
                    self.stats.desyncs += 1;
                    self.events.push_back(ClientSessionEvent::Desync { tick: t, local, remote });
                }
            } else if self.predictor.checksums_logged_past(t) {
                self.stats.checks_missed += 1;
            } else {
                break; // not reached yet
            }
            self.checks_done_upto = Some(t);
            self.server_checks.pop_front();
        }
    }

    /// The next request of this tick, in order. Run them all before advancing again.
    pub fn poll_request(&mut self) -> Option<Request<'_>> {
        self.predictor.poll_request()
    }

    /// Requests of the last `advance` not polled yet.
    pub fn pending_requests(&self) -> usize {
        self.predictor.pending_requests()
    }

    /// The connection to the server (None while reconnecting or after it is gone).
    pub fn server_peer(&self) -> Option<PeerId> {
        self.phase.peer()
    }

    /// The engine's checksum of the state it saved for `tick` (answer to `Save`).
    pub fn confirm_save(&mut self, tick: Tick, checksum: u64) -> Result<(), ClientSessionError> {
        if self.predictor.confirm_save(tick, checksum) { Ok(()) } else { Err(ClientSessionError::UnexpectedTick(tick)) }
    }

    /// The engine's serialized state for a `DumpState` request. Only a relay-only
    /// server asks for one (for a joining player's snapshot); its digest, and the
    /// state when the server asked for it, go to the server with the next
    /// `send_messages`.
    pub fn provide_state(&mut self, tick: Tick, state: &[u8]) -> Result<(), ClientSessionError> {
        if self.duties.as_mut().is_some_and(|d| d.provide_state(tick, state)) {
            Ok(())
        } else {
            Err(ClientSessionError::UnexpectedTick(tick))
        }
    }

    /// The next event, oldest first.
    pub fn poll_event(&mut self) -> Option<ClientSessionEvent> {
        self.events.pop_front()
    }

    /// Sends what is due: our inputs (every `send_interval` ticks, with redundancy)
    /// and the join handshake. Call once per frame, after advancing.
    pub fn send_messages<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) {
        self.now = self.now.max(now);
        if let Phase::Joining { peer: server, hello_sent: false, .. } = self.phase {
            let h = Hello {
                token: self.token.unwrap_or(SessionToken::NONE),
                input_size: self.cfg.game.input_size as u16,
                max_players: self.cfg.game.players as u16,
            };
            join::encode_hello(&mut self.buf, &h);
            if transport.send(server, self.cfg.reliable_channel, &self.buf).is_ok() {
                if let Phase::Joining { hello_sent, .. } = &mut self.phase {
                    *hello_sent = true;
                }
                transport.flush(now);
            }
        }
        let server = self.phase.peer().filter(|_| self.is_welcomed());
        if let (Some(d), Some(server)) = (&mut self.duties, server) {
            d.send(transport, server, self.cfg.reliable_channel);
        }
        let _ = self.relay.send_pending(now, transport);
    }

    /// Counters and gauges (the sync figures as of the last `ticks_due`).
    pub fn stats(&self) -> ClientSessionStats {
        let (cur, auth) = (self.predictor.current_tick(), self.predictor.authoritative_tick());
        ClientSessionStats {
            prediction: self.predictor.stats(),
            current_tick: cur,
            authoritative_tick: auth,
            prediction_distance: cur.saturating_sub(auth),
            pending_inputs: self.predictor.pending(),
            input_delay: self.delay.effective(),
            malformed: self.stats.malformed + self.relay.malformed(),
            ..self.stats
        }
    }
}
