//! The cryptography of a connection, all of it from vetted RustCrypto crates: X25519
//! for the key agreement (x25519-dalek), HKDF-SHA256 for the keys and HMAC-SHA256 for
//! the client's proof (hkdf, hmac, sha2), ChaCha20-Poly1305 (chacha20poly1305) or
//! AES-256-GCM (aes-gcm, where both ends run it in hardware) for packets,
//! and a ChaCha20 generator for every secret the endpoint draws (rand_chacha). Nothing
//! here is a primitive of our own; this file only says how they are put together.
//!
//! The construction, per connection (the design is Noise's NNpsk0 pattern, written out
//! so that the packet header can be the AEAD's associated data, which snow's stateless
//! transport does not offer):
//! ```text
//! psk         = the match secret, the connect token's key, or 32 zero bytes (open)
//! proof       = HMAC-SHA256(psk, "tickwire proof" | protocol_id | client_salt | cookie | security | client_pub
//!                           [| dialled server address, with a connect token] [| binding] | cipher offer)[..16]
//! denied tag  = HMAC-SHA256(psk, "tickwire denied" | the same | reason)[..16]   (a refusal after the proof held)
//! shared      = X25519(own ephemeral secret, peer's ephemeral public)   (all-zero: refused)
//! c2s | s2c   = HKDF-SHA256(salt = psk, ikm = shared,
//!                           info = "tickwire keys" | protocol_id | client_salt | server_salt | client_pub | server_pub
//!                                  | dialled server address (zero without a connect token) | binding | security
//!                                  | cipher offer | cipher)
//! confirm     = AEAD(s2c, nonce = CONFIRM, ad = the Accepted packet before its tag, empty)
//! packet      = header | AEAD(key of its direction, nonce = 0u32 | seq u64, ad = header, frames)
//! ```
//! AEAD is the cipher the server picked from the client's offer (`wire::Cipher`):
//! AES-256-GCM when both ends run it in hardware (about three times faster there),
//! else ChaCha20-Poly1305. The offer is under the proof and the pick under the
//! confirmation, and both are in the keys' info, so nobody on the path can make two
//! ends that could use AES settle for ChaCha, or the other way round.
//! The nonce is the packet's 64-bit sequence number, of which the header carries the
//! low 16 bits (48 in the long form, sent while the peer's acks lag far behind); the
//! receiver rebuilds the rest from the newest packet it authenticated
//! ([`full_sequence`]). Keys are fresh per connection (ephemeral X25519 on both ends)
//! and differ per direction, so a sequence number is never used twice with one key.
//!
//! `security` is the handshake's mode byte (`wire::SecurityMode`: 0 our AEAD, 2 the
//! carrier's packet protection). With carrier protection the handshake is the same,
//! proof, keys and confirmation included; only the packet line above is skipped: the
//! keys confirm the handshake and are dropped. The proof covers the byte, so a man in
//! the middle who changes it breaks the proof; the keys cover it too, so a server's
//! confirmation is for the mode the client asked for.

use std::net::{IpAddr, SocketAddr};

use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use rand_chacha::ChaCha20Rng;

use super::credential::Binding;
use super::packet_aead::{NONCE_SIZE, PacketKey, ProvidedAead};
use crate::wire::Cipher;
use rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};
use zeroize::{Zeroize, Zeroizing};

/// Bytes of a key, a secret or an X25519 public key.
pub const KEY_SIZE: usize = 32;
/// Bytes of the authentication tag every encrypted packet ends with.
pub(super) const TAG_SIZE: usize = 16;
/// Bytes of the client's proof of its secret in a connect response.
pub(super) const PROOF_SIZE: usize = 16;

/// A 32-byte symmetric secret (a match secret, a connect-token key). Its `Debug` never
/// prints it, and its bytes are wiped when it is dropped.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub [u8; KEY_SIZE]);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

/// The pre-shared key of an open connection: anyone can compute it, so it proves nothing.
pub(crate) const OPEN_PSK: [u8; KEY_SIZE] = [0; KEY_SIZE];

