//! Who is in the match and over which connection: local and remote players, and the
//! spectators this peer serves.
//!
//! # Who dials
//! The transport has a handshake, and two endpoints dialling each other at once ignore
//! each other's requests. So for each pair of peers exactly one dials: the one whose
//! lowest player index is lower. Both sides list the same players in the same order,
//! so both reach the same answer with no extra message. The other side accepts the
//! incoming connection whose source address equals the address the engine gave for
//! that remote player (as this host sees it, IPv4-mapped IPv6 folded to IPv4).
//! Connections from addresses nobody registered are closed at once.
//!
//! A dial that fails before the match is running (the other peer was not up yet) is
//! retried, so peers may start a few seconds apart.

use std::net::{IpAddr, SocketAddr};

use crate::rollback::PlayerKind;
use crate::transport::{Binding, PeerId, Proven};

/// Why a player or a spectator could not be added, or the match could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RosterError {
    /// `what` (a remote player's or a spectator's address) cannot be dialled or matched.
    #[error("{what} {addr}: need a concrete IP and a non-zero port")]
    NotConcrete {
        /// Which address it was.
        what: &'static str,
        /// The address given.
        addr: SocketAddr,
    },
    /// No such player index.
    #[error("player {player} does not exist (the session has {players} players)")]
    NoSuchPlayer {
        /// The index given.
        player: usize,
        /// Players in the match.
        players: usize,
    },
    /// The player already has a place.
    #[error("player {0} was already added")]
    AlreadyAdded(usize),
    /// A remote player at an address registered as a spectator's.
    #[error("{0} is registered as a spectator")]
    RegisteredAsSpectator(SocketAddr),
    /// A spectator at an address already registered (a player's or a spectator's).
    #[error("{0} is already registered")]
    AlreadyRegistered(SocketAddr),
    /// Every spectator place is taken.
    #[error("max_spectators ({0}) already registered")]
    TooManySpectators(usize),
    /// Starting with a player that has no place.
    #[error("player {0} was never added (add every player, local or remote, before starting)")]
    NeverAdded(usize),
    /// Starting with no local player.
    #[error("a P2P session needs at least one local player (watch a match in SPECTATOR mode)")]
    NoLocalPlayer,
    /// A player added after the start.
    #[error("adding a player is only possible before the session is started")]
    Started,
    /// A spectator started with no peer to watch.
    #[error("a spectator needs the watched host's address before starting")]
    NothingToWatch,
}

impl RosterError {
    /// True if the call came at the wrong time (the match's setup is incomplete or
    /// over), false if an argument was wrong.
    pub fn is_state(&self) -> bool {
        matches!(
            self,
            RosterError::NeverAdded(_)
                | RosterError::NoLocalPlayer
                | RosterError::Started
                | RosterError::NothingToWatch
        )
    }
}

/// Folds IPv4-mapped IPv6 addresses to IPv4, so both spellings of one peer match.
pub fn canonical_addr(a: SocketAddr) -> SocketAddr {
    match a.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), a.port()),
            None => a,
        },
        IpAddr::V4(_) => a,
    }
}

/// Checks that `addr` (`what` names it in the error) can be dialled or matched: a
/// concrete IP and a non-zero port; returns it folded ([`canonical_addr`]).
pub fn dialable(addr: SocketAddr, what: &'static str) -> Result<SocketAddr, RosterError> {
    if addr.port() == 0 || addr.ip().is_unspecified() {
        return Err(RosterError::NotConcrete { what, addr });
    }
    Ok(canonical_addr(addr))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Local,
    Remote(usize),
}

/// Where a remote group's peer is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Place {
    /// At this address.
    At(SocketAddr),
    /// Given as this name (`host:port`), being looked up by the caller: the group
    /// neither dials nor accepts until its address is known.
    Named(String),
}

/// The players behind one remote peer, and its connection.
#[derive(Debug, Clone)]
pub(super) struct RemoteGroup {
    pub(super) place: Place,
    pub(super) players: Vec<usize>,
    pub(super) peer: Option<PeerId>,
    /// This side dials it (decided at the start; module docs).
    pub(super) dials: bool,
    pub(super) connected: bool,
}

