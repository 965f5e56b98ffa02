//! The engine-facing session: one [`Host`] (in the networked modes) plus one rollback
//! core, run on the engine thread.
//!
//! The engine drives it with the loop of DESIGN.md: [`Session::ticks_due`] once per
//! frame, then per due tick [`Session::add_input`], [`Session::advance`] and
//! [`Session::poll_request`] until it returns `None`, and [`Session::poll_event`].
//! Pumping happens inside `ticks_due` and `advance`: the host's events are drained
//! (messages go to the core with the network thread's arrival time, so time sync
//! measures arrivals and not polls), the core's messages are queued on the host as
//! its [`Transport`](tickwire_proto::transport::Transport), and the host is flushed. The
//! network thread keeps acks and keepalives going while the engine hitches.
//!
//! Lifecycle: *setup* (players, spectators, replay, server address, link simulator),
//! [`Session::start`], then *connecting* (P2P and spectator: until every connection is
//! up; see `roster.rs` for who dials whom) and *running*. Networked cores are built only
//! when their connections exist, because a P2P core names each remote player by its
//! connection. The relay cores run from `start` on: the server listens, the client
//! dials and joins on its own (`relay.rs`).
//!
//! The cores sit behind an enum ([`cores`]).
//!
//! Steady state allocates nothing per tick: host events reuse pooled buffers, the
//! core's queues are preallocated, and the current request is copied into buffers
//! reused from poll to poll.

mod config;
mod cores;
mod event;
mod relay;
mod request;
mod roster;
mod running;

use std::collections::VecDeque;
use std::net::SocketAddr;

pub use config::{Mode, SessionConfig, SessionFailure};
pub use event::SessionEvent;
pub use relay::RelayPlayerStats;
pub use request::{PolledRequest, RequestKind};
pub use running::SessionStats;

use config::{argument, state};
use cores::Core;
use request::CurrentRequest;
use roster::Roster;

use crate::system_clock::SystemClock;
use crate::{Direction, Host, HostEvent};
use tickwire_proto::clock::{Clock, Micros};
use tickwire_proto::netsim::LinkConfig;
use tickwire_proto::rollback::{
    P2pSession, Replay, ReplaySession, SpectatorConfig, SpectatorSession, SyncTestSession, p2p::MAX_INPUT_DELAY,
};
use tickwire_proto::tick::TickClock;
use tickwire_proto::transport::PeerId;

/// Events kept without allocating (the queue grows past this only in a flood).
const EVENT_CAPACITY: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Setup,
    Connecting,
    Running,
}

/// A session: see the module docs. Use it from one thread at a time.
pub struct Session {
    cfg: SessionConfig,
    host: Option<Host>,
    clock: SystemClock,
    /// The fixed-rate clock of the cores without time sync (synctest, spectator, replay).
    fixed: TickClock,
    phase: Phase,
    roster: Roster,
    core: Option<Core>,
    replay: Option<Replay>,
    current: CurrentRequest,
    events: VecDeque<SessionEvent>,
    dump: Option<Vec<u8>>,
    dead: Option<String>,
    watched_connected: bool,
    rejected: u64,
    pending_recording: Option<Vec<u8>>,
    pending_predictions: Vec<(usize, Option<Vec<u8>>)>,
    /// Relay: snapshots the engine holds (known from creation, before the core exists).
    relay_slots: usize,
    /// Relay client: the server's address, set during setup.
    server_addr: Option<SocketAddr>,
}

