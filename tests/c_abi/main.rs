//! The C ABI's Rust tests, one test binary (linking one binary per file dominated the
//! suite's time): a module per feature, named as the file it is in. Run one with a
//! filter, e.g. `cargo test --test c_abi ffi_relay::`.
//!
//! The steady-state allocation tests (`tests/session_alloc.rs`,
//! `tests/session_message_alloc.rs`, `tests/relay_session_alloc.rs`) are binaries of
//! their own: they install a counting global allocator that sees every thread of the
//! process, so nothing else may run beside them.

#[path = "../support/mod.rs"]
mod support;

mod c_header;
mod ffi_addresses;
mod ffi_carrier;
mod ffi_args;
mod ffi_catch_up;
mod ffi_concurrency;
mod ffi_host_args;
mod ffi_hostile_proxy;
mod ffi_layout;
mod ffi_log;
mod ffi_loopback;
mod ffi_messages;
mod ffi_network_stats;
mod ffi_p2p_timeouts;
mod ffi_p2p_window;
mod ffi_panic;
mod ffi_player_delay;
mod ffi_progress;
mod ffi_relay;
mod ffi_rendezvous;
mod ffi_replay_limits;
mod ffi_security;
mod ffi_session;
mod ffi_session_args;
mod ffi_session_messages;
mod ffi_session_names;
mod ffi_synctest_states;
