//! `tw_event`: the fixed-size event that `tw_host_poll_event` copies into caller memory.

use std::ffi::c_char;
use std::mem::size_of;

use super::args::shown;
use super::credential::c_proven;
use super::error::copy_c_string;
use super::guard;
use tickwire_proto::DisconnectReason;
use tickwire_runtime::HostEvent;

/// What happened (`tw_event.kind`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_event_kind {
    /// Never written by the library; a zeroed `tw_event` has this kind.
    None = 0,
    /// A connection is established (either direction): `data.connected`.
    Connected = 1,
    /// A connection ended: `data.disconnected`. The peer id is never reused.
    Disconnected = 2,
    /// A message arrived: `data.message`. Copy its payload with `tw_host_read_message`
    /// before the next `tw_host_poll_event`.
    Message = 3,
    /// The network thread died: `data.fatal`. The host is unusable; destroy it.
    Fatal = 4,
}

/// Why a connection ended (`tw_event.data.disconnected.reason`). Same numbers as the
/// wire protocol; never renumbered.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_disconnect_reason {
    /// The client (the side that initiated the connection) closed it on purpose
    /// (`tw_host_disconnect`, `tw_host_destroy`, `tw_session_destroy`). A relay
    /// server frees that player's slot at once.
    Client = 1,
    /// The server (the side that accepted the connection) closed it or shut down.
    Server = 2,
    /// Nothing was heard from the peer for `timeout_ms`, or the handshake never
    /// completed within `connect_timeout_ms`.
    Timeout = 3,
    /// The server removed this client. A relay client that held a slot reconnects
    /// with its token within its reconnect window (the slot waits for it).
    Kicked = 4,
    /// The two sides speak different protocol versions.
    VersionMismatch = 5,
    /// The server has no free slot (`max_clients`).
    ServerFull = 6,
    /// The peer broke the protocol (for example an oversized reliable message). Also:
    /// `tw_host_connect` to an address this host already has a connection with, and (a
    /// safeguard that should never fire) a connection this host closed because it could
    /// not queue a message `tw_host_send` had accepted.
    ProtocolError = 7,
    /// The peer kept sending far more than its budget (messages or bytes a second,
    /// messages per datagram): it was throttled, then dropped. Seen by the side that
    /// dropped it and, through its disconnect packet, by the peer.
    Flooding = 8,
    /// One end is set to `TW_SECURITY_MODE_INSECURE_PLAINTEXT` and the other is not:
    /// both must choose it. Seen by the connecting side.
    SecurityMismatch = 9,
    /// The handshake did not prove what the other end requires: a wrong or missing
    /// match secret, or a connect token that is forged, made with another key, for
    /// another server address or another game.
    AuthFailed = 10,
    /// The connect token has expired: get a new one from the backend.
    TokenExpired = 11,
    /// The connect token is held by another live connection (one at a time).
    TokenInUse = 12,
    /// A new connection from the same address replaced this one: the peer restarted,
    /// or dialled again after losing this connection (it did not close it; a relay
    /// server keeps the player's slot for the token the new connection brings). Seen by
    /// the accepting side only.
    Replaced = 13,
    /// The engine at the other end removed this side on purpose, for good: a relay
    /// server's engine kicked this client (`tw_session_kick_player`: SERVER_LOST, no
    /// reconnect, its slot is freed), or a P2P peer's engine dropped this peer
    /// (`tw_session_disconnect_player`: PEER_DISCONNECTED, on both sides). Unlike
    /// `KICKED` (the relay's own kick of a client that fell out of step, which keeps
    /// the slot and reconnects), it is final.
    KickedByEngine = 14,
    /// The address was a host name that gave no usable address (no such name, no
    /// DNS, or only addresses of the other family than the bound socket's); nothing
    /// was sent. Final. On a host: the DISCONNECTED of the peer `tw_host_connect`
    /// returned; a relay client: SERVER_LOST. Seen by the dialling side only.
    ResolveFailed = 15,
    /// A relay server refused the connect token: another live connection holds a
    /// token for the same client id (one connection per player at a time, as
    /// netcode). Try again once the other connection has ended.
    ClientIdInUse = 16,
    /// The handshake was refused by a denial that could not be authenticated (it
    /// answered no proof of this side's credential, so anyone on the path could have
    /// forged it: a wrong or missing secret or token, a security-mode or version
    /// mismatch), and went on until `connect_timeout_ms` without being accepted. The
    /// refusal's stated reason is logged as a hint, never reported as fact. A relay
    /// client retries it like a timeout. Seen by the dialling side only.
    DeniedUnverified = 17,
    /// P2P: the peer's inputs held the match's confirmed tick still for
    /// `progress_timeout_ms`, or below half the tick rate for twice that, although it
    /// kept talking (a peer that trickles ticks, or an engine that stopped advancing
    /// without `tw_session_set_loading`): dropped. Sent to the dropped peer too.
    NoProgress = 18,
}

impl From<DisconnectReason> for tw_disconnect_reason {
    fn from(r: DisconnectReason) -> Self {
        match r {
            DisconnectReason::Client => tw_disconnect_reason::Client,
            DisconnectReason::Server => tw_disconnect_reason::Server,
            DisconnectReason::Timeout => tw_disconnect_reason::Timeout,
            DisconnectReason::Kicked => tw_disconnect_reason::Kicked,
            DisconnectReason::VersionMismatch => tw_disconnect_reason::VersionMismatch,
            DisconnectReason::ServerFull => tw_disconnect_reason::ServerFull,
            DisconnectReason::ProtocolError => tw_disconnect_reason::ProtocolError,
            DisconnectReason::Flooding => tw_disconnect_reason::Flooding,
            DisconnectReason::SecurityMismatch => tw_disconnect_reason::SecurityMismatch,
            DisconnectReason::AuthFailed => tw_disconnect_reason::AuthFailed,
            DisconnectReason::TokenExpired => tw_disconnect_reason::TokenExpired,
            DisconnectReason::TokenInUse => tw_disconnect_reason::TokenInUse,
            DisconnectReason::Replaced => tw_disconnect_reason::Replaced,
            DisconnectReason::KickedByEngine => tw_disconnect_reason::KickedByEngine,
            DisconnectReason::ResolveFailed => tw_disconnect_reason::ResolveFailed,
            DisconnectReason::ClientIdInUse => tw_disconnect_reason::ClientIdInUse,
            DisconnectReason::DeniedUnverified => tw_disconnect_reason::DeniedUnverified,
            DisconnectReason::NoProgress => tw_disconnect_reason::NoProgress,
        }
    }
}

