//! Settings and statistics of a [`P2pSession`](super::P2pSession).

use super::*;
use crate::game::CheckedConfig;
use crate::game::{ConfigProblems, GameShape, MAX_INPUT_SIZE, MAX_ROLLBACK_PLAYERS};
use crate::transport::{MAX_UNRELIABLE, max_unreliable_for};
use crate::wire::{MAX_DATAGRAM_SIZE, MIN_DATAGRAM_SIZE};

/// Settings of a [`P2pSession`].
#[derive(Debug, Clone, PartialEq)]
pub struct P2pConfig {
    /// The match: players (as many as the player list [`P2pSession::new`] is given,
    /// 1..=[`MAX_ROLLBACK_PLAYERS`], and few enough that a tick of every input fits one
    /// datagram, [`p2p_inputs_fit_in`] `max_unreliable`), bytes per input (the same for every player), the
    /// tick rate and the catch-up cap of the session's tick clock (whose dilation
    /// bounds are the defaults, [`GameShape::clock`]). Default: 2 players of 2 bytes at
    /// 60 Hz.
    pub game: GameShape,
    /// Most ticks simulated past the confirmed inputs, 0..=[`MAX_PREDICTION`] (default
    /// 8). 0 = lockstep.
    pub max_prediction: u32,
    /// Local inputs apply this many ticks after they are given, 0..=[`MAX_INPUT_DELAY`]
    /// (changeable at run time).
    pub input_delay: u32,
    /// Ticks of input history kept per player (default 256): at least twice
    /// `max_prediction + MAX_INPUT_DELAY + 64`, at most 65536.
    pub history: usize,
    /// Save only confirmed ticks (and desync-check ticks) instead of every tick: fewer
    /// saves, longer resimulations.
    pub sparse_saving: bool,
    /// Compare checksums every this many ticks (0 = off). Default 10.
    pub desync_interval: u32,
    /// How many consecutive messages carry each local input (default 8). After that
    /// an input still unacked goes again only every 50 ms until the peer acks it. With
    /// a round trip under ~8 ticks every input is acked before that, so this changes
    /// nothing; on slower links it stops each input from going once per tick of round
    /// trip. 0 repeats every unacked input in every message (GGPO's and GGRS's way).
    pub input_redundancy: u8,
    /// Snapshots of check ticks kept for forensics (extra state slots). Default 8.
    pub check_slots: usize,
    /// Silence before [`Event::PeerInterrupted`]. Default 750 ms; 0 = no notice.
    pub notify_after_us: Micros,
    /// Silence before a peer is dropped. Default 5 s; 0 = never (as GGPO's
    /// `ggpo_set_disconnect_timeout(0)`; the progress watch is off too).
    pub disconnect_timeout_us: Micros,
    /// The progress watch's time `P` (see `progress.rs`): a peer that keeps talking
    /// while its inputs hold the confirmed tick still for `P`, or below half the tick
    /// rate for `2P`, is dropped (NO_PROGRESS). It is the longest hitch an engine may
    /// take without announcing it ([`P2pSession::set_loading`]), and the most a liar
    /// can stall the match for. Default 1.5 s: at 60 Hz a match with a staller keeps
    /// over 58 ticks a second over a minute, the floor honest peers keep against a liar.
    /// 0 = the disconnect timeout; never longer than it.
    pub progress_timeout_us: Micros,
    /// The time each peer's announced stalls ([`P2pSession::set_loading`]) may hold
    /// the match without counting as no progress, in total over the match. Default
    /// 10 s; 0 = none.
    pub loading_grace_us: Micros,
    /// How missing remote inputs are guessed.
    pub prediction: PredictionMode,
    /// Transport channel for input messages (unreliable).
    pub channel: u8,
    /// Transport channel for spectator snapshots (reliable).
    pub reliable_channel: u8,
    /// How frame advantage turns into dilation.
    pub time_sync: TimeSyncConfig,
    /// The largest unreliable message the transport takes, in bytes
    /// ([`Transport::max_unreliable`](crate::Transport::max_unreliable): for an
    /// endpoint, [`max_unreliable_for`](crate::max_unreliable_for) its
    /// `max_datagram_size`). A tick of every player's input must fit it
    /// ([`p2p_inputs_fit_in`]); a message carries as many ticks as fit it, or what the
    /// transport says at the time of sending if that is less. At least what an
    /// endpoint of [`MIN_DATAGRAM_SIZE`](crate::wire::MIN_DATAGRAM_SIZE) takes, at most
    /// (and by default) [`MAX_UNRELIABLE`](crate::MAX_UNRELIABLE). The runtime sets
    /// it from its host's endpoint config.
    pub max_unreliable: usize,
}

