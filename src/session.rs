//! `tw_session`: the engine-facing session object (P2P, synctest, spectator, replay,
//! relay server and client): creation, setup and destruction. The per-frame calls are in `session_loop`, the
//! byte copies (request data, desync dumps, replays) in `session_data`.
//!
//! Lifecycle: `tw_session_create`, setup (players, spectators, watched host, replay,
//! relay server address, link simulator), `tw_session_start`, then the engine loop
//! every frame, and `tw_session_destroy`.

use std::ffi::{c_char, c_void};
use std::path::Path;

use super::args::{arg_addr, arg_bytes, arg_str, arg_target, check_out_buf, copy_address_out, write_out};
use super::config::{arg_link_sim, check_struct_size, tw_direction, tw_link_sim_config};
use super::error::{Failure, FfiResult, tw_result};
use super::guard;
use super::host::host_failure;
use super::log::LogHook;
use super::session_config::{CFG, tw_session_config};
use super::session_kind::{SessionKind, each_kind};
use tickwire_proto::{ClientSessionError, ConfigProblems, ServerSessionError};
use tickwire_runtime::{EngineLoop, SessionFailure};

/// A session: a rollback or relay core (and, in P2P, SPECTATOR and the RELAY modes, a
/// socket with its network thread). Opaque; created by `tw_session_create`, destroyed
/// by `tw_session_destroy`. Its calls run one at a time (`guard::Guarded`).
pub struct tw_session {
    guarded: guard::Guarded<SessionState>,
}

/// What a `tw_session`'s calls work on.
pub(crate) struct SessionState {
    pub(crate) kind: SessionKind,
    /// The engine's log function (`tw_session_set_log`).
    pub(crate) log: LogHook,
}

/// Maps a session failure to a result code; the message is the failure's text (a
/// core's refused settings are worded as [`c_problems`] words settings).
pub(crate) fn session_failure(e: SessionFailure) -> Failure {
    match e {
        SessionFailure::Host(h) => host_failure(h),
        SessionFailure::Io { .. } => Failure::new(tw_result::Io, e.to_string()),
        SessionFailure::Config(problems) => Failure::invalid(c_problems(&problems, None)),
        // The runtime hands a core's refused settings over as `Config`; these two are
        // the same problems, should a core's error arrive whole.
        SessionFailure::RelayServer(ServerSessionError::Config(problems))
        | SessionFailure::RelayClient(ClientSessionError::Config(problems)) => {
            Failure::invalid(c_problems(&problems, None))
        }
        SessionFailure::Roster(ref r) if r.is_state() => Failure::new(tw_result::InvalidState, e.to_string()),
        SessionFailure::State(_)
        | SessionFailure::RelayServer(ServerSessionError::SlotFree(_))
        | SessionFailure::RelayClient(ClientSessionError::Send(_)) => {
            Failure::new(tw_result::InvalidState, e.to_string())
        }
        SessionFailure::Argument(_)
        | SessionFailure::Roster(_)
        | SessionFailure::Core(_)
        | SessionFailure::Replay(_)
        | SessionFailure::RelayServer(ServerSessionError::UnexpectedTick(_) | ServerSessionError::NoSuchPlayer(_))
        | SessionFailure::RelayClient(
            ClientSessionError::WrongInputSize { .. }
            | ClientSessionError::UnknownPlayer(_)
            | ClientSessionError::UnexpectedTick(_),
        ) => Failure::invalid(e.to_string()),
    }
}

/// A failure of `tw_session_create` from `cfg`: the settings' problems as
/// [`c_problems`] words them, with `cfg`'s values.
pub(crate) fn create_failure(e: SessionFailure, cfg: &tw_session_config) -> Failure {
    match e {
        SessionFailure::Config(problems) => Failure::invalid(c_problems(&problems, Some(cfg))),
        other => session_failure(other),
    }
}

