//! The socket side of the networked sessions (P2P, spectator, relay server and
//! client): their [`Host`], and the calls every one of them has ([`Networked`]).

use std::net::SocketAddr;

use super::failure::{SessionFailure, argument};
use crate::host_config::{Direction, HostConfig};
use crate::{Host, Target, Ticket};
use tickwire_proto::{ConnectionStats, LinkConfig, Micros, PeerId};

/// A networked session's socket and network thread.
pub struct Net {
    pub(super) host: Host,
}

impl Net {
    /// Binds the socket and starts the network thread. `max_incoming` replaces an
    /// `endpoint.max_incoming` of 0 (the mode knows how many connections it takes).
    pub(super) fn start(mut cfg: HostConfig, max_incoming: u32) -> Result<Net, SessionFailure> {
        if cfg.endpoint.max_incoming == 0 {
            cfg.endpoint.max_incoming = max_incoming;
        }
        super::messages::add_channel(&mut cfg.endpoint.channels)?;
        Ok(Net { host: Host::start(cfg)? })
    }

    pub(super) fn now_us(&self) -> Micros {
        self.host.now_us()
    }

    /// Checks a remote address (`what` names it in errors) and returns it in the form
    /// the roster keeps (an IPv4-mapped IPv6 address folded to IPv4). Refuses one this
    /// socket cannot reach (IPv6 from an IPv4 socket) now, rather than as dials that
    /// fail over and over once started.
    pub(super) fn check_reachable(&self, addr: SocketAddr, what: &'static str) -> Result<SocketAddr, SessionFailure> {
        let addr = tickwire_proto::dialable(addr, what)?;
        crate::socket::reachable(self.host.local_addr(), addr).map_err(|e| argument(e.to_string()))?;
        Ok(addr)
    }
}

/// A remote address a session was given: known, or a host name being looked up on
/// the host's resolver thread (the engine never waits for it: the session looks for
/// the answer each time it pumps).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Remote {
    /// Checked and canonical (`tickwire_proto::canonical_addr`).
    Known(SocketAddr),
    /// The lookup's ticket and the text as given (`name:port`), for messages.
    Resolving(Ticket, String),
}

impl Net {
    /// Checks `target` (`what` names it in errors): an IP literal as
    /// [`Net::check_reachable`]; a name with a non-zero port starts its lookup.
    pub(super) fn remote(&mut self, target: &Target, what: &'static str) -> Result<Remote, SessionFailure> {
        match target {
            Target::Addr(a) => Ok(Remote::Known(self.check_reachable(*a, what)?)),
            Target::Name { port: 0, .. } => Err(argument(format!("{what} {target}: the port is 0"))),
            Target::Name { host, port } => Ok(Remote::Resolving(self.host.resolve(host, *port)?, target.to_string())),
        }
    }

    /// Where `remote` stands: `Ok(Some(addr))` once known (it becomes `Known`),
    /// `Ok(None)` while the lookup runs, `Err(why)` if the name gave no address.
    pub(super) fn settle(&mut self, remote: &mut Remote) -> Result<Option<SocketAddr>, String> {
        let ticket = match remote {
            Remote::Known(a) => return Ok(Some(*a)),
            Remote::Resolving(ticket, _) => *ticket,
        };
        match self.host.take_resolution(ticket) {
            None => Ok(None),
            Some(Ok(a)) => {
                let a = tickwire_proto::canonical_addr(a);
                *remote = Remote::Known(a);
                Ok(Some(a))
            }
            Some(Err(why)) => Err(why),
        }
    }
}

/// Figures every networked session reports.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NetStats {
    /// Connections up (remote players' peers, spectators, the watched host, a relay
    /// server's players, a relay client's server).
    pub connected_peers: u32,
    /// Connections refused: from addresses nobody registered (P2P, spectator), or for
    /// any reason (relay server).
    pub rejected_connections: u64,
    /// Bytes the host sent (all connections, headers included).
    pub bytes_sent: u64,
    /// Bytes the host received (all connections, headers included).
    pub bytes_received: u64,
}

impl NetStats {
    pub(super) fn read(net: &mut Net, connected_peers: u32, rejected_connections: u64) -> Self {
        let e = net.host.endpoint_stats();
        NetStats { connected_peers, rejected_connections, bytes_sent: e.bytes_sent, bytes_received: e.bytes_received }
    }
}

pub(super) mod sealed {
    pub trait HasNet {
        fn net(&self) -> &super::Net;
        fn net_mut(&mut self) -> &mut super::Net;
    }
}

/// The calls of a session that owns a socket.
pub trait Networked: sealed::HasNet {
    /// The bound address.
    fn local_addr(&self) -> SocketAddr {
        self.net().host.local_addr()
    }

    /// Turns a link simulator on (`Some`) or off (`None`) for one direction.
    fn set_link_sim(&mut self, dir: Direction, cfg: Option<LinkConfig>) -> Result<(), SessionFailure> {
        Ok(self.net_mut().host.set_link_sim(dir, cfg)?)
    }

    /// The log queue of the session's host (see [`Host::log`]).
    fn log(&self) -> &crate::LogQueue {
        self.net().host.log()
    }

    /// The latest statistics of the connection to `peer`.
    fn peer_stats(&mut self, peer: PeerId) -> Option<ConnectionStats> {
        self.net_mut().host.stats(peer)
    }
}

impl<T: sealed::HasNet> Networked for T {}

/// Implements the sealed accessors for a session type with a `net: Net` field.
macro_rules! has_net {
    ($t:ty) => {
        impl super::net::sealed::HasNet for $t {
            fn net(&self) -> &super::net::Net {
                &self.net
            }
            fn net_mut(&mut self) -> &mut super::net::Net {
                &mut self.net
            }
        }
    };
}
pub(super) use has_net;
