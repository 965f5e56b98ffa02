//! Seeds from the operating system's generator, for what must not be predictable on a
//! real network (cookie secrets, salts, session tokens, simulator seeds when none is
//! given). The protocol crate never reads OS randomness: the runtime passes these
//! seeds in.
//!
//! The `getrandom` crate reaches the OS generator on every platform (getrandom(2) on
//! Linux, ProcessPrng on Windows, getentropy elsewhere). There is no fallback to the
//! time or to anything guessable: if the OS cannot give randomness, creating the host
//! or session fails with that error.

use std::io;

/// A seed from the operating system's generator.
pub(crate) fn os_seed() -> io::Result<u64> {
    getrandom::u64().map_err(|e| io::Error::other(format!("the OS random generator failed: {e}")))
}

/// `N` bytes from the operating system's generator: an endpoint's `key_seed`, a new
/// match secret or connect-token key, or the randomness `tickwire_proto::token::mint`
/// takes.
pub fn os_random_bytes<const N: usize>() -> io::Result<[u8; N]> {
    let mut out = [0u8; N];
    getrandom::fill(&mut out).map_err(|e| io::Error::other(format!("the OS random generator failed: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn seeds_differ() {
        let (a, b) = (super::os_seed().unwrap(), super::os_seed().unwrap());
        assert_ne!(a, b, "two OS seeds in a row are equal");
    }
}
