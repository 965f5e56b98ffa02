//! `tw_host_config`, `tw_link_sim_config`, their defaults and their conversion to the
//! runtime's types.

use std::mem::size_of;
use std::net::SocketAddr;

use super::error::{Failure, FfiResult, tw_result};
use super::guard;
use super::security::{arg_security, tw_security_config};
use tickwire_proto::RemoteId;
use tickwire_proto::wire::MAX_DATAGRAM_SIZE;
use tickwire_proto::{EndpointConfig, JitterModel, LinkConfig, LossModel, MAX_FRAMES_PER_DATAGRAM, PeerLimits};
use tickwire_runtime::{Carrier, Direction, HostConfig};

/// Channel 0 of the default layout: unreliable (may be lost, may arrive in any order).
pub const TW_CHANNEL_UNRELIABLE: u32 = 0;
/// Channel 1 of the default layout: unreliable-sequenced (may be lost; a message older
/// than one already delivered is dropped).
pub const TW_CHANNEL_SEQUENCED: u32 = 1;
/// Channel 2 of the default layout: reliable-ordered (delivered exactly once, in order;
/// large messages are fragmented).
pub const TW_CHANNEL_RELIABLE: u32 = 2;

/// Largest message on the unreliable and sequenced channels: one datagram's payload.
/// Larger messages must go on `TW_CHANNEL_RELIABLE`, which fragments them.
pub const TW_MAX_UNRELIABLE_SIZE: u32 = 1159;

/// The smallest largest-datagram a carrier may declare (`tw_host_config.max_datagram_size`):
/// a relay update's 1024-byte piece of a step, with its headers and tag, must fit one.
pub const TW_MIN_CARRIER_DATAGRAM_SIZE: u32 = 1105;
const MIN_CARRIER_DATAGRAM: usize = TW_MIN_CARRIER_DATAGRAM_SIZE as usize;
const _: () = assert!(MIN_CARRIER_DATAGRAM == tickwire_proto::wire::MIN_DATAGRAM_SIZE);

/// Host names one host (or networked session) may be looking up at once: connects by
/// name beyond this fail with `TW_RESULT_QUEUE_FULL` until some lookups have answered
/// (their CONNECTED or DISCONNECTED has come).
pub const TW_MAX_PENDING_RESOLUTIONS: u32 = 16;
const _: () = assert!(TW_MAX_PENDING_RESOLUTIONS as usize == tickwire_runtime::MAX_PENDING_RESOLUTIONS);

