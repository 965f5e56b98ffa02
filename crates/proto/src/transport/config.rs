//! Endpoint configuration and its validation.

use super::crypto::{KEY_SIZE, Secret};
use super::packet_aead::ProvidedAead;
use super::prefetch::Prefetch;
use super::security::Security;
use crate::clock::Micros;
use crate::wire::{MAX_DATAGRAM_SIZE, MAX_FRAMES_SIZE, MIN_DATAGRAM_SIZE};

/// The delivery guarantee of a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ChannelKind {
    /// May be lost, duplicated suppressed, delivered in any order.
    Unreliable = 0,
    /// May be lost; a message older than one already delivered is dropped.
    Sequenced = 1,
    /// Delivered exactly once, in order; large messages are fragmented.
    Reliable = 2,
}

/// Channel 0 of the default layout: unreliable.
pub const CHANNEL_UNRELIABLE: u8 = 0;
/// Channel 1 of the default layout: unreliable-sequenced.
pub const CHANNEL_SEQUENCED: u8 = 1;
/// Channel 2 of the default layout: reliable-ordered.
pub const CHANNEL_RELIABLE: u8 = 2;
/// Channel ids live in 6 bits of the frame header.
pub const MAX_CHANNELS: usize = 32;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid endpoint config: {0}")]
/// A config that cannot work; the message names the field and why.
pub struct ConfigError(pub String);