impl RemoteGroup {
    fn new(place: Place) -> Self {
        RemoteGroup { place, players: Vec::new(), peer: None, dials: false, connected: false }
    }

    /// The address, once known.
    pub(super) fn addr(&self) -> Option<SocketAddr> {
        match self.place {
            Place::At(a) => Some(a),
            Place::Named(_) => None,
        }
    }
}

/// A spectator address this peer accepts.
#[derive(Debug, Clone)]
pub(super) struct ExpectedSpectator {
    pub(super) addr: SocketAddr,
    pub(super) peer: Option<PeerId>,
}

/// What a new connection turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arrival {
    /// A remote player's peer (index of its group).
    Group(usize),
    /// A spectator this peer serves.
    Spectator,
    /// Nobody expected it: close it.
    Unexpected,
}

/// The match's participants and their connections.
#[derive(Debug, Clone)]
pub(super) struct Roster {
    slots: Vec<Option<Slot>>,
    pub(super) groups: Vec<RemoteGroup>,
    pub(super) spectators: Vec<ExpectedSpectator>,
    max_spectators: usize,
}

impl Roster {
    pub(super) fn new(players: usize, max_spectators: usize) -> Self {
        Roster { slots: vec![None; players], groups: Vec::new(), spectators: Vec::new(), max_spectators }
    }

    /// Checks that a player could take this free slot.
    pub(super) fn check_free(&self, player: usize) -> Result<(), RosterError> {
        match self.slots.get(player) {
            None => Err(RosterError::NoSuchPlayer { player, players: self.slots.len() }),
            Some(Some(_)) => Err(RosterError::AlreadyAdded(player)),
            Some(None) => Ok(()),
        }
    }

    pub(super) fn add_local(&mut self, player: usize) -> Result<(), RosterError> {
        self.check_free(player)?;
        self.slots[player] = Some(Slot::Local);
        Ok(())
    }

    pub(super) fn add_remote(&mut self, player: usize, addr: SocketAddr) -> Result<(), RosterError> {
        self.check_free(player)?;
        let addr = dialable(addr, "remote player address")?;
        if self.spectators.iter().any(|s| s.addr == addr) {
            return Err(RosterError::RegisteredAsSpectator(addr));
        }
        let g = self.group_at(&Place::At(addr));
        self.join(player, g);
        Ok(())
    }

    /// Like [`Roster::add_remote`] for a name being looked up; the same name is the
    /// same peer (one lookup, one connection). True if the name is new.
    pub(super) fn add_remote_named(&mut self, player: usize, name: &str) -> Result<bool, RosterError> {
        self.check_free(player)?;
        let place = Place::Named(name.to_string());
        let new = !self.groups.iter().any(|g| g.place == place);
        let g = self.group_at(&place);
        self.join(player, g);
        Ok(new)
    }

    /// The group at `place`, made if there is none.
    fn group_at(&mut self, place: &Place) -> usize {
        match self.groups.iter().position(|g| g.place == *place) {
            Some(g) => g,
            None => {
                self.groups.push(RemoteGroup::new(place.clone()));
                self.groups.len() - 1
            }
        }
    }

    fn join(&mut self, player: usize, g: usize) {
        self.groups[g].players.push(player);
        self.slots[player] = Some(Slot::Remote(g));
    }

    /// The looked-up address of the group named `name`; false if no group has that
    /// name (still unknown).
    pub(super) fn resolve(&mut self, name: &str, addr: SocketAddr) -> bool {
        let addr = canonical_addr(addr);
        let mut found = false;
        for g in self.groups.iter_mut().filter(|g| matches!(&g.place, Place::Named(n) if n == name)) {
            g.place = Place::At(addr);
            found = true;
        }
        found
    }

    pub(super) fn add_spectator(&mut self, addr: SocketAddr) -> Result<(), RosterError> {
        let addr = dialable(addr, "spectator address")?;
        if self.groups.iter().any(|g| g.addr() == Some(addr)) || self.spectators.iter().any(|s| s.addr == addr) {
            return Err(RosterError::AlreadyRegistered(addr));
        }
        if self.spectators.len() >= self.max_spectators {
            return Err(RosterError::TooManySpectators(self.max_spectators));
        }
        self.spectators.push(ExpectedSpectator { addr, peer: None });
        Ok(())
    }

