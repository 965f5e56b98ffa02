//! The CPU's prefetch instruction, given to every endpoint of the runtime
//! (`EndpointConfig::prefetch`; the protocol crate forbids the unsafe code it takes).

use tickwire_proto::Prefetch;

/// A cache line on every CPU the runtime is built for (x86 and x86-64; a larger line
/// only means some hints are repeated).
const LINE: usize = 64;

/// The runtime's [`Prefetch`]: each line of the range, on x86 and x86-64; nothing
/// elsewhere (stable Rust has no prefetch for other CPUs yet).
pub fn cpu_prefetch() -> Prefetch {
    Prefetch(prefetch_lines)
}

/// Prefetches each line of the `len` bytes at `start` (see [`cpu_prefetch`]).
pub(crate) fn prefetch_lines(start: *const u8, len: usize) {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        #[cfg(target_arch = "x86")]
        use std::arch::x86::{_MM_HINT_T0, _mm_prefetch};
        #[cfg(target_arch = "x86_64")]
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        for offset in (0..len).step_by(LINE) {
            // SAFETY: a prefetch is a hint: it never faults, reads nothing into the
            // program and writes nothing, whatever the address (`wrapping_add` makes
            // none out of bounds either). SSE is in every x86-64 target and in the
            // 32-bit targets Rust ships for Windows and Linux.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset).cast()) };
        }
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    let _ = (start, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hint over live memory, a range past its end, and addresses nothing is mapped
    /// at (null, the top of the address space) changes nothing and never faults.
    #[test]
    fn a_prefetch_never_faults_and_changes_nothing() {
        let p = cpu_prefetch();
        let v: Vec<u8> = (0..=255).collect();
        (p.0)(v.as_ptr(), v.len());
        (p.0)(v.as_ptr(), 1 << 20);
        (p.0)(std::ptr::null(), 4096);
        (p.0)(usize::MAX as *const u8, 4096);
        (p.0)(v.as_ptr(), 0);
        assert_eq!(v, (0..=255).collect::<Vec<u8>>());
        assert_eq!(p, cpu_prefetch(), "a config with it compares equal to its clone");
    }
}
