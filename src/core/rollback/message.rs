//! The rollback messages on the wire, with strict, allocation-free decoding.
//!
//! Every message is one unreliable datagram payload:
//! ```text
//! u8   kind (low 4 bits) | format version << 4
//! u32  sender's tick (the next tick it will simulate)
//! u32  ack: the next tick of the *receiver's* inputs the sender is waiting for
//! u32  sender's confirmed tick: every input before it is confirmed there
//! i16  sender's frame advantage over the receiver, in 1/256 ticks (+ = sender ahead)
//! u32  first tick of the inputs carried
//! u8   ticks carried (n)
//! u8   players carried per tick (k): the sender's local players in player order,
//!      or every player for spectator streams
//! u16  length of the input block, then the block: n*k inputs, each XORed with the
//!      same player's input of the previous tick carried (the first with zeros), then
//!      run-length coded (control byte c: c < 0x80 = c+1 literal bytes follow,
//!      c >= 0x80 = (c & 0x7f)+1 zero bytes)
//! u8   disconnect entries, each u16 player + u32 tick from which it is disconnected
//! u8   checksum reports, each u32 confirmed tick + u64 checksum
//! ```
//! All integers little-endian. Inputs not yet acked are repeated in every message,
//! so a lost datagram costs nothing but the redundancy; with inputs that rarely
//! change, the XOR makes repeats compress to a couple of bytes per tick.

use super::Tick;

/// Format version, carried in the high nibble of the first byte.
pub const MESSAGE_VERSION: u8 = 1;
/// Peer to peer: inputs of the sender's local players.
pub const KIND_INPUT: u8 = 1;
/// Host to spectator: confirmed inputs of every player.
pub const KIND_SPECTATE: u8 = 2;
/// Spectator to host: only the ack field is meaningful.
pub const KIND_SPECTATOR_ACK: u8 = 3;
/// Bytes before the input block.
pub const HEADER_SIZE: usize = 1 + 4 + 4 + 4 + 2 + 4 + 1 + 1 + 2;
const DISCONNECT_ENTRY: usize = 6;
const REPORT_ENTRY: usize = 12;

/// Why a message was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageError {
    /// Shorter than its fields say.
    Truncated,
    /// Unknown kind or version.
    BadKind,
    /// The input block does not decode to exactly n*k inputs.
    BadInputs,
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

/// Worst-case encoded size of a message with these counts.
pub fn max_encoded_len(count: usize, players: usize, input_size: usize, disconnects: usize, reports: usize) -> usize {
    let raw = count * players * input_size;
    HEADER_SIZE + raw + raw.div_ceil(128) + 2 + disconnects * DISCONNECT_ENTRY + reports * REPORT_ENTRY
}

/// Appends a message to `out` (cleared first). `input(i, p)` gives the input of the
/// `i`-th tick carried for the `p`-th player carried.
pub fn encode<'a>(
    out: &mut Vec<u8>,
    h: &Header,
    input_size: usize,
    input: impl Fn(usize, usize) -> &'a [u8],
    disconnects: impl Iterator<Item = (u16, Tick)> + Clone,
    reports: impl Iterator<Item = (Tick, u64)> + Clone,
) {
    out.clear();
    out.push(h.kind | (MESSAGE_VERSION << 4));
    out.extend_from_slice(&h.tick.to_le_bytes());
    out.extend_from_slice(&h.ack.to_le_bytes());
    out.extend_from_slice(&h.confirmed.to_le_bytes());
    let adv = (h.advantage * 256.0).round().clamp(i16::MIN as f32, i16::MAX as f32) as i16;
    out.extend_from_slice(&adv.to_le_bytes());
    out.extend_from_slice(&h.first.to_le_bytes());
    out.push(h.count);
    out.push(h.players);
    let len_at = out.len();
    out.extend_from_slice(&[0, 0]);
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
    let block = (out.len() - start) as u16;
    out[len_at..len_at + 2].copy_from_slice(&block.to_le_bytes());
    out.push(disconnects.clone().count().min(255) as u8);
    for (p, t) in disconnects.take(255) {
        out.extend_from_slice(&p.to_le_bytes());
        out.extend_from_slice(&t.to_le_bytes());
    }
    out.push(reports.clone().count().min(255) as u8);
    for (t, c) in reports.take(255) {
        out.extend_from_slice(&t.to_le_bytes());
        out.extend_from_slice(&c.to_le_bytes());
    }
}

/// A decoded message: inputs are in the caller's scratch buffer, the lists are views
/// into the datagram.
#[derive(Debug, Clone, Copy)]
pub struct Decoded<'a> {
    /// The fixed fields.
    pub header: Header,
    /// `count * players * input_size` bytes, tick-major, then player.
    pub inputs: &'a [u8],
    disconnects: &'a [u8],
    reports: &'a [u8],
}

