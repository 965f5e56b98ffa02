//! A P2P match as the engine drives it from creation, sans-IO: who is in it (local
//! and remote players, the spectators this peer serves), the connections to the other
//! peers (who dials whom, which connection takes a player's place), and the rollback
//! core ([`P2pSession`]), built once every remote player's connection is up, because
//! the core names each remote player by its connection.
//!
//! The owner feeds it every transport event ([`P2pMatch::on_event`]) and lets it send
//! ([`P2pMatch::send_messages`], which also dials the peers this side dials and retries
//! a failed dial before the match runs); the engine loop is the same as every session's
//! ([`Session`]): before the core exists `advance` is `NotSynchronized`. Remote players
//! given by a host name wait for the owner to look it up ([`P2pMatch::resolve`]).
//! Settings given before the core exists (input delays, predictions, a recording, an
//! announced stall) are applied when it is built.

mod roster;

use crate::game::CheckedConfig;
use std::collections::VecDeque;
use std::net::SocketAddr;

use crate::clock::Micros;
use crate::engine::{AdvanceStatus, Request, Session, Tick};
use crate::rollback::{Event, P2pConfig, P2pSession, SessionError};
use crate::transport::{Binding, DisconnectReason, Event as NetEvent, PeerId, Proven, Transport};
use roster::{Arrival, Roster};
pub use roster::{RosterError, canonical_addr, dialable};

/// What a P2P match reports besides its requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchEvent {
    /// An event of the rollback core (synchronized, interrupted, desync, ...).
    Core(Event),
    /// Before the match runs: progress with the remote peer of `player` (the lowest
    /// player behind it), one of `total` remote peers. `connected` false: its
    /// connection is not up yet (this side dials it, or waits for it to dial); true:
    /// connected, waiting for its first message. The core's `PeerSynchronized`
    /// follows when it is heard.
    SynchronizingWithPeer {
        /// The connection (0 while this side waits for the peer to dial).
        peer: PeerId,
        /// The lowest player index behind it.
        player: usize,
        /// Whether its connection is up.
        connected: bool,
        /// Remote peers of the match.
        total: u32,
    },
    /// The connection to a remote player's peer or to a spectator is up.
    PeerConnected {
        /// The connection.
        peer: PeerId,
        /// The lowest player index behind it (None for a spectator).
        player: Option<usize>,
        /// What the connection proved in its handshake: its role follows from this,
        /// not from its address (a spectators' secret never plays).
        proven: Proven,
    },
    /// A connection nobody expected was closed at once.
    ConnectionRejected {
        /// The refused connection.
        peer: PeerId,
    },
    /// The rollback core could not be built: the match is over.
    Failed(SessionError),
}

/// A new connection while a remote player's name is still being looked up: it may be
/// that peer, which dialled before the answer came.
#[derive(Debug, Clone, Copy)]
struct Unsorted {
    peer: PeerId,
    addr: SocketAddr,
    proven: Proven,
    binding: Option<Binding>,
}

/// Where the match is.
enum Phase {
    /// Players and spectators may be added.
    Setup,
    /// Started: dialling and waiting for the remote players' connections.
    Connecting,
    /// Every remote player's connection came up once: the core runs.
    Running(Box<P2pSession>),
}

/// Settings given before the core exists, applied when it is built.
#[derive(Debug, Default)]
struct Pending {
    recording: Option<Vec<u8>>,
    predictions: Vec<(usize, Option<Vec<u8>>)>,
    delays: Vec<(usize, u32)>,
    loading: bool,
}

/// A P2P match: its players, its connections and, once they are up, its rollback core.
/// See the module docs.
pub struct P2pMatch {
    cfg: P2pConfig,
    roster: Roster,
    phase: Phase,
    pending: Pending,
    events: VecDeque<MatchEvent>,
    unsorted: Vec<Unsorted>,
    rejected: u64,
}

