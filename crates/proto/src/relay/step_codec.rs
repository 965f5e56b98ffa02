//! The canonical steps' two encodings and the entries that carry them in a
//! ServerUpdate.
//!
//! ```text
//! Full step   n_players u8 | n x (player u32, accepted u8, n_inputs u8, n_inputs x (len u8, bytes))
//! Delta step  n_players u8 | roster u8 (0: the previous step's players, 1: listed)
//!             | [n x player u32] | same: ceil(n/8) bytes, bit i = player i's part is the
//!             previous step's part of that player, byte for byte
//!             | for each player not the same: accepted u8, n_inputs u8, n_inputs x (len u8, bytes)
//! Entry       tick_offset u16 | form u8 | [index u8, count u8 if form & FRAGMENT]
//!             | len u16 | len bytes (a body, or the index-th piece of one)
//! ```
//! Every step after a client's first goes as a delta against the step before it, which
//! the client always holds (it takes steps in order): a held button costs one bit per
//! player and tick. A client's first step (its join, or a catch-up after falling
//! behind) goes in full, and a full step is only ever sent there, so a full step past
//! the one a client expects tells it the server started it again from there.
//!
//! A body larger than a datagram goes as pieces of [`FRAGMENT_BYTES`] (the last one
//! shorter) in entries of their own, and the client puts them back together.

use super::messages::StepRules;
use crate::engine::Tick;
use crate::wire::{DecodeError, Reader, Writer};

/// A body's form (an entry's `form`, without the fragment flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepForm {
    /// The whole step.
    Full = 0,
    /// Only what differs from the step before it.
    Delta = 1,
}

/// Set in an entry's `form` when the entry is a piece of a body.
pub(crate) const FRAGMENT: u8 = 0x80;
/// Bytes in every piece of a fragmented body but the last.
pub(crate) const FRAGMENT_BYTES: usize = 1024;
/// An entry's bytes before its body: offset, form, length.
pub(crate) const ENTRY_HEAD: usize = 5;
/// A fragment entry's bytes before its piece.
pub(crate) const FRAGMENT_HEAD: usize = ENTRY_HEAD + 2;
/// Most pieces of one body (the count is a byte).
pub(crate) const MAX_FRAGMENTS: usize = u8::MAX as usize;
/// Largest full step: its delta (at most the full step, a roster flag and a bitmap of
/// 32 bytes) still fits in [`MAX_FRAGMENTS`] pieces.
pub(crate) const MAX_STEP_BYTES: usize = MAX_FRAGMENTS * FRAGMENT_BYTES - 64;

impl StepForm {
    fn from_u8(v: u8) -> Option<StepForm> {
        match v {
            0 => Some(StepForm::Full),
            1 => Some(StepForm::Delta),
            _ => None,
        }
    }
}

/// One entry of a ServerUpdate, read in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    pub tick: Tick,
    pub form: StepForm,
    /// `(index, count)` of a piece.
    pub fragment: Option<(u8, u8)>,
    pub bytes: &'a [u8],
}

/// Appends an entry holding a whole body.
pub fn write_entry(out: &mut Vec<u8>, offset: u16, form: StepForm, body: &[u8]) {
    write_entry_head(out, offset, form, body.len());
    out.extend_from_slice(body);
}

/// Appends the head of an entry holding a whole body of `len` bytes (the body follows).
pub(crate) fn write_entry_head(out: &mut Vec<u8>, offset: u16, form: StepForm, len: usize) {
    let mut w = Writer::new(out);
    w.u16(offset);
    w.u8(form as u8);
    w.u16(len as u16);
}

/// Appends the head of an entry holding piece `index` of `count`, `len` bytes long
/// (the piece follows).
pub(crate) fn write_fragment_head(out: &mut Vec<u8>, offset: u16, form: StepForm, index: u8, count: u8, len: usize) {
    let mut w = Writer::new(out);
    w.u16(offset);
    w.u8(form as u8 | FRAGMENT);
    w.u8(index);
    w.u8(count);
    w.u16(len as u16);
}

/// Pieces a body of `len` bytes is cut into (1 if it goes whole).
pub(crate) fn fragments_of(len: usize) -> usize {
    len.div_ceil(FRAGMENT_BYTES).max(1)
}

