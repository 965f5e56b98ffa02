//! Datagram layouts.
//!
//! ```text
//! prefix           kind u8 | version u8 | protocol_id u32
//! ConnectRequest   prefix | client_salt u64 | zero padding to 300 bytes
//! Challenge        prefix | client_salt u64 | cookie_time u64 | cookie_mac u64      (30 bytes)
//! ConnectResponse  prefix | client_salt u64 | cookie_time u64 | cookie_mac u64 | zero padding to 300
//! Accepted         prefix | client_salt u64 | server_salt u64                       (22 bytes)
//! Denied           prefix | client_salt u64 | reason u8                             (15 bytes)
//! Payload          prefix | salt u32 | seq u16 | ack u16 | ack_bits u32 | ack_delay u16 | frames
//! Disconnect       prefix | salt u32 | reason u8                                    (11 bytes)
//! ```
//! All integers little-endian. `Denied` and the request's size are the same in every
//! version, so a server can tell an old client why it was refused.

use super::{DecodeError, HANDSHAKE_REQUEST_SIZE, MAX_DATAGRAM_SIZE, PROTOCOL_VERSION, PacketKind, Reader, Writer};
use crate::transport::DisconnectReason;

/// The fixed part of a connected packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PayloadHeader {
    /// Connection salt: proves the sender completed the handshake with us.
    pub salt: u32,
    /// This packet's sequence number.
    pub seq: u16,
    /// Newest sequence number received from the peer.
    pub ack: u16,
    /// Bit i set = packet `ack - 1 - i` was received too.
    pub ack_bits: u32,
    /// Time between receiving `ack` and sending this, in [`super::ACK_DELAY_UNIT_US`] units.
    pub ack_delay: u16,
}

/// A decoded datagram, borrowing the frames from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packet<'a> {
    /// `version` may differ from ours: the caller answers with a version-mismatch denial.
    ConnectRequest {
        version: u8,
        client_salt: u64,
    },
    Challenge {
        client_salt: u64,
        cookie_time: u64,
        cookie_mac: u64,
    },
    ConnectResponse {
        client_salt: u64,
        cookie_time: u64,
        cookie_mac: u64,
    },
    Accepted {
        client_salt: u64,
        server_salt: u64,
    },
    Denied {
        client_salt: u64,
        reason: DisconnectReason,
    },
    Payload {
        header: PayloadHeader,
        frames: &'a [u8],
    },
    Disconnect {
        salt: u32,
        reason: DisconnectReason,
    },
}

