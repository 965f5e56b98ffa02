//! [`P2pSession`]: GGPO-style rollback between peers, over this process's socket.
//!
//! Setup names every player (local, or remote at an address) and the spectators this
//! peer serves; `start` dials the peers this side dials (see `roster.rs`), and the
//! rollback core is built once every remote player's connection is up, because the
//! core names each remote player by its connection.

use std::net::SocketAddr;
use std::path::Path;

use super::engine::{Engine, Phase, sealed::Driven};
use super::event::SessionEvent;
use super::failure::{SessionFailure, argument, state};
use super::messages::{self, MESSAGE_CHANNEL, MessageTarget};
use super::net::{Net, NetStats, Remote, has_net};
use super::roster::{self, Roster};
use super::settings::P2pSettings;
use crate::Target;
use crate::host_event::HostEvent;
use tickwire_proto::{
    Binding, ConnectionStats, DisconnectReason, MAX_INPUT_DELAY, Micros, P2pConfig, PeerId, PeerSyncStats, Proven, Tick,
};
/// A P2P rollback session. Use it from one thread at a time.
pub struct P2pSession {
    engine: Engine<tickwire_proto::P2pSession>,
    net: Net,
    core_config: P2pConfig,
    roster: Roster,
    rejected: u64,
    dump: Option<Vec<u8>>,
    /// Set before the core exists; handed to it when it is built.
    pending_recording: Option<Vec<u8>>,
    pending_predictions: Vec<(usize, Option<Vec<u8>>)>,
    /// Per-player input delays set before the core exists.
    pending_delays: Vec<(usize, u32)>,
    /// An announced stall set before the core was built (see `set_loading`).
    pending_loading: bool,
    /// The host's own silence timeout (`HostConfig`): the transport waits at least
    /// this long, and longer when the session's disconnect timeout asks it to.
    host_timeout_us: Micros,
    /// Connections accepted while a remote player's name was still being looked up
    /// and from no known address: sorted once every name has its address.
    unsorted: Vec<(PeerId, SocketAddr, Proven, Option<Binding>)>,
}

/// A P2P session's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct P2pSessionStats {
    /// Started and every connection up.
    pub running: bool,
    /// The rollback core's figures (zero before it runs).
    pub core: tickwire_proto::P2pStats,
    /// The input delay now.
    pub input_delay: u32,
    /// Snapshots the engine holds.
    pub state_slots: u32,
    /// The socket's figures.
    pub net: NetStats,
}

/// The figures of a net overlay for one remote player: its connection's and the sync
/// with its peer. Like GGPO's `ggpo_get_network_stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct P2pPeerStats {
    /// The connection the player plays behind.
    pub peer: PeerId,
    /// RTT, loss, rates and counters of that connection.
    pub connection: ConnectionStats,
    /// Frame advantage and queues (zero until the match runs and the peer is heard).
    pub sync: PeerSyncStats,
}

/// How much longer than the session's disconnect timeout the transport waits for a
/// silent peer.
const TRANSPORT_SLACK_US: Micros = 1_000_000;

/// The transport's silence timeout for a session that drops a silent peer after
/// `disconnect_timeout_us` (0: never, and then the transport never times out either):
/// the session decides, with its interruption notice first, so the transport waits a
/// little longer, and at least the host's own `host_timeout_us`.
fn transport_timeout(host_timeout_us: Micros, disconnect_timeout_us: Micros) -> Micros {
    if disconnect_timeout_us == 0 {
        Micros::MAX
    } else {
        host_timeout_us.max(disconnect_timeout_us.saturating_add(TRANSPORT_SLACK_US))
    }
}

