//! What the other end of a connection proved in its handshake: the owner
//! decides who is who from this, never from an address.
//!
//! An accepting endpoint learns the class of the secret the client proved, or the
//! identity its connect token carries (sealed by the game's backend, so the client
//! cannot choose it). An initiating endpoint learns that the other end knew the key it
//! presented: the class of that secret, or, for a connect token, that it is the server
//! the token was minted for.

use super::token::USER_DATA_SIZE;

/// Who the two ends of a connection are, in the owner's terms (a P2P session: the
/// lowest player index behind each peer), bound into the handshake's proof and keys.
/// With a secret shared by a group, a proof says only "one of the group": the binding
/// makes a handshake meant for one member fail at another (before, a man
/// in the middle turned A's connection "to B" into a keyed connection to C). The
/// initiator names both; the responder checks that `responder` is its own id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Binding {
    /// The initiator's id.
    pub initiator: u32,
    /// The responder's id.
    pub responder: u32,
}

/// What a connection's peer proved. Carried by [`super::Event::Connected`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// Nothing: insecure plaintext, or an open endpoint (encrypted, but anyone may
    /// connect).
    Open,
    /// The match's (players') secret.
    PlayerSecret,
    /// The spectators' secret.
    SpectatorSecret,
    /// A connect token minted by the game's backend, and what it says of the client.
    ConnectToken(Box<TokenIdentity>),
    /// Seen by a client that presented a connect token: the server opened it, so it
    /// holds the backend's key.
    TokenServer,
}

/// Who the game's backend says a client is: read from the sealed part of its connect
/// token, which only the backend and the server can open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenIdentity {
    /// The player's id in the backend (an account id, for example).
    pub client_id: u64,
    /// The backend's data for the server, zero-padded.
    pub user_data: [u8; USER_DATA_SIZE],
}

/// A credential in short, without the token's user data: its class and, for a
/// connect token, the client id. Events carry this one (it is `Copy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Proven {
    /// See [`Credential::Open`].
    Open,
    /// See [`Credential::PlayerSecret`].
    PlayerSecret,
    /// See [`Credential::SpectatorSecret`].
    SpectatorSecret,
    /// See [`Credential::ConnectToken`].
    ConnectToken {
        /// The client id the token names.
        client_id: u64,
    },
    /// See [`Credential::TokenServer`].
    TokenServer,
}

impl Proven {
    /// The connect token's client id, for a client admitted by a token.
    pub fn client_id(&self) -> Option<u64> {
        match self {
            Proven::ConnectToken { client_id } => Some(*client_id),
            _ => None,
        }
    }
}

impl Credential {
    /// The short form (class and client id).
    pub fn proven(&self) -> Proven {
        match self {
            Credential::Open => Proven::Open,
            Credential::PlayerSecret => Proven::PlayerSecret,
            Credential::SpectatorSecret => Proven::SpectatorSecret,
            Credential::ConnectToken(t) => Proven::ConnectToken { client_id: t.client_id },
            Credential::TokenServer => Proven::TokenServer,
        }
    }

    /// The connect token's client id, for a client admitted by a token.
    pub fn client_id(&self) -> Option<u64> {
        match self {
            Credential::ConnectToken(t) => Some(t.client_id),
            _ => None,
        }
    }
}
