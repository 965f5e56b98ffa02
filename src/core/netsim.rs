//! Seeded link conditioner: one per direction of a link.
//!
//! STUB: the implementation is being written; the public API below is the contract.

use crate::core::clock::Micros;

/// How per-datagram delay varies around the base latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JitterModel {
    None,
    /// Extra delay uniform in [0, max_us].
    Uniform { max_us: u64 },
    /// Extra delay |N(0, sigma)|... see implementation docs.
    Gaussian { sigma_us: f64 },
    /// Heavy-tailed extra delay (Pareto with `scale_us` minimum and tail index `shape`).
    Pareto { scale_us: f64, shape: f64 },
}

/// Which datagrams are dropped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossModel {
    None,
    Bernoulli { p: f64 },
    /// Two-state Markov chain: good and bad states with their own loss probabilities.
    GilbertElliott { p_good_to_bad: f64, p_bad_to_good: f64, loss_in_good: f64, loss_in_bad: f64 },
}

/// One direction of a simulated link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkConfig {
    pub latency_us: u64,
    pub jitter: JitterModel,
    pub loss: LossModel,
    pub duplicate: f64,
    pub reorder: f64,
    pub reorder_delay_us: u64,
    pub bandwidth_bytes_per_sec: u64,
    pub queue_limit_bytes: usize,
}

impl LinkConfig {
    pub fn perfect() -> Self {
        LinkConfig {
            latency_us: 0,
            jitter: JitterModel::None,
            loss: LossModel::None,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay_us: 0,
            bandwidth_bytes_per_sec: 0,
            queue_limit_bytes: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub sent: u64,
    pub delivered: u64,
    pub dropped_loss: u64,
    pub dropped_queue: u64,
    pub duplicated: u64,
    pub reordered: u64,
}

pub struct LinkConditioner<T> {
    _cfg: LinkConfig,
    _q: Vec<T>,
}

impl<T: Clone> LinkConditioner<T> {
    pub fn new(cfg: LinkConfig, _seed: u64) -> Self {
        LinkConditioner { _cfg: cfg, _q: Vec::new() }
    }
    pub fn send(&mut self, _now: Micros, _size: usize, _item: T) {
        todo!()
    }
    pub fn poll(&mut self, _now: Micros) -> Option<T> {
        todo!()
    }
    pub fn next_delivery(&self) -> Option<Micros> {
        todo!()
    }
}
