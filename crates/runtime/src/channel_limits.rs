//! The largest message each channel of a host accepts, checked on the engine's thread
//! before a send is taken.

use tickwire_proto::{ChannelKind, EndpointConfig, MAX_CHANNELS, max_unreliable_for};

/// The largest message each channel accepts, checked on the engine thread with the
/// endpoint's own limits (unreliable kinds are never fragmented: one datagram).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChannelLimits {
    /// Channels configured (ids `0..count`).
    count: u8,
    /// Bit `c` set: channel `c` is reliable.
    reliable_mask: u32,
    /// `max_message_size`.
    reliable: usize,
    /// One datagram's worth ([`max_unreliable_for`] the endpoint's `max_datagram_size`),
    /// or `max_message_size` if that is less.
    pub(crate) unreliable: usize,
}

impl ChannelLimits {
    pub(crate) fn of_config(cfg: &EndpointConfig) -> Self {
        const { assert!(MAX_CHANNELS <= u32::BITS as usize, "one bit per channel") };
        // (An endpoint's configuration has 1 to MAX_CHANNELS channels: `Endpoint::new`
        // refuses others. A test's stand-in checks nothing, so more are cut here rather
        // than shifted past the mask.)
        let channels = &cfg.channels[..cfg.channels.len().min(MAX_CHANNELS)];
        let reliable_mask = channels
            .iter()
            .enumerate()
            .filter(|(_, kind)| matches!(kind, ChannelKind::Reliable))
            .fold(0u32, |mask, (c, _)| mask | 1 << c);
        ChannelLimits {
            count: channels.len() as u8,
            reliable_mask,
            reliable: cfg.max_message_size,
            unreliable: max_unreliable_for(cfg.max_datagram_size).min(cfg.max_message_size),
        }
    }

    /// The largest message `channel` takes; `None` for a channel not configured.
    pub(crate) fn of(&self, channel: u8) -> Option<usize> {
        if channel >= self.count {
            None
        } else if self.reliable_mask >> channel & 1 == 1 {
            Some(self.reliable)
        } else {
            Some(self.unreliable)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_configured_channel_has_its_kinds_limit_and_no_other_channel_has_one() {
        let mut cfg = EndpointConfig {
            channels: vec![
                ChannelKind::Unreliable,
                ChannelKind::Reliable,
                ChannelKind::Sequenced,
                ChannelKind::Reliable,
            ],
            max_message_size: 100_000,
            ..EndpointConfig::default()
        };
        let limits = ChannelLimits::of_config(&cfg);
        let datagram = max_unreliable_for(cfg.max_datagram_size);
        assert_eq!(limits.of(0), Some(datagram));
        assert_eq!(limits.of(1), Some(100_000));
        assert_eq!(limits.of(2), Some(datagram));
        assert_eq!(limits.of(3), Some(100_000));
        assert_eq!(limits.of(4), None);
        assert_eq!(limits.of(u8::MAX), None);
        // A message limit below a datagram caps the unreliable kinds too.
        cfg.max_message_size = 100;
        let limits = ChannelLimits::of_config(&cfg);
        assert_eq!((limits.of(0), limits.of(1), limits.unreliable), (Some(100), Some(100), 100));
        // Every channel of the widest configuration, the last one reliable.
        cfg.channels = vec![ChannelKind::Unreliable; MAX_CHANNELS];
        cfg.channels[MAX_CHANNELS - 1] = ChannelKind::Reliable;
        cfg.max_message_size = 100_000;
        let limits = ChannelLimits::of_config(&cfg);
        assert_eq!(limits.of(MAX_CHANNELS as u8 - 1), Some(100_000));
        assert_eq!(limits.of(MAX_CHANNELS as u8 - 2), Some(datagram));
        assert_eq!(limits.of(MAX_CHANNELS as u8), None);
        // More than an endpoint takes: the first MAX_CHANNELS, no overflow of the mask.
        cfg.channels = vec![ChannelKind::Reliable; MAX_CHANNELS + 8];
        let limits = ChannelLimits::of_config(&cfg);
        assert_eq!(limits.of(MAX_CHANNELS as u8 - 1), Some(100_000));
        assert_eq!(limits.of(MAX_CHANNELS as u8), None);
    }
}
