//! The `tw_session_*` calls that copy bytes out to (or in from) the engine: the current
//! request's inputs, statuses and state, desync dumps, replay recording.
//!
//! Every copy-out follows the buffer contract of the header: `*out_len` is set to the
//! size on success, and to the size needed on `TW_RESULT_BUFFER_TOO_SMALL` (nothing
//! else is written and the data stays available); `buf` may be NULL when `buf_len` is 0.

use super::session_kind::{SessionKind, each_kind};
use std::ffi::{c_char, c_void};
use std::path::Path;
use tickwire_proto::SyncTestState;
use tickwire_runtime::EngineLoop;
use tickwire_runtime::{MAX_INITIAL_STATE, MAX_REPLAY_SIZE};

use super::args::{arg_bytes, arg_str, copy_out};
use super::error::{Failure, tw_result};
use super::session::{session_failure, tw_session, with_session};

/// The largest replay file `tw_session_load_replay_file` reads (1 GiB), and, less the
/// replay's 28-byte header, the largest initial state `tw_session_start_recording`
/// takes. A longer recording still loads from memory with `tw_session_load_replay`.
pub const TW_MAX_REPLAY_SIZE: u32 = 1_073_741_824;
const _: () = assert!(TW_MAX_REPLAY_SIZE as usize == MAX_REPLAY_SIZE);

fn no_request(what: &str, kind: &str) -> Failure {
    Failure::new(
        tw_result::InvalidState,
        format!("no current {kind} request to read {what} from (poll one with tw_session_poll_request first)"),
    )
}

/// Copies the inputs of the current ADVANCE request: `num_players * input_size` bytes,
/// player 0's input first. Valid until the next poll or advance.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUFFER_TOO_SMALL`;
/// `TW_RESULT_INVALID_STATE` (the current request is not an ADVANCE, or there is none);
/// `TW_RESULT_BUSY` (another call on the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `buf` must be NULL or valid for writing
/// `buf_len` bytes. `out_len` must be NULL or valid for writing a `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_request_inputs(
    session: *mut tw_session,
    buf: *mut c_void,
    buf_len: usize,
    out_len: *mut usize,
) -> tw_result {
    with_session("tw_session_request_inputs", session, |s| {
        let bytes = each_kind!(&s.kind, k => k.request_inputs()).ok_or_else(|| no_request("inputs", "ADVANCE"))?;
        // SAFETY: forwarded contract.
        unsafe { copy_out(bytes, buf.cast(), buf_len, out_len, "the request's inputs") }?;
        Ok(tw_result::Ok)
    })
}

/// Copies the input statuses of the current ADVANCE request: one `tw_input_status`
/// byte per player (CONFIRMED, PREDICTED, DISCONNECTED). Valid until the next poll.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns as `tw_session_request_inputs`.
///
/// # Safety
/// As `tw_session_request_inputs`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_request_input_status(
    session: *mut tw_session,
    buf: *mut u8,
    buf_len: usize,
    out_len: *mut usize,
) -> tw_result {
    with_session("tw_session_request_input_status", session, |s| {
        let bytes =
            each_kind!(&s.kind, k => k.request_statuses()).ok_or_else(|| no_request("input statuses", "ADVANCE"))?;
        // SAFETY: forwarded contract.
        unsafe { copy_out(bytes, buf, buf_len, out_len, "the request's input statuses") }?;
        Ok(tw_result::Ok)
    })
}

/// Copies the serialized state of the current RESTORE request (`data_len` bytes, the
/// engine's own format). Valid until the next poll.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUFFER_TOO_SMALL`;
/// `TW_RESULT_INVALID_STATE` (the current request is not a RESTORE, or there is none);
/// `TW_RESULT_BUSY` (another call on the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// As `tw_session_request_inputs`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_request_state(
    session: *mut tw_session,
    buf: *mut c_void,
    buf_len: usize,
    out_len: *mut usize,
) -> tw_result {
    with_session("tw_session_request_state", session, |s| {
        let bytes = each_kind!(&s.kind, k => k.request_state()).ok_or_else(|| no_request("state", "RESTORE"))?;
        // SAFETY: forwarded contract.
        unsafe { copy_out(bytes, buf.cast(), buf_len, out_len, "the request's state") }?;
        Ok(tw_result::Ok)
    })
}

