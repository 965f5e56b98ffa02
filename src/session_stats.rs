//! `tw_session_stats`: a session's counters and gauges, copied into caller memory.

use std::mem::size_of;

use super::guard;
use super::session_config::tw_session_mode;
use super::session_event::TW_NO_PLAYER;
use tickwire_runtime::session::SessionStats;

/// Figures of a session (`tw_session_get_stats`); zero where the mode has no such
/// figure. Fixed size (256 bytes): new figures take space from `reserved` (the relay
/// figures from `lead_ticks` on did; every earlier offset is unchanged).
///
/// A relay client's net graph: `rtt_us`, `lead_ticks`, `server_buffer_depth`,
/// `prediction_distance`, `resimulated_ticks`, `late_inputs`. A relay server's
/// per-player figures: `tw_session_player_stats`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct tw_session_stats {
    /// Non-zero once started and every connection is up (RELAY_SERVER: once started;
    /// RELAY_CLIENT: once joined and caught up).
    pub running: u32,
    /// The session's `tw_session_mode`.
    pub mode: u32,
    /// The next tick to simulate.
    pub current_tick: u32,
    /// Every input before this tick is final: the engine may treat the state at its
    /// start as settled (P2P: confirmed by every peer; RELAY_CLIENT: the authoritative
    /// tick, whose starting state is the server's).
    pub confirmed_tick: u32,
    /// P2P: mean ticks this peer runs ahead of the others (negative: behind).
    pub frames_ahead: f32,
    /// P2P: the longest rollback so far, in ticks. RELAY_CLIENT: the deepest
    /// re-prediction.
    pub max_rollback: u32,
    /// P2P and RELAY_CLIENT: the tick clock's current time scale (1.0 = real time; the
    /// time sync slows down the peer that is ahead; a relay client's input-lead loop
    /// steers its own).
    pub time_scale: f64,
    /// P2P: rollbacks done. RELAY_CLIENT: re-predictions (LOAD of the authoritative
    /// state and re-simulation), paid only when a prediction was wrong.
    pub rollbacks: u64,
    /// P2P and RELAY_CLIENT: ticks re-simulated in total (ADVANCE requests with
    /// `TW_REQUEST_FLAG_RESIMULATING`).
    pub resimulated_ticks: u64,
    /// P2P: ticks skipped because the prediction window was full.
    pub window_full_ticks: u64,
    /// P2P: checksums of confirmed ticks compared with peers. RELAY_CLIENT: server
    /// checksums compared with its own. RELAY_SERVER: checksum reports sent.
    pub checks_compared: u64,
    /// P2P and RELAY_CLIENT: desyncs detected.
    pub desyncs: u64,
    /// Session messages refused by strict decoding or from unknown peers.
    pub malformed_messages: u64,
    /// P2P: session messages the transport refused to queue.
    pub send_errors: u64,
    /// SYNCTEST: mismatches found.
    pub synctest_mismatches: u64,
    /// Incoming connections from unregistered addresses, refused (RELAY_SERVER:
    /// connections refused for any `tw_reject_reason`).
    pub rejected_connections: u64,
    /// Bytes sent on the socket (all connections, headers included).
    pub bytes_sent: u64,
    /// Bytes received on the socket.
    pub bytes_received: u64,
    /// SPECTATOR: ticks received and not played yet.
    pub frames_behind: u32,
    /// Connections up (remote players' peers, spectators, the watched host; a relay
    /// server's players; a relay client's server).
    pub connected_peers: u32,
    /// P2P: the current input delay in ticks. RELAY_CLIENT: the delay in force (the
    /// base, or the latency beyond `max_prediction` when larger).
    pub input_delay: u32,
    /// Snapshot slots the engine holds (as `tw_session_state_slots`).
    pub state_slots: u32,
    /// RELAY_CLIENT: how long before the server consumes it an input is sampled, in
    /// fractional ticks: half the round trip plus the median arrival margin (for
    /// display; the lead loop itself steers on the margins alone).
    pub lead_ticks: f64,
    /// RELAY_CLIENT: how far the interpolated server timeline (for rendering remote
    /// entities) is behind the newest server update, in ticks.
    pub interp_delay_ticks: f64,
    /// RELAY_CLIENT: the smoothed round trip to the server, in microseconds.
    pub rtt_us: f64,
    /// RELAY_CLIENT: canonical ticks where the server did not use this client's input
    /// on time (none had arrived, several were merged, or a lost one was replaced).
    /// RELAY_SERVER: inputs whose first copy arrived after their tick (0 under
    /// `TW_LATE_POLICY_DELAY`, which shows lateness as empty steps instead).
    pub late_inputs: u64,
    /// RELAY_CLIENT: server steps that merged several of its inputs (its queue ran
    /// past `jitter_max_depth`). RELAY_SERVER: the same, over every player.
    pub merged_steps: u64,
    /// RELAY_CLIENT: server steps that used none of its inputs (nothing had arrived).
    /// RELAY_SERVER: steps without a player's real input, over every player (nothing
    /// had arrived, or it was lost for good).
    pub empty_steps: u64,
    /// RELAY_CLIENT: discrete clock corrections (snaps, loop re-acquisitions).
    pub clock_corrections: u64,
    /// RELAY_CLIENT: canonical ticks where its own input had been mispredicted (only
    /// possible when that input was late).
    pub local_mispredictions: u64,
    /// RELAY_CLIENT: canonical ticks where another player's input or presence had been
    /// mispredicted.
    pub remote_mispredictions: u64,
    /// RELAY_CLIENT: inputs waiting in its jitter buffer on the server, as the server
    /// last said.
    pub server_buffer_depth: u32,
    /// RELAY_CLIENT: current minus authoritative tick: how deep a re-prediction from
    /// the oldest prediction would be.
    pub prediction_distance: u32,
    /// RELAY_SERVER: players connected. RELAY_CLIENT: 1 once it has a player slot.
    pub players: u32,
    /// RELAY_CLIENT: its player slot, or `TW_NO_PLAYER` before it has one.
    pub local_player: u32,
    /// RELAY_CLIENT: times it got its slot back after a dropped connection.
    pub reconnects: u32,
    /// RELAY_CLIENT and RELAY_SERVER: snapshots asked for again on a live connection.
    pub resyncs: u32,
    /// Zero.
    pub reserved: [u64; 3],
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
            lead_ticks: s.lead_ticks,
            interp_delay_ticks: s.interp_delay_ticks,
            rtt_us: s.rtt_us,
            late_inputs: s.late_inputs,
            merged_steps: s.merged_steps,
            empty_steps: s.empty_steps,
            clock_corrections: s.clock_corrections,
            local_mispredictions: s.local_mispredictions,
            remote_mispredictions: s.remote_mispredictions,
            server_buffer_depth: s.server_buffer_depth,
            prediction_distance: s.prediction_distance,
            players: s.players,
            // Zero where the mode has no such figure, as everywhere in this struct.
            local_player: match s.local_player {
                Some(p) => p,
                None if mode == tw_session_mode::RelayClient as u32 => TW_NO_PLAYER,
                None => 0,
            },
            reconnects: u32::try_from(s.reconnects).unwrap_or(u32::MAX),
            resyncs: u32::try_from(s.resyncs).unwrap_or(u32::MAX),
            reserved: [0; 3],
        }
    }
}

