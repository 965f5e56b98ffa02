//! What a [`Host`](crate::Host) is started with: its socket, endpoint and link
//! simulator settings.

use std::net::SocketAddr;

use tickwire_proto::{EndpointConfig, LinkConfig, RemoteId};

use crate::carrier::Carrier;

#[cfg(doc)]
use crate::Host;

/// Which way a link simulator applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Datagrams this host sends.
    Outbound,
    /// Datagrams this host receives.
    Inbound,
}

/// Configuration of a [`Host`].
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The transport configuration handed to the endpoint. A `seed` of 0 is replaced by
    /// OS randomness (cookie secrets and salts must not be predictable on a real network).
    pub endpoint: EndpointConfig,
    /// Address to bind (IPv4 or IPv6; port 0 picks a free port). The socket's family
    /// follows this address; an IPv6 socket keeps the OS default for dual-stack.
    /// Ignored but for its port when `dual_stack` is set.
    pub bind: SocketAddr,
    /// Bind `[::]` with IPV6_V6ONLY off (reaching IPv4 and IPv6 peers), on `bind`'s
    /// port; where the system cannot, `0.0.0.0` on that port. What an empty bind
    /// address means in the C ABI. Default false.
    pub dual_stack: bool,
    /// SO_RCVBUF in bytes (default [`DEFAULT_RECV_BUFFER_BYTES`]); 0 keeps the OS
    /// default.
    pub recv_buffer_bytes: usize,
    /// SO_SNDBUF in bytes; 0 keeps the OS default.
    pub send_buffer_bytes: usize,
    /// Link simulator applied to datagrams this host sends (None = off).
    pub outbound_sim: Option<LinkConfig>,
    /// Link simulator applied to datagrams this host receives (None = off).
    pub inbound_sim: Option<LinkConfig>,
    /// Seed for the simulators (0 = from the OS).
    pub sim_seed: u64,
    /// If non-zero the network thread also flushes on its own at this interval, for
    /// engines that never call flush. 0 = only explicit flushes.
    pub auto_flush_interval_us: u64,
    /// Receive moderation, in microseconds (default [`DEFAULT_RECEIVE_MODERATION_US`]):
    /// once a host has many connections (8 or more), after its network thread has
    /// read datagrams it leaves the socket alone this long, so that the datagrams of
    /// many peers are read in one batch instead of each waking the thread (a server of
    /// 64 clients at 60 Hz: a few wakes per tick instead of 64). What arrives
    /// meanwhile is read by the engine's own poll if it comes first. The same holds
    /// for any host while its engine polls: for this long after each poll that read
    /// the socket, the network thread leaves the socket to the engine's next poll
    /// rather than waking for every datagram (a busy-polled round trip on loopback
    /// was half wakeups), and beside an engine that keeps polling all through that
    /// time (a busy poller) for twice as long at each of its turns, up to 16 ms, until
    /// a turn finds the engine stopped. Each datagram's arrival time is the kernel's receive
    /// timestamp, so round-trip times and the time sync do not see the wait (the
    /// socket asks for them, `SO_TIMESTAMPNS`, when the host first gets that busy;
    /// moderation begins 10 ms later). Acknowledgements and resends are handled up to
    /// this much later. Only on Linux (the timestamps); 0 turns it off.
    pub receive_moderation_us: u64,
    /// What carries the datagrams (`carrier.rs`): a UDP socket bound to `bind` (the
    /// default), or the engine, which pushes and pulls them ([`Carrier::External`]; then
    /// `bind` is the host's own remote address, [`RemoteId::to_addr`], and the socket
    /// settings above do not apply).
    ///
    /// [`RemoteId::to_addr`]: tickwire_proto::RemoteId::to_addr
    pub carrier: Carrier,
}

/// [`HostConfig::recv_buffer_bytes`]'s default: 256 KiB, what ENet's hosts ask for
/// too. The OS may give less or count it otherwise (Linux caps it at
/// `net.core.rmem_max` and reports twice what it keeps, so a stock system gets 425,984
/// bytes where its default is 212,992).
///
/// Why more than the OS default: an engine that polls once a frame is left the socket
/// for as many frames as the buffer holds with one frame's datagrams to spare, and
/// the network thread wakes for its stall check only that often
/// (`engine_polls.rs`). Linux's default buffer held only two frames of a 64-client
/// server (each small datagram is charged about a kilobyte), so the thread woke every
/// frame, where this one holds five and it wakes every fourth (issue 35,
/// docs/benchmarks.md).
pub const DEFAULT_RECV_BUFFER_BYTES: usize = 256 * 1024;

/// [`HostConfig::receive_moderation_us`]'s default: 1 ms on Linux, a sixteenth of a
/// 60 Hz tick; 0 (off) elsewhere, where datagrams carry no kernel receive timestamp
/// and a late read would make a late arrival time.
pub const DEFAULT_RECEIVE_MODERATION_US: u64 = if cfg!(target_os = "linux") { 1_000 } else { 0 };

/// Whether this machine runs AES-256-GCM in hardware: AES-NI and PCLMULQDQ on x86,
/// the AES and PMULL instructions on ARMv8. What [`HostConfig::new`] puts in
/// `EndpointConfig::aes_gcm` (the protocol crate does not look at the machine): two
/// such machines seal their packets with AES-256-GCM, about three times faster there
/// than ChaCha20-Poly1305, which every other connection uses.
pub fn aes_gcm_in_hardware() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        std::arch::is_x86_feature_detected!("aes") && std::arch::is_x86_feature_detected!("pclmulqdq")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("aes") && std::arch::is_aarch64_feature_detected!("pmull")
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

impl HostConfig {
    /// A configuration with the default endpoint (AES-256-GCM offered where this
    /// machine runs it in hardware, [`aes_gcm_in_hardware`]), no simulators, a
    /// [`DEFAULT_RECV_BUFFER_BYTES`] receive buffer and the OS's send buffer, and
    /// explicit flushes only, bound to `bind`.
    pub fn new(bind: SocketAddr) -> Self {
        HostConfig {
            endpoint: EndpointConfig { aes_gcm: aes_gcm_in_hardware(), ..EndpointConfig::default() },
            bind,
            dual_stack: false,
            recv_buffer_bytes: DEFAULT_RECV_BUFFER_BYTES,
            send_buffer_bytes: 0,
            outbound_sim: None,
            inbound_sim: None,
            sim_seed: 0,
            auto_flush_interval_us: 0,
            receive_moderation_us: DEFAULT_RECEIVE_MODERATION_US,
            carrier: Carrier::Udp,
        }
    }

    /// A configuration like [`HostConfig::new`] for a host whose datagrams the engine
    /// carries ([`Carrier::External`]): known to its peers as `local`, sending nothing
    /// over `max_datagram_size` bytes.
    pub fn external(local: RemoteId, max_datagram_size: usize) -> Self {
        HostConfig { carrier: Carrier::External { max_datagram_size }, ..HostConfig::new(local.to_addr()) }
    }
}
