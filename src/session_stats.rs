//! `tw_session_stats`: a session's counters and gauges, copied into caller memory.

use std::mem::size_of;

use super::guard;
use super::session_config::tw_session_mode;
use super::session_event::TW_NO_PLAYER;
use super::session_kind::SessionKind;
use tickwire_runtime::{EngineLoop, NetStats};

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
    /// RELAY_CLIENT: client ticks between its input packets now: `client_send_interval`,
    /// or 1 while the uplink loses more than half of `late_rate` (see
    /// `tw_session_config.client_send_interval`).
    pub input_send_interval: u32,
    /// RELAY_CLIENT: copies of each input it sends now, from the uplink's measured loss
    /// and bursts (1: no redundancy).
    pub input_copies: u32,
    /// Zero.
    pub reserved: [u64; 2],
}

impl tw_session_stats {
    /// The figures of the session `kind` holds. Every mode fills the fields it has and
    /// leaves the others zero (`local_player` of a relay client without a slot:
    /// `TW_NO_PLAYER`).
    pub(crate) fn new(kind: &mut SessionKind) -> Self {
        let mut st = tw_session_stats { mode: mode_of(kind) as u32, time_scale: 1.0, ..Self::zeroed() };
        match kind {
            SessionKind::P2p(k) => {
                let s = k.stats();
                let c = s.core;
                st.running = u32::from(s.running);
                (st.current_tick, st.confirmed_tick, st.frames_ahead, st.time_scale) =
                    (c.current_tick, c.confirmed_tick, c.frames_ahead, c.time_scale);
                (st.rollbacks, st.resimulated_ticks, st.max_rollback, st.window_full_ticks) =
                    (c.rollbacks, c.resimulated, c.max_rollback, c.window_full);
                (st.checks_compared, st.desyncs, st.malformed_messages, st.send_errors) =
                    (c.checks_compared, c.desyncs, c.malformed, c.send_errors);
                (st.input_delay, st.state_slots) = (s.input_delay, s.state_slots);
                st.set_net(&s.net);
            }
            SessionKind::SyncTest(k) => {
                let s = k.stats();
                st.running = u32::from(s.running);
                (st.current_tick, st.confirmed_tick) = (s.current_tick, s.current_tick);
                (st.synctest_mismatches, st.state_slots) = (s.mismatches, s.state_slots);
            }
            SessionKind::Spectator(k) => {
                let s = k.stats();
                st.running = u32::from(s.running);
                (st.current_tick, st.confirmed_tick) = (s.current_tick, s.current_tick);
                (st.frames_behind, st.malformed_messages) = (s.frames_behind, s.malformed);
                st.set_net(&s.net);
            }
            SessionKind::Replay(k) => {
                let s = k.stats();
                st.running = u32::from(s.running);
                (st.current_tick, st.confirmed_tick) = (s.current_tick, s.current_tick);
            }
            SessionKind::RelayServer(k) => {
                let s = k.stats();
                let c = s.core;
                st.running = u32::from(s.running);
                (st.current_tick, st.confirmed_tick) = (s.current_tick, s.current_tick);
                st.players = c.players;
                st.empty_steps = c.empty_steps + c.substituted_steps;
                (st.merged_steps, st.late_inputs, st.resyncs) =
                    (c.merged_steps, c.late_inputs, u32::try_from(c.resyncs).unwrap_or(u32::MAX));
                st.malformed_messages = c.malformed + c.unknown_peer + c.bad_hello;
                st.checks_compared = c.checks_sent;
                st.state_slots = k.state_slots() as u32;
                st.set_net(&s.net);
            }
            SessionKind::RelayClient(k) => {
                let s = k.stats();
                let (c, y, p) = (s.core, s.core.sync, s.core.prediction);
                st.running = u32::from(s.synchronized);
                (st.current_tick, st.confirmed_tick) = (c.current_tick, c.authoritative_tick);
                (st.lead_ticks, st.interp_delay_ticks, st.time_scale, st.rtt_us) =
                    (y.lead_ticks, y.interp_delay_ticks, y.time_scale, s.rtt_us);
                (st.clock_corrections, st.server_buffer_depth, st.empty_steps, st.merged_steps) =
                    (y.clock_corrections, y.server_buffer_depth, y.empty_steps, y.merged_steps);
                (st.late_inputs, st.rollbacks, st.resimulated_ticks, st.max_rollback) =
                    (p.local_late, p.repredictions, p.resimulated, p.max_resim_depth);
                (st.local_mispredictions, st.remote_mispredictions) = (p.local_mispredictions, p.remote_mispredictions);
                (st.prediction_distance, st.input_delay) = (c.prediction_distance, c.input_delay);
                (st.checks_compared, st.desyncs, st.malformed_messages) = (c.checks_compared, c.desyncs, c.malformed);
                st.reconnects = u32::try_from(c.reconnects).unwrap_or(u32::MAX);
                st.resyncs = u32::try_from(c.resyncs).unwrap_or(u32::MAX);
                (st.input_send_interval, st.input_copies) = (y.send_interval, y.copies);
                st.players = u32::from(s.local_player.is_some());
                st.local_player = s.local_player.unwrap_or(TW_NO_PLAYER);
                st.state_slots = k.state_slots() as u32;
                st.set_net(&s.net);
            }
        }
        st
    }

