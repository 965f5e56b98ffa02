//! The record of our recent packets, for the peer's acks: when each was sent and which
//! reliable units it carried.
//!
//! A server acknowledged every tick by every client reads one record per client a tick,
//! and writes one. After a 60 Hz tick's sleep that memory is cold down to its page
//! translation: on the machines we measured, a load from a page untouched for 16 ms
//! costs about 350 ns, against 80 ns for a line of a page just used. A ring of 1,024
//! records per connection is a page of its own, so each client cost the server a page
//! walk a tick for it. So the newest [`RECENT`] records live in the connection itself,
//! where the acks of a steady link find them, and go to the large ring eight at a time:
//! one walk per eight packets, not one per packet.
//!
//! Which packet a lookup finds is exactly what a single ring of [`SENT_RING`] records
//! would give (the newest packet recorded at that slot): the records are the same, only
//! where the newest of them wait differs. `tests::matches_one_plain_ring` holds the two
//! side by side.

use crate::clock::Micros;

/// Sent-packet records kept for ack matching. Packets older than this can no longer be
/// matched; their reliable contents are resent by timeout anyway.
pub(super) const SENT_RING: usize = 1024;

/// Reliable-unit entries remembered across all recent packets of a connection. A
/// packet whose entries have been overwritten can no longer ack its units; they are
/// resent on timeout instead. Fixed size, so recording never allocates.
pub(super) const UNIT_RING: usize = 8192;

/// The newest records, kept in the connection: an ack names a packet sent one round
/// trip ago, which at one packet a 60 Hz tick is within 16 packets up to a round trip
/// of about 250 ms. Four cache lines.
const RECENT: usize = 16;
/// Records moved to the ring at once, when the recent ones are full: two cache lines of
/// one page.
const SPILL: usize = 8;
const _: () = assert!(SPILL <= RECENT && SENT_RING % RECENT == 0 && RECENT < SENT_RING);

/// What one sent packet carried, in 16 bytes: a slot is read at each ack, cold on a
/// busy server, and a 40-byte slot (full numbers) spanned two cache lines for about
/// half the packets. Each number keeps its low 32 bits, which tell apart everything
/// the ring can hold: 1,024 packets, 8,192 unit entries, and send times of packets
/// that a live connection can still see acked (2^32 µs is 71 minutes).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[repr(align(16))] // (so that no slot spans two lines, whatever the allocator gives)
pub(super) struct SentPacket {
    /// The low 32 bits of its full sequence number (the header carries 16).
    seq_low: u32,
    /// The low 32 bits of its send time, in µs.
    sent_at_low: u32,
    /// Its `(channel, unit seq)` entries: `[units_start, units_start + units_len)` in
    /// the unit ring (the low 32 bits of a running count, taken modulo [`UNIT_RING`]).
    units_start: u32,
    /// Saturated: a packet of more than [`UNIT_RING`] entries has lost its first ones.
    units_len: u16,
    live: bool,
    acked: bool,
}

impl SentPacket {
    /// How long ago, at `now`, it was sent.
    pub(super) fn age(&self, now: Micros) -> Micros {
        u64::from((now as u32).wrapping_sub(self.sent_at_low))
    }

    /// Whether an ack had named it.
    pub(super) fn acked(&self) -> bool {
        self.acked
    }

    /// Whether this is the record of packet `seq`.
    fn is(&self, seq: u64) -> bool {
        self.live && self.seq_low == seq as u32
    }
}

pub(super) struct SentRing {
    /// Packets `spilled..next`, each at its number modulo [`RECENT`] (a slot of a
    /// packet never recorded, skipped by `seal_disconnect`, holds an older record).
    recent: [SentPacket; RECENT],
    /// Packets before `spilled`, each at its number modulo [`SENT_RING`].
    slots: Vec<SentPacket>,
    units: Vec<(u8, u16)>,
    /// Entries ever written; the packet being built starts at `packet_start`.
    units_head: u64,
    packet_start: u64,
    /// Packets before this are in `slots`; `next - spilled <= RECENT`.
    spilled: u64,
    /// One past the newest packet recorded (the full numbers come from it).
    next: u64,
}

/// Where a record is: its index in `recent` or in `slots`.
#[derive(Debug, Clone, Copy)]
enum Kept {
    Recent(usize),
    Ring(usize),
}

impl SentRing {
    pub(super) fn new() -> Self {
        SentRing {
            recent: [SentPacket::default(); RECENT],
            slots: vec![SentPacket::default(); SENT_RING],
            units: vec![(0, 0); UNIT_RING],
            units_head: 0,
            packet_start: 0,
            spilled: 0,
            next: 0,
        }
    }

    /// Notes that the packet being built carries reliable unit `(channel, seq)`.
    pub(super) fn push_unit(&mut self, channel: u8, seq: u16) {
        self.units[(self.units_head % UNIT_RING as u64) as usize] = (channel, seq);
        self.units_head += 1;
    }

