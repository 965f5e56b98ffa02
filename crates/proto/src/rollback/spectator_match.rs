//! A spectator as the engine drives it from creation, sans-IO: the one connection to
//! the watched peer (dialled at the start, again after a failed attempt, once its name
//! is known if it was given by name), every other connection refused, and the
//! [`SpectatorSession`] built once that connection is up. Spectators play the match's
//! confirmed inputs at its fixed rate (catching up by playing more per advance), so
//! their clock is not dilated.

use std::collections::VecDeque;
use std::net::SocketAddr;

use super::p2p_match::{MatchEvent, RosterError, dialable};
use super::{Event, SpectatorConfig, SpectatorSession};
use crate::clock::Micros;
use crate::engine::{AdvanceStatus, NetSession, Request, Session, Tick};
use crate::tick::TickClock;
use crate::transport::{DisconnectReason, Event as NetEvent, PeerId, Transport};

/// Where the watched peer is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Watched {
    /// Not chosen yet.
    Unset,
    /// At this address.
    At(SocketAddr),
    /// Given as this name (`host:port`), being looked up by the owner.
    Named(String),
}

/// A spectator: its connection to the watched peer and, once it is up, its
/// [`SpectatorSession`]. See the module docs.
pub struct SpectatorMatch {
    cfg: SpectatorConfig,
    watched: Watched,
    /// The connection to the watched peer while dialling or up.
    peer: Option<PeerId>,
    up: bool,
    started: bool,
    core: Option<SpectatorSession>,
    clock: TickClock,
    tick_us: Micros,
    events: VecDeque<MatchEvent>,
    rejected: u64,
}

impl SpectatorMatch {
    /// A spectator with the core's settings `cfg`, playing at the match's fixed rate.
    pub fn new(cfg: SpectatorConfig) -> Self {
        let clock = cfg.game.clock();
        SpectatorMatch {
            cfg,
            watched: Watched::Unset,
            peer: None,
            up: false,
            started: false,
            core: None,
            tick_us: clock.tick_us.round() as Micros,
            clock: TickClock::new(clock, 0),
            events: VecDeque::new(),
            rejected: 0,
        }
    }

    /// The peer whose match to watch. Setup only.
    pub fn watch(&mut self, addr: SocketAddr) -> Result<(), RosterError> {
        self.require_setup()?;
        self.watched = Watched::At(dialable(addr, "watched host address")?);
        Ok(())
    }

    /// The peer whose match to watch, by a name (`host:port`) the owner looks up and
    /// gives with [`SpectatorMatch::resolve`]; the dial waits for it. Setup only.
    pub fn watch_named(&mut self, name: &str) -> Result<(), RosterError> {
        self.require_setup()?;
        self.watched = Watched::Named(name.to_string());
        Ok(())
    }

    /// The address `name` was looked up to.
    pub fn resolve<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, name: &str, addr: SocketAddr) {
        if self.watched == Watched::Named(name.to_string()) {
            self.watched = Watched::At(crate::rollback::canonical_addr(addr));
            self.ensure_dial(now, transport);
        }
    }

    fn require_setup(&self) -> Result<(), RosterError> {
        match self.started {
            false => Ok(()),
            true => Err(RosterError::Started),
        }
    }

    /// Ends setup and dials the watched peer; refused while none is chosen.
    pub fn start<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) -> Result<(), RosterError> {
        self.require_setup()?;
        if self.watched == Watched::Unset {
            return Err(RosterError::NothingToWatch);
        }
        self.started = true;
        self.ensure_dial(now, transport);
        Ok(())
    }

    /// The connection to the watched peer, while one exists.
    pub fn host_peer(&self) -> Option<PeerId> {
        self.peer
    }

    /// The connection to the watched peer is up.
    pub fn is_connected(&self) -> bool {
        self.up
    }

    /// The spectator session, once the watched peer's connection came up.
    pub fn core(&self) -> Option<&SpectatorSession> {
        self.core.as_ref()
    }

    /// Connections refused: anyone but the watched peer.
    pub fn rejected(&self) -> u64 {
        self.rejected
    }

    /// Dials the watched peer, before the session runs, while no attempt is alive.
    fn ensure_dial<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) {
        if !self.started || self.core.is_some() || self.peer.is_some() {
            return;
        }
        if let Watched::At(addr) = self.watched {
            // A refused dial (a full queue) is tried again on the next send.
            self.peer = transport.connect(now, addr).ok();
        }
    }

    fn on_connected<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, peer: PeerId, event: MatchEvent) {
        if self.peer != Some(peer) {
            transport.disconnect(now, peer);
            self.rejected += 1;
            self.events.push_back(MatchEvent::ConnectionRejected { peer });
            return;
        }
        self.up = true;
        self.events.push_back(event);
        if self.core.is_none() {
            match SpectatorSession::new(self.cfg, peer) {
                Ok(s) => self.core = Some(s),
                Err(e) => self.events.push_back(MatchEvent::Failed(e)),
            }
        }
    }

    fn on_disconnected(&mut self, gone: PeerId, reason: DisconnectReason) {
        if self.peer != Some(gone) {
            return;
        }
        self.up = false;
        match self.core {
            Some(_) => self.events.push_back(MatchEvent::Core(Event::PeerDisconnected { peer: gone, reason })),
            // Not watching yet: forget the attempt and dial again.
            None => self.peer = None,
        }
    }
}

impl Session for SpectatorMatch {
    type Event = MatchEvent;
    fn current_tick(&self) -> Tick {
        self.core.as_ref().map_or(0, SpectatorSession::current_tick)
    }
    fn advance(&mut self) -> AdvanceStatus {
        self.core.as_mut().map_or(AdvanceStatus::NotSynchronized, SpectatorSession::advance)
    }
    fn pending_requests(&self) -> usize {
        self.core.as_ref().map_or(0, SpectatorSession::pending_requests)
    }
    fn poll_request(&mut self) -> Option<Request<'_>> {
        self.core.as_mut()?.poll_request()
    }
    fn poll_event(&mut self) -> Option<MatchEvent> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        self.core.as_mut()?.poll_event().map(MatchEvent::Core)
    }
}

impl NetSession for SpectatorMatch {
    fn on_event<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, event: NetEvent) {
        match event {
            NetEvent::Connected { peer, credential, .. } => {
                let e = MatchEvent::PeerConnected { peer, player: None, proven: credential.proven() };
                self.on_connected(now, transport, peer, e)
            }
            NetEvent::Disconnected { peer, reason } => self.on_disconnected(peer, reason),
            NetEvent::Message { peer, data, .. } => {
                if let Some(core) = &mut self.core {
                    core.handle_message(peer, &data);
                }
                transport.recycle(data);
            }
        }
    }
    /// The match's fixed rate, from the moment the session runs.
    fn ticks_due<T: Transport + ?Sized>(&mut self, now: Micros, _transport: &mut T) -> u32 {
        match self.core {
            Some(_) => self.clock.advance(now),
            None => 0,
        }
    }
    fn send_messages<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) {
        self.ensure_dial(now, transport);
        if let Some(core) = &mut self.core {
            core.send_messages(now, transport, self.tick_us);
        }
    }
    /// A spectator takes no session messages.
    fn member_place(&self, _peer: PeerId) -> Option<usize> {
        None
    }
}
