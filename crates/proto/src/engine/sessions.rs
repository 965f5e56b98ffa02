//! [`Session`] for the six session kinds: each delegates to its own methods of the same
//! names, which stay callable without the trait.

use super::{AdvanceStatus, NetSession, Request, Session, Tick};
use crate::clock::Micros;
use crate::relay::relay_client_session::{ClientSessionEvent, RelayClientSession};
use crate::relay::relay_server_session::{RelayServerSession, ServerSessionEvent};
use crate::rollback::{Event as RollbackEvent, P2pMatch, P2pSession, ReplaySession, SpectatorSession, SyncTestSession};
use crate::transport::{Event as NetEvent, PeerId, Transport};

/// A relay server's event with the tick it concerns, as [`Session::poll_event`] hands
/// it out (see [`RelayServerSession::event_tick`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerEventAt {
    /// What happened.
    pub event: ServerSessionEvent,
    /// For a join or a return, the first tick whose canonical step includes the
    /// player; for a player kicked by its jitter buffer, the last tick run (the step
    /// being formed lost it); otherwise the next tick.
    pub tick: Tick,
}

macro_rules! session_kind {
    ($kind:ty, $event:ty, |$s:ident| $poll_event:expr) => {
        impl Session for $kind {
            type Event = $event;
            fn current_tick(&self) -> Tick {
                <$kind>::current_tick(self)
            }
            fn advance(&mut self) -> AdvanceStatus {
                <$kind>::advance(self)
            }
            fn pending_requests(&self) -> usize {
                <$kind>::pending_requests(self)
            }
            fn poll_request(&mut self) -> Option<Request<'_>> {
                <$kind>::poll_request(self)
            }
            fn poll_event(&mut self) -> Option<$event> {
                let $s = self;
                $poll_event
            }
        }
    };
}

session_kind!(P2pSession, RollbackEvent, |s| P2pSession::poll_event(s));
session_kind!(SyncTestSession, RollbackEvent, |s| SyncTestSession::poll_event(s));
session_kind!(SpectatorSession, RollbackEvent, |s| SpectatorSession::poll_event(s));
// A replay has nothing to report but its requests.
session_kind!(ReplaySession, std::convert::Infallible, |_s| None);
session_kind!(RelayClientSession, ClientSessionEvent, |s| RelayClientSession::poll_event(s));
session_kind!(RelayServerSession, ServerEventAt, |s| {
    let event = RelayServerSession::poll_event(s)?;
    Some(ServerEventAt { event, tick: s.event_tick(&event) })
});

impl NetSession for RelayServerSession {
    fn on_event<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, event: NetEvent) {
        RelayServerSession::on_event(self, now, transport, event)
    }
    fn ticks_due<T: Transport + ?Sized>(&mut self, now: Micros, _transport: &mut T) -> u32 {
        RelayServerSession::ticks_due(self, now)
    }
    fn send_messages<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) {
        RelayServerSession::send_messages(self, now, transport)
    }
    /// The player slot a connection holds (its Hello was taken); the slot is the
    /// place, whoever holds it next.
    fn member_place(&self, peer: PeerId) -> Option<usize> {
        self.player_on(peer).map(|p| p as usize)
    }
}

impl NetSession for RelayClientSession {
    fn on_event<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, event: NetEvent) {
        RelayClientSession::on_event(self, now, transport, event)
    }
    fn ticks_due<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) -> u32 {
        RelayClientSession::ticks_due(self, now, transport)
    }
    fn send_messages<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) {
        RelayClientSession::send_messages(self, now, transport)
    }
    /// The only member is the server, in the one place.
    fn member_place(&self, peer: PeerId) -> Option<usize> {
        (self.server_peer() == Some(peer)).then_some(0)
    }
}

impl NetSession for P2pMatch {
    fn on_event<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, event: NetEvent) {
        P2pMatch::on_event(self, now, transport, event)
    }
    fn ticks_due<T: Transport + ?Sized>(&mut self, now: Micros, _transport: &mut T) -> u32 {
        P2pMatch::ticks_due(self, now)
    }
    fn send_messages<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) {
        P2pMatch::send_messages(self, now, transport)
    }
    fn member_place(&self, peer: PeerId) -> Option<usize> {
        P2pMatch::member_place(self, peer)
    }
}
