//! Per-peer budgets ([`PeerLimits`]): what one peer may make this endpoint do, and the
//! pace at which this endpoint sends so that it never goes over the same budget at an
//! honest peer.
//!
//! Both are token buckets fed by `now`, in millionths of a token so that a rate in
//! units a second times microseconds is exact integer arithmetic.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::PeerLimits;
use crate::clock::Micros;
use crate::wire::MAX_DATAGRAM_SIZE;

/// A bucket counts millionths of a token.
const SCALE: i64 = 1_000_000;

/// The longest burst a bucket holds, and the longest time it counts between two
/// updates, in µs.
const MAX_BURST_US: Micros = 10_000_000;

/// `now` minus `last`, in µs (at most [`MAX_BURST_US`]), and moves `last` on.
fn elapsed(last: &mut Micros, now: Micros) -> i64 {
    let dt = now.saturating_sub(*last).min(MAX_BURST_US) as i64;
    *last = (*last).max(now);
    dt
}

/// A level (millionths of a token) after `dt` µs of filling at `rate` tokens a second,
/// up to `cap`.
fn filled(level: i64, dt: i64, rate: i64, cap: i64) -> i64 {
    (level + dt * rate).min(cap)
}

/// The other way round: a level after `dt` µs of draining at `rate`, down to zero (an
/// excess that fades).
fn drained(level: i64, dt: i64, rate: i64) -> i64 {
    (level - dt * rate).max(0)
}

/// Fills at `rate` tokens a second up to `cap` (millionths); may be drawn below zero
/// (our pace: acks and keepalives are never held back).
#[derive(Debug, Clone, Copy)]
struct Bucket {
    level: i64,
    rate: i64,
    cap: i64,
    last: Micros,
}

impl Bucket {
    fn new(rate: u64, burst_us: Micros, now: Micros) -> Self {
        let rate = rate.min(i64::MAX as u64 / MAX_BURST_US) as i64;
        let cap = rate * burst_us.min(MAX_BURST_US) as i64;
        Bucket { level: cap, rate, cap, last: now }
    }

    fn refill(&mut self, now: Micros) {
        self.level = filled(self.level, elapsed(&mut self.last, now), self.rate, self.cap);
    }

    /// When the bucket will hold `tokens` without being drawn on meanwhile: `last` (in
    /// the past, or now) if it holds them already; never if it cannot ever.
    fn holds_at(&self, tokens: u64) -> Micros {
        let missing = tokens as i64 * SCALE - self.level;
        if missing <= 0 {
            return self.last;
        }
        if self.rate == 0 || tokens as i64 * SCALE > self.cap {
            return Micros::MAX;
        }
        // Rounded up: at that microsecond `has` is true.
        self.last.saturating_add(((missing + self.rate - 1) / self.rate) as Micros)
    }

    fn has(&self, tokens: u64) -> bool {
        self.level >= tokens as i64 * SCALE
    }

    fn take(&mut self, tokens: u64) {
        self.level -= tokens as i64 * SCALE;
    }
}

/// What [`RecvBudget::admit`] decides about one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Admit {
    /// Within the budget: charged, go on.
    Within,
    /// Over the budget: drop it unread.
    Throttled,
    /// Over the budget and over it for long enough: close the connection.
    Flooding,
}

/// The receive side: messages and bytes a second, messages per datagram. Two buckets
/// of what the peer may send and two of what it sent over that (fading at the same
/// rates), all four brought up to date at once: so they share one clock and their two
/// rates, and the whole budget is one cache line, read and written at every datagram
/// of every peer.
#[derive(Debug)]
#[repr(align(64))]
pub(super) struct RecvBudget {
    /// When the four levels were last brought up to date.
    last: Micros,
    /// Millionths of a message or byte. What the peer may still send (drawn below zero
    /// by nothing: over the budget, a datagram is refused)...
    messages: i64,
    bytes: i64,
    /// ...and what was dropped for being over it, fading at the budget's own rate:
    /// more than one burst of it means the peer has been sending more than twice its
    /// rates for a while.
    excess_messages: i64,
    excess_bytes: i64,
    /// Messages and bytes a second.
    message_rate: u32,
    byte_rate: u32,
    /// How long a burst at each rate the buckets hold, in µs (at most [`MAX_BURST_US`]).
    burst_us: u32,
    max_frames: u32,
}

