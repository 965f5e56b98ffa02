//! A STUN binding client (RFC 8489), sans-IO: the request's bytes and the reflexive
//! address read from the response. The caller owns the socket, the retransmissions
//! and the transaction id (96 random bits from its own generator, RFC 8489 §6).
//!
//! A message is a 20-byte header (type, length of what follows, the magic cookie, the
//! transaction id), then attributes, each a type, a length and a value padded to a
//! multiple of 4 bytes; everything is in network order. Our request is the header and
//! a FINGERPRINT (CRC-32 of the message before it, XOR `0x5354554E`), so that a
//! server or a middlebox can tell it from other traffic on the same port.
//!
//! The response is read strictly, every length checked before it is used: a success
//! (`0x0101`) gives its XOR-MAPPED-ADDRESS, or its MAPPED-ADDRESS when it has none
//! (servers of RFC 3489's time); an error response (`0x0111`) its ERROR-CODE. A
//! FINGERPRINT must be the last attribute and must match. Unknown attributes in the
//! comprehension-optional range (`0x8000`-`0xFFFF`) are skipped; an unknown one in the
//! comprehension-required range (`0x0000`-`0x7FFF`) refuses the message (§6.3.3).
//! MESSAGE-INTEGRITY is understood and not verified: we send no credentials, so a
//! server has no key of ours to sign with, and a forger who sees our transaction id can
//! forge the rest anyway. As §14.5 says, what follows it other than
//! MESSAGE-INTEGRITY-SHA256 and FINGERPRINT is ignored. Padding bytes are ignored, not
//! required to be zero (§14; RFC 5769's own vectors pad with spaces).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::wire::{Reader, Writer};

/// The magic cookie every RFC 5389/8489 message carries after its length.
pub const MAGIC_COOKIE: u32 = 0x2112_A442;

/// Bytes of a transaction id.
pub const TRANSACTION_ID_SIZE: usize = 12;

/// Bytes of the binding request [`encode_binding_request`] writes: the header and a
/// FINGERPRINT.
pub const BINDING_REQUEST_SIZE: usize = HEADER_SIZE + FINGERPRINT_ATTR_SIZE;

const HEADER_SIZE: usize = 20;
const FINGERPRINT_ATTR_SIZE: usize = 8;

const BINDING_REQUEST: u16 = 0x0001;
const BINDING_SUCCESS: u16 = 0x0101;
const BINDING_ERROR: u16 = 0x0111;

// Attributes (RFC 8489 §18.3).
const MAPPED_ADDRESS: u16 = 0x0001;
const USERNAME: u16 = 0x0006;
const MESSAGE_INTEGRITY: u16 = 0x0008;
const ERROR_CODE: u16 = 0x0009;
const UNKNOWN_ATTRIBUTES: u16 = 0x000A;
const REALM: u16 = 0x0014;
const NONCE: u16 = 0x0015;
const MESSAGE_INTEGRITY_SHA256: u16 = 0x001C;
const PASSWORD_ALGORITHM: u16 = 0x001D;
const USERHASH: u16 = 0x001E;
const XOR_MAPPED_ADDRESS: u16 = 0x0020;
const FINGERPRINT: u16 = 0x8028;

/// Comprehension-required attributes we understand well enough to skip: those of
/// RFC 8489's registry a response may carry (the ones of an error response's
/// authentication challenge among them).
const KNOWN_REQUIRED: [u16; 11] = [
    MAPPED_ADDRESS,
    USERNAME,
    MESSAGE_INTEGRITY,
    ERROR_CODE,
    UNKNOWN_ATTRIBUTES,
    REALM,
    NONCE,
    MESSAGE_INTEGRITY_SHA256,
    PASSWORD_ALGORITHM,
    USERHASH,
    XOR_MAPPED_ADDRESS,
];

/// What FINGERPRINT's CRC-32 is XORed with: "STUN" in ASCII (§14.7).
const FINGERPRINT_XOR: u32 = 0x5354_554E;

const FAMILY_IPV4: u8 = 0x01;
const FAMILY_IPV6: u8 = 0x02;

