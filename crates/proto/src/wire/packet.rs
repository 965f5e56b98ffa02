//! Datagram layouts.
//!
//! ```text
//! prefix           kind u8 | version u8 | protocol_id u32
//! ConnectRequest   prefix | client_salt u64 | security u8 | zero padding to 300 bytes
//! Challenge        prefix | client_salt u64 | cookie_time u64 | cookie_mac u64                     (30 bytes)
//! ConnectResponse  prefix | client_salt u64 | cookie_time u64 | cookie_mac u64 | security u8
//!                  | client_public [32] | proof [16] | has_token u8
//!                  | token_expires u64 | token_nonce [24] | token_sealed [496] (zero without a token)
//!                  | has_binding u8 | initiator u32 | responder u32 (zero without a binding)
//!                  | ciphers u8 | zero padding to 640 bytes
//! Accepted         prefix | client_salt u64 | server_salt u64 | server_public [32] | cipher u8
//!                  | confirm [16]                                                                (71 bytes)
//! Denied           prefix | client_salt u64 | reason u8 [| tag 16]                                (15 or 31 bytes)
//! Disconnect       prefix | salt u32 | seq u16 | reason u8 [| tag 16]
//! Payload          kind u8 | salt u32 | seq u16 | ack u16 | ack_bits u32 | ack_delay u16 | frames [| tag 16]
//! PayloadNoAcks    kind u8 | salt u32 | seq u16 | frames [| tag 16]
//! PayloadLong      kind u8 | salt u32 | seq u16 | seq_high u32 | ack u16 | ack_bits u32 | ack_delay u16 | frames [| tag 16]
//! PayloadLongNoAcks kind u8 | salt u32 | seq u16 | seq_high u32 | frames [| tag 16]
//! ```
//! Connected packets (the two payload kinds) have no version or protocol id: the
//! handshake checked both, and the salt names the connection, as netcode.io's one-byte
//! prefix does. They are most of the traffic, so these 5 bytes count: a 32-byte input
//! goes in 41 bytes. A packet carries the ack fields only when there is something new
//! to acknowledge (see `Connection::acks_owed`), another 8 bytes saved on a one-way
//! stream. The long forms (kinds 9 and 10) also carry bits 16-47 of the sequence
//! number; a sender uses them only while the peer has acknowledged none of its last
//! 16,384 packets (see `Connection::begin_packet`), so that a receiver that lost any
//! number of packets in a row still knows the number (the AEAD nonce) of the next one.
//! All integers little-endian. `security` is a [`SecurityMode`]: 0 (encrypted), 1
//! (insecure plaintext) or 2 (carrier: the handshake of 0, then packets without a tag);
//! a plaintext handshake leaves the key fields zero, and its packets have no tag, nor
//! do a carrier connection's.
//! `Denied` and the request's first fields are the same in every version, so a server
//! can tell an old client why it was refused. A `Denied` that answers a response whose
//! proof held carries a tag under the proven key (`crypto::denial_tag`); one without is
//! advisory to an encrypted client (anyone on the path could have sent it).

use super::{
    CONNECT_RESPONSE_SIZE, DecodeError, HANDSHAKE_REQUEST_SIZE, MAX_DATAGRAM_SIZE, PAYLOAD_HEADER_NO_ACKS_SIZE,
    PAYLOAD_HEADER_SIZE, PROTOCOL_VERSION, PacketKind, Reader, SEQ_HIGH_SIZE, Writer,
};
use crate::transport::token::{SEALED_PRIVATE_SIZE, TOKEN_NONCE_SIZE};
use crate::transport::{Binding, DisconnectReason};

/// The AEAD that seals a connection's packets. The client offers what it runs fast
/// ([`CipherOffer`], in its `ConnectResponse`, under its proof); the server picks one
/// and says which in its `Accepted`, under its key confirmation; the keys' derivation
/// covers the choice. Numbers are wire format: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Cipher {
    /// ChaCha20-Poly1305: fast in software everywhere; every end offers it.
    #[default]
    ChaCha20Poly1305 = 0,
    /// AES-256-GCM: about three times faster where the CPU has AES instructions and a
    /// carry-less multiply (AES-NI and PCLMULQDQ on x86, the ARMv8 crypto extensions),
    /// much slower where it has not; offered only by such machines.
    Aes256Gcm = 1,
}

impl Cipher {
    /// The cipher of a byte, if it is one.
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(Cipher::ChaCha20Poly1305),
            1 => Some(Cipher::Aes256Gcm),
            _ => None,
        }
    }
}

