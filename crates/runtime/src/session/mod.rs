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
//! socket), `settings.rs` their settings (P2P's players and connections are proto's
//! `P2pMatch`), `request.rs` the request being run, `event.rs` what the engine is told,
//! `messages.rs` the reliable side channel (chat, settings) of the networked kinds.

mod engine;
mod event;
mod failure;
mod local;
mod messages;
mod net;
mod p2p;
mod relay_client;
mod relay_server;
mod request;
mod settings;
mod spectator;

use std::path::Path;

pub use engine::EngineLoop;
pub use event::SessionEvent;
pub use failure::{ArgumentError, SessionFailure, StateError};
pub use local::{ReplayPlayer, ReplayStats, SyncTest, SyncTestStats};
pub use messages::{
    MAX_MESSAGE_SIZE, MAX_QUEUED_MESSAGE_BYTES, MAX_UNREAD_MESSAGE_BYTES, MESSAGE_CHANNEL, MessageStats, MessageTarget,
    UNREAD_OVERHEAD,
};
pub use net::{NetStats, Networked};
pub use p2p::{P2pPeerStats, P2pSession, P2pSessionStats, Rendezvous};
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
        Some(b) if b.len() != input_size => Err(ArgumentError::InputSize { got: b.len(), expected: input_size }.into()),
        _ => Ok(()),
    }
}

/// The largest replay file [`ReplayPlayer::load_replay_file`] reads: 1 GiB. A replay is
/// read whole into memory, so this bounds what a path the caller names (a file someone
/// else may have put there) can make the process allocate. At 60 ticks a second that
/// is 34 days of 2 players with 2-byte inputs, or 18 minutes of 255 players with
/// 64-byte inputs. A recording can grow past it; such a replay still loads from memory
/// ([`ReplayPlayer::load_replay`]).
pub const MAX_REPLAY_SIZE: usize = 1 << 30;

/// Bytes a replay takes before its initial state (the replay
/// format).
const REPLAY_HEADER: usize = 28;

/// The largest initial state [`P2pSession::start_recording`] takes: with the replay's
/// header it fits in [`MAX_REPLAY_SIZE`].
pub const MAX_INITIAL_STATE: usize = MAX_REPLAY_SIZE - REPLAY_HEADER;

/// Reads the replay file at `path`: a regular file of at most [`MAX_REPLAY_SIZE`]
/// bytes. Anything else (a FIFO, a directory, a device, a larger file) is refused
/// without reading it; on unix the file is opened non-blocking, so a FIFO with no
/// writer cannot hold the call.
fn read_replay_file(path: &Path) -> Result<Vec<u8>, SessionFailure> {
    use std::io::Read;
    let io =
        |what: &'static str| move |source| SessionFailure::Io { context: format!("{what} {}", path.display()), source };
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Opening a FIFO for reading waits for a writer; non-blocking it returns at once
        // (and the type check below refuses it). Regular files ignore the flag.
        open.custom_flags(libc::O_NONBLOCK);
    }
    let not_a_file = || SessionFailure::from(ArgumentError::NotAFile { path: path.to_path_buf() });
    let file = match open.open(path) {
        Ok(file) => file,
        // Windows refuses to open a directory as a file ("access denied"): say what
        // it is rather than pass on a misleading I/O error.
        Err(_) if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) => return Err(not_a_file()),
        Err(e) => return Err(io("opening")(e)),
    };
    // The type and size of what was opened (fstat), not of what the path names now.
    let meta = file.metadata().map_err(io("reading"))?;
    if !meta.is_file() {
        return Err(not_a_file());
    }
    let too_big =
        |size: u64| SessionFailure::from(ArgumentError::ReplayFileTooLarge { path: path.to_path_buf(), size });
    if meta.len() > MAX_REPLAY_SIZE as u64 {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(meta.len() as usize)
        .map_err(|_| ArgumentError::ReplayFileMemory { path: path.to_path_buf(), size: meta.len() })?;
    // The file may grow while it is read: never read more than one byte past the limit.
    file.take(MAX_REPLAY_SIZE as u64 + 1).read_to_end(&mut bytes).map_err(io("reading"))?;
    if bytes.len() > MAX_REPLAY_SIZE {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Writes `bytes` to `path`, naming both in the error.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), SessionFailure> {
    std::fs::write(path, bytes)
        .map_err(|source| SessionFailure::Io { context: format!("writing {}", path.display()), source })
}

#[cfg(test)]
mod replay_file_tests {
    use super::*;

    #[test]
    fn the_replay_header_size_is_the_formats() {
        let empty = tickwire_proto::ReplayRecorder::new(2, 2, 0, &[]);
        assert_eq!(empty.bytes().len(), REPLAY_HEADER);
    }
}
