//! What a [`Session`](super::Session) tells the engine: the rollback core's events plus
//! the session's own (connections, the network thread's death).

use crate::core::rollback::Event;
use crate::core::transport::PeerId;

/// A polled session event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEvent {
    /// An event of the rollback core (synchronized, interrupted, desync, ...).
    Core(Event),
    /// The connection to a remote player's peer, a spectator or the watched host is up.
    PeerConnected {
        /// The connection.
        peer: PeerId,
        /// The lowest player index behind it (None for spectators and the watched host).
        player: Option<usize>,
    },
    /// The session refused a connection from an address it does not expect.
    ConnectionRejected {
        /// The refused connection (already closed).
        peer: PeerId,
    },
    /// The network thread died: the session is unusable; destroy it.
    Fatal(String),
}
