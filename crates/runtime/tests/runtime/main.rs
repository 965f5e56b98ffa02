//! The runtime's tests over real loopback sockets, one test binary (linking one binary
//! per file dominated the suite's time): a module per feature, named as the file it is
//! in. Run one with a filter, e.g. `cargo test -p tickwire-runtime --test runtime
//! runtime_loopback::`.
//!
//! Three are binaries of their own, because they measure the whole process: the
//! allocation test (`runtime_alloc.rs`) and the hostile floods (`runtime_hostile_flood.rs`)
//! install a counting global allocator that sees every thread, and the shared network
//! thread's test (`runtime_service.rs`) counts the process's network threads, which
//! must be none before its first host.

mod runtime_carrier;
mod runtime_idle;
mod runtime_loopback;
mod runtime_messages;
mod runtime_rendezvous;
mod runtime_stun;