impl Default for P2pConfig {
    fn default() -> Self {
        P2pConfig {
            game: GameShape::new(2, 2),
            max_prediction: 8,
            input_delay: 0,
            history: 256,
            sparse_saving: false,
            desync_interval: 10,
            input_redundancy: 8,
            check_slots: 8,
            notify_after_us: 750_000,
            disconnect_timeout_us: 5_000_000,
            progress_timeout_us: 1_500_000,
            loading_grace_us: 10_000_000,
            prediction: PredictionMode::RepeatLast,
            channel: CHANNEL_UNRELIABLE,
            reliable_channel: CHANNEL_RELIABLE,
            time_sync: TimeSyncConfig::default(),
            max_unreliable: crate::transport::MAX_UNRELIABLE,
        }
    }
}

/// The silence notice must come before the drop, unless either is off (0).
pub fn p2p_timeouts_fit(notify_after_us: Micros, disconnect_timeout_us: Micros) -> bool {
    notify_after_us == 0 || disconnect_timeout_us == 0 || notify_after_us < disconnect_timeout_us
}

impl P2pConfig {
    /// The defaults for `game`.
    pub fn new(game: GameShape) -> Self {
        P2pConfig { game, ..P2pConfig::default() }
    }

    /// The number of snapshots a session with these settings asks the engine to hold
    /// (its `state_slots()`), known before the session exists: engines size their
    /// snapshot array at setup, while a networked session is built only once its
    /// peers have connected.
    pub fn state_slots(&self) -> usize {
        let check = if self.desync_interval > 0 { self.check_slots } else { 0 };
        self.max_prediction as usize + 2 + check
    }
}

impl CheckedConfig for P2pConfig {
    /// Pushes every problem of these settings into `problems`, each under its field's
    /// name (the shape's under `players`, `input_size`, `tick_rate_hz` and
    /// `max_frame_us`).
    fn check(&self, problems: &mut ConfigProblems) {
        let p = problems;
        let g = &self.game;
        g.check(MAX_ROLLBACK_PLAYERS, p);
        g.check_clock(p);
        let prediction_ok = self.max_prediction <= MAX_PREDICTION;
        if !prediction_ok {
            p.push("max_prediction", format!("{} is above {MAX_PREDICTION}", self.max_prediction));
        }
        if self.input_delay > MAX_INPUT_DELAY {
            p.push("input_delay", format!("{} is above {MAX_INPUT_DELAY}", self.input_delay));
        }
        // The history's floor follows the prediction window: it is not judged against
        // a window that is itself refused.
        let need = 2 * (self.max_prediction as usize + MAX_INPUT_DELAY as usize + 64);
        if prediction_ok && !(need..=1 << 16).contains(&self.history) {
            p.push("history", format!("{} is not in {need}..=65536 for this max_prediction", self.history));
        }
        let limits = max_unreliable_for(MIN_DATAGRAM_SIZE)..=MAX_UNRELIABLE;
        let limit_ok = limits.contains(&self.max_unreliable);
        if !limit_ok {
            p.push(
                "max_unreliable",
                format!(
                    "{} is not in {}..={} (what endpoints of max_datagram_size {MIN_DATAGRAM_SIZE}..={MAX_DATAGRAM_SIZE} take)",
                    self.max_unreliable,
                    limits.start(),
                    limits.end()
                ),
            );
        }
        let shape_ok = (1..=MAX_ROLLBACK_PLAYERS).contains(&g.players) && (1..=MAX_INPUT_SIZE).contains(&g.input_size);
        let fits = |n| p2p_inputs_fit_in(g.players, n, self.max_unreliable);
        if shape_ok && limit_ok && !fits(g.input_size) {
            let most = (1..=MAX_INPUT_SIZE).take_while(|&n| fits(n)).last().unwrap_or(0);
            p.push(
                "input_size",
                format!(
                    "{} bytes for each of {} players do not fit one datagram of the transport (max_unreliable {}: \
                     a P2P tick of every input goes in one): at most {most} bytes with this many players",
                    g.input_size, g.players, self.max_unreliable
                ),
            );
        }
        if !p2p_timeouts_fit(self.notify_after_us, self.disconnect_timeout_us) {
            p.push(
                "notify_after_us",
                format!(
                    "{} us must be below disconnect_timeout_us ({} us), unless either is 0 (off)",
                    self.notify_after_us, self.disconnect_timeout_us
                ),
            );
        }
    }
}