/// `x` with at most 3 decimals and no trailing zeros (the default tick rate is
/// 59.99999999999999 in a double: it reads 60).
fn short_number(x: f64) -> String {
    let t = format!("{x:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `tw_session_config.max_catch_up_ms`'s largest value (the runtime's cap in ms).
const MAX_CATCH_UP_MS: u32 = (tickwire_proto::MAX_MAX_FRAME_US / 1000) as u32;

/// The settings' problems as a C caller set them: each under
/// `tw_session_config.<field>`, the field's name in the header (where the runtime's
/// or a core's differs: `players` is `num_players`, `notify_after_us` is
/// `disconnect_notify_ms`, `max_frame_us` is `max_catch_up_ms`, the relay cores'
/// `relay.send_interval` and `sync.send_interval` are `server_send_interval` and
/// `client_send_interval`, ...), and in the caller's units where the runtime's message
/// would say microseconds.
fn c_problems(problems: &ConfigProblems, cfg: Option<&tw_session_config>) -> String {
    let mut renamed = ConfigProblems::new();
    for p in problems.iter() {
        let (field, message) = match p.field.as_str() {
            "players" => ("num_players", p.message.clone()),
            "notify_after_us" | "disconnect_timeout_us" => (
                "disconnect_notify_ms",
                match cfg {
                    Some(c) => format!(
                        "{} must be below {CFG}.disconnect_timeout_ms ({}), unless either is 0 (off)",
                        c.disconnect_notify_ms, c.disconnect_timeout_ms
                    ),
                    None => format!("must be below {CFG}.disconnect_timeout_ms, unless either is 0 (off)"),
                },
            ),
            "max_frame_us" => (
                "max_catch_up_ms",
                match cfg {
                    Some(c) if (1..=MAX_CATCH_UP_MS).contains(&c.max_catch_up_ms) => format!(
                        "{} is shorter than one tick ({:.3} ms at {CFG}.tick_rate_hz {})",
                        c.max_catch_up_ms,
                        1000.0 / c.tick_rate_hz,
                        short_number(c.tick_rate_hz)
                    ),
                    Some(c) => format!("{} is not in 1..={MAX_CATCH_UP_MS}", c.max_catch_up_ms),
                    None => p.message.clone(),
                },
            ),
            "max_behind" => ("spectator_max_behind", p.message.clone()),
            "catchup_speed" => ("spectator_catchup_speed", p.message.clone()),
            "relay.send_interval" => ("server_send_interval", p.message.clone()),
            "relay.step_window" => ("step_window", p.message.clone()),
            "relay.max_update_datagrams" => ("max_update_datagrams", p.message.clone()),
            "sync.send_interval" => ("client_send_interval", p.message.clone()),
            "max_catchup_ticks" => ("catchup_ticks", p.message.clone()),
            // A core's check of what a C caller does not set (the input history, the
            // relay's sync layer past the fields above), which the C config keeps in
            // range itself: its text names the core's settings, not the caller's.
            f if f == "history" || f == "relay" || f.starts_with("relay.") || f.starts_with("sync.") => {
                renamed.push(
                    CFG,
                    format!("the session's core refused its settings ({f}: {}); please report this", p.message),
                );
                continue;
            }
            other => (other, p.message.clone()),
        };
        renamed.push(format!("{CFG}.{field}"), message);
    }
    renamed.to_string()
}

impl guard::Handle for tw_session {
    const ARG: &'static str = "session";
    const DESTROY: &'static str = "tw_session_destroy";
    type Inner = SessionState;
    fn guarded(&self) -> &guard::Guarded<SessionState> {
        &self.guarded
    }
}

/// Runs the body of a session export (see [`guard::with_handle`]).
pub(crate) fn with_session(
    name: &'static str,
    session: *mut tw_session,
    body: impl FnOnce(&mut SessionState) -> FfiResult<tw_result>,
) -> tw_result {
    guard::with_handle(name, session, body)
}

/// A player index argument, checked against the session.
pub(crate) fn arg_player(s: &SessionState, player: u32) -> FfiResult<usize> {
    let p = player as usize;
    each_kind!(&s.kind, k => k.check_player(p)).map_err(session_failure)?;
    Ok(p)
}

/// Creates a session from `config`. In P2P, SPECTATOR, RELAY_SERVER and RELAY_CLIENT
/// mode this binds the UDP socket (`config->bind_address`) and starts its network
/// thread; SYNCTEST and REPLAY have no socket. Then: add players (P2P), spectators
/// (P2P), the watched host (SPECTATOR), the replay (REPLAY) or the server's address
/// (RELAY_CLIENT), and call `tw_session_start`.
///
/// Ownership: on success `*out_session` receives a new session that the caller owns
/// and must release with `tw_session_destroy`. `config` (and `host.security`) is only
/// read during the call. Nothing is written on failure.
/// Thread-safety: may be called from any thread.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_VERSION_MISMATCH`
/// (`struct_size` or `host.struct_size` unknown); `TW_RESULT_INVALID_ARGUMENT` (a field
/// out of range, an unknown mode, a bad bind address);
/// `TW_RESULT_ADDRESS_IN_USE`; `TW_RESULT_IO`; `TW_RESULT_PANIC`.
///
/// # Safety
/// `config` must be NULL or point to a readable `tw_session_config` (at least its
/// `struct_size` field, which decides how much is read), and its `host.security` must
/// be NULL or point to a readable `tw_security_config`. `out_session` must be NULL
/// or valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_create(
    config: *const tw_session_config,
    out_session: *mut *mut tw_session,
) -> tw_result {
    guard::run("tw_session_create", || {
        if config.is_null() {
            return Err(Failure::null("config"));
        }
        if out_session.is_null() {
            return Err(Failure::null("out_session"));
        }
        // SAFETY: non-NULL; the caller guarantees at least struct_size readable bytes.
        unsafe { check_struct_size(config, "tw_session_config") }?;
        // SAFETY: struct_size equals sizeof(tw_session_config): the whole struct is there.
        let cfg = unsafe { config.read() };
        // SAFETY: the caller guarantees config->host.security is NULL or valid.
        let kind = SessionKind::new(unsafe { cfg.to_runtime() }?, |e| create_failure(e, &cfg))?;
        let boxed =
            Box::new(tw_session { guarded: guard::Guarded::new(SessionState { kind, log: LogHook::default() }) });
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_session, Box::into_raw(boxed)) };
        Ok(tw_result::Ok)
    })
}

