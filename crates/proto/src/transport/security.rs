//! What an endpoint asks of whoever connects to it, and what it shows when it connects.
//!
//! Every connection is encrypted unless both ends chose [`Security::InsecurePlaintext`].
//! Who may complete a handshake is the [`Admission`]: anyone (open: encrypted but not
//! authenticated, fine on a LAN or for a first test), holders of a match secret (P2P;
//! spectators may have a secret of their own), or holders of a connect token minted by
//! the game's backend (relay servers). The initiating side shows a [`Presented`]
//! credential: nothing, a secret, or a token. Nothing of a secret or of a token's key
//! ever goes on the wire; the client proves it holds one (`crypto.rs`).

use std::net::SocketAddr;

use super::ConfigError;
use super::credential::Credential;
use super::crypto::{KEY_SIZE, OPEN_PSK, Secret};
use super::token::ConnectToken;

/// How an endpoint protects its connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Security {
    /// Every packet after the handshake is encrypted and authenticated (ChaCha20-Poly1305
    /// with per-connection, per-direction keys from ephemeral X25519). The default.
    Encrypted {
        /// Who may connect to us.
        admission: Admission,
        /// What we present when we connect.
        presented: Presented,
    },
    /// Nothing is encrypted or authenticated beyond the connection salt: anyone on the
    /// path can read, forge and replay packets. For benchmarks and debugging only. Both
    /// ends must choose it; a mismatch is refused with a clear reason on both ends.
    InsecurePlaintext,
}

impl Default for Security {
    fn default() -> Self {
        Security::Encrypted { admission: Admission::default(), presented: Presented::Open }
    }
}

/// Who may complete a handshake with us.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Those who prove a secret. `players: None` is an open endpoint: anyone may connect
    /// (encrypted, unauthenticated). With `players` set, only holders of that secret or
    /// of `spectators` may.
    Secrets {
        /// The players' secret; None for an open endpoint.
        players: Option<Secret>,
        /// The spectators' secret, if spectators may connect.
        spectators: Option<Secret>,
    },
    /// Those who present a valid, unexpired connect token minted with this key for one
    /// of our addresses, one connection per token at a time.
    Tokens(TokenAdmission),
}

impl Default for Admission {
    fn default() -> Self {
        Admission::Secrets { players: None, spectators: None }
    }
}

/// A relay server's check of connect tokens.
///
/// Tokens expire in Unix time, which is not configuration: the endpoint's owner tells
/// the endpoint the wall clock as it goes ([`Endpoint::set_unix_time`]), and until it
/// has, or while the clock is unknown, every token is refused.
///
/// [`Endpoint::set_unix_time`]: super::Endpoint::set_unix_time
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenAdmission {
    /// The 32-byte key the backend mints tokens with.
    pub key: Secret,
    /// The addresses clients reach us at; a token must name one of them.
    pub public_addresses: Vec<SocketAddr>,
}

/// What we show when we connect.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Presented {
    /// Nothing: only an open endpoint lets us in.
    #[default]
    Open,
    /// A match secret (or a spectators' secret).
    Secret(Secret),
    /// A connect token from the game's backend.
    Token(Box<ConnectToken>),
}

impl Presented {
    /// The key we prove we hold.
    pub(crate) fn psk(&self) -> &[u8; KEY_SIZE] {
        match self {
            Presented::Open => &OPEN_PSK,
            Presented::Secret(s) => &s.0,
            Presented::Token(t) => &t.key.0,
        }
    }
}

impl Security {
    /// What the other end of a connection we initiate proves by completing it: that it
    /// knows the key we presented. A secret we present is the players' if it is our
    /// own match secret, else the spectators' (a spectator shows only that one).
    pub(crate) fn proven_by_responder(&self) -> Credential {
        let Security::Encrypted { admission, presented } = self else { return Credential::Open };
        match presented {
            Presented::Open => Credential::Open,
            Presented::Token(_) => Credential::TokenServer,
            Presented::Secret(s) => match admission {
                Admission::Secrets { players: Some(p), .. } if p == s => Credential::PlayerSecret,
                _ => Credential::SpectatorSecret,
            },
        }
    }