/// Decodes one datagram, checking every length, the protocol id and the version.
pub fn decode_packet(data: &[u8], protocol_id: u32) -> Result<Packet<'_>, DecodeError> {
    if data.len() > MAX_DATAGRAM_SIZE {
        return Err(DecodeError::TooLarge(data.len()));
    }
    let mut r = Reader::new(data);
    let kind_byte = r.u8()?;
    let version = r.u8()?;
    let pid = r.u32()?;
    if pid != protocol_id {
        return Err(DecodeError::WrongProtocol(pid));
    }
    let kind = PacketKind::from_u8(kind_byte).ok_or(DecodeError::UnknownKind(kind_byte))?;
    // Requests and denials keep their layout across versions; everything else must match.
    if version != PROTOCOL_VERSION && !matches!(kind, PacketKind::ConnectRequest | PacketKind::Denied) {
        return Err(DecodeError::WrongVersion(version));
    }
    let reason = |r: &mut Reader| -> Result<DisconnectReason, DecodeError> {
        let b = r.u8()?;
        DisconnectReason::from_u8(b).ok_or(DecodeError::BadReason(b))
    };
    let packet = match kind {
        PacketKind::ConnectRequest | PacketKind::ConnectResponse => {
            if data.len() != HANDSHAKE_REQUEST_SIZE {
                return Err(DecodeError::BadHandshakeSize(data.len()));
            }
            let client_salt = r.u64()?;
            let p = if kind == PacketKind::ConnectRequest {
                Packet::ConnectRequest { version, client_salt }
            } else {
                Packet::ConnectResponse { client_salt, cookie_time: r.u64()?, cookie_mac: r.u64()? }
            };
            r.zero_padding()?;
            p
        }
        PacketKind::Challenge => {
            Packet::Challenge { client_salt: r.u64()?, cookie_time: r.u64()?, cookie_mac: r.u64()? }
        }
        PacketKind::Accepted => Packet::Accepted { client_salt: r.u64()?, server_salt: r.u64()? },
        PacketKind::Denied => Packet::Denied { client_salt: r.u64()?, reason: reason(&mut r)? },
        PacketKind::Disconnect => Packet::Disconnect { salt: r.u32()?, reason: reason(&mut r)? },
        PacketKind::Payload => {
            let header =
                PayloadHeader { salt: r.u32()?, seq: r.u16()?, ack: r.u16()?, ack_bits: r.u32()?, ack_delay: r.u16()? };
            let frames = r.bytes(r.remaining())?;
            return Ok(Packet::Payload { header, frames });
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

pub fn encode_connect_request(out: &mut Vec<u8>, protocol_id: u32, client_salt: u64) {
    let mut w = prefix(out, PacketKind::ConnectRequest, protocol_id);
    w.u64(client_salt);
    w.pad_to(HANDSHAKE_REQUEST_SIZE);
}

pub fn encode_challenge(out: &mut Vec<u8>, protocol_id: u32, client_salt: u64, cookie_time: u64, cookie_mac: u64) {
    let mut w = prefix(out, PacketKind::Challenge, protocol_id);
    w.u64(client_salt);
    w.u64(cookie_time);
    w.u64(cookie_mac);
}

pub fn encode_connect_response(
    out: &mut Vec<u8>,
    protocol_id: u32,
    client_salt: u64,
    cookie_time: u64,
    cookie_mac: u64,
) {
    let mut w = prefix(out, PacketKind::ConnectResponse, protocol_id);
    w.u64(client_salt);
    w.u64(cookie_time);
    w.u64(cookie_mac);
    w.pad_to(HANDSHAKE_REQUEST_SIZE);
}

pub fn encode_accepted(out: &mut Vec<u8>, protocol_id: u32, client_salt: u64, server_salt: u64) {
    let mut w = prefix(out, PacketKind::Accepted, protocol_id);
    w.u64(client_salt);
    w.u64(server_salt);
}

pub fn encode_denied(out: &mut Vec<u8>, protocol_id: u32, client_salt: u64, reason: DisconnectReason) {
    let mut w = prefix(out, PacketKind::Denied, protocol_id);
    w.u64(client_salt);
    w.u8(reason as u8);
}

pub fn encode_disconnect(out: &mut Vec<u8>, protocol_id: u32, salt: u32, reason: DisconnectReason) {
    let mut w = prefix(out, PacketKind::Disconnect, protocol_id);
    w.u32(salt);
    w.u8(reason as u8);
}

/// The salt of an established connection (carried in every Payload and Disconnect),
/// from the client's salt and the server's in `Accepted`: both sides derive it, neither
/// alone chooses it.
pub fn session_salt(client_salt: u64, server_salt: u64) -> u32 {
    let x = client_salt ^ server_salt.rotate_left(32);
    (x ^ (x >> 32)) as u32
}

/// Writes the connected-packet header; frames are appended after it.
pub fn encode_payload_header(out: &mut Vec<u8>, protocol_id: u32, h: &PayloadHeader) {
    let mut w = prefix(out, PacketKind::Payload, protocol_id);
    w.u32(h.salt);
    w.u16(h.seq);
    w.u16(h.ack);
    w.u32(h.ack_bits);
    w.u16(h.ack_delay);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{MAX_HANDSHAKE_REPLY_SIZE, PAYLOAD_HEADER_SIZE};

    const PID: u32 = 0xABCD_0001;

    #[test]
    fn every_kind_round_trips() {
        let mut b = Vec::new();
        encode_connect_request(&mut b, PID, 7);
        assert_eq!(b.len(), HANDSHAKE_REQUEST_SIZE);
        assert_eq!(decode_packet(&b, PID), Ok(Packet::ConnectRequest { version: PROTOCOL_VERSION, client_salt: 7 }));
        encode_challenge(&mut b, PID, 7, 8, 9);
        assert_eq!(b.len(), MAX_HANDSHAKE_REPLY_SIZE);
        assert_eq!(decode_packet(&b, PID), Ok(Packet::Challenge { client_salt: 7, cookie_time: 8, cookie_mac: 9 }));
        encode_connect_response(&mut b, PID, 7, 8, 9);
        assert_eq!(
            decode_packet(&b, PID),
            Ok(Packet::ConnectResponse { client_salt: 7, cookie_time: 8, cookie_mac: 9 })
        );
        encode_accepted(&mut b, PID, 1, 2);
        assert!(b.len() <= MAX_HANDSHAKE_REPLY_SIZE);
        assert_eq!(decode_packet(&b, PID), Ok(Packet::Accepted { client_salt: 1, server_salt: 2 }));
        encode_denied(&mut b, PID, 1, DisconnectReason::ServerFull);
        assert!(b.len() <= MAX_HANDSHAKE_REPLY_SIZE);
        assert_eq!(decode_packet(&b, PID), Ok(Packet::Denied { client_salt: 1, reason: DisconnectReason::ServerFull }));
        encode_disconnect(&mut b, PID, 5, DisconnectReason::Kicked);
        assert_eq!(decode_packet(&b, PID), Ok(Packet::Disconnect { salt: 5, reason: DisconnectReason::Kicked }));
        let h = PayloadHeader { salt: 1, seq: 2, ack: 3, ack_bits: 4, ack_delay: 5 };
        encode_payload_header(&mut b, PID, &h);
        assert_eq!(b.len(), PAYLOAD_HEADER_SIZE);
        b.extend_from_slice(&[9, 9]);
        assert_eq!(decode_packet(&b, PID), Ok(Packet::Payload { header: h, frames: &[9, 9] }));
    }

    #[test]
    fn rejects_foreign_and_malformed() {
        let mut b = Vec::new();
        encode_challenge(&mut b, PID, 7, 8, 9);
        assert_eq!(decode_packet(&b, PID + 1), Err(DecodeError::WrongProtocol(PID)));
        // Every truncation of every kind is an error, never a panic.
        let mut samples = Vec::new();
        encode_connect_request(&mut b, PID, 1);
        samples.push(b.clone());
        encode_challenge(&mut b, PID, 1, 2, 3);
        samples.push(b.clone());
        encode_accepted(&mut b, PID, 1, 2);
        samples.push(b.clone());
        encode_disconnect(&mut b, PID, 1, DisconnectReason::Client);
        samples.push(b.clone());
        encode_payload_header(&mut b, PID, &PayloadHeader::default());
        samples.push(b.clone());
        for s in &samples {
            for n in 0..s.len() {
                assert!(decode_packet(&s[..n], PID).is_err(), "prefix {n} of {:?}", s.first());
            }
            // trailing garbage on fixed-size kinds
            let mut t = s.clone();
            t.push(0);
            if s[0] != PacketKind::Payload as u8 {
                assert!(decode_packet(&t, PID).is_err());
            }
        }
        // Unknown kind, oversized, wrong version, non-zero padding, bad reason.
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
        let mut d = samples[3].clone();
        *d.last_mut().unwrap() = 0;
        assert_eq!(decode_packet(&d, PID), Err(DecodeError::BadReason(0)));
    }

    #[test]
    fn other_versions_can_still_ask_and_be_told() {
        let mut b = Vec::new();
        encode_connect_request(&mut b, PID, 3);
        b[1] = PROTOCOL_VERSION + 5;
        assert_eq!(
            decode_packet(&b, PID),
            Ok(Packet::ConnectRequest { version: PROTOCOL_VERSION + 5, client_salt: 3 })
        );
        encode_denied(&mut b, PID, 3, DisconnectReason::VersionMismatch);
        b[1] = PROTOCOL_VERSION + 5;
        assert!(matches!(decode_packet(&b, PID), Ok(Packet::Denied { .. })));
    }
}
