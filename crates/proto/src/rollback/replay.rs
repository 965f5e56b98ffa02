//! Replays: confirmed inputs plus the initial state, in a versioned byte format, and
//! a session that plays them back through the same requests as a live match.
//!
//! Format (integers little-endian), version 1:
//! ```text
//! "TWRP" u16 version u16 flags (0)
//! u32 players, u32 input_size, u32 start tick, u32 ticks
//! u32 initial state length, initial state bytes (the engine's own format)
//! ticks * players * (u8 status (0 confirmed, 2 disconnected), input_size bytes)
//! ```
//! Decoding is strict: wrong magic, version, flags, status bytes, any length that
//! does not add up exactly, ticks past `u32::MAX`, or more players
//! ([`MAX_ROLLBACK_PLAYERS`](crate::MAX_ROLLBACK_PLAYERS)) or larger inputs
//! ([`MAX_INPUT_SIZE`](crate::MAX_INPUT_SIZE)) than a session has is an error.
//! Every length is checked against the bytes left before anything is allocated.

use super::desync::status_from;
use super::p2p::SessionError;
use crate::engine::{AdvanceStatus, InputStatus, Request, RequestQueue, Tick};
use crate::game::{ConfigProblems, GameShape, MAX_ROLLBACK_PLAYERS};
use crate::wire::{DecodeError, Reader};

const MAGIC: &[u8; 4] = b"TWRP";
const VERSION: u16 = 1;
const HEADER: usize = 4 + 2 + 2 + 4 * 4 + 4;

/// Why a replay did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// Not a replay, or a version this build does not read.
    #[error("not a tickwire replay of version {VERSION}")]
    BadHeader,
    /// Sizes or statuses that do not add up.
    #[error("corrupt replay: {0}")]
    Corrupt(&'static str),
}

/// Appends confirmed inputs as they are confirmed.
#[derive(Debug, Clone)]
pub struct ReplayRecorder {
    players: usize,
    input_size: usize,
    start: Tick,
    ticks: u32,
    bytes: Vec<u8>,
    row: usize,
}

impl ReplayRecorder {
    /// Starts a recording at `start` from `initial_state`.
    pub fn new(players: usize, input_size: usize, start: Tick, initial_state: &[u8]) -> Self {
        let mut bytes = Vec::with_capacity(HEADER + initial_state.len() + 4096);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        bytes.extend_from_slice(&0u16.to_le_bytes());
        for v in [players as u32, input_size as u32, start, 0] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.extend_from_slice(&(initial_state.len() as u32).to_le_bytes());
        bytes.extend_from_slice(initial_state);
        ReplayRecorder { players, input_size, start, ticks: 0, bytes, row: 0 }
    }

    /// The first tick not recorded yet.
    pub fn end_tick(&self) -> Tick {
        self.start + self.ticks
    }

    /// Opens the next tick; follow with one [`ReplayRecorder::push`] per player.
    pub fn begin_tick(&mut self) {
        debug_assert!(self.row == 0 || self.row == self.players);
        self.ticks += 1;
        self.row = 0;
        self.bytes[20..24].copy_from_slice(&self.ticks.to_le_bytes());
    }

    /// Records the next player's input (zeros are written for a disconnected one).
    pub fn push(&mut self, input: &[u8], status: InputStatus) {
        self.bytes.push(status as u8);
        if status == InputStatus::Disconnected {
            self.bytes.resize(self.bytes.len() + self.input_size, 0);
        } else {
            self.bytes.extend_from_slice(input);
        }
        self.row += 1;
    }

    /// The replay file's bytes (complete ticks only).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// A decoded replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// Players per tick.
    pub players: usize,
    /// Bytes per input.
    pub input_size: usize,
    /// The tick the initial state belongs to.
    pub start: Tick,
    /// Number of ticks recorded.
    pub ticks: u32,
    /// The engine's serialized initial state (may be empty).
    pub initial_state: Vec<u8>,
    inputs: Vec<u8>,
    status: Vec<InputStatus>,
}

