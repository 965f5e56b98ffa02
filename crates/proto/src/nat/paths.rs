//! What a peer's traversal and its owner speak in: the fixed address the endpoint knows
//! each remote player by, the path to each peer, what `claim` and `route` answer, the
//! traversal's settings, figures and events.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use super::messages::{KIND_RELAY, MAX_RENDEZVOUS_PLAYERS, RELAY_HEADER_SIZE, RefusedReason};
use crate::transport::Secret;
use crate::transport::token::ConnectToken;

/// The port of every [`peer_address`].
pub const PEER_PORT: u16 = 2;
/// The fixed prefix of a peer address (a unique local IPv6 prefix, never routed).
const PEER_PREFIX: [u16; 4] = [0xfd74, 0x776e, 0x6174, 0x7065];

/// The address the endpoint knows the player in `slot` by. Nothing is sent to it: the
/// traversal routes what the endpoint sends there.
pub fn peer_address(slot: u8) -> SocketAddr {
    let [a, b, c, d] = PEER_PREFIX;
    SocketAddr::new(IpAddr::V6(Ipv6Addr::new(a, b, c, d, 0, 0, 0, u16::from(slot))), PEER_PORT)
}

/// The slot a [`peer_address`] names.
pub fn peer_slot(addr: SocketAddr) -> Option<u8> {
    let SocketAddr::V6(a) = addr else { return None };
    let s = a.ip().segments();
    (a.port() == PEER_PORT && s[..4] == PEER_PREFIX && s[4..7] == [0, 0, 0] && s[7] < MAX_RENDEZVOUS_PLAYERS as u16)
        .then_some(s[7] as u8)
}

/// How one peer's datagrams go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerPath {
    /// Not yet known: the rendezvous has not introduced the peer.
    Pending,
    /// Straight to the peer at this address.
    Direct(SocketAddr),
    /// Through the relay at this address.
    Relayed(SocketAddr),
}

/// What the traversal tells its owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraversalEvent {
    /// The rendezvous took us in, and sees us at `reflexive`.
    Registered {
        /// The address the rendezvous sees.
        reflexive: SocketAddr,
    },
    /// The path to the player in `slot` is now `path`.
    Path {
        /// The remote player's slot.
        slot: u8,
        /// Its path.
        path: PeerPath,
    },
    /// The rendezvous refused our Hello (advisory: it may be forged; Hellos go on).
    Refused(RefusedReason),
    /// Our ticket is for another slot than the local player's: nothing will work.
    WrongSlot {
        /// The ticket's slot.
        ticket: u8,
        /// The local player's.
        local: u8,
    },
}

/// What the owner does with a received datagram.
#[derive(Debug, PartialEq, Eq)]
pub enum Claimed<'a> {
    /// The traversal's own: done with.
    Taken,
    /// A peer's packet: hand `data` to the endpoint as from `from` (its peer address).
    Deliver {
        /// The peer address of the sender.
        from: SocketAddr,
        /// The packet.
        data: &'a [u8],
    },
    /// Not the traversal's: for the endpoint as it came.
    NotMine,
}

/// Where a datagram of the endpoint goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Send it, unchanged, to this address.
    Direct(SocketAddr),
    /// Send it to the relay `via`, behind the header [`relay_header`]`(slot)`.
    Relay {
        /// The relay's address.
        via: SocketAddr,
        /// The player it is for.
        slot: u8,
    },
    /// No path yet: give it to [`Traversal::hold`](super::Traversal::hold).
    Hold(u8),
    /// Not to a peer address: send it as it is.
    NotMine,
}

/// The header of a datagram for the relay to pass to `slot`.
pub fn relay_header(slot: u8) -> [u8; RELAY_HEADER_SIZE] {
    [KIND_RELAY, slot]
}

/// What a traversal is set up with.
#[derive(Clone)]
pub struct TraversalConfig {
    /// The rendezvous (and relay).
    pub rendezvous: SocketAddr,
    /// The ticket from the game's backend.
    pub ticket: ConnectToken,
    /// The match secret the players share (the rendezvous never has it).
    pub match_secret: Secret,
    /// The local player's slot; the ticket must be for it.
    pub local_slot: u8,
    /// Relay everything, and tell nobody our address.
    pub private: bool,
    /// Our host candidates: local addresses with the socket's port.
    pub hosts: Vec<SocketAddr>,
    /// The wall clock at the start, Unix time in microseconds. Hellos are numbered from
    /// it, so that a peer that restarts with the same ticket (a crash, a relaunch)
    /// numbers above its last run and the rendezvous takes it back at once; a Hello
    /// numbered at or below the last one is a replay to the rendezvous.
    pub unix_us: u64,
}

impl std::fmt::Debug for TraversalConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraversalConfig")
            .field("rendezvous", &self.rendezvous)
            .field("local_slot", &self.local_slot)
            .field("private", &self.private)
            .field("hosts", &self.hosts)
            .finish_non_exhaustive()
    }
}

/// What a traversal has done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraversalStats {
    /// Checks sent (requests and answers).
    pub checks_sent: u64,
    /// Valid checks received.
    pub checks_received: u64,
    /// Datagrams sent through the relay.
    pub relayed_out: u64,
    /// Datagrams received through the relay.
    pub relayed_in: u64,
    /// Datagrams of ours that did not read or hold (forged checks, stale Infos).
    pub dropped: u64,
    /// The endpoint's datagrams dropped while a peer had no path (past the few held).
    pub held_dropped: u64,
}
