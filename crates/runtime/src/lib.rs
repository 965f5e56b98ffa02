//! The only code that owns a socket and a thread.
//!
//! A [`Host`] is the engine-side handle. [`Host::start`] binds a socket2 UDP socket,
//! builds the core [`Endpoint`](tickwire_proto::Endpoint) around it, driven by
//! `SystemClock` time (`system_clock.rs`, the crate's only read of the clock), and hands
//! both to the process's one network thread, which serves every host (started with the
//! first host, gone with the last). Engine calls never block:
//! commands go to the thread through a bounded crossbeam channel (full = [`HostError::QueueFull`])
//! and events and statistics come back the same way. Sends are also checked against the
//! peer's `send_queue_limit_bytes` on the engine thread, so a send the thread would have
//! to drop is refused at once instead ([`FullQueue::PeerSendQueue`]).
//!
//! Layout, one concept per file:
//! * `host.rs`: the engine side ([`Host`]): synchronous checks, command queue, event
//!   and statistics cache.
//! * `thread.rs`: one host's network core and its turn: socket, endpoint, link
//!   simulators, timers; the direct path the engine's thread runs.
//! * `service.rs`: the one network thread of the process, which waits on every host's
//!   socket and runs the turns that are due; a host's fault stays that host's.
//! * `to_engine.rs`: the bounded way from the thread to the engine (nothing piles up
//!   beside the event channel; what the engine has not taken waits in the endpoint,
//!   per peer, round-robin).
//! * `socket.rs`: socket2 setup (address family, buffer sizes, non-blocking).
//! * `recv_batch.rs`: reading a batch of datagrams per call (`recvmmsg` on Linux).
//! * `waker.rs`: how an engine wakes the sleeping thread for its host (a flag per host
//!   and one self-pipe on unix), and the wait over every host's socket.
//! * `pool.rs`: bounded free-lists that recycle message buffers in both directions.
//! * `log.rs`: the bounded queue of log records for the engine and the per-second
//!   summary of refused datagrams.
//! * `budget.rs`: per-peer send-queue accounting shared by both sides, behind the
//!   synchronous send-queue limit.
//! * `session/`: typed sessions (P2P, synctest, spectator, replay, relay server and
//!   client) driven from the engine thread ([`P2pSession`], [`RelayClient`], ...).
//! * `protocol.rs`: the small trait the loop drives, so the loop can be tested with a
//!   scripted fake before (and independently of) the real endpoint.

#![warn(missing_docs)]

mod budget;
mod engine_polls;
mod host;
mod log;
mod os_seed;
mod pool;
mod resolve;
mod protocol;
mod recv_batch;
mod send_batch;
mod service;
mod session;
mod socket;
mod system_clock;
mod thread;
mod to_engine;
mod transport;
mod waker;

#[cfg(test)]
mod tests;

use std::net::SocketAddr;

use tickwire_proto::{Binding, Credential, DisconnectReason, EndpointConfig, LinkConfig, PeerId};

pub use host::{COMMAND_QUEUE_CAPACITY, Host, SHUTDOWN_WAIT};
pub use log::{Bounded, LOG_QUEUE_CAPACITY, LogLevel, LogQueue, MAX_RECORD_LEN};
pub use os_seed::os_random_bytes;
pub use resolve::{MAX_HOST_NAME_LEN, MAX_PENDING_RESOLUTIONS, Resolution, Target, Ticket, pick};
pub use session::{
    EngineLoop, MAX_INITIAL_STATE, MAX_MESSAGE_SIZE, MAX_PREDICTION, MAX_QUEUED_MESSAGE_BYTES, MAX_REPLAY_SIZE,
    MAX_UNREAD_MESSAGE_BYTES, MESSAGE_CHANNEL, MessageStats, MessageTarget, NetStats, Networked, P2pPeerStats,
    P2pSession, P2pSessionStats, P2pSettings, PolledRequest, RelayClient, RelayClientSettings, RelayClientStats,
    RelayPlayerStats, RelayServer, RelayServerSettings, RelayServerStats, ReplayPlayer, ReplaySettings, ReplayStats,
    RequestKind, SessionEvent, SessionFailure, Spectator, SpectatorSettings, SpectatorStats, SyncTest,
    SyncTestSettings, SyncTestStats, UNREAD_OVERHEAD,
};
pub use thread::RuntimeStats;

