//! [`Spectator`]: watches a P2P match through one of its peers, playing confirmed
//! inputs only (no prediction, no saves). The connection and the session are proto's
//! sans-IO [`SpectatorMatch`](tickwire_proto::SpectatorMatch); this type adds the
//! socket, the host-name lookup and the engine loop.

use std::net::SocketAddr;

use super::engine::{Engine, Phase, sealed::Driven};
use super::failure::SessionFailure;
use super::net::{self, Net, NetStats, Remote, has_net};
use super::settings::SpectatorSettings;
use crate::Target;
use tickwire_proto::{Micros, PeerId, SpectatorMatch, Tick};

/// A spectator session. Use it from one thread at a time.
pub struct Spectator {
    engine: Engine<SpectatorMatch>,
    net: Net,
    /// The spectator while it is set up; the engine's core from `start` on.
    setup: Option<SpectatorMatch>,
    /// The watched host's name while it is looked up.
    lookup: Option<Remote>,
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
        let setup = SpectatorMatch::new(settings.core_config());
        Ok(Spectator { engine: Engine::new(settings.game), net, setup: Some(setup), lookup: None })
    }

    /// The spectator: set up until `start`, then the engine's core (kept by the engine
    /// if the session dies).
    fn the_match(&self) -> &SpectatorMatch {
        let m = self.setup.as_ref().or(self.engine.core()).or(self.engine.remains.as_ref());
        m.expect("a spectator holds its match from creation to destruction")
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
        let m = self.setup.as_mut().expect("set up until the start");
        match self.net.remote(target, "watched host address")? {
            Remote::Known(addr) => {
                m.watch(addr)?;
                self.lookup = None;
            }
            Remote::Resolving(ticket, text) => {
                m.watch_named(&text)?;
                self.lookup = Some(Remote::Resolving(ticket, text));
            }
        }
        Ok(())
    }

    /// Ends setup and dials the watched peer.
    pub fn start(&mut self) -> Result<(), SessionFailure> {
        self.engine.require_setup("starting")?;
        let now = self.net.now_us();
        self.setup.as_mut().expect("set up until the start").start(now, &mut self.net.host)?;
        let m = self.setup.take().expect("set up until the start");
        self.engine.run(m);
        Ok(())
    }

    /// The connection to the watched peer, while one exists.
    pub fn host_peer(&self) -> Option<PeerId> {
        self.the_match().host_peer()
    }

    /// Counters and gauges.
    pub fn stats(&mut self) -> SpectatorStats {
        let m = self.the_match();
        let (up, rejected) = (m.is_connected(), m.rejected());
        let (current_tick, frames_behind, malformed) =
            m.core().map_or((0, 0, 0), |s| (s.current_tick(), s.frames_behind(), s.malformed()));
        SpectatorStats {
            running: m.core().is_some(),
            current_tick,
            frames_behind,
            malformed,
            net: NetStats::read(&mut self.net, u32::from(up), rejected),
        }
    }

    /// Takes the answer of the watched host's name; one that gives no address ends the
    /// session.
    fn settle_name(&mut self) {
        let Some(remote) = &mut self.lookup else { return };
        let text = match remote {
            Remote::Resolving(_, text) => text.clone(),
            Remote::Known(_) => return,
        };
        match self.net.settle(remote) {
            Ok(None) => {}
            Ok(Some(addr)) => {
                self.lookup = None;
                let now = self.net.now_us();
                match (&mut self.setup, &mut self.engine.phase) {
                    (Some(m), _) | (None, Phase::Running(m)) => m.resolve(now, &mut self.net.host, &text, addr),
                    _ => {}
                }
            }
            Err(why) => {
                self.lookup = None;
                self.engine.die(format!("the watched host's address: {why}"));
            }
        }
    }
}

impl Driven for Spectator {
    type Core = SpectatorMatch;
    fn engine(&self) -> &Engine<Self::Core> {
        &self.engine
    }
    fn engine_mut(&mut self) -> &mut Engine<Self::Core> {
        &mut self.engine
    }
    fn pump(&mut self) {
        self.settle_name();
        net::pump(&mut self.engine, &mut self.net);
    }
    fn due(&mut self) -> u32 {
        net::due(&mut self.engine, &mut self.net)
    }
    fn flush(&mut self) {
        net::flush(&mut self.engine, &mut self.net);
    }
    fn slots(&self) -> usize {
        0
    }
    fn now(&self) -> Micros {
        self.net.now_us()
    }
    fn running(&self) -> bool {
        self.engine.core().is_some_and(|m| m.core().is_some())
    }
}

has_net!(Spectator);
