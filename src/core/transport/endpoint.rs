//! STUB: signatures only; being implemented.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use super::{ConfigError, ConnectionStats, DisconnectReason, EndpointConfig, EndpointStats, PeerId};
use crate::core::clock::Micros;

/// Hands out peer ids. Shared (an `Arc`) so that the engine thread can name a
/// connection before the network thread has created it.
#[derive(Debug, Clone, Default)]
pub struct PeerIdAllocator(Arc<AtomicU32>);

impl PeerIdAllocator {
    pub fn next(&self) -> PeerId {
        loop {
            let id = self.0.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
            if id != 0 {
                return id;
            }
        }
    }
}

/// Something the endpoint tells its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The handshake completed (either direction).
    Connected { peer: PeerId, addr: SocketAddr },
    /// The connection ended. Emitted once per peer that was announced or requested.
    Disconnected { peer: PeerId, reason: DisconnectReason },
    /// A whole message arrived. Give `data` back with [`Endpoint::recycle`] to avoid
    /// allocating.
    Message { peer: PeerId, channel: u8, data: Vec<u8> },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("unknown or disconnected peer {0}")]
    UnknownPeer(PeerId),
    #[error("channel {0} is not configured")]
    BadChannel(u8),
    #[error("message of {size} bytes exceeds the limit of {max} for this channel")]
    TooLarge { size: usize, max: usize },
    #[error("send queue full ({queued} bytes queued, limit {limit})")]
    QueueFull { queued: usize, limit: usize },
    #[error("peer id {0} is already in use")]
    PeerIdInUse(PeerId),
}

pub struct Endpoint {}

impl Endpoint {
    pub fn new(_cfg: EndpointConfig, _now: Micros) -> Result<Self, ConfigError> {
        todo!()
    }
    pub fn peer_id_allocator(&self) -> PeerIdAllocator {
        todo!()
    }
    pub fn connect(&mut self, _now: Micros, _addr: SocketAddr) -> Result<PeerId, SendError> {
        todo!()
    }
    pub fn connect_with_id(&mut self, _now: Micros, _addr: SocketAddr, _peer: PeerId) -> Result<(), SendError> {
        todo!()
    }
    pub fn disconnect(&mut self, _now: Micros, _peer: PeerId) {
        todo!()
    }
    pub fn shutdown(&mut self, _now: Micros) {
        todo!()
    }
    pub fn send(&mut self, _peer: PeerId, _channel: u8, _data: &[u8]) -> Result<(), SendError> {
        todo!()
    }
    pub fn flush(&mut self, _now: Micros) {
        todo!()
    }
    pub fn handle_datagram(&mut self, _now: Micros, _from: SocketAddr, _data: &[u8]) {
        todo!()
    }
    pub fn update(&mut self, _now: Micros) {
        todo!()
    }
    pub fn poll_transmit(&mut self, _out: &mut [u8]) -> Option<(SocketAddr, usize)> {
        todo!()
    }
    pub fn poll_event(&mut self) -> Option<Event> {
        todo!()
    }
    pub fn recycle(&mut self, _buf: Vec<u8>) {}
    pub fn next_timeout(&self) -> Option<Micros> {
        todo!()
    }
    pub fn stats(&self, _peer: PeerId) -> Option<ConnectionStats> {
        todo!()
    }
    pub fn endpoint_stats(&self) -> EndpointStats {
        todo!()
    }
    pub fn is_connected(&self, _peer: PeerId) -> bool {
        todo!()
    }
}
