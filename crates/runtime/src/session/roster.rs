//! Who is in the match and over which connection: local and remote players, the
//! spectators this peer serves, the host a spectator watches.
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

use super::failure::SessionFailure;
use super::failure::{argument, state};
use crate::Ticket;
use tickwire_proto::{Binding, PeerId, PlayerKind, Proven};

/// Folds IPv4-mapped IPv6 addresses to IPv4, so both spellings match.
pub(super) fn canonical(a: SocketAddr) -> SocketAddr {
    match a.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), a.port()),
            None => a,
        },
        IpAddr::V4(_) => a,
    }
}

/// Checks that `addr` can be dialled or matched: a concrete IP and a non-zero port.
pub(super) fn check_remote(addr: SocketAddr, what: &str) -> Result<SocketAddr, SessionFailure> {
    if addr.port() == 0 || addr.ip().is_unspecified() {
        return Err(argument(format!("{what} {addr}: need a concrete IP and a non-zero port")));
    }
    Ok(canonical(addr))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Local,
    Remote(usize),
}

/// The players behind one remote address.
#[derive(Debug, Clone)]
pub(super) struct RemoteGroup {
    /// Meaningful once `name` is None (unspecified until then, which no connection
    /// comes from).
    pub(super) addr: SocketAddr,
    /// Given as a host name being looked up: its lookup and text (`name:port`). The
    /// group neither dials nor accepts until the address is known.
    pub(super) name: Option<(Ticket, String)>,
    pub(super) players: Vec<usize>,
    pub(super) peer: Option<PeerId>,
    pub(super) dials: bool,
    pub(super) connected: bool,
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
    /// The host a spectator watches.
    Watched,
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
    /// Spectator mode: the watched peer's address and its connection.
    pub(super) watched: Option<(SocketAddr, Option<PeerId>)>,
}

impl Roster {
    pub(super) fn new(players: usize, max_spectators: usize) -> Self {
        Roster { slots: vec![None; players], groups: Vec::new(), spectators: Vec::new(), max_spectators, watched: None }
    }

    fn free_slot(&self, player: usize) -> Result<(), SessionFailure> {
        match self.slots.get(player) {
            None => {
                Err(argument(format!("player {player} does not exist (the session has {} players)", self.slots.len())))
            }
            Some(Some(_)) => Err(argument(format!("player {player} was already added"))),
            Some(None) => Ok(()),
        }
    }

    pub(super) fn add_local(&mut self, player: usize) -> Result<(), SessionFailure> {
        self.free_slot(player)?;
        self.slots[player] = Some(Slot::Local);
        Ok(())
    }

    pub(super) fn add_remote(&mut self, player: usize, addr: SocketAddr) -> Result<(), SessionFailure> {
        self.free_slot(player)?;
        let addr = check_remote(addr, "remote player address")?;
        if self.spectators.iter().any(|s| s.addr == addr) {
            return Err(argument(format!("{addr} is registered as a spectator")));
        }
        let g = match self.groups.iter().position(|g| g.addr == addr) {
            Some(g) => g,
            None => {
                self.groups.push(RemoteGroup {
                    addr,
                    name: None,
                    players: Vec::new(),
                    peer: None,
                    dials: false,
                    connected: false,
                });
                self.groups.len() - 1
            }
        };
        self.join(player, g);
        Ok(())
    }

    fn join(&mut self, player: usize, g: usize) {
        self.groups[g].players.push(player);
        self.slots[player] = Some(Slot::Remote(g));
    }

    /// The group of players already given as the host name `text`, if any (the same
    /// text is the same peer: one lookup, one connection).
    pub(super) fn named_group(&self, text: &str) -> Option<usize> {
        self.groups.iter().position(|g| g.name.as_ref().is_some_and(|(_, t)| t == text))
    }

    /// Like [`Roster::add_remote`], for a host name whose lookup is `ticket` (a group
    /// of its own unless [`Roster::named_group`] found one).
    pub(super) fn add_remote_named(
        &mut self,
        player: usize,
        ticket: Ticket,
        text: String,
    ) -> Result<(), SessionFailure> {
        self.free_slot(player)?;
        let g = match self.named_group(&text) {
            Some(g) => g,
            None => {
                self.groups.push(RemoteGroup {
                    addr: SocketAddr::from(([0, 0, 0, 0], 0)),
                    name: Some((ticket, text)),
                    players: Vec::new(),
                    peer: None,
                    dials: false,
                    connected: false,
                });
                self.groups.len() - 1
            }
        };
        self.join(player, g);
        Ok(())
    }

    /// Checks that a player of this free slot could be added (before a lookup starts).
    pub(super) fn check_free(&self, player: usize) -> Result<(), SessionFailure> {
        self.free_slot(player)
    }

    pub(super) fn add_spectator(&mut self, addr: SocketAddr) -> Result<(), SessionFailure> {
        let addr = check_remote(addr, "spectator address")?;
        if self.groups.iter().any(|g| g.addr == addr) || self.spectators.iter().any(|s| s.addr == addr) {
            return Err(argument(format!("{addr} is already registered")));
        }
        if self.spectators.len() >= self.max_spectators {
            return Err(argument(format!("max_spectators ({}) already registered", self.max_spectators)));
        }
        self.spectators.push(ExpectedSpectator { addr, peer: None });
        Ok(())
    }

    /// Checks that every player has a place and decides who dials (module docs).
    pub(super) fn seal(&mut self) -> Result<(), SessionFailure> {
        if let Some(p) = self.slots.iter().position(Option::is_none) {
            return Err(state(format!(
                "player {p} was never added (add every player, local or remote, before starting)"
            )));
        }
        let lowest_local = self.slots.iter().position(|s| *s == Some(Slot::Local));
        let Some(lowest_local) = lowest_local else {
            return Err(state("a P2P session needs at least one local player (watch a match in SPECTATOR mode)"));
        };
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

    /// Some remote player's host name is still being looked up.
    pub(super) fn resolving(&self) -> bool {
        self.groups.iter().any(|g| g.name.is_some())
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
        let addr = canonical(addr);
        if let Some(g) = self.groups.iter().position(|g| g.peer == Some(peer)) {
            return Arrival::Group(g);
        }
        // A player's place takes a connection that proved the players' secret (or any,
        // on an open match); a spectators' secret from a player's address is a
        // spectator at most (before, roles came from the address alone). With the
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
            .position(|g| plays && bound_to(g) && !g.dials && g.peer.is_none() && g.name.is_none() && g.addr == addr)
        {
            self.groups[g].peer = Some(peer);
            return Arrival::Group(g);
        }
        if let Some(s) = self.spectators.iter_mut().find(|s| s.peer.is_none() && s.addr == addr) {
            s.peer = Some(peer);
            return Arrival::Spectator;
        }
        if self.watched.is_some_and(|w| w.1 == Some(peer)) {
            return Arrival::Watched;
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

    /// Player 0 is remote at `x` and dials us (player 1). A
    /// connection from `x` that proved only the spectators' secret is not player 0 (it
    /// was, by its address alone); one that proved the players' secret is.
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
}
