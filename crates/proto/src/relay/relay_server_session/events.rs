//! What a server session tells the engine: joins, drops and kicks, and refused connections.

use crate::jitter::KickReason;
use crate::transport::{DisconnectReason, PeerId, Proven};

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    /// The Hello did not decode.
    Malformed,
    /// Another input size or player count: a client for another game.
    WrongGame,
    /// A token no slot has (forged, or its slot timed out).
    BadToken,
    /// A slot's token, on a connection that did not prove the credential that first
    /// claimed the slot (another connect token's client id, or another secret's class).
    WrongCredential,
    /// Every slot is taken.
    Full,
    /// No Hello within the timeout.
    NoHello,
}

impl RejectReason {
    /// What the refused client is told, so that it knows whether trying again can
    /// help: a full server may free a slot (it retries with backoff); another game or
    /// a bad token (its slot is gone) will not change.
    pub(crate) fn told(self) -> DisconnectReason {
        match self {
            RejectReason::Full => DisconnectReason::ServerFull,
            RejectReason::WrongGame => DisconnectReason::VersionMismatch,
            RejectReason::Malformed => DisconnectReason::ProtocolError,
            RejectReason::BadToken | RejectReason::WrongCredential => DisconnectReason::AuthFailed,
            RejectReason::NoHello => DisconnectReason::Kicked,
        }
    }
}

/// Why a player was removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KickCause {
    /// Its jitter buffer overflowed or starved.
    Jitter(KickReason),
    /// It needed a step the server no longer keeps. No longer a kick: such a player
    /// gets a snapshot instead ([`ServerSessionEvent::PlayerCatchingUp`]).
    FellBehind,
    /// It kept asking for new snapshots far faster than it could be served (more than
    /// 16 at once, then more than one a second).
    ResyncFlood,
    /// It kept falling out of the server's step history although its catch-up
    /// snapshots reached it (it never acknowledges the steps it is sent): more than two
    /// catch-ups at once, then more than one per 30 s. An honest client needs one after
    /// a long stall of its link, and those needed while a snapshot is still on its way
    /// are not counted.
    CatchUpFlood,
    /// The engine removed it on purpose (`RelayServerSession::kick_player`), with its
    /// own `code`. Final: the slot is freed (`PlayerLeft` follows) and the client is
    /// told `DisconnectReason::KickedByEngine`, so it does not reconnect.
    Engine {
        /// The engine's own reason code.
        code: u32,
    },
}

/// What the server session tells the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerSessionEvent {
    /// A new player, in the steps from the next tick on. `proven`: what its
    /// connection proved (a connect token's client id, or a secret's class); the whole
    /// credential, with the token's user data, is
    /// [`RelayServerSession::player_credential`](super::RelayServerSession::player_credential).
    PlayerJoined {
        /// The new player's id.
        player: u32,
        /// Its connection.
        peer: PeerId,
        /// What its connection proved.
        proven: Proven,
    },
    /// A player came back with its token (or asked for a new snapshot), on a
    /// connection that proved the same credential as the one that first claimed the
    /// slot (`proven`).
    PlayerReconnected {
        /// The player id.
        player: u32,
        /// Its new connection.
        peer: PeerId,
        /// What that connection proved (the same as the slot's first).
        proven: Proven,
    },
    /// A player's connection ended (`reason`); its slot waits for it, unless it left
    /// on purpose (`DisconnectReason::Client`): then `PlayerLeft` follows at once.
    PlayerInterrupted {
        /// The player id.
        player: u32,
        /// Why the connection ended.
        reason: DisconnectReason,
    },
    /// A player's slot is free and its token void: it left on purpose, or it dropped
    /// and did not come back in time.
    PlayerLeft {
        /// The player id, now free.
        player: u32,
    },
    /// A player needed a step the server no longer keeps (far behind, or its link
    /// stalled for longer than the history): it is sent a snapshot and its steps from
    /// there. It stays in the game.
    PlayerCatchingUp {
        /// The player id.
        player: u32,
        /// Its connection.
        peer: PeerId,
    },
    /// A player was removed for `cause`. Its slot waits `reconnect_timeout_us` for it to
    /// come back with its token (its client retries by itself), as after a drop; but
    /// for [`KickCause::Engine`] it is freed at once (`PlayerLeft` follows).
    PlayerKicked {
        /// The player id.
        player: u32,
        /// The connection that was closed.
        peer: PeerId,
        /// Why it was removed.
        cause: KickCause,
    },
    /// A connection was refused as a player and is being closed.
    ConnectionRejected {
        /// The connection.
        peer: PeerId,
        /// Why it was refused.
        reason: RejectReason,
    },
}
