//! The session's reliable side channel (chat, settings, loadouts) through the C ABI:
//! `tw_session_send_message`, then `TW_SESSION_EVENT_KIND_MESSAGE` and
//! `tw_session_read_message` on the other side, with the buffer contract of
//! `tw_host_read_message`.

use std::ffi::c_void;
use std::mem::size_of;

use super::args::{arg_bytes, check_out_buf, copy_out, write_out};
use super::error::{Failure, tw_result};
use super::guard;
use super::session::{session_failure, tw_session, with_session};
use super::session_kind::{SessionKind, each_kind};
use tickwire_runtime::{EngineLoop, MessageStats, MessageTarget};

/// The largest session message in bytes (`tw_session_send_message`).
pub const TW_SESSION_MESSAGE_MAX_SIZE: u32 = 16384;

/// `tw_session_send_message`'s `target` for every connected member (P2P: every remote
/// player's peer, once each; RELAY_SERVER: every connected player's client;
/// RELAY_CLIENT: the server, its only one).
pub const TW_SESSION_MESSAGE_TARGET_ALL: u32 = 0xFFFF_FFFF;

/// A message is refused with `TW_RESULT_QUEUE_FULL` while its peer's send queue
/// (every channel: unsent data, unacknowledged reliable messages) would hold more than
/// this many bytes with it.
pub const TW_SESSION_MESSAGE_QUEUE_BYTES: u32 = 65536;

/// Bytes of one member's received messages that may wait for the engine to poll them
/// (each message counted with 64 bytes more); past it that member's further messages
/// are dropped and counted (`tw_session_message_stats.dropped_unread`) until the engine
/// polls.
pub const TW_SESSION_MESSAGE_UNREAD_BYTES: u32 = 131072;

/// Figures of a session's message side channel (`tw_session_get_message_stats`). Fixed
/// size (64 bytes): new figures take space from `reserved`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct tw_session_message_stats {
    /// Messages accepted by `tw_session_send_message` (a message to several
    /// connections counts once per connection).
    pub sent: u64,
    /// Messages received and handed to the engine as MESSAGE events.
    pub received: u64,
    /// Messages dropped on arrival because their sender already had
    /// `TW_SESSION_MESSAGE_UNREAD_BYTES` waiting for the engine to poll.
    pub dropped_unread: u64,
    /// Messages dropped on arrival from a connection that is not a member (a spectator,
    /// a relay client that has not joined, any other connection) or over
    /// `TW_SESSION_MESSAGE_MAX_SIZE` bytes.
    pub dropped_refused: u64,
    /// Zero.
    pub reserved: [u64; 4],
}

impl From<MessageStats> for tw_session_message_stats {
    fn from(s: MessageStats) -> Self {
        tw_session_message_stats {
            sent: s.sent,
            received: s.received,
            dropped_unread: s.dropped_unread,
            dropped_refused: s.dropped_refused,
            reserved: [0; 4],
        }
    }
}

