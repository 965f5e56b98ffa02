//! A server session's figures, summed over the players present and gone.

use crate::engine::Tick;
use crate::jitter::JitterStats;

/// Figures of a server session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerSessionStats {
    /// The last tick run.
    pub tick: Tick,
    /// Players with a live connection.
    pub players: u32,
    /// Over all players and ticks (M1, M11): ticks without that player's real input
    /// because nothing had arrived (empty), because its input was lost for good
    /// (substituted), and ticks that merged several inputs.
    pub empty_steps: u64,
    /// Ticks whose input for a player was lost for good and substituted.
    pub substituted_steps: u64,
    /// Ticks that merged several inputs of one player.
    pub merged_steps: u64,
    /// Inputs whose first copy arrived after the tick that needed it (substituted, so
    /// dropped). Under the `Delay` late policy lateness shows as empty steps instead
    /// (the input is used a tick later), and this stays 0.
    pub late_inputs: u64,
    /// Input messages refused: malformed or wrong-size, or from non-players.
    pub malformed: u64,
    /// Input messages from peers that are not players.
    pub unknown_peer: u64,
    /// Reliable messages that were not a valid Hello.
    pub bad_hello: u64,
    /// Hellos with a token no slot has, or from a connection that did not prove the slot's credential.
    pub bad_tokens: u64,
    /// Connections rejected (each also a [`ServerSessionEvent::ConnectionRejected`](super::ServerSessionEvent::ConnectionRejected)).
    pub rejected: u64,
    /// Welcomes (a snapshot each) handed to the transport.
    pub snapshots_sent: u64,
    /// Players that asked for a new snapshot on their own connection.
    pub resyncs: u64,
    /// Players that fell behind the steps kept and were sent a snapshot instead.
    pub catch_ups: u64,
    /// Checksums sent to clients for desync detection: the engine's, or on a
    /// relay-only server the value a majority of the players reported.
    pub checks_sent: u64,
    /// Relay-only: snapshots taken from a client (its upload, agreed by a majority of
    /// those asked) and handed to waiting players.
    pub snapshots_from_clients: u64,
    /// Relay-only: uploads refused (not the state their donor vouched for, or outvoted
    /// by the other clients asked).
    pub snapshot_uploads_refused: u64,
    /// Relay-only: state asks dropped unanswered (their donor left, or they timed out).
    pub state_asks_failed: u64,
    /// Relay-only: clients' reports refused (malformed, not asked for, repeated, or for
    /// a tick that is no check tick, not reached or too old).
    pub hosted_refused: u64,
    /// Relay-only: checksum reports that differ from the majority's.
    pub minority_checks: u64,
}

pub(super) fn add_jitter(a: &mut JitterStats, b: &JitterStats) {
    a.ticks += b.ticks;
    a.normal += b.normal;
    a.underflows += b.underflows;
    a.lost += b.lost;
    a.merges += b.merges;
    a.merged_steps += b.merged_steps;
    a.late_arrivals += b.late_arrivals;
    a.late_substituted += b.late_substituted;
    a.duplicates += b.duplicates;
}
