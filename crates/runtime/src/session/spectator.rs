//! [`Spectator`]: watches a P2P match through one of its peers, playing confirmed
//! inputs only (no prediction, no saves).

use std::net::SocketAddr;

use super::engine::{Engine, Phase, sealed::Driven};
use super::event::SessionEvent;
use super::failure::{SessionFailure, state};
use super::messages::MESSAGE_CHANNEL;
use super::net::{Net, NetStats, Remote, has_net};
use super::settings::SpectatorSettings;
use crate::Target;
use crate::host_event::HostEvent;
use tickwire_proto::{
    DisconnectReason, Micros, PeerId, Proven, RollbackEvent as Event, SpectatorConfig, SpectatorSession, Tick,
    TickClock,
};

/// The watched peer: its address, then its connection while one is up.
#[derive(Debug, Clone)]
enum Watched {
    /// Not chosen yet (setup).
    Unset,
    /// The address (or a name being looked up); `peer` is the connection while
    /// dialling or up.
    At { addr: Remote, peer: Option<PeerId>, up: bool },
}

/// A spectator session. Use it from one thread at a time.
pub struct Spectator {
    engine: Engine<SpectatorSession>,
    net: Net,
    core_config: SpectatorConfig,
    /// Spectators play at the match's fixed rate (catching up by playing more per
    /// advance), so their clock is not dilated.
    fixed: TickClock,
    watched: Watched,
    rejected: u64,
}

/// A spectator's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpectatorStats {
    /// Connected to the watched peer and playing.
    pub running: bool,
    /// The next tick to play.
    pub current_tick: Tick,
    /// Ticks received and not yet played.
    pub frames_behind: u32,
    /// Messages refused by strict decoding.
    pub malformed: u64,
    /// The socket's figures.
    pub net: NetStats,
}

impl Spectator {
    /// Checks `settings`, binds the socket and starts the network thread.
    pub fn new(settings: SpectatorSettings) -> Result<Self, SessionFailure> {
        settings.validate()?;
        let net = Net::start(settings.host.clone(), 0)?;
        Ok(Spectator {
            fixed: TickClock::new(settings.game.clock(), 0),
            engine: Engine::new(settings.game),
            net,
            core_config: settings.core_config(),
            watched: Watched::Unset,
            rejected: 0,
        })
    }

    /// The peer whose match to watch. Setup only.
    pub fn spectate(&mut self, addr: SocketAddr) -> Result<(), SessionFailure> {
        self.spectate_target(&Target::Addr(addr))
    }

    /// The peer whose match to watch, by IP literal or host name. A name is looked up
    /// on the host's resolver thread; the dial waits for it, and a name that gives no
    /// address ends the session (a `Fatal` event saying so). Setup only.
    pub fn spectate_target(&mut self, target: &Target) -> Result<(), SessionFailure> {
        self.engine.require_setup("choosing the watched host")?;
        let addr = self.net.remote(target, "watched host address")?;
        self.watched = Watched::At { addr, peer: None, up: false };
        Ok(())
    }

    /// Ends setup and dials the watched peer.
    pub fn start(&mut self) -> Result<(), SessionFailure> {
        self.engine.require_setup("starting")?;
        if matches!(self.watched, Watched::Unset) {
            return Err(state("a spectator needs the watched host's address before starting"));
        }
        self.engine.phase = Phase::Connecting;
        self.ensure_dial();
        Ok(())
    }

    /// The connection to the watched peer, while one exists.
    pub fn host_peer(&self) -> Option<PeerId> {
        match self.watched {
            Watched::At { peer, .. } => peer,
            Watched::Unset => None,
        }
    }

