//! The request being run: a copy of what the core handed out, kept until the next poll
//! so that the engine can fetch its inputs or state bytes through separate calls (the C
//! ABI has no borrowed slices).

use tickwire_proto::{InputStatus, Request, Tick};

/// What kind of work a request asks of the engine (numbers as in the C ABI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// Store the current state in `slot`, then confirm its checksum.
    Save = 1,
    /// Replace the current state with the one in `slot`.
    Load = 2,
    /// Simulate `tick` with the request's inputs.
    Advance = 3,
    /// Replace the current state with the request's state bytes.
    Restore = 4,
    /// Serialize the state in `slot` and hand it over with `provide_state`.
    DumpState = 5,
}

/// The fixed-size part of a polled request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolledRequest {
    /// What to do.
    pub kind: RequestKind,
    /// The tick it concerns.
    pub tick: Tick,
    /// The snapshot slot (Save, Load, DumpState), else 0.
    pub slot: usize,
    /// Advance: re-simulating after a rollback.
    pub resimulating: bool,
    /// Advance: at least one input is a prediction.
    pub predicted: bool,
    /// Advance: every input is final, so this tick is never simulated again (a relay
    /// client's canonical step; a P2P tick whose inputs are all confirmed).
    pub authoritative: bool,
    /// Advance: players (inputs) in the request, else 0.
    pub players: usize,
    /// Advance: bytes per input, else 0.
    pub input_size: usize,
    /// Advance: `players * input_size`; Restore: the state's length; else 0.
    pub data_len: usize,
}

/// The current request and its bytes, in buffers reused from poll to poll.
#[derive(Debug, Default)]
pub(super) struct CurrentRequest {
    pub(super) polled: Option<PolledRequest>,
    pub(super) inputs: Vec<u8>,
    pub(super) statuses: Vec<u8>,
    pub(super) state: Vec<u8>,
}

impl CurrentRequest {
    pub(super) fn with_capacity(players: usize, input_size: usize) -> Self {
        CurrentRequest {
            polled: None,
            inputs: Vec::with_capacity(players * input_size),
            statuses: Vec::with_capacity(players),
            state: Vec::new(),
        }
    }

    /// Copies `r` in and returns its fixed-size part.
    pub(super) fn set(&mut self, r: Request<'_>) -> PolledRequest {
        self.inputs.clear();
        self.statuses.clear();
        self.state.clear();
        let empty = |kind, tick, slot| PolledRequest {
            kind,
            tick,
            slot,
            resimulating: false,
            predicted: false,
            authoritative: false,
            players: 0,
            input_size: 0,
            data_len: 0,
        };
        let p = match r {
            Request::Save { tick, slot } => empty(RequestKind::Save, tick, slot),
            Request::Load { tick, slot } => empty(RequestKind::Load, tick, slot),
            Request::DumpState { tick, slot } => empty(RequestKind::DumpState, tick, slot),
            Request::Restore { tick, state } => {
                self.state.extend_from_slice(state);
                PolledRequest { data_len: state.len(), ..empty(RequestKind::Restore, tick, 0) }
            }
            Request::Advance { tick, inputs, resimulating, authoritative } => {
                self.inputs.extend_from_slice(inputs.bytes());
                self.statuses.extend(inputs.statuses().iter().map(|&s| s as u8));
                let players = inputs.len();
                PolledRequest {
                    resimulating,
                    predicted: inputs.statuses().contains(&InputStatus::Predicted),
                    authoritative,
                    players,
                    input_size: inputs.bytes().len().checked_div(players).unwrap_or(0),
                    data_len: inputs.bytes().len(),
                    ..empty(RequestKind::Advance, tick, 0)
                }
            }
        };
        self.polled = Some(p);
        p
    }

    pub(super) fn clear(&mut self) {
        self.polled = None;
    }
}
