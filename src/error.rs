//! Result codes and the per-thread last error.

use std::cell::RefCell;
use std::ffi::{CStr, c_char};

use super::guard;

/// The result of every fallible tickwire function.
///
/// 0 is success, negative values are errors, small positive values are statuses that
/// are not errors (`TW_RESULT_EMPTY`). Test with `TW_SUCCEEDED(r)` / `TW_FAILED(r)`.
/// Numbers are part of the ABI: they are never renumbered or reused. After a negative
/// result, `tw_last_error_message` on the same thread says which function failed and why.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum tw_result {
    /// Success.
    Ok = 0,
    /// Success, but there was nothing to return (no event to poll).
    Empty = 1,
    /// `tw_session_advance`: not every peer has been heard from yet (or a connection is
    /// still being made); nothing to simulate. Not an error.
    NotSynchronized = 2,
    /// `tw_session_advance` (P2P and RELAY_CLIENT): the prediction window is full;
    /// skip this tick. The requests may still hold a rollback: poll them. Not an error.
    WindowFull = 3,
    /// `tw_session_advance`: a spectator has no input for the next tick yet. Not an error.
    WaitingForInput = 4,
    /// `tw_session_advance`: the session is over: the replay has ended, or a relay
    /// client's server is lost for good (after SERVER_LOST). No request. Not an error.
    Finished = 5,
    /// A required pointer argument was NULL.
    NullArgument = -1,
    /// An argument is out of range or malformed (address text, enum value, config field).
    InvalidArgument = -2,
    /// The caller's buffer is too small; `*out_len` holds the size needed.
    BufferTooSmall = -3,
    /// The call is not valid right now (for example no message to read).
    InvalidState = -4,
    /// `struct_size` is not a size this library knows: header and library disagree.
    VersionMismatch = -5,
    /// A socket or other OS call failed; the message has the OS error.
    Io = -6,
    /// The bind address is already in use.
    AddressInUse = -7,
    /// A queue is full: the queue of calls to the network thread, or (`tw_host_send`)
    /// the peer's send queue, which the message would take over
    /// `send_queue_limit_bytes`. Nothing was queued; flush and retry on a later frame.
    QueueFull = -8,
    /// The peer id is unknown or the peer has disconnected.
    UnknownPeer = -9,
    /// The host's part of the network thread has stopped (a fault in it, which stops that
    /// host or session alone); it is unusable and should be destroyed.
    NetworkThreadGone = -10,
    /// A bug inside tickwire panicked. The object involved is unusable (destroy it).
    Panic = -11,
    /// The message is larger than the configured maximum (`max_message_size`).
    MessageTooLarge = -12,
    /// Another call on the same handle (`tw_host` or `tw_session`) was in progress, on
    /// another thread or further up this thread's stack. Nothing was done; a handle is
    /// for one thread at a time (see the thread-safety rules at the top).
    Busy = -13,
}

/// `all()` and `c_name()` (and through `all()`, `TryFrom<i32>`) come from one list of
/// the variants with their C names, in declaration order. The enum above stays written
/// out, with each number and description, because cbindgen reads it; the `match` in
/// `c_name` makes the compiler refuse a variant missing from the list, and
/// `ffi_layout::result_codes_are_stable` pins every name against the header's.
macro_rules! result_codes {
    ($($code:ident => $name:literal),+ $(,)?) => {
        impl tw_result {
            /// Every code, in declaration order.
            pub fn all() -> [tw_result; [$(tw_result::$code),+].len()] {
                [$(tw_result::$code),+]
            }

            /// The C name of the code, as a NUL-terminated static string.
            pub fn c_name(self) -> &'static CStr {
                match self {
                    $(tw_result::$code => $name,)+
                }
            }
        }
    };
}

result_codes!(
    Ok => c"TW_RESULT_OK",
    Empty => c"TW_RESULT_EMPTY",
    NotSynchronized => c"TW_RESULT_NOT_SYNCHRONIZED",
    WindowFull => c"TW_RESULT_WINDOW_FULL",
    WaitingForInput => c"TW_RESULT_WAITING_FOR_INPUT",
    Finished => c"TW_RESULT_FINISHED",
    NullArgument => c"TW_RESULT_NULL_ARGUMENT",
    InvalidArgument => c"TW_RESULT_INVALID_ARGUMENT",
    BufferTooSmall => c"TW_RESULT_BUFFER_TOO_SMALL",
    InvalidState => c"TW_RESULT_INVALID_STATE",
    VersionMismatch => c"TW_RESULT_VERSION_MISMATCH",
    Io => c"TW_RESULT_IO",
    AddressInUse => c"TW_RESULT_ADDRESS_IN_USE",
    QueueFull => c"TW_RESULT_QUEUE_FULL",
    UnknownPeer => c"TW_RESULT_UNKNOWN_PEER",
    NetworkThreadGone => c"TW_RESULT_NETWORK_THREAD_GONE",
    Panic => c"TW_RESULT_PANIC",
    MessageTooLarge => c"TW_RESULT_MESSAGE_TOO_LARGE",
    Busy => c"TW_RESULT_BUSY",
);