impl P2pSession {
    /// Checks `settings`, binds the socket and starts the network thread.
    pub fn new(settings: P2pSettings) -> Result<Self, SessionFailure> {
        settings.validate()?;
        let players = settings.game.players;
        // The session decides when a silent peer is gone (disconnect_timeout_us, with its
        // interruption notice first): the transport's own silence timeout must not cut
        // that short, so it waits a little longer.
        let mut host = settings.host.clone();
        let host_timeout_us = host.endpoint.timeout_us;
        host.endpoint.timeout_us = transport_timeout(host_timeout_us, settings.disconnect_timeout_us);
        let net = Net::start(host, (players as u32 - 1).saturating_add(settings.max_spectators))?;
        Ok(P2pSession {
            engine: Engine::new(settings.game),
            net,
            core_config: settings.core_config(),
            roster: Roster::new(players, settings.max_spectators as usize),
            rejected: 0,
            dump: None,
            pending_recording: None,
            pending_predictions: Vec::new(),
            pending_delays: Vec::new(),
            pending_loading: false,
            host_timeout_us,
            unsorted: Vec::new(),
        })
    }

    /// `player` plays on this machine. Setup only.
    pub fn add_local_player(&mut self, player: usize) -> Result<(), SessionFailure> {
        self.engine.require_setup("adding a player")?;
        self.roster.add_local(player)
    }

    /// `player` plays on the peer at `addr` (several players may share one). Setup only.
    pub fn add_remote_player(&mut self, player: usize, addr: SocketAddr) -> Result<(), SessionFailure> {
        self.add_remote_target(player, &Target::Addr(addr))
    }

    /// `player` plays on the peer at `target`, an IP literal or a host name. A name is
    /// looked up on the host's resolver thread from now on; the session neither dials
    /// nor accepts that peer until its address is known (`start` does not wait), and
    /// a name that gives no address ends the session (a `Fatal` event saying so).
    /// Players given the same name text share a connection. Setup only.
    pub fn add_remote_target(&mut self, player: usize, target: &Target) -> Result<(), SessionFailure> {
        self.engine.require_setup("adding a player")?;
        if let Target::Name { .. } = target {
            // Checked before a lookup starts for nothing; the same text joins its group.
            self.roster.check_free(player)?;
            let text = target.to_string();
            if let Some(g) = self.roster.named_group(&text) {
                let ticket = self.roster.groups[g].name.as_ref().map_or(0, |n| n.0);
                return self.roster.add_remote_named(player, ticket, text);
            }
        }
        match self.net.remote(target, "remote player address")? {
            Remote::Resolving(ticket, text) => self.roster.add_remote_named(player, ticket, text),
            Remote::Known(addr) => self.roster.add_remote(player, addr),
        }
    }

    /// Accepts a spectator connecting from `addr` (before or during the match; one
    /// joining mid-match gets a state snapshot first).
    pub fn add_spectator(&mut self, addr: SocketAddr) -> Result<(), SessionFailure> {
        let addr = self.net.check_reachable(addr, "spectator address")?;
        self.roster.add_spectator(addr)
    }

    /// Ends setup and dials the peers this side dials (roster docs).
    pub fn start(&mut self) -> Result<(), SessionFailure> {
        self.engine.require_setup("starting")?;
        self.roster.seal()?;
        // Who we are in the handshakes our peers bind to us (`Roster::binding_to`).
        self.net.host.set_local_id(self.roster.lowest_local().map(|p| p as u32))?;
        self.engine.phase = Phase::Connecting;
        self.ensure_dials();
        let total = self.roster.groups.len() as u32;
        for g in &self.roster.groups {
            let (peer, player, connected) = (g.peer.unwrap_or(0), g.players[0], g.connected);
            self.engine.events.push_back(SessionEvent::SynchronizingWithPeer { peer, player, connected, total });
        }
        if self.roster.all_connected() {
            self.build_core();
        }
        Ok(())
    }

    /// Gives a local player's input for the next advance.
    pub fn add_input(&mut self, player: usize, input: &[u8]) -> Result<(), SessionFailure> {
        self.engine.require_started("pushing an input")?;
        match self.engine.core_mut() {
            Some(s) => Ok(s.add_local_input(player, input)?),
            None => Err(state("the session is not running yet: push inputs for the ticks ticks_due reports")),
        }
    }

