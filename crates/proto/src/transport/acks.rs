//! Packet-level acknowledgement: which of our packets the peer has received, which of
//! the peer's packets we have received, and the resulting loss figure.

use super::crypto::full_sequence;
use crate::clock::Micros;

/// Packets covered by one header: `ack` plus 32 bits.
pub(super) const ACK_WINDOW: u16 = 33;

/// The largest forward jump of the sequence number one packet may make on its own: one
/// the ack bits still cover, so no honest packet still in flight becomes "too old".
pub(super) const MAX_SEQ_JUMP: u16 = ACK_WINDOW - 1;

/// What a packet's sequence number says about it, before anything is changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SeqVerdict {
    /// Not seen before, and plausible: take it (then [`RecvAcks::accept`]).
    New,
    /// Seen already.
    Duplicate,
    /// More than 32 behind the newest: cannot be told apart from a duplicate.
    TooOld,
    /// More than [`MAX_SEQ_JUMP`] ahead of the newest, with no packet yet to confirm the
    /// jump: a forged or corrupted header, or the first packet after a long burst of
    /// loss. Dropped; the next packet just after it confirms a real jump.
    Implausible,
}

/// Which of the peer's packets we have seen: the newest and a 32-bit history. Sequence
/// numbers are full ones (rebuilt from the header, or authenticated as the nonce): in
/// 16 bits a run of more than 32,768 losses would make every later packet look old.
#[derive(Debug, Default)]
pub(super) struct RecvAcks {
    any: bool,
    newest: u64,
    bits: u32,
    newest_at: Micros,
    /// The last implausibly far packet: a packet at most [`MAX_SEQ_JUMP`] after it
    /// confirms that the peer's sequence really moved there.
    candidate: Option<u64>,
}

impl RecvAcks {
    /// Judges packet `seq` without recording it (only a far jump is remembered, as the
    /// candidate a later packet may confirm). A jump is never taken from one packet
    /// alone: a forged or corrupted sequence number would otherwise make every later
    /// honest packet "too old" until the connection timed out.
    pub(super) fn classify(&mut self, seq: u64) -> SeqVerdict {
        if !self.any {
            return SeqVerdict::New;
        }
        let jump = MAX_SEQ_JUMP as u64;
        if seq > self.newest {
            if seq - self.newest <= jump {
                return SeqVerdict::New;
            }
            return match self.candidate {
                Some(c) if seq > c && seq - c <= jump => SeqVerdict::New,
                _ => {
                    self.candidate = Some(seq);
                    SeqVerdict::Implausible
                }
            };
        }
        let diff = self.newest - seq;
        if diff == 0 || (diff <= 32 && self.bits & (1u32 << (diff - 1)) != 0) {
            SeqVerdict::Duplicate
        } else if diff > 32 {
            SeqVerdict::TooOld
        } else {
            SeqVerdict::New
        }
    }

    /// Records packet `seq`, which [`RecvAcks::classify`] called [`SeqVerdict::New`].
    pub(super) fn accept(&mut self, seq: u64, now: Micros) {
        self.candidate = None;
        if !self.any {
            *self = RecvAcks { any: true, newest: seq, bits: 0, newest_at: now, candidate: None };
            return;
        }
        if seq > self.newest {
            let shift = seq - self.newest;
            self.bits = if shift <= 32 { (((self.bits as u64) << shift) | (1u64 << (shift - 1))) as u32 } else { 0 };
            self.newest = seq;
            self.newest_at = now;
            return;
        }
        let diff = self.newest - seq;
        if (1..=32).contains(&diff) {
            self.bits |= 1u32 << (diff - 1);
        }
    }

    /// Classifies and, if new, records packet `seq` (for tests). Returns false for a duplicate, a
    /// packet too old to be told apart from one (more than 32 behind the newest), or
    /// an implausible jump: the caller drops it, which is what keeps duplicated
    /// datagrams from delivering unreliable messages twice.
    #[cfg(test)]
    pub(super) fn on_receive(&mut self, seq: u64, now: Micros) -> bool {
        let new = self.classify(seq) == SeqVerdict::New;
        if new {
            self.accept(seq, now);
        }
        new
    }
    /// `(ack, ack_bits, microseconds since the newest arrived)` for an outgoing header.
    pub(super) fn header_fields(&self, now: Micros) -> (u16, u32, Micros) {
        if !self.any {
            // Acking a packet we never got: the peer finds no live record for seq
            // 0xFFFF at first (it starts at 0) and ignores it.
            return (u16::MAX, 0, 0);
        }
        (self.newest as u16, self.bits, now.saturating_sub(self.newest_at))
    }

