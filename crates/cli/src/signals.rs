//! SIGTERM (an orchestrator's stop) and SIGINT (Ctrl-C) as a flag the long-running
//! commands (`rendezvous`, `serve`) poll.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the signal handler.
static STOP: AtomicBool = AtomicBool::new(false);

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::Release);
}

/// Installs the handler for SIGTERM and SIGINT; returns the flag they set.
pub fn catch_stop() -> &'static AtomicBool {
    #[cfg(unix)]
    // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe; the
    // handler is a plain `extern "C" fn` of the signature `signal` expects.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    &STOP
}
