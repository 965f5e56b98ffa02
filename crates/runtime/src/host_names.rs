//! Connecting by host name: [`Host::connect_target`] hands out the peer id at once and
//! connects once the resolver thread has an address (`resolve.rs` says why a thread).
//!
//! While the name is looked up the peer exists only here, on the engine side: sends to
//! it are checked and counted as for any peer, then held in order; once the address
//! is known the `Connect` and the held sends go to the network thread, in that order.
//! A name that does not resolve ends the peer with a `Disconnected` event, reason
//! [`DisconnectReason::ResolveFailed`]. Everything here runs when the engine polls
//! (events, statistics), never blocking.

use std::collections::VecDeque;
use std::net::SocketAddr;

use crossbeam_channel::TrySendError;

use super::Host;
use crate::budget::{EngineBudget, SendBudget};
use crate::host_error::HostError;
use crate::host_event::HostEvent;
use crate::resolve::{Resolution, Target, Ticket};
use crate::socket;
use crate::thread::Command;
use tickwire_proto::{DisconnectReason, PeerId};

/// A peer dialled by name, on the engine side until its `Connect` has been queued.
pub(super) struct NamedPeer {
    pub(super) peer: PeerId,
    budget: SendBudget,
    /// The address, once known; `Connect` is queued when the command queue has room
    /// (and `addr` taken).
    addr: Option<SocketAddr>,
    /// The lookup has answered: what is left is queueing.
    resolved: bool,
    /// Sends accepted for the peer before its `Connect` was queued, in order.
    held: VecDeque<(u8, Vec<u8>)>,
}

impl Host {
    /// Starts connecting to `target`: an IP literal as [`Host::connect`], or a host
    /// name looked up on the resolver thread first (the address is picked by
    /// [`pick`](crate::pick) for this socket). Returns the peer's id at once; a
    /// [`HostEvent::Connected`] or [`HostEvent::Disconnected`] follows (reason
    /// `ResolveFailed` when the name gives no usable address). Messages may be sent to
    /// the peer right away. Fails with [`HostError::Config`] for port 0 or an
    /// unspecified IP, or an IPv6 literal from an IPv4 socket, and with
    /// [`HostError::QueueFull`] ([`FullQueue::Resolutions`](crate::FullQueue)) when too
    /// many names are being looked up.
    pub fn connect_target(&mut self, target: &Target) -> Result<PeerId, HostError> {
        let (host, port) = match target {
            Target::Addr(addr) => return self.connect(*addr),
            Target::Name { host, port } => (host, *port),
        };
        self.check_alive()?;
        if port == 0 {
            return Err(HostError::Config(format!("cannot connect to {target}: the port is 0")));
        }
        let ticket = self.resolver.submit(host, port, self.local_addr)?;
        let peer = self.ids.next();
        let budget = self.shared.budgets.take();
        self.live.insert(peer, EngineBudget::new(budget.clone()));
        self.named.insert(ticket, NamedPeer { peer, budget, addr: None, resolved: false, held: VecDeque::new() });
        Ok(peer)
    }

    /// Looks `host` up on the resolver thread, for a session that needs the address
    /// itself (to recognise a peer that connects to it); never blocks. Take the answer
    /// with [`Host::take_resolution`].
    pub fn resolve(&mut self, host: &str, port: u16) -> Result<Ticket, HostError> {
        self.check_alive()?;
        self.resolver.submit(host, port, self.local_addr)
    }

    /// The answer to a [`Host::resolve`], once there is one (taking it forgets it).
    pub fn take_resolution(&mut self, ticket: Ticket) -> Option<Resolution> {
        self.drain_resolver();
        self.answers.remove(&ticket)
    }

    /// A send to a peer whose `Connect` (or an earlier held send) is not queued yet:
    /// held, to keep the order. False if `peer` is not such a peer.
    pub(super) fn hold_send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> bool {
        let Some(named) = self.named.values_mut().find(|n| n.peer == peer) else { return false };
        named.held.push_back((channel, data.to_vec()));
        true
    }

    /// A named peer the engine disconnects: true if its `Connect` was not queued yet,
    /// then it is forgotten here and its `Disconnected` (reason `Client`, as for any
    /// peer closed by this side) is queued. False if the network thread knows the peer
    /// (the caller closes it there; held sends are dropped with the connection) or it
    /// is not a named peer.
    pub(super) fn cancel_named(&mut self, peer: PeerId) -> bool {
        let Some(ticket) = self.named.iter().find(|(_, n)| n.peer == peer).map(|(t, _)| *t) else { return false };
        let Some(named) = self.named.remove(&ticket) else { return false };
        let connect_queued = named.resolved && named.addr.is_none();
        if connect_queued {
            return false;
        }
        if !named.resolved {
            // Its answer is still to come: dropped when it does.
            self.cancelled.push(ticket);
        }
        self.live.remove(&peer);
        self.pending.push_back(HostEvent::Disconnected { peer, reason: DisconnectReason::Client });
        true
    }

    /// Takes the resolver's answers: a named peer's connects (or fails), a session's
    /// lookup is kept for [`Host::take_resolution`]. Then queues what waits for room.
    pub(super) fn drain_resolver(&mut self) {
        while let Some((ticket, answer)) = self.resolver.poll() {
            if let Some(i) = self.cancelled.iter().position(|t| *t == ticket) {
                self.cancelled.swap_remove(i);
                continue;
            }
            let Some(named) = self.named.get_mut(&ticket) else {
                self.answers.insert(ticket, answer);
                continue;
            };
            match answer.and_then(|a| socket::reachable(self.local_addr, a).map_err(|e| e.to_string())) {
                Ok(addr) => {
                    named.addr = Some(addr);
                    named.resolved = true;
                }
                Err(_) => {
                    let peer = named.peer;
                    self.named.remove(&ticket);
                    self.live.remove(&peer);
                    self.pending.push_back(HostEvent::Disconnected { peer, reason: DisconnectReason::ResolveFailed });
                }
            }
        }
        self.queue_named();
    }

    /// Queues the `Connect` and held sends of every named peer whose address is known,
    /// as far as the command queue has room (the rest waits for the next poll).
    fn queue_named(&mut self) {
        let ready: Vec<Ticket> = self.named.iter().filter(|(_, n)| n.resolved).map(|(t, _)| *t).collect();
        for ticket in ready {
            let Some(named) = self.named.get_mut(&ticket) else { continue };
            if let Some(addr) = named.addr.take() {
                let cmd = Command::Connect { peer: named.peer, addr, budget: named.budget.clone(), binding: None };
                match self.commands.try_send(cmd) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => {
                        named.addr = Some(addr);
                        return;
                    }
                    Err(TrySendError::Disconnected(_)) => return,
                }
            }
            while let Some((channel, data)) = named.held.pop_front() {
                match self.commands.try_send(Command::Send { peer: named.peer, channel, data }) {
                    Ok(()) => {}
                    Err(TrySendError::Full(Command::Send { channel, data, .. })) => {
                        named.held.push_front((channel, data));
                        return;
                    }
                    Err(_) => return,
                }
            }
            self.named.remove(&ticket);
            // Held sends were flushed by the engine already, as far as it knows.
            let _ = self.commands.try_send(Command::Flush);
            self.shared.waker.wake();
        }
    }
}