    /// The newest packet accepted, as a full number.
    pub(super) fn newest(&self) -> Option<u64> {
        self.any.then_some(self.newest)
    }
}

/// Which of our packets the peer's acks have reported already, so that an ack's bits
/// that repeat earlier ones are not looked up again. Each ack repeats up to 32 earlier
/// answers; looking each up in the sent ring again was a cache miss per bit, 16% of a
/// busy server's network thread (64 connections, each ring 32 KiB).
#[derive(Debug, Default)]
pub(super) struct ReportedAcks {
    /// Bit i: packet `top - i` was in an ack already.
    bits: u64,
    /// The newest packet acked, as a full number: after 65,536 packets or more without
    /// an ack, the low bits of the next ack may match the old top's, and taking its
    /// bits as known would skip the fresh acks of up to 64 packets (their round-trip
    /// samples and reliable units; the loss window would count them lost).
    top: Option<u64>,
}

impl ReportedAcks {
    /// The bits of an ack (`ack`, then `ack_bits`: bit i is packet `ack - i`) not
    /// reported before, and records them. `next_seq` is our next packet's full
    /// sequence number: `ack` names the latest packet sent with those low bits; an ack
    /// of a packet not sent yet (a peer's mistake or lie) is neither trusted to rule
    /// out later lookups nor recorded.
    pub(super) fn take_fresh(&mut self, ack: u16, ack_bits: u32, next_seq: u64) -> u64 {
        let incoming = 1 | (ack_bits as u64) << 1;
        let Some(ack) = full_ack(ack, next_seq) else {
            return incoming;
        };
        let Some(top) = self.top else {
            (self.bits, self.top) = (incoming, Some(ack));
            return incoming;
        };
        if ack >= top {
            let known = self.bits.checked_shl((ack - top).try_into().unwrap_or(u32::MAX)).unwrap_or(0);
            (self.bits, self.top) = (known | incoming, Some(ack));
            incoming & !known
        } else {
            let behind = (top - ack).try_into().unwrap_or(u32::MAX);
            let known = self.bits.checked_shr(behind).unwrap_or(0);
            self.bits |= incoming.checked_shl(behind).unwrap_or(0);
            incoming & !known
        }
    }

    /// Whether packet `ack - back` was in an ack, when `ack` (a full number) is the
    /// newest packet reported and `back` < 64; None otherwise. The connection's loss
    /// window asks it for the packet that leaves the ack window: these bits are in
    /// cache from the ack just taken, where the sent ring's slot of that packet, 32
    /// packets back, was a last-level miss per client a tick on a busy server.
    pub(super) fn reported_back(&self, ack: u64, back: u64) -> Option<bool> {
        (self.top == Some(ack) && back < u64::BITS as u64).then(|| self.bits >> back & 1 == 1)
    }
}

/// The full number of the packet an ack's low bits `ack` name: the one nearest our
/// next packet (`next_seq`), as a received packet's number is rebuilt; None when that
/// is not a packet we sent.
fn full_ack(ack: u16, next_seq: u64) -> Option<u64> {
    full_sequence(ack, None, next_seq.checked_sub(1)).filter(|&seq| seq < next_seq)
}

/// Outcome of the last [`LOSS_WINDOW`] packets whose fate is known, one bit each: it
/// lives inline in every connection, whose fields a server touches once a tick, so its
/// bitmap is 32 bytes rather than 256 flags. Beside it, the running counts of a two-state
/// (Gilbert-Elliott) fit of the whole connection's losses ([`LossCounts`]).
#[derive(Debug)]
pub(super) struct LossWindow {
    /// Bit i of the window: whether packet `i` (a running count modulo the window) was
    /// lost.
    lost: [u64; LOSS_WORDS],
    next: u16,
    filled: u16,
    lost_count: u16,
    /// Whether the last packet resolved was lost.
    last_lost: bool,
    counts: LossCounts,
}