    /// Records packet `seq` with the units pushed since the previous packet. Packets
    /// are recorded in the order of their numbers.
    pub(super) fn insert(&mut self, seq: u64, now: Micros) {
        if seq - self.spilled >= RECENT as u64 {
            // Make room: at least `SPILL` of the oldest go, more if `seq` jumped.
            let upto = (self.spilled + SPILL as u64).max(seq + 1 - RECENT as u64);
            for p in self.spilled..upto.min(self.next) {
                let r = self.recent[p as usize % RECENT];
                // A packet never recorded leaves the ring's slot as it was.
                if r.is(p) {
                    self.slots[p as usize % SENT_RING] = r;
                }
            }
            self.spilled = upto;
        }
        let start = self.packet_start;
        self.recent[seq as usize % RECENT] = SentPacket {
            seq_low: seq as u32,
            sent_at_low: now as u32,
            units_start: start as u32,
            units_len: u16::try_from(self.units_head - start).unwrap_or(u16::MAX),
            live: true,
            acked: false,
        };
        self.packet_start = self.units_head;
        self.next = seq + 1;
    }

    /// Where the newest packet recorded at ring slot `slot` is kept: among the recent
    /// ones if one of them has that slot (at most one can), else in the ring.
    fn newest_at(&self, slot: usize) -> Kept {
        // The one packet of `spilled..spilled + SENT_RING` at that slot.
        let base = self.spilled - self.spilled % SENT_RING as u64 + slot as u64;
        let p = if base < self.spilled { base + SENT_RING as u64 } else { base };
        if p < self.next && self.recent[p as usize % RECENT].is(p) {
            Kept::Recent(p as usize % RECENT)
        } else {
            Kept::Ring(slot)
        }
    }

    fn at(&self, kept: Kept) -> &SentPacket {
        match kept {
            Kept::Recent(i) => &self.recent[i],
            Kept::Ring(i) => &self.slots[i],
        }
    }

    fn at_mut(&mut self, kept: Kept) -> &mut SentPacket {
        match kept {
            Kept::Recent(i) => &mut self.recent[i],
            Kept::Ring(i) => &mut self.slots[i],
        }
    }

    /// The packet among the last [`SENT_RING`] sent whose low 16 bits are `seq` (what
    /// an ack names).
    pub(super) fn get(&self, seq: u16) -> Option<&SentPacket> {
        let p = self.at(self.newest_at(seq as usize % SENT_RING));
        (p.live && p.seq_low as u16 == seq).then_some(p)
    }

    /// Packet `seq`, by its full number, if it is still in the ring.
    pub(super) fn get_full(&self, seq: u64) -> Option<&SentPacket> {
        let p = self.at(self.newest_at((seq % SENT_RING as u64) as usize));
        (p.is(seq) && seq < self.next).then_some(p)
    }

    /// The full number of a packet in the ring.
    pub(super) fn full_seq(&self, p: &SentPacket) -> u64 {
        self.next - u64::from((self.next as u32).wrapping_sub(p.seq_low))
    }

    /// Marks packet `seq` acked if it is live and was not yet; returns it then.
    pub(super) fn ack(&mut self, seq: u16) -> Option<SentPacket> {
        let at = self.newest_at(seq as usize % SENT_RING);
        let p = self.at_mut(at);
        if !p.live || p.seq_low as u16 != seq || p.acked {
            return None;
        }
        p.acked = true;
        Some(*p)
    }

