//! Time synchronisation: the input-lead controller, quantile estimation, redundancy
//! and the remote-tick / interpolation estimator.

pub(crate) mod histogram;
pub(crate) mod interp;
pub(crate) mod lead;
pub(crate) mod redundancy;
pub(crate) mod tail_shape;

pub use lead::{InputLeadController, LeadConfig, LeadControl};
