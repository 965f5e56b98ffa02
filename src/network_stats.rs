//! `tw_network_stats`: a P2P session's figures for one remote player, for a net
//! overlay, field by field against GGPO's `ggpo_get_network_stats`.

use std::ffi::c_char;
use std::mem::size_of;

use super::args::write_out;
use super::error::{Failure, tw_result};
use super::guard;
use super::rendezvous::{path_parts, write_address};
use super::session::{arg_player, session_failure, tw_session, with_session};
use super::session_kind::SessionKind;

/// A P2P session's figures for one remote player (`tw_session_network_stats`): what a
/// net overlay shows, as GGPO's `GGPONetworkStats` from `ggpo_get_network_stats`.
/// Fixed size (128 bytes): new figures take space from `reserved`.
///
/// | GGPO | here |
/// |---|---|
/// | `network.ping` (ms) | `rtt_us` (µs, smoothed, acknowledgement delay removed) |
/// | `network.kbps_sent` | `kbps_sent` (and `kbps_received`, which GGPO lacks) |
/// | `network.send_queue_len` | `send_queue` |
/// | `network.recv_queue_len` (never filled by GGPO) | `recv_queue` |
/// | `timesync.local_frames_behind` | `-local_frame_advantage` |
/// | `timesync.remote_frames_behind` | `-remote_frame_advantage` |
///
/// Frame advantages are in ticks, fractional, positive when the side that measured
/// is ahead. GGPO estimates the remote frame with the whole RTT; this with half.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct tw_network_stats {
    /// The remote player asked about.
    pub player: u32,
    /// The connection it plays behind (for `tw_session_peer_stats`, which has the
    /// connection's other figures).
    pub peer: u32,
    /// Smoothed round-trip time to the peer, in microseconds.
    pub rtt_us: f64,
    /// Fraction of recent packets to the peer never acknowledged, in [0, 1].
    pub loss: f64,
    /// Kilobits per second sent to the peer (UDP payload, 1 kbit = 1000 bits),
    /// averaged over the last second.
    pub kbps_sent: f64,
    /// Kilobits per second received from the peer.
    pub kbps_received: f64,
    /// Ticks this side is ahead of the peer, measured here on the latest tick: this
    /// side's tick less the peer's last reported tick moved on by the time since and
    /// half the RTT. GGPO's `local_frames_behind` with the sign turned.
    pub local_frame_advantage: f32,
    /// Ticks the peer is ahead of this side, as the peer measured it (its latest
    /// message). GGPO's `remote_frames_behind` with the sign turned.
    pub remote_frame_advantage: f32,
    /// What the time sync acts on: `(local - remote) / 2` averaged over the last 32
    /// ticks, in which an error in the latency estimate cancels. The clock slows down
    /// the side that is ahead.
    pub frames_ahead: f32,
    /// Ticks of this side's local inputs the peer has not acknowledged yet (they are
    /// sent again until it does). About the RTT in ticks plus the input delay.
    pub send_queue: u32,
    /// Ticks of the peer's inputs received for ticks this side has not run yet: the
    /// margin before they would have to be predicted.
    pub recv_queue: u32,
    /// Ticks run on a prediction of the peer's inputs (from its first input not
    /// received to the current tick): a rollback of up to this many ticks is pending.
    /// At `max_prediction` the session stops advancing (WINDOW_FULL).
    pub predicted_ticks: u32,
    /// Time since the peer was last heard from, in microseconds.
    pub silent_us: u64,
    /// A `tw_path`: how this player's datagrams go under a rendezvous (DIRECT or
    /// RELAYED); `TW_PATH_NONE` without one. Took the first 4 of the reserved bytes.
    pub path: u32,
    /// Where they go: the peer's address (DIRECT) or the relay's (RELAYED) as text,
    /// NUL-terminated; empty with `TW_PATH_NONE`.
    pub path_address: [c_char; 48],
    /// Zero.
    pub reserved: u32,
}

impl tw_network_stats {
    fn new(player: u32, s: &tickwire_runtime::P2pPeerStats) -> Self {
        let kbps = |bytes_per_sec: f64| bytes_per_sec * 8.0 / 1000.0;
        tw_network_stats {
            player,
            peer: s.peer,
            rtt_us: s.connection.srtt_us,
            loss: s.connection.loss,
            kbps_sent: kbps(s.connection.sent_bytes_per_sec),
            kbps_received: kbps(s.connection.recv_bytes_per_sec),
            local_frame_advantage: s.sync.local_frame_advantage,
            remote_frame_advantage: s.sync.remote_frame_advantage,
            frames_ahead: s.sync.frames_ahead,
            send_queue: s.sync.send_queue,
            recv_queue: s.sync.recv_queue,
            predicted_ticks: s.sync.predicted_ticks,
            silent_us: s.sync.silent_us,
            path: path_parts(s.path).0 as u32,
            path_address: {
                let mut a = [0; 48];
                write_address(path_parts(s.path).1, &mut a);
                a
            },
            reserved: 0,
        }
    }
}

/// Returns `sizeof(tw_network_stats)` as the library sees it (128). A binding compares
/// it with its own size of the struct to catch a header from another library version.
///
/// Ownership: takes nothing; returns a plain value.
/// Thread-safety: may be called from any thread.
///
/// Returns the size in bytes; never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_network_stats_size() -> usize {
    guard::run_or("tw_network_stats_size", 0, size_of::<tw_network_stats>)
}

/// P2P: copies the net-overlay figures of remote `player` into `*out_stats`: round
/// trip, loss, rates, the frame advantage both ways and the input queues, as GGPO's
/// `ggpo_get_network_stats` (see `tw_network_stats` for the field-by-field mapping).
/// Cheap enough to call every frame. The sync figures are zero until the match runs
/// (SYNCHRONIZED) and the peer is heard from.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_EMPTY` (the player's peer is not connected: not
/// yet, or dropped; `*out_stats` untouched); `TW_RESULT_NULL_ARGUMENT`;
/// `TW_RESULT_INVALID_ARGUMENT` (no such player, or a local player);
/// `TW_RESULT_INVALID_STATE` (not P2P, or the player was not added);
/// `TW_RESULT_BUSY` (another call on the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `out_stats` must be NULL or valid for
/// writing a `tw_network_stats`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_network_stats(
    session: *mut tw_session,
    player: u32,
    out_stats: *mut tw_network_stats,
) -> tw_result {
    with_session("tw_session_network_stats", session, |s| {
        if out_stats.is_null() {
            return Err(Failure::null("out_stats"));
        }
        const WHAT: &str = "per-player network statistics";
        if !matches!(s.kind, SessionKind::P2p(_)) {
            return Err(s.kind.unavailable(WHAT));
        }
        let p = arg_player(s, player)?;
        let SessionKind::P2p(k) = &mut s.kind else { return Err(s.kind.unavailable(WHAT)) };
        let Some(st) = k.peer_stats_of(p).map_err(session_failure)? else { return Ok(tw_result::Empty) };
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_stats, tw_network_stats::new(player, &st)) };
        Ok(tw_result::Ok)
    })
}
