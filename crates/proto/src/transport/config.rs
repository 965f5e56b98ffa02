//! Endpoint configuration and its validation.

use crate::clock::Micros;

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
pub struct ConfigError(pub String);

/// Everything an [`super::Endpoint`] needs to know up front.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointConfig {
    /// Identifies the game: datagrams with another id are dropped (and counted).
    pub protocol_id: u32,
    /// How many incoming connections may be open at once; 0 refuses all (a pure client).
    pub max_incoming: u32,
    /// Send an empty packet (acks only) after this long without sending anything.
    pub keepalive_interval_us: Micros,
    /// Drop a connection after this long without a valid packet from the peer.
    pub timeout_us: Micros,
    /// Give up on a connection attempt after this long.
    pub connect_timeout_us: Micros,
    /// Resend interval for handshake packets.
    pub handshake_retry_us: Micros,
    /// Largest reliable message, in bytes (at most 1 MiB).
    pub max_message_size: usize,
    /// Bytes that may wait in one connection's send queues before `send` reports
    /// back-pressure.
    pub send_queue_limit_bytes: usize,
    /// Most datagrams one connection may emit per flush (paces large transfers).
    pub max_datagrams_per_flush: u32,
    /// Channel layout: index = channel id.
    pub channels: Vec<ChannelKind>,
    /// Seeds salts and the cookie secret. The runtime passes OS randomness; tests pass
    /// a fixed value to be reproducible.
    pub seed: u64,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            protocol_id: 0x5457_0001,
            max_incoming: 0,
            keepalive_interval_us: 100_000,
            timeout_us: 5_000_000,
            connect_timeout_us: 5_000_000,
            handshake_retry_us: 100_000,
            max_message_size: 1 << 20,
            send_queue_limit_bytes: 4 << 20,
            max_datagrams_per_flush: 64,
            channels: vec![ChannelKind::Unreliable, ChannelKind::Sequenced, ChannelKind::Reliable],
            seed: 0,
        }
    }
}

impl EndpointConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |m: String| Err(ConfigError(m));
        if self.channels.is_empty() || self.channels.len() > MAX_CHANNELS {
            return err(format!("channel count {} not in 1..={MAX_CHANNELS}", self.channels.len()));
        }
        if self.max_message_size == 0 || self.max_message_size > (1 << 20) {
            return err(format!("max_message_size {} not in 1..=1048576", self.max_message_size));
        }
        if self.keepalive_interval_us == 0 || self.keepalive_interval_us >= self.timeout_us {
            return err(format!(
                "keepalive_interval_us {} must be > 0 and below timeout_us {}",
                self.keepalive_interval_us, self.timeout_us
            ));
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
        Ok(())
    }
}
