//! `tw_request`: one piece of work the session asks of the engine, polled with
//! `tw_session_poll_request`.

use std::mem::size_of;

use super::guard;
use tickwire_runtime::{PolledRequest, RequestKind};

/// What a request asks (`tw_request.kind`). Run every request, in order.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_request_kind {
    /// Never written by the library.
    None = 0,
    /// Store the current state (the state at the start of `tick`) in snapshot `slot`,
    /// then report its checksum with `tw_session_confirm_save(tick, checksum)`.
    Save = 1,
    /// Replace the current state with snapshot `slot` (the start of `tick`).
    Load = 2,
    /// Simulate `tick` with the inputs copied by `tw_session_request_inputs`
    /// (`num_players * input_size` bytes, player order) and their statuses
    /// (`tw_session_request_input_status`, one `tw_input_status` byte per player).
    Advance = 3,
    /// Replace the current state with the serialized state copied by
    /// `tw_session_request_state` (`data_len` bytes, the engine's own format): a
    /// replay's initial state or a spectator's join snapshot.
    Restore = 4,
    /// Serialize snapshot `slot` (the state at the start of `tick`) and hand it over
    /// with `tw_session_provide_state`: for a desync dump or a spectator joining, or on a
    /// relay client whose server runs no game code, for another player's snapshot.
    DumpState = 5,
}

impl From<RequestKind> for tw_request_kind {
    fn from(k: RequestKind) -> Self {
        match k {
            RequestKind::Save => tw_request_kind::Save,
            RequestKind::Load => tw_request_kind::Load,
            RequestKind::Advance => tw_request_kind::Advance,
            RequestKind::Restore => tw_request_kind::Restore,
            RequestKind::DumpState => tw_request_kind::DumpState,
        }
    }
}

/// `tw_request.flags`, ADVANCE: re-simulating after a rollback (mute sounds and effects).
pub const TW_REQUEST_FLAG_RESIMULATING: u32 = 1;
/// `tw_request.flags`, ADVANCE: at least one input is a prediction (a later rollback
/// may replace this tick).
pub const TW_REQUEST_FLAG_PREDICTED: u32 = 2;
/// `tw_request.flags`, ADVANCE: every input of this simulation is final (confirmed,
/// canonical or disconnected): a relay client's canonical steps, and P2P, synctest,
/// spectator and replay ticks with no predicted input. It does not mark every tick
/// whose outcome is final: a tick simulated with predictions that turn out right is
/// never simulated again, so it never carries this flag. For effects that must happen
/// exactly once (score, achievements), keep them per tick and commit tick T's when
/// `tw_session_stats.confirmed_tick` is past T (the authoritative tick on a relay
/// client); skip effects while `TW_REQUEST_FLAG_RESIMULATING` is set.
pub const TW_REQUEST_FLAG_AUTHORITATIVE: u32 = 4;

/// Where an input of an ADVANCE request comes from (`tw_session_request_input_status`).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_input_status {
    /// The real input; it will never change.
    Confirmed = 0,
    /// A guess; a rollback follows if the real input differs.
    Predicted = 1,
    /// The player is gone from this tick on; the input bytes are zeros.
    Disconnected = 2,
}

/// A request polled with `tw_session_poll_request`. Fixed size (64 bytes), no
/// pointers: the inputs or state bytes it refers to are copied out with
/// `tw_session_request_inputs`, `tw_session_request_input_status` and
/// `tw_session_request_state` until the next poll.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tw_request {
    /// One of `tw_request_kind`.
    pub kind: u32,
    /// The tick it concerns (see `tw_request_kind`).
    pub tick: u32,
    /// SAVE, LOAD, DUMP_STATE: the snapshot slot, in `0..tw_session_state_slots`.
    pub slot: u32,
    /// `TW_REQUEST_FLAG_*` bits.
    pub flags: u32,
    /// ADVANCE: the number of inputs (players); else 0.
    pub num_players: u32,
    /// ADVANCE: bytes per input; else 0.
    pub input_size: u32,
    /// ADVANCE: `num_players * input_size`; RESTORE: the state's length; else 0.
    pub data_len: u64,
    /// Zero.
    pub reserved: [u8; 32],
}

impl tw_request {
    /// An all-zero request (`TW_REQUEST_KIND_NONE`).
    pub fn zeroed() -> Self {
        tw_request {
            kind: 0,
            tick: 0,
            slot: 0,
            flags: 0,
            num_players: 0,
            input_size: 0,
            data_len: 0,
            reserved: [0; 32],
        }
    }
}

impl From<&PolledRequest> for tw_request {
    fn from(r: &PolledRequest) -> Self {
        let mut flags = 0;
        if r.resimulating {
            flags |= TW_REQUEST_FLAG_RESIMULATING;
        }
        if r.predicted {
            flags |= TW_REQUEST_FLAG_PREDICTED;
        }
        if r.authoritative {
            flags |= TW_REQUEST_FLAG_AUTHORITATIVE;
        }
        tw_request {
            kind: tw_request_kind::from(r.kind) as u32,
            tick: r.tick,
            // Slots are below state_slots (a few dozen) and players below 256.
            slot: r.slot as u32,
            flags,
            num_players: r.players as u32,
            input_size: r.input_size as u32,
            data_len: r.data_len as u64,
            reserved: [0; 32],
        }
    }
}

/// Returns `sizeof(tw_request)` as the library sees it (64). A binding compares it with
/// its own size of the struct to catch a header from another library version.
///
/// Ownership: takes nothing; returns a plain value.
/// Thread-safety: may be called from any thread.
///
/// Returns the size in bytes; never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_request_size() -> usize {
    guard::run_or("tw_request_size", 0, size_of::<tw_request>)
}
