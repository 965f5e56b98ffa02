//! The messages of a hosted match: a relay server that runs no game code
//! ([`ServerMode::RelayOnly`](super::relay_server_session::ServerMode)). Its clients
//! stand in for the server's engine in the two things the engine did:
//! - **checksums**: every client reports its checksum of the authoritative state at each
//!   check tick, and the server hands out the one a majority of the players agree on,
//!   in the updates' `checks` as before (a client in the minority sees a desync);
//! - **snapshots**: a joining (or returning, or resyncing) player's state comes from a
//!   client that has the timeline. One client uploads its state at a tick the server
//!   names, up to two others send only its digest, and the server welcomes the joiner
//!   with the upload only when a majority of those asked agree with it.
//!
//! ```text
//! StateAsk     kind=5 | tick u32 | upload u8 (0: the digest only, 1: the state too)   server → client
//! StateReport  kind=6 | tick u32 | digest [32] | state bytes (none unless asked)       client → server
//! Checks       kind=7 | n u8 (1..=MAX_CHECKS) | n x (tick u32, checksum u64)          client → server
//! ```
//! All three go on the reliable channel, beside the Hello and the Welcome. The digest
//! is SHA-256 of the engine's serialized state (RustCrypto's `sha2`), so an engine
//! that serializes the same state to the same bytes (as it must for its checksums and
//! snapshots to mean anything) gives the same digest on every client.

use sha2::{Digest, Sha256};

use crate::engine::Tick;
use crate::wire::{DecodeError, Reader, Writer};

/// Message kind byte of a [`StateAsk`].
pub const KIND_STATE_ASK: u8 = 5;
/// Message kind byte of a [`StateReport`].
pub const KIND_STATE_REPORT: u8 = 6;
/// Message kind byte of a checksum report ([`encode_checks`]).
pub const KIND_CHECKS: u8 = 7;
/// Most checksums in one report message.
pub const MAX_CHECKS: usize = 32;
/// Bytes of a [`StateDigest`].
pub const STATE_DIGEST_SIZE: usize = 32;
/// Encoded size of a StateAsk.
#[cfg(test)]
const STATE_ASK_SIZE: usize = 6;
/// Encoded size of a StateReport without its state.
pub const STATE_REPORT_HEAD_SIZE: usize = 5 + STATE_DIGEST_SIZE;

/// SHA-256 of a serialized game state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateDigest(pub [u8; STATE_DIGEST_SIZE]);

impl StateDigest {
    /// The digest of `state`.
    pub fn of(state: &[u8]) -> Self {
        StateDigest(Sha256::digest(state).into())
    }
}

/// Server to client: dump the authoritative state at the start of `tick` and report
/// its digest, with the state itself when `upload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateAsk {
    /// The tick whose starting state is asked for.
    pub tick: Tick,
    /// The state itself too, not only its digest.
    pub upload: bool,
}

/// Encodes `a` into `out` (cleared first).
pub fn encode_state_ask(out: &mut Vec<u8>, a: &StateAsk) {
    out.clear();
    let mut w = Writer::new(out);
    w.u8(KIND_STATE_ASK);
    w.u32(a.tick);
    w.u8(a.upload as u8);
}

/// Decodes a StateAsk, refusing a wrong kind, a short message or trailing bytes.
pub fn decode_state_ask(data: &[u8]) -> Result<StateAsk, DecodeError> {
    let mut r = Reader::new(data);
    if r.u8()? != KIND_STATE_ASK {
        return Err(DecodeError::UnknownKind(data[0]));
    }
    let tick = r.u32()?;
    let upload = match r.u8()? {
        0 => false,
        1 => true,
        _ => return Err(DecodeError::BadLength),
    };
    if !r.is_empty() {
        return Err(DecodeError::Trailing);
    }
    Ok(StateAsk { tick, upload })
}

/// Client to server: the digest of our authoritative state at the start of `tick`, and
/// the state when it was asked for (else empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateReport<'a> {
    /// The tick whose starting state it is.
    pub tick: Tick,
    /// The state's digest.
    pub digest: StateDigest,
    /// The state, when it was asked for (else empty).
    pub state: &'a [u8],
}

/// Encodes `r` into `out` (cleared first).
pub fn encode_state_report(out: &mut Vec<u8>, r: &StateReport<'_>) {
    out.clear();
    out.reserve(STATE_REPORT_HEAD_SIZE + r.state.len());
    let mut w = Writer::new(out);
    w.u8(KIND_STATE_REPORT);
    w.u32(r.tick);
    w.bytes(&r.digest.0);
    w.bytes(r.state);
}

