//! `tw_session_event`: the fixed-size event `tw_session_poll_event` copies out.

use std::ffi::c_char;
use std::mem::size_of;

use super::error::copy_c_string;
use super::guard;
use crate::core::rollback::Event;
use crate::runtime::session::SessionEvent;

/// `tw_session_event_peer.player` when no player is behind the connection (a spectator,
/// the watched host, a refused connection).
pub const TW_NO_PLAYER: u32 = 0xFFFF_FFFF;

/// What happened (`tw_session_event.kind`). Events inform; the simulation stays
/// correct whether or not the engine reacts.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_session_event_kind {
    /// Never written by the library.
    None = 0,
    /// Every peer has been heard from; ticks start being due. No data.
    Synchronized = 1,
    /// A connection is up: a remote player's peer, a spectator or the watched host
    /// (`data.peer`).
    PeerConnected = 2,
    /// Nothing heard from `peer` for `disconnect_notify_ms` (`data.peer`,
    /// `disconnect_in_us` says when it will be dropped).
    PeerInterrupted = 3,
    /// An interrupted peer was heard again (`data.peer`).
    PeerResumed = 4,
    /// The session gave up on `peer`, or its connection closed (`data.peer`).
    PeerDisconnected = 5,
    /// A player's inputs count as disconnected from `data.player.tick` on; every peer
    /// agrees on the tick and re-simulates from it (`data.player`).
    PlayerDisconnected = 6,
    /// The prediction window is full at `data.tick.tick`, waiting for `peer`'s inputs.
    PredictionWindowFull = 7,
    /// A rollback needed a state older than the ring holds (`data.tick.tick`):
    /// consistency can no longer be guaranteed.
    RollbackTooFar = 8,
    /// The checksums of a confirmed tick differ from `peer`'s (`data.desync`).
    Desync = 9,
    /// A desync dump is ready: `tw_session_take_desync_dump` or
    /// `tw_session_write_desync_dump` (`data.tick.tick` is the desync's tick).
    DesyncDumpReady = 10,
    /// SYNCTEST: re-simulating a tick gave another checksum (`data.synctest_mismatch`).
    SynctestMismatch = 11,
    /// A spectator (`peer`) fell too far behind and was dropped.
    SpectatorDropped = 12,
    /// A connection from an address nobody registered was refused and closed (`peer`).
    ConnectionRejected = 13,
    /// The network thread died (`data.fatal`): destroy the session.
    Fatal = 14,
}

/// PEER_CONNECTED, PEER_INTERRUPTED, PEER_RESUMED, PEER_DISCONNECTED.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_peer {
    /// The lowest player index behind the connection, or `TW_NO_PLAYER`.
    pub player: u32,
    /// Zero.
    pub reserved0: u32,
    /// PEER_INTERRUPTED: microseconds of further silence before the peer is dropped.
    pub disconnect_in_us: u64,
}

/// PLAYER_DISCONNECTED.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_player {
    /// The player index.
    pub player: u32,
    /// First tick simulated with a disconnected input. A later event for the same
    /// player with an earlier tick supersedes this one.
    pub tick: u32,
}

/// PREDICTION_WINDOW_FULL, ROLLBACK_TOO_FAR, DESYNC_DUMP_READY.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_tick {
    /// The tick concerned.
    pub tick: u32,
}

/// DESYNC.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_desync {
    /// The confirmed tick whose checksums differ.
    pub tick: u32,
    /// Zero.
    pub reserved0: u32,
    /// This peer's checksum.
    pub local_checksum: u64,
    /// The other peer's checksum.
    pub remote_checksum: u64,
}

/// SYNCTEST_MISMATCH.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_mismatch {
    /// The tick whose starting state differs.
    pub tick: u32,
    /// Zero.
    pub reserved0: u32,
    /// Checksum of the first simulation.
    pub expected_checksum: u64,
    /// Checksum after the rollback.
    pub actual_checksum: u64,
}

/// FATAL.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_fatal {
    /// What went wrong, as NUL-terminated text (cut short if longer).
    pub message: [c_char; 120],
}

/// The per-kind part of a `tw_session_event`. Read only the member named by `kind`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union tw_session_event_data {
    pub peer: tw_session_event_peer,
    pub player: tw_session_event_player,
    pub tick: tw_session_event_tick,
    pub desync: tw_session_event_desync,
    pub synctest_mismatch: tw_session_event_mismatch,
    pub fatal: tw_session_event_fatal,
    /// Fixes the size and alignment, so new kinds never change `sizeof(tw_session_event)`.
    pub reserved: [u64; 15],
}

