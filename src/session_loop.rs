//! The per-frame `tw_session_*` calls: the engine loop of DESIGN.md, tuning and
//! statistics.
//!
//! ```c
//! uint32_t n; tw_session_ticks_due(s, &n);
//! while (n--) {
//!     tw_session_push_input(s, me, &input, sizeof input);
//!     tw_session_advance(s);                    /* OK or a positive status */
//!     tw_request r;
//!     while (tw_session_poll_request(s, &r) == TW_RESULT_OK) { /* run it */ }
//! }
//! tw_session_event e; while (tw_session_poll_event(s, &e) == TW_RESULT_OK) { /* react */ }
//! ```

use std::ffi::c_void;

use super::args::{arg_bytes, check_peer, write_out};
use super::error::{Failure, FfiResult, tw_result};
use super::log::session_queue;
use super::request::tw_request;
use super::session::{SessionState, arg_player, session_failure, tw_session, with_session};
use super::session_event::tw_session_event;
use super::session_kind::{SessionKind, each_kind};
use super::session_stats::{tw_relay_player_stats, tw_session_stats};
use super::stats::tw_peer_stats;
use tickwire_proto::{AdvanceStatus, MAX_INPUT_DELAY};
use tickwire_runtime::EngineLoop;

/// An input's `len` against the session's `input_size`, by the names the caller used.
fn check_input_len(s: &SessionState, len: usize) -> FfiResult<()> {
    let size = each_kind!(&s.kind, k => k.game().input_size);
    if len != size {
        return Err(Failure::invalid(format!("len is {len}: an input is tw_session_config.input_size ({size}) bytes")));
    }
    Ok(())
}

/// `tw_session_push_input`'s `player` on a RELAY_CLIENT: this client's own player,
/// whichever slot the server gives it (the slot is not known before JOINED, but the
/// inputs go to the server from the first due tick on).
pub const TW_LOCAL_PLAYER: u32 = 0xFFFF_FFFE;

/// Pumps the network (received messages, connections, the core's outgoing messages,
/// a flush) and sets `*out_ticks` to the number of ticks to simulate now: P2P's and a
/// relay client's tick clocks are dilated by their time sync, the relay server's is the
/// steady master clock, the other modes tick at `tick_rate_hz`. Call it once per
/// engine frame, also while nothing is due (it keeps the session's messages flowing),
/// then advance that many times.
///
/// The catch-up cap: the ticks due cover the time since the previous call, but at most
/// `tw_session_config.max_catch_up_ms` of it (default 250 ms: 15 ticks at 60 Hz, up to
/// 10% more while a P2P or relay client's time sync runs fast). After a longer hitch
/// (a load, a breakpoint) the excess is dropped, not simulated: the engine never gets
/// a burst of hundreds of ticks to run in one frame, and a P2P peer or relay client
/// that fell behind is caught up by its time sync instead.
///
/// What it answers, state by state (the same in every mode):
/// - before `tw_session_start`: `TW_RESULT_INVALID_STATE`;
/// - started, not running yet (P2P and SPECTATOR connecting, a RELAY_CLIENT before
///   the server's first update or while it reconnects): `TW_RESULT_OK`, 0 ticks;
/// - running: `TW_RESULT_OK` and the ticks due (REPLAY: also past its end, where
///   `tw_session_advance` answers `TW_RESULT_FINISHED`);
/// - RELAY_CLIENT after SERVER_LOST: `TW_RESULT_OK`, 0 ticks from then on;
/// - after FATAL: `TW_RESULT_NETWORK_THREAD_GONE`.
///
/// Thread-safety: one thread at a time per session.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_STATE` (not
/// started); `TW_RESULT_NETWORK_THREAD_GONE` (after a FATAL event); `TW_RESULT_BUSY`
/// (another call on the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `out_ticks` must be NULL or valid for
/// writing a `uint32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_ticks_due(session: *mut tw_session, out_ticks: *mut u32) -> tw_result {
    with_session("tw_session_ticks_due", session, |s| {
        if out_ticks.is_null() {
            return Err(Failure::null("out_ticks"));
        }
        let n = each_kind!(&mut s.kind, k => k.ticks_due()).map_err(session_failure)?;
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_ticks, n) };
        Ok(tw_result::Ok)
    })
}

