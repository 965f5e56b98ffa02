//! `tw_session_event`: the fixed-size event `tw_session_poll_event` copies out.

use std::ffi::c_char;
use std::mem::size_of;

use super::credential::c_proven;
use super::error::copy_c_string;
use super::event::tw_disconnect_reason;
use super::guard;
use super::rendezvous::{path_event, refusal, tw_session_event_path, tw_session_event_refusal};
use tickwire_proto::{
    ClientSessionEvent, KickCause, KickReason, Proven, RejectReason, RollbackEvent as Event, ServerSessionEvent,
};
use tickwire_runtime::SessionEvent;

/// `tw_session_event_peer.player` when no player is behind the connection (a spectator,
/// the watched host, a refused connection).
pub const TW_NO_PLAYER: u32 = 0xFFFF_FFFF;

/// What happened (`tw_session_event.kind`). Events inform; the simulation stays
/// correct whether or not the engine reacts.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_session_event_kind {
    /// Never written by the library.
    None = 0,
    /// Every peer has been heard from; ticks start being due. No data. SPECTATOR: its
    /// starting point arrived (the host's snapshot, or the inputs from tick 0). RELAY_CLIENT:
    /// caught up with the server after joining; from now on the engine sees predicted
    /// ticks (`data.tick.tick` is the authoritative tick).
    Synchronized = 1,
    /// A connection is up: a remote player's peer, a spectator or the watched host
    /// (`data.peer`).
    PeerConnected = 2,
    /// Nothing heard from `peer` for `disconnect_notify_ms` (`data.peer`,
    /// `disconnect_in_us` says when it will be dropped).
    PeerInterrupted = 3,
    /// An interrupted peer was heard again (`data.peer`).
    PeerResumed = 4,
    /// The session gave up on `peer`, or its connection closed (`data.peer`).
    PeerDisconnected = 5,
    /// A player's inputs count as disconnected from `data.player.tick` on; every peer
    /// agrees on the tick and re-simulates from it (`data.player`). `peer`: the remote
    /// peer whose proposal set the tick, 0 when it was this side's own decision (its
    /// connection to the player's peer ended). P2P takes a third player's
    /// disconnection from a peer only with evidence: this side lost that player too, or
    /// a majority of the live peers propose it (a lie about a live player changes
    /// nothing; `tw_session_disconnect_player` in a match of three or more peers needs
    /// the others to agree too).
    PlayerDisconnected = 6,
    /// The prediction window is full at `data.tick.tick`, waiting for `peer`'s inputs
    /// (P2P), or for the server's canonical steps (RELAY_CLIENT, `peer` is the server):
    /// `tw_session_advance` answers `TW_RESULT_WINDOW_FULL` until they come. Once per
    /// stall.
    PredictionWindowFull = 7,
    /// A rollback needed a state older than the ring holds (`data.tick.tick`):
    /// consistency can no longer be guaranteed.
    RollbackTooFar = 8,
    /// The checksums of a confirmed tick differ from `peer`'s (`data.desync`): once per
    /// check tick and peer (every later check tick that still differs is reported too;
    /// only the first is dumped).
    /// RELAY_CLIENT: its authoritative state at the start of `data.desync.tick` differs
    /// from the server's (`peer` is the server); `tw_session_request_snapshot` recovers.
    Desync = 9,
    /// A desync dump is ready: `tw_session_take_desync_dump` or
    /// `tw_session_write_desync_dump` (`data.tick.tick` is the desync's tick).
    DesyncDumpReady = 10,
    /// SYNCTEST: re-simulating a tick gave another checksum (`data.synctest_mismatch`).
    /// Two DUMP_STATE requests of that tick follow (the saved state, then the
    /// resimulated one; answer each with `tw_session_provide_state`), then
    /// SYNCTEST_STATES_READY.
    SynctestMismatch = 11,
    /// A spectator (`peer`) fell too far behind and was dropped.
    SpectatorDropped = 12,
    /// A connection from an address nobody registered was refused and closed (`peer`).
    /// RELAY_SERVER: a client was refused (`data.rejected.reason`).
    ConnectionRejected = 13,
    /// The network thread died, or (P2P, SPECTATOR) a peer's host name gave no address
    /// (`data.fatal` says which): destroy the session.
    Fatal = 14,
    /// RELAY_SERVER and RELAY_CLIENT: a player is in the canonical steps from
    /// `data.relay.tick` on (`data.relay.player`). Server: a new client took a free
    /// slot (`peer` is its connection). Client: another player appeared; a client that
    /// joins a match in progress is told of every player already there (once, at the
    /// tick of its snapshot; a resync does not repeat them), never of itself (JOINED).
    PlayerJoined = 15,
    /// RELAY_SERVER: a player came back on a new connection with its token and has its
    /// old slot again (`data.relay`; `peer` is the new connection). A snapshot for it
    /// is asked for with a DUMP_STATE request.
    PlayerReconnected = 16,
    /// RELAY_SERVER and RELAY_CLIENT: a player is gone from the canonical steps from
    /// `data.relay.tick` on. Server: its connection ended (`data.relay.reason` is a
    /// `tw_disconnect_reason`); its slot waits `slot_timeout_ms` for it, unless the
    /// client left on purpose (reason `CLIENT`: it destroyed its session): then
    /// PLAYER_SLOT_FREED follows at once.
    PlayerLeft = 17,
    /// RELAY_SERVER: a player's slot is free and its token void (`data.relay.player`):
    /// it left on purpose, or it dropped and did not come back within
    /// `slot_timeout_ms`.
    PlayerSlotFreed = 18,
    /// RELAY_SERVER: a player was removed and its connection closed
    /// (`data.relay.reason` is a `tw_kick_reason`, `peer` its connection). Its slot
    /// waits `slot_timeout_ms` for it, as after a drop: its client reconnects by itself
    /// with its token (PLAYER_RECONNECTED), or PLAYER_SLOT_FREED follows. Reason
    /// `TW_KICK_REASON_ENGINE` (`tw_session_kick_player`, its code in
    /// `data.relay.code`) is final: PLAYER_SLOT_FREED follows at once and the client,
    /// told `TW_DISCONNECT_REASON_KICKED_BY_ENGINE`, does not come back.
    PlayerKicked = 19,
    /// RELAY_CLIENT: the server's snapshot arrived: this client is player
    /// `data.relay.player` from tick `data.relay.tick` on (`data.relay.reconnect`:
    /// back in its old slot after a drop). The advance that raised it handed out the
    /// RESTORE request of that tick; the catch-up follows, then SYNCHRONIZED.
    Joined = 20,
    /// RELAY_CLIENT: the connection to the server dropped (`data.relay.reason`: a
    /// timeout, a full server, a broken message, or a kick of a client that held a
    /// slot); the client reconnects by itself within `reconnect_window_ms` (JOINED with
    /// `reconnect` set when it is back).
    Reconnecting = 21,
    /// RELAY_CLIENT: the predicted timeline was dropped at `data.relay.tick` and a
    /// new snapshot asked for (after `tw_session_request_snapshot`, or when steps it
    /// needed never came); JOINED follows.
    Resyncing = 22,
    /// RELAY_CLIENT: the connection to the server is gone for good
    /// (`data.relay.reason`, a `tw_disconnect_reason`): no more ticks
    /// (`tw_session_ticks_due` gives 0, `tw_session_advance` answers
    /// `TW_RESULT_FINISHED`); destroy the session.
    ServerLost = 23,
    /// P2P: the confirmed tick stood still for `progress_timeout_ms`, or advanced at
    /// less than half the tick rate for twice that, although messages still flow (an
    /// announced loading stall is charged to the peer's `loading_grace_ms` first);
    /// `peer` is the
    /// connection whose inputs hold it back (0: this side's own local inputs),
    /// `data.tick.tick` the first unconfirmed tick. A remote peer is dropped right after
    /// (PEER_DISCONNECTED, reason NO_PROGRESS).
    NoProgress = 24,
    /// RELAY_SERVER: player `data.relay.player` needed a canonical step older than
    /// `step_history` (it fell far behind, or its link stalled for that long). It is
    /// not kicked: it is sent a snapshot of a coming tick (a DUMP_STATE request) and
    /// the steps from there; its client sees RESYNCING, then JOINED and SYNCHRONIZED.
    PlayerCatchingUp = 25,
    /// P2P, RELAY_SERVER and RELAY_CLIENT: a message sent with
    /// `tw_session_send_message` arrived from the member on `peer` (`data.message`):
    /// copy it with `tw_session_read_message` before polling again.
    Message = 26,
    /// P2P, before the match runs: progress with one remote peer (`data.progress`;
    /// `peer` is its connection, 0 while this side waits for it to dial). Raised for
    /// every remote peer at `tw_session_start` (`step` 0: connecting), and again when
    /// its connection is up (`step` 1: connected, waiting for its first message; after
    /// PEER_CONNECTED). A loading screen's "synchronizing with player P".
    SynchronizingWithPeer = 27,
    /// P2P, before the match runs: this side has heard from the remote peer of
    /// `data.progress.player` (`peer`): `data.progress.synchronized` of
    /// `data.progress.total` remote peers are synchronized now. SYNCHRONIZED follows
    /// once all are (or the others are dropped).
    SynchronizedWithPeer = 28,
    /// SYNCTEST: both states of a mismatch at `data.tick.tick` are in hand, the saved
    /// one and the resimulated one: take them with `tw_session_take_synctest_state`
    /// and diff them (GGPO's `log_game_state`). One pair is held at a time; once both
    /// are taken the next mismatch is captured.
    SynctestStatesReady = 29,
    /// RELAY_CLIENT: the input delay in force changed (`data.input_delay`): the part
    /// of the round trip beyond `max_prediction` shows as input delay (`spill`), or a
    /// delay from `input_delay_mode` changed. Raise `max_prediction` to hide more of a
    /// long round trip by prediction instead. At most once a second.
    InputDelayChanged = 30,
    /// P2P: a majority of the live remote peers propose that local player
    /// `data.player.player` disconnected from `data.player.tick` (they lost this peer,
    /// or dropped it): the match goes on without this side, which would play alone from
    /// here. Raised once per local player.
    RemovedByPeers = 31,
    /// P2P: the remote peer `peer` proposes that player `data.player.player`
    /// disconnected from `data.player.tick`, but this side still hears that player (or
    /// it is this side's own) and no majority agrees: the proposal is held, not taken,
    /// and not passed on. A lie, or a link that failed only between those two peers;
    /// `peer` is named, not dropped. Once per proposer and player.
    ProposalRefused = 32,
    /// P2P: player `data.player.player`'s inputs reached the peers differently by check
    /// tick `data.player.tick`: its peer sent different peers different inputs (or a
    /// peer misreports what it got). With a strict majority of the other peers agreeing
    /// (four peers or more against one liar), the majority's inputs are the player's
    /// for everyone and no DESYNC follows between the honest peers; `peer` is then the
    /// peer this side takes the player's inputs from, having received others (it
    /// resimulated), or 0 if this side had the majority's. Without a majority (three
    /// peers), DESYNC follows with the player as `culprit`. Once per player.
    InputsDisagree = 33,
    /// P2P with a rendezvous (`tw_session_set_rendezvous`): the path to remote player
    /// `data.path.player` changed (`data.path`): RELAYED as soon as the rendezvous
    /// introduces its peer, DIRECT once a connectivity check succeeds (`address` is the
    /// peer's; again when its NAT maps it anew), back to RELAYED (`address` is the
    /// relay's) when a direct path stops answering for 1 s. The connection and the
    /// match go on through every change.
    PathChanged = 34,
    /// P2P with a rendezvous: the rendezvous refused this side's ticket
    /// (`data.refusal.reason`). Advisory (a refusal is not authenticated): the session
    /// keeps trying; once per reason in a row.
    RendezvousRefused = 35,
}

