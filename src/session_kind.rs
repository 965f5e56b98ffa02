//! The one enum behind a `tw_session` handle: which typed session it holds. The C
//! ABI has one handle for every mode; each export dispatches here, and a call that
//! the held session does not have is an `TW_RESULT_INVALID_STATE` naming the mode.

use super::error::{Failure, FfiResult, tw_result};
use super::session_config::ModeSettings;
use tickwire_runtime::{
    Networked, P2pSession, RelayClient, RelayServer, ReplayPlayer, SessionFailure, Spectator, SyncTest,
};

/// The typed session a `tw_session` holds. Built once per handle and never moved per
/// call (the handle is boxed), so the size difference between the variants costs
/// nothing a second box would save.
#[allow(clippy::large_enum_variant)]
pub(crate) enum SessionKind {
    P2p(P2pSession),
    SyncTest(SyncTest),
    Spectator(Spectator),
    Replay(ReplayPlayer),
    RelayServer(RelayServer),
    RelayClient(RelayClient),
}

/// Runs `$body` with `$s` bound to the typed session, whatever its kind (the calls
/// every kind has: the engine loop, `start`, `stats`).
macro_rules! each_kind {
    ($kind:expr, $s:ident => $body:expr) => {
        match $kind {
            SessionKind::P2p($s) => $body,
            SessionKind::SyncTest($s) => $body,
            SessionKind::Spectator($s) => $body,
            SessionKind::Replay($s) => $body,
            SessionKind::RelayServer($s) => $body,
            SessionKind::RelayClient($s) => $body,
        }
    };
}
pub(crate) use each_kind;

impl SessionKind {
    /// Builds the session `settings` ask for (networked kinds bind their socket).
    /// Builds the session; `failure` words a refusal (the settings' problems under the
    /// C config's field names).
    pub(crate) fn new(settings: ModeSettings, failure: impl Fn(SessionFailure) -> Failure) -> FfiResult<SessionKind> {
        Ok(match settings {
            ModeSettings::P2p(c) => SessionKind::P2p(P2pSession::new(c).map_err(failure)?),
            ModeSettings::SyncTest(c) => SessionKind::SyncTest(SyncTest::new(c).map_err(failure)?),
            ModeSettings::Spectator(c) => SessionKind::Spectator(Spectator::new(c).map_err(failure)?),
            ModeSettings::Replay(c) => SessionKind::Replay(ReplayPlayer::new(c).map_err(failure)?),
            ModeSettings::RelayServer(c) => SessionKind::RelayServer(RelayServer::new(c).map_err(failure)?),
            ModeSettings::RelayClient(c) => SessionKind::RelayClient(RelayClient::new(c).map_err(failure)?),
        })
    }

    /// The mode's name in messages.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            SessionKind::P2p(_) => "P2p",
            SessionKind::SyncTest(_) => "SyncTest",
            SessionKind::Spectator(_) => "Spectator",
            SessionKind::Replay(_) => "Replay",
            SessionKind::RelayServer(_) => "RelayServer",
            SessionKind::RelayClient(_) => "RelayClient",
        }
    }

    /// The socket side, for the kinds that have one.
    pub(crate) fn networked(&mut self) -> Option<&mut dyn Networked> {
        match self {
            SessionKind::P2p(s) => Some(s),
            SessionKind::Spectator(s) => Some(s),
            SessionKind::RelayServer(s) => Some(s),
            SessionKind::RelayClient(s) => Some(s),
            SessionKind::SyncTest(_) | SessionKind::Replay(_) => None,
        }
    }

    /// The failure of a call (`what`) that this kind does not have.
    pub(crate) fn unavailable(&self, what: &str) -> Failure {
        Failure::new(tw_result::InvalidState, format!("{what} is not available in {} mode", self.name()))
    }
}
