//! A local determinism check: every tick is simulated, then rolled back by the check
//! distance and simulated again, and the checksums of the two runs are compared.
//!
//! Per [`SyncTestSession::advance`] at tick `c` with check distance `d`:
//! `Advance c`, `Save c+1` (the reference), then `Load c+1-d`, `Advance` (resimulating)
//! and `Save` up to `c+1` again. Each `Save` of a tick already saved is compared with
//! the reference when the engine confirms its checksum; a difference is reported as
//! [`Event::SyncTestMismatch`] with the tick and both checksums.
//!
//! The reference saves and the resimulated ones go to separate slots (the second half
//! of [`SyncTestSession::state_slots`]), so that after a mismatch both states still
//! exist: two `DumpState` requests follow it, the saved state first, and once the
//! engine has given both ([`SyncTestSession::provide_state`]) they are
//! [`Event::SyncTestStatesReady`] to take ([`SyncTestSession::take_state`]) and diff,
//! as GGPO users do with `log_game_state`. One pair is held at a time: mismatches
//! while one waits are counted, not captured.

use std::collections::VecDeque;

use super::event::Event;
use super::p2p::SessionError;
use crate::engine::{AdvanceStatus, InputStatus, Request, RequestQueue, Tick};
use crate::game::{ConfigProblems, GameShape, MAX_ROLLBACK_PLAYERS};

/// Which state of a mismatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncTestState {
    /// The state the first simulation saved.
    Saved,
    /// The state after the rollback and resimulation.
    Resimulated,
}

/// The two states of one mismatch, as the engine hands them over.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Capture {
    /// Dumps of `tick` requested; `saved` holds the first answer once given.
    Asked { tick: Tick, saved: Option<Vec<u8>> },
    /// Both in hand; each is None once taken.
    Ready { tick: Tick, saved: Option<Vec<u8>>, resimulated: Option<Vec<u8>> },
}

/// The largest state a capture keeps (a state is copied twice per mismatch).
pub(super) const MAX_CAPTURED_STATE: usize = 256 << 20;

/// The synctest session. Allocates nothing per tick after construction (a mismatch
/// copies the two states the engine hands over).
#[derive(Debug, Clone)]
pub struct SyncTestSession {
    players: usize,
    size: usize,
    distance: u32,
    slots: usize,
    current: Tick,
    inputs: Vec<u8>,
    staged: Vec<u8>,
    reference: Vec<Option<u64>>,
    /// Saves awaiting `confirm_save`, in order: (tick, is the reference).
    expected: VecDeque<(Tick, bool)>,
    requests: RequestQueue,
    events: VecDeque<Event>,
    mismatches: u64,
    capture: Option<Capture>,
}

impl SyncTestSession {
    /// Pushes every problem of a synctest of `game` rolling back `check_distance`
    /// ticks into `problems`, each under its field's name (what
    /// [`SyncTestSession::new`] checks).
    pub fn check(game: &GameShape, check_distance: u32, problems: &mut ConfigProblems) {
        game.check(MAX_ROLLBACK_PLAYERS, problems);
        game.check_catch_up(problems);
        if !(1..=32).contains(&check_distance) {
            problems.push("check_distance", format!("{check_distance} is not in 1..=32"));
        }
    }

    /// A session for `game`'s players and input size, rolling back `check_distance`
    /// ticks every tick (1..=32; GGRS's default is 2). The tick rate is the caller's:
    /// a synctest runs a tick whenever it is advanced.
    pub fn new(game: GameShape, check_distance: u32) -> Result<Self, SessionError> {
        let mut problems = ConfigProblems::new();
        Self::check(&game, check_distance, &mut problems);
        problems.into_result().map_err(SessionError::Config)?;
        let (players, input_size) = (game.players, game.input_size);
        let slots = check_distance as usize + 2;
        Ok(SyncTestSession {
            players,
            size: input_size,
            distance: check_distance,
            slots,
            current: 0,
            inputs: vec![0; slots * players * input_size],
            staged: vec![0; players * input_size],
            reference: vec![None; slots],
            expected: VecDeque::with_capacity(2 * slots + 2),
            requests: RequestQueue::new(players, input_size, slots),
            events: VecDeque::with_capacity(16),
            mismatches: 0,
            capture: None,
        })
    }

    /// Snapshots the engine must hold: `Save` slots are in `0..state_slots()`, the
    /// first half for the first simulation, the second for the resimulation.
    pub fn state_slots(&self) -> usize {
        2 * self.slots
    }

    /// The next tick to simulate.
    pub fn current_tick(&self) -> Tick {
        self.current
    }

    /// Mismatches found so far.
    pub fn mismatches(&self) -> u64 {
        self.mismatches
    }

    /// Sets player `player`'s input for the next tick (every player is local here).
    pub fn add_input(&mut self, player: usize, input: &[u8]) -> Result<(), SessionError> {
        if player >= self.players {
            return Err(SessionError::UnknownPlayer(player));
        }
        if input.len() != self.size {
            return Err(SessionError::WrongInputSize { expected: self.size, got: input.len() });
        }
        self.staged[player * self.size..(player + 1) * self.size].copy_from_slice(input);
        Ok(())
    }

    fn row(&self, t: Tick) -> std::ops::Range<usize> {
        let w = self.players * self.size;
        let i = (t as usize % self.slots) * w;
        i..i + w
    }