/// A connection's packets whose fate is known, as running counts since it opened: how
/// many were lost, and how many of those came right after a lost one. Their ratios are
/// the fit of a two-state loss process (Gilbert-Elliott): the loss rate, and the chance
/// that a packet is lost when the one before it was, from which the mean burst length
/// is `1 / (1 − that)`. Redundancy needs the second: copies of an input go in packets in
/// a row, and a burst takes them together (`sync::redundancy`). Counts, not ratios, so
/// that a reader can take them over any span by differences.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LossCounts {
    /// Packets acknowledged or given up as lost.
    pub resolved: u64,
    /// Of those, the lost ones.
    pub lost: u64,
    /// Lost packets whose predecessor (the packet sent just before) was lost too.
    pub lost_after_lost: u64,
}

const LOSS_WORDS: usize = 4;
/// Packets the loss figure is taken over.
pub(super) const LOSS_WINDOW: usize = LOSS_WORDS * 64;

impl LossWindow {
    pub(super) fn new() -> Self {
        LossWindow {
            lost: [0; LOSS_WORDS],
            next: 0,
            filled: 0,
            lost_count: 0,
            last_lost: false,
            counts: LossCounts::default(),
        }
    }
    pub(super) fn push(&mut self, lost: bool) {
        self.counts.resolved += 1;
        self.counts.lost += lost as u64;
        self.counts.lost_after_lost += (lost && self.last_lost) as u64;
        self.last_lost = lost;
        let (word, bit) = (self.next as usize / 64, self.next % 64);
        if self.filled as usize == LOSS_WINDOW {
            self.lost_count -= (self.lost[word] >> bit & 1) as u16;
        } else {
            self.filled += 1;
        }
        self.lost[word] = self.lost[word] & !(1 << bit) | (lost as u64) << bit;
        self.lost_count += lost as u16;
        self.next = ((self.next as usize + 1) % LOSS_WINDOW) as u16;
    }
    /// The running counts since the connection opened.
    pub(super) fn counts(&self) -> LossCounts {
        self.counts
    }
    /// Fraction lost, in [0, 1]; 0 before anything is known.
    pub(super) fn fraction(&self) -> f64 {
        if self.filled == 0 { 0.0 } else { self.lost_count as f64 / self.filled as f64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window against a plain list of the last outcomes, over a pattern that wraps
    /// it several times.
    #[test]
    fn loss_window_is_the_share_lost_of_the_last_packets() {
        let mut w = LossWindow::new();
        assert_eq!(w.fraction(), 0.0);
        let mut all = Vec::new();
        for i in 0..(LOSS_WINDOW * 3 + 17) {
            let lost = i % 7 == 0 || (300..340).contains(&i);
            w.push(lost);
            all.push(lost);
            let last = &all[all.len().saturating_sub(LOSS_WINDOW)..];
            let expected = last.iter().filter(|&&l| l).count() as f64 / last.len() as f64;
            assert_eq!(w.fraction(), expected, "after {} packets", i + 1);
        }
    }

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
        // A jump of 33 waits for a second packet to confirm it.
        assert_eq!(r.classify(77), SeqVerdict::Implausible);
        assert_eq!(r.classify(44), SeqVerdict::Duplicate, "nothing moved");
        assert!(r.on_receive(78, 12), "confirmed by the next packet");
        assert_eq!(r.header_fields(12).0, 78);
        // A far packet followed by an honest one in the window: the candidate is
        // forgotten, and a later packet near it no longer confirms anything.
        assert_eq!(r.classify(10_000), SeqVerdict::Implausible);
        assert!(r.on_receive(79, 13));
        assert_eq!(r.classify(10_001), SeqVerdict::Implausible);
        assert_eq!(r.classify(10_100), SeqVerdict::Implausible, "too far from the candidate");
        assert_eq!(r.classify(9_000), SeqVerdict::Implausible, "behind the candidate");
        assert_eq!(r.classify(9_001), SeqVerdict::New, "just after the latest candidate");
        // Numbers are full ones: 40,000 ahead (more than half the 16-bit space) is a
        // jump like any other, confirmed by the next packet, not an old packet.
        assert_eq!(r.classify(9_001 + 40_000), SeqVerdict::Implausible);
        assert!(r.on_receive(9_002 + 40_000, 14));
        assert_eq!(r.classify(9_002), SeqVerdict::TooOld);
        // Across a multiple of 2^16 the header still carries the low bits.
        let mut w = RecvAcks::default();
        assert!(w.on_receive(65535, 0));
        assert!(w.on_receive(65537, 0));
        assert_eq!(w.header_fields(0).0, 1);
        assert_eq!(w.header_fields(0).1 & 0b10, 0b10);
    }

    #[test]
    fn reported_acks_yield_each_packet_once() {
        let mut r = ReportedAcks::default();
        // The first ack: everything in it is fresh (packets 10, 9 and 7).
        assert_eq!(r.take_fresh(10, 0b101, 20), 0b1011);
        // The same again: nothing.
        assert_eq!(r.take_fresh(10, 0b101, 20), 0);
        // Two newer, covering 12 down to 8: 12, 11 and 8 are fresh (bits 0, 1, 4).
        assert_eq!(r.take_fresh(12, 0b1111, 20), 0b10011);
        // Then packet 6 (bit 6) besides: only it.
        assert_eq!(r.take_fresh(12, 0b111111, 20), 0b1000000);
        // An older, reordered ack: what it says was all reported.
        assert_eq!(r.take_fresh(11, 0b111, 20), 0);
        // Far ahead: nothing is known any more.
        assert_eq!(r.take_fresh(300, 1, 400), 0b11);
        // An ack of a packet not sent yet is not trusted to rule anything out later.
        assert_eq!(r.take_fresh(500, 0, 400), 1);
        assert_eq!(r.take_fresh(301, 0, 400), 1, "301 is fresh: the lie recorded nothing");
        // 65,536 packets later, acks with the same low bits are fresh, all of them:
        // what was reported of packets 301 and 300 says nothing of 65,837 and 65,836.
        assert_eq!(r.take_fresh(301, 0b1, 65_900), 0b11, "a full wrap of the low bits later");
        assert_eq!(r.reported_back(65_837, 1), Some(true));
        assert_eq!(r.take_fresh(301, 0b1, 65_900), 0, "and then reported");
    }

    /// What the loss window asks of the reported bits: for the newest ack taken, the
    /// packets up to 63 back, as the acks said them (a later ack's bits included);
    /// nothing for another top or farther back.
    #[test]
    fn reported_bits_answer_for_the_packets_behind_the_newest_ack() {
        let mut r = ReportedAcks::default();
        // Packets 100, 99 and 97 acked, then 120 and 119 (packet 120's ack says 119).
        r.take_fresh(100, 0b101, 200);
        r.take_fresh(120, 0b1, 200);
        assert_eq!(r.reported_back(120, 0), Some(true));
        assert_eq!(r.reported_back(120, 1), Some(true));
        assert_eq!(r.reported_back(120, 2), Some(false), "118: never acked");
        assert_eq!(r.reported_back(120, 20), Some(true), "100");
        assert_eq!(r.reported_back(120, 21), Some(true), "99");
        assert_eq!(r.reported_back(120, 22), Some(false), "98: lost");
        assert_eq!(r.reported_back(120, 23), Some(true), "97");
        assert_eq!(r.reported_back(120, 63), Some(false));
        assert_eq!(r.reported_back(120, 64), None, "farther than the bits");
        assert_eq!(r.reported_back(100, 0), None, "not the newest ack");
        // A reordered, older ack adds what it says and leaves the top.
        r.take_fresh(110, 0b1, 200);
        assert_eq!(r.reported_back(120, 10), Some(true), "110");
        assert_eq!(r.reported_back(120, 11), Some(true), "109");
        // A jump past the bits: everything before it is unknown, not lost.
        r.take_fresh(190, 0, 200);
        assert_eq!(r.reported_back(190, 70), None);
        assert_eq!(r.reported_back(190, 63), Some(false));
    }

    #[test]
    fn loss_counts_fit_the_bursts_over_the_whole_connection() {
        // Bursts of three lost packets, one every 20 packets, over more than the
        // window: 3 lost in 20, and 2 of each burst's 3 right after a lost one.
        let mut w = LossWindow::new();
        for i in 0..2000u32 {
            w.push(i % 20 < 3);
        }
        let c = w.counts();
        assert_eq!((c.resolved, c.lost, c.lost_after_lost), (2000, 300, 200));
        // The window's fraction is over its last packets; the counts keep them all.
        assert!((w.fraction() - 0.15).abs() < 0.01);
        // Independent losses: none right after another.
        let mut v = LossWindow::new();
        for i in 0..1000u32 {
            v.push(i % 10 == 0);
        }
        assert_eq!(v.counts(), LossCounts { resolved: 1000, lost: 100, lost_after_lost: 0 });
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
}
