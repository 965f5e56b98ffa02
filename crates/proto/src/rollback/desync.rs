//! Desync detection bookkeeping and the forensic dump format.
//!
//! Peers compare checksums of *confirmed* ticks only (ticks whose every earlier input
//! is confirmed and whose state was saved after the last rollback that could touch
//! them), so a rollback in flight can never cause a false alarm.
//!
//! Peers also compare digests of the inputs each received from every player:
//! honest peers whose checksums differ because one peer sent them different
//! inputs see whose inputs differ, and name that player (the culprit) rather than
//! each other.
//!
//! Dump format (all integers little-endian), version 2:
//! ```text
//! "TWDS" u16 version
//! u32 tick, u64 local checksum, u64 remote checksum, u32 peer
//! u32 culprit: the player whose inputs reached the two peers differently, or
//!     0xffff_ffff (none known); absent in version 1, which still decodes (no culprit)
//! u32 players, u32 input_size, u32 first tick, u32 ticks
//! ticks * players * (u8 status, input_size bytes)     confirmed inputs around the tick
//! u8 has_state, u32 state length, state bytes         the engine's state at the tick
//! ```

use crate::engine::{InputStatus, Tick};
use crate::transport::PeerId;
use crate::wire::{DecodeError, Reader};

const MAGIC: &[u8; 4] = b"TWDS";
const VERSION: u16 = 2;
/// The format before the culprit, still read.
const VERSION_NO_CULPRIT: u16 = 1;
/// The culprit field's "none known".
const NO_CULPRIT: u32 = u32::MAX;

/// A checksum report waiting for the local checksum of the same tick.
pub(crate) const PENDING_REPORTS: usize = 16;

/// Final local checksums of check ticks, newest last, with the input digests of each
/// (see [`InputDigests`]).
#[derive(Debug, Clone)]
pub(crate) struct ChecksumLog {
    ring: [(Tick, u64); 64],
    len: usize,
    at: usize,
    players: usize,
    /// `players` digests per ring entry, allocated once.
    digests: Vec<InputDigest>,
    /// Whether the entry has digests (none once they were lost).
    has_digests: [bool; 64],
}

impl ChecksumLog {
    /// An empty log for a match of `players`.
    pub(crate) fn new(players: usize) -> Self {
        ChecksumLog {
            ring: [(0, 0); 64],
            len: 0,
            at: 0,
            players,
            digests: vec![0; 64 * players],
            has_digests: [false; 64],
        }
    }

    /// Adds a final checksum and the input digests of the same tick (`players` of
    /// them, or none).
    pub(crate) fn push(&mut self, tick: Tick, checksum: u64, digests: &[InputDigest]) {
        self.ring[self.at] = (tick, checksum);
        let full = digests.len() == self.players;
        self.has_digests[self.at] = full;
        if full {
            self.digests[self.at * self.players..][..self.players].copy_from_slice(digests);
        }
        self.at = (self.at + 1) % self.ring.len();
        self.len = (self.len + 1).min(self.ring.len());
    }

    /// Forgets the entries of ticks after `tick` (their inputs were corrected: they
    /// are pushed again once final).
    pub(crate) fn truncate_after(&mut self, tick: Tick) {
        let n = self.ring.len();
        while self.len > 0 && self.ring[(self.at + n - 1) % n].0 > tick {
            self.at = (self.at + n - 1) % n;
            self.len -= 1;
        }
    }

    /// The input digests of `tick`, if remembered (empty if it had none).
    pub(crate) fn digests(&self, tick: Tick) -> Option<&[InputDigest]> {
        let n = self.ring.len();
        let i = (0..self.len).map(|i| (self.at + n - 1 - i) % n).find(|&i| self.ring[i].0 == tick)?;
        Some(if self.has_digests[i] { &self.digests[i * self.players..][..self.players] } else { &[] })
    }

    /// The input digests of the newest entry (empty if none).
    pub(crate) fn newest_digests(&self) -> &[InputDigest] {
        match self.iter_newest().next() {
            Some((t, _)) => self.digests(t).unwrap_or(&[]),
            None => &[],
        }
    }

    /// The final checksum of `tick`, if still remembered.
    pub(crate) fn get(&self, tick: Tick) -> Option<u64> {
        self.iter_newest().find(|e| e.0 == tick).map(|e| e.1)
    }

