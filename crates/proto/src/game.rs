//! The game's shape, and how configurations report what is wrong with them.
//!
//! Every session of a match, whatever its topology, agrees on three things: how many
//! players there are, how many bytes one player's input takes, and how long a tick is
//! (with the tick clock's catch-up cap). They are said once, in a [`GameShape`]: every
//! session config holds one (`game`; a synctest and a replay take one as they are
//! built), and the pieces inside a session that need a tick length or an input size
//! (the relay's sync layer, tick clocks, interpolation, prediction) are given them by
//! the session, from the shape. The player limits are [`MAX_ROLLBACK_PLAYERS`] and
//! [`MAX_RELAY_PLAYERS`].
//!
//! A configuration is checked without building anything: `check` methods push one
//! [`ConfigProblem`] per bad field into [`ConfigProblems`], so a caller sees every
//! mistake at once, each under the name of the field it set (the shape's under
//! `players`, `input_size`, `tick_rate_hz` and `max_frame_us`). A session's
//! constructor runs the same check and returns the same problems.

use std::fmt;

use crate::tick::TickClockConfig;

/// The largest input one player sends per tick, in bytes: the wire formats count input
/// bytes in one byte. A relay step larger than a datagram goes in pieces; in P2P the
/// inputs of one peer's local players for one tick must fit one datagram together
/// (`p2p_inputs_fit`: 4 players of 255 bytes do, 16 of 49).
pub const MAX_INPUT_SIZE: usize = 255;

/// The most players of a rollback session (P2P, synctest, spectator, replay): the
/// rollback wire formats count players in one byte. A P2P tick of every player's input
/// must also fit one datagram ([`p2p_inputs_fit`](crate::p2p_inputs_fit)), which bounds
/// a P2P match lower (no more than 47 players).
pub const MAX_ROLLBACK_PLAYERS: usize = 255;

/// The most players (slots) of a relay session: the relay wire formats and the
/// server's slot table hold at most this many.
pub const MAX_RELAY_PLAYERS: usize = 64;

/// Fastest tick rate a session accepts, in Hz.
pub const MAX_TICK_RATE_HZ: f64 = 10_000.0;

/// The default catch-up cap ([`GameShape::max_frame_us`]): 250 ms.
pub const DEFAULT_MAX_FRAME_US: u64 = 250_000;

/// The largest catch-up cap a session accepts: 10 s.
pub const MAX_MAX_FRAME_US: u64 = 10_000_000;

/// Settings that check themselves without building anything: every session config of
/// this crate. One check serves both uses: [`check`](CheckedConfig::check) adds this
/// config's problems to a list (so an owner can report its own fields beside them),
/// [`validate`](CheckedConfig::validate) answers for this config alone.
pub trait CheckedConfig {
    /// Pushes every problem of these settings into `problems`, each under its field's
    /// name.
    fn check(&self, problems: &mut ConfigProblems);

    /// Every problem at once, or `Ok`.
    fn validate(&self) -> Result<(), ConfigProblems> {
        let mut problems = ConfigProblems::new();
        self.check(&mut problems);
        problems.into_result()
    }
}

/// What every session of one match agrees on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GameShape {
    /// Players in the match: 1..=[`MAX_ROLLBACK_PLAYERS`] in a rollback session,
    /// 1..=[`MAX_RELAY_PLAYERS`] (slots) in a relay session.
    pub players: usize,
    /// Bytes per player per tick (1..=[`MAX_INPUT_SIZE`]).
    pub input_size: usize,
    /// Simulation ticks per second.
    pub tick_rate_hz: f64,
    /// The catch-up cap: the longest stretch of time between two frames that the tick
    /// clock turns into ticks ([`TickClockConfig::max_frame_us`]). After a longer
    /// hitch the excess is dropped, not simulated, so one `ticks_due` hands out at most
    /// about this long's worth of ticks (plus the time sync's speed-up). Default
    /// [`DEFAULT_MAX_FRAME_US`], at most [`MAX_MAX_FRAME_US`], and at least one tick.
    pub max_frame_us: u64,
}

