//! The panic boundary. Every export runs its body through [`run`] or [`run_or`], so no
//! panic unwinds into C (which would abort the game since Rust 1.81).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use super::error::{Failure, FfiResult, set_last_error, tw_result};

/// Text of a panic payload (`panic!` with a literal or with a format string).
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(non-string panic payload)"
    }
}

/// Runs the body of the export `name`. A `Failure` is stored as the last error
/// (`"<name>: <reason>"`) and its code returned; a panic is caught, stored as
/// `"panic: <payload> (in <name>)"` and turned into `TW_RESULT_PANIC`.
pub(crate) fn run(name: &'static str, body: impl FnOnce() -> FfiResult<tw_result>) -> tw_result {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(code)) => code,
        Ok(Err(f)) => {
            set_last_error(&format!("{name}: {}", f.message));
            f.code
        }
        Err(payload) => {
            set_last_error(&format!("panic: {} (in {name})", panic_text(payload.as_ref())));
            tw_result::Panic
        }
    }
}

/// A C object that a panic inside one of its calls leaves unusable (poisoned).
pub(crate) trait Handle {
    /// Its name as an argument in errors ("host", "session").
    const ARG: &'static str;
    /// The export that destroys it, named in the poisoned error.
    const DESTROY: &'static str;
    fn poisoned(&mut self) -> &mut bool;
}

/// Runs the body of an export on a handle: [`run`], plus a check of the handle (NULL),
/// a refusal if it is poisoned, and poisoning it if the body panics (the panic itself
/// is reported by `run`).
pub(crate) fn with_handle<H: Handle>(
    name: &'static str,
    handle: *mut H,
    body: impl FnOnce(&mut H) -> FfiResult<tw_result>,
) -> tw_result {
    run(name, || {
        // SAFETY: the caller (an export) guarantees `handle` is NULL or a live handle
        // from the object's create function that no other thread uses during this call.
        let h = unsafe { handle.as_mut() }.ok_or_else(|| Failure::null(H::ARG))?;
        if *h.poisoned() {
            return Err(Failure::new(
                tw_result::Panic,
                format!("the {} is unusable after an earlier panic; destroy it with {}", H::ARG, H::DESTROY),
            ));
        }
        match catch_unwind(AssertUnwindSafe(|| body(&mut *h))) {
            Ok(r) => r,
            Err(payload) => {
                *h.poisoned() = true;
                resume_unwind(payload)
            }
        }
    })
}

/// Like [`run`] for exports that do not return a `tw_result`: on panic the last error
/// is set and `default` is returned.
pub(crate) fn run_or<T>(name: &'static str, default: T, body: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(v) => v,
        Err(payload) => {
            set_last_error(&format!("panic: {} (in {name})", panic_text(payload.as_ref())));
            default
        }
    }
}