/// Reads one entry at `r` (ticks relative to `base`), checking what can be checked
/// without the previous step: a whole body's structure against `rules`, a piece's
/// index and length.
pub(crate) fn read_entry<'a>(r: &mut Reader<'a>, base: Tick, rules: &StepRules) -> Result<Entry<'a>, DecodeError> {
    let offset = r.u16()?;
    let form_byte = r.u8()?;
    let form = StepForm::from_u8(form_byte & !FRAGMENT).ok_or(DecodeError::BadLength)?;
    let fragment = if form_byte & FRAGMENT != 0 {
        let (index, count) = (r.u8()?, r.u8()?);
        if count < 2 || index >= count {
            return Err(DecodeError::BadFragment { index: index.into(), count: count.into() });
        }
        Some((index, count))
    } else {
        None
    };
    let len = r.u16()? as usize;
    let bytes = r.bytes(len)?;
    // A step numbered at or past the end of the tick range (which has no next tick)
    // cannot be taken.
    let tick = base.checked_add(offset.into()).filter(|&t| t < Tick::MAX).ok_or(DecodeError::BadLength)?;
    match fragment {
        // Every piece but the last is exactly FRAGMENT_BYTES; the last is not empty.
        Some((index, count)) => {
            let last = index + 1 == count;
            if (!last && len != FRAGMENT_BYTES) || (last && !(1..=FRAGMENT_BYTES).contains(&len)) {
                return Err(DecodeError::BadLength);
            }
        }
        None => check_body(form, bytes, rules)?,
    }
    Ok(Entry { tick, form, fragment, bytes })
}

/// Checks a body's structure (for a delta, all but what depends on the previous step).
pub(crate) fn check_body(form: StepForm, bytes: &[u8], rules: &StepRules) -> Result<(), DecodeError> {
    let mut r = Reader::new(bytes);
    match form {
        StepForm::Full => {
            let n = r.u8()?;
            let mut prev = None;
            for _ in 0..n {
                let player = r.u32()?;
                check_player(&mut prev, player, rules)?;
                read_part(&mut r, rules)?;
            }
        }
        StepForm::Delta => {
            let n = r.u8()? as usize;
            let listed = match r.u8()? {
                0 => false,
                1 => true,
                _ => return Err(DecodeError::BadLength),
            };
            if listed {
                let mut prev = None;
                for _ in 0..n {
                    check_player(&mut prev, r.u32()?, rules)?;
                }
            }
            let same = r.bytes(n.div_ceil(8))?;
            for i in 0..n {
                if same[i / 8] & (1 << (i % 8)) == 0 {
                    read_part(&mut r, rules)?;
                }
            }
        }
    }
    if !r.is_empty() {
        return Err(DecodeError::Trailing);
    }
    Ok(())
}

/// Players are listed in increasing id order (so none twice), below the player limit.
fn check_player(prev: &mut Option<u32>, player: u32, rules: &StepRules) -> Result<(), DecodeError> {
    if prev.is_some_and(|p| player <= p) || rules.max_players.is_some_and(|m| player >= m) {
        return Err(DecodeError::BadLength);
    }
    *prev = Some(player);
    Ok(())
}

/// Reads one player's part (accepted, inputs) and returns its bytes.
fn read_part<'a>(r: &mut Reader<'a>, rules: &StepRules) -> Result<(), DecodeError> {
    let accepted = r.u8()?;
    let ni = r.u8()?;
    // A step applies `accepted` inputs, or one substitute when nothing was accepted.
    if ni != accepted.max(1) {
        return Err(DecodeError::BadLength);
    }
    for _ in 0..ni {
        let len = r.u8()? as usize;
        if len > rules.max_input || rules.input_size.is_some_and(|s| s != len) {
            return Err(DecodeError::BadLength);
        }
        r.bytes(len)?;
    }
    Ok(())
}

/// The players of a full step and their parts' bytes, in order. The encoding was
/// checked, so it reads; were it short, the walk would just end.
fn full_parts(full: &[u8]) -> impl Iterator<Item = (u32, &[u8])> {
    let mut r = Reader::new(full.get(1..).unwrap_or(&[]));
    let n = full.first().copied().unwrap_or(0);
    let rules = StepRules::any(u8::MAX as usize);
    (0..n).map_while(move |_| {
        let player = r.u32().ok()?;
        let start = r.remaining();
        let mut probe = r.clone();
        read_part(&mut probe, &rules).ok()?;
        let len = start - probe.remaining();
        Some((player, r.bytes(len).ok()?))
    })
}