impl P2pMatch {
    /// A match of `cfg.game.players` players (the same order on every peer) that
    /// serves at most `max_spectators` spectators, with the core's settings `cfg`.
    pub fn new(cfg: P2pConfig, max_spectators: usize) -> Result<Self, SessionError> {
        cfg.validate().map_err(SessionError::Config)?;
        Ok(P2pMatch {
            roster: Roster::new(cfg.game.players, max_spectators),
            cfg,
            phase: Phase::Setup,
            pending: Pending::default(),
            events: VecDeque::new(),
            unsorted: Vec::new(),
            rejected: 0,
        })
    }

    fn require_setup(&self) -> Result<(), RosterError> {
        match self.phase {
            Phase::Setup => Ok(()),
            _ => Err(RosterError::Started),
        }
    }

    /// `player` plays on this machine. Setup only.
    pub fn add_local_player(&mut self, player: usize) -> Result<(), RosterError> {
        self.require_setup()?;
        self.roster.add_local(player)
    }

    /// `player` plays on the peer at `addr` (several players may share one). Setup only.
    pub fn add_remote_player(&mut self, player: usize, addr: SocketAddr) -> Result<(), RosterError> {
        self.require_setup()?;
        self.roster.add_remote(player, addr)
    }

    /// `player` plays on the peer named `name` (a `host:port` the owner looks up):
    /// the match neither dials nor accepts that peer until [`P2pMatch::resolve`] gives
    /// its address. Players given the same name share a peer. True if the name is new
    /// (the owner starts one lookup per name). Setup only.
    pub fn add_remote_named(&mut self, player: usize, name: &str) -> Result<bool, RosterError> {
        self.require_setup()?;
        self.roster.add_remote_named(player, name)
    }

    /// Checks that `player` could be added now (before a lookup starts for nothing).
    pub fn check_free(&self, player: usize) -> Result<(), RosterError> {
        self.require_setup()?;
        self.roster.check_free(player)
    }