/// Everything an [`super::Endpoint`] needs to know up front.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointConfig {
    /// Identifies the game: datagrams with another id are dropped (and counted).
    pub protocol_id: u32,
    /// How many incoming connections may be open at once; 0 refuses all (a pure client).
    pub max_incoming: u32,
    /// How many of those one IP address may hold at once (0: no limit of its own).
    /// Past it, that address is refused with SERVER_FULL (the relay client retries
    /// with backoff). Players behind one NAT share an address: the default of 8 covers
    /// a household or a small LAN party, and keeps one address from holding every
    /// connection of a bigger server by reconnecting idle ones. Spoofed sources cannot
    /// use it: a connection exists only after the cookie proved the address. An IPv6
    /// address counts by its /64 prefix (one host is given a whole /64 and may vary
    /// the rest), an IPv4-mapped IPv6 address as its IPv4 address.
    pub max_incoming_per_ip: u32,
    /// Send an empty packet (acks only) after this long without sending anything, or
    /// after a quarter of the connection's silence timeout if that is shorter (so any
    /// interval holds any timeout: three keepalives in a row may be lost). Default 1 s:
    /// an idle connection costs one small packet a second each way, and its network
    /// thread wakes about twice a second.
    pub keepalive_interval_us: Micros,
    /// Drop a connection after this long without a valid packet from the peer.
    pub timeout_us: Micros,
    /// Give up on a connection attempt after this long.
    pub connect_timeout_us: Micros,
    /// Resend interval for handshake packets.
    pub handshake_retry_us: Micros,
    /// Largest reliable message, in bytes (at most 1 MiB).
    pub max_message_size: usize,
    /// Largest datagram this endpoint sends, in bytes:
    /// [`MIN_DATAGRAM_SIZE`]..=[`MAX_DATAGRAM_SIZE`] (default 1,200). For a carrier
    /// with a smaller limit than UDP's safe 1,200 (EOS P2P: 1,170): packets are packed
    /// to it, reliable messages fragmented sooner, and unreliable messages are refused
    /// above [`max_unreliable_for`](super::max_unreliable_for) it
    /// ([`Endpoint::max_unreliable`](super::Endpoint::max_unreliable)). The wire format
    /// does not change, and datagrams up to 1,200 bytes are received whatever it is.
    pub max_datagram_size: usize,
    /// Bytes that may wait in one connection's send queues before `send` reports
    /// back-pressure.
    pub send_queue_limit_bytes: usize,
    /// Most datagrams one connection may emit per flush (paces large transfers).
    pub max_datagrams_per_flush: u32,
    /// Channel layout: index = channel id.
    pub channels: Vec<ChannelKind>,
    /// What one peer may make this endpoint do (messages and bytes per second,
    /// messages per datagram, bytes waiting for the owner). Also the pace this endpoint
    /// sends at, so both sides of a connection should use the same limits.
    pub limits: PeerLimits,
    /// How packets that carry only unreliable data are acknowledged (reliable data is
    /// always acknowledged within [`super::MAX_ACK_DELAY_US`]).
    pub unreliable_acks: UnreliableAcks,
    /// Encryption, and who may connect (default: encrypted, open to anyone).
    pub security: Security,
    /// This machine runs AES-256-GCM in hardware (AES-NI and PCLMULQDQ on x86, the
    /// ARMv8 crypto extensions): as a client the endpoint offers it, as a server it
    /// picks it when the client offers it. A connection between two such machines
    /// seals its packets with AES-256-GCM, about three times faster there than
    /// ChaCha20-Poly1305, which every other connection uses (`wire::Cipher`). The
    /// protocol crate does not look at the machine: the runtime sets this from the CPU.
    /// Default false.
    pub aes_gcm: bool,
    /// The AEAD library that seals packets, if the owner gives one (the runtime gives
    /// AWS-LC's, faster than this crate's own RustCrypto ciphers; `packet_aead.rs`).
    /// Same algorithms, same bytes: only speed differs. Default `None`: the crate's own.
    pub aead: Option<ProvidedAead>,
    /// Starts loading a connection's memory before the endpoint reads it, if the owner
    /// gives a way to (`prefetch.rs`; the runtime gives the CPU's prefetch
    /// instruction). Only speed differs. Default `None`: no hints.
    pub prefetch: Option<Prefetch>,
    /// Seeds salts, the cookie secret and the ephemeral keys, with `key_seed`. Tests
    /// pass a fixed value to be reproducible.
    pub seed: u64,
    /// 32 bytes of secret randomness mixed into the endpoint's ChaCha20 generator (every
    /// key, salt and cookie secret comes from it). The runtime always fills it from the
    /// OS; left zero, a run is reproducible from `seed`, and its keys are predictable.
    pub key_seed: Secret,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            protocol_id: 0x5457_0001,
            max_incoming: 0,
            max_incoming_per_ip: 8,
            keepalive_interval_us: 1_000_000,
            timeout_us: 5_000_000,
            connect_timeout_us: 5_000_000,
            handshake_retry_us: 100_000,
            max_message_size: 1 << 20,
            max_datagram_size: MAX_DATAGRAM_SIZE,
            send_queue_limit_bytes: 4 << 20,
            max_datagrams_per_flush: 64,
            channels: vec![ChannelKind::Unreliable, ChannelKind::Sequenced, ChannelKind::Reliable],
            limits: PeerLimits::default(),
            unreliable_acks: UnreliableAcks::default(),
            security: Security::default(),
            aes_gcm: false,
            aead: None,
            prefetch: None,
            seed: 0,
            key_seed: Secret([0; KEY_SIZE]),
        }
    }
}

/// The most frames a datagram can hold: empty unreliable frames (2 bytes each) after
/// the payload header.
pub const MAX_FRAMES_PER_DATAGRAM: u32 = (MAX_FRAMES_SIZE / 2) as u32;

