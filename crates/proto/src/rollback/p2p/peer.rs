//! What a P2P session knows of each peer and each spectator.

use super::super::desync::PENDING_REPORTS;
use super::super::timesync::AdvantageTracker;
use crate::clock::Micros;
use crate::request::Tick;
use crate::transport::PeerId;

#[derive(Debug, Clone)]
pub(super) struct Peer {
    pub(super) id: PeerId,
    pub(super) players: Vec<usize>,
    /// The next tick of our local inputs this peer waits for.
    pub(super) acked: Tick,
    /// One past the newest of our inputs any message to this peer carried: no
    /// honest ack goes beyond it.
    pub(super) sent_end: Tick,
    /// Every input before this tick is confirmed at the peer (as last reported).
    pub(super) remote_confirmed: Tick,
    pub(super) heard: bool,
    pub(super) last_recv: Micros,
    pub(super) interrupted: bool,
    pub(super) disconnected: bool,
    pub(super) remote_tick: Tick,
    pub(super) remote_tick_at: Micros,
    pub(super) remote_adv: f32,
    pub(super) local_adv: f32,
    pub(super) rtt_us: f64,
    pub(super) adv: AdvantageTracker,
    pub(super) pending: [(Tick, u64); PENDING_REPORTS],
    pub(super) npending: usize,
    pub(super) last_sent_at: Option<Micros>,
    pub(super) last_sent_next: Tick,
    /// The newest checksum report this peer has been sent, and how many times.
    pub(super) report_tick: Option<Tick>,
    pub(super) report_sends: u8,
    /// Per tick of our local inputs (ring indexed like the input queues): when it was
    /// last sent to this peer and how many messages carried it.
    pub(super) input_sent_at: Vec<Micros>,
    pub(super) input_sends: Vec<u8>,
}

#[derive(Debug, Clone)]
pub(super) struct Spectator {
    pub(super) id: PeerId,
    /// The next tick the spectator waits for.
    pub(super) acked: Tick,
    /// One past the newest tick sent to the spectator.
    pub(super) sent_end: Tick,
    /// Joined mid-match: needs a state snapshot before the inputs mean anything.
    pub(super) want_snapshot: bool,
    /// The tick of the snapshot asked of the engine.
    pub(super) snapshot_tick: Option<Tick>,
    /// The snapshot message, until it has been handed to the endpoint.
    pub(super) snapshot: Option<Vec<u8>>,
    pub(super) last_sent_at: Option<Micros>,
}

impl Peer {
    /// `ring` is the input queues' capacity (a power of two).
    pub(super) fn new(id: PeerId, player: usize, now: Micros, ring: usize) -> Self {
        Peer {
            id,
            players: vec![player],
            acked: 0,
            sent_end: 0,
            remote_confirmed: 0,
            heard: false,
            last_recv: now,
            interrupted: false,
            disconnected: false,
            remote_tick: 0,
            remote_tick_at: now,
            remote_adv: 0.0,
            local_adv: 0.0,
            rtt_us: 0.0,
            adv: AdvantageTracker::default(),
            pending: [(0, 0); PENDING_REPORTS],
            npending: 0,
            last_sent_at: None,
            last_sent_next: 0,
            report_tick: None,
            report_sends: 0,
            input_sent_at: vec![0; ring],
            input_sends: vec![0; ring],
        }
    }

    pub(super) fn take_pending(&mut self, tick: Tick) -> Option<u64> {
        let i = self.pending[..self.npending].iter().position(|e| e.0 == tick)?;
        let c = self.pending[i].1;
        self.pending.copy_within(i + 1..self.npending, i);
        self.npending -= 1;
        Some(c)
    }

    pub(super) fn add_pending(&mut self, tick: Tick, checksum: u64) {
        if self.pending[..self.npending].iter().any(|e| e.0 == tick) {
            return;
        }
        if self.npending == PENDING_REPORTS {
            self.pending.copy_within(1.., 0);
            self.npending -= 1;
        }
        self.pending[self.npending] = (tick, checksum);
        self.npending += 1;
    }
}
