//! Joining a relay game, mid-match or again after a drop: the two reliable messages
//! and the session token that proves a returning client is the player it claims.
//!
//! ```text
//! Hello    kind=3 | token [16] (all zero = a new player) | input_size u16 | max_players u16
//! Welcome  kind=4 | player u16 | token [16] | tick u32 | input_size u16 | max_players u16
//!          | report_interval u32 | state bytes
//! ```
//! `report_interval` is 0 from a server whose engine runs the game. A relay-only
//! server (no game code, [`super::hosted`]) sets it to its checksum interval: the
//! client reports its checksums at those ticks and answers the server's state asks.
//! Its state is empty when no client holds the match's state yet (the match starts
//! from the game's initial state).
//! Both go on the transport's reliable channel (a Welcome's state can be large; the
//! transport fragments it). The client says its input size and player count so that
//! a client built for another game is refused at once rather than misreading steps.
//!
//! The token is 128 random bits the server draws for each new player from its
//! cryptographic generator ([`SecretRng`], seeded with OS randomness by the runtime),
//! so that no number of tokens a player sees tells it another's (before, they came
//! from the simulator's xoshiro, whose state four tokens gave away). A client that
//! comes back (a new connection, maybe a new address) presents it to get its old
//! player slot, and the server also checks that the connection proved the same
//! credential that first claimed the slot. Tokens are compared in constant time.

use subtle::ConstantTimeEq;

use crate::engine::Tick;
use crate::transport::SecretRng;
use crate::wire::{DecodeError, Reader, Writer};

/// Message kind byte of a [`Hello`].
pub const KIND_HELLO: u8 = 3;
/// Message kind byte of a [`Welcome`].
pub const KIND_WELCOME: u8 = 4;
/// Encoded size of a Hello.
pub const HELLO_SIZE: usize = 21;
/// Encoded size of a Welcome without its state.
pub const WELCOME_HEAD_SIZE: usize = 31;
/// Bytes of a session token.
pub const SESSION_TOKEN_SIZE: usize = 16;

/// The proof that a relay client owns a player slot. Equality is constant-time, and
/// `Debug` does not print it.
#[derive(Clone, Copy, Eq)]
pub struct SessionToken(pub [u8; SESSION_TOKEN_SIZE]);

impl SessionToken {
    /// "A new player": no slot to return to.
    pub const NONE: SessionToken = SessionToken([0; SESSION_TOKEN_SIZE]);

    /// A fresh token (never [`SessionToken::NONE`]).
    pub(crate) fn generate(rng: &mut SecretRng) -> Self {
        loop {
            let mut t = [0u8; SESSION_TOKEN_SIZE];
            rng.fill(&mut t);
            if t != [0; SESSION_TOKEN_SIZE] {
                return SessionToken(t);
            }
        }
    }

    /// Whether this is [`SessionToken::NONE`] (a new player).
    pub fn is_none(&self) -> bool {
        *self == Self::NONE
    }
}

impl PartialEq for SessionToken {
    fn eq(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl std::fmt::Debug for SessionToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_none() { "SessionToken(none)" } else { "SessionToken(..)" })
    }
}

/// Client to server: who I am (or that I am new) and which game I speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// [`SessionToken::NONE`] for a new player, else the token of the player to return to.
    pub token: SessionToken,
    /// The client's input size in bytes; must match the server's.
    pub input_size: u16,
    /// The client's player count; must match the server's.
    pub max_players: u16,
}

/// Encodes `h` into `out` (cleared first).
pub fn encode_hello(out: &mut Vec<u8>, h: &Hello) {
    out.clear();
    let mut w = Writer::new(out);
    w.u8(KIND_HELLO);
    w.bytes(&h.token.0);
    w.u16(h.input_size);
    w.u16(h.max_players);
}

fn read_token(r: &mut Reader) -> Result<SessionToken, DecodeError> {
    Ok(SessionToken(r.bytes(SESSION_TOKEN_SIZE)?.try_into().expect("16 bytes")))
}

/// Decodes a Hello, refusing a wrong kind, a short message or trailing bytes.
pub fn decode_hello(data: &[u8]) -> Result<Hello, DecodeError> {
    let mut r = Reader::new(data);
    let kind = r.u8()?;
    if kind != KIND_HELLO {
        return Err(DecodeError::UnknownKind(kind));
    }
    let h = Hello { token: read_token(&mut r)?, input_size: r.u16()?, max_players: r.u16()? };
    if !r.is_empty() {
        return Err(DecodeError::Trailing);
    }
    Ok(h)
}

/// Server to client: your player, your token, and the game's state at the start of
/// `tick`; canonical steps from `tick` on follow on the unreliable channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Welcome<'a> {
    /// The player slot the client was given (or given back).
    pub player: u16,
    /// The token to present when reconnecting to this slot.
    pub token: SessionToken,
    /// The tick whose starting state `state` is; canonical steps follow from it.
    pub tick: Tick,
    /// The game's input size in bytes.
    pub input_size: u16,
    /// The game's player count.
    pub max_players: u16,
    /// 0 when the server's engine runs the game; else the server runs no game code,
    /// and the client reports its checksum every this many ticks and answers its
    /// state asks (`crate::wire::relay::StateAsk`).
    pub report_interval: u32,
    /// The engine's serialized state, in its own format (empty from a relay-only
    /// server before any client holds the match's state: the game's initial state).
    pub state: &'a [u8],
}