/// The ciphers a client offers: a bit per [`Cipher`] (bit `1 << cipher`).
/// ChaCha20-Poly1305 is always in it, so that every two ends agree on one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CipherOffer(u8);

impl CipherOffer {
    /// ChaCha20-Poly1305 alone.
    pub const CHACHA_ONLY: CipherOffer = CipherOffer(1 << Cipher::ChaCha20Poly1305 as u8);
    /// ChaCha20-Poly1305, and AES-256-GCM when `aes_gcm` (the machine runs it in hardware).
    pub fn new(aes_gcm: bool) -> Self {
        CipherOffer(Self::CHACHA_ONLY.0 | (aes_gcm as u8) << Cipher::Aes256Gcm as u8)
    }

    /// An offer's byte, if it is a valid one: known ciphers only, ChaCha20-Poly1305 among
    /// them.
    pub fn from_u8(b: u8) -> Option<Self> {
        let known = Self::new(true).0;
        (b & !known == 0 && b & Self::CHACHA_ONLY.0 != 0).then_some(CipherOffer(b))
    }

    /// The offer as its wire byte.
    pub fn bits(self) -> u8 {
        self.0
    }

    /// Whether `c` is offered.
    pub fn has(self, c: Cipher) -> bool {
        self.0 & (1 << c as u8) != 0
    }
}

/// What a handshake asks for: the `security` byte of a request and of a response,
/// which the client's proof covers. Both ends must ask for the same; the endpoint
/// derives its own from its `Security`. Numbers are wire format: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum SecurityMode {
    /// The handshake proves a key and agrees on keys, which then seal every packet
    /// (ChaCha20-Poly1305).
    Encrypted = 0,
    /// No proof, no keys, no tag.
    InsecurePlaintext = 1,
    /// The handshake of [`SecurityMode::Encrypted`], whole; then packets without a tag:
    /// the carrier (Steam, EOS) authenticates the remote and encrypts them.
    Carrier = 2,
}

impl SecurityMode {
    /// The mode of a `security` byte, if it is one.
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(SecurityMode::Encrypted),
            1 => Some(SecurityMode::InsecurePlaintext),
            2 => Some(SecurityMode::Carrier),
            _ => None,
        }
    }

    /// Whether the handshake proves a key and agrees on keys (every mode but plaintext).
    pub fn proves(self) -> bool {
        self != SecurityMode::InsecurePlaintext
    }
}

/// Key sizes in the handshake (X25519 public key, proof, AEAD tag).
const PUBLIC_SIZE: usize = 32;
const PROOF_SIZE: usize = 16;
const TAG_SIZE: usize = 16;

/// The fixed part of a connected packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PayloadHeader {
    /// Connection salt: proves the sender completed the handshake with us.
    pub salt: u32,
    /// The low 16 bits of this packet's sequence number (the full number is the
    /// encryption nonce; the receiver rebuilds it).
    pub seq: u16,
    /// The long form only: bits 16-47 of the sequence number. The receiver rebuilds
    /// the bits above from the newest packet it authenticated, which is exact for any
    /// gap below 2^47 packets (centuries at any rate). 48 bits and not 64, so that the
    /// long header with acks (19 bytes) still leaves every message size its room.
    pub seq_high: Option<u32>,
    /// What the sender has received from us, when it has something new to say.
    pub acks: Option<AckFields>,
}

impl PayloadHeader {
    /// Bytes of this header on the wire ([`PAYLOAD_HEADER_SIZE`] with acks,
    /// [`PAYLOAD_HEADER_NO_ACKS_SIZE`] without, [`SEQ_HIGH_SIZE`] more in the long form).
    pub fn encoded_len(&self) -> usize {
        let short = if self.acks.is_some() { PAYLOAD_HEADER_SIZE } else { PAYLOAD_HEADER_NO_ACKS_SIZE };
        short + if self.seq_high.is_some() { SEQ_HIGH_SIZE } else { 0 }
    }
}

/// The acknowledgement part of a connected packet's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AckFields {
    /// Newest sequence number received from the peer.
    pub ack: u16,
    /// Bit i set = packet `ack - 1 - i` was received too.
    pub ack_bits: u32,
    /// Time between receiving `ack` and sending this, in [`super::ACK_DELAY_UNIT_US`] units.
    pub ack_delay: u16,
}

/// A connect token's part of a connect response: what the server needs to open it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenPart<'a> {
    /// Unix time (seconds) the token expires; covered by the seal.
    pub expires: u64,
    /// The nonce the private part was sealed with.
    pub nonce: &'a [u8; TOKEN_NONCE_SIZE],
    /// The sealed private part.
    pub sealed: &'a [u8; SEALED_PRIVATE_SIZE],
}

