//! tickwire's fuzz targets (never part of a shipped build).
//!
//! One plain function per target, `fn(&[u8])`, that must return for every input
//! without panicking, hanging or allocating without bound, and that checks the
//! target's oracles with `assert!`. They drive `tickwire-proto` through its public API,
//! and through `tickwire_proto::fuzzing` (its `fuzzing` feature, which this crate turns
//! on) for the few internals that are not public: the tick stream, a relay step's
//! decoder and fragment head, a frame's writer. Two drivers call them: the cargo-fuzz
//! crate in `fuzz/` (one `fuzz_targets/<name>.rs` per target, `scripts/fuzz.sh` runs
//! them on nightly) and the stable test `tests/fuzz_corpus.rs`, which replays every
//! committed input of `fuzz/corpus/<name>/` under a time budget.
//!
//! | target | what it drives | oracles |
//! |---|---|---|
//! | [`wire_packet`] | `decode_packet` and the frame reader | a decoded packet re-encodes to the same bytes |
//! | [`p2p_message`] | the P2P message decoder | re-encoding decodes to the same values, within `max_encoded_len` |
//! | [`relay_messages`] | Hello, Welcome, ClientInputs, ServerUpdate | decoded messages re-encode to the same bytes |
//! | [`desync_dump`] | `DesyncDump::decode` | re-encodes to the same bytes |
//! | [`stun_response`] | `decode_binding_response` (and the request's encoder) | what decodes is refused for any other transaction id; our request is no response |
//! | [`replay`] | `Replay::decode` and a `ReplaySession` | re-records to the same bytes, plays every tick once |
//! | [`endpoint`] | one insecure-plaintext `Endpoint`, datagrams forged from a few addresses | no reply to an unproven address is larger than what caused it |
//! | [`endpoint_pair`] | two encrypted endpoints over a lossy, corrupting in-memory link | reliable: exactly once, in order; unreliable: at most once; a corrupted datagram is never delivered |
//! | [`handshake`] | an encrypted server (match secrets or connect tokens), a real client over a hostile link, forged handshake packets | only the right credential connects; forged or flipped packets deliver, open and close nothing; no amplification; at most `max_incoming` connections |
//! | [`relay_server`], [`relay_client`], [`p2p_session`], [`spectator`] | a session fed messages, time and engine answers | the engine contract (slots, ticks, input sizes), dumps and replays it writes decode |
//! | [`relay_hosted`] | a relay-only server fed its clients' state reports (answers to its asks, honest, forged, unasked) and checksum reports beside Hellos and inputs | it asks nothing of an engine; its asks and Welcomes decode; a Welcome's state is empty (a new match) or an upload whose digest its donor declared |
//! | [`match_server`] | a match server (3 matches at most) fed connections claiming any match and shape, or none, messages from any connection, drains and ends | never more matches than allowed; a refused connection is closed at once; every match has a shape some token claimed |
//! | [`rendezvous`] | a rendezvous with two members and a peer's traversal, fed datagrams from the rendezvous's, the peers' and strangers' addresses as time moves | the rendezvous never sends an address more than it sent (no amplification) nor relays a stranger's datagram; the traversal delivers only slices of what came, as from another slot's peer address, sends nothing larger than a Hello nor to a peer address, and only Hellos before an introduction |
//! | [`tick_stream`] | the tick stream's sender ledger and receive window over a lossy link, with any plan, time, tick, ack and bitmap | nothing acknowledged or held is sent again, nothing past the window or the sender's ticks; the ack never passes the newest tick; a run exactly when something is owed; the receiver's bitmap says what it holds |

#![forbid(unsafe_code)]
#![warn(unreachable_pub, missing_docs)]

mod decoders;
mod endpoint;
mod engine;
mod fake;
mod handshake;
mod nat;
mod p2p;
mod hosted;
mod relay;
mod seeds;
mod stream;

pub use decoders::{desync_dump, p2p_message, relay_messages, replay, stun_response, wire_packet};
pub use endpoint::{endpoint, endpoint_pair};
pub use handshake::handshake;
pub use hosted::{match_server, relay_hosted};
pub use nat::rendezvous;
pub use p2p::{p2p_session, spectator};
pub use relay::{relay_client, relay_server};
pub use seeds::corpus;
pub use stream::tick_stream;

/// A fuzz target.
pub type Target = fn(&[u8]);

/// Every target by name, for drivers that take the name from the command line or a
/// directory (`fuzz/corpus/<name>/`).
pub const TARGETS: &[(&str, Target)] = &[
    ("wire_packet", wire_packet),
    ("p2p_message", p2p_message),
    ("relay_messages", relay_messages),
    ("desync_dump", desync_dump),
    ("replay", replay),
    ("stun_response", stun_response),
    ("endpoint", endpoint),
    ("endpoint_pair", endpoint_pair),
    ("handshake", handshake),
    ("relay_server", relay_server),
    ("relay_client", relay_client),
    ("relay_hosted", relay_hosted),
    ("match_server", match_server),
    ("p2p_session", p2p_session),
    ("spectator", spectator),
    ("tick_stream", tick_stream),
    ("rendezvous", rendezvous),
];

/// The fuzz input read as a stream of choices. Past its end every read gives zeros,
/// so a harness never checks lengths; its loops stop when [`Input::is_empty`].
pub(crate) struct Input<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Input<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Input { data, at: 0 }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.at >= self.data.len()
    }

    /// Up to `n` bytes (fewer at the end).
    pub(crate) fn bytes(&mut self, n: usize) -> &'a [u8] {
        let end = self.at.saturating_add(n).min(self.data.len());
        let s = &self.data[self.at.min(end)..end];
        self.at = end;
        s
    }

    pub(crate) fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        let b = self.bytes(N);
        a[..b.len()].copy_from_slice(b);
        a
    }

    pub(crate) fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }

    pub(crate) fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }

    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    pub(crate) fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    pub(crate) fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    /// A number in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.u8() as usize % n
    }

    /// A length-prefixed byte string (one length byte, so at most 255 bytes).
    pub(crate) fn blob(&mut self) -> &'a [u8] {
        let n = self.u8() as usize;
        self.bytes(n)
    }

    /// A tick near `base` (within ±128) or, one time in eight, any tick at all: the
    /// sessions only look deep at numbers that are plausible.
    pub(crate) fn tick_near(&mut self, base: u32) -> u32 {
        let sel = self.u8();
        if sel & 7 == 0 {
            return self.u32();
        }
        let d = self.u8() as i64 - 128;
        (base as i64 + d).clamp(0, u32::MAX as i64) as u32
    }
}
