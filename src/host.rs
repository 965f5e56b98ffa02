//! `tw_host`: one UDP socket, its network thread and its connections.

use std::ffi::c_char;

use super::args::{
    AUTOMATIC_BIND, arg_bind, arg_bytes, arg_target, check_out_buf, check_peer, copy_address_out, copy_out, write_out,
};
use super::config::{arg_link_sim, check_struct_size, tw_direction, tw_host_config, tw_link_sim_config};
use super::error::{Failure, FfiResult, tw_result};
use super::event::tw_event;
use super::guard;
use super::log::LogHook;
use super::stats::{tw_host_stats, tw_peer_stats};
use tickwire_proto::UnreliableAcks;
use tickwire_runtime::{Host, HostError, HostEvent, Target};

/// A host: one UDP socket, the network thread that owns it, and its connections.
/// Opaque; created by `tw_host_create`, destroyed by `tw_host_destroy`. Its calls run
/// one at a time (`guard::Guarded`).
pub struct tw_host {
    guarded: guard::Guarded<HostState>,
}

/// What a `tw_host`'s calls work on.
pub(crate) struct HostState {
    pub(crate) host: Host,
    /// The payload of the MESSAGE event most recently polled, until it is read or the
    /// next event is polled.
    pending: Option<Vec<u8>>,
    /// The engine's log function (`tw_host_set_log`).
    pub(crate) log: LogHook,
}

/// Maps a runtime error to a result code; the message is the error's text.
pub(crate) fn host_failure(e: HostError) -> Failure {
    let code = match &e {
        HostError::Config(_) | HostError::BadChannel(_) => tw_result::InvalidArgument,
        HostError::Io { source, .. } if source.kind() == std::io::ErrorKind::AddrInUse => tw_result::AddressInUse,
        HostError::Io { .. } => tw_result::Io,
        HostError::UnknownPeer(_) => tw_result::UnknownPeer,
        HostError::TooLarge { .. } => tw_result::MessageTooLarge,
        HostError::QueueFull(_) => tw_result::QueueFull,
        HostError::ThreadGone(_) => tw_result::NetworkThreadGone,
    };
    Failure::new(code, e.to_string())
}

impl guard::Handle for tw_host {
    const ARG: &'static str = "host";
    const DESTROY: &'static str = "tw_host_destroy";
    type Inner = HostState;
    fn guarded(&self) -> &guard::Guarded<HostState> {
        &self.guarded
    }
}

/// Runs the body of a host export (see [`guard::with_handle`]).
pub(crate) fn with_host(
    name: &'static str,
    host: *mut tw_host,
    body: impl FnOnce(&mut HostState) -> FfiResult<tw_result>,
) -> tw_result {
    guard::with_handle(name, host, body)
}