impl RecvBudget {
    pub(super) fn new(limits: &PeerLimits, now: Micros) -> Self {
        let mut b = RecvBudget {
            last: now,
            messages: 0,
            bytes: 0,
            excess_messages: 0,
            excess_bytes: 0,
            message_rate: limits.max_messages_per_sec,
            byte_rate: limits.max_bytes_per_sec,
            burst_us: limits.burst_us.min(MAX_BURST_US) as u32,
            max_frames: limits.max_frames_per_datagram,
        };
        (b.messages, b.bytes) = b.caps();
        b
    }

    /// The most each bucket holds: a burst at its rate.
    fn caps(&self) -> (i64, i64) {
        let burst = i64::from(self.burst_us);
        (i64::from(self.message_rate) * burst, i64::from(self.byte_rate) * burst)
    }

    /// Charges a datagram of `len` bytes with `frames` frames (a datagram without
    /// frames costs one message: acks and keepalives are traffic too).
    pub(super) fn admit(&mut self, now: Micros, frames: u32, len: usize) -> Admit {
        let dt = elapsed(&mut self.last, now);
        let (mrate, brate) = (i64::from(self.message_rate), i64::from(self.byte_rate));
        let (mcap, bcap) = self.caps();
        self.messages = filled(self.messages, dt, mrate, mcap);
        self.bytes = filled(self.bytes, dt, brate, bcap);
        self.excess_messages = drained(self.excess_messages, dt, mrate);
        self.excess_bytes = drained(self.excess_bytes, dt, brate);
        let (messages, bytes) = (i64::from(frames.max(1)) * SCALE, len as i64 * SCALE);
        if frames <= self.max_frames && self.messages >= messages && self.bytes >= bytes {
            self.messages -= messages;
            self.bytes -= bytes;
            return Admit::Within;
        }
        self.excess_messages = self.excess_messages.saturating_add(messages);
        self.excess_bytes = self.excess_bytes.saturating_add(bytes);
        if self.excess_messages > mcap || self.excess_bytes > bcap { Admit::Flooding } else { Admit::Throttled }
    }
}

/// The send side: this endpoint paces each connection at three quarters of the
/// budget it grants, so a peer with the same limits never throttles it. The quarter
/// left covers our acks and keepalives, datagrams the network duplicates, and bursts
/// that jitter bunches together on the way.
#[derive(Debug)]
pub(super) struct SendPace {
    max_frames: u32,
    messages: Bucket,
    bytes: Bucket,
}

impl SendPace {
    pub(super) fn new(limits: &PeerLimits, now: Micros) -> Self {
        let three_quarters = |r: u32| r as u64 * 3 / 4;
        SendPace {
            max_frames: limits.max_frames_per_datagram,
            messages: Bucket::new(three_quarters(limits.max_messages_per_sec), limits.burst_us, now),
            bytes: Bucket::new(three_quarters(limits.max_bytes_per_sec), limits.burst_us, now),
        }
    }

    /// Most frames one of our datagrams may carry.
    pub(super) fn max_frames(&self) -> u32 {
        self.max_frames
    }

    /// Whether a full datagram (the most frames, the most bytes) may leave now.
    pub(super) fn ready(&mut self, now: Micros) -> bool {
        self.messages.refill(now);
        self.bytes.refill(now);
        self.messages.has(self.max_frames as u64) && self.bytes.has(MAX_DATAGRAM_SIZE as u64)
    }

    /// When [`ready`](Self::ready) will next say yes, if nothing is sent meanwhile: a
    /// time in the past when it would now. What the pace held back waits for it.
    pub(super) fn ready_at(&self) -> Micros {
        let messages = self.messages.holds_at(self.max_frames as u64);
        messages.max(self.bytes.holds_at(MAX_DATAGRAM_SIZE as u64))
    }

    /// Charges a datagram that left, counted as the receiver counts it. Acks and
    /// keepalives are never held back; they may draw the buckets below zero.
    pub(super) fn sent(&mut self, now: Micros, frames: u32, len: usize) {
        self.messages.refill(now);
        self.bytes.refill(now);
        self.messages.take(frames.max(1) as u64);
        self.bytes.take(len as u64);
    }
}

