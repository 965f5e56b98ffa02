//! What an endpoint asks of whoever connects to it, and what it shows when it connects.
//!
//! Every connection is encrypted unless both ends chose [`Security::InsecurePlaintext`].
//! An encrypted endpoint's packets are sealed with our AEAD unless both ends chose
//! [`PacketProtection::Carrier`]: over a carrier that authenticates the remote and
//! encrypts (Steam, EOS), the handshake runs whole and packets go without our tag.
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
use crate::wire::SecurityMode;

/// How an endpoint protects its connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Security {
    /// The handshake proves the admission's secret or token and agrees on keys
    /// (ephemeral X25519); then every packet is encrypted and authenticated
    /// (ChaCha20-Poly1305, per-connection and per-direction keys), unless `packets` says
    /// the carrier does it. The default.
    Encrypted {
        /// Who may connect to us.
        admission: Admission,
        /// What we present when we connect.
        presented: Presented,
        /// What protects packets after the handshake: our AEAD (the default), or the
        /// carrier. Both ends must choose the same.
        packets: PacketProtection,
    },
    /// Nothing is encrypted or authenticated beyond the connection salt: anyone on the
    /// path can read, forge and replay packets. For benchmarks and debugging only. Both
    /// ends must choose it; a mismatch is refused with a clear reason on both ends.
    InsecurePlaintext,
}

impl Default for Security {
    fn default() -> Self {
        Security::Encrypted {
            admission: Admission::default(),
            presented: Presented::Open,
            packets: PacketProtection::default(),
        }
    }
}

/// What protects an encrypted connection's packets once its handshake is done. The
/// handshake is the same for both: the cookie, the ephemeral keys, the proof of the
/// secret or token, the binding, the authenticated refusals; who may connect and what
/// the owner learns of them ([`Credential`]) do not depend on this choice.
///
/// Both ends must choose the same. The handshake carries the choice and the client's
/// proof and both keys cover it, so nobody on the path can make one end take the
/// other's; a mismatch is refused with [`SecurityMismatch`] on both ends and counted
/// (`EndpointStats::security_mismatch`), as plaintext against encrypted is.
///
/// [`SecurityMismatch`]: super::DisconnectReason::SecurityMismatch
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum PacketProtection {
    /// Every packet is sealed with ChaCha20-Poly1305 under the handshake's keys, 16
    /// bytes of tag each, and a replay window drops what was already opened. The
    /// default, over any transport.
    #[default]
    Aead,
    /// Packets carry no tag and are not encrypted by us: the transport must
    /// authenticate the remote and encrypt, as Steam's SteamNetworkingMessages and Epic
    /// Online Services P2P do (the platform proves the remote's Steam ID or
    /// ProductUserId, and encrypts). It must also deliver a datagram only from the peer
    /// it names: over such a carrier, nobody but the admitted peer can put a packet on
    /// the connection, which is what the AEAD otherwise ensures. Duplicates are still
    /// dropped by sequence number, as on a plaintext connection. Never over plain UDP:
    /// anyone on the path could then read, forge and replay packets.
    Carrier,
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
    /// What our handshakes ask for and what we accept of the other end's: the
    /// `security` byte of a request and a response, covered by the proof and the keys.
    pub(crate) fn mode(&self) -> SecurityMode {
        match self {
            Security::Encrypted { packets: PacketProtection::Aead, .. } => SecurityMode::Encrypted,
            Security::Encrypted { packets: PacketProtection::Carrier, .. } => SecurityMode::Carrier,
            Security::InsecurePlaintext => SecurityMode::InsecurePlaintext,
        }
    }

    /// Whether our connections seal their packets with the handshake's keys (and keep
    /// them past the handshake): only [`PacketProtection::Aead`].
    pub(crate) fn seals_packets(&self) -> bool {
        self.mode() == SecurityMode::Encrypted
    }

    /// What the other end of a connection we initiate proves by completing it: that it
    /// knows the key we presented. A secret we present is the players' if it is our
    /// own match secret, else the spectators' (a spectator shows only that one).
    pub(crate) fn proven_by_responder(&self) -> Credential {
        let Security::Encrypted { admission, presented, .. } = self else { return Credential::Open };
        match presented {
            Presented::Open => Credential::Open,
            Presented::Token(_) => Credential::TokenServer,
            Presented::Secret(s) => match admission {
                Admission::Secrets { players: Some(p), .. } if p == s => Credential::PlayerSecret,
                _ => Credential::SpectatorSecret,
            },
        }
    }

    /// The same checks whatever protects the packets: a carrier-protected endpoint
    /// admits by the same secrets and tokens.
    pub(crate) fn validate(&self, protocol_id: u32) -> Result<(), ConfigError> {
        let Security::Encrypted { admission, presented, packets: _ } = self else { return Ok(()) };
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
        Security::Encrypted { admission, presented: Presented::Open, packets: PacketProtection::Aead }
    }

    /// The same endpoint with carrier protection.
    fn carrier(s: Security) -> Security {
        match s {
            Security::Encrypted { admission, presented, .. } => {
                Security::Encrypted { admission, presented, packets: PacketProtection::Carrier }
            }
            plain => plain,
        }
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
                    packets: PacketProtection::Aead,
                },
                "connect_key is all zero",
            ),
            (
                Security::Encrypted {
                    admission: Admission::default(),
                    presented: Presented::Secret(Secret(zero)),
                    packets: PacketProtection::Aead,
                },
                "shows is all zero",
            ),
        ];
        // As strict when the carrier protects the packets: admission is the same.
        for (security, want) in cases {
            for security in [security.clone(), carrier(security)] {
                let err = security.validate(7).expect_err(want);
                assert!(err.0.contains(want), "{want}, {security:?}: {}", err.0);
            }
        }
        for s in [secrets(Some([1; KEY_SIZE]), Some([2; KEY_SIZE])), secrets(None, None)] {
            assert!(s.validate(7).is_ok(), "{s:?}");
            assert!(carrier(s).validate(7).is_ok(), "open is still allowed, on purpose");
        }
    }

    /// One choice, one byte: what the handshake carries, and whether packets are sealed.
    #[test]
    fn the_mode_follows_the_choice() {
        let aead = Security::default();
        let carrier = carrier(aead.clone());
        assert_eq!((aead.mode(), aead.seals_packets()), (SecurityMode::Encrypted, true));
        assert_eq!((carrier.mode(), carrier.seals_packets()), (SecurityMode::Carrier, false));
        let plain = Security::InsecurePlaintext;
        assert_eq!((plain.mode(), plain.seals_packets()), (SecurityMode::InsecurePlaintext, false));
        assert!(carrier.mode().proves() && aead.mode().proves() && !plain.mode().proves());
    }
}
