//! What carries a host's datagrams: a UDP socket of its own, or the engine (an
//! external carrier: Steam, Epic Online Services, WebRTC data channels, a console's
//! sockets).
//!
//! With an external carrier the engine pushes each datagram it received with the
//! remote it came from (`Host::push_datagrams`), and pulls each datagram to send with
//! the remote it goes to (`Host::pull_datagrams`). Everything else stays in the
//! library as over UDP: the handshake, the AEAD, acks, resends, timers on the network
//! thread. The library never calls into the engine: what the network thread sends
//! between the engine's calls (resends, keepalives) waits in [`ExternalLink`]'s
//! outbound ring for the next pull.
//!
//! Both directions go through rings of fixed slots made when the host starts, so the
//! datagram path allocates nothing; each is bounded, and what does not fit is dropped
//! and counted, as a full socket buffer would drop it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tickwire_proto::wire::MAX_DATAGRAM_SIZE;
use tickwire_proto::{Micros, RemoteId};

/// Datagrams the outbound ring holds for the engine to pull: three 60 Hz frames of a
/// 64-client relay server's updates (64 a tick) with room for resends, about 1.2 MB
/// of slots at 1,200 bytes.
pub const OUTBOUND_RING: usize = 1024;
/// Datagrams pushed while the network thread was in a turn (the engine's push then
/// queues them rather than waiting for the core), until its next look.
pub const INBOUND_RING: usize = 256;

/// The oldest a pushed datagram's arrival may be, before the push: a carrier's clock
/// that disagrees with ours (or garbage) must not put an arrival minutes in the past,
/// where round-trip times and the time sync would take it as network delay. A real
/// wait between the carrier's receive and the push is a frame or two.
pub const MAX_PUSHED_AGE_US: Micros = 1_000_000;

/// How a host's datagrams travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Carrier {
    /// A UDP socket of its own, bound to `HostConfig::bind`. The default.
    #[default]
    Udp,
    /// The engine's: it pushes what arrives and pulls what leaves. The host is known
    /// to its peers as `HostConfig::bind`, which must be a remote's address
    /// ([`RemoteId::to_addr`]), and sends no datagram over `max_datagram_size` bytes.
    External {
        /// The carrier's largest datagram (Steam's unreliable messages: 1,200; EOS
        /// P2P: 1,170; WebRTC data channels: about 1,200).
        max_datagram_size: usize,
    },
}

/// One datagram for the engine's carrier, as [`Host::pull_datagrams`] hands it over.
///
/// [`Host::pull_datagrams`]: crate::Host::pull_datagrams
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outgoing<'a> {
    /// Where it goes.
    pub remote: RemoteId,
    /// Its bytes.
    pub data: &'a [u8],
}

/// One datagram the engine's carrier received, as [`Host::push_datagrams`] takes it.
///
/// [`Host::push_datagrams`]: crate::Host::push_datagrams
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Incoming<'a> {
    /// Where it came from, as the carrier says (an unknown remote is treated like an
    /// unknown UDP source: it must complete the handshake).
    pub remote: RemoteId,
    /// Its bytes; more than the host's largest datagram is dropped and counted.
    pub data: &'a [u8],
    /// How long before the push it arrived, when the carrier knows (Steam's
    /// `m_usecTimeReceived`, a WebRTC stack's receive time); 0: at the push. The time
    /// sync and round-trip times use the arrival. More than [`MAX_PUSHED_AGE_US`] is
    /// taken as that.
    pub age_us: Micros,
}

/// A ring of datagram slots of one size, made once.
#[derive(Debug)]
pub(crate) struct DatagramRing {
    slot_size: usize,
    data: Vec<u8>,
    /// Per slot: the remote, the length and (inbound) the arrival time.
    meta: Vec<(RemoteId, usize, Micros)>,
    head: usize,
    len: usize,
}