    /// Checks that every player has a place and decides who dials (module docs).
    pub(super) fn seal(&mut self) -> Result<(), RosterError> {
        if let Some(p) = self.slots.iter().position(Option::is_none) {
            return Err(RosterError::NeverAdded(p));
        }
        let lowest_local = self.lowest_local().ok_or(RosterError::NoLocalPlayer)?;
        for g in &mut self.groups {
            g.dials = lowest_local < g.players[0];
        }
        Ok(())
    }

    /// The core's player list, once every group has its connection.
    pub(super) fn kinds(&self) -> Option<Vec<PlayerKind>> {
        self.slots
            .iter()
            .map(|s| match s {
                Some(Slot::Local) => Some(PlayerKind::Local),
                Some(Slot::Remote(g)) => {
                    self.groups[*g].peer.filter(|_| self.groups[*g].connected).map(PlayerKind::Remote)
                }
                None => None,
            })
            .collect()
    }

    /// Some remote player's name is still being looked up.
    pub(super) fn resolving(&self) -> bool {
        self.groups.iter().any(|g| g.addr().is_none())
    }

    pub(super) fn all_connected(&self) -> bool {
        self.groups.iter().all(|g| g.connected)
    }

    pub(super) fn is_local(&self, player: usize) -> Option<bool> {
        match self.slots.get(player)? {
            Some(Slot::Local) => Some(true),
            Some(Slot::Remote(_)) => Some(false),
            None => None,
        }
    }

    /// Sorts a new connection: a dialled one by its id, an accepted one by its address.
    pub(super) fn arrival(
        &mut self,
        peer: PeerId,
        addr: SocketAddr,
        proven: Proven,
        binding: Option<Binding>,
    ) -> Arrival {
        let addr = canonical_addr(addr);
        if let Some(g) = self.groups.iter().position(|g| g.peer == Some(peer)) {
            return Arrival::Group(g);
        }
        // A player's place takes a connection that proved the players' secret (or any,
        // on an open match); a spectators' secret from a player's address is a
        // spectator at most (roles never come from the address alone). With the
        // secret, the dialler must also have bound the handshake to the players on
        // both ends (its lowest player, and ours: the endpoint checked ours), so that
        // a handshake meant for another peer of the match never lands here.
        let plays = match proven {
            Proven::SpectatorSecret => false,
            Proven::PlayerSecret => binding.is_some(),
            _ => true,
        };
        let bound_to = |g: &RemoteGroup| binding.is_none_or(|b| b.initiator as usize == g.players[0]);
        if let Some(g) = self
            .groups
            .iter()
            .position(|g| plays && bound_to(g) && !g.dials && g.peer.is_none() && g.addr() == Some(addr))
        {
            self.groups[g].peer = Some(peer);
            return Arrival::Group(g);
        }
        if let Some(s) = self.spectators.iter_mut().find(|s| s.peer.is_none() && s.addr == addr) {
            s.peer = Some(peer);
            return Arrival::Spectator;
        }
        Arrival::Unexpected
    }

    /// The lowest local player: who this peer is in the handshakes it binds.
    pub(super) fn lowest_local(&self) -> Option<usize> {
        self.slots.iter().position(|s| *s == Some(Slot::Local))
    }

    pub(super) fn group_of(&self, peer: PeerId) -> Option<usize> {
        self.groups.iter().position(|g| g.peer == Some(peer))
    }

    /// The lowest player index behind `peer`.
    pub(super) fn player_of(&self, peer: PeerId) -> Option<usize> {
        self.group_of(peer).map(|g| self.groups[g].players[0])
    }

    /// The connection of `player`'s peer (None for local players and unconnected ones).
    pub(super) fn peer_of(&self, player: usize) -> Option<PeerId> {
        match self.slots.get(player).copied().flatten()? {
            Slot::Local => None,
            Slot::Remote(g) => self.groups[g].peer,
        }
    }