/// Misuse of a session, or a bad config.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// The config is unusable: every bad field, by name.
    #[error("invalid rollback config: {0}")]
    Config(ConfigProblems),
    /// The player list given to [`P2pSession::new`] is not as long as the config's
    /// `game.players`.
    #[error("the player list names {listed} players; game.players is {game}")]
    PlayerCount {
        /// The config's `game.players`.
        game: usize,
        /// The length of the player list.
        listed: usize,
    },
    /// A remote player of the list given to [`P2pSession::new`] is behind peer id 0,
    /// which no connection has.
    #[error("player {0}: peer id 0 is invalid")]
    PeerIdZero(usize),
    /// An input delay above [`MAX_INPUT_DELAY`].
    #[error("input_delay {0} above {MAX_INPUT_DELAY}")]
    InputDelay(u32),
    /// Silence timeouts whose notice does not come before the drop
    /// ([`P2pSession::set_timeouts`]).
    #[error(
        "notify_after_us {notify_after_us} must be below disconnect_timeout_us {disconnect_timeout_us} \
         (unless either is 0: off)"
    )]
    Timeouts {
        /// The notice's silence.
        notify_after_us: Micros,
        /// The drop's silence.
        disconnect_timeout_us: Micros,
    },
    /// A state handed over for a synctest mismatch larger than a synctest keeps.
    #[error("a state of {len} bytes; a synctest keeps at most {max}")]
    StateTooLarge {
        /// The state's length.
        len: usize,
        /// The most a synctest keeps.
        max: usize,
    },
    /// A replay whose players or input size are not the session's.
    #[error(
        "the replay has {replay_players} players with {replay_input_size}-byte inputs; the session is configured \
         for {players} with {input_size}"
    )]
    ReplayShape {
        /// Players in the replay.
        replay_players: usize,
        /// Bytes per input in the replay.
        replay_input_size: usize,
        /// The session's `game.players`.
        players: usize,
        /// The session's `game.input_size`.
        input_size: usize,
    },
    /// No such player.
    #[error("player {0} does not exist")]
    UnknownPlayer(usize),
    /// The player is not local to this peer.
    #[error("player {0} is not a local player")]
    NotLocal(usize),
    /// An input of the wrong length.
    #[error("input of {got} bytes, expected {expected}")]
    WrongInputSize {
        /// The configured size.
        expected: usize,
        /// What was passed.
        got: usize,
    },
    /// `confirm_save` or `provide_state` for a tick the session did not ask about.
    #[error("tick {0} was not requested")]
    UnexpectedTick(Tick),
    /// `disconnect_player` of a player on this machine.
    #[error("player {0} plays on this machine: only a remote player can be disconnected")]
    IsLocal(usize),
    /// `disconnect_player` of a player whose peer is already gone.
    #[error("player {0} is already disconnected")]
    AlreadyDisconnected(usize),
}

/// Counters and gauges of a session.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct P2pStats {
    /// Next tick to simulate.
    pub current_tick: Tick,
    /// Every input before this tick is confirmed.
    pub confirmed_tick: Tick,
    /// Mean over connected peers of how far this peer is ahead, in ticks (ungated).
    pub frames_ahead: f32,
    /// The clock's current time scale.
    pub time_scale: f64,
    /// Rollbacks done.
    pub rollbacks: u64,
    /// Ticks resimulated in total.
    pub resimulated: u64,
    /// Longest rollback, in ticks.
    pub max_rollback: u32,
    /// Ticks skipped because the prediction window was full.
    pub window_full: u64,
    /// Messages that carried inputs again after their `input_redundancy` copies,
    /// the peer not having acked them within 50 ms (see [`P2pConfig::input_redundancy`]).
    pub input_refreshes: u64,
    /// Messages refused by strict decoding or from unknown peers.
    pub malformed: u64,
    /// Messages whose numbers contradicted what this side knows (an ack of inputs
    /// never sent, a confirmed tick past the sender's own); each closed its sender.
    pub violations: u64,
    /// Messages the endpoint refused to queue.
    pub send_errors: u64,
    /// Checksums of confirmed ticks compared with a peer.
    pub checks_compared: u64,
    /// Desyncs detected.
    pub desyncs: u64,
    /// Times this side had received other inputs of a player than the majority of the
    /// peers, and took theirs (see [`RollbackEvent::InputsDisagree`](crate::RollbackEvent)).
    pub repairs: u64,
}

/// What a session knows of its sync with one remote peer: the figures of a net overlay,
/// GGPO's `ggpo_get_network_stats` less the transport's (RTT, loss and rates come from
/// the connection). Signs: positive means this side is ahead.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PeerSyncStats {
    /// How many ticks this side is ahead of the peer, as measured here on the latest
    /// tick: our tick count less the peer's last reported tick moved on by the time
    /// since and half the RTT. GGPO's `timesync.local_frames_behind` with the sign
    /// turned (GGPO adds the whole RTT).
    pub local_frame_advantage: f32,
    /// How many ticks the peer is ahead of this side, as the peer measured it (from its
    /// latest message). GGPO's `timesync.remote_frames_behind` with the sign turned.
    pub remote_frame_advantage: f32,
    /// The averaged estimate the clock works from: `(local - remote) / 2` over the
    /// last 32 ticks, in which an error in the latency estimate cancels.
    pub frames_ahead: f32,
    /// Ticks of this side's local inputs the peer has not acknowledged yet (GGPO's
    /// `network.send_queue_len`). They are sent again until it does.
    pub send_queue: u32,
    /// Ticks of the peer's inputs received for ticks this side has not run yet: the
    /// margin before its inputs would have to be predicted (GGPO documents
    /// `network.recv_queue_len` but never fills it).
    pub recv_queue: u32,
    /// Ticks run on a prediction of the peer's inputs: from its first input not
    /// received to the current tick. A rollback of up to this many ticks is pending.
    pub predicted_ticks: u32,
    /// Time since the peer was last heard from, in microseconds.
    pub silent_us: Micros,
}