impl<'a> Decoded<'a> {
    /// (player, disconnect tick) entries.
    pub fn disconnects(&self) -> impl Iterator<Item = (u16, Tick)> + 'a {
        self.disconnects.chunks_exact(DISCONNECT_ENTRY).map(|c| (u16_at(c, 0), u32_at(c, 2)))
    }

    /// (confirmed tick, checksum) entries.
    pub fn reports(&self) -> impl Iterator<Item = (Tick, u64)> + 'a {
        self.reports.chunks_exact(REPORT_ENTRY).map(|c| (u32_at(c, 0), u64::from_le_bytes(c[4..12].try_into().expect("8 bytes"))))
    }
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Decodes `data`; the inputs land in `scratch` (reused, grows at most once to the
/// largest message seen).
pub fn decode<'a>(data: &'a [u8], input_size: usize, scratch: &'a mut Vec<u8>) -> Result<Decoded<'a>, MessageError> {
    if data.len() < HEADER_SIZE {
        return Err(MessageError::Truncated);
    }
    let kind = data[0] & 0x0f;
    if data[0] >> 4 != MESSAGE_VERSION || !(KIND_INPUT..=KIND_SPECTATOR_ACK).contains(&kind) {
        return Err(MessageError::BadKind);
    }
    let header = Header {
        kind,
        tick: u32_at(data, 1),
        ack: u32_at(data, 5),
        confirmed: u32_at(data, 9),
        advantage: i16::from_le_bytes([data[13], data[14]]) as f32 / 256.0,
        first: u32_at(data, 15),
        count: data[19],
        players: data[20],
    };
    let block_len = u16_at(data, 21) as usize;
    let mut at = HEADER_SIZE;
    let block = data.get(at..at + block_len).ok_or(MessageError::Truncated)?;
    at += block_len;
    let want = header.count as usize * header.players as usize * input_size;
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
    let stride = header.players as usize * input_size;
    for j in stride..want {
        scratch[j] ^= scratch[j - stride];
    }
    let nd = *data.get(at).ok_or(MessageError::Truncated)? as usize;
    at += 1;
    let disconnects = data.get(at..at + nd * DISCONNECT_ENTRY).ok_or(MessageError::Truncated)?;
    at += nd * DISCONNECT_ENTRY;
    let nr = *data.get(at).ok_or(MessageError::Truncated)? as usize;
    at += 1;
    let reports = data.get(at..at + nr * REPORT_ENTRY).ok_or(MessageError::Truncated)?;
    at += nr * REPORT_ENTRY;
    if at != data.len() {
        return Err(MessageError::TrailingBytes);
    }
    Ok(Decoded { header, inputs: scratch.as_slice(), disconnects, reports })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(count: u8, players: u8) -> Header {
        Header { kind: KIND_INPUT, tick: 77, ack: 12, confirmed: 70, advantage: -1.5, first: 70, count, players }
    }

    #[test]
    fn round_trip_and_compression() {
        // Player p's input at tick i is [i / 5, p + 1]: it changes every 5 ticks.
        let inputs: Vec<[u8; 2]> = (0..20u8).map(|x| [(x / 2) / 5, x % 2 + 1]).collect();
        let mut out = Vec::new();
        let h = header(10, 2);
        encode(&mut out, &h, 2, |i, p| &inputs[i * 2 + p], [(3u16, 90u32)].into_iter(), [(60u32, 0xdead_beefu64)].into_iter());
        // 45 bytes of fixed fields and lists; the 40 input bytes take under 16.
        assert!(out.len() < HEADER_SIZE + 22 + 16, "repeats compress: {} bytes", out.len());
        let mut scratch = Vec::new();
        let d = decode(&out, 2, &mut scratch).unwrap();
        assert_eq!(d.header, h);
        assert_eq!(d.inputs, inputs.concat().as_slice());
        assert_eq!(d.disconnects().collect::<Vec<_>>(), vec![(3, 90)]);
        assert_eq!(d.reports().collect::<Vec<_>>(), vec![(60, 0xdead_beef)]);
    }

    #[test]
    fn worst_case_fits_the_bound() {
        let inputs: Vec<u8> = (0..64 * 3 * 5).map(|i| (i * 37 % 255 + 1) as u8).collect();
        let mut out = Vec::new();
        encode(&mut out, &header(64, 3), 5, |i, p| &inputs[(i * 3 + p) * 5..][..5], std::iter::empty(), std::iter::empty());
        assert!(out.len() <= max_encoded_len(64, 3, 5, 0, 0));
        let mut scratch = Vec::new();
        assert_eq!(decode(&out, 5, &mut scratch).unwrap().inputs, inputs.as_slice());
    }

    #[test]
    fn strict_decoding_refuses_every_mutilation() {
        let mut out = Vec::new();
        encode(&mut out, &header(3, 1), 2, |_, _| &[1, 2], [(1u16, 5u32)].into_iter(), std::iter::empty());
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
        // Fuzz: random bytes never panic.
        let mut r = crate::core::rng::Rng::new(5);
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
