//! Connections over unreliable datagrams: a stateless-cookie handshake, keepalive and
//! timeout, three delivery kinds, batching with an explicit flush, fragmentation of
//! reliable messages, and per-connection statistics.
//!
//! [`Endpoint`] is a pure state machine in the quinn-proto / renet style: feed it
//! datagrams with [`Endpoint::handle_datagram`], drive timers with [`Endpoint::update`],
//! and drain [`Endpoint::poll_transmit`] and [`Endpoint::poll_event`].
//!
//! Whatever a peer sends, what it can make the endpoint hold is bounded: every datagram
//! of an established connection is charged to the peer's budget ([`PeerLimits`]:
//! messages per datagram, messages and bytes a second) before anything is delivered;
//! messages wait for the owner in one queue per peer, bounded in bytes and served
//! round-robin; a received message's buffer is sized to it. A peer that keeps going
//! over its budget is dropped with [`DisconnectReason::Flooding`].

mod acks;
mod budget;
mod config;
mod connection;
mod endpoint;
mod estimators;
mod inbox;
mod link;
mod pool;
mod reliable;
mod stats;

pub use config::{
    CHANNEL_RELIABLE, CHANNEL_SEQUENCED, CHANNEL_UNRELIABLE, ChannelKind, ConfigError, EndpointConfig, MAX_CHANNELS,
    MAX_FRAMES_PER_DATAGRAM, PeerLimits,
};
pub use connection::MAX_UNRELIABLE;
pub use endpoint::{COOKIE_LIFETIME_US, Endpoint, Event, MAX_ACK_DELAY_US, PeerIdAllocator, SendError};
pub use link::Transport;
pub use pool::SMALL_BUFFER;
pub use reliable::MAX_UNFRAGMENTED;
pub use stats::{ConnectionStats, EndpointStats};

/// Identifies a connection on one endpoint. Never 0; never reused while the endpoint lives.
pub type PeerId = u32;

/// Why a connection ended. Numbers are part of the wire format and the C ABI: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DisconnectReason {
    /// The client (the side that initiated the connection) closed it.
    Client = 1,
    /// The server (the side that accepted the connection) closed it or shut down.
    Server = 2,
    /// Nothing was heard from the peer for the configured timeout (or the handshake
    /// never completed).
    Timeout = 3,
    /// The server removed this client.
    Kicked = 4,
    /// The two sides speak different protocol versions.
    VersionMismatch = 5,
    /// The server has no free slot.
    ServerFull = 6,
    /// The peer broke the protocol (for example an oversized reliable message).
    ProtocolError = 7,
    /// The peer kept sending far more than its budget (messages or bytes a second,
    /// messages per datagram: [`PeerLimits`]); it was throttled, then dropped.
    Flooding = 8,
}

impl DisconnectReason {
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::Client,
            2 => Self::Server,
            3 => Self::Timeout,
            4 => Self::Kicked,
            5 => Self::VersionMismatch,
            6 => Self::ServerFull,
            7 => Self::ProtocolError,
            8 => Self::Flooding,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Client => "client disconnected",
            Self::Server => "server disconnected",
            Self::Timeout => "timed out",
            Self::Kicked => "kicked",
            Self::VersionMismatch => "protocol version mismatch",
            Self::ServerFull => "server full",
            Self::ProtocolError => "protocol error",
            Self::Flooding => "flooding: over its traffic budget",
        }
    }
}