impl Session {
    /// Checks `cfg` and, in the networked modes, binds the socket and starts the
    /// network thread.
    pub fn new(cfg: SessionConfig) -> Result<Session, SessionFailure> {
        let players = cfg.players;
        // The wire formats count players in one byte.
        if players == 0 || players > 255 {
            return Err(SessionFailure::Config(format!("{players} players; need 1..=255")));
        }
        let mut cfg = cfg;
        match cfg.mode {
            Mode::P2p => cfg.p2p.validate(players)?,
            _ => {
                if cfg.p2p.input_size == 0 || cfg.p2p.input_size > 64 {
                    return Err(SessionFailure::Config(format!("input_size {} not in 1..=64", cfg.p2p.input_size)));
                }
                cfg.p2p.clock.validate().map_err(SessionFailure::Config)?;
            }
        }
        if cfg.mode == Mode::Spectator && (cfg.spectator_catchup_speed == 0 || cfg.spectator_catchup_speed > 16) {
            return Err(SessionFailure::Config(format!(
                "spectator_catchup_speed {} not in 1..=16",
                cfg.spectator_catchup_speed
            )));
        }
        let relay_slots = relay::prepare(&mut cfg)?;
        let core = match cfg.mode {
            Mode::SyncTest => {
                Some(Core::SyncTest(SyncTestSession::new(players, cfg.p2p.input_size, cfg.check_distance)?))
            }
            _ => None,
        };
        let host = if cfg.mode.is_networked() {
            let mut hc = cfg.host.clone();
            if hc.endpoint.max_incoming == 0 {
                match cfg.mode {
                    Mode::P2p => hc.endpoint.max_incoming = (players as u32 - 1).saturating_add(cfg.max_spectators),
                    Mode::RelayServer => hc.endpoint.max_incoming = 2 * players as u32,
                    _ => {}
                }
            }
            Some(Host::start(hc)?)
        } else {
            None
        };
        Ok(Session {
            fixed: TickClock::new(cfg.p2p.clock, 0),
            roster: Roster::new(players, cfg.max_spectators as usize),
            current: CurrentRequest::with_capacity(players, cfg.p2p.input_size),
            cfg,
            host,
            clock: SystemClock::new(),
            phase: Phase::Setup,
            core,
            replay: None,
            events: VecDeque::with_capacity(EVENT_CAPACITY),
            dump: None,
            dead: None,
            watched_connected: false,
            rejected: 0,
            pending_recording: None,
            pending_predictions: Vec::new(),
            relay_slots,
            server_addr: None,
        })
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.cfg.mode
    }

    /// Players in the match.
    pub fn num_players(&self) -> usize {
        self.cfg.players
    }

    /// Bytes per input.
    pub fn input_size(&self) -> usize {
        self.cfg.p2p.input_size
    }

    /// Snapshots the engine must hold: `Save` slots are in `0..state_slots()`. Known
    /// from creation on.
    pub fn state_slots(&self) -> usize {
        match self.cfg.mode {
            Mode::P2p => self.cfg.p2p.state_slots(),
            Mode::SyncTest => self.cfg.check_distance as usize + 2,
            Mode::Spectator | Mode::Replay => 0,
            Mode::RelayServer | Mode::RelayClient => self.relay_slots,
        }
    }