    /// The engine's checksum of the state it saved for `tick`.
    pub fn confirm_save(&mut self, tick: Tick, checksum: u64) -> Result<(), SessionFailure> {
        self.engine.require_started("confirm_save")?;
        match self.engine.core_mut() {
            Some(s) => Ok(s.confirm_save(tick, checksum)?),
            None => Err(state("no save was requested: the session is not running yet")),
        }
    }

    /// The engine's answer to a DumpState request: the serialized state of `tick`.
    pub fn provide_state(&mut self, tick: Tick, bytes: &[u8]) -> Result<(), SessionFailure> {
        self.engine.require_started("provide_state")?;
        match self.engine.core_mut() {
            Some(s) => s.provide_state(tick, bytes)?,
            None => return Err(state("no state was requested: the session is not running yet")),
        }
        self.engine.collect_events();
        Ok(())
    }

    /// Changes the input delay from the next tick on.
    pub fn set_input_delay(&mut self, delay: u32) -> Result<(), SessionFailure> {
        if delay > MAX_INPUT_DELAY {
            return Err(argument(format!("input_delay {delay} above {MAX_INPUT_DELAY}")));
        }
        match self.engine.core_mut() {
            Some(s) => s.set_input_delay(delay)?,
            None => {
                self.core_config.input_delay = delay;
                self.pending_delays.clear();
            }
        }
        Ok(())
    }

    /// Changes local `player`'s input delay from the next tick on (GGPO's
    /// `ggpo_set_frame_delay`); the others keep theirs. A later
    /// [`P2pSession::set_input_delay`] sets every local player's again.
    pub fn set_player_input_delay(&mut self, player: usize, delay: u32) -> Result<(), SessionFailure> {
        self.engine.check_player(player)?;
        if delay > MAX_INPUT_DELAY {
            return Err(argument(format!("input_delay {delay} above {MAX_INPUT_DELAY}")));
        }
        match self.roster.is_local(player) {
            Some(true) => {}
            Some(false) => return Err(argument(format!("player {player} is remote: its peer sets its delay"))),
            None => return Err(state(format!("player {player} was not added"))),
        }
        match self.engine.core_mut() {
            Some(s) => s.set_player_input_delay(player, delay)?,
            None => {
                self.pending_delays.retain(|&(p, _)| p != player);
                self.pending_delays.push((player, delay));
            }
        }
        Ok(())
    }

    /// Announces (or ends) a stall of this side's engine, such as a loading screen
    /// mid-match: the peers give this side their loading grace before its held-back
    /// inputs count as no progress (`progress_timeout_us`). Any time; before the match
    /// starts it applies from the start.
    pub fn set_loading(&mut self, loading: bool) {
        match self.engine.core_mut() {
            Some(s) => s.set_loading(loading),
            None => self.pending_loading = loading,
        }
    }

    /// Changes the silence timeouts from now on, as `disconnect_timeout_us` and
    /// `notify_after_us` of the settings (0 = off; the notice below the drop while both
    /// are on), checked the same way; the transport's timeout follows. Any time.
    pub fn set_timeouts(
        &mut self,
        disconnect_timeout_us: Micros,
        notify_after_us: Micros,
    ) -> Result<(), SessionFailure> {
        if !tickwire_proto::p2p_timeouts_fit(notify_after_us, disconnect_timeout_us) {
            return Err(argument(format!(
                "notify_after_us ({notify_after_us} us) must be below disconnect_timeout_us ({disconnect_timeout_us} \
                 us), unless either is 0 (off)"
            )));
        }
        self.net.host.set_timeout(transport_timeout(self.host_timeout_us, disconnect_timeout_us))?;
        if let Some(s) = self.engine.core_mut() {
            s.set_timeouts(disconnect_timeout_us, notify_after_us)?;
        }
        self.core_config.disconnect_timeout_us = disconnect_timeout_us;
        self.core_config.notify_after_us = notify_after_us;
        Ok(())
    }

