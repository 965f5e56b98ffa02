//! The datagrams of NAT traversal: between a peer and the rendezvous (which is also
//! the relay), and between two peers (connectivity checks).
//!
//! ```text
//! Hello   (peer → rendezvous, HELLO_SIZE bytes: an answer is never larger)
//!   kind 0xE1 | version u8 | protocol_id u32 | expires u64 | nonce [24] | sealed [496]
//!   | seq u64 | flags u8 (bit 0: private) | host count u8 | hosts [MAX_HOSTS x 19]
//!   | zero padding | mac [16]: HMAC-SHA256 under the ticket's key of everything before
//! Info    (rendezvous → peer)
//!   kind 0xE2 | seq u64 | ChaCha20-Poly1305 under HKDF(ticket key), nonce seq, of:
//!     slot u8 | players u8 | match u64 | reflexive (19) | count u8
//!     | entries: slot u8 | flags u8 (bit 0: relay only) | pair key [32]
//!               | candidate count u8 | candidates [n x 19]
//!   | tag [16]
//! Refused (rendezvous → peer, advisory: anyone could send one)
//!   kind 0xE3 | reason u8
//! Relay   (both ways) kind 0xE4 | slot u8 (to whom; from whom on the way back) | datagram
//! Check   (peer → peer) kind 0xE5 (request) or 0xE6 (response) | from u8 | to u8
//!   | transaction [12] | mac [16]: HMAC-SHA256 under the pair's check key
//! address: family u8 (4 or 6) | ip [16] (IPv4 in the first 4) | port u16
//! ```
//! The kinds are first bytes that no tickwire packet (1-10) and no STUN message (0-1)
//! starts with. Integers little-endian.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{ChaCha20Poly1305, KeyInit, Nonce, Tag};
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::transport::token::ConnectToken;
use crate::transport::token::{SEALED_PRIVATE_SIZE, TOKEN_NONCE_SIZE};
use crate::transport::{KEY_SIZE, Secret};
use crate::wire::{Reader, Writer};

/// First byte of a Hello.
pub(crate) const KIND_HELLO: u8 = 0xE1;
/// First byte of an Info.
pub(crate) const KIND_INFO: u8 = 0xE2;
/// First byte of a Refused.
pub(crate) const KIND_REFUSED: u8 = 0xE3;
/// First byte of a relayed datagram.
pub(crate) const KIND_RELAY: u8 = 0xE4;
/// First byte of a connectivity check request.
pub(crate) const KIND_CHECK: u8 = 0xE5;
/// First byte of a connectivity check response.
pub(crate) const KIND_CHECK_RESPONSE: u8 = 0xE6;
/// The rendezvous protocol's version.
pub(crate) const VERSION: u8 = 1;
/// Bytes of a Hello, padded: the rendezvous answers one with no more than this.
pub const HELLO_SIZE: usize = 1100;
/// Host candidates a peer can offer.
pub const MAX_HOSTS: usize = 4;
/// Players of a match the rendezvous introduces (an Info for one peer names the others,
/// with their candidates, in one datagram no larger than a Hello).
pub const MAX_RENDEZVOUS_PLAYERS: usize = 8;
/// Bytes the relay's header adds to a datagram.
pub const RELAY_HEADER_SIZE: usize = 2;
/// Bytes of a check, request or response.
pub(crate) const CHECK_SIZE: usize = 3 + TRANSACTION_SIZE + MAC_SIZE;
pub(crate) const TRANSACTION_SIZE: usize = 12;
const MAC_SIZE: usize = 16;
const TAG_SIZE: usize = 16;
const ADDRESS_SIZE: usize = 19;
/// Candidates of one peer in an Info: its hosts and the reflexive address.
pub(crate) const MAX_CANDIDATES: usize = MAX_HOSTS + 1;
const ENTRY_MAX: usize = 1 + 1 + KEY_SIZE + 1 + MAX_CANDIDATES * ADDRESS_SIZE;
const INFO_MAX: usize = 1 + 8 + 1 + 1 + 8 + ADDRESS_SIZE + 1 + (MAX_RENDEZVOUS_PLAYERS - 1) * ENTRY_MAX + TAG_SIZE;
const HELLO_BODY: usize = 2 + 4 + 8 + TOKEN_NONCE_SIZE + SEALED_PRIVATE_SIZE + 8 + 1 + 1 + MAX_HOSTS * ADDRESS_SIZE;
const _: () = assert!(HELLO_BODY + MAC_SIZE <= HELLO_SIZE);
const _: () = assert!(INFO_MAX <= HELLO_SIZE, "an answer is never larger than what asked for it");

