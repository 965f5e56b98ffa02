//! [`RelayClient`]: a relay client with prediction and reconciliation. It dials the
//! server given with [`RelayClient::set_server`] at `start`, joins on its own and
//! reconnects by itself within its window; reconciliation uses the same requests as
//! rollback (LOAD the authoritative tick, ADVANCE with the canonical inputs, SAVE,
//! then ADVANCE with the predicted inputs up to now).

use std::net::SocketAddr;

use super::engine::{Engine, Phase, sealed::Driven};
use super::event::SessionEvent;
use super::failure::{ArgumentError, SessionFailure, StateError};
use super::messages;
use super::net::{self, Net, NetStats, Remote, has_net};
use super::settings::RelayClientSettings;
use crate::Target;
use tickwire_proto::{
    ClientSessionEvent, ClientSessionStats, DisconnectReason, Micros, PeerId, RelayClientSession,
    RelayClientSessionConfig, Tick,
};

/// A relay client session. Use it from one thread at a time.
pub struct RelayClient {
    engine: Engine<RelayClientSession>,
    net: Net,
    core_config: RelayClientSessionConfig,
    server: Option<Remote>,
    /// Started with a server name not resolved yet: the core, built, waits here
    /// (the session is `Connecting` meanwhile).
    waiting: Option<RelayClientSession>,
    /// The connection to the server is up (from the core's Connected event to its
    /// Interrupted or Disconnected; the core's server peer exists while dialling too).
    connected: bool,
    pending_predictions: Vec<(usize, Option<Vec<u8>>)>,
}

/// A relay client's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RelayClientStats {
    /// Joined and caught up with the server.
    pub synchronized: bool,
    /// Its player slot, once the server gave it one.
    pub local_player: Option<u32>,
    /// The smoothed round trip to the server, in microseconds (0 if unknown).
    pub rtt_us: f64,
    /// The client core's figures (time sync, prediction, checks, reconnects).
    pub core: ClientSessionStats,
    /// The socket's figures.
    pub net: NetStats,
}

impl RelayClient {
    /// Checks `settings`, binds the socket and starts the network thread.
    pub fn new(settings: RelayClientSettings) -> Result<Self, SessionFailure> {
        settings.validate()?;
        let net = Net::start(settings.host.clone(), 0)?;
        Ok(RelayClient {
            core_config: settings.core_config(),
            engine: Engine::new(settings.game),
            net,
            server: None,
            waiting: None,
            connected: false,
            pending_predictions: Vec::new(),
        })
    }

    /// The server to join. Setup only.
    pub fn set_server(&mut self, addr: SocketAddr) -> Result<(), SessionFailure> {
        self.set_server_target(&Target::Addr(addr))
    }

    /// The server to join, by IP literal or host name. A name is looked up on the
    /// host's resolver thread from now on; `start` does not wait for it: the client
    /// dials once the address is known, or reports a `Disconnected` event (reason
    /// `ResolveFailed`) if the name gives none. Setup only.
    pub fn set_server_target(&mut self, target: &Target) -> Result<(), SessionFailure> {
        self.engine.require_setup("choosing the relay server")?;
        self.server = Some(self.net.remote(target, "server address")?);
        Ok(())
    }

    /// Ends setup and dials the server.
    pub fn start(&mut self) -> Result<(), SessionFailure> {
        self.engine.require_setup("starting")?;
        if self.server.is_none() {
            return Err(StateError::NoServer.into());
        }
        let mut s = RelayClientSession::new(self.core_config.clone())?;
        for (player, input) in self.pending_predictions.drain(..) {
            // Checked when it was set.
            let _ = s.set_prediction(player, input.as_deref());
        }
        if let Some(Remote::Known(addr)) = self.server {
            let now = self.net.now_us();
            s.connect(now, &mut self.net.host, addr)?;
            self.engine.run(s);
        } else {
            self.waiting = Some(s);
            self.engine.phase = Phase::Connecting;
            self.dial_when_resolved();
        }
        Ok(())
    }

    /// Started by name: dials once the lookup has answered; a name without an
    /// address ends the session as a lost server would (`Disconnected`, reason
    /// `ResolveFailed`: no ticks, nothing to retry).
    fn dial_when_resolved(&mut self) {
        let (Some(server), Some(_)) = (&mut self.server, &self.waiting) else { return };
        match self.net.settle(server) {
            Ok(None) => {}
            Ok(Some(addr)) => {
                let Some(mut s) = self.waiting.take() else { return };
                let now = self.net.now_us();
                match s.connect(now, &mut self.net.host, addr) {
                    Ok(_) => self.engine.run(s),
                    Err(e) => self.engine.die(format!("dialling the relay server at {addr} failed: {e}")),
                }
            }
            Err(_) => {
                // The core ends as after a lost server: SERVER_LOST, no ticks, FINISHED.
                let Some(mut s) = self.waiting.take() else { return };
                s.give_up(DisconnectReason::ResolveFailed);
                self.engine.run(s);
                self.engine.collect_events();
            }
        }
    }

    /// This client's input for the next advance. Its player slot is the one the server
    /// gives it; inputs go to the server from the first due tick on, before that slot
    /// is known.
    pub fn add_local_input(&mut self, input: &[u8]) -> Result<(), SessionFailure> {
        self.engine.require_started("pushing an input")?;
        match self.engine.core_mut() {
            Some(s) => Ok(s.add_local_input(input)?),
            None => Err(StateError::NotRunning { session: "relay client" }.into()),
        }
    }