    /// The address `name` was looked up to. Connections that arrived while names were
    /// pending are sorted once the last one is known.
    pub fn resolve<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, name: &str, addr: SocketAddr) {
        if !self.roster.resolve(name, addr) || self.roster.resolving() {
            return;
        }
        for u in std::mem::take(&mut self.unsorted) {
            self.on_connected(now, transport, u);
        }
    }

    /// Some remote player's name is still being looked up.
    pub fn resolving(&self) -> bool {
        self.roster.resolving()
    }

    /// Accepts a spectator connecting from `addr` (before or during the match; one
    /// joining mid-match gets a state snapshot first).
    pub fn add_spectator(&mut self, addr: SocketAddr) -> Result<(), RosterError> {
        self.roster.add_spectator(addr)
    }

    /// Ends setup: checks that every player has a place, tells the transport who this
    /// peer is in bound handshakes, and dials the peers this side dials.
    pub fn start<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) -> Result<(), RosterError> {
        self.require_setup()?;
        self.roster.seal()?;
        transport.set_local_id(self.roster.lowest_local().map(|p| p as u32));
        self.phase = Phase::Connecting;
        self.ensure_dials(now, transport);
        let total = self.roster.groups.len() as u32;
        for g in &self.roster.groups {
            let (peer, player, connected) = (g.peer.unwrap_or(0), g.players[0], g.connected);
            self.events.push_back(MatchEvent::SynchronizingWithPeer { peer, player, connected, total });
        }
        if self.roster.all_connected() {
            self.build_core(now);
        }
        Ok(())
    }

    /// Takes one transport event: a connection up or down, or a message for the core
    /// (its buffer goes back to the transport).
    pub fn on_event<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, event: NetEvent) {
        match event {
            NetEvent::Connected { peer, addr, credential, binding } => {
                self.on_connected(now, transport, Unsorted { peer, addr, proven: credential.proven(), binding })
            }
            NetEvent::Disconnected { peer, reason } => self.on_disconnected(peer, reason),
            NetEvent::Message { peer, data, .. } => {
                if let Some(core) = self.core_mut() {
                    core.handle_message(now, peer, &data);
                }
                transport.recycle(data);
            }
        }
    }

    /// Dials what this side dials (again, after a failed attempt before the match
    /// runs), then sends the core's messages.
    pub fn send_messages<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) {
        self.ensure_dials(now, transport);
        if let Phase::Running(core) = &mut self.phase {
            core.send_messages(now, transport);
        }
    }

    /// Ticks due at `now` on the core's clock (none before it runs).
    pub fn ticks_due(&mut self, now: Micros) -> u32 {
        self.core_mut().map_or(0, |c| c.ticks_due(now))
    }

    /// The rollback core, once it runs.
    pub fn core(&self) -> Option<&P2pSession> {
        match &self.phase {
            Phase::Running(c) => Some(c),
            _ => None,
        }
    }

    /// The rollback core, once it runs.
    pub fn core_mut(&mut self) -> Option<&mut P2pSession> {
        match &mut self.phase {
            Phase::Running(c) => Some(c),
            _ => None,
        }
    }

    /// The core's settings (as it starts, or runs).
    pub fn config(&self) -> &P2pConfig {
        match &self.phase {
            Phase::Running(c) => c.config(),
            _ => &self.cfg,
        }
    }

    /// Started (dialling, waiting or running).
    pub fn started(&self) -> bool {
        !matches!(self.phase, Phase::Setup)
    }

    /// Changes every local player's input delay from the next tick on (before the
    /// core runs: the delay it starts with).
    pub fn set_input_delay(&mut self, delay: u32) -> Result<(), SessionError> {
        match self.core_mut() {
            Some(c) => c.set_input_delay(delay),
            None => {
                self.cfg.input_delay = delay;
                self.pending.delays.clear();
                Ok(())
            }
        }
    }

    /// Changes local `player`'s input delay from the next tick on.
    pub fn set_player_input_delay(&mut self, player: usize, delay: u32) -> Result<(), SessionError> {
        match self.is_local(player) {
            Some(true) => {}
            Some(false) => return Err(SessionError::NotLocal(player)),
            None => return Err(SessionError::UnknownPlayer(player)),
        }
        match self.core_mut() {
            Some(c) => c.set_player_input_delay(player, delay),
            None => {
                self.pending.delays.retain(|&(p, _)| p != player);
                self.pending.delays.push((player, delay));
                Ok(())
            }
        }
    }

    /// The input delay of the first local player (before the core runs: the one it
    /// will start with).
    pub fn input_delay(&self) -> u32 {
        if let Some(c) = self.core() {
            return c.input_delay();
        }
        let first_local = self.roster.lowest_local();
        first_local
            .and_then(|p| self.pending.delays.iter().find(|&&(q, _)| q == p))
            .map_or(self.cfg.input_delay, |&(_, d)| d)
    }

    /// Sets the guess for a remote player's missing inputs (None: the configured
    /// prediction).
    pub fn set_prediction(&mut self, player: usize, input: Option<&[u8]>) -> Result<(), SessionError> {
        if let Some(c) = self.core_mut() {
            return c.set_prediction(player, input);
        }
        // Checked as the core checks it, and one pending guess per player (the last
        // given), so that a caller setting it every frame before the match runs does not
        // grow the list.
        if player >= self.cfg.game.players {
            return Err(SessionError::UnknownPlayer(player));
        }
        let expected = self.cfg.game.input_size;
        if let Some(b) = input.filter(|b| b.len() != expected) {
            return Err(SessionError::WrongInputSize { expected, got: b.len() });
        }
        self.pending.predictions.retain(|&(p, _)| p != player);
        self.pending.predictions.push((player, input.map(<[u8]>::to_vec)));
        Ok(())
    }

    /// Announces (or ends) a stall of this side's engine (see
    /// [`P2pSession::set_loading`]).
    pub fn set_loading(&mut self, loading: bool) {
        match self.core_mut() {
            Some(c) => c.set_loading(loading),
            None => self.pending.loading = loading,
        }
    }

    /// Changes the silence timeouts (see [`P2pSession::set_timeouts`]).
    pub fn set_timeouts(&mut self, disconnect_timeout_us: Micros, notify_after_us: Micros) -> Result<(), SessionError> {
        if let Some(c) = self.core_mut() {
            c.set_timeouts(disconnect_timeout_us, notify_after_us)?;
        }
        self.cfg.disconnect_timeout_us = disconnect_timeout_us;
        self.cfg.notify_after_us = notify_after_us;
        Ok(())
    }

    /// Records every confirmed input from tick 0 on, from `initial_state` (the owner
    /// bounds its size). False once the first tick ran.
    pub fn start_recording(&mut self, initial_state: Vec<u8>) -> bool {
        match self.core_mut() {
            Some(c) if c.current_tick() == 0 => c.start_recording(&initial_state),
            Some(_) => return false,
            None => self.pending.recording = Some(initial_state),
        }
        true
    }

    /// A recording was asked for and the core does not run yet.
    pub fn recording_pending(&self) -> bool {
        self.pending.recording.is_some()
    }

    /// True if `player` plays on this machine (None if no such player was added).
    pub fn is_local(&self, player: usize) -> Option<bool> {
        self.roster.is_local(player)
    }

    /// The lowest player index behind the connection `peer`.
    pub fn player_of(&self, peer: PeerId) -> Option<usize> {
        self.roster.player_of(peer)
    }

    /// The connection of remote `player`'s peer (None for local or unconnected ones).
    pub fn peer_of(&self, player: usize) -> Option<PeerId> {
        self.roster.peer_of(player)
    }

    /// The place of the remote peer on `peer` while it is connected: the same for
    /// every connection its players ever have (None for spectators and strangers).
    pub fn member_place(&self, peer: PeerId) -> Option<usize> {
        self.roster.group_of(peer).filter(|&g| self.roster.groups[g].connected)
    }

    /// The connected remote peers, each once; with `player`, only that player's (and
    /// None if it is local, unknown or not connected).
    pub fn member_peers(&self, player: Option<usize>) -> Option<impl Iterator<Item = PeerId> + Clone + '_> {
        let groups = &self.roster.groups;
        let only = match player {
            None => None,
            Some(p) => Some(groups.iter().position(|g| g.players.contains(&p) && g.connected)?),
        };
        let peers = groups.iter().enumerate().filter(move |(i, g)| g.connected && only.is_none_or(|o| o == *i));
        Some(peers.filter_map(|(_, g)| g.peer))
    }

    /// Remote peers and spectators connected now.
    pub fn connected_peers(&self) -> usize {
        self.roster.connected_peers()
    }

    /// Connections refused because nobody expected them.
    pub fn rejected(&self) -> u64 {
        self.rejected
    }

    fn ensure_dials<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) {
        if !matches!(self.phase, Phase::Connecting) {
            return;
        }
        let ours = self.roster.lowest_local();
        for g in self.roster.groups.iter_mut().filter(|g| g.dials && g.peer.is_none()) {
            let Some(addr) = g.addr() else { continue };
            // Bound to both ends' players: a man in the middle cannot hand the
            // handshake to another holder of the match secret.
            let binding = ours.map(|o| Binding { initiator: o as u32, responder: g.players[0] as u32 });
            // A refused dial (a full queue) is tried again on the next send.
            g.peer = transport.connect_bound(now, addr, binding).ok();
        }
    }

    fn build_core(&mut self, now: Micros) {
        let Some(kinds) = self.roster.kinds() else { return };
        match P2pSession::new(self.cfg.clone(), &kinds, now) {
            Ok(mut s) => {
                if let Some(initial) = self.pending.recording.take() {
                    s.start_recording(&initial);
                }
                s.set_loading(self.pending.loading);
                for (player, delay) in self.pending.delays.drain(..) {
                    // Checked when it was set.
                    let _ = s.set_player_input_delay(player, delay);
                }
                for (player, input) in self.pending.predictions.drain(..) {
                    // Checked when it was set.
                    let _ = s.set_prediction(player, input.as_deref());
                }
                for peer in self.roster.spectators.iter().filter_map(|sp| sp.peer) {
                    s.add_spectator(peer);
                }
                self.phase = Phase::Running(Box::new(s));
            }
            Err(e) => self.events.push_back(MatchEvent::Failed(e)),
        }
    }

    fn on_connected<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, u: Unsorted) {
        let Unsorted { peer, addr, proven, binding } = u;
        // Roles follow what the connection proved, not its address (`Roster::arrival`).
        match self.roster.arrival(peer, addr, proven, binding) {
            Arrival::Group(g) => {
                self.roster.groups[g].connected = true;
                let player = self.roster.groups[g].players[0];
                self.events.push_back(MatchEvent::PeerConnected { peer, player: Some(player), proven });
                if matches!(self.phase, Phase::Connecting) {
                    let total = self.roster.groups.len() as u32;
                    self.events.push_back(MatchEvent::SynchronizingWithPeer { peer, player, connected: true, total });
                    if self.roster.all_connected() {
                        self.build_core(now);
                    }
                }
            }
            Arrival::Spectator => {
                if let Some(c) = self.core_mut() {
                    c.add_spectator(peer);
                }
                self.events.push_back(MatchEvent::PeerConnected { peer, player: None, proven });
            }
            // A remote player's name is still being looked up: this may be that peer,
            // which dialled before the answer came. Decided once the names are known.
            Arrival::Unexpected if self.roster.resolving() => self.unsorted.push(u),
            Arrival::Unexpected => {
                transport.disconnect(now, peer);
                self.rejected += 1;
                self.events.push_back(MatchEvent::ConnectionRejected { peer });
            }
        }
    }

    fn on_disconnected(&mut self, peer: PeerId, reason: DisconnectReason) {
        self.unsorted.retain(|u| u.peer != peer);
        if let Some(g) = self.roster.group_of(peer) {
            let running = matches!(self.phase, Phase::Running(_));
            let group = &mut self.roster.groups[g];
            group.connected = false;
            if running {
                if let Some(c) = self.core_mut() {
                    c.peer_disconnected(peer, reason);
                }
            } else {
                // Not running yet: forget the attempt; a dial or a new incoming
                // connection replaces it.
                group.peer = None;
            }
        } else if let Some(sp) = self.roster.spectators.iter_mut().find(|s| s.peer == Some(peer)) {
            sp.peer = None;
            if let Some(c) = self.core_mut() {
                c.peer_disconnected(peer, reason);
            }
        }
    }
}

