//! The rollback messages on the wire, with strict, allocation-free decoding.
//!
//! Every message is one unreliable datagram payload:
//! ```text
//! u8   kind (bits 0-1) | has disconnects (bit 2) | has reports (bit 3)
//!      | loading (bit 4: the sender's engine announced a stall, see
//!      `P2pSession::set_loading`) | version << 5
//! u32  first tick of the inputs carried
//! u8   ticks carried (n)
//! u8   players carried per tick (k): the sender's local players in player order,
//!      or every player for spectator streams
//! var  sender's tick (the next tick it will simulate) - first
//! var  sender's tick - ack, where ack is the next tick of the *receiver's* inputs
//!      the sender is waiting for
//! var  ack - sender's confirmed tick (every input before it is confirmed there)
//! i16  sender's frame advantage over the receiver, in 1/256 ticks (+ = sender ahead)
//! var  length of the input block, then the block: n*k inputs, each XORed with the
//!      same player's input of the previous tick carried (the first with zeros), then
//!      run-length coded (control byte c: c < 0x80 = c+1 literal bytes follow,
//!      c >= 0x80 = (c & 0x7f)+1 zero bytes)
//! if has disconnects: var count, each u16 player + u32 tick from which it is disconnected
//! if has reports: var count, each var (confirmed - tick) + u64 checksum of that tick;
//!     then u8 d (0, or the number of players) and d 16-byte input digests of the
//!     first (newest) report's tick: digest p is the running SHA-256 chain of player p's
//!     confirmed inputs of every tick before that tick, as the sender received them
//!     (or sent them, for its own players); d = 0 with no reports is refused
//! ```
//! `var` is a zigzag LEB128 signed integer of at most 5 bytes (counts and lengths:
//! plain LEB128): the ticks a message mentions are close together, so each takes a
//! byte where a `u32` took four. Fixed integers are little-endian. The sender's
//! unacked inputs are repeated in consecutive messages, so a lost datagram costs
//! nothing but the redundancy; with inputs that rarely change, the XOR makes repeats
//! compress to a couple of bytes per tick.
//!
//! The digests let two peers whose checksums differ see whose inputs they received
//! differently (a peer that sends each peer other inputs is named, and the
//! peers it lied to do not blame each other). They go with the newest report only, 4
//! bytes a player, so that a message stays within a datagram at the player counts
//! [`crate::rollback::p2p::p2p_inputs_fit`] allows; being running digests, a later
//! check tick's digests still show an earlier difference. The layout changed without
//! a new `MESSAGE_VERSION`: the transport's protocol version 7 already keeps peers of
//! the older format from connecting. The loading bit took the version's lowest bit
//! (version 3 in bits 5-7): a version-2 message reads as version 1 here, and this one
//! as version 6 or 7 to a version-2 reader, so each side refuses the other's.

use crate::engine::Tick;
use crate::rollback::desync::InputDigest;
use crate::wire::{DecodeError, Reader};

/// Format version, carried in the high nibble of the first byte.
pub const MESSAGE_VERSION: u8 = 3;
/// Peer to peer: inputs of the sender's local players.
pub const KIND_INPUT: u8 = 1;
/// Host to spectator: confirmed inputs of every player.
pub const KIND_SPECTATE: u8 = 2;
/// Spectator to host: only the ack field is meaningful.
pub const KIND_SPECTATOR_ACK: u8 = 3;
const HAS_DISCONNECTS: u8 = 1 << 2;
const HAS_REPORTS: u8 = 1 << 3;
const LOADING: u8 = 1 << 4;
const VERSION_SHIFT: u8 = 5;
/// Most bytes before the input block (every varint at its longest).
pub(crate) const MAX_HEADER_SIZE: usize = 1 + 4 + 1 + 1 + 3 * MAX_VARINT + 2 + MAX_VARINT;
/// Fewest bytes of a message.
const MIN_SIZE: usize = 1 + 4 + 1 + 1 + 3 + 2 + 1;
const MAX_VARINT: usize = 5;
const DISCONNECT_ENTRY: usize = 6;
const MAX_REPORT_ENTRY: usize = MAX_VARINT + 8;
/// Bytes of one input digest.
const DIGEST: usize = 16;

