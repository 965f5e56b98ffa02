//! [`RelayServer`]: the relay topology's server as a session. It is the master clock:
//! it simulates at a steady rate, never waits, keeps one jitter buffer per client and
//! sends canonical steps to every client.
//!
//! Unlike the rollback sessions, the relay core manages its connections itself (the
//! clients' Hello, the Welcome and snapshot, tokens, reconnects), so every host event
//! goes to it whole, with the host as its transport. The server listens from `start`
//! on. Its session tokens are always seeded from the operating system: a token is the
//! proof of a player's slot, so it must not be predictable.

use super::engine::{Engine, Phase, sealed::Driven};
use super::failure::{SessionFailure, StateError};
use super::messages::{self, MessageTarget};
use super::net::{self, Net, NetStats, has_net};
use super::settings::RelayServerSettings;
use crate::host_error::HostError;
use crate::os_seed::{os_random_bytes, os_seed};
use tickwire_proto::{
    Credential, JitterStats, Micros, PeerId, RelayServerSession, RelayServerSessionConfig, Secret, ServerSessionStats,
    StreamStats, Tick,
};

/// A relay server session. Use it from one thread at a time.
pub struct RelayServer {
    engine: Engine<RelayServerSession>,
    net: Net,
    core_config: RelayServerSessionConfig,
}

/// A relay server's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RelayServerStats {
    /// Started.
    pub running: bool,
    /// The next tick to simulate.
    pub current_tick: Tick,
    /// The server core's figures.
    pub core: ServerSessionStats,
    /// The socket's figures (connected peers are the players).
    pub net: NetStats,
}

/// A relay server's figures for one connected player.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RelayPlayerStats {
    /// The player slot.
    pub player: u32,
    /// Its connection.
    pub peer: PeerId,
    /// The first tick whose canonical step included it (since its latest join).
    pub joined_tick: Tick,
    /// Inputs waiting in its jitter buffer now.
    pub buffer_depth: u32,
    /// Its jitter buffer's counters since its latest join.
    pub jitter: JitterStats,
    /// The transport's smoothed round trip to it, in microseconds (0 if unknown).
    pub rtt_us: f64,
    /// What it was sent of the step stream since its latest join.
    pub stream: StreamStats,
}

impl RelayServer {
    /// Checks `settings`, binds the socket and starts the network thread.
    pub fn new(settings: RelayServerSettings) -> Result<Self, SessionFailure> {
        settings.validate()?;
        let net = Net::start(settings.host.clone(), 2 * settings.game.players as u32)?;
        Ok(RelayServer { core_config: settings.core_config(0), engine: Engine::new(settings.game), net })
    }

    /// Starts the master clock and listens.
    pub fn start(&mut self) -> Result<(), SessionFailure> {
        self.engine.require_setup("starting")?;
        let mut c = self.core_config.clone();
        let seeding = |source| HostError::Io { context: "seeding the session tokens".into(), source };
        c.seed = os_seed().map_err(seeding)?;
        c.token_seed = Secret(os_random_bytes::<32>().map_err(seeding)?);
        let core = RelayServerSession::new(c, self.net.now_us())?;
        self.engine.run(core);
        Ok(())
    }

    /// The engine's checksum of the state it saved for `tick`.
    pub fn confirm_save(&mut self, tick: Tick, checksum: u64) -> Result<(), SessionFailure> {
        self.engine.require_started("confirm_save")?;
        match self.engine.core_mut() {
            Some(s) => Ok(s.confirm_save(tick, checksum)?),
            None => Err(StateError::NoSaveRequested.into()),
        }
    }

    /// The engine's answer to a DumpState request: the serialized state of `tick` (a
    /// snapshot for joining clients).
    pub fn provide_state(&mut self, tick: Tick, bytes: &[u8]) -> Result<(), SessionFailure> {
        self.engine.require_started("provide_state")?;
        match self.engine.core_mut() {
            Some(s) => Ok(s.provide_state(tick, bytes)?),
            None => Err(StateError::NoStateRequested.into()),
        }
    }

    /// Removes `player` on purpose, for good: its client is told `KickedByEngine` and
    /// does not reconnect, its slot is freed at once (PlayerKicked with `code`, then
    /// PlayerLeft). A slot waiting for a dropped player is freed the same way.
    pub fn kick_player(&mut self, player: usize, code: u32) -> Result<(), SessionFailure> {
        self.engine.check_player(player)?;
        match self.engine.core_mut() {
            Some(s) => s.kick_player(player as u32, code)?,
            None => return Err(StateError::NoPlayerToKick.into()),
        }
        self.engine.collect_events();
        Ok(())
    }

