//! tickwire's protocol, sans-IO: deterministic given a seed and the time passed in.
//!
//! No sockets, no threads, no system clock, no OS randomness: every call takes `now`
//! in microseconds, and every random choice comes from a seed the caller gives. A
//! whole match of minutes runs in milliseconds over the seeded link simulator
//! ([`SimNet`], [`LinkConditioner`]) and reproduces exactly. `tickwire-runtime` drives
//! the same state machines from a socket, a thread and the system clock.
//!
//! The modules are private; this root is the crate's surface, by layer:
//! - the sessions an engine drives, with their settings, events and figures: the
//!   rollback ones ([`P2pSession`], [`SyncTestSession`], [`SpectatorSession`],
//!   [`ReplaySession`]) and the relay ones ([`RelayServerSession`],
//!   [`RelayClientSession`]);
//! - the engine's side of every session: the contract every kind keeps
//!   ([`Session`]), the requests it hands the engine ([`Request`], [`Tick`]), and the
//!   game's shape ([`GameShape`]);
//! - the relay's synchronisation layer alone ([`RelayServer`], [`RelayClient`]) and the
//!   pieces it is made of, each usable alone: the server's per-client jitter buffer
//!   ([`JitterBuffer`]), the client's input-lead loop ([`InputLeadController`]) and the
//!   interpolation of a remote timeline ([`AdaptiveInterpolation`]);
//! - the clocks ([`Micros`], [`TickClock`]), the transport ([`Endpoint`], which a
//!   caller feeds datagrams and drains), and the simulator;
//! - NAT traversal: the reflexive address a STUN server reports
//!   ([`encode_binding_request`], [`decode_binding_response`]);
//! - [`wire`]: the byte formats, for tools that read or write them;
//! - `fuzzing`, with the `fuzzing` feature only: the few internals the fuzz targets
//!   (`tickwire-fuzzing`) reach; not API.

#![forbid(unsafe_code)]
#![warn(unreachable_pub, missing_docs)]

mod clock;
mod engine;
// Internals for the fuzz targets only (crates/fuzzing turns the feature on).
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod game;
mod jitter;
mod nat;
mod netsim;
mod relay;
mod rng;
mod rollback;
mod serve;
mod sim;
// Its items are `pub` for `fuzzing` to re-export; without the feature they reach no
// further than the crate.
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
mod stream;
mod sync;
mod tick;
mod transport;
pub mod wire;

// The engine's vocabulary and the game's shape.
pub use engine::{AdvanceStatus, InputStatus, Inputs, NetSession, Request, ServerEventAt, Session, Tick};
pub use game::{
    CheckedConfig, ConfigProblem, ConfigProblems, DEFAULT_MAX_FRAME_US, GameShape, MAX_INPUT_SIZE, MAX_MAX_FRAME_US,
    MAX_RELAY_PLAYERS, MAX_ROLLBACK_PLAYERS, MAX_TICK_RATE_HZ,
};

// Rollback sessions (P2P, synctest, spectator, replay).
pub use rollback::desync::DumpDecodeError;
pub use rollback::p2p::{
    MAX_INPUT_DELAY, MAX_PREDICTION, P2pStats, PeerSyncStats, p2p_inputs_fit, p2p_inputs_fit_in, p2p_timeouts_fit,
};
pub use rollback::{
    DesyncDump, Event as RollbackEvent, MatchEvent, P2pConfig, P2pMatch, P2pSession, PlayerKind, PredictionMode,
    Replay, ReplayError, ReplayRecorder, ReplaySession, RosterError, SessionError, SpectatorConfig, SpectatorMatch,
    SpectatorSession, SyncTestSession, SyncTestState, canonical_addr, dialable, fnv1a64,
};

