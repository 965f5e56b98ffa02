//! Sessions for Rust users: one type per kind, each with only the calls that make
//! sense for it and its own statistics.
//!
//! | type | what it is | socket |
//! |---|---|---|
//! | [`P2pSession`] | GGPO-style rollback between peers | yes |
//! | [`SyncTest`] | local determinism check: every tick rolled back and compared | no |
//! | [`Spectator`] | watches a P2P match through one of its peers | yes |
//! | [`ReplayPlayer`] | plays a recorded match back | no |
//! | [`RelayServer`] | the relay topology's server: master clock, jitter buffers | yes |
//! | [`RelayClient`] | a relay client with prediction and reconciliation | yes |
//!
//! Each is built from its settings ([`P2pSettings`], ...), which share one
//! [`GameShape`](tickwire_proto::GameShape) and check themselves with
//! `validate()`. Setup calls come first, then `start`, then the engine loop of
//! [`EngineLoop`], which every type has: `ticks_due` once per frame, per due tick the
//! inputs, `advance` and `poll_request` until `None`, then `poll_event`. The socket
//! types also have the calls of [`Networked`].
//!
//! Layout: `engine.rs` is the shared loop and the lifecycle (`Phase`), `net.rs` the
//! socket side, one file per session type (`local.rs` holds the two without a
//! socket), `settings.rs` their settings, `roster.rs` P2P's players and connections,
//! `request.rs` the request being run, `event.rs` what the engine is told.

mod engine;
mod event;
mod failure;
mod local;
mod net;
mod p2p;
mod relay_client;
mod relay_server;
mod request;
mod roster;
mod settings;
mod spectator;

use std::path::Path;

pub use engine::EngineLoop;
pub use event::SessionEvent;
pub use failure::SessionFailure;
pub use local::{ReplayPlayer, ReplayStats, SyncTest, SyncTestStats};
pub use net::{NetStats, Networked};
pub use p2p::{P2pSession, P2pSessionStats};
pub use relay_client::{RelayClient, RelayClientStats};
pub use relay_server::{RelayPlayerStats, RelayServer, RelayServerStats};
pub use request::{PolledRequest, RequestKind};
pub use settings::{
    MAX_PREDICTION, P2pSettings, RelayClientSettings, RelayServerSettings, ReplaySettings, SpectatorSettings,
    SyncTestSettings,
};
pub use spectator::{Spectator, SpectatorStats};

/// Checks a prediction input's length against the game's input size.
fn check_input_len(input: Option<&[u8]>, input_size: usize) -> Result<(), SessionFailure> {
    match input {
        Some(b) if b.len() != input_size => {
            Err(failure::argument(format!("input of {} bytes, expected {input_size}", b.len())))
        }
        _ => Ok(()),
    }
}

/// Writes `bytes` to `path`, naming both in the error.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), SessionFailure> {
    std::fs::write(path, bytes)
        .map_err(|source| SessionFailure::Io { context: format!("writing {}", path.display()), source })
}