/// Sends `len` bytes from `data` on the session's reliable side channel: chat,
/// settings, a loadout, anything the engine wants to tell the other members outside
/// the inputs. It rides the session's own connections on a reliable channel of its
/// own: delivered once and in order (per sender), and never ahead of or in the way of
/// the inputs (they go first in every datagram, on their own channel). It arrives as
/// `TW_SESSION_EVENT_KIND_MESSAGE`, read with `tw_session_read_message`.
///
/// `target`: P2P, a remote player (its peer gets it once, even if it has several
/// players) or `TW_SESSION_MESSAGE_TARGET_ALL` (every connected remote player's peer);
/// usable once that peer is connected, also before the match runs (lobby settings).
/// RELAY_SERVER: a connected player's client, or `TW_SESSION_MESSAGE_TARGET_ALL`.
/// RELAY_CLIENT: `TW_SESSION_MESSAGE_TARGET_ALL` (the server), once the server has
/// welcomed it (JOINED; again after a reconnect). SPECTATOR, SYNCTEST and REPLAY have
/// no side channel: a spectator's feed is one-way, so that a peer's spectator slots
/// never become a way into the match. Sending to all with nobody connected sends
/// nothing and returns `TW_RESULT_OK`.
///
/// A message is accepted for every target or refused for all (only a full command
/// queue to the network thread, found mid-way through a broadcast, could leave it with
/// some). `len` may be 0.
///
/// Ownership: `data` is copied during the call; the library keeps no pointer to it.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`data` NULL with `len > 0`);
/// `TW_RESULT_INVALID_ARGUMENT` (no such player, a local player, a RELAY_CLIENT target
/// other than ALL); `TW_RESULT_INVALID_STATE` (not started, the player's connection is
/// not up, a relay client not joined, a mode without messages);
/// `TW_RESULT_MESSAGE_TOO_LARGE` (over `TW_SESSION_MESSAGE_MAX_SIZE`);
/// `TW_RESULT_QUEUE_FULL` (a target's send queue would go past
/// `TW_SESSION_MESSAGE_QUEUE_BYTES`, or the command queue is full: nothing was sent,
/// try again on a later frame, once the peer has acknowledged what it was sent);
/// `TW_RESULT_NETWORK_THREAD_GONE`; `TW_RESULT_BUSY` (another call on the session is
/// in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `data` must be NULL or valid for reading
/// `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_send_message(
    session: *mut tw_session,
    target: u32,
    data: *const c_void,
    len: usize,
) -> tw_result {
    with_session("tw_session_send_message", session, |s| {
        // SAFETY: forwarded contract.
        let bytes = unsafe { arg_bytes(data.cast(), len, "data") }?;
        let to = match target {
            TW_SESSION_MESSAGE_TARGET_ALL => MessageTarget::All,
            p => MessageTarget::Player(p as usize),
        };
        let sent = match &mut s.kind {
            SessionKind::P2p(k) => k.send_message(to, bytes),
            SessionKind::RelayServer(k) => k.send_message(to, bytes),
            SessionKind::RelayClient(k) => {
                if to != MessageTarget::All {
                    return Err(Failure::invalid(format!(
                        "target {target}: a relay client's messages go to the server, pass \
                         TW_SESSION_MESSAGE_TARGET_ALL"
                    )));
                }
                k.send_message(bytes)
            }
            k => return Err(k.unavailable("sending a message")),
        };
        sent.map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// Copies the payload of the `TW_SESSION_EVENT_KIND_MESSAGE` event most recently
/// polled into `buf` and sets `*out_len` to its size (`event.data.message.size`).
///
/// The contract of `tw_host_read_message`: a payload can be read once, and after a
/// successful read it is released. If `buf_len` is too small, nothing is copied,
/// `*out_len` is set to the size needed, the payload is kept, and the result is
/// `TW_RESULT_BUFFER_TOO_SMALL`: call again with a larger buffer
/// (`TW_SESSION_MESSAGE_MAX_SIZE` bytes are always enough). The next
/// `tw_session_poll_event` releases an unread payload. `buf` may be NULL when
/// `buf_len` is 0.
///
/// Ownership: `buf` and `out_len` are the caller's; only written during the call.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`out_len` NULL, or `buf` NULL
/// with `buf_len > 0`); `TW_RESULT_BUFFER_TOO_SMALL`; `TW_RESULT_INVALID_STATE` (the
/// last polled event was not a message, or it was already read); `TW_RESULT_BUSY`
/// (another call on the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `buf` must be NULL or valid for writing
/// `buf_len` bytes. `out_len` must be NULL or valid for writing a `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_read_message(
    session: *mut tw_session,
    buf: *mut u8,
    buf_len: usize,
    out_len: *mut usize,
) -> tw_result {
    with_session("tw_session_read_message", session, |s| {
        check_out_buf(buf, buf_len, out_len)?;
        each_kind!(&mut s.kind, k => {
            let Some(payload) = k.message() else {
                return Err(Failure::new(
                    tw_result::InvalidState,
                    "no unread message: the last event polled was not TW_SESSION_EVENT_KIND_MESSAGE, or it was \
                     already read",
                ));
            };
            // SAFETY: forwarded contract.
            unsafe { copy_out(payload, buf, buf_len, out_len, "the message") }?;
            k.release_message();
        });
        Ok(tw_result::Ok)
    })
}

/// Copies the figures of the session's message side channel into `*out_stats` (all
/// zero in the modes without one).
///
/// Ownership: `*out_stats` is caller memory, written on success only.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUSY` (another call on
/// the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `out_stats` must be NULL or valid for
/// writing a `tw_session_message_stats`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_get_message_stats(
    session: *mut tw_session,
    out_stats: *mut tw_session_message_stats,
) -> tw_result {
    with_session("tw_session_get_message_stats", session, |s| {
        if out_stats.is_null() {
            return Err(Failure::null("out_stats"));
        }
        let stats = each_kind!(&s.kind, k => k.message_stats());
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_stats, stats.into()) };
        Ok(tw_result::Ok)
    })
}

/// Returns `sizeof(tw_session_message_stats)` as the library sees it (64). A binding
/// compares it with its own size of the struct to catch a header from another library
/// version.
///
/// Ownership: takes nothing; returns a plain value.
/// Thread-safety: may be called from any thread.
///
/// Returns the size in bytes; never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_message_stats_size() -> usize {
    guard::run_or("tw_session_message_stats_size", 0, size_of::<tw_session_message_stats>)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_constants_are_the_runtime_limits() {
        assert_eq!(TW_SESSION_MESSAGE_MAX_SIZE as usize, tickwire_runtime::MAX_MESSAGE_SIZE);
        assert_eq!(TW_SESSION_MESSAGE_QUEUE_BYTES as usize, tickwire_runtime::MAX_QUEUED_MESSAGE_BYTES);
        assert_eq!(TW_SESSION_MESSAGE_UNREAD_BYTES as usize, tickwire_runtime::MAX_UNREAD_MESSAGE_BYTES);
        assert_eq!(tickwire_runtime::UNREAD_OVERHEAD, 64);
        assert_eq!(size_of::<tw_session_message_stats>(), 64);
    }
}
