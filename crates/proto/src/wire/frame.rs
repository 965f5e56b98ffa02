//! Frames: the messages batched inside one Payload packet.
//!
//! ```text
//! head u8        bits 7-6 kind (0 unreliable, 1 sequenced, 2 reliable, 3 reliable fragment)
//!                bits 5-0 channel id
//! [seq u16]                       sequenced and reliable kinds
//! [index u16, count u16]          fragment kind only; 2 <= count <= MAX_FRAGMENTS, index < count
//! len (1-2 bytes, LEB128)
//! data
//! ```
//! Frames are self-describing, so a datagram can be validated without knowing the
//! receiver's channel layout; the connection then checks the kind against its config.

use super::{DecodeError, Reader, Writer, len16_size};

/// Largest fragment count: 1 MiB messages in [`FRAGMENT_SIZE`] pieces.
pub(crate) const MAX_FRAGMENTS: u16 = 1024;
/// Payload bytes per fragment (all but the last are exactly this size).
pub(crate) const FRAGMENT_SIZE: usize = 1024;
/// Worst-case bytes of frame header for a fragment.
pub const FRAGMENT_HEADER_SIZE: usize = 1 + 2 + 4 + 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// A frame's delivery kind.
pub enum FrameKind {
    /// Delivered at most once, in any order.
    Unreliable,
    /// Delivered at most once, older ones dropped after a newer one.
    Sequenced,
    /// Delivered exactly once, in order (resent until acknowledged).
    Reliable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// One frame of a packet, borrowed from it.
pub struct Frame<'a> {
    /// The channel it belongs to (below 64).
    pub channel: u8,
    /// Its delivery kind.
    pub kind: FrameKind,
    /// Sequence number (sequenced and reliable kinds; 0 otherwise).
    pub seq: u16,
    /// `(index, count)` when this reliable unit is one piece of a larger message.
    pub fragment: Option<(u16, u16)>,
    /// The frame's bytes.
    pub data: &'a [u8],
}

impl Frame<'_> {
    /// Encoded size of this frame.
    pub fn encoded_len(&self) -> usize {
        let fixed = match (self.kind, self.fragment) {
            (FrameKind::Unreliable, _) => 1,
            (_, None) => 3,
            (_, Some(_)) => 7,
        };
        fixed + len16_size(self.data.len()) + self.data.len()
    }
}

/// Appends a frame. The caller has checked that it fits.
pub(crate) fn write_frame(w: &mut Writer<'_>, f: &Frame<'_>) {
    debug_assert!(f.channel < 64);
    let kind_bits = match (f.kind, f.fragment) {
        (FrameKind::Unreliable, _) => 0u8,
        (FrameKind::Sequenced, _) => 1,
        (FrameKind::Reliable, None) => 2,
        (FrameKind::Reliable, Some(_)) => 3,
    };
    w.u8((kind_bits << 6) | f.channel);
    if f.kind != FrameKind::Unreliable {
        w.u16(f.seq);
    }
    if let (FrameKind::Reliable, Some((index, count))) = (f.kind, f.fragment) {
        w.u16(index);
        w.u16(count);
    }
    w.len16(f.data.len());
    w.bytes(f.data);
}

/// Iterates over the frames of a packet; stops at the first error.
pub struct FrameReader<'a> {
    r: Reader<'a>,
    failed: bool,
}

impl<'a> FrameReader<'a> {
    /// A reader over the frames part of a packet.
    pub fn new(frames: &'a [u8]) -> Self {
        FrameReader { r: Reader::new(frames), failed: false }
    }

    fn read(&mut self) -> Result<Frame<'a>, DecodeError> {
        let head = self.r.u8()?;
        let channel = head & 0x3F;
        let (kind, fragmented) = match head >> 6 {
            0 => (FrameKind::Unreliable, false),
            1 => (FrameKind::Sequenced, false),
            2 => (FrameKind::Reliable, false),
            _ => (FrameKind::Reliable, true),
        };
        let seq = if kind == FrameKind::Unreliable { 0 } else { self.r.u16()? };
        let fragment = if fragmented {
            let index = self.r.u16()?;
            let count = self.r.u16()?;
            if !(2..=MAX_FRAGMENTS).contains(&count) || index >= count {
                return Err(DecodeError::BadFragment { index, count });
            }
            Some((index, count))
        } else {
            None
        };
        let len = self.r.len16()?;
        let data = self.r.bytes(len)?;
        if let Some((index, count)) = fragment {
            // Every piece but the last is full-size; the last is non-empty. This makes the
            // total size computable from (count, last length) and bounds reassembly.
            let ok = if index + 1 < count { len == FRAGMENT_SIZE } else { (1..=FRAGMENT_SIZE).contains(&len) };
            if !ok {
                return Err(DecodeError::BadLength);
            }
        }
        Ok(Frame { channel, kind, seq, fragment, data })
    }
}

impl<'a> Iterator for FrameReader<'a> {
    type Item = Result<Frame<'a>, DecodeError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.r.is_empty() {
            return None;
        }
        let f = self.read();
        self.failed = f.is_err();
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(frames: &[Frame<'_>]) -> Vec<u8> {
        let mut b = Vec::new();
        let mut w = Writer::new(&mut b);
        for f in frames {
            let before = w.len();
            write_frame(&mut w, f);
            assert_eq!(w.len() - before, f.encoded_len());
        }
        b
    }

    #[test]
    fn frames_round_trip() {
        let big = vec![7u8; FRAGMENT_SIZE];
        let frames = [
            Frame { channel: 0, kind: FrameKind::Unreliable, seq: 0, fragment: None, data: b"hello" },
            Frame { channel: 1, kind: FrameKind::Sequenced, seq: 65535, fragment: None, data: b"" },
            Frame { channel: 2, kind: FrameKind::Reliable, seq: 9, fragment: None, data: &[1; 300] },
            Frame { channel: 2, kind: FrameKind::Reliable, seq: 10, fragment: Some((0, 3)), data: &big },
            Frame { channel: 2, kind: FrameKind::Reliable, seq: 11, fragment: Some((2, 3)), data: b"x" },
        ];
        let b = enc(&frames);
        let back: Vec<_> = FrameReader::new(&b).collect::<Result<_, _>>().unwrap();
        assert_eq!(back, frames);
    }

    #[test]
    fn rejects_bad_frames() {
        // Length past the end.
        assert!(FrameReader::new(&[0x00, 5, 1, 2]).any(|f| f.is_err()));
        // Fragment with count 1, index >= count, count above the maximum.
        for (index, count) in [(0u16, 1u16), (3, 3), (0, MAX_FRAGMENTS + 1)] {
            let mut b = vec![0xC2, 0, 0];
            b.extend_from_slice(&index.to_le_bytes());
            b.extend_from_slice(&count.to_le_bytes());
            b.extend_from_slice(&[1, 0]);
            let r: Vec<_> = FrameReader::new(&b).collect();
            assert_eq!(r, vec![Err(DecodeError::BadFragment { index, count })]);
        }
        // A non-final fragment that is not full-size.
        let b = enc(&[Frame { channel: 2, kind: FrameKind::Reliable, seq: 1, fragment: Some((0, 2)), data: b"short" }]);
        assert_eq!(FrameReader::new(&b).next(), Some(Err(DecodeError::BadLength)));
        // Iteration stops after the first error.
        let mut r = FrameReader::new(&[0x00, 9]);
        assert!(r.next().unwrap().is_err());
        assert!(r.next().is_none());
    }
}
