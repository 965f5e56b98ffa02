//! Who plays: the player slots, the Hello that claims one (new, or back with its
//! token), and refusals.

use super::join::{self, SessionToken};
use super::stats::add_jitter;
use super::{KickCause, RejectReason, RelayServerSession, ServerSessionError, ServerSessionEvent};
use crate::clock::Micros;
use crate::transport::{Credential, DisconnectReason, PeerId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SlotState {
    Free,
    Active { peer: PeerId },
    Away { since: Micros },
}

#[derive(Debug, Clone)]
pub(super) struct Slot {
    pub(super) state: SlotState,
    pub(super) token: SessionToken,
    /// What the connection that first claimed the slot proved: a returning
    /// client must prove the same, besides presenting the token. For a connect token
    /// it also holds the backend's user data, for the engine.
    pub(super) credential: Credential,
    /// Waiting for a snapshot (just joined, came back, or resyncing).
    pub(super) needs_snapshot: bool,
    /// The snapshot schedule of this slot (a "theoretical arrival time"): a player gets
    /// two snapshots back to back (a join and a resync right after it), then at most one
    /// per [`MIN_SNAPSHOT_INTERVAL_US`], however often it asks (each costs the engine a
    /// dump and the link the whole state).
    pub(super) snapshot_tat: Micros,
    /// The resync-request schedule (the same kind): one request a
    /// [`MIN_SNAPSHOT_INTERVAL_US`] with a burst of [`RESYNC_BURST`]; a player past it
    /// keeps asking far faster than it could be served, and is kicked.
    pub(super) resync_tat: Micros,
    /// The catch-up schedule (the same kind): a burst of [`CATCH_UP_BURST`], then one
    /// per [`CATCH_UP_INTERVAL_US`]; a player past it is kicked. It outlives a kick and
    /// a reconnect, as the slot does.
    pub(super) catch_up_tat: Micros,
    pub(super) reconnected: bool,
}

/// The shortest time between two snapshots to one player. A real resync (a desync, a
/// broken timeline) needs one; asking every tick only multiplies the server's output.
pub(crate) const MIN_SNAPSHOT_INTERVAL_US: Micros = 1_000_000;

/// Resync requests a player may make at once. An honest client asks once per desync or
/// broken timeline; a few in a row are a bad moment, sixteen in a row (with one more a
/// second allowed) are a player asking every frame.
pub(crate) const RESYNC_BURST: u64 = 16;

/// Catch-ups (a snapshot for a player that needs a step no longer kept) a player may
/// need at once, and the sustained rate after them. An honest client needs one only
/// after its downlink stalled for longer than the whole step history (10 s by default,
/// twice the transport's timeout): two close together are an unlucky link, and a
/// third within 30 s means the link is down more than it is up, so the player could
/// not play anyway. A client that never acknowledges a step falls out of the history
/// every `step_history` ticks and would cost a state dump each time for ever; it is
/// kicked at its third, one history after its second. Catch-ups are served one a
/// `step_history` apart at the fastest, so the interval is well above any history
/// that leaves an honest client time to play in between.
pub(crate) const CATCH_UP_BURST: u64 = 2;
pub(crate) const CATCH_UP_INTERVAL_US: Micros = 30_000_000;

impl Slot {
    pub(super) const FREE: Slot = Slot {
        state: SlotState::Free,
        token: SessionToken::NONE,
        credential: Credential::Open,
        needs_snapshot: false,
        snapshot_tat: 0,
        resync_tat: 0,
        catch_up_tat: 0,
        reconnected: false,
    };

    /// The player is gone for now; the slot waits for its token (until
    /// `reconnect_timeout_us` after `now`).
    pub(super) fn set_away(&mut self, now: Micros) {
        self.state = SlotState::Away { since: now };
        self.needs_snapshot = false;
    }

    /// Waiting for a snapshot, and allowed one now.
    pub(super) fn snapshot_due(&self, now: Micros) -> bool {
        self.needs_snapshot && now + MIN_SNAPSHOT_INTERVAL_US >= self.snapshot_tat
    }

    /// Books a snapshot sent at `now` against the schedule.
    pub(super) fn snapshot_sent(&mut self, now: Micros) {
        self.snapshot_tat = self.snapshot_tat.max(now) + MIN_SNAPSHOT_INTERVAL_US;
    }

    /// Books a resync request at `now`; false once the player is past its burst.
    fn resync_asked(&mut self, now: Micros) -> bool {
        book(&mut self.resync_tat, now, MIN_SNAPSHOT_INTERVAL_US, RESYNC_BURST)
    }

    /// Books a catch-up the player needs at `now`; false once it is past its burst.
    pub(super) fn catch_up_needed(&mut self, now: Micros) -> bool {
        book(&mut self.catch_up_tat, now, CATCH_UP_INTERVAL_US, CATCH_UP_BURST)
    }
}

/// Books one event at `now` on a schedule (`tat`, its theoretical arrival time) that
/// allows `burst` at once, then one per `interval`; false once past the burst.
fn book(tat: &mut Micros, now: Micros, interval: Micros, burst: u64) -> bool {
    *tat = (*tat).max(now) + interval;
    *tat - now <= burst * interval
}

impl RelayServerSession {
    pub(super) fn slot_of_peer(&self, peer: PeerId) -> Option<usize> {
        self.slots.iter().position(|s| s.state == SlotState::Active { peer })
    }

    /// Removes `peer` from the sync layer, keeping its counters.
    pub(super) fn forget_peer(&mut self, peer: PeerId) {
        if let Some(j) = self.relay.jitter_stats(peer) {
            add_jitter(&mut self.gone, &j);
        }
        self.relay.remove(peer);
    }

    /// Removes the player of `slot` (on connection `peer`) for `cause`: its connection
    /// is closed as kicked. The sync layer's kicks keep the slot for its token, as after
    /// a drop; the engine's ([`KickCause::Engine`]) free it at once.
    pub(super) fn kick(&mut self, slot: usize, peer: PeerId, cause: KickCause) {
        self.forget_peer(peer);
        let by_engine = matches!(cause, KickCause::Engine { .. });
        let told = if by_engine { DisconnectReason::KickedByEngine } else { DisconnectReason::Kicked };
        self.to_disconnect.push((peer, told));
        self.events.push_back(ServerSessionEvent::PlayerKicked { player: slot as u32, peer, cause });
        if by_engine {
            self.free_slot(slot);
        } else {
            self.slots[slot].set_away(self.now);
        }
    }

    /// Frees `slot` and voids its token.
    pub(super) fn free_slot(&mut self, slot: usize) {
        self.slots[slot] = Slot::FREE;
        self.events.push_back(ServerSessionEvent::PlayerLeft { player: slot as u32 });
    }

    /// The engine removes `player` on purpose (`code` is the engine's own, reported
    /// back in the event): its connection is closed as `KickedByEngine`, its slot freed
    /// and its token void at once (final: its client does not come back). A slot
    /// waiting for a dropped player is freed the same way. Errors: no such player, or
    /// the slot is free.
    pub fn kick_player(&mut self, player: u32, code: u32) -> Result<(), ServerSessionError> {
        let slot = player as usize;
        let Some(s) = self.slots.get(slot) else {
            return Err(ServerSessionError::NoSuchPlayer(player));
        };
        match s.state {
            SlotState::Free => return Err(ServerSessionError::SlotFree(player)),
            SlotState::Active { peer } => self.kick(slot, peer, KickCause::Engine { code }),
            SlotState::Away { .. } => self.free_slot(slot),
        }
        Ok(())
    }

    pub(super) fn reject(&mut self, peer: PeerId, reason: RejectReason) {
        self.connecting.retain(|c| c.peer != peer);
        self.to_disconnect.push((peer, reason.told()));
        self.stats.rejected += 1;
        self.events.push_back(ServerSessionEvent::ConnectionRejected { peer, reason });
    }

    pub(super) fn on_hello(&mut self, peer: PeerId, data: &[u8]) {
        let Ok(h) = join::decode_hello(data) else {
            self.stats.bad_hello += 1;
            if self.connecting.iter().any(|c| c.peer == peer) {
                self.reject(peer, RejectReason::Malformed);
            }
            return;
        };
        if h.input_size as usize != self.cfg.game.input_size || h.max_players as usize != self.cfg.game.players {
            return self.reject(peer, RejectReason::WrongGame);
        }
        if let Some(i) = self.slot_of_peer(peer) {
            // A player asking again on its own connection wants a new snapshot.
            if h.token == self.slots[i].token {
                if !self.slots[i].resync_asked(self.now) {
                    return self.kick(i, peer, KickCause::ResyncFlood);
                }
                self.slots[i].needs_snapshot = true;
                self.stats.resyncs += 1;
            } else {
                self.stats.bad_tokens += 1;
            }
            return;
        }
        let Some(c) = self.connecting.iter().position(|c| c.peer == peer) else {
            self.stats.bad_hello += 1;
            return;
        };
        let proven = self.connecting[c].credential.proven();
        // A backend identity owns at most one slot: a client that lost its session
        // token (it crashed) and comes back with a new connect token gets its own slot.
        let own = |s: &Slot| {
            s.state != SlotState::Free && s.credential.client_id().is_some_and(|id| proven.client_id() == Some(id))
        };
        let slot = if h.token.is_none() && !self.slots.iter().any(own) {
            match self.slots.iter().position(|s| s.state == SlotState::Free) {
                Some(i) => {
                    self.slots[i].token = SessionToken::generate(&mut self.token_rng);
                    self.slots[i].reconnected = false;
                    i
                }
                None => return self.reject(peer, RejectReason::Full),
            }
        } else {
            let found = if h.token.is_none() {
                self.slots.iter().position(own)
            } else {
                self.slots.iter().position(|s| s.state != SlotState::Free && s.token == h.token)
            };
            match found {
                // The token alone is not enough: the connection must have proven what
                // the slot's first connection did, so a leaked token is worthless to
                // another player.
                Some(i) if self.slots[i].credential.proven() != proven => {
                    self.stats.bad_tokens += 1;
                    return self.reject(peer, RejectReason::WrongCredential);
                }
                Some(i) => {
                    if let SlotState::Active { peer: old } = self.slots[i].state {
                        // The old connection is stale (the client gave up on it first).
                        self.forget_peer(old);
                        self.to_disconnect.push((old, DisconnectReason::Kicked));
                    }
                    self.slots[i].reconnected = true;
                    i
                }
                None => {
                    self.stats.bad_tokens += 1;
                    return self.reject(peer, RejectReason::BadToken);
                }
            }
        };
        let joining = self.connecting.swap_remove(c);
        // The newest credential (a new connect token may carry new user data).
        self.slots[slot].credential = joining.credential;
        self.relay.admit(peer, slot as u32).expect("slot and peer are free");
        self.slots[slot].state = SlotState::Active { peer };
        self.slots[slot].needs_snapshot = true;
        let player = slot as u32;
        let e = if self.slots[slot].reconnected {
            ServerSessionEvent::PlayerReconnected { player, peer, proven }
        } else {
            ServerSessionEvent::PlayerJoined { player, peer, proven }
        };
        self.events.push_back(e);
    }
}
