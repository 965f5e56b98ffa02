//! `tickwire bench crypto`, part (e): the vetted AEADs side by side on the packets a
//! match sends, for the choice of issue 35 ("faster AEAD, still vetted"). Each seals
//! and opens the same packets (a 7-byte header as associated data, as a connected
//! packet has; a 12-byte nonce from the packet number) with the same key, in
//! alternating rounds so that every contender sees the same machine state:
//!
//! - RustCrypto `chacha20poly1305`, the one the endpoint uses today (built with this
//!   workspace's settings, `.cargo/config.toml` included);
//! - RustCrypto `aes-gcm` (AES-256-GCM; AES-NI and CLMUL detected at run time);
//! - `ring` and `aws-lc-rs`, ChaCha20-Poly1305 and AES-256-GCM each.
//!
//! Before timing, every contender's output is checked against the others': the same
//! algorithm gives the same ciphertext and tag, and each opens what it sealed.

use std::hint::black_box;

use chacha20poly1305::aead;
use std::time::Instant;

use super::bench::median;

const KEY: [u8; 32] = [0x42; 32];
const HEADER: [u8; 7] = [6, 1, 2, 3, 4, 5, 6];
const ROUNDS: usize = 15;
const BATCH: usize = 4_000;

/// One AEAD: seal `buf` in place under packet number `n`, returning the tag; open a
/// sealed packet (`whole`: the ciphertext, then the tag) in place.
trait Contender {
    fn name(&self) -> &'static str;
    fn seal(&self, n: u64, buf: &mut [u8]) -> [u8; 16];
    fn open(&self, n: u64, whole: &mut [u8]) -> bool;
}

/// A sealed packet's ciphertext and tag.
fn split(whole: &mut [u8]) -> (&mut [u8], [u8; 16]) {
    let at = whole.len() - 16;
    let (ct, tag) = whole.split_at_mut(at);
    (ct, (&*tag).try_into().expect("16 bytes"))
}

fn nonce(n: u64) -> [u8; 12] {
    let mut out = [0u8; 12];
    out[..8].copy_from_slice(&n.to_le_bytes());
    out
}

/// A RustCrypto AEAD (both crates implement the `aead` crate's one trait).
struct RustCrypto<A>(A, &'static str);
struct Ring(ring::aead::LessSafeKey, &'static str);
struct AwsLc(aws_lc_rs::aead::LessSafeKey, &'static str);

impl<A: aead::AeadInPlace> Contender for RustCrypto<A> {
    fn name(&self) -> &'static str {
        self.1
    }
    fn seal(&self, n: u64, buf: &mut [u8]) -> [u8; 16] {
        let bytes = nonce(n);
        let nonce = aead::Nonce::<A>::from_slice(&bytes);
        let tag = self.0.encrypt_in_place_detached(nonce, &HEADER, buf).expect("a small packet");
        tag.as_slice().try_into().expect("16 bytes")
    }
    fn open(&self, n: u64, whole: &mut [u8]) -> bool {
        let (ct, tag) = split(whole);
        let bytes = nonce(n);
        let nonce = aead::Nonce::<A>::from_slice(&bytes);
        self.0.decrypt_in_place_detached(nonce, &HEADER, ct, aead::Tag::<A>::from_slice(&tag)).is_ok()
    }
}

impl Contender for Ring {
    fn name(&self) -> &'static str {
        self.1
    }
    fn seal(&self, n: u64, buf: &mut [u8]) -> [u8; 16] {
        use ring::aead::{Aad, Nonce};
        let tag = self.0.seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce(n)), Aad::from(&HEADER), buf);
        tag.expect("a small packet").as_ref().try_into().expect("16 bytes")
    }
    fn open(&self, n: u64, whole: &mut [u8]) -> bool {
        use ring::aead::{Aad, Nonce};
        self.0.open_in_place(Nonce::assume_unique_for_key(nonce(n)), Aad::from(&HEADER), whole).is_ok()
    }
}

impl Contender for AwsLc {
    fn name(&self) -> &'static str {
        self.1
    }
    fn seal(&self, n: u64, buf: &mut [u8]) -> [u8; 16] {
        use aws_lc_rs::aead::{Aad, Nonce};
        let tag = self.0.seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce(n)), Aad::from(&HEADER), buf);
        tag.expect("a small packet").as_ref().try_into().expect("16 bytes")
    }
    fn open(&self, n: u64, whole: &mut [u8]) -> bool {
        use aws_lc_rs::aead::{Aad, Nonce};
        self.0.open_in_place(Nonce::assume_unique_for_key(nonce(n)), Aad::from(&HEADER), whole).is_ok()
    }
}

