//! Seeded link conditioner: one per direction of a link, plus a drifting clock.
//!
//! The scenarios of ticksync.md section 3.1 (S0-S9) are built from these pieces: a
//! [`LinkConditioner`] per direction (latency, jitter, loss, bursts, duplication,
//! reordering, a bandwidth bottleneck, latency steps through
//! [`LinkConditioner::set_config`]) and a [`DriftClock`] per machine (S6). Hitches (S8)
//! are the driver's business: it simply stops calling into a machine for a while.
//!
//! Everything is a pure function of the seed and the sequence of calls, so a run
//! reproduces exactly and the oracle can know the ground truth.

mod drift;
mod model;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::clock::Micros;
use crate::rng::Rng;

pub use drift::DriftClock;
pub use model::{DEFAULT_QUEUE_LIMIT_BYTES, JitterModel, LinkConfig, LossModel};

/// Counters for one direction. They satisfy
/// `sent - dropped_loss - dropped_queue + duplicated == delivered + in_flight()`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Calls to `send`.
    pub sent: u64,
    /// Datagrams handed out by `poll`, duplicates included.
    pub delivered: u64,
    /// Lost on the path (the loss model).
    pub dropped_loss: u64,
    /// Tail-dropped because the bottleneck buffer was full.
    pub dropped_queue: u64,
    /// Extra copies scheduled.
    pub duplicated: u64,
    /// Datagrams held back by the reorder impairment (whether or not anything actually
    /// overtook them depends on the traffic behind them).
    pub reordered: u64,
}

/// One direction of a simulated link.
///
/// A sent datagram goes through, in this order:
/// 1. **Bottleneck** (only if `bandwidth_bytes_per_sec > 0`): a serialising link with a
///    tail-drop buffer. Each datagram occupies `size / bandwidth` seconds and leaves when
///    it has been fully serialised (store and forward, so even an idle link adds that
///    serialisation delay). If the bytes still waiting to be serialised plus this datagram
///    would exceed the buffer, it is dropped (`dropped_queue`). It sits first because it
///    models the sender's access link, where queues build up.
/// 2. **Loss** on the path (`dropped_loss`). Lost datagrams did use the bottleneck.
/// 3. **Delay**: `departure + latency_us + jitter`, then the FIFO rule below.
/// 4. **Reorder**: with probability `reorder`, the datagram is held back `reorder_delay_us`
///    beyond the time the FIFO rule gives it, and it is exempt from that rule, so later
///    datagrams may overtake it.
/// 5. **Duplicate**: with probability `duplicate`, a second copy follows with its own
///    jitter draw (under the FIFO rule, so it never precedes the FIFO-scheduled original).
///
/// **FIFO rule.** Real paths are queues: jitter is queueing delay, and it does not let a
/// datagram pass the one in front. So a datagram is delivered at
/// `max(its own time, the previous non-held-back datagram's delivery)`. Without `reorder`,
/// delivery order is therefore send order. The catch for oracles: under dense traffic the
/// observed delays are somewhat above the jitter model's own quantiles.
///
/// **Ordering and determinism.** `poll` returns due datagrams by delivery time, ties in
/// scheduling order. Each impairment draws from its own stream forked from the seed, so
/// the same seed and the same calls give the same output, and changing one impairment does
/// not change another's draws (e.g. turning on duplication keeps the loss pattern). Jitter,
/// reorder and duplicate are drawn even for lost datagrams for the same reason (datagrams
/// tail-dropped at the bottleneck draw nothing, so a bandwidth change does shift them).
///
/// **Robustness.** Never panics, even on a config that fails [`LinkConfig::validate`]:
/// probabilities act clamped and times saturate. Time is expected not to go backwards
/// across calls, as everywhere in the core; if it does, nothing breaks and the FIFO rule
/// still holds.
///
/// **Allocation.** The only storage is the pending queue (a binary heap) whose capacity
/// is kept, so steady-state traffic does not allocate; [`LinkConditioner::reserve`]
/// sizes it up front. A duplicate is a clone of the item unless the owner supplies the
/// copy ([`LinkConditioner::send_copying`]).
#[derive(Debug, Clone)]
pub struct LinkConditioner<T> {
    cfg: LinkConfig,
    queue: BinaryHeap<Pending<T>>,
    /// Scheduling order, the tie-breaker that makes equal delivery times deterministic.
    next_seq: u64,
    /// Delivery time of the last datagram scheduled under the FIFO rule.
    fifo_floor: Micros,
    /// Gilbert-Elliott state; kept across `set_config` so a new chain continues the burst.
    ge_bad: bool,
    /// When the bottleneck finishes serialising what it has, in µs × `bottleneck_rate`
    /// (bytes × 1e6), so byte-sized steps stay exact at any rate.
    link_free_scaled: u128,
    /// The rate `link_free_scaled` is expressed in; 0 when there is no bottleneck.
    bottleneck_rate: u64,
    rng_loss: Rng,
    rng_jitter: Rng,
    rng_reorder: Rng,
    rng_dup: Rng,
    rng_dup_jitter: Rng,
    stats: LinkStats,
}

