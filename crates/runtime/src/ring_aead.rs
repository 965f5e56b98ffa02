//! `ring`'s AEADs for the endpoint's packets ([`AeadProvider`]): every host's endpoint
//! seals with them. The protocol crate's own RustCrypto ciphers do the same work,
//! byte for byte, but slower (a 256-byte AES-256-GCM seal 87 ns against 271; the
//! benchmarks' part (e) compares all three vetted libraries), and `ring` cannot live
//! in that sans-IO crate (it brings the OS random generator and libc along).
//!
//! ring's keys do not wipe themselves when dropped; the protocol crate's do. So a key
//! here is wiped by hand on drop, its bytes overwritten with volatile zeros.

use std::mem::{ManuallyDrop, MaybeUninit, size_of};

use ring::aead::{AES_256_GCM, Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, Tag, UnboundKey};
use tickwire_proto::wire::Cipher;
use tickwire_proto::{AeadProvider, KEY_SIZE, NONCE_SIZE, PacketAead, ProvidedAead};
use zeroize::Zeroize;

/// Bytes of a tag (both ciphers).
const TAG_SIZE: usize = 16;

/// The AEAD library every host's endpoint seals its packets with (ring's), as the
/// runtime puts it in `EndpointConfig::aead`: for a benchmark or a test that builds
/// endpoints of its own and wants them to seal as hosts do.
pub fn ring_aead() -> ProvidedAead {
    ProvidedAead(std::sync::Arc::new(RingAeads))
}

struct RingAeads;

impl AeadProvider for RingAeads {
    fn name(&self) -> &'static str {
        "ring"
    }

    fn key(&self, cipher: Cipher, key: &[u8; KEY_SIZE]) -> Option<Box<dyn PacketAead>> {
        let alg = match cipher {
            Cipher::Aes256Gcm => &AES_256_GCM,
            Cipher::ChaCha20Poly1305 => &CHACHA20_POLY1305,
        };
        // (Only a key of the wrong length is refused: never here.)
        let key = UnboundKey::new(alg, key).ok()?;
        Some(Box::new(RingKey(ManuallyDrop::new(LessSafeKey::new(key)))))
    }
}

/// A ring key, wiped when dropped.
struct RingKey(ManuallyDrop<LessSafeKey>);

impl PacketAead for RingKey {
    fn seal(&self, nonce: &[u8; NONCE_SIZE], ad: &[u8], body: &mut [u8]) -> [u8; TAG_SIZE] {
        let tag = self
            .0
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(*nonce), Aad::from(ad), body)
            .expect("a datagram is far below either cipher's message limit");
        tag.as_ref().try_into().expect("a 16-byte tag")
    }

    fn open(&self, nonce: &[u8; NONCE_SIZE], ad: &[u8], body: &mut [u8], tag: &[u8; TAG_SIZE]) -> bool {
        let nonce = Nonce::assume_unique_for_key(*nonce);
        self.0.open_in_place_separate_tag(nonce, Aad::from(ad), Tag::from(*tag), body, 0..).is_ok()
    }
}

impl Drop for RingKey {
    fn drop(&mut self) {
        let key: *mut LessSafeKey = &mut *self.0;
        // SAFETY: the pointer is to the key this value owns, valid for its size, and
        // nothing reads the key after this: it is in `ManuallyDrop`, so it is never
        // dropped as a `LessSafeKey` either. Viewed as `MaybeUninit<u8>`, any byte
        // (padding included) may be written. A ring key owns no heap memory (its key
        // schedule and a `&'static` algorithm); should a later ring's own some, zeroing
        // would leak it, never free it twice.
        let bytes = unsafe { std::slice::from_raw_parts_mut(key.cast::<MaybeUninit<u8>>(), size_of::<LessSafeKey>()) };
        bytes.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickwire_proto::builtin_aead;

    /// ring's keys give the bytes the protocol crate's own give, both ways, for both
    /// ciphers and packet sizes from empty to a full datagram; a flipped bit, another
    /// nonce or other associated data fails to open.
    #[test]
    fn ring_and_the_builtin_ciphers_seal_the_same_bytes() {
        let key = [7u8; KEY_SIZE];
        for cipher in [Cipher::Aes256Gcm, Cipher::ChaCha20Poly1305] {
            let (ours, theirs) = (RingAeads.key(cipher, &key).expect("ring has both"), builtin_aead(cipher, &key));
            for size in [0usize, 1, 32, 256, 1_200] {
                let plain: Vec<u8> = (0..size).map(|i| (i * 31) as u8).collect();
                let nonce = [0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, size as u8];
                let (mut a, mut b) = (plain.clone(), plain.clone());
                let (ta, tb) = (ours.seal(&nonce, b"hdr", &mut a), theirs.seal(&nonce, b"hdr", &mut b));
                assert_eq!((&a, ta), (&b, tb), "{cipher:?}, {size} bytes");
                let mut opened = a.clone();
                assert!(theirs.open(&nonce, b"hdr", &mut opened, &ta) && opened == plain);
                let mut opened = b.clone();
                assert!(ours.open(&nonce, b"hdr", &mut opened, &tb) && opened == plain);
                let mut other = nonce;
                other[11] ^= 1;
                assert!(!ours.open(&other, b"hdr", &mut a.clone(), &ta));
                assert!(!ours.open(&nonce, b"HDR", &mut a.clone(), &ta));
                let mut flipped = ta;
                flipped[0] ^= 1;
                assert!(!ours.open(&nonce, b"hdr", &mut a.clone(), &flipped));
                if size > 0 {
                    let mut tampered = a.clone();
                    tampered[size - 1] ^= 0x80;
                    assert!(!ours.open(&nonce, b"hdr", &mut tampered, &ta));
                }
            }
        }
    }

    /// A dropped key leaves zeros where its key schedule was (were it not wiped, the
    /// schedule of a key of 0x5a bytes would be there).
    #[test]
    fn a_dropped_key_is_wiped() {
        let key = UnboundKey::new(&AES_256_GCM, &[0x5a; KEY_SIZE]).unwrap();
        let mut k = ManuallyDrop::new(RingKey(ManuallyDrop::new(LessSafeKey::new(key))));
        let mut body = *b"works";
        let _ = k.seal(&[0; NONCE_SIZE], b"", &mut body);
        assert_ne!(&body, b"works");
        // SAFETY: runs the key's drop once; `k` stays in place, and only its bytes are
        // read after.
        unsafe { ManuallyDrop::drop(&mut k) };
        let p: *const LessSafeKey = &*k.0;
        // SAFETY: the key's own bytes, in place; the drop wrote every one of them
        // (padding included), so all are initialised.
        let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size_of::<LessSafeKey>()) };
        assert!(bytes.iter().all(|&b| b == 0), "wiped");
    }
}
