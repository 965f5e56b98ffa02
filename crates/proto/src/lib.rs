//! tickwire's protocol, sans-IO: deterministic given a seed and the time passed in.
//!
//! No sockets, no threads, no system clock, no OS randomness: every call takes `now`
//! in microseconds, and every random choice comes from a seed the caller gives. A
//! whole match of minutes runs in milliseconds over the seeded link simulator
//! ([`sim`], [`netsim`]) and reproduces exactly. `tickwire-runtime` drives the same
//! state machines from a socket, a thread and the system clock.

#![forbid(unsafe_code)]

pub mod clock;
pub mod game;
pub mod jitter;
pub mod netsim;
pub mod relay;
pub mod request;
pub mod rng;
pub mod rollback;
pub mod sim;
pub mod sync;
pub mod tick;
pub mod transport;
pub mod wire;