impl TryFrom<i32> for tw_result {
    type Error = i32;
    fn try_from(v: i32) -> Result<Self, i32> {
        tw_result::all().into_iter().find(|r| *r as i32 == v).ok_or(v)
    }
}

/// A failed call (Rust side): the code to return and the reason (without the function name, which
/// the guard adds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The result code the call returns.
    pub code: tw_result,
    /// What `tw_last_error` reads, after the function's name.
    pub message: String,
}

impl Failure {
    /// A failure with `code` (negative) and `message`.
    pub fn new(code: tw_result, message: impl Into<String>) -> Self {
        debug_assert!((code as i32) < 0, "a failure needs a negative code");
        Failure { code, message: message.into() }
    }
    /// A NULL pointer where `arg` was required.
    pub fn null(arg: &str) -> Self {
        Failure::new(tw_result::NullArgument, format!("{arg} is NULL"))
    }
    /// An argument out of range or not fitting the object.
    pub fn invalid(message: impl Into<String>) -> Self {
        Failure::new(tw_result::InvalidArgument, message)
    }
}

/// What an export's body returns before the guard turns it into a result code.
pub type FfiResult<T> = Result<T, Failure>;

thread_local! {
    /// The last error message of this thread, without a NUL.
    static LAST_ERROR: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Stores `message` as this thread's last error (interior NULs become '?').
pub(crate) fn set_last_error(message: &str) {
    LAST_ERROR.with(|e| {
        let mut e = e.borrow_mut();
        e.clear();
        e.extend(message.bytes().map(|b| if b == 0 { b'?' } else { b }));
    });
}

/// Copies `text` into a caller buffer of `buf_len` bytes as a NUL-terminated string,
/// cut at a UTF-8 character boundary if it does not fit. Returns whether it fitted.
/// Writes nothing if `buf_len` is 0.
///
/// # Safety
/// `buf` must be valid for `buf_len` bytes of writes (it may be NULL only if `buf_len` is 0).
pub(crate) unsafe fn copy_c_string(text: &[u8], buf: *mut c_char, buf_len: usize) -> bool {
    if buf_len == 0 {
        return false;
    }
    let fits = text.len() < buf_len;
    let mut n = text.len().min(buf_len - 1);
    if !fits {
        // Do not leave half a UTF-8 sequence at the end.
        while n > 0 && (text[n] & 0xC0) == 0x80 {
            n -= 1;
        }
    }
    // SAFETY: the caller guarantees `buf` has `buf_len` writable bytes and `n < buf_len`;
    // `text` is a live Rust slice, which cannot overlap a caller buffer we only write.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
    fits
}

/// Copies this thread's last error message into `buf`.
///
/// The message names the function that failed and the reason, for example
/// `tw_host_create: bind 0.0.0.0:7777: Address already in use (os error 98)`. It is
/// set by every call that returns a negative `tw_result` (and by the few functions
/// that document another failure value). Successful calls leave it unchanged, so read
/// it right after the failure.
///
/// Ownership: `buf` is the caller's; it is only written during the call.
/// Thread-safety: may be called from any thread; each thread has its own last error.
///
/// Returns the length of the whole message *including* its terminating NUL, or 0 if
/// this thread has no error yet. If the return value is larger than `buf_len` the copy
/// was cut short (still NUL-terminated when `buf_len > 0`); call again with a larger
/// buffer. `buf` may be NULL when `buf_len` is 0, to ask for the length only.
///
/// # Safety
/// `buf` must be NULL or valid for `buf_len` bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_last_error_message(buf: *mut c_char, buf_len: usize) -> usize {
    guard::run_or("tw_last_error_message", 0, || {
        LAST_ERROR.with(|e| {
            let e = e.borrow();
            if e.is_empty() {
                if !buf.is_null() && buf_len > 0 {
                    // SAFETY: `buf` is non-NULL and the caller guarantees `buf_len` bytes.
                    unsafe { *buf = 0 };
                }
                return 0;
            }
            if !buf.is_null() {
                // SAFETY: the caller guarantees `buf` is valid for `buf_len` bytes.
                unsafe { copy_c_string(&e, buf, buf_len) };
            }
            e.len() + 1
        })
    })
}

/// Returns the C name of a result code, for example `"TW_RESULT_QUEUE_FULL"`, or
/// `"TW_RESULT_UNKNOWN"` for a number that is not a code.
///
/// Ownership: the string is static; never free or modify it.
/// Thread-safety: may be called from any thread.
/// Never fails and never sets the last error.
///
/// # Safety
/// None: any integer is accepted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_result_str(result: i32) -> *const c_char {
    guard::run_or("tw_result_str", c"TW_RESULT_UNKNOWN".as_ptr(), || match tw_result::try_from(result) {
        Ok(r) => r.c_name().as_ptr(),
        Err(_) => c"TW_RESULT_UNKNOWN".as_ptr(),
    })
}