impl Session for P2pMatch {
    type Event = MatchEvent;
    fn current_tick(&self) -> Tick {
        self.core().map_or(0, P2pSession::current_tick)
    }
    fn advance(&mut self) -> AdvanceStatus {
        self.core_mut().map_or(AdvanceStatus::NotSynchronized, P2pSession::advance)
    }
    fn pending_requests(&self) -> usize {
        self.core().map_or(0, P2pSession::pending_requests)
    }
    fn poll_request(&mut self) -> Option<Request<'_>> {
        self.core_mut()?.poll_request()
    }
    fn poll_event(&mut self) -> Option<MatchEvent> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        self.core_mut()?.poll_event().map(MatchEvent::Core)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::GameShape;

    #[test]
    fn settings_given_before_the_core_runs_are_checked_and_kept_once_per_player() {
        let mut m = P2pMatch::new(P2pConfig::new(GameShape::new(2, 2)), 0).unwrap();
        for i in 0..1_000u16 {
            m.set_prediction(1, Some(&i.to_le_bytes())).unwrap();
        }
        assert_eq!(m.pending.predictions, vec![(1, Some(999u16.to_le_bytes().to_vec()))]);
        assert_eq!(m.set_prediction(2, None), Err(SessionError::UnknownPlayer(2)));
        assert_eq!(m.set_prediction(0, Some(&[1])), Err(SessionError::WrongInputSize { expected: 2, got: 1 }));
    }
}
