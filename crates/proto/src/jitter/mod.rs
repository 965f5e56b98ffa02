//! The server's input jitter buffer for one client (seeds 001 and 003).
//!
//! Inputs carry the client's tick. Every server tick consumes exactly one step when
//! the next one is there. The buffer keeps Hypersomnia's ledger of *accepted counts*:
//! - `1`: the next input was there (or is missing and was substituted: lost for good,
//!   or late under a substituting [`LatePolicy`]);
//! - `0`: underflow: nothing arrived in time, a substitute (repeat or empty) is used and
//!   the client's input will be consumed one tick later;
//! - `k > 1`: `k` steps were merged into this tick: a pile-up beyond the queue's usual
//!   span, or a wait that turned out to be for lost inputs, taken back at once.
//!
//! What a missing input costs depends on the [`LatePolicy`]. The default substitutes an
//! input that is merely late (one step, no slip of the client's stream) and waits only
//! when the stream itself is late (a latency step, a hitch), where substituting would
//! cost a step per tick until the client's lead has caught up; from a client that
//! sends every tick (its uplink loses packets) it substitutes longer silences, which
//! are then mostly bursts of loss.
//!
//! A client that pops the accepted count from its queue of predicted inputs stays in
//! step with the server without any clock being exchanged. Each input's *arrival
//! margin* (ticks between its arrival and the tick that consumes it; negative = late)
//! is recorded for the client's lead controller.

mod buffer;
mod config;
mod step;
#[cfg(test)]
mod tests;

pub use buffer::JitterBuffer;
pub use config::{JitterConfig, LOSSY_SUBSTITUTE_RUN, LatePolicy, UnderflowPolicy};
pub use step::{JitterStats, KickReason, PushOutcome, Step, StepKind};