/// The endpoint's source of secrets: a ChaCha20 generator seeded from the config's
/// `seed` and `key_seed` (SHA-256 of both). The runtime fills `key_seed` from the OS,
/// so nothing an observer sees (salts on the wire) tells it the next key; tests leave
/// it zero and get a reproducible run from `seed` alone.
pub(crate) struct SecretRng(ChaCha20Rng);

impl SecretRng {
    pub(crate) fn new(seed: u64, key_seed: &[u8; KEY_SIZE]) -> Self {
        let mut h = Sha256::new();
        h.update(b"tickwire endpoint rng");
        h.update(seed.to_le_bytes());
        h.update(key_seed);
        SecretRng(ChaCha20Rng::from_seed(h.finalize().into()))
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    pub(crate) fn fill(&mut self, out: &mut [u8]) {
        self.0.fill_bytes(out)
    }
}

/// One side's ephemeral X25519 key pair, used for one handshake. The secret half is
/// wiped when it is dropped.
pub(crate) struct Ephemeral {
    secret: [u8; KEY_SIZE],
    pub public: [u8; KEY_SIZE],
}

impl Ephemeral {
    pub(super) fn generate(rng: &mut SecretRng) -> Self {
        let mut secret = [0u8; KEY_SIZE];
        rng.fill(&mut secret);
        let public = x25519_dalek::x25519(secret, x25519_dalek::X25519_BASEPOINT_BYTES);
        Ephemeral { secret, public }
    }

    /// The shared secret with the peer's public key, wiped when the caller drops it;
    /// `None` for a low-order point (an all-zero result), which a peer can send to force
    /// a known key. (`x25519` takes the secret by value: that copy, and the scalar
    /// multiplication's temporaries, are on x25519-dalek's stack and not wiped by us.)
    pub(super) fn agree(&self, peer_public: &[u8; KEY_SIZE]) -> Option<Zeroizing<[u8; KEY_SIZE]>> {
        let shared = Zeroizing::new(x25519_dalek::x25519(self.secret, *peer_public));
        // Constant-time enough: this is a yes/no about a value nobody else knows.
        (*shared != [0u8; KEY_SIZE]).then_some(shared)
    }
}

impl Drop for Ephemeral {
    fn drop(&mut self) {
        self.secret.zeroize();
    }
}

/// What the client's proof covers: everything in the response that an on-path attacker
/// could otherwise swap, and, with a connect token, the server address the client
/// dialled, so that a connection cannot be redirected to another server of the same
/// backend (before, the responder was bound to nothing).
pub(crate) struct ProofInput<'a> {
    pub protocol_id: u32,
    pub client_salt: u64,
    pub cookie_time: u64,
    pub cookie_mac: u64,
    /// The handshake's mode byte (`wire::SecurityMode as u8`): which protection both
    /// ends agree to, so that nobody on the path can downgrade one of them.
    pub security: u8,
    pub client_public: &'a [u8; KEY_SIZE],
    pub dialled: Option<SocketAddr>,
    /// Who the initiator says both ends are (a P2P session's player indices).
    pub binding: Option<Binding>,
    /// The client's cipher offer (`wire::CipherOffer::bits`).
    pub ciphers: u8,
}

/// A binding as 9 bytes (a flag, then both ids); zero without one.
fn binding_bytes(b: Option<Binding>) -> [u8; 9] {
    let mut out = [0u8; 9];
    if let Some(b) = b {
        out[0] = 1;
        out[1..5].copy_from_slice(&b.initiator.to_le_bytes());
        out[5..].copy_from_slice(&b.responder.to_le_bytes());
    }
    out
}

/// An address as 19 bytes (family, IP, port), IPv4-mapped IPv6 folded to IPv4, so that
/// both ends write the same bytes for the same address.
fn address_bytes(a: SocketAddr) -> [u8; 19] {
    let mut out = [0u8; 19];
    let ip = match a.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) => {
            out[0] = 4;
            out[1..5].copy_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            out[0] = 6;
            out[1..17].copy_from_slice(&v6.octets());
        }
    }
    out[17..].copy_from_slice(&a.port().to_le_bytes());
    out
}