impl Replay {
    /// Strictly decodes a replay file.
    pub fn decode(data: &[u8]) -> Result<Replay, ReplayError> {
        let mut r = Reader::new(data);
        let bad = |_: DecodeError| ReplayError::BadHeader;
        if r.bytes(4).map_err(bad)? != MAGIC || r.u16().map_err(bad)? != VERSION || r.u16().map_err(bad)? != 0 {
            return Err(ReplayError::BadHeader);
        }
        let trunc = |_: DecodeError| ReplayError::Corrupt("truncated");
        let players = r.u32().map_err(trunc)? as usize;
        let input_size = r.u32().map_err(trunc)? as usize;
        let start = r.u32().map_err(trunc)?;
        let ticks = r.u32().map_err(trunc)?;
        if players == 0 || input_size == 0 {
            return Err(ReplayError::Corrupt("no players or empty inputs"));
        }
        if start.checked_add(ticks).is_none() {
            return Err(ReplayError::Corrupt("ticks run past the last tick number"));
        }
        // Playing reserves players x input size, which no tick may back (with none).
        if players > MAX_ROLLBACK_PLAYERS || input_size > crate::game::MAX_INPUT_SIZE {
            return Err(ReplayError::Corrupt("more players or larger inputs than a session has"));
        }
        let len = r.u32().map_err(trunc)? as usize;
        let initial_state = r.bytes(len).map_err(trunc)?.to_vec();
        let cells = (ticks as usize).checked_mul(players).ok_or(ReplayError::Corrupt("size overflow"))?;
        let body = cells.checked_mul(1 + input_size).ok_or(ReplayError::Corrupt("size overflow"))?;
        if r.remaining() != body {
            return Err(ReplayError::Corrupt("input block length does not match the header"));
        }
        let mut inputs = Vec::with_capacity(cells * input_size);
        let mut status = Vec::with_capacity(cells);
        for _ in 0..cells {
            let s = match status_from(r.u8().map_err(trunc)?) {
                Some(s @ (InputStatus::Confirmed | InputStatus::Disconnected)) => s,
                _ => return Err(ReplayError::Corrupt("bad input status")),
            };
            let b = r.bytes(input_size).map_err(trunc)?;
            if s == InputStatus::Disconnected && b.iter().any(|&x| x != 0) {
                return Err(ReplayError::Corrupt("disconnected input with bytes"));
            }
            status.push(s);
            inputs.extend_from_slice(b);
        }
        Ok(Replay { players, input_size, start, ticks, initial_state, inputs, status })
    }

    /// True when the replay was recorded with `game`'s players and input size.
    pub fn fits(&self, game: &GameShape) -> bool {
        self.players == game.players && self.input_size == game.input_size
    }

    /// Player `p`'s input at `tick`.
    pub fn input(&self, tick: Tick, p: usize) -> Option<(&[u8], InputStatus)> {
        let i = (tick.checked_sub(self.start)? as usize) * self.players + p;
        (p < self.players && tick - self.start < self.ticks)
            .then(|| (&self.inputs[i * self.input_size..(i + 1) * self.input_size], self.status[i]))
    }
}

/// Plays a [`Replay`] back: a `Restore` of the initial state (if any), then one
/// `Advance` per tick with the recorded inputs.
#[derive(Debug, Clone)]
pub struct ReplaySession {
    replay: Replay,
    current: Tick,
    restored: bool,
    requests: RequestQueue,
}

impl ReplaySession {
    /// Pushes every problem of `game` for a replay session into `problems`, each
    /// under its field's name (what [`ReplaySession::new`] checks before the replay).
    pub fn check(game: &GameShape, problems: &mut ConfigProblems) {
        game.check(MAX_ROLLBACK_PLAYERS, problems);
        game.check_catch_up(problems);
    }

