//! What a [`Session`](super::Session) is built from, and how its calls fail.

use crate::{HostConfig, HostError};
use tickwire_proto::relay::relay_client_session::{ClientSessionError, RelayClientSessionConfig};
use tickwire_proto::relay::relay_server_session::{RelayServerSessionConfig, ServerSessionError};
use tickwire_proto::rollback::{self, P2pConfig, ReplayError};

/// Which topology a session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// GGPO-style rollback between peers.
    P2p,
    /// Local determinism check: every tick is rolled back and compared.
    SyncTest,
    /// Watches a P2P match through one of its peers.
    Spectator,
    /// Plays a recorded replay back.
    Replay,
    /// The relay topology's server: the master clock, one jitter buffer per client,
    /// canonical steps to every client.
    RelayServer,
    /// A relay client with prediction and reconciliation.
    RelayClient,
}

impl Mode {
    /// True for the modes that own a socket.
    pub fn is_networked(self) -> bool {
        matches!(self, Mode::P2p | Mode::Spectator | Mode::RelayServer | Mode::RelayClient)
    }

    /// True for the relay topology's two modes.
    pub fn is_relay(self) -> bool {
        matches!(self, Mode::RelayServer | Mode::RelayClient)
    }
}

/// Settings of a [`Session`](super::Session).
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The topology.
    pub mode: Mode,
    /// Players in the match (every mode).
    pub players: usize,
    /// The rollback settings. `input_size` and `clock` (the tick rate) apply to every
    /// mode; the rest to P2P.
    pub p2p: P2pConfig,
    /// Synctest: ticks rolled back every tick (1..=32).
    pub check_distance: u32,
    /// Spectator: more than this many received ticks not yet played starts catching up.
    pub spectator_max_behind: u32,
    /// Spectator: ticks played per advance while catching up.
    pub spectator_catchup_speed: u32,
    /// P2P: spectators this peer may serve (only addresses registered with
    /// `add_spectator` are accepted).
    pub max_spectators: u32,
    /// The socket and transport (networked modes only). An `endpoint.max_incoming` of
    /// 0 becomes `players - 1 + max_spectators` in P2P mode and `2 * players` for a
    /// relay server (room for clients coming back before their old connection timed out).
    pub host: HostConfig,
    /// Relay server settings. Its input size, player count and tick length are the
    /// session's (`p2p.input_size`, `players`, `p2p.clock.tick_us`), and its token seed
    /// is always OS randomness.
    pub relay_server: RelayServerSessionConfig,
    /// Relay client settings. Its input size, player count and tick length are the
    /// session's, as for the server.
    pub relay_client: RelayClientSessionConfig,
}

impl SessionConfig {
    /// Defaults for `mode` with `players` players, bound to `host.bind`.
    pub fn new(mode: Mode, players: usize, host: HostConfig) -> Self {
        SessionConfig {
            mode,
            players,
            p2p: P2pConfig::default(),
            check_distance: 2,
            spectator_max_behind: 10,
            spectator_catchup_speed: 2,
            max_spectators: 4,
            host,
            relay_server: RelayServerSessionConfig::default(),
            relay_client: RelayClientSessionConfig::default(),
        }
    }
}

/// Why a session call failed. A failed call had no effect.
#[derive(Debug, thiserror::Error)]
pub enum SessionFailure {
    /// The configuration is unusable; the text says why.
    #[error("{0}")]
    Config(String),
    /// An argument is out of range or does not fit the session (player index, address,
    /// size, mode of the call).
    #[error("{0}")]
    Argument(String),
    /// The call is not valid in the session's current phase or mode.
    #[error("{0}")]
    State(String),
    /// The host refused (socket, queue, network thread).
    #[error(transparent)]
    Host(#[from] HostError),
    /// The rollback core refused (unknown player, input size, unrequested tick).
    #[error(transparent)]
    Core(#[from] rollback::SessionError),
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

impl From<ServerSessionError> for SessionFailure {
    fn from(e: ServerSessionError) -> Self {
        match e {
            ServerSessionError::InvalidConfig(m) => SessionFailure::Config(m),
            ServerSessionError::UnexpectedTick(_) => SessionFailure::Argument(e.to_string()),
        }
    }
}

impl From<ClientSessionError> for SessionFailure {
    fn from(e: ClientSessionError) -> Self {
        match e {
            ClientSessionError::InvalidConfig(m) => SessionFailure::Config(m),
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
