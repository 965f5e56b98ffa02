//! Disconnect proposals between P2P peers: which to take, and telling a player that
//! the others removed it.
//!
//! A peer's message lists every player it counts as disconnected, from which tick.
//! Taken at face value, one liar could remove a live player from everyone else's
//! game (and the proposal was relayed on through the mesh). A proposal about a third
//! player is taken only with evidence this side has itself (it lost that player's
//! peer too, or its progress watch is about to drop it) or from a majority of the live peers; otherwise it is held (the
//! proposer repeats it in every message) and never relayed, since a peer only
//! relays the disconnects it took. A lie and a link that failed between two peers
//! only look the same from here, so the proposer is not punished for it.

use super::peer::PeerPhase;
use super::players::Seat;
use super::{Event, P2pSession, PeerId, Tick};
use crate::clock::Micros;
use crate::rollback::message::Decoded;

impl P2pSession {
    /// Records the disconnect proposals of peer `pi`'s message and takes those this
    /// side agrees with. False: a proposal no honest peer sends (the caller closes it).
    /// `bound`: the ticks final everywhere before the message came.
    pub(super) fn take_proposals(&mut self, pi: usize, d: &Decoded<'_>, bound: Tick) -> bool {
        self.peers[pi].proposals.fill(None);
        for (player, tick) in d.disconnects() {
            let player = player as usize;
            if player >= self.players.len() {
                continue;
            }
            // A new proposal reaching back before the ticks final everywhere cannot come
            // from an honest peer (a proposal is at or after its proposer's confirmed
            // tick): it would roll back past what the state ring holds.
            let new = self.players[player].queue.disconnect_tick().is_none_or(|d| d > tick);
            if !self.players[player].is_local() && new && tick < bound {
                return false;
            }
            let slot = &mut self.peers[pi].proposals[player];
            *slot = Some(slot.map_or(tick, |t| t.min(tick)));
        }
        for player in 0..self.players.len() {
            if self.peers[pi].proposals[player].is_some() {
                self.consider(player);
            }
        }
        self.name_refused(pi);
        true
    }

    /// Names, once per proposer and player for the match, each proposal of peer `pi`
    /// this side holds without taking it (a liar that withdraws and repeats its lie
    /// every other message raises no stream of events).
    fn name_refused(&mut self, pi: usize) {
        for player in 0..self.players.len() {
            let Some(tick) = self.peers[pi].proposals[player] else { continue };
            let p = &self.players[player];
            let taken = match &p.seat {
                Seat::Local(l) => l.removed_by_peers,
                Seat::Remote(_) => p.queue.disconnect_tick().is_some(),
            };
            if !taken && !self.peers[pi].refused[player] {
                self.peers[pi].refused[player] = true;
                let by = self.peers[pi].id;
                self.events.push_back(Event::ProposalRefused { by, player, tick });
            }
        }
    }

    /// Takes the proposals about `player` if this side agrees: the earliest proposed
    /// tick wins, as everywhere, and the event names whose proposal it was.
    fn consider(&mut self, player: usize) {
        let owner = match self.players[player].seat {
            Seat::Local(_) => return self.consider_local(player),
            Seat::Remote(id) => id,
        };
        let Some((tick, by)) = self.earliest_proposal(player) else { return };
        // Already disconnected here: only an earlier tick can change anything, and
        // every side converges on the earliest.
        // The proposer may have seen the player stall a round trip (and a couple of
        // frames) before this side does.
        let skew = self.peers.iter().find(|p| p.id == by).map_or(0, |p| 2 * p.rtt_us as Micros)
            + 2 * self.cfg.game.tick_us() as Micros;
        let taken = self.players[player].queue.disconnect_tick().is_some()
            || by == owner
            || self.lost(owner)
            || self.about_to_drop(player, skew)
            || self.majority_proposes(player, Some(owner));
        if taken {
            self.mark_disconnected(player, tick, Some(by));
        }
    }

    /// A local player: told once when a majority of the live peers propose it gone.
    fn consider_local(&mut self, player: usize) {
        let already = matches!(&self.players[player].seat, Seat::Local(l) if l.removed_by_peers);
        if already || !self.majority_proposes(player, None) {
            return;
        }
        let Some((tick, _)) = self.earliest_proposal(player) else { return };
        if let Seat::Local(l) = &mut self.players[player].seat {
            l.removed_by_peers = true;
        }
        self.events.push_back(Event::RemovedByPeers { player, tick });
    }

    /// The earliest tick live peers propose for `player`, and who proposed it.
    fn earliest_proposal(&self, player: usize) -> Option<(Tick, PeerId)> {
        self.peers
            .iter()
            .filter(|p| !p.phase.is_gone())
            .filter_map(|p| p.proposals[player].map(|t| (t, p.id)))
            .min_by_key(|&(t, _)| t)
    }

    /// Whether more than half of the voters propose `player` disconnected. The
    /// voters are this side and the live peers, less the player's own peer (`owner`;
    /// None for a local player, whose side does not vote on itself). This side does
    /// not propose what it has no evidence of, so with three peers one proposer is
    /// never enough.
    fn majority_proposes(&self, player: usize, owner: Option<PeerId>) -> bool {
        let voters = self.peers.iter().filter(|p| !p.phase.is_gone() && Some(p.id) != owner);
        let (mut n, mut yes) = (usize::from(owner.is_some()), 0);
        for p in voters {
            n += 1;
            yes += usize::from(p.proposals[player].is_some());
        }
        2 * yes > n
    }

    /// Whether this side has lost `peer` itself: dropped, or silent for the notify
    /// delay (interrupted, or about to be).
    fn lost(&self, peer: PeerId) -> bool {
        let Some(p) = self.peers.iter().find(|p| p.id == peer) else { return true };
        let silent = self.now.saturating_sub(p.last_recv);
        let notify = self.cfg.notify_after_us;
        matches!(p.phase, PeerPhase::Gone | PeerPhase::Interrupted { .. }) || (notify != 0 && silent >= notify)
    }

    /// Declares `player` disconnected from `tick` on (the earliest proposal wins) and
    /// rolls back to it if that tick was already simulated. `by`: whose proposal it
    /// was (None: this side's own).
    pub(super) fn mark_disconnected(&mut self, player: usize, tick: Tick, by: Option<PeerId>) {
        let q = &mut self.players[player].queue;
        if q.disconnect(tick) {
            if tick < self.current {
                q.force_mismatch(tick);
            }
            self.events.push_back(Event::PlayerDisconnected { player, tick, by });
        }
    }
}
