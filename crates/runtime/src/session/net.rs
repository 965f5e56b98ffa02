//! The socket side of the networked sessions (P2P, spectator, relay server and
//! client): their [`Host`], and the calls every one of them has ([`Networked`]).

use std::net::SocketAddr;

use super::engine::{Core, Engine, Phase};
use super::failure::{ArgumentError, SessionFailure};
use super::messages::MESSAGE_CHANNEL;
use crate::host_config::{Direction, HostConfig};
use crate::host_event::HostEvent;
use crate::{Host, Incoming, Outgoing, Target, Ticket};
use tickwire_proto::{ConnectionStats, LinkConfig, Micros, NetEvent, NetSession, PeerId};

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
    pub(super) fn check_reachable(&self, addr: SocketAddr, role: &'static str) -> Result<SocketAddr, SessionFailure> {
        let addr = tickwire_proto::dialable(addr, role)?;
        let local = self.host.local_addr();
        crate::socket::reachable(local, addr).map_err(|_| ArgumentError::Unreachable { addr, local })?;
        Ok(addr)
    }
}

/// The network side of the engine loop, the same for every networked kind: hands
/// every host event to the core (messages with their arrival time). Session messages
/// ([`MESSAGE_CHANNEL`]) go to the engine's inbox instead, kept when the core names
/// their connection's place in the session ([`NetSession::member_place`]). Before the
/// core exists, messages are dropped.
pub(super) fn pump<C: Core + NetSession>(engine: &mut Engine<C>, net: &mut Net) {
    while let Some(ev) = net.host.poll_event() {
        let (at, e) = match ev {
            HostEvent::Message { peer, channel: MESSAGE_CHANNEL, data, .. } => {
                let place = engine.core().and_then(|c| c.member_place(peer));
                engine.receive_message(peer, &data, place);
                net.host.recycle(data);
                continue;
            }
            HostEvent::Message { peer, channel, data, received_at } => {
                (received_at, NetEvent::Message { peer, channel, data })
            }
            HostEvent::Connected { peer, addr, credential, binding } => {
                (net.host.now_us(), NetEvent::Connected { peer, addr, credential, binding })
            }
            HostEvent::Disconnected { peer, reason } => (net.host.now_us(), NetEvent::Disconnected { peer, reason }),
            HostEvent::Fatal { message } => {
                engine.die(message);
                continue;
            }
        };
        match &mut engine.phase {
            Phase::Running(core) => core.on_event(at, &mut net.host, e),
            _ => {
                if let NetEvent::Message { data, .. } = e {
                    net.host.recycle(data);
                }
            }
        }
    }
    engine.collect_events();
}

/// Ticks due now on the core's clock (none before it exists).
pub(super) fn due<C: Core + NetSession>(engine: &mut Engine<C>, net: &mut Net) -> u32 {
    let now = net.now_us();
    engine.core_mut().map_or(0, |c| c.ticks_due(now, &mut net.host))
}

/// Sends the core's messages and flushes the socket.
pub(super) fn flush<C: Core + NetSession>(engine: &mut Engine<C>, net: &mut Net) {
    let now = net.now_us();
    if let Some(c) = engine.core_mut() {
        c.send_messages(now, &mut net.host);
        // A full command queue or a dead thread shows up on later calls and as a
        // Fatal event; the core's messages are redundant and go again next frame.
        let _ = net.host.flush();
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
    pub(super) fn remote(&mut self, target: &Target, role: &'static str) -> Result<Remote, SessionFailure> {
        match target {
            Target::Addr(a) => Ok(Remote::Known(self.check_reachable(*a, role)?)),
            Target::Name { port: 0, .. } => Err(ArgumentError::PortZero { role, target: target.clone() }.into()),
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

    /// Whether the engine carries the session's datagrams (an external carrier: its
    /// host is bound to a remote id).
    fn is_external(&self) -> bool {
        self.net().host.is_external()
    }

    /// Datagrams the engine's carrier received, for a session on an external carrier
    /// (see [`Host::push_datagrams`]); returns how many were taken.
    fn push_datagrams(&mut self, items: &mut dyn Iterator<Item = Incoming<'_>>) -> Result<usize, SessionFailure> {
        Ok(self.net_mut().host.push_datagrams(items)?)
    }

    /// Datagrams for the engine's carrier to send, for a session on an external carrier
    /// (see [`Host::pull_datagrams`]); returns how many `take` took.
    fn pull_datagrams(&mut self, take: &mut dyn FnMut(Outgoing<'_>) -> bool) -> Result<usize, SessionFailure> {
        Ok(self.net_mut().host.pull_datagrams(take)?)
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
