//! The panic boundary and the in-use flag of handles. Every export runs its body
//! through [`run`] or [`run_or`], so no panic unwinds into C (which would abort the
//! game since Rust 1.81); every export on a handle runs through [`with_handle`], so two
//! calls never use one handle at once (the second gets `TW_RESULT_BUSY`).

use std::any::Any;
use std::cell::UnsafeCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU8, Ordering};

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

/// What a handle's calls share: the object and its in-use flag.
///
/// Every call on a handle first moves `state` from `IDLE` to `BUSY` (one atomic
/// compare-and-swap) and moves it back when it returns; a call that finds it not
/// `IDLE` touches nothing and returns `TW_RESULT_BUSY`. So at most one call at a time
/// ever reaches `value`, whatever the caller's threads do, and a call made from inside
/// a call on the same handle (re-entrancy) is refused the same way.
///
/// A destroy that finds a call in progress does not free the object under it: it
/// marks it (`DESTROY_PENDING`) and the call in progress frees it as it returns.
pub(crate) struct Guarded<T> {
    state: AtomicU8,
    /// Set when a call panicked: the object may be half-updated, so every later call
    /// (except destroy) is refused. Only read or written while `state` is `BUSY`.
    poisoned: UnsafeCell<bool>,
    /// Only touched by the call that moved `state` from `IDLE` to `BUSY`, until it
    /// moves it back (or by a destroy that did the same, which frees it).
    value: UnsafeCell<T>,
}

/// No call is using the handle.
const IDLE: u8 = 0;
/// One call is using the handle.
const BUSY: u8 = 1;
/// One call is using the handle, and the handle was destroyed meanwhile: that call
/// frees it as it returns.
const DESTROY_PENDING: u8 = 2;

impl<T> Guarded<T> {
    pub(crate) fn new(value: T) -> Self {
        Guarded { state: AtomicU8::new(IDLE), poisoned: UnsafeCell::new(false), value: UnsafeCell::new(value) }
    }
}

/// A C object: a box around a [`Guarded`] value, handed to C as a pointer.
pub(crate) trait Handle: Sized {
    /// Its name as an argument in errors ("host", "session").
    const ARG: &'static str;
    /// The export that destroys it, named in the poisoned error.
    const DESTROY: &'static str;
    /// What its calls work on.
    type Inner;
    fn guarded(&self) -> &Guarded<Self::Inner>;
}

/// Runs the body of an export on a handle: [`run`], plus a check of the handle (NULL),
/// a refusal if another call is using it (`TW_RESULT_BUSY`) or if it is poisoned, and
/// poisoning it if the body panics (the panic itself is reported by `run`).
pub(crate) fn with_handle<H: Handle>(
    name: &'static str,
    handle: *mut H,
    body: impl FnOnce(&mut H::Inner) -> FfiResult<tw_result>,
) -> tw_result {
    run(name, || {
        // SAFETY: the caller (an export) guarantees `handle` is NULL or a live handle
        // from the object's create function, not yet destroyed when this call began. A
        // shared reference is all any call makes of the handle itself; the state it
        // guards is reached only through the `UnsafeCell`s below.
        let g = unsafe { handle.as_ref() }.ok_or_else(|| Failure::null(H::ARG))?.guarded();
        if g.state.compare_exchange(IDLE, BUSY, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return Err(Failure::new(
                tw_result::Busy,
                format!(
                    "the {} is in use by another call (on another thread, or further up this thread's stack); \
                     use a {} from one thread at a time",
                    H::ARG,
                    H::ARG
                ),
            ));
        }
        // SAFETY: this call moved `state` from IDLE to BUSY, so it is the only one that
        // may touch `poisoned` and `value` until it moves it back (`release`): every
        // other call fails the compare-and-swap above and touches neither, and a
        // destroy leaves the freeing to this call.
        let (poisoned, value) = unsafe { (&mut *g.poisoned.get(), &mut *g.value.get()) };
        let result = if *poisoned {
            Ok(Err(Failure::new(
                tw_result::Panic,
                format!("the {} is unusable after an earlier panic; destroy it with {}", H::ARG, H::DESTROY),
            )))
        } else {
            catch_unwind(AssertUnwindSafe(|| body(value))).inspect_err(|_| *poisoned = true)
        };
        // SAFETY: `handle` is the live handle `g` points into, and this call holds it
        // (BUSY); nothing borrowed from it is used after this.
        unsafe { release(handle) };
        result.unwrap_or_else(|payload| resume_unwind(payload))
    })
}

/// Ends a call on `handle`: back to `IDLE`, or, if the handle was destroyed during the
/// call, frees it.
///
/// # Safety
/// `handle` is live and this thread's call holds it (moved it from `IDLE` to `BUSY`).
unsafe fn release<H: Handle>(handle: *mut H) {
    // SAFETY: live per the contract.
    let state = unsafe { &(*handle).guarded().state };
    if state.compare_exchange(BUSY, IDLE, Ordering::Release, Ordering::Acquire).is_err() {
        // DESTROY_PENDING: `destroy` ran during this call and left the freeing to it.
        // Nothing else touches the handle any more: other calls see DESTROY_PENDING
        // and refuse, and no call may start after destroy was called.
        // SAFETY: from Box::into_raw in the create function; only this call frees it.
        drop(unsafe { Box::from_raw(handle) });
    }
}

/// Destroys a handle (the body of `tw_*_destroy`): frees it now if no call is using
/// it, or, if one is (on another thread, or further up this thread's stack), marks it
/// so that call frees it as it returns. NULL is a no-op.
///
/// # Safety
/// `handle` is NULL or a handle from `Box::into_raw` in the create function that was
/// not destroyed before, and no call on it starts after this one began.
pub(crate) unsafe fn destroy<H: Handle>(name: &'static str, handle: *mut H) {
    if handle.is_null() {
        return;
    }
    // SAFETY: live per the contract (a call in progress keeps it alive until it sees
    // DESTROY_PENDING, which only this function sets).
    let state = unsafe { &(*handle).guarded().state };
    let mut seen = IDLE;
    loop {
        match seen {
            IDLE => match state.compare_exchange(IDLE, BUSY, Ordering::Acquire, Ordering::Acquire) {
                Ok(_) => {
                    // SAFETY: from Box::into_raw, not destroyed before, and no call
                    // holds it (this one moved it from IDLE); none may start now.
                    drop(unsafe { Box::from_raw(handle) });
                    return;
                }
                Err(now) => seen = now,
            },
            BUSY => match state.compare_exchange(BUSY, DESTROY_PENDING, Ordering::AcqRel, Ordering::Acquire) {
                // The call in progress frees it (`release`).
                Ok(_) => return,
                Err(now) => seen = now,
            },
            _ => {
                set_last_error(&format!(
                    "{name}: the {} was already destroyed during a call still in progress; it is freed when that \
                     call returns",
                    H::ARG
                ));
                return;
            }
        }
    }
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
