//! Packet-level acknowledgement: which of our packets the peer has received, which of
//! the peer's packets we have received, and the resulting loss figure.

use crate::core::clock::Micros;
use crate::core::wire::seq_newer;

/// Sent-packet records kept for ack matching. Packets older than this can no longer be
/// matched; their reliable contents are resent by timeout anyway.
pub const SENT_RING: usize = 1024;
/// Packets covered by one header: `ack` plus 32 bits.
pub const ACK_WINDOW: u16 = 33;

/// What one sent packet carried.
#[derive(Debug, Default)]
pub struct SentPacket {
    pub seq: u16,
    pub sent_at: Micros,
    pub live: bool,
    pub acked: bool,
    /// `(channel, reliable unit seq)` for each reliable unit in the packet.
    pub units: Vec<(u8, u16)>,
}

#[derive(Debug)]
pub struct SentRing {
    slots: Vec<SentPacket>,
}

impl SentRing {
    pub fn new() -> Self {
        // Unit lists are swapped in and out of slots; giving every one a small capacity
        // up front means the first lap around the ring does not allocate either.
        let slot = || SentPacket { units: Vec::with_capacity(8), ..SentPacket::default() };
        SentRing { slots: (0..SENT_RING).map(|_| slot()).collect() }
    }
    /// Records packet `seq`, taking `units` (the caller's vector is left empty and keeps
    /// the capacity of the slot's old vector, so nothing allocates in steady state).
    pub fn insert(&mut self, seq: u16, now: Micros, units: &mut Vec<(u8, u16)>) {
        let slot = &mut self.slots[seq as usize % SENT_RING];
        slot.seq = seq;
        slot.sent_at = now;
        slot.live = true;
        slot.acked = false;
        std::mem::swap(&mut slot.units, units);
        units.clear();
    }
    pub fn get(&self, seq: u16) -> Option<&SentPacket> {
        let slot = &self.slots[seq as usize % SENT_RING];
        (slot.live && slot.seq == seq).then_some(slot)
    }
    pub fn get_mut(&mut self, seq: u16) -> Option<&mut SentPacket> {
        let slot = &mut self.slots[seq as usize % SENT_RING];
        (slot.live && slot.seq == seq).then_some(slot)
    }
}

/// Which of the peer's packets we have seen: the newest and a 32-bit history.
#[derive(Debug, Default)]
pub struct RecvAcks {
    any: bool,
    newest: u16,
    bits: u32,
    newest_at: Micros,
}

impl RecvAcks {
    /// Records packet `seq`. Returns false for a duplicate or for a packet too old to be
    /// told apart from one (more than 32 behind the newest): the caller drops it, which
    /// is what keeps duplicated datagrams from delivering unreliable messages twice.
    pub fn on_receive(&mut self, seq: u16, now: Micros) -> bool {
        if !self.any {
            *self = RecvAcks { any: true, newest: seq, bits: 0, newest_at: now };
            return true;
        }
        if seq_newer(seq, self.newest) {
            let shift = seq.wrapping_sub(self.newest) as u32;
            self.bits = if shift <= 32 { (((self.bits as u64) << shift) | (1u64 << (shift - 1))) as u32 } else { 0 };
            self.newest = seq;
            self.newest_at = now;
            return true;
        }
        let diff = self.newest.wrapping_sub(seq) as u32;
        if diff == 0 || diff > 32 {
            return false;
        }
        let bit = 1u32 << (diff - 1);
        if self.bits & bit != 0 {
            return false;
        }
        self.bits |= bit;
        true
    }
    /// `(ack, ack_bits, microseconds since the newest arrived)` for an outgoing header.
    pub fn header_fields(&self, now: Micros) -> (u16, u32, Micros) {
        if !self.any {
            // Acking a packet we never got: the peer finds no live record for seq
            // 0xFFFF at first (it starts at 0) and ignores it.
            return (u16::MAX, 0, 0);
        }
        (self.newest, self.bits, now.saturating_sub(self.newest_at))
    }
}

/// Outcome of the last packets whose fate is known.
#[derive(Debug)]
pub struct LossWindow {
    lost: [bool; 256],
    next: usize,
    filled: usize,
    lost_count: usize,
}

impl LossWindow {
    pub fn new() -> Self {
        LossWindow { lost: [false; 256], next: 0, filled: 0, lost_count: 0 }
    }
    pub fn push(&mut self, lost: bool) {
        if self.filled == self.lost.len() {
            self.lost_count -= self.lost[self.next] as usize;
        } else {
            self.filled += 1;
        }
        self.lost[self.next] = lost;
        self.lost_count += lost as usize;
        self.next = (self.next + 1) % self.lost.len();
    }
    /// Fraction lost, in [0, 1]; 0 before anything is known.
    pub fn fraction(&self) -> f64 {
        if self.filled == 0 { 0.0 } else { self.lost_count as f64 / self.filled as f64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recv_acks_track_history_and_reject_duplicates() {
        let mut r = RecvAcks::default();
        assert!(r.on_receive(10, 0));
        assert!(r.on_receive(12, 1));
        assert!(r.on_receive(11, 2));
        assert!(!r.on_receive(11, 3), "duplicate");
        assert!(!r.on_receive(12, 3), "duplicate newest");
        let (ack, bits, _) = r.header_fields(5);
        assert_eq!(ack, 12);
        assert_eq!(bits & 0b11, 0b11);
        // A jump of exactly 32 keeps the old newest as the top bit.
        assert!(r.on_receive(44, 6));
        let (_, bits, age) = r.header_fields(10);
        assert_eq!(bits, 1 << 31);
        assert_eq!(age, 4);
        assert!(!r.on_receive(11, 11), "too old to tell");
        // Wrapping.
        let mut w = RecvAcks::default();
        assert!(w.on_receive(65535, 0));
        assert!(w.on_receive(1, 0));
        assert_eq!(w.header_fields(0).0, 1);
        assert_eq!(w.header_fields(0).1 & 0b10, 0b10);
    }

    #[test]
    fn loss_window_is_a_sliding_fraction() {
        let mut l = LossWindow::new();
        assert_eq!(l.fraction(), 0.0);
        for i in 0..256 {
            l.push(i % 4 == 0);
        }
        assert!((l.fraction() - 0.25).abs() < 1e-9);
        for _ in 0..256 {
            l.push(false);
        }
        assert_eq!(l.fraction(), 0.0);
    }

    #[test]
    fn sent_ring_matches_only_live_seq() {
        let mut s = SentRing::new();
        let mut units = vec![(2u8, 7u16)];
        s.insert(5, 100, &mut units);
        assert!(units.is_empty());
        assert_eq!(s.get(5).unwrap().units, vec![(2, 7)]);
        assert!(s.get(5 + SENT_RING as u16).is_none());
        assert!(s.get(6).is_none());
    }
}
