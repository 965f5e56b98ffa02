//! The reliable-ordered channel: units with a 16-bit sequence, a send window, resend on
//! timeout, in-order delivery and reassembly of fragmented messages.
//!
//! A message up to [`MAX_UNFRAGMENTED`] bytes (less on an endpoint of a smaller
//! datagram limit: [`max_unfragmented_for`]) is one unit; a larger one is split into
//! [`FRAGMENT_SIZE`] pieces, each its own unit with consecutive sequence numbers. Because
//! units are delivered in order, reassembly is a concatenation, and the memory a peer
//! can make us hold is bounded by the window (buffered units) plus one message.

use std::collections::VecDeque;

use super::pool::BufPool;
use crate::clock::Micros;
use crate::wire::{FRAGMENT_HEADER_SIZE, max_frames_size, seq_newer};

pub(crate) use crate::wire::frame_consts::{FRAGMENT_SIZE, MAX_FRAGMENTS};

/// Units in flight (sender) and buffered out of order (receiver).
pub(super) const WINDOW: u16 = 256;
/// Largest message sent as a single unit on an endpoint of the largest datagram limit
/// ([`MAX_DATAGRAM_SIZE`](crate::wire::MAX_DATAGRAM_SIZE)); smaller limits split smaller
/// messages (`max_unfragmented_for`).
pub const MAX_UNFRAGMENTED: usize = max_unfragmented_for(crate::wire::MAX_DATAGRAM_SIZE);

/// Largest message sent as a single unit by an endpoint whose datagrams are at most
/// `max_datagram_size` bytes. At every limit an endpoint accepts it is at least a
/// fragment, so a message above it splits into two fragments or more.
pub(super) const fn max_unfragmented_for(max_datagram_size: usize) -> usize {
    max_frames_size(max_datagram_size).saturating_sub(FRAGMENT_HEADER_SIZE)
}
const _: () = assert!(max_unfragmented_for(crate::wire::MIN_DATAGRAM_SIZE) >= FRAGMENT_SIZE);

#[derive(Debug)]
pub(super) struct SendUnit {
    pub seq: u16,
    pub data: Vec<u8>,
    pub fragment: Option<(u16, u16)>,
    pub last_sent: Option<Micros>,
    /// When it was first sent: data the peer has not acknowledged for the connection
    /// timeout means a peer that talks but never acknowledges.
    pub first_sent: Option<Micros>,
    pub sends: u32,
    pub acked: bool,
}

