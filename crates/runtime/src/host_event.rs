//! What a [`Host`](crate::Host) reports to the engine.

use std::net::SocketAddr;

use tickwire_proto::{Binding, Credential, DisconnectReason, PeerId};

#[cfg(doc)]
use crate::{Host, HostError};

/// What the engine side polls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostEvent {
    /// A connection is established (a client's own `connect`, or an accepted client).
    Connected {
        /// The id `connect` returned, or a new id for an accepted client.
        peer: PeerId,
        /// The peer's address as this socket sees it.
        addr: SocketAddr,
        /// What the peer proved in its handshake (a secret's class, a connect token's
        /// identity): who it is, which its address does not tell.
        credential: Credential,
        /// Who both ends are, if the initiator bound them ([`Host::connect_bound`]; the
        /// responder checked its own id).
        binding: Option<Binding>,
    },
    /// A connection ended; the peer id is never reused. Messages to the peer that were
    /// still queued or unacknowledged are lost with the connection.
    ///
    /// Reason [`DisconnectReason::ProtocolError`] also covers a connection this host
    /// closed because its endpoint refused a message [`Host::send`] had accepted. The
    /// synchronous checks of `send` make that unreachable; it is the network thread's
    /// last line of defence, so that an accepted reliable message is never dropped
    /// without the engine hearing of it (the stream to the peer would have a gap).
    Disconnected {
        /// The peer that is gone.
        peer: PeerId,
        /// Who ended it, or why.
        reason: DisconnectReason,
    },
    /// A whole message arrived. Give `data` back with [`Host::recycle`] so the network
    /// thread can reuse the allocation.
    Message {
        /// The sender.
        peer: PeerId,
        /// The channel it was sent on.
        channel: u8,
        /// The payload, owned by the engine now.
        data: Vec<u8>,
        /// When the network thread took the message off the wire, on the
        /// [`Host::now_us`] timeline: time-sync measurements use this rather than the
        /// moment the engine polled it, which may be a frame (or a hitch) later.
        received_at: tickwire_proto::Micros,
    },
    /// The network thread died (panic or socket failure). The host is unusable: every
    /// later call returns [`HostError::ThreadGone`].
    Fatal {
        /// What happened, for logs.
        message: String,
    },
}
