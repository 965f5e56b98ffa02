//! A rendezvous ticket is a connect token ([`crate::token`]) whose game data starts
//! with a match claim: which match, which player slot, how many players. The game's
//! backend mints it with the rendezvous's key, so a player cannot name another's slot
//! or another match, and only the rendezvous can read it.
//!
//! ```text
//! user_data: magic "twmatch1" | match u64 | slot u8 | players u8 | the game's own bytes
//! ```

use super::messages::MAX_RENDEZVOUS_PLAYERS;
use crate::token::USER_DATA_SIZE;

const MAGIC: &[u8; 8] = b"twmatch1";
/// Bytes the match claim takes at the start of a ticket's user data.
pub const MATCH_CLAIM_SIZE: usize = 8 + 8 + 1 + 1;

/// Which match and slot a ticket is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MatchClaim {
    /// The game backend's name for the match.
    pub match_id: u64,
    /// The player slot (0-based) the ticket's holder plays.
    pub slot: u8,
    /// Players of the match, 2..=[`MAX_RENDEZVOUS_PLAYERS`].
    pub players: u8,
}

/// Why a match claim cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    /// The players are out of range.
    #[error("players: {0} given, 2..={MAX_RENDEZVOUS_PLAYERS} allowed")]
    Players(u8),
    /// The slot is not below the players.
    #[error("slot {slot} is not below players {players}")]
    Slot {
        /// The slot given.
        slot: u8,
        /// The players given.
        players: u8,
    },
    /// The game's bytes do not fit after the claim.
    #[error("the game's user data is {0} bytes; {max} fit after the match claim", max = USER_DATA_SIZE - MATCH_CLAIM_SIZE)]
    UserData(usize),
}

impl MatchClaim {
    /// Checks the claim's fields.
    pub fn check(&self) -> Result<(), ClaimError> {
        if !(2..=MAX_RENDEZVOUS_PLAYERS as u8).contains(&self.players) {
            return Err(ClaimError::Players(self.players));
        }
        if self.slot >= self.players {
            return Err(ClaimError::Slot { slot: self.slot, players: self.players });
        }
        Ok(())
    }

    /// The user data of a ticket with this claim, then `game`'s bytes.
    pub fn user_data(&self, game: &[u8]) -> Result<Vec<u8>, ClaimError> {
        self.check()?;
        if game.len() > USER_DATA_SIZE - MATCH_CLAIM_SIZE {
            return Err(ClaimError::UserData(game.len()));
        }
        let mut out = Vec::with_capacity(MATCH_CLAIM_SIZE + game.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.match_id.to_le_bytes());
        out.push(self.slot);
        out.push(self.players);
        out.extend_from_slice(game);
        Ok(out)
    }

    /// The claim at the start of an opened ticket's user data, if it holds one that
    /// checks.
    pub fn from_user_data(user_data: &[u8; USER_DATA_SIZE]) -> Option<Self> {
        if &user_data[..8] != MAGIC {
            return None;
        }
        let claim = MatchClaim {
            match_id: u64::from_le_bytes(user_data[8..16].try_into().ok()?),
            slot: user_data[16],
            players: user_data[17],
        };
        claim.check().ok().map(|()| claim)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_reads_back_from_user_data_and_bad_ones_are_named() {
        let c = MatchClaim { match_id: 77, slot: 1, players: 2 };
        let mut ud = [0u8; USER_DATA_SIZE];
        let bytes = c.user_data(b"skin").unwrap();
        ud[..bytes.len()].copy_from_slice(&bytes);
        assert_eq!(MatchClaim::from_user_data(&ud), Some(c));
        assert_eq!(&ud[MATCH_CLAIM_SIZE..MATCH_CLAIM_SIZE + 4], b"skin");
        assert_eq!(MatchClaim { players: 1, ..c }.user_data(&[]), Err(ClaimError::Players(1)));
        assert_eq!(MatchClaim { players: 9, ..c }.user_data(&[]), Err(ClaimError::Players(9)));
        assert_eq!(MatchClaim { slot: 2, ..c }.user_data(&[]), Err(ClaimError::Slot { slot: 2, players: 2 }));
        assert_eq!(c.user_data(&[0; 239]), Err(ClaimError::UserData(239)));
        ud[17] = 1;
        assert_eq!(MatchClaim::from_user_data(&ud), None, "a claim that does not check is none");
        assert_eq!(MatchClaim::from_user_data(&[0; USER_DATA_SIZE]), None);
    }
}
