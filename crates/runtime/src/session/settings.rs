//! What each kind of session is built from: the [`GameShape`] every mode shares, and
//! the settings of one mode beside it.
//!
//! `validate()` checks a value without building anything (no socket, no thread, no
//! throwaway core) and returns every problem at once, each under its field's name.
//! The checks are the protocol crate's (each core config's `check`, the shape's
//! [`GameShape::check`]): a setting is judged in one place. The constructors call it
//! first.

use tickwire_proto::CheckedConfig;
use tickwire_proto::{
    ConfigProblems, GameShape, MAX_INPUT_DELAY, Micros, P2pConfig, PredictionMode, RelayClientSessionConfig,
    RelayServerSessionConfig, ReplaySession, SpectatorConfig, SyncTestSession, max_unreliable_for,
};

use crate::host_config::HostConfig;

/// The most ticks a P2P session may predict past its confirmed inputs (the protocol
/// crate's).
pub use tickwire_proto::MAX_PREDICTION;

/// Settings of a [`P2pSession`](super::P2pSession).
#[derive(Debug, Clone)]
pub struct P2pSettings {
    /// Players, input size, tick rate.
    pub game: GameShape,
    /// The socket and transport. An `endpoint.max_incoming` of 0 becomes
    /// `players - 1 + max_spectators`.
    pub host: HostConfig,
    /// Most ticks simulated past the confirmed inputs, 0..=[`MAX_PREDICTION`] (0 =
    /// lockstep). Default 8.
    pub max_prediction: u32,
    /// Local inputs apply this many ticks after they are given, 0..=32 (changeable at
    /// run time).
    pub input_delay: u32,
    /// Save only confirmed ticks (and desync-check ticks): fewer saves, longer
    /// re-simulations.
    pub sparse_saving: bool,
    /// Compare checksums with the peers every this many ticks (0 = off). Default 10.
    pub desync_interval: u32,
    /// Silence from a peer before it is reported interrupted. Default 750 ms; 0 = no
    /// notice.
    pub notify_after_us: Micros,
    /// Silence before a peer is dropped; above `notify_after_us`. Default 5 s; 0 =
    /// never (the transport then never times the connection out either).
    pub disconnect_timeout_us: Micros,
    /// A peer that keeps talking while its inputs hold the confirmed tick still this
    /// long, or under half the tick rate for twice this long, is dropped
    /// (NO_PROGRESS): the longest hitch an engine may take without announcing it
    /// ([`P2pSession::set_loading`](super::P2pSession::set_loading)). Default 1.5 s;
    /// 0 = the disconnect timeout; never longer than it.
    pub progress_timeout_us: Micros,
    /// The time each peer's announced stalls may hold the match without counting as
    /// no progress, in total over the match. Default 10 s; 0 = none.
    pub loading_grace_us: Micros,
    /// How missing remote inputs are guessed.
    pub prediction: PredictionMode,
    /// Spectators this peer may serve (only addresses registered with
    /// `add_spectator` are accepted). Default 4.
    pub max_spectators: u32,
}

impl P2pSettings {
    /// The defaults for `game`, bound to `host.bind`.
    pub fn new(game: GameShape, host: HostConfig) -> Self {
        let d = P2pConfig::default();
        P2pSettings {
            game,
            host,
            max_prediction: d.max_prediction,
            input_delay: d.input_delay,
            sparse_saving: d.sparse_saving,
            desync_interval: d.desync_interval,
            notify_after_us: d.notify_after_us,
            disconnect_timeout_us: d.disconnect_timeout_us,
            progress_timeout_us: d.progress_timeout_us,
            loading_grace_us: d.loading_grace_us,
            prediction: d.prediction,
            max_spectators: 4,
        }
    }

    /// Every problem with these settings, by field name.
    pub fn validate(&self) -> Result<(), ConfigProblems> {
        self.core_config().validate()
    }