/// Why a relay server removed a player (`tw_session_event_relay.reason` of
/// PLAYER_KICKED).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_kick_reason {
    /// Its input queue passed `jitter_hard_cap` (far ahead, or flooding).
    Overflow = 1,
    /// No input for `jitter_max_starved_ticks` ticks in a row (it cannot keep up).
    Starved = 2,
    /// No longer raised: a player that needs a canonical step older than
    /// `step_history` is sent a snapshot instead (PLAYER_CATCHING_UP). The value stays
    /// reserved.
    FellBehind = 3,
    /// It kept asking for new snapshots far faster than it could be served: more than
    /// 16 at once, then more than one a second (an honest client asks once per desync).
    ResyncFlood = 4,
    /// The engine kicked it (`tw_session_kick_player`); `data.relay.code` is the
    /// engine's `reason_code`. Final: the slot is freed (PLAYER_SLOT_FREED follows).
    Engine = 5,
    /// It kept falling out of the step history although the catch-up snapshots reached
    /// it (it never acknowledges its steps): more than two at once, then more than one
    /// per 30 s (an honest client needs one after a long stall of its link).
    CatchUpFlood = 6,
}

/// Why a connection was refused (`tw_session_event_rejected.reason`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_reject_reason {
    /// P2P and SPECTATOR: nobody registered the connection's address.
    UnexpectedAddress = 0,
    /// RELAY_SERVER: its Hello did not decode.
    Malformed = 1,
    /// RELAY_SERVER: a client for another game (another input size or player count).
    WrongGame = 2,
    /// RELAY_SERVER: a token no slot has (forged, or its slot was freed). The client
    /// is told `TW_DISCONNECT_REASON_AUTH_FAILED` and does not try again.
    BadToken = 3,
    /// RELAY_SERVER: every slot is taken.
    Full = 4,
    /// RELAY_SERVER: no Hello within `hello_timeout_ms`.
    NoHello = 5,
    /// RELAY_SERVER: a slot's session token, on a connection that did not prove the
    /// credential that first claimed the slot (another connect token's client id, or
    /// another secret's class): a leaked token is worthless to another player. The
    /// client is told `TW_DISCONNECT_REASON_AUTH_FAILED`.
    WrongCredential = 6,
}