/// Why the rendezvous refused a Hello. Numbers are wire format: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[repr(u8)]
pub enum RefusedReason {
    /// The ticket does not open with the rendezvous's key, or its proof fails.
    #[error("the ticket is not valid here")]
    BadTicket = 1,
    /// The ticket has expired.
    #[error("the ticket has expired")]
    Expired = 2,
    /// The ticket names no match (its user data has no match claim).
    #[error("the ticket names no match")]
    NoMatch = 3,
    /// Another player holds this slot of the match.
    #[error("another player holds this slot")]
    SlotTaken = 4,
    /// The match is over (its time is up), or the service holds all the matches it may.
    #[error("the match is over or the service is full")]
    Closed = 5,
    /// The ticket's match shape disagrees with the match's other tickets.
    #[error("the ticket disagrees with the match's other tickets")]
    Mismatch = 6,
}

impl RefusedReason {
    pub(crate) fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::BadTicket,
            2 => Self::Expired,
            3 => Self::NoMatch,
            4 => Self::SlotTaken,
            5 => Self::Closed,
            6 => Self::Mismatch,
            _ => return None,
        })
    }
}

pub(crate) fn write_address(w: &mut Writer, a: SocketAddr) {
    let a = canonical(a);
    let mut ip = [0u8; 16];
    let family = match a.ip() {
        IpAddr::V4(v4) => {
            ip[..4].copy_from_slice(&v4.octets());
            4
        }
        IpAddr::V6(v6) => {
            ip.copy_from_slice(&v6.octets());
            6
        }
    };
    w.u8(family);
    w.bytes(&ip);
    w.u16(a.port());
}

pub(crate) fn read_address(r: &mut Reader) -> Option<SocketAddr> {
    let family = r.u8().ok()?;
    let ip: [u8; 16] = r.bytes(16).ok()?.try_into().ok()?;
    let port = r.u16().ok()?;
    let ip = match family {
        4 if ip[4..] == [0; 12] => IpAddr::V4(Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3])),
        6 => IpAddr::V6(Ipv6Addr::from(ip)),
        _ => return None,
    };
    (port != 0).then_some(SocketAddr::new(ip, port))
}

/// One form per address: an IPv4-mapped IPv6 address (from a dual-stack socket) as the
/// IPv4 address it is, without flow or scope, so that comparisons hold.
pub fn canonical(a: SocketAddr) -> SocketAddr {
    SocketAddr::new(a.ip().to_canonical(), a.port())
}

type HmacSha256 = Hmac<Sha256>;

fn mac16(key: &[u8; KEY_SIZE], label: &[u8], data: &[u8]) -> [u8; MAC_SIZE] {
    let mut m = <HmacSha256 as Mac>::new_from_slice(key).expect("any key size");
    m.update(label);
    m.update(data);
    let full = m.finalize().into_bytes();
    full[..MAC_SIZE].try_into().expect("16 bytes")
}

/// A Hello as the rendezvous reads it (the ticket not yet opened).
pub(crate) struct Hello<'a> {
    pub protocol_id: u32,
    pub expires: u64,
    pub nonce: &'a [u8; TOKEN_NONCE_SIZE],
    pub sealed: &'a [u8; SEALED_PRIVATE_SIZE],
    pub seq: u64,
    pub private: bool,
    pub hosts: Vec<SocketAddr>,
    /// Everything the MAC covers, and the MAC.
    covered: &'a [u8],
    mac: &'a [u8],
}

/// Writes a Hello for `ticket`.
pub(crate) fn encode_hello(ticket: &ConnectToken, seq: u64, private: bool, hosts: &[SocketAddr]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HELLO_SIZE);
    let mut w = Writer::new(&mut out);
    w.u8(KIND_HELLO);
    w.u8(VERSION);
    w.u32(ticket.protocol_id);
    w.u64(ticket.expires);
    w.bytes(&ticket.nonce);
    w.bytes(&ticket.sealed[..]);
    w.u64(seq);
    w.u8(u8::from(private));
    let hosts = &hosts[..hosts.len().min(MAX_HOSTS)];
    w.u8(hosts.len() as u8);
    for i in 0..MAX_HOSTS {
        match hosts.get(i) {
            Some(&a) => write_address(&mut w, a),
            None => w.bytes(&[0; ADDRESS_SIZE]),
        }
    }
    w.pad_to(HELLO_SIZE - MAC_SIZE);
    let mac = mac16(&ticket.key.0, b"tickwire hello", &out);
    out.extend_from_slice(&mac);
    out
}

