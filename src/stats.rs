//! `tw_peer_stats` and `tw_host_stats`: plain numbers copied into caller memory.

use std::mem::size_of;

use super::guard;
use tickwire_proto::{ConnectionStats, EndpointStats};
use tickwire_runtime::RuntimeStats;

/// Figures for one connection (`tw_host_peer_stats`). Times in microseconds, rates per
/// second over the last full second, counters since the connection started.
/// Fixed size: new figures take space from `reserved`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct tw_peer_stats {
    /// Smoothed round-trip time, acknowledgement delay removed.
    pub srtt_us: f64,
    /// Smallest round-trip time seen.
    pub min_rtt_us: f64,
    /// Mean deviation of the round-trip time; drives the resend timeout.
    pub rtt_var_us: f64,
    /// Mean difference between consecutive round-trip samples.
    pub jitter_us: f64,
    /// Current resend timeout of reliable messages.
    pub rto_us: f64,
    /// Fraction of recent packets never acknowledged, in [0, 1].
    pub loss: f64,
    /// Bytes sent per second, recently (headers included).
    pub sent_bytes_per_sec: f64,
    /// Bytes received per second, recently (headers included).
    pub recv_bytes_per_sec: f64,
    /// Packets sent per second, recently.
    pub sent_packets_per_sec: f64,
    /// Packets received per second, recently.
    pub recv_packets_per_sec: f64,
    /// Packets sent since the connection started.
    pub packets_sent: u64,
    /// Packets received since the connection started.
    pub packets_received: u64,
    /// Bytes sent since the connection started (headers included).
    pub bytes_sent: u64,
    /// Bytes received since the connection started (headers included).
    pub bytes_received: u64,
    /// Reliable data sent again after its resend timeout.
    pub resent: u64,
    /// Datagrams from this peer that failed to decode.
    pub malformed: u64,
    /// Bytes waiting in this connection's send queues.
    pub send_queue_bytes: u64,
    /// Encrypted packets from this peer refused before decryption: already received,
    /// or older than the replay window.
    pub replayed: u64,
    /// Encrypted packets from this peer's address whose authentication tag failed
    /// (forged, tampered with, truncated): dropped, nothing changed.
    pub forged: u64,
    /// Zero.
    pub reserved: [u64; 13],
}

impl From<&ConnectionStats> for tw_peer_stats {
    fn from(s: &ConnectionStats) -> Self {
        tw_peer_stats {
            srtt_us: s.srtt_us,
            min_rtt_us: s.min_rtt_us,
            rtt_var_us: s.rtt_var_us,
            jitter_us: s.jitter_us,
            rto_us: s.rto_us,
            loss: s.loss,
            sent_bytes_per_sec: s.sent_bytes_per_sec,
            recv_bytes_per_sec: s.recv_bytes_per_sec,
            sent_packets_per_sec: s.sent_packets_per_sec,
            recv_packets_per_sec: s.recv_packets_per_sec,
            packets_sent: s.packets_sent,
            packets_received: s.packets_received,
            bytes_sent: s.bytes_sent,
            bytes_received: s.bytes_received,
            resent: s.resent,
            malformed: s.malformed,
            send_queue_bytes: s.send_queue_bytes,
            replayed: s.replayed,
            forged: s.forged,
            reserved: [0; 13],
        }
    }
}

