//! What a session needs from whatever carries its messages.
//!
//! Sessions (relay server and client, P2P, spectator) are written against this trait
//! rather than [`Endpoint`] so that the same code runs on the engine thread over the
//! runtime's network thread (`runtime::Host`), in the deterministic simulator over a
//! bare endpoint, and in tests over a scripted fake.

use std::net::SocketAddr;

use super::{Binding, ConnectionStats, DisconnectReason, Endpoint, PeerId, SendError};
use crate::clock::Micros;

/// Connections and messages, as a session uses them. Incoming traffic is not part of
/// the trait: the owner drains its own events and feeds them to the session (with
/// the time each message arrived), because a session may share the transport.
pub trait Transport {
    /// Starts connecting to `addr`; the returned peer may be sent to at once.
    fn connect(&mut self, now: Micros, addr: SocketAddr) -> Result<PeerId, SendError> {
        self.connect_bound(now, addr, None)
    }
    /// Like [`Transport::connect`], binding who both ends are into the handshake
    /// ([`Binding`]): the other end must have `binding.responder` as its own id
    /// ([`Transport::set_local_id`]), or it refuses the handshake.
    fn connect_bound(&mut self, now: Micros, addr: SocketAddr, binding: Option<Binding>) -> Result<PeerId, SendError>;
    /// Our own id in handshakes bound to us; None refuses every bound handshake.
    fn set_local_id(&mut self, id: Option<u32>);
    /// Closes the connection to `peer` (unknown peers are ignored).
    fn disconnect(&mut self, now: Micros, peer: PeerId);
    /// Closes the connection to `peer`, telling it `reason` (a transport that cannot
    /// carry one closes it plainly).
    fn disconnect_with(&mut self, now: Micros, peer: PeerId, reason: DisconnectReason) {
        let _ = reason;
        self.disconnect(now, peer);
    }
    /// Queues a message for the next flush. A refused message had no effect.
    fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), SendError>;
    /// Puts everything queued on the wire.
    fn flush(&mut self, now: Micros);
    /// Gives a received message's buffer back for reuse.
    fn recycle(&mut self, buf: Vec<u8>);
    /// The connection's latest statistics, or `None` for an unknown peer.
    fn stats(&mut self, peer: PeerId) -> Option<ConnectionStats>;
}

impl Transport for Endpoint {
    fn connect_bound(&mut self, now: Micros, addr: SocketAddr, binding: Option<Binding>) -> Result<PeerId, SendError> {
        let peer = self.ids.next();
        Endpoint::connect_bound(self, now, addr, peer, binding)?;
        Ok(peer)
    }
    fn set_local_id(&mut self, id: Option<u32>) {
        Endpoint::set_local_id(self, id)
    }
    fn disconnect(&mut self, now: Micros, peer: PeerId) {
        Endpoint::disconnect(self, now, peer)
    }
    fn disconnect_with(&mut self, now: Micros, peer: PeerId, reason: DisconnectReason) {
        Endpoint::disconnect_with(self, now, peer, reason)
    }
    fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), SendError> {
        Endpoint::send(self, peer, channel, data)
    }
    fn flush(&mut self, now: Micros) {
        Endpoint::flush(self, now)
    }
    fn recycle(&mut self, buf: Vec<u8>) {
        Endpoint::recycle(self, buf)
    }
    fn stats(&mut self, peer: PeerId) -> Option<ConnectionStats> {
        Endpoint::stats(self, peer)
    }
}
