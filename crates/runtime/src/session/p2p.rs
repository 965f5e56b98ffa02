//! [`P2pSession`]: GGPO-style rollback between peers, over this process's socket.
//!
//! The match itself, its players and connections included, is proto's sans-IO
//! [`P2pMatch`](tickwire_proto::P2pMatch): setup names every player (local, or remote
//! at an address or a host name) and the spectators this peer serves; `start` dials
//! the peers this side dials, and the rollback core is built once every remote
//! player's connection is up. This type adds the socket, the host-name lookups and
//! the engine loop.

use std::net::SocketAddr;
use std::path::Path;

use super::SessionEvent;
use super::engine::{Engine, Phase, sealed::Driven};
use super::failure::{ArgumentError, SessionFailure, StateError};
use super::messages::{self, MessageTarget};
use super::net::{self, Net, NetStats, Remote, has_net};
use super::settings::P2pSettings;
use crate::host_error::HostError;
use crate::{Target, Ticket, TraversalSetup};
use tickwire_proto::token::ConnectToken;
use tickwire_proto::{
    Admission, ConnectionStats, MAX_INPUT_DELAY, MAX_RENDEZVOUS_PLAYERS, Micros, P2pMatch, PeerId, PeerPath,
    PeerSyncStats, Secret, Security, Tick, TraversalEvent, peer_address,
};

/// A P2P rollback session. Use it from one thread at a time.
pub struct P2pSession {
    engine: Engine<P2pMatch>,
    net: Net,
    /// The match while it is set up; the engine's core from `start` on.
    setup: Option<P2pMatch>,
    /// Slots the engine keeps (from the settings, known before the core exists).
    slots: usize,
    dump: Option<Vec<u8>>,
    /// The host names of remote players being looked up: the lookup, the name as
    /// given, and the first player given it (for the message if it gives no address).
    lookups: Vec<(Ticket, String, usize)>,
    /// The host's own silence timeout (`HostConfig`): the transport waits at least
    /// this long, and longer when the session's disconnect timeout asks it to.
    host_timeout_us: Micros,
    /// Where the match meets, once set ([`P2pSession::set_rendezvous`]).
    rendezvous: Option<Rendezvous>,
    /// The players' secret (the match secret of a rendezvous), if the settings have one.
    match_secret: Option<Secret>,
}

/// Where a P2P match meets behind NATs: the rendezvous service (which also relays what
/// cannot go direct) and this player's ticket for it.
#[derive(Clone)]
pub struct Rendezvous {
    /// The rendezvous's address (IP and port).
    pub address: SocketAddr,
    /// The ticket from the game's backend: a connect token minted with the
    /// rendezvous's key, naming the match and this player's slot
    /// ([`tickwire_proto::MatchClaim`]).
    pub ticket: ConnectToken,
    /// Relay everything, so that no peer learns another's address.
    pub private: bool,
}

