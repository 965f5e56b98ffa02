//! How a session call fails: [`SessionFailure`], with what was wrong as a typed value
//! ([`ArgumentError`], [`StateError`], the protocol cores' own errors). The text of a
//! failure is its `Display`; the C ABI turns a failure into a result code and that
//! text, and nothing before it does.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::{MAX_INITIAL_STATE, MAX_REPLAY_SIZE};
use crate::Target;
use crate::host_error::HostError;
use tickwire_proto::{
    ClientSessionError, ConfigProblems, MAX_INPUT_DELAY, Micros, ReplayError, RosterError, ServerSessionError,
    SessionError, Tick,
};

/// Why a session call failed. A failed call had no effect.
#[derive(Debug, thiserror::Error)]
pub enum SessionFailure {
    /// The settings are unusable: every bad field, by name.
    #[error("{0}")]
    Config(ConfigProblems),
    /// An argument is out of range or does not fit the session (player index, address,
    /// size).
    #[error(transparent)]
    Argument(#[from] ArgumentError),
    /// The call is not valid in the session's current phase.
    #[error(transparent)]
    State(#[from] StateError),
    /// The host refused (socket, queue, network thread).
    #[error(transparent)]
    Host(#[from] HostError),
    /// A P2P match's or a spectator's setup refused a player, a spectator or an
    /// address, or could not start (a player never added, no local player, nothing to
    /// watch): [`RosterError::is_state`] tells which.
    #[error(transparent)]
    Roster(#[from] RosterError),
    /// The rollback core refused (unknown player, input size, unrequested tick).
    #[error(transparent)]
    Core(SessionError),
    /// The relay server's core refused (an unrequested tick, a player that is no
    /// slot, a free slot).
    #[error(transparent)]
    RelayServer(ServerSessionError),
    /// The relay client's core refused (an input's size, a player, an unrequested
    /// tick), or its transport refused to dial the server.
    #[error("{}", ClientText(.0))]
    RelayClient(ClientSessionError),
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

// A core's refused settings are the settings' problems, whichever core found them.
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
            other => SessionFailure::RelayServer(other),
        }
    }
}

impl From<ClientSessionError> for SessionFailure {
    fn from(e: ClientSessionError) -> Self {
        match e {
            ClientSessionError::Config(p) => SessionFailure::Config(p),
            other => SessionFailure::RelayClient(other),
        }
    }
}

/// A relay client core's error as a session failure says it: a refused dial names the
/// transport.
struct ClientText<'a>(&'a ClientSessionError);

impl std::fmt::Display for ClientText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            ClientSessionError::Send(e) => write!(f, "the transport refused: {e}"),
            other => write!(f, "{other}"),
        }
    }
}