/// Decodes a StateReport; its state is the rest of the message, borrowed.
pub fn decode_state_report(data: &[u8]) -> Result<StateReport<'_>, DecodeError> {
    let mut r = Reader::new(data);
    if r.u8()? != KIND_STATE_REPORT {
        return Err(DecodeError::UnknownKind(data[0]));
    }
    let tick = r.u32()?;
    let digest = StateDigest(r.bytes(STATE_DIGEST_SIZE)?.try_into().expect("32 bytes"));
    let state = r.bytes(r.remaining())?;
    Ok(StateReport { tick, digest, state })
}

/// Encodes the checksum report of `checks` (1..=[`MAX_CHECKS`] of them) into `out`.
pub fn encode_checks(out: &mut Vec<u8>, checks: &[(Tick, u64)]) {
    debug_assert!((1..=MAX_CHECKS).contains(&checks.len()));
    out.clear();
    let mut w = Writer::new(out);
    w.u8(KIND_CHECKS);
    w.u8(checks.len() as u8);
    for &(t, c) in checks {
        w.u32(t);
        w.u64(c);
    }
}

/// Decodes a checksum report into `out` (cleared first): 1..=[`MAX_CHECKS`] entries.
pub fn decode_checks(data: &[u8], out: &mut Vec<(Tick, u64)>) -> Result<(), DecodeError> {
    out.clear();
    let mut r = Reader::new(data);
    if r.u8()? != KIND_CHECKS {
        return Err(DecodeError::UnknownKind(data[0]));
    }
    let n = r.u8()? as usize;
    if n == 0 || n > MAX_CHECKS || r.remaining() != n * 12 {
        return Err(DecodeError::BadLength);
    }
    for _ in 0..n {
        out.push((r.u32()?, r.u64()?));
    }
    Ok(())
}

/// The kind byte of a reliable relay message (`None` for an empty one).
pub(crate) fn kind_of(data: &[u8]) -> Option<u8> {
    data.first().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips_and_truncations_fail() {
        let mut b = Vec::new();
        let a = StateAsk { tick: 77, upload: true };
        encode_state_ask(&mut b, &a);
        assert_eq!(b.len(), STATE_ASK_SIZE);
        assert_eq!(decode_state_ask(&b), Ok(a));
        for n in 0..b.len() {
            assert!(decode_state_ask(&b[..n]).is_err());
        }
        b[5] = 2;
        assert!(decode_state_ask(&b).is_err(), "upload is 0 or 1");

        let r = StateReport { tick: 9, digest: StateDigest::of(b"state"), state: b"state" };
        encode_state_report(&mut b, &r);
        assert_eq!(b.len(), STATE_REPORT_HEAD_SIZE + 5);
        assert_eq!(decode_state_report(&b), Ok(r));
        for n in 0..STATE_REPORT_HEAD_SIZE {
            assert!(decode_state_report(&b[..n]).is_err());
        }

        let checks = [(30, 1), (60, u64::MAX)];
        encode_checks(&mut b, &checks);
        let mut got = Vec::new();
        decode_checks(&b, &mut got).unwrap();
        assert_eq!(got, checks);
        for n in 0..b.len() {
            assert!(decode_checks(&b[..n], &mut got).is_err());
        }
        b.push(0);
        assert!(decode_checks(&b, &mut got).is_err(), "trailing bytes");
        assert!(decode_checks(&[KIND_CHECKS, 0], &mut got).is_err(), "no entry");
        let mut many = vec![KIND_CHECKS, MAX_CHECKS as u8 + 1];
        many.extend(std::iter::repeat_n(0, (MAX_CHECKS + 1) * 12));
        assert!(decode_checks(&many, &mut got).is_err(), "too many entries");
        assert!(decode_state_ask(&[KIND_CHECKS; 6]).is_err(), "kinds are not interchangeable");
    }

    #[test]
    fn the_digest_is_sha256_of_the_state() {
        // FIPS 180-2's "abc".
        let d = StateDigest::of(b"abc");
        assert_eq!(d.0[..4], [0xba, 0x78, 0x16, 0xbf]);
        assert_eq!(d.0[28..], [0xf2, 0x00, 0x15, 0xad]);
        assert_ne!(StateDigest::of(b"abd"), d);
    }
}
