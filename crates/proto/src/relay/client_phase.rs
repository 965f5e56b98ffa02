//! Where a relay client stands with its server: one enum whose phases carry what only
//! they need (the connection, the Welcome's snapshot, the retry schedule), instead of
//! flags whose combinations had to be kept consistent by hand.
//!
//! ```text
//! Idle -connect-> Connecting -transport up-> Joining -Welcome-> Welcomed
//!   -advance restores-> CatchingUp -caught up-> Playing
//! CatchingUp | Playing -resync-> Joining (same connection, new snapshot)
//! any connected phase -drop, transient reason, within the window-> Retrying
//!   -backoff elapsed-> Connecting
//! otherwise -> Lost
//! ```

use crate::clock::Micros;
use crate::engine::Tick;
use crate::transport::{DisconnectReason, PeerId};

/// A run of reconnect attempts after a drop (or after a first join that failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Reattempt {
    /// When the connection first dropped: the reconnect window runs from here.
    pub(super) since: Micros,
    /// Attempts made so far in this run.
    pub(super) attempt: u32,
    /// Whether the client had a slot (a token) when it dropped: a Welcome then means
    /// it is back, not new.
    pub(super) had_slot: bool,
}

/// The client's phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Phase {
    /// `connect` not called yet.
    Idle,
    /// The transport handshake is under way.
    Connecting { peer: PeerId, retry: Option<Reattempt> },
    /// Connected: the Hello goes out (until `hello_sent`), the Welcome is awaited.
    Joining { peer: PeerId, hello_sent: bool, retry: Option<Reattempt> },
    /// The Welcome arrived: its snapshot is restored at the next `advance`.
    Welcomed { peer: PeerId, tick: Tick, state: Vec<u8>, retry: Option<Reattempt> },
    /// Restored: canonical steps are applied until caught up.
    CatchingUp { peer: PeerId },
    /// Caught up: the engine sees predicted ticks.
    Playing { peer: PeerId },
    /// Dropped for a reason worth retrying: the next attempt is at `at`.
    Retrying { at: Micros, retry: Reattempt, reason: DisconnectReason },
    /// Gone for good.
    Lost,
}

impl Phase {
    /// The connection to the server, in the phases that have one.
    pub(super) fn peer(&self) -> Option<PeerId> {
        match *self {
            Phase::Connecting { peer, .. }
            | Phase::Joining { peer, .. }
            | Phase::Welcomed { peer, .. }
            | Phase::CatchingUp { peer }
            | Phase::Playing { peer } => Some(peer),
            Phase::Idle | Phase::Retrying { .. } | Phase::Lost => None,
        }
    }

    /// The reconnect run this connection belongs to, if any.
    pub(super) fn reattempt(&self) -> Option<Reattempt> {
        match *self {
            Phase::Connecting { retry, .. } | Phase::Joining { retry, .. } | Phase::Welcomed { retry, .. } => retry,
            _ => None,
        }
    }
}

/// Reasons worth another attempt: silence, a full server (a slot may free up), a
/// broken message (a corrupted datagram looks the same as a bug), our connect token
/// or client id still held by our previous connection (the server frees it when that
/// one times out), and, for a client that holds a slot, a kick by the server's sync layer (its
/// input queue overflowed or starved, or it asked for snapshots too often): the slot
/// waits for its token, and it starts again from a snapshot. A server that runs
/// another version, refused our credentials or our security setting, or shut down
/// would answer the same again, and so would the refusal that could not be
/// authenticated (`DeniedUnverified`, which stands for those: it was tried until the
/// connect timeout already); an expired token needs a new one from the backend; a
/// kick by the server's engine (`KickedByEngine`, its slot freed) and a close of our
/// own are final.
pub(super) fn is_transient(reason: DisconnectReason, had_slot: bool) -> bool {
    match reason {
        DisconnectReason::Timeout
        | DisconnectReason::ServerFull
        | DisconnectReason::ProtocolError
        | DisconnectReason::TokenInUse
        | DisconnectReason::ClientIdInUse => true,
        DisconnectReason::Kicked => had_slot,
        _ => false,
    }
}

/// The first retry after a drop goes at once (a timeout already waited); later
/// ones back off, doubling from 250 ms to at most 4 s, so that a full server is
/// not hammered by every client it turned away.
pub(super) fn backoff_us(attempt: u32) -> Micros {
    const FIRST_US: Micros = 250_000;
    const MAX_US: Micros = 4_000_000;
    match attempt {
        0 => 0,
        n => (FIRST_US << (n - 1).min(8)).min(MAX_US),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let d: Vec<Micros> = (0..8).map(backoff_us).collect();
        assert_eq!(d, [0, 250_000, 500_000, 1_000_000, 2_000_000, 4_000_000, 4_000_000, 4_000_000]);
        assert_eq!(backoff_us(u32::MAX), 4_000_000);
    }

    #[test]
    fn only_transient_reasons_are_retried() {
        use DisconnectReason::*;
        for r in [Timeout, ServerFull, ProtocolError, TokenInUse, ClientIdInUse] {
            assert!(is_transient(r, false) && is_transient(r, true), "{r:?}");
        }
        assert!(is_transient(Kicked, true) && !is_transient(Kicked, false), "a kick is retried with a slot's token");
        for r in [
            Client,
            Server,
            VersionMismatch,
            SecurityMismatch,
            AuthFailed,
            TokenExpired,
            Replaced,
            KickedByEngine,
            DeniedUnverified,
        ] {
            assert!(!is_transient(r, false) && !is_transient(r, true), "{r:?}");
        }
    }
}
