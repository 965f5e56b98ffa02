//! The engine loop every session shares ([`EngineLoop`]): ticks due, advance, the
//! requests in order, events. Each session type supplies its core and how it pumps
//! the network; the loop itself is written once here.
//!
//! The per-tick path has no dynamic dispatch and allocates nothing: the core is a
//! concrete type per session type, events go to a preallocated queue, and the current
//! request is copied into buffers reused from poll to poll.

use std::collections::VecDeque;

use super::event::SessionEvent;
use super::failure::{ArgumentError, SessionFailure, StateError};
use super::messages::{Inbox, MessageStats};
use super::request::{CurrentRequest, PolledRequest, RequestKind};
use crate::host_error::HostError;
use tickwire_proto::{AdvanceStatus, GameShape, Micros, Session};

/// Events kept without allocating (the queue grows past this only in a flood).
const EVENT_CAPACITY: usize = 64;

/// What the loop needs of a protocol core: proto's contract of every session kind,
/// whose events become [`SessionEvent`]s.
pub trait Core: Session<Event: Into<SessionEvent>> {}
impl<C: Session<Event: Into<SessionEvent>>> Core for C {}

/// Where a session is in its life. The core exists from `Running` on (P2P and a
/// spectator build it once their connections are up).
pub(super) enum Phase<C> {
    /// Before `start`: players, addresses and simulators may still be set.
    Setup,
    /// Started; waiting for connections before the core can be built.
    Connecting,
    /// The core runs.
    Running(C),
    /// The network thread died; every call fails with this message.
    Dead(String),
}

/// The state every session keeps around its core: its phase, the request being run,
/// the events not yet polled.
pub struct Engine<C> {
    pub(super) phase: Phase<C>,
    pub(super) game: GameShape,
    current: CurrentRequest,
    pub(super) events: VecDeque<SessionEvent>,
    /// Session messages received and not yet polled (`messages.rs`).
    pub(super) messages: Inbox,
    /// The core of a session that died while it ran: it runs no more, but what it
    /// knew (who is who) can still be asked.
    pub(super) remains: Option<C>,
}

impl<C: Core> Engine<C> {
    pub(super) fn new(game: GameShape) -> Self {
        Engine {
            phase: Phase::Setup,
            current: CurrentRequest::with_capacity(game.players, game.input_size),
            game,
            events: VecDeque::with_capacity(EVENT_CAPACITY),
            messages: Inbox::default(),
            remains: None,
        }
    }

    /// The running core, if any.
    pub(super) fn core(&self) -> Option<&C> {
        match &self.phase {
            Phase::Running(c) => Some(c),
            _ => None,
        }
    }

    /// The running core, if any.
    pub(super) fn core_mut(&mut self) -> Option<&mut C> {
        match &mut self.phase {
            Phase::Running(c) => Some(c),
            _ => None,
        }
    }

    pub(super) fn run(&mut self, core: C) {
        self.phase = Phase::Running(core);
    }

    /// `operation` names the call in the failure.
    pub(super) fn require_setup(&self, operation: &'static str) -> Result<(), SessionFailure> {
        match self.phase {
            Phase::Setup => Ok(()),
            _ => Err(StateError::AlreadyStarted { operation }.into()),
        }
    }

    /// `operation` names the call in the failure.
    pub(super) fn require_started(&self, operation: &'static str) -> Result<(), SessionFailure> {
        match &self.phase {
            Phase::Setup => Err(StateError::NotStarted { operation }.into()),
            Phase::Dead(m) => Err(SessionFailure::Host(HostError::ThreadGone(m.clone()))),
            Phase::Connecting | Phase::Running(_) => Ok(()),
        }
    }

    /// The session is unusable from now on; the engine hears it once, as `Fatal`.
    pub(super) fn die(&mut self, message: String) {
        if !matches!(self.phase, Phase::Dead(_)) {
            self.events.push_back(SessionEvent::Fatal(message.clone()));
            if let Phase::Running(core) = std::mem::replace(&mut self.phase, Phase::Dead(message)) {
                self.remains = Some(core);
            }
        }
    }

    /// A message arrived on the message channel from `peer`, whose member holds
    /// `place` in the session (None: not a member): queued with its event, or dropped
    /// and counted.
    pub(super) fn receive_message(&mut self, peer: tickwire_proto::PeerId, data: &[u8], place: Option<usize>) {
        if self.messages.accept(place, data) {
            self.events.push_back(SessionEvent::Message { peer, len: data.len() });
        }
    }

    pub(super) fn collect_events(&mut self) {
        let Phase::Running(core) = &mut self.phase else { return };
        let mut fatal = None;
        while let Some(e) = core.poll_event() {
            match e.into() {
                // A core that reports itself dead takes the session with it.
                SessionEvent::Fatal(message) => {
                    fatal = Some(message);
                    break;
                }
                e => self.events.push_back(e),
            }
        }
        if let Some(message) = fatal {
            self.die(message);
        }
    }

    pub(super) fn check_player(&self, player: usize) -> Result<(), SessionFailure> {
        if player >= self.game.players {
            return Err(ArgumentError::NoSuchPlayer { player, players: self.game.players }.into());
        }
        Ok(())
    }

    fn advance(&mut self) -> Result<AdvanceStatus, SessionFailure> {
        self.require_started("advance")?;
        self.current.clear();
        let Phase::Running(core) = &mut self.phase else { return Ok(AdvanceStatus::NotSynchronized) };
        let left = core.pending_requests();
        if left > 0 {
            return Err(StateError::RequestsNotPolled { left }.into());
        }
        let status = core.advance();
        self.collect_events();
        Ok(status)
    }