/// Budgets per peer, checked on every datagram from an established connection
/// (`budget.rs`). The defaults are sized from what honest traffic needs, with a wide
/// margin: a 60 Hz game sends each peer one input or update message per tick plus acks
/// and keepalives (under 200 messages and a few tens of KB a second); 240 Hz with a
/// few messages per tick stays under 2,000 messages a second; the largest honest burst
/// is a reliable snapshot, at most `max_message_size` (1 MiB: 1,024 fragments).
///
/// A datagram over a budget is dropped unread and counted (the peer is throttled; what
/// it sent reliably is sent again). A peer that keeps sending more than twice its
/// rates, so that what was dropped adds up to more than one burst, is disconnected with
/// [`DisconnectReason::Flooding`](super::DisconnectReason::Flooding). An endpoint paces
/// what it sends itself at three quarters of the same rates, so an honest peer with the
/// same limits is never throttled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerLimits {
    /// Frames (messages, or pieces of a fragmented reliable message) in one datagram;
    /// our own datagrams never carry more. Default 64: a game puts a handful of messages
    /// in a datagram, and 64 still batches many small ones, where a 1,200-byte datagram
    /// of empty frames holds 590.
    pub max_frames_per_datagram: u32,
    /// Messages a second: frames, plus one for each datagram without frames (an ack or a
    /// keepalive). Default 8,192: four times a busy 240 Hz game's traffic, and a 1 MiB
    /// snapshot's 1,024 fragments fit in one burst many times over.
    pub max_messages_per_sec: u32,
    /// Datagram bytes a second. Default 4 MiB: a game's inputs and updates take tens of
    /// KB a second; this leaves room for a few 1 MiB snapshots a second.
    pub max_bytes_per_sec: u32,
    /// How much a peer may send at once, as time at the rates above (the depth of its
    /// token buckets). Default 1 s: a whole second's budget in one burst, which covers
    /// a snapshot sent at once and packets bunched up by network jitter.
    pub burst_us: Micros,
    /// Bytes of this peer's received messages waiting for the owner to poll them, each
    /// counted as its buffer's capacity plus a fixed overhead (so an empty message is
    /// not free). Beyond it the peer's datagrams are dropped unacknowledged (it sends
    /// its reliable data again later): a slow engine slows that peer down, and no other.
    /// One datagram's messages and one reassembled reliable message may go past it.
    /// Default 256 KiB: 20 s of a 60 Hz game's inputs from one peer.
    pub max_recv_queue_bytes: usize,
}

impl Default for PeerLimits {
    fn default() -> Self {
        PeerLimits {
            max_frames_per_datagram: 64,
            max_messages_per_sec: 8192,
            max_bytes_per_sec: 4 << 20,
            burst_us: 1_000_000,
            max_recv_queue_bytes: 256 << 10,
        }
    }
}

impl PeerLimits {
    /// Messages in one burst.
    pub fn burst_messages(&self) -> u64 {
        self.max_messages_per_sec as u64 * self.burst_us / 1_000_000
    }

    /// Bytes in one burst.
    pub fn burst_bytes(&self) -> u64 {
        self.max_bytes_per_sec as u64 * self.burst_us / 1_000_000
    }

    /// Checks every limit; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |m: String| Err(ConfigError(format!("limits.{m}")));
        if !(1..=MAX_FRAMES_PER_DATAGRAM).contains(&self.max_frames_per_datagram) {
            return err(format!(
                "max_frames_per_datagram {} not in 1..={MAX_FRAMES_PER_DATAGRAM}",
                self.max_frames_per_datagram
            ));
        }
        if !(1_000..=10_000_000).contains(&self.burst_us) {
            return err(format!("burst_us {} not in 1000..=10000000", self.burst_us));
        }
        // Our own pace is three quarters of the budget; it must still let two full
        // datagrams through at once, or a full datagram could never be sent.
        let (messages, bytes) = (self.burst_messages() * 3 / 4, self.burst_bytes() * 3 / 4);
        if messages < 2 * self.max_frames_per_datagram as u64 {
            return err(format!(
                "max_messages_per_sec {} gives a burst of {} messages in burst_us {}: below two full datagrams \
                 (2 x max_frames_per_datagram {}) at three quarters of it",
                self.max_messages_per_sec,
                self.burst_messages(),
                self.burst_us,
                self.max_frames_per_datagram
            ));
        }
        if bytes < 2 * MAX_DATAGRAM_SIZE as u64 {
            return err(format!(
                "max_bytes_per_sec {} gives a burst of {} bytes in burst_us {}: below two {MAX_DATAGRAM_SIZE}-byte \
                 datagrams at three quarters of it",
                self.max_bytes_per_sec,
                self.burst_bytes(),
                self.burst_us
            ));
        }
        if self.max_recv_queue_bytes < MAX_DATAGRAM_SIZE {
            return err(format!("max_recv_queue_bytes {} below {MAX_DATAGRAM_SIZE}", self.max_recv_queue_bytes));
        }
        Ok(())
    }
}