/// Who was dropped for misbehaving (flooding, or breaking the protocol), and until
/// when a new handshake from them is refused: an address (its `address_key`) and, for
/// a connect token, its client id. Each drop within [`BACKOFF_FORGET_US`] of the end of
/// the last wait doubles the wait, from [`BACKOFF_FIRST_US`] up to [`BACKOFF_MAX_US`]:
/// a peer dropped once by a bad moment is back in a second, one that floods again at
/// once spends most of its time waiting instead of costing us a handshake and a flood
/// each time. Bounded: past [`BACKOFFS_MAX`] entries the one whose wait ended first
/// is forgotten. A `BTreeMap`, so that which one that is never depends on a hash seed.
#[derive(Debug, Default)]
pub(super) struct Backoffs {
    waits: BTreeMap<BackoffKey, Backoff>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum BackoffKey {
    Address(IpAddr),
    ClientId(u64),
}

#[derive(Debug, Clone, Copy)]
struct Backoff {
    until: Micros,
    wait: Micros,
}

/// The first wait, and the longest.
pub(super) const BACKOFF_FIRST_US: Micros = 1_000_000;
pub(super) const BACKOFF_MAX_US: Micros = 60_000_000;
/// A drop this long after the end of the last wait starts again at the first wait:
/// twice the longest, so that a peer flooding once a minute still meets the longest.
pub(super) const BACKOFF_FORGET_US: Micros = 2 * BACKOFF_MAX_US;
/// Entries kept at most. A drop takes a full handshake (a proven address) and a flood
/// over a whole burst, so entries come slowly; this is far more than are ever waiting
/// at once, and a few hundred KB at most.
pub(super) const BACKOFFS_MAX: usize = 4_096;

impl Backoffs {
    /// `key` was dropped at `now`: it waits the next wait of its series.
    pub(super) fn dropped(&mut self, now: Micros, key: BackoffKey) {
        let wait = match self.waits.get(&key) {
            Some(b) if now < b.until + BACKOFF_FORGET_US => (b.wait * 2).min(BACKOFF_MAX_US),
            _ => BACKOFF_FIRST_US,
        };
        if self.waits.len() >= BACKOFFS_MAX && !self.waits.contains_key(&key) {
            // A scan, at the cap only: drops are rare (see `BACKOFFS_MAX`).
            if let Some(oldest) = self.waits.iter().min_by_key(|(_, b)| b.until).map(|(k, _)| *k) {
                self.waits.remove(&oldest);
            }
        }
        self.waits.insert(key, Backoff { until: now + wait, wait });
    }

