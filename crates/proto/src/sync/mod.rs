//! Time synchronisation: the input-lead controller, quantile estimation, redundancy
//! and the remote-tick / interpolation estimator.

mod histogram;
pub(crate) mod interp;
mod late_steps;
mod lead;
pub(crate) mod redundancy;
mod tail_shape;

pub use late_steps::ServerTally;
pub use lead::{InputLeadController, LeadConfig, LeadControl};