/// Writes `cur` (a full step) as a delta against `prev` (the full step before it).
pub fn encode_delta(out: &mut Vec<u8>, prev: &[u8], cur: &[u8]) {
    out.clear();
    let n = cur.first().copied().unwrap_or(0) as usize;
    let same_roster = full_parts(prev).map(|p| p.0).eq(full_parts(cur).map(|p| p.0));
    out.push(n as u8);
    out.push(!same_roster as u8);
    if !same_roster {
        for (player, _) in full_parts(cur) {
            Writer::new(out).u32(player);
        }
    }
    let bitmap_at = out.len();
    out.resize(bitmap_at + n.div_ceil(8), 0);
    let mut before = full_parts(prev).peekable();
    for (i, (player, part)) in full_parts(cur).enumerate() {
        // Both lists are in increasing id order: walk them together.
        while before.next_if(|p| p.0 < player).is_some() {}
        if before.peek().is_some_and(|p| p.0 == player && p.1 == part) {
            out[bitmap_at + i / 8] |= 1 << (i % 8);
        } else {
            out.extend_from_slice(part);
        }
    }
}

/// Rebuilds the full step from a delta (checked with [`check_body`]) and the full step
/// before it. Fails if the delta does not fit that step (a roster or part it does not
/// have), which a server never sends.
pub(crate) fn expand_delta(out: &mut Vec<u8>, prev: &[u8], delta: &[u8]) -> Result<(), DecodeError> {
    out.clear();
    let mut r = Reader::new(delta);
    let n = r.u8()? as usize;
    let listed = r.u8()? == 1;
    let mut ids = Reader::new(if listed { r.bytes(4 * n)? } else { &[] });
    let prev_n = prev.first().copied().unwrap_or(0) as usize;
    if !listed && prev_n != n {
        return Err(DecodeError::BadLength);
    }
    let same = r.bytes(n.div_ceil(8))?;
    out.push(n as u8);
    let rules = StepRules::any(u8::MAX as usize);
    // Two walks through the previous step: its players in order (the roster when it is
    // not listed), and the search for a player's part. Plain readers and counts rather
    // than iterator adapters over options: an optimized build then never compares a
    // player id that was not read (valgrind runs the optimized library too).
    let body = prev.get(1..).unwrap_or(&[]);
    let mut roster = PrevWalk { r: Reader::new(body), left: prev_n };
    let mut search = PrevWalk { r: Reader::new(body), left: prev_n };
    for i in 0..n {
        let player = if listed { ids.u32()? } else { roster.next_part(&rules)?.0 };
        Writer::new(out).u32(player);
        if same[i / 8] & (1 << (i % 8)) != 0 {
            out.extend_from_slice(search.find(player, &rules)?);
        } else {
            let start = delta.len() - r.remaining();
            read_part(&mut r, &rules)?;
            out.extend_from_slice(&delta[start..delta.len() - r.remaining()]);
        }
    }
    if !r.is_empty() {
        return Err(DecodeError::Trailing);
    }
    Ok(())
}

/// A walk through a full step's players, in order.
struct PrevWalk<'a> {
    r: Reader<'a>,
    left: usize,
}

impl<'a> PrevWalk<'a> {
    /// The next player and its part's bytes.
    fn next_part(&mut self, rules: &StepRules) -> Result<(u32, &'a [u8]), DecodeError> {
        if self.left == 0 {
            return Err(DecodeError::BadLength);
        }
        self.left -= 1;
        let player = self.r.u32()?;
        let mut probe = self.r.clone();
        read_part(&mut probe, rules)?;
        let len = self.r.remaining() - probe.remaining();
        Ok((player, self.r.bytes(len)?))
    }

    /// The part of `player`, walking forward (players are in increasing order).
    fn find(&mut self, player: u32, rules: &StepRules) -> Result<&'a [u8], DecodeError> {
        loop {
            let (p, part) = self.next_part(rules)?;
            if p == player {
                return Ok(part);
            }
            if p > player {
                return Err(DecodeError::BadLength);
            }
        }
    }
}

#[cfg(test)]
#[path = "step_codec_tests.rs"]
mod tests;
