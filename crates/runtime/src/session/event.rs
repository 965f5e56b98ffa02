//! What a [`Session`](super::Session) tells the engine: the core's events plus the
//! session's own (connections, the network thread's death).

use tickwire_proto::{
    ClientSessionEvent, MatchEvent, PeerId, PeerPath, Proven, RefusedReason, RollbackEvent as Event, ServerEventAt,
    ServerSessionEvent, Tick,
};

/// A polled session event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEvent {
    /// An event of the rollback core (synchronized, interrupted, desync, ...).
    Core(Event),
    /// An event of the relay server core, with the tick it concerns: for a join or a
    /// return, the first tick whose canonical step includes the player; for a
    /// player's departure, the first tick without it; otherwise the server's next tick.
    RelayServer {
        /// What happened.
        event: ServerSessionEvent,
        /// See the variant's docs.
        tick: Tick,
    },
    /// An event of the relay client core (joined, synchronized, desync, ...).
    RelayClient(ClientSessionEvent),
    /// The connection to a remote player's peer, a spectator or the watched host is up.
    PeerConnected {
        /// The connection.
        peer: PeerId,
        /// The lowest player index behind it (None for spectators and the watched host).
        player: Option<usize>,
        /// What the connection proved in its handshake: its role follows from this,
        /// not from its address (a spectators' secret never plays).
        proven: Proven,
    },
    /// P2P, before the match runs: progress with the remote peer of `player` (the
    /// lowest player behind it), one of `total` remote peers. `connected` false: its
    /// connection is not up yet (this side dials it, or waits for it to dial);
    /// true: connected, waiting for its first message. The core's
    /// `PeerSynchronized` follows when it is heard.
    SynchronizingWithPeer {
        /// The connection (0 while this side waits for the peer to dial).
        peer: PeerId,
        /// The lowest player index behind it.
        player: usize,
        /// Whether its connection is up.
        connected: bool,
        /// Remote peers of the match.
        total: u32,
    },
    /// The session refused a connection from an address it does not expect.
    ConnectionRejected {
        /// The refused connection (already closed).
        peer: PeerId,
    },
    /// The network thread died: the session is unusable; destroy it.
    Fatal(String),
    /// P2P with a rendezvous: the path to remote `player`'s peer is now `path`
    /// (through the relay as soon as the rendezvous introduces the peer, direct once a
    /// connectivity check succeeds, back to the relay when the direct path dies).
    PathChanged {
        /// The remote player.
        player: usize,
        /// Its path.
        path: PeerPath,
    },
    /// P2P with a rendezvous: the rendezvous refused this side's ticket (advisory: a
    /// refusal is not authenticated, and the session keeps trying).
    RendezvousRefused(RefusedReason),
    /// A session message arrived from the member on `peer` (a P2P peer, a relay
    /// server's client, a relay client's server). Its payload is
    /// [`EngineLoop::message`](super::EngineLoop::message) until the next poll.
    Message {
        /// The connection it came on.
        peer: PeerId,
        /// Its size in bytes.
        len: usize,
    },
}

impl From<Event> for SessionEvent {
    fn from(e: Event) -> Self {
        SessionEvent::Core(e)
    }
}

impl From<MatchEvent> for SessionEvent {
    fn from(e: MatchEvent) -> Self {
        match e {
            MatchEvent::Core(e) => SessionEvent::Core(e),
            MatchEvent::SynchronizingWithPeer { peer, player, connected, total } => {
                SessionEvent::SynchronizingWithPeer { peer, player, connected, total }
            }
            MatchEvent::PeerConnected { peer, player, proven } => SessionEvent::PeerConnected { peer, player, proven },
            MatchEvent::ConnectionRejected { peer } => SessionEvent::ConnectionRejected { peer },
            MatchEvent::Failed(e) => SessionEvent::Fatal(format!("building the P2P session failed: {e}")),
        }
    }
}

impl From<ServerEventAt> for SessionEvent {
    fn from(e: ServerEventAt) -> Self {
        SessionEvent::RelayServer { event: e.event, tick: e.tick }
    }
}

impl From<ClientSessionEvent> for SessionEvent {
    fn from(e: ClientSessionEvent) -> Self {
        SessionEvent::RelayClient(e)
    }
}

/// A replay reports nothing but its requests.
impl From<std::convert::Infallible> for SessionEvent {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
    }
}
