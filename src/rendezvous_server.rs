//! `tw_rendezvous`: the rendezvous and relay service of P2P matches behind NATs, in a
//! process of the studio's (a game server, a test, an example), on a thread of its own.
//! `tickwire rendezvous` runs the same service as a program.

use std::ffi::c_char;
use std::mem::size_of;

use super::args::{arg_addr, arg_bytes, copy_address_out, write_out};
use super::error::{Failure, tw_result};
use super::guard;
use tickwire_proto::{KEY_SIZE, RendezvousConfig, Secret};
use tickwire_runtime::RendezvousServer;

/// A rendezvous service (`tw_rendezvous_create`).
pub struct tw_rendezvous {
    guarded: guard::Guarded<RendezvousServer>,
}

impl guard::Handle for tw_rendezvous {
    const ARG: &'static str = "rendezvous";
    const DESTROY: &'static str = "tw_rendezvous_destroy";
    type Inner = RendezvousServer;
    fn guarded(&self) -> &guard::Guarded<RendezvousServer> {
        &self.guarded
    }
}

/// What a rendezvous has done (`tw_rendezvous_get_stats`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct tw_rendezvous_stats {
    /// Matches held now.
    pub matches: u64,
    /// Their members now.
    pub members: u64,
    /// Matches made since the start.
    pub matches_made: u64,
    /// Tickets taken (a member in, refreshed or moved).
    pub hellos: u64,
    /// Datagrams relayed.
    pub relayed_datagrams: u64,
    /// Bytes relayed (the peers' packets, past the relay's header).
    pub relayed_bytes: u64,
    /// Tickets refused (forged, expired, for a taken slot, a closed match).
    pub refused: u64,
    /// Relay datagrams over their match's byte budget, dropped.
    pub over_budget: u64,
    /// Datagrams from addresses that are no member's (relaying without a ticket),
    /// dropped.
    pub strangers: u64,
    /// Datagrams that do not read, replays, datagrams to nobody, tickets over the
    /// opening budget: dropped.
    pub dropped: u64,
}

/// Starts a rendezvous service on `bind_address` (IP and port; port 0 picks one),
/// which must be the address tickets name: they are minted with `key` (`key_size`
/// must be `TW_KEY_SIZE`) for the game's `protocol_id`. Each match may relay
/// `relay_bytes_per_sec` bytes a second (0: 32768) for `match_secs` seconds from its
/// first ticket (0: 7200). The service runs on a thread of its own until destroyed.
///
/// Ownership: on success `*out_rendezvous` is a new handle the caller owns; free it
/// with `tw_rendezvous_destroy`. `key` is copied.
/// Thread-safety: a handle is used from one thread at a time.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT` (an
/// unparsable address, a key that is not 32 bytes or all zero); `TW_RESULT_ADDRESS_IN_USE`;
/// `TW_RESULT_IO` (the socket or the thread could not be made); `TW_RESULT_PANIC`.
///
/// # Safety
/// `bind_address` must be NULL or NUL-terminated; `key` NULL or valid for reading
/// `key_size` bytes; `out_rendezvous` NULL or valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_rendezvous_create(
    bind_address: *const c_char,
    key: *const u8,
    key_size: usize,
    protocol_id: u32,
    relay_bytes_per_sec: u32,
    match_secs: u32,
    out_rendezvous: *mut *mut tw_rendezvous,
) -> tw_result {
    guard::run("tw_rendezvous_create", || {
        if out_rendezvous.is_null() {
            return Err(Failure::null("out_rendezvous"));
        }
        if key.is_null() {
            return Err(Failure::null("key"));
        }
        // SAFETY: NULL or NUL-terminated per the contract.
        let bind = unsafe { arg_addr(bind_address, "bind_address") }?;
        // SAFETY: non-NULL and valid for `key_size` bytes per the contract.
        let key = unsafe { arg_bytes(key, key_size, "key") }?;
        let key: [u8; KEY_SIZE] = key
            .try_into()
            .map_err(|_| Failure::invalid(format!("key_size is {key_size}: a key is TW_KEY_SIZE (32) bytes")))?;
        if key == [0; KEY_SIZE] {
            return Err(Failure::invalid("the key is all zero bytes, which is no secret"));
        }
        let mut cfg = RendezvousConfig::new(Secret(key), protocol_id);
        if relay_bytes_per_sec > 0 {
            cfg.relay_bytes_per_sec = relay_bytes_per_sec;
        }
        if match_secs > 0 {
            cfg.match_lifetime_us = u64::from(match_secs) * 1_000_000;
        }
        let server = RendezvousServer::start(bind, cfg, None).map_err(|e| {
            let code = if e.kind() == std::io::ErrorKind::AddrInUse { tw_result::AddressInUse } else { tw_result::Io };
            Failure::new(code, format!("binding {bind}: {e}"))
        })?;
        let boxed = Box::new(tw_rendezvous { guarded: guard::Guarded::new(server) });
        // SAFETY: checked non-NULL above; the caller guarantees it is writable.
        unsafe { write_out(out_rendezvous, Box::into_raw(boxed)) };
        Ok(tw_result::Ok)
    })
}

