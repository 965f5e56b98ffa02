//! Connect tokens, in the manner of netcode 1.02: a game backend that holds the relay
//! server's 32-byte key mints one per client and hands it over its own secure channel
//! (HTTPS). The token has a public part the client reads and a private part sealed
//! with XChaCha20-Poly1305 under the key, which only the server can open.
//!
//! ```text
//! token (CONNECT_TOKEN_SIZE bytes, what the client is given)
//!   version u8 | protocol_id u32 | created u64 | expires u64 | timeout_secs u32
//!   | nonce [24] | sealed private [PRIVATE_SIZE + 16] | token_key [32]
//!   | address count u8 | addresses [MAX_TOKEN_ADDRESSES x 19] | zero padding
//! private (sealed; associated data "tickwire token" | version | protocol_id | expires)
//!   client_id u64 | timeout_secs u32 | token_key [32] | address count u8
//!   | addresses [MAX_TOKEN_ADDRESSES x 19] | user_data [USER_DATA_SIZE] | zero padding
//! address: family u8 (4 or 6; 0 unused) | ip [16] (IPv4 in the first 4) | port u16
//! ```
//! The client sends the nonce, the expiry and the sealed part in its connect response,
//! and proves that it holds `token_key` (only in the public part, never on the wire).
//! So a token read off the wire is worthless: without its key the handshake fails.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{KeyInit, Tag, XChaCha20Poly1305, XNonce};
use zeroize::Zeroizing;

use super::crypto::{KEY_SIZE, Secret, TAG_SIZE};
use crate::wire::{Reader, Writer};

/// Bytes of a connect token.
pub const CONNECT_TOKEN_SIZE: usize = 1024;
/// Server addresses a token can name.
pub const MAX_TOKEN_ADDRESSES: usize = 8;
/// Bytes of game data in a token, for the server (an account id, a ticket, a skin).
pub const USER_DATA_SIZE: usize = 256;
/// Bytes of the token's nonce.
pub const TOKEN_NONCE_SIZE: usize = 24;
/// Bytes of the private part before sealing.
pub const PRIVATE_SIZE: usize = 480;
/// Bytes of the private part as sent: sealed, with its tag.
pub const SEALED_PRIVATE_SIZE: usize = PRIVATE_SIZE + TAG_SIZE;
/// The token layout's version.
pub const TOKEN_VERSION: u8 = 1;
/// family u8, ip [16], port u16.
const ADDRESS_SIZE: usize = 19;
// Both layouts fit their fixed sizes (the rest is zero padding).
const _: () = assert!(8 + 4 + KEY_SIZE + 1 + MAX_TOKEN_ADDRESSES * ADDRESS_SIZE + USER_DATA_SIZE <= PRIVATE_SIZE);
const _: () = assert!(
    1 + 4 + 8 + 8 + 4 + TOKEN_NONCE_SIZE + SEALED_PRIVATE_SIZE + KEY_SIZE + 1 + MAX_TOKEN_ADDRESSES * ADDRESS_SIZE
        <= CONNECT_TOKEN_SIZE
);

/// Why a token could not be minted, read or accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("a connect token is {CONNECT_TOKEN_SIZE} bytes, got {0}")]
    /// The token is not [`CONNECT_TOKEN_SIZE`] bytes; the size given.
    WrongSize(usize),
    #[error("token version {0} is not {TOKEN_VERSION}")]
    /// Another token format version.
    WrongVersion(u8),
    #[error("the token is for protocol id {0:#x}, this game is another")]
    /// The token is for another protocol id (another game).
    WrongProtocol(u32),
    #[error("addresses: {0} given, 1..={MAX_TOKEN_ADDRESSES} allowed")]
    /// Too few or too many server addresses.
    AddressCount(usize),
    #[error("user_data: {0} bytes given, at most {USER_DATA_SIZE}")]
    /// The user data is longer than [`USER_DATA_SIZE`].
    UserDataSize(usize),
    #[error("expires {expires} is not after created {created}")]
    /// The token would expire no later than it is made.
    Lifetime {
        /// Unix time it was made.
        created: u64,
        /// Unix time it expires.
        expires: u64,
    },
    #[error("malformed token: {0}")]
    /// The bytes do not hold a well-formed token; the text says what is wrong.
    Malformed(&'static str),
    #[error("the token's private part does not open with this key")]
    /// The private part does not open with this key (forged, or another key).
    BadSeal,
}