/// Why a message was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageError {
    /// Shorter than its fields say.
    Truncated,
    /// Unknown kind or version.
    BadKind,
    /// The input block does not decode to exactly n*k inputs.
    BadInputs,
    /// A varint that is too long, or a tick outside the u32 range.
    BadField,
    /// Bytes left over after the last field.
    TrailingBytes,
}

/// The fixed fields of a message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Header {
    /// One of the `KIND_*` constants.
    pub kind: u8,
    /// The sender's next tick to simulate.
    pub tick: Tick,
    /// The next tick of the receiver's inputs the sender waits for.
    pub ack: Tick,
    /// Every input before this tick is confirmed at the sender.
    pub confirmed: Tick,
    /// The sender's frame advantage over the receiver, in ticks.
    pub advantage: f32,
    /// First tick of the inputs carried.
    pub first: Tick,
    /// Ticks carried.
    pub count: u8,
    /// Players per tick.
    pub players: u8,
    /// The sender's engine announced a stall (a loading screen): its peers give it
    /// their loading grace before a slow confirmed tick counts against it.
    pub loading: bool,
}

/// A streaming run-length coder for the input block.
struct Rle<'a> {
    out: &'a mut Vec<u8>,
    /// Index of the open run's control byte.
    ctrl: Option<usize>,
    zeros: bool,
    len: usize,
}

impl Rle<'_> {
    fn push(&mut self, b: u8) {
        let zero = b == 0;
        match self.ctrl {
            Some(_) if self.zeros == zero && self.len < 128 => {}
            _ => {
                self.close();
                self.ctrl = Some(self.out.len());
                self.out.push(0);
                self.zeros = zero;
                self.len = 0;
            }
        }
        if !zero {
            self.out.push(b);
        }
        self.len += 1;
    }

    fn close(&mut self) {
        if let Some(i) = self.ctrl.take() {
            self.out[i] = if self.zeros { 0x80 | (self.len - 1) as u8 } else { (self.len - 1) as u8 };
        }
    }
}

