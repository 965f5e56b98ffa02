//! AWS-LC's AEADs for the endpoint's packets ([`AeadProvider`]), through `aws-lc-sys`:
//! every host's endpoint seals with them. The protocol crate's own RustCrypto ciphers
//! do the same work, byte for byte, but slower (a 256-byte AES-256-GCM seal 97 ns
//! against 282; the benchmarks' part (e) compares the three vetted libraries), and
//! AWS-LC cannot live in that sans-IO crate (it brings libc and its own C along).
//!
//! Why AWS-LC and not `ring`, as fast on these packets: under valgrind's memcheck,
//! every C example reports ring's tags as uninitialised (docs/benchmarks.md, "ring's
//! AEADs, tried and reverted"), and the examples must run clean; with AWS-LC they do.
//!
//! A key is AWS-LC's `EVP_AEAD_CTX` itself, in a box of ours (`aws-lc-sys`, the C API
//! that `aws-lc-rs` wraps, rather than `aws-lc-rs`'s `LessSafeKey`): the box is the
//! `Box<dyn PacketAead>` the connection holds, so the context's address is in the
//! connection's own line, and [`PacketAead::prefetch`] can ask for its lines before the
//! packet that needs them. Through `LessSafeKey` the context sat behind two more
//! pointers that only AWS-LC followed: on a 64-client server, the first touch of each
//! connection's context (a key schedule and a GHASH table, about 500 bytes) was most of
//! what encryption cost (docs/benchmarks.md, issue 35). The context stays where it was
//! made however the connection moves (AWS-LC keeps an offset into it for the
//! alignment of AES-GCM's state, so it must never move), and its drop wipes it:
//! `EVP_AEAD_CTX_cleanup`, then `OPENSSL_cleanse` over the whole context (cleanup alone
//! leaves an inline AES-GCM state as it was).

use aws_lc_sys::{
    CRYPTO_library_init, EVP_AEAD, EVP_AEAD_CTX, EVP_AEAD_CTX_cleanup, EVP_AEAD_CTX_init, EVP_AEAD_CTX_open_gather,
    EVP_AEAD_CTX_seal_scatter, EVP_aead_aes_256_gcm, EVP_aead_chacha20_poly1305, OPENSSL_cleanse,
};
use tickwire_proto::wire::Cipher;
use tickwire_proto::{AeadProvider, KEY_SIZE, NONCE_SIZE, PacketAead, ProvidedAead};

/// Bytes of a tag (both ciphers).
const TAG_SIZE: usize = 16;

/// The AEAD library every host's endpoint seals its packets with (AWS-LC's), as the
/// runtime puts it in `EndpointConfig::aead`: for a benchmark or a test that builds
/// endpoints of its own and wants them to seal as hosts do.
pub fn aws_lc_aead() -> ProvidedAead {
    // SAFETY: AWS-LC's one-time set-up (CPU features); idempotent and thread-safe.
    unsafe { CRYPTO_library_init() };
    ProvidedAead(std::sync::Arc::new(AwsLcAeads))
}

struct AwsLcAeads;

impl AeadProvider for AwsLcAeads {
    fn name(&self) -> &'static str {
        "aws-lc"
    }

    fn key(&self, cipher: Cipher, key: &[u8; KEY_SIZE]) -> Option<Box<dyn PacketAead>> {
        // (Only a failure inside AWS-LC is refused: the crate's own key is used then.)
        AwsLcKey::new(evp_aead(cipher), key).map(|k| k as Box<dyn PacketAead>)
    }
}

/// AWS-LC's description of `cipher`.
fn evp_aead(cipher: Cipher) -> *const EVP_AEAD {
    // SAFETY: both return pointers to AWS-LC's static algorithm descriptions.
    unsafe {
        match cipher {
            Cipher::Aes256Gcm => EVP_aead_aes_256_gcm(),
            Cipher::ChaCha20Poly1305 => EVP_aead_chacha20_poly1305(),
        }
    }
}

/// One AWS-LC key: the context, initialised in place, never moved (the module docs).
struct AwsLcKey {
    ctx: EVP_AEAD_CTX,
}

// SAFETY: after `EVP_AEAD_CTX_init` the context is only read: AWS-LC's seal and open take
// it as `const` and may run on it from several threads at once (aead.h: "the same
// EVP_AEAD_CTX may be used concurrently").
unsafe impl Send for AwsLcKey {}
unsafe impl Sync for AwsLcKey {}