/// Reads a Hello's fields (strictly: size, version, every address, the padding); its
/// MAC is checked later, with the key inside the ticket ([`Hello::proven`]).
pub(crate) fn decode_hello(data: &[u8]) -> Option<Hello<'_>> {
    if data.len() != HELLO_SIZE || data[0] != KIND_HELLO || data[1] != VERSION {
        return None;
    }
    let (covered, mac) = data.split_at(HELLO_SIZE - MAC_SIZE);
    let mut r = Reader::new(&covered[2..]);
    let protocol_id = r.u32().ok()?;
    let expires = r.u64().ok()?;
    let nonce = r.bytes(TOKEN_NONCE_SIZE).ok()?.try_into().ok()?;
    let sealed = r.bytes(SEALED_PRIVATE_SIZE).ok()?.try_into().ok()?;
    let seq = r.u64().ok()?;
    let flags = r.u8().ok()?;
    if flags > 1 {
        return None;
    }
    let count = r.u8().ok()? as usize;
    if count > MAX_HOSTS {
        return None;
    }
    let mut hosts = Vec::with_capacity(count);
    for i in 0..MAX_HOSTS {
        if i < count {
            hosts.push(read_address(&mut r)?);
        } else if r.bytes(ADDRESS_SIZE).ok()? != [0; ADDRESS_SIZE] {
            return None;
        }
    }
    r.zero_padding().ok()?;
    Some(Hello { protocol_id, expires, nonce, sealed, seq, private: flags == 1, hosts, covered, mac })
}

impl Hello<'_> {
    /// Whether the sender holds the ticket's key (`key`, from its opened private part).
    pub(crate) fn proven(&self, key: &Secret) -> bool {
        bool::from(mac16(&key.0, b"tickwire hello", self.covered).ct_eq(self.mac))
    }
}

/// The key that seals the rendezvous's answers to the holder of a ticket's key.
pub(crate) fn info_key(ticket_key: &Secret) -> Zeroizing<[u8; KEY_SIZE]> {
    let hk = Hkdf::<Sha256>::new(Some(b"tickwire rendezvous"), &ticket_key.0);
    let mut out = Zeroizing::new([0u8; KEY_SIZE]);
    hk.expand(b"info", &mut *out).expect("32 bytes");
    out
}

fn nonce(seq: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[..8].copy_from_slice(&seq.to_le_bytes());
    *Nonce::from_slice(&n)
}

/// One other peer of the match, as an Info tells it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct PeerEntry {
    pub slot: u8,
    /// Relay only: this pair may not learn each other's addresses (either is private).
    pub relay_only: bool,
    pub pair_key: [u8; KEY_SIZE],
    pub candidates: Vec<SocketAddr>,
}

impl std::fmt::Debug for PeerEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerEntry")
            .field("slot", &self.slot)
            .field("relay_only", &self.relay_only)
            .field("candidates", &self.candidates)
            .finish_non_exhaustive()
    }
}

/// What an Info says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Info {
    pub slot: u8,
    pub players: u8,
    pub match_id: u64,
    /// The address the rendezvous sees the peer at.
    pub reflexive: SocketAddr,
    pub peers: Vec<PeerEntry>,
}

pub(crate) fn encode_info(key: &[u8; KEY_SIZE], seq: u64, info: &Info) -> Vec<u8> {
    let mut out = Vec::with_capacity(INFO_MAX);
    let mut w = Writer::new(&mut out);
    w.u8(KIND_INFO);
    w.u64(seq);
    w.u8(info.slot);
    w.u8(info.players);
    w.u64(info.match_id);
    write_address(&mut w, info.reflexive);
    w.u8(info.peers.len() as u8);
    for p in &info.peers {
        w.u8(p.slot);
        w.u8(u8::from(p.relay_only));
        w.bytes(&p.pair_key);
        let n = p.candidates.len().min(MAX_CANDIDATES);
        w.u8(n as u8);
        for &c in &p.candidates[..n] {
            write_address(&mut w, c);
        }
    }
    let cipher = ChaCha20Poly1305::new_from_slice(key).expect("32-byte key");
    let (head, body) = out.split_at_mut(9);
    let tag = cipher.encrypt_in_place_detached(&nonce(seq), head, body).expect("small message");
    out.extend_from_slice(&tag);
    out
}