/// Creates a host: binds a UDP socket to `bind_address` and starts its network thread.
///
/// `config` comes from `tw_host_config_init_default`, then edited. `bind_address` is
/// an IP address and port as text, for example `"0.0.0.0:7777"` for a server or
/// `"127.0.0.1:0"` / `"[::]:0"` (any free port) for a client; names are not looked up.
/// NULL or `""` is the automatic bind: any free port on a dual-stack IPv6 socket
/// (`[::]` with IPV6_V6ONLY off) that reaches IPv4 and IPv6 peers alike, or on
/// `0.0.0.0` where the system has no IPv6. An explicit address keeps the OS defaults
/// (an explicit `"[::]:port"` is dual-stack on Linux, IPv6-only on Windows).
///
/// Acknowledgements: reliable data is acknowledged within 20 ms. Packets of
/// unreliable or sequenced data alone are acknowledged by whatever the host sends back
/// anyway, or every 16 packets when it sends nothing (a server that only receives
/// inputs answers with 1/16 of a small packet per input); the sender's RTT and loss
/// figures stay exact. (Sessions acknowledge those within 20 ms too: their time sync
/// is measured with it.)
///
/// Ownership: on success `*out_host` receives a new host that the caller owns and must
/// release with `tw_host_destroy`. `config`, its `security` and `bind_address` are only
/// read during the call. Nothing is written on failure.
/// Thread-safety: may be called from any thread.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_VERSION_MISMATCH` if
/// `config->struct_size` is unknown; `TW_RESULT_INVALID_ARGUMENT` for a bad address or
/// config field; `TW_RESULT_ADDRESS_IN_USE`; `TW_RESULT_IO` for other socket errors.
///
/// # Safety
/// `config` must be NULL or point to a readable `tw_host_config` (at least its
/// `struct_size` field, which decides how much is read), and its `security` must be
/// NULL or point to a readable `tw_security_config`. `bind_address` must be NULL (the
/// automatic bind) or a NUL-terminated string. `out_host` must be NULL or valid for
/// writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_create(
    config: *const tw_host_config,
    bind_address: *const c_char,
    out_host: *mut *mut tw_host,
) -> tw_result {
    guard::run("tw_host_create", || {
        if config.is_null() {
            return Err(Failure::null("config"));
        }
        if out_host.is_null() {
            return Err(Failure::null("out_host"));
        }
        // SAFETY: non-NULL; the caller guarantees at least struct_size readable bytes.
        unsafe { check_struct_size(config, "tw_host_config") }?;
        // SAFETY: struct_size equals sizeof(tw_host_config), so the whole struct is there.
        let cfg = unsafe { config.read() };
        // SAFETY: NULL or NUL-terminated per the contract.
        let bind = unsafe { arg_bind(bind_address, "bind_address") }?;
        // SAFETY: the caller guarantees config->security is NULL or a valid
        // tw_security_config (the contract above).
        let mut runtime_cfg = unsafe { cfg.to_runtime(bind.unwrap_or(AUTOMATIC_BIND), "tw_host_config") }?;
        runtime_cfg.dual_stack = bind.is_none();
        // A bare host's unreliable traffic is often one-way (inputs to a server):
        // acknowledged sparsely, it costs the receiver almost nothing to send back.
        runtime_cfg.endpoint.unreliable_acks = UnreliableAcks::Sparse;
        let host = Host::start(runtime_cfg).map_err(host_failure)?;
        let boxed = Box::new(tw_host {
            guarded: guard::Guarded::new(HostState { host, pending: None, log: LogHook::default() }),
        });
        // SAFETY: checked non-NULL above; the caller guarantees it is writable.
        unsafe { write_out(out_host, Box::into_raw(boxed)) };
        Ok(tw_result::Ok)
    })
}

/// Destroys a host: closes its connections (peers see a disconnect, best effort), stops
/// and joins the network thread, closes the socket and frees the host.
///
/// Blocks while the network thread tells its peers goodbye and exits: normally a few
/// milliseconds, never more than 1 second. If the thread has not finished by then it is
/// detached and exits on its own shortly after; the socket closes when it does. The
/// thread never waits on the caller, so this cannot deadlock. A host-name lookup still
/// running (they cannot be cancelled) adds at most 0.2 s; its thread is then detached
/// and exits when the system's resolver returns.
///
/// Ownership: `host` is invalid afterwards. NULL is a no-op. Destroying the same host
/// twice is undefined behaviour.
/// Thread-safety: if another thread is inside a call on `host` at this moment, this
/// returns at once without blocking and that call frees the host (and does the
/// blocking above) as it returns. No call may start on `host` once this has been
/// called, from any thread: that is a use after free.
/// Never fails (returns nothing); a panic inside is caught and recorded as the last
/// error, as is a second destroy while the first is still waiting for a call.
///
/// # Safety
/// `host` must be NULL or a handle from `tw_host_create` not yet destroyed, and no
/// call on it may start after this one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_destroy(host: *mut tw_host) {
    // SAFETY: NULL or from Box::into_raw in tw_host_create, destroyed only once, and no
    // call starts on it after this one (the contract above).
    guard::run_or("tw_host_destroy", (), || unsafe { guard::destroy("tw_host_destroy", host) })
}

