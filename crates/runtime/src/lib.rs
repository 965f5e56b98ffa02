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
//! * `host_config.rs`, `host_event.rs`, `host_error.rs`: what a host is started with
//!   ([`HostConfig`]), what it reports ([`HostEvent`]) and why a call failed
//!   ([`HostError`], [`FullQueue`]).
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
//! * The loop drives the endpoint through proto's `Driver` and `Transport` traits;
//!   `fake_endpoint.rs` (tests only) stands in for it, so that the loop is tested
//!   independently of the real endpoint.

#![warn(missing_docs)]

mod aws_lc_aead;
mod budget;
mod carrier;
mod channel_limits;
mod counted;
mod engine_polls;
mod host;
mod host_config;
mod host_error;
mod host_event;
mod log;
mod os_seed;
mod pool;
mod resolve;
mod recv_batch;
mod rendezvous_server;
mod send_batch;
mod prefetch;
mod service;
mod session;
mod socket;
mod stall_timer;
mod stats_board;
mod system_clock;
mod thread;
mod to_engine;
mod transport;
mod waker;

#[cfg(test)]
mod fake_endpoint;
#[cfg(test)]
mod tests;

pub use aws_lc_aead::aws_lc_aead;
pub use carrier::{Carrier, INBOUND_RING, Incoming, MAX_PUSHED_AGE_US, OUTBOUND_RING, Outgoing};
pub use host::{COMMAND_QUEUE_CAPACITY, Host, SHUTDOWN_WAIT, TraversalSetup};
pub use host_config::{
    DEFAULT_RECEIVE_MODERATION_US, DEFAULT_RECV_BUFFER_BYTES, Direction, HostConfig, aes_gcm_in_hardware,
};
pub use host_error::{FullQueue, HostError};
pub use host_event::HostEvent;
pub use log::{Bounded, LOG_QUEUE_CAPACITY, LogLevel, LogQueue, MAX_RECORD_LEN};
pub use os_seed::os_random_bytes;
pub use prefetch::cpu_prefetch;
pub use rendezvous_server::{RelayRecorder, RendezvousServer};
pub use resolve::{MAX_HOST_NAME_LEN, MAX_PENDING_RESOLUTIONS, Resolution, Target, Ticket, pick};
pub use session::{
    ArgumentError, EngineLoop, MAX_INITIAL_STATE, MAX_MESSAGE_SIZE, MAX_PREDICTION, MAX_QUEUED_MESSAGE_BYTES,
    MAX_REPLAY_SIZE, MAX_UNREAD_MESSAGE_BYTES, MESSAGE_CHANNEL, MessageStats, MessageTarget, NetStats, Networked,
    P2pPeerStats, P2pSession, P2pSessionStats, P2pSettings, PolledRequest, RelayClient, RelayClientSettings,
    RelayClientStats, RelayPlayerStats, RelayServer, RelayServerSettings, RelayServerStats, Rendezvous, ReplayPlayer,
    ReplaySettings, ReplayStats, RequestKind, SessionEvent, SessionFailure, Spectator, SpectatorSettings,
    SpectatorStats, StateError, SyncTest, SyncTestSettings, SyncTestStats, UNREAD_OVERHEAD,
};
pub use thread::RuntimeStats;
