//! The only code that owns a socket and a thread. STUB: API contract only.
//!
//! A [`Host`] is the engine-side handle. `Host::start` binds a socket2 UDP socket and
//! spawns one network thread that owns it and the core [`Endpoint`](crate::core::transport::Endpoint).
//! Engine calls never block: commands go to the thread through crossbeam channels and
//! events come back the same way.

use std::net::SocketAddr;

use crate::core::netsim::LinkConfig;
use crate::core::transport::{ConnectionStats, DisconnectReason, EndpointConfig, EndpointStats, PeerId};

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
    pub endpoint: EndpointConfig,
    /// Address to bind (IPv4 or IPv6; port 0 picks a free port).
    pub bind: SocketAddr,
    /// SO_RCVBUF / SO_SNDBUF in bytes; 0 keeps the OS default.
    pub recv_buffer_bytes: usize,
    pub send_buffer_bytes: usize,
    /// Link simulators applied to datagrams sent and received (None = off).
    pub outbound_sim: Option<LinkConfig>,
    pub inbound_sim: Option<LinkConfig>,
    /// Seed for the simulators (0 = from the OS).
    pub sim_seed: u64,
    /// If non-zero the network thread also flushes on its own at this interval, for
    /// engines that never call flush. 0 = only explicit flushes.
    pub auto_flush_interval_us: u64,
}

/// What the engine side polls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostEvent {
    Connected { peer: PeerId, addr: SocketAddr },
    Disconnected { peer: PeerId, reason: DisconnectReason },
    Message { peer: PeerId, channel: u8, data: Vec<u8> },
    /// The network thread died (panic or socket failure). The host is unusable.
    Fatal { message: String },
}

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{0}")]
    Config(String),
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    #[error("unknown or disconnected peer {0}")]
    UnknownPeer(PeerId),
    #[error("channel {0} is not configured")]
    BadChannel(u8),
    #[error("message of {size} bytes exceeds the limit of {max}")]
    TooLarge { size: usize, max: usize },
    #[error("command queue to the network thread is full")]
    QueueFull,
    #[error("the network thread has stopped: {0}")]
    ThreadGone(String),
}

pub struct Host {}

impl Host {
    pub fn start(_cfg: HostConfig) -> Result<Host, HostError> {
        todo!()
    }
    pub fn local_addr(&self) -> SocketAddr {
        todo!()
    }
    pub fn connect(&mut self, _addr: SocketAddr) -> Result<PeerId, HostError> {
        todo!()
    }
    pub fn send(&mut self, _peer: PeerId, _channel: u8, _data: &[u8]) -> Result<(), HostError> {
        todo!()
    }
    pub fn flush(&mut self) -> Result<(), HostError> {
        todo!()
    }
    pub fn disconnect(&mut self, _peer: PeerId) -> Result<(), HostError> {
        todo!()
    }
    pub fn poll_event(&mut self) -> Option<HostEvent> {
        todo!()
    }
    pub fn recycle(&mut self, _buf: Vec<u8>) {}
    pub fn stats(&mut self, _peer: PeerId) -> Option<ConnectionStats> {
        todo!()
    }
    pub fn endpoint_stats(&mut self) -> EndpointStats {
        todo!()
    }
    pub fn set_link_sim(&mut self, _dir: Direction, _cfg: Option<LinkConfig>) -> Result<(), HostError> {
        todo!()
    }
}