/// Starts connecting to a server at `address`: an IP address and port as text
/// (`"127.0.0.1:7777"`, `"[::1]:7777"`: IPv6 in brackets) or a host name and port
/// (`"localhost:7777"`, `"game.example.com:7777"`; at most 253 characters of letters,
/// digits, `-`, `_` and dots, international names in their `xn--` form). The port is
/// required.
///
/// Does not block: a host name is looked up on the host's resolver thread (one per
/// host, started on the first name; at most `TW_MAX_PENDING_RESOLUTIONS` lookups wait
/// at once), then the handshake runs on the network thread. Of a name's addresses the
/// host uses one its socket can reach: an IPv4 socket the first IPv4 address; a
/// dual-stack socket (`[::]`, the automatic bind) the first IPv4 address if the name
/// has one, else the first IPv6 one (a server bound to `0.0.0.0` is reachable only
/// over IPv4); a socket bound to a specific IPv6 address the first IPv6 address.
/// Messages may be sent to the peer at once: they wait for the connection. The result
/// arrives as a `TW_EVENT_KIND_CONNECTED` event for `*out_peer`, or
/// `TW_EVENT_KIND_DISCONNECTED` with reason `TW_DISCONNECT_REASON_TIMEOUT` (or
/// `SERVER_FULL`, ...) if it fails, or `TW_DISCONNECT_REASON_RESOLVE_FAILED` if the
/// name gives no usable address. An IPv6 literal from an IPv4-bound host is refused
/// here (`TW_RESULT_INVALID_ARGUMENT`).
///
/// Ownership: `address` is only read during the call; `*out_peer` (a peer id, never 0)
/// is written on success only.
/// Thread-safety: one call at a time per host; a call while another is in progress
/// returns `TW_RESULT_BUSY`.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT` for
/// an unparsable address (no port, a malformed name or IP), port 0, an unspecified IP
/// (`0.0.0.0`, `::`) or an IPv6 address from an IPv4 socket; `TW_RESULT_QUEUE_FULL`
/// (the network thread's queue, or `TW_MAX_PENDING_RESOLUTIONS` names being looked
/// up); `TW_RESULT_NETWORK_THREAD_GONE`; `TW_RESULT_BUSY` (another
/// call on the host is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle. `address` must be NULL or a NUL-terminated
/// string. `out_peer` must be NULL or valid for writing a `uint32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_connect(host: *mut tw_host, address: *const c_char, out_peer: *mut u32) -> tw_result {
    with_host("tw_host_connect", host, |h| {
        if out_peer.is_null() {
            return Err(Failure::null("out_peer"));
        }
        // SAFETY: NULL or NUL-terminated per the contract.
        let target = unsafe { arg_target(address, "address") }?;
        if target.port() == 0 || matches!(target, Target::Addr(a) if a.ip().is_unspecified()) {
            return Err(Failure::invalid(format!(
                "cannot connect to {target}: need a concrete IP or a host name, and a non-zero port"
            )));
        }
        let peer = h.host.connect_target(&target).map_err(host_failure)?;
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_peer, peer) };
        Ok(tw_result::Ok)
    })
}

