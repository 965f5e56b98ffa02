//! The session cores a [`Session`](super::Session) can run, behind one enum.
//!
//! An enum rather than a trait object: the set of cores is closed and known to the
//! library (P2P, synctest, spectator, replay, relay server and client), the cores
//! differ in which operations they have at all (only P2P serves spectators or records
//! replays, only synctest takes every player's input, only the relay cores take the
//! transport's connection events themselves), and a `match` makes each difference an
//! explicit arm instead of a trait full of "not supported" defaults. There is no
//! boxing and no dynamic dispatch on the per-tick path.

use super::SessionEvent;
use crate::session::SessionFailure;
use tickwire_proto::clock::Micros;
use tickwire_proto::relay::relay_client_session::RelayClientSession;
use tickwire_proto::relay::relay_server_session::{RelayServerSession, ServerSessionEvent};
use tickwire_proto::rollback::{
    AdvanceStatus, P2pSession, ReplaySession, Request, SpectatorSession, SyncTestSession, Tick,
};
use tickwire_proto::transport::{Event, PeerId, Transport};

/// One running core. A session holds exactly one, built once and never moved per
/// tick, so the size difference between the variants costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub(super) enum Core {
    P2p(P2pSession),
    SyncTest(SyncTestSession),
    Spectator(SpectatorSession),
    Replay(ReplaySession),
    RelayServer(RelayServerSession),
    RelayClient(RelayClientSession),
}

impl Core {
    /// Feeds a message that arrived at `now` (the network thread's arrival time) to the
    /// rollback cores (the relay cores take whole transport events: [`Core::on_event`]).
    pub(super) fn handle_message(&mut self, now: Micros, peer: PeerId, data: &[u8]) {
        match self {
            Core::P2p(s) => s.handle_message(now, peer, data),
            Core::Spectator(s) => s.handle_message(peer, data),
            Core::SyncTest(_) | Core::Replay(_) | Core::RelayServer(_) | Core::RelayClient(_) => {}
        }
    }

