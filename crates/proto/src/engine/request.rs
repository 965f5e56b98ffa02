//! The engine's request vocabulary, shared by every session (rollback and relay): the
//! tick numbers, the requests a session hands the engine (`Save`, `Load`, `Advance`,
//! `Restore`, `DumpState`) with their inputs and flags, the preallocated queue they
//! live in, and what an `advance` call did.
//!
//! Requests are polled (never callbacks) and must be run in order, all of them,
//! before the session is advanced again. Advance requests borrow their inputs from
//! the queue's arena, so producing and polling them allocates nothing once the arena
//! has grown to its working size.

/// A simulation step number: one type for every session (rollback and relay), the
/// wire and the C ABI.
///
/// 32 bits, because that is what the wire and the C ABI carry. At 60 Hz they last
/// 2.27 years of continuous running (1.1 years at 120 Hz), far beyond any match or
/// server process; a u64 inside would need every tick from the wire widened (guessing
/// the missing high bits) and every tick to the engine narrowed. Ticks that come from
/// the wire (a peer's, a client's, the server's) are used with checked or saturating
/// arithmetic, so a broken or hostile sender near `Tick::MAX` cannot overflow them:
/// what it sends past the end of the range is refused or held at `Tick::MAX`. A
/// session's own counter gets there only after those years. Counts of ticks (totals,
/// not tick numbers) stay u64.
pub type Tick = u32;

/// Where an input handed to the engine comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum InputStatus {
    /// The real input: it will never change.
    Confirmed = 0,
    /// A guess; a rollback follows if the real input differs.
    Predicted = 1,
    /// The player is gone from this tick on; the bytes are zeros.
    Disconnected = 2,
}

/// What [`P2pSession::advance`](crate::rollback::P2pSession::advance) (and the other sessions' `advance`) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdvanceStatus {
    /// Requests for this tick are ready to poll.
    Advanced,
    /// Some peer has not been heard yet; nothing to simulate. Not an error.
    NotSynchronized,
    /// The prediction window is full: advancing would predict more than
    /// `max_prediction` ticks (P2P: past the confirmed inputs; a relay client: past the
    /// authoritative state). Skip this tick; requests may still contain a rollback.
    /// Not an error: the session resumes by itself when inputs (or steps) arrive.
    WindowFull,
    /// A replay or spectator session has no input for the next tick (yet).
    WaitingForInput,
    /// The session is over: a replay reached its end, or a relay client's server is
    /// lost for good. No request.
    Finished,
}

/// The inputs of one tick, one per player in player order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inputs<'a> {
    bytes: &'a [u8],
    status: &'a [InputStatus],
    size: usize,
}

impl<'a> Inputs<'a> {
    /// Number of players.
    pub fn len(&self) -> usize {
        self.status.len()
    }

    /// True when there are no players (never, in a valid session).
    pub fn is_empty(&self) -> bool {
        self.status.is_empty()
    }

    /// Player `i`'s input bytes and status.
    pub fn get(&self, i: usize) -> (&'a [u8], InputStatus) {
        (&self.bytes[i * self.size..(i + 1) * self.size], self.status[i])
    }

    /// All players' inputs back to back (`len() * input_size` bytes).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// All players' statuses.
    pub fn statuses(&self) -> &'a [InputStatus] {
        self.status
    }
}

/// Something the engine must do, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request<'a> {
    /// Store the current state (the state at the start of `tick`) in `slot`, then
    /// report its checksum with `confirm_save(tick, checksum)`.
    Save {
        /// The tick whose starting state is saved.
        tick: Tick,
        /// Where to keep it, in `0..state_slots()`.
        slot: usize,
    },
    /// Replace the current state with the one saved in `slot` (the state at the start
    /// of `tick`).
    Load {
        /// The tick being returned to.
        tick: Tick,
        /// The slot it was saved in.
        slot: usize,
    },
    /// Simulate one tick with these inputs.
    Advance {
        /// The tick being simulated.
        tick: Tick,
        /// One input per player.
        inputs: Inputs<'a>,
        /// True while re-simulating after a rollback: mute sounds and effects.
        resimulating: bool,
        /// True when these inputs are final: a relay server's canonical step, or (in
        /// the rollback sessions) every input confirmed. False for a prediction that a
        /// later correction may replace; engines can hold back irreversible effects
        /// (score, achievements) until the authoritative tick.
        authoritative: bool,
    },
    /// Replace the current state with this serialized state (the start of `tick`): a
    /// replay's initial state or a spectator's join snapshot.
    Restore {
        /// The tick the state belongs to.
        tick: Tick,
        /// The serialized state, in the engine's own format.
        state: &'a [u8],
    },
    /// Serialize the state saved in `slot` and hand it over with
    /// `provide_state(tick, bytes)`: for a desync dump or a spectator snapshot.
    DumpState {
        /// The tick of the saved state.
        tick: Tick,
        /// The slot it was saved in.
        slot: usize,
    },
}

#[derive(Debug, Clone, Copy)]
enum Item {
    Save(Tick, usize),
    Load(Tick, usize),
    /// `auth: None` derives the flag from the statuses (all final = authoritative).
    Advance {
        tick: Tick,
        at: usize,
        resim: bool,
        auth: Option<bool>,
    },
    Restore(Tick),
    Dump(Tick, usize),
}

