//! Library and ABI versions.

use std::ffi::c_char;

use super::guard;

/// The ABI contract number. Bumped whenever an exported signature, a struct layout, a
/// constant's meaning or a result code changes incompatibly. Bindings compare
/// `tw_abi_version()` with the value they were built against before the first real call.
pub const TW_ABI_VERSION: u32 = 1;

const fn parse_u32(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut i = 0;
    let mut v = 0u32;
    while i < b.len() {
        assert!(b[i].is_ascii_digit(), "version component is not a number");
        v = v * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    v
}

const VERSION_MAJOR: u32 = parse_u32(env!("CARGO_PKG_VERSION_MAJOR"));
const VERSION_MINOR: u32 = parse_u32(env!("CARGO_PKG_VERSION_MINOR"));
const VERSION_PATCH: u32 = parse_u32(env!("CARGO_PKG_VERSION_PATCH"));
const VERSION_STRING: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// Returns the library version packed as `(major << 16) | (minor << 8) | patch`, the
/// layout of the `TW_VERSION` macro in this header. Compare the two to detect a
/// library that differs from the header you compiled against.
///
/// Thread-safety: may be called from any thread. Never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_version() -> u32 {
    guard::run_or("tw_version", 0, || (VERSION_MAJOR << 16) | (VERSION_MINOR << 8) | VERSION_PATCH)
}

/// Returns the library version as text, for example `"0.1.0"`.
///
/// Ownership: the string is static; never free or modify it.
/// Thread-safety: may be called from any thread. Never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_version_string() -> *const c_char {
    guard::run_or("tw_version_string", c"".as_ptr(), || VERSION_STRING.as_ptr().cast())
}

/// Returns the ABI contract number of the library. It must equal `TW_ABI_VERSION` from
/// the header the caller was compiled against; if not, the struct layouts or signatures
/// differ and the library must not be used.
///
/// Thread-safety: may be called from any thread. Never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_abi_version() -> u32 {
    guard::run_or("tw_abi_version", 0, || TW_ABI_VERSION)
}
