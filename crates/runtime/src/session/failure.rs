//! How a session call fails.

use crate::host_error::HostError;
use tickwire_proto::{ClientSessionError, ConfigProblems, ReplayError, RosterError, ServerSessionError, SessionError};

/// Why a session call failed. A failed call had no effect.
#[derive(Debug, thiserror::Error)]
pub enum SessionFailure {
    /// The settings are unusable: every bad field, by name.
    #[error("{0}")]
    Config(ConfigProblems),
    /// An argument is out of range or does not fit the session (player index, address,
    /// size).
    #[error("{0}")]
    Argument(String),
    /// The call is not valid in the session's current phase.
    #[error("{0}")]
    State(String),
    /// The host refused (socket, queue, network thread).
    #[error(transparent)]
    Host(#[from] HostError),
    /// The rollback core refused (unknown player, input size, unrequested tick). Its
    /// configuration problems come as [`SessionFailure::Config`].
    #[error(transparent)]
    Core(SessionError),
    /// A replay did not decode.
    #[error("replay: {0}")]
    Replay(#[from] ReplayError),
    /// Reading or writing a file failed.
    #[error("{context}: {source}")]
    Io {
        /// The operation and the path.
        context: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl From<ConfigProblems> for SessionFailure {
    fn from(p: ConfigProblems) -> Self {
        SessionFailure::Config(p)
    }
}

impl From<RosterError> for SessionFailure {
    fn from(e: RosterError) -> Self {
        match e.is_state() {
            true => SessionFailure::State(e.to_string()),
            false => SessionFailure::Argument(e.to_string()),
        }
    }
}

impl From<SessionError> for SessionFailure {
    fn from(e: SessionError) -> Self {
        match e {
            SessionError::Config(p) => SessionFailure::Config(p),
            other => SessionFailure::Core(other),
        }
    }
}

impl From<ServerSessionError> for SessionFailure {
    fn from(e: ServerSessionError) -> Self {
        match e {
            ServerSessionError::Config(p) => SessionFailure::Config(p),
            ServerSessionError::UnexpectedTick(_) | ServerSessionError::NoSuchPlayer(_) => {
                SessionFailure::Argument(e.to_string())
            }
            ServerSessionError::SlotFree(_) => SessionFailure::State(e.to_string()),
        }
    }
}

impl From<ClientSessionError> for SessionFailure {
    fn from(e: ClientSessionError) -> Self {
        match e {
            ClientSessionError::Config(p) => SessionFailure::Config(p),
            ClientSessionError::Send(s) => SessionFailure::State(format!("the transport refused: {s}")),
            _ => SessionFailure::Argument(e.to_string()),
        }
    }
}

pub(super) fn state(msg: impl Into<String>) -> SessionFailure {
    SessionFailure::State(msg.into())
}

pub(super) fn argument(msg: impl Into<String>) -> SessionFailure {
    SessionFailure::Argument(msg.into())
}