/// The MAC over the handshake's transcript under `psk`, for one purpose (`label`).
fn transcript_mac(psk: &[u8; KEY_SIZE], label: &[u8], p: &ProofInput) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(psk).expect("HMAC takes any key length");
    mac.update(label);
    mac.update(&p.protocol_id.to_le_bytes());
    mac.update(&p.client_salt.to_le_bytes());
    mac.update(&p.cookie_time.to_le_bytes());
    mac.update(&p.cookie_mac.to_le_bytes());
    mac.update(&[p.security]);
    mac.update(p.client_public);
    if let Some(a) = p.dialled {
        mac.update(&address_bytes(a));
    }
    if p.binding.is_some() {
        mac.update(&binding_bytes(p.binding));
    }
    mac.update(&[p.ciphers]);
    mac
}

fn truncated(mac: Hmac<Sha256>) -> [u8; PROOF_SIZE] {
    let full = mac.finalize().into_bytes();
    let mut out = [0u8; PROOF_SIZE];
    out.copy_from_slice(&full[..PROOF_SIZE]);
    out
}

/// The client's proof that it knows `psk`.
pub(crate) fn proof(psk: &[u8; KEY_SIZE], p: &ProofInput) -> [u8; PROOF_SIZE] {
    truncated(transcript_mac(psk, b"tickwire proof", p))
}

/// Checks a proof in constant time.
pub(crate) fn proof_holds(psk: &[u8; KEY_SIZE], p: &ProofInput, proof: &[u8; PROOF_SIZE]) -> bool {
    transcript_mac(psk, b"tickwire proof", p).verify_truncated_left(proof).is_ok()
}

fn denial_mac(psk: &[u8; KEY_SIZE], p: &ProofInput, reason: u8) -> Hmac<Sha256> {
    let mut mac = transcript_mac(psk, b"tickwire denied", p);
    mac.update(&[reason]);
    mac
}

/// The server's tag on a `Denied` that answers a response whose proof held: the client
/// checks it with the key it proved, so that nobody on the path can end its handshake
/// with a reason of their choice. A refusal of a proof that did
/// not hold has no key to be tagged with, and the client takes it as advisory only.
pub(crate) fn denial_tag(psk: &[u8; KEY_SIZE], p: &ProofInput, reason: u8) -> [u8; TAG_SIZE] {
    truncated(denial_mac(psk, p, reason))
}

/// Checks a `Denied`'s tag in constant time.
pub(crate) fn denial_holds(psk: &[u8; KEY_SIZE], p: &ProofInput, reason: u8, tag: &[u8; TAG_SIZE]) -> bool {
    denial_mac(psk, p, reason).verify_truncated_left(tag).is_ok()
}

/// What both ends mix into the keys besides the shared secret: the whole handshake,
/// and with a connect token the server address the client dialled.
pub(crate) struct KeyContext<'a> {
    pub protocol_id: u32,
    pub client_salt: u64,
    pub server_salt: u64,
    pub client_public: &'a [u8; KEY_SIZE],
    pub server_public: &'a [u8; KEY_SIZE],
    pub dialled: Option<SocketAddr>,
    pub binding: Option<Binding>,
    /// The handshake's mode byte, as in [`ProofInput::security`].
    pub security: u8,
    /// The client's offer, as in [`ProofInput::ciphers`].
    pub ciphers: u8,
    /// The cipher the server picked.
    pub cipher: Cipher,
}

/// The nonce of the `Accepted` packet's key confirmation. Packet nonces start with four
/// zero bytes, so this one (first byte 1) is never a packet's.
const CONFIRM_NONCE: [u8; 12] = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

/// A connection's two packet keys: one to seal what we send, one to open what we
/// receive.
pub(crate) struct PacketKeys {
    seal: PacketKey,
    open: PacketKey,
}