impl std::fmt::Debug for Rendezvous {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rendezvous").field("address", &self.address).field("private", &self.private).finish()
    }
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
    /// The path to the peer under a rendezvous (None without one).
    pub path: Option<PeerPath>,
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
        let core_config = settings.core_config();
        let slots = core_config.state_slots();
        let setup = P2pMatch::new(core_config, settings.max_spectators as usize)?;
        let match_secret = match &settings.host.endpoint.security {
            Security::Encrypted { admission: Admission::Secrets { players: Some(s), .. }, .. } => Some(s.clone()),
            _ => None,
        };
        Ok(P2pSession {
            engine: Engine::new(settings.game),
            net,
            setup: Some(setup),
            slots,
            dump: None,
            lookups: Vec::new(),
            host_timeout_us,
            rendezvous: None,
            match_secret,
        })
    }

    /// Meets the match's other peers through `rendezvous` rather than at addresses
    /// given: remote players are then added with [`P2pSession::add_rendezvous_player`],
    /// and `start` registers with the rendezvous, checks every candidate path to each
    /// peer and keeps the best (direct, else relayed; [`SessionEvent::PathChanged`]
    /// says which, and when it changes). Needs the players' secret in the settings (the
    /// match secret: the rendezvous never has it, so it can neither read nor forge
    /// what it relays) and exactly one local player, the ticket's slot. Setup only.
    ///
    /// [`SessionEvent::PathChanged`]: super::SessionEvent::PathChanged
    pub fn set_rendezvous(&mut self, rendezvous: Rendezvous) -> Result<(), SessionFailure> {
        self.engine.require_setup("setting the rendezvous")?;
        if self.match_secret.is_none() {
            return Err(ArgumentError::RendezvousWithoutSecret.into());
        }
        self.net.check_reachable(rendezvous.address, "rendezvous address")?;
        self.rendezvous = Some(rendezvous);
        Ok(())
    }

    /// `player` plays on a peer met through the rendezvous ([`P2pSession::set_rendezvous`]
    /// first): one player per peer. Setup only.
    pub fn add_rendezvous_player(&mut self, player: usize) -> Result<(), SessionFailure> {
        self.engine.require_setup("adding a player")?;
        if self.rendezvous.is_none() {
            return Err(StateError::NoRendezvous.into());
        }
        let slot = u8::try_from(player).ok().filter(|&s| (s as usize) < MAX_RENDEZVOUS_PLAYERS);
        let Some(slot) = slot else {
            return Err(ArgumentError::RendezvousPlayer { player }.into());
        };
        Ok(self.the_match_mut().add_remote_player(player, peer_address(slot))?)
    }

    /// Whether the match meets through a rendezvous ([`P2pSession::set_rendezvous`]).
    pub fn has_rendezvous(&self) -> bool {
        self.rendezvous.is_some()
    }

    /// The path to remote `player`'s peer: None without a rendezvous.
    pub fn path(&self, player: usize) -> Option<PeerPath> {
        self.net.host.path(u8::try_from(player).ok()?)
    }

    /// The match: set up until `start`, then the engine's core (kept by the engine
    /// if the session dies).
    fn the_match(&self) -> &P2pMatch {
        let m = self.setup.as_ref().or(self.engine.core()).or(self.engine.remains.as_ref());
        m.expect("a P2P session holds its match from creation to destruction")
    }

    fn the_match_mut(&mut self) -> &mut P2pMatch {
        let Engine { phase, remains, .. } = &mut self.engine;
        let core = match phase {
            Phase::Running(m) => Some(m),
            _ => None,
        };
        let m = self.setup.as_mut().or(core).or(remains.as_mut());
        m.expect("a P2P session holds its match from creation to destruction")
    }

    /// The rollback core, once it runs.
    fn core(&self) -> Option<&tickwire_proto::P2pSession> {
        self.engine.core()?.core()
    }

    fn core_mut(&mut self) -> Option<&mut tickwire_proto::P2pSession> {
        self.engine.core_mut()?.core_mut()
    }

    /// `player` plays on this machine. Setup only.
    pub fn add_local_player(&mut self, player: usize) -> Result<(), SessionFailure> {
        self.engine.require_setup("adding a player")?;
        Ok(self.the_match_mut().add_local_player(player)?)
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
            self.the_match().check_free(player)?;
            let text = target.to_string();
            if self.lookups.iter().any(|l| l.1 == text) {
                self.the_match_mut().add_remote_named(player, &text)?;
                return Ok(());
            }
        }
        match self.net.remote(target, "remote player address")? {
            Remote::Resolving(ticket, text) => {
                self.the_match_mut().add_remote_named(player, &text)?;
                self.lookups.push((ticket, text, player));
                Ok(())
            }
            Remote::Known(addr) => Ok(self.the_match_mut().add_remote_player(player, addr)?),
        }
    }

    /// Accepts a spectator connecting from `addr` (before or during the match; one
    /// joining mid-match gets a state snapshot first).
    pub fn add_spectator(&mut self, addr: SocketAddr) -> Result<(), SessionFailure> {
        let addr = self.net.check_reachable(addr, "spectator address")?;
        Ok(self.live_match()?.add_spectator(addr)?)
    }

    /// Ends setup and dials the peers this side dials (see `P2pMatch`).
    pub fn start(&mut self) -> Result<(), SessionFailure> {
        self.engine.require_setup("starting")?;
        if let Some(r) = self.rendezvous.clone() {
            let m = self.the_match();
            let players = self.engine.game.players;
            let local: Vec<usize> = (0..players).filter(|&p| m.is_local(p) == Some(true)).collect();
            let [local_slot] = local[..] else {
                return Err(StateError::RendezvousLocalPlayers { count: local.len() }.into());
            };
            let setup = TraversalSetup {
                rendezvous: r.address,
                ticket: r.ticket,
                match_secret: self.match_secret.clone().expect("checked by set_rendezvous"),
                local_slot: local_slot as u8,
                private: r.private,
            };
            self.net.host.start_traversal(setup)?;
        }
        let now = self.net.now_us();
        let m = self.setup.as_mut().expect("set up until the start");
        m.start(now, &mut self.net.host)?;
        let m = self.setup.take().expect("set up until the start");
        self.engine.run(m);
        self.engine.collect_events();
        Ok(())
    }

    /// Gives a local player's input for the next advance.
    pub fn add_input(&mut self, player: usize, input: &[u8]) -> Result<(), SessionFailure> {
        self.engine.require_started("pushing an input")?;
        match self.core_mut() {
            Some(s) => Ok(s.add_local_input(player, input)?),
            None => Err(StateError::InputBeforeRunning.into()),
        }
    }

    /// The engine's checksum of the state it saved for `tick`.
    pub fn confirm_save(&mut self, tick: Tick, checksum: u64) -> Result<(), SessionFailure> {
        self.engine.require_started("confirm_save")?;
        match self.core_mut() {
            Some(s) => Ok(s.confirm_save(tick, checksum)?),
            None => Err(StateError::NoSaveRequested.into()),
        }
    }

    /// The engine's answer to a DumpState request: the serialized state of `tick`.
    pub fn provide_state(&mut self, tick: Tick, bytes: &[u8]) -> Result<(), SessionFailure> {
        self.engine.require_started("provide_state")?;
        match self.core_mut() {
            Some(s) => s.provide_state(tick, bytes)?,
            None => return Err(StateError::NoStateRequested.into()),
        }
        self.engine.collect_events();
        Ok(())
    }

    /// Changes the input delay from the next tick on.
    pub fn set_input_delay(&mut self, delay: u32) -> Result<(), SessionFailure> {
        if delay > MAX_INPUT_DELAY {
            return Err(ArgumentError::InputDelay { delay }.into());
        }
        self.live_match()?.set_input_delay(delay)?;
        Ok(())
    }

    /// Changes local `player`'s input delay from the next tick on (GGPO's
    /// `ggpo_set_frame_delay`); the others keep theirs. A later
    /// [`P2pSession::set_input_delay`] sets every local player's again.
    pub fn set_player_input_delay(&mut self, player: usize, delay: u32) -> Result<(), SessionFailure> {
        self.engine.check_player(player)?;
        if delay > MAX_INPUT_DELAY {
            return Err(ArgumentError::InputDelay { delay }.into());
        }
        match self.is_local_player(player) {
            Some(true) => {}
            Some(false) => return Err(ArgumentError::RemotePlayerDelay { player }.into()),
            None => return Err(StateError::PlayerNotAdded { player }.into()),
        }
        self.live_match()?.set_player_input_delay(player, delay)?;
        Ok(())
    }

    /// Announces (or ends) a stall of this side's engine, such as a loading screen
    /// mid-match: the peers give this side their loading grace before its held-back
    /// inputs count as no progress (`progress_timeout_us`). Any time; before the match
    /// starts it applies from the start.
    pub fn set_loading(&mut self, loading: bool) {
        if let Ok(m) = self.live_match() {
            m.set_loading(loading);
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
            return Err(ArgumentError::Timeouts { notify_after_us, disconnect_timeout_us }.into());
        }
        self.net.host.set_timeout(transport_timeout(self.host_timeout_us, disconnect_timeout_us))?;
        self.live_match()?.set_timeouts(disconnect_timeout_us, notify_after_us)?;
        Ok(())
    }

    /// Sets the prediction used for a remote player's missing inputs (None: back to
    /// the configured default).
    pub fn set_prediction(&mut self, player: usize, input: Option<&[u8]>) -> Result<(), SessionFailure> {
        self.engine.check_player(player)?;
        super::check_input_len(input, self.engine.game.input_size)?;
        self.live_match()?.set_prediction(player, input)?;
        Ok(())
    }

    /// The match, unless the session is dead (its network thread is gone).
    fn live_match(&mut self) -> Result<&mut P2pMatch, SessionFailure> {
        if let Phase::Dead(why) = &self.engine.phase {
            return Err(HostError::ThreadGone(why.clone()).into());
        }
        Ok(self.the_match_mut())
    }

    /// Drops remote `player` on purpose (GGPO's `ggpo_disconnect_player`): its peer,
    /// with every player behind it, is dropped and told so (reason `KickedByEngine`), a
    /// `PeerDisconnected` event follows, and the match goes on with those players'
    /// inputs marked disconnected. Only while the match runs.
    pub fn disconnect_player(&mut self, player: usize) -> Result<(), SessionFailure> {
        self.engine.check_player(player)?;
        let Some(s) = self.core_mut() else {
            return Err(StateError::DisconnectBeforeRunning.into());
        };
        match s.disconnect_player(player) {
            Ok(()) => {}
            Err(tickwire_proto::SessionError::AlreadyDisconnected(player)) => {
                return Err(StateError::AlreadyDisconnected { player }.into());
            }
            Err(e) => return Err(e.into()),
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
            return Err(ArgumentError::InitialStateTooLarge { size: initial_state.len() }.into());
        }
        let mut copy = Vec::new();
        copy.try_reserve_exact(initial_state.len())
            .map_err(|_| ArgumentError::InitialStateMemory { size: initial_state.len() })?;
        copy.extend_from_slice(initial_state);
        if !self.live_match()?.start_recording(copy) {
            return Err(StateError::RecordingTooLate.into());
        }
        Ok(())
    }

    /// The replay recorded so far (ticks final on every peer).
    pub fn replay_bytes(&self) -> Option<&[u8]> {
        self.core()?.replay().map(|r| r.bytes())
    }

    /// Writes the replay recorded so far to `path`.
    pub fn save_replay(&self, path: &Path) -> Result<(), SessionFailure> {
        let bytes = self.replay_bytes().ok_or(if self.the_match().recording_pending() {
            StateError::NothingRecorded
        } else {
            StateError::NoRecording
        })?;
        super::write_file(path, bytes)
    }

    /// The forensic dump of the last desync, if one is ready; it stays until
    /// [`P2pSession::release_desync_dump`].
    pub fn desync_dump(&mut self) -> Option<&[u8]> {
        if self.dump.is_none() {
            self.dump = self.core_mut().and_then(|s| s.take_desync_dump());
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
    /// unless the connection ends; it arrives as [`SessionEvent::Message`](super::SessionEvent::Message).
    /// Any time after `start` once the peer is connected, before the match runs too
    /// (lobby settings, loadouts). Spectators neither send nor receive messages: their
    /// feed is one-way, and a host's spectator slots must not become a way into the
    /// match.
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
        let player = match to {
            MessageTarget::All => None,
            MessageTarget::Player(player) => {
                self.engine.check_player(player)?;
                if self.is_local_player(player) == Some(true) {
                    return Err(ArgumentError::MessageToLocalPlayer { player }.into());
                }
                Some(player)
            }
        };
        let Phase::Running(m) = &self.engine.phase else { return self.engine.require_started("sending a message") };
        let Some(peers) = m.member_peers(player) else {
            let player = player.expect("every peer is a member of All");
            return Err(StateError::PeerNotConnected { player }.into());
        };
        Ok(messages::send_to(&mut self.net.host, peers, data, &mut self.engine.messages.stats)?)
    }

    /// The lowest player index behind the connection `peer`.
    pub fn player_of(&self, peer: PeerId) -> Option<usize> {
        self.the_match().player_of(peer)
    }

    /// The connection of a remote `player` (None for local or unknown players).
    pub fn peer_of(&self, player: usize) -> Option<PeerId> {
        self.the_match().peer_of(player)
    }

    /// True if `player` plays on this machine (None if no such player was added).
    pub fn is_local_player(&self, player: usize) -> Option<bool> {
        self.the_match().is_local(player)
    }

    /// Counters and gauges.
    pub fn stats(&mut self) -> P2pSessionStats {
        let m = self.the_match();
        let core = self.core().map_or_else(tickwire_proto::P2pStats::default, |s| s.stats());
        let running = self.core().is_some();
        let (input_delay, connected, rejected) = (m.input_delay(), m.connected_peers() as u32, m.rejected());
        P2pSessionStats {
            running,
            core: tickwire_proto::P2pStats { time_scale: if running { core.time_scale } else { 1.0 }, ..core },
            input_delay,
            state_slots: self.slots as u32,
            net: NetStats::read(&mut self.net, connected, rejected),
        }
    }

    /// The overlay figures of remote `player`; `Ok(None)` while its peer is not
    /// connected (before it connects, or after it was dropped). An error for an unknown
    /// or a local player.
    pub fn peer_stats_of(&mut self, player: usize) -> Result<Option<P2pPeerStats>, SessionFailure> {
        self.engine.check_player(player)?;
        match self.is_local_player(player) {
            Some(false) => {}
            Some(true) => return Err(ArgumentError::LocalPlayer { player }.into()),
            None => return Err(StateError::PlayerNotAdded { player }.into()),
        }
        let Some(peer) = self.peer_of(player) else { return Ok(None) };
        let Some(connection) = self.net.host.stats(peer) else { return Ok(None) };
        let sync = self.core().and_then(|s| s.peer_sync_stats(player)).unwrap_or_default();
        Ok(Some(P2pPeerStats { peer, connection, sync, path: self.path(player) }))
    }

    /// Takes the answers of the remote players' host names; one that gives no address
    /// ends the session: the match cannot start without that peer.
    fn settle_names(&mut self) {
        let mut i = 0;
        while i < self.lookups.len() {
            let (ticket, text, player) = self.lookups[i].clone();
            let mut remote = Remote::Resolving(ticket, text.clone());
            match self.net.settle(&mut remote) {
                Ok(None) => i += 1,
                Ok(Some(addr)) => {
                    self.lookups.swap_remove(i);
                    let now = self.net.now_us();
                    let Net { host } = &mut self.net;
                    match (&mut self.setup, &mut self.engine.phase) {
                        (Some(m), _) | (None, Phase::Running(m)) => m.resolve(now, host, &text, addr),
                        _ => {}
                    }
                }
                Err(why) => {
                    self.lookups.clear();
                    return self.engine.die(format!("remote player {player}'s address: {why}"));
                }
            }
        }
    }
}