    pub(super) fn connected_peers(&self) -> usize {
        self.groups.iter().filter(|g| g.connected).count() + self.spectators.iter().filter(|s| s.peer.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Player 0 is remote at `x` and dials us (player 1). A connection from `x` that
    /// proved only the spectators' secret is not player 0; one that proved the
    /// players' secret, bound to player 0, is.
    #[test]
    fn a_spectators_secret_at_a_players_address_never_takes_the_players_place() {
        let x: SocketAddr = "192.0.2.7:7000".parse().unwrap();
        let mut r = Roster::new(2, 1);
        r.add_remote(0, x).unwrap();
        r.add_local(1).unwrap();
        r.seal().unwrap();
        assert!(!r.groups[0].dials, "player 0 dials us");
        let bound = Some(Binding { initiator: 0, responder: 1 });
        assert_eq!(r.arrival(5, x, Proven::SpectatorSecret, None), Arrival::Unexpected);
        assert_eq!(r.arrival(5, x, Proven::SpectatorSecret, bound), Arrival::Unexpected);
        assert_eq!(r.groups[0].peer, None, "the place is still free");
        // The players' secret, but bound to another dialler, or to nobody: not player 0.
        assert_eq!(r.arrival(6, x, Proven::PlayerSecret, None), Arrival::Unexpected);
        assert_eq!(
            r.arrival(7, x, Proven::PlayerSecret, Some(Binding { initiator: 3, responder: 1 })),
            Arrival::Unexpected
        );
        assert_eq!(r.arrival(8, x, Proven::PlayerSecret, bound), Arrival::Group(0));
        assert_eq!(r.groups[0].peer, Some(8));
        // An open match (no secrets) proves nothing of anyone: the address decides.
        let mut open = Roster::new(2, 1);
        open.add_remote(0, x).unwrap();
        open.add_local(1).unwrap();
        open.seal().unwrap();
        assert_eq!(open.arrival(9, x, Proven::Open, None), Arrival::Group(0));
    }

    #[test]
    fn a_name_joins_its_group_and_is_matched_only_once_known() {
        let x: SocketAddr = "192.0.2.7:7000".parse().unwrap();
        let mut r = Roster::new(3, 0);
        r.add_local(0).unwrap();
        assert!(r.add_remote_named(1, "peer.example:7000").unwrap(), "a new name");
        assert!(!r.add_remote_named(2, "peer.example:7000").unwrap(), "the same peer");
        assert_eq!(r.groups.len(), 1);
        r.seal().unwrap();
        assert!(r.resolving());
        // We dial it (player 0 is ours), so an arrival from its address is no player.
        assert!(r.groups[0].dials);
        assert!(r.resolve("peer.example:7000", x));
        assert!(!r.resolving());
        assert_eq!(r.groups[0].addr(), Some(x));
        assert_eq!(r.add_spectator(x), Err(RosterError::AlreadyRegistered(x)));
    }

    #[test]
    fn bad_places_are_refused_with_their_reason() {
        let mut r = Roster::new(2, 1);
        let any: SocketAddr = "0.0.0.0:7000".parse().unwrap();
        assert_eq!(r.add_remote(0, any), Err(RosterError::NotConcrete { what: "remote player address", addr: any }));
        assert_eq!(r.add_local(2), Err(RosterError::NoSuchPlayer { player: 2, players: 2 }));
        r.add_local(0).unwrap();
        assert_eq!(r.add_local(0), Err(RosterError::AlreadyAdded(0)));
        assert_eq!(r.seal(), Err(RosterError::NeverAdded(1)));
        let s: SocketAddr = "192.0.2.8:7000".parse().unwrap();
        r.add_spectator(s).unwrap();
        assert_eq!(r.add_remote(1, s), Err(RosterError::RegisteredAsSpectator(s)));
        let t: SocketAddr = "192.0.2.9:7000".parse().unwrap();
        assert_eq!(r.add_spectator(t), Err(RosterError::TooManySpectators(1)));
        let mut none_local = Roster::new(1, 0);
        none_local.add_remote(0, t).unwrap();
        assert_eq!(none_local.seal(), Err(RosterError::NoLocalPlayer));
    }
}