/// The client's answer to a challenge: the cookie back, its ephemeral key, and its
/// proof of the secret or token it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectResponse<'a> {
    /// The client's salt from its request.
    pub client_salt: u64,
    /// The server's time when it made the cookie.
    pub cookie_time: u64,
    /// The cookie: a MAC of the client's address, salt and `cookie_time`.
    pub cookie_mac: u64,
    /// What the client asks for.
    pub security: SecurityMode,
    /// The client's ephemeral X25519 public key.
    pub client_public: [u8; PUBLIC_SIZE],
    /// The client's proof that it holds the secret or the token's key.
    pub proof: [u8; PROOF_SIZE],
    /// The connect token's part, if the client presents one.
    pub token: Option<TokenPart<'a>>,
    /// Who the initiator says both ends are (`transport::Binding`), covered by the proof.
    pub binding: Option<Binding>,
    /// The ciphers the client offers, covered by the proof.
    pub ciphers: CipherOffer,
}

/// A decoded datagram, borrowing the frames from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packet<'a> {
    /// A client asks to connect. `version` may differ from ours: the caller answers
    /// with a version-mismatch denial (`security` is then not read and is
    /// [`SecurityMode::Encrypted`]).
    ConnectRequest {
        /// The client's protocol version.
        version: u8,
        /// The client's random salt, echoed in every answer.
        client_salt: u64,
        /// What the client asks for.
        security: SecurityMode,
    },
    /// The server answers a request with a stateless cookie.
    Challenge {
        /// The client's salt, echoed.
        client_salt: u64,
        /// The server's time when it made the cookie.
        cookie_time: u64,
        /// The cookie: a MAC of the client's address, salt and `cookie_time`.
        cookie_mac: u64,
    },
    /// The client returns the cookie, with its key and proof.
    ConnectResponse(ConnectResponse<'a>),
    /// The server accepts the connection.
    Accepted {
        /// The client's salt, echoed.
        client_salt: u64,
        /// The server's salt; with the client's it makes the connection salt.
        server_salt: u64,
        /// The server's ephemeral X25519 public key.
        server_public: [u8; PUBLIC_SIZE],
        /// The cipher the server picked from the client's offer.
        cipher: Cipher,
        /// The server's key confirmation over this packet.
        confirm: [u8; TAG_SIZE],
    },
    /// The server refuses the connection.
    Denied {
        /// The client's salt, echoed.
        client_salt: u64,
        /// Why.
        reason: DisconnectReason,
        /// Present when the server could authenticate the refusal (the proof held).
        tag: Option<[u8; TAG_SIZE]>,
    },
    /// `frames` includes the tag of an encrypted packet (the connection knows which).
    Payload {
        /// The packet's header.
        header: PayloadHeader,
        /// The frames, still sealed if the connection is encrypted.
        frames: &'a [u8],
    },
    /// `tag` is what follows the reason: 16 bytes on an encrypted connection, else none.
    Disconnect {
        /// The connection salt.
        salt: u32,
        /// The low 16 bits of the packet's sequence number.
        seq: u16,
        /// Why the connection is closed.
        reason: DisconnectReason,
        /// The authentication tag, or empty.
        tag: &'a [u8],
    },
}

fn security(r: &mut Reader) -> Result<SecurityMode, DecodeError> {
    let b = r.u8()?;
    SecurityMode::from_u8(b).ok_or(DecodeError::BadSecurity(b))
}

fn array<const N: usize>(r: &mut Reader) -> Result<[u8; N], DecodeError> {
    Ok(r.bytes(N)?.try_into().expect("N bytes"))
}