/// Settings of a host, passed to `tw_host_create`.
///
/// Always fill it with `tw_host_config_init_default` first, then change fields. The
/// library checks `struct_size` to know which version of the struct the caller was
/// compiled with. `reserved` must stay zero.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tw_host_config {
    /// `sizeof(tw_host_config)`, set by `tw_host_config_init_default`.
    pub struct_size: u32,
    /// Identifies the game: datagrams with another id are dropped and counted.
    pub protocol_id: u32,
    /// How many incoming connections may be open at once. 0 (the default) refuses all:
    /// a pure client. Set it on a server. At most 65536.
    pub max_clients: u32,
    /// Largest message in bytes (default 1048576, the maximum). Unreliable and
    /// sequenced messages are also limited to `TW_MAX_UNRELIABLE_SIZE`.
    pub max_message_size: u32,
    /// Send an empty packet (acks only) after this long without sending (default
    /// 1000), or after a quarter of the connection's timeout when that is shorter: any
    /// interval holds any timeout. Above 0.
    pub keepalive_interval_ms: u32,
    /// Drop a connection after this long without a valid packet (default 5000). Above
    /// 0.
    pub timeout_ms: u32,
    /// Give up on a connection attempt after this long (default 5000).
    pub connect_timeout_ms: u32,
    /// Resend interval of handshake packets (default 100). Must be below
    /// `connect_timeout_ms`.
    pub handshake_retry_ms: u32,
    /// Bytes that may wait in one connection's send queue (default 4194304): messages
    /// not yet flushed, reliable messages the peer has not acknowledged yet, and sends
    /// still on their way to the network thread. At least `max_message_size`.
    /// `tw_host_send` refuses a message that could go past it with
    /// `TW_RESULT_QUEUE_FULL`, so an accepted message is never dropped for lack of room.
    pub send_queue_limit_bytes: u32,
    /// SO_RCVBUF in bytes (default 262144, as ENet's hosts ask for; the OS may cap it:
    /// Linux at `net.core.rmem_max`, counting twice what it keeps). 0 keeps the OS
    /// default. A host whose engine polls once a frame leaves the socket to the engine
    /// for as many frames as this holds (with one to spare), and its network thread
    /// wakes only that often to check that the frames still come: below three frames'
    /// datagrams (each charged about a kilobyte), it wakes every frame.
    pub recv_buffer_bytes: u32,
    /// SO_SNDBUF in bytes; 0 (the default) keeps the OS default.
    pub send_buffer_bytes: u32,
    /// If non-zero the network thread also flushes on its own at this interval, for
    /// engines that never call `tw_host_flush`. 0 (the default): explicit flushes only.
    pub auto_flush_interval_us: u32,
    /// Seed of the link simulators (`tw_host_set_link_sim`); 0 (the default) takes one
    /// from the OS. Set it to make simulated loss and jitter reproducible.
    pub sim_seed: u64,
    /// Encryption, secrets, connect key or token (`tw_security_config`), read only
    /// while the host or session is created. NULL (the default): encrypted, open to
    /// anyone.
    pub security: *const tw_security_config,
    /// Incoming connections one IP address may hold at once (default 8: a household or
    /// a LAN party behind one NAT); 0: no limit of its own. Past it that address is
    /// refused with `TW_DISCONNECT_REASON_SERVER_FULL`.
    pub max_clients_per_ip: u32,
    /// A peer's budget, checked on every datagram it sends: messages a second (frames,
    /// plus one per datagram without any; default 8192). A peer over its budget is
    /// throttled (its datagrams dropped unread), then dropped with
    /// `TW_DISCONNECT_REASON_FLOODING`. This host paces itself at three quarters of
    /// the same budget, so both ends of a connection should use the same values (what
    /// the pace holds back leaves on the network thread's timer once it may, without
    /// another flush). At least 4/3 of two full datagrams, `2 *
    /// max_frames_per_datagram` (171 with 64).
    pub max_messages_per_sec: u32,
    /// A peer's budget of datagram bytes a second (default 4194304); at least 3200
    /// (three quarters of it hold two 1200-byte datagrams).
    pub max_bytes_per_sec: u32,
    /// Bytes of one peer's received messages that may wait for the engine to poll
    /// them (default 262144); past it that peer's datagrams are dropped unacknowledged
    /// (its reliable data comes again): a slow engine slows that peer down, no other.
    /// At least 1200.
    pub max_recv_queue_bytes: u32,
    /// Messages in one datagram, 1..=582 (default 64); ours never carry more.
    pub max_frames_per_datagram: u32,
    /// A host on an external carrier (bound to `"remote:<id>"`): the carrier's largest
    /// datagram, 1105..=1200 (Steam's unreliable messages: 1200; EOS P2P: 1170; WebRTC
    /// data channels: 1200). 0 (the default): 1200. A host with a UDP socket must leave
    /// it 0 (its datagrams are at most 1200 bytes).
    pub max_datagram_size: u32,
    /// Must be zero.
    pub reserved: [u8; 8],
}

/// The direction a link simulator applies to (`tw_host_set_link_sim`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_direction {
    /// Datagrams this host sends.
    Outbound = 0,
    /// Datagrams this host receives.
    Inbound = 1,
}

impl TryFrom<u32> for tw_direction {
    type Error = Failure;
    fn try_from(v: u32) -> FfiResult<Self> {
        match v {
            0 => Ok(tw_direction::Outbound),
            1 => Ok(tw_direction::Inbound),
            _ => Err(Failure::invalid(format!(
                "direction {v} is not TW_DIRECTION_OUTBOUND (0) or TW_DIRECTION_INBOUND (1)"
            ))),
        }
    }
}

impl From<tw_direction> for Direction {
    fn from(d: tw_direction) -> Direction {
        match d {
            tw_direction::Outbound => Direction::Outbound,
            tw_direction::Inbound => Direction::Inbound,
        }
    }
}

/// How a simulated link varies the delay of each datagram (`tw_link_sim_config.jitter_kind`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_jitter_kind {
    /// Every datagram gets exactly `latency_us`.
    None = 0,
    /// Extra delay uniform in [0, `jitter_us`].
    Uniform = 1,
    /// Extra delay |N(0, `jitter_us`)|: a folded normal with that standard deviation.
    Gaussian = 2,
    /// Heavy-tailed extra delay: a Pareto law shifted to start at 0 (Lomax), with
    /// scale `jitter_us` and tail index `jitter_shape`:
    /// P(extra > x) = (scale / (scale + x))^shape.
    Pareto = 3,
}