    /// Sends `data` (at most [`MAX_MESSAGE_SIZE`](super::MAX_MESSAGE_SIZE) bytes) on the
    /// session's reliable side channel to one player's client or to every connected
    /// player's client: delivered in order, exactly once, unless the connection ends;
    /// it arrives as [`SessionEvent::Message`](super::SessionEvent::Message).
    ///
    /// Refused, with nothing sent: an unknown player or one not connected now (`All`
    /// with nobody connected sends nothing and succeeds); a message over the size
    /// limit; a client whose send queue would go past
    /// [`MAX_QUEUED_MESSAGE_BYTES`](super::MAX_QUEUED_MESSAGE_BYTES) (also while a
    /// snapshot to it is in flight: try again on a later frame).
    pub fn send_message(&mut self, to: MessageTarget, data: &[u8]) -> Result<(), SessionFailure> {
        messages::check_size(data)?;
        // The phase, not `core()`: the borrow must leave the message figures free.
        let Phase::Running(core) = &self.engine.phase else {
            return Err(StateError::ServerNotRunning.into());
        };
        let players = self.engine.game.players as u32;
        let only = match to {
            MessageTarget::All => None,
            MessageTarget::Player(player) => {
                self.engine.check_player(player)?;
                if core.peer_of(player as u32).is_none() {
                    return Err(StateError::PlayerNotConnected { player }.into());
                }
                Some(player as u32)
            }
        };
        let peers = (0..players).filter(move |&p| only.is_none_or(|o| o == p)).filter_map(|p| core.peer_of(p));
        Ok(messages::send_to(&mut self.net.host, peers, data, &mut self.engine.messages.stats)?)
    }

    /// The player on the connection `peer`.
    pub fn player_of(&self, peer: PeerId) -> Option<usize> {
        let s = self.engine.core()?;
        (0..self.engine.game.players).find(|&p| s.peer_of(p as u32) == Some(peer))
    }

    /// The connection of a connected `player`.
    pub fn peer_of(&self, player: usize) -> Option<PeerId> {
        self.engine.core()?.peer_of(player as u32)
    }

    /// What the connection of `player` proved: a connect token's client id and user
    /// data, or a secret's class. None while the slot is free (or before start).
    pub fn player_credential(&self, player: usize) -> Result<Option<Credential>, SessionFailure> {
        self.engine.check_player(player)?;
        Ok(self.engine.core().and_then(|s| s.player_credential(player as u32)).cloned())
    }

    /// The figures of a connected `player` (None if the slot has no connection now).
    pub fn player_stats(&mut self, player: usize) -> Result<Option<RelayPlayerStats>, SessionFailure> {
        self.engine.check_player(player)?;
        let Some(s) = self.engine.core() else { return Ok(None) };
        let p = player as u32;
        let (Some(peer), Some(jitter)) = (s.peer_of(p), s.jitter_stats(p)) else { return Ok(None) };
        let mut st = RelayPlayerStats {
            player: p,
            peer,
            joined_tick: s.relay().joined_at(p).unwrap_or(0),
            buffer_depth: s.relay().jitter_depth(peer).unwrap_or(0) as u32,
            jitter,
            rtt_us: 0.0,
            stream: s.stream_stats(p).unwrap_or_default(),
        };
        if let Some(c) = self.net.host.stats(peer) {
            st.rtt_us = c.srtt_us;
        }
        Ok(Some(st))
    }

    /// Counters and gauges.
    pub fn stats(&mut self) -> RelayServerStats {
        let core = self.engine.core().map(RelayServerSession::stats).unwrap_or_default();
        RelayServerStats {
            running: self.engine.core().is_some(),
            current_tick: self.engine.core().map_or(0, |s| s.current_tick()),
            net: NetStats::read(&mut self.net, core.players, core.rejected),
            core,
        }
    }
}

impl Driven for RelayServer {
    type Core = RelayServerSession;
    fn engine(&self) -> &Engine<Self::Core> {
        &self.engine
    }
    fn engine_mut(&mut self) -> &mut Engine<Self::Core> {
        &mut self.engine
    }
    fn pump(&mut self) {
        net::pump(&mut self.engine, &mut self.net);
    }
    fn due(&mut self) -> u32 {
        net::due(&mut self.engine, &mut self.net)
    }
    fn flush(&mut self) {
        net::flush(&mut self.engine, &mut self.net);
    }
    fn slots(&self) -> usize {
        self.core_config.state_slots()
    }
    fn now(&self) -> Micros {
        self.net.now_us()
    }
}

has_net!(RelayServer);
