//! The sans-IO core: deterministic given a seed and the time passed in.

pub mod clock;
pub mod netsim;
pub mod rng;
pub mod sim;
pub mod transport;
pub mod wire;