impl PacketKeys {
    /// Derives both directions' keys; `initiator` says which one is ours to send with.
    ///
    /// The output key material is wiped here, and the packet keys are wiped by
    /// `ChaCha20Poly1305`'s and `Aes256Gcm`'s own `Drop` (their `zeroize` features). The PRK is not, and cannot be from here: hkdf
    /// 0.12 never hands out its bytes but keeps them as HMAC-SHA256 inner and outer hash
    /// states (hmac 0.12, sha2 0.10), private and without `Zeroize`, and this crate
    /// forbids `unsafe`. So after this returns, until the stack is reused, its frame may
    /// still hold (a) the PRK-keyed states of `hk`, which give this connection's two
    /// keys and nothing else, and (b) the psk-keyed states of the extract step, which
    /// let one compute HMACs under the psk (a client's proof, for a match secret or a
    /// token key). `proof_mac` leaves the same psk-keyed states behind.
    /// `provider` makes the keys if it has the cipher (`packet_aead.rs`).
    pub(super) fn derive(
        shared: &[u8; KEY_SIZE],
        psk: &[u8; KEY_SIZE],
        cx: &KeyContext,
        initiator: bool,
        provider: Option<&ProvidedAead>,
    ) -> Self {
        let hk = Hkdf::<Sha256>::new(Some(psk), shared);
        let mut okm = Zeroizing::new([0u8; 2 * KEY_SIZE]);
        hk.expand_multi_info(
            &[
                b"tickwire keys",
                &cx.protocol_id.to_le_bytes(),
                &cx.client_salt.to_le_bytes(),
                &cx.server_salt.to_le_bytes(),
                cx.client_public,
                cx.server_public,
                &cx.dialled.map_or([0; 19], address_bytes),
                &binding_bytes(cx.binding),
                &[cx.security],
                &[cx.ciphers, cx.cipher as u8],
            ],
            &mut *okm,
        )
        .expect("64 bytes is a valid HKDF-SHA256 output length");
        let half =
            |i: usize| -> &[u8; KEY_SIZE] { okm[i * KEY_SIZE..(i + 1) * KEY_SIZE].try_into().expect("32 bytes") };
        let c2s = PacketKey::new(cx.cipher, half(0), provider);
        let s2c = PacketKey::new(cx.cipher, half(1), provider);
        if initiator { PacketKeys { seal: c2s, open: s2c } } else { PacketKeys { seal: s2c, open: c2s } }
    }

    /// The cipher both keys are for.
    pub(super) fn cipher(&self) -> Cipher {
        self.seal.cipher()
    }

    fn nonce(seq: u64) -> [u8; NONCE_SIZE] {
        let mut n = [0u8; NONCE_SIZE];
        n[4..].copy_from_slice(&seq.to_le_bytes());
        n
    }

    /// Encrypts `body` in place and returns the tag that authenticates it with `header`.
    pub(super) fn seal(&self, seq: u64, header: &[u8], body: &mut [u8]) -> [u8; TAG_SIZE] {
        self.seal.seal(&Self::nonce(seq), header, body)
    }

    /// Decrypts `body` in place if `tag` authenticates it with `header`; on failure
    /// `body` holds anything (a provided library may have decrypted it or cleared it:
    /// the caller opens a copy).
    pub(super) fn open(&self, seq: u64, header: &[u8], body: &mut [u8], tag: &[u8; TAG_SIZE]) -> bool {
        self.open.open(&Self::nonce(seq), header, body, tag)
    }

    /// A hint that [`PacketKeys::seal`] comes soon ([`PacketAead::prefetch`](super::PacketAead::prefetch)).
    pub(super) fn prefetch_seal(&self) {
        self.seal.prefetch();
    }

    /// A hint that [`PacketKeys::open`] comes soon.
    pub(super) fn prefetch_open(&self) {
        self.open.prefetch();
    }

    /// The server's key confirmation over its `Accepted` packet.
    pub(super) fn confirm(&self, accepted: &[u8]) -> [u8; TAG_SIZE] {
        self.seal.seal(&CONFIRM_NONCE, accepted, &mut [])
    }

    /// The client's check of the server's key confirmation.
    pub(super) fn confirmed(&self, accepted: &[u8], tag: &[u8; TAG_SIZE]) -> bool {
        self.open.open(&CONFIRM_NONCE, accepted, &mut [], tag)
    }
}