    /// Whether `key` still waits at `now`.
    pub(super) fn waiting(&self, now: Micros, key: BackoffKey) -> bool {
        self.waits.get(&key).is_some_and(|b| now < b.until)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.waits.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> PeerLimits {
        PeerLimits {
            max_frames_per_datagram: 10,
            max_messages_per_sec: 1_000,
            max_bytes_per_sec: 100_000,
            burst_us: 100_000,
            max_recv_queue_bytes: 10_000,
        }
    }

    /// The receive budget is read and written at every datagram: one cache line.
    #[test]
    fn the_receive_budget_is_one_cache_line() {
        assert_eq!((std::mem::size_of::<RecvBudget>(), std::mem::align_of::<RecvBudget>()), (64, 64));
    }

    /// The largest rates and burst a `PeerLimits` can name neither overflow nor refuse
    /// what they allow.
    #[test]
    fn the_largest_limits_hold() {
        let max = PeerLimits {
            max_frames_per_datagram: u32::MAX,
            max_messages_per_sec: u32::MAX,
            max_bytes_per_sec: u32::MAX,
            burst_us: Micros::MAX,
            max_recv_queue_bytes: usize::MAX,
        };
        let mut b = RecvBudget::new(&max, 0);
        for t in [0, 1, 10_000_000, Micros::MAX / 2, Micros::MAX] {
            assert_eq!(b.admit(t, 64, 1_200), Admit::Within);
        }
    }

    #[test]
    fn a_burst_then_the_rate_then_throttled() {
        let mut b = RecvBudget::new(&limits(), 0);
        // A burst of 100 messages at once.
        for _ in 0..10 {
            assert_eq!(b.admit(0, 10, 100), Admit::Within);
        }
        assert_eq!(b.admit(0, 1, 100), Admit::Throttled);
        // One message a millisecond is exactly the rate.
        for t in 1..=500 {
            assert_eq!(b.admit(t * 1_000, 1, 100), Admit::Within, "at {t} ms");
        }
        // A datagram without frames costs one message.
        assert_eq!(b.admit(500_000, 0, 20), Admit::Throttled);
        assert_eq!(b.admit(501_000, 0, 20), Admit::Within);
    }

    #[test]
    fn too_many_frames_in_one_datagram_is_over_budget() {
        let mut b = RecvBudget::new(&limits(), 0);
        assert_eq!(b.admit(0, 11, 100), Admit::Throttled);
        assert_eq!(b.admit(0, 10, 100), Admit::Within, "nothing was charged");
    }

    #[test]
    fn bytes_are_a_budget_of_their_own() {
        let mut b = RecvBudget::new(&limits(), 0);
        // 10,000 bytes of burst: eight 1,200-byte datagrams fit, the ninth does not.
        for _ in 0..8 {
            assert_eq!(b.admit(0, 1, 1_200), Admit::Within);
        }
        assert_eq!(b.admit(0, 1, 1_200), Admit::Throttled);
    }

    #[test]
    fn more_than_twice_the_rate_for_a_while_is_flooding_less_is_only_throttled() {
        // 1.5 times the message rate for 10 s: throttled, never flooding.
        let mut b = RecvBudget::new(&limits(), 0);
        let (mut within, mut throttled) = (0, 0);
        for i in 0..15_000u64 {
            match b.admit(i * 10_000 / 15, 1, 10) {
                Admit::Within => within += 1,
                Admit::Throttled => throttled += 1,
                Admit::Flooding => panic!("flooding at 1.5x, datagram {i}"),
            }
        }
        assert!(throttled > 4_000 && within >= 10_000, "{within} within, {throttled} throttled");
        // Three times the rate: flooding once the dropped excess passes one burst (100
        // messages) net of its fading (at the rate): after about 100 ms.
        let mut b = RecvBudget::new(&limits(), 0);
        let first = (0..10_000u64).find(|i| b.admit(i * 1_000 / 3, 1, 10) == Admit::Flooding).unwrap();
        let at_us = first * 1_000 / 3;
        assert!((100_000..=200_000).contains(&at_us), "flooding after {at_us} us");
    }

    #[test]
    fn the_pace_lets_three_quarters_of_the_budget_through() {
        let l = limits();
        let mut pace = SendPace::new(&l, 0);
        let mut budget = RecvBudget::new(&l, 0);
        let mut sent = 0;
        // Full datagrams (10 frames, 1,200 bytes) as fast as the pace allows for 10 s.
        for t in 0..10_000u64 {
            let now = t * 1_000;
            while pace.ready(now) {
                pace.sent(now, 10, 1_200);
                assert_eq!(budget.admit(now, 10, 1_200), Admit::Within, "at {t} ms");
                sent += 1;
            }
            // An ack-only datagram every 10 ms is never held back.
            if t % 10 == 0 {
                pace.sent(now, 0, 20);
                assert_eq!(budget.admit(now, 0, 20), Admit::Within, "ack at {t} ms");
            }
        }
        // Bytes bind: 75,000 B/s minus 2,000 of acks, in 1,200-byte datagrams.
        assert!((590..=620).contains(&sent), "{sent} datagrams in 10 s");
    }

    /// `ready_at` names the first microsecond at which `ready` says yes again.
    #[test]
    fn ready_at_is_when_the_pace_is_ready_again() {
        let l = limits();
        let mut pace = SendPace::new(&l, 0);
        assert_eq!(pace.ready_at(), 0, "full at the start");
        let mut now = 0;
        for _ in 0..50 {
            now += 37;
            while pace.ready(now) {
                pace.sent(now, 10, 700);
            }
            let at = pace.ready_at();
            assert!(at > now, "not ready at {now}, so later");
            // A copy asked a microsecond early says no; at `at` it says yes.
            let mut early = SendPace { ..pace };
            assert!(!early.ready(at - 1), "ready at {} already", at - 1);
            assert!(pace.ready(at), "not ready at {at}");
            now = at;
        }
    }

    /// The backoffs stay bounded under drops from many addresses,
    /// forgetting the wait that ended first, and keep the newest.
    #[test]
    fn backoffs_stay_bounded_under_many_addresses() {
        let mut b = Backoffs::default();
        let key = |i: u32| BackoffKey::Address(IpAddr::from(i.to_be_bytes()));
        let n = 3 * BACKOFFS_MAX as u32;
        for i in 0..n {
            b.dropped(i as Micros * 10, key(i));
            assert!(b.len() <= BACKOFFS_MAX);
        }
        let now = n as Micros * 10;
        assert_eq!(b.len(), BACKOFFS_MAX);
        assert!(b.waiting(now, key(n - 1)), "the newest waits");
        assert!(b.waiting(now, key(n - BACKOFFS_MAX as u32)), "the oldest kept waits");
        assert!(!b.waiting(now, key(n - BACKOFFS_MAX as u32 - 1)), "the one before it was forgotten");
        // A client id is its own key, beside the addresses.
        b.dropped(now, BackoffKey::ClientId(7));
        assert!(b.waiting(now, BackoffKey::ClientId(7)) && !b.waiting(now, BackoffKey::ClientId(8)));
        assert_eq!(b.len(), BACKOFFS_MAX);
    }
}
