//! Test hooks: exports that break things on purpose (a panic inside the guard, a
//! network thread that dies, a call that stays in progress), so the C, C# and Rust
//! misuse tests can check that no panic crosses the ABI, that a handle used by two
//! threads at once answers `TW_RESULT_BUSY`, and that failures surface as documented.
//!
//! Compiled only with the `test-hooks` cargo feature, which the test run turns on.
//! A default build (what `scripts/install.sh` ships) has none of these symbols, and
//! the header leaves them out (`cbindgen.toml` excludes them): a test declares the
//! prototypes it calls itself.

use super::error::tw_result;
use super::guard;
use super::host::{tw_host, with_host};
use super::session::{tw_session, with_session};

/// FOR TESTS ONLY: panics inside the panic guard, to check that no panic crosses the
/// ABI. With `host` NULL it panics in a plain call; with a host it panics inside that
/// host's call, which leaves the host poisoned: every later call on it except
/// `tw_host_destroy` returns `TW_RESULT_PANIC`.
///
/// Thread-safety: as the other host calls when `host` is not NULL.
///
/// Returns `TW_RESULT_BUSY` (another call on the host is in progress);
/// `TW_RESULT_PANIC`, with a last error starting `"panic: "`.
///
/// # Safety
/// `host` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_debug_panic(host: *mut tw_host) -> tw_result {
    const MSG: &str = "tw_debug_panic was called (test only)";
    if host.is_null() {
        guard::run("tw_debug_panic", || panic!("{MSG}"))
    } else {
        with_host("tw_debug_panic", host, |_| panic!("{MSG}"))
    }
}

/// FOR TESTS ONLY: makes the host's network thread panic, to exercise the failure path:
/// the next polls give a `TW_EVENT_KIND_FATAL` event, and every later call on the host
/// (except `tw_host_destroy`) returns `TW_RESULT_NETWORK_THREAD_GONE`. Does not block.
///
/// Thread-safety: not safe for concurrent use of the same host.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUSY` (another call on
/// the host is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_debug_kill_network_thread(host: *mut tw_host) -> tw_result {
    with_host("tw_debug_kill_network_thread", host, |h| {
        h.host.debug_inject_panic();
        Ok(tw_result::Ok)
    })
}

/// FOR TESTS ONLY: panics inside the session's panic guard, leaving the session
/// poisoned: every later call on it except `tw_session_destroy` returns
/// `TW_RESULT_PANIC`.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_BUSY` (another call on the session is in progress);
/// `TW_RESULT_PANIC` (or `TW_RESULT_NULL_ARGUMENT` for NULL), with a last error
/// starting `"panic: "`.
///
/// # Safety
/// `session` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_debug_session_panic(session: *mut tw_session) -> tw_result {
    with_session("tw_debug_session_panic", session, |_| panic!("tw_debug_session_panic was called (test only)"))
}

/// FOR TESTS ONLY: stays inside a call on `host` for `ms` milliseconds, so that a test
/// can call the same host from another thread (`TW_RESULT_BUSY`) or destroy it while
/// this call is in progress.
///
/// Thread-safety: as the other host calls; a concurrent call on the same host gets
/// `TW_RESULT_BUSY`.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUSY`;
/// `TW_RESULT_PANIC`.
///
/// # Safety
/// `host` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_debug_hold_host(host: *mut tw_host, ms: u32) -> tw_result {
    with_host("tw_debug_hold_host", host, |_| {
        std::thread::sleep(std::time::Duration::from_millis(u64::from(ms)));
        Ok(tw_result::Ok)
    })
}

/// FOR TESTS ONLY: stays inside a call on `session` for `ms` milliseconds, as
/// `tw_debug_hold_host`.
///
/// Thread-safety: as the other session calls; a concurrent call on the same session
/// gets `TW_RESULT_BUSY`.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_BUSY`;
/// `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_debug_hold_session(session: *mut tw_session, ms: u32) -> tw_result {
    with_session("tw_debug_hold_session", session, |_| {
        std::thread::sleep(std::time::Duration::from_millis(u64::from(ms)));
        Ok(tw_result::Ok)
    })
}