/// Decodes one datagram, checking every length, the protocol id and the version.
pub fn decode_packet(data: &[u8], protocol_id: u32) -> Result<Packet<'_>, DecodeError> {
    if data.len() > MAX_DATAGRAM_SIZE {
        return Err(DecodeError::TooLarge(data.len()));
    }
    let mut r = Reader::new(data);
    let kind_byte = r.u8()?;
    let kind = PacketKind::from_u8(kind_byte).ok_or(DecodeError::UnknownKind(kind_byte))?;
    if let PacketKind::Payload | PacketKind::PayloadNoAcks | PacketKind::PayloadLong | PacketKind::PayloadLongNoAcks =
        kind
    {
        let (salt, seq) = (r.u32()?, r.u16()?);
        let seq_high = match kind {
            PacketKind::PayloadLong | PacketKind::PayloadLongNoAcks => Some(r.u32()?),
            _ => None,
        };
        let acks = match kind {
            PacketKind::Payload | PacketKind::PayloadLong => {
                Some(AckFields { ack: r.u16()?, ack_bits: r.u32()?, ack_delay: r.u16()? })
            }
            _ => None,
        };
        let frames = r.bytes(r.remaining())?;
        return Ok(Packet::Payload { header: PayloadHeader { salt, seq, seq_high, acks }, frames });
    }
    let version = r.u8()?;
    let pid = r.u32()?;
    if pid != protocol_id {
        return Err(DecodeError::WrongProtocol(pid));
    }
    // Requests and denials keep their layout across versions; everything else must match.
    if version != PROTOCOL_VERSION && !matches!(kind, PacketKind::ConnectRequest | PacketKind::Denied) {
        return Err(DecodeError::WrongVersion(version));
    }
    let reason = |r: &mut Reader| -> Result<DisconnectReason, DecodeError> {
        let b = r.u8()?;
        DisconnectReason::from_u8(b).ok_or(DecodeError::BadReason(b))
    };
    let packet = match kind {
        PacketKind::ConnectRequest => {
            if data.len() != HANDSHAKE_REQUEST_SIZE {
                return Err(DecodeError::BadHandshakeSize(data.len()));
            }
            let client_salt = r.u64()?;
            if version != PROTOCOL_VERSION {
                return Ok(Packet::ConnectRequest { version, client_salt, security: SecurityMode::Encrypted });
            }
            let security = security(&mut r)?;
            r.zero_padding()?;
            Packet::ConnectRequest { version, client_salt, security }
        }
        PacketKind::ConnectResponse => {
            if data.len() != CONNECT_RESPONSE_SIZE {
                return Err(DecodeError::BadHandshakeSize(data.len()));
            }
            let (client_salt, cookie_time, cookie_mac) = (r.u64()?, r.u64()?, r.u64()?);
            let security = security(&mut r)?;
            let client_public = array(&mut r)?;
            let proof = array(&mut r)?;
            let has_token = r.u8()?;
            let token = match has_token {
                0 => None,
                1 => Some(TokenPart {
                    expires: r.u64()?,
                    nonce: r.bytes(TOKEN_NONCE_SIZE)?.try_into().expect("nonce size"),
                    sealed: r.bytes(SEALED_PRIVATE_SIZE)?.try_into().expect("sealed size"),
                }),
                b => return Err(DecodeError::BadSecurity(b)),
            };
            if token.is_none() && r.bytes(8 + TOKEN_NONCE_SIZE + SEALED_PRIVATE_SIZE)?.iter().any(|&b| b != 0) {
                return Err(DecodeError::BadPadding); // the token's place, zero without one
            }
            let binding = match r.u8()? {
                0 => None,
                1 => Some(Binding { initiator: r.u32()?, responder: r.u32()? }),
                b => return Err(DecodeError::BadSecurity(b)),
            };
            if binding.is_none() && r.bytes(8)?.iter().any(|&b| b != 0) {
                return Err(DecodeError::BadPadding); // the binding's place, zero without one
            }
            let b = r.u8()?;
            let ciphers = CipherOffer::from_u8(b).ok_or(DecodeError::BadSecurity(b))?;
            r.zero_padding()?;
            Packet::ConnectResponse(ConnectResponse {
                client_salt,
                cookie_time,
                cookie_mac,
                security,
                client_public,
                proof,
                token,
                binding,
                ciphers,
            })
        }
        PacketKind::Challenge => {
            Packet::Challenge { client_salt: r.u64()?, cookie_time: r.u64()?, cookie_mac: r.u64()? }
        }
        PacketKind::Accepted => Packet::Accepted {
            client_salt: r.u64()?,
            server_salt: r.u64()?,
            server_public: array(&mut r)?,
            cipher: {
                let b = r.u8()?;
                Cipher::from_u8(b).ok_or(DecodeError::BadSecurity(b))?
            },
            confirm: array(&mut r)?,
        },
        PacketKind::Denied => {
            let (client_salt, reason) = (r.u64()?, reason(&mut r)?);
            let tag = match r.remaining() {
                0 => None,
                TAG_SIZE => Some(array(&mut r)?),
                _ => return Err(DecodeError::Trailing),
            };
            Packet::Denied { client_salt, reason, tag }
        }
        PacketKind::Disconnect => {
            let (salt, seq, reason) = (r.u32()?, r.u16()?, reason(&mut r)?);
            let tag = r.bytes(r.remaining())?;
            if !tag.is_empty() && tag.len() != TAG_SIZE {
                return Err(DecodeError::Trailing);
            }
            return Ok(Packet::Disconnect { salt, seq, reason, tag });
        }
        // Decoded before the prefix, above; not reached.
        PacketKind::Payload | PacketKind::PayloadNoAcks | PacketKind::PayloadLong | PacketKind::PayloadLongNoAcks => {
            return Err(DecodeError::UnknownKind(kind_byte));
        }
    };
    if !r.is_empty() {
        return Err(DecodeError::Trailing);
    }
    Ok(packet)
}

