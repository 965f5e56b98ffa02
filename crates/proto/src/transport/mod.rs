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
//!
//! Every connection is encrypted and authenticated unless both ends chose
//! [`Security::InsecurePlaintext`]: ephemeral X25519 once the cookie has proven the
//! client's address, then ChaCha20-Poly1305 per packet with a key per direction, the
//! packet's sequence number as nonce and its header as associated data, and a replay
//! window (`crypto.rs`). Over a carrier that authenticates the remote and encrypts
//! (Steam, EOS), both ends may choose [`PacketProtection::Carrier`]: the handshake
//! runs whole, and packets then go without our AEAD, as plaintext ones are framed.
//! Who may connect is the endpoint's [`Admission`]: anyone, holders of a match secret,
//! or holders of a connect token ([`token`]).

mod acks;
mod budget;
mod config;
mod connection;
mod connections;
mod credential;
mod crypto;
mod dial;
mod endpoint;
#[cfg(test)]
mod endpoint_tests;
mod handshake;
mod head_queue;
mod estimators;
mod inbox;
mod link;
mod packet_aead;
mod prefetch;
mod peer_map;
mod pool;
mod reliable;
mod remote;
mod security;
mod sent_ring;
mod stats;
mod timers;
mod transmits;
pub mod token;

pub use config::{
    CHANNEL_RELIABLE, CHANNEL_SEQUENCED, CHANNEL_UNRELIABLE, ChannelKind, ConfigError, EndpointConfig, MAX_CHANNELS,
    MAX_FRAMES_PER_DATAGRAM, PeerLimits, UnreliableAcks,
};
pub(crate) use connection::UNRELIABLE_FRAME_OVERHEAD;
pub use connection::{ACK_EVERY_UNRELIABLE, MAX_UNRELIABLE, max_unreliable_for};
pub use credential::{Binding, Credential, Proven, TokenIdentity};
pub(crate) use crypto::SecretRng;
pub use crypto::{KEY_SIZE, Secret};
pub use endpoint::{COOKIE_LIFETIME_US, Endpoint, Event, MAX_ACK_DELAY_US, PeerIdAllocator, SendError};
pub use link::{Driver, Transport};
pub use packet_aead::{AeadProvider, NONCE_SIZE, PacketAead, ProvidedAead, builtin_aead};
pub use peer_map::{PeerIdHasher, PeerMap, peer_map};
pub use pool::SMALL_BUFFER;
pub use prefetch::Prefetch;
pub use reliable::MAX_UNFRAGMENTED;
pub use remote::{AddressText, REMOTE_PORT, RemoteId, parse_address};
pub use security::{Admission, PacketProtection, Presented, Security, TokenAdmission};
pub use stats::{ConnectionStats, EndpointStats, LossCounts};

/// Identifies a connection on one endpoint. Never 0, and never two live connections'
/// at once: ids are handed out in sequence, and only after 2^32 of them does one come
/// round again (skipping any a live connection holds).
pub type PeerId = u32;

/// Why a connection ended. Numbers are part of the wire format and the C ABI: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DisconnectReason {
    /// The client (the side that initiated the connection) closed it on purpose: it
    /// disconnected or shut down and said so. A relay server frees the player's slot at
    /// once (a timeout keeps it for the player to come back).
    Client = 1,
    /// The server (the side that accepted the connection) closed it or shut down.
    Server = 2,
    /// Nothing was heard from the peer for the configured timeout (or the handshake
    /// never completed).
    Timeout = 3,
    /// The server removed this client. A relay client that held a slot reconnects
    /// with its token within its reconnect window (the slot waits for it).
    Kicked = 4,
    /// The two sides speak different protocol versions.
    VersionMismatch = 5,
    /// The server has no free slot, or (an authenticated refusal of a handshake) this
    /// address or connect-token client id was dropped for flooding or breaking the
    /// protocol and waits out a backoff (1 s, doubling per repeat, up to 60 s): try
    /// again later either way.
    ServerFull = 6,
    /// The peer broke the protocol (for example an oversized reliable message).
    ProtocolError = 7,
    /// The peer kept sending far more than its budget (messages or bytes a second,
    /// messages per datagram: [`PeerLimits`]); it was throttled, then dropped.
    Flooding = 8,
    /// The two ends chose different protections (insecure plaintext, our AEAD, or the
    /// carrier's: [`PacketProtection`]): both must choose the same.
    SecurityMismatch = 9,
    /// The handshake did not prove what the other end requires: a wrong or missing
    /// match secret, or a connect token that is forged, for another server address or
    /// another game.
    AuthFailed = 10,
    /// The connect token has expired: ask the backend for a new one.
    TokenExpired = 11,
    /// The connect token is already in use by a live connection (one at a time).
    TokenInUse = 12,
    /// A new connection from the same address replaced this one (the peer restarted,
    /// or dialled again after losing this connection): the peer did not close it. Seen
    /// by the side that accepted both; never sent.
    Replaced = 13,
    /// The engine at the other end removed this peer on purpose: a relay server's
    /// engine kicked this client, or a P2P peer's engine dropped this one. Final: a
    /// relay client does not reconnect, and its slot is freed.
    KickedByEngine = 14,
    /// The address was a host name that gave no usable address: the lookup failed
    /// (no such name, no DNS), or the name has only addresses of the other family
    /// than the socket's. Seen by the side that dialled; never sent (nothing was).
    ResolveFailed = 15,
    /// Another live connection holds a connect token for the same client id (the
    /// same player in the game's backend): one connection per player at a time.
    ClientIdInUse = 16,
    /// The handshake was refused by a `Denied` that could not be authenticated (it
    /// answered no proof of ours, so anyone on the path could have sent it), and went
    /// on until the connect timeout without being accepted. Its stated reason is a
    /// hint, never a fact: `Endpoint::unverified_denial`. Seen by the dialling side
    /// only; never sent.
    DeniedUnverified = 17,
    /// A P2P peer kept the match's confirmed ticks below the progress floor (half the
    /// tick rate) for the disconnect timeout while still talking: its inputs held
    /// everyone back. Raised by the P2P session and told to that peer.
    NoProgress = 18,
}

impl DisconnectReason {
    /// The reason with this wire code, if any.
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
            9 => Self::SecurityMismatch,
            10 => Self::AuthFailed,
            11 => Self::TokenExpired,
            12 => Self::TokenInUse,
            13 => Self::Replaced,
            14 => Self::KickedByEngine,
            16 => Self::ClientIdInUse,
            18 => Self::NoProgress,
            _ => return None,
        })
    }
    /// A short description, for logs and errors.
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
            Self::SecurityMismatch => {
                "security mismatch: the ends chose different protections (insecure plaintext, AEAD packets, carrier-protected packets)"
            }
            Self::AuthFailed => "authentication failed: wrong or missing match secret or connect token",
            Self::TokenExpired => "connect token expired",
            Self::TokenInUse => "connect token already in use by another connection",
            Self::Replaced => "replaced by a new connection from the same address",
            Self::KickedByEngine => "removed on purpose by the engine at the other end",
            Self::ResolveFailed => "the host name gave no usable address",
            Self::ClientIdInUse => "another connection holds a connect token for the same client id",
            Self::DeniedUnverified => "refused by an unauthenticated denial (its stated reason may be forged)",
            Self::NoProgress => "held the match below the progress floor while still talking",
        }
    }
}
