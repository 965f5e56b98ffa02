//! The byte formats: packets and frames (here), the relay's messages ([`relay`]) and
//! the P2P message ([`p2p`]), with strict decoding. Public for tools that read or write
//! tickwire's bytes (the lab, benchmarks, tests that forge hostile packets); a session
//! never needs them.
//!
//! Every handshake and disconnect datagram starts with a 6-byte prefix: `kind u8,
//! version u8, protocol_id u32`; a connected packet with the kind byte alone.
//! Handshake requests from an unauthenticated client are padded to
//! [`HANDSHAKE_REQUEST_SIZE`] so that no reply (at most [`MAX_HANDSHAKE_REPLY_SIZE`])
//! is ever larger than the request that caused it: the server cannot be used as an
//! amplifier. Decoding checks every length; a bad datagram is a [`DecodeError`], never
//! a panic.

mod codec;
mod frame;
mod packet;
pub(crate) mod siphash;

/// The relay's messages: a client's inputs, the server's updates (canonical steps,
/// margins, acks, checksums), the join handshake on the reliable channel, and a
/// relay-only server's asks and its clients' reports (`hosted`).
pub mod relay {
    pub use crate::relay::hosted::{
        KIND_CHECKS, KIND_STATE_ASK, KIND_STATE_REPORT, MAX_CHECKS, STATE_DIGEST_SIZE, STATE_REPORT_HEAD_SIZE,
        StateAsk, StateDigest, StateReport, decode_checks, decode_state_ask, decode_state_report, encode_checks,
        encode_state_ask, encode_state_report,
    };
    pub use crate::relay::join::{
        HELLO_SIZE, Hello, KIND_HELLO, KIND_WELCOME, SESSION_TOKEN_SIZE, SessionToken, WELCOME_HEAD_SIZE, Welcome,
        decode_hello, decode_welcome, encode_hello, encode_welcome,
    };
    pub use crate::relay::messages::{
        KIND_CLIENT_INPUTS, KIND_SERVER_UPDATE, MarginReport, NONE, PlayerStep, StepRules, UpdateHead, UpdateView,
        decode_client_input_spans, decode_server_update_into, encode_client_inputs, encode_server_update_head,
        set_entry_count, write_step,
    };
    pub use crate::relay::step_codec::{StepForm, encode_delta, write_entry};
}

/// The P2P rollback message: one per peer per tick, with the redundant unacknowledged
/// inputs, acks, frame advantage, disconnects and checksums.
pub mod p2p {
    pub use crate::rollback::message::{
        Decoded, Header, KIND_INPUT, KIND_SPECTATE, KIND_SPECTATOR_ACK, MESSAGE_VERSION, MessageError, decode, encode,
        max_encoded_len,
    };
}

pub(crate) use codec::{Reader, Writer, len16_size};
pub(crate) use frame::write_frame;
pub use frame::{FRAGMENT_HEADER_SIZE, Frame, FrameKind, FrameReader};
/// Fragmentation constants, shared with the reliable channel.
pub(crate) mod frame_consts {
    pub(crate) use super::frame::{FRAGMENT_SIZE, MAX_FRAGMENTS};
}
pub use packet::{
    AckFields, Cipher, CipherOffer, ConnectResponse, Packet, PayloadHeader, SecurityMode, TokenPart, decode_packet,
    encode_accepted_head, encode_challenge, encode_connect_request, encode_connect_response, encode_denied,
    encode_disconnect, encode_payload_header, session_salt,
};