impl AwsLcKey {
    fn new(aead: *const EVP_AEAD, key: &[u8; KEY_SIZE]) -> Option<Box<Self>> {
        // SAFETY: an all-zero context is valid for the plain-old-data C struct, and is
        // the state `EVP_AEAD_CTX_zero` makes, which `EVP_AEAD_CTX_init` expects.
        let mut k: Box<Self> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: `k.ctx` is a context in its final place (the box), zeroed; `aead` is a
        // static description; the key is KEY_SIZE readable bytes; a null ENGINE is the
        // default. On failure the context holds no state (init cleans up after itself).
        let ok = unsafe { EVP_AEAD_CTX_init(&mut k.ctx, aead, key.as_ptr(), KEY_SIZE, TAG_SIZE, std::ptr::null_mut()) };
        (ok == 1).then_some(k)
    }

    /// Cleans the context up and overwrites all of it (what its drop does).
    fn wipe(&mut self) {
        // SAFETY: the context was initialised (or zeroed, which cleanup accepts) and is
        // not used after this but by another cleanup, which a zeroed context accepts.
        unsafe {
            EVP_AEAD_CTX_cleanup(&mut self.ctx);
            OPENSSL_cleanse((&raw mut self.ctx).cast(), size_of::<EVP_AEAD_CTX>());
        }
    }
}

impl Drop for AwsLcKey {
    fn drop(&mut self) {
        self.wipe();
    }
}

impl PacketAead for AwsLcKey {
    fn seal(&self, nonce: &[u8; NONCE_SIZE], ad: &[u8], body: &mut [u8]) -> [u8; TAG_SIZE] {
        let mut tag = [0u8; TAG_SIZE];
        let mut tag_len = 0usize;
        let out = body.as_mut_ptr();
        // SAFETY: the context is initialised and only read; `out` and the input are the
        // same buffer of `body.len()` bytes (AWS-LC allows in == out exactly); the tag
        // buffer holds TAG_SIZE bytes, the nonce NONCE_SIZE; no extra input.
        let ok = unsafe {
            EVP_AEAD_CTX_seal_scatter(
                &self.ctx,
                out,
                tag.as_mut_ptr(),
                &mut tag_len,
                TAG_SIZE,
                nonce.as_ptr(),
                NONCE_SIZE,
                out,
                body.len(),
                std::ptr::null(),
                0,
                ad.as_ptr(),
                ad.len(),
            )
        };
        // A datagram is far below either cipher's message limit, and the tag buffer is
        // the tag's size: AWS-LC cannot refuse.
        assert!(ok == 1 && tag_len == TAG_SIZE, "AWS-LC refused to seal a packet");
        tag
    }

    fn open(&self, nonce: &[u8; NONCE_SIZE], ad: &[u8], body: &mut [u8], tag: &[u8; TAG_SIZE]) -> bool {
        let out = body.as_mut_ptr();
        // SAFETY: as in `seal`: in place over `body.len()` bytes, a TAG_SIZE tag, a
        // NONCE_SIZE nonce.
        let ok = unsafe {
            EVP_AEAD_CTX_open_gather(
                &self.ctx,
                out,
                nonce.as_ptr(),
                NONCE_SIZE,
                out,
                body.len(),
                tag.as_ptr(),
                TAG_SIZE,
                ad.as_ptr(),
                ad.len(),
            )
        };
        ok == 1
    }