/// Gives `player`'s input (`len` must equal `input_size`) for the next
/// `tw_session_advance`. P2P: local players only (a local player without a new input
/// repeats its last one); SYNCTEST: every player; RELAY_CLIENT: this client's own
/// player, as `TW_LOCAL_PLAYER` or the slot JOINED gave (it goes to the server with
/// the next advance; a due tick without a new input repeats the last one).
///
/// Ownership: the bytes are copied before the call returns.
///
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT` (no
/// such player, not local, not this relay client's, wrong length);
/// `TW_RESULT_INVALID_STATE` (SPECTATOR, REPLAY or RELAY_SERVER mode, not started, or
/// not running yet); `TW_RESULT_BUSY` (another call on the session is in progress);
/// `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `input` must be NULL or valid for reading
/// `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_push_input(
    session: *mut tw_session,
    player: u32,
    input: *const c_void,
    len: usize,
) -> tw_result {
    with_session("tw_session_push_input", session, |s| {
        // SAFETY: forwarded contract.
        let bytes = unsafe { arg_bytes(input.cast(), len, "input") }?;
        if matches!(s.kind, SessionKind::P2p(_) | SessionKind::SyncTest(_) | SessionKind::RelayClient(_)) {
            check_input_len(s, len)?;
        }
        if let (TW_LOCAL_PLAYER, SessionKind::RelayClient(c)) = (player, &mut s.kind) {
            c.add_local_input(bytes).map_err(session_failure)?;
            return Ok(tw_result::Ok);
        }
        let p = arg_player(s, player)?;
        match &mut s.kind {
            SessionKind::P2p(k) => k.add_input(p, bytes),
            SessionKind::SyncTest(k) => k.add_input(p, bytes),
            SessionKind::RelayClient(k) => k.add_input(p, bytes),
            other => return Err(other.unavailable("pushing inputs")),
        }
        .map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// Runs one tick: rolls back if a prediction was wrong and simulates the current tick,
/// all as requests to poll with `tw_session_poll_request` (every one, in order, before
/// the next advance).
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// What it answers, state by state; P2P and RELAY_CLIENT answer alike where their
/// states mean the same:
/// - before `tw_session_start`: `TW_RESULT_INVALID_STATE`;
/// - started, not synchronized: `TW_RESULT_NOT_SYNCHRONIZED` (P2P and SPECTATOR still
///   connecting or waiting to hear every peer; a RELAY_CLIENT before its snapshot
///   arrived, while it reconnects, or with no tick due; its input still goes to the
///   server);
/// - running: `TW_RESULT_OK` (requests to run);
/// - P2P and RELAY_CLIENT at the prediction cap: `TW_RESULT_WINDOW_FULL`: the
///   prediction is already `max_prediction` ticks past the confirmed inputs (P2P) or
///   the authoritative state (RELAY_CLIENT) and nothing came to confirm it, so no new
///   tick is simulated: skip the tick, but poll, the requests may hold a rollback.
///   PREDICTION_WINDOW_FULL comes once per stall; `TW_RESULT_OK` again when the inputs
///   (or steps) arrive;
/// - SPECTATOR with nothing received for the next tick: `TW_RESULT_WAITING_FOR_INPUT`;
/// - the session is over: `TW_RESULT_FINISHED`, with no request (REPLAY at its end; a
///   RELAY_CLIENT after SERVER_LOST, whose `tw_session_ticks_due` gives 0 from then on);
/// - after FATAL: `TW_RESULT_NETWORK_THREAD_GONE`.
///
/// The statuses above are not errors. Errors: `TW_RESULT_NULL_ARGUMENT`;
/// `TW_RESULT_INVALID_STATE` (not started, or requests of the previous advance left
/// unpolled); `TW_RESULT_NETWORK_THREAD_GONE`; `TW_RESULT_BUSY` (another call on the
/// session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_advance(session: *mut tw_session) -> tw_result {
    with_session("tw_session_advance", session, |s| {
        Ok(match each_kind!(&mut s.kind, k => k.advance()).map_err(session_failure)? {
            AdvanceStatus::Advanced => tw_result::Ok,
            AdvanceStatus::NotSynchronized => tw_result::NotSynchronized,
            AdvanceStatus::WindowFull => tw_result::WindowFull,
            AdvanceStatus::WaitingForInput => tw_result::WaitingForInput,
            AdvanceStatus::Finished => tw_result::Finished,
        })
    })
}

/// Takes the next request of the last advance and copies it into `*out_request`.
/// Its inputs, statuses or state bytes can be copied with `tw_session_request_inputs`,
/// `tw_session_request_input_status` and `tw_session_request_state` until the next
/// poll or advance. Run each request before polling the next.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_EMPTY` (no more requests; `*out_request`
/// untouched); `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUSY` (another call on the session
/// is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `out_request` must be NULL or valid for
/// writing a `tw_request`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_poll_request(session: *mut tw_session, out_request: *mut tw_request) -> tw_result {
    with_session("tw_session_poll_request", session, |s| {
        if out_request.is_null() {
            return Err(Failure::null("out_request"));
        }
        let Some(r) = each_kind!(&mut s.kind, k => k.poll_request()) else { return Ok(tw_result::Empty) };
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_request, tw_request::from(&r)) };
        Ok(tw_result::Ok)
    })
}