/// Opens and reads an Info: its sequence number and what it says. None when it does
/// not open with `key` or does not read (every count and address checked).
pub(crate) fn decode_info(key: &[u8; KEY_SIZE], data: &[u8]) -> Option<(u64, Info)> {
    if data.len() < 9 + TAG_SIZE || data.len() > INFO_MAX || data[0] != KIND_INFO {
        return None;
    }
    let seq = u64::from_le_bytes(data[1..9].try_into().ok()?);
    let (sealed, tag) = data.split_at(data.len() - TAG_SIZE);
    let mut body = Zeroizing::new(sealed[9..].to_vec());
    let cipher = ChaCha20Poly1305::new_from_slice(key).expect("32-byte key");
    cipher.decrypt_in_place_detached(&nonce(seq), &sealed[..9], &mut body, Tag::from_slice(tag)).ok()?;
    let mut r = Reader::new(&body);
    let slot = r.u8().ok()?;
    let players = r.u8().ok()?;
    let match_id = r.u64().ok()?;
    let reflexive = read_address(&mut r)?;
    let count = r.u8().ok()? as usize;
    if !(2..=MAX_RENDEZVOUS_PLAYERS).contains(&(players as usize)) || slot >= players || count >= players as usize {
        return None;
    }
    let mut peers = Vec::with_capacity(count);
    for _ in 0..count {
        let slot_j = r.u8().ok()?;
        let flags = r.u8().ok()?;
        let pair_key = r.bytes(KEY_SIZE).ok()?.try_into().ok()?;
        let n = r.u8().ok()? as usize;
        if slot_j >= players
            || slot_j == slot
            || flags > 1
            || n > MAX_CANDIDATES
            || peers.iter().any(|p: &PeerEntry| p.slot == slot_j)
        {
            return None;
        }
        let mut candidates = Vec::with_capacity(n);
        for _ in 0..n {
            candidates.push(read_address(&mut r)?);
        }
        peers.push(PeerEntry { slot: slot_j, relay_only: flags == 1, pair_key, candidates });
    }
    r.is_empty().then_some((seq, Info { slot, players, match_id, reflexive, peers }))
}

pub(crate) fn encode_refused(reason: RefusedReason) -> [u8; 2] {
    [KIND_REFUSED, reason as u8]
}

/// The key two peers' checks are authenticated with: from the game's match secret
/// (which the rendezvous never learns) and the pair's key from the rendezvous (which
/// the match's other players never learn), so that neither can forge a check.
pub(crate) fn check_key(match_secret: &Secret, pair_key: &[u8; KEY_SIZE], a: u8, b: u8) -> Zeroizing<[u8; KEY_SIZE]> {
    let hk = Hkdf::<Sha256>::new(Some(pair_key), &match_secret.0);
    let mut out = Zeroizing::new([0u8; KEY_SIZE]);
    hk.expand(&[b"tickwire check ".as_slice(), &[a.min(b), a.max(b)]].concat(), &mut *out).expect("32 bytes");
    out
}

/// A connectivity check, request or response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Check {
    pub response: bool,
    pub from: u8,
    pub to: u8,
    pub transaction: [u8; TRANSACTION_SIZE],
}

pub(crate) fn encode_check(key: &[u8; KEY_SIZE], c: &Check) -> [u8; CHECK_SIZE] {
    let mut out = [0u8; CHECK_SIZE];
    out[0] = if c.response { KIND_CHECK_RESPONSE } else { KIND_CHECK };
    out[1] = c.from;
    out[2] = c.to;
    out[3..3 + TRANSACTION_SIZE].copy_from_slice(&c.transaction);
    let mac = mac16(key, b"tickwire check", &out[..3 + TRANSACTION_SIZE]);
    out[3 + TRANSACTION_SIZE..].copy_from_slice(&mac);
    out
}

/// A check's fields before its MAC is verified ([`check_holds`]).
pub(crate) fn decode_check(data: &[u8]) -> Option<Check> {
    if data.len() != CHECK_SIZE || !(data[0] == KIND_CHECK || data[0] == KIND_CHECK_RESPONSE) {
        return None;
    }
    Some(Check {
        response: data[0] == KIND_CHECK_RESPONSE,
        from: data[1],
        to: data[2],
        transaction: data[3..3 + TRANSACTION_SIZE].try_into().ok()?,
    })
}

