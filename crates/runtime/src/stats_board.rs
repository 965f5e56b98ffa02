//! The statistics the network thread last published, for the engine to read while the
//! core is busy in a turn (otherwise it reads them from the core itself,
//! `DirectPath::peer_stats`).
//!
//! Statistics are snapshots, and only the newest counts, so they are kept in one place
//! under a lock rather than sent through the event channel: in the channel every slot
//! had to be large enough for one (a connection's figures are 184 bytes), which made
//! each host's channel 2 MB, touched at creation; and a server with many peers needed
//! room for a snapshot of each in it at every publication. Both ends only hold the lock
//! to copy a snapshot in or out. Steady state allocates nothing: a peer's entry is made
//! once, when it connects.

use std::sync::{Mutex, MutexGuard};

use tickwire_proto::{ConnectionStats, EndpointStats, Micros, PeerId, PeerMap};

use super::thread::RuntimeStats;

/// The board itself; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct StatsBoard(Mutex<Snapshots>);

#[derive(Debug, Default)]
pub(crate) struct Snapshots {
    /// Each live peer's figures and when they were taken (the core's clock).
    peers: PeerMap<(ConnectionStats, Micros)>,
    /// The endpoint's and the runtime's counters, and when they were taken.
    totals: Option<(EndpointStats, RuntimeStats, Micros)>,
}

impl StatsBoard {
    /// The snapshots, locked. Never held across anything but copies; a panic while it
    /// was held cannot leave a snapshot half written (they are plain values), so a
    /// poisoned lock is taken as it is.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Snapshots> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Snapshots {
    /// Publishes `peer`'s figures, taken at `at`.
    pub(crate) fn set_peer(&mut self, peer: PeerId, s: ConnectionStats, at: Micros) {
        self.peers.insert(peer, (s, at));
    }

    /// Forgets a peer whose connection ended.
    pub(crate) fn remove_peer(&mut self, peer: PeerId) {
        self.peers.remove(&peer);
    }

    /// Publishes the endpoint's and the runtime's counters, taken at `at`.
    pub(crate) fn set_totals(&mut self, e: EndpointStats, r: RuntimeStats, at: Micros) {
        self.totals = Some((e, r, at));
    }

    /// `peer`'s last published figures.
    pub(crate) fn peer(&self, peer: PeerId) -> Option<(ConnectionStats, Micros)> {
        self.peers.get(&peer).copied()
    }

    /// The last published counters.
    pub(crate) fn totals(&self) -> Option<(EndpointStats, RuntimeStats, Micros)> {
        self.totals
    }
}
