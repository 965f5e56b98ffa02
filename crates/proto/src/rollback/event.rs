//! Things a rollback session tells the engine, polled with `poll_event`.

use crate::engine::Tick;
use crate::transport::{DisconnectReason, PeerId};

/// A session event. Events are informational: correctness never depends on the
/// engine reacting to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Every peer has been heard from; ticks start counting. A spectator: its starting
    /// point (the host's snapshot, or the first inputs from tick 0) arrived.
    Synchronized,
    /// `peer` was heard from for the first time before the match started: this side
    /// is synchronized with it, `synchronized` of the `total` remote peers so far (a
    /// loading screen's progress). `Synchronized` follows once all are.
    PeerSynchronized {
        /// The peer.
        peer: PeerId,
        /// Remote peers synchronized now, this one included.
        synchronized: u32,
        /// Remote peers of the match.
        total: u32,
    },
    /// Nothing heard from `peer` for the notify delay; it will be dropped after
    /// `disconnect_in_us` more microseconds of silence.
    PeerInterrupted {
        /// The silent peer.
        peer: PeerId,
        /// Time left before the disconnect timeout.
        disconnect_in_us: u64,
    },
    /// An interrupted peer was heard again.
    PeerResumed {
        /// The peer.
        peer: PeerId,
    },
    /// The session gave up on `peer`: silence past the timeout (`Timeout`), its
    /// inputs holding the match below the progress floor (`NoProgress`), a message
    /// contradicting what this side knows (`ProtocolError`; the connection is closed
    /// too), or the connection closed (the transport's reason).
    PeerDisconnected {
        /// The peer.
        peer: PeerId,
        /// Why.
        reason: DisconnectReason,
    },
    /// The session is running but its confirmed ticks have advanced at less than half
    /// the tick rate (none at all included) for the disconnect timeout: `peer`'s
    /// inputs are the ones holding the confirmed tick back (0: this side's own local
    /// inputs, so the engine itself stalls). A remote `peer` is dropped right after (a
    /// `PeerDisconnected` with reason `NoProgress` follows). Raised again every
    /// timeout while it lasts.
    NoProgress {
        /// The first tick not confirmed.
        tick: Tick,
        /// Whose inputs are missing (0: local).
        peer: PeerId,
    },
    /// `player`'s inputs count as disconnected from `tick` on. Every peer converges
    /// on the same (earliest proposed) tick and resimulates from it; a later event
    /// with an earlier tick supersedes this one.
    PlayerDisconnected {
        /// The player index.
        player: usize,
        /// First tick simulated with a disconnected input.
        tick: Tick,
        /// The peer whose proposal set this tick (taken because this side lost the
        /// player's peer too, or a majority of the live peers proposed it); None:
        /// this side's own decision (its connection to the player's peer ended).
        by: Option<PeerId>,
    },
    /// Peer `by` proposes that `player` disconnected from `tick`, but this side still
    /// hears that player's peer (or it is this side's own player) and no majority of
    /// the live peers agrees: the proposal is held, not taken, and not relayed. A lie,
    /// or a link that failed only between `by` and that peer: the two look the same
    /// from here, so `by` is named, not dropped. Raised once per proposer and player.
    ProposalRefused {
        /// Who proposed it.
        by: PeerId,
        /// The player it proposes gone.
        player: usize,
        /// The tick it proposes.
        tick: Tick,
    },
    /// A majority of the live remote peers propose that local `player` disconnected
    /// (they lost this peer, or dropped it): the match goes on without this side,
    /// which plays alone from here. Raised once per local player.
    RemovedByPeers {
        /// The local player.
        player: usize,
        /// The earliest tick proposed.
        tick: Tick,
    },
    /// The prediction window is full at `tick`: the session waits for `peer`'s inputs
    /// (reported once per stall, the status of `advance` says it every tick).
    PredictionWindowFull {
        /// The tick that could not be simulated.
        tick: Tick,
        /// The peer whose inputs are missing (0 if unknown).
        peer: PeerId,
    },
    /// A rollback needed a state the ring no longer holds (a disconnect agreed too
    /// far in the past). The session cannot guarantee consistency any more.
    RollbackTooFar {
        /// The tick that would have had to be loaded.
        tick: Tick,
    },
    /// `player`'s inputs reached the peers differently: the input digests of the peers
    /// other than its own (this one included) disagree by check tick `tick`. Its peer
    /// sent different peers different inputs, or one peer misreports what it got.
    /// With a strict majority of those peers agreeing (four peers or more against one
    /// liar), the majority's inputs are the player's for everyone: a peer that got
    /// others takes the majority's from a peer that has them (`source`) and
    /// resimulates, and no desync is reported between the honest peers. Without a
    /// majority the checksums' `Desync` follows, naming the player as culprit. Raised
    /// once per player.
    InputsDisagree {
        /// The player whose inputs differ.
        player: usize,
        /// The check tick by which they differ.
        tick: Tick,
        /// This side had received other inputs than the majority: the peer it takes
        /// the player's inputs from now (None: this side had the majority's).
        source: Option<PeerId>,
    },
    /// Checksums of a confirmed tick differ between this peer and `peer`. When the
    /// digests of the inputs both received show whose inputs reached them differently,
    /// that player is the `culprit`: its peer sent different inputs to different peers
    /// (or `peer` misreports what it received), and the desync is its doing, not
    /// `peer`'s. `None`: the inputs agree (a determinism bug) or were not compared.
    Desync {
        /// The confirmed tick.
        tick: Tick,
        /// This peer's checksum.
        local: u64,
        /// The remote peer's checksum.
        remote: u64,
        /// Who reported the other checksum.
        peer: PeerId,
        /// The player whose inputs this peer and `peer` received differently.
        culprit: Option<usize>,
    },
    /// A desync dump is ready: fetch it with `take_desync_dump`.
    DesyncDumpReady {
        /// The tick it is about.
        tick: Tick,
    },
    /// Synctest: resimulating `tick` gave another checksum than the first time.
    SyncTestMismatch {
        /// The tick whose starting state differs.
        tick: Tick,
        /// Checksum of the first simulation.
        expected: u64,
        /// Checksum after the rollback.
        actual: u64,
    },
    /// Both states of the first mismatch not yet taken are in hand: the state saved
    /// by the first simulation of `tick` and the resimulated one (the engine's answers
    /// to the two `DumpState` requests that followed the `SyncTestMismatch`).
    SyncTestStatesReady {
        /// The tick whose starting states differ.
        tick: Tick,
    },
    /// A spectator fell too far behind and was dropped.
    SpectatorDropped {
        /// The spectator's connection.
        peer: PeerId,
    },
}