/// What a backend puts in a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenParams {
    /// The game's protocol id: the server refuses tokens for another game.
    pub protocol_id: u32,
    /// The player's id in the backend, handed to the server.
    pub client_id: u64,
    /// Unix time (seconds) the token was made, and after which it is refused.
    pub created: u64,
    /// Unix time (seconds) after which the token is refused.
    pub expires: u64,
    /// The connection timeout the server should use for this client, in seconds (0:
    /// the server's own).
    pub timeout_secs: u32,
    /// The server addresses the token is good for (1..=8): a server refuses a token
    /// that does not name one of its public addresses.
    pub addresses: Vec<SocketAddr>,
    /// Game data for the server, up to 256 bytes (zero-padded).
    pub user_data: Vec<u8>,
}

/// A token as the client holds it.
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectToken {
    /// The game's protocol id.
    pub protocol_id: u32,
    /// Unix time (seconds) the token was made.
    pub created: u64,
    /// Unix time (seconds) after which it is refused.
    pub expires: u64,
    /// The connection timeout the server should use, in seconds (0: the server's own).
    pub timeout_secs: u32,
    /// The nonce the private part was sealed with.
    pub nonce: [u8; TOKEN_NONCE_SIZE],
    /// The private part, sealed under the backend's key.
    pub sealed: Box<[u8; SEALED_PRIVATE_SIZE]>,
    /// The key the client proves it holds (never sent).
    pub key: Secret,
    /// The server addresses the token is good for.
    pub addresses: Vec<SocketAddr>,
}

impl std::fmt::Debug for ConnectToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectToken")
            .field("protocol_id", &self.protocol_id)
            .field("created", &self.created)
            .field("expires", &self.expires)
            .field("addresses", &self.addresses)
            .finish_non_exhaustive()
    }
}

/// What the server reads from a token it opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenClaims {
    /// The player's id in the backend.
    pub client_id: u64,
    /// The connection timeout to use for this client, in seconds (0: the server's own).
    pub timeout_secs: u32,
    /// The key the client must prove it holds.
    pub key: Secret,
    /// The server addresses the token is good for.
    pub addresses: Vec<SocketAddr>,
    /// The backend's data for the server, zero-padded.
    pub user_data: Box<[u8; USER_DATA_SIZE]>,
}

fn associated_data(protocol_id: u32, expires: u64) -> [u8; 14 + 1 + 4 + 8] {
    let mut ad = [0u8; 27];
    ad[..14].copy_from_slice(b"tickwire token");
    ad[14] = TOKEN_VERSION;
    ad[15..19].copy_from_slice(&protocol_id.to_le_bytes());
    ad[19..27].copy_from_slice(&expires.to_le_bytes());
    ad
}

fn write_addresses(w: &mut Writer, addresses: &[SocketAddr]) {
    w.u8(addresses.len() as u8);
    for i in 0..MAX_TOKEN_ADDRESSES {
        let mut ip = [0u8; 16];
        let (family, port) = match addresses.get(i) {
            None => (0, 0),
            Some(SocketAddr::V4(a)) => {
                ip[..4].copy_from_slice(&a.ip().octets());
                (4, a.port())
            }
            Some(SocketAddr::V6(a)) => {
                ip.copy_from_slice(&a.ip().octets());
                (6, a.port())
            }
        };
        w.u8(family);
        w.bytes(&ip);
        w.u16(port);
    }
}

fn read_addresses(r: &mut Reader) -> Result<Vec<SocketAddr>, TokenError> {
    let bad = |_| TokenError::Malformed("truncated");
    let count = r.u8().map_err(bad)? as usize;
    if !(1..=MAX_TOKEN_ADDRESSES).contains(&count) {
        return Err(TokenError::AddressCount(count));
    }
    let mut out = Vec::with_capacity(count);
    for i in 0..MAX_TOKEN_ADDRESSES {
        let family = r.u8().map_err(bad)?;
        let ip: [u8; 16] = r.bytes(16).map_err(bad)?.try_into().expect("16 bytes");
        let port = r.u16().map_err(bad)?;
        let addr = match family {
            4 => SocketAddr::new(IpAddr::V4(Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3])), port),
            6 => SocketAddr::new(IpAddr::V6(Ipv6Addr::from(ip)), port),
            0 if i >= count && ip == [0; 16] && port == 0 => continue,
            _ => return Err(TokenError::Malformed("bad address entry")),
        };
        if i >= count {
            return Err(TokenError::Malformed("address past the count"));
        }
        out.push(addr);
    }
    Ok(out)
}