    /// The units a packet carried, if its entries are still in the ring.
    pub(super) fn units_of(&self, p: &SentPacket) -> impl Iterator<Item = (u8, u16)> + '_ {
        let behind = u64::from((self.units_head as u32).wrapping_sub(p.units_start));
        let intact = behind <= UNIT_RING as u64;
        let n = if intact { u64::from(p.units_len) } else { 0 };
        let start = self.units_head.saturating_sub(behind);
        (start..start + n).map(move |i| self.units[(i % UNIT_RING as u64) as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn sent_ring_matches_only_live_seq() {
        let mut s = SentRing::new();
        s.push_unit(2, 7);
        s.insert(5, 100);
        let p = s.ack(5).unwrap();
        assert_eq!(s.units_of(&p).collect::<Vec<_>>(), vec![(2, 7)]);
        assert!(s.ack(5).is_none(), "acked once");
        assert!(s.get(5 + SENT_RING as u16).is_none());
        assert!(s.get(6).is_none());
        assert!(s.get_full(5).is_some() && s.get_full(5 + 65_536).is_none(), "the full number is kept");
        // Entries overwritten by later packets are no longer reported.
        s.push_unit(1, 1);
        s.insert(6, 101);
        for i in 0..UNIT_RING as u16 {
            s.push_unit(2, i);
        }
        s.insert(7, 102);
        let p6 = s.ack(6).unwrap();
        assert_eq!(s.units_of(&p6).count(), 0);
        let p7 = s.ack(7).unwrap();
        assert_eq!(s.units_of(&p7).count(), UNIT_RING);
    }

    /// A slot is 16 bytes (four to a cache line, none across two), and what it keeps
    /// of each number still gives the full one: here across 2^32 packets, 2^32 unit
    /// entries and 2^32 µs, for packets still among the recent ones and spilled alike.
    #[test]
    fn sent_ring_slots_are_small_and_keep_the_full_numbers() {
        assert_eq!((std::mem::size_of::<SentPacket>(), std::mem::align_of::<SentPacket>()), (16, 16));
        let mut s = SentRing::new();
        let first = (1u64 << 32) - 3;
        let n = 3 * RECENT as u64;
        s.units_head = (1u64 << 32) - 2;
        s.packet_start = s.units_head;
        for seq in first..first + n {
            s.push_unit(1, seq as u16);
            s.insert(seq, (1u64 << 32) - 2 + seq - first);
        }
        assert!(s.spilled > first + RECENT as u64, "some were spilled");
        for seq in first..first + n {
            let p = *s.get_full(seq).expect("in the ring");
            assert_eq!(s.full_seq(&p), seq);
            assert_eq!(s.get(seq as u16).map(|p| s.full_seq(p)), Some(seq));
            let now = (1u64 << 32) + 100;
            assert_eq!(p.age(now), now - ((1u64 << 32) - 2 + seq - first), "packet {seq}");
            let acked = s.ack(seq as u16).expect("not acked yet");
            assert_eq!(s.units_of(&acked).collect::<Vec<_>>(), vec![(1, seq as u16)], "packet {seq}");
            assert!(s.get_full(seq).unwrap().acked());
        }
        assert!(s.get_full(first + n).is_none(), "not sent yet");
        assert!(s.get_full(first + (1 << 32)).is_none(), "the same low 32 bits, not sent yet");
    }

    /// One plain ring of [`SENT_RING`] records, written at every packet: what
    /// [`SentRing`] must answer as, whatever it keeps where.
    struct PlainRing {
        slots: Vec<SentPacket>,
        next: u64,
    }

    impl PlainRing {
        fn slot(&self, seq: u64) -> usize {
            (seq % SENT_RING as u64) as usize
        }
        fn get(&self, seq: u16) -> Option<SentPacket> {
            let p = self.slots[self.slot(u64::from(seq))];
            (p.live && p.seq_low as u16 == seq).then_some(p)
        }
        fn get_full(&self, seq: u64) -> Option<SentPacket> {
            let p = self.slots[self.slot(seq)];
            (p.is(seq) && seq < self.next).then_some(p)
        }
        fn ack(&mut self, seq: u16) -> Option<SentPacket> {
            let i = self.slot(u64::from(seq));
            let p = &mut self.slots[i];
            if !p.live || p.seq_low as u16 != seq || p.acked {
                return None;
            }
            p.acked = true;
            Some(*p)
        }
    }

    /// Packets recorded in order with gaps (`seal_disconnect` skips the record) and
    /// jumps of every size, acks of recent, old and unknown packets, and lookups by
    /// the low 16 bits and by full numbers near and far: every answer is the plain
    /// ring's, over 50 seeds.
    #[test]
    fn matches_one_plain_ring() {
        for seed in 0..50u64 {
            let mut rng = Rng::new(seed);
            let mut s = SentRing::new();
            let mut plain = PlainRing { slots: vec![SentPacket::default(); SENT_RING], next: 0 };
            let mut seq = rng.below(1 << 34);
            for step in 0..6_000u64 {
                match rng.below(100) {
                    // Next packet, or after a gap or a jump.
                    0..=54 => {
                        seq += match rng.below(40) {
                            0 => 1 + rng.below(3),
                            1 => 1 + rng.below(2 * SENT_RING as u64),
                            2 => 1 + rng.below(1 << 17),
                            _ => 0,
                        };
                        for _ in 0..rng.below(3) {
                            s.push_unit(1, step as u16);
                        }
                        s.insert(seq, step);
                        let start = s.recent[seq as usize % RECENT].units_start;
                        let len = s.recent[seq as usize % RECENT].units_len;
                        let i = plain.slot(seq);
                        plain.slots[i] = SentPacket {
                            seq_low: seq as u32,
                            sent_at_low: step as u32,
                            units_start: start,
                            units_len: len,
                            live: true,
                            acked: false,
                        };
                        plain.next = seq + 1;
                        seq += 1;
                    }
                    // An ack of a packet some way back (often one just sent).
                    55..=79 => {
                        let near = rng.chance(0.7);
                        let back = rng.below(if near { 24 } else { 3 * SENT_RING as u64 });
                        let a = seq.wrapping_sub(1 + back) as u16;
                        assert_eq!(s.ack(a), plain.ack(a), "seed {seed} step {step}: ack {a}");
                    }
                    // Lookups.
                    _ => {
                        let far = rng.chance(0.5);
                        let back = rng.below(if far { 1 << 18 } else { 40 });
                        let f = seq.saturating_sub(back);
                        assert_eq!(s.get_full(f).copied(), plain.get_full(f), "seed {seed} step {step}: full {f}");
                        assert_eq!(s.get(f as u16).copied(), plain.get(f as u16), "seed {seed} step {step}: {f}");
                        assert_eq!(s.get_full(seq + rng.below(4)), None);
                    }
                }
                assert!(s.next - s.spilled <= RECENT as u64);
            }
        }
    }
}
