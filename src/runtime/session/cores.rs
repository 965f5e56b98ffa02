//! The session cores a [`Session`](super::Session) can run, behind one enum.
//!
//! An enum rather than a trait object: the set of cores is closed and known to the
//! library (P2P, synctest, spectator, replay; relay server and client next), the cores
//! differ in which operations they have at all (only P2P serves spectators or records
//! replays, only synctest takes every player's input), and a `match` makes each
//! difference an explicit arm instead of a trait full of "not supported" defaults.
//! Adding the relay cores is adding two variants: the compiler then lists every
//! operation that must say what they do. There is no boxing and no dynamic dispatch
//! on the per-tick path.

use crate::core::clock::Micros;
use crate::core::rollback::{
    AdvanceStatus, Event, P2pSession, ReplaySession, Request, SessionError, SpectatorSession, SyncTestSession, Tick,
};
use crate::core::transport::{PeerId, Transport};

/// One running core. A session holds exactly one, built once and never moved per
/// tick, so the size difference between the variants costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub(super) enum Core {
    P2p(P2pSession),
    SyncTest(SyncTestSession),
    Spectator(SpectatorSession),
    Replay(ReplaySession),
}

impl Core {
    /// Feeds a message that arrived at `now` (the network thread's arrival time).
    pub(super) fn handle_message(&mut self, now: Micros, peer: PeerId, data: &[u8]) {
        match self {
            Core::P2p(s) => s.handle_message(now, peer, data),
            Core::Spectator(s) => s.handle_message(peer, data),
            Core::SyncTest(_) | Core::Replay(_) => {}
        }
    }

    /// The transport closed the connection to `peer`.
    pub(super) fn peer_disconnected(&mut self, peer: PeerId) {
        if let Core::P2p(s) = self {
            s.peer_disconnected(peer);
        }
    }

    /// Queues this frame's messages on `transport`.
    pub(super) fn send_messages<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, tick_us: Micros) {
        match self {
            Core::P2p(s) => s.send_messages(now, transport),
            Core::Spectator(s) => s.send_messages(now, transport, tick_us),
            Core::SyncTest(_) | Core::Replay(_) => {}
        }
    }

    /// Ticks due on the P2P core's own (dilated) clock; None for the cores that run on
    /// the session's fixed-rate clock.
    pub(super) fn ticks_due(&mut self, now: Micros) -> Option<u32> {
        match self {
            Core::P2p(s) => Some(s.ticks_due(now)),
            Core::SyncTest(_) | Core::Spectator(_) | Core::Replay(_) => None,
        }
    }

    pub(super) fn advance(&mut self) -> AdvanceStatus {
        match self {
            Core::P2p(s) => s.advance(),
            Core::SyncTest(s) => s.advance(),
            Core::Spectator(s) => s.advance(),
            Core::Replay(s) => s.advance(),
        }
    }

    pub(super) fn pending_requests(&self) -> usize {
        match self {
            Core::P2p(s) => s.pending_requests(),
            Core::SyncTest(s) => s.pending_requests(),
            Core::Spectator(s) => s.pending_requests(),
            Core::Replay(s) => s.pending_requests(),
        }
    }

    pub(super) fn poll_request(&mut self) -> Option<Request<'_>> {
        match self {
            Core::P2p(s) => s.poll_request(),
            Core::SyncTest(s) => s.poll_request(),
            Core::Spectator(s) => s.poll_request(),
            Core::Replay(s) => s.poll_request(),
        }
    }

    pub(super) fn poll_event(&mut self) -> Option<Event> {
        match self {
            Core::P2p(s) => s.poll_event(),
            Core::SyncTest(s) => s.poll_event(),
            Core::Spectator(s) => s.poll_event(),
            Core::Replay(_) => None,
        }
    }

    /// The next tick to simulate.
    pub(super) fn current_tick(&self) -> Tick {
        match self {
            Core::P2p(s) => s.current_tick(),
            Core::SyncTest(s) => s.current_tick(),
            Core::Spectator(s) => s.current_tick(),
            Core::Replay(s) => s.current_tick(),
        }
    }

    /// Every input before this tick is final (for the cores without prediction: every
    /// tick played).
    pub(super) fn confirmed_tick(&self) -> Tick {
        match self {
            Core::P2p(s) => s.stats().confirmed_tick,
            Core::SyncTest(s) => s.current_tick(),
            Core::Spectator(s) => s.current_tick(),
            Core::Replay(s) => s.current_tick(),
        }
    }

    /// The engine's checksum of a save; Ok(false) for a core that never asks for saves.
    pub(super) fn confirm_save(&mut self, tick: Tick, checksum: u64) -> Result<bool, SessionError> {
        match self {
            Core::P2p(s) => s.confirm_save(tick, checksum).map(|_| true),
            Core::SyncTest(s) => s.confirm_save(tick, checksum).map(|_| true),
            Core::Spectator(_) | Core::Replay(_) => Ok(false),
        }
    }
}