    /// Sets the prediction used for a remote player's missing inputs (None: back to
    /// the configured default).
    pub fn set_prediction(&mut self, player: usize, input: Option<&[u8]>) -> Result<(), SessionFailure> {
        self.engine.check_player(player)?;
        super::check_input_len(input, self.engine.game.input_size)?;
        match self.engine.core_mut() {
            Some(s) => s.set_prediction(player, input)?,
            None => self.pending_predictions.push((player, input.map(<[u8]>::to_vec))),
        }
        Ok(())
    }

    /// Drops remote `player` on purpose (GGPO's `ggpo_disconnect_player`): its peer,
    /// with every player behind it, is dropped and told so (reason `KickedByEngine`), a
    /// `PeerDisconnected` event follows, and the match goes on with those players'
    /// inputs marked disconnected. Only while the match runs.
    pub fn disconnect_player(&mut self, player: usize) -> Result<(), SessionFailure> {
        self.engine.check_player(player)?;
        let Some(s) = self.engine.core_mut() else {
            return Err(state("the match is not running yet: a player can be disconnected once SYNCHRONIZED"));
        };
        match s.disconnect_player(player) {
            Ok(()) => {}
            Err(e @ tickwire_proto::SessionError::AlreadyDisconnected(_)) => return Err(state(e.to_string())),
            Err(e) => return Err(argument(e.to_string())),
        }
        self.engine.collect_events();
        Ok(())
    }

    /// Records every confirmed input from tick 0 on; `initial_state` is the engine's
    /// serialized state at tick 0 (may be empty, at most
    /// [`MAX_INITIAL_STATE`](super::MAX_INITIAL_STATE) bytes, so that the replay fits in
    /// a replay file). Only before the first tick.
    pub fn start_recording(&mut self, initial_state: &[u8]) -> Result<(), SessionFailure> {
        if initial_state.len() > super::MAX_INITIAL_STATE {
            return Err(argument(format!(
                "initial state of {} bytes; a replay file holds at most {} bytes, its {}-byte header included",
                initial_state.len(),
                super::MAX_REPLAY_SIZE,
                super::MAX_REPLAY_SIZE - super::MAX_INITIAL_STATE
            )));
        }
        match self.engine.core_mut() {
            Some(s) if s.current_tick() == 0 => s.start_recording(initial_state),
            Some(_) => return Err(state("recording must start before the first tick")),
            None => {
                let mut copy = Vec::new();
                copy.try_reserve_exact(initial_state.len()).map_err(|_| {
                    argument(format!("cannot allocate {} bytes for the initial state", initial_state.len()))
                })?;
                copy.extend_from_slice(initial_state);
                self.pending_recording = Some(copy);
            }
        }
        Ok(())
    }

    /// The replay recorded so far (ticks final on every peer).
    pub fn replay_bytes(&self) -> Option<&[u8]> {
        self.engine.core()?.replay().map(|r| r.bytes())
    }

    /// Writes the replay recorded so far to `path`.
    pub fn save_replay(&self, path: &Path) -> Result<(), SessionFailure> {
        let bytes = self.replay_bytes().ok_or_else(|| {
            state(if self.pending_recording.is_some() {
                "nothing recorded yet: the session is not running"
            } else {
                "no recording: call start_recording before the first tick"
            })
        })?;
        super::write_file(path, bytes)
    }

    /// The forensic dump of the last desync, if one is ready; it stays until
    /// [`P2pSession::release_desync_dump`].
    pub fn desync_dump(&mut self) -> Option<&[u8]> {
        if self.dump.is_none() {
            self.dump = self.engine.core_mut().and_then(|s| s.take_desync_dump());
        }
        self.dump.as_deref()
    }

    /// Drops the dump returned by [`P2pSession::desync_dump`]; a desync with another
    /// peer can then be dumped (each peer's first mismatch is dumped, once).
    pub fn release_desync_dump(&mut self) {
        self.dump = None;
    }

    /// Writes the ready desync dump to `path` and releases it; Ok(false) if none is ready.
    pub fn write_desync_dump(&mut self, path: &Path) -> Result<bool, SessionFailure> {
        let Some(bytes) = self.desync_dump() else { return Ok(false) };
        super::write_file(path, bytes)?;
        self.release_desync_dump();
        Ok(true)
    }