// Relay sessions (server and client, with prediction and reconciliation).
pub use relay::input_delay::InputDelay;
pub use relay::join::SessionToken;
pub use relay::prediction::PredictorStats;
pub use relay::relay_client_session::{
    ClientSessionError, ClientSessionEvent, ClientSessionStats, RelayClientSession, RelayClientSessionConfig,
};
pub use relay::relay_server_session::{
    KickCause, RejectReason, RelayServerSession, RelayServerSessionConfig, ServerMode, ServerSessionError,
    ServerSessionEvent, ServerSessionStats,
};
pub use serve::claim::{SERVE_CLAIM_SIZE, SERVE_TICK_RATES, ServeClaim, ServeClaimError};
pub use serve::match_server::{
    ClaimRefusal, MatchEnd, MatchServer, MatchServerConfig, MatchServerEvent, MatchServerStats,
};

// The relay's synchronisation layer, and the jitter buffers and time sync it is made of.
pub use jitter::{
    JitterBuffer, JitterConfig, JitterStats, KickReason, LOSSY_SUBSTITUTE_RUN, LatePolicy, PushOutcome, Step, StepKind,
    UnderflowPolicy,
};
pub use relay::messages::PlayerStep;
pub use relay::relay_client::{RelayClient, RelayClientConfig, RelayClientError, RelayClientEvent, SyncStats};
pub use relay::relay_server::{
    AdmitError, RelayServer, RelayServerConfig, RelayServerEvent, RelayServerStats, StreamStats,
};
pub use relay::step_history::{StepPlayer, StepPlayers, StepView};
pub use sync::interp::{AdaptiveInterpolation, FixedRuleInterpolation, InterpConfig, RemoteTimeline};
pub use sync::redundancy::{MAX_COPIES, RedundancyConfig};
pub use sync::{InputLeadController, LeadConfig, LeadControl, ServerTally};

// Time.
pub use clock::{Clock, ManualClock, Micros};
pub use rng::Rng;
pub use tick::{TickClock, TickClockConfig, TickEvent};

// The transport: connections over datagrams.
/// Connect tokens: minting (a game backend), reading (a client) and opening (a server).
pub use transport::token;
pub use transport::{
    ACK_EVERY_UNRELIABLE, AddressText, Admission, AeadProvider, Binding, CHANNEL_RELIABLE, CHANNEL_SEQUENCED,
    CHANNEL_UNRELIABLE, COOKIE_LIFETIME_US, ChannelKind, ConfigError, ConnectionStats, Credential, DisconnectReason,
    Driver, Endpoint, EndpointConfig, EndpointStats, Event as NetEvent, KEY_SIZE, LossCounts, MAX_ACK_DELAY_US,
    MAX_CHANNELS, MAX_FRAMES_PER_DATAGRAM, MAX_UNFRAGMENTED, MAX_UNRELIABLE, NONCE_SIZE, PacketAead, PacketProtection,
    PeerId, PeerIdAllocator, PeerIdHasher, PeerLimits, PeerMap, Prefetch, Presented, Proven, ProvidedAead, REMOTE_PORT,
    RemoteId, SMALL_BUFFER, Secret, Security, SendError, TokenAdmission, TokenIdentity, Transport, UnreliableAcks,
    builtin_aead, max_unreliable_for, parse_address, peer_map,
};

// NAT traversal: the reflexive address a STUN server sees (RFC 8489 binding); the
// rendezvous and relay service, its tickets, and a peer's side (checks, paths).
pub use nat::{
    BINDING_REQUEST_SIZE, ClaimError, Claimed, HELLO_SIZE, MAGIC_COOKIE, MATCH_CLAIM_SIZE, MAX_HOSTS, MAX_PROBES,
    MAX_RENDEZVOUS_PLAYERS, MatchClaim, PEER_PORT, PeerPath, ProbeError, Probes, RELAY_HEADER_SIZE, RefusedReason,
    Rendezvous, RendezvousConfig, RendezvousStats, Route, StunError, TRANSACTION_ID_SIZE, Traversal, TraversalConfig,
    TraversalEvent, TraversalStats, canonical, decode_binding_response, encode_binding_request, peer_address,
    peer_slot, relay_header, relayed_payload,
};

// The link simulator and the simulated network.
pub use netsim::{
    DEFAULT_QUEUE_LIMIT_BYTES, DriftClock, JitterModel, LinkConditioner, LinkConfig, LinkStats, LossModel,
};
pub use sim::{EndpointProbe, NodeId, SimNet, Traffic};