/// PEER_CONNECTED, PEER_INTERRUPTED, PEER_RESUMED, PEER_DISCONNECTED.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_peer {
    /// The lowest player index behind the connection, or `TW_NO_PLAYER`.
    pub player: u32,
    /// PEER_DISCONNECTED: why, a `tw_disconnect_reason` (`TIMEOUT`: silence, or no
    /// tick confirmed for the disconnect timeout; `PROTOCOL_ERROR`: its messages
    /// contradicted what this side knows, and its connection was closed; otherwise
    /// how the connection closed). Else 0. (Named `reserved0` before 0.2.)
    pub reason: u32,
    /// PEER_INTERRUPTED: microseconds of further silence before the peer is dropped;
    /// `UINT64_MAX` when `disconnect_timeout_ms` is 0 (never dropped).
    pub disconnect_in_us: u64,
    /// PEER_CONNECTED: a `tw_credential`, what the connection proved (a P2P peer's
    /// role follows it: a spectators' secret never takes a player's place); else 0.
    pub credential: u32,
    /// Must be ignored.
    pub reserved0: u32,
}

/// PLAYER_DISCONNECTED.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_player {
    /// The player index.
    pub player: u32,
    /// First tick simulated with a disconnected input. A later event for the same
    /// player with an earlier tick supersedes this one.
    pub tick: u32,
}