/// An event polled with `tw_session_poll_event`. Fixed size (128 bytes), no pointers.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tw_session_event {
    /// One of `tw_session_event_kind`.
    pub kind: u32,
    /// The connection it concerns (0 if none): a peer id as in `tw_session_peer_stats`.
    pub peer: u32,
    /// The member named by `kind`.
    pub data: tw_session_event_data,
}

impl std::fmt::Debug for tw_session_event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("tw_session_event").field("kind", &self.kind).field("peer", &self.peer).finish_non_exhaustive()
    }
}

impl tw_session_event {
    /// An all-zero event (`TW_SESSION_EVENT_KIND_NONE`).
    pub fn zeroed() -> Self {
        tw_session_event { kind: 0, peer: 0, data: tw_session_event_data { reserved: [0; 15] } }
    }

    /// The C form of `ev`; `player_of` maps a connection to its lowest player index.
    pub(crate) fn new(ev: &SessionEvent, player_of: impl Fn(u32) -> Option<usize>) -> Self {
        use tw_session_event_kind as K;
        let mut out = tw_session_event::zeroed();
        let peer_data = |peer: u32, disconnect_in_us: u64| tw_session_event_peer {
            player: player_of(peer).map_or(TW_NO_PLAYER, |p| p as u32),
            reserved0: 0,
            disconnect_in_us,
        };
        let (kind, peer) = match *ev {
            SessionEvent::PeerConnected { peer, player } => {
                out.data.peer = tw_session_event_peer {
                    player: player.map_or(TW_NO_PLAYER, |p| p as u32),
                    reserved0: 0,
                    disconnect_in_us: 0,
                };
                (K::PeerConnected, peer)
            }
            SessionEvent::ConnectionRejected { peer } => (K::ConnectionRejected, peer),
            SessionEvent::Fatal(ref message) => {
                let mut f = tw_session_event_fatal { message: [0; 120] };
                // SAFETY: `f.message` is a local array of exactly the length passed.
                unsafe { copy_c_string(message.as_bytes(), f.message.as_mut_ptr(), f.message.len()) };
                out.data.fatal = f;
                (K::Fatal, 0)
            }
            SessionEvent::Core(e) => match e {
                Event::Synchronized => (K::Synchronized, 0),
                Event::PeerInterrupted { peer, disconnect_in_us } => {
                    out.data.peer = peer_data(peer, disconnect_in_us);
                    (K::PeerInterrupted, peer)
                }
                Event::PeerResumed { peer } => {
                    out.data.peer = peer_data(peer, 0);
                    (K::PeerResumed, peer)
                }
                Event::PeerDisconnected { peer } => {
                    out.data.peer = peer_data(peer, 0);
                    (K::PeerDisconnected, peer)
                }
                Event::PlayerDisconnected { player, tick } => {
                    out.data.player = tw_session_event_player { player: player as u32, tick };
                    (K::PlayerDisconnected, 0)
                }
                Event::PredictionWindowFull { tick, peer } => {
                    out.data.tick = tw_session_event_tick { tick };
                    (K::PredictionWindowFull, peer)
                }
                Event::RollbackTooFar { tick } => {
                    out.data.tick = tw_session_event_tick { tick };
                    (K::RollbackTooFar, 0)
                }
                Event::Desync { tick, local, remote, peer } => {
                    out.data.desync =
                        tw_session_event_desync { tick, reserved0: 0, local_checksum: local, remote_checksum: remote };
                    (K::Desync, peer)
                }
                Event::DesyncDumpReady { tick } => {
                    out.data.tick = tw_session_event_tick { tick };
                    (K::DesyncDumpReady, 0)
                }
                Event::SyncTestMismatch { tick, expected, actual } => {
                    out.data.synctest_mismatch =
                        tw_session_event_mismatch { tick, reserved0: 0, expected_checksum: expected, actual_checksum: actual };
                    (K::SynctestMismatch, 0)
                }
                Event::SpectatorDropped { peer } => (K::SpectatorDropped, peer),
            },
        };
        out.kind = kind as u32;
        out.peer = peer;
        out
    }
}

/// Returns `sizeof(tw_session_event)` as the library sees it (128). Thread-safe;
/// never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_event_size() -> usize {
    guard::run_or("tw_session_event_size", 0, size_of::<tw_session_event>)
}
