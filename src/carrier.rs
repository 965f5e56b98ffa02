//! The C ABI of an external carrier: the engine moves a host's or a session's
//! datagrams over its platform's networking (Steam, Epic Online Services, WebRTC data
//! channels, a console's sockets). `tw_datagram`, and pushing and pulling them.

use super::args::write_out;
use super::error::{Failure, FfiResult, tw_result};
use super::host::{host_failure, tw_host, with_host};
use super::session::{session_failure, tw_session, with_session};
use tickwire_proto::RemoteId;
use tickwire_runtime::{Incoming, Networked, Outgoing};

/// The largest datagram any host sends, and the size of buffer a pull should offer
/// for one datagram. A host on an external carrier sends none over its
/// `tw_host_config.max_datagram_size`.
pub const TW_MAX_DATAGRAM_SIZE: u32 = 1200;
const _: () = assert!(TW_MAX_DATAGRAM_SIZE as usize == tickwire_proto::wire::MAX_DATAGRAM_SIZE);

/// One datagram between the engine's carrier and a host on it.
///
/// A host is on an external carrier when it is bound to `"remote:<id>"` (its own id
/// on the carrier); its peers are named `"remote:<id>"` too, wherever an address is
/// taken or shown. The id is the engine's choice: a Steam ID, an EOS ProductUserId
/// handle, a WebRTC data channel's index. The library only compares them.
///
/// Push (`tw_host_push_datagrams`): the engine fills `remote` (where it came from),
/// `data` and `len` (its bytes, only read during the call) and `age_us`.
/// Pull (`tw_host_pull_datagrams`): the library fills `remote` (where it goes), `data`
/// (pointing into the buffer the caller gave) and `len`; `age_us` is 0.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_datagram {
    /// The remote's id on the carrier.
    pub remote: u64,
    /// The bytes: `len` of them. NULL only when `len` is 0.
    pub data: *const u8,
    /// The datagram's size in bytes.
    pub len: u32,
    /// Push: how many microseconds before the push it arrived, when the carrier knows
    /// (Steam: now minus `m_usecTimeReceived`); 0 means at the push. The time sync and
    /// round-trip times use the arrival. More than 1 second (a carrier's clock that
    /// disagrees) is taken as 1 second. Pull: 0.
    pub age_us: u32,
}