    /// Sends `data` (at most [`MAX_MESSAGE_SIZE`](super::MAX_MESSAGE_SIZE) bytes) on the
    /// session's reliable side channel to a remote player's peer, or to every
    /// connected remote player's peer (each once): delivered in order, exactly once,
    /// unless the connection ends; it arrives as [`SessionEvent::Message`]. Any time
    /// after `start` once the peer is connected, before the match runs too (lobby
    /// settings, loadouts). Spectators neither send nor receive messages: their feed is
    /// one-way, and a host's spectator slots must not become a way into the match.
    ///
    /// Refused, with nothing sent: a local or unknown player; a peer not connected
    /// (`All` with no peer connected sends nothing and succeeds); a message over the
    /// size limit ([`HostError::TooLarge`](crate::HostError::TooLarge)); a peer whose
    /// send queue would go past
    /// [`MAX_QUEUED_MESSAGE_BYTES`](super::MAX_QUEUED_MESSAGE_BYTES)
    /// ([`FullQueue::MessageQueue`](crate::FullQueue::MessageQueue): try again on a
    /// later frame).
    pub fn send_message(&mut self, to: MessageTarget, data: &[u8]) -> Result<(), SessionFailure> {
        self.engine.require_started("sending a message")?;
        messages::check_size(data)?;
        let groups = &self.roster.groups;
        let only = match to {
            MessageTarget::All => None,
            MessageTarget::Player(player) => {
                self.engine.check_player(player)?;
                if self.roster.is_local(player) == Some(true) {
                    return Err(argument(format!(
                        "player {player} plays on this machine: messages go to remote players' peers"
                    )));
                }
                let g = groups.iter().position(|g| g.players.contains(&player));
                match g.filter(|&g| groups[g].connected) {
                    Some(g) => Some(g),
                    None => return Err(state(format!("player {player}'s peer is not connected"))),
                }
            }
        };
        let peers = groups
            .iter()
            .enumerate()
            .filter(move |(i, g)| g.connected && only.is_none_or(|o| o == *i))
            .filter_map(|(_, g)| g.peer);
        Ok(messages::send_to(&mut self.net.host, peers, data, &mut self.engine.messages.stats)?)
    }

    /// The lowest player index behind the connection `peer`.
    pub fn player_of(&self, peer: PeerId) -> Option<usize> {
        self.roster.player_of(peer)
    }

    /// The connection of a remote `player` (None for local or unknown players).
    pub fn peer_of(&self, player: usize) -> Option<PeerId> {
        self.roster.peer_of(player)
    }

    /// True if `player` plays on this machine (None if no such player was added).
    pub fn is_local_player(&self, player: usize) -> Option<bool> {
        self.roster.is_local(player)
    }

    /// Counters and gauges.
    pub fn stats(&mut self) -> P2pSessionStats {
        let (core, input_delay) = match self.engine.core() {
            Some(s) => (s.stats(), s.input_delay()),
            None => (tickwire_proto::P2pStats::default(), self.pending_input_delay()),
        };
        let running = self.engine.core().is_some();
        let connected = self.roster.connected_peers() as u32;
        P2pSessionStats {
            running,
            core: tickwire_proto::P2pStats { time_scale: if running { core.time_scale } else { 1.0 }, ..core },
            input_delay,
            state_slots: self.slots() as u32,
            net: NetStats::read(&mut self.net, connected, self.rejected),
        }
    }

    /// The overlay figures of remote `player`; `Ok(None)` while its peer is not
    /// connected (before it connects, or after it was dropped). An error for an unknown
    /// or a local player.
    pub fn peer_stats_of(&mut self, player: usize) -> Result<Option<P2pPeerStats>, SessionFailure> {
        self.engine.check_player(player)?;
        match self.roster.is_local(player) {
            Some(false) => {}
            Some(true) => return Err(argument(format!("player {player} is local: it has no peer"))),
            None => return Err(state(format!("player {player} was not added"))),
        }
        let Some(peer) = self.roster.peer_of(player) else { return Ok(None) };
        let Some(connection) = self.net.host.stats(peer) else { return Ok(None) };
        let sync = self.engine.core().and_then(|s| s.peer_sync_stats(player)).unwrap_or_default();
        Ok(Some(P2pPeerStats { peer, connection, sync }))
    }

