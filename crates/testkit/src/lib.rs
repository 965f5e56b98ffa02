//! Test-only helpers shared by the workspace's test suites. Never a dependency of a
//! shipped crate (only `[dev-dependencies]` name it).

pub mod counting_alloc;