/// An argument that is out of range or does not fit the session.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentError {
    /// A player index at or past the session's player count.
    #[error("player {player} does not exist (the session has {players} players)")]
    NoSuchPlayer {
        /// The index given.
        player: usize,
        /// The session's player count.
        players: usize,
    },
    /// P2P: a rendezvous without the players' secret (the match secret that
    /// authenticates the peers' checks and keeps the relay from reading the match).
    #[error("a rendezvous needs the players' secret (the match secret) in the security settings")]
    RendezvousWithoutSecret,
    /// P2P: a rendezvous player past the players a rendezvous introduces.
    #[error("player {player}: a rendezvous introduces players 0..{}", tickwire_proto::MAX_RENDEZVOUS_PLAYERS)]
    RendezvousPlayer {
        /// The player given.
        player: usize,
    },
    /// A host name given with port 0.
    #[error("{role} {target}: the port is 0")]
    PortZero {
        /// What the address is for ("remote player address", "spectator address",
        /// "server address", "watched host address").
        role: &'static str,
        /// The name and port given.
        target: Target,
    },
    /// An IPv6 address for a socket bound to IPv4, which cannot send to it.
    #[error("{}", crate::socket::unreachable(.local, .addr))]
    Unreachable {
        /// The address given.
        addr: SocketAddr,
        /// The address the session's socket is bound to.
        local: SocketAddr,
    },
    /// An input (or prediction) whose length is not the game's input size.
    #[error("input of {got} bytes, expected {expected}")]
    InputSize {
        /// The length given.
        got: usize,
        /// The game's input size.
        expected: usize,
    },
    /// P2P: an input delay above [`MAX_INPUT_DELAY`].
    #[error("input_delay {delay} above {MAX_INPUT_DELAY}")]
    InputDelay {
        /// The delay given, in ticks.
        delay: u32,
    },
    /// P2P: a remote player's input delay is its own peer's to set.
    #[error("player {player} is remote: its peer sets its delay")]
    RemotePlayerDelay {
        /// The remote player.
        player: usize,
    },
    /// P2P: the silence notice must come before the drop (unless either is off).
    #[error(
        "notify_after_us ({notify_after_us} us) must be below disconnect_timeout_us ({disconnect_timeout_us} us), \
         unless either is 0 (off)"
    )]
    Timeouts {
        /// The notice's timeout given.
        notify_after_us: Micros,
        /// The drop's timeout given.
        disconnect_timeout_us: Micros,
    },
    /// P2P: a local player has no peer (its connection figures were asked for).
    #[error("player {player} is local: it has no peer")]
    LocalPlayer {
        /// The local player.
        player: usize,
    },
    /// P2P: a session message addressed to a player of this machine.
    #[error("player {player} plays on this machine: messages go to remote players' peers")]
    MessageToLocalPlayer {
        /// The local player.
        player: usize,
    },
    /// Relay client: an input for a player other than the slot the server gave.
    #[error("player {player} is not this relay client's player ({ours})")]
    NotOurPlayer {
        /// The player given.
        player: usize,
        /// The client's own slot.
        ours: usize,
    },
    /// Relay client: an input naming a player before the server has given a slot.
    #[error(
        "player {player}: this relay client has not been given a player slot yet (push its own input without \
         naming a slot)"
    )]
    NoSlotYet {
        /// The player given.
        player: usize,
    },
    /// Synctest: a state given for a tick with no DUMP_STATE request waiting.
    #[error("no DUMP_STATE request of tick {tick} is waiting for an answer")]
    NoDumpRequested {
        /// The tick given.
        tick: Tick,
    },
    /// P2P: an initial state that would not fit in a replay file
    /// ([`MAX_INITIAL_STATE`]).
    #[error(
        "initial state of {size} bytes; a replay file holds at most {MAX_REPLAY_SIZE} bytes, its {}-byte header \
         included",
        MAX_REPLAY_SIZE - MAX_INITIAL_STATE
    )]
    InitialStateTooLarge {
        /// The state's size in bytes.
        size: usize,
    },
    /// P2P: no memory for the copy of the initial state kept until the match starts.
    #[error("cannot allocate {size} bytes for the initial state")]
    InitialStateMemory {
        /// The state's size in bytes.
        size: usize,
    },
    /// Replay: the path names something other than a regular file.
    #[error("{} is not a regular file (a FIFO, a directory or a device); a replay must be one", .path.display())]
    NotAFile {
        /// The path given.
        path: PathBuf,
    },
    /// Replay: the file is larger than [`MAX_REPLAY_SIZE`].
    #[error("{} is {size} bytes, larger than a replay file may be ({MAX_REPLAY_SIZE} bytes)", .path.display())]
    ReplayFileTooLarge {
        /// The path given.
        path: PathBuf,
        /// The file's size in bytes (at least: a growing file is read up to one byte
        /// past the limit).
        size: u64,
    },
    /// Replay: no memory to read the file.
    #[error("cannot allocate {size} bytes to read {}", .path.display())]
    ReplayFileMemory {
        /// The path given.
        path: PathBuf,
        /// The file's size in bytes.
        size: u64,
    },
}