fn put_uvar(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `a - b` as a zigzag varint.
fn put_delta(out: &mut Vec<u8>, a: Tick, b: Tick) {
    let d = a as i64 - b as i64;
    put_uvar(out, ((d << 1) ^ (d >> 63)) as u64);
}

/// Worst-case encoded size of a message with these counts (`digests`: input digests
/// carried with the reports, one per player of the match).
pub fn max_encoded_len(
    count: usize,
    players: usize,
    input_size: usize,
    disconnects: usize,
    reports: usize,
    digests: usize,
) -> usize {
    let raw = count * players * input_size;
    let digest_list = if reports > 0 { 1 + digests * DIGEST } else { 0 };
    MAX_HEADER_SIZE
        + raw
        + raw.div_ceil(128)
        + 2 * MAX_VARINT
        + disconnects * DISCONNECT_ENTRY
        + reports * MAX_REPORT_ENTRY
        + digest_list
}

/// Appends a message to `out` (cleared first). `input(i, p)` gives the input of the
/// `i`-th tick carried for the `p`-th player carried. `digests` (at most 255) belong
/// to the first report and go only with reports.
pub fn encode<'a>(
    out: &mut Vec<u8>,
    h: &Header,
    input_size: usize,
    input: impl Fn(usize, usize) -> &'a [u8],
    disconnects: impl Iterator<Item = (u16, Tick)> + Clone,
    reports: impl Iterator<Item = (Tick, u64)> + Clone,
    digests: &[InputDigest],
) {
    debug_assert!(digests.len() <= u8::MAX as usize, "one digest per player, players fit a byte");
    out.clear();
    let nd = disconnects.clone().count();
    let nr = reports.clone().count();
    let lists = if nd > 0 { HAS_DISCONNECTS } else { 0 } | if nr > 0 { HAS_REPORTS } else { 0 };
    out.push(h.kind | lists | if h.loading { LOADING } else { 0 } | (MESSAGE_VERSION << VERSION_SHIFT));
    out.extend_from_slice(&h.first.to_le_bytes());
    out.push(h.count);
    out.push(h.players);
    put_delta(out, h.tick, h.first);
    put_delta(out, h.tick, h.ack);
    put_delta(out, h.ack, h.confirmed);
    let adv = (h.advantage * 256.0).round().clamp(i16::MIN as f32, i16::MAX as f32) as i16;
    out.extend_from_slice(&adv.to_le_bytes());
    // The block goes after a one-byte length slot; the rare block of 128 bytes or more
    // moves right to make room for a longer length.
    let len_at = out.len();
    out.push(0);
    let start = out.len();
    {
        let mut rle = Rle { out, ctrl: None, zeros: false, len: 0 };
        for i in 0..h.count as usize {
            for p in 0..h.players as usize {
                let cur = &input(i, p)[..input_size];
                for (j, &b) in cur.iter().enumerate() {
                    let prev = if i == 0 { 0 } else { input(i - 1, p)[j] };
                    rle.push(b ^ prev);
                }
            }
        }
        rle.close();
    }
    let (block, end) = (out.len() - start, out.len());
    let extra = (usize::BITS - block.leading_zeros()).max(1).div_ceil(7) as usize - 1;
    if extra > 0 {
        out.resize(end + extra, 0);
        out.copy_within(start..end, start + extra);
    }
    let mut v = block;
    for b in &mut out[len_at..=len_at + extra] {
        *b = (v as u8 & 0x7f) | if v >= 0x80 { 0x80 } else { 0 };
        v >>= 7;
    }
    if nd > 0 {
        put_uvar(out, nd as u64);
        for (p, t) in disconnects {
            out.extend_from_slice(&p.to_le_bytes());
            out.extend_from_slice(&t.to_le_bytes());
        }
    }
    if nr > 0 {
        put_uvar(out, nr as u64);
        for (t, c) in reports {
            put_delta(out, h.confirmed, t);
            out.extend_from_slice(&c.to_le_bytes());
        }
        out.push(digests.len() as u8);
        for d in digests {
            out.extend_from_slice(&d.to_le_bytes());
        }
    }
}

/// A decoded message: inputs are in the caller's scratch buffer, the lists are views
/// into the datagram (already validated).
#[derive(Debug, Clone, Copy)]
pub struct Decoded<'a> {
    /// The fixed fields.
    pub header: Header,
    /// `count * players * input_size` bytes, tick-major, then player.
    pub inputs: &'a [u8],
    disconnects: &'a [u8],
    reports: &'a [u8],
    digests: &'a [u8],
}

impl<'a> Decoded<'a> {
    /// (player, disconnect tick) entries.
    pub fn disconnects(&self) -> impl Iterator<Item = (u16, Tick)> + 'a {
        self.disconnects.chunks_exact(DISCONNECT_ENTRY).map(|c| (u16_at(c, 0), u32_at(c, 2)))
    }

    /// (confirmed tick, checksum) entries.
    pub fn reports(&self) -> impl Iterator<Item = (Tick, u64)> + 'a {
        let confirmed = self.header.confirmed;
        let mut r = Reader::new(self.reports);
        std::iter::from_fn(move || {
            if r.is_empty() {
                return None;
            }
            let tick = delta_from(&mut r, confirmed, true).ok()?;
            Some((tick, r.u64().ok()?))
        })
    }

    /// The input digests of the first report's tick, one per player (none if the
    /// sender sent none).
    pub fn digests(&self) -> impl ExactSizeIterator<Item = InputDigest> + Clone + 'a {
        self.digests.chunks_exact(DIGEST).map(|c| InputDigest::from_le_bytes(c.try_into().expect("16 bytes")))
    }
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// A field ran past the end of the datagram (the only error the reads used here
/// give).
impl From<DecodeError> for MessageError {
    fn from(_: DecodeError) -> Self {
        MessageError::Truncated
    }
}