#[derive(Debug, Clone)]
struct Pending<T> {
    at: Micros,
    seq: u64,
    item: T,
}

// Reversed so that std's max-heap pops the earliest (at, seq) first.
impl<T> Ord for Pending<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}
impl<T> PartialOrd for Pending<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> PartialEq for Pending<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<T> Eq for Pending<T> {}

const US_PER_SEC: u128 = 1_000_000;

impl<T: Clone> LinkConditioner<T> {
    /// A conditioner on `cfg`, its impairments drawing from streams forked from `seed`.
    pub fn new(cfg: LinkConfig, seed: u64) -> Self {
        let mut root = Rng::new(seed);
        LinkConditioner {
            cfg,
            queue: BinaryHeap::new(),
            next_seq: 0,
            fifo_floor: 0,
            ge_bad: false,
            link_free_scaled: 0,
            bottleneck_rate: cfg.bandwidth_bytes_per_sec,
            rng_loss: root.fork(1),
            rng_jitter: root.fork(2),
            rng_reorder: root.fork(3),
            rng_dup: root.fork(4),
            rng_dup_jitter: root.fork(5),
            stats: LinkStats::default(),
        }
    }

    /// Makes room for `additional` more datagrams in flight, so that traffic up to
    /// that many at once never allocates.
    pub fn reserve(&mut self, additional: usize) {
        self.queue.reserve(additional);
    }

    /// Offers a datagram of `size` bytes to the link at time `now`. A datagram the link
    /// drops (lost or tail-dropped) comes back, so that its owner can reuse its buffer.
    pub fn send(&mut self, now: Micros, size: usize, item: T) -> Option<T> {
        self.send_copying(now, size, item, T::clone)
    }

    /// [`LinkConditioner::send`] making a duplicate with `copy` (an owner that pools
    /// its buffers copies into a pooled one rather than cloning).
    pub fn send_copying(&mut self, now: Micros, size: usize, item: T, copy: impl FnOnce(&T) -> T) -> Option<T> {
        self.stats.sent += 1;
        let Some(departed) = self.enter_bottleneck(now, size) else {
            self.stats.dropped_queue += 1;
            return Some(item);
        };
        let lost = self.draw_loss();
        let extra = self.cfg.jitter.sample_us(&mut self.rng_jitter);
        let held = self.rng_reorder.chance(self.cfg.reorder);
        let duplicate = self.rng_dup.chance(self.cfg.duplicate);
        if lost {
            self.stats.dropped_loss += 1;
            return Some(item);
        }
        let base = departed.saturating_add(self.cfg.latency_us);
        let fifo_at = base.saturating_add(extra).max(self.fifo_floor);
        let copy = duplicate.then(|| copy(&item));
        if held {
            self.stats.reordered += 1;
            self.push(fifo_at.saturating_add(self.cfg.reorder_delay_us), item);
        } else {
            self.fifo_floor = fifo_at;
            self.push(fifo_at, item);
        }
        if let Some(copy) = copy {
            self.stats.duplicated += 1;
            let extra = self.cfg.jitter.sample_us(&mut self.rng_dup_jitter);
            let at = base.saturating_add(extra).max(self.fifo_floor);
            self.fifo_floor = at;
            self.push(at, copy);
        }
        None
    }

    /// The next datagram due at or before `now`, earliest first.
    pub fn poll(&mut self, now: Micros) -> Option<T> {
        self.poll_timed(now).map(|(_, item)| item)
    }