/// Reports the checksum of the state the engine saved for `tick` (the answer to a SAVE
/// request). P2P compares checksums of confirmed ticks with the peers (a tick whose
/// save is never confirmed is not checked); SYNCTEST compares them across rollbacks
/// and needs them in the order of the SAVE requests; a relay server sends some to its
/// clients (every `desync_interval` ticks), which compare them with their own
/// authoritative ones. Any deterministic 64-bit hash of the state works.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT` (no
/// save of `tick` is pending); `TW_RESULT_INVALID_STATE` (SPECTATOR or REPLAY, which
/// never save; not running); `TW_RESULT_BUSY` (another call on the session is in
/// progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_confirm_save(session: *mut tw_session, tick: u32, checksum: u64) -> tw_result {
    with_session("tw_session_confirm_save", session, |s| {
        match &mut s.kind {
            SessionKind::P2p(k) => k.confirm_save(tick, checksum),
            SessionKind::SyncTest(k) => k.confirm_save(tick, checksum),
            SessionKind::RelayServer(k) => k.confirm_save(tick, checksum),
            SessionKind::RelayClient(k) => k.confirm_save(tick, checksum),
            other => {
                return Err(Failure::new(
                    tw_result::InvalidState,
                    format!("{} mode never requests saves", other.name()),
                ));
            }
        }
        .map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// P2P, SYNCTEST, RELAY_SERVER and RELAY_CLIENT: hands over the serialized state of
/// `tick` (the answer to a DUMP_STATE request), in the engine's own format, for a
/// desync dump or a joining spectator (P2P), for the clients joining or resyncing
/// (RELAY_SERVER: it reaches them as a RESTORE request), the two states of a mismatch
/// (SYNCTEST: the saved one, then the resimulated one, at most 256 MiB each), or for
/// another player's snapshot (RELAY_CLIENT, only when its server runs no game code, as
/// `tickwire serve` does: the server checks it against the other clients' states).
///
/// Ownership: the bytes are copied before the call returns.
///
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT` (no
/// dump of `tick` was requested); `TW_RESULT_INVALID_STATE` (a SPECTATOR or a REPLAY, not
/// running); `TW_RESULT_BUSY` (another call on the session is in progress);
/// `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `data` must be NULL or valid for reading
/// `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_provide_state(
    session: *mut tw_session,
    tick: u32,
    data: *const c_void,
    len: usize,
) -> tw_result {
    with_session("tw_session_provide_state", session, |s| {
        // SAFETY: forwarded contract.
        let bytes = unsafe { arg_bytes(data.cast(), len, "data") }?;
        match &mut s.kind {
            SessionKind::P2p(k) => k.provide_state(tick, bytes),
            SessionKind::RelayServer(k) => k.provide_state(tick, bytes),
            SessionKind::RelayClient(k) => k.provide_state(tick, bytes),
            SessionKind::SyncTest(k) => k.provide_state(tick, bytes),
            other => return Err(other.unavailable("providing state")),
        }
        .map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// Takes the next event and copies it into `*out_event`. Drain it every frame until
/// `TW_RESULT_EMPTY`.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_EMPTY` (`*out_event` untouched);
/// `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUSY` (another call on the session is in
/// progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `out_event` must be NULL or valid for
/// writing a `tw_session_event`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_poll_event(
    session: *mut tw_session,
    out_event: *mut tw_session_event,
) -> tw_result {
    with_session("tw_session_poll_event", session, |s| {
        if out_event.is_null() {
            return Err(Failure::null("out_event"));
        }
        s.log.drain(session_queue(&mut s.kind));
        let Some(ev) = each_kind!(&mut s.kind, k => k.poll_event()) else { return Ok(tw_result::Empty) };
        let c = match &s.kind {
            SessionKind::P2p(k) => tw_session_event::new(&ev, |peer| k.player_of(peer), 0),
            SessionKind::RelayServer(k) => tw_session_event::new(&ev, |peer| k.player_of(peer), 0),
            SessionKind::RelayClient(k) => tw_session_event::new(&ev, |_| None, k.server_peer().unwrap_or(0)),
            _ => tw_session_event::new(&ev, |_| None, 0),
        };
        s.log.session_event(&c);
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_event, c) };
        Ok(tw_result::Ok)
    })
}

/// P2P: changes every local player's input delay (0..=32 ticks) from the next tick
/// on; before the session runs it replaces the configured one. A longer delay repeats
/// the last input over the gap, a shorter one drops inputs until the ticks catch up.
/// One local player's own: `tw_session_set_player_input_delay`.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT`
/// (above 32); `TW_RESULT_INVALID_STATE` (not P2P); `TW_RESULT_BUSY` (another call on
/// the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_set_input_delay(session: *mut tw_session, delay: u32) -> tw_result {
    with_session("tw_session_set_input_delay", session, |s| {
        let SessionKind::P2p(k) = &mut s.kind else { return Err(s.kind.unavailable("input delay")) };
        if delay > MAX_INPUT_DELAY {
            return Err(Failure::invalid(format!("delay {delay} is above {MAX_INPUT_DELAY}")));
        }
        k.set_input_delay(delay).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// P2P: changes local `player`'s input delay (0..=32 ticks) from the next tick on, as
/// GGPO's `ggpo_set_frame_delay(session, player, delay)`; the other local players keep
/// theirs (a later `tw_session_set_input_delay` sets all again). Any time after the
/// player is added. The local players' inputs go to the peers together, tick by tick,
/// so a player with a longer delay than another gains nothing on the wire from it; it
/// still sees its input that many ticks later, on every peer alike.
///
/// Ownership: the library keeps no pointer passed here after the call.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT`
/// (no such player, a remote player, or above 32); `TW_RESULT_INVALID_STATE` (not P2P,
/// or the player was not added); `TW_RESULT_BUSY` (another call on the session is in
/// progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_set_player_input_delay(
    session: *mut tw_session,
    player: u32,
    delay: u32,
) -> tw_result {
    with_session("tw_session_set_player_input_delay", session, |s| {
        let SessionKind::P2p(k) = &mut s.kind else { return Err(s.kind.unavailable("input delay")) };
        if delay > MAX_INPUT_DELAY {
            return Err(Failure::invalid(format!("delay {delay} is above {MAX_INPUT_DELAY}")));
        }
        k.set_player_input_delay(player as usize, delay).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// P2P and RELAY_CLIENT: the input to predict for `player` while its real input has
/// not arrived (`len` = `input_size`), for example "neutral stick, no buttons". NULL
/// (with `len` 0) goes back to the configured `prediction` (RELAY_CLIENT: repeating the
/// player's last canonical input). Any time.
///
/// Ownership: the bytes are copied before the call returns.
///
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`session`);
/// `TW_RESULT_INVALID_ARGUMENT` (no such player, wrong length, NULL with `len > 0`);
/// `TW_RESULT_INVALID_STATE` (not P2P or RELAY_CLIENT); `TW_RESULT_BUSY` (another call
/// on the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `input` must be NULL or valid for reading
/// `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_set_prediction(
    session: *mut tw_session,
    player: u32,
    input: *const c_void,
    len: usize,
) -> tw_result {
    with_session("tw_session_set_prediction", session, |s| {
        let bytes = if input.is_null() {
            if len > 0 {
                return Err(Failure::invalid(format!("input is NULL with len {len} (NULL needs len 0)")));
            }
            None
        } else {
            // SAFETY: forwarded contract.
            Some(unsafe { arg_bytes(input.cast(), len, "input") }?)
        };
        let p = arg_player(s, player)?;
        if bytes.is_some() {
            check_input_len(s, len)?;
        }
        match &mut s.kind {
            SessionKind::P2p(k) => k.set_prediction(p, bytes),
            SessionKind::RelayClient(k) => k.set_prediction(p, bytes),
            other => return Err(other.unavailable("prediction")),
        }
        .map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// Copies the session's figures into `*out_stats`. (Named `_get_` because
/// `tw_session_stats` is the struct's name.)
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUSY` (another call on
/// the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `out_stats` must be NULL or valid for
/// writing a `tw_session_stats`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_get_stats(session: *mut tw_session, out_stats: *mut tw_session_stats) -> tw_result {
    with_session("tw_session_get_stats", session, |s| {
        if out_stats.is_null() {
            return Err(Failure::null("out_stats"));
        }
        let st = tw_session_stats::new(&mut s.kind);
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_stats, st) };
        Ok(tw_result::Ok)
    })
}

/// Copies the transport statistics (RTT, loss, bytes, ...) of the connection `peer`
/// (a peer id from an event or `tw_session_player_peer`) into `*out_stats`.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT`
/// (peer 0); `TW_RESULT_UNKNOWN_PEER` (unknown, disconnected, or no socket in this
/// mode); `TW_RESULT_BUSY` (another call on the session is in progress);
/// `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `out_stats` must be NULL or valid for
/// writing a `tw_peer_stats`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_peer_stats(
    session: *mut tw_session,
    peer: u32,
    out_stats: *mut tw_peer_stats,
) -> tw_result {
    with_session("tw_session_peer_stats", session, |s| {
        if out_stats.is_null() {
            return Err(Failure::null("out_stats"));
        }
        let peer = check_peer(peer)?;
        let st = s
            .kind
            .networked()
            .and_then(|n| n.peer_stats(peer))
            .ok_or_else(|| Failure::new(tw_result::UnknownPeer, format!("unknown or disconnected peer {peer}")))?;
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_stats, tw_peer_stats::from(&st)) };
        Ok(tw_result::Ok)
    })
}

/// P2P: sets `*out_peer` to the connection of remote `player` (for
/// `tw_session_peer_stats`), or 0 for a local player. RELAY_SERVER: the connection of
/// a connected player.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT` (no
/// such player); `TW_RESULT_INVALID_STATE` (the player was not added, or its peer has
/// not connected yet; a relay server's slot without a connection; a relay client, whose
/// only connection is the server); `TW_RESULT_BUSY` (another call on the session is in
/// progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `out_peer` must be NULL or valid for
/// writing a `uint32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_player_peer(
    session: *mut tw_session,
    player: u32,
    out_peer: *mut u32,
) -> tw_result {
    with_session("tw_session_player_peer", session, |s| {
        if out_peer.is_null() {
            return Err(Failure::null("out_peer"));
        }
        let p = arg_player(s, player)?;
        let peer = match &s.kind {
            SessionKind::RelayServer(k) => k
                .peer_of(p)
                .ok_or_else(|| Failure::new(tw_result::InvalidState, format!("player {p} has no connection now")))?,
            SessionKind::RelayClient(_) => {
                return Err(Failure::new(
                    tw_result::InvalidState,
                    "a relay client has one connection, to the server: its figures are in tw_session_get_stats",
                ));
            }
            SessionKind::P2p(k) => match k.is_local_player(p) {
                Some(true) => 0,
                Some(false) => k.peer_of(p).ok_or_else(|| {
                    Failure::new(tw_result::InvalidState, format!("player {p}'s peer has not connected yet"))
                })?,
                None => return Err(Failure::new(tw_result::InvalidState, format!("player {p} was not added"))),
            },
            _ => return Err(Failure::new(tw_result::InvalidState, format!("player {p} was not added"))),
        };
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_peer, peer) };
        Ok(tw_result::Ok)
    })
}