/// Why a datagram is not a binding response to our request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StunError {
    /// Shorter than a STUN header.
    #[error("{0} bytes: shorter than a STUN header (20)")]
    TooShort(usize),
    /// The first two bits are not zero, or the magic cookie is not there: not STUN.
    #[error("not a STUN message (first bits or magic cookie)")]
    NotStun,
    /// The header's length is not a multiple of 4 or not the bytes that follow it.
    #[error("the header says {declared} bytes of attributes; {actual} follow")]
    BadLength {
        /// What the header says.
        declared: usize,
        /// What follows the header.
        actual: usize,
    },
    /// A STUN message of another type than a binding response.
    #[error("message type {0:#06x} is not a binding response")]
    UnexpectedType(u16),
    /// A response to another transaction (a late answer, or a forgery).
    #[error("a response to another transaction")]
    TransactionMismatch,
    /// The server answered with an error response.
    #[error("the server refused: {code} {reason}")]
    ErrorResponse {
        /// The error code, 300 to 699 (§14.8).
        code: u16,
        /// The server's reason phrase (invalid UTF-8 replaced).
        reason: String,
    },
    /// An attribute runs past the message, or its value has the wrong form.
    #[error("attribute {kind:#06x} is malformed: {why}")]
    BadAttribute {
        /// The attribute's type.
        kind: u16,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A comprehension-required attribute we do not know (§6.3.3: the response is
    /// refused).
    #[error("unknown comprehension-required attribute {0:#06x}")]
    UnknownRequired(u16),
    /// FINGERPRINT is not the last attribute.
    #[error("an attribute follows FINGERPRINT")]
    FingerprintNotLast,
    /// FINGERPRINT does not match the message.
    #[error("FINGERPRINT {found:#010x} does not match the message ({expected:#010x})")]
    BadFingerprint {
        /// What the message's bytes give.
        expected: u32,
        /// What the attribute says.
        found: u32,
    },
    /// A success response with neither XOR-MAPPED-ADDRESS nor MAPPED-ADDRESS.
    #[error("a success response without a mapped address")]
    NoAddress,
    /// An error response without ERROR-CODE.
    #[error("an error response without ERROR-CODE")]
    NoErrorCode,
}

/// Appends a binding request with this transaction id and a FINGERPRINT to `out`
/// ([`BINDING_REQUEST_SIZE`] bytes).
pub fn encode_binding_request(transaction_id: [u8; TRANSACTION_ID_SIZE], out: &mut Vec<u8>) {
    let start = out.len();
    let mut w = Writer::new(out);
    w.u16_be(BINDING_REQUEST);
    // The length counts the FINGERPRINT, which the CRC is computed with (§14.7).
    w.u16_be(FINGERPRINT_ATTR_SIZE as u16);
    w.u32_be(MAGIC_COOKIE);
    w.bytes(&transaction_id);
    let crc = crc32(&w.buf[start..]) ^ FINGERPRINT_XOR;
    w.u16_be(FINGERPRINT);
    w.u16_be(4);
    w.u32_be(crc);
}

/// Reads a binding response to the request of `expected_transaction_id`: the
/// reflexive transport address the server saw the request come from.
pub fn decode_binding_response(
    bytes: &[u8],
    expected_transaction_id: [u8; TRANSACTION_ID_SIZE],
) -> Result<SocketAddr, StunError> {
    if bytes.len() < HEADER_SIZE {
        return Err(StunError::TooShort(bytes.len()));
    }
    let mut r = Reader::new(bytes);
    let kind = r.u16_be().map_err(|_| StunError::TooShort(bytes.len()))?;
    let declared = r.u16_be().map_err(|_| StunError::TooShort(bytes.len()))? as usize;
    let cookie = r.u32_be().map_err(|_| StunError::TooShort(bytes.len()))?;
    let id = r.bytes(TRANSACTION_ID_SIZE).map_err(|_| StunError::TooShort(bytes.len()))?;
    if kind & 0xC000 != 0 || cookie != MAGIC_COOKIE {
        return Err(StunError::NotStun);
    }
    let actual = r.remaining();
    if declared % 4 != 0 || declared != actual {
        return Err(StunError::BadLength { declared, actual });
    }
    if kind != BINDING_SUCCESS && kind != BINDING_ERROR {
        return Err(StunError::UnexpectedType(kind));
    }
    if id != expected_transaction_id {
        return Err(StunError::TransactionMismatch);
    }

    let mut xor_mapped = None;
    let mut mapped = None;
    let mut error = None;
    let mut after_integrity = false;
    while !r.is_empty() {
        let at = bytes.len() - r.remaining();
        // The body is a multiple of 4, so an attribute's header is always whole.
        let attr = r.u16_be().map_err(|_| StunError::BadLength { declared, actual })?;
        let len = r.u16_be().map_err(|_| StunError::BadLength { declared, actual })? as usize;
        let malformed = |why| StunError::BadAttribute { kind: attr, why };
        let value = r.bytes(len).map_err(|_| malformed("its length runs past the message"))?;
        // Padding to 4 bytes, of any value (§14); past the end only if the length lied.
        r.bytes((4 - len % 4) % 4).map_err(|_| malformed("its padding runs past the message"))?;
        match attr {
            FINGERPRINT => {
                if len != 4 {
                    return Err(malformed("FINGERPRINT is 4 bytes"));
                }
                if !r.is_empty() {
                    return Err(StunError::FingerprintNotLast);
                }
                let found = u32::from_be_bytes([value[0], value[1], value[2], value[3]]);
                let expected = crc32(&bytes[..at]) ^ FINGERPRINT_XOR;
                if found != expected {
                    return Err(StunError::BadFingerprint { expected, found });
                }
            }
            // After MESSAGE-INTEGRITY only these two count (§14.5).
            MESSAGE_INTEGRITY_SHA256 => after_integrity = true,
            _ if after_integrity => {}
            MESSAGE_INTEGRITY => after_integrity = true,
            // Only the first of each counts (§14).
            XOR_MAPPED_ADDRESS if xor_mapped.is_none() => {
                xor_mapped = Some(address(value, Some(id)).map_err(malformed)?)
            }
            MAPPED_ADDRESS if mapped.is_none() => mapped = Some(address(value, None).map_err(malformed)?),
            ERROR_CODE if error.is_none() => error = Some(error_code(value).map_err(malformed)?),
            _ if attr < 0x8000 && !KNOWN_REQUIRED.contains(&attr) => return Err(StunError::UnknownRequired(attr)),
            _ => {}
        }
    }
    if kind == BINDING_ERROR {
        let (code, reason) = error.ok_or(StunError::NoErrorCode)?;
        return Err(StunError::ErrorResponse { code, reason });
    }
    xor_mapped.or(mapped).ok_or(StunError::NoAddress)
}

/// A MAPPED-ADDRESS value, or an XOR-MAPPED-ADDRESS one with its message's
/// transaction id (§14.1, §14.2): a reserved byte (ignored), the family, the port and
/// the address.
fn address(value: &[u8], xor_with: Option<&[u8]>) -> Result<SocketAddr, &'static str> {
    let mut r = Reader::new(value);
    let _reserved = r.u8().map_err(|_| "shorter than an address")?;
    let family = r.u8().map_err(|_| "shorter than an address")?;
    let port = r.u16_be().map_err(|_| "shorter than an address")?;
    let rest = r.bytes(r.remaining()).map_err(|_| "shorter than an address")?;
    // X-Port is XORed with the cookie's upper half, X-Address with the cookie (IPv4),
    // or the cookie and the transaction id (IPv6).
    let mut mask = [0u8; 16];
    let mut port_mask = 0;
    if let Some(id) = xor_with {
        mask[..4].copy_from_slice(&MAGIC_COOKIE.to_be_bytes());
        mask[4..].copy_from_slice(id);
        port_mask = (MAGIC_COOKIE >> 16) as u16;
    }
    let ip = match (family, rest.len()) {
        (FAMILY_IPV4, 4) => {
            let mut a = [0u8; 4];
            for (i, b) in a.iter_mut().enumerate() {
                *b = rest[i] ^ mask[i];
            }
            IpAddr::V4(Ipv4Addr::from(a))
        }
        (FAMILY_IPV6, 16) => {
            let mut a = [0u8; 16];
            for (i, b) in a.iter_mut().enumerate() {
                *b = rest[i] ^ mask[i];
            }
            IpAddr::V6(Ipv6Addr::from(a))
        }
        (FAMILY_IPV4, _) => return Err("an IPv4 address is 8 bytes"),
        (FAMILY_IPV6, _) => return Err("an IPv6 address is 20 bytes"),
        _ => return Err("unknown address family"),
    };
    Ok(SocketAddr::new(ip, port ^ port_mask))
}

