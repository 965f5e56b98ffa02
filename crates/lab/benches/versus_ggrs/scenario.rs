//! One row of the table: peers, input change period, link latency, and the links
//! both libraries share.

use crate::TICK_US;

use tickwire_proto::{JitterModel, LinkConfig, LossModel};

/// Uniform jitter of every link, 0 to this many microseconds.
pub(crate) const JITTER_MAX_US: u64 = 4_000;
/// Bernoulli loss of every link.
pub(crate) const LOSS: f64 = 0.05;

#[derive(Clone, Copy)]
pub(crate) struct Scenario {
    pub(crate) peers: usize,
    pub(crate) period: u64,
    pub(crate) latency_ticks: u64,
    pub(crate) seed: u64,
}

pub(crate) fn link_config(latency_ticks: u64) -> LinkConfig {
    LinkConfig {
        latency_us: (latency_ticks as f64 * TICK_US).round() as u64,
        jitter: JitterModel::Uniform { max_us: JITTER_MAX_US },
        loss: LossModel::Bernoulli { p: LOSS },
        ..LinkConfig::perfect()
    }
}

pub(crate) fn link_seed(seed: u64, from: usize, to: usize) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (((from as u64) << 32) | to as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93)
}