/// A reusable, ordered queue of requests with an input arena.
#[derive(Debug, Clone)]
pub(crate) struct RequestQueue {
    items: Vec<Item>,
    next: usize,
    players: usize,
    size: usize,
    bytes: Vec<u8>,
    status: Vec<InputStatus>,
    blob: Vec<u8>,
}

impl RequestQueue {
    /// A queue for `players` inputs of `input_size` bytes, sized for `ticks_hint`
    /// advances per batch.
    pub(crate) fn new(players: usize, input_size: usize, ticks_hint: usize) -> Self {
        let n = ticks_hint.max(1);
        RequestQueue {
            items: Vec::with_capacity(3 * n + 4),
            next: 0,
            players,
            size: input_size,
            bytes: Vec::with_capacity(n * players * input_size),
            status: Vec::with_capacity(n * players),
            blob: Vec::new(),
        }
    }

    /// Drops every request (polled or not).
    pub(crate) fn clear(&mut self) {
        self.items.clear();
        self.next = 0;
        self.bytes.clear();
        self.status.clear();
    }

    /// Requests not yet polled.
    pub(crate) fn pending(&self) -> usize {
        self.items.len() - self.next
    }

    /// Queues a save.
    pub(crate) fn push_save(&mut self, tick: Tick, slot: usize) {
        self.items.push(Item::Save(tick, slot));
    }

    /// Queues a load.
    pub(crate) fn push_load(&mut self, tick: Tick, slot: usize) {
        self.items.push(Item::Load(tick, slot));
    }

    /// Queues a state dump.
    pub(crate) fn push_dump(&mut self, tick: Tick, slot: usize) {
        self.items.push(Item::Dump(tick, slot));
    }

    /// Queues a restore of `state` (copied into the queue's blob; one per batch).
    pub(crate) fn push_restore(&mut self, tick: Tick, state: &[u8]) {
        self.blob.clear();
        self.blob.extend_from_slice(state);
        self.items.push(Item::Restore(tick));
    }

    /// Queues an advance; follow with exactly `players` calls to [`RequestQueue::push_input`].
    /// It is authoritative when none of its inputs is [`InputStatus::Predicted`].
    pub(crate) fn begin_advance(&mut self, tick: Tick, resimulating: bool) {
        self.items.push(Item::Advance { tick, at: self.status.len(), resim: resimulating, auth: None });
    }

    /// Like [`RequestQueue::begin_advance`], with the authoritative flag given: a relay
    /// client's canonical steps are authoritative, its predicted ticks are not.
    pub(crate) fn begin_advance_flagged(&mut self, tick: Tick, resimulating: bool, authoritative: bool) {
        self.items.push(Item::Advance { tick, at: self.status.len(), resim: resimulating, auth: Some(authoritative) });
    }

    /// Adds the next player's input to the advance being built.
    pub(crate) fn push_input(&mut self, input: &[u8], status: InputStatus) {
        debug_assert_eq!(input.len(), self.size);
        self.bytes.extend_from_slice(input);
        self.status.push(status);
    }

    /// The next request, in order.
    pub(crate) fn poll(&mut self) -> Option<Request<'_>> {
        let item = *self.items.get(self.next)?;
        self.next += 1;
        Some(match item {
            Item::Save(tick, slot) => Request::Save { tick, slot },
            Item::Load(tick, slot) => Request::Load { tick, slot },
            Item::Dump(tick, slot) => Request::DumpState { tick, slot },
            Item::Restore(tick) => Request::Restore { tick, state: &self.blob },
            Item::Advance { tick, at, resim, auth } => {
                let status = &self.status[at..at + self.players];
                Request::Advance {
                    tick,
                    inputs: Inputs {
                        bytes: &self.bytes[at * self.size..(at + self.players) * self.size],
                        status,
                        size: self.size,
                    },
                    resimulating: resim,
                    authoritative: auth.unwrap_or_else(|| status.iter().all(|&s| s != InputStatus::Predicted)),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_come_back_in_order_with_inputs() {
        let mut q = RequestQueue::new(2, 1, 4);
        q.push_load(3, 0);
        q.begin_advance(3, true);
        q.push_input(&[1], InputStatus::Confirmed);
        q.push_input(&[2], InputStatus::Predicted);
        q.push_save(4, 1);
        assert_eq!(q.poll(), Some(Request::Load { tick: 3, slot: 0 }));
        match q.poll() {
            Some(Request::Advance { tick: 3, inputs, resimulating: true, authoritative: false }) => {
                assert_eq!(inputs.get(1), (&[2u8][..], InputStatus::Predicted));
                assert_eq!(inputs.bytes(), &[1, 2]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(q.poll(), Some(Request::Save { tick: 4, slot: 1 }));
        assert_eq!(q.poll(), None);
    }

    #[test]
    fn advance_is_authoritative_when_every_input_is_final_or_when_told() {
        let mut q = RequestQueue::new(2, 1, 4);
        q.begin_advance(5, false);
        q.push_input(&[1], InputStatus::Confirmed);
        q.push_input(&[0], InputStatus::Disconnected);
        q.begin_advance_flagged(6, true, false);
        q.push_input(&[1], InputStatus::Confirmed);
        q.push_input(&[2], InputStatus::Confirmed);
        assert!(matches!(q.poll(), Some(Request::Advance { tick: 5, authoritative: true, .. })));
        assert!(matches!(q.poll(), Some(Request::Advance { tick: 6, authoritative: false, resimulating: true, .. })));
    }
}