/// RELAY_CLIENT: drops the predicted timeline and asks the server for a new snapshot
/// on the same connection, for example after a DESYNC: RESYNCING, then JOINED with a
/// RESTORE request of the server's state, and a catch-up, as when joining.
///
/// Ownership: the library keeps no pointer passed here after the call.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_STATE` (not
/// RELAY_CLIENT, not started, or not joined yet); `TW_RESULT_BUSY` (another call on the
/// session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_request_snapshot(session: *mut tw_session) -> tw_result {
    with_session("tw_session_request_snapshot", session, |s| {
        let SessionKind::RelayClient(k) = &mut s.kind else { return Err(s.kind.unavailable("requesting a snapshot")) };
        k.request_snapshot().map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// RELAY_SERVER: copies the figures of `player` (its jitter buffer's depth and
/// counters, its round trip) into `*out_stats`.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_EMPTY` (the slot has no connected player now;
/// `*out_stats` untouched); `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT` (no
/// such player); `TW_RESULT_INVALID_STATE` (not RELAY_SERVER); `TW_RESULT_BUSY`
/// (another call on the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `out_stats` must be NULL or valid for
/// writing a `tw_relay_player_stats`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_player_stats(
    session: *mut tw_session,
    player: u32,
    out_stats: *mut tw_relay_player_stats,
) -> tw_result {
    with_session("tw_session_player_stats", session, |s| {
        if out_stats.is_null() {
            return Err(Failure::null("out_stats"));
        }
        let SessionKind::RelayServer(k) = &mut s.kind else {
            return Err(s.kind.unavailable("per-player relay statistics"));
        };
        let Some(st) = k.player_stats(player as usize).map_err(session_failure)? else {
            return Ok(tw_result::Empty);
        };
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_stats, tw_relay_player_stats::new(&st)) };
        Ok(tw_result::Ok)
    })
}