fn prefix(out: &mut Vec<u8>, kind: PacketKind, protocol_id: u32) -> Writer<'_> {
    out.clear();
    let mut w = Writer::new(out);
    w.u8(kind as u8);
    w.u8(PROTOCOL_VERSION);
    w.u32(protocol_id);
    w
}

/// Encodes a ConnectRequest into `out` (cleared first), padded to its fixed size.
pub fn encode_connect_request(out: &mut Vec<u8>, protocol_id: u32, client_salt: u64, security: SecurityMode) {
    let mut w = prefix(out, PacketKind::ConnectRequest, protocol_id);
    w.u64(client_salt);
    w.u8(security as u8);
    w.pad_to(HANDSHAKE_REQUEST_SIZE);
}

/// Encodes a Challenge into `out` (cleared first).
pub fn encode_challenge(out: &mut Vec<u8>, protocol_id: u32, client_salt: u64, cookie_time: u64, cookie_mac: u64) {
    let mut w = prefix(out, PacketKind::Challenge, protocol_id);
    w.u64(client_salt);
    w.u64(cookie_time);
    w.u64(cookie_mac);
}

/// Encodes a ConnectResponse into `out` (cleared first), padded to its fixed size.
pub fn encode_connect_response(out: &mut Vec<u8>, protocol_id: u32, p: &ConnectResponse) {
    let mut w = prefix(out, PacketKind::ConnectResponse, protocol_id);
    w.u64(p.client_salt);
    w.u64(p.cookie_time);
    w.u64(p.cookie_mac);
    w.u8(p.security as u8);
    w.bytes(&p.client_public);
    w.bytes(&p.proof);
    match &p.token {
        None => {
            w.u8(0);
            w.bytes(&[0; 8 + TOKEN_NONCE_SIZE + SEALED_PRIVATE_SIZE]);
        }
        Some(t) => {
            w.u8(1);
            w.u64(t.expires);
            w.bytes(t.nonce);
            w.bytes(t.sealed);
        }
    }
    match p.binding {
        None => {
            w.u8(0);
            w.bytes(&[0; 8]);
        }
        Some(b) => {
            w.u8(1);
            w.u32(b.initiator);
            w.u32(b.responder);
        }
    }
    w.u8(p.ciphers.bits());
    w.pad_to(CONNECT_RESPONSE_SIZE);
}

/// Writes an `Accepted` without its confirmation tag (the caller computes it over
/// these bytes and appends it).
pub fn encode_accepted_head(
    out: &mut Vec<u8>,
    protocol_id: u32,
    client_salt: u64,
    server_salt: u64,
    server_public: &[u8; PUBLIC_SIZE],
    cipher: Cipher,
) {
    let mut w = prefix(out, PacketKind::Accepted, protocol_id);
    w.u64(client_salt);
    w.u64(server_salt);
    w.bytes(server_public);
    w.u8(cipher as u8);
}

/// Writes a `Denied`, with the tag that authenticates it when the server has one.
pub fn encode_denied(
    out: &mut Vec<u8>,
    protocol_id: u32,
    client_salt: u64,
    reason: DisconnectReason,
    tag: Option<&[u8; TAG_SIZE]>,
) {
    let mut w = prefix(out, PacketKind::Denied, protocol_id);
    w.u64(client_salt);
    w.u8(reason as u8);
    if let Some(t) = tag {
        w.bytes(t);
    }
}

/// Writes a `Disconnect` without its tag (an encrypted connection appends one).
pub fn encode_disconnect(out: &mut Vec<u8>, protocol_id: u32, salt: u32, seq: u16, reason: DisconnectReason) {
    let mut w = prefix(out, PacketKind::Disconnect, protocol_id);
    w.u32(salt);
    w.u16(seq);
    w.u8(reason as u8);
}

