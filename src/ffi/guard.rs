//! The panic boundary. Every export runs its body through [`run`] or [`run_or`], so no
//! panic unwinds into C (which would abort the game since Rust 1.81).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::error::{FfiResult, set_last_error, tw_result};

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
            set_last_error(&format!(
                "panic: {} (in {name})",
                panic_text(payload.as_ref())
            ));
            tw_result::Panic
        }
    }
}

/// Like [`run`] for exports that do not return a `tw_result`: on panic the last error
/// is set and `default` is returned.
pub(crate) fn run_or<T>(name: &'static str, default: T, body: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(v) => v,
        Err(payload) => {
            set_last_error(&format!(
                "panic: {} (in {name})",
                panic_text(payload.as_ref())
            ));
            default
        }
    }
}
