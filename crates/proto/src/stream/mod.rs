//! One tick stream: per-tick data sent over an unreliable channel with redundancy,
//! acknowledgements and resends. Every stream of the crate is one: the relay server's
//! canonical steps to each client, a relay client's inputs to the server, and a P2P
//! peer's inputs to each other peer. Each keeps its own bytes and wire format; this
//! module keeps what was sent and what the receiver holds.
//!
//! - [`SendLedger`], the sending side: one record per tick past the receiver's
//!   cumulative acknowledgement (how many copies went in the current round, when the
//!   last went, whether the receiver said it holds it past a gap). A [`SendPlan`] says
//!   how to send: copies per round, how long after its last copy an unacknowledged tick
//!   starts a new round (or never), and how far past the acknowledgement the receiver
//!   has room. Formats that carry any set of ticks take [`SendLedger::due`] (what must
//!   go, then the redundant copies) and book each tick they sent; formats that carry one
//!   contiguous run per datagram ask [`SendLedger::run`] where the run must start and
//!   book it whole with [`SendLedger::book_run`].
//! - [`ReceiveWindow`], the receiving side: which ticks arrived past the next one
//!   expected, turned into the cumulative acknowledgement and the bitmap of ticks held
//!   past it ([`SACK_BYTES`] bytes: bit `j` of byte `i` is tick `next + 1 + 8i + j`).
//!
//! Numbers from the wire never reach past what the sender knows: acknowledgements are
//! held at a limit the caller gives (the newest tick formed or sent), and bitmap bits
//! beyond it are ignored. Both sides work in rings made up front: nothing allocates per
//! tick or per message.

mod ledger;
mod window;

#[cfg(test)]
mod tests;

pub use ledger::{Reason, SendLedger, SendPlan};
pub use window::{ROOM, ReceiveWindow, SACK_BYTES};