/// Queues a message of `len` bytes for `peer` on `channel` (`TW_CHANNEL_*`). It leaves
/// with the next `tw_host_flush` (or the auto-flush, if configured).
///
/// `TW_RESULT_OK` means the message was accepted: it is never dropped for lack of
/// queue space later. A reliable message accepted here arrives, in order, unless the
/// connection ends (a `TW_EVENT_KIND_DISCONNECTED` event says so). Every check happens
/// in this call, which never blocks; a refused message was not queued at all.
///
/// Ownership: the bytes are copied before the call returns. `data` may be NULL when
/// `len` is 0 (an empty message).
/// Thread-safety: one call at a time per host; a call while another is in progress
/// returns `TW_RESULT_BUSY`.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`data` NULL with `len > 0`);
/// `TW_RESULT_INVALID_ARGUMENT` (peer 0, channel not configured);
/// `TW_RESULT_UNKNOWN_PEER`; `TW_RESULT_MESSAGE_TOO_LARGE` (over `max_message_size`, or
/// over `TW_MAX_UNRELIABLE_SIZE` on the unreliable and sequenced channels);
/// `TW_RESULT_QUEUE_FULL` when either queue on the way to the wire is full: the peer's
/// send queue (accepting the message could take it over `send_queue_limit_bytes`; it
/// holds unflushed messages and reliable ones the peer has not acknowledged yet), or
/// the queue of calls to the network thread. The last error says which. Flush, and
/// retry on a later frame: the queue drains as the peer acknowledges;
/// `TW_RESULT_NETWORK_THREAD_GONE`; `TW_RESULT_BUSY` (another call on the host is in
/// progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle. `data` must be NULL or valid for reading
/// `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_send(
    host: *mut tw_host,
    peer: u32,
    channel: u32,
    data: *const u8,
    len: usize,
) -> tw_result {
    with_host("tw_host_send", host, |h| {
        if data.is_null() && len > 0 {
            return Err(Failure::null("data"));
        }
        let peer = check_peer(peer)?;
        let channel =
            u8::try_from(channel).map_err(|_| Failure::invalid(format!("channel {channel} is not configured")))?;
        if len > u32::MAX as usize {
            return Err(Failure::new(tw_result::MessageTooLarge, format!("message of {len} bytes is far too large")));
        }
        // SAFETY: forwarded contract (NULL only with len 0, checked first above).
        let bytes = unsafe { arg_bytes(data, len, "data") }?;
        h.host.send(peer, channel, bytes).map_err(host_failure)?;
        Ok(tw_result::Ok)
    })
}

/// Sends everything queued by `tw_host_send` since the last flush, batched into as few
/// datagrams as possible. Call it once per engine frame, after the sends. Does not block.
/// The datagrams are written to the socket on the calling thread (no hop to the network
/// thread), unless the network thread is in the middle of a turn: then it sends them.
///
/// Thread-safety: one call at a time per host; a call while another is in progress
/// returns `TW_RESULT_BUSY`.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_QUEUE_FULL`;
/// `TW_RESULT_NETWORK_THREAD_GONE`; `TW_RESULT_BUSY` (another call on the host is in
/// progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_flush(host: *mut tw_host) -> tw_result {
    with_host("tw_host_flush", host, |h| {
        h.host.flush().map_err(host_failure)?;
        Ok(tw_result::Ok)
    })
}

/// Closes the connection to `peer`. The peer is told (best effort); a
/// `TW_EVENT_KIND_DISCONNECTED` event for it follows. Does not block.
///
/// Thread-safety: one call at a time per host; a call while another is in progress
/// returns `TW_RESULT_BUSY`.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT`
/// (peer 0); `TW_RESULT_UNKNOWN_PEER`; `TW_RESULT_QUEUE_FULL`;
/// `TW_RESULT_NETWORK_THREAD_GONE`; `TW_RESULT_BUSY` (another call on the host is in
/// progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_disconnect(host: *mut tw_host, peer: u32) -> tw_result {
    with_host("tw_host_disconnect", host, |h| {
        let peer = check_peer(peer)?;
        h.host.disconnect(peer).map_err(host_failure)?;
        Ok(tw_result::Ok)
    })
}