    /// The input of `player`, which must be this client's own slot (for engines that
    /// name the player on every push, as in P2P).
    pub fn add_input(&mut self, player: usize, input: &[u8]) -> Result<(), SessionFailure> {
        self.engine.require_started("pushing an input")?;
        match self.local_player() {
            Some(p) if p == player => self.add_local_input(input),
            Some(ours) => Err(ArgumentError::NotOurPlayer { player, ours }.into()),
            None => Err(ArgumentError::NoSlotYet { player }.into()),
        }
    }

    /// The engine's checksum of the state it saved for `tick`.
    pub fn confirm_save(&mut self, tick: Tick, checksum: u64) -> Result<(), SessionFailure> {
        self.engine.require_started("confirm_save")?;
        match self.engine.core_mut() {
            Some(s) => Ok(s.confirm_save(tick, checksum)?),
            None => Err(StateError::NoSaveRequested.into()),
        }
    }

    /// The engine's serialized state for a `DumpState` request: only a relay-only
    /// server asks (`tickwire serve`), for another player's snapshot. Its digest, and
    /// the state when the server asked for it, go to the server with the next flush.
    pub fn provide_state(&mut self, tick: Tick, bytes: &[u8]) -> Result<(), SessionFailure> {
        self.engine.require_started("provide_state")?;
        match self.engine.core_mut() {
            Some(s) => Ok(s.provide_state(tick, bytes)?),
            None => Err(StateError::NoStateRequested.into()),
        }
    }

    /// Sets the prediction used for another player's missing inputs (None: repeat
    /// their last canonical input).
    pub fn set_prediction(&mut self, player: usize, input: Option<&[u8]>) -> Result<(), SessionFailure> {
        self.engine.check_player(player)?;
        super::check_input_len(input, self.engine.game.input_size)?;
        match self.engine.core_mut() {
            Some(s) => s.set_prediction(player, input)?,
            None => self.pending_predictions.push((player, input.map(<[u8]>::to_vec))),
        }
        Ok(())
    }

    /// Drops the predicted timeline and asks the server for a new snapshot on the same
    /// connection (for example after a desync).
    pub fn request_snapshot(&mut self) -> Result<(), SessionFailure> {
        self.engine.require_started("request_snapshot")?;
        match self.engine.core_mut() {
            Some(s) if s.token().is_some() => s.request_snapshot(),
            _ => return Err(StateError::NotJoined.into()),
        }
        self.engine.collect_events();
        Ok(())
    }

    /// Its connection to the server (None before start, while reconnecting between
    /// attempts, or once gone).
    pub fn server_peer(&self) -> Option<PeerId> {
        self.engine.core()?.server_peer()
    }

    /// The player slot the server gave this client, once joined.
    pub fn local_player(&self) -> Option<usize> {
        self.engine.core()?.player().map(|p| p as usize)
    }

    /// Sends `data` (at most [`MAX_MESSAGE_SIZE`](super::MAX_MESSAGE_SIZE) bytes) to the
    /// server on the session's reliable side channel: delivered in order, exactly once,
    /// unless the connection ends; it arrives there as
    /// [`SessionEvent::Message`](super::SessionEvent::Message). Only once the server's
    /// Welcome has arrived on the current connection (it comes just before JOINED, and
    /// again after a reconnect): before that the server would not know the connection
    /// as a player's and would drop the message.
    ///
    /// Refused, with nothing sent: not joined; over the size limit; the send queue
    /// would go past [`MAX_QUEUED_MESSAGE_BYTES`](super::MAX_QUEUED_MESSAGE_BYTES)
    /// (try again on a later frame).
    pub fn send_message(&mut self, data: &[u8]) -> Result<(), SessionFailure> {
        self.engine.require_started("sending a message")?;
        messages::check_size(data)?;
        let server = self.engine.core().and_then(|s| s.server_peer()).filter(|_| self.connected);
        let server = server.filter(|_| self.engine.core().is_some_and(|s| s.is_welcomed()));
        let Some(server) = server else {
            return Err(StateError::NotWelcomed.into());
        };
        Ok(messages::send_to(&mut self.net.host, std::iter::once(server), data, &mut self.engine.messages.stats)?)
    }

    /// Counters and gauges.
    pub fn stats(&mut self) -> RelayClientStats {
        let Some(s) = self.engine.core() else {
            return RelayClientStats { net: NetStats::read(&mut self.net, 0, 0), ..RelayClientStats::default() };
        };
        let (synchronized, local_player, core, server) = (s.is_synchronized(), s.player(), s.stats(), s.server_peer());
        let rtt_us = server.and_then(|p| self.net.host.stats(p)).map_or(0.0, |c| c.srtt_us);
        RelayClientStats {
            synchronized,
            local_player,
            rtt_us,
            core,
            net: NetStats::read(&mut self.net, u32::from(self.connected), 0),
        }
    }
}

impl Driven for RelayClient {
    type Core = RelayClientSession;
    fn engine(&self) -> &Engine<Self::Core> {
        &self.engine
    }
    fn engine_mut(&mut self) -> &mut Engine<Self::Core> {
        &mut self.engine
    }
    fn pump(&mut self) {
        self.dial_when_resolved();
        let before = self.engine.events.len();
        net::pump(&mut self.engine, &mut self.net);
        for e in self.engine.events.range(before..) {
            match e {
                SessionEvent::RelayClient(ClientSessionEvent::Connected { .. }) => self.connected = true,
                SessionEvent::RelayClient(
                    ClientSessionEvent::Interrupted { .. } | ClientSessionEvent::Disconnected { .. },
                ) => self.connected = false,
                _ => {}
            }
        }
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

has_net!(RelayClient);