/// Wire protocol version. Bumped on any incompatible change. 3: a peer's datagrams are
/// held to its budget (`transport::PeerLimits`: at most 64 frames per datagram by
/// default, messages and bytes a second), which a version-2 sender does not pace
/// itself by, and a disconnect may carry reason 8 (flooding). 4: the handshake agrees
/// on keys (X25519) and proves a secret or a connect token; packets and disconnects
/// carry an authentication tag; disconnects carry a sequence number; reasons 9-12.
/// 6: connected packets have no version or protocol id, and carry their ack fields
/// only when they have something new to acknowledge (kind 8 without them).
/// 7: the long form of a connected packet (kinds 9 and 10) carries bits 16-47 of its
/// sequence number too, sent while the peer has not acknowledged anything for a long
/// run of packets, so that a direction survives any run of losses.
/// 8: the handshake's `security` byte may be 2 ([`SecurityMode::Carrier`]: the whole
/// handshake, then packets without a tag), and the keys' derivation covers that byte.
/// A version-7 end would drop a carrier request as malformed and say nothing; with the
/// bump it answers "version mismatch".
/// 9: the client offers ciphers in its `ConnectResponse` (ChaCha20-Poly1305 always,
/// AES-256-GCM where its CPU runs it in hardware), the server's `Accepted` names the one
/// it picked (71 bytes), and the proof, the confirmation and the keys cover both.
pub const PROTOCOL_VERSION: u8 = 9;
/// No datagram is larger than this (safe under common path MTUs, as in netcode/renet).
/// An endpoint may send smaller ones (`EndpointConfig::max_datagram_size`, down to
/// [`MIN_DATAGRAM_SIZE`]); every endpoint receives datagrams up to this size.
pub const MAX_DATAGRAM_SIZE: usize = 1200;
/// Size every connection request is padded to.
pub const HANDSHAKE_REQUEST_SIZE: usize = 300;
/// Size every connect response is padded to (it may carry a connect token's sealed part).
pub const CONNECT_RESPONSE_SIZE: usize = 640;
/// The largest reply to a handshake packet (an `Accepted`): far below either request.
pub const MAX_HANDSHAKE_REPLY_SIZE: usize = 71;
/// Bytes of the authentication tag at the end of every encrypted packet (not of a
/// plaintext or carrier-protected one).
pub const TAG_SIZE: usize = 16;
/// `kind + version + protocol_id`.
pub const PREFIX_SIZE: usize = 6;
/// A connected packet's header with acks: `kind u8, salt u32, seq u16, ack u16,
/// ack_bits u32, ack_delay u16`.
pub const PAYLOAD_HEADER_SIZE: usize = 15;
/// A connected packet's header without acks: `kind u8, salt u32, seq u16`.
pub const PAYLOAD_HEADER_NO_ACKS_SIZE: usize = 7;
/// What the long form of a connected packet's header adds: `seq_high u32`, bits 16-47
/// of the sequence number (see [`PayloadHeader::seq_high`]).
pub const SEQ_HIGH_SIZE: usize = 4;
/// The most frame bytes a datagram carries, the same with or without encryption or
/// acks, so that message limits depend on neither. It is what version 5's 20-byte
/// header left, kept so that `TW_MAX_UNRELIABLE_SIZE` did not change with the shorter
/// header; every header plus this plus the tag fits [`MAX_DATAGRAM_SIZE`].
pub const MAX_FRAMES_SIZE: usize = max_frames_size(MAX_DATAGRAM_SIZE);
const _: () = assert!(PAYLOAD_HEADER_SIZE + SEQ_HIGH_SIZE + MAX_FRAMES_SIZE + TAG_SIZE <= MAX_DATAGRAM_SIZE);

/// The sealed part of a connected packet: its frames and tag, past its plaintext
/// header. None for a handshake packet or bytes that are no packet. What a relay
/// carries of a match is this: a recording of it tells whether the relay could read it.
pub fn sealed_body(datagram: &[u8]) -> Option<&[u8]> {
    let header = match PacketKind::from_u8(*datagram.first()?)? {
        PacketKind::Payload => PAYLOAD_HEADER_SIZE,
        PacketKind::PayloadNoAcks => PAYLOAD_HEADER_NO_ACKS_SIZE,
        PacketKind::PayloadLong => PAYLOAD_HEADER_SIZE + SEQ_HIGH_SIZE,
        PacketKind::PayloadLongNoAcks => PAYLOAD_HEADER_NO_ACKS_SIZE + SEQ_HIGH_SIZE,
        _ => return None,
    };
    datagram.get(header..).filter(|b| !b.is_empty())
}

/// Bytes a datagram keeps for the connected packet's header: version 5's 20 (see
/// [`MAX_FRAMES_SIZE`]), at least every header of today.
const HEADER_ROOM: usize = 20;
const _: () = assert!(PAYLOAD_HEADER_SIZE + SEQ_HIGH_SIZE <= HEADER_ROOM);

/// The most frame bytes a datagram of at most `max_datagram_size` bytes carries (as
/// [`MAX_FRAMES_SIZE`] for a 1,200-byte one): what is left after the header room and
/// the tag.
pub const fn max_frames_size(max_datagram_size: usize) -> usize {
    max_datagram_size.saturating_sub(HEADER_ROOM + TAG_SIZE)
}

/// The smallest datagram limit an endpoint accepts (`EndpointConfig::max_datagram_size`):
/// the largest of what must go whole in one datagram, none of whose sizes depend on the
/// limit (they are wire format):
/// - a reliable fragment: its frame ([`FRAGMENT_HEADER_SIZE`] + 1,024 bytes) with the
///   header room and the tag. At this size a message too large for one unit is also
///   larger than a fragment, so it always splits into two or more;
/// - a relay server update carrying one piece of a large step: the update's head
///   without reports, the piece's head and its 1,024 bytes, in the largest frame of an
///   unreliable message with the header room and the tag. This is the largest: 1,105;
/// - the handshake packets ([`HANDSHAKE_REQUEST_SIZE`], [`CONNECT_RESPONSE_SIZE`]).
///
/// A carrier below it (none known: Steam and WebRTC take 1,200 bytes, EOS P2P 1,170)
/// would need smaller fragments, a change of the wire format.
pub const MIN_DATAGRAM_SIZE: usize = min_datagram_size();
const _: () = assert!(MIN_DATAGRAM_SIZE == 1105 && MIN_DATAGRAM_SIZE <= MAX_DATAGRAM_SIZE);

