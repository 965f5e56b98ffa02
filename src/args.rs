//! Argument checks and output copies shared by the exports: C strings, addresses and
//! byte ranges in; values, byte buffers and text out. Each failure names the argument,
//! and the guard prefixes the function's name.

use std::ffi::{CStr, c_char};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use super::error::{Failure, FfiResult, copy_c_string, tw_result};
use tickwire_proto::PeerId;
use tickwire_runtime::Target;

/// Borrows a NUL-terminated UTF-8 argument.
///
/// # Safety
/// `p` must be NULL or point to a NUL-terminated string that stays valid during the call.
pub(crate) unsafe fn arg_str<'a>(p: *const c_char, arg: &str) -> FfiResult<&'a str> {
    if p.is_null() {
        return Err(Failure::null(arg));
    }
    // SAFETY: non-NULL and NUL-terminated per the caller's contract.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|_| Failure::invalid(format!("{arg} is not valid UTF-8")))
}

/// Parses an `ip:port` argument (no name lookup).
///
/// # Safety
/// As [`arg_str`].
pub(crate) unsafe fn arg_addr(p: *const c_char, arg: &str) -> FfiResult<SocketAddr> {
    // SAFETY: forwarded contract.
    let s = unsafe { arg_str(p, arg) }?;
    tickwire_proto::parse_address(s).map_err(|_| {
        let shown: String = s.chars().take(80).collect();
        let more = if shown.len() < s.len() { "..." } else { "" };
        Failure::invalid(format!(
            "{arg} \"{}{more}\" is not an IP address with a port, like \"127.0.0.1:7777\" or \"[::1]:7777\", nor \
             a remote of an external carrier, like \"remote:76561198000000000\"",
            shown.escape_debug()
        ))
    })
}

/// Parses a remote address argument: an IP literal with its port, or a host name
/// with its port (looked up later, off the caller's thread). Only the syntax is
/// checked here; what the text says (port 0, an unspecified IP) is the caller's.
///
/// # Safety
/// As [`arg_str`].
pub(crate) unsafe fn arg_target(p: *const c_char, arg: &str) -> FfiResult<Target> {
    // SAFETY: forwarded contract.
    let s = unsafe { arg_str(p, arg) }?;
    Target::parse(s).map_err(|why| {
        // Hostile input may be long: quote at most the start of it.
        let shown: String = s.chars().take(80).collect();
        let more = if shown.len() < s.len() { "..." } else { "" };
        Failure::invalid(format!(
            "{arg} \"{}{more}\" {why} (an address is \"127.0.0.1:7777\", \"[::1]:7777\", \"host.name:7777\" or, \
             on an external carrier, \"remote:<id>\")",
            shown.escape_debug()
        ))
    })
}

/// The automatic bind address (a NULL or empty one): `[::]` on port 0 with IPV6_V6ONLY
/// off, so that the socket reaches IPv4 and IPv6 peers alike (`0.0.0.0:0` where the
/// system cannot: `HostConfig::dual_stack`).
pub(crate) const AUTOMATIC_BIND: SocketAddr = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0);

/// Parses a bind address: an IP literal with a port, or NULL / empty for the automatic
/// one (`None`; see [`AUTOMATIC_BIND`]). Names are not looked up for binding.
///
/// # Safety
/// `p` must be NULL or point to a NUL-terminated string that stays valid during the call.
pub(crate) unsafe fn arg_bind(p: *const c_char, arg: &str) -> FfiResult<Option<SocketAddr>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL; forwarded contract.
    if unsafe { *p } == 0 {
        return Ok(None);
    }
    // SAFETY: forwarded contract.
    unsafe { arg_addr(p, arg) }.map(Some)
}

pub(crate) fn check_peer(peer: u32) -> FfiResult<PeerId> {
    if peer == 0 {
        return Err(Failure::invalid("peer 0 is never a valid peer id"));
    }
    Ok(peer)
}

/// Writes an output after the call succeeded.
///
/// # Safety
/// `out` must be non-NULL and valid for writing a `T`.
pub(crate) unsafe fn write_out<T>(out: *mut T, value: T) {
    // SAFETY: per the function contract.
    unsafe { out.write(value) }
}

