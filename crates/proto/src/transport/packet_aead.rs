//! The AEAD that seals a connection's packets: the crate's own RustCrypto ciphers, or
//! those of a library the owner provides ([`AeadProvider`]).
//!
//! This crate is sans-IO, and the fastest vetted implementations (`ring`, `aws-lc-rs`)
//! bring the OS random generator or libc and their own C with them. So the crate takes
//! them from its owner instead: the runtime gives its endpoints AWS-LC's AES-256-GCM and
//! ChaCha20-Poly1305 (a 256-byte seal in 97 ns against RustCrypto's 282, the
//! benchmarks' part (e)). The algorithms are the same, byte for byte: an endpoint with
//! a provider talks to one without (the runtime's `aws_lc_aead` tests check the bytes,
//! and a real handshake and messages both ways under each cipher). A provider
//! implements the primitive; it is never ours.

use std::fmt;
use std::sync::Arc;

use aes_gcm::Aes256Gcm;
use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{ChaCha20Poly1305, KeyInit, Tag};

use super::crypto::{KEY_SIZE, TAG_SIZE};
use crate::wire::Cipher;

/// Bytes of a packet nonce (both ciphers take 96 bits).
pub const NONCE_SIZE: usize = 12;

/// One direction's packet key in an AEAD library.
pub trait PacketAead: Send + Sync {
    /// Encrypts `body` in place; returns the tag that authenticates it with `ad`.
    fn seal(&self, nonce: &[u8; NONCE_SIZE], ad: &[u8], body: &mut [u8]) -> [u8; TAG_SIZE];
    /// Decrypts `body` in place if `tag` authenticates it with `ad`. On failure `body`
    /// holds anything (the endpoint drops the packet).
    fn open(&self, nonce: &[u8; NONCE_SIZE], ad: &[u8], body: &mut [u8], tag: &[u8; TAG_SIZE]) -> bool;
    /// A hint that this key seals or opens a packet soon: a library whose key state is
    /// larger than a line may start loading it, so that a server walking many
    /// connections does not wait for each one's key in turn. Changes nothing else;
    /// by default it does nothing.
    fn prefetch(&self) {}
}

/// An AEAD library that makes packet keys. Each key must wipe itself when dropped.
pub trait AeadProvider: Send + Sync {
    /// The library's name, for logs and `Debug`.
    fn name(&self) -> &'static str;
    /// A key for `cipher`, or `None` if the library does not have it (the crate's own
    /// is used then).
    fn key(&self, cipher: Cipher, key: &[u8; KEY_SIZE]) -> Option<Box<dyn PacketAead>>;
}

/// The owner's AEAD library in an endpoint's configuration
/// ([`EndpointConfig::aead`](super::EndpointConfig::aead)). Two are equal when they
/// have the same name.
#[derive(Clone)]
pub struct ProvidedAead(pub Arc<dyn AeadProvider>);

impl fmt::Debug for ProvidedAead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProvidedAead({})", self.0.name())
    }
}

impl PartialEq for ProvidedAead {
    fn eq(&self, other: &Self) -> bool {
        self.0.name() == other.0.name()
    }
}

/// The crate's own key for `cipher` (RustCrypto), as a [`PacketAead`]: what an
/// endpoint without a provider seals with. For comparing a provider against it.
pub fn builtin_aead(cipher: Cipher, key: &[u8; KEY_SIZE]) -> Box<dyn PacketAead> {
    Box::new(Builtin::new(cipher, key))
}

/// The crate's own keys. Both wipe their key schedule when dropped (the `zeroize`
/// features of chacha20poly1305 and aes-gcm).
///
/// Both are boxed, so that a key stays where it was made: a connection moves (into
/// the endpoint's table, and again whenever the table grows), and a key inline in it
/// would leave a copy at each old place, which its drop does not wipe. Reading a key
/// through its box costs a server a dependent load per packet (docs/benchmarks.md,
/// issue 35); the AES schedule (with GHASH's key) is 992 bytes anyway. A provider's
/// keys are boxed too ([`PacketKey::Provided`]).
pub(super) enum Builtin {
    ChaCha(Box<ChaCha20Poly1305>),
    Aes(Box<Aes256Gcm>),
}

impl Builtin {
    fn new(cipher: Cipher, key: &[u8; KEY_SIZE]) -> Self {
        match cipher {
            Cipher::ChaCha20Poly1305 => Builtin::ChaCha(Box::new(ChaCha20Poly1305::new(key.into()))),
            Cipher::Aes256Gcm => Builtin::Aes(Box::new(Aes256Gcm::new(key.into()))),
        }
    }
}

impl PacketAead for Builtin {
    fn seal(&self, nonce: &[u8; NONCE_SIZE], ad: &[u8], body: &mut [u8]) -> [u8; TAG_SIZE] {
        match self {
            Builtin::ChaCha(k) => k.encrypt_in_place_detached(nonce.into(), ad, body),
            Builtin::Aes(k) => k.encrypt_in_place_detached(nonce.into(), ad, body),
        }
        .expect("a datagram is far below either cipher's message limit")
        .into()
    }

    fn open(&self, nonce: &[u8; NONCE_SIZE], ad: &[u8], body: &mut [u8], tag: &[u8; TAG_SIZE]) -> bool {
        let tag = Tag::from_slice(tag);
        match self {
            Builtin::ChaCha(k) => k.decrypt_in_place_detached(nonce.into(), ad, body, tag).is_ok(),
            Builtin::Aes(k) => k.decrypt_in_place_detached(nonce.into(), ad, body, tag).is_ok(),
        }
    }
}

/// One direction's packet key, in the connection's cipher: the crate's own, or the
/// provider's.
pub(super) enum PacketKey {
    Builtin(Builtin),
    Provided(Box<dyn PacketAead>, Cipher),
}

impl PacketKey {
    pub(super) fn new(cipher: Cipher, key: &[u8; KEY_SIZE], provider: Option<&ProvidedAead>) -> Self {
        match provider.and_then(|p| p.0.key(cipher, key)) {
            Some(k) => PacketKey::Provided(k, cipher),
            None => PacketKey::Builtin(Builtin::new(cipher, key)),
        }
    }

    pub(super) fn cipher(&self) -> Cipher {
        match self {
            PacketKey::Builtin(Builtin::ChaCha(_)) => Cipher::ChaCha20Poly1305,
            PacketKey::Builtin(Builtin::Aes(_)) => Cipher::Aes256Gcm,
            PacketKey::Provided(_, c) => *c,
        }
    }

    pub(super) fn seal(&self, nonce: &[u8; NONCE_SIZE], ad: &[u8], body: &mut [u8]) -> [u8; TAG_SIZE] {
        match self {
            PacketKey::Builtin(k) => k.seal(nonce, ad, body),
            PacketKey::Provided(k, _) => k.seal(nonce, ad, body),
        }
    }

    pub(super) fn open(&self, nonce: &[u8; NONCE_SIZE], ad: &[u8], body: &mut [u8], tag: &[u8; TAG_SIZE]) -> bool {
        match self {
            PacketKey::Builtin(k) => k.open(nonce, ad, body, tag),
            PacketKey::Provided(k, _) => k.open(nonce, ad, body, tag),
        }
    }

    /// [`PacketAead::prefetch`]: the crate's own keys have nothing to fetch ahead.
    pub(super) fn prefetch(&self) {
        if let PacketKey::Provided(k, _) = self {
            k.prefetch();
        }
    }
}