/// PREDICTION_WINDOW_FULL, ROLLBACK_TOO_FAR, DESYNC_DUMP_READY.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_tick {
    /// The tick concerned.
    pub tick: u32,
}

/// DESYNC.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_desync {
    /// The confirmed tick whose checksums differ.
    pub tick: u32,
    /// P2P: the player whose peer sent different peers different inputs, plus one (0:
    /// none found). Checksum reports carry a digest of the inputs each peer received
    /// from each player; where two peers' digests of one player differ, that player's
    /// peer equivocated, and the desync is its, not `peer`'s. (Named `reserved0`, and
    /// always zero, before.)
    pub culprit: u32,
    /// This peer's checksum.
    pub local_checksum: u64,
    /// The other peer's checksum.
    pub remote_checksum: u64,
}

/// SYNCTEST_MISMATCH.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_mismatch {
    /// The tick whose starting state differs.
    pub tick: u32,
    /// Zero.
    pub reserved0: u32,
    /// Checksum of the first simulation.
    pub expected_checksum: u64,
    /// Checksum after the rollback.
    pub actual_checksum: u64,
}

/// The relay events: PLAYER_JOINED, PLAYER_RECONNECTED, PLAYER_LEFT,
/// PLAYER_SLOT_FREED, PLAYER_KICKED, JOINED, RECONNECTING, RESYNCING, SERVER_LOST.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_relay {
    /// The player slot concerned (JOINED: this client's), or `TW_NO_PLAYER`
    /// (RECONNECTING, RESYNCING and SERVER_LOST).
    pub player: u32,
    /// The tick concerned: the first tick with (joins) or without (departures) the
    /// player; RESYNCING: the authoritative tick dropped; otherwise the next tick.
    pub tick: u32,
    /// PLAYER_LEFT (server), RECONNECTING, SERVER_LOST: a `tw_disconnect_reason`;
    /// PLAYER_KICKED: a `tw_kick_reason`; else 0.
    pub reason: u32,
    /// JOINED: 1 if this is the client's old slot, back after a dropped connection;
    /// else 0.
    pub reconnect: u32,
    /// PLAYER_KICKED with reason `TW_KICK_REASON_ENGINE`: the `reason_code` given to
    /// `tw_session_kick_player` (it stays on the server: the client sees only
    /// `TW_DISCONNECT_REASON_KICKED_BY_ENGINE`); else 0.
    pub code: u32,
    /// PLAYER_JOINED, PLAYER_RECONNECTED (server): a `tw_credential`, what the
    /// player's connection proved; a returning player proved the same as the one that
    /// first claimed the slot. Else 0.
    pub credential: u32,
    /// PLAYER_JOINED, PLAYER_RECONNECTED with `TW_CREDENTIAL_CONNECT_TOKEN`: the
    /// token's client id, as the game's backend minted it (its user data:
    /// `tw_session_player_identity`). Else 0.
    pub client_id: u64,
}

