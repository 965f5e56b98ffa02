//! tickwire: a netcode runtime for games.
//!
//! * [`core`] is sans-IO: no sockets, no threads, no wall clock. Time is passed in,
//!   so every protocol behaviour can be replayed exactly from a seed.
//! * [`runtime`] owns the UDP socket and the network thread.
//! * [`ffi`] is the thin C ABI over the runtime (`include/tickwire.h`).

pub mod core;
pub mod ffi;
pub mod lab;
pub mod runtime;
