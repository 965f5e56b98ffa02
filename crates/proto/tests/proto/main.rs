//! The protocol's tests on the simulator and by hand-driven networks, one test binary
//! (linking one binary per file dominated the suite's time): a module per feature,
//! named as the file it is in. Run one with a filter, e.g. `cargo test -p
//! tickwire-proto --test proto relay_scale::`.
//!
//! Eight are binaries of their own (`tests/*.rs`), each saying why: they install a
//! counting global allocator, which sees every thread of the process, so nothing else
//! may run beside them (`transport_alloc.rs`, `rollback_alloc.rs`,
//! `relay_predict_alloc.rs`, `relay_server_alloc.rs`, `transport_hostile.rs`, and the
//! heap-peak tests through `support/heap.rs`: `hostile_p2p.rs`, `hostile_relay.rs`,
//! `transport_per_address.rs`). The fuzz corpus replay is `tickwire-fuzzing`'s
//! (`crates/fuzzing/tests/fuzz_corpus.rs`).

#[path = "../support/mod.rs"]
mod support;

mod carrier_protection;
mod engine_contract;
mod config_problems;
mod datagram_limit;
mod hostile_p2p_clock;
mod p2p_match;
mod hostile_p2p_disconnects;
mod hostile_p2p_progress;
mod hostile_p2p_scoreboard;
mod hostile_spectator;
mod nat_traversal;
mod relay_bandwidth;
mod relay_bursts;
mod relay_catch_up;
mod relay_client_results;
mod relay_delay_spill;
mod relay_hosted;
mod relay_identity;
mod relay_leave;
mod relay_predict;
mod relay_retry;
mod relay_schedule;
mod relay_roster;
mod relay_scale;
mod relay_sync;
mod rollback_delay;
mod rollback_desync;
mod rollback_disconnect;
mod rollback_equivocation;
mod rollback_modes;
mod rollback_overlay;
mod rollback_p2p;
mod rollback_progress;
mod rollback_replay;
mod rollback_spectator;
mod rollback_synctest;
mod serve_matches;
mod transport_acks;
mod transport_admission;
mod transport_backoff;
mod transport_ciphers;
mod transport_crypto;
mod transport_denials;
mod transport_long_loss;
mod transport_pace;
mod transport_security;
mod transport_sim;