/// CONNECTION_REJECTED.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_rejected {
    /// A `tw_reject_reason`.
    pub reason: u32,
}

/// MESSAGE.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_message {
    /// The sender's lowest player index (P2P: a player of the sending peer;
    /// RELAY_SERVER: the client's slot), or `TW_NO_PLAYER` when a relay server sent it.
    /// Pass it to `tw_session_send_message` to answer (a relay client answers with
    /// `TW_SESSION_MESSAGE_TARGET_ALL`).
    pub player: u32,
    /// Payload size in bytes, at most `TW_SESSION_MESSAGE_MAX_SIZE`;
    /// `tw_session_read_message` copies the payload.
    pub size: u32,
}

/// SYNCHRONIZING_WITH_PEER, SYNCHRONIZED_WITH_PEER: a P2P session's connection
/// progress, like GGPO's `GGPO_EVENTCODE_SYNCHRONIZING_WITH_PEER` and
/// `GGPO_EVENTCODE_SYNCHRONIZED_WITH_PEER`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_progress {
    /// The lowest player index behind the remote peer.
    pub player: u32,
    /// SYNCHRONIZING_WITH_PEER: 0 (connecting) or 1 (connected, waiting for its first
    /// message). SYNCHRONIZED_WITH_PEER: 2.
    pub step: u32,
    /// Remote peers this side is synchronized with now (SYNCHRONIZED_WITH_PEER: this
    /// one included).
    pub synchronized: u32,
    /// Remote peers of the match (players behind one address count once).
    pub total: u32,
}

/// INPUT_DELAY_CHANGED: a relay client's input delay in force.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_input_delay {
    /// The input delay now, in ticks: a local input takes effect this many ticks after
    /// the tick it was pushed for.
    pub ticks: u32,
    /// The part of it that is latency beyond `max_prediction` (0: none; the delay is
    /// the configured one).
    pub spill: u32,
}

/// FATAL.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_fatal {
    /// What went wrong, as NUL-terminated text (cut short if longer).
    pub message: [c_char; 120],
}

/// The per-kind part of a `tw_session_event`. Read only the member named by `kind`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union tw_session_event_data {
    /// PEER_CONNECTED, PEER_INTERRUPTED, PEER_RESUMED, PEER_DISCONNECTED.
    pub peer: tw_session_event_peer,
    /// PLAYER_DISCONNECTED, REMOVED_BY_PEERS, PROPOSAL_REFUSED, INPUTS_DISAGREE.
    pub player: tw_session_event_player,
    /// NO_PROGRESS, PREDICTION_WINDOW_FULL, ROLLBACK_TOO_FAR, DESYNC_DUMP_READY, SYNCTEST_STATES_READY.
    pub tick: tw_session_event_tick,
    /// DESYNC.
    pub desync: tw_session_event_desync,
    /// SYNCTEST_MISMATCH.
    pub synctest_mismatch: tw_session_event_mismatch,
    /// The relay kinds (PLAYER_JOINED, PLAYER_RECONNECTED, PLAYER_LEFT, PLAYER_SLOT_FREED, PLAYER_KICKED, JOINED, RECONNECTING, RESYNCING, SERVER_LOST, PLAYER_CATCHING_UP); each kind's documentation names the fields it sets.
    pub relay: tw_session_event_relay,
    /// CONNECTION_REJECTED from a relay server.
    pub rejected: tw_session_event_rejected,
    /// FATAL.
    pub fatal: tw_session_event_fatal,
    /// MESSAGE.
    pub message: tw_session_event_message,
    /// SYNCHRONIZING_WITH_PEER, SYNCHRONIZED_WITH_PEER.
    pub progress: tw_session_event_progress,
    /// INPUT_DELAY_CHANGED.
    pub input_delay: tw_session_event_input_delay,
    /// PATH_CHANGED.
    pub path: tw_session_event_path,
    /// RENDEZVOUS_REFUSED.
    pub refusal: tw_session_event_refusal,
    /// Fixes the size and alignment, so new kinds never change `sizeof(tw_session_event)`.
    pub reserved: [u64; 15],
}

