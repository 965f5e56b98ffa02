//! Helpers shared by the protocol's tests (`tests/proto/`, as `crate::support`), each
//! compiled once there. The binaries of their own (`tests/*.rs`) include the few they
//! need by path, as siblings at their crate root, so a helper names another as
//! `super::`. `heap.rs` is not here: it installs a counting global allocator, which
//! only those binaries may have.

pub mod datagrams;
pub mod forge;
pub mod hand_net;
pub mod relay_game;
pub mod relay_world;
pub mod serve_world;
pub mod toy_game;
pub mod xoshiro_attack;