    fn prefetch(&self) {
        // The key's context, every line of it (`prefetch.rs`).
        crate::prefetch::prefetch_lines((&raw const self.ctx).cast(), size_of::<EVP_AEAD_CTX>());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use tickwire_proto::wire::MAX_DATAGRAM_SIZE;
    use tickwire_proto::{CHANNEL_RELIABLE, Endpoint, EndpointConfig, NetEvent, builtin_aead};

    /// An endpoint that seals with AWS-LC and one with the protocol crate's own ciphers
    /// complete a real handshake (its key confirmation is a seal of each) and carry
    /// messages both ways, under each cipher, whichever end has AWS-LC.
    #[test]
    fn an_aws_lc_endpoint_and_a_builtin_one_talk() {
        let (ca, sa): (SocketAddr, SocketAddr) = ("10.0.0.1:1".parse().unwrap(), "10.0.0.2:2".parse().unwrap());
        for aes_gcm in [true, false] {
            for aws_lc_client in [true, false] {
                let cfg = |max_incoming, seed, aws_lc: bool| EndpointConfig {
                    max_incoming,
                    seed,
                    aes_gcm,
                    aead: aws_lc.then(aws_lc_aead),
                    ..EndpointConfig::default()
                };
                let mut client = Endpoint::new(cfg(0, 1, aws_lc_client), 0).unwrap();
                let mut server = Endpoint::new(cfg(1, 2, !aws_lc_client), 0).unwrap();
                let peer = client.connect(0, sa).unwrap();
                let mut buf = vec![0; MAX_DATAGRAM_SIZE];
                let mut got = Vec::new();
                for step in 1..=10u64 {
                    if step == 6 {
                        client.send(peer, CHANNEL_RELIABLE, b"up").unwrap();
                        client.flush(step);
                    }
                    while let Some((_, n)) = client.poll_transmit(&mut buf) {
                        server.handle_datagram(step, ca, &buf[..n]);
                    }
                    while let Some(e) = server.poll_event() {
                        match e {
                            NetEvent::Connected { peer, .. } => {
                                server.send(peer, CHANNEL_RELIABLE, b"down").unwrap();
                                server.flush(step);
                            }
                            NetEvent::Message { data, .. } => got.push(data),
                            _ => {}
                        }
                    }
                    while let Some((_, n)) = server.poll_transmit(&mut buf) {
                        client.handle_datagram(step, sa, &buf[..n]);
                    }
                    while let Some(e) = client.poll_event() {
                        if let NetEvent::Message { data, .. } = e {
                            got.push(data);
                        }
                    }
                }
                let want = if aes_gcm { Cipher::Aes256Gcm } else { Cipher::ChaCha20Poly1305 };
                assert_eq!(client.cipher(peer), Some(want), "aes_gcm {aes_gcm}, AWS-LC client {aws_lc_client}");
                got.sort();
                assert_eq!(got, [b"down".to_vec(), b"up".to_vec()], "aes_gcm {aes_gcm}, AWS-LC client {aws_lc_client}");
            }
        }
    }

    /// A key's wipe (what its drop does) leaves every byte of its context zero,
    /// under each cipher; before it, the context held the key. A prefetch changes
    /// nothing a seal and an open see.
    #[test]
    fn a_wiped_key_leaves_nothing_of_its_context() {
        let ctx_bytes = |k: &AwsLcKey| -> Vec<u8> {
            // SAFETY: reads the context's own bytes, initialised (zeroed, then written
            // by AWS-LC) and borrowed for the read.
            unsafe { std::slice::from_raw_parts((&raw const k.ctx).cast::<u8>(), size_of::<EVP_AEAD_CTX>()) }.to_vec()
        };
        aws_lc_aead();
        for cipher in [Cipher::Aes256Gcm, Cipher::ChaCha20Poly1305] {
            let mut k = AwsLcKey::new(evp_aead(cipher), &[0x5a; KEY_SIZE]).expect("AWS-LC makes the key");
            let before = ctx_bytes(&k);
            // Both keep the key's bytes (AES-256's first two round keys are the key).
            assert!(
                before.windows(KEY_SIZE).any(|w| w == [0x5a; KEY_SIZE]),
                "{cipher:?}: the key is not in the context"
            );
            k.prefetch();
            let mut body = *b"after a prefetch";
            let tag = k.seal(&[1; NONCE_SIZE], b"", &mut body);
            assert!(k.open(&[1; NONCE_SIZE], b"", &mut body, &tag) && &body == b"after a prefetch");
            k.wipe();
            assert!(ctx_bytes(&k).iter().all(|&b| b == 0), "{cipher:?}: the context is not all zero");
        }
    }

    /// AWS-LC's keys give the bytes the protocol crate's own give, both ways, for both
    /// ciphers and packet sizes from empty to a full datagram; a flipped bit, another
    /// nonce or other associated data fails to open.
    #[test]
    fn aws_lc_and_the_builtin_ciphers_seal_the_same_bytes() {
        let key = [7u8; KEY_SIZE];
        for cipher in [Cipher::Aes256Gcm, Cipher::ChaCha20Poly1305] {
            let (ours, theirs) = (AwsLcAeads.key(cipher, &key).expect("AWS-LC has both"), builtin_aead(cipher, &key));
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
}