impl TryFrom<u32> for tw_jitter_kind {
    type Error = Failure;
    fn try_from(v: u32) -> FfiResult<Self> {
        Ok(match v {
            0 => tw_jitter_kind::None,
            1 => tw_jitter_kind::Uniform,
            2 => tw_jitter_kind::Gaussian,
            3 => tw_jitter_kind::Pareto,
            _ => {
                return Err(Failure::invalid(format!("jitter_kind {v} is not a tw_jitter_kind (0..=3)")));
            }
        })
    }
}

/// Which datagrams a simulated link drops (`tw_link_sim_config.loss_kind`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_loss_kind {
    /// Nothing is lost.
    None = 0,
    /// Each datagram is lost independently with probability `loss_probability`.
    Bernoulli = 1,
    /// Bursty loss: a two-state Markov chain (`loss_p_good_to_bad`, `loss_p_bad_to_good`)
    /// with a loss probability per state (`loss_in_good`, `loss_in_bad`).
    GilbertElliott = 2,
}

impl TryFrom<u32> for tw_loss_kind {
    type Error = Failure;
    fn try_from(v: u32) -> FfiResult<Self> {
        Ok(match v {
            0 => tw_loss_kind::None,
            1 => tw_loss_kind::Bernoulli,
            2 => tw_loss_kind::GilbertElliott,
            _ => {
                return Err(Failure::invalid(format!("loss_kind {v} is not a tw_loss_kind (0..=2)")));
            }
        })
    }
}

/// One direction of a simulated link (`tw_host_set_link_sim`), for testing games under
/// latency, jitter and loss on a real socket.
///
/// Fill it with `tw_link_sim_config_init_default` (a perfect link) first, then change
/// fields. Probabilities are fractions in [0, 1]. `reserved0` and `reserved` must stay
/// zero.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct tw_link_sim_config {
    /// `sizeof(tw_link_sim_config)`, set by `tw_link_sim_config_init_default`.
    pub struct_size: u32,
    /// One of `tw_jitter_kind`.
    pub jitter_kind: u32,
    /// One of `tw_loss_kind`.
    pub loss_kind: u32,
    /// Must be zero.
    pub reserved0: u32,
    /// Base one-way delay added to every datagram, in microseconds.
    pub latency_us: u64,
    /// UNIFORM: largest extra delay (rounded to whole microseconds); GAUSSIAN: standard
    /// deviation; PARETO: scale. In microseconds, finite and >= 0.
    pub jitter_us: f64,
    /// PARETO: tail index (> 0; smaller is heavier: the mean is infinite at <= 1).
    /// Must be finite and >= 0 for the other kinds, which ignore it.
    pub jitter_shape: f64,
    /// BERNOULLI: probability that a datagram is lost.
    pub loss_probability: f64,
    /// GILBERT_ELLIOTT: probability of moving from the good to the bad state, per datagram.
    pub loss_p_good_to_bad: f64,
    /// GILBERT_ELLIOTT: probability of moving from the bad to the good state, per datagram.
    pub loss_p_bad_to_good: f64,
    /// GILBERT_ELLIOTT: loss probability in the good state.
    pub loss_in_good: f64,
    /// GILBERT_ELLIOTT: loss probability in the bad state.
    pub loss_in_bad: f64,
    /// Probability that a datagram is delivered twice.
    pub duplicate: f64,
    /// Probability that a datagram is held back by `reorder_delay_us`, letting later
    /// ones overtake it.
    pub reorder: f64,
    /// Extra delay of a reordered datagram, in microseconds; > 0 when `reorder` > 0.
    pub reorder_delay_us: u64,
    /// Link rate in bytes per second; 0 = unlimited.
    pub bandwidth_bytes_per_sec: u64,
    /// Bytes that may queue behind the rate limit before datagrams are dropped;
    /// 0 = the simulator's default (64 KiB). Unused without a rate.
    pub queue_limit_bytes: u64,
    /// Per-link seed. Must be 0 for now: this runtime seeds every simulator of a host
    /// from `tw_host_config.sim_seed`. Non-zero gives `TW_RESULT_INVALID_ARGUMENT`.
    pub seed: u64,
    /// Must be zero.
    pub reserved: [u8; 32],
}