/// An event polled with `tw_session_poll_event`. Fixed size (128 bytes), no pointers.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tw_session_event {
    /// One of `tw_session_event_kind`.
    pub kind: u32,
    /// The connection it concerns (0 if none): a peer id as in `tw_session_peer_stats`.
    pub peer: u32,
    /// The member named by `kind`.
    pub data: tw_session_event_data,
}

fn relay(player: u32, tick: u32, reason: u32, reconnect: bool) -> tw_session_event_relay {
    tw_session_event_relay {
        player,
        tick,
        reason,
        reconnect: u32::from(reconnect),
        code: 0,
        credential: 0,
        client_id: 0,
    }
}

fn identified(mut r: tw_session_event_relay, proven: Proven) -> tw_session_event_relay {
    (r.credential, r.client_id) = c_proven(proven);
    r
}

fn disconnect(r: tickwire_proto::DisconnectReason) -> u32 {
    tw_disconnect_reason::from(r) as u32
}

/// Fills `out` with a relay server event; returns its kind and connection.
fn server_event(out: &mut tw_session_event, e: ServerSessionEvent, tick: u32) -> (tw_session_event_kind, u32) {
    use tw_session_event_kind as K;
    let (kind, peer, data) = match e {
        ServerSessionEvent::PlayerJoined { player, peer, proven } => {
            (K::PlayerJoined, peer, identified(relay(player, tick, 0, false), proven))
        }
        ServerSessionEvent::PlayerReconnected { player, peer, proven } => {
            (K::PlayerReconnected, peer, identified(relay(player, tick, 0, false), proven))
        }
        ServerSessionEvent::PlayerInterrupted { player, reason } => {
            (K::PlayerLeft, 0, relay(player, tick, disconnect(reason), false))
        }
        ServerSessionEvent::PlayerLeft { player } => (K::PlayerSlotFreed, 0, relay(player, tick, 0, false)),
        ServerSessionEvent::PlayerCatchingUp { player, peer } => {
            (K::PlayerCatchingUp, peer, relay(player, tick, 0, false))
        }
        ServerSessionEvent::PlayerKicked { player, peer, cause } => {
            let (reason, code) = match cause {
                KickCause::Jitter(KickReason::Overflow) => (tw_kick_reason::Overflow, 0),
                KickCause::Jitter(KickReason::Starved) => (tw_kick_reason::Starved, 0),
                KickCause::FellBehind => (tw_kick_reason::FellBehind, 0),
                KickCause::ResyncFlood => (tw_kick_reason::ResyncFlood, 0),
                KickCause::CatchUpFlood => (tw_kick_reason::CatchUpFlood, 0),
                KickCause::Engine { code } => (tw_kick_reason::Engine, code),
            };
            (K::PlayerKicked, peer, tw_session_event_relay { code, ..relay(player, tick, reason as u32, false) })
        }
        ServerSessionEvent::ConnectionRejected { peer, reason } => {
            let reason = match reason {
                RejectReason::Malformed => tw_reject_reason::Malformed,
                RejectReason::WrongGame => tw_reject_reason::WrongGame,
                RejectReason::BadToken => tw_reject_reason::BadToken,
                RejectReason::Full => tw_reject_reason::Full,
                RejectReason::NoHello => tw_reject_reason::NoHello,
                RejectReason::WrongCredential => tw_reject_reason::WrongCredential,
            };
            out.data.rejected = tw_session_event_rejected { reason: reason as u32 };
            return (K::ConnectionRejected, peer);
        }
    };
    out.data.relay = data;
    (kind, peer)
}

