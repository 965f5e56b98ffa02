//! `tw_session_stats`: a session's counters and gauges, copied into caller memory.

use std::mem::size_of;

use super::guard;
use crate::runtime::session::SessionStats;

/// Figures of a session (`tw_session_get_stats`); zero where the mode has no such
/// figure. Fixed size (256 bytes): new figures take space from `reserved`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct tw_session_stats {
    /// Non-zero once started and every connection is up.
    pub running: u32,
    /// The session's `tw_session_mode`.
    pub mode: u32,
    /// The next tick to simulate.
    pub current_tick: u32,
    /// Every input before this tick is final: the engine may treat the state at its
    /// start as settled (P2P: confirmed by every peer).
    pub confirmed_tick: u32,
    /// P2P: mean ticks this peer runs ahead of the others (negative: behind).
    pub frames_ahead: f32,
    /// P2P: the longest rollback so far, in ticks.
    pub max_rollback: u32,
    /// P2P: the tick clock's current time scale (1.0 = real time; the time sync
    /// slows down the peer that is ahead).
    pub time_scale: f64,
    /// P2P: rollbacks done.
    pub rollbacks: u64,
    /// P2P: ticks re-simulated in total.
    pub resimulated_ticks: u64,
    /// P2P: ticks skipped because the prediction window was full.
    pub window_full_ticks: u64,
    /// P2P: checksums of confirmed ticks compared with peers.
    pub checks_compared: u64,
    /// P2P: desyncs detected.
    pub desyncs: u64,
    /// Session messages refused by strict decoding or from unknown peers.
    pub malformed_messages: u64,
    /// P2P: session messages the transport refused to queue.
    pub send_errors: u64,
    /// SYNCTEST: mismatches found.
    pub synctest_mismatches: u64,
    /// Incoming connections from unregistered addresses, refused.
    pub rejected_connections: u64,
    /// Bytes sent on the socket (all connections, headers included).
    pub bytes_sent: u64,
    /// Bytes received on the socket.
    pub bytes_received: u64,
    /// SPECTATOR: ticks received and not played yet.
    pub frames_behind: u32,
    /// Connections up (remote players' peers, spectators, the watched host).
    pub connected_peers: u32,
    /// P2P: the current input delay in ticks.
    pub input_delay: u32,
    /// Snapshot slots the engine holds (as `tw_session_state_slots`).
    pub state_slots: u32,
    /// Zero.
    pub reserved: [u64; 15],
}

impl tw_session_stats {
    pub(crate) fn new(s: &SessionStats, mode: u32) -> Self {
        tw_session_stats {
            running: u32::from(s.running),
            mode,
            current_tick: s.current_tick,
            confirmed_tick: s.confirmed_tick,
            frames_ahead: s.frames_ahead,
            max_rollback: s.max_rollback,
            time_scale: s.time_scale,
            rollbacks: s.rollbacks,
            resimulated_ticks: s.resimulated,
            window_full_ticks: s.window_full,
            checks_compared: s.checks_compared,
            desyncs: s.desyncs,
            malformed_messages: s.malformed,
            send_errors: s.send_errors,
            synctest_mismatches: s.synctest_mismatches,
            rejected_connections: s.rejected_connections,
            bytes_sent: s.bytes_sent,
            bytes_received: s.bytes_received,
            frames_behind: s.frames_behind,
            connected_peers: s.connected_peers,
            input_delay: s.input_delay,
            state_slots: s.state_slots,
            reserved: [0; 15],
        }
    }
}

/// Returns `sizeof(tw_session_stats)` as the library sees it (256). Thread-safe;
/// never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_stats_size() -> usize {
    guard::run_or("tw_session_stats_size", 0, size_of::<tw_session_stats>)
}
