//! The sans-IO core: deterministic given a seed and the time passed in.

pub mod clock;
pub mod jitter;
pub mod netsim;
pub mod rng;
pub mod rollback;
pub mod session;
pub mod sim;
pub mod sync;
pub mod tick;
pub mod transport;
pub mod wire;