/// Reads the leading `struct_size` of a caller struct and checks it against the sizes
/// this library knows.
///
/// # Safety
/// `ptr` must be non-NULL, aligned, and point to at least 4 readable bytes.
pub(crate) unsafe fn check_struct_size<T>(ptr: *const T, type_name: &str) -> FfiResult<()> {
    // SAFETY: every config struct starts with `uint32_t struct_size`; the caller
    // guarantees those 4 bytes are readable. Reading only them first means a caller
    // compiled against a smaller (older) struct is never read past its end.
    let size = unsafe { ptr.cast::<u32>().read() };
    if size as usize != size_of::<T>() {
        return Err(Failure::new(
            tw_result::VersionMismatch,
            format!(
                "{type_name}.struct_size is {size}, this library knows only {} \
                 (initialise it with {type_name}_init_default, and make sure the header \
                 matches the library)",
                size_of::<T>()
            ),
        ));
    }
    Ok(())
}

fn check_zero(bytes: &[u8], what: &str) -> FfiResult<()> {
    if bytes.iter().any(|&b| b != 0) {
        return Err(Failure::invalid(format!("{what} must be zero")));
    }
    Ok(())
}

impl tw_host_config {
    /// The transport's rules (`EndpointConfig::validate`, `PeerLimits::validate`) for
    /// the fields a C caller sets, in its units and by its names.
    fn check(&self, name: &str) -> FfiResult<()> {
        let bad = |m: String| Err(Failure::invalid(m));
        let max_message = 1u32 << 20;
        if !(1..=max_message).contains(&self.max_message_size) {
            return bad(format!("{name}.max_message_size {} is not in 1..={max_message}", self.max_message_size));
        }
        if self.keepalive_interval_ms == 0 {
            return bad(format!("{name}.keepalive_interval_ms 0 must be above 0"));
        }
        if self.timeout_ms == 0 {
            return bad(format!("{name}.timeout_ms 0 must be above 0"));
        }
        if self.handshake_retry_ms == 0 || self.handshake_retry_ms >= self.connect_timeout_ms {
            return bad(format!(
                "{name}.handshake_retry_ms {} must be above 0 and below {name}.connect_timeout_ms ({})",
                self.handshake_retry_ms, self.connect_timeout_ms
            ));
        }
        if self.send_queue_limit_bytes < self.max_message_size {
            return bad(format!(
                "{name}.send_queue_limit_bytes {} is below {name}.max_message_size ({})",
                self.send_queue_limit_bytes, self.max_message_size
            ));
        }
        let max_clients = 65_536;
        if self.max_clients > max_clients {
            return bad(format!("{name}.max_clients {} is above {max_clients}", self.max_clients));
        }
        let frames = self.max_frames_per_datagram;
        if !(1..=MAX_FRAMES_PER_DATAGRAM).contains(&frames) {
            return bad(format!("{name}.max_frames_per_datagram {frames} is not in 1..={MAX_FRAMES_PER_DATAGRAM}"));
        }
        // A host paces itself at three quarters of the budgets it grants its peers (one
        // second's worth at once); that pace must still let two full datagrams through.
        let at_least = |need: u64| (4 * need).div_ceil(3);
        let min_messages = at_least(2 * u64::from(frames));
        if u64::from(self.max_messages_per_sec) < min_messages {
            return bad(format!(
                "{name}.max_messages_per_sec {} is below {min_messages}: three quarters of it (this host's own pace) \
                 must hold two full datagrams, 2 x {name}.max_frames_per_datagram ({frames}) messages",
                self.max_messages_per_sec
            ));
        }
        let datagram = MAX_DATAGRAM_SIZE as u64;
        let min_bytes = at_least(2 * datagram);
        if u64::from(self.max_bytes_per_sec) < min_bytes {
            return bad(format!(
                "{name}.max_bytes_per_sec {} is below {min_bytes}: three quarters of it (this host's own pace) must \
                 hold two {datagram}-byte datagrams",
                self.max_bytes_per_sec
            ));
        }
        if (self.max_recv_queue_bytes as usize) < MAX_DATAGRAM_SIZE {
            return bad(format!(
                "{name}.max_recv_queue_bytes {} is below {MAX_DATAGRAM_SIZE} (one datagram)",
                self.max_recv_queue_bytes
            ));
        }
        Ok(())
    }