impl DatagramRing {
    pub(crate) fn new(slots: usize, slot_size: usize) -> Self {
        DatagramRing {
            slot_size,
            data: vec![0; slots * slot_size],
            meta: vec![(RemoteId(0), 0, 0); slots],
            head: 0,
            len: 0,
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn capacity(&self) -> usize {
        self.meta.len()
    }

    /// The next free slot, if the ring has room: write a datagram into it, then
    /// [`commit`](Self::commit) it.
    pub(crate) fn free_slot(&mut self) -> Option<&mut [u8]> {
        if self.len == self.capacity() {
            return None;
        }
        let i = (self.head + self.len) % self.capacity();
        Some(&mut self.data[i * self.slot_size..(i + 1) * self.slot_size])
    }

    /// Takes the datagram written into [`free_slot`](Self::free_slot).
    pub(crate) fn commit(&mut self, remote: RemoteId, len: usize, at: Micros) {
        debug_assert!(self.len < self.capacity() && len <= self.slot_size);
        let i = (self.head + self.len) % self.capacity();
        self.meta[i] = (remote, len.min(self.slot_size), at);
        self.len += 1;
    }

    /// Copies `data` in; false (nothing kept) when the ring is full or it is longer
    /// than a slot.
    pub(crate) fn push(&mut self, remote: RemoteId, data: &[u8], at: Micros) -> bool {
        if data.len() > self.slot_size {
            return false;
        }
        let Some(slot) = self.free_slot() else { return false };
        slot[..data.len()].copy_from_slice(data);
        self.commit(remote, data.len(), at);
        true
    }

    /// The oldest datagram: its remote, bytes and arrival time.
    pub(crate) fn front(&self) -> Option<(RemoteId, &[u8], Micros)> {
        if self.len == 0 {
            return None;
        }
        let (remote, len, at) = self.meta[self.head];
        let start = self.head * self.slot_size;
        Some((remote, &self.data[start..start + len], at))
    }

    pub(crate) fn pop(&mut self) {
        if self.len > 0 {
            self.head = (self.head + 1) % self.capacity();
            self.len -= 1;
        }
    }
}

/// What the engine's side and the network core share of an external carrier: the two
/// rings, each under its own lock, so that a pull never waits for a turn of the core
/// (the core holds the outbound lock only to write a batch).
#[derive(Debug)]
pub(crate) struct ExternalLink {
    pub max_datagram_size: usize,
    /// Pushed datagrams dropped on the engine's side (longer than the carrier's
    /// largest, or the inbound ring full), until the core counts them.
    refused: AtomicU64,
    pub outbound: Mutex<DatagramRing>,
    pub inbound: Mutex<DatagramRing>,
}

impl ExternalLink {
    pub(crate) fn new(max_datagram_size: usize) -> Self {
        ExternalLink {
            max_datagram_size,
            refused: AtomicU64::new(0),
            // The endpoint writes into a slot of the largest size any of its
            // datagrams may have, and keeps to the carrier's within it.
            outbound: Mutex::new(DatagramRing::new(OUTBOUND_RING, MAX_DATAGRAM_SIZE)),
            inbound: Mutex::new(DatagramRing::new(INBOUND_RING, max_datagram_size)),
        }
    }
}

impl Incoming<'_> {
    /// When it arrived, on the host's clock that reads `now` at the push.
    pub(crate) fn arrival(&self, now: Micros) -> Micros {
        now.saturating_sub(self.age_us.min(MAX_PUSHED_AGE_US))
    }
}

impl ExternalLink {
    /// Counts pushed datagrams dropped on the engine's side.
    pub(crate) fn refused(&self, n: u64) {
        if n > 0 {
            self.refused.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The drops counted since the last call.
    pub(crate) fn take_refused(&self) -> u64 {
        self.refused.swap(0, Ordering::Relaxed)
    }
}

/// What a host's core reads and writes datagrams through.
#[derive(Debug)]
pub(crate) enum Wire {
    /// Its UDP socket.
    Udp(std::net::UdpSocket),
    /// The engine's carrier, through the rings it shares with the host.
    External(std::sync::Arc<ExternalLink>),
}

/// Locks a ring. Nothing panics while one is held (copies and index arithmetic), and
/// its state is consistent after any of its methods, so a poisoned lock is taken as is.
pub(crate) fn lock(ring: &Mutex<DatagramRing>) -> std::sync::MutexGuard<'_, DatagramRing> {
    ring.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_order_and_bounds() {
        let mut r = DatagramRing::new(3, 4);
        assert!(r.push(RemoteId(1), b"ab", 10));
        assert!(!r.push(RemoteId(9), b"toolong", 0), "longer than a slot");
        assert!(r.push(RemoteId(2), b"cdef", 11));
        assert!(r.push(RemoteId(3), b"", 12));
        assert!(!r.push(RemoteId(4), b"x", 13), "full");
        assert_eq!(r.front(), Some((RemoteId(1), &b"ab"[..], 10)));
        r.pop();
        assert!(r.push(RemoteId(4), b"x", 13), "wraps around");
        let mut seen = Vec::new();
        while let Some((remote, data, at)) = r.front() {
            seen.push((remote.0, data.to_vec(), at));
            r.pop();
        }
        assert_eq!(seen, vec![(2, b"cdef".to_vec(), 11), (3, vec![], 12), (4, b"x".to_vec(), 13)]);
        r.pop();
        assert_eq!(r.len(), 0);
    }
}
