//! The lab: scenarios S0-S9 on the deterministic simulator, tickwire's time sync and
//! three baselines on identical seeded networks, scored against the oracle.

pub mod metrics;
pub mod model;
pub mod scenario;
