//! The log hook: `tw_session_set_log`, `tw_host_set_log` and the delivery of records
//! to the engine's function, only ever from `tw_session_poll_event` /
//! `tw_host_poll_event`, on the thread that polls.
//!
//! Two sources: the host's bounded queue (`tickwire_runtime::LogQueue`), filled by the
//! network thread (connections, per-second summaries of refused datagrams, faults) and
//! by the notes of `set_log`; and the session events themselves, described as they
//! are polled (desyncs, players, timeouts). Both are formatted into one buffer made
//! when the hook is set, so a frame with nothing to log costs one atomic load and no
//! allocation, and one with records reuses that buffer.

use std::ffi::{c_char, c_void};
use std::fmt::{self, Write};

use super::error::{Failure, FfiResult, tw_result};
use super::host::{tw_host, with_host};
use super::session::{tw_session, with_session};
use super::session_event::{TW_NO_PLAYER, tw_session_event, tw_session_event_kind as K};
use super::session_kind::SessionKind;
use tickwire_runtime::{Bounded, LOG_QUEUE_CAPACITY, LogLevel, LogQueue, MAX_RECORD_LEN};

/// How much a log record matters (`tw_log_fn`'s `level`, the `min_level` of
/// `tw_session_set_log` and `tw_host_set_log`). A log set to a level gets that level
/// and the ones with smaller numbers.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_log_level {
    /// As a `min_level`: no records (the log is off).
    Off = 0,
    /// Something failed: a desync, a synctest mismatch, a lost relay server, a fault
    /// of the network thread.
    Error = 1,
    /// Something went wrong and was handled: datagrams dropped as malformed, forged,
    /// replayed or refused (summarized, at most one record a second), connections
    /// lost or timed out, peers interrupted, kicks, rejected connections, log records
    /// dropped because the queue was full.
    Warn = 2,
    /// The story of a match: connections up and down, synchronization, players
    /// joining and leaving, the notes of `set_log`.
    Info = 3,
    /// Detail: dials, prediction-window stalls, connection progress.
    Debug = 4,
}

/// The engine's log function: one record, `level` a `tw_log_level` (1..=4), `message`
/// UTF-8 text of `len` bytes (at most 255) followed by a NUL.
///
/// Called only from inside `tw_session_poll_event` / `tw_host_poll_event`, on the
/// thread that called it, never from the network thread. `message` is valid only
/// during the call: copy it to keep it. Messages never hold keys, secrets or tokens.
///
/// The function must return normally: no `longjmp`, no C++ exception, no managed
/// exception may leave it (catch them inside). Calls on the same session or host from
/// inside it return `TW_RESULT_BUSY` (it runs inside a call on that object); do not
/// destroy that object from it. Other sessions and hosts may be used.
pub type tw_log_fn = Option<unsafe extern "C" fn(user: *mut c_void, level: u32, message: *const c_char, len: usize)>;

/// A session's or host's hook and the buffer its records are written into.
#[derive(Default)]
pub(crate) struct LogHook {
    callback: tw_log_fn,
    /// The caller's `user` pointer, kept as an integer: the library never reads it.
    user: usize,
    level: Option<LogLevel>,
    /// Made with room for the longest record and its NUL when the hook is set.
    buf: String,
}

impl LogHook {
    fn set(&mut self, callback: tw_log_fn, user: *mut c_void, min_level: u32) -> FfiResult<Option<LogLevel>> {
        if min_level > tw_log_level::Debug as u32 {
            return Err(Failure::invalid(format!(
                "min_level is {min_level}: a tw_log_level, 0 (off) to 4 (TW_LOG_LEVEL_DEBUG)"
            )));
        }
        let level = callback.and(LogLevel::from_u32(min_level));
        *self = match level {
            Some(_) => LogHook { callback, user: user as usize, level, buf: String::with_capacity(MAX_RECORD_LEN + 1) },
            None => LogHook::default(),
        };
        Ok(level)
    }

    fn wants(&self, level: LogLevel) -> bool {
        self.level.is_some_and(|min| level <= min)
    }

    /// Hands `buf` to the function, NUL-terminated (the buffer has room for it).
    fn call(&mut self, level: LogLevel) {
        let Some(f) = self.callback else { return };
        let len = self.buf.len();
        self.buf.push('\0');
        // SAFETY: the caller of set_log promised a function of this signature; the
        // text is valid, NUL-terminated, for the duration of the call.
        unsafe { f(self.user as *mut c_void, level as u32, self.buf.as_ptr().cast(), len) };
        self.buf.clear();
    }