    fn set_net(&mut self, n: &NetStats) {
        (self.connected_peers, self.rejected_connections) = (n.connected_peers, n.rejected_connections);
        (self.bytes_sent, self.bytes_received) = (n.bytes_sent, n.bytes_received);
    }

    fn zeroed() -> Self {
        tw_session_stats {
            running: 0,
            mode: 0,
            current_tick: 0,
            confirmed_tick: 0,
            frames_ahead: 0.0,
            max_rollback: 0,
            time_scale: 0.0,
            rollbacks: 0,
            resimulated_ticks: 0,
            window_full_ticks: 0,
            checks_compared: 0,
            desyncs: 0,
            malformed_messages: 0,
            send_errors: 0,
            synctest_mismatches: 0,
            rejected_connections: 0,
            bytes_sent: 0,
            bytes_received: 0,
            frames_behind: 0,
            connected_peers: 0,
            input_delay: 0,
            state_slots: 0,
            lead_ticks: 0.0,
            interp_delay_ticks: 0.0,
            rtt_us: 0.0,
            late_inputs: 0,
            merged_steps: 0,
            empty_steps: 0,
            clock_corrections: 0,
            local_mispredictions: 0,
            remote_mispredictions: 0,
            server_buffer_depth: 0,
            prediction_distance: 0,
            players: 0,
            local_player: 0,
            reconnects: 0,
            resyncs: 0,
            input_send_interval: 0,
            input_copies: 0,
            reserved: [0; 2],
        }
    }
}

/// The `tw_session_mode` of a session kind.
fn mode_of(kind: &SessionKind) -> tw_session_mode {
    match kind {
        SessionKind::P2p(_) => tw_session_mode::P2p,
        SessionKind::SyncTest(_) => tw_session_mode::Synctest,
        SessionKind::Spectator(_) => tw_session_mode::Spectator,
        SessionKind::Replay(_) => tw_session_mode::Replay,
        SessionKind::RelayServer(_) => tw_session_mode::RelayServer,
        SessionKind::RelayClient(_) => tw_session_mode::RelayClient,
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
    /// Bytes of updates (canonical steps and time-sync feedback, before the
    /// transport's header and tag) sent to it since its latest (re)join: with
    /// `tw_session_peer_stats` over time, its share of the server's bandwidth.
    pub update_bytes: u64,
    /// Steps sent to it again after their resend timeout (every copy lost, or its
    /// acknowledgement).
    pub steps_resent: u64,
    /// Redundant copies of steps sent to it (as many per step as its measured loss
    /// asks for).
    pub step_copies: u64,
    /// Redundant copies left out under `bandwidth_cap`.
    pub copies_capped: u64,
    /// Zero.
    pub reserved: [u64; 1],
}

impl tw_relay_player_stats {
    pub(crate) fn new(s: &tickwire_runtime::RelayPlayerStats) -> Self {
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
            update_bytes: s.stream.bytes,
            steps_resent: s.stream.resent,
            step_copies: s.stream.copies,
            copies_capped: s.stream.copies_capped,
            reserved: [0; 1],
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
