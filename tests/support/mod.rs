//! Helpers shared by the C ABI's tests (`tests/c_abi/`, as `crate::support`): `common`
//! for hosts and argument checks, `abi_engine` for sessions driven by an engine. The
//! allocation tests (`tests/*_alloc.rs`) include `abi_engine.rs` alone, by path.

pub mod abi_engine;
pub mod common;
