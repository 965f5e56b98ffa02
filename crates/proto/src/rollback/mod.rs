//! GGPO-style rollback, sans-IO: input queues with prediction, request generation,
//! saved-tick bookkeeping with checksums, and the sessions built on them (P2P,
//! synctest, replay, spectator).
//!
//! The engine's side of every session (who owns the game state, the tick convention,
//! the requests) is in [`crate::engine`].
//!
//! # Wire format
//! See [`message`]: one compact message per peer per tick carrying the redundant
//! unacknowledged inputs (XOR against the previous tick, then run-length coded), the
//! ack of the receiver's inputs, the sender's tick and frame advantage, the agreed
//! disconnect ticks, and checksums of confirmed ticks.

#![warn(missing_docs)]

pub(crate) mod desync;
mod event;
mod input_queue;
pub(crate) mod message;
pub(crate) mod p2p;
mod p2p_match;
mod replay;
mod spectator;
mod spectator_match;
mod synctest;
mod timesync;

pub use desync::DesyncDump;
pub use event::Event;
pub use p2p::{P2pConfig, P2pSession, PlayerKind, SessionError};
pub use p2p_match::{MatchEvent, P2pMatch, RosterError, canonical_addr, dialable};
pub use replay::{Replay, ReplayError, ReplayRecorder, ReplaySession};
pub use spectator::{SpectatorConfig, SpectatorSession};
pub use spectator_match::SpectatorMatch;
pub use synctest::{SyncTestSession, SyncTestState};

/// How remote inputs are guessed when they have not arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PredictionMode {
    /// Repeat the player's last confirmed input (buttons held stay held).
    RepeatLast,
    /// Predict all-zero input.
    Zero,
}

/// FNV-1a 64, a convenient checksum for engines and tests. Any u64 the engine
/// computes deterministically works; the library only compares them.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    fnv1a64_extend(FNV1A64_START, bytes)
}

/// FNV-1a 64 of nothing: where a running [`fnv1a64_extend`] starts.
pub(crate) const FNV1A64_START: u64 = 0xcbf2_9ce4_8422_2325;

/// Continues the FNV-1a 64 `h` with `bytes`: `fnv1a64(a ++ b)` is
/// `fnv1a64_extend(fnv1a64(a), b)`, so a digest can grow tick by tick.
pub(crate) fn fnv1a64_extend(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