impl GameShape {
    /// A match of `players` players sending `input_size` bytes each at 60 Hz.
    pub fn new(players: usize, input_size: usize) -> Self {
        GameShape { players, input_size, tick_rate_hz: 60.0, max_frame_us: DEFAULT_MAX_FRAME_US }
    }

    /// The length of one tick in microseconds.
    pub fn tick_us(&self) -> f64 {
        1e6 / self.tick_rate_hz
    }

    /// The tick clock of a session of this shape: the default dilation bounds at this
    /// shape's rate.
    pub fn clock(&self) -> TickClockConfig {
        TickClockConfig { tick_us: self.tick_us(), max_frame_us: self.max_frame_us, ..TickClockConfig::default() }
    }

    /// Checks the shape for a topology that holds at most `max_players` players
    /// ([`MAX_ROLLBACK_PLAYERS`] or [`MAX_RELAY_PLAYERS`]).
    pub fn check(&self, max_players: usize, problems: &mut ConfigProblems) {
        if self.players == 0 || self.players > max_players {
            problems.push("players", format!("{} is not in 1..={max_players}", self.players));
        }
        if self.input_size == 0 || self.input_size > MAX_INPUT_SIZE {
            problems.push("input_size", format!("{} is not in 1..={MAX_INPUT_SIZE}", self.input_size));
        }
        // NaN fails the comparison and lands here too.
        if !(self.tick_rate_hz > 0.0 && self.tick_rate_hz <= MAX_TICK_RATE_HZ) {
            problems.push("tick_rate_hz", format!("{} is not in (0, {MAX_TICK_RATE_HZ}]", self.tick_rate_hz));
        }
    }

    /// Checks the catch-up cap's range alone ([`GameShape::max_frame_us`], reported
    /// under `max_frame_us`), for the sessions whose clock is not dilated (a tick longer
    /// than the cap still comes, over several frames); false if it is out of range.
    pub fn check_catch_up(&self, problems: &mut ConfigProblems) -> bool {
        let ok = (1..=MAX_MAX_FRAME_US).contains(&self.max_frame_us);
        if !ok {
            problems.push("max_frame_us", format!("{} us is not in 1..={MAX_MAX_FRAME_US} us", self.max_frame_us));
        }
        ok
    }

    /// Checks the catch-up cap ([`GameShape::max_frame_us`], under `max_frame_us`) and
    /// that one tick fits in it: with the default 250 ms, the sessions that run a
    /// dilated tick clock (P2P and the relay) need at least 4 ticks a second. Reported
    /// under `tick_rate_hz` while the cap is the default, else under `max_frame_us`; a
    /// rate [`GameShape::check`] refuses is left to it.
    pub fn check_clock(&self, problems: &mut ConfigProblems) {
        if !self.check_catch_up(problems) {
            return;
        }
        if !(self.tick_rate_hz > 0.0 && self.tick_rate_hz <= MAX_TICK_RATE_HZ) {
            return;
        }
        let clock = self.clock();
        if (clock.max_frame_us as f64) < clock.tick_us && self.max_frame_us != DEFAULT_MAX_FRAME_US {
            problems.push(
                "max_frame_us",
                format!(
                    "{} us is shorter than one tick ({:.0} us at tick_rate_hz {})",
                    self.max_frame_us, clock.tick_us, self.tick_rate_hz
                ),
            );
        } else if clock.validate().is_err() && (clock.max_frame_us as f64) < clock.tick_us {
            let min_hz = 1e6 / clock.max_frame_us as f64;
            problems.push(
                "tick_rate_hz",
                format!(
                    "{} is below {min_hz}: a tick must fit in the tick clock's longest frame ({} ms)",
                    self.tick_rate_hz,
                    clock.max_frame_us / 1000
                ),
            );
        }
    }
}

/// One field of a configuration that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The field as the caller named it (for example `max_prediction`).
    pub field: String,
    /// What is wrong with its value.
    pub message: String,
}

/// Every problem found in one configuration; empty when it is usable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigProblems(Vec<ConfigProblem>);

impl ConfigProblems {
    /// No problems yet.
    pub fn new() -> Self {
        ConfigProblems(Vec::new())
    }