/// Fills `out` with a relay client event; returns its kind and connection.
fn client_event(out: &mut tw_session_event, e: ClientSessionEvent, server: u32) -> (tw_session_event_kind, u32) {
    use tw_session_event_kind as K;
    let none = TW_NO_PLAYER;
    let (kind, data) = match e {
        ClientSessionEvent::Connected { server, proven } => {
            let credential = c_proven(proven).0;
            out.data.peer =
                tw_session_event_peer { player: none, reason: 0, disconnect_in_us: 0, credential, reserved0: 0 };
            return (K::PeerConnected, server);
        }
        ClientSessionEvent::Synchronized { tick } => {
            out.data.tick = tw_session_event_tick { tick };
            return (K::Synchronized, server);
        }
        ClientSessionEvent::PredictionWindowFull { tick } => {
            out.data.tick = tw_session_event_tick { tick };
            return (K::PredictionWindowFull, server);
        }
        ClientSessionEvent::InputDelayChanged { delay, spill } => {
            out.data.input_delay = tw_session_event_input_delay { ticks: delay, spill };
            return (K::InputDelayChanged, server);
        }
        ClientSessionEvent::Desync { tick, local, remote } => {
            out.data.desync =
                tw_session_event_desync { tick, culprit: 0, local_checksum: local, remote_checksum: remote };
            return (K::Desync, server);
        }
        ClientSessionEvent::Joined { player, tick, reconnect } => (K::Joined, relay(player, tick, 0, reconnect)),
        ClientSessionEvent::PlayerJoined { player, tick } => (K::PlayerJoined, relay(player, tick, 0, false)),
        ClientSessionEvent::PlayerLeft { player, tick } => (K::PlayerLeft, relay(player, tick, 0, false)),
        ClientSessionEvent::Resyncing { tick } => (K::Resyncing, relay(none, tick, 0, false)),
        // The connection these concern is gone: no peer.
        ClientSessionEvent::Interrupted { reason } => {
            out.data.relay = relay(none, 0, disconnect(reason), false);
            return (K::Reconnecting, 0);
        }
        ClientSessionEvent::Disconnected { reason } => {
            out.data.relay = relay(none, 0, disconnect(reason), false);
            return (K::ServerLost, 0);
        }
    };
    out.data.relay = data;
    (kind, server)
}

impl std::fmt::Debug for tw_session_event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("tw_session_event").field("kind", &self.kind).field("peer", &self.peer).finish_non_exhaustive()
    }
}

impl tw_session_event {
    /// An all-zero event (`TW_SESSION_EVENT_KIND_NONE`).
    pub fn zeroed() -> Self {
        tw_session_event { kind: 0, peer: 0, data: tw_session_event_data { reserved: [0; 15] } }
    }