    /// A session of `game` over a decoded replay, which must have been recorded with
    /// `game`'s players and input size. The tick rate is the caller's: the session
    /// plays a tick whenever it is advanced.
    pub fn new(game: GameShape, replay: Replay) -> Result<Self, SessionError> {
        let mut problems = ConfigProblems::new();
        Self::check(&game, &mut problems);
        problems.into_result().map_err(SessionError::Config)?;
        if !replay.fits(&game) {
            return Err(SessionError::ReplayShape {
                replay_players: replay.players,
                replay_input_size: replay.input_size,
                players: game.players,
                input_size: game.input_size,
            });
        }
        let requests = RequestQueue::new(replay.players, replay.input_size, 1);
        Ok(ReplaySession { current: replay.start, restored: false, requests, replay })
    }

    /// The next tick to play.
    pub fn current_tick(&self) -> Tick {
        self.current
    }

    /// The replay being played.
    pub fn replay(&self) -> &Replay {
        &self.replay
    }

    /// Queues the next tick (and the initial restore on the first call).
    pub fn advance(&mut self) -> AdvanceStatus {
        self.requests.clear();
        if !self.restored {
            self.restored = true;
            if !self.replay.initial_state.is_empty() {
                let state = std::mem::take(&mut self.replay.initial_state);
                self.requests.push_restore(self.replay.start, &state);
                self.replay.initial_state = state;
            }
        }
        if self.current - self.replay.start >= self.replay.ticks {
            return AdvanceStatus::Finished;
        }
        self.requests.begin_advance(self.current, false);
        for p in 0..self.replay.players {
            let (b, s) = self.replay.input(self.current, p).expect("tick in range");
            self.requests.push_input(b, s);
        }
        self.current += 1;
        AdvanceStatus::Advanced
    }