/// Which way a link simulator applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Datagrams this host sends.
    Outbound,
    /// Datagrams this host receives.
    Inbound,
}

/// Configuration of a [`Host`].
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The transport configuration handed to the endpoint. A `seed` of 0 is replaced by
    /// OS randomness (cookie secrets and salts must not be predictable on a real network).
    pub endpoint: EndpointConfig,
    /// Address to bind (IPv4 or IPv6; port 0 picks a free port). The socket's family
    /// follows this address; an IPv6 socket keeps the OS default for dual-stack.
    /// Ignored but for its port when `dual_stack` is set.
    pub bind: SocketAddr,
    /// Bind `[::]` with IPV6_V6ONLY off (reaching IPv4 and IPv6 peers), on `bind`'s
    /// port; where the system cannot, `0.0.0.0` on that port. What an empty bind
    /// address means in the C ABI. Default false.
    pub dual_stack: bool,
    /// SO_RCVBUF in bytes; 0 keeps the OS default.
    pub recv_buffer_bytes: usize,
    /// SO_SNDBUF in bytes; 0 keeps the OS default.
    pub send_buffer_bytes: usize,
    /// Link simulator applied to datagrams this host sends (None = off).
    pub outbound_sim: Option<LinkConfig>,
    /// Link simulator applied to datagrams this host receives (None = off).
    pub inbound_sim: Option<LinkConfig>,
    /// Seed for the simulators (0 = from the OS).
    pub sim_seed: u64,
    /// If non-zero the network thread also flushes on its own at this interval, for
    /// engines that never call flush. 0 = only explicit flushes.
    pub auto_flush_interval_us: u64,
    /// Receive moderation, in microseconds (default [`DEFAULT_RECEIVE_MODERATION_US`]):
    /// once a host has many connections (8 or more), after its network thread has
    /// read datagrams it leaves the socket alone this long, so that the datagrams of
    /// many peers are read in one batch instead of each waking the thread (a server of
    /// 64 clients at 60 Hz: a few wakes per tick instead of 64). What arrives
    /// meanwhile is read by the engine's own poll if it comes first. The same holds
    /// for any host while its engine polls: for this long after each poll that read
    /// the socket, the network thread leaves the socket to the engine's next poll
    /// rather than waking for every datagram (a busy-polled round trip on loopback
    /// was half wakeups), and beside an engine that keeps polling all through that
    /// time (a busy poller) for twice as long at each of its turns, up to 16 ms, until
    /// a turn finds the engine stopped. Each datagram's arrival time is the kernel's receive
    /// timestamp, so round-trip times and the time sync do not see the wait (the
    /// socket asks for them, `SO_TIMESTAMPNS`, when the host first gets that busy;
    /// moderation begins 10 ms later). Acknowledgements and resends are handled up to
    /// this much later. Only on Linux (the timestamps); 0 turns it off.
    pub receive_moderation_us: u64,
}

/// [`HostConfig::receive_moderation_us`]'s default: 1 ms on Linux, a sixteenth of a
/// 60 Hz tick; 0 (off) elsewhere, where datagrams carry no kernel receive timestamp
/// and a late read would make a late arrival time.
pub const DEFAULT_RECEIVE_MODERATION_US: u64 = if cfg!(target_os = "linux") { 1_000 } else { 0 };

impl HostConfig {
    /// A configuration with the default endpoint, no simulators, OS buffer sizes and
    /// explicit flushes only, bound to `bind`.
    pub fn new(bind: SocketAddr) -> Self {
        HostConfig {
            endpoint: EndpointConfig::default(),
            bind,
            dual_stack: false,
            recv_buffer_bytes: 0,
            send_buffer_bytes: 0,
            outbound_sim: None,
            inbound_sim: None,
            sim_seed: 0,
            auto_flush_interval_us: 0,
            receive_moderation_us: DEFAULT_RECEIVE_MODERATION_US,
        }
    }
}

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