/// How a connection acknowledges packets that carry only unreliable or sequenced
/// data. Those acks feed nothing but the sender's loss and RTT figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnreliableAcks {
    /// Within [`super::MAX_ACK_DELAY_US`], like reliable data: the sender's figures
    /// get a sample for nearly every packet. The sessions' time sync is measured and
    /// tuned with it (the lab's S2 is late more often with `Sparse`), so it is the
    /// default.
    #[default]
    Prompt,
    /// By whatever goes back anyway, or every [`super::ACK_EVERY_UNRELIABLE`] packets
    /// when nothing does: a one-way stream (inputs to a server that answers
    /// nothing) costs 1/16 of an ack-only packet per packet instead of about one, and
    /// the sender's loss figure stays exact. What a bare `Host` uses.
    Sparse,
}

impl EndpointConfig {
    /// Checks the settings without building an endpoint; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |m: String| Err(ConfigError(m));
        if self.channels.is_empty() || self.channels.len() > MAX_CHANNELS {
            return err(format!("channel count {} not in 1..={MAX_CHANNELS}", self.channels.len()));
        }
        if self.max_message_size == 0 || self.max_message_size > (1 << 20) {
            return err(format!("max_message_size {} not in 1..=1048576", self.max_message_size));
        }
        if !(MIN_DATAGRAM_SIZE..=MAX_DATAGRAM_SIZE).contains(&self.max_datagram_size) {
            return err(format!(
                "max_datagram_size {} not in {MIN_DATAGRAM_SIZE}..={MAX_DATAGRAM_SIZE}",
                self.max_datagram_size
            ));
        }
        if self.keepalive_interval_us == 0 {
            return err("keepalive_interval_us must be > 0".into());
        }
        if self.timeout_us == 0 {
            return err("timeout_us must be > 0".into());
        }
        if self.handshake_retry_us == 0 || self.handshake_retry_us >= self.connect_timeout_us {
            return err(format!(
                "handshake_retry_us {} must be > 0 and below connect_timeout_us {}",
                self.handshake_retry_us, self.connect_timeout_us
            ));
        }
        if self.max_datagrams_per_flush == 0 {
            return err("max_datagrams_per_flush must be > 0".into());
        }
        if self.send_queue_limit_bytes < self.max_message_size {
            return err(format!(
                "send_queue_limit_bytes {} is below max_message_size {}",
                self.send_queue_limit_bytes, self.max_message_size
            ));
        }
        if self.max_incoming > 65_536 {
            return err(format!("max_incoming {} above 65536", self.max_incoming));
        }
        self.security.validate(self.protocol_id)?;
        self.limits.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_limits_are_valid_and_bad_ones_are_named() {
        assert_eq!(EndpointConfig::default().validate(), Ok(()));
        let bad = |f: fn(&mut PeerLimits)| {
            let mut cfg = EndpointConfig::default();
            f(&mut cfg.limits);
            cfg.validate().unwrap_err().0
        };
        assert!(bad(|l| l.max_frames_per_datagram = 0).contains("limits.max_frames_per_datagram 0"));
        assert!(bad(|l| l.max_frames_per_datagram = MAX_FRAMES_PER_DATAGRAM + 1).contains("max_frames_per_datagram"));
        assert!(bad(|l| l.burst_us = 999).contains("limits.burst_us 999"));
        // A budget that could never let a full datagram through.
        assert!(bad(|l| l.max_messages_per_sec = 127).contains("limits.max_messages_per_sec 127"));
        assert!(bad(|l| l.max_bytes_per_sec = 3_000).contains("limits.max_bytes_per_sec 3000"));
        assert!(bad(|l| l.max_recv_queue_bytes = 100).contains("limits.max_recv_queue_bytes 100"));
        let mut ok = EndpointConfig::default();
        ok.limits.max_messages_per_sec = 171; // 3/4 of it is 128: two datagrams of 64
        assert_eq!(ok.validate(), Ok(()));
    }
}
