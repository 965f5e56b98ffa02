//! What the predictor keeps of the players' inputs: a step's inputs, the inputs each
//! predicted tick was simulated with, and what is known of each player besides.

use crate::engine::Tick;

/// Every player's input in one step, or its absence: one row of `players × size`
/// bytes, in which an absent player's input is zeros (as the engine is given it), and
/// who is present. The bytes are one row because a step goes to the engine and is
/// compared with a prediction player by player in order.
pub(super) struct StepInputs {
    bytes: Vec<u8>,
    present: Vec<bool>,
    size: usize,
}

impl StepInputs {
    pub(super) fn new(players: usize, size: usize) -> Self {
        StepInputs { bytes: vec![0; players * size], present: vec![false; players], size }
    }

    /// Nobody present.
    pub(super) fn clear(&mut self) {
        self.bytes.fill(0);
        self.present.fill(false);
    }

    /// Whether `player` is in the step.
    pub(super) fn is_present(&self, player: usize) -> bool {
        self.present[player]
    }

    /// `player`'s input if present.
    pub(super) fn input(&self, player: usize) -> Option<&[u8]> {
        self.present[player].then(|| self.bytes(player))
    }

    /// `player`'s bytes as the engine is given them (zeros when absent).
    pub(super) fn bytes(&self, player: usize) -> &[u8] {
        &self.bytes[player * self.size..(player + 1) * self.size]
    }

    /// Marks `player` present; returns its bytes to fill in (left as they were: zeros
    /// after `clear`).
    pub(super) fn mark_present(&mut self, player: usize) -> &mut [u8] {
        self.present[player] = true;
        &mut self.bytes[player * self.size..(player + 1) * self.size]
    }

    /// Sets `player`'s input, or its absence.
    pub(super) fn set(&mut self, player: usize, input: Option<&[u8]>) {
        let at = player * self.size..(player + 1) * self.size;
        match input {
            Some(b) => self.bytes[at].copy_from_slice(b),
            None => self.bytes[at].fill(0),
        }
        self.present[player] = input.is_some();
    }
}

/// The inputs one predicted tick was simulated with.
struct UsedTick {
    /// The tick they were used for (None: none since the last reset).
    tick: Option<Tick>,
    inputs: StepInputs,
}

/// The inputs each predicted tick was simulated with, in a ring indexed by tick: a
/// canonical step is compared with them to tell whether the prediction was right.
pub(super) struct UsedInputs {
    ticks: Vec<UsedTick>,
    mask: usize,
}

impl UsedInputs {
    /// Room for `ticks` ticks (rounded up to a power of two).
    pub(super) fn new(ticks: usize, players: usize, size: usize) -> Self {
        let cap = ticks.next_power_of_two();
        let ticks = (0..cap).map(|_| UsedTick { tick: None, inputs: StepInputs::new(players, size) }).collect();
        UsedInputs { ticks, mask: cap - 1 }
    }

    /// Forgets every tick.
    pub(super) fn clear(&mut self) {
        for t in &mut self.ticks {
            t.tick = None;
        }
    }

    /// The inputs `tick` was predicted with, if it was (and they are still kept).
    pub(super) fn get(&self, tick: Tick) -> Option<&StepInputs> {
        let t = &self.ticks[tick as usize & self.mask];
        (t.tick == Some(tick)).then_some(&t.inputs)
    }

    /// The inputs of `tick` to fill in, in place of what the ring held there.
    pub(super) fn record(&mut self, tick: Tick) -> &mut StepInputs {
        let t = &mut self.ticks[tick as usize & self.mask];
        t.tick = Some(tick);
        &mut t.inputs
    }
}

/// What the predictor keeps of one player besides its inputs in steps.
pub(super) struct PlayerSlot {
    /// The engine's own guess of the player's input ([`PlayerSlot::set_guess`]),
    /// kept in place so that a new guess never allocates: meaningful while `guessed`.
    guess: Vec<u8>,
    guessed: bool,
    /// Whether the engine has been told this player is present. Kept across resets:
    /// a snapshot after a resync or a reconnect shows the same players again, and
    /// only a difference is news; a late joiner's first canonical step announces
    /// everyone already there. Never set for our own slot (Joined tells it).
    pub(super) announced: bool,
}

impl PlayerSlot {
    pub(super) fn new(size: usize) -> Self {
        PlayerSlot { guess: vec![0; size], guessed: false, announced: false }
    }

    /// The engine's guess (None, or one of another size: repeat the newest
    /// canonical input).
    pub(super) fn set_guess(&mut self, input: Option<&[u8]>) {
        match input {
            Some(b) if b.len() == self.guess.len() => {
                self.guess.copy_from_slice(b);
                self.guessed = true;
            }
            _ => self.guessed = false,
        }
    }

    /// What to predict for the player, whose input in the newest canonical step was
    /// `newest`: the engine's guess if it gave one, else `newest` again.
    pub(super) fn prediction<'a>(&'a self, newest: &'a [u8]) -> &'a [u8] {
        if self.guessed { &self.guess } else { newest }
    }
}
