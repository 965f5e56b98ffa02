//! A match server's ticket: a connect token whose user data starts with the match it
//! joins and the match's shape. The game's backend mints it with the server's key, so
//! a player can neither name a match it was not given nor change its shape, and the
//! first join of a match id creates the match with that shape.
//!
//! ```text
//! user_data: magic "twserve1" | match u64 | players u8 | input_size u16 | tick_rate_hz u16
//!            | the game's own bytes
//! ```
//! Numbers are little-endian, as everywhere on tickwire's wire.

use crate::game::{GameShape, MAX_INPUT_SIZE, MAX_RELAY_PLAYERS};
use crate::token::USER_DATA_SIZE;

const MAGIC: &[u8; 8] = b"twserve1";
/// Bytes the match claim takes at the start of a token's user data.
pub const SERVE_CLAIM_SIZE: usize = 8 + 8 + 1 + 2 + 2;
/// The tick rates a claim may name, in Hz.
pub const SERVE_TICK_RATES: std::ops::RangeInclusive<u16> = 1..=1000;

/// Which match a connect token joins, and the match's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServeClaim {
    /// The game backend's name for the match.
    pub match_id: u64,
    /// Player slots, 1..=[`MAX_RELAY_PLAYERS`].
    pub players: u8,
    /// Bytes per input, 1..=[`MAX_INPUT_SIZE`].
    pub input_size: u16,
    /// Ticks per second, in [`SERVE_TICK_RATES`].
    pub tick_rate_hz: u16,
}

/// Why a serve claim cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServeClaimError {
    /// The players are out of range.
    #[error("players: {0} given, 1..={MAX_RELAY_PLAYERS} allowed")]
    Players(u8),
    /// The input size is out of range.
    #[error("input_size: {0} given, 1..={MAX_INPUT_SIZE} allowed")]
    InputSize(u16),
    /// The tick rate is out of range.
    #[error("tick_rate_hz: {0} given, {lo}..={hi} allowed", lo = SERVE_TICK_RATES.start(), hi = SERVE_TICK_RATES.end())]
    TickRate(u16),
    /// The game's bytes do not fit after the claim.
    #[error("the game's user data is {0} bytes; {max} fit after the match claim", max = USER_DATA_SIZE - SERVE_CLAIM_SIZE)]
    UserData(usize),
}

impl ServeClaim {
    /// Checks the claim's fields.
    pub fn check(&self) -> Result<(), ServeClaimError> {
        if !(1..=MAX_RELAY_PLAYERS).contains(&(self.players as usize)) {
            return Err(ServeClaimError::Players(self.players));
        }
        if !(1..=MAX_INPUT_SIZE).contains(&(self.input_size as usize)) {
            return Err(ServeClaimError::InputSize(self.input_size));
        }
        if !SERVE_TICK_RATES.contains(&self.tick_rate_hz) {
            return Err(ServeClaimError::TickRate(self.tick_rate_hz));
        }
        Ok(())
    }

    /// The match's shape (the default catch-up cap).
    pub fn shape(&self) -> GameShape {
        GameShape {
            tick_rate_hz: f64::from(self.tick_rate_hz),
            ..GameShape::new(self.players as usize, self.input_size as usize)
        }
    }

    /// The user data of a token with this claim, then `game`'s bytes.
    pub fn user_data(&self, game: &[u8]) -> Result<Vec<u8>, ServeClaimError> {
        self.check()?;
        if game.len() > USER_DATA_SIZE - SERVE_CLAIM_SIZE {
            return Err(ServeClaimError::UserData(game.len()));
        }
        let mut out = Vec::with_capacity(SERVE_CLAIM_SIZE + game.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.match_id.to_le_bytes());
        out.push(self.players);
        out.extend_from_slice(&self.input_size.to_le_bytes());
        out.extend_from_slice(&self.tick_rate_hz.to_le_bytes());
        out.extend_from_slice(game);
        Ok(out)
    }

    /// The claim at the start of an opened token's user data, if it holds one that
    /// checks.
    pub fn from_user_data(user_data: &[u8; USER_DATA_SIZE]) -> Option<Self> {
        if &user_data[..8] != MAGIC {
            return None;
        }
        let u16_at = |i: usize| u16::from_le_bytes([user_data[i], user_data[i + 1]]);
        let claim = ServeClaim {
            match_id: u64::from_le_bytes(user_data[8..16].try_into().ok()?),
            players: user_data[16],
            input_size: u16_at(17),
            tick_rate_hz: u16_at(19),
        };
        claim.check().ok().map(|()| claim)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_reads_back_from_user_data_and_bad_ones_are_named() {
        let c = ServeClaim { match_id: 0x0102_0304_0506_0708, players: 4, input_size: 8, tick_rate_hz: 60 };
        let mut ud = [0u8; USER_DATA_SIZE];
        let bytes = c.user_data(b"skin").unwrap();
        ud[..bytes.len()].copy_from_slice(&bytes);
        assert_eq!(ServeClaim::from_user_data(&ud), Some(c));
        assert_eq!(&ud[SERVE_CLAIM_SIZE..SERVE_CLAIM_SIZE + 4], b"skin");
        assert_eq!(c.shape().tick_us(), 1e6 / 60.0);
        assert_eq!(ServeClaim { players: 0, ..c }.user_data(&[]), Err(ServeClaimError::Players(0)));
        assert_eq!(ServeClaim { players: 65, ..c }.user_data(&[]), Err(ServeClaimError::Players(65)));
        assert_eq!(ServeClaim { input_size: 0, ..c }.user_data(&[]), Err(ServeClaimError::InputSize(0)));
        let big = MAX_INPUT_SIZE as u16 + 1;
        assert_eq!(ServeClaim { input_size: big, ..c }.user_data(&[]), Err(ServeClaimError::InputSize(big)));
        assert_eq!(ServeClaim { tick_rate_hz: 0, ..c }.user_data(&[]), Err(ServeClaimError::TickRate(0)));
        assert_eq!(ServeClaim { tick_rate_hz: 1001, ..c }.user_data(&[]), Err(ServeClaimError::TickRate(1001)));
        assert_eq!(c.user_data(&[0; 236]), Err(ServeClaimError::UserData(236)));
        ud[16] = 0;
        assert_eq!(ServeClaim::from_user_data(&ud), None, "a claim that does not check is none");
        assert_eq!(ServeClaim::from_user_data(&[0; USER_DATA_SIZE]), None);
        let mut rendezvous = [0u8; USER_DATA_SIZE];
        rendezvous[..8].copy_from_slice(b"twmatch1");
        assert_eq!(ServeClaim::from_user_data(&rendezvous), None, "a rendezvous ticket is not a serve claim");
    }
}
