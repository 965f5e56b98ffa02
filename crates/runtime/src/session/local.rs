//! The sessions without a socket: [`SyncTest`] (the determinism check) and
//! [`ReplayPlayer`] (plays a recorded match back). Both run on a fixed-rate clock.

use std::path::Path;

use super::engine::{Engine, Phase, sealed::Driven};
use super::failure::{ArgumentError, SessionFailure, StateError};
use super::settings::{ReplaySettings, SyncTestSettings};
use crate::system_clock::SystemClock;
use tickwire_proto::{Clock, Micros, Replay, ReplaySession, SyncTestSession, SyncTestState, Tick, TickClock};

/// A synctest session: every tick is rolled back `check_distance` ticks and
/// re-simulated, and the checksums must agree. Use it from one thread at a time.
pub struct SyncTest {
    engine: Engine<SyncTestSession>,
    clock: SystemClock,
    fixed: TickClock,
    /// Built at creation; runs from `start` on.
    core: Option<SyncTestSession>,
    slots: usize,
}

/// A synctest's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SyncTestStats {
    /// Started.
    pub running: bool,
    /// The next tick to simulate.
    pub current_tick: Tick,
    /// Checksum mismatches found.
    pub mismatches: u64,
    /// Snapshots the engine holds.
    pub state_slots: u32,
}

impl SyncTest {
    /// Checks `settings` and builds the core.
    pub fn new(settings: SyncTestSettings) -> Result<Self, SessionFailure> {
        settings.validate()?;
        let g = settings.game;
        let core = SyncTestSession::new(g, settings.check_distance)?;
        Ok(SyncTest {
            slots: core.state_slots(),
            fixed: TickClock::new(g.clock(), 0),
            engine: Engine::new(g),
            clock: SystemClock::new(),
            core: Some(core),
        })
    }

    /// Ends setup: ticks come due from now on.
    pub fn start(&mut self) -> Result<(), SessionFailure> {
        self.engine.require_setup("starting")?;
        if let Some(core) = self.core.take() {
            self.engine.run(core);
        }
        Ok(())
    }

    /// Gives `player`'s input for the next advance (a synctest takes every player's).
    pub fn add_input(&mut self, player: usize, input: &[u8]) -> Result<(), SessionFailure> {
        self.engine.require_started("pushing an input")?;
        self.engine.check_player(player)?;
        match self.engine.core_mut() {
            Some(s) => Ok(s.add_input(player, input)?),
            None => Err(StateError::NotRunning { session: "session" }.into()),
        }
    }

    /// The engine's checksum of the state it saved for `tick`.
    pub fn confirm_save(&mut self, tick: Tick, checksum: u64) -> Result<(), SessionFailure> {
        self.engine.require_started("confirm_save")?;
        match self.engine.core_mut() {
            Some(s) => Ok(s.confirm_save(tick, checksum)?),
            None => Err(StateError::NoSaveRequested.into()),
        }
    }

    /// The engine's answer to a `DumpState` request after a mismatch: the saved state,
    /// then the resimulated one.
    pub fn provide_state(&mut self, tick: Tick, bytes: &[u8]) -> Result<(), SessionFailure> {
        self.engine.require_started("provide_state")?;
        match self.engine.core_mut() {
            Some(s) => s.provide_state(tick, bytes).map_err(|e| match e {
                tickwire_proto::SessionError::UnexpectedTick(_) => ArgumentError::NoDumpRequested { tick }.into(),
                other => SessionFailure::Core(other),
            })?,
            None => return Err(StateError::NoStateRequested.into()),
        }
        self.engine.collect_events();
        Ok(())
    }

    /// The ready state `which` of the captured mismatch (after `SyncTestStatesReady`),
    /// not taken yet.
    pub fn mismatch_state(&self, which: SyncTestState) -> Option<&[u8]> {
        self.engine.core().and_then(|s| s.peek_state(which))
    }

    /// Releases the state `which` of the captured mismatch; once both are released the
    /// next mismatch is captured.
    pub fn release_mismatch_state(&mut self, which: SyncTestState) {
        if let Some(s) = self.engine.core_mut() {
            s.take_state(which);
        }
    }

