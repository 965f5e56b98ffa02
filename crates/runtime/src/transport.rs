//! [`Host`] as a session's [`Transport`]: sessions run on the engine thread and reach
//! the wire through the network thread.

use std::net::SocketAddr;

use super::Host;
use super::host_error::{FullQueue, HostError};
use tickwire_proto::{Binding, ConnectionStats, DisconnectReason, Micros, PeerId, SendError, Transport};

impl From<HostError> for SendError {
    fn from(e: HostError) -> Self {
        match e {
            HostError::UnknownPeer(p) => SendError::UnknownPeer(p),
            HostError::BadChannel(c) => SendError::BadChannel(c),
            HostError::TooLarge { size, max } => SendError::TooLarge { size, max },
            // A stalled peer refuses every send: no text to allocate for each.
            HostError::QueueFull(FullQueue::PeerSendQueue { pending, limit, .. }) => {
                SendError::QueueFull { queued: usize::try_from(pending).unwrap_or(usize::MAX), limit }
            }
            other => SendError::Unavailable(other.to_string()),
        }
    }
}

impl Transport for Host {
    fn connect_bound(&mut self, _now: Micros, addr: SocketAddr, binding: Option<Binding>) -> Result<PeerId, SendError> {
        Ok(Host::connect_bound(self, addr, binding)?)
    }
    fn set_local_id(&mut self, id: Option<u32>) {
        // A stopped thread reports itself through the host's Fatal event.
        let _ = Host::set_local_id(self, id);
    }
    fn disconnect(&mut self, _now: Micros, peer: PeerId) {
        // Unknown peers are ignored, as the trait promises; a stopped thread reports
        // itself through the host's Fatal event.
        let _ = Host::disconnect(self, peer);
    }
    fn disconnect_with(&mut self, _now: Micros, peer: PeerId, reason: DisconnectReason) {
        let _ = Host::disconnect_with(self, peer, reason);
    }
    fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), SendError> {
        Ok(Host::send(self, peer, channel, data)?)
    }
    fn flush(&mut self, _now: Micros) {
        let _ = Host::flush(self);
    }
    fn recycle(&mut self, buf: Vec<u8>) {
        Host::recycle(self, buf)
    }
    fn stats(&mut self, peer: PeerId) -> Option<ConnectionStats> {
        Host::stats(self, peer)
    }
    fn max_unreliable(&self) -> usize {
        Host::max_unreliable(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_peer_queue_is_queue_full_not_free_text() {
        let e = HostError::QueueFull(FullQueue::PeerSendQueue { peer: 3, pending: 60, size: 41, limit: 100 });
        assert_eq!(SendError::from(e), SendError::QueueFull { queued: 60, limit: 100 });
    }
}