/// Encodes `w` into `out` (cleared first).
pub fn encode_welcome(out: &mut Vec<u8>, w: &Welcome<'_>) {
    out.clear();
    out.reserve(WELCOME_HEAD_SIZE + w.state.len());
    let mut wr = Writer::new(out);
    wr.u8(KIND_WELCOME);
    wr.u16(w.player);
    wr.bytes(&w.token.0);
    wr.u32(w.tick);
    wr.u16(w.input_size);
    wr.u16(w.max_players);
    wr.u32(w.report_interval);
    wr.bytes(w.state);
}

/// Decodes a Welcome; a player outside `0..max_players` or a zero token is refused.
pub fn decode_welcome(data: &[u8]) -> Result<Welcome<'_>, DecodeError> {
    let mut r = Reader::new(data);
    let kind = r.u8()?;
    if kind != KIND_WELCOME {
        return Err(DecodeError::UnknownKind(kind));
    }
    let player = r.u16()?;
    let token = read_token(&mut r)?;
    let tick = r.u32()?;
    let input_size = r.u16()?;
    let max_players = r.u16()?;
    let report_interval = r.u32()?;
    if token.is_none() || player >= max_players {
        return Err(DecodeError::BadLength);
    }
    let state = r.bytes(r.remaining())?;
    Ok(Welcome { player, token, tick, input_size, max_players, report_interval, state })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_and_welcome_round_trip_and_truncations_fail() {
        let mut b = Vec::new();
        let h = Hello { token: SessionToken([0xAB; 16]), input_size: 2, max_players: 8 };
        encode_hello(&mut b, &h);
        assert_eq!(b.len(), HELLO_SIZE);
        assert_eq!(decode_hello(&b), Ok(h));
        for n in 0..b.len() {
            assert!(decode_hello(&b[..n]).is_err());
        }
        b.push(0);
        assert_eq!(decode_hello(&b), Err(DecodeError::Trailing));

        let w = Welcome {
            player: 3,
            token: SessionToken([77; 16]),
            tick: 1234,
            input_size: 2,
            max_players: 8,
            report_interval: 30,
            state: b"state bytes",
        };
        encode_welcome(&mut b, &w);
        assert_eq!(b.len(), WELCOME_HEAD_SIZE + w.state.len());
        assert_eq!(decode_welcome(&b), Ok(w));
        for n in 0..WELCOME_HEAD_SIZE {
            assert!(decode_welcome(&b[..n]).is_err());
        }
        assert!(
            decode_hello(&b).is_err() && decode_welcome(&[KIND_HELLO; 30]).is_err(),
            "kinds are not interchangeable"
        );
    }

    #[test]
    fn welcome_refuses_a_player_outside_the_game_and_a_zero_token() {
        let mut b = Vec::new();
        let one = SessionToken([1; 16]);
        encode_welcome(
            &mut b,
            &Welcome { player: 8, token: one, tick: 0, input_size: 2, max_players: 8, report_interval: 0, state: &[] },
        );
        assert_eq!(decode_welcome(&b), Err(DecodeError::BadLength));
        let none = SessionToken::NONE;
        encode_welcome(
            &mut b,
            &Welcome { player: 0, token: none, tick: 0, input_size: 2, max_players: 8, report_interval: 0, state: &[] },
        );
        assert_eq!(decode_welcome(&b), Err(DecodeError::BadLength));
    }

    #[test]
    fn tokens_are_never_none_and_differ() {
        let mut rng = SecretRng::new(5, &[9; 32]);
        let a = SessionToken::generate(&mut rng);
        let b = SessionToken::generate(&mut rng);
        assert!(!a.is_none() && !b.is_none() && a != b);
        assert_eq!(format!("{a:?}"), "SessionToken(..)", "Debug never prints a token");
    }

    /// A Welcome has no length field to lie: its state is the rest of the message,
    /// borrowed, never copied or reserved by the decoder.
    #[test]
    fn a_welcome_state_is_the_rest_of_the_message_borrowed() {
        let mut b = Vec::new();
        let w = Welcome {
            player: 0,
            token: SessionToken([9; 16]),
            tick: u32::MAX,
            input_size: u16::MAX,
            max_players: u16::MAX,
            report_interval: u32::MAX,
            state: &[],
        };
        encode_welcome(&mut b, &w);
        b.extend_from_slice(&[0xAB; 100]);
        let d = decode_welcome(&b).unwrap();
        assert_eq!(d.state.len(), 100);
        assert!(std::ptr::eq(d.state.as_ptr(), b[WELCOME_HEAD_SIZE..].as_ptr()), "the state is borrowed");
        // No players at all: nobody can be player 0.
        encode_welcome(&mut b, &Welcome { max_players: 0, ..w });
        assert_eq!(decode_welcome(&b), Err(DecodeError::BadLength));
    }
}