/// Figures for a whole host (`tw_host_get_stats`), including traffic from unknown
/// addresses, and the network thread's own counters. Counters since the host started. Fixed size: new figures take space from
/// `reserved`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tw_host_stats {
    /// Datagrams the socket received, from anyone.
    pub datagrams_received: u64,
    /// Datagrams the socket sent.
    pub datagrams_sent: u64,
    /// Bytes the socket received (UDP payload).
    pub bytes_received: u64,
    /// Bytes the socket sent (UDP payload).
    pub bytes_sent: u64,
    /// Datagrams that failed to decode (truncated, bad lengths, unknown kinds).
    pub malformed: u64,
    /// Datagrams with another `protocol_id`.
    pub wrong_protocol: u64,
    /// Datagrams with another protocol version.
    pub wrong_version: u64,
    /// Well-formed packets from an address with no connection.
    pub unknown_sender: u64,
    /// Handshake responses whose cookie did not verify or had expired.
    pub bad_cookie: u64,
    /// Connection requests answered with a challenge.
    pub challenges_sent: u64,
    /// Connection requests refused (server full, version).
    pub denied: u64,
    /// Open connections, in any state.
    pub connections: u64,
    /// Messages the network thread dropped because the peer had just gone (its
    /// DISCONNECTED event follows). Never because of `send_queue_limit_bytes`:
    /// `tw_host_send` refuses those with `TW_RESULT_QUEUE_FULL`. Any other refusal
    /// closes the connection (DISCONNECTED with reason `TW_DISCONNECT_REASON_PROTOCOL_ERROR`).
    pub sends_rejected: u64,
    /// Connection attempts refused on the network thread (each also gave a
    /// DISCONNECTED event).
    pub connects_rejected: u64,
    /// Datagrams dropped because the socket's send buffer was full (on an external
    /// carrier: the ring of datagrams waiting for `tw_host_pull_datagrams`).
    pub socket_send_dropped: u64,
    /// Other socket send failures; the datagram was dropped.
    pub socket_send_errors: u64,
    /// Socket receive failures other than "nothing to read" (on Windows, also each
    /// datagram longer than any of ours, which the system drops; on an external
    /// carrier, each pushed datagram over `max_datagram_size` or that found the ring of
    /// pushes full).
    pub socket_recv_errors: u64,
    /// Events waiting on the network thread because the engine polls too slowly.
    pub event_backlog: u64,
    /// Handshakes refused because the two ends chose different security modes
    /// (encrypted, insecure plaintext, carrier).
    pub security_mismatch: u64,
    /// Handshakes refused for their credentials: a wrong or missing match secret, a
    /// forged, expired, foreign or in-use connect token.
    pub auth_refused: u64,
    /// Encrypted packets (all connections) refused as already received or too old.
    pub replayed: u64,
    /// Encrypted packets and handshake confirmations (all connections) whose
    /// authentication failed: forged, tampered with, truncated.
    pub forged: u64,
    /// Zero.
    pub reserved: [u64; 10],
}

impl tw_host_stats {
    pub(crate) fn new(s: &EndpointStats, r: &RuntimeStats) -> Self {
        tw_host_stats {
            datagrams_received: s.datagrams_received,
            datagrams_sent: s.datagrams_sent,
            bytes_received: s.bytes_received,
            bytes_sent: s.bytes_sent,
            malformed: s.malformed,
            wrong_protocol: s.wrong_protocol,
            wrong_version: s.wrong_version,
            unknown_sender: s.unknown_sender,
            bad_cookie: s.bad_cookie,
            challenges_sent: s.challenges_sent,
            denied: s.denied,
            connections: s.connections,
            sends_rejected: r.sends_rejected,
            connects_rejected: r.connects_rejected,
            socket_send_dropped: r.socket_send_dropped,
            socket_send_errors: r.socket_send_errors,
            socket_recv_errors: r.socket_recv_errors,
            event_backlog: r.event_backlog,
            security_mismatch: s.security_mismatch,
            auth_refused: s.auth_refused,
            replayed: s.replayed,
            forged: s.forged,
            reserved: [0; 10],
        }
    }
}

/// Returns `sizeof(tw_peer_stats)` as the library sees it (256). A binding compares it with
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
pub unsafe extern "C" fn tw_peer_stats_size() -> usize {
    guard::run_or("tw_peer_stats_size", 0, size_of::<tw_peer_stats>)
}

/// Returns `sizeof(tw_host_stats)` as the library sees it (256). A binding compares it with
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
pub unsafe extern "C" fn tw_host_stats_size() -> usize {
    guard::run_or("tw_host_stats_size", 0, size_of::<tw_host_stats>)
}
