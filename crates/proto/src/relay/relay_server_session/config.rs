//! A server session's settings and how they are checked, and its misuse errors.

use crate::clock::Micros;
use crate::engine::Tick;
use crate::relay::relay_server::RelayServerConfig;
use crate::tick::TickClockConfig;
use crate::transport::{CHANNEL_RELIABLE, Secret};

/// Settings of a [`RelayServerSession`](super::RelayServerSession).
#[derive(Debug, Clone, PartialEq)]
pub struct RelayServerSessionConfig {
    /// The sync layer (tick rate, send interval, jitter buffers). Its input size and
    /// admission are set by the session.
    pub relay: RelayServerConfig,
    /// Bytes per input, 1..=[`MAX_INPUT_SIZE`](crate::MAX_INPUT_SIZE).
    pub input_size: usize,
    /// Player slots, 1..=64.
    pub max_players: usize,
    /// Send the engine's checksum every this many ticks (0: no desync detection).
    pub checksum_interval: u32,
    /// A dropped player's slot waits this long for it to come back with its token.
    pub reconnect_timeout_us: Micros,
    /// A connection that has not said Hello within this time is closed.
    pub hello_timeout_us: Micros,
    /// The transport's reliable channel (join handshake and snapshots).
    pub reliable_channel: u8,
    /// Mixed into the session tokens' generator with `token_seed`; a test's run is
    /// reproducible from the two.
    pub seed: u64,
    /// 32 bytes of secret randomness that seed the session tokens' cryptographic
    /// generator. The runtime fills it from the OS; all zero (the default) only in
    /// tests, where tokens then follow from `seed`.
    pub token_seed: Secret,
    /// The master clock's catch-up cap ([`crate::GameShape::max_frame_us`]): after a
    /// longer hitch of the server the excess is dropped, not simulated. Default 250 ms.
    pub max_frame_us: Micros,
}

impl Default for RelayServerSessionConfig {
    fn default() -> Self {
        RelayServerSessionConfig {
            relay: RelayServerConfig::default(),
            input_size: 2,
            max_players: 8,
            checksum_interval: 30,
            reconnect_timeout_us: 30_000_000,
            hello_timeout_us: 5_000_000,
            reliable_channel: CHANNEL_RELIABLE,
            seed: 0x7469_636b_7769_7265,
            token_seed: Secret([0; 32]),
            max_frame_us: crate::game::DEFAULT_MAX_FRAME_US,
        }
    }
}

/// Snapshots a relay server's engine holds: the tick being sent to a joining client,
/// and the next one being saved.
pub(crate) const SERVER_STATE_SLOTS: usize = 2;

impl RelayServerSessionConfig {
    /// Checks the settings without building a session (what [`RelayServerSession::new`](super::RelayServerSession::new)
    /// checks).
    pub fn validate(&self) -> Result<(), ServerSessionError> {
        let bad = ServerSessionError::InvalidConfig;
        let max_input = crate::game::MAX_INPUT_SIZE;
        if !(1..=max_input).contains(&self.input_size) || !(1..=64).contains(&self.max_players) {
            return Err(bad(format!(
                "input_size {} must be in 1..={max_input} and max_players {} in 1..=64",
                self.input_size, self.max_players
            )));
        }
        self.sync_config().validate().map_err(|e| bad(e.0))?;
        self.clock().validate().map_err(bad)
    }

    /// Snapshots the engine must hold for a server with these settings.
    pub fn state_slots(&self) -> usize {
        SERVER_STATE_SLOTS
    }

    /// The sync layer's settings as the session runs it.
    pub(super) fn sync_config(&self) -> RelayServerConfig {
        let mut relay_cfg = self.relay.clone();
        relay_cfg.input_size = Some(self.input_size);
        relay_cfg.jitter.max_input_size = relay_cfg.jitter.max_input_size.max(self.input_size);
        relay_cfg.auto_admit = false;
        relay_cfg
    }

    /// The server's master clock: steady, at the relay's tick length.
    pub(super) fn clock(&self) -> TickClockConfig {
        TickClockConfig { tick_us: self.relay.tick_us, max_frame_us: self.max_frame_us, ..TickClockConfig::default() }
    }
}

/// Misuse of a server session, or a bad config.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerSessionError {
    #[error("invalid relay server config: {0}")]
    /// The config failed validation; the message names the problem.
    InvalidConfig(String),
    #[error("tick {0} was not requested")]
    /// A save was confirmed for a tick the session did not ask to save.
    UnexpectedTick(Tick),
    #[error("player {0} is not a slot of this server")]
    /// The player id is not below the session's player count.
    NoSuchPlayer(u32),
    #[error("player {0}'s slot is free: nobody to kick")]
    /// Nobody holds that player's slot.
    SlotFree(u32),
}