    /// Newest first.
    pub(crate) fn iter_newest(&self) -> impl Iterator<Item = (Tick, u64)> + Clone + '_ {
        let n = self.ring.len();
        (0..self.len).map(move |i| self.ring[(self.at + n - 1 - i) % n])
    }
}

/// One player's running input digest: 128 bits of a SHA-256 chain.
pub(crate) type InputDigest = u128;

/// Running digests of each player's confirmed inputs from tick 0, one tick at a
/// time: each tick, the first 128 bits of SHA-256 over the digest so far, the tick's
/// status byte and its input bytes. They must resist collisions: the peers vote with
/// them on a player's inputs (`p2p/reconcile.rs`), and a liar able to find two input
/// streams with one digest (FNV-1a folded to 32 bits, before, took seconds) could send
/// each peer another one unseen. A tick costs one SHA-256 block per player.
#[derive(Debug, Clone)]
pub(crate) struct InputDigests {
    state: Vec<InputDigest>,
    /// Every tick before this one is digested.
    end: Tick,
    /// An input to digest was no longer held (see `lose`): from then on there are no
    /// digests, rather than ones that would differ from every peer's.
    lost: bool,
}

impl InputDigests {
    /// Digests of no input yet, for `players`.
    pub(crate) fn new(players: usize) -> Self {
        InputDigests { state: vec![DIGEST_START; players], end: 0, lost: false }
    }

    /// The first tick not yet digested.
    pub(crate) fn end(&self) -> Tick {
        self.end
    }

    /// Whether the digests stopped (see `lose`).
    pub(crate) fn is_lost(&self) -> bool {
        self.lost
    }

    /// Adds `player`'s input of tick `end()`.
    pub(crate) fn add(&mut self, player: usize, status: InputStatus, bytes: &[u8]) {
        self.state[player] = digest_step(self.state[player], status, bytes);
    }

    /// Goes back to `end` with the digests `at_end` had there (inputs of later ticks
    /// were corrected and are digested again). Lost digests stay lost.
    pub(crate) fn rewind(&mut self, end: Tick, at_end: &[InputDigest]) {
        if !self.lost && at_end.len() == self.state.len() && end <= self.end {
            self.state.copy_from_slice(at_end);
            self.end = end;
        }
    }

    /// Every player's input of tick `end()` was added: moves to the next tick.
    pub(crate) fn next_tick(&mut self) {
        self.end += 1;
    }

    /// An input of tick `end()` is gone: stops digesting, and skips to `until`.
    pub(crate) fn lose(&mut self, until: Tick) {
        self.lost = true;
        self.end = self.end.max(until);
    }

    /// The digests of every tick before `end()` (empty if lost).
    pub(crate) fn current(&self) -> &[InputDigest] {
        if self.lost { &[] } else { &self.state }
    }
}

/// One tick of a running input digest.
pub(crate) fn digest_step(state: InputDigest, status: InputStatus, bytes: &[u8]) -> InputDigest {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(state.to_le_bytes());
    h.update([status as u8]);
    h.update(bytes);
    let out = h.finalize();
    InputDigest::from_le_bytes(out[..16].try_into().expect("16 of 32 bytes"))
}

/// The running digest of no input.
pub(crate) const DIGEST_START: InputDigest = 0;

/// A decoded desync dump, for tools and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesyncDump {
    /// The tick whose checksums differ.
    pub tick: Tick,
    /// This peer's checksum.
    pub local: u64,
    /// The other peer's checksum.
    pub remote: u64,
    /// The other peer.
    pub peer: PeerId,
    /// The player whose inputs reached this peer and the other one differently (it
    /// sent them different inputs), if the digests showed one.
    pub culprit: Option<usize>,
    /// Players per tick.
    pub players: usize,
    /// Bytes per input.
    pub input_size: usize,
    /// First tick of `inputs`.
    pub first_tick: Tick,
    /// Per tick, per player: status and bytes.
    pub inputs: Vec<Vec<(InputStatus, Vec<u8>)>>,
    /// The engine's state bytes for `tick`, if it still had them.
    pub state: Option<Vec<u8>>,
}

/// Why a dump did not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DumpDecodeError;