    /// The rollback core's settings. The input history is sized from the prediction
    /// window, so that no `max_prediction` the settings accept can be refused by it.
    pub(super) fn core_config(&self) -> P2pConfig {
        let d = P2pConfig::default();
        let need = 2 * (self.max_prediction as usize + MAX_INPUT_DELAY as usize + 64);
        P2pConfig {
            game: self.game,
            max_prediction: self.max_prediction,
            input_delay: self.input_delay,
            history: d.history.max(need),
            sparse_saving: self.sparse_saving,
            desync_interval: self.desync_interval,
            notify_after_us: self.notify_after_us,
            disconnect_timeout_us: self.disconnect_timeout_us,
            progress_timeout_us: self.progress_timeout_us,
            loading_grace_us: self.loading_grace_us,
            prediction: self.prediction,
            // The host's endpoint may send smaller datagrams than 1,200 bytes: a tick of
            // every input must fit its own, and messages are sized to it.
            max_unreliable: max_unreliable_for(self.host.endpoint.max_datagram_size),
            ..d
        }
    }
}

/// Settings of a [`SyncTest`](super::SyncTest).
#[derive(Debug, Clone)]
pub struct SyncTestSettings {
    /// Players, input size, tick rate.
    pub game: GameShape,
    /// Ticks rolled back every tick, 1..=32 (default 2, as GGRS).
    pub check_distance: u32,
}

impl SyncTestSettings {
    /// The defaults for `game`.
    pub fn new(game: GameShape) -> Self {
        SyncTestSettings { game, check_distance: 2 }
    }

    /// Every problem with these settings, by field name.
    pub fn validate(&self) -> Result<(), ConfigProblems> {
        let mut p = ConfigProblems::new();
        SyncTestSession::check(&self.game, self.check_distance, &mut p);
        p.into_result()
    }
}

/// Settings of a [`Spectator`](super::Spectator).
#[derive(Debug, Clone)]
pub struct SpectatorSettings {
    /// Players, input size, tick rate (those of the watched match).
    pub game: GameShape,
    /// The socket and transport.
    pub host: HostConfig,
    /// More than this many received ticks not yet played starts catching up. Default 10.
    pub max_behind: u32,
    /// Ticks played per advance while catching up, 1..=16. Default 2.
    pub catchup_speed: u32,
}

impl SpectatorSettings {
    /// The defaults for `game`, bound to `host.bind`.
    pub fn new(game: GameShape, host: HostConfig) -> Self {
        SpectatorSettings { game, host, max_behind: 10, catchup_speed: 2 }
    }

    /// Every problem with these settings, by field name.
    pub fn validate(&self) -> Result<(), ConfigProblems> {
        self.core_config().validate()
    }

    pub(super) fn core_config(&self) -> SpectatorConfig {
        let rollback = P2pConfig::default();
        SpectatorConfig {
            game: self.game,
            history: rollback.history,
            max_behind: self.max_behind,
            catchup_speed: self.catchup_speed,
            channel: rollback.channel,
        }
    }
}

/// Settings of a [`ReplayPlayer`](super::ReplayPlayer). The replay must have been
/// recorded with the same players and input size.
#[derive(Debug, Clone)]
pub struct ReplaySettings {
    /// Players, input size, and the rate at which ticks come due.
    pub game: GameShape,
}

impl ReplaySettings {
    /// Every problem with these settings, by field name.
    pub fn validate(&self) -> Result<(), ConfigProblems> {
        let mut p = ConfigProblems::new();
        ReplaySession::check(&self.game, &mut p);
        p.into_result()
    }
}

/// Settings of a [`RelayServer`](super::RelayServer).
#[derive(Debug, Clone)]
pub struct RelayServerSettings {
    /// Player slots, input size, tick rate.
    pub game: GameShape,
    /// The socket and transport. An `endpoint.max_incoming` of 0 becomes
    /// `2 * players` (room for clients coming back before their old connection timed
    /// out).
    pub host: HostConfig,
    /// The relay server's own settings (send interval, jitter buffers, history, slot
    /// and hello timeouts, checksums). Its `game` is not read: the session takes the
    /// settings' `game`. Its token `seed` is not read either: tokens are always seeded
    /// from the OS.
    pub server: RelayServerSessionConfig,
}

impl RelayServerSettings {
    /// The defaults for `game`, bound to `host.bind`.
    pub fn new(game: GameShape, host: HostConfig) -> Self {
        RelayServerSettings { game, host, server: RelayServerSessionConfig::new(game) }
    }

    /// Every problem with these settings, by field name (the server core's under
    /// its names: `relay.send_interval`, ...).
    pub fn validate(&self) -> Result<(), ConfigProblems> {
        self.core_config(0).validate()
    }