pub(crate) fn check_holds(key: &[u8; KEY_SIZE], data: &[u8]) -> bool {
    data.len() == CHECK_SIZE
        && bool::from(mac16(key, b"tickwire check", &data[..3 + TRANSACTION_SIZE]).ct_eq(&data[3 + TRANSACTION_SIZE..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_info_opens_with_its_key_only_and_reads_back() {
        let key = [7u8; KEY_SIZE];
        let info = Info {
            slot: 1,
            players: 3,
            match_id: 99,
            reflexive: "198.51.100.2:20001".parse().unwrap(),
            peers: vec![
                PeerEntry {
                    slot: 0,
                    relay_only: false,
                    pair_key: [1; 32],
                    candidates: vec!["192.168.1.10:20000".parse().unwrap(), "[2001:db8::1]:9".parse().unwrap()],
                },
                PeerEntry { slot: 2, relay_only: true, pair_key: [2; 32], candidates: vec![] },
            ],
        };
        let bytes = encode_info(&key, 5, &info);
        assert_eq!(decode_info(&key, &bytes), Some((5, info.clone())));
        assert_eq!(decode_info(&[8; KEY_SIZE], &bytes), None);
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            assert_eq!(decode_info(&key, &b), None, "byte {i} is covered");
        }
        // The largest Info fits the Hello that asks for it.
        let full = Info {
            slot: 0,
            players: MAX_RENDEZVOUS_PLAYERS as u8,
            match_id: 1,
            reflexive: "[2001:db8::2]:1".parse().unwrap(),
            peers: (1..MAX_RENDEZVOUS_PLAYERS as u8)
                .map(|s| PeerEntry {
                    slot: s,
                    relay_only: false,
                    pair_key: [s; 32],
                    candidates: vec!["[2001:db8::3]:4".parse().unwrap(); MAX_CANDIDATES],
                })
                .collect(),
        };
        let bytes = encode_info(&key, 1, &full);
        assert!(bytes.len() <= HELLO_SIZE, "{}", bytes.len());
        assert_eq!(decode_info(&key, &bytes).map(|(_, i)| i), Some(full));
    }

    #[test]
    fn checks_hold_under_their_pair_key_only() {
        let secret = Secret([9; 32]);
        let k = check_key(&secret, &[3; 32], 0, 1);
        assert_eq!(*k, *check_key(&secret, &[3; 32], 1, 0), "both ends derive the same key");
        assert_ne!(*k, *check_key(&secret, &[4; 32], 0, 1), "the rendezvous's pair key counts");
        assert_ne!(*k, *check_key(&Secret([8; 32]), &[3; 32], 0, 1), "the match secret counts");
        let c = Check { response: false, from: 0, to: 1, transaction: [5; 12] };
        let bytes = encode_check(&k, &c);
        assert_eq!(decode_check(&bytes), Some(c));
        assert!(check_holds(&k, &bytes));
        for i in 0..bytes.len() {
            let mut b = bytes;
            b[i] ^= 1;
            assert!(decode_check(&b).is_none_or(|d| d != c) || !check_holds(&k, &b), "byte {i}");
            if i > 0 {
                assert!(!check_holds(&k, &b), "byte {i} is covered");
            }
        }
    }

    #[test]
    fn a_hello_reads_back_and_proves_the_ticket_key() {
        let key = Secret([3; 32]);
        let params = crate::transport::token::TokenParams {
            protocol_id: 7,
            client_id: 1,
            created: 10,
            expires: 20,
            timeout_secs: 0,
            addresses: vec!["203.0.113.10:7000".parse().unwrap()],
            user_data: vec![],
        };
        let bytes = crate::transport::token::mint(&key, &params, &[4; 56]).unwrap();
        let ticket = ConnectToken::decode(&bytes).unwrap();
        let hosts: Vec<SocketAddr> = vec!["192.168.1.10:20000".parse().unwrap()];
        let h = encode_hello(&ticket, 42, true, &hosts);
        assert_eq!(h.len(), HELLO_SIZE);
        let d = decode_hello(&h).unwrap();
        assert_eq!((d.protocol_id, d.expires, d.seq, d.private, d.hosts.clone()), (7, 20, 42, true, hosts));
        assert!(d.proven(&ticket.key));
        assert!(!d.proven(&Secret([1; 32])));
        let mut bad = h.clone();
        bad[HELLO_SIZE - MAC_SIZE - 1] = 1;
        assert!(decode_hello(&bad).is_none(), "non-zero padding");
        assert!(decode_hello(&h[..HELLO_SIZE - 1]).is_none());
    }
}
