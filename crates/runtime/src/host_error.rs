//! Why a [`Host`](crate::Host) call failed, and which queue refused it.

use tickwire_proto::PeerId;

use crate::resolve::MAX_PENDING_RESOLUTIONS;
#[cfg(doc)]
use crate::{COMMAND_QUEUE_CAPACITY, Host, HostEvent, MAX_QUEUED_MESSAGE_BYTES, P2pSession};

/// Which queue refused a call with [`HostError::QueueFull`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FullQueue {
    /// The command queue to the network thread holds [`COMMAND_QUEUE_CAPACITY`]
    /// commands. It drains as soon as the thread runs (a flush wakes it).
    #[error("command queue to the network thread is full")]
    Commands,
    /// Accepting the message could take the peer's send queue over
    /// `EndpointConfig::send_queue_limit_bytes`. The queue holds messages not yet
    /// flushed, reliable messages not yet acknowledged, and sends still on their way to
    /// the network thread; it drains as the peer acknowledges. Refusing here is what
    /// keeps the network thread from ever dropping an accepted message.
    #[error(
        "send queue to peer {peer} is full: {pending} bytes queued or on their way + {size} > send_queue_limit_bytes {limit}"
    )]
    PeerSendQueue {
        /// The peer the message was for.
        peer: PeerId,
        /// Bytes already queued for the peer (an upper bound; exact once the thread
        /// has caught up).
        pending: u64,
        /// The refused message's size in bytes.
        size: usize,
        /// The configured limit in bytes.
        limit: usize,
    },
    /// A session message ([`P2pSession::send_message`] and the others) could take the
    /// peer's send queue, every channel counted, over
    /// [`MAX_QUEUED_MESSAGE_BYTES`]: the side channel waits until the peer has
    /// acknowledged what is queued, so that it never crowds out the game's traffic.
    #[error(
        "send queue to peer {peer} is too full for a session message: {pending} bytes queued or on their way + \
         {size} > {limit}"
    )]
    MessageQueue {
        /// The peer the message was for.
        peer: PeerId,
        /// Bytes already queued for the peer (an upper bound).
        pending: u64,
        /// The refused message's size in bytes.
        size: usize,
        /// The side channel's limit in bytes ([`MAX_QUEUED_MESSAGE_BYTES`]).
        limit: usize,
    },
    /// [`MAX_PENDING_RESOLUTIONS`] host names are already being looked up; retry once
    /// their connections (or failures) have been reported.
    #[error("too many host names are being looked up at once (at most {MAX_PENDING_RESOLUTIONS})")]
    Resolutions,
    /// [`MAX_PROBES`](tickwire_proto::MAX_PROBES) reflexive address probes
    /// ([`Host::discover_reflexive`](crate::Host::discover_reflexive)) are already in
    /// flight; retry once some have answered.
    #[error("too many reflexive address probes in flight (at most {})", tickwire_proto::MAX_PROBES)]
    Probes,
}

/// Why a [`Host`] call failed. Nothing here means the call blocked or partly happened:
/// a failed call had no effect.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The configuration was rejected before anything was started.
    #[error("{0}")]
    Config(String),
    /// An operating-system call failed; `context` names the operation and address.
    #[error("{context}: {source}")]
    Io {
        /// The operation, with the address involved.
        context: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The peer was never connected, or the engine has already seen it disconnect (or
    /// asked for the disconnect itself).
    #[error("unknown or disconnected peer {0}")]
    UnknownPeer(PeerId),
    /// The channel id is outside the configured channel layout.
    #[error("channel {0} is not configured")]
    BadChannel(u8),
    /// The message is larger than its channel allows.
    #[error("message of {size} bytes exceeds the limit of {max}")]
    TooLarge {
        /// The message's size in bytes.
        size: usize,
        /// The channel's limit in bytes.
        max: usize,
    },
    /// A queue between the engine and the wire is full (which one, and by how much, is
    /// in the [`FullQueue`]). Nothing was queued; try again on a later frame, after a
    /// flush.
    #[error("{0}")]
    QueueFull(FullQueue),
    /// The network thread has stopped (after a [`HostEvent::Fatal`]).
    #[error("the network thread has stopped: {0}")]
    ThreadGone(String),
}