    pub(crate) fn validate(&self, protocol_id: u32) -> Result<(), ConfigError> {
        let Security::Encrypted { admission, presented } = self else { return Ok(()) };
        // A secret or key of 32 zero bytes is the open key everyone knows:
        // it is what a zero-filled config holds when the flag was set but the bytes
        // never copied in. Refused by name, never taken as "a secret is set".
        let zero = |s: &Secret| s.0 == OPEN_PSK;
        match admission {
            Admission::Secrets { players: Some(p), .. } if zero(p) => {
                return Err(ConfigError(
                    "match_secret is all zero bytes: that is the open key anyone knows; \
                     draw the secret from a cryptographic generator"
                        .into(),
                ));
            }
            Admission::Secrets { spectators: Some(sp), .. } if zero(sp) => {
                return Err(ConfigError(
                    "spectator_secret is all zero bytes: that is the open key anyone knows; \
                     draw the secret from a cryptographic generator"
                        .into(),
                ));
            }
            Admission::Secrets { players: Some(p), spectators: Some(sp) } if p == sp => {
                return Err(ConfigError(
                    "spectator_secret equals match_secret: a spectator would prove the players' secret and play; \
                     give spectators a secret of their own"
                        .into(),
                ));
            }
            Admission::Tokens(t) if zero(&t.key) => {
                return Err(ConfigError(
                    "connect_key is all zero bytes: anyone could mint tokens with it; \
                     make the key with `tickwire token key` or another cryptographic generator"
                        .into(),
                ));
            }
            _ => {}
        }
        if let Presented::Secret(s) = presented {
            if zero(s) {
                return Err(ConfigError(
                    "the secret this endpoint shows is all zero bytes: that is the open key anyone knows".into(),
                ));
            }
        }
        match admission {
            Admission::Secrets { players: None, spectators: Some(_) } => {
                return Err(ConfigError(
                    "spectator_secret is set without a match secret: the match would be open to anyone anyway".into(),
                ));
            }
            Admission::Tokens(t) if t.public_addresses.is_empty() => {
                return Err(ConfigError(
                    "a connect-token key needs the server's public address (tokens name the addresses they are for)"
                        .into(),
                ));
            }
            _ => {}
        }
        if let Presented::Token(t) = presented {
            if t.protocol_id != protocol_id {
                return Err(ConfigError(format!(
                    "the connect token is for protocol id {:#x}, the endpoint's protocol_id is {protocol_id:#x}",
                    t.protocol_id
                )));
            }
        }
        Ok(())
    }

    /// Whether this is [`Security::InsecurePlaintext`].
    pub fn is_plaintext(&self) -> bool {
        matches!(self, Security::InsecurePlaintext)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(players: Option<[u8; KEY_SIZE]>, spectators: Option<[u8; KEY_SIZE]>) -> Security {
        let admission = Admission::Secrets { players: players.map(Secret), spectators: spectators.map(Secret) };
        Security::Encrypted { admission, presented: Presented::Open }
    }

    /// 32 zero bytes are the open key everyone knows. A config
    /// whose flag says "secret" but whose bytes were never copied in is refused by the
    /// field's name, and so is a spectators' secret that is the players' (a spectator
    /// would play). Before, each of these was accepted.
    #[test]
    fn zero_and_duplicate_secrets_are_refused_by_name() {
        let zero = [0u8; KEY_SIZE];
        let cases = [
            (secrets(Some(zero), None), "match_secret is all zero"),
            (secrets(Some([1; KEY_SIZE]), Some(zero)), "spectator_secret is all zero"),
            (secrets(Some([1; KEY_SIZE]), Some([1; KEY_SIZE])), "spectator_secret equals match_secret"),
            (
                Security::Encrypted {
                    admission: Admission::Tokens(TokenAdmission {
                        key: Secret(zero),
                        public_addresses: vec!["127.0.0.1:1".parse().unwrap()],
                    }),
                    presented: Presented::Open,
                },
                "connect_key is all zero",
            ),
            (
                Security::Encrypted { admission: Admission::default(), presented: Presented::Secret(Secret(zero)) },
                "shows is all zero",
            ),
        ];
        for (security, want) in cases {
            let err = security.validate(7).expect_err(want);
            assert!(err.0.contains(want), "{want}: {}", err.0);
        }
        assert!(secrets(Some([1; KEY_SIZE]), Some([2; KEY_SIZE])).validate(7).is_ok());
        assert!(secrets(None, None).validate(7).is_ok(), "open is still allowed, on purpose");
    }
}
