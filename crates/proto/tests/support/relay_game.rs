//! The engine side of the relay tests: boxes on a wrapping grid, one per player slot,
//! moved by 2-byte inputs; boxes that land on the same cell score, so every player's
//! input matters to every state. It answers requests the way an engine would, with
//! engine-owned, preallocated snapshot slots, and records the checksum (fnv1a64 of the
//! serialized state) of every tick's starting state.

use tickwire_proto::{InputStatus, Inputs, Request, Tick, fnv1a64};

pub const INPUT_SIZE: usize = 2;
const W: i32 = 64;
const H: i32 = 48;
/// Per player: present, x, y, score.
const FIELDS: usize = 4;

/// What the engine hands back to the session after running a request.
pub enum Answer {
    Saved(Tick, u64),
    State(Tick, Vec<u8>),
}

pub struct BoxGame {
    players: usize,
    /// players × FIELDS, then a running mix of the history.
    pub state: Vec<i64>,
    slots: Vec<Vec<i64>>,
    bytes: Vec<u8>,
    /// Checksum of each tick's starting state, by tick: the last one recorded wins, so
    /// for ticks before the authoritative one it is the authoritative state's.
    pub checksums: Vec<Option<u64>>,
    /// From this tick on, player 0 moves one cell further (a real desync).
    pub desync_from: Option<Tick>,
    /// Record the checksum after every advance (the server) rather than at saves.
    pub record_after_advance: bool,
    pub advances: u64,
    pub resimulated: u64,
    pub authoritative: u64,
    /// When set, the inputs of the last advance of each tick, split by kind: the last
    /// predicted (non-authoritative) one and the authoritative one.
    pub record_inputs: bool,
    pub predicted_inputs: Vec<Option<Vec<u8>>>,
    pub authoritative_inputs: Vec<Option<Vec<u8>>>,
    /// A liar: its state dumps have a byte flipped.
    pub corrupt_dumps: bool,
    /// State dumps answered.
    pub dumps: u64,
}

impl BoxGame {
    pub fn new(players: usize, slots: usize) -> Self {
        let state = vec![0; players * FIELDS + 1];
        BoxGame {
            players,
            slots: vec![state.clone(); slots.max(1)],
            bytes: Vec::with_capacity(state.len() * 8),
            state,
            checksums: Vec::with_capacity(80_000),
            desync_from: None,
            record_after_advance: false,
            advances: 0,
            resimulated: 0,
            authoritative: 0,
            record_inputs: false,
            predicted_inputs: Vec::new(),
            authoritative_inputs: Vec::new(),
            corrupt_dumps: false,
            dumps: 0,
        }
    }

    pub fn checksum(&mut self) -> u64 {
        self.bytes.clear();
        for w in &self.state {
            self.bytes.extend_from_slice(&w.to_le_bytes());
        }
        fnv1a64(&self.bytes)
    }

    fn deserialize(&mut self, b: &[u8]) {
        if b.is_empty() {
            // A relay-only server's new match: the game's initial state.
            self.state.iter_mut().for_each(|w| *w = 0);
            return;
        }
        assert_eq!(b.len(), self.state.len() * 8, "state blob size");
        for (w, c) in self.state.iter_mut().zip(b.chunks_exact(8)) {
            *w = i64::from_le_bytes(c.try_into().unwrap());
        }
    }

    fn record(&mut self, tick: Tick, c: u64) {
        let t = tick as usize;
        if self.checksums.len() <= t {
            self.checksums.resize(t + 1, None);
        }
        self.checksums[t] = Some(c);
    }

