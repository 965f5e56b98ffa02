//! The engine's side of every session, rollback and relay alike: the tick numbers,
//! the requests a session hands the engine, the ledger of the snapshots the engine
//! holds, and the one contract every session kind keeps ([`Session`]).
//!
//! # Who owns the game state
//! The engine does. The library never holds game state: it emits [`Request`]s that
//! the engine polls and runs in order (`Save`, `Load`, `Advance`, and for forensics,
//! replays and spectators `DumpState` and `Restore`). Each `Save` names a *slot* in
//! `0..session.state_slots()`, so an engine keeps a fixed array of that many
//! snapshots and never allocates per tick; it reports the checksum of each save with
//! `confirm_save(tick, checksum)`. Reasons for this choice over library-owned buffers:
//! - game states are often not flat byte blobs (ECS worlds, pointers, GPU-side data);
//!   engines have their own snapshot strategies (copy-on-write, deltas), and a
//!   library-owned buffer of fixed `state_size` would force a serialisation and a
//!   second memcpy through the ABI on every tick;
//! - the house rule: the engine owns state and simulation, the library owns time,
//!   inputs and bookkeeping;
//! - the library still knows everything it needs: which ticks are saved in which slot,
//!   their checksums, and which slots must be kept for desync forensics.
//!   When it needs bytes (a desync dump, a spectator snapshot), it asks for them
//!   through `DumpState` and the engine hands them over with `provide_state`.
//!
//! # Tick convention
//! `S(t)` is the game state at the *start* of tick `t`. `Save { tick: t }` stores
//! `S(t)`; `Advance { tick: t, .. }` applies tick `t`'s inputs to `S(t)` giving
//! `S(t + 1)`; the checksum of tick `t` is the checksum of `S(t)`.
//!
//! # One loop for every session
//! Once per frame the engine asks the session's clock how many ticks are due. For
//! each due tick it pushes its local inputs, calls [`Session::advance`], then polls
//! [`Session::poll_request`] until `None`, running each request in order. Then it
//! polls [`Session::poll_event`] until `None`. [`Session::current_tick`] is the tick
//! the next `advance` runs, in every session kind.

mod request;
mod sessions;
mod state_ring;

use crate::clock::Micros;
use crate::transport::{Event as NetEvent, PeerId, Transport};

pub(crate) use request::RequestQueue;
pub use request::{AdvanceStatus, InputStatus, Inputs, Request, Tick};
pub use sessions::ServerEventAt;
pub(crate) use state_ring::StateRing;

/// What every session kind offers the engine: advance one tick, hand out its requests
/// in order, report its events. The runtime's engine loop is written once against it.
///
/// Each session keeps the same methods as its own, so a caller that knows the kind
/// needs no import; the trait is for code that drives any of them.
pub trait Session {
    /// What the session reports besides requests.
    type Event;
    /// The tick the next `advance` runs (a rollback's resimulation aside): the next
    /// tick to simulate.
    fn current_tick(&self) -> Tick;
    /// Runs one tick; the requests to poll follow. Every request of the previous
    /// advance must have been polled first.
    fn advance(&mut self) -> AdvanceStatus;
    /// Requests of the last advance not yet polled.
    fn pending_requests(&self) -> usize;
    /// The next request of the last advance, in order.
    fn poll_request(&mut self) -> Option<Request<'_>>;
    /// The next event.
    fn poll_event(&mut self) -> Option<Self::Event>;
}

/// A [`Session`] that talks over a transport: its owner feeds it every transport event
/// and lets it send, and the runtime drives every networked kind (P2P, spectator,
/// relay server and client) through this one shape.
pub trait NetSession: Session {
    /// Takes one transport event; a message's `now` is when its datagram arrived. A
    /// message's buffer goes back to the transport.
    fn on_event<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, event: NetEvent);
    /// Ticks to simulate now.
    fn ticks_due<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) -> u32;
    /// Sends what is due (and dials what it dials); the owner flushes the transport.
    fn send_messages<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T);
    /// The place of the member on `peer` for the session's side channel (messages the
    /// engine sends its peers), the same for every connection that member ever has;
    /// None for a connection that is no member.
    fn member_place(&self, peer: PeerId) -> Option<usize>;
}