/// P2P: copies the forensic dump of the last desync (after
/// `TW_SESSION_EVENT_KIND_DESYNC_DUMP_READY`) and releases it, so that a desync with
/// another peer can be dumped (each desynced peer is dumped once, at its first
/// mismatched tick). The format ("TWDS" version 1: the tick, both checksums, the
/// confirmed inputs around the tick and the engine's state at it) is documented in
/// the library's `tickwire_proto::rollback::desync`. On `TW_RESULT_BUFFER_TOO_SMALL` the dump is
/// kept and `*out_len` is its size.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_EMPTY` (no dump ready; nothing written);
/// `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUFFER_TOO_SMALL`; `TW_RESULT_BUSY` (another
/// call on the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// As `tw_session_request_inputs`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_take_desync_dump(
    session: *mut tw_session,
    buf: *mut c_void,
    buf_len: usize,
    out_len: *mut usize,
) -> tw_result {
    with_session("tw_session_take_desync_dump", session, |s| {
        if out_len.is_null() {
            return Err(Failure::null("out_len"));
        }
        let SessionKind::P2p(k) = &mut s.kind else { return Ok(tw_result::Empty) };
        let Some(dump) = k.desync_dump() else { return Ok(tw_result::Empty) };
        // SAFETY: forwarded contract.
        unsafe { copy_out(dump, buf.cast(), buf_len, out_len, "the desync dump") }?;
        k.release_desync_dump();
        Ok(tw_result::Ok)
    })
}

/// P2P: writes the ready desync dump to the file at `path` (UTF-8; created or
/// replaced) and releases it.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_EMPTY` (no dump ready; no file written);
/// `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_IO`; `TW_RESULT_BUSY` (another call on the
/// session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `path` must be NULL or a NUL-terminated
/// string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_write_desync_dump(session: *mut tw_session, path: *const c_char) -> tw_result {
    with_session("tw_session_write_desync_dump", session, |s| {
        // SAFETY: NULL or NUL-terminated per the contract.
        let path = unsafe { arg_str(path, "path") }?;
        let SessionKind::P2p(k) = &mut s.kind else { return Ok(tw_result::Empty) };
        let wrote = k.write_desync_dump(Path::new(path)).map_err(session_failure)?;
        Ok(if wrote { tw_result::Ok } else { tw_result::Empty })
    })
}