impl DesyncDump {
    /// Serializes the dump.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + self.inputs.len() * self.players * (1 + self.input_size));
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&VERSION.to_le_bytes());
        b.extend_from_slice(&self.tick.to_le_bytes());
        b.extend_from_slice(&self.local.to_le_bytes());
        b.extend_from_slice(&self.remote.to_le_bytes());
        b.extend_from_slice(&self.peer.to_le_bytes());
        let culprit = self.culprit.map_or(NO_CULPRIT, |p| p as u32);
        b.extend_from_slice(&culprit.to_le_bytes());
        for v in [self.players as u32, self.input_size as u32, self.first_tick, self.inputs.len() as u32] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        for tick in &self.inputs {
            for (s, bytes) in tick {
                b.push(*s as u8);
                b.extend_from_slice(bytes);
            }
        }
        b.push(self.state.is_some() as u8);
        let st = self.state.as_deref().unwrap_or(&[]);
        b.extend_from_slice(&(st.len() as u32).to_le_bytes());
        b.extend_from_slice(st);
        b
    }

    /// Strictly decodes a dump (exact length, known version and statuses, a culprit
    /// among the players). Version 1 dumps decode with no culprit.
    pub fn decode(data: &[u8]) -> Result<DesyncDump, DumpDecodeError> {
        let mut r = Reader::new(data);
        let bad = |_: DecodeError| DumpDecodeError;
        if r.bytes(4).map_err(bad)? != MAGIC {
            return Err(DumpDecodeError);
        }
        let version = r.u16().map_err(bad)?;
        if version != VERSION && version != VERSION_NO_CULPRIT {
            return Err(DumpDecodeError);
        }
        let tick = r.u32().map_err(bad)?;
        let local = r.u64().map_err(bad)?;
        let remote = r.u64().map_err(bad)?;
        let peer = r.u32().map_err(bad)?;
        let culprit = match version {
            VERSION => r.u32().map_err(bad)?,
            _ => NO_CULPRIT,
        };
        let players = r.u32().map_err(bad)? as usize;
        let culprit = match culprit {
            NO_CULPRIT => None,
            p if (p as usize) < players => Some(p as usize),
            _ => return Err(DumpDecodeError),
        };
        let input_size = r.u32().map_err(bad)? as usize;
        let first_tick = r.u32().map_err(bad)?;
        let ticks = r.u32().map_err(bad)? as usize;
        // Every count is checked against the bytes left before anything is allocated:
        // a tick takes `players * (1 + input_size)` bytes, so a tick that takes none
        // (no players) cannot be repeated, and no more ticks than the bytes left hold.
        let tick_bytes = input_size.checked_add(1).and_then(|n| n.checked_mul(players)).ok_or(DumpDecodeError)?;
        if (ticks > 0 && tick_bytes == 0) || ticks.checked_mul(tick_bytes).is_none_or(|n| n > r.remaining()) {
            return Err(DumpDecodeError);
        }
        let mut inputs = Vec::with_capacity(ticks);
        for _ in 0..ticks {
            let mut row = Vec::with_capacity(players);
            for _ in 0..players {
                let s = status_from(r.u8().map_err(bad)?).ok_or(DumpDecodeError)?;
                row.push((s, r.bytes(input_size).map_err(bad)?.to_vec()));
            }
            inputs.push(row);
        }
        let has = r.u8().map_err(bad)?;
        let len = r.u32().map_err(bad)? as usize;
        let st = r.bytes(len).map_err(bad)?.to_vec();
        let state = match has {
            0 if len == 0 => None,
            1 => Some(st),
            _ => return Err(DumpDecodeError),
        };
        if !r.is_empty() {
            return Err(DumpDecodeError);
        }
        Ok(DesyncDump { tick, local, remote, peer, culprit, players, input_size, first_tick, inputs, state })
    }
}