/// P2P: drops remote `player` on purpose, like GGPO's `ggpo_disconnect_player`. Its
/// peer (with every player behind it) is dropped and its connection closed:
/// PEER_DISCONNECTED follows here (reason `TW_DISCONNECT_REASON_KICKED_BY_ENGINE`),
/// the peer sees PEER_DISCONNECTED with the same reason, and the match goes on, that
/// player's inputs marked `TW_INPUT_STATUS_DISCONNECTED` from the first tick not
/// received. Final: the peer is not dialled again. Only once the match runs (after
/// SYNCHRONIZED). In a match of three or more peers the others take this side's word
/// only if they lost that peer too or a majority of the live peers drop it (one peer's
/// word is what a liar's would be): have every engine drop it (a kick vote), or this
/// side plays on without the player while the others keep it (DESYNC follows).
///
/// Ownership: the library keeps no pointer passed here after the call.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`session`);
/// `TW_RESULT_INVALID_ARGUMENT` (no such player, or a local player);
/// `TW_RESULT_INVALID_STATE` (not P2P, the match not running yet, or the player's peer
/// already gone); `TW_RESULT_BUSY` (another call on the session is in progress);
/// `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_disconnect_player(session: *mut tw_session, player: u32) -> tw_result {
    with_session("tw_session_disconnect_player", session, |s| {
        let p = arg_player(s, player)?;
        let SessionKind::P2p(k) = &mut s.kind else { return Err(s.kind.unavailable("disconnecting a player")) };
        k.disconnect_player(p).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// RELAY_SERVER: removes `player` on purpose, for good. Its connection is closed and
/// its client sees SERVER_LOST with reason `TW_DISCONNECT_REASON_KICKED_BY_ENGINE`
/// (it does not reconnect); here PLAYER_KICKED (reason `TW_KICK_REASON_ENGINE`,
/// `data.relay.code` = `reason_code`) then PLAYER_SLOT_FREED follow, and the slot is
/// free for the next player at once. A slot waiting for a dropped player (after
/// PLAYER_LEFT) is freed the same way (PLAYER_SLOT_FREED only). `reason_code` is the
/// engine's own, any value; it stays on the server (the wire carries the reason
/// only). Unlike the relay's own kicks (`tw_kick_reason` OVERFLOW, STARVED,
/// RESYNC_FLOOD), which keep the slot for a reconnect.
///
/// Ownership: the library keeps no pointer passed here after the call.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`session`);
/// `TW_RESULT_INVALID_ARGUMENT` (no such player); `TW_RESULT_INVALID_STATE` (not
/// RELAY_SERVER, not started, or the slot is free); `TW_RESULT_BUSY` (another call on
/// the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_kick_player(session: *mut tw_session, player: u32, reason_code: u32) -> tw_result {
    with_session("tw_session_kick_player", session, |s| {
        let p = arg_player(s, player)?;
        let SessionKind::RelayServer(k) = &mut s.kind else { return Err(s.kind.unavailable("kicking a player")) };
        k.kick_player(p, reason_code).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// P2P: changes the silence timeouts from now on, as the `tw_session_config` fields of
/// the same names (GGPO's `ggpo_set_disconnect_timeout` and
/// `ggpo_set_disconnect_notify_start`): a peer silent for `disconnect_timeout_ms` is
/// dropped (the progress watch, `progress_timeout_ms`, is never longer), 0 = never (the transport
/// then never times the connection out either); PEER_INTERRUPTED comes after
/// `disconnect_notify_ms` of silence, 0 = no notice. `disconnect_notify_ms` must be
/// below `disconnect_timeout_ms` unless either is 0, as at create. Any time: before
/// `tw_session_start` it replaces the configured values. A peer already reported
/// interrupted stays so until it is heard again.
///
/// Ownership: the library keeps no pointer passed here after the call.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`session`);
/// `TW_RESULT_INVALID_ARGUMENT` (`disconnect_notify_ms` not below
/// `disconnect_timeout_ms` while both are on); `TW_RESULT_INVALID_STATE` (not P2P);
/// `TW_RESULT_BUSY` (another call on the session is in progress); the host's codes if
/// its network thread is gone; `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_set_timeouts(
    session: *mut tw_session,
    disconnect_timeout_ms: u32,
    disconnect_notify_ms: u32,
) -> tw_result {
    with_session("tw_session_set_timeouts", session, |s| {
        let SessionKind::P2p(k) = &mut s.kind else { return Err(s.kind.unavailable("setting the timeouts")) };
        let (timeout_us, notify_us) = (u64::from(disconnect_timeout_ms) * 1000, u64::from(disconnect_notify_ms) * 1000);
        if !tickwire_proto::p2p_timeouts_fit(notify_us, timeout_us) {
            return Err(Failure::invalid(format!(
                "disconnect_notify_ms ({disconnect_notify_ms}) must be below disconnect_timeout_ms \
                 ({disconnect_timeout_ms}), unless either is 0 (off)"
            )));
        }
        k.set_timeouts(timeout_us, notify_us).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// P2P: announces (`loading` non-zero) or ends (zero) a stall of this side's engine,
/// such as a loading screen mid-match. The peers then do not count this side's
/// held-back inputs as no progress (`tw_session_config.progress_timeout_ms`) until
/// their `loading_grace_ms` for it is spent: that grace is per peer for the whole
/// match, so a stall announced for ever is still dropped once it runs out. The flag
/// goes to the peers with every message, and messages go only from the engine's
/// calls: while loading, keep calling `tw_session_ticks_due` (and
/// `tw_session_poll_event`) each frame without advancing. An engine that makes no
/// calls at all is silent, and dropped after `disconnect_timeout_ms` whatever it
/// announced. Any time; before the match starts it applies from the start.
///
/// Ownership: the library keeps no pointer passed here after the call.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`session`);
/// `TW_RESULT_INVALID_STATE` (not P2P); `TW_RESULT_BUSY` (another call on the session
/// is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_set_loading(session: *mut tw_session, loading: u32) -> tw_result {
    with_session("tw_session_set_loading", session, |s| {
        let SessionKind::P2p(k) = &mut s.kind else { return Err(s.kind.unavailable("announcing loading")) };
        k.set_loading(loading != 0);
        Ok(tw_result::Ok)
    })
}
