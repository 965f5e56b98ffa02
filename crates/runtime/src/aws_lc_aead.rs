//! AWS-LC's AEADs for the endpoint's packets ([`AeadProvider`]), through `aws-lc-rs`:
//! every host's endpoint seals with them. The protocol crate's own RustCrypto ciphers
//! do the same work, byte for byte, but slower (a 256-byte AES-256-GCM seal 97 ns
//! against 282; the benchmarks' part (e) compares the three vetted libraries), and
//! AWS-LC cannot live in that sans-IO crate (it brings libc and its own C along).
//!
//! Why AWS-LC and not `ring`, as fast on these packets: under valgrind's memcheck,
//! every C example reports ring's tags as uninitialised (docs/benchmarks.md, "ring's
//! AEADs, tried and reverted"), and the examples must run clean; with AWS-LC they do.
//!
//! A key lives in memory AWS-LC allocates (`EVP_AEAD_CTX`), so it stays where it was
//! made however the connection moves, and AWS-LC wipes it when the key is dropped
//! (`EVP_AEAD_CTX_free` frees through `OPENSSL_free`, which overwrites the allocation
//! with `OPENSSL_cleanse` first: aws-lc's `crypto/mem.c`).

use aws_lc_rs::aead::{AES_256_GCM, Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use tickwire_proto::wire::Cipher;
use tickwire_proto::{AeadProvider, KEY_SIZE, NONCE_SIZE, PacketAead, ProvidedAead};

/// Bytes of a tag (both ciphers).
const TAG_SIZE: usize = 16;

/// The AEAD library every host's endpoint seals its packets with (AWS-LC's), as the
/// runtime puts it in `EndpointConfig::aead`: for a benchmark or a test that builds
/// endpoints of its own and wants them to seal as hosts do.
pub fn aws_lc_aead() -> ProvidedAead {
    ProvidedAead(std::sync::Arc::new(AwsLcAeads))
}

struct AwsLcAeads;

impl AeadProvider for AwsLcAeads {
    fn name(&self) -> &'static str {
        "aws-lc"
    }

    fn key(&self, cipher: Cipher, key: &[u8; KEY_SIZE]) -> Option<Box<dyn PacketAead>> {
        let alg = match cipher {
            Cipher::Aes256Gcm => &AES_256_GCM,
            Cipher::ChaCha20Poly1305 => &CHACHA20_POLY1305,
        };
        // (Only a key of the wrong length, or a failed allocation in AWS-LC, is
        // refused: the crate's own key is used then.)
        let key = UnboundKey::new(alg, key).ok()?;
        Some(Box::new(AwsLcKey(LessSafeKey::new(key))))
    }
}

/// One AWS-LC key (wiped by AWS-LC when dropped: the module docs).
struct AwsLcKey(LessSafeKey);

impl PacketAead for AwsLcKey {
    fn seal(&self, nonce: &[u8; NONCE_SIZE], ad: &[u8], body: &mut [u8]) -> [u8; TAG_SIZE] {
        let tag = self
            .0
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(*nonce), Aad::from(ad), body)
            .expect("a datagram is far below either cipher's message limit");
        tag.as_ref().try_into().expect("a 16-byte tag")
    }

    fn open(&self, nonce: &[u8; NONCE_SIZE], ad: &[u8], body: &mut [u8], tag: &[u8; TAG_SIZE]) -> bool {
        let nonce = Nonce::assume_unique_for_key(*nonce);
        self.0.open_in_place_separate_tag(nonce, Aad::from(ad), tag, body).is_ok()
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
