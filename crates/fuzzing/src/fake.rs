//! A scripted [`Transport`] for the session targets: the harness decides which
//! connections exist and what arrives; this records what the session sends.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;

use tickwire_proto::{
    CHANNEL_RELIABLE, ConnectionStats, DisconnectReason, MAX_UNRELIABLE, Micros, PeerId, SendError, Transport,
};

/// Reliable messages kept for the harness to read (the newest).
const KEPT: usize = 8;

#[derive(Default)]
pub(crate) struct FakeTransport {
    next_peer: PeerId,
    /// Open connections, and whether each has completed its handshake.
    pub(crate) open: BTreeMap<PeerId, bool>,
    /// Connections the session closed, with the reason it gave: the driver reports
    /// each back as a `Disconnected` event, as an endpoint would.
    pub(crate) closed: Vec<(PeerId, DisconnectReason)>,
    /// The newest reliable messages sent (Welcomes, Hellos, snapshots).
    pub(crate) reliable: VecDeque<(PeerId, Vec<u8>)>,
    /// The newest unreliable message sent.
    pub(crate) last_unreliable: Vec<u8>,
    pub(crate) sent: u64,
    /// What `stats` answers for every open connection (the harness varies it).
    pub(crate) stats: ConnectionStats,
}

impl FakeTransport {
    /// A connection the harness accepts (a server's incoming client).
    pub(crate) fn accept(&mut self) -> PeerId {
        self.next_peer += 1;
        self.open.insert(self.next_peer, true);
        self.next_peer
    }

    /// One of the open connections, chosen by `sel`.
    pub(crate) fn pick(&self, sel: u8) -> Option<PeerId> {
        let n = self.open.len();
        (n > 0).then(|| *self.open.keys().nth(sel as usize % n).expect("in range"))
    }
}

impl Transport for FakeTransport {
    fn connect_bound(
        &mut self,
        _now: Micros,
        _addr: SocketAddr,
        _binding: Option<tickwire_proto::Binding>,
    ) -> Result<PeerId, SendError> {
        self.next_peer += 1;
        self.open.insert(self.next_peer, false);
        Ok(self.next_peer)
    }

    fn set_local_id(&mut self, _id: Option<u32>) {}

    fn disconnect(&mut self, now: Micros, peer: PeerId) {
        self.disconnect_with(now, peer, DisconnectReason::Kicked);
    }

    fn disconnect_with(&mut self, _now: Micros, peer: PeerId, reason: DisconnectReason) {
        if self.open.remove(&peer).is_some() {
            self.closed.push((peer, reason));
        }
    }

    fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), SendError> {
        if channel > CHANNEL_RELIABLE {
            return Err(SendError::BadChannel(channel));
        }
        if channel != CHANNEL_RELIABLE {
            // A session sizes its unreliable messages to fit one datagram: a larger one
            // would be refused by the endpoint and lost every time.
            assert!(data.len() <= MAX_UNRELIABLE, "an unreliable message of {} bytes", data.len());
        }
        if !self.open.contains_key(&peer) {
            return Err(SendError::UnknownPeer(peer));
        }
        self.sent += 1;
        if channel == CHANNEL_RELIABLE {
            if self.reliable.len() == KEPT {
                self.reliable.pop_front();
            }
            self.reliable.push_back((peer, data.to_vec()));
        } else {
            self.last_unreliable.clear();
            self.last_unreliable.extend_from_slice(data);
        }
        Ok(())
    }

    fn flush(&mut self, _now: Micros) {}

    fn recycle(&mut self, _buf: Vec<u8>) {}

    fn stats(&mut self, peer: PeerId) -> Option<ConnectionStats> {
        self.open.contains_key(&peer).then_some(self.stats)
    }
}