/// The full 64-bit sequence number of a packet whose header carries `low` (and, in the
/// long form, `high`: bits 16-47), given the newest sequence number received so far on
/// the connection: the candidate nearest to the one after it. `None` if that would be
/// below zero (a packet from before the connection began). A short-form packet more
/// than 32,768 away from the expected one gets the wrong number, fails authentication
/// and is dropped; the sender switches to the long form long before its packets can be
/// that far ahead of what the receiver has (see `Connection::begin_packet`), and a
/// long-form packet is right for any gap below 2^47.
///
/// Whatever it returns, the number is only a guess until the packet authenticates
/// with it (the nonce): a forged long-form number costs one AEAD open like any forgery,
/// and the replay window is checked before and moved only after.
pub(crate) fn full_sequence(low: u16, high: Option<u32>, newest: Option<u64>) -> Option<u64> {
    let expected = newest.map_or(0, |n| n + 1);
    let (carried, bits) = match high {
        None => (low as u64, 16),
        Some(h) => ((h as u64) << 16 | low as u64, 48),
    };
    let span = 1u64 << bits;
    // The distance forward from `expected` to the carried bits, modulo the span, then
    // read as signed: the nearest candidate, behind or ahead.
    let ahead = carried.wrapping_sub(expected) & (span - 1);
    let delta = if ahead >= span / 2 { ahead as i64 - span as i64 } else { ahead as i64 };
    expected.checked_add_signed(delta)
}

/// Authenticated sequence numbers seen recently: a packet already seen or older than the
/// window is refused before it is decrypted. Only authenticated packets are recorded,
/// so a forged packet cannot close the window on a genuine one.
#[derive(Debug, Default)]
pub(crate) struct ReplayWindow {
    newest: Option<u64>,
    /// Bit i: `newest - i` was seen.
    seen: [u64; REPLAY_WORDS],
}

const REPLAY_WORDS: usize = 4;
/// Packets the replay window remembers below the newest.
pub(crate) const REPLAY_WINDOW: u64 = (REPLAY_WORDS * 64) as u64;

impl ReplayWindow {
    pub(super) fn newest(&self) -> Option<u64> {
        self.newest
    }

    /// Whether `seq` is new: not seen, and not older than the window.
    pub(super) fn is_fresh(&self, seq: u64) -> bool {
        let Some(newest) = self.newest else { return true };
        if seq > newest {
            return true;
        }
        let age = newest - seq;
        age < REPLAY_WINDOW && self.seen[(age / 64) as usize] & (1 << (age % 64)) == 0
    }

    /// Records an authenticated `seq` (which [`ReplayWindow::is_fresh`] accepted).
    pub(super) fn record(&mut self, seq: u64) {
        match self.newest {
            Some(newest) if seq <= newest => {
                let age = newest - seq;
                self.seen[(age / 64) as usize] |= 1 << (age % 64);
            }
            _ => {
                let shift = self.newest.map_or(REPLAY_WINDOW, |n| seq - n);
                self.shift(shift);
                self.seen[0] |= 1;
                self.newest = Some(seq);
            }
        }
    }