    /// The next request, in order.
    pub fn poll_request(&mut self) -> Option<Request<'_>> {
        self.requests.poll()
    }

    /// Requests of the last advance not polled yet (the next advance drops them).
    pub fn pending_requests(&self) -> usize {
        self.requests.pending()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_decode_play() {
        let mut r = ReplayRecorder::new(2, 2, 0, &[7, 7, 7]);
        for t in 0..5u8 {
            r.begin_tick();
            r.push(&[t, 1], InputStatus::Confirmed);
            if t < 3 { r.push(&[t, 2], InputStatus::Confirmed) } else { r.push(&[], InputStatus::Disconnected) }
        }
        let bytes = r.bytes().to_vec();
        let replay = Replay::decode(&bytes).unwrap();
        assert_eq!(replay.ticks, 5);
        assert_eq!(replay.input(4, 1), Some((&[0u8, 0][..], InputStatus::Disconnected)));
        for cut in 0..bytes.len() {
            assert!(Replay::decode(&bytes[..cut]).is_err(), "cut {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(Replay::decode(&extra).is_err());
        let mut bad = bytes.clone();
        bad[4] = 9;
        assert_eq!(Replay::decode(&bad), Err(ReplayError::BadHeader));
        let mut s = ReplaySession::new(GameShape::new(2, 2), replay).unwrap();
        assert_eq!(s.advance(), AdvanceStatus::Advanced);
        assert!(matches!(s.poll_request(), Some(Request::Restore { tick: 0, state: [7, 7, 7] })));
        assert!(matches!(s.poll_request(), Some(Request::Advance { tick: 0, .. })));
        for _ in 1..5 {
            assert_eq!(s.advance(), AdvanceStatus::Advanced);
        }
        assert_eq!(s.advance(), AdvanceStatus::Finished);
    }

    /// A replay header with these fields, an empty initial state, then `body`.
    fn crafted(players: u32, input_size: u32, start: u32, ticks: u32, body: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&VERSION.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        for v in [players, input_size, start, ticks, 0] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(body);
        b
    }

    #[test]
    fn counts_that_the_bytes_left_cannot_hold_are_refused_before_allocating() {
        let corrupt = |b: &[u8]| matches!(Replay::decode(b), Err(ReplayError::Corrupt(_)));
        for (players, input_size, ticks) in [
            (u32::MAX, u32::MAX, u32::MAX),
            (1, 1, u32::MAX),
            (u32::MAX, 1, 1),
            (1, u32::MAX, 1),
            (255, 64, 1_000_000),
            (0, 1, 5),
            (1, 0, 5),
        ] {
            assert!(corrupt(&crafted(players, input_size, 0, ticks, &[0; 64])), "{players} {input_size} {ticks}");
        }
        // An initial state longer than the bytes left.
        let mut b = crafted(1, 1, 0, 0, &[]);
        b[HEADER - 4..HEADER].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(corrupt(&b));
        // Two ticks of one 1-byte input: exact, then a byte short.
        assert!(Replay::decode(&crafted(1, 1, 0, 2, &[0, 7, 0, 8])).is_ok());
        assert!(corrupt(&crafted(1, 1, 0, 2, &[0, 7, 0])));
    }

    #[test]
    fn ticks_running_past_the_last_tick_number_are_refused() {
        // The session would count its ticks past u32::MAX (a panic in a debug build).
        let body = [0, 1, 0, 2, 0, 3];
        assert_eq!(
            Replay::decode(&crafted(1, 1, u32::MAX - 1, 3, &body)),
            Err(ReplayError::Corrupt("ticks run past the last tick number"))
        );
        let last = Replay::decode(&crafted(1, 1, u32::MAX - 3, 3, &body)).unwrap();
        let mut s = ReplaySession::new(GameShape::new(1, 1), last).unwrap();
        for _ in 0..3 {
            assert_eq!(s.advance(), AdvanceStatus::Advanced);
        }
        assert_eq!(s.advance(), AdvanceStatus::Finished);
    }

    /// Found by fuzzing: with no ticks no input bytes back the player count and input
    /// size, and playing the replay reserved their product (2^32 - 1 of each: a
    /// capacity-overflow panic; less, an allocation failure). No session records more
    /// than `MAX_ROLLBACK_PLAYERS` players or inputs over `MAX_INPUT_SIZE` bytes, so no
    /// replay has them.
    #[test]
    fn player_counts_and_input_sizes_no_session_has_are_refused() {
        let max = crate::game::MAX_INPUT_SIZE as u32;
        let most = MAX_ROLLBACK_PLAYERS as u32;
        for (players, input_size) in [(u32::MAX, u32::MAX), (most + 1, 1), (65_535, max), (1, max + 1)] {
            assert!(
                matches!(Replay::decode(&crafted(players, input_size, 0, 0, &[])), Err(ReplayError::Corrupt(_))),
                "{players} players of {input_size} bytes"
            );
        }
        let largest = Replay::decode(&crafted(most, max, 0, 0, &[])).expect("the largest a session records");
        let shape = GameShape::new(MAX_ROLLBACK_PLAYERS, max as usize);
        assert_eq!(ReplaySession::new(shape, largest).unwrap().advance(), AdvanceStatus::Finished);
    }

    #[test]
    fn a_replay_of_another_shape_is_refused() {
        let mut r = ReplayRecorder::new(2, 3, 0, &[]);
        r.begin_tick();
        r.push(&[1, 2, 3], InputStatus::Confirmed);
        r.push(&[4, 5, 6], InputStatus::Confirmed);
        let replay = Replay::decode(r.bytes()).unwrap();
        for shape in [GameShape::new(3, 3), GameShape::new(2, 2)] {
            assert!(matches!(
                ReplaySession::new(shape, replay.clone()),
                Err(SessionError::ReplayShape { replay_players: 2, replay_input_size: 3, .. })
            ));
        }
        let bad = GameShape { tick_rate_hz: 0.0, ..GameShape::new(2, 3) };
        assert!(matches!(ReplaySession::new(bad, replay.clone()), Err(SessionError::Config(_))));
        assert!(ReplaySession::new(GameShape::new(2, 3), replay).is_ok());
    }
}