    /// The defaults `tw_host_config_init_default` writes.
    pub fn default_values() -> Self {
        let e = EndpointConfig::default();
        let ms = |us: u64| u32::try_from(us / 1000).unwrap_or(u32::MAX);
        tw_host_config {
            struct_size: size_of::<tw_host_config>() as u32,
            protocol_id: e.protocol_id,
            max_clients: e.max_incoming,
            max_message_size: u32::try_from(e.max_message_size).unwrap_or(u32::MAX),
            keepalive_interval_ms: ms(e.keepalive_interval_us),
            timeout_ms: ms(e.timeout_us),
            connect_timeout_ms: ms(e.connect_timeout_us),
            handshake_retry_ms: ms(e.handshake_retry_us),
            send_queue_limit_bytes: u32::try_from(e.send_queue_limit_bytes).unwrap_or(u32::MAX),
            recv_buffer_bytes: u32::try_from(tickwire_runtime::DEFAULT_RECV_BUFFER_BYTES).unwrap_or(u32::MAX),
            send_buffer_bytes: 0,
            auto_flush_interval_us: 0,
            sim_seed: 0,
            security: std::ptr::null(),
            max_clients_per_ip: e.max_incoming_per_ip,
            max_messages_per_sec: e.limits.max_messages_per_sec,
            max_bytes_per_sec: e.limits.max_bytes_per_sec,
            max_recv_queue_bytes: u32::try_from(e.limits.max_recv_queue_bytes).unwrap_or(u32::MAX),
            max_frames_per_datagram: e.limits.max_frames_per_datagram,
            max_datagram_size: 0,
            reserved: [0; 8],
        }
    }

    /// Converts to the runtime's config, checking every rule of the transport in the
    /// caller's terms: each failure names the field as the header spells it, under
    /// `name` (`tw_host_config`, or `tw_session_config.host` inside a session's config),
    /// with the values the caller set (milliseconds, not the transport's microseconds).
    ///
    /// # Safety
    /// `self.security` must be NULL or point to at least its `struct_size` readable bytes.
    pub(crate) unsafe fn to_runtime(self, bind: SocketAddr, name: &str) -> FfiResult<HostConfig> {
        check_zero(&self.reserved, &format!("{name}.reserved"))?;
        self.check(name)?;
        let us = |ms: u32| u64::from(ms) * 1000;
        let endpoint = EndpointConfig {
            protocol_id: self.protocol_id,
            max_incoming: self.max_clients,
            keepalive_interval_us: us(self.keepalive_interval_ms),
            timeout_us: us(self.timeout_ms),
            connect_timeout_us: us(self.connect_timeout_ms),
            handshake_retry_us: us(self.handshake_retry_ms),
            max_message_size: self.max_message_size as usize,
            send_queue_limit_bytes: self.send_queue_limit_bytes as usize,
            max_incoming_per_ip: self.max_clients_per_ip,
            limits: PeerLimits {
                max_frames_per_datagram: self.max_frames_per_datagram,
                max_messages_per_sec: self.max_messages_per_sec,
                max_bytes_per_sec: self.max_bytes_per_sec,
                max_recv_queue_bytes: self.max_recv_queue_bytes as usize,
                ..PeerLimits::default()
            },
            // SAFETY: forwarded contract. Its messages name `tw_security_config`'s fields.
            security: unsafe { arg_security(self.security, self.protocol_id, bind) }?,
            aes_gcm: tickwire_runtime::aes_gcm_in_hardware(),
            ..EndpointConfig::default()
        };
        // The checks above are the endpoint's rules in C terms; should the endpoint ever
        // refuse something they let through, say so under the struct's name rather than
        // pass its words on as if the caller had used them.
        // (Its security part was checked above; a connect-key server without a public
        // address gets its bound socket's from the runtime.)
        EndpointConfig { security: Default::default(), ..endpoint.clone() }.validate().map_err(|e| {
            Failure::invalid(format!("{name}: the transport refuses these settings ({e}); please report this"))
        })?;
        let carrier = match (RemoteId::from_addr(bind), self.max_datagram_size) {
            (Some(_), 0) => Carrier::External { max_datagram_size: MAX_DATAGRAM_SIZE },
            (Some(_), n) if (MIN_CARRIER_DATAGRAM..=MAX_DATAGRAM_SIZE).contains(&(n as usize)) => {
                Carrier::External { max_datagram_size: n as usize }
            }
            (Some(_), n) => {
                return Err(Failure::invalid(format!(
                    "{name}.max_datagram_size is {n}: a carrier's largest datagram must be \
                     {MIN_CARRIER_DATAGRAM}..={MAX_DATAGRAM_SIZE} bytes (0: {MAX_DATAGRAM_SIZE})"
                )));
            }
            (None, 0) => Carrier::Udp,
            (None, n) => {
                return Err(Failure::invalid(format!(
                    "{name}.max_datagram_size is {n}: only a host on an external carrier (bound to \
                     \"remote:<id>\") takes one; leave it 0"
                )));
            }
        };
        Ok(HostConfig {
            carrier,
            endpoint,
            bind,
            // The callers set it for an empty bind address.
            dual_stack: false,
            recv_buffer_bytes: self.recv_buffer_bytes as usize,
            send_buffer_bytes: self.send_buffer_bytes as usize,
            outbound_sim: None,
            inbound_sim: None,
            sim_seed: self.sim_seed,
            auto_flush_interval_us: u64::from(self.auto_flush_interval_us),
            receive_moderation_us: tickwire_runtime::DEFAULT_RECEIVE_MODERATION_US,
        })
    }
}