    /// Ages every entry by `by` packets.
    fn shift(&mut self, by: u64) {
        if by >= REPLAY_WINDOW {
            self.seen = [0; REPLAY_WORDS];
            return;
        }
        let (words, bits) = ((by / 64) as usize, (by % 64) as u32);
        for i in (0..REPLAY_WORDS).rev() {
            let lo = if i >= words { self.seen[i - words] } else { 0 };
            let carry = if bits > 0 && i > words { self.seen[i - words - 1] >> (64 - bits) } else { 0 };
            self.seen[i] = if bits > 0 { (lo << bits) | carry } else { lo };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handshake(seed: u64, psk: &[u8; KEY_SIZE]) -> (PacketKeys, PacketKeys) {
        handshake_with(seed, psk, Cipher::ChaCha20Poly1305)
    }

    fn handshake_with(seed: u64, psk: &[u8; KEY_SIZE], cipher: Cipher) -> (PacketKeys, PacketKeys) {
        let mut rng = SecretRng::new(seed, &[0; KEY_SIZE]);
        let (c, s) = (Ephemeral::generate(&mut rng), Ephemeral::generate(&mut rng));
        let cx = KeyContext {
            protocol_id: 7,
            client_salt: rng.next_u64(),
            server_salt: rng.next_u64(),
            client_public: &c.public,
            server_public: &s.public,
            dialled: None,
            binding: None,
            security: 0,
            ciphers: 3,
            cipher,
        };
        let (cs, ss) = (c.agree(&s.public).unwrap(), s.agree(&c.public).unwrap());
        assert_eq!(cs, ss, "both ends agree on the shared secret");
        (PacketKeys::derive(&cs, psk, &cx, true, None), PacketKeys::derive(&ss, psk, &cx, false, None))
    }

    fn sealed(keys: &PacketKeys, seq: u64) -> Vec<u8> {
        let mut body = b"the same frames".to_vec();
        let tag = keys.seal(seq, b"hdr", &mut body);
        body.extend_from_slice(&tag);
        body
    }

    /// Compiles only for a value whose type wipes itself when dropped.
    fn wiped_on_drop<T: zeroize::ZeroizeOnDrop>(_: &T) {}

    impl PacketKey {
        /// Where the key schedule lives.
        fn address(&self) -> usize {
            use super::super::packet_aead::{Builtin, PacketAead};
            match self {
                PacketKey::Builtin(Builtin::ChaCha(k)) => &**k as *const _ as usize,
                PacketKey::Builtin(Builtin::Aes(k)) => &**k as *const _ as usize,
                PacketKey::Provided(k, _) => &**k as *const dyn PacketAead as *const u8 as usize,
            }
        }
    }

    /// A connection's keys do not move with it: moved into a table that then grows
    /// (as the endpoint's connections are), each key schedule is where it was made, so
    /// its drop wipes the only copy the move could have left. For both ciphers.
    #[test]
    fn keys_stay_where_they_were_made_when_their_connection_moves() {
        for cipher in [Cipher::ChaCha20Poly1305, Cipher::Aes256Gcm] {
            let (keys, _) = handshake_with(5, &[1; KEY_SIZE], cipher);
            let made = [keys.seal.address(), keys.open.address()];
            let mut table = Vec::with_capacity(1);
            table.push(keys);
            for seed in 0..64 {
                table.push(handshake_with(seed, &[1; KEY_SIZE], cipher).0);
            }
            assert_eq!([table[0].seal.address(), table[0].open.address()], made, "{cipher:?}");
            assert_eq!(sealed(&table[0], 1), sealed(&handshake_with(5, &[1; KEY_SIZE], cipher).0, 1));
        }
    }

    /// The copies of secret material handed out to callers wipe themselves: the shared
    /// secret of a key agreement, and a minted token (it holds the token's key in clear).
    /// A type-level check: what a dropped value leaves in memory is not read here.
    #[test]
    fn secret_copies_handed_out_are_wiped_on_drop() {
        let mut rng = SecretRng::new(3, &[0; KEY_SIZE]);
        let (a, b) = (Ephemeral::generate(&mut rng), Ephemeral::generate(&mut rng));
        let shared = a.agree(&b.public).expect("not a low-order point");
        wiped_on_drop(&shared);
        let p = super::super::token::TokenParams {
            protocol_id: 1,
            client_id: 2,
            created: 10,
            expires: 20,
            timeout_secs: 0,
            addresses: vec!["127.0.0.1:1".parse().unwrap()],
            user_data: Vec::new(),
        };
        let token = super::super::token::mint(&Secret([9; KEY_SIZE]), &p, &[4; 56]).unwrap();
        wiped_on_drop(&token);
    }

    #[test]
    fn each_direction_opens_only_what_the_other_sealed() {
        let (client, server) = handshake(1, &OPEN_PSK);
        let mut body = b"inputs".to_vec();
        let tag = client.seal(5, b"header", &mut body);
        assert_ne!(&body[..], b"inputs");
        let mut tampered = body.clone();
        tampered[0] ^= 1;
        assert!(!server.open(5, b"header", &mut tampered, &tag), "a flipped bit fails");
        assert!(!server.open(6, b"header", &mut body.clone(), &tag), "another sequence number fails");
        assert!(!server.open(5, b"HEADER", &mut body.clone(), &tag), "another header fails");
        assert!(!client.open(5, b"header", &mut body.clone(), &tag), "our own direction's packet does not open");
        assert!(server.open(5, b"header", &mut body, &tag));
        assert_eq!(&body[..], b"inputs");
    }

    #[test]
    fn keys_differ_per_connection_and_per_direction() {
        let (a_client, a_server) = handshake(1, &OPEN_PSK);
        let (b_client, _) = handshake(2, &OPEN_PSK);
        let outputs = [sealed(&a_client, 0), sealed(&a_server, 0), sealed(&b_client, 0)];
        assert_ne!(outputs[0], outputs[1], "directions");
        assert_ne!(outputs[0], outputs[2], "connections");
        // The same handshake with another psk gives other keys: a peer without the
        // match secret cannot read or write the connection.
        let (c_client, _) = handshake(1, &[9; KEY_SIZE]);
        assert_ne!(outputs[0], sealed(&c_client, 0), "psk");
    }

    #[test]
    fn a_low_order_point_is_refused() {
        let mut rng = SecretRng::new(3, &[0; KEY_SIZE]);
        let e = Ephemeral::generate(&mut rng);
        assert_eq!(e.agree(&[0; KEY_SIZE]), None);
    }

    #[test]
    fn each_cipher_opens_its_own_packets_only() {
        let psk = [9; KEY_SIZE];
        let (ca, sa) = handshake_with(5, &psk, Cipher::Aes256Gcm);
        let (cc, sc) = handshake_with(5, &psk, Cipher::ChaCha20Poly1305);
        assert_eq!((ca.cipher(), cc.cipher()), (Cipher::Aes256Gcm, Cipher::ChaCha20Poly1305));
        let open = |keys: &PacketKeys, packet: &[u8]| {
            let (body, tag) = packet.split_at(packet.len() - TAG_SIZE);
            let mut body = body.to_vec();
            keys.open(3, b"hdr", &mut body, tag.try_into().unwrap()).then_some(body)
        };
        let (aes, chacha) = (sealed(&ca, 3), sealed(&cc, 3));
        assert_eq!(open(&sa, &aes).as_deref(), Some(&b"the same frames"[..]));
        assert_eq!(open(&sc, &chacha).as_deref(), Some(&b"the same frames"[..]));
        // The same handshake under the other cipher: other keys (the pick is in their
        // info), another algorithm.
        assert_eq!(open(&sc, &aes), None);
        assert_eq!(open(&sa, &chacha), None);
        assert_ne!(aes, chacha);
        // The AES key schedule wipes itself (the aes crate's `zeroize` feature).
        wiped_on_drop(&<aes::Aes256 as chacha20poly1305::KeyInit>::new(&[0; KEY_SIZE].into()));
    }

    #[test]
    fn a_proof_holds_only_for_its_secret_and_fields() {
        let public = [4u8; KEY_SIZE];
        let input = |salt| ProofInput {
            protocol_id: 1,
            client_salt: salt,
            cookie_time: 2,
            cookie_mac: 3,
            security: 0,
            client_public: &public,
            dialled: None,
            binding: None,
            ciphers: 1,
        };
        let p = proof(&[7; KEY_SIZE], &input(10));
        assert!(proof_holds(&[7; KEY_SIZE], &input(10), &p));
        assert!(!proof_holds(&[8; KEY_SIZE], &input(10), &p));
        assert!(!proof_holds(&[7; KEY_SIZE], &input(11), &p));
        // The mode is bound: an AEAD client's proof is none for a carrier-protected
        // handshake (a man in the middle cannot change the byte), nor for plaintext.
        for security in [1, 2] {
            assert!(!proof_holds(&[7; KEY_SIZE], &ProofInput { security, ..input(10) }, &p), "{security}");
        }
        // The dialled server address is bound: a proof for one server is none for another.
        let at = |port| ProofInput { dialled: Some(SocketAddr::from(([192, 0, 2, 1], port))), ..input(10) };
        let bound = proof(&[7; KEY_SIZE], &at(7000));
        assert!(proof_holds(&[7; KEY_SIZE], &at(7000), &bound));
        assert!(!proof_holds(&[7; KEY_SIZE], &at(7001), &bound));
        assert!(!proof_holds(&[7; KEY_SIZE], &input(10), &bound));
        // An IPv4-mapped IPv6 spelling is the same address.
        let mapped = ProofInput { dialled: Some("[::ffff:192.0.2.1]:7000".parse().unwrap()), ..input(10) };
        assert!(proof_holds(&[7; KEY_SIZE], &mapped, &bound));
        // A refusal's tag holds for its reason and key only, and is not a proof.
        let tag = denial_tag(&[7; KEY_SIZE], &input(10), 6);
        assert!(denial_holds(&[7; KEY_SIZE], &input(10), 6, &tag));
        assert!(!denial_holds(&[7; KEY_SIZE], &input(10), 10, &tag));
        assert!(!denial_holds(&[8; KEY_SIZE], &input(10), 6, &tag));
        assert!(!proof_holds(&[7; KEY_SIZE], &input(10), &tag));
        // A binding is covered: the same proof with other ends, or none, does not hold.
        let bound = |i, r| ProofInput { binding: Some(Binding { initiator: i, responder: r }), ..input(10) };
        let p01 = proof(&[7; KEY_SIZE], &bound(0, 1));
        assert!(proof_holds(&[7; KEY_SIZE], &bound(0, 1), &p01));
        assert!(!proof_holds(&[7; KEY_SIZE], &bound(0, 2), &p01));
        assert!(!proof_holds(&[7; KEY_SIZE], &bound(1, 0), &p01));
        assert!(!proof_holds(&[7; KEY_SIZE], &input(10), &p01));
    }

    #[test]
    fn the_full_sequence_is_rebuilt_across_wraps() {
        assert_eq!(full_sequence(0, None, None), Some(0));
        assert_eq!(full_sequence(3, None, None), Some(3));
        assert_eq!(full_sequence(65_535, None, None), None, "before the first packet");
        assert_eq!(full_sequence(2, None, Some(65_534)), Some(65_538));
        assert_eq!(full_sequence(65_530, None, Some(65_540)), Some(65_530), "late, across the wrap");
        assert_eq!(full_sequence(10, None, Some(1 << 40)), Some((1 << 40) + 10));
        // The short form cannot reach past half its span: 40,000 ahead reads as behind.
        assert_eq!(full_sequence(70_001u64 as u16, None, Some(30_000)), Some(70_001 - 65_536));
    }

    #[test]
    fn the_long_form_names_any_gap() {
        let long = |seq: u64| (seq as u16, Some((seq >> 16) as u32));
        for (newest, seq) in [
            (Some(99), 40_100),
            (Some(99), 99 + 65_536),
            (Some(99), 99 + 65_537),
            (Some(5 << 40), (5 << 40) + 3_000_000_000),
            (None, 70_000),
            (Some(1 << 48), (1 << 48) + 70_000),
            (Some((1 << 48) + 10), (1 << 48) - 10),
        ] {
            let (low, high) = long(seq);
            assert_eq!(full_sequence(low, high, newest), Some(seq), "{seq} after {newest:?}");
        }
        // Old packets in the long form are rebuilt as old, for the replay window to refuse.
        let (low, high) = long(10);
        assert_eq!(full_sequence(low, high, Some(1_000_000)), Some(10));
    }

    #[test]
    fn the_replay_window_refuses_duplicates_and_the_too_old() {
        let mut w = ReplayWindow::default();
        for s in [0u64, 1, 2, 5] {
            assert!(w.is_fresh(s));
            w.record(s);
            assert!(!w.is_fresh(s));
        }
        assert!(w.is_fresh(3) && w.is_fresh(4), "reordered packets are still fresh");
        w.record(4);
        assert!(!w.is_fresh(4) && w.is_fresh(3));
        w.record(300);
        assert!(!w.is_fresh(300) && w.is_fresh(299) && w.is_fresh(45));
        assert!(!w.is_fresh(300 - REPLAY_WINDOW), "older than the window");
        assert!(!w.is_fresh(4), "far behind now");
        // Shifts by amounts that cross word boundaries keep what was seen.
        let mut w = ReplayWindow::default();
        w.record(100);
        w.record(99);
        w.record(170); // 70 ahead: across one word
        assert!(!w.is_fresh(100) && !w.is_fresh(99) && w.is_fresh(98) && w.is_fresh(101));
        w.record(300);
        assert!(!w.is_fresh(170) && w.is_fresh(171) && w.is_fresh(169));
    }
}