    /// Like [`poll`](Self::poll), also giving the scheduled delivery time (which is <= `now`;
    /// a driver polling late learns how late it was).
    pub fn poll_timed(&mut self, now: Micros) -> Option<(Micros, T)> {
        if self.queue.peek()?.at > now {
            return None;
        }
        let p = self.queue.pop()?;
        self.stats.delivered += 1;
        Some((p.at, p.item))
    }

    /// The earliest pending delivery time, for a driver that sleeps until something happens.
    pub fn next_delivery(&self) -> Option<Micros> {
        self.queue.peek().map(|p| p.at)
    }

    /// Replaces the configuration for datagrams sent from now on; datagrams already in
    /// flight keep their schedule. The FIFO floor persists, so after a latency decrease new
    /// datagrams bunch up behind the last old one instead of overtaking it (on a real path
    /// the queue drains; it does not reorder). Likewise what is already in the bottleneck
    /// drains at the old rate and the link stays busy until it has; a new rate applies to
    /// datagrams entering after the call. A Gilbert-Elliott state carries over to a new
    /// chain. The new config is not validated (see [`LinkConfig::validate`]).
    pub fn set_config(&mut self, cfg: LinkConfig) {
        let new_rate = cfg.bandwidth_bytes_per_sec;
        if new_rate != self.bottleneck_rate {
            self.link_free_scaled = if new_rate == 0 || self.bottleneck_rate == 0 {
                0
            } else {
                // Same instant at which the link becomes free, expressed in the new unit.
                self.link_free_scaled.saturating_mul(new_rate as u128).div_ceil(self.bottleneck_rate as u128)
            };
            self.bottleneck_rate = new_rate;
        }
        if !matches!(cfg.loss, LossModel::GilbertElliott { .. }) {
            self.ge_bad = false;
        }
        self.cfg = cfg;
    }

    /// The current configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.cfg
    }

    /// The counters since the conditioner was made.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// Datagrams scheduled but not yet polled.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }

    /// Bytes waiting in the bottleneck at `now` (the unsent part of the datagram being
    /// serialised included, rounded up); 0 without a bandwidth cap. This is the figure the
    /// buffer limit applies to. It is computed as the link time still booked times the
    /// current rate, so just after a rate change it counts the old backlog at the new rate
    /// (e.g. twice the bytes after doubling the rate): the buffer limit then behaves as a
    /// bound on queueing delay, which is what matters to the traffic behind it.
    pub fn queued_bytes(&self, now: Micros) -> u64 {
        let now_scaled = (now as u128).saturating_mul(self.bottleneck_rate as u128);
        let backlog = self.link_free_scaled.saturating_sub(now_scaled).div_ceil(US_PER_SEC);
        u64::try_from(backlog).unwrap_or(u64::MAX)
    }

    fn push(&mut self, at: Micros, item: T) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.queue.push(Pending { at, seq, item });
    }

    /// The departure time from the bottleneck, or `None` if its buffer is full.
    fn enter_bottleneck(&mut self, now: Micros, size: usize) -> Option<Micros> {
        let rate = self.bottleneck_rate as u128;
        if rate == 0 {
            return Some(now);
        }
        let limit = match self.cfg.queue_limit_bytes {
            0 => DEFAULT_QUEUE_LIMIT_BYTES,
            n => n,
        };
        let now_scaled = (now as u128).saturating_mul(rate);
        let free = self.link_free_scaled.max(now_scaled);
        let backlog = free - now_scaled;
        let size_scaled = size as u128 * US_PER_SEC;
        if backlog.saturating_add(size_scaled) > limit as u128 * US_PER_SEC {
            return None;
        }
        self.link_free_scaled = free.saturating_add(size_scaled);
        Some(u64::try_from(self.link_free_scaled.div_ceil(rate)).unwrap_or(u64::MAX))
    }

    fn draw_loss(&mut self) -> bool {
        match self.cfg.loss {
            LossModel::None => false,
            LossModel::Bernoulli { p } => self.rng_loss.chance(p),
            LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_in_good, loss_in_bad } => {
                let leave = if self.ge_bad { p_bad_to_good } else { p_good_to_bad };
                if self.rng_loss.chance(leave) {
                    self.ge_bad = !self.ge_bad;
                }
                self.rng_loss.chance(if self.ge_bad { loss_in_bad } else { loss_in_good })
            }
        }
    }
}