/// Stops the service's thread, closes its socket and frees it. NULL is a no-op.
///
/// Ownership: takes the handle; it is invalid afterwards.
/// Thread-safety: no call may be in progress or start on the handle.
///
/// # Safety
/// `rendezvous` must be NULL or a handle from `tw_rendezvous_create` not destroyed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_rendezvous_destroy(rendezvous: *mut tw_rendezvous) {
    // SAFETY: NULL or from Box::into_raw in tw_rendezvous_create, destroyed only once,
    // and no call starts on it after this one (the contract above).
    guard::run_or("tw_rendezvous_destroy", (), || unsafe { guard::destroy("tw_rendezvous_destroy", rendezvous) })
}

/// Writes the service's bound address (with the port picked when 0 was asked) as
/// text into `buf`, as `tw_host_local_address` does.
///
/// Ownership: `buf` and `out_len` are caller memory.
/// Thread-safety: a handle is used from one thread at a time.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUFFER_TOO_SMALL`
/// (`*out_len` says how much is needed); `TW_RESULT_BUSY`; `TW_RESULT_PANIC`.
///
/// # Safety
/// `rendezvous` must be NULL or a live handle; `buf` NULL or valid for writing
/// `buf_len` bytes; `out_len` NULL or valid for writing a `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_rendezvous_local_address(
    rendezvous: *mut tw_rendezvous,
    buf: *mut c_char,
    buf_len: usize,
    out_len: *mut usize,
) -> tw_result {
    guard::with_handle("tw_rendezvous_local_address", rendezvous, |r| {
        // SAFETY: forwarded contract.
        unsafe { copy_address_out(r.local_addr(), buf, buf_len, out_len) }?;
        Ok(tw_result::Ok)
    })
}

/// Copies what the service has done (at most 100 ms old) into `*out_stats`.
///
/// Ownership: `out_stats` is caller memory, written only on success.
/// Thread-safety: a handle is used from one thread at a time.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUSY`; `TW_RESULT_PANIC`.
///
/// # Safety
/// `rendezvous` must be NULL or a live handle; `out_stats` NULL or valid for writing a
/// `tw_rendezvous_stats`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_rendezvous_get_stats(
    rendezvous: *mut tw_rendezvous,
    out_stats: *mut tw_rendezvous_stats,
) -> tw_result {
    guard::with_handle("tw_rendezvous_get_stats", rendezvous, |r| {
        if out_stats.is_null() {
            return Err(Failure::null("out_stats"));
        }
        let s = r.stats();
        let stats = tw_rendezvous_stats {
            matches: s.matches as u64,
            members: s.members as u64,
            matches_made: s.matches_made,
            hellos: s.hellos,
            relayed_datagrams: s.relayed_datagrams,
            relayed_bytes: s.relayed_bytes,
            refused: s.refused,
            over_budget: s.over_budget,
            strangers: s.strangers,
            dropped: s.dropped,
        };
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_stats, stats) };
        Ok(tw_result::Ok)
    })
}

/// Returns `sizeof(tw_rendezvous_stats)` as the library sees it. A binding compares it
/// with its own size of the struct to catch a header from another library version.
///
/// Ownership: takes nothing; returns a plain value.
/// Thread-safety: may be called from any thread.
///
/// Returns the size in bytes; never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_rendezvous_stats_size() -> usize {
    guard::run_or("tw_rendezvous_stats_size", 0, size_of::<tw_rendezvous_stats>)
}