/// Where a push or pull goes: a bare host or a session's host.
trait Carried {
    fn push(&mut self, items: &mut dyn Iterator<Item = Incoming<'_>>) -> FfiResult<usize>;
    fn pull(&mut self, take: &mut dyn FnMut(Outgoing<'_>) -> bool) -> FfiResult<usize>;
}

impl Carried for tickwire_runtime::Host {
    fn push(&mut self, items: &mut dyn Iterator<Item = Incoming<'_>>) -> FfiResult<usize> {
        self.push_datagrams(items).map_err(host_failure)
    }
    fn pull(&mut self, take: &mut dyn FnMut(Outgoing<'_>) -> bool) -> FfiResult<usize> {
        self.pull_datagrams(take).map_err(host_failure)
    }
}

/// A session's host, on an external carrier.
struct SessionHost<'a>(&'a mut dyn Networked);

impl Carried for SessionHost<'_> {
    fn push(&mut self, items: &mut dyn Iterator<Item = Incoming<'_>>) -> FfiResult<usize> {
        self.0.push_datagrams(items).map_err(session_failure)
    }
    fn pull(&mut self, take: &mut dyn FnMut(Outgoing<'_>) -> bool) -> FfiResult<usize> {
        self.0.pull_datagrams(take).map_err(session_failure)
    }
}

/// The refusal of a push or pull to a host with a UDP socket of its own.
fn not_external(what: &str) -> Failure {
    Failure::new(
        tw_result::InvalidState,
        format!("{what} has a UDP socket: only one bound to \"remote:<id>\" has datagrams to push and pull"),
    )
}

/// Pushes `count` datagrams from `items` into `to`; each one's bytes are checked
/// before any is handed over.
///
/// # Safety
/// `items` must be NULL or valid for reading `count` items, each `data` valid for its
/// `len` bytes.
unsafe fn push(to: &mut impl Carried, items: *const tw_datagram, count: usize, out_taken: *mut usize) -> FfiResult<()> {
    let items: &[tw_datagram] = if count == 0 {
        &[]
    } else if items.is_null() {
        return Err(Failure::null("items"));
    } else if count > isize::MAX as usize / std::mem::size_of::<tw_datagram>() {
        return Err(Failure::invalid(format!("count {count} is too large")));
    } else {
        // SAFETY: non-NULL and valid for `count` items per the caller's contract.
        unsafe { std::slice::from_raw_parts(items, count) }
    };
    for (i, d) in items.iter().enumerate() {
        if d.data.is_null() && d.len > 0 {
            return Err(Failure::null(&format!("items[{i}].data")));
        }
        // Only a 32-bit target can be given more than a slice may hold.
        if d.len as usize > isize::MAX as usize {
            return Err(Failure::invalid(format!("items[{i}].len {} is too large", d.len)));
        }
    }
    let mut incoming = items.iter().map(|d| Incoming {
        remote: RemoteId(d.remote),
        data: if d.len == 0 {
            &[]
        } else {
            // SAFETY: non-NULL and at most isize::MAX (checked above), and valid for
            // `len` bytes per the caller's contract, only read during the call.
            unsafe { std::slice::from_raw_parts(d.data, d.len as usize) }
        },
        age_us: u64::from(d.age_us),
    });
    let taken = to.push(&mut incoming)?;
    if !out_taken.is_null() {
        // SAFETY: non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_taken, taken) };
    }
    Ok(())
}

/// Pulls datagrams from `from` into `out` and `buffer`.
///
/// # Safety
/// `out` valid for writing `max_items` items, `buffer` for `buffer_len` bytes, and
/// `out_count` for a `size_t` (the exports check them for NULL first).
unsafe fn pull(
    from: &mut impl Carried,
    out: *mut tw_datagram,
    max_items: usize,
    buffer: *mut u8,
    buffer_len: usize,
    out_count: *mut usize,
) -> FfiResult<tw_result> {
    if out_count.is_null() {
        return Err(Failure::null("out_count"));
    }
    if out.is_null() && max_items > 0 {
        return Err(Failure::null("items"));
    }
    if buffer.is_null() && buffer_len > 0 {
        return Err(Failure::null("buffer"));
    }
    let (mut n, mut used, mut first_too_big) = (0usize, 0usize, None);
    from.pull(&mut |d: Outgoing<'_>| {
        if n == max_items || d.data.len() > buffer_len - used {
            if n == 0 {
                first_too_big = Some(d.data.len());
            }
            return false;
        }
        // SAFETY: `buffer` is valid for `buffer_len` bytes and `used + len <=
        // buffer_len` (checked above, so it is non-NULL when len > 0); `out` is valid
        // for `max_items` items and `n < max_items`. The source is library memory.
        unsafe {
            let at = buffer.add(used);
            std::ptr::copy_nonoverlapping(d.data.as_ptr(), at, d.data.len());
            out.add(n).write(tw_datagram { remote: d.remote.0, data: at, len: d.data.len() as u32, age_us: 0 });
        }
        used += d.data.len();
        n += 1;
        true
    })?;
    // SAFETY: checked non-NULL; the caller guarantees it is writable.
    unsafe { write_out(out_count, n) };
    match first_too_big {
        Some(len) if max_items > 0 => Err(Failure::new(
            tw_result::BufferTooSmall,
            format!(
                "the next datagram is {len} bytes, more than buffer_len ({buffer_len}); offer TW_MAX_DATAGRAM_SIZE"
            ),
        )),
        _ => Ok(tw_result::Ok),
    }
}

/// Hands the host datagrams its external carrier received: `count` items, each with
/// the remote it came from, its bytes and its age. A host on an external carrier
/// (bound to `"remote:<id>"`) only.
///
/// Batched and without a copy: the bytes go straight to the protocol on this thread
/// when the network thread is not busy with the host; otherwise they are copied into
/// a ring of 256 datagrams that it empties. A datagram over the host's
/// `max_datagram_size`, or one that finds the ring full, is dropped and counted in
/// `tw_host_stats` (as a receive error). A remote never seen is treated like an
/// unknown UDP source: it must complete the handshake (the cookie, then the proof of
/// the secret or token) before anything it sends is read. Junk is dropped and counted
/// as over UDP.
///
/// Call it from the engine's thread each frame, before polling events; then
/// `tw_host_pull_datagrams` after the flush.
///
/// Ownership: `items` and every `data` are only read during the call. `*out_taken`
/// (optional, may be NULL) receives how many were handed over.
/// Thread-safety: one call at a time per host; a call while another is in progress
/// returns `TW_RESULT_BUSY`.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` (`host`, `items` with a `count`,
/// an item's `data` with a `len`); `TW_RESULT_INVALID_ARGUMENT`;
/// `TW_RESULT_INVALID_STATE` (a host with a UDP socket);
/// `TW_RESULT_NETWORK_THREAD_GONE`; `TW_RESULT_BUSY`; `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle. `items` must be NULL or valid for reading
/// `count` items, and each item's `data` NULL or valid for reading `len` bytes.
/// `out_taken` must be NULL or valid for writing a `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_push_datagrams(
    host: *mut tw_host,
    items: *const tw_datagram,
    count: usize,
    out_taken: *mut usize,
) -> tw_result {
    with_host("tw_host_push_datagrams", host, |h| {
        if !h.host.is_external() {
            return Err(not_external("the host"));
        }
        // SAFETY: forwarded contract.
        unsafe { push(&mut h.host, items, count, out_taken) }?;
        Ok(tw_result::Ok)
    })
}

/// Takes the datagrams the host has for its external carrier to send, oldest first:
/// up to `max_items`, their bytes packed into `buffer` one after another, each item's
/// `data` pointing at its own. Stops early at a datagram that does not fit the rest of
/// `buffer`; it stays for the next call. A host on an external carrier only.
///
/// What the network thread sends between calls (resends, keepalives, handshake
/// replies) waits in a ring of 1024 datagrams; past that, new ones are dropped and
/// counted in `tw_host_stats` (as a full socket buffer's). Call it at least once a
/// frame, after `tw_host_flush`, until it returns fewer than `max_items`.
///
/// Ownership: `items` and `buffer` are caller memory; the items' `data` point into
/// `buffer` and are valid as long as it is. `*out_count` receives how many items were
/// written.
/// Thread-safety: one call at a time per host; a call while another is in progress
/// returns `TW_RESULT_BUSY`.
///
/// Returns `TW_RESULT_OK` (also when nothing was waiting: `*out_count` is 0);
/// `TW_RESULT_BUFFER_TOO_SMALL` when the first datagram waiting is larger than
/// `buffer_len` (`*out_count` is 0; offer `TW_MAX_DATAGRAM_SIZE` bytes or more);
/// `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_STATE` (a host with a UDP socket);
/// `TW_RESULT_NETWORK_THREAD_GONE`; `TW_RESULT_BUSY`; `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle. `items` must be NULL or valid for writing
/// `max_items` items, `buffer` NULL or valid for writing `buffer_len` bytes, and
/// `out_count` NULL or valid for writing a `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_host_pull_datagrams(
    host: *mut tw_host,
    items: *mut tw_datagram,
    max_items: usize,
    buffer: *mut u8,
    buffer_len: usize,
    out_count: *mut usize,
) -> tw_result {
    with_host("tw_host_pull_datagrams", host, |h| {
        if !h.host.is_external() {
            return Err(not_external("the host"));
        }
        // SAFETY: forwarded contract.
        unsafe { pull(&mut h.host, items, max_items, buffer, buffer_len, out_count) }
    })
}