/// Borrows a caller byte range; `data` may be NULL only when `len` is 0.
///
/// # Safety
/// `data` must be NULL or valid for reading `len` bytes during the call.
pub(crate) unsafe fn arg_bytes<'a>(data: *const u8, len: usize, arg: &str) -> FfiResult<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if data.is_null() {
        return Err(Failure::null(arg));
    }
    if len > isize::MAX as usize {
        return Err(Failure::invalid(format!("{arg} length {len} is too large")));
    }
    // SAFETY: non-NULL and valid for `len` bytes per the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(data, len) })
}

/// Checks the outputs of a copy-out call: `out_len` is required, `buf` may be NULL
/// only when `buf_len` is 0. Calls that must report these before another failure (no
/// data to copy) check them first; the copy helpers check them again.
pub(crate) fn check_out_buf<T>(buf: *mut T, buf_len: usize, out_len: *mut usize) -> FfiResult<()> {
    if out_len.is_null() {
        return Err(Failure::null("out_len"));
    }
    if buf.is_null() && buf_len > 0 {
        return Err(Failure::null("buf"));
    }
    Ok(())
}

/// Copies `bytes` out under the buffer contract of the header: `*out_len` is set to
/// the size on success, and to the size needed on `TW_RESULT_BUFFER_TOO_SMALL` (nothing
/// else is written); `buf` may be NULL when `buf_len` is 0.
///
/// # Safety
/// `buf` must be NULL or valid for writing `buf_len` bytes; `out_len` NULL or writable.
pub(crate) unsafe fn copy_out(
    bytes: &[u8],
    buf: *mut u8,
    buf_len: usize,
    out_len: *mut usize,
    what: &str,
) -> FfiResult<()> {
    check_out_buf(buf, buf_len, out_len)?;
    let n = bytes.len();
    if n > buf_len {
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_len, n) };
        return Err(Failure::new(
            tw_result::BufferTooSmall,
            format!("{what}: {n} bytes, more than buf_len ({buf_len})"),
        ));
    }
    if n > 0 {
        // SAFETY: buf is non-NULL (buf_len >= n > 0) and valid for buf_len bytes; the
        // source is library memory, which cannot overlap a caller buffer.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf, n) };
    }
    // SAFETY: checked non-NULL; the caller guarantees it is writable.
    unsafe { write_out(out_len, n) };
    Ok(())
}

/// An address as the engine is shown it: an IPv4 peer of a dual-stack socket as
/// `"127.0.0.1:7777"` rather than the socket's `"[::ffff:127.0.0.1]:7777"`, so that
/// it reads (and compares) as the address the engine gave, whatever the bind; a
/// remote of an external carrier as `"remote:<id>"`.
pub(crate) fn shown(addr: SocketAddr) -> tickwire_proto::AddressText {
    tickwire_proto::AddressText(folded(addr))
}

fn folded(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), v6.port()),
            None => addr,
        },
        SocketAddr::V4(_) => addr,
    }
}

/// Copies `addr` as NUL-terminated text under the same contract, `*out_len` counting
/// the NUL (64 bytes are always enough).
///
/// # Safety
/// As [`copy_out`].
pub(crate) unsafe fn copy_address_out(
    addr: SocketAddr,
    buf: *mut c_char,
    buf_len: usize,
    out_len: *mut usize,
) -> FfiResult<()> {
    check_out_buf(buf, buf_len, out_len)?;
    let text = shown(addr).to_string();
    let needed = text.len() + 1;
    if needed > buf_len {
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_len, needed) };
        return Err(Failure::new(
            tw_result::BufferTooSmall,
            format!("the address: {needed} bytes with its NUL, more than buf_len ({buf_len})"),
        ));
    }
    // SAFETY: buf is non-NULL (buf_len >= needed > 0) and valid for buf_len bytes.
    unsafe { copy_c_string(text.as_bytes(), buf, buf_len) };
    // SAFETY: checked non-NULL; the caller guarantees it is writable.
    unsafe { write_out(out_len, needed) };
    Ok(())
}