fn contenders() -> Vec<Box<dyn Contender>> {
    use aes_gcm::KeyInit as _;
    let ring_key = |alg: &'static ring::aead::Algorithm| {
        ring::aead::LessSafeKey::new(ring::aead::UnboundKey::new(alg, &KEY).expect("a 32-byte key"))
    };
    let aws_key = |alg: &'static aws_lc_rs::aead::Algorithm| {
        aws_lc_rs::aead::LessSafeKey::new(aws_lc_rs::aead::UnboundKey::new(alg, &KEY).expect("a 32-byte key"))
    };
    vec![
        Box::new(RustCrypto(
            chacha20poly1305::ChaCha20Poly1305::new(&KEY.into()),
            "RustCrypto ChaCha20-Poly1305 (proto's own)",
        )),
        Box::new(RustCrypto(aes_gcm::Aes256Gcm::new(&KEY.into()), "RustCrypto AES-256-GCM")),
        Box::new(Ring(ring_key(&ring::aead::CHACHA20_POLY1305), "ring ChaCha20-Poly1305")),
        Box::new(Ring(ring_key(&ring::aead::AES_256_GCM), "ring AES-256-GCM")),
        Box::new(AwsLc(aws_key(&aws_lc_rs::aead::CHACHA20_POLY1305), "aws-lc-rs ChaCha20-Poly1305")),
        Box::new(AwsLc(aws_key(&aws_lc_rs::aead::AES_256_GCM), "aws-lc-rs AES-256-GCM")),
    ]
}

/// Every contender opens what it sealed, refuses a flipped byte, and gives the same
/// bytes as the others of its algorithm (index 0, 2, 4 are ChaCha20-Poly1305; 1, 3, 5
/// AES-256-GCM). The error names the first that does not.
pub fn agree() -> Result<(), String> {
    let all = contenders();
    for size in [1usize, 32, 256, 1_100] {
        let plain: Vec<u8> = (0..size).map(|i| i as u8).collect();
        let mut sealed = Vec::new();
        for c in &all {
            let mut buf = plain.clone();
            let tag = c.seal(7, &mut buf);
            let whole = [buf.as_slice(), &tag].concat();
            let mut back = whole.clone();
            if !c.open(7, &mut back) || back[..size] != plain[..] {
                return Err(format!("{} does not open what it sealed ({size} bytes)", c.name()));
            }
            let mut bad = whole.clone();
            bad[0] ^= 1;
            if c.open(7, &mut bad) {
                return Err(format!("{} opened a flipped byte ({size} bytes)", c.name()));
            }
            sealed.push(whole);
        }
        for i in 2..all.len() {
            if sealed[i] != sealed[i % 2] {
                return Err(format!("{} and {} differ on {size} bytes", all[i].name(), all[i % 2].name()));
            }
        }
    }
    Ok(())
}

/// Prints part (e): ns per seal and per open of each contender, the median of
/// alternating rounds, for a 32-byte input's packet, a 256-byte one and a full one.
pub fn print_cost() -> Result<(), String> {
    agree()?;
    let all = contenders();
    println!(
        "\n(e) the vetted AEADs on one packet (ns; a 7-byte header as associated data), median of {ROUNDS} \
         alternating rounds of {BATCH}; every contender's output checked against the others' first:"
    );
    println!("    {:<40} | {:>13} | {:>13} | {:>13}", "", "32 B", "256 B", "1100 B");
    println!(
        "    {:<40} | {:>6} {:>6} | {:>6} {:>6} | {:>6} {:>6}",
        "AEAD", "seal", "open", "seal", "open", "seal", "open"
    );
    let sizes = [32usize, 256, 1_100];
    let mut times = vec![vec![(Vec::new(), Vec::new()); sizes.len()]; all.len()];
    for _ in 0..ROUNDS {
        for (ci, c) in all.iter().enumerate() {
            for (si, &size) in sizes.iter().enumerate() {
                let mut buf = vec![0u8; size];
                let mut tags = Vec::with_capacity(BATCH);
                let t = Instant::now();
                for n in 0..BATCH as u64 {
                    tags.push(c.seal(n, black_box(&mut buf)));
                }
                times[ci][si].0.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
                // Open one sealed packet over and over, each time from a fresh copy
                // into the same buffer (the copy is the same for every contender).
                let mut packet = vec![0u8; size];
                let tag = c.seal(0, &mut packet);
                packet.extend_from_slice(&tag);
                let mut copy = packet.clone();
                let t = Instant::now();
                for _ in 0..BATCH {
                    copy.copy_from_slice(&packet);
                    assert!(c.open(0, black_box(&mut copy)));
                }
                times[ci][si].1.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
                black_box(tags);
            }
        }
    }
    for (ci, c) in all.iter().enumerate() {
        let cells: Vec<String> =
            times[ci].iter().map(|(s, o)| format!("{:>6.0} {:>6.0}", median(s.clone()), median(o.clone()))).collect();
        println!("    {:<40} | {}", c.name(), cells.join(" | "));
    }
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    let aes = std::arch::is_x86_feature_detected!("aes") && std::arch::is_x86_feature_detected!("pclmulqdq");
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    let aes = "not x86";
    println!("    (AES-NI and CLMUL on this CPU: {aes}; each open includes copying the packet into its buffer)");
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The comparison is only fair if every contender does the same work: the same
    /// algorithm gives the same bytes, and each opens what it sealed and nothing else.
    #[test]
    fn every_contender_agrees_with_the_others_of_its_algorithm() {
        super::agree().unwrap();
    }
}