/// P2P, SPECTATOR and the RELAY modes on an external carrier (`bind_address`
/// `"remote:<id>"`): exactly `tw_host_push_datagrams` for the session's host.
///
/// Ownership, thread-safety and returns: as `tw_host_push_datagrams`, with
/// `TW_RESULT_INVALID_STATE` also for SYNCTEST and REPLAY (no transport).
///
/// # Safety
/// As `tw_host_push_datagrams`, for a live `session`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_push_datagrams(
    session: *mut tw_session,
    items: *const tw_datagram,
    count: usize,
    out_taken: *mut usize,
) -> tw_result {
    with_session("tw_session_push_datagrams", session, |s| {
        let mut net = carried(s)?;
        // SAFETY: forwarded contract.
        unsafe { push(&mut net, items, count, out_taken) }?;
        Ok(tw_result::Ok)
    })
}

/// P2P, SPECTATOR and the RELAY modes on an external carrier: exactly
/// `tw_host_pull_datagrams` for the session's host. Call it after
/// `tw_session_advance` (which flushes) each frame.
///
/// Ownership, thread-safety and returns: as `tw_host_pull_datagrams`, with
/// `TW_RESULT_INVALID_STATE` also for SYNCTEST and REPLAY (no transport).
///
/// # Safety
/// As `tw_host_pull_datagrams`, for a live `session`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_pull_datagrams(
    session: *mut tw_session,
    items: *mut tw_datagram,
    max_items: usize,
    buffer: *mut u8,
    buffer_len: usize,
    out_count: *mut usize,
) -> tw_result {
    with_session("tw_session_pull_datagrams", session, |s| {
        let mut net = carried(s)?;
        // SAFETY: forwarded contract.
        unsafe { pull(&mut net, items, max_items, buffer, buffer_len, out_count) }
    })
}

/// The session's host, when it is on an external carrier.
fn carried(s: &mut super::session::SessionState) -> FfiResult<SessionHost<'_>> {
    let name = s.kind.name();
    let net = s
        .kind
        .networked()
        .ok_or_else(|| Failure::new(tw_result::InvalidState, format!("{name} mode has no transport")))?;
    if !net.is_external() {
        return Err(not_external("the session"));
    }
    Ok(SessionHost(net))
}