/// Mints a token. `random` gives the nonce (its first 24 bytes) and the token key
/// (the last 32): pass fresh OS randomness, and wipe it after. The sans-IO core takes
/// it as an argument. The token holds its key in clear (the client proves it), so it
/// comes back in a buffer that is wiped when dropped.
pub fn mint(
    key: &Secret,
    p: &TokenParams,
    random: &[u8; TOKEN_NONCE_SIZE + KEY_SIZE],
) -> Result<Zeroizing<Vec<u8>>, TokenError> {
    if !(1..=MAX_TOKEN_ADDRESSES).contains(&p.addresses.len()) {
        return Err(TokenError::AddressCount(p.addresses.len()));
    }
    if p.user_data.len() > USER_DATA_SIZE {
        return Err(TokenError::UserDataSize(p.user_data.len()));
    }
    if p.expires <= p.created {
        return Err(TokenError::Lifetime { created: p.created, expires: p.expires });
    }
    let nonce: [u8; TOKEN_NONCE_SIZE] = random[..TOKEN_NONCE_SIZE].try_into().expect("24 bytes");
    let token_key = &random[TOKEN_NONCE_SIZE..];
    // The token key in clear until sealed in place: wiped when dropped. Sized once, so
    // that no growth leaves a copy behind in a freed buffer.
    let mut private = Zeroizing::new(Vec::with_capacity(PRIVATE_SIZE));
    let mut w = Writer::new(&mut private);
    w.u64(p.client_id);
    w.u32(p.timeout_secs);
    w.bytes(token_key);
    write_addresses(&mut w, &p.addresses);
    w.bytes(&p.user_data);
    w.pad_to(PRIVATE_SIZE); // user data zero-padded to its full size, and the rest
    let cipher = XChaCha20Poly1305::new_from_slice(&key.0).expect("32-byte key");
    let tag = cipher
        .encrypt_in_place_detached(XNonce::from_slice(&nonce), &associated_data(p.protocol_id, p.expires), &mut private)
        .expect("small message");
    let mut out = Zeroizing::new(Vec::with_capacity(CONNECT_TOKEN_SIZE));
    let mut w = Writer::new(&mut out);
    w.u8(TOKEN_VERSION);
    w.u32(p.protocol_id);
    w.u64(p.created);
    w.u64(p.expires);
    w.u32(p.timeout_secs);
    w.bytes(&nonce);
    w.bytes(&private);
    w.bytes(&tag);
    w.bytes(token_key);
    write_addresses(&mut w, &p.addresses);
    w.pad_to(CONNECT_TOKEN_SIZE);
    Ok(out)
}

impl ConnectToken {
    /// Reads a token as the client was given it, checking every field.
    pub fn decode(bytes: &[u8]) -> Result<Self, TokenError> {
        if bytes.len() != CONNECT_TOKEN_SIZE {
            return Err(TokenError::WrongSize(bytes.len()));
        }
        let bad = |_| TokenError::Malformed("truncated");
        let mut r = Reader::new(bytes);
        let version = r.u8().map_err(bad)?;
        if version != TOKEN_VERSION {
            return Err(TokenError::WrongVersion(version));
        }
        let protocol_id = r.u32().map_err(bad)?;
        let created = r.u64().map_err(bad)?;
        let expires = r.u64().map_err(bad)?;
        if expires <= created {
            return Err(TokenError::Lifetime { created, expires });
        }
        let timeout_secs = r.u32().map_err(bad)?;
        let nonce = r.bytes(TOKEN_NONCE_SIZE).map_err(bad)?.try_into().expect("24 bytes");
        let sealed = Box::new(r.bytes(SEALED_PRIVATE_SIZE).map_err(bad)?.try_into().expect("sealed size"));
        let key = Secret(r.bytes(KEY_SIZE).map_err(bad)?.try_into().expect("32 bytes"));
        let addresses = read_addresses(&mut r)?;
        r.zero_padding().map_err(|_| TokenError::Malformed("non-zero padding"))?;
        Ok(ConnectToken { protocol_id, created, expires, timeout_secs, nonce, sealed, key, addresses })
    }
}