/// Destroys a session: closes its connections (peers see a disconnect, best effort),
/// stops the network thread (blocking at most 1 second, as `tw_host_destroy`) and
/// frees everything.
///
/// Ownership: `session` is invalid afterwards. NULL is a no-op. Destroying twice is
/// undefined behaviour.
/// Thread-safety: if another thread is inside a call on `session` at this moment, this
/// returns at once without blocking and that call frees the session (and stops its
/// network thread) as it returns. No call may start on `session` once this has been
/// called, from any thread: that is a use after free.
/// Never fails (returns nothing); a panic inside is caught and recorded as the last
/// error, as is a second destroy while the first is still waiting for a call.
///
/// # Safety
/// `session` must be NULL or a handle from `tw_session_create` not yet destroyed, and
/// no call on it may start after this one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_destroy(session: *mut tw_session) {
    // SAFETY: NULL or from Box::into_raw in tw_session_create, destroyed only once,
    // and no call starts on it after this one (the contract above).
    guard::run_or("tw_session_destroy", (), || unsafe { guard::destroy("tw_session_destroy", session) })
}

/// P2P, before `tw_session_start`: `player` (0-based, below `num_players`) plays on
/// this machine; give its inputs with `tw_session_push_input`.
///
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls); this holds for every `tw_session_*` call taking a session.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT` (no
/// such player, or already added); `TW_RESULT_INVALID_STATE` (not P2P, or started);
/// `TW_RESULT_BUSY` (another call on the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_add_local_player(session: *mut tw_session, player: u32) -> tw_result {
    with_session("tw_session_add_local_player", session, |s| {
        let SessionKind::P2p(p) = &mut s.kind else { return Err(s.kind.unavailable("adding players")) };
        p.add_local_player(player as usize).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// P2P, before `tw_session_start`: `player` plays on the peer at `address` (IP and
/// port as text, e.g. `"192.0.2.7:7000"` or `"[2001:db8::7]:7000"`, or a host name and
/// port, e.g. `"peer.lan:7000"`: the syntax of `tw_host_connect`). Players sharing an
/// address share one connection (for names: the same text). Every peer lists the same
/// players in the same order.
///
/// A host name is looked up on the session's resolver thread from this call on; the
/// call does not wait, nor does `tw_session_start`: that peer is neither dialled nor
/// accepted until its address is known (chosen as `tw_host_connect` says). A name that
/// gives no address ends the session: a `TW_SESSION_EVENT_KIND_FATAL` event whose
/// message names the player and the name.
///
/// Who connects: of two peers, the one whose lowest player index is lower dials; the
/// other accepts the connection whose source address equals `address` (as seen from
/// here). A failed dial is retried until the match runs.
///
/// With a rendezvous (`tw_session_set_rendezvous`), `address` is NULL: the player's
/// peer is met through it (one player per peer), whatever NATs stand between.
///
/// Ownership: `address` is only read during the call.
///
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`address` NULL without a
/// rendezvous); `TW_RESULT_INVALID_ARGUMENT` (no
/// such player, already added, unparsable address, port 0 or an unspecified IP, an
/// address registered as a spectator, an IPv6 address from an IPv4 socket, a player
/// past the 8 a rendezvous introduces);
/// `TW_RESULT_QUEUE_FULL` (`TW_MAX_PENDING_RESOLUTIONS` names being looked up);
/// `TW_RESULT_INVALID_STATE` (not P2P, or started);
/// `TW_RESULT_BUSY` (another call on the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `address` must be NULL or a
/// NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_add_remote_player(
    session: *mut tw_session,
    player: u32,
    address: *const c_char,
) -> tw_result {
    with_session("tw_session_add_remote_player", session, |s| {
        // Met through the rendezvous (`tw_session_set_rendezvous`): no address.
        if address.is_null() {
            if let SessionKind::P2p(p) = &mut s.kind {
                if p.has_rendezvous() {
                    p.add_rendezvous_player(player as usize).map_err(session_failure)?;
                    return Ok(tw_result::Ok);
                }
            }
        }
        // SAFETY: NULL or NUL-terminated per the contract.
        let target = unsafe { arg_target(address, "address") }?;
        let SessionKind::P2p(p) = &mut s.kind else { return Err(s.kind.unavailable("adding players")) };
        p.add_remote_target(player as usize, &target).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// P2P, any time: accept a spectator connecting from `address`, an IP literal with its
/// port (names are not looked up here: it is matched against where the spectator's
/// connection comes from) (at most `max_spectators`). A spectator joining mid-match first receives a state snapshot
/// (the engine is asked for it with a DUMP_STATE request), then the confirmed inputs.
///
/// Ownership: `address` is only read during the call.
///
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT` (bad
/// address, already registered, `max_spectators` reached); `TW_RESULT_INVALID_STATE`
/// (not P2P); `TW_RESULT_BUSY` (another call on the session is in progress);
/// `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `address` must be NULL or a
/// NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_add_spectator(session: *mut tw_session, address: *const c_char) -> tw_result {
    with_session("tw_session_add_spectator", session, |s| {
        // SAFETY: NULL or NUL-terminated per the contract.
        let addr = unsafe { arg_addr(address, "address") }?;
        let SessionKind::P2p(p) = &mut s.kind else { return Err(s.kind.unavailable("serving spectators")) };
        p.add_spectator(addr).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// SPECTATOR, before `tw_session_start`: the P2P peer whose match to watch, at
/// `address` (an IP literal or a host name with its port, as `tw_host_connect`). It
/// must have registered this session's address with `tw_session_add_spectator`. A
/// host name is looked up off the caller's thread; the dial waits for it, and a name
/// that gives no address ends the session (a `TW_SESSION_EVENT_KIND_FATAL` event).
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT` (bad
/// address); `TW_RESULT_QUEUE_FULL` (too many names being looked up);
/// `TW_RESULT_INVALID_STATE` (not SPECTATOR, or started); `TW_RESULT_BUSY`
/// (another call on the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `address` must be NULL or a
/// NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_spectate(session: *mut tw_session, address: *const c_char) -> tw_result {
    with_session("tw_session_spectate", session, |s| {
        // SAFETY: NULL or NUL-terminated per the contract.
        let target = unsafe { arg_target(address, "address") }?;
        let SessionKind::Spectator(p) = &mut s.kind else { return Err(s.kind.unavailable("watching a host")) };
        p.spectate_target(&target).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// RELAY_CLIENT, before `tw_session_start`: the relay server to join, at `address` (IP
/// and port as text, e.g. `"192.0.2.7:7000"`, or a host name and port, e.g.
/// `"relay.example.com:7000"`: the syntax of `tw_host_connect`). `tw_session_start`
/// connects. A host name is looked up on the session's resolver thread from this call
/// on, and neither call waits for it: the client dials once the address is known
/// (chosen as `tw_host_connect` says). A name that gives no address is reported as
/// `TW_SESSION_EVENT_KIND_SERVER_LOST` with reason `TW_DISCONNECT_REASON_RESOLVE_FAILED`
/// (no ticks follow; nothing is retried).
///
/// Ownership: `address` is only read during the call.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT`
/// (unparsable address, port 0, an unspecified IP, an address family the socket cannot
/// reach); `TW_RESULT_QUEUE_FULL` (too many names being looked up);
/// `TW_RESULT_INVALID_STATE` (not RELAY_CLIENT, or started); `TW_RESULT_BUSY`
/// (another call on the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `address` must be NULL or a
/// NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_set_server(session: *mut tw_session, address: *const c_char) -> tw_result {
    with_session("tw_session_set_server", session, |s| {
        // SAFETY: NULL or NUL-terminated per the contract.
        let target = unsafe { arg_target(address, "address") }?;
        let SessionKind::RelayClient(c) = &mut s.kind else {
            return Err(s.kind.unavailable("choosing the relay server"));
        };
        c.set_server_target(&target).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// REPLAY, before `tw_session_start`: the replay to play, as the bytes of a replay
/// file (`tw_session_copy_replay` / `tw_session_save_replay` of a P2P session). Its
/// player count and input size must match the config.
///
/// Ownership: the bytes are copied before the call returns.
///
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT` (not
/// a replay, corrupt, or another shape); `TW_RESULT_INVALID_STATE` (not REPLAY, or
/// started); `TW_RESULT_BUSY` (another call on the session is in progress);
/// `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `data` must be NULL or valid for reading
/// `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_load_replay(
    session: *mut tw_session,
    data: *const c_void,
    len: usize,
) -> tw_result {
    with_session("tw_session_load_replay", session, |s| {
        // SAFETY: forwarded contract.
        let bytes = unsafe { arg_bytes(data.cast(), len, "data") }?;
        let SessionKind::Replay(r) = &mut s.kind else { return Err(s.kind.unavailable("loading a replay")) };
        r.load_replay(bytes).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// REPLAY, before `tw_session_start`: reads the replay file at `path` (UTF-8), as
/// `tw_session_load_replay` with its bytes. The path must name a regular file of at
/// most `TW_MAX_REPLAY_SIZE` bytes; anything else (a FIFO, a directory, a device, a
/// larger file) is refused without reading it, and the call never waits for a writer.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns as `tw_session_load_replay`: `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`;
/// `TW_RESULT_INVALID_ARGUMENT` (not a replay, corrupt, another shape; also a path that
/// is not UTF-8, not a regular file, or larger than `TW_MAX_REPLAY_SIZE`);
/// `TW_RESULT_INVALID_STATE` (not REPLAY, or started); `TW_RESULT_BUSY`;
/// `TW_RESULT_PANIC`; and `TW_RESULT_IO` if the file cannot be opened or read.
///
/// # Safety
/// `session` must be NULL or a live handle. `path` must be NULL or a NUL-terminated
/// string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_load_replay_file(session: *mut tw_session, path: *const c_char) -> tw_result {
    with_session("tw_session_load_replay_file", session, |s| {
        // SAFETY: NULL or NUL-terminated per the contract.
        let path = unsafe { arg_str(path, "path") }?;
        let SessionKind::Replay(r) = &mut s.kind else { return Err(s.kind.unavailable("loading a replay")) };
        r.load_replay_file(Path::new(path)).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// P2P, SPECTATOR and the RELAY modes: turns the link simulator for one direction
/// (`TW_DIRECTION_OUTBOUND` / `TW_DIRECTION_INBOUND`) on with `config`, or off when
/// `config` is NULL, exactly as `tw_host_set_link_sim`. Any time.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`session`);
/// `TW_RESULT_INVALID_ARGUMENT`; `TW_RESULT_VERSION_MISMATCH`;
/// `TW_RESULT_INVALID_STATE` (a mode without a socket); `TW_RESULT_QUEUE_FULL`;
/// `TW_RESULT_NETWORK_THREAD_GONE`; `TW_RESULT_BUSY` (another call on the session is in
/// progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `config` must be NULL or point to a
/// readable `tw_link_sim_config` (at least its `struct_size` field).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_set_link_sim(
    session: *mut tw_session,
    direction: u32,
    config: *const tw_link_sim_config,
) -> tw_result {
    with_session("tw_session_set_link_sim", session, |s| {
        let dir = tw_direction::try_from(direction)?;
        // SAFETY: the caller guarantees NULL or struct_size readable bytes.
        let link = unsafe { arg_link_sim(config) }?;
        let name = s.kind.name();
        let net = s
            .kind
            .networked()
            .ok_or_else(|| Failure::new(tw_result::InvalidState, format!("{name} mode has no socket")))?;
        net.set_link_sim(dir.into(), link).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// Ends setup. P2P: every player must have been added, with at least one local
/// player; the connections are made (the `TW_SESSION_EVENT_KIND_PEER_CONNECTED`
/// events follow) and the match starts once every peer is heard
/// (`TW_SESSION_EVENT_KIND_SYNCHRONIZED`). SPECTATOR: connects to the watched host.
/// SYNCTEST and REPLAY run at once. RELAY_SERVER: starts its clock and accepts
/// clients (PLAYER_JOINED events follow). RELAY_CLIENT: connects to the server
/// (PEER_CONNECTED, JOINED, SYNCHRONIZED follow).
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_STATE`
/// (already started, a player missing, no local player, no watched host, no replay
/// loaded, no server address); `TW_RESULT_BUSY` (another call on the session is in
/// progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_start(session: *mut tw_session) -> tw_result {
    with_session("tw_session_start", session, |s| {
        each_kind!(&mut s.kind, k => k.start()).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// P2P, SPECTATOR and the RELAY modes: copies the address the socket is bound to,
/// NUL-terminated (the real port when bound to port 0). `*out_len` is the text's
/// length with its NUL: on success the bytes written, on `TW_RESULT_BUFFER_TOO_SMALL`
/// the size needed. 64 bytes are always enough.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`out_len`, or `buf` with `buf_len
/// > 0`); `TW_RESULT_BUFFER_TOO_SMALL`; `TW_RESULT_INVALID_STATE` (no socket in this
/// mode); `TW_RESULT_BUSY` (another call on the session is in progress);
/// `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `buf` must be NULL or valid for writing
/// `buf_len` bytes. `out_len` must be NULL or valid for writing a `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_local_address(
    session: *mut tw_session,
    buf: *mut c_char,
    buf_len: usize,
    out_len: *mut usize,
) -> tw_result {
    with_session("tw_session_local_address", session, |s| {
        check_out_buf(buf, buf_len, out_len)?;
        let addr = s.kind.networked().map(|n| n.local_addr()).ok_or_else(|| {
            Failure::new(tw_result::InvalidState, "this mode has no socket (SYNCTEST and REPLAY sessions bind none)")
        })?;
        // SAFETY: forwarded contract.
        unsafe { copy_address_out(addr, buf, buf_len, out_len) }?;
        Ok(tw_result::Ok)
    })
}

/// Sets `*out_slots` to the number of state snapshots the engine must be able to hold:
/// every SAVE, LOAD and DUMP_STATE request names a slot in `0..*out_slots`. Known right
/// after `tw_session_create` (0 for SPECTATOR and REPLAY, which never save), so the
/// engine can allocate its snapshot array once.
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
/// `session` must be NULL or a live handle. `out_slots` must be NULL or valid for
/// writing a `uint32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_state_slots(session: *mut tw_session, out_slots: *mut u32) -> tw_result {
    with_session("tw_session_state_slots", session, |s| {
        if out_slots.is_null() {
            return Err(Failure::null("out_slots"));
        }
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_slots, each_kind!(&s.kind, k => k.state_slots()) as u32) };
        Ok(tw_result::Ok)
    })
}