    fn push_advance(&mut self, t: Tick, resim: bool) {
        self.requests.begin_advance(t, resim);
        let r = self.row(t);
        for p in 0..self.players {
            let at = r.start + p * self.size;
            self.requests.push_input(&self.inputs[at..at + self.size], InputStatus::Confirmed);
        }
    }

    fn slot(&self, t: Tick, reference: bool) -> usize {
        t as usize % self.slots + if reference { 0 } else { self.slots }
    }

    fn push_save(&mut self, t: Tick, reference: bool) {
        self.requests.push_save(t, self.slot(t, reference));
        self.expected.push_back((t, reference));
    }

    /// Simulates the current tick, then rolls back and checks (see the module docs).
    pub fn advance(&mut self) -> AdvanceStatus {
        self.requests.clear();
        self.expected.clear();
        // Dumps not answered by now went with the cleared requests: the slots move on.
        if matches!(self.capture, Some(Capture::Asked { .. })) {
            self.capture = None;
        }
        let c = self.current;
        let r = self.row(c);
        self.inputs[r].copy_from_slice(&self.staged);
        if c == 0 {
            self.push_save(0, true);
        }
        self.push_advance(c, false);
        self.push_save(c + 1, true);
        if c + 1 >= self.distance {
            let from = c + 1 - self.distance;
            self.requests.push_load(from, from as usize % self.slots);
            for t in from..=c {
                self.push_advance(t, true);
                self.push_save(t + 1, false);
            }
        }
        self.current += 1;
        AdvanceStatus::Advanced
    }

    /// The engine's checksum for the save it just ran. Must follow the order of the
    /// `Save` requests.
    pub fn confirm_save(&mut self, tick: Tick, checksum: u64) -> Result<(), SessionError> {
        match self.expected.pop_front() {
            Some((t, reference)) if t == tick => {
                let i = t as usize % self.slots;
                if reference {
                    self.reference[i] = Some(checksum);
                } else if let Some(expected) = self.reference[i].filter(|&e| e != checksum) {
                    self.mismatches += 1;
                    self.events.push_back(Event::SyncTestMismatch { tick, expected, actual: checksum });
                    if self.capture.is_none() {
                        // After this advance's other requests; no later save of this
                        // batch reuses either slot (the batch spans fewer ticks).
                        self.requests.push_dump(tick, self.slot(tick, true));
                        self.requests.push_dump(tick, self.slot(tick, false));
                        self.capture = Some(Capture::Asked { tick, saved: None });
                    }
                }
                Ok(())
            }
            _ => Err(SessionError::UnexpectedTick(tick)),
        }
    }

    /// The engine's answer to a `DumpState` request of `tick`: the saved state, then
    /// the resimulated one. Errors for a tick not asked for, or a state too large.
    pub fn provide_state(&mut self, tick: Tick, bytes: &[u8]) -> Result<(), SessionError> {
        match self.capture.take() {
            Some(Capture::Asked { tick: t, saved }) if t == tick => {
                if bytes.len() > MAX_CAPTURED_STATE {
                    self.capture = Some(Capture::Asked { tick: t, saved });
                    return Err(SessionError::StateTooLarge { len: bytes.len(), max: MAX_CAPTURED_STATE });
                }
                self.capture = Some(match saved {
                    None => Capture::Asked { tick, saved: Some(bytes.to_vec()) },
                    Some(saved) => {
                        self.events.push_back(Event::SyncTestStatesReady { tick });
                        Capture::Ready { tick, saved: Some(saved), resimulated: Some(bytes.to_vec()) }
                    }
                });
                Ok(())
            }
            other => {
                self.capture = other;
                Err(SessionError::UnexpectedTick(tick))
            }
        }
    }

    /// The tick of the states ready to take, if any.
    pub fn ready_states(&self) -> Option<Tick> {
        match self.capture {
            Some(Capture::Ready { tick, .. }) => Some(tick),
            _ => None,
        }
    }

    /// The ready state `which` (see [`SyncTestSession::take_state`]) without taking it.
    pub fn peek_state(&self, which: SyncTestState) -> Option<&[u8]> {
        match &self.capture {
            Some(Capture::Ready { saved, resimulated, .. }) => match which {
                SyncTestState::Saved => saved.as_deref(),
                SyncTestState::Resimulated => resimulated.as_deref(),
            },
            _ => None,
        }
    }

    /// Takes the ready state `which`; once both are taken the next mismatch is
    /// captured.
    pub fn take_state(&mut self, which: SyncTestState) -> Option<Vec<u8>> {
        let Some(Capture::Ready { saved, resimulated, .. }) = &mut self.capture else { return None };
        let taken = match which {
            SyncTestState::Saved => saved.take(),
            SyncTestState::Resimulated => resimulated.take(),
        };
        if matches!(&self.capture, Some(Capture::Ready { saved: None, resimulated: None, .. })) {
            self.capture = None;
        }
        taken
    }

    /// The next request, in order.
    pub fn poll_request(&mut self) -> Option<Request<'_>> {
        self.requests.poll()
    }

    /// Requests of the last advance not polled yet (the next advance drops them).
    pub fn pending_requests(&self) -> usize {
        self.requests.pending()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}