/// A call that is not valid in the session's current phase.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// A setup call after `start`.
    #[error("{operation} is only possible before the session is started")]
    AlreadyStarted {
        /// What was attempted ("starting", "adding a player", ...).
        operation: &'static str,
    },
    /// A call of the engine loop before `start`.
    #[error("{operation}: the session is not started (call start first)")]
    NotStarted {
        /// What was attempted ("advance", "pushing an input", ...).
        operation: &'static str,
    },
    /// `advance` while requests of the previous advance wait to be polled.
    #[error("{left} request(s) of the previous advance were not polled; poll until there are none before advancing")]
    RequestsNotPolled {
        /// Requests not polled yet.
        left: usize,
    },
    /// Started, but its core does not run (yet, or any more).
    #[error("the {session} is not running")]
    NotRunning {
        /// Which: "session" or "relay client".
        session: &'static str,
    },
    /// A save confirmed before the core runs: none was requested.
    #[error("no save was requested: the session is not running yet")]
    NoSaveRequested,
    /// A state given before the core runs: none was requested.
    #[error("no state was requested: the session is not running yet")]
    NoStateRequested,
    /// P2P: an input pushed before the match runs.
    #[error("the session is not running yet: push inputs for the ticks ticks_due reports")]
    InputBeforeRunning,
    /// P2P: a rendezvous player added before the rendezvous was set.
    #[error("set the rendezvous before adding players met through it")]
    NoRendezvous,
    /// P2P: a match met through a rendezvous has one local player per peer (the
    /// ticket's slot).
    #[error("a match met through a rendezvous needs exactly one local player (the ticket's slot); {count} were added")]
    RendezvousLocalPlayers {
        /// Local players added.
        count: usize,
    },
    /// P2P: a player that was not added (neither local nor remote yet).
    #[error("player {player} was not added")]
    PlayerNotAdded {
        /// The player given.
        player: usize,
    },
    /// P2P: a player dropped before the match runs.
    #[error("the match is not running yet: a player can be disconnected once SYNCHRONIZED")]
    DisconnectBeforeRunning,
    /// P2P: a player whose peer is already gone.
    #[error("player {player} is already disconnected")]
    AlreadyDisconnected {
        /// The player given.
        player: usize,
    },
    /// P2P: a message to a player whose peer is not connected.
    #[error("player {player}'s peer is not connected")]
    PeerNotConnected {
        /// The player given.
        player: usize,
    },
    /// P2P: recording asked for after the first tick.
    #[error("recording must start before the first tick")]
    RecordingTooLate,
    /// P2P: a replay saved before the match runs.
    #[error("nothing recorded yet: the session is not running")]
    NothingRecorded,
    /// P2P: a replay saved without a recording.
    #[error("no recording: call start_recording before the first tick")]
    NoRecording,
    /// Replay `start` without a replay.
    #[error("load a replay before starting")]
    NoReplay,
    /// Relay server: a kick before it runs.
    #[error("the server is not running yet: no player to kick")]
    NoPlayerToKick,
    /// Relay server: a message before it runs.
    #[error("the server is not running yet: start it first")]
    ServerNotRunning,
    /// Relay server: a message to a player whose client is not connected.
    #[error("player {player} is not connected")]
    PlayerNotConnected {
        /// The player given.
        player: usize,
    },
    /// Relay client `start` without the server's address.
    #[error("a relay client needs the server's address (set_server) before starting")]
    NoServer,
    /// Relay client: a new snapshot asked for before joining.
    #[error("the client has not joined yet: there is no snapshot to replace")]
    NotJoined,
    /// Relay client: a message before the server welcomed this client.
    #[error("not joined: messages go to the server once it has welcomed this client (JOINED; again after a reconnect)")]
    NotWelcomed,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        EngineLoop, HostConfig, P2pSession, P2pSettings, ReplayPlayer, ReplaySettings, SyncTest, SyncTestSettings,
    };
    use tickwire_proto::GameShape;

    fn game() -> GameShape {
        GameShape::new(2, 2)
    }

    #[test]
    fn a_synctest_names_the_operation_the_player_and_the_count() {
        let mut s = SyncTest::new(SyncTestSettings::new(game())).unwrap();
        let e = s.advance().unwrap_err();
        assert!(matches!(e, SessionFailure::State(StateError::NotStarted { operation: "advance" })), "{e:?}");
        assert_eq!(e.to_string(), "advance: the session is not started (call start first)");
        let e = s.add_input(0, &[0, 0]).unwrap_err();
        assert!(matches!(e, SessionFailure::State(StateError::NotStarted { operation: "pushing an input" })), "{e:?}");
        s.start().unwrap();
        let e = s.start().unwrap_err();
        assert!(matches!(e, SessionFailure::State(StateError::AlreadyStarted { operation: "starting" })), "{e:?}");
        let e = s.add_input(5, &[0, 0]).unwrap_err();
        assert!(matches!(e, SessionFailure::Argument(ArgumentError::NoSuchPlayer { player: 5, players: 2 })), "{e:?}");
        assert_eq!(e.to_string(), "player 5 does not exist (the session has 2 players)");
        let e = s.provide_state(9, &[1]).unwrap_err();
        assert!(matches!(e, SessionFailure::Argument(ArgumentError::NoDumpRequested { tick: 9 })), "{e:?}");
    }

    #[test]
    fn a_replay_player_says_what_it_lacks() {
        let mut r = ReplayPlayer::new(ReplaySettings { game: game() }).unwrap();
        let e = r.start().unwrap_err();
        assert!(matches!(e, SessionFailure::State(StateError::NoReplay)), "{e:?}");
        let recorded = tickwire_proto::ReplayRecorder::new(3, 2, 0, &[]);
        let e = r.load_replay(recorded.bytes()).unwrap_err();
        let shape = SessionError::ReplayShape { replay_players: 3, replay_input_size: 2, players: 2, input_size: 2 };
        assert!(matches!(&e, SessionFailure::Core(c) if *c == shape), "{e:?}");
        assert_eq!(
            e.to_string(),
            "the replay has 3 players with 2-byte inputs; the session is configured for 2 with 2"
        );
    }

    #[test]
    fn p2p_setup_failures_carry_the_player_and_the_address() {
        let mut p = P2pSession::new(P2pSettings::new(game(), HostConfig::new("127.0.0.1:0".parse().unwrap()))).unwrap();
        p.add_local_player(0).unwrap();
        let e = p.add_local_player(0).unwrap_err();
        assert!(matches!(e, SessionFailure::Roster(RosterError::AlreadyAdded(0))), "{e:?}");
        let nowhere: SocketAddr = "0.0.0.0:7000".parse().unwrap();
        let e = p.add_remote_player(1, nowhere).unwrap_err();
        assert!(
            matches!(e, SessionFailure::Roster(RosterError::NotConcrete { what: "remote player address", addr })
                if addr == nowhere),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "remote player address 0.0.0.0:7000: need a concrete IP and a non-zero port");
        let v6: SocketAddr = "[::1]:7000".parse().unwrap();
        let e = p.add_remote_player(1, v6).unwrap_err();
        assert!(matches!(e, SessionFailure::Argument(ArgumentError::Unreachable { addr, .. }) if addr == v6), "{e:?}");
        let e = p.set_player_input_delay(1, 1).unwrap_err();
        assert!(matches!(e, SessionFailure::State(StateError::PlayerNotAdded { player: 1 })), "{e:?}");
        let e = p.start().unwrap_err();
        assert!(matches!(e, SessionFailure::Roster(RosterError::NeverAdded(1))), "{e:?}");
        let e = p.disconnect_player(1).unwrap_err();
        assert!(matches!(e, SessionFailure::State(StateError::DisconnectBeforeRunning)), "{e:?}");
    }

    #[test]
    fn a_refused_dial_is_the_transports_typed_error() {
        let e = SessionFailure::from(ClientSessionError::Send(tickwire_proto::SendError::UnknownPeer(4)));
        assert!(matches!(e, SessionFailure::RelayClient(ClientSessionError::Send(_))), "{e:?}");
        assert_eq!(e.to_string(), "the transport refused: unknown or disconnected peer 4");
        let e = SessionFailure::from(ServerSessionError::SlotFree(3));
        assert_eq!(e.to_string(), "player 3's slot is free: nobody to kick");
    }
}