/// Opens a token's private part (the server's side). Only the holder of `key` can.
pub fn open(
    key: &Secret,
    protocol_id: u32,
    expires: u64,
    nonce: &[u8; TOKEN_NONCE_SIZE],
    sealed: &[u8; SEALED_PRIVATE_SIZE],
) -> Result<TokenClaims, TokenError> {
    let cipher = XChaCha20Poly1305::new_from_slice(&key.0).expect("32-byte key");
    // Holds the token key in clear once opened: wiped when dropped, on every return.
    let mut private = Zeroizing::new(*<&[u8; PRIVATE_SIZE]>::try_from(&sealed[..PRIVATE_SIZE]).expect("private size"));
    let tag = Tag::from_slice(&sealed[PRIVATE_SIZE..]);
    cipher
        .decrypt_in_place_detached(
            XNonce::from_slice(nonce),
            &associated_data(protocol_id, expires),
            &mut *private,
            tag,
        )
        .map_err(|_| TokenError::BadSeal)?;
    let bad = |_| TokenError::Malformed("truncated private part");
    let mut r = Reader::new(&*private);
    let client_id = r.u64().map_err(bad)?;
    let timeout_secs = r.u32().map_err(bad)?;
    let token_key = Secret(r.bytes(KEY_SIZE).map_err(bad)?.try_into().expect("32 bytes"));
    let addresses = read_addresses(&mut r)?;
    let user_data = Box::new(r.bytes(USER_DATA_SIZE).map_err(bad)?.try_into().expect("user data size"));
    Ok(TokenClaims { client_id, timeout_secs, key: token_key, addresses, user_data })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> TokenParams {
        TokenParams {
            protocol_id: 0x5457_0001,
            client_id: 42,
            created: 1_000,
            expires: 1_060,
            timeout_secs: 10,
            addresses: vec!["10.0.0.1:4000".parse().unwrap(), "[::1]:4001".parse().unwrap()],
            user_data: b"account 42".to_vec(),
        }
    }

    #[test]
    fn a_minted_token_opens_with_its_key_only() {
        let key = Secret([3; KEY_SIZE]);
        let random = [5u8; TOKEN_NONCE_SIZE + KEY_SIZE];
        let bytes = mint(&key, &params(), &random).unwrap();
        assert_eq!(bytes.len(), CONNECT_TOKEN_SIZE);
        let t = ConnectToken::decode(&bytes).unwrap();
        assert_eq!((t.protocol_id, t.expires, t.addresses.clone()), (0x5457_0001, 1_060, params().addresses));
        let claims = open(&key, t.protocol_id, t.expires, &t.nonce, &t.sealed).unwrap();
        assert_eq!((claims.client_id, claims.timeout_secs), (42, 10));
        assert_eq!(claims.key, t.key, "the server learns the key the client proves");
        assert_eq!(claims.addresses, params().addresses);
        assert_eq!(&claims.user_data[..10], b"account 42");
        assert_eq!(
            open(&Secret([4; KEY_SIZE]), t.protocol_id, t.expires, &t.nonce, &t.sealed),
            Err(TokenError::BadSeal)
        );
        // The expiry and the protocol id are bound to the seal: neither can be changed.
        assert_eq!(open(&key, t.protocol_id, t.expires + 3600, &t.nonce, &t.sealed), Err(TokenError::BadSeal));
        assert_eq!(open(&key, 1, t.expires, &t.nonce, &t.sealed), Err(TokenError::BadSeal));
        let mut sealed = t.sealed.clone();
        sealed[0] ^= 1;
        assert_eq!(open(&key, t.protocol_id, t.expires, &t.nonce, &sealed), Err(TokenError::BadSeal));
    }

    #[test]
    fn bad_parameters_and_bytes_are_named() {
        let key = Secret([3; KEY_SIZE]);
        let r = [0u8; 56];
        let with = |f: fn(&mut TokenParams)| {
            let mut p = params();
            f(&mut p);
            mint(&key, &p, &r).unwrap_err()
        };
        assert_eq!(with(|p| p.addresses.clear()), TokenError::AddressCount(0));
        assert_eq!(with(|p| p.addresses = vec![p.addresses[0]; 9]), TokenError::AddressCount(9));
        assert_eq!(with(|p| p.user_data = vec![0; 257]), TokenError::UserDataSize(257));
        assert_eq!(with(|p| p.expires = p.created), TokenError::Lifetime { created: 1_000, expires: 1_000 });
        let good = mint(&key, &params(), &r).unwrap();
        assert_eq!(ConnectToken::decode(&good[..100]).unwrap_err(), TokenError::WrongSize(100));
        let mut b = good.clone();
        b[0] = 9;
        assert_eq!(ConnectToken::decode(&b).unwrap_err(), TokenError::WrongVersion(9));
        let mut b = good.clone();
        *b.last_mut().unwrap() = 1;
        assert!(matches!(ConnectToken::decode(&b).unwrap_err(), TokenError::Malformed(_)));
    }
}
