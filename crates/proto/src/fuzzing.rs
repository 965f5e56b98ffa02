//! Internals for the fuzz targets (the `tickwire-fuzzing` crate), with the `fuzzing`
//! cargo feature only. Not API: nothing here is stable, and no shipped build turns the
//! feature on.
//!
//! The targets use the crate's public API (the root and [`crate::wire`]) for everything
//! else; this module opens only what they drive or check that is not public: the tick
//! stream's sender ([`SendLedger`]) and receiver ([`ReceiveWindow`]), a relay step's
//! decoder and a fragment entry's head, a frame's writer, the key a credential proves,
//! and a few constants of the wire formats.
//!
//! The tick stream's items are declared `pub` in their private module (`stream`, where
//! `unreachable_pub` is allowed without this feature) and re-exported here only; the
//! rest are small functions and constants over crate-private items, which stay so.

use crate::relay::messages::{self, PlayerStep, StepParts};
use crate::relay::step_codec::{self, StepForm};
use crate::transport::{KEY_SIZE, Presented};
use crate::wire::{self, DecodeError, Frame, Writer};

pub use crate::stream::{ROOM, Reason, ReceiveWindow, SACK_BYTES, SendLedger, SendPlan};

/// First byte of the snapshot message a P2P host sends a spectator that joins
/// mid-match (reliable channel).
pub const KIND_SNAPSHOT_BYTE: u8 = crate::rollback::p2p::KIND_SNAPSHOT_BYTE;

/// The largest fragment count of a reliable message's frames.
pub const MAX_FRAGMENTS: u16 = wire::frame_consts::MAX_FRAGMENTS;

/// Payload bytes of a fragment's frame (all but a message's last are exactly this).
pub const FRAGMENT_SIZE: usize = wire::frame_consts::FRAGMENT_SIZE;

/// Appends `f` encoded as a frame of a connected packet.
pub fn write_frame(out: &mut Vec<u8>, f: &Frame<'_>) {
    wire::write_frame(&mut Writer::new(out), f);
}

/// Decodes one step of a server update (an entry's body in the full form) into `out`,
/// whose old contents are reused.
pub fn decode_step(bytes: &[u8], out: &mut Vec<PlayerStep>) -> Result<(), DecodeError> {
    messages::decode_step_into(bytes, out, &mut StepParts::default())
}

/// Appends the head of a server update's entry holding piece `index` of `count` of a
/// step, `len` bytes long (the piece follows).
pub fn write_fragment_head(out: &mut Vec<u8>, offset: u16, form: StepForm, index: u8, count: u8, len: usize) {
    step_codec::write_fragment_head(out, offset, form, index, count, len);
}

/// The key a dialling endpoint proves it holds when it shows `p` (an open
/// connection's, anyone's, for [`Presented::Open`]).
pub fn presented_key(p: &Presented) -> &[u8; KEY_SIZE] {
    p.psk()
}