/// Maps a status byte back (shared by the dump and replay formats).
pub(crate) fn status_from(b: u8) -> Option<InputStatus> {
    match b {
        0 => Some(InputStatus::Confirmed),
        1 => Some(InputStatus::Predicted),
        2 => Some(InputStatus::Disconnected),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dump_round_trips_strictly() {
        let d = DesyncDump {
            tick: 50,
            local: 1,
            remote: 2,
            peer: 3,
            culprit: Some(1),
            players: 2,
            input_size: 2,
            first_tick: 48,
            inputs: vec![vec![(InputStatus::Confirmed, vec![1, 2]), (InputStatus::Disconnected, vec![0, 0])]; 3],
            state: Some(vec![9; 10]),
        };
        let b = d.encode();
        assert_eq!(DesyncDump::decode(&b), Ok(d.clone()));
        for cut in 0..b.len() {
            assert!(DesyncDump::decode(&b[..cut]).is_err());
        }
        let none = DesyncDump { culprit: None, ..d.clone() };
        assert_eq!(DesyncDump::decode(&none.encode()), Ok(none.clone()));
        // A culprit that is not a player is refused.
        let mut bad = b.clone();
        bad[30..34].copy_from_slice(&2u32.to_le_bytes());
        assert_eq!(DesyncDump::decode(&bad), Err(DumpDecodeError));
        // Version 1 (no culprit field) still reads, with no culprit.
        let mut v1 = none.encode();
        v1[4..6].copy_from_slice(&VERSION_NO_CULPRIT.to_le_bytes());
        v1.drain(30..34);
        assert_eq!(DesyncDump::decode(&v1), Ok(none));
        let mut log = ChecksumLog::new(2);
        for t in 0..100 {
            let digests = if t % 2 == 0 { &[t as InputDigest, t as InputDigest + 1][..] } else { &[][..] };
            log.push(t, t as u64 + 1, digests);
        }
        assert_eq!(log.get(99), Some(100));
        assert_eq!(log.get(10), None);
        assert_eq!(log.iter_newest().next(), Some((99, 100)));
        assert_eq!((log.digests(98), log.digests(99), log.digests(10)), (Some(&[98, 99][..]), Some(&[][..]), None));
        assert_eq!(log.newest_digests(), &[] as &[InputDigest]);
    }

    #[test]
    fn input_digests_run_tick_by_tick() {
        let mut d = InputDigests::new(2);
        let start = d.current().to_vec();
        assert_eq!(start[0], start[1]);
        d.add(0, InputStatus::Confirmed, &[1, 2]);
        d.add(1, InputStatus::Disconnected, &[1, 2]);
        d.next_tick();
        let (a, b) = (d.current()[0], d.current()[1]);
        assert_ne!(a, b, "the status is digested too");
        assert_ne!(a, start[0]);
        // The same bytes split over two ticks differ from them in one: the status byte
        // of each tick is between them.
        let mut e = InputDigests::new(1);
        e.add(0, InputStatus::Confirmed, &[1]);
        e.next_tick();
        e.add(0, InputStatus::Confirmed, &[2]);
        e.next_tick();
        assert_ne!(e.current()[0], a);
        assert_eq!(e.end(), 2);
        e.lose(9);
        assert!(e.is_lost() && e.current().is_empty() && e.end() == 9);
    }

    /// A dump's header with these counts (then nothing: the caller appends the rest),
    /// in version 1 (no culprit).
    fn head(players: u32, input_size: u32, ticks: u32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&VERSION_NO_CULPRIT.to_le_bytes());
        b.extend_from_slice(&50u32.to_le_bytes());
        b.extend_from_slice(&1u64.to_le_bytes());
        b.extend_from_slice(&2u64.to_le_bytes());
        for v in [3, players, input_size, 48, ticks] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b
    }

    /// No state: `has_state` 0, length 0.
    fn no_state(mut b: Vec<u8>) -> Vec<u8> {
        b.push(0);
        b.extend_from_slice(&0u32.to_le_bytes());
        b
    }

    #[test]
    fn counts_that_the_bytes_left_cannot_hold_are_refused_before_allocating() {
        // These 51 bytes (no players, 2^32 - 1 ticks) asked for 103 GB.
        let b = no_state(head(0, 0, u32::MAX));
        assert_eq!(b.len(), 51);
        assert_eq!(DesyncDump::decode(&b), Err(DumpDecodeError));
        for (players, input_size, ticks) in [
            (0, 7, u32::MAX),
            (0, u32::MAX, 1),
            (u32::MAX, 0, 1),
            (1, u32::MAX, 1),
            (u32::MAX, u32::MAX, u32::MAX),
            (1, 0, u32::MAX),
            (2, 2, 1_000_000),
        ] {
            let b = no_state(head(players, input_size, ticks));
            assert_eq!(DesyncDump::decode(&b), Err(DumpDecodeError), "{players} {input_size} {ticks}");
        }
        // One tick of two 2-byte inputs is 6 bytes: a byte short, and exact.
        let mut b = head(2, 2, 1);
        b.extend_from_slice(&[0, 1, 2, 2, 0, 0]);
        let exact = no_state(b.clone());
        assert!(DesyncDump::decode(&exact).is_ok());
        b.pop();
        assert_eq!(DesyncDump::decode(&no_state(b)), Err(DumpDecodeError));
        // A state length past the end.
        let mut b = head(1, 1, 0);
        b.push(1);
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(DesyncDump::decode(&b), Err(DumpDecodeError));
    }
}