    fn poll_request(&mut self) -> Option<PolledRequest> {
        let polled = match &mut self.phase {
            Phase::Running(core) => core.poll_request().map(|r| self.current.set(r)),
            _ => None,
        };
        if polled.is_none() {
            self.current.clear();
        }
        polled
    }
}

/// What a session type supplies to the shared loop. Sealed: only this crate's session
/// types implement it.
pub(super) mod sealed {
    use super::*;

    pub trait Driven {
        type Core: Core;
        fn engine(&self) -> &Engine<Self::Core>;
        fn engine_mut(&mut self) -> &mut Engine<Self::Core>;
        /// Drains the network into the core (no-op without a socket).
        fn pump(&mut self);
        /// Ticks due now, on the core's clock or the session's fixed-rate one.
        fn due(&mut self) -> u32;
        /// Sends the core's messages and flushes the socket (no-op without one).
        fn flush(&mut self);
        /// Snapshots the engine must hold.
        fn slots(&self) -> usize;
        /// Now, on the session's timeline.
        fn now(&self) -> Micros;
        /// Started and every connection up: the match runs (by default, once the
        /// core exists).
        fn running(&self) -> bool {
            self.engine().core().is_some()
        }
    }
}

/// The engine loop, the same for every kind of session (DESIGN.md): once per frame
/// [`ticks_due`](EngineLoop::ticks_due); per due tick push inputs, then
/// [`advance`](EngineLoop::advance) and [`poll_request`](EngineLoop::poll_request)
/// until `None`; then [`poll_event`](EngineLoop::poll_event) until `None`.
///
/// Pumping happens inside `ticks_due` and `advance`: the network's events are
/// drained into the core, the core's messages are queued and the socket is flushed.
pub trait EngineLoop: sealed::Driven {
    /// Pumps the network and returns how many ticks are due now. Call once per frame.
    fn ticks_due(&mut self) -> Result<u32, SessionFailure> {
        self.engine().require_started("ticks_due")?;
        self.pump();
        let n = match self.engine().phase {
            Phase::Running(_) => self.due(),
            _ => 0,
        };
        self.flush();
        Ok(n)
    }

    /// Runs one tick: the requests to poll follow. Every request of the previous
    /// advance must have been polled.
    fn advance(&mut self) -> Result<AdvanceStatus, SessionFailure> {
        let status = self.engine_mut().advance()?;
        if self.engine().core().is_some() {
            self.flush();
        }
        Ok(status)
    }

    /// The next request of the last advance, in order. Its inputs or state stay
    /// readable until the next poll (or advance).
    fn poll_request(&mut self) -> Option<PolledRequest> {
        self.engine_mut().poll_request()
    }

    /// The current request, if any.
    fn current_request(&self) -> Option<PolledRequest> {
        self.engine().current.polled
    }

    /// The current Advance request's inputs (players x input_size bytes).
    fn request_inputs(&self) -> Option<&[u8]> {
        let c = &self.engine().current;
        c.polled.filter(|p| p.kind == RequestKind::Advance).map(|_| c.inputs.as_slice())
    }

    /// The current Advance request's input statuses (one byte per player, as
    /// [`InputStatus`](tickwire_proto::InputStatus)).
    fn request_statuses(&self) -> Option<&[u8]> {
        let c = &self.engine().current;
        c.polled.filter(|p| p.kind == RequestKind::Advance).map(|_| c.statuses.as_slice())
    }

    /// The current Restore request's state bytes.
    fn request_state(&self) -> Option<&[u8]> {
        let c = &self.engine().current;
        c.polled.filter(|p| p.kind == RequestKind::Restore).map(|_| c.state.as_slice())
    }

    /// The next event. A [`SessionEvent::Message`]'s payload is
    /// [`message`](EngineLoop::message) until the next poll.
    fn poll_event(&mut self) -> Option<SessionEvent> {
        let e = self.engine_mut();
        e.collect_events();
        let ev = e.events.pop_front();
        e.messages.polled(matches!(ev, Some(SessionEvent::Message { .. })));
        ev
    }

    /// The payload of the [`SessionEvent::Message`] polled last, until the next poll
    /// or [`release_message`](EngineLoop::release_message).
    fn message(&self) -> Option<&[u8]> {
        self.engine().messages.current()
    }

    /// Gives the payload of the message polled last back for reuse (the next poll does
    /// it too).
    fn release_message(&mut self) {
        self.engine_mut().messages.release();
    }

    /// The message side channel's figures (zero in the modes without one).
    fn message_stats(&self) -> MessageStats {
        self.engine().messages.stats
    }

    /// Snapshots the engine must hold: `Save` slots are in `0..state_slots()`. Known
    /// from creation on.
    fn state_slots(&self) -> usize {
        self.slots()
    }

    /// The match's shape.
    fn game(&self) -> &GameShape {
        &self.engine().game
    }

    /// Now, on the timeline the session's clocks use (the network thread's, if any).
    fn now_us(&self) -> Micros {
        self.now()
    }

    /// True once started and every connection is up (the core runs).
    fn is_running(&self) -> bool {
        self.running()
    }

    /// Checks a player index against the session.
    fn check_player(&self, player: usize) -> Result<(), SessionFailure> {
        self.engine().check_player(player)
    }
}

impl<T: sealed::Driven> EngineLoop for T {}