const fn min_datagram_size() -> usize {
    const fn max(a: usize, b: usize) -> usize {
        if a > b { a } else { b }
    }
    let room = HEADER_ROOM + TAG_SIZE;
    let reliable_fragment = FRAGMENT_HEADER_SIZE + frame::FRAGMENT_SIZE + room;
    let relay_piece = crate::relay::UPDATE_PIECE_SIZE + crate::transport::UNRELIABLE_FRAME_OVERHEAD + room;
    max(max(reliable_fragment, relay_piece), max(HANDSHAKE_REQUEST_SIZE, CONNECT_RESPONSE_SIZE))
}

/// Ack delay is carried in units of this many microseconds (u16: up to ~0.5 s).
pub const ACK_DELAY_UNIT_US: u64 = 8;

/// What a datagram is, from its first byte. Numbers are wire format: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PacketKind {
    /// A client asks to connect.
    ConnectRequest = 1,
    /// The server answers a request with a stateless cookie.
    Challenge = 2,
    /// The client returns the cookie, with its key share and proof.
    ConnectResponse = 3,
    /// The server accepts the connection.
    Accepted = 4,
    /// The server refuses the connection.
    Denied = 5,
    /// A connected packet with ack fields.
    Payload = 6,
    /// A connection is closed.
    Disconnect = 7,
    /// A connected packet without ack fields (from version 6).
    PayloadNoAcks = 8,
    /// The long form of `Payload`: with bits 16-47 of the sequence number (from version 7).
    PayloadLong = 9,
    /// The long form of `PayloadNoAcks` (from version 7).
    PayloadLongNoAcks = 10,
}

impl PacketKind {
    /// The kind with this first byte, if any.
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::ConnectRequest,
            2 => Self::Challenge,
            3 => Self::ConnectResponse,
            4 => Self::Accepted,
            5 => Self::Denied,
            6 => Self::Payload,
            7 => Self::Disconnect,
            8 => Self::PayloadNoAcks,
            9 => Self::PayloadLong,
            10 => Self::PayloadLongNoAcks,
            _ => return None,
        })
    }
}

/// Why a datagram was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("truncated: needed {need} more bytes, {have} left")]
    /// The datagram ended early.
    Truncated {
        /// Bytes the next field needs.
        need: usize,
        /// Bytes left.
        have: usize,
    },
    #[error("datagram of {0} bytes is larger than the maximum")]
    /// Larger than [`MAX_DATAGRAM_SIZE`].
    TooLarge(usize),
    #[error("unknown packet kind {0}")]
    /// The first byte is no [`PacketKind`].
    UnknownKind(u8),
    #[error("protocol id {0:#x} is not ours")]
    /// Another game's protocol id.
    WrongProtocol(u32),
    #[error("protocol version {0} is not ours")]
    /// Another protocol version.
    WrongVersion(u8),
    #[error("handshake packet has the wrong size {0}")]
    /// A handshake packet whose size is not its kind's.
    BadHandshakeSize(usize),
    #[error("non-zero padding")]
    /// Padding that is not zero.
    BadPadding,
    #[error("bad length field")]
    /// A length or count field that is out of range.
    BadLength,
    #[error("bad frame header {0:#04x}")]
    /// A frame header that is not valid; the header byte.
    BadFrame(u8),
    #[error("bad fragment index {index} of {count}")]
    /// A fragment index not below its count, or a count out of range.
    BadFragment {
        /// The fragment's index.
        index: u16,
        /// The fragment count.
        count: u16,
    },
    #[error("bad security or token flag {0}")]
    /// A security byte that is no [`SecurityMode`], or a token or binding flag that is
    /// neither 0 nor 1.
    BadSecurity(u8),
    #[error("unknown disconnect reason {0}")]
    /// A disconnect reason code that does not exist.
    BadReason(u8),
    #[error("trailing bytes after packet")]
    /// Bytes left over after the packet.
    Trailing,
}

/// True if sequence number `a` is newer than `b` in wrapping u16 space.
#[inline]
pub(crate) fn seq_newer(a: u16, b: u16) -> bool {
    (a.wrapping_sub(b) as i16) > 0
}