/// P2P, before the first tick is simulated: records every input from tick 0 on, as
/// each tick becomes final on every peer. `initial_state` is the engine's serialized
/// state at tick 0 (may be empty, `len` 0, if the game always starts the same way); a
/// REPLAY session hands it back as a RESTORE request. With the replay's 28-byte header
/// it must fit in `TW_MAX_REPLAY_SIZE`; a longer `len` is refused before anything is
/// read or allocated.
///
/// Ownership: the bytes are copied before the call returns.
///
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT`
/// (`len` above `TW_MAX_REPLAY_SIZE` less the header, or memory for the copy could not
/// be had); `TW_RESULT_INVALID_STATE` (not P2P, or ticks already simulated);
/// `TW_RESULT_BUSY` (another call on the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `initial_state` must be NULL or valid for
/// reading `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_start_recording(
    session: *mut tw_session,
    initial_state: *const c_void,
    len: usize,
) -> tw_result {
    with_session("tw_session_start_recording", session, |s| {
        // Before the bytes are touched: a length the caller got wrong is refused, not read.
        if len > MAX_INITIAL_STATE {
            return Err(Failure::invalid(format!(
                "initial_state of {len} bytes: a replay holds at most TW_MAX_REPLAY_SIZE ({TW_MAX_REPLAY_SIZE}) \
                 bytes, its {}-byte header included",
                MAX_REPLAY_SIZE - MAX_INITIAL_STATE
            )));
        }
        // SAFETY: forwarded contract.
        let bytes = unsafe { arg_bytes(initial_state.cast(), len, "initial_state") }?;
        let SessionKind::P2p(k) = &mut s.kind else { return Err(s.kind.unavailable("recording a replay")) };
        k.start_recording(bytes).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// P2P: copies the replay recorded so far (a complete replay file of every tick final
/// on every peer; it grows as the match goes on).
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUFFER_TOO_SMALL`;
/// `TW_RESULT_INVALID_STATE` (no recording, or the session is not running yet);
/// `TW_RESULT_BUSY` (another call on the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// As `tw_session_request_inputs`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_copy_replay(
    session: *mut tw_session,
    buf: *mut c_void,
    buf_len: usize,
    out_len: *mut usize,
) -> tw_result {
    with_session("tw_session_copy_replay", session, |s| {
        let recorded = match &s.kind {
            SessionKind::P2p(k) => k.replay_bytes(),
            _ => None,
        };
        let bytes = recorded.ok_or_else(|| {
            Failure::new(tw_result::InvalidState, "no replay: call tw_session_start_recording before the first tick")
        })?;
        // SAFETY: forwarded contract.
        unsafe { copy_out(bytes, buf.cast(), buf_len, out_len, "the replay") }?;
        Ok(tw_result::Ok)
    })
}

/// P2P: writes the replay recorded so far to the file at `path` (UTF-8; created or
/// replaced). Play it back with a REPLAY session (`tw_session_load_replay_file`, up to
/// `TW_MAX_REPLAY_SIZE` bytes; a longer one with `tw_session_load_replay`).
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_STATE` (no
/// recording, or not running yet); `TW_RESULT_IO`; `TW_RESULT_BUSY` (another call on
/// the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `path` must be NULL or a NUL-terminated
/// string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_save_replay(session: *mut tw_session, path: *const c_char) -> tw_result {
    with_session("tw_session_save_replay", session, |s| {
        // SAFETY: NULL or NUL-terminated per the contract.
        let path = unsafe { arg_str(path, "path") }?;
        let SessionKind::P2p(k) = &s.kind else {
            return Err(Failure::new(
                tw_result::InvalidState,
                "no recording: call start_recording before the first tick",
            ));
        };
        k.save_replay(Path::new(path)).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// Which state of a synctest mismatch `tw_session_take_synctest_state` copies.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_synctest_state {
    /// The state the first simulation of the tick saved.
    Saved = 0,
    /// The state after the rollback and resimulation.
    Resimulated = 1,
}

/// SYNCTEST: copies the state `which` (a `tw_synctest_state`) of the captured mismatch
/// (after `TW_SESSION_EVENT_KIND_SYNCTEST_STATES_READY`) and releases it; once both
/// are taken the next mismatch is captured. The bytes are the engine's own answers to
/// the two DUMP_STATE requests that followed the SYNCTEST_MISMATCH: write both to
/// files and diff them, as GGPO users do with `log_game_state`. On
/// `TW_RESULT_BUFFER_TOO_SMALL` the state is kept and `*out_len` is its size.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_EMPTY` (no state ready, or this one already
/// taken; nothing written); `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT`
/// (`which` unknown); `TW_RESULT_INVALID_STATE` (not SYNCTEST);
/// `TW_RESULT_BUFFER_TOO_SMALL`; `TW_RESULT_BUSY` (another call on the session is in
/// progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// As `tw_session_request_inputs`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_take_synctest_state(
    session: *mut tw_session,
    which: u32,
    buf: *mut c_void,
    buf_len: usize,
    out_len: *mut usize,
) -> tw_result {
    with_session("tw_session_take_synctest_state", session, |s| {
        if out_len.is_null() {
            return Err(Failure::null("out_len"));
        }
        let which = match which {
            w if w == tw_synctest_state::Saved as u32 => SyncTestState::Saved,
            w if w == tw_synctest_state::Resimulated as u32 => SyncTestState::Resimulated,
            w => {
                return Err(Failure::new(
                    tw_result::InvalidArgument,
                    format!("which is {w}: not a tw_synctest_state (SAVED 0, RESIMULATED 1)"),
                ));
            }
        };
        let SessionKind::SyncTest(k) = &mut s.kind else { return Err(s.kind.unavailable("a synctest state")) };
        let Some(state) = k.mismatch_state(which) else { return Ok(tw_result::Empty) };
        // SAFETY: forwarded contract.
        unsafe { copy_out(state, buf.cast(), buf_len, out_len, "the synctest state") }?;
        k.release_mismatch_state(which);
        Ok(tw_result::Ok)
    })
}