impl SendUnit {
    /// Due for (re)sending: never sent, or its timeout has passed. The timeout doubles
    /// per resend up to 8x, so a dead path is not flooded.
    pub(super) fn due(&self, now: Micros, rto: Micros) -> bool {
        match self.last_sent {
            None => true,
            Some(t) => now.saturating_sub(t) >= rto << (self.sends.saturating_sub(1)).min(3),
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct ReliableSender {
    /// Front = oldest unacked unit. Acked units are popped as soon as they reach the front.
    pub units: VecDeque<SendUnit>,
    next_seq: u16,
    queued_bytes: usize,
}

impl ReliableSender {
    pub(super) fn queued_bytes(&self) -> usize {
        self.queued_bytes
    }

    /// Splits `data` into units and queues them: one unit up to `max_unfragmented`
    /// bytes ([`max_unfragmented_for`] the endpoint's datagram limit), else fragments.
    pub(super) fn push(&mut self, data: &[u8], max_unfragmented: usize, pool: &mut BufPool) {
        let mut push_unit = |this: &mut Self, piece: &[u8], fragment| {
            let mut buf = pool.get_for(piece.len());
            buf.extend_from_slice(piece);
            this.queued_bytes += piece.len();
            this.units.push_back(SendUnit {
                seq: this.next_seq,
                data: buf,
                fragment,
                last_sent: None,
                first_sent: None,
                sends: 0,
                acked: false,
            });
            this.next_seq = this.next_seq.wrapping_add(1);
        };
        if data.len() <= max_unfragmented {
            push_unit(self, data, None);
            return;
        }
        let count = data.len().div_ceil(FRAGMENT_SIZE) as u16;
        for (i, piece) in data.chunks(FRAGMENT_SIZE).enumerate() {
            push_unit(self, piece, Some((i as u16, count)));
        }
    }

    /// Marks unit `seq` delivered. Returns true if it was outstanding.
    pub(super) fn ack(&mut self, seq: u16, pool: &mut BufPool) -> bool {
        let Some(front) = self.units.front() else { return false };
        let idx = seq.wrapping_sub(front.seq) as usize;
        let newly = match self.units.get_mut(idx) {
            Some(u) if u.seq == seq && !u.acked => {
                u.acked = true;
                self.queued_bytes -= u.data.len();
                true
            }
            _ => false,
        };
        while self.units.front().is_some_and(|u| u.acked) {
            let u = self.units.pop_front().expect("front exists");
            pool.put(u.data);
        }
        newly
    }

    /// When the oldest unit still unacknowledged was first sent (units are acked in
    /// order at the front, and sent in order, so the front one is the oldest).
    pub(super) fn oldest_unacked(&self) -> Option<Micros> {
        self.units.iter().find(|u| !u.acked).and_then(|u| u.first_sent)
    }

    /// Earliest time a sent, unacked unit in the window becomes due again.
    pub(super) fn next_resend(&self, rto: Micros) -> Option<Micros> {
        self.units
            .iter()
            .take(WINDOW as usize)
            .filter(|u| !u.acked)
            .filter_map(|u| u.last_sent.map(|t| t + (rto << u.sends.saturating_sub(1).min(3))))
            .min()
    }

    pub(super) fn clear(&mut self, pool: &mut BufPool) {
        for u in self.units.drain(..) {
            pool.put(u.data);
        }
        self.queued_bytes = 0;
    }
}

/// A protocol violation by the peer: the connection is closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Violation {
    #[error("fragment {index}/{count} out of order")]
    FragmentOrder { index: u16, count: u16 },
    #[error("message of {size} bytes exceeds the limit of {max}")]
    MessageTooLarge { size: usize, max: usize },
}

#[derive(Debug)]
struct Buffered {
    seq: u16,
    data: Vec<u8>,
    fragment: Option<(u16, u16)>,
}

#[derive(Debug)]
pub(super) struct ReliableReceiver {
    next_expected: u16,
    slots: Vec<Option<Buffered>>,
    /// Message being reassembled, and the next fragment index and count expected.
    assembling: Option<(Vec<u8>, u16, u16)>,
    max_message_size: usize,
}

impl ReliableReceiver {
    pub(super) fn new(max_message_size: usize) -> Self {
        ReliableReceiver {
            next_expected: 0,
            slots: (0..WINDOW).map(|_| None).collect(),
            assembling: None,
            max_message_size,
        }
    }

    /// Takes one unit; calls `deliver` for every message it completes, in order.
    /// Duplicates and units outside the window are ignored (the window is the sender's
    /// promise; ignoring keeps memory bounded whatever the peer sends).
    pub(super) fn on_unit(
        &mut self,
        seq: u16,
        fragment: Option<(u16, u16)>,
        data: &[u8],
        pool: &mut BufPool,
        mut deliver: impl FnMut(Vec<u8>),
    ) -> Result<(), Violation> {
        let dist = seq.wrapping_sub(self.next_expected);
        if dist >= WINDOW {
            return Ok(());
        }
        let slot = &mut self.slots[seq as usize % WINDOW as usize];
        if slot.is_some() {
            return Ok(());
        }
        let mut buf = pool.get_for(data.len());
        buf.extend_from_slice(data);
        *slot = Some(Buffered { seq, data: buf, fragment });

        loop {
            let idx = self.next_expected as usize % WINDOW as usize;
            match self.slots[idx].take() {
                Some(b) if b.seq == self.next_expected => {
                    self.next_expected = self.next_expected.wrapping_add(1);
                    if let Some(msg) = self.assemble(b, pool)? {
                        deliver(msg);
                    }
                }
                other => {
                    self.slots[idx] = other;
                    return Ok(());
                }
            }
        }
    }

    fn assemble(&mut self, b: Buffered, pool: &mut BufPool) -> Result<Option<Vec<u8>>, Violation> {
        let Some((index, count)) = b.fragment else {
            if self.assembling.is_some() {
                return Err(Violation::FragmentOrder { index: 0, count: 1 });
            }
            return Ok(Some(b.data));
        };
        let max = self.max_message_size;
        let mut msg = match self.assembling.take() {
            None if index == 0 => {
                // The total is known up front: refuse before buffering anything.
                let upper = count as usize * FRAGMENT_SIZE;
                if count > MAX_FRAGMENTS || upper - FRAGMENT_SIZE >= max {
                    return Err(Violation::MessageTooLarge { size: upper, max });
                }
                Vec::with_capacity(upper)
            }
            Some((m, want, c)) if want == index && c == count => m,
            _ => return Err(Violation::FragmentOrder { index, count }),
        };
        msg.extend_from_slice(&b.data);
        pool.put(b.data);
        if msg.len() > max {
            return Err(Violation::MessageTooLarge { size: msg.len(), max });
        }
        if index + 1 == count {
            Ok(Some(msg))
        } else {
            self.assembling = Some((msg, index + 1, count));
            Ok(None)
        }
    }
}

/// True if a sequenced message numbered `seq` should be delivered after `last`.
pub(super) fn sequenced_accept(last: &mut Option<u16>, seq: u16) -> bool {
    match *last {
        Some(l) if !seq_newer(seq, l) => false,
        _ => {
            *last = Some(seq);
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (seq, fragment, data) as it would come off the wire.
    type Unit = (u16, Option<(u16, u16)>, Vec<u8>);

    fn collect(rx: &mut ReliableReceiver, units: &[Unit], pool: &mut BufPool) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for (seq, frag, data) in units {
            rx.on_unit(*seq, *frag, data, pool, |m| out.push(m)).unwrap();
        }
        out
    }

    #[test]
    fn delivers_in_order_once_despite_reordering_and_duplicates() {
        let mut pool = BufPool::new(64);
        let mut rx = ReliableReceiver::new(1 << 20);
        let u = |s: u16| (s, None, vec![s as u8]);
        let got = collect(&mut rx, &[u(2), u(0), u(0), u(1), u(2), u(3)], &mut pool);
        assert_eq!(got, vec![vec![0], vec![1], vec![2], vec![3]]);
    }

    #[test]
    fn reassembles_fragments_and_bounds_size() {
        let mut pool = BufPool::new(64);
        let mut tx = ReliableSender::default();
        let msg: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        tx.push(&msg, MAX_UNFRAGMENTED, &mut pool);
        assert_eq!(tx.units.len(), 5);
        let units: Vec<_> = tx.units.iter().rev().map(|u| (u.seq, u.fragment, u.data.clone())).collect();
        let mut rx = ReliableReceiver::new(1 << 20);
        assert_eq!(collect(&mut rx, &units, &mut pool), vec![msg]);

        // A receiver with a 2000-byte limit refuses a 5-fragment message at its first piece.
        let mut small = ReliableReceiver::new(2000);
        let r = small.on_unit(0, Some((0, 5)), &[0; FRAGMENT_SIZE], &mut pool, |_| {});
        assert!(matches!(r, Err(Violation::MessageTooLarge { .. })));
        // Out-of-order fragment indices are a violation.
        let mut rx = ReliableReceiver::new(1 << 20);
        let r = rx.on_unit(0, Some((1, 3)), &[0; FRAGMENT_SIZE], &mut pool, |_| {});
        assert!(matches!(r, Err(Violation::FragmentOrder { .. })));
    }

    #[test]
    fn ignores_units_outside_the_window() {
        let mut pool = BufPool::new(64);
        let mut rx = ReliableReceiver::new(1 << 20);
        let mut n = 0;
        rx.on_unit(WINDOW, None, b"far", &mut pool, |_| n += 1).unwrap();
        rx.on_unit(WINDOW - 1, None, b"edge", &mut pool, |_| n += 1).unwrap();
        assert_eq!(n, 0);
        assert!(rx.slots.iter().filter(|s| s.is_some()).count() == 1);
    }

    #[test]
    fn sender_acks_pop_in_order() {
        let mut pool = BufPool::new(64);
        let mut tx = ReliableSender::default();
        for i in 0..4u8 {
            tx.push(&[i; 10], MAX_UNFRAGMENTED, &mut pool);
        }
        assert_eq!(tx.queued_bytes(), 40);
        assert!(tx.ack(2, &mut pool));
        assert!(!tx.ack(2, &mut pool));
        assert_eq!(tx.units.len(), 4);
        assert!(tx.ack(0, &mut pool));
        assert_eq!(tx.units.len(), 3);
        assert!(tx.ack(1, &mut pool));
        assert_eq!(tx.units.len(), 1);
        assert_eq!(tx.queued_bytes(), 10);
        assert!(!tx.ack(40, &mut pool));
    }

    #[test]
    fn sequenced_drops_older() {
        let mut last = None;
        assert!(sequenced_accept(&mut last, 5));
        assert!(!sequenced_accept(&mut last, 4));
        assert!(!sequenced_accept(&mut last, 5));
        assert!(sequenced_accept(&mut last, 6));
        let mut w = Some(65535);
        assert!(sequenced_accept(&mut w, 0));
    }
}