/// A `tw_link_sim_config` argument: NULL means no simulation (None); otherwise its
/// struct_size is checked and it is converted.
///
/// # Safety
/// `config` must be NULL or point to at least `struct_size` readable bytes.
pub(crate) unsafe fn arg_link_sim(config: *const tw_link_sim_config) -> FfiResult<Option<LinkConfig>> {
    if config.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL; the caller guarantees at least struct_size readable bytes.
    unsafe { check_struct_size(config, "tw_link_sim_config") }?;
    // SAFETY: struct_size equals sizeof(tw_link_sim_config): the whole struct is there.
    Some(unsafe { config.read() }.to_runtime()).transpose()
}

impl tw_link_sim_config {
    /// The defaults `tw_link_sim_config_init_default` writes: a perfect link.
    pub fn default_values() -> Self {
        tw_link_sim_config {
            struct_size: size_of::<tw_link_sim_config>() as u32,
            jitter_kind: tw_jitter_kind::None as u32,
            loss_kind: tw_loss_kind::None as u32,
            reserved0: 0,
            latency_us: 0,
            jitter_us: 0.0,
            jitter_shape: 0.0,
            loss_probability: 0.0,
            loss_p_good_to_bad: 0.0,
            loss_p_bad_to_good: 0.0,
            loss_in_good: 0.0,
            loss_in_bad: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay_us: 0,
            bandwidth_bytes_per_sec: 0,
            queue_limit_bytes: 0,
            seed: 0,
            reserved: [0; 32],
        }
    }

