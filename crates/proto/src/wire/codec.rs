//! Bounds-checked little-endian reading and writing.
//!
//! Every read checks the remaining length first and fails with [`DecodeError`]; nothing
//! here can panic on hostile input.

use super::DecodeError;

/// Reads from a borrowed datagram.
#[derive(Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(DecodeError::Truncated { need: n, have: self.remaining() });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let s = self.bytes(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }
    pub(crate) fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    /// A big-endian u16, for the formats of others (STUN is in network order).
    pub(crate) fn u16_be(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_be_bytes(self.array()?))
    }
    /// A big-endian u32, for the formats of others.
    pub(crate) fn u32_be(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    /// A length as 1 or 2 LEB128 bytes (lengths here never exceed a datagram).
    /// Non-minimal encodings are rejected so every value has exactly one encoding.
    pub(crate) fn len16(&mut self) -> Result<usize, DecodeError> {
        let b0 = self.u8()?;
        if b0 & 0x80 == 0 {
            return Ok(b0 as usize);
        }
        let b1 = self.u8()?;
        if b1 == 0 || b1 & 0x80 != 0 {
            return Err(DecodeError::BadLength);
        }
        Ok((b0 & 0x7F) as usize | ((b1 as usize) << 7))
    }
    /// Checks that the rest of the datagram is zero padding.
    pub(crate) fn zero_padding(&mut self) -> Result<(), DecodeError> {
        let rest = self.bytes(self.remaining())?;
        if rest.iter().any(|&b| b != 0) {
            return Err(DecodeError::BadPadding);
        }
        Ok(())
    }
}

/// Appends to a `Vec<u8>` (which keeps its capacity across packets).
pub(crate) struct Writer<'a> {
    pub buf: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(buf: &'a mut Vec<u8>) -> Self {
        Writer { buf }
    }
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }
    pub(crate) fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub(crate) fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// A big-endian u16, for the formats of others.
    pub(crate) fn u16_be(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }
    /// A big-endian u32, for the formats of others.
    pub(crate) fn u32_be(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
    /// Encodes a length below 2^14 as 1 or 2 bytes.
    pub(crate) fn len16(&mut self, v: usize) {
        debug_assert!(v < (1 << 14));
        if v < 0x80 {
            self.u8(v as u8);
        } else {
            self.u8((v as u8 & 0x7F) | 0x80);
            self.u8((v >> 7) as u8);
        }
    }
    pub(crate) fn pad_to(&mut self, size: usize) {
        if self.buf.len() < size {
            self.buf.resize(size, 0);
        }
    }
}

/// Bytes `len16` needs for `v`.
pub(crate) fn len16_size(v: usize) -> usize {
    if v < 0x80 { 1 } else { 2 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn len16_round_trips_and_rejects_non_minimal() {
        for v in [0usize, 1, 127, 128, 1199, 16383] {
            let mut b = Vec::new();
            Writer::new(&mut b).len16(v);
            assert_eq!(b.len(), len16_size(v));
            assert_eq!(Reader::new(&b).len16().unwrap(), v);
        }
        // 0x80 0x00 would be a second encoding of 0.
        assert_eq!(Reader::new(&[0x80, 0x00]).len16(), Err(DecodeError::BadLength));
        assert_eq!(Reader::new(&[0x80, 0x80]).len16(), Err(DecodeError::BadLength));
        assert!(matches!(Reader::new(&[0x80]).len16(), Err(DecodeError::Truncated { .. })));
    }

    #[test]
    fn reads_past_end_fail() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.u16().unwrap(), 0x0201);
        assert!(matches!(r.u16(), Err(DecodeError::Truncated { need: 2, have: 1 })));
        assert_eq!(r.u8().unwrap(), 3);
        assert!(r.u8().is_err());
    }
}
