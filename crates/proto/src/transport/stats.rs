//! Connection and endpoint statistics.

pub use super::acks::LossCounts;

/// Per-connection figures. Times in microseconds; rates over the last full second.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ConnectionStats {
    /// Smoothed round-trip time (EWMA, gain 1/8), ack delay removed.
    pub srtt_us: f64,
    /// Smallest RTT sample seen.
    pub min_rtt_us: f64,
    /// Mean deviation of RTT samples (Jacobson, gain 1/4); drives the resend timeout.
    pub rtt_var_us: f64,
    /// Mean absolute difference between consecutive RTT samples (RFC 3550 style, 1/16).
    pub jitter_us: f64,
    /// Fraction of the last resolved packets (up to 256) that were never acked, in [0, 1].
    pub loss: f64,
    /// Every resolved packet of the connection, lost, and lost right after a lost one:
    /// the loss process's burstiness, for any span a reader takes differences over.
    pub loss_counts: LossCounts,
    /// Bytes sent per second, over the last whole window of a second or more.
    pub sent_bytes_per_sec: f64,
    /// Bytes received per second, likewise.
    pub recv_bytes_per_sec: f64,
    /// Packets sent per second, likewise.
    pub sent_packets_per_sec: f64,
    /// Packets received per second, likewise.
    pub recv_packets_per_sec: f64,
    /// Packets sent on this connection.
    pub packets_sent: u64,
    /// Packets received on this connection.
    pub packets_received: u64,
    /// Bytes of the packets sent (whole datagrams).
    pub bytes_sent: u64,
    /// Bytes of the packets received (whole datagrams).
    pub bytes_received: u64,
    /// Reliable units sent again after their resend timeout.
    pub resent: u64,
    /// Datagrams from this peer's address that failed to decode, or that carried a frame
    /// of a kind its channel does not take (dropped whole, the connection goes on).
    pub malformed: u64,
    /// Encrypted packets refused before decryption: already received, or older than the
    /// replay window.
    pub replayed: u64,
    /// Encrypted packets whose tag did not authenticate them (forged, tampered with,
    /// truncated): dropped, nothing changed.
    pub forged: u64,
    /// Datagrams dropped because their sequence number jumped further ahead than the ack
    /// window covers, with no second packet to confirm the jump: forged or corrupted
    /// headers, or the first packet after a long burst of loss.
    pub implausible_seq: u64,
    /// Datagrams dropped unread because the peer went over its budget (`PeerLimits`:
    /// messages or bytes a second, messages per datagram).
    pub over_budget: u64,
    /// Datagrams dropped unacknowledged because this peer's received messages waiting
    /// for the owner had reached `PeerLimits::max_recv_queue_bytes` (the owner is slow;
    /// the peer sends reliable data again).
    pub backpressured: u64,
    /// Bytes of this peer's received messages waiting for the owner to poll them
    /// (buffer capacities plus a fixed overhead per message).
    pub recv_queue_bytes: u64,
    /// Bytes waiting in this connection's send queues.
    pub send_queue_bytes: u64,
    /// Current reliable resend timeout.
    pub rto_us: f64,
}

/// Figures for the whole endpoint (including traffic from unknown addresses).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Datagrams handed to the endpoint.
    pub datagrams_received: u64,
    /// Datagrams the endpoint gave out to send.
    pub datagrams_sent: u64,
    /// Bytes of the datagrams received.
    pub bytes_received: u64,
    /// Bytes of the datagrams sent.
    pub bytes_sent: u64,
    /// Datagrams that failed to decode: truncated, bad lengths, unknown kinds.
    pub malformed: u64,
    /// Datagrams with a foreign protocol id.
    pub wrong_protocol: u64,
    /// Datagrams with another protocol version.
    pub wrong_version: u64,
    /// Well-formed connected packets from an address with no connection, or with the
    /// wrong connection salt.
    pub unknown_sender: u64,
    /// Handshake responses whose cookie did not verify or had expired.
    pub bad_cookie: u64,
    /// Handshakes refused because the ends chose different protections (insecure
    /// plaintext, AEAD or carrier-protected packets).
    pub security_mismatch: u64,
    /// Handshakes refused for their credentials: wrong or missing match secret, a
    /// forged, expired, foreign or in-use connect token, or a bad key.
    pub auth_refused: u64,
    /// Of those, connect tokens refused because the wall clock was unknown: never
    /// told, or unreadable or before 1970 ([`Endpoint::set_unix_time`]).
    ///
    /// [`Endpoint::set_unix_time`]: super::Endpoint::set_unix_time
    pub tokens_refused_clock_unknown: u64,
    /// Encrypted packets (all connections) refused as replayed or failing
    /// authentication, and server confirmations that failed.
    pub replayed: u64,
    /// Encrypted packets that failed authentication, and server confirmations that failed.
    pub forged: u64,
    /// Connection requests answered with a challenge.
    pub challenges_sent: u64,
    /// Connection requests refused (full, version).
    pub denied: u64,
    /// Refusals of our own handshakes that we could not authenticate, so did not act
    /// on (the handshake went on until accepted or timed out).
    pub unverified_denials: u64,
    /// Open connections, any state.
    pub connections: u64,
    /// Datagrams from established connections dropped because the peer went over its
    /// budget (all connections, also closed ones).
    pub over_budget: u64,
    /// Connections closed with [`DisconnectReason::Flooding`](super::DisconnectReason::Flooding).
    pub flooding: u64,
    /// Handshakes refused (as [`DisconnectReason::ServerFull`], authenticated) because
    /// their address, or their connect token's client id, was dropped for flooding or
    /// breaking the protocol and still waits out its backoff.
    ///
    /// [`DisconnectReason::ServerFull`]: super::DisconnectReason::ServerFull
    pub backoff_refused: u64,
    /// Connections closed (reason Timeout) because reliable data stayed
    /// unacknowledged for the connection timeout while the peer kept talking.
    pub unacknowledged_drops: u64,
    /// Events waiting for the owner to poll them (all peers).
    pub queued_events: u64,
}