    /// The bound address (networked modes).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.host.as_ref().map(Host::local_addr)
    }

    /// Now, on the timeline the session's clocks use (the network thread's, if any).
    pub fn now_us(&self) -> Micros {
        match &self.host {
            Some(h) => h.now_us(),
            None => self.clock.now_us(),
        }
    }

    /// True once [`Session::start`] has been called and every connection is up.
    pub fn is_running(&self) -> bool {
        self.phase == Phase::Running
    }

    fn require_setup(&self, what: &str) -> Result<(), SessionFailure> {
        if self.phase != Phase::Setup {
            return Err(state(format!("{what} is only possible before the session is started")));
        }
        Ok(())
    }

    fn require_mode(&self, modes: &[Mode], what: &str) -> Result<(), SessionFailure> {
        if !modes.contains(&self.cfg.mode) {
            return Err(state(format!("{what} is not available in {:?} mode", self.cfg.mode)));
        }
        Ok(())
    }

    /// Checks a remote address (`what` names it in errors) and returns it in the form
    /// the roster keeps (an IPv4-mapped IPv6 address folded to IPv4). Refuses one this
    /// socket cannot reach (IPv6 from an IPv4 socket) now, rather than as dials that
    /// fail over and over once started.
    fn check_reachable(&self, addr: SocketAddr, what: &str) -> Result<SocketAddr, SessionFailure> {
        let addr = roster::check_remote(addr, what)?;
        if let Some(h) = &self.host {
            crate::socket::reachable(h.local_addr(), addr).map_err(|e| argument(e.to_string()))?;
        }
        Ok(addr)
    }

    /// P2P: `player` plays on this machine.
    pub fn add_local_player(&mut self, player: usize) -> Result<(), SessionFailure> {
        self.require_mode(&[Mode::P2p], "adding players")?;
        self.require_setup("adding a player")?;
        self.roster.add_local(player)
    }

    /// P2P: `player` plays on the peer at `addr` (several players may share one).
    pub fn add_remote_player(&mut self, player: usize, addr: SocketAddr) -> Result<(), SessionFailure> {
        self.require_mode(&[Mode::P2p], "adding players")?;
        self.require_setup("adding a player")?;
        let addr = self.check_reachable(addr, "remote player address")?;
        self.roster.add_remote(player, addr)
    }

    /// P2P: accept a spectator connecting from `addr` (before or during the match; one
    /// joining mid-match gets a state snapshot first).
    pub fn add_spectator(&mut self, addr: SocketAddr) -> Result<(), SessionFailure> {
        self.require_mode(&[Mode::P2p], "serving spectators")?;
        let addr = self.check_reachable(addr, "spectator address")?;
        self.roster.add_spectator(addr)
    }

    /// Spectator: the peer whose match to watch.
    pub fn spectate(&mut self, addr: SocketAddr) -> Result<(), SessionFailure> {
        self.require_mode(&[Mode::Spectator], "watching a host")?;
        self.require_setup("choosing the watched host")?;
        let addr = self.check_reachable(addr, "watched host address")?;
        self.roster.watched = Some((addr, None));
        Ok(())
    }

    /// Replay: the replay to play (the bytes of a replay file).
    pub fn load_replay(&mut self, bytes: &[u8]) -> Result<(), SessionFailure> {
        self.require_mode(&[Mode::Replay], "loading a replay")?;
        self.require_setup("loading a replay")?;
        let replay = Replay::decode(bytes)?;
        if replay.players != self.cfg.players || replay.input_size != self.cfg.p2p.input_size {
            return Err(argument(format!(
                "the replay has {} players with {}-byte inputs; the session is configured for {} with {}",
                replay.players, replay.input_size, self.cfg.players, self.cfg.p2p.input_size
            )));
        }
        self.replay = Some(replay);
        Ok(())
    }

    /// Turns a link simulator on (`Some`) or off (`None`) for one direction.
    pub fn set_link_sim(&mut self, dir: Direction, cfg: Option<LinkConfig>) -> Result<(), SessionFailure> {
        let host = self.host.as_mut().ok_or_else(|| state(format!("{:?} mode has no socket", self.cfg.mode)))?;
        Ok(host.set_link_sim(dir, cfg)?)
    }

    /// Ends setup: P2P dials the peers it dials (roster docs), a spectator dials the
    /// watched host, synctest and replay start running.
    pub fn start(&mut self) -> Result<(), SessionFailure> {
        self.require_setup("starting")?;
        match self.cfg.mode {
            Mode::P2p => {
                self.roster.seal()?;
                self.phase = Phase::Connecting;
                self.ensure_dials();
                if self.roster.all_connected() {
                    self.build_p2p();
                }
            }
            Mode::Spectator => {
                if self.roster.watched.is_none() {
                    return Err(state("a spectator needs the watched host's address before starting"));
                }
                self.phase = Phase::Connecting;
                self.ensure_dials();
            }
            Mode::SyncTest => self.phase = Phase::Running,
            Mode::Replay => {
                let replay = self.replay.take().ok_or_else(|| state("load a replay before starting"))?;
                self.core = Some(Core::Replay(ReplaySession::new(replay)));
                self.phase = Phase::Running;
            }
            Mode::RelayServer | Mode::RelayClient => self.start_relay()?,
        }
        Ok(())
    }

    /// Dials every connection this side dials that has none (first time, or again
    /// after a failed attempt before the match runs).
    fn ensure_dials(&mut self) {
        if self.phase != Phase::Connecting {
            return;
        }
        let Some(host) = self.host.as_mut() else { return };
        for g in self.roster.groups.iter_mut().filter(|g| g.dials && g.peer.is_none()) {
            // A refused dial (command queue full) is tried again on the next pump.
            g.peer = host.connect(g.addr).ok();
        }
        if let Some((addr, peer @ None)) = self.roster.watched.as_mut() {
            *peer = host.connect(*addr).ok();
        }
    }

    /// Builds the P2P core once every remote player's connection is up.
    fn build_p2p(&mut self) {
        let Some(kinds) = self.roster.kinds() else { return };
        let now = self.now_us();
        match P2pSession::new(self.cfg.p2p.clone(), &kinds, now) {
            Ok(mut s) => {
                if let Some(initial) = self.pending_recording.take() {
                    s.start_recording(&initial);
                }
                for (player, input) in self.pending_predictions.drain(..) {
                    // Checked when it was set.
                    let _ = s.set_prediction(player, input.as_deref());
                }
                for sp in &self.roster.spectators {
                    if let Some(peer) = sp.peer {
                        s.add_spectator(peer);
                    }
                }
                self.core = Some(Core::P2p(s));
                self.phase = Phase::Running;
            }
            Err(e) => self.die(format!("building the P2P session failed: {e}")),
        }
    }

    fn build_spectator(&mut self, host_peer: PeerId) {
        let cfg = SpectatorConfig {
            players: self.cfg.players,
            input_size: self.cfg.p2p.input_size,
            history: self.cfg.p2p.history,
            max_behind: self.cfg.spectator_max_behind,
            catchup_speed: self.cfg.spectator_catchup_speed,
            channel: self.cfg.p2p.channel,
        };
        match SpectatorSession::new(cfg, host_peer) {
            Ok(s) => {
                self.core = Some(Core::Spectator(s));
                self.phase = Phase::Running;
            }
            Err(e) => self.die(format!("building the spectator session failed: {e}")),
        }
    }

    fn die(&mut self, message: String) {
        if self.dead.is_none() {
            self.dead = Some(message.clone());
            self.events.push_back(SessionEvent::Fatal(message));
        }
    }

    /// Drains the host's events into the core and the session's bookkeeping.
    fn pump(&mut self) {
        while let Some(ev) = self.host.as_mut().and_then(Host::poll_event) {
            if self.cfg.mode.is_relay() {
                self.relay_event(ev);
                continue;
            }
            match ev {
                HostEvent::Message { peer, data, received_at, .. } => {
                    if let Some(core) = self.core.as_mut() {
                        core.handle_message(received_at, peer, &data);
                    }
                    if let Some(h) = self.host.as_mut() {
                        h.recycle(data);
                    }
                }
                HostEvent::Connected { peer, addr } => self.on_connected(peer, addr),
                HostEvent::Disconnected { peer, .. } => self.on_disconnected(peer),
                HostEvent::Fatal { message } => self.die(message),
            }
        }
        self.ensure_dials();
        self.collect_core_events();
    }

    fn on_connected(&mut self, peer: PeerId, addr: SocketAddr) {
        match self.roster.arrival(peer, addr) {
            roster::Arrival::Group(g) => {
                self.roster.groups[g].connected = true;
                let player = Some(self.roster.groups[g].players[0]);
                self.events.push_back(SessionEvent::PeerConnected { peer, player });
                if self.phase == Phase::Connecting && self.roster.all_connected() {
                    self.build_p2p();
                }
            }
            roster::Arrival::Spectator => {
                if let Some(Core::P2p(s)) = self.core.as_mut() {
                    s.add_spectator(peer);
                }
                self.events.push_back(SessionEvent::PeerConnected { peer, player: None });
            }
            roster::Arrival::Watched => {
                self.watched_connected = true;
                self.events.push_back(SessionEvent::PeerConnected { peer, player: None });
                if self.core.is_none() {
                    self.build_spectator(peer);
                }
            }
            roster::Arrival::Unexpected => {
                if let Some(h) = self.host.as_mut() {
                    let _ = h.disconnect(peer);
                }
                self.rejected += 1;
                self.events.push_back(SessionEvent::ConnectionRejected { peer });
            }
        }
    }

    fn on_disconnected(&mut self, peer: PeerId) {
        if let Some(g) = self.roster.group_of(peer) {
            let group = &mut self.roster.groups[g];
            group.connected = false;
            match self.core.as_mut() {
                Some(core) => core.peer_disconnected(peer),
                // Not running yet: forget the attempt; ensure_dials or a new incoming
                // connection replaces it.
                None => group.peer = None,
            }
        } else if let Some(sp) = self.roster.spectators.iter_mut().find(|s| s.peer == Some(peer)) {
            sp.peer = None;
            if let Some(core) = self.core.as_mut() {
                core.peer_disconnected(peer);
            }
        } else if let Some((_, watched)) = self.roster.watched.as_mut().filter(|w| w.1 == Some(peer)) {
            self.watched_connected = false;
            if self.core.is_none() {
                *watched = None;
            } else {
                self.events.push_back(SessionEvent::Core(tickwire_proto::rollback::Event::PeerDisconnected { peer }));
            }
        }
    }

    fn collect_core_events(&mut self) {
        if let Some(core) = self.core.as_mut() {
            while let Some(e) = core.poll_event() {
                relay::track_connection(&mut self.watched_connected, &e);
                self.events.push_back(e);
            }
        }
    }

    /// Queues the core's messages on the host and flushes it.
    fn send_and_flush(&mut self) {
        let tick_us = self.cfg.p2p.clock.tick_us.round() as Micros;
        if let (Some(core), Some(host)) = (self.core.as_mut(), self.host.as_mut()) {
            let now = host.now_us();
            core.send_messages(now, host, tick_us);
            // A full command queue or a dead thread shows up on later calls and as a
            // Fatal event; the core's messages are redundant and go again next frame.
            let _ = host.flush();
        }
    }

    /// The lowest player index behind the connection `peer` (a relay server: the
    /// player on that connection).
    pub fn player_of(&self, peer: PeerId) -> Option<usize> {
        match self.core.as_ref() {
            Some(Core::RelayServer(s)) => (0..self.cfg.players).find(|&p| s.peer_of(p as u32) == Some(peer)),
            _ => self.roster.player_of(peer),
        }
    }

    /// The connection of a remote `player` (None for local or unknown players; a relay
    /// server: the connection of a connected player).
    pub fn peer_of(&self, player: usize) -> Option<PeerId> {
        match self.core.as_ref() {
            Some(Core::RelayServer(s)) => s.peer_of(player as u32),
            _ => self.roster.peer_of(player),
        }
    }

    /// P2P: true if `player` plays on this machine (None if no such player was added).
    pub fn is_local_player(&self, player: usize) -> Option<bool> {
        self.roster.is_local(player)
    }

    /// The latest statistics of the connection to `peer`.
    pub fn peer_stats(&mut self, peer: PeerId) -> Option<tickwire_proto::transport::ConnectionStats> {
        self.host.as_mut()?.stats(peer)
    }

    /// Changes the input delay (P2P) from the next tick on.
    pub fn set_input_delay(&mut self, delay: u32) -> Result<(), SessionFailure> {
        self.require_mode(&[Mode::P2p], "input delay")?;
        if delay > MAX_INPUT_DELAY {
            return Err(argument(format!("input_delay {delay} above {MAX_INPUT_DELAY}")));
        }
        match self.core.as_mut() {
            Some(Core::P2p(s)) => s.set_input_delay(delay)?,
            _ => self.cfg.p2p.input_delay = delay,
        }
        Ok(())
    }

    /// Sets the prediction used for a remote player's missing inputs (None: back to
    /// the configured default; a relay client: repeat their last canonical input).
    pub fn set_prediction(&mut self, player: usize, input: Option<&[u8]>) -> Result<(), SessionFailure> {
        self.require_mode(&[Mode::P2p, Mode::RelayClient], "prediction")?;
        self.check_player(player)?;
        if let Some(b) = input.filter(|b| b.len() != self.cfg.p2p.input_size) {
            return Err(argument(format!("input of {} bytes, expected {}", b.len(), self.cfg.p2p.input_size)));
        }
        match self.core.as_mut() {
            Some(Core::P2p(s)) => s.set_prediction(player, input)?,
            Some(Core::RelayClient(s)) => s.set_prediction(player, input)?,
            _ => self.pending_predictions.push((player, input.map(<[u8]>::to_vec))),
        }
        Ok(())
    }
}