    pub fn step(&mut self, tick: Tick, inputs: &Inputs<'_>) {
        assert_eq!(inputs.len(), self.players);
        for p in 0..self.players {
            let (b, status) = inputs.get(p);
            let f = p * FIELDS;
            if status == InputStatus::Disconnected {
                assert!(b.iter().all(|&x| x == 0), "absent players' inputs are zero");
                self.state[f] = 0;
                continue;
            }
            if self.state[f] == 0 {
                self.state[f] = 1;
                self.state[f + 1] = (p as i64 * 7) % W as i64;
                self.state[f + 2] = (p as i64 * 13) % H as i64;
            }
            let mut dx = (b[0] % 3) as i64 - 1;
            let dy = (b[b.len().min(2) - 1] % 3) as i64 - 1;
            // Bytes past the second (wider games) count too: they go into the score,
            // so a client that got any byte of any input wrong diverges.
            if b.len() > 2 {
                let extra = b[2..].iter().fold(0i64, |h, &x| h.wrapping_mul(31).wrapping_add(x as i64));
                self.state[f + 3] = self.state[f + 3].wrapping_add(extra);
            }
            if p == 0 && self.desync_from.is_some_and(|d| tick >= d) {
                dx += 1;
            }
            self.state[f + 1] = (self.state[f + 1] + dx).rem_euclid(W as i64);
            self.state[f + 2] = (self.state[f + 2] + dy).rem_euclid(H as i64);
        }
        for a in 0..self.players {
            for b in a + 1..self.players {
                let (fa, fb) = (a * FIELDS, b * FIELDS);
                let both = self.state[fa] == 1 && self.state[fb] == 1;
                if both && self.state[fa + 1] == self.state[fb + 1] && self.state[fa + 2] == self.state[fb + 2] {
                    self.state[fa + 3] += 1;
                }
            }
        }
        let m = self.state.len() - 1;
        let mut mix = self.state[m];
        for w in &self.state[..m] {
            mix = mix.wrapping_mul(31).wrapping_add(*w);
        }
        self.state[m] = mix ^ tick as i64;
    }

    /// Runs one request; the answer goes back to the session.
    pub fn apply(&mut self, r: Request<'_>) -> Option<Answer> {
        match r {
            Request::Save { tick, slot } => {
                self.slots[slot].copy_from_slice(&self.state);
                let c = self.checksum();
                if !self.record_after_advance {
                    self.record(tick, c);
                }
                Some(Answer::Saved(tick, c))
            }
            Request::Load { slot, .. } => {
                self.state.copy_from_slice(&self.slots[slot]);
                None
            }
            Request::Advance { tick, inputs, resimulating, authoritative } => {
                self.advances += 1;
                self.resimulated += resimulating as u64;
                self.authoritative += authoritative as u64;
                if self.record_inputs {
                    let v = if authoritative { &mut self.authoritative_inputs } else { &mut self.predicted_inputs };
                    if v.len() <= tick as usize {
                        v.resize(tick as usize + 1, None);
                    }
                    v[tick as usize] = Some(inputs.bytes().to_vec());
                }
                self.step(tick, &inputs);
                if self.record_after_advance {
                    let c = self.checksum();
                    self.record(tick + 1, c);
                }
                None
            }
            Request::Restore { state, .. } => {
                self.deserialize(state);
                None
            }
            Request::DumpState { tick, slot } => {
                self.dumps += 1;
                let mut b: Vec<u8> = self.slots[slot].iter().flat_map(|w| w.to_le_bytes()).collect();
                if self.corrupt_dumps {
                    b[0] ^= 1;
                }
                Some(Answer::State(tick, b))
            }
        }
    }
}

/// Client `c`'s input number `k`: a direction held for a while (5 to 35 ticks).
pub fn input_for(seed: u64, c: usize, k: u64) -> [u8; INPUT_SIZE] {
    let mix = |x: u64| {
        let mut x = x ^ seed ^ (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^= x >> 29;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x ^ (x >> 32)
    };
    // Segment boundaries every 20 ticks on average, jittered.
    let seg = k / 20;
    let cut = seg * 20 + mix(seg) % 15;
    let s = if k >= cut { seg } else { seg.wrapping_sub(1) };
    let x = mix(s.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ 0x55);
    [(x & 0xff) as u8, ((x >> 8) & 0xff) as u8]
}

/// Client `c`'s input number `k` for the scale tests, `out.len()` bytes: every byte
/// drawn afresh each `period` ticks (1: a new input every tick, the worst case for a
/// step stream that compresses unchanged inputs), the same in between.
pub fn input_bytes(seed: u64, c: usize, k: u64, period: u64, out: &mut [u8]) {
    let seg = k / period.max(1);
    let mut x = seed ^ (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seg.wrapping_mul(0xD1B5_4A32_D192_ED03);
    for chunk in out.chunks_mut(8) {
        x ^= x >> 29;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x ^= x >> 32;
        let b = x.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    }
}
