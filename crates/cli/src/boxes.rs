//! The demo's game: one box per player slot on a wrapping grid, moved by 2-byte inputs
//! (dx + 1, dy + 1); boxes that land on the same cell score. Small, deterministic, and
//! every player's input matters to every state, so a wrong prediction shows in the
//! checksum until it is re-simulated away.
//!
//! [`Engine`] is what a game engine does around it for a `tickwire` session: it keeps
//! the snapshots the session names, runs every request, and records the checksum of
//! each tick's starting state for the end-of-match comparison.

use tickwire_proto::{InputStatus, fnv1a64};
use tickwire_runtime::{EngineLoop, RelayClient, RelayServer, RequestKind, SessionFailure};

use super::demo::DemoError;

/// The answers an engine gives its session besides running requests: the checksums of
/// its saves, and the state a server serializes for joining clients.
pub trait Answers: EngineLoop {
    fn confirm_save(&mut self, tick: u32, checksum: u64) -> Result<(), SessionFailure>;
    fn provide_state(&mut self, tick: u32, bytes: &[u8]) -> Result<(), DemoError>;
}

impl Answers for RelayServer {
    fn confirm_save(&mut self, tick: u32, checksum: u64) -> Result<(), SessionFailure> {
        RelayServer::confirm_save(self, tick, checksum)
    }
    fn provide_state(&mut self, tick: u32, bytes: &[u8]) -> Result<(), DemoError> {
        Ok(RelayServer::provide_state(self, tick, bytes)?)
    }
}

impl Answers for RelayClient {
    fn confirm_save(&mut self, tick: u32, checksum: u64) -> Result<(), SessionFailure> {
        RelayClient::confirm_save(self, tick, checksum)
    }
    /// Only a relay-only server (`tickwire serve`) asks a client for its state.
    fn provide_state(&mut self, tick: u32, bytes: &[u8]) -> Result<(), DemoError> {
        Ok(RelayClient::provide_state(self, tick, bytes)?)
    }
}

pub const INPUT_SIZE: usize = 2;
const W: i32 = 40;
const H: i32 = 24;

/// Per player: present, x, y, score.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Box2 {
    present: i32,
    x: i32,
    y: i32,
    score: i32,
}

#[derive(Clone, PartialEq, Eq)]
pub struct Game {
    boxes: Vec<Box2>,
}

impl Game {
    pub fn new(players: usize) -> Self {
        Game { boxes: vec![Box2::default(); players] }
    }

    pub fn serialize(&self, out: &mut Vec<u8>) {
        out.clear();
        for b in &self.boxes {
            for v in [b.present, b.x, b.y, b.score] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }

    fn deserialize(&mut self, bytes: &[u8]) -> bool {
        if bytes.is_empty() {
            // A relay-only server's new match: the game's initial state.
            *self = Game::new(self.boxes.len());
            return true;
        }
        if bytes.len() != self.boxes.len() * 16 {
            return false;
        }
        for (b, c) in self.boxes.iter_mut().zip(bytes.chunks_exact(16)) {
            let v = |i: usize| i32::from_le_bytes(c[4 * i..4 * i + 4].try_into().expect("4 bytes"));
            *b = Box2 { present: v(0), x: v(1), y: v(2), score: v(3) };
        }
        true
    }

    /// One tick with every player's input and status (`InputStatus` numbers).
    fn step(&mut self, inputs: &[u8], statuses: &[u8]) {
        for (p, b) in self.boxes.iter_mut().enumerate() {
            if statuses[p] == InputStatus::Disconnected as u8 {
                b.present = 0;
                continue;
            }
            if b.present == 0 {
                *b = Box2 { present: 1, x: (p as i32 * 7) % W, y: (p as i32 * 5) % H, score: b.score };
            }
            let i = &inputs[p * INPUT_SIZE..(p + 1) * INPUT_SIZE];
            b.x = (b.x + (i[0] % 3) as i32 - 1).rem_euclid(W);
            b.y = (b.y + (i[1] % 3) as i32 - 1).rem_euclid(H);
        }
        let n = self.boxes.len();
        for a in 0..n {
            for c in a + 1..n {
                let (ba, bc) = (self.boxes[a], self.boxes[c]);
                if ba.present == 1 && bc.present == 1 && (ba.x, ba.y) == (bc.x, bc.y) {
                    self.boxes[a].score += 1;
                    self.boxes[c].score += 1;
                }
            }
        }
    }
}

/// What client `c` presses for its `k`-th tick: a new direction every 10 ticks.
pub fn input_for(c: usize, k: u64) -> [u8; INPUT_SIZE] {
    let mut x = (k / 10 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (c as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    [(x % 3) as u8, ((x >> 8) % 3) as u8]
}

/// A game plus the engine work around a session.
pub struct Engine {
    game: Game,
    slots: Vec<Game>,
    bytes: Vec<u8>,
    /// Record checksums after each ADVANCE (the server, which saves only now and then)
    /// rather than at each SAVE (a client, which saves after every advance).
    after_advance: bool,
    /// The checksum of each tick's starting state; the last one recorded wins, so on a
    /// client the ticks before its authoritative tick hold the authoritative state's.
    pub checksums: Vec<Option<u64>>,
}

impl Engine {
    pub fn new(players: usize, slots: usize, after_advance: bool) -> Self {
        Engine { checksums: Vec::with_capacity(1 << 16), ..Self::lean(players, slots, after_advance) }
    }

    /// Like [`Engine::new`], its checksum log growing as it goes (for many engines in
    /// one process).
    pub fn lean(players: usize, slots: usize, after_advance: bool) -> Self {
        Engine {
            game: Game::new(players),
            slots: vec![Game::new(players); slots.max(1)],
            bytes: Vec::with_capacity(players * 16),
            after_advance,
            checksums: Vec::new(),
        }
    }

    fn checksum(&mut self) -> u64 {
        self.game.serialize(&mut self.bytes);
        fnv1a64(&self.bytes)
    }

    fn record(&mut self, tick: u32, c: u64) {
        let t = tick as usize;
        if self.checksums.len() <= t {
            self.checksums.resize(t + 1, None);
        }
        self.checksums[t] = Some(c);
    }

    /// Runs every request of the session's last advance.
    pub fn run_requests(&mut self, s: &mut impl Answers) -> Result<(), DemoError> {
        while let Some(r) = s.poll_request() {
            match r.kind {
                RequestKind::Save => {
                    self.slots[r.slot].clone_from(&self.game);
                    let c = self.checksum();
                    if !self.after_advance {
                        self.record(r.tick, c);
                    }
                    s.confirm_save(r.tick, c)?;
                }
                RequestKind::Load => self.game.clone_from(&self.slots[r.slot]),
                RequestKind::Advance => {
                    // A game would mute effects when `r.resimulating`.
                    let inputs = s.request_inputs().unwrap_or_default();
                    let statuses = s.request_statuses().unwrap_or_default();
                    self.game.step(inputs, statuses);
                    if self.after_advance {
                        let c = self.checksum();
                        self.record(r.tick + 1, c);
                    }
                }
                RequestKind::Restore => {
                    let ok = s.request_state().is_some_and(|b| self.game.deserialize(b));
                    if !ok {
                        return Err(DemoError::Game("the server's snapshot has another shape"));
                    }
                }
                RequestKind::DumpState => {
                    self.slots[r.slot].serialize(&mut self.bytes);
                    s.provide_state(r.tick, &self.bytes)?;
                }
            }
        }
        Ok(())
    }
}