    /// Converts to the simulator's config, checking every field.
    pub(crate) fn to_runtime(self) -> FfiResult<LinkConfig> {
        if self.reserved0 != 0 {
            return Err(Failure::invalid("tw_link_sim_config.reserved0 must be zero"));
        }
        check_zero(&self.reserved, "tw_link_sim_config.reserved")?;
        if self.seed != 0 {
            return Err(Failure::invalid(
                "tw_link_sim_config.seed must be 0: per-link seeds are not supported yet, \
                 set tw_host_config.sim_seed instead",
            ));
        }
        let fraction = |v: f64, name: &str| -> FfiResult<f64> {
            if (0.0..=1.0).contains(&v) {
                Ok(v)
            } else {
                Err(Failure::invalid(format!("tw_link_sim_config.{name} is {v}, not a fraction in [0, 1]")))
            }
        };
        let non_negative = |v: f64, name: &str| -> FfiResult<f64> {
            if v.is_finite() && v >= 0.0 {
                Ok(v)
            } else {
                Err(Failure::invalid(format!("tw_link_sim_config.{name} is {v}, not a finite value >= 0")))
            }
        };
        let jitter_us = non_negative(self.jitter_us, "jitter_us")?;
        let jitter_shape = non_negative(self.jitter_shape, "jitter_shape")?;
        let jitter = match tw_jitter_kind::try_from(self.jitter_kind)? {
            tw_jitter_kind::None => JitterModel::None,
            tw_jitter_kind::Uniform => JitterModel::Uniform { max_us: jitter_us.round() as u64 },
            tw_jitter_kind::Gaussian => JitterModel::Gaussian { sigma_us: jitter_us },
            tw_jitter_kind::Pareto => {
                if jitter_shape <= 0.0 {
                    return Err(Failure::invalid("tw_link_sim_config.jitter_shape must be > 0 for PARETO jitter"));
                }
                JitterModel::Pareto { scale_us: jitter_us, shape: jitter_shape }
            }
        };
        let loss_probability = fraction(self.loss_probability, "loss_probability")?;
        let p_good_to_bad = fraction(self.loss_p_good_to_bad, "loss_p_good_to_bad")?;
        let p_bad_to_good = fraction(self.loss_p_bad_to_good, "loss_p_bad_to_good")?;
        let loss_in_good = fraction(self.loss_in_good, "loss_in_good")?;
        let loss_in_bad = fraction(self.loss_in_bad, "loss_in_bad")?;
        let loss = match tw_loss_kind::try_from(self.loss_kind)? {
            tw_loss_kind::None => LossModel::None,
            tw_loss_kind::Bernoulli => LossModel::Bernoulli { p: loss_probability },
            tw_loss_kind::GilbertElliott => {
                LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_in_good, loss_in_bad }
            }
        };
        let queue_limit_bytes = usize::try_from(self.queue_limit_bytes).map_err(|_| {
            Failure::invalid(format!("tw_link_sim_config.queue_limit_bytes {} is too large", self.queue_limit_bytes))
        })?;
        let link = LinkConfig {
            latency_us: self.latency_us,
            jitter,
            loss,
            duplicate: fraction(self.duplicate, "duplicate")?,
            reorder: fraction(self.reorder, "reorder")?,
            reorder_delay_us: self.reorder_delay_us,
            bandwidth_bytes_per_sec: self.bandwidth_bytes_per_sec,
            queue_limit_bytes,
        };
        // The simulator's own rules (for example reorder needs a hold-back delay).
        link.validate().map_err(Failure::invalid)?;
        Ok(link)
    }
}

/// Fills `config` with the defaults (including `struct_size`). Call it before setting
/// any field, so that fields added in later versions get their defaults too.
///
/// Ownership: `config` is the caller's; it is only written during the call.
/// Thread-safety: may be called from any thread.
///
/// Returns `TW_RESULT_OK`, or `TW_RESULT_NULL_ARGUMENT` if `config` is NULL.
///
/// # Safety
/// `config` must be NULL or point to writable memory of `sizeof(tw_host_config)` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_config_init_default(config: *mut tw_host_config) -> tw_result {
    guard::run("tw_host_config_init_default", || {
        if config.is_null() {
            return Err(Failure::null("config"));
        }
        // SAFETY: non-NULL, and the caller guarantees a writable tw_host_config.
        unsafe { config.write(tw_host_config::default_values()) };
        Ok(tw_result::Ok)
    })
}

/// Fills `config` with a perfect link (no delay, no loss) and sets `struct_size`.
/// Call it before setting any field.
///
/// Ownership: `config` is the caller's; it is only written during the call.
/// Thread-safety: may be called from any thread.
///
/// Returns `TW_RESULT_OK`, or `TW_RESULT_NULL_ARGUMENT` if `config` is NULL.
///
/// # Safety
/// `config` must be NULL or point to writable memory of `sizeof(tw_link_sim_config)` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_link_sim_config_init_default(config: *mut tw_link_sim_config) -> tw_result {
    guard::run("tw_link_sim_config_init_default", || {
        if config.is_null() {
            return Err(Failure::null("config"));
        }
        // SAFETY: non-NULL, and the caller guarantees a writable tw_link_sim_config.
        unsafe { config.write(tw_link_sim_config::default_values()) };
        Ok(tw_result::Ok)
    })
}

/// Returns `sizeof(tw_host_config)` as the library sees it. A binding compares it with
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
pub unsafe extern "C" fn tw_host_config_size() -> usize {
    guard::run_or("tw_host_config_size", 0, size_of::<tw_host_config>)
}

/// Returns `sizeof(tw_link_sim_config)` as the library sees it. A binding compares it with
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
pub unsafe extern "C" fn tw_link_sim_config_size() -> usize {
    guard::run_or("tw_link_sim_config_size", 0, size_of::<tw_link_sim_config>)
}