/// The salt of an established connection (carried in every Payload and Disconnect),
/// from the client's salt and the server's in `Accepted`: both sides derive it, neither
/// alone chooses it.
pub fn session_salt(client_salt: u64, server_salt: u64) -> u32 {
    let x = client_salt ^ server_salt.rotate_left(32);
    (x ^ (x >> 32)) as u32
}

/// Writes the connected-packet header ([`PayloadHeader::encoded_len`] bytes); frames
/// are appended after it.
pub fn encode_payload_header(out: &mut Vec<u8>, h: &PayloadHeader) {
    out.clear();
    let mut w = Writer::new(out);
    let kind = match (h.seq_high.is_some(), h.acks.is_some()) {
        (false, true) => PacketKind::Payload,
        (false, false) => PacketKind::PayloadNoAcks,
        (true, true) => PacketKind::PayloadLong,
        (true, false) => PacketKind::PayloadLongNoAcks,
    };
    w.u8(kind as u8);
    w.u32(h.salt);
    w.u16(h.seq);
    if let Some(high) = h.seq_high {
        w.u32(high);
    }
    if let Some(a) = &h.acks {
        w.u16(a.ack);
        w.u32(a.ack_bits);
        w.u16(a.ack_delay);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::MAX_HANDSHAKE_REPLY_SIZE;

    const PID: u32 = 0xABCD_0001;

    fn response(token: Option<TokenPart<'_>>) -> ConnectResponse<'_> {
        ConnectResponse {
            client_salt: 7,
            cookie_time: 8,
            cookie_mac: 9,
            security: SecurityMode::Encrypted,
            client_public: [1; 32],
            proof: [2; 16],
            token,
            binding: None,
            ciphers: CipherOffer::new(true),
        }
    }

    #[test]
    fn every_kind_round_trips() {
        let mut b = Vec::new();
        for security in [SecurityMode::Encrypted, SecurityMode::InsecurePlaintext, SecurityMode::Carrier] {
            encode_connect_request(&mut b, PID, 7, security);
            assert_eq!(b.len(), HANDSHAKE_REQUEST_SIZE);
            assert_eq!(
                decode_packet(&b, PID),
                Ok(Packet::ConnectRequest { version: PROTOCOL_VERSION, client_salt: 7, security })
            );
        }
        b[14] = 3;
        assert_eq!(decode_packet(&b, PID), Err(DecodeError::BadSecurity(3)), "no fourth mode");
        encode_challenge(&mut b, PID, 7, 8, 9);
        assert!(b.len() <= MAX_HANDSHAKE_REPLY_SIZE);
        assert_eq!(decode_packet(&b, PID), Ok(Packet::Challenge { client_salt: 7, cookie_time: 8, cookie_mac: 9 }));
        let (nonce, sealed) = ([3u8; TOKEN_NONCE_SIZE], [4u8; SEALED_PRIVATE_SIZE]);
        let bound =
            ConnectResponse { binding: Some(Binding { initiator: 3, responder: 0x0102_0304 }), ..response(None) };
        for r in [response(None), response(Some(TokenPart { expires: 99, nonce: &nonce, sealed: &sealed })), bound] {
            encode_connect_response(&mut b, PID, &r);
            assert_eq!(b.len(), CONNECT_RESPONSE_SIZE);
            assert_eq!(decode_packet(&b, PID), Ok(Packet::ConnectResponse(r)));
        }
        // A token's place must be zero without one; a binding flag is 0 or 1.
        encode_connect_response(&mut b, PID, &response(None));
        let flag = 6 + 8 * 3 + 1 + 32 + 16 + 1 + 8 + TOKEN_NONCE_SIZE + SEALED_PRIVATE_SIZE;
        let mut junk = b.clone();
        junk[flag - 1] = 1;
        assert_eq!(decode_packet(&junk, PID), Err(DecodeError::BadPadding));
        let mut junk = b.clone();
        junk[flag] = 2;
        assert!(decode_packet(&junk, PID).is_err());
        // The binding's place must be zero without one too; an offer names known
        // ciphers, ChaCha20-Poly1305 among them.
        let mut junk = b.clone();
        junk[flag + 3] = 1;
        assert_eq!(decode_packet(&junk, PID), Err(DecodeError::BadPadding));
        let offer = flag + 9;
        assert_eq!(b[offer], 3);
        for (bits, ok) in [(1, true), (3, true), (2, false), (0, false), (5, false), (0x80, false)] {
            let mut r = b.clone();
            r[offer] = bits;
            assert_eq!(decode_packet(&r, PID).is_ok(), ok, "offer {bits:#x}");
        }
        for cipher in [Cipher::ChaCha20Poly1305, Cipher::Aes256Gcm] {
            encode_accepted_head(&mut b, PID, 1, 2, &[5; 32], cipher);
            b.extend_from_slice(&[6; 16]);
            assert_eq!(b.len(), MAX_HANDSHAKE_REPLY_SIZE);
            assert_eq!(
                decode_packet(&b, PID),
                Ok(Packet::Accepted {
                    client_salt: 1,
                    server_salt: 2,
                    server_public: [5; 32],
                    cipher,
                    confirm: [6; 16]
                })
            );
        }
        b[6 + 16 + 32] = 2;
        assert_eq!(decode_packet(&b, PID), Err(DecodeError::BadSecurity(2)), "no third cipher");
        encode_denied(&mut b, PID, 1, DisconnectReason::ServerFull, None);
        assert!(b.len() <= MAX_HANDSHAKE_REPLY_SIZE);
        assert_eq!(
            decode_packet(&b, PID),
            Ok(Packet::Denied { client_salt: 1, reason: DisconnectReason::ServerFull, tag: None })
        );
        encode_denied(&mut b, PID, 1, DisconnectReason::TokenInUse, Some(&[9; TAG_SIZE]));
        assert_eq!(b.len(), 31);
        assert_eq!(
            decode_packet(&b, PID),
            Ok(Packet::Denied { client_salt: 1, reason: DisconnectReason::TokenInUse, tag: Some([9; TAG_SIZE]) })
        );
        b.pop();
        assert_eq!(decode_packet(&b, PID), Err(DecodeError::Trailing), "a cut tag");
        encode_disconnect(&mut b, PID, 5, 6, DisconnectReason::Kicked);
        assert_eq!(
            decode_packet(&b, PID),
            Ok(Packet::Disconnect { salt: 5, seq: 6, reason: DisconnectReason::Kicked, tag: &[] })
        );
        b.extend_from_slice(&[7; 16]);
        assert_eq!(
            decode_packet(&b, PID),
            Ok(Packet::Disconnect { salt: 5, seq: 6, reason: DisconnectReason::Kicked, tag: &[7; 16] })
        );
        let acks = AckFields { ack: 3, ack_bits: 4, ack_delay: 5 };
        for (h, len) in [
            (PayloadHeader { salt: 1, seq: 2, seq_high: None, acks: Some(acks) }, PAYLOAD_HEADER_SIZE),
            (PayloadHeader { salt: 1, seq: 2, seq_high: None, acks: None }, PAYLOAD_HEADER_NO_ACKS_SIZE),
            (PayloadHeader { salt: 1, seq: 2, seq_high: Some(3), acks: Some(acks) }, PAYLOAD_HEADER_SIZE + 4),
            (PayloadHeader { salt: 1, seq: 2, seq_high: Some(3), acks: None }, PAYLOAD_HEADER_NO_ACKS_SIZE + 4),
        ] {
            encode_payload_header(&mut b, &h);
            assert_eq!((b.len(), h.encoded_len()), (len, len));
            b.extend_from_slice(&[9, 9]);
            assert_eq!(decode_packet(&b, PID), Ok(Packet::Payload { header: h, frames: &[9, 9] }));
        }
    }

    #[test]
    fn connected_packets_are_short_and_carry_no_protocol_id() {
        // The salt names the connection; a connected packet is read whatever the
        // protocol id the endpoint has, and its 5-byte header (7 with kind and seq)
        // is what a 32-byte input pays without acks.
        let mut b = Vec::new();
        encode_payload_header(&mut b, &PayloadHeader { salt: 0xDDCC_BBAA, seq: 0x0201, seq_high: None, acks: None });
        assert_eq!(b, [PacketKind::PayloadNoAcks as u8, 0xAA, 0xBB, 0xCC, 0xDD, 0x01, 0x02]);
        assert!(matches!(
            decode_packet(&b, PID + 1),
            Ok(Packet::Payload { header: PayloadHeader { acks: None, .. }, .. })
        ));
        encode_payload_header(
            &mut b,
            &PayloadHeader {
                salt: 1,
                seq: 2,
                seq_high: None,
                acks: Some(AckFields { ack: 0x0403, ack_bits: 0x0807_0605, ack_delay: 0x0A09 }),
            },
        );
        assert_eq!(b, [PacketKind::Payload as u8, 1, 0, 0, 0, 2, 0, 3, 4, 5, 6, 7, 8, 9, 10]);
        // The long form: the high bits of the sequence number right after its low bits.
        encode_payload_header(
            &mut b,
            &PayloadHeader {
                salt: 1,
                seq: 2,
                seq_high: Some(0x0605_0403),
                acks: Some(AckFields { ack: 7, ack_bits: 8, ack_delay: 9 }),
            },
        );
        assert_eq!(b, [PacketKind::PayloadLong as u8, 1, 0, 0, 0, 2, 0, 3, 4, 5, 6, 7, 0, 8, 0, 0, 0, 9, 0]);
    }

    #[test]
    fn rejects_foreign_and_malformed() {
        let mut b = Vec::new();
        encode_challenge(&mut b, PID, 7, 8, 9);
        assert_eq!(decode_packet(&b, PID + 1), Err(DecodeError::WrongProtocol(PID)));
        // Every truncation of every kind is an error, never a panic.
        let mut samples = Vec::new();
        encode_connect_request(&mut b, PID, 1, SecurityMode::Encrypted);
        samples.push(b.clone());
        encode_challenge(&mut b, PID, 1, 2, 3);
        samples.push(b.clone());
        encode_accepted_head(&mut b, PID, 1, 2, &[0; 32], Cipher::ChaCha20Poly1305);
        b.extend_from_slice(&[0; 16]);
        samples.push(b.clone());
        encode_connect_response(&mut b, PID, &response(None));
        samples.push(b.clone());
        encode_payload_header(&mut b, &PayloadHeader::default());
        samples.push(b.clone());
        encode_payload_header(&mut b, &PayloadHeader { acks: Some(AckFields::default()), ..Default::default() });
        samples.push(b.clone());
        for acks in [None, Some(AckFields::default())] {
            encode_payload_header(&mut b, &PayloadHeader { seq_high: Some(1), acks, ..Default::default() });
            samples.push(b.clone());
        }
        let connected =
            [PacketKind::Payload, PacketKind::PayloadNoAcks, PacketKind::PayloadLong, PacketKind::PayloadLongNoAcks];
        for s in &samples {
            for n in 0..s.len() {
                assert!(decode_packet(&s[..n], PID).is_err(), "prefix {n} of {:?}", s.first());
            }
            // trailing garbage on fixed-size kinds
            let mut t = s.clone();
            t.push(0);
            if !connected.iter().any(|k| *k as u8 == s[0]) {
                assert!(decode_packet(&t, PID).is_err());
            }
        }
        // A disconnect's tag is 16 bytes or none.
        encode_disconnect(&mut b, PID, 1, 0, DisconnectReason::Client);
        b.extend_from_slice(&[0; 5]);
        assert_eq!(decode_packet(&b, PID), Err(DecodeError::Trailing));
        // Unknown kind, oversized, wrong version, non-zero padding, bad reason, bad security byte.
        let mut u = samples[1].clone();
        u[0] = 99;
        assert_eq!(decode_packet(&u, PID), Err(DecodeError::UnknownKind(99)));
        assert_eq!(decode_packet(&vec![0u8; MAX_DATAGRAM_SIZE + 1], PID), Err(DecodeError::TooLarge(1201)));
        let mut v = samples[1].clone();
        v[1] = PROTOCOL_VERSION + 1;
        assert_eq!(decode_packet(&v, PID), Err(DecodeError::WrongVersion(PROTOCOL_VERSION + 1)));
        let mut p = samples[0].clone();
        p[200] = 1;
        assert_eq!(decode_packet(&p, PID), Err(DecodeError::BadPadding));
        let mut p = samples[0].clone();
        p[14] = 3; // 0, 1 and 2 are modes
        assert_eq!(decode_packet(&p, PID), Err(DecodeError::BadSecurity(3)));
        encode_disconnect(&mut b, PID, 1, 0, DisconnectReason::Client);
        *b.last_mut().unwrap() = 0;
        assert_eq!(decode_packet(&b, PID), Err(DecodeError::BadReason(0)));
    }

    #[test]
    fn other_versions_can_still_ask_and_be_told() {
        let mut b = Vec::new();
        encode_connect_request(&mut b, PID, 3, SecurityMode::Encrypted);
        b[1] = PROTOCOL_VERSION + 5;
        b[20] = 0xFF; // whatever another version puts after the salt
        assert_eq!(
            decode_packet(&b, PID),
            Ok(Packet::ConnectRequest {
                version: PROTOCOL_VERSION + 5,
                client_salt: 3,
                security: SecurityMode::Encrypted
            })
        );
        encode_denied(&mut b, PID, 3, DisconnectReason::VersionMismatch, None);
        b[1] = PROTOCOL_VERSION + 5;
        assert!(matches!(decode_packet(&b, PID), Ok(Packet::Denied { .. })));
    }
}
