//! [`Session`] for the six session kinds: each delegates to its own methods of the same
//! names, which stay callable without the trait.

use super::{AdvanceStatus, Request, Session, Tick};
use crate::relay::relay_client_session::{ClientSessionEvent, RelayClientSession};
use crate::relay::relay_server_session::{RelayServerSession, ServerSessionEvent};
use crate::rollback::{Event as RollbackEvent, P2pSession, ReplaySession, SpectatorSession, SyncTestSession};

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