    /// Records that `field` is unusable for the reason `message`.
    pub fn push(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(ConfigProblem { field: field.into(), message: message.into() });
    }

    /// Records a problem found by an older check that returns one message, under
    /// `field` (the part of the configuration it looked at).
    pub fn push_result(&mut self, field: &str, result: Result<(), String>) {
        if let Err(m) = result {
            self.push(field, m);
        }
    }

    /// True when nothing is wrong.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The problems, in the order they were found.
    pub fn iter(&self) -> impl Iterator<Item = &ConfigProblem> {
        self.0.iter()
    }

    /// Ok when nothing is wrong, else every problem.
    pub fn into_result(self) -> Result<(), ConfigProblems> {
        if self.is_empty() { Ok(()) } else { Err(self) }
    }
}

impl fmt::Display for ConfigProblems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{}: {}", p.field, p.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigProblems {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_reports_every_bad_field_by_name() {
        let mut p = ConfigProblems::new();
        GameShape { players: 0, input_size: 256, tick_rate_hz: f64::NAN, max_frame_us: DEFAULT_MAX_FRAME_US }
            .check(MAX_ROLLBACK_PLAYERS, &mut p);
        let fields: Vec<_> = p.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["players", "input_size", "tick_rate_hz"]);
        assert_eq!(
            p.to_string(),
            "players: 0 is not in 1..=255; input_size: 256 is not in 1..=255; tick_rate_hz: NaN is not in (0, 10000]"
        );
    }

    #[test]
    fn a_good_shape_has_no_problems() {
        let mut p = ConfigProblems::new();
        GameShape::new(4, 8).check(MAX_RELAY_PLAYERS, &mut p);
        assert!(p.into_result().is_ok());
        let mut p = ConfigProblems::new();
        GameShape::new(65, 8).check(MAX_RELAY_PLAYERS, &mut p);
        assert_eq!(p.to_string(), "players: 65 is not in 1..=64");
    }

    #[test]
    fn a_tick_longer_than_the_clock_frame_is_a_problem() {
        let mut p = ConfigProblems::new();
        GameShape { tick_rate_hz: 0.5, ..GameShape::new(2, 2) }.check_clock(&mut p);
        assert_eq!(
            p.to_string(),
            "tick_rate_hz: 0.5 is below 4: a tick must fit in the tick clock's longest frame (250 ms)"
        );
        let mut p = ConfigProblems::new();
        for hz in [4.0, 60.0, MAX_TICK_RATE_HZ, 0.0, f64::NAN] {
            GameShape { tick_rate_hz: hz, ..GameShape::new(2, 2) }.check_clock(&mut p);
        }
        assert!(p.is_empty(), "{p}");
    }

    #[test]
    fn the_catch_up_cap_is_checked_and_reaches_the_clock() {
        let shape = |hz: f64, max_frame_us: u64| GameShape { tick_rate_hz: hz, max_frame_us, ..GameShape::new(2, 2) };
        for (g, want) in [
            (shape(60.0, 0), "max_frame_us: 0 us is not in 1..=10000000 us"),
            (shape(60.0, 10_000_001), "max_frame_us: 10000001 us is not in 1..=10000000 us"),
            (shape(60.0, 10_000), "max_frame_us: 10000 us is shorter than one tick (16667 us at tick_rate_hz 60)"),
        ] {
            let mut p = ConfigProblems::new();
            g.check_clock(&mut p);
            assert_eq!(p.to_string(), want);
        }
        let mut p = ConfigProblems::new();
        for g in [shape(60.0, 16_667), shape(60.0, MAX_MAX_FRAME_US), shape(0.5, 2_000_000)] {
            g.check_clock(&mut p);
        }
        assert!(p.is_empty(), "{p}");
        assert_eq!(shape(60.0, 1_000_000).clock().max_frame_us, 1_000_000);
        assert_eq!(GameShape::new(2, 2).clock().max_frame_us, TickClockConfig::default().max_frame_us);
    }

    #[test]
    fn the_clock_runs_at_the_shape_rate() {
        let g = GameShape { tick_rate_hz: 30.0, ..GameShape::new(2, 2) };
        assert!((g.clock().tick_us - 33_333.33).abs() < 0.01);
    }
}
