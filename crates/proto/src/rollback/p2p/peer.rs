//! What a P2P session knows of each peer and each spectator.

use super::super::desync::{InputDigest, PENDING_REPORTS};
use super::super::timesync::AdvantageTracker;
use super::{P2pSession, PeerSyncStats};
use crate::clock::Micros;
use crate::engine::Tick;
use crate::stream::SendLedger;
use crate::transport::PeerId;

/// Where a peer stands, as far as this side has heard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PeerPhase {
    /// Nothing heard yet: the session does not start while a peer waits here.
    Waiting,
    /// Messages arrive.
    Live,
    /// Silent past the notify delay (PeerInterrupted was raised); dropped at the
    /// timeout. `heard`: whether it was ever heard before.
    Interrupted { heard: bool },
    /// Dropped: its players are disconnected and its messages ignored.
    Gone,
}

impl PeerPhase {
    /// Heard at least once and not dropped: its time-sync figures mean something.
    pub(super) fn heard(self) -> bool {
        matches!(self, PeerPhase::Live | PeerPhase::Interrupted { heard: true })
    }

    pub(super) fn is_gone(self) -> bool {
        self == PeerPhase::Gone
    }

    /// Nothing more to wait for before the session starts: heard, or dropped.
    pub(super) fn settled(self) -> bool {
        self.heard() || self.is_gone()
    }
}

#[derive(Debug, Clone)]
pub(super) struct Peer {
    pub(super) id: PeerId,
    pub(super) players: Vec<usize>,
    /// The stream of our local inputs to this peer: what each message carried, and the
    /// next tick it waits for (its acked tick; no honest ack goes beyond the sent end).
    pub(super) inputs: SendLedger,
    /// Every input before this tick is confirmed at the peer (as last reported).
    pub(super) remote_confirmed: Tick,
    pub(super) phase: PeerPhase,
    pub(super) last_recv: Micros,
    /// It announces a stall until then (its messages' loading flag, held a little:
    /// see `progress.rs`).
    pub(super) loading_until: Micros,
    /// What is left of its loading grace.
    pub(super) loading_left_us: Micros,
    pub(super) remote_tick: Tick,
    pub(super) remote_tick_at: Micros,
    pub(super) remote_adv: f32,
    pub(super) local_adv: f32,
    pub(super) rtt_us: f64,
    pub(super) adv: AdvantageTracker,
    /// Reports of check ticks not final here yet: tick, checksum, and whether the
    /// entry's input digests (same index in `pending_digests`) came with it.
    pub(super) pending: [(Tick, u64, bool); PENDING_REPORTS],
    pub(super) npending: usize,
    /// `PENDING_REPORTS` rows of one digest per player of the match, allocated once.
    pending_digests: Vec<InputDigest>,
    /// The newest check tick compared with this peer's report: the peer repeats its
    /// reports (against loss), and each tick is compared, and a desync reported, once.
    pub(super) compared_until: Option<Tick>,
    /// A desync with this peer was found (and dumped once).
    pub(super) desynced: bool,
    pub(super) last_sent_at: Option<Micros>,
    pub(super) last_sent_next: Tick,
    /// The newest checksum report this peer has been sent, and how many times.
    pub(super) report_tick: Option<Tick>,
    pub(super) report_sends: u8,
    /// Per player: the disconnect tick this peer's latest message proposes (every
    /// message lists all of the sender's, so the latest one is the whole truth).
    pub(super) proposals: Vec<Option<Tick>>,
    /// Per player: whether this side has raised `ProposalRefused` for a proposal of
    /// this peer's about it (once for the match).
    pub(super) refused: Vec<bool>,
}

/// What a spectator is being sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SpectatorFeed {
    /// Joined mid-match: needs a state snapshot before inputs mean anything. `asked`:
    /// the tick of the state asked of the engine (asked again each tick until given).
    NeedsSnapshot { asked: Option<Tick> },
    /// The snapshot message, until it is handed to the endpoint.
    SnapshotReady(Vec<u8>),
    /// Confirmed inputs, from its ack on.
    Inputs,
}

