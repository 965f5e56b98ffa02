//! A P2P match's NAT traversal on its host ([`Host::start_traversal`]): the engine side.
//! The network thread runs proto's `Traversal` between the endpoint and the socket
//! (`thread/datagrams.rs`); here are its start, the peers' fixed addresses it lets
//! the host dial, and what it reports (registration, each peer's path).

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

use super::Host;
use crate::host_error::HostError;
use crate::os_seed::os_random_bytes;
use crate::socket;
use crate::thread::Command;
use tickwire_proto::token::ConnectToken;
use tickwire_proto::{MAX_RENDEZVOUS_PLAYERS, PeerPath, Secret, TraversalConfig, TraversalEvent, canonical, peer_slot};

/// Traversal events kept for the engine at most (a match has a few: registration and
/// each peer's path changes); the oldest go first.
const MAX_EVENTS: usize = 64;

/// What the engine side knows of its host's traversal.
#[derive(Debug)]
pub(super) struct TraversalView {
    paths: [PeerPath; MAX_RENDEZVOUS_PLAYERS],
    events: VecDeque<TraversalEvent>,
}

impl TraversalView {
    pub(super) fn note(&mut self, ev: TraversalEvent) {
        if let TraversalEvent::Path { slot, path } = ev {
            if let Some(p) = self.paths.get_mut(slot as usize) {
                *p = path;
            }
        }
        if self.events.len() >= MAX_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(ev);
    }
}

/// What a traversal is started with.
#[derive(Clone)]
pub struct TraversalSetup {
    /// The rendezvous service (an IP address and port).
    pub rendezvous: SocketAddr,
    /// The ticket from the game's backend (a connect token naming the match and slot).
    pub ticket: ConnectToken,
    /// The match secret every player of the match shares; the rendezvous never has it.
    pub match_secret: Secret,
    /// The local player's slot: the ticket must be for it.
    pub local_slot: u8,
    /// Relay everything: no peer learns this side's address, nor this side theirs.
    pub private: bool,
}

impl std::fmt::Debug for TraversalSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraversalSetup")
            .field("rendezvous", &self.rendezvous)
            .field("local_slot", &self.local_slot)
            .field("private", &self.private)
            .finish_non_exhaustive()
    }
}

/// The address this machine sends to `to` from (no datagram is sent: a connected UDP
/// socket's local address is the route's source).
fn outgoing_ip(to: SocketAddr) -> Option<IpAddr> {
    let any = if to.is_ipv4() { IpAddr::V4(Ipv4Addr::UNSPECIFIED) } else { IpAddr::V6(Ipv6Addr::UNSPECIFIED) };
    let s = UdpSocket::bind(SocketAddr::new(any, 0)).ok()?;
    s.connect(to).ok()?;
    s.local_addr().ok().map(|a| a.ip()).filter(|ip| !ip.is_unspecified())
}

impl Host {
    /// Starts NAT traversal for a P2P match on this host's socket: it registers with
    /// the rendezvous at `setup.rendezvous` with the ticket, learns the other players'
    /// candidates, checks every candidate pair and keeps each peer's best working path
    /// (direct, else through the rendezvous's relay). The remote player in slot `s` is
    /// then dialled at [`tickwire_proto::peer_address`]`(s)`, an address that stays the
    /// same whatever the path. Once per host; not on an external carrier. Its host
    /// candidate is the address this machine reaches the rendezvous from (none when
    /// private). Wakes the network thread.
    pub fn start_traversal(&mut self, setup: TraversalSetup) -> Result<(), HostError> {
        self.check_alive()?;
        if self.external.is_some() {
            return Err(HostError::Config("a host on an external carrier has no socket to traverse NATs with".into()));
        }
        if self.traversal.is_some() {
            return Err(HostError::Config("this host's NAT traversal has already started".into()));
        }
        if setup.local_slot as usize >= MAX_RENDEZVOUS_PLAYERS {
            return Err(HostError::Config(format!(
                "slot {} is past the {MAX_RENDEZVOUS_PLAYERS} players a rendezvous introduces",
                setup.local_slot
            )));
        }
        let rendezvous = canonical(setup.rendezvous);
        socket::reachable(self.local_addr, rendezvous)?;
        let local = self.local_addr;
        let ip = if local.ip().is_unspecified() { outgoing_ip(rendezvous) } else { Some(local.ip()) };
        let hosts = match (setup.private, ip) {
            (false, Some(ip)) => vec![canonical(SocketAddr::new(ip, local.port()))],
            _ => Vec::new(),
        };
        let key_seed = os_random_bytes::<32>()
            .map_err(|source| HostError::Io { context: "seeding the NAT traversal".into(), source })?;
        let cfg = TraversalConfig {
            rendezvous,
            ticket: setup.ticket,
            match_secret: setup.match_secret,
            local_slot: setup.local_slot,
            private: setup.private,
            hosts,
            // (A clock before 1970 numbers from 0: a restarted peer then waits for the
            // rendezvous to forget its last run, 30 s.)
            unix_us: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
        };
        self.command(Command::Traverse(Box::new(cfg), key_seed))?;
        self.traversal =
            Some(TraversalView { paths: [PeerPath::Pending; MAX_RENDEZVOUS_PLAYERS], events: VecDeque::new() });
        Ok(())
    }

    /// The next thing the traversal reports (registered, a peer's path changed, the
    /// rendezvous refused us, the ticket is for another slot), oldest first.
    pub fn poll_traversal(&mut self) -> Option<TraversalEvent> {
        self.pump(false);
        self.traversal.as_mut()?.events.pop_front()
    }

    /// The path to the player in `slot` (None: this host does not traverse).
    pub fn path(&self, slot: u8) -> Option<PeerPath> {
        Some(*self.traversal.as_ref()?.paths.get(slot as usize)?)
    }

    /// Whether `addr` is a peer address this host's traversal routes.
    pub(super) fn traverses_to(&self, addr: SocketAddr) -> bool {
        self.traversal.is_some() && peer_slot(addr).is_some()
    }
}