    /// Before the core exists: the delay the first local player will start with (the
    /// core reports its first local player's).
    fn pending_input_delay(&self) -> u32 {
        let first_local = (0..self.engine.game.players).find(|&p| self.roster.is_local(p) == Some(true));
        first_local
            .and_then(|p| self.pending_delays.iter().find(|&&(q, _)| q == p))
            .map_or(self.core_config.input_delay, |&(_, d)| d)
    }

    /// Dials every connection this side dials that has none (first time, or again
    /// after a failed attempt before the match runs).
    fn ensure_dials(&mut self) {
        if !matches!(self.engine.phase, Phase::Connecting) {
            return;
        }
        self.settle_names();
        let ours = self.roster.lowest_local();
        for g in self.roster.groups.iter_mut().filter(|g| g.dials && g.peer.is_none() && g.name.is_none()) {
            // Bound to both ends' players: a man in the middle cannot hand the
            // handshake to another holder of the match secret.
            let binding = ours.map(|o| Binding { initiator: o as u32, responder: g.players[0] as u32 });
            // A refused dial (command queue full) is tried again on the next pump.
            g.peer = self.net.host.connect_bound(g.addr, binding).ok();
        }
    }

    /// Takes the answers of the remote players' host names; one that gives no address
    /// ends the session: the match cannot start without that peer.
    fn settle_names(&mut self) {
        if !self.roster.resolving() {
            return;
        }
        for g in 0..self.roster.groups.len() {
            let Some((ticket, text)) = self.roster.groups[g].name.clone() else { continue };
            let mut remote = Remote::Resolving(ticket, text.clone());
            match self.net.settle(&mut remote) {
                Ok(None) => {}
                Ok(Some(addr)) => {
                    let group = &mut self.roster.groups[g];
                    group.addr = addr;
                    group.name = None;
                }
                Err(why) => {
                    let player = self.roster.groups[g].players[0];
                    return self.engine.die(format!("remote player {player}'s address: {why}"));
                }
            }
        }
        if !self.roster.resolving() {
            for (peer, addr, proven, binding) in std::mem::take(&mut self.unsorted) {
                self.on_connected(peer, addr, proven, binding);
            }
        }
    }

    /// Builds the core once every remote player's connection is up.
    fn build_core(&mut self) {
        let Some(kinds) = self.roster.kinds() else { return };
        let now = self.net.now_us();
        match tickwire_proto::P2pSession::new(self.core_config.clone(), &kinds, now) {
            Ok(mut s) => {
                if let Some(initial) = self.pending_recording.take() {
                    s.start_recording(&initial);
                }
                s.set_loading(self.pending_loading);
                for (player, delay) in self.pending_delays.drain(..) {
                    // Checked when it was set.
                    let _ = s.set_player_input_delay(player, delay);
                }
                for (player, input) in self.pending_predictions.drain(..) {
                    // Checked when it was set.
                    let _ = s.set_prediction(player, input.as_deref());
                }
                for peer in self.roster.spectators.iter().filter_map(|sp| sp.peer) {
                    s.add_spectator(peer);
                }
                self.engine.run(s);
            }
            Err(e) => self.engine.die(format!("building the P2P session failed: {e}")),
        }
    }