    /// Counters and gauges.
    pub fn stats(&mut self) -> SpectatorStats {
        let up = matches!(self.watched, Watched::At { up: true, .. });
        let (current_tick, frames_behind, malformed) =
            self.engine.core().map_or((0, 0, 0), |s| (s.current_tick(), s.frames_behind(), s.malformed()));
        SpectatorStats {
            running: self.engine.core().is_some(),
            current_tick,
            frames_behind,
            malformed,
            net: NetStats::read(&mut self.net, u32::from(up), self.rejected),
        }
    }

    fn ensure_dial(&mut self) {
        if !matches!(self.engine.phase, Phase::Connecting | Phase::Running(_)) {
            return;
        }
        if let Watched::At { addr, peer: peer @ None, .. } = &mut self.watched {
            match self.net.settle(addr) {
                // A refused dial (command queue full) is tried again on the next pump.
                Ok(Some(addr)) => *peer = self.net.host.connect(addr).ok(),
                Ok(None) => {}
                Err(why) => self.engine.die(format!("the watched host's address: {why}")),
            }
        }
    }

    fn on_connected(&mut self, peer: PeerId, proven: Proven) {
        match &mut self.watched {
            Watched::At { peer: Some(p), up, .. } if *p == peer => {
                *up = true;
                self.engine.events.push_back(SessionEvent::PeerConnected { peer, player: None, proven });
                if self.engine.core().is_none() {
                    match SpectatorSession::new(self.core_config, peer) {
                        Ok(s) => self.engine.run(s),
                        Err(e) => self.engine.die(format!("building the spectator session failed: {e}")),
                    }
                }
            }
            _ => {
                let _ = self.net.host.disconnect(peer);
                self.rejected += 1;
                self.engine.events.push_back(SessionEvent::ConnectionRejected { peer });
            }
        }
    }

    fn on_disconnected(&mut self, gone: PeerId, reason: DisconnectReason) {
        let running = self.engine.core().is_some();
        if let Watched::At { peer: peer @ Some(_), up, .. } = &mut self.watched {
            if *peer != Some(gone) {
                return;
            }
            *up = false;
            if running {
                self.engine.events.push_back(SessionEvent::Core(Event::PeerDisconnected { peer: gone, reason }));
            } else {
                // Not watching yet: forget the attempt and dial again.
                *peer = None;
            }
        }
    }
}

impl Driven for Spectator {
    type Core = SpectatorSession;
    fn engine(&self) -> &Engine<Self::Core> {
        &self.engine
    }
    fn engine_mut(&mut self) -> &mut Engine<Self::Core> {
        &mut self.engine
    }
    fn pump(&mut self) {
        while let Some(ev) = self.net.host.poll_event() {
            match ev {
                // A spectator takes no session messages (P2pSession::send_message).
                HostEvent::Message { peer, channel: MESSAGE_CHANNEL, data, .. } => {
                    self.engine.receive_message(peer, &data, None);
                    self.net.host.recycle(data);
                }
                HostEvent::Message { peer, data, .. } => {
                    if let Some(s) = self.engine.core_mut() {
                        s.handle_message(peer, &data);
                    }
                    self.net.host.recycle(data);
                }
                HostEvent::Connected { peer, credential, .. } => self.on_connected(peer, credential.proven()),
                HostEvent::Disconnected { peer, reason } => self.on_disconnected(peer, reason),
                HostEvent::Fatal { message } => self.engine.die(message),
            }
        }
        if self.engine.core().is_none() && matches!(self.engine.phase, Phase::Connecting) {
            self.ensure_dial();
        }
        self.engine.collect_events();
    }
    fn due(&mut self) -> u32 {
        self.fixed.advance(self.net.now_us())
    }
    fn flush(&mut self) {
        let now = self.net.now_us();
        let tick_us = self.engine.game.tick_us().round() as Micros;
        if let Some(s) = self.engine.core_mut() {
            s.send_messages(now, &mut self.net.host, tick_us);
            let _ = self.net.host.flush();
        }
    }
    fn slots(&self) -> usize {
        0
    }
    fn now(&self) -> Micros {
        self.net.now_us()
    }
}

has_net!(Spectator);