/// Takes the next event, if any, and copies it into `*out_event`. Never blocks. Call it
/// in a loop every frame until it returns `TW_RESULT_EMPTY`. When nothing is waiting,
/// it reads what the socket holds on the calling thread (unless the network thread is
/// in the middle of a turn), so a busy-polling engine gets a datagram without waiting
/// for the network thread to wake.
///
/// For a `TW_EVENT_KIND_MESSAGE` event, copy the payload with `tw_host_read_message`
/// before polling again: the next poll releases an unread payload.
///
/// Ownership: `*out_event` is a plain copy in caller memory, written only when the
/// result is `TW_RESULT_OK`.
/// Thread-safety: one call at a time per host; a call while another is in progress
/// returns `TW_RESULT_BUSY`.
///
/// Returns `TW_RESULT_OK` (an event was written); `TW_RESULT_EMPTY` (no event now,
/// `*out_event` untouched); `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUSY` (another call
/// on the host is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle. `out_event` must be NULL or valid for writing
/// a `tw_event`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_poll_event(host: *mut tw_host, out_event: *mut tw_event) -> tw_result {
    with_host("tw_host_poll_event", host, |h| {
        if out_event.is_null() {
            return Err(Failure::null("out_event"));
        }
        if let Some(old) = h.pending.take() {
            h.host.recycle(old);
        }
        h.log.drain(Some(h.host.log()));
        let Some(ev) = h.host.poll_event() else {
            return Ok(tw_result::Empty);
        };
        let c_event = tw_event::from_host_event(&ev);
        if let HostEvent::Message { data, .. } = ev {
            h.pending = Some(data);
        }
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_event, c_event) };
        Ok(tw_result::Ok)
    })
}

/// Copies the payload of the `TW_EVENT_KIND_MESSAGE` event most recently polled into
/// `buf` and sets `*out_len` to its size (`event.data.message.size`).
///
/// A payload can be read once: after a successful read it is released. If `buf_len` is
/// too small, nothing is copied, `*out_len` is set to the size needed, the payload is
/// kept, and the result is `TW_RESULT_BUFFER_TOO_SMALL`: call again with a larger
/// buffer. `buf` may be NULL when `buf_len` is 0.
///
/// Ownership: `buf` and `out_len` are the caller's; only written during the call.
/// Thread-safety: one call at a time per host; a call while another is in progress
/// returns `TW_RESULT_BUSY`.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`out_len` NULL, or `buf` NULL
/// with `buf_len > 0`); `TW_RESULT_BUFFER_TOO_SMALL`; `TW_RESULT_INVALID_STATE` (the
/// last polled event was not a message, or it was already read); `TW_RESULT_BUSY`
/// (another call on the host is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle. `buf` must be NULL or valid for writing
/// `buf_len` bytes. `out_len` must be NULL or valid for writing a `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_read_message(
    host: *mut tw_host,
    buf: *mut u8,
    buf_len: usize,
    out_len: *mut usize,
) -> tw_result {
    with_host("tw_host_read_message", host, |h| {
        check_out_buf(buf, buf_len, out_len)?;
        let Some(payload) = h.pending.as_ref() else {
            return Err(Failure::new(
                tw_result::InvalidState,
                "no unread message: the last event polled was not TW_EVENT_KIND_MESSAGE, or it was already read",
            ));
        };
        // SAFETY: forwarded contract.
        unsafe { copy_out(payload, buf, buf_len, out_len, "the message") }?;
        if let Some(done) = h.pending.take() {
            h.host.recycle(done);
        }
        Ok(tw_result::Ok)
    })
}

/// Copies the statistics of the connection to `peer` into `*out_stats`.
///
/// Ownership: `*out_stats` is written on success only.
/// Thread-safety: one call at a time per host; a call while another is in progress
/// returns `TW_RESULT_BUSY`.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT`
/// (peer 0); `TW_RESULT_UNKNOWN_PEER`; `TW_RESULT_BUSY` (another call on the host is in
/// progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle. `out_stats` must be NULL or valid for writing
/// a `tw_peer_stats`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_peer_stats(host: *mut tw_host, peer: u32, out_stats: *mut tw_peer_stats) -> tw_result {
    with_host("tw_host_peer_stats", host, |h| {
        if out_stats.is_null() {
            return Err(Failure::null("out_stats"));
        }
        let peer = check_peer(peer)?;
        let stats = h
            .host
            .stats(peer)
            .ok_or_else(|| Failure::new(tw_result::UnknownPeer, format!("unknown or disconnected peer {peer}")))?;
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_stats, tw_peer_stats::from(&stats)) };
        Ok(tw_result::Ok)
    })
}