impl P2pSession {
    /// The NAT traversal's reports: each path change an event; a ticket for another
    /// slot ends the session (nothing can connect).
    fn take_traversal_events(&mut self) {
        while let Some(ev) = self.net.host.poll_traversal() {
            match ev {
                TraversalEvent::Path { slot, path } => {
                    self.engine.events.push_back(SessionEvent::PathChanged { player: slot as usize, path });
                }
                TraversalEvent::Refused(reason) => {
                    self.engine.events.push_back(SessionEvent::RendezvousRefused(reason))
                }
                TraversalEvent::WrongSlot { ticket, local } => {
                    return self.engine.die(format!(
                        "the rendezvous ticket is for player {ticket}, and this side's local player is {local}"
                    ));
                }
                TraversalEvent::Registered { .. } => {}
            }
        }
    }
}

impl Driven for P2pSession {
    type Core = P2pMatch;
    fn engine(&self) -> &Engine<Self::Core> {
        &self.engine
    }
    fn engine_mut(&mut self) -> &mut Engine<Self::Core> {
        &mut self.engine
    }
    fn pump(&mut self) {
        self.settle_names();
        self.take_traversal_events();
        // Session messages: members are the remote players' peers while connected
        // (`P2pMatch::member_place`; a spectator's connection is not one, see
        // `send_message`).
        net::pump(&mut self.engine, &mut self.net);
    }
    fn due(&mut self) -> u32 {
        net::due(&mut self.engine, &mut self.net)
    }
    fn flush(&mut self) {
        net::flush(&mut self.engine, &mut self.net);
    }
    fn slots(&self) -> usize {
        self.slots
    }
    fn now(&self) -> Micros {
        self.net.now_us()
    }
    fn running(&self) -> bool {
        self.core().is_some()
    }
}

has_net!(P2pSession);
