//! The owner's way to start loading memory before the endpoint reads it.
//!
//! A server sleeps between its ticks, and each tick touches every connection once: a
//! datagram in, a message and a flush out. By then the connection's lines have left
//! the core's caches, and each first touch waits for memory. The receive path knows
//! the next datagram's sender while it handles the current one, and the flush knows
//! the next connection while it packs this one: a CPU's prefetch instruction could
//! start loading the next one's lines meanwhile. Issuing one needs unsafe code, which
//! this crate forbids, so the owner gives the function ([`EndpointConfig::prefetch`]):
//! the runtime gives one that prefetches each line of the range on x86 and x86-64.
//!
//! [`EndpointConfig::prefetch`]: super::EndpointConfig::prefetch

use std::fmt;

/// A function that starts loading the `len` bytes at `start` into the cache, if the
/// platform can (a hint: it must never read, write or fault, whatever the address).
#[derive(Clone, Copy)]
pub struct Prefetch(pub fn(start: *const u8, len: usize));

impl Prefetch {
    /// Hints that `value`'s bytes are read soon.
    pub(super) fn value<T>(self, value: &T) {
        (self.0)((value as *const T).cast(), size_of::<T>());
    }
}

impl fmt::Debug for Prefetch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Prefetch")
    }
}

/// Two are equal when they are the same function (a configuration compares equal to
/// its clone).
impl PartialEq for Prefetch {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::fn_addr_eq(self.0, other.0)
    }
}
