//! Seeds from the operating system's generator, for what must not be predictable on a
//! real network (cookie secrets, salts, simulator seeds when none is given). The
//! protocol crate never reads OS randomness: the runtime passes these seeds in.

/// A seed from the operating system, for the real runtime (cookie secrets, salts).
/// Deterministic tests pass their own seeds instead.
pub fn os_seed() -> u64 {
    let mut buf = [0u8; 8];
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: buf is a valid, writable 8-byte buffer for the duration of the call.
        let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n == buf.len() as isize {
            return u64::from_le_bytes(buf);
        }
    }
    // Fallback: std's RandomState is keyed from OS randomness once per process.
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    buf = h.finish().to_le_bytes();
    u64::from_le_bytes(buf)
}