/// `TW_EVENT_KIND_CONNECTED`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_event_connected {
    /// The peer's address as NUL-terminated text, for example `"127.0.0.1:40000"` or
    /// `"[::1]:40000"` (an IPv4 peer of a dual-stack socket too is shown as IPv4).
    pub address: [c_char; 64],
    /// A `tw_credential`: what the peer proved in the handshake (a secret's class, a
    /// connect token). Decide who a peer is by this, never by its address.
    pub credential: u32,
    /// Must be ignored.
    pub reserved0: u32,
    /// `TW_CREDENTIAL_CONNECT_TOKEN`: the token's client id (its user data:
    /// `tw_session_player_identity` on a relay server); else 0.
    pub client_id: u64,
}

/// `TW_EVENT_KIND_DISCONNECTED`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_event_disconnected {
    /// One of `tw_disconnect_reason`.
    pub reason: u32,
}

/// `TW_EVENT_KIND_MESSAGE`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_event_message {
    /// The channel it arrived on (`TW_CHANNEL_*`).
    pub channel: u32,
    /// Payload size in bytes; `tw_host_read_message` copies the payload.
    pub size: u32,
}

/// `TW_EVENT_KIND_FATAL`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_event_fatal {
    /// What went wrong, as NUL-terminated text (cut short if longer).
    pub message: [c_char; 120],
}

/// The per-kind part of a `tw_event`. Read only the member named by `kind`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union tw_event_data {
    /// `TW_EVENT_KIND_CONNECTED`.
    pub connected: tw_event_connected,
    /// `TW_EVENT_KIND_DISCONNECTED`.
    pub disconnected: tw_event_disconnected,
    /// `TW_EVENT_KIND_MESSAGE`.
    pub message: tw_event_message,
    /// `TW_EVENT_KIND_FATAL`.
    pub fatal: tw_event_fatal,
    /// Fixes the size and the 8-byte alignment of the union, so that new kinds never
    /// change `sizeof(tw_event)`.
    pub reserved: [u64; 15],
}

/// An event polled with `tw_host_poll_event`. Fixed size (128 bytes), no pointers: it is
/// a plain copy in caller memory.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tw_event {
    /// One of `tw_event_kind`.
    pub kind: u32,
    /// The peer it concerns; 0 for host-wide events (FATAL).
    pub peer: u32,
    /// The member named by `kind`.
    pub data: tw_event_data,
}

impl std::fmt::Debug for tw_event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("tw_event").field("kind", &self.kind).field("peer", &self.peer).finish_non_exhaustive()
    }
}

impl tw_event {
    /// An all-zero event (`TW_EVENT_KIND_NONE`).
    pub fn zeroed() -> Self {
        tw_event { kind: tw_event_kind::None as u32, peer: 0, data: tw_event_data { reserved: [0; 15] } }
    }

    /// The C form of a runtime event. For messages only the size is copied; the host
    /// keeps the payload for `tw_host_read_message`.
    pub(crate) fn from_host_event(ev: &HostEvent) -> Self {
        let mut out = tw_event::zeroed();
        match ev {
            HostEvent::Connected { peer, addr, credential, .. } => {
                let (class, client_id) = c_proven(credential.proven());
                let mut c = tw_event_connected { address: [0; 64], credential: class, reserved0: 0, client_id };
                let text = shown(*addr).to_string();
                // SAFETY: `c.address` is a local array of exactly the length passed.
                unsafe { copy_c_string(text.as_bytes(), c.address.as_mut_ptr(), c.address.len()) };
                out.kind = tw_event_kind::Connected as u32;
                out.peer = *peer;
                out.data.connected = c;
            }
            HostEvent::Disconnected { peer, reason } => {
                out.kind = tw_event_kind::Disconnected as u32;
                out.peer = *peer;
                out.data.disconnected = tw_event_disconnected { reason: tw_disconnect_reason::from(*reason) as u32 };
            }
            HostEvent::Message { peer, channel, data, .. } => {
                out.kind = tw_event_kind::Message as u32;
                out.peer = *peer;
                // Messages are at most max_message_size (<= 1 MiB), so this never saturates.
                let size = u32::try_from(data.len()).unwrap_or(u32::MAX);
                out.data.message = tw_event_message { channel: u32::from(*channel), size };
            }
            HostEvent::Fatal { message } => {
                let mut f = tw_event_fatal { message: [0; 120] };
                // SAFETY: `f.message` is a local array of exactly the length passed.
                unsafe { copy_c_string(message.as_bytes(), f.message.as_mut_ptr(), f.message.len()) };
                out.kind = tw_event_kind::Fatal as u32;
                out.peer = 0;
                out.data.fatal = f;
            }
        }
        out
    }
}

/// Returns `sizeof(tw_event)` as the library sees it (128). A binding compares it with
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
pub unsafe extern "C" fn tw_event_size() -> usize {
    guard::run_or("tw_event_size", 0, size_of::<tw_event>)
}