    /// The server core's settings, with the game's shape and the token seed.
    pub(super) fn core_config(&self, seed: u64) -> RelayServerSessionConfig {
        RelayServerSessionConfig { game: self.game, seed, ..self.server.clone() }
    }
}

/// Settings of a [`RelayClient`](super::RelayClient).
#[derive(Debug, Clone)]
pub struct RelayClientSettings {
    /// Player slots, input size, tick rate (the server's).
    pub game: GameShape,
    /// The socket and transport.
    pub host: HostConfig,
    /// The relay client's own settings (prediction window, input delay, catch-up,
    /// reconnect window, time sync). Its `game` is not read: the session takes the
    /// settings' `game`.
    pub client: RelayClientSessionConfig,
}

impl RelayClientSettings {
    /// The defaults for `game`, bound to `host.bind`.
    pub fn new(game: GameShape, host: HostConfig) -> Self {
        RelayClientSettings { game, host, client: RelayClientSessionConfig::new(game) }
    }

    /// Every problem with these settings, by field name (the client core's under its
    /// names: `max_prediction`, `sync.send_interval`, ...).
    pub fn validate(&self) -> Result<(), ConfigProblems> {
        self.core_config().validate()
    }

    /// The client core's settings, with the game's shape.
    pub(super) fn core_config(&self) -> RelayClientSessionConfig {
        RelayClientSessionConfig { game: self.game, ..self.client.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickwire_proto::RelayClientSession;

    fn host() -> HostConfig {
        HostConfig::new("127.0.0.1:0".parse().unwrap())
    }

    #[test]
    fn p2p_settings_report_every_bad_field() {
        let mut s = P2pSettings::new(GameShape::new(0, 2), host());
        s.max_prediction = 65;
        s.input_delay = 33;
        s.notify_after_us = s.disconnect_timeout_us;
        let e = s.validate().unwrap_err();
        let fields: Vec<_> = e.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["players", "max_prediction", "input_delay", "notify_after_us"]);
    }

    #[test]
    fn a_p2p_game_is_checked_against_the_hosts_datagram_limit() {
        // The most bytes 8 players' inputs may have at the default 1,200-byte datagrams
        // is too many for the host's 1,170-byte ones: the settings say so by name.
        let most = (1..=255).take_while(|&n| tickwire_proto::p2p_inputs_fit(8, n)).last().unwrap();
        let mut s = P2pSettings::new(GameShape::new(8, most), host());
        s.validate().unwrap();
        s.host.endpoint.max_datagram_size = 1_170;
        assert_eq!(s.core_config().max_unreliable, max_unreliable_for(1_170));
        let e = s.validate().unwrap_err();
        let fields: Vec<_> = e.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["input_size"], "{e}");
    }

    #[test]
    fn every_accepted_max_prediction_builds_a_p2p_core() {
        // The core's history must fit the window; the settings size it, so no value the
        // settings accept can fail later (C callers cannot set the history at all).
        for max_prediction in 0..=MAX_PREDICTION {
            let mut s = P2pSettings::new(GameShape::new(2, 4), host());
            s.max_prediction = max_prediction;
            s.validate().unwrap();
            s.core_config().validate().unwrap_or_else(|e| panic!("max_prediction {max_prediction}: {e}"));
        }
    }

    #[test]
    fn relay_settings_take_the_shape_from_the_game() {
        let mut s = RelayClientSettings::new(GameShape::new(5, 9), host());
        s.client.game = GameShape::new(1, 1);
        let c = s.core_config();
        assert_eq!(c.game, GameShape::new(5, 9));
        // The slots the engine sizes its snapshot array by match the built core's.
        assert_eq!(c.state_slots(), RelayClientSession::new(c.clone()).unwrap().state_slots());
        let mut bad = RelayServerSettings::new(GameShape::new(65, 2), host());
        bad.server.game = GameShape::new(4, 2);
        assert_eq!(bad.validate().unwrap_err().to_string(), "players: 65 is not in 1..=64");
        // The server core's own fields are reported beside the shape's, by their names.
        bad.server.relay.send_interval = 0;
        assert_eq!(
            bad.validate().unwrap_err().to_string(),
            "players: 65 is not in 1..=64; relay.send_interval: 0 is below 1 tick"
        );
        bad.game.players = 4;
        assert_eq!(bad.validate().unwrap_err().to_string(), "relay.send_interval: 0 is below 1 tick");
    }
}
