//! Time synchronisation: the input-lead controller, quantile estimation, redundancy
//! and the remote-tick / interpolation estimator.

pub mod histogram;
pub mod interp;
pub mod lead;
pub mod redundancy;
pub mod tail_shape;

pub use histogram::ForgettingHistogram;
pub use lead::{InputLeadController, LeadConfig, LeadControl};
