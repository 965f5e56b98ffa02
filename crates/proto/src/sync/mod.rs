//! Time synchronisation: the input-lead controller, quantile estimation, redundancy
//! and the remote-tick / interpolation estimator.

mod histogram;
pub(crate) mod interp;
mod lead;
pub(crate) mod redundancy;
mod tail_shape;

pub use lead::{InputLeadController, LeadConfig, LeadControl, ServerTally};