fn uvar(r: &mut Reader<'_>) -> Result<u64, MessageError> {
    let mut v = 0u64;
    for i in 0..MAX_VARINT {
        let b = r.u8()?;
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(MessageError::BadField)
}

/// The tick `base - d` (`minus`) or `base + d` for the zigzag varint `d` read next.
fn delta_from(r: &mut Reader<'_>, base: Tick, minus: bool) -> Result<Tick, MessageError> {
    let z = uvar(r)?;
    let d = (z >> 1) as i64 ^ -((z & 1) as i64);
    let t = if minus { base as i64 - d } else { base as i64 + d };
    Tick::try_from(t).map_err(|_| MessageError::BadField)
}

/// Decodes `data`; the inputs land in `scratch` (reused, grows at most once to the
/// largest message seen).
pub fn decode<'a>(data: &'a [u8], input_size: usize, scratch: &'a mut Vec<u8>) -> Result<Decoded<'a>, MessageError> {
    if data.len() < MIN_SIZE {
        return Err(MessageError::Truncated);
    }
    let mut r = Reader::new(data);
    let lead = r.u8()?;
    let kind = lead & 0x03;
    if lead >> VERSION_SHIFT != MESSAGE_VERSION || kind == 0 {
        return Err(MessageError::BadKind);
    }
    let first = r.u32()?;
    let count = r.u8()?;
    let players = r.u8()?;
    let tick = delta_from(&mut r, first, false)?;
    let ack = delta_from(&mut r, tick, true)?;
    let confirmed = delta_from(&mut r, ack, true)?;
    let adv = r.bytes(2)?;
    let header = Header {
        kind,
        tick,
        ack,
        confirmed,
        advantage: i16::from_le_bytes([adv[0], adv[1]]) as f32 / 256.0,
        first,
        count,
        players,
        loading: lead & LOADING != 0,
    };
    let block_len = usize::try_from(uvar(&mut r)?).map_err(|_| MessageError::BadField)?;
    let block = r.bytes(block_len)?;
    let want = count as usize * players as usize * input_size;
    scratch.clear();
    let mut i = 0;
    while i < block.len() {
        let c = block[i];
        i += 1;
        let n = (c & 0x7f) as usize + 1;
        if scratch.len() + n > want {
            return Err(MessageError::BadInputs);
        }
        if c & 0x80 != 0 {
            scratch.resize(scratch.len() + n, 0);
        } else {
            let lit = block.get(i..i + n).ok_or(MessageError::BadInputs)?;
            scratch.extend_from_slice(lit);
            i += n;
        }
    }
    if scratch.len() != want {
        return Err(MessageError::BadInputs);
    }
    let stride = players as usize * input_size;
    for j in stride..want {
        scratch[j] ^= scratch[j - stride];
    }
    let mut disconnects: &[u8] = &[];
    if lead & HAS_DISCONNECTS != 0 {
        let nd = usize::try_from(uvar(&mut r)?).map_err(|_| MessageError::BadField)?;
        disconnects = r.bytes(nd.checked_mul(DISCONNECT_ENTRY).ok_or(MessageError::BadField)?)?;
    }
    let mut reports: &[u8] = &[];
    let mut digests: &[u8] = &[];
    if lead & HAS_REPORTS != 0 {
        let nr = uvar(&mut r)?;
        let start = data.len() - r.remaining();
        for _ in 0..nr {
            delta_from(&mut r, confirmed, true)?;
            r.bytes(8)?;
        }
        reports = &data[start..data.len() - r.remaining()];
        let nd = r.u8()? as usize;
        // Digests belong to the first report: without one they describe nothing.
        if nr == 0 && nd > 0 {
            return Err(MessageError::BadField);
        }
        digests = r.bytes(nd * DIGEST)?;
    }
    if !r.is_empty() {
        return Err(MessageError::TrailingBytes);
    }
    Ok(Decoded { header, inputs: scratch.as_slice(), disconnects, reports, digests })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(count: u8, players: u8) -> Header {
        Header {
            kind: KIND_INPUT,
            tick: 77,
            ack: 12,
            confirmed: 70,
            advantage: -1.5,
            first: 70,
            count,
            players,
            loading: false,
        }
    }

    #[test]
    fn round_trip_and_compression() {
        // Player p's input at tick i is [i / 5, p + 1]: it changes every 5 ticks.
        let inputs: Vec<[u8; 2]> = (0..20u8).map(|x| [(x / 2) / 5, x % 2 + 1]).collect();
        let mut out = Vec::new();
        let h = Header { loading: true, ..header(10, 2) };
        encode(
            &mut out,
            &h,
            2,
            |i, p| &inputs[i * 2 + p],
            [(3u16, 90u32)].into_iter(),
            [(60u32, 0xdead_beefu64)].into_iter(),
            &[7, u128::MAX],
        );
        // 64 bytes of fixed fields and lists here (two 16-byte digests); the 40 input
        // bytes take under 16.
        assert!(out.len() < 64 + 16, "repeats compress: {} bytes", out.len());
        let mut scratch = Vec::new();
        let d = decode(&out, 2, &mut scratch).unwrap();
        assert_eq!(d.header, h);
        assert_eq!(d.inputs, inputs.concat().as_slice());
        assert_eq!(d.disconnects().collect::<Vec<_>>(), vec![(3, 90)]);
        assert_eq!(d.reports().collect::<Vec<_>>(), vec![(60, 0xdead_beef)]);
        assert_eq!(d.digests().collect::<Vec<_>>(), vec![7, u128::MAX]);
        assert!(d.header.loading, "the loading bit round-trips");
        // The loading bit is its own: it does not make the other lists appear.
        encode(&mut out, &h, 2, |i, p| &inputs[i * 2 + p], std::iter::empty(), std::iter::empty(), &[]);
        let d = decode(&out, 2, &mut scratch).unwrap();
        assert!(d.header.loading && d.disconnects().count() == 0 && d.reports().count() == 0);
    }

    #[test]
    fn other_versions_are_refused_both_ways() {
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        encode(&mut out, &header(0, 1), 2, |_, _| &[], std::iter::empty(), std::iter::empty(), &[]);
        assert!(decode(&out, 2, &mut scratch).is_ok());
        // Version 2 had the version in bits 4-7 and no loading bit.
        out[0] = KIND_INPUT | (2 << 4);
        assert_eq!(decode(&out, 2, &mut scratch).unwrap_err(), MessageError::BadKind);
        // What a version-2 reader sees of ours: the high nibble is 6 or 7, never 2.
        for loading in [false, true] {
            encode(
                &mut out,
                &Header { loading, ..header(0, 1) },
                2,
                |_, _| &[],
                std::iter::empty(),
                std::iter::empty(),
                &[],
            );
            assert!(out[0] >> 4 == 6 || out[0] >> 4 == 7, "{:#x}", out[0]);
        }
    }

    #[test]
    fn ticks_are_deltas_and_round_trip_at_the_extremes() {
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        // A typical message: ticks close together, no lists, 3 unchanged inputs.
        let h = Header {
            kind: KIND_INPUT,
            tick: 100_000,
            ack: 99_990,
            confirmed: 99_989,
            advantage: 0.25,
            first: 99_998,
            count: 3,
            players: 1,
            loading: false,
        };
        encode(&mut out, &h, 2, |_, _| &[7, 0], std::iter::empty(), std::iter::empty(), &[]);
        assert_eq!(out.len(), 13 + 3, "13 bytes of header, 3 of inputs: {out:?}");
        assert_eq!(decode(&out, 2, &mut scratch).unwrap().header, h);
        for (tick, ack, confirmed, first) in [(u32::MAX, 0, u32::MAX, 0), (0, u32::MAX, 0, u32::MAX), (5, 5, 5, 5)] {
            let h = Header {
                kind: KIND_SPECTATE,
                tick,
                ack,
                confirmed,
                advantage: -128.0,
                first,
                count: 0,
                players: 4,
                loading: false,
            };
            let reports = [(confirmed, 1u64), (first, u64::MAX)];
            encode(&mut out, &h, 2, |_, _| &[], std::iter::empty(), reports.into_iter(), &[]);
            let d = decode(&out, 2, &mut scratch).unwrap();
            assert_eq!(d.header, h);
            assert_eq!(d.reports().collect::<Vec<_>>(), vec![(confirmed, 1), (first, u64::MAX)]);
            assert_eq!(d.digests().len(), 0);
        }
        // A delta that leaves the u32 range is refused, not wrapped.
        let h = Header {
            kind: KIND_INPUT,
            tick: 3,
            ack: 3,
            confirmed: 3,
            advantage: 0.0,
            first: 3,
            count: 0,
            players: 1,
            loading: false,
        };
        encode(&mut out, &h, 2, |_, _| &[], std::iter::empty(), std::iter::empty(), &[]);
        out[7] = 7; // tick - first = -4: tick -1
        assert_eq!(decode(&out, 2, &mut scratch).unwrap_err(), MessageError::BadField);
    }

    #[test]
    fn worst_case_fits_the_bound() {
        let inputs: Vec<u8> = (0..64 * 3 * 5).map(|i| (i * 37 % 255 + 1) as u8).collect();
        let mut out = Vec::new();
        encode(
            &mut out,
            &header(64, 3),
            5,
            |i, p| &inputs[(i * 3 + p) * 5..][..5],
            std::iter::empty(),
            std::iter::empty(),
            &[],
        );
        assert!(out.len() <= max_encoded_len(64, 3, 5, 0, 0, 0));
        let mut scratch = Vec::new();
        assert_eq!(decode(&out, 5, &mut scratch).unwrap().inputs, inputs.as_slice());
        // Two reports with a digest for each of 8 players, every field at its longest.
        let h = Header { confirmed: u32::MAX, ..header(1, 3) };
        let reports = [(0u32, u64::MAX), (1, 0)];
        encode(&mut out, &h, 5, |_, p| &inputs[p * 5..][..5], std::iter::empty(), reports.into_iter(), &[!0; 8]);
        assert!(out.len() <= max_encoded_len(1, 3, 5, 0, 2, 8));
        assert_eq!(decode(&out, 5, &mut scratch).unwrap().digests().collect::<Vec<_>>(), [!0; 8]);
    }

    #[test]
    fn strict_decoding_refuses_every_mutilation() {
        let mut out = Vec::new();
        let reports = [(69u32, 3u64)];
        encode(&mut out, &header(3, 1), 2, |_, _| &[1, 2], [(1u16, 5u32)].into_iter(), reports.into_iter(), &[4, 5]);
        let mut scratch = Vec::new();
        for cut in 0..out.len() {
            assert!(decode(&out[..cut], 2, &mut scratch).is_err(), "truncated at {cut}");
        }
        let mut long = out.clone();
        long.push(0);
        assert_eq!(decode(&long, 2, &mut scratch).unwrap_err(), MessageError::TrailingBytes);
        let mut bad = out.clone();
        bad[0] = 0x15;
        assert_eq!(decode(&bad, 2, &mut scratch).unwrap_err(), MessageError::BadKind);
        assert_eq!(decode(&out, 3, &mut scratch).unwrap_err(), MessageError::BadInputs);
        // Digests with no report to belong to: the report count is the byte before
        // the report (a delta of 1, then 8 checksum bytes, the digest count, 32 bytes).
        let mut orphan = out.clone();
        let count_at = out.len() - 32 - 1 - 8 - 1 - 1;
        assert_eq!(orphan[count_at], 1);
        orphan[count_at] = 0;
        orphan.drain(count_at + 1..count_at + 10);
        assert_eq!(decode(&orphan, 2, &mut scratch).unwrap_err(), MessageError::BadField);
        // Fuzz: random bytes never panic.
        let mut r = crate::rng::Rng::new(5);
        for _ in 0..20_000 {
            let n = r.below(60) as usize;
            let mut b: Vec<u8> = (0..n).map(|_| r.next_u32() as u8).collect();
            if !b.is_empty() {
                b[0] = 0x11;
            }
            let _ = decode(&b, 2, &mut scratch);
        }
    }
}