/// Copies the host-wide statistics into `*out_stats`. (Named `_get_` because
/// `tw_host_stats` is the struct's name.)
///
/// Ownership: `*out_stats` is written on success only.
/// Thread-safety: one call at a time per host; a call while another is in progress
/// returns `TW_RESULT_BUSY`.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUSY` (another call on
/// the host is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle. `out_stats` must be NULL or valid for writing
/// a `tw_host_stats`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_get_stats(host: *mut tw_host, out_stats: *mut tw_host_stats) -> tw_result {
    with_host("tw_host_get_stats", host, |h| {
        if out_stats.is_null() {
            return Err(Failure::null("out_stats"));
        }
        let stats = tw_host_stats::new(&h.host.endpoint_stats(), &h.host.runtime_stats());
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_stats, stats) };
        Ok(tw_result::Ok)
    })
}

/// Turns the link simulator for one direction (`TW_DIRECTION_OUTBOUND` or
/// `TW_DIRECTION_INBOUND`) on with `config`, or off when `config` is NULL. For tests
/// and development: it delays, drops, duplicates and reorders real datagrams.
///
/// Ownership: `config` is only read during the call.
/// Thread-safety: one call at a time per host; a call while another is in progress
/// returns `TW_RESULT_BUSY`.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`host`);
/// `TW_RESULT_INVALID_ARGUMENT` (unknown direction, kind, or a field out of range);
/// `TW_RESULT_VERSION_MISMATCH` (unknown `struct_size`); `TW_RESULT_QUEUE_FULL`;
/// `TW_RESULT_NETWORK_THREAD_GONE`; `TW_RESULT_BUSY` (another call on the host is in
/// progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle. `config` must be NULL or point to a readable
/// `tw_link_sim_config` (at least its `struct_size` field, which decides how much is read).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_set_link_sim(
    host: *mut tw_host,
    direction: u32,
    config: *const tw_link_sim_config,
) -> tw_result {
    with_host("tw_host_set_link_sim", host, |h| {
        let dir = tw_direction::try_from(direction)?;
        // SAFETY: the caller guarantees NULL or struct_size readable bytes.
        let link = unsafe { arg_link_sim(config) }?;
        h.host.set_link_sim(dir.into(), link).map_err(host_failure)?;
        Ok(tw_result::Ok)
    })
}

/// Copies the address the host's socket is bound to, as NUL-terminated text (for
/// example `"127.0.0.1:40123"`: the real port when the host was bound to port 0).
///
/// `*out_len` is set to the length of the text including its NUL: on success the bytes
/// written, on `TW_RESULT_BUFFER_TOO_SMALL` the size needed (nothing else is written).
/// 64 bytes are always enough.
///
/// Ownership: `buf` and `out_len` are the caller's; only written during the call.
/// Thread-safety: one call at a time per host; a call while another is in progress
/// returns `TW_RESULT_BUSY`.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`out_len` NULL, or `buf` NULL
/// with `buf_len > 0`); `TW_RESULT_BUFFER_TOO_SMALL`; `TW_RESULT_BUSY` (another call on
/// the host is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle. `buf` must be NULL or valid for writing
/// `buf_len` bytes. `out_len` must be NULL or valid for writing a `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_local_address(
    host: *mut tw_host,
    buf: *mut c_char,
    buf_len: usize,
    out_len: *mut usize,
) -> tw_result {
    with_host("tw_host_local_address", host, |h| {
        // SAFETY: forwarded contract.
        unsafe { copy_address_out(h.host.local_addr(), buf, buf_len, out_len) }?;
        Ok(tw_result::Ok)
    })
}