    fn emit(&mut self, level: LogLevel, args: fmt::Arguments<'_>) {
        if !self.wants(level) {
            return;
        }
        self.buf.clear();
        let _ = Bounded(&mut self.buf).write_fmt(args);
        self.call(level);
    }

    /// Delivers what `queue` holds (at most its capacity, so a thread that keeps
    /// queueing cannot hold the engine here), then how many records it had to drop.
    pub(crate) fn drain(&mut self, queue: Option<&LogQueue>) {
        let (Some(q), Some(_)) = (queue, self.level) else { return };
        for _ in 0..LOG_QUEUE_CAPACITY {
            let Some(level) = q.pop_into(&mut self.buf) else { break };
            self.call(level);
        }
        let dropped = q.take_dropped();
        if dropped > 0 {
            self.emit(
                LogLevel::Warn,
                format_args!(
                    "{dropped} log records were dropped: the queue holds {LOG_QUEUE_CAPACITY} between polls; poll \
                     events every frame"
                ),
            );
        }
    }

    /// Logs a polled session event, if it is one a studio wants in its console.
    pub(crate) fn session_event(&mut self, e: &tw_session_event) {
        if self.level.is_none() {
            return;
        }
        if let Some((level, text)) = describe(e) {
            self.emit(level, format_args!("{text}"));
        }
    }
}

/// A disconnect reason's name (`tw_disconnect_reason`).
fn disconnect_name(r: u32) -> &'static str {
    const NAMES: [&str; 19] = [
        "none",
        "closed by the client",
        "closed by the server",
        "timeout",
        "kicked",
        "protocol version mismatch",
        "server full",
        "protocol error",
        "flooding",
        "security mismatch",
        "authentication failed",
        "connect token expired",
        "connect token in use",
        "replaced by a newer connection",
        "removed by the other side's engine",
        "host name gave no usable address",
        "client id in use",
        "refused, unverified (the stated reason may be forged)",
        "no progress",
    ];
    NAMES.get(r as usize).copied().unwrap_or("other")
}

/// What a session event says in the log, and how much it matters (None: not logged;
/// FATAL is logged by the network thread as it happens).
fn describe(e: &tw_session_event) -> Option<(LogLevel, Described<'_>)> {
    use LogLevel::*;
    let level = match e.kind {
        k if k == K::Desync as u32
            || k == K::SynctestMismatch as u32
            || k == K::ServerLost as u32
            || k == K::RemovedByPeers as u32 =>
        {
            Error
        }
        k if k == K::PeerInterrupted as u32
            || k == K::PeerDisconnected as u32
            || k == K::PlayerDisconnected as u32
            || k == K::ProposalRefused as u32
            || k == K::InputsDisagree as u32
            || k == K::RollbackTooFar as u32
            || k == K::SpectatorDropped as u32
            || k == K::ConnectionRejected as u32
            || k == K::PlayerKicked as u32
            || k == K::Reconnecting as u32
            || k == K::Resyncing as u32
            || k == K::NoProgress as u32
            || k == K::InputDelayChanged as u32 =>
        {
            Warn
        }
        k if k == K::PredictionWindowFull as u32 || k == K::SynchronizingWithPeer as u32 => Debug,
        k if k == K::Fatal as u32 || k == K::None as u32 => return None,
        _ => Info,
    };
    Some((level, Described(e)))
}

struct Described<'a>(&'a tw_session_event);

/// A player index, or "-" for `TW_NO_PLAYER` (written without a temporary string).
struct Player(u32);

impl fmt::Display for Player {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == TW_NO_PLAYER { f.write_str("-") } else { write!(f, "{}", self.0) }
    }
}

impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.0;
        let k = e.kind;
        // SAFETY (every union read below): `kind` names the member, as
        // `tw_session_event::new` wrote it.
        if k == K::Desync as u32 {
            let d = unsafe { e.data.desync };
            write!(
                f,
                "desync at tick {}: local checksum {:#018x}, remote {:#018x} (peer {})",
                d.tick, d.local_checksum, d.remote_checksum, e.peer
            )?;
            if d.culprit != 0 {
                write!(f, "; player {} sent different peers different inputs", d.culprit - 1)?;
            }
            return Ok(());
        }
        if k == K::SynctestMismatch as u32 {
            let m = unsafe { e.data.synctest_mismatch };
            return write!(
                f,
                "synctest mismatch at tick {}: checksum {:#018x} first, {:#018x} after the rollback",
                m.tick, m.expected_checksum, m.actual_checksum
            );
        }
        if [K::PeerConnected, K::PeerInterrupted, K::PeerResumed, K::PeerDisconnected, K::SpectatorDropped]
            .iter()
            .any(|&x| x as u32 == k)
        {
            let p = unsafe { e.data.peer };
            let what = match k {
                k if k == K::PeerConnected as u32 => "connected",
                k if k == K::PeerInterrupted as u32 => "interrupted (silent)",
                k if k == K::PeerResumed as u32 => "resumed",
                k if k == K::SpectatorDropped as u32 => "dropped (spectator)",
                _ => "disconnected",
            };
            write!(f, "peer {} (player {}) {what}", e.peer, Player(p.player))?;
            if k == K::PeerDisconnected as u32 {
                write!(f, ": {}", disconnect_name(p.reason))?;
            }
            if k == K::PeerInterrupted as u32 && p.disconnect_in_us != u64::MAX {
                write!(f, "; dropped in {} ms unless heard from", p.disconnect_in_us / 1000)?;
            }
            return Ok(());
        }
        if k == K::PlayerDisconnected as u32 {
            let p = unsafe { e.data.player };
            write!(f, "player {} disconnected from tick {}", p.player, p.tick)?;
            if e.peer != 0 {
                write!(f, " (proposed by peer {})", e.peer)?;
            }
            return Ok(());
        }
        if k == K::RemovedByPeers as u32 {
            let p = unsafe { e.data.player };
            return write!(f, "local player {} removed by the other peers from tick {}", p.player, p.tick);
        }
        if k == K::ProposalRefused as u32 {
            let p = unsafe { e.data.player };
            return write!(
                f,
                "peer {} says player {} disconnected from tick {}; not taken (this side still hears it)",
                e.peer, p.player, p.tick
            );
        }
        if k == K::InputsDisagree as u32 {
            let p = unsafe { e.data.player };
            write!(f, "player {}'s inputs reached the peers differently by tick {}", p.player, p.tick)?;
            if e.peer != 0 {
                write!(f, "; the majority's taken from peer {}", e.peer)?;
            }
            return Ok(());
        }
        if [K::PredictionWindowFull, K::RollbackTooFar, K::DesyncDumpReady, K::Synchronized]
            .iter()
            .any(|&x| x as u32 == k)
        {
            let t = unsafe { e.data.tick }.tick;
            let what = match k {
                k if k == K::PredictionWindowFull as u32 => "prediction window full",
                k if k == K::RollbackTooFar as u32 => "rollback too far (state no longer held)",
                k if k == K::DesyncDumpReady as u32 => "desync dump ready",
                _ => "synchronized",
            };
            return write!(f, "{what} at tick {t}");
        }
        if k == K::ConnectionRejected as u32 {
            let r = unsafe { e.data.rejected }.reason;
            return write!(f, "connection refused (peer {}): tw_reject_reason {r}", e.peer);
        }
        if k == K::SynchronizingWithPeer as u32 || k == K::SynchronizedWithPeer as u32 {
            let p = unsafe { e.data.progress };
            let what = if k == K::SynchronizedWithPeer as u32 { "synchronized with" } else { "synchronizing with" };
            return write!(f, "{what} player {} ({} of {} peers)", p.player, p.synchronized, p.total);
        }
        if k == K::NoProgress as u32 {
            // Its data is the tick member (the relay member was read here before).
            let t = unsafe { e.data.tick }.tick;
            return write!(f, "no progress: the confirmed tick held at {t} by peer {}", e.peer);
        }
        if (K::PlayerJoined as u32..=K::PlayerCatchingUp as u32).contains(&k) {
            let r = unsafe { e.data.relay };
            let what = match k {
                k if k == K::PlayerJoined as u32 => "player joined",
                k if k == K::PlayerReconnected as u32 => "player reconnected",
                k if k == K::PlayerLeft as u32 => "player left",
                k if k == K::PlayerSlotFreed as u32 => "player slot freed",
                k if k == K::PlayerKicked as u32 => "player kicked",
                k if k == K::Joined as u32 => "joined",
                k if k == K::Reconnecting as u32 => "server connection lost, reconnecting",
                k if k == K::Resyncing as u32 => "resyncing",
                k if k == K::ServerLost as u32 => "server lost",
                _ => "player catching up",
            };
            write!(f, "{what}: player {}, tick {}", Player(r.player), r.tick)?;
            if k == K::Reconnecting as u32 || k == K::ServerLost as u32 || k == K::PlayerLeft as u32 && r.reason != 0 {
                write!(f, ", {}", disconnect_name(r.reason))?;
            }
            if k == K::PlayerKicked as u32 {
                write!(f, ", tw_kick_reason {}", r.reason)?;
            }
            return Ok(());
        }
        if k == K::InputDelayChanged as u32 {
            // SAFETY: the member named by the kind.
            let d = unsafe { e.data.input_delay };
            return write!(
                f,
                "input delay now {} ticks ({} of them latency beyond max_prediction; raise it to predict more)",
                d.ticks, d.spill
            );
        }
        if k == K::SynctestStatesReady as u32 {
            // SAFETY: the member named by the kind.
            let t = unsafe { e.data.tick.tick };
            return write!(f, "synctest: the saved and the resimulated state of tick {t} are ready to take");
        }
        write!(f, "session event {k} (peer {})", e.peer)
    }
}