/// Returns `sizeof(tw_session_stats)` as the library sees it (256). A binding compares it with
/// its own size of the struct to catch a header from another library version.
///
/// Ownership: takes nothing; returns a plain value.
/// Thread-safety: may be called from any thread.
///
/// Returns the size in bytes; never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_stats_size() -> usize {
    guard::run_or("tw_session_stats_size", 0, size_of::<tw_session_stats>)
}

/// A relay server's figures for one player (`tw_session_player_stats`). Fixed size
/// (128 bytes): new figures take space from `reserved`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct tw_relay_player_stats {
    /// The player slot.
    pub player: u32,
    /// Its connection (for `tw_session_peer_stats`).
    pub peer: u32,
    /// The first tick whose canonical step included it, since its latest (re)join.
    pub joined_tick: u32,
    /// Inputs waiting in its jitter buffer now.
    pub buffer_depth: u32,
    /// Ticks run with this player since its latest (re)join.
    pub ticks: u64,
    /// Ticks that used exactly its next input, on time.
    pub normal_steps: u64,
    /// Ticks that used none of its inputs: nothing had arrived (underflow).
    pub empty_steps: u64,
    /// Ticks whose input was lost for good and substituted.
    pub substituted_steps: u64,
    /// Ticks that merged several of its inputs (its queue ran past `jitter_max_depth`).
    pub merges: u64,
    /// Inputs folded into those merges.
    pub merged_inputs: u64,
    /// Inputs whose first copy arrived after their tick.
    pub late_inputs: u64,
    /// Redundant copies received (inputs are resent until acknowledged).
    pub duplicates: u64,
    /// The transport's smoothed round trip to it, in microseconds (0 if unknown).
    pub rtt_us: f64,
    /// Zero.
    pub reserved: [u64; 5],
}

impl tw_relay_player_stats {
    pub(crate) fn new(s: &tickwire_runtime::session::RelayPlayerStats) -> Self {
        let j = &s.jitter;
        tw_relay_player_stats {
            player: s.player,
            peer: s.peer,
            joined_tick: s.joined_tick,
            buffer_depth: s.buffer_depth,
            ticks: j.ticks,
            normal_steps: j.normal,
            empty_steps: j.underflows,
            substituted_steps: j.lost,
            merges: j.merges,
            merged_inputs: j.merged_steps,
            late_inputs: j.late_arrivals,
            duplicates: j.duplicates,
            rtt_us: s.rtt_us,
            reserved: [0; 5],
        }
    }
}

/// Returns `sizeof(tw_relay_player_stats)` as the library sees it (128). A binding compares it with
/// its own size of the struct to catch a header from another library version.
///
/// Ownership: takes nothing; returns a plain value.
/// Thread-safety: may be called from any thread.
///
/// Returns the size in bytes; never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_relay_player_stats_size() -> usize {
    guard::run_or("tw_relay_player_stats_size", 0, size_of::<tw_relay_player_stats>)
}