/// An ERROR-CODE value (§14.8): 21 reserved bits, the class (3 to 6) in 3 bits, the
/// number (0 to 99) in 8, then the reason phrase.
fn error_code(value: &[u8]) -> Result<(u16, String), &'static str> {
    let mut r = Reader::new(value);
    let head = r.u32_be().map_err(|_| "ERROR-CODE is at least 4 bytes")?;
    let class = (head >> 8) & 0x7;
    let number = head & 0xFF;
    if !(3..=6).contains(&class) || number > 99 {
        return Err("the error code is not 300 to 699");
    }
    let reason = r.bytes(r.remaining()).map_err(|_| "ERROR-CODE is at least 4 bytes")?;
    Ok(((class * 100 + number) as u16, String::from_utf8_lossy(reason).into_owned()))
}

/// CRC-32 as IEEE 802.3 and ISO HDLC define it (reflected polynomial `0xEDB88320`,
/// initial and final XOR all ones), what FINGERPRINT takes (§14.7). Twenty lines
/// here rather than a dependency: it runs over a few dozen bytes a request.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc = CRC_TABLE[((crc ^ b as u32) & 0xFF) as usize] ^ (crc >> 8);
    }
    !crc
}

/// The byte-at-a-time table of [`crc32`], computed at compile time.
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 5769 §2.2 and §2.3: the transaction id of both sample responses.
    const RFC5769_ID: [u8; 12] = [0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae];

    /// RFC 5769 §2.2, "Sample IPv4 Response": SOFTWARE "test vector" (padded with a
    /// space), XOR-MAPPED-ADDRESS 192.0.2.1:32853, MESSAGE-INTEGRITY, FINGERPRINT.
    const RFC5769_IPV4: [u8; 80] = [
        0x01, 0x01, 0x00, 0x3c, 0x21, 0x12, 0xa4, 0x42, 0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87,
        0xdf, 0xae, 0x80, 0x22, 0x00, 0x0b, 0x74, 0x65, 0x73, 0x74, 0x20, 0x76, 0x65, 0x63, 0x74, 0x6f, 0x72, 0x20,
        0x00, 0x20, 0x00, 0x08, 0x00, 0x01, 0xa1, 0x47, 0xe1, 0x12, 0xa6, 0x43, 0x00, 0x08, 0x00, 0x14, 0x2b, 0x91,
        0xf5, 0x99, 0xfd, 0x9e, 0x90, 0xc3, 0x8c, 0x74, 0x89, 0xf9, 0x2a, 0xf9, 0xba, 0x53, 0xf0, 0x6b, 0xe7, 0xd7,
        0x80, 0x28, 0x00, 0x04, 0xc0, 0x7d, 0x4c, 0x96,
    ];

    /// RFC 5769 §2.3, "Sample IPv6 Response": the same with XOR-MAPPED-ADDRESS
    /// [2001:db8:1234:5678:11:2233:4455:6677]:32853.
    const RFC5769_IPV6: [u8; 92] = [
        0x01, 0x01, 0x00, 0x48, 0x21, 0x12, 0xa4, 0x42, 0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87,
        0xdf, 0xae, 0x80, 0x22, 0x00, 0x0b, 0x74, 0x65, 0x73, 0x74, 0x20, 0x76, 0x65, 0x63, 0x74, 0x6f, 0x72, 0x20,
        0x00, 0x20, 0x00, 0x14, 0x00, 0x02, 0xa1, 0x47, 0x01, 0x13, 0xa9, 0xfa, 0xa5, 0xd3, 0xf1, 0x79, 0xbc, 0x25,
        0xf4, 0xb5, 0xbe, 0xd2, 0xb9, 0xd9, 0x00, 0x08, 0x00, 0x14, 0xa3, 0x82, 0x95, 0x4e, 0x4b, 0xe6, 0x7b, 0xf1,
        0x17, 0x84, 0xc9, 0x7c, 0x82, 0x92, 0xc2, 0x75, 0xbf, 0xe3, 0xed, 0x41, 0x80, 0x28, 0x00, 0x04, 0xc8, 0xfb,
        0x0b, 0x4c,
    ];

    /// A response built by hand: the header, then each `(type, value)` padded with
    /// zeros, then a FINGERPRINT if asked; the length set to what follows.
    fn response(kind: u16, id: [u8; 12], attrs: &[(u16, &[u8])], fingerprint: bool) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&kind.to_be_bytes());
        m.extend_from_slice(&[0, 0]);
        m.extend_from_slice(&MAGIC_COOKIE.to_be_bytes());
        m.extend_from_slice(&id);
        for &(t, v) in attrs {
            m.extend_from_slice(&t.to_be_bytes());
            m.extend_from_slice(&(v.len() as u16).to_be_bytes());
            m.extend_from_slice(v);
            m.resize(m.len().next_multiple_of(4), 0);
        }
        if fingerprint {
            let len = (m.len() - HEADER_SIZE + FINGERPRINT_ATTR_SIZE) as u16;
            m[2..4].copy_from_slice(&len.to_be_bytes());
            let crc = crc32(&m) ^ FINGERPRINT_XOR;
            m.extend_from_slice(&FINGERPRINT.to_be_bytes());
            m.extend_from_slice(&4u16.to_be_bytes());
            m.extend_from_slice(&crc.to_be_bytes());
        }
        let len = (m.len() - HEADER_SIZE) as u16;
        m[2..4].copy_from_slice(&len.to_be_bytes());
        m
    }

    /// An XOR-MAPPED-ADDRESS value for an IPv4 address.
    fn xor_v4(addr: [u8; 4], port: u16) -> Vec<u8> {
        let c = MAGIC_COOKIE.to_be_bytes();
        let mut v = vec![0, FAMILY_IPV4];
        v.extend_from_slice(&(port ^ (MAGIC_COOKIE >> 16) as u16).to_be_bytes());
        v.extend((0..4).map(|i| addr[i] ^ c[i]));
        v
    }

    const ID: [u8; 12] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];

    #[test]
    fn crc32_has_the_standard_check_value() {
        // The check value of CRC-32/ISO-HDLC over the ASCII digits 1 to 9.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn rfc5769_ipv4_response() {
        let addr = decode_binding_response(&RFC5769_IPV4, RFC5769_ID).unwrap();
        assert_eq!(addr, "192.0.2.1:32853".parse().unwrap());
    }

    #[test]
    fn rfc5769_ipv6_response() {
        let addr = decode_binding_response(&RFC5769_IPV6, RFC5769_ID).unwrap();
        assert_eq!(addr, "[2001:db8:1234:5678:11:2233:4455:6677]:32853".parse().unwrap());
    }

    #[test]
    fn rfc5769_responses_with_a_flipped_bit_are_refused() {
        for v in [&RFC5769_IPV4[..], &RFC5769_IPV6[..]] {
            // FINGERPRINT's CRC covers every byte before it (the padding and
            // MESSAGE-INTEGRITY included), its length must be 4, its value match.
            // Two kinds of flip leave a well-formed message without FINGERPRINT, which
            // is read: one in its type (an unknown attribute after MESSAGE-INTEGRITY,
            // ignored), or in MESSAGE-INTEGRITY's length that makes it 28 (its value
            // then swallows the FINGERPRINT).
            let (fingerprint_type, integrity_len) = (v.len() - 8..v.len() - 6, v.len() - 32 + 2..v.len() - 32 + 4);
            let kept = |i: &usize| !fingerprint_type.contains(&(i / 8)) && !integrity_len.contains(&(i / 8));
            for i in (0..v.len() * 8).filter(kept) {
                let mut m = v.to_vec();
                m[i / 8] ^= 1 << (i % 8);
                assert!(decode_binding_response(&m, RFC5769_ID).is_err(), "bit {i} flipped was accepted");
            }
        }
    }

    #[test]
    fn the_request_is_a_header_and_a_fingerprint() {
        let mut out = vec![0xAA];
        encode_binding_request(ID, &mut out);
        let m = &out[1..];
        assert_eq!(m.len(), BINDING_REQUEST_SIZE);
        assert_eq!(m[..4], [0x00, 0x01, 0x00, 0x08]);
        assert_eq!(m[4..8], MAGIC_COOKIE.to_be_bytes());
        assert_eq!(m[8..20], ID);
        assert_eq!(m[20..24], [0x80, 0x28, 0x00, 0x04]);
        assert_eq!(m[24..], (crc32(&m[..20]) ^ FINGERPRINT_XOR).to_be_bytes());
    }

    #[test]
    fn xor_mapped_is_preferred_and_mapped_is_the_fallback() {
        let plain = [0, FAMILY_IPV4, 0x1F, 0x90, 10, 0, 0, 1];
        let xored = xor_v4([203, 0, 113, 7], 4000);
        let m = response(BINDING_SUCCESS, ID, &[(MAPPED_ADDRESS, &plain), (XOR_MAPPED_ADDRESS, &xored)], true);
        assert_eq!(decode_binding_response(&m, ID), Ok("203.0.113.7:4000".parse().unwrap()));
        let m = response(BINDING_SUCCESS, ID, &[(MAPPED_ADDRESS, &plain)], false);
        assert_eq!(decode_binding_response(&m, ID), Ok("10.0.0.1:8080".parse().unwrap()));
        let m = response(BINDING_SUCCESS, ID, &[(0x8022, b"x")], true);
        assert_eq!(decode_binding_response(&m, ID), Err(StunError::NoAddress));
    }

    #[test]
    fn the_header_is_checked() {
        let ok = response(BINDING_SUCCESS, ID, &[(XOR_MAPPED_ADDRESS, &xor_v4([1, 2, 3, 4], 5))], false);
        assert!(decode_binding_response(&ok, ID).is_ok());
        assert_eq!(decode_binding_response(&ok[..19], ID), Err(StunError::TooShort(19)));
        let other = [9u8; 12];
        assert_eq!(decode_binding_response(&ok, other), Err(StunError::TransactionMismatch));
        let mut m = ok.clone();
        m[4] ^= 1;
        assert_eq!(decode_binding_response(&m, ID), Err(StunError::NotStun));
        let mut m = ok.clone();
        m[0] |= 0x40;
        assert_eq!(decode_binding_response(&m, ID), Err(StunError::NotStun));
        let mut m = ok.clone();
        m[1] = 0x01; // a binding request
        m[0] = 0x00;
        assert_eq!(decode_binding_response(&m, ID), Err(StunError::UnexpectedType(0x0001)));
        // A length not a multiple of 4, one short of the bytes, one past them.
        for declared in [13usize, 8, 16] {
            let mut m = ok.clone();
            m[2..4].copy_from_slice(&(declared as u16).to_be_bytes());
            assert_eq!(decode_binding_response(&m, ID), Err(StunError::BadLength { declared, actual: 12 }));
        }
        let mut m = ok.clone();
        m.extend_from_slice(&[0; 4]);
        assert_eq!(decode_binding_response(&m, ID), Err(StunError::BadLength { declared: 12, actual: 16 }));
    }

    #[test]
    fn attributes_are_checked() {
        let addr = xor_v4([1, 2, 3, 4], 5);
        // A length past the end.
        let mut m = response(BINDING_SUCCESS, ID, &[(XOR_MAPPED_ADDRESS, &addr)], false);
        m[22..24].copy_from_slice(&9u16.to_be_bytes());
        assert!(matches!(decode_binding_response(&m, ID), Err(StunError::BadAttribute { kind: 0x0020, .. })));
        // Wrong sizes and families.
        for bad in [&addr[..7], &[0, FAMILY_IPV6, 0, 0, 1, 2, 3, 4][..], &[0, 3, 0, 0, 1, 2, 3, 4][..], &[][..]] {
            let m = response(BINDING_SUCCESS, ID, &[(XOR_MAPPED_ADDRESS, bad)], false);
            assert!(matches!(decode_binding_response(&m, ID), Err(StunError::BadAttribute { kind: 0x0020, .. })));
        }
        // Unknown: comprehension-optional skipped, comprehension-required refused.
        let m = response(BINDING_SUCCESS, ID, &[(0xC001, b"abcde"), (XOR_MAPPED_ADDRESS, &addr)], true);
        assert!(decode_binding_response(&m, ID).is_ok());
        let m = response(BINDING_SUCCESS, ID, &[(0x7FFF, b""), (XOR_MAPPED_ADDRESS, &addr)], true);
        assert_eq!(decode_binding_response(&m, ID), Err(StunError::UnknownRequired(0x7FFF)));
        // After MESSAGE-INTEGRITY, everything but FINGERPRINT is ignored, even an
        // unknown comprehension-required attribute or a second address.
        let other = xor_v4([9, 9, 9, 9], 9);
        let attrs = [(XOR_MAPPED_ADDRESS, &addr[..]), (MESSAGE_INTEGRITY, &[0; 20][..]), (0x7000, b""), (1, &other)];
        let m = response(BINDING_SUCCESS, ID, &attrs, true);
        assert_eq!(decode_binding_response(&m, ID), Ok("1.2.3.4:5".parse().unwrap()));
    }

    #[test]
    fn the_fingerprint_is_checked_and_last() {
        let addr = xor_v4([1, 2, 3, 4], 5);
        let mut m = response(BINDING_SUCCESS, ID, &[(XOR_MAPPED_ADDRESS, &addr)], true);
        assert!(decode_binding_response(&m, ID).is_ok());
        let n = m.len();
        m[n - 1] ^= 1;
        assert!(matches!(decode_binding_response(&m, ID), Err(StunError::BadFingerprint { .. })));
        // A FINGERPRINT then another attribute.
        let fp = response(BINDING_SUCCESS, ID, &[(XOR_MAPPED_ADDRESS, &addr)], true);
        let crc = &fp[fp.len() - 4..];
        let m =
            response(BINDING_SUCCESS, ID, &[(XOR_MAPPED_ADDRESS, &addr), (FINGERPRINT, crc), (0x8022, b"x")], false);
        assert_eq!(decode_binding_response(&m, ID), Err(StunError::FingerprintNotLast));
        let m = response(BINDING_SUCCESS, ID, &[(XOR_MAPPED_ADDRESS, &addr), (FINGERPRINT, b"abc")], false);
        assert!(matches!(decode_binding_response(&m, ID), Err(StunError::BadAttribute { kind: FINGERPRINT, .. })));
    }

    #[test]
    fn an_error_response_gives_its_code() {
        let m = response(BINDING_ERROR, ID, &[(ERROR_CODE, b"\0\0\x04\x01Unauthorized")], true);
        let e = decode_binding_response(&m, ID);
        assert_eq!(e, Err(StunError::ErrorResponse { code: 401, reason: "Unauthorized".into() }));
        let m = response(BINDING_ERROR, ID, &[(ERROR_CODE, b"\0\0\x02\x01")], false);
        assert!(matches!(decode_binding_response(&m, ID), Err(StunError::BadAttribute { kind: ERROR_CODE, .. })));
        let m = response(BINDING_ERROR, ID, &[(ERROR_CODE, b"\0\0\x04")], false);
        assert!(matches!(decode_binding_response(&m, ID), Err(StunError::BadAttribute { kind: ERROR_CODE, .. })));
        let m = response(BINDING_ERROR, ID, &[], false);
        assert_eq!(decode_binding_response(&m, ID), Err(StunError::NoErrorCode));
    }

    #[test]
    fn truncations_and_garbage_never_panic() {
        let m = response(BINDING_SUCCESS, ID, &[(XOR_MAPPED_ADDRESS, &xor_v4([1, 2, 3, 4], 5))], true);
        for n in 0..m.len() {
            assert!(decode_binding_response(&m[..n], ID).is_err());
        }
        let mut x = 0x1234_5678u32;
        for _ in 0..2000 {
            let mut g = m.clone();
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            g[20 + (x as usize) % (m.len() - 20)] = (x >> 8) as u8;
            let _ = decode_binding_response(&g, ID);
        }
    }
}
