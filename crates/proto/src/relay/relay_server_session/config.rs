//! A server session's settings and how they are checked, and its misuse errors.

use crate::clock::Micros;
use crate::engine::Tick;
use crate::game::CheckedConfig;
use crate::game::{ConfigProblems, GameShape, MAX_RELAY_PLAYERS};
use crate::relay::relay_server::RelayServerConfig;
use crate::tick::TickClockConfig;
use crate::transport::{CHANNEL_RELIABLE, Secret};

/// Settings of a [`RelayServerSession`](super::RelayServerSession).
#[derive(Debug, Clone, PartialEq)]
pub struct RelayServerSessionConfig {
    /// The match: player slots (1..=[`MAX_RELAY_PLAYERS`]), bytes per input
    /// (1..=[`MAX_INPUT_SIZE`](crate::MAX_INPUT_SIZE)), the tick rate of the master
    /// clock and its catch-up cap: after a longer hitch of the server the excess is
    /// dropped, not simulated. Default: 8 players of 2 bytes at 60 Hz, 250 ms.
    pub game: GameShape,
    /// The sync layer's own settings (send interval, jitter buffers, step window and
    /// history, bandwidth cap, redundancy). The session sets the rest from `game`: its
    /// `tick_us` and `input_size` are not read, `auto_admit` is off (players come in by
    /// their Hello), and `jitter.max_input_size` is raised to `game.input_size`.
    pub relay: RelayServerConfig,
    /// Who runs the game: the engine beside the server (the default), or nobody
    /// ([`ServerMode::RelayOnly`]).
    pub mode: ServerMode,
    /// Send the engine's checksum every this many ticks (0: no desync detection). A
    /// relay-only server's clients report theirs at these ticks (at least 1 there).
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
}

impl Default for RelayServerSessionConfig {
    fn default() -> Self {
        RelayServerSessionConfig {
            game: GameShape::new(8, 2),
            relay: RelayServerConfig::default(),
            mode: ServerMode::Authoritative,
            checksum_interval: 30,
            reconnect_timeout_us: 30_000_000,
            hello_timeout_us: 5_000_000,
            reliable_channel: CHANNEL_RELIABLE,
            seed: 0x7469_636b_7769_7265,
            token_seed: Secret([0; 32]),
        }
    }
}

/// Who runs a relay server's game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerMode {
    /// The engine beside the server runs it: it answers the session's requests, its
    /// checksums go to the clients and its state dumps are the joiners' snapshots.
    #[default]
    Authoritative,
    /// Nobody on the server: it relays the canonical steps and asks nothing of an
    /// engine. Joiners' snapshots come from clients in sync and checksums from the
    /// players' majority (the messages are `wire::relay`'s `StateAsk`, `StateReport` and
    /// `encode_checks`); a new match starts from the game's
    /// initial state (an empty snapshot).
    RelayOnly,
}

/// Snapshots a relay server's engine holds: the tick being sent to a joining client,
/// and the next one being saved.
pub(crate) const SERVER_STATE_SLOTS: usize = 2;

impl RelayServerSessionConfig {
    /// The defaults for `game`.
    pub fn new(game: GameShape) -> Self {
        RelayServerSessionConfig { game, ..RelayServerSessionConfig::default() }
    }

    /// Snapshots the engine must hold for a server with these settings.
    pub fn state_slots(&self) -> usize {
        SERVER_STATE_SLOTS
    }

    /// The sync layer's settings as the session runs it: the only place the shape
    /// reaches it.
    pub(super) fn sync_config(&self) -> RelayServerConfig {
        let mut relay_cfg = self.relay.clone();
        relay_cfg.tick_us = self.game.tick_us();
        relay_cfg.input_size = Some(self.game.input_size);
        relay_cfg.jitter.max_input_size = relay_cfg.jitter.max_input_size.max(self.game.input_size);
        relay_cfg.auto_admit = false;
        relay_cfg
    }

    /// The server's master clock: steady, at the game's tick rate.
    pub(super) fn clock(&self) -> TickClockConfig {
        self.game.clock()
    }
}

impl CheckedConfig for RelayServerSessionConfig {
    /// Pushes every problem of these settings into `problems`, each under its field's
    /// name: the shape's under `players`, `input_size`, `tick_rate_hz` and
    /// `max_frame_us`, the sync layer's under `relay.` (`relay.send_interval`, ...).
    fn check(&self, problems: &mut ConfigProblems) {
        self.game.check(MAX_RELAY_PLAYERS, problems);
        self.game.check_clock(problems);
        // The sync layer's shape fields are the session's to set (`sync_config`); the
        // input size it is raised to is checked with the shape.
        self.relay.check_knobs("relay.", problems);
        if self.mode == ServerMode::RelayOnly && self.checksum_interval == 0 {
            problems.push("checksum_interval", "a relay-only server needs its clients' checksums: at least 1");
        }
    }
}

/// Misuse of a server session, or a bad config.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerSessionError {
    #[error("invalid relay server config: {0}")]
    /// The config is unusable: every bad field, by name.
    Config(ConfigProblems),
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