#[derive(Debug, Clone)]
pub(super) struct Spectator {
    pub(super) id: PeerId,
    /// The next tick the spectator waits for.
    pub(super) acked: Tick,
    /// One past the newest tick sent to the spectator.
    pub(super) sent_end: Tick,
    pub(super) feed: SpectatorFeed,
    pub(super) last_sent_at: Option<Micros>,
}

impl Peer {
    /// `ring` is the input queues' capacity (a power of two; the records of our inputs
    /// sent to it reach as far); `match_players` counts every player of the match (each
    /// report's input digests, each one's proposal).
    pub(super) fn new(id: PeerId, player: usize, now: Micros, ring: usize, match_players: usize) -> Self {
        Peer {
            id,
            players: vec![player],
            inputs: SendLedger::new(0, ring),
            remote_confirmed: 0,
            phase: PeerPhase::Waiting,
            last_recv: now,
            loading_until: 0,
            loading_left_us: 0,
            remote_tick: 0,
            remote_tick_at: now,
            remote_adv: 0.0,
            local_adv: 0.0,
            rtt_us: 0.0,
            adv: AdvantageTracker::default(),
            pending: [(0, 0, false); PENDING_REPORTS],
            npending: 0,
            pending_digests: vec![0; PENDING_REPORTS * match_players],
            compared_until: None,
            desynced: false,
            last_sent_at: None,
            last_sent_next: 0,
            report_tick: None,
            report_sends: 0,
            proposals: vec![None; match_players],
            refused: vec![false; match_players],
        }
    }

    /// The pending report of `tick`, removed; its input digests land in `digests`
    /// (left empty if it came without them).
    pub(super) fn take_pending(&mut self, tick: Tick, digests: &mut Vec<InputDigest>) -> Option<u64> {
        let i = self.pending[..self.npending].iter().position(|e| e.0 == tick)?;
        let (_, c, has) = self.pending[i];
        let n = self.pending_digests.len() / PENDING_REPORTS;
        digests.clear();
        if has {
            digests.extend_from_slice(&self.pending_digests[i * n..][..n]);
        }
        self.pending.copy_within(i + 1..self.npending, i);
        self.pending_digests.copy_within((i + 1) * n..self.npending * n, i * n);
        self.npending -= 1;
        Some(c)
    }

    /// Keeps a report of a check tick not final here yet (the oldest goes when full),
    /// with its input digests (one per player, or none).
    pub(super) fn add_pending(&mut self, tick: Tick, checksum: u64, digests: &[InputDigest]) {
        if self.pending[..self.npending].iter().any(|e| e.0 == tick) {
            return;
        }
        let n = self.pending_digests.len() / PENDING_REPORTS;
        if self.npending == PENDING_REPORTS {
            self.pending.copy_within(1.., 0);
            self.pending_digests.copy_within(n.., 0);
            self.npending -= 1;
        }
        let has = digests.len() == n;
        self.pending[self.npending] = (tick, checksum, has);
        if has {
            self.pending_digests[self.npending * n..][..n].copy_from_slice(digests);
        }
        self.npending += 1;
    }
}

impl P2pSession {
    /// The sync figures of the peer that `player` (a remote player) plays on; None for
    /// a local or unknown player, or one whose peer was never heard from or is gone.
    pub fn peer_sync_stats(&self, player: usize) -> Option<PeerSyncStats> {
        let p = self.peers.iter().find(|p| p.players.contains(&player))?;
        if !p.phase.heard() {
            return None;
        }
        // The next tick of local input to be pushed: the peer has acked up to `acked`.
        let local_next = self.local.iter().map(|&l| self.players[l].queue.next_needed()).min();
        let theirs = p.players.iter().map(|&i| self.players[i].queue.confirmed_until()).min().unwrap_or(Tick::MAX);
        Some(PeerSyncStats {
            local_frame_advantage: p.local_adv,
            remote_frame_advantage: p.remote_adv,
            frames_ahead: p.adv.frames_ahead(),
            send_queue: local_next.map_or(0, |n| n.saturating_sub(p.inputs.acked())),
            recv_queue: if theirs == Tick::MAX { 0 } else { theirs.saturating_sub(self.current) },
            predicted_ticks: self.current.saturating_sub(theirs),
            silent_us: self.now.saturating_sub(p.last_recv),
        })
    }
}
