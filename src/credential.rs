//! Who a connection's peer is, as it proved in its handshake: the class of
//! the secret it proved, or the identity its connect token carries, which the game's
//! backend sealed (so a client cannot choose it). Events carry the class and the
//! client id; `tw_session_player_identity` gives a relay server's engine the whole of
//! it, the token's user data included.

use super::args::write_out;
use super::error::{Failure, tw_result};
use super::guard;
use super::session::{session_failure, tw_session, with_session};
use super::session_kind::SessionKind;
use tickwire_proto::token::USER_DATA_SIZE;
use tickwire_proto::{Credential, Proven};

/// What a connection's peer proved in its handshake (`tw_event_connected.credential`,
/// `tw_session_event_peer.credential`, `tw_session_event_relay.credential`,
/// `tw_player_identity.credential`). Roles follow it, never the address.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_credential {
    /// Nothing: insecure plaintext, or an open endpoint (encrypted, anyone may connect).
    Open = 0,
    /// The match's (players') secret.
    PlayerSecret = 1,
    /// The spectators' secret. A P2P peer never gives it a player's place.
    SpectatorSecret = 2,
    /// A connect token from the game's backend; `client_id` is the token's.
    ConnectToken = 3,
    /// Seen by a client that showed a connect token: the server opened it, so it
    /// holds the backend's key.
    TokenServer = 4,
}

/// The class and, for a connect token, the client id (0 otherwise).
pub(crate) fn c_proven(p: Proven) -> (u32, u64) {
    let (class, id) = match p {
        Proven::Open => (tw_credential::Open, 0),
        Proven::PlayerSecret => (tw_credential::PlayerSecret, 0),
        Proven::SpectatorSecret => (tw_credential::SpectatorSecret, 0),
        Proven::ConnectToken { client_id } => (tw_credential::ConnectToken, client_id),
        Proven::TokenServer => (tw_credential::TokenServer, 0),
    };
    (class as u32, id)
}

/// A relay player's identity (`tw_session_player_identity`). Fixed size, no pointers.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_player_identity {
    /// A `tw_credential`: what the player's connection proved.
    pub credential: u32,
    /// Must be ignored.
    pub reserved0: u32,
    /// `TW_CREDENTIAL_CONNECT_TOKEN`: the token's client id (the player's id in the
    /// game's backend, for example an account id); else 0.
    pub client_id: u64,
    /// `TW_CREDENTIAL_CONNECT_TOKEN`: the token's user data, zero-padded to 256 bytes;
    /// else all zero.
    // A literal, not USER_DATA_SIZE: cbindgen writes a foreign crate's constant by its
    // bare name, which no C file defines (the header did not compile). The assertion
    // below keeps the two equal.
    pub user_data: [u8; 256],
    /// Must be ignored.
    pub reserved: [u8; 32],
}

const _: () =
    assert!(USER_DATA_SIZE == 256 && USER_DATA_SIZE == super::security::TW_CONNECT_TOKEN_USER_DATA_SIZE as usize);

impl tw_player_identity {
    fn new(c: &Credential) -> Self {
        let (credential, client_id) = c_proven(c.proven());
        let mut out = tw_player_identity {
            credential,
            reserved0: 0,
            client_id,
            user_data: [0; USER_DATA_SIZE],
            reserved: [0; 32],
        };
        if let Credential::ConnectToken(t) = c {
            out.user_data = t.user_data;
        }
        out
    }
}

/// RELAY_SERVER: copies what the connection of `player` proved into `*out_identity`:
/// for a client admitted by a connect token, the token's `client_id` and `user_data`,
/// as the game's backend minted them (the client cannot change them); else the class
/// of the secret it proved. A game backend can decide who is who from it, for example
/// a ranked player's account id. The identity stays with the slot while it waits for
/// a dropped player; a player that comes back must prove the same credential.
///
/// Ownership: the library keeps no pointer passed here after the call; outputs are
/// caller memory, written only on success.
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_EMPTY` (the slot is free; `*out_identity`
/// untouched); `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT` (no such player);
/// `TW_RESULT_INVALID_STATE` (not RELAY_SERVER); `TW_RESULT_BUSY` (another call on the
/// session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `out_identity` must be NULL or valid for
/// writing a `tw_player_identity`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_player_identity(
    session: *mut tw_session,
    player: u32,
    out_identity: *mut tw_player_identity,
) -> tw_result {
    with_session("tw_session_player_identity", session, |s| {
        if out_identity.is_null() {
            return Err(Failure::null("out_identity"));
        }
        let SessionKind::RelayServer(k) = &mut s.kind else {
            return Err(s.kind.unavailable("player identities"));
        };
        let Some(c) = k.player_credential(player as usize).map_err(session_failure)? else {
            return Ok(tw_result::Empty);
        };
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { write_out(out_identity, tw_player_identity::new(&c)) };
        Ok(tw_result::Ok)
    })
}

/// Returns `sizeof(tw_player_identity)` as the library sees it (304). A binding
/// compares it with its own size of the struct.
///
/// Ownership: takes nothing; returns a plain value.
/// Thread-safety: may be called from any thread.
///
/// Returns the size in bytes; never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_player_identity_size() -> usize {
    guard::run_or("tw_player_identity_size", 0, size_of::<tw_player_identity>)
}
