//! A stand-in engine for the session targets: it runs every request the way a real
//! engine would and checks that the session keeps the engine contract.
//!
//! Its state is one word hashed from the inputs; a save keeps it in the slot asked
//! for. The contract checked: slots are in `0..state_slots()`; a load or a dump names
//! a slot saved for that very tick; the engine's tick (once known) is where the next
//! save and advance say it is; every advance carries one input per player, of the
//! session's input size.

use tickwire_proto::{Request, Tick};

pub(crate) struct Engine {
    players: usize,
    input_size: usize,
    /// The state at the start of `tick`.
    state: u64,
    tick: Option<Tick>,
    slots: Vec<Option<(Tick, u64)>>,
    /// Checksums reported are the state's, or (to provoke desyncs) shifted by this.
    pub(crate) checksum_salt: u64,
    pub(crate) requests: u64,
}

/// What the session must be told after a request.
pub(crate) enum Answer {
    Saved(Tick, u64),
    Dump(Tick, Vec<u8>),
}

impl Engine {
    pub(crate) fn new(players: usize, input_size: usize, state_slots: usize) -> Self {
        Engine {
            players,
            input_size,
            state: 0x5eed,
            tick: None,
            slots: vec![None; state_slots],
            checksum_salt: 0,
            requests: 0,
        }
    }

    fn at(&mut self, tick: Tick, what: &str) {
        if let Some(t) = self.tick {
            assert_eq!(t, tick, "{what} for tick {tick} while the engine is at tick {t}");
        }
        self.tick = Some(tick);
    }

    fn slot(&self, slot: usize, tick: Tick, what: &str) -> u64 {
        assert!(slot < self.slots.len(), "{what}: slot {slot} of {}", self.slots.len());
        match self.slots[slot] {
            Some((t, s)) if t == tick => s,
            other => panic!("{what} of tick {tick} from slot {slot}, which holds {other:?}"),
        }
    }

    /// Runs one request.
    pub(crate) fn run(&mut self, r: Request<'_>) -> Option<Answer> {
        self.requests += 1;
        match r {
            Request::Save { tick, slot } => {
                self.at(tick, "save");
                assert!(slot < self.slots.len(), "save: slot {slot} of {}", self.slots.len());
                self.slots[slot] = Some((tick, self.state));
                Some(Answer::Saved(tick, self.state.wrapping_add(self.checksum_salt)))
            }
            Request::Load { tick, slot } => {
                self.state = self.slot(slot, tick, "load");
                self.tick = Some(tick);
                None
            }
            Request::Advance { tick, inputs, .. } => {
                self.at(tick, "advance");
                assert_eq!(inputs.len(), self.players, "inputs of tick {tick}");
                for i in 0..inputs.len() {
                    let (b, _) = inputs.get(i);
                    assert_eq!(b.len(), self.input_size, "input {i} of tick {tick}");
                    for &x in b {
                        self.state = (self.state ^ x as u64).wrapping_mul(0x0000_0100_0000_01b3);
                    }
                }
                self.state = self.state.rotate_left(7) ^ tick as u64;
                self.tick = Some(tick.saturating_add(1));
                None
            }
            Request::Restore { tick, state } => {
                self.state = tickwire_proto::fnv1a64(state);
                self.tick = Some(tick);
                None
            }
            Request::DumpState { tick, slot } => {
                let s = self.slot(slot, tick, "dump");
                Some(Answer::Dump(tick, s.to_le_bytes().to_vec()))
            }
        }
    }
}