    /// Feeds a transport event to a relay core (which recycles message buffers through
    /// `transport`). Other cores ignore it: their connections are the roster's business.
    pub(super) fn on_event<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, e: Event) {
        match self {
            Core::RelayServer(s) => s.on_event(now, transport, e),
            Core::RelayClient(s) => s.on_event(now, transport, e),
            _ => {
                if let Event::Message { data, .. } = e {
                    transport.recycle(data);
                }
            }
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
            Core::RelayServer(s) => s.send_messages(now, transport),
            Core::RelayClient(s) => s.send_messages(now, transport),
            Core::SyncTest(_) | Core::Replay(_) => {}
        }
    }

    /// Ticks due on the core's own clock (P2P's and the relay client's are dilated by
    /// time sync, the relay server's is the steady master clock); None for the cores
    /// that run on the session's fixed-rate clock.
    pub(super) fn ticks_due<T: Transport + ?Sized>(&mut self, now: Micros, transport: Option<&mut T>) -> Option<u32> {
        match self {
            Core::P2p(s) => Some(s.ticks_due(now)),
            Core::RelayServer(s) => Some(s.ticks_due(now)),
            Core::RelayClient(s) => Some(transport.map_or(0, |t| s.ticks_due(now, t))),
            Core::SyncTest(_) | Core::Spectator(_) | Core::Replay(_) => None,
        }
    }

    pub(super) fn advance(&mut self) -> AdvanceStatus {
        match self {
            Core::P2p(s) => s.advance(),
            Core::SyncTest(s) => s.advance(),
            Core::Spectator(s) => s.advance(),
            Core::Replay(s) => s.advance(),
            Core::RelayServer(s) => s.advance(),
            Core::RelayClient(s) => s.advance(),
        }
    }

    pub(super) fn pending_requests(&self) -> usize {
        match self {
            Core::P2p(s) => s.pending_requests(),
            Core::SyncTest(s) => s.pending_requests(),
            Core::Spectator(s) => s.pending_requests(),
            Core::Replay(s) => s.pending_requests(),
            Core::RelayServer(s) => s.pending_requests(),
            Core::RelayClient(s) => s.pending_requests(),
        }
    }

    pub(super) fn poll_request(&mut self) -> Option<Request<'_>> {
        match self {
            Core::P2p(s) => s.poll_request(),
            Core::SyncTest(s) => s.poll_request(),
            Core::Spectator(s) => s.poll_request(),
            Core::Replay(s) => s.poll_request(),
            Core::RelayServer(s) => s.poll_request(),
            Core::RelayClient(s) => s.poll_request(),
        }
    }

    /// The next event, as the session hands it out.
    pub(super) fn poll_event(&mut self) -> Option<SessionEvent> {
        match self {
            Core::P2p(s) => s.poll_event().map(SessionEvent::Core),
            Core::SyncTest(s) => s.poll_event().map(SessionEvent::Core),
            Core::Spectator(s) => s.poll_event().map(SessionEvent::Core),
            Core::Replay(_) => None,
            Core::RelayServer(s) => {
                let event = s.poll_event()?;
                Some(SessionEvent::RelayServer { event, tick: server_event_tick(s, &event) })
            }
            Core::RelayClient(s) => s.poll_event().map(SessionEvent::RelayClient),
        }
    }

    /// The next tick to simulate.
    pub(super) fn current_tick(&self) -> Tick {
        match self {
            Core::P2p(s) => s.current_tick(),
            Core::SyncTest(s) => s.current_tick(),
            Core::Spectator(s) => s.current_tick(),
            Core::Replay(s) => s.current_tick(),
            Core::RelayServer(s) => (s.tick() + 1) as Tick,
            Core::RelayClient(s) => s.current_tick(),
        }
    }

    /// Every input before this tick is final (for the cores without prediction: every
    /// tick played; for a relay client: the authoritative tick).
    pub(super) fn confirmed_tick(&self) -> Tick {
        match self {
            Core::P2p(s) => s.stats().confirmed_tick,
            Core::SyncTest(s) => s.current_tick(),
            Core::Spectator(s) => s.current_tick(),
            Core::Replay(s) => s.current_tick(),
            Core::RelayServer(s) => (s.tick() + 1) as Tick,
            Core::RelayClient(s) => s.authoritative_tick(),
        }
    }

    /// The engine's checksum of a save; Ok(false) for a core that never asks for saves.
    pub(super) fn confirm_save(&mut self, tick: Tick, checksum: u64) -> Result<bool, SessionFailure> {
        match self {
            Core::P2p(s) => s.confirm_save(tick, checksum).map(|_| true).map_err(Into::into),
            Core::SyncTest(s) => s.confirm_save(tick, checksum).map(|_| true).map_err(Into::into),
            Core::RelayServer(s) => s.confirm_save(tick, checksum).map(|_| true).map_err(Into::into),
            Core::RelayClient(s) => s.confirm_save(tick, checksum).map(|_| true).map_err(Into::into),
            Core::Spectator(_) | Core::Replay(_) => Ok(false),
        }
    }
}

/// The tick a relay server event concerns (see [`SessionEvent::RelayServer`]). Events
/// are collected right after the call that raised them, before the next tick runs.
fn server_event_tick(s: &RelayServerSession, e: &ServerSessionEvent) -> Tick {
    let next = s.tick() + 1;
    let t = match *e {
        ServerSessionEvent::PlayerJoined { player, .. } | ServerSessionEvent::PlayerReconnected { player, .. } => {
            s.relay().joined_at(player).unwrap_or(next)
        }
        // A jitter kick removes the player from the step being formed.
        ServerSessionEvent::PlayerKicked {
            cause: tickwire_proto::relay::relay_server_session::KickCause::Jitter(_),
            ..
        } => s.tick(),
        _ => next,
    };
    t as Tick
}