    /// Counters and gauges.
    pub fn stats(&self) -> SyncTestStats {
        let (current_tick, mismatches) = self.engine.core().map_or((0, 0), |s| (s.current_tick(), s.mismatches()));
        SyncTestStats {
            running: self.engine.core().is_some(),
            current_tick,
            mismatches,
            state_slots: self.slots as u32,
        }
    }
}

impl Driven for SyncTest {
    type Core = SyncTestSession;
    fn engine(&self) -> &Engine<Self::Core> {
        &self.engine
    }
    fn engine_mut(&mut self) -> &mut Engine<Self::Core> {
        &mut self.engine
    }
    fn pump(&mut self) {}
    fn due(&mut self) -> u32 {
        self.fixed.advance(self.clock.now_us())
    }
    fn flush(&mut self) {}
    fn slots(&self) -> usize {
        self.slots
    }
    fn now(&self) -> Micros {
        self.clock.now_us()
    }
}

/// Plays a recorded replay back: the recorded inputs, tick by tick, at the game's
/// rate. Use it from one thread at a time.
pub struct ReplayPlayer {
    engine: Engine<ReplaySession>,
    clock: SystemClock,
    fixed: TickClock,
    /// The loaded replay's session, built at load; runs from `start` on.
    replay: Option<ReplaySession>,
}

/// A replay player's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReplayStats {
    /// Started.
    pub running: bool,
    /// The next tick to play.
    pub current_tick: Tick,
}

impl ReplayPlayer {
    /// Checks `settings`.
    pub fn new(settings: ReplaySettings) -> Result<Self, SessionFailure> {
        settings.validate()?;
        Ok(ReplayPlayer {
            fixed: TickClock::new(settings.game.clock(), 0),
            engine: Engine::new(settings.game),
            clock: SystemClock::new(),
            replay: None,
        })
    }

    /// The replay to play (the bytes of a replay file), recorded with the settings'
    /// players and input size. Setup only.
    pub fn load_replay(&mut self, bytes: &[u8]) -> Result<(), SessionFailure> {
        self.engine.require_setup("loading a replay")?;
        let replay = Replay::decode(bytes)?;
        let core = ReplaySession::new(self.engine.game, replay)?;
        self.replay = Some(core);
        Ok(())
    }

    /// Reads the replay file at `path` and loads it as [`ReplayPlayer::load_replay`].
    /// Setup only. Refused without reading it: a path that is not a regular file (a
    /// FIFO, a directory, a device) and a file larger than
    /// [`MAX_REPLAY_SIZE`](super::MAX_REPLAY_SIZE).
    pub fn load_replay_file(&mut self, path: &Path) -> Result<(), SessionFailure> {
        self.engine.require_setup("loading a replay")?;
        let bytes = super::read_replay_file(path)?;
        self.load_replay(&bytes)
    }

    /// Ends setup: the replay plays from now on.
    pub fn start(&mut self) -> Result<(), SessionFailure> {
        self.engine.require_setup("starting")?;
        let core = self.replay.take().ok_or(StateError::NoReplay)?;
        self.engine.run(core);
        Ok(())
    }

    /// Counters and gauges.
    pub fn stats(&self) -> ReplayStats {
        ReplayStats {
            running: self.engine.core().is_some(),
            current_tick: self.engine.core().map_or(0, ReplaySession::current_tick),
        }
    }
}

impl Driven for ReplayPlayer {
    type Core = ReplaySession;
    fn engine(&self) -> &Engine<Self::Core> {
        &self.engine
    }
    fn engine_mut(&mut self) -> &mut Engine<Self::Core> {
        &mut self.engine
    }
    fn pump(&mut self) {}
    fn due(&mut self) -> u32 {
        match self.engine.phase {
            Phase::Running(_) => self.fixed.advance(self.clock.now_us()),
            _ => 0,
        }
    }
    fn flush(&mut self) {}
    fn slots(&self) -> usize {
        0
    }
    fn now(&self) -> Micros {
        self.clock.now_us()
    }
}