/// Sets (or, with `callback` NULL or `min_level` 0, clears) the session's log
/// function. Records at `min_level` and the more serious levels are passed to
/// `callback` from inside later `tw_session_poll_event` calls, on their thread: the
/// network thread only queues its records (connections up and down with reasons,
/// refused datagrams summarized once a second by reason and source address, its own
/// faults), and the session's events are described as they are polled (desyncs,
/// disconnections, timeouts, players joining and leaving). When on, a note with the
/// mode and address is queued first. Each call to `tw_session_poll_event` delivers
/// what is queued before its event, even when it returns `TW_RESULT_EMPTY`.
///
/// Bounds: the network thread's queue holds 32 records of at most 255 bytes; when it
/// is full new records are dropped and counted, and a WARN record says how many
/// after the queue's records are delivered. A flood of hostile datagrams yields at most
/// one summary a second. With the log off nothing is formatted.
///
/// Ownership: `user` is passed back to `callback` as is, never read or freed by the
/// library; it must stay valid until the log is cleared or the session destroyed.
/// Thread-safety: a session is used from one thread at a time; `callback` runs on the
/// thread that polls. See `tw_log_fn` for what it may do.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT`
/// (`min_level` above `TW_LOG_LEVEL_DEBUG`); `TW_RESULT_BUSY` (another call on the
/// session is in progress, for example from inside its own log function);
/// `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `callback` must be NULL or a function of
/// the `tw_log_fn` signature that stays callable while set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_set_log(
    session: *mut tw_session,
    callback: tw_log_fn,
    user: *mut c_void,
    min_level: u32,
) -> tw_result {
    with_session("tw_session_set_log", session, |s| {
        let level = s.log.set(callback, user, min_level)?;
        let mode = s.kind.name();
        if let Some(net) = s.kind.networked() {
            net.log().set_min_level(level);
            let addr = net.local_addr();
            net.log().push(LogLevel::Info, format_args!("log on: {mode} session bound to {addr}"));
        }
        Ok(tw_result::Ok)
    })
}

/// The log queue of a session's host, if it has one (SYNCTEST and REPLAY have none:
/// their records are their events).
pub(crate) fn session_queue(kind: &mut SessionKind) -> Option<&LogQueue> {
    kind.networked().map(|n| n.log())
}

/// Sets (or, with `callback` NULL or `min_level` 0, clears) the host's log function:
/// like `tw_session_set_log`, with the records of the host's network thread
/// (connections up and down with reasons, dials at DEBUG, refused datagrams
/// summarized once a second, faults), passed to `callback` from inside later
/// `tw_host_poll_event` calls on their thread.
///
/// Ownership: `user` is passed back to `callback` as is, never read or freed by the
/// library; it must stay valid until the log is cleared or the host destroyed.
/// Thread-safety: a host is used from one thread at a time; `callback` runs on the
/// thread that polls. See `tw_log_fn` for what it may do.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT`
/// (`min_level` above `TW_LOG_LEVEL_DEBUG`); `TW_RESULT_BUSY` (another call on the
/// host is in progress, for example from inside its own log function);
/// `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle. `callback` must be NULL or a function of the
/// `tw_log_fn` signature that stays callable while set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_set_log(
    host: *mut tw_host,
    callback: tw_log_fn,
    user: *mut c_void,
    min_level: u32,
) -> tw_result {
    with_host("tw_host_set_log", host, |h| {
        let level = h.log.set(callback, user, min_level)?;
        h.host.log().set_min_level(level);
        let addr = h.host.local_addr();
        h.host.log().push(LogLevel::Info, format_args!("log on: host bound to {addr}"));
        Ok(tw_result::Ok)
    })
}