    fn on_connected(&mut self, peer: PeerId, addr: SocketAddr, proven: Proven, binding: Option<Binding>) {
        // Roles follow what the connection proved, not its address (`Roster::arrival`).
        match self.roster.arrival(peer, addr, proven, binding) {
            roster::Arrival::Group(g) => {
                self.roster.groups[g].connected = true;
                let player = Some(self.roster.groups[g].players[0]);
                self.engine.events.push_back(SessionEvent::PeerConnected { peer, player, proven });
                if matches!(self.engine.phase, Phase::Connecting) {
                    let total = self.roster.groups.len() as u32;
                    let player = self.roster.groups[g].players[0];
                    let e = SessionEvent::SynchronizingWithPeer { peer, player, connected: true, total };
                    self.engine.events.push_back(e);
                    if self.roster.all_connected() {
                        self.build_core();
                    }
                }
            }
            roster::Arrival::Spectator => {
                if let Some(s) = self.engine.core_mut() {
                    s.add_spectator(peer);
                }
                self.engine.events.push_back(SessionEvent::PeerConnected { peer, player: None, proven });
            }
            // A remote player's name is still being looked up: this may be that peer,
            // which dialled before the answer came. Decided once the names are settled.
            roster::Arrival::Unexpected if self.roster.resolving() => self.unsorted.push((peer, addr, proven, binding)),
            roster::Arrival::Watched | roster::Arrival::Unexpected => {
                let _ = self.net.host.disconnect(peer);
                self.rejected += 1;
                self.engine.events.push_back(SessionEvent::ConnectionRejected { peer });
            }
        }
    }

    fn on_disconnected(&mut self, peer: PeerId, reason: DisconnectReason) {
        self.unsorted.retain(|(p, _, _, _)| *p != peer);
        if let Some(g) = self.roster.group_of(peer) {
            let group = &mut self.roster.groups[g];
            group.connected = false;
            match self.engine.core_mut() {
                Some(s) => s.peer_disconnected(peer, reason),
                // Not running yet: forget the attempt; ensure_dials or a new incoming
                // connection replaces it.
                None => group.peer = None,
            }
        } else if let Some(sp) = self.roster.spectators.iter_mut().find(|s| s.peer == Some(peer)) {
            sp.peer = None;
            if let Some(s) = self.engine.core_mut() {
                s.peer_disconnected(peer, reason);
            }
        }
    }
}

impl Driven for P2pSession {
    type Core = tickwire_proto::P2pSession;
    fn engine(&self) -> &Engine<Self::Core> {
        &self.engine
    }
    fn engine_mut(&mut self) -> &mut Engine<Self::Core> {
        &mut self.engine
    }
    fn pump(&mut self) {
        if matches!(self.engine.phase, Phase::Connecting) {
            self.settle_names();
        }
        while let Some(ev) = self.net.host.poll_event() {
            match ev {
                HostEvent::Message { peer, channel: MESSAGE_CHANNEL, data, .. } => {
                    // Members are the remote players' peers while connected; a
                    // spectator's connection is not one (see `send_message`). The
                    // place is the peer's group: a new connection for its players
                    // shares the room of the old one's unread messages.
                    let place = self.roster.group_of(peer).filter(|&g| self.roster.groups[g].connected);
                    self.engine.receive_message(peer, &data, place);
                    self.net.host.recycle(data);
                }
                HostEvent::Message { peer, data, received_at, .. } => {
                    if let Some(s) = self.engine.core_mut() {
                        s.handle_message(received_at, peer, &data);
                    }
                    self.net.host.recycle(data);
                }
                HostEvent::Connected { peer, addr, credential, binding } => {
                    self.on_connected(peer, addr, credential.proven(), binding)
                }
                HostEvent::Disconnected { peer, reason } => self.on_disconnected(peer, reason),
                HostEvent::Fatal { message } => self.engine.die(message),
            }
        }
        self.ensure_dials();
        self.engine.collect_events();
    }
    fn due(&mut self) -> u32 {
        let now = self.net.now_us();
        self.engine.core_mut().map_or(0, |s| s.ticks_due(now))
    }
    fn flush(&mut self) {
        let now = self.net.now_us();
        if let Some(s) = self.engine.core_mut() {
            s.send_messages(now, &mut self.net.host);
            // A full command queue or a dead thread shows up on later calls and as a
            // Fatal event; the core's messages are redundant and go again next frame.
            let _ = self.net.host.flush();
        }
    }
    fn slots(&self) -> usize {
        self.core_config.state_slots()
    }
    fn now(&self) -> Micros {
        self.net.now_us()
    }
}

has_net!(P2pSession);