    /// The C form of `ev`; `player_of` maps a connection to its lowest player index,
    /// `server` is a relay client's connection to its server (0 if none).
    pub(crate) fn new(ev: &SessionEvent, player_of: impl Fn(u32) -> Option<usize>, server: u32) -> Self {
        use tw_session_event_kind as K;
        let mut out = tw_session_event::zeroed();
        let peer_data = |peer: u32, reason: u32, disconnect_in_us: u64| tw_session_event_peer {
            player: player_of(peer).map_or(TW_NO_PLAYER, |p| p as u32),
            reason,
            disconnect_in_us,
            credential: 0,
            reserved0: 0,
        };
        let (kind, peer) = match *ev {
            SessionEvent::PeerConnected { peer, player, proven } => {
                out.data.peer = tw_session_event_peer {
                    player: player.map_or(TW_NO_PLAYER, |p| p as u32),
                    reason: 0,
                    disconnect_in_us: 0,
                    credential: c_proven(proven).0,
                    reserved0: 0,
                };
                (K::PeerConnected, peer)
            }
            SessionEvent::ConnectionRejected { peer } => (K::ConnectionRejected, peer),
            SessionEvent::SynchronizingWithPeer { peer, player, connected, total } => {
                let step = u32::from(connected);
                out.data.progress = tw_session_event_progress { player: player as u32, step, synchronized: 0, total };
                (K::SynchronizingWithPeer, peer)
            }
            SessionEvent::Fatal(ref message) => {
                let mut f = tw_session_event_fatal { message: [0; 120] };
                // SAFETY: `f.message` is a local array of exactly the length passed.
                unsafe { copy_c_string(message.as_bytes(), f.message.as_mut_ptr(), f.message.len()) };
                out.data.fatal = f;
                (K::Fatal, 0)
            }
            SessionEvent::Core(e) => match e {
                Event::Synchronized => (K::Synchronized, 0),
                Event::PeerSynchronized { peer, synchronized, total } => {
                    let player = player_of(peer).map_or(TW_NO_PLAYER, |p| p as u32);
                    out.data.progress = tw_session_event_progress { player, step: 2, synchronized, total };
                    (K::SynchronizedWithPeer, peer)
                }
                Event::PeerInterrupted { peer, disconnect_in_us } => {
                    out.data.peer = peer_data(peer, 0, disconnect_in_us);
                    (K::PeerInterrupted, peer)
                }
                Event::PeerResumed { peer } => {
                    out.data.peer = peer_data(peer, 0, 0);
                    (K::PeerResumed, peer)
                }
                Event::PeerDisconnected { peer, reason } => {
                    out.data.peer = peer_data(peer, disconnect(reason), 0);
                    (K::PeerDisconnected, peer)
                }
                Event::NoProgress { tick, peer } => {
                    out.data.tick = tw_session_event_tick { tick };
                    (K::NoProgress, peer)
                }
                Event::PlayerDisconnected { player, tick, by } => {
                    out.data.player = tw_session_event_player { player: player as u32, tick };
                    (K::PlayerDisconnected, by.unwrap_or(0))
                }
                Event::RemovedByPeers { player, tick } => {
                    out.data.player = tw_session_event_player { player: player as u32, tick };
                    (K::RemovedByPeers, 0)
                }
                Event::ProposalRefused { by, player, tick } => {
                    out.data.player = tw_session_event_player { player: player as u32, tick };
                    (K::ProposalRefused, by)
                }
                Event::InputsDisagree { player, tick, source } => {
                    out.data.player = tw_session_event_player { player: player as u32, tick };
                    (K::InputsDisagree, source.unwrap_or(0))
                }
                Event::PredictionWindowFull { tick, peer } => {
                    out.data.tick = tw_session_event_tick { tick };
                    (K::PredictionWindowFull, peer)
                }
                Event::RollbackTooFar { tick } => {
                    out.data.tick = tw_session_event_tick { tick };
                    (K::RollbackTooFar, 0)
                }
                Event::Desync { tick, local, remote, peer, culprit } => {
                    let culprit = culprit.map_or(0, |p| p as u32 + 1);
                    out.data.desync =
                        tw_session_event_desync { tick, culprit, local_checksum: local, remote_checksum: remote };
                    (K::Desync, peer)
                }
                Event::DesyncDumpReady { tick } => {
                    out.data.tick = tw_session_event_tick { tick };
                    (K::DesyncDumpReady, 0)
                }
                Event::SyncTestStatesReady { tick } => {
                    out.data.tick = tw_session_event_tick { tick };
                    (K::SynctestStatesReady, 0)
                }
                Event::SyncTestMismatch { tick, expected, actual } => {
                    out.data.synctest_mismatch = tw_session_event_mismatch {
                        tick,
                        reserved0: 0,
                        expected_checksum: expected,
                        actual_checksum: actual,
                    };
                    (K::SynctestMismatch, 0)
                }
                Event::SpectatorDropped { peer } => (K::SpectatorDropped, peer),
            },
            SessionEvent::RelayServer { event, tick } => server_event(&mut out, event, tick),
            SessionEvent::RelayClient(e) => client_event(&mut out, e, server),
            SessionEvent::PathChanged { player, path } => {
                out.data.path = path_event(player, path);
                (K::PathChanged, 0)
            }
            SessionEvent::RendezvousRefused(reason) => {
                out.data.refusal = refusal(reason);
                (K::RendezvousRefused, 0)
            }
            SessionEvent::Message { peer, len } => {
                out.data.message = tw_session_event_message {
                    player: player_of(peer).map_or(TW_NO_PLAYER, |p| p as u32),
                    size: len as u32,
                };
                (K::Message, peer)
            }
        };
        out.kind = kind as u32;
        out.peer = peer;
        out
    }
}

/// Returns `sizeof(tw_session_event)` as the library sees it (128). A binding compares it with
/// its own size of the struct to catch a header from another library version.
///
/// Ownership: takes nothing; returns a plain value.
/// Thread-safety: may be called from any thread.
///
/// Returns the size in bytes; never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_event_size() -> usize {
    guard::run_or("tw_session_event_size", 0, size_of::<tw_session_event>)
}
