//! The peer-to-peer rollback session for N players (seed 002, GGPO's model).
//!
//! Each tick the engine pushes its local players' inputs, calls
//! [`P2pSession::advance`] and runs the [`Request`]s it polls. The session:
//! - puts local inputs `input_delay` ticks ahead and sends them to every peer;
//! - predicts missing remote inputs, and when the real one differs, loads the
//!   newest saved state at or before the first mismatch and resimulates up to now,
//!   all as requests (`Load`, then `Advance { resimulating: true }` and `Save`);
//! - refuses to predict more than `max_prediction` ticks ahead of the confirmed
//!   inputs ([`AdvanceStatus::WindowFull`], not an error); `max_prediction = 0` is
//!   lockstep;
//! - measures frame advantage per peer and dilates its [`TickClock`] smoothly;
//! - handles silence (interrupted, resumed, timeout) and disconnects by agreeing on
//!   the earliest proposed disconnect tick and rolling back to it (a proposal about a
//!   third player is taken only if this side lost it too or a majority proposes it);
//! - compares checksums of confirmed ticks with every peer, and on a mismatch
//!   builds a forensic dump (inputs around the tick plus the engine's state bytes).
//!
//! Sans-IO: [`P2pSession::handle_message`] takes what the
//! [`Endpoint`](crate::transport::Endpoint) delivered, [`P2pSession::send_messages`]
//! queues outgoing messages on it, and time only comes in through `now` arguments.

mod config;
mod forensics;
mod net;
mod peer;
mod players;
mod progress;
mod proposals;
mod reconcile;

use crate::game::CheckedConfig;
pub use config::{P2pConfig, P2pStats, PeerSyncStats, SessionError, p2p_timeouts_fit};
use forensics::Dump;
use peer::{Peer, Spectator};
use players::Player;

use std::collections::VecDeque;

use super::PredictionMode;
use super::desync::{ChecksumLog, DesyncDump, InputDigests};
use super::event::Event;
use super::input_queue::InputQueue;
use super::replay::ReplayRecorder;
use super::timesync::TimeSyncConfig;
use crate::clock::Micros;
use crate::engine::StateRing;
use crate::engine::{AdvanceStatus, InputStatus, Request, RequestQueue, Tick};
use crate::tick::TickClock;
use crate::transport::{CHANNEL_RELIABLE, CHANNEL_UNRELIABLE, DisconnectReason, MAX_UNRELIABLE, PeerId};

/// Largest input delay accepted, in ticks.
pub const MAX_INPUT_DELAY: u32 = 32;

/// The most ticks a session may predict past its confirmed (P2P) or authoritative
/// (relay client) inputs.
pub const MAX_PREDICTION: u32 = 64;

/// Whether one tick of every player's input fits one datagram: P2P inputs go
/// unreliable, one message each, never in pieces, and a spectator's message carries
/// every player's (with room for a disconnect entry per player and two checksum
/// reports): 4 players of 255 bytes, 8 of 129. A peer's message carries the inputs of
/// all players but one at most, with two reports and a 16-byte input digest per
/// player; that bound bites from 12 players on (12 of 74 bytes, 16 of 49, 32 of 12,
/// none past 47 players: the digests alone fill the datagram).
/// These figures are for a transport of 1,200-byte datagrams ([`MAX_UNRELIABLE`]);
/// [`p2p_inputs_fit_in`] answers for another.
pub fn p2p_inputs_fit(players: usize, input_size: usize) -> bool {
    p2p_inputs_fit_in(players, input_size, MAX_UNRELIABLE)
}

/// Like [`p2p_inputs_fit`], on a transport whose largest unreliable message is
/// `max_unreliable` bytes ([`Transport::max_unreliable`](crate::Transport::max_unreliable),
/// [`P2pConfig::max_unreliable`]).
pub fn p2p_inputs_fit_in(players: usize, input_size: usize, max_unreliable: usize) -> bool {
    msg_fits(1, players, players, input_size, max_unreliable)
}

/// Whether `ticks` of inputs fit one message of `max_unreliable` bytes both in a
/// spectator's message (every player's inputs) and in a peer's (its `local` players'
/// inputs, reports, digests).
fn msg_fits(ticks: usize, local: usize, players: usize, input_size: usize, max_unreliable: usize) -> bool {
    use super::message::max_encoded_len;
    let local = local.min(players.saturating_sub(1)).max(1);
    let spectator = max_encoded_len(ticks, players, input_size, players, 2, 0);
    let peer = max_encoded_len(ticks, local, input_size, players, 2, players);
    spectator.max(peer) <= max_unreliable
}

/// The most ticks of inputs one message carries (1..=255) at `max_unreliable` bytes.
fn ticks_per_msg(local: usize, players: usize, input_size: usize, max_unreliable: usize) -> usize {
    (1..=255usize).take_while(|&c| msg_fits(c, local, players, input_size, max_unreliable)).last().unwrap_or(1)
}

/// First byte of the snapshot message a host sends a spectator joining mid-match
/// (reliable channel): `u8 0x24, u32 tick, state bytes`.
pub(crate) const KIND_SNAPSHOT_BYTE: u8 = net::KIND_SNAPSHOT;
/// Ticks of inputs kept on each side of a desync tick in a dump.
pub(crate) const DUMP_RADIUS: Tick = 8;

/// Who plays a player slot, from this peer's point of view. Every peer must list the
/// same players in the same order (player `i` is the same person everywhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlayerKind {
    /// Input comes from this machine.
    Local,
    /// Input comes from the peer behind this connection (several players may share it).
    Remote(PeerId),
}

/// Where a session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SessionPhase {
    /// Some peer has been neither heard from nor dropped: no tick is due, nothing is
    /// simulated, the clock runs undilated.
    Synchronizing,
    /// Every peer heard from or dropped (for good: the session never goes back).
    Running {
        /// Ticks `ticks_due` released this frame that `advance` has not run yet.
        due_left: u32,
        /// The last advance found the prediction window full: `PredictionWindowFull`
        /// is raised once per stall.
        stalled: bool,
    },
}

impl SessionPhase {
    const STARTED: SessionPhase = SessionPhase::Running { due_left: 0, stalled: false };

    /// Records whether the window is full at this advance; returns whether it was
    /// at the last one.
    fn set_stalled(&mut self, full: bool) -> bool {
        match self {
            SessionPhase::Running { stalled, .. } => std::mem::replace(stalled, full),
            SessionPhase::Synchronizing => false,
        }
    }
}

/// A P2P rollback session. See the module docs.
pub struct P2pSession {
    cfg: P2pConfig,
    /// Every player of the match, in the order every peer lists them.
    players: Vec<Player>,
    /// The local players' slots, ascending: a message to a peer carries their inputs
    /// in this order.
    local: Vec<usize>,
    tmp: Vec<u8>,
    zero: Vec<u8>,
    peers: Vec<Peer>,
    spectators: Vec<Spectator>,
    current: Tick,
    phase: SessionPhase,
    ring: StateRing,
    requests: RequestQueue,
    events: VecDeque<Event>,
    clock: TickClock,
    now: Micros,
    checks: ChecksumLog,
    next_check: Tick,
    /// Digests of every player's confirmed inputs up to the next check tick.
    digests: InputDigests,
    /// A peer's input digests while they are compared (reused).
    their_digests: Vec<super::desync::InputDigest>,
    /// The forensic dump of a desync, while it is built and until it is taken.
    dump: Dump,
    recorder: Option<ReplayRecorder>,
    scratch: Vec<u8>,
    out: Vec<u8>,
    /// The most ticks of inputs a message carries, at the message limit `ticks_limit`
    /// (the config's, or the transport's when it says less: `send_messages`).
    max_ticks_per_msg: usize,
    ticks_limit: usize,
    /// The progress watch (see `progress.rs`).
    watch: progress::ProgressWatch,
    /// Settling a player whose inputs reached the peers differently (see `reconcile.rs`).
    recon: reconcile::Reconcile,
    /// Connections to close at the next `send_messages`, with what the peer is told
    /// (None: the plain close of this side, `Client` or `Server`).
    to_close: Vec<(PeerId, Option<DisconnectReason>)>,
    stats: P2pStats,
}

impl P2pSession {
    /// A session for `players` (in the same order on every peer, as many as
    /// `cfg.game.players`), created at `now`. Errors: the config's problems
    /// ([`SessionError::Config`]), a player list of another length, a remote player
    /// behind peer id 0.
    pub fn new(cfg: P2pConfig, players: &[PlayerKind], now: Micros) -> Result<Self, SessionError> {
        cfg.validate().map_err(SessionError::Config)?;
        if players.len() != cfg.game.players {
            return Err(SessionError::PlayerCount { game: cfg.game.players, listed: players.len() });
        }
        let mut peers: Vec<Peer> = Vec::new();
        let mut local = Vec::new();
        for (i, k) in players.iter().enumerate() {
            match *k {
                PlayerKind::Local => local.push(i),
                PlayerKind::Remote(0) => return Err(SessionError::PeerIdZero(i)),
                PlayerKind::Remote(id) => match peers.iter_mut().find(|p| p.id == id) {
                    Some(p) => p.players.push(i),
                    None => {
                        let mut p = Peer::new(id, i, now, cfg.history.max(2).next_power_of_two(), players.len());
                        p.loading_left_us = cfg.loading_grace_us;
                        peers.push(p)
                    }
                },
            }
        }
        let k = local.len().max(players.len());
        let max_ticks_per_msg = ticks_per_msg(local.len(), k, cfg.game.input_size, cfg.max_unreliable);
        let n = players.len();
        let npeers = peers.len();
        let window = cfg.max_prediction as usize;
        Ok(P2pSession {
            players: players
                .iter()
                .map(|&k| {
                    let queue = InputQueue::new(cfg.game.input_size, cfg.history, cfg.prediction);
                    Player::new(k, queue, cfg.input_delay, cfg.game.input_size)
                })
                .collect(),
            tmp: vec![0; cfg.game.input_size],
            zero: vec![0; cfg.game.input_size],
            local,
            phase: if peers.is_empty() { SessionPhase::STARTED } else { SessionPhase::Synchronizing },
            peers,
            spectators: Vec::new(),
            current: 0,
            ring: StateRing::new(window + 2, cfg.state_slots() - (window + 2)),
            requests: RequestQueue::new(n, cfg.game.input_size, window + 2),
            events: VecDeque::with_capacity(64),
            clock: TickClock::new(cfg.game.clock(), 0),
            now,
            checks: ChecksumLog::new(n),
            next_check: 0,
            digests: InputDigests::new(n),
            their_digests: Vec::with_capacity(n),
            dump: Dump::Idle,
            recorder: None,
            scratch: Vec::with_capacity(255 * k * cfg.game.input_size),
            out: Vec::with_capacity(crate::wire::MAX_DATAGRAM_SIZE),
            max_ticks_per_msg,
            ticks_limit: cfg.max_unreliable,
            watch: progress::ProgressWatch::new(now),
            recon: reconcile::Reconcile::new(n, npeers, &vec![super::desync::DIGEST_START; n]),
            to_close: Vec::new(),
            stats: P2pStats { time_scale: 1.0, ..P2pStats::default() },
            cfg,
        })
    }

    /// The config the session was built with.
    pub fn config(&self) -> &P2pConfig {
        &self.cfg
    }

    /// Number of players.
    pub fn num_players(&self) -> usize {
        self.players.len()
    }

    /// How many snapshots the engine must be able to hold: `Save` slots are in
    /// `0..state_slots()`.
    pub fn state_slots(&self) -> usize {
        self.ring.len()
    }

    /// The next tick to simulate (the number of ticks simulated so far).
    pub fn current_tick(&self) -> Tick {
        self.current
    }

    /// Every input before this tick is confirmed (or disconnected).
    pub fn confirmed_tick(&self) -> Tick {
        self.confirmed_all()
    }

    /// True once every peer has been heard from.
    pub fn is_running(&self) -> bool {
        self.phase != SessionPhase::Synchronizing
    }

    /// Starts the session once every peer has been heard from or dropped.
    fn start_when_settled(&mut self) {
        if self.phase == SessionPhase::Synchronizing && self.peers.iter().all(|p| p.phase.settled()) {
            self.phase = SessionPhase::STARTED;
            self.events.push_back(Event::Synchronized);
        }
    }

    /// Counters and gauges.
    pub fn stats(&self) -> P2pStats {
        P2pStats {
            current_tick: self.current,
            confirmed_tick: self.confirmed_all().min(self.current),
            frames_ahead: self.frames_ahead(),
            time_scale: self.clock.scale(),
            ..self.stats
        }
    }

    /// The peers whose clocks matter: heard, and with a player still in the match. A
    /// peer whose players were all taken out by the others' proposals may still be
    /// connected (this side did not lose it), but the match no longer waits for it:
    /// counting its frozen tick held a whole match 3% slow after a staller was
    /// dropped by the others first.
    fn timed_peers(&self) -> impl Iterator<Item = &Peer> {
        self.peers
            .iter()
            .filter(|p| p.phase.heard() && p.players.iter().any(|&i| self.players[i].queue.disconnect_tick().is_none()))
    }

    /// Mean over connected peers of how many ticks this peer is ahead (ungated).
    pub fn frames_ahead(&self) -> f32 {
        let (mut s, mut n) = (0.0, 0);
        for p in self.timed_peers() {
            s += p.adv.frames_ahead();
            n += 1;
        }
        if n == 0 { 0.0 } else { s / n as f32 }
    }

    fn agreed_ahead(&self) -> f32 {
        let (mut s, mut n) = (0.0, 0);
        for p in self.timed_peers() {
            s += p.adv.agreed_ahead();
            n += 1;
        }
        if n == 0 { 0.0 } else { s / n as f32 }
    }

    /// Starts recording confirmed inputs for a replay; `initial_state` is the engine's
    /// serialized state at tick 0 (may be empty if the game starts from a fixed state).
    pub fn start_recording(&mut self, initial_state: &[u8]) {
        self.recorder = Some(ReplayRecorder::new(self.players.len(), self.cfg.game.input_size, 0, initial_state));
    }

    /// The replay recorded so far (ticks whose inputs are all confirmed).
    pub fn replay(&self) -> Option<&ReplayRecorder> {
        self.recorder.as_ref()
    }

    /// How many ticks are due now on the session's dilated tick clock; also runs the
    /// timers (interrupt, timeout). Call once per engine frame.
    pub fn ticks_due(&mut self, now: Micros) -> u32 {
        self.update(now);
        let scale = if self.is_running() { self.cfg.time_sync.scale_for(self.agreed_ahead()) } else { 1.0 };
        self.clock.set_scale(scale);
        let n = self.clock.advance(now);
        match &mut self.phase {
            SessionPhase::Running { due_left, .. } => {
                *due_left = n;
                n
            }
            SessionPhase::Synchronizing => 0,
        }
    }

    fn is_check(&self, t: Tick) -> bool {
        self.cfg.desync_interval > 0 && t % self.cfg.desync_interval == 0
    }

    fn should_save(&self, t: Tick, confirmed: Tick) -> bool {
        if t == 0 || self.is_check(t) {
            return true;
        }
        if self.cfg.max_prediction == 0 {
            return false;
        }
        !self.cfg.sparse_saving || t <= confirmed
    }

    fn save(&mut self, t: Tick) {
        let slot = self.ring.slot_for_save(t);
        if self.is_check(t) {
            self.ring.pin(t);
        }
        self.requests.push_save(t, slot);
    }

    fn push_advance(&mut self, t: Tick, resimulating: bool) {
        self.requests.begin_advance(t, resimulating);
        for p in &mut self.players {
            let (b, s) = p.queue.input_for(t);
            self.requests.push_input(b, s);
        }
    }

    /// Runs one tick: adds the local inputs, rolls back if a prediction was wrong and
    /// simulates the current tick, all as requests to poll. Poll every request before
    /// calling this again (unpolled ones are dropped).
    pub fn advance(&mut self) -> AdvanceStatus {
        self.requests.clear();
        let SessionPhase::Running { due_left, .. } = &mut self.phase else {
            self.queue_state_dumps();
            return AdvanceStatus::NotSynchronized;
        };
        // Ticks of this frame still to run, this one included (1 for an engine that
        // advances without asking `ticks_due`).
        let pending = (*due_left).max(1);
        *due_left = due_left.saturating_sub(1);
        self.add_local_inputs();
        let mismatch = self.players.iter().filter_map(|p| p.queue.first_mismatch()).min();
        if let Some(m) = mismatch {
            self.players.iter_mut().for_each(|p| p.queue.clear_mismatch());
            if m < self.current {
                self.rollback(m);
            }
        }
        // After the rollback: the inputs that made a tick final may also be the ones
        // that corrected it, and a state dumped before this batch's re-simulation would
        // be the mispredicted one (a spectator joined with it stayed out of sync). The
        // dump requests follow this batch's saves, so they read the corrected states.
        self.queue_state_dumps();
        let confirmed = self.confirmed_all();
        let full = self.current as u64 >= confirmed as u64 + self.cfg.max_prediction as u64;
        let was_stalled = self.phase.set_stalled(full);
        if full {
            self.stats.window_full += 1;
            if !was_stalled {
                let peer = self.lagging_peer();
                self.events.push_back(Event::PredictionWindowFull { tick: self.current, peer });
            }
            self.finish_tick();
            return AdvanceStatus::WindowFull;
        }
        self.record_advantage(pending);
        if self.should_save(self.current, confirmed) {
            self.save(self.current);
        }
        self.push_advance(self.current, false);
        self.current += 1;
        self.finish_tick();
        AdvanceStatus::Advanced
    }

    fn lagging_peer(&self) -> PeerId {
        let mut best: Option<(Tick, PeerId)> = None;
        for p in &self.peers {
            let t = p.players.iter().map(|&i| self.players[i].queue.confirmed_until()).min().unwrap_or(Tick::MAX);
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, p.id));
            }
        }
        best.map_or(0, |b| b.1)
    }

    fn rollback(&mut self, m: Tick) {
        let Some((s, slot)) = self.ring.latest_at_or_before(m) else {
            self.events.push_back(Event::RollbackTooFar { tick: m });
            return;
        };
        self.ring.invalidate_after(s);
        self.requests.push_load(s, slot);
        let confirmed = self.confirmed_all();
        // A rollback deeper than the ring's slots (a repair from a check tick, see
        // `p2p/reconcile.rs`) saves only what the ring keeps: the newest ticks and the
        // check ticks. Saving every tick would reuse a slot within the batch, and the
        // engine's answer for the evicted tick would be refused.
        let recent = (self.cfg.max_prediction + 2) as Tick;
        for t in s..self.current {
            if t > s && self.should_save(t, confirmed) && (self.is_check(t) || t + recent > self.current) {
                self.save(t);
            }
            self.push_advance(t, true);
        }
        let depth = self.current - s;
        self.stats.rollbacks += 1;
        self.stats.resimulated += depth as u64;
        self.stats.max_rollback = self.stats.max_rollback.max(depth);
    }

    /// Ticks before this one are final everywhere: every input before it is confirmed
    /// here *and* at every connected peer. A disconnect proposal is always at or after
    /// the proposer's confirmed tick, so no agreed disconnect can reach back before
    /// this bound; checksums, replays and spectators only ever see final ticks.
    fn safe_bound(&self) -> Tick {
        let mut b = self.confirmed_all().min(self.current);
        for p in self.peers.iter().filter(|p| !p.phase.is_gone()) {
            b = b.min(p.remote_confirmed);
        }
        b
    }

    /// After a tick's requests: finalize the checksums of check ticks that can no
    /// longer change, and record newly confirmed inputs for the replay.
    fn finish_tick(&mut self) {
        let bound = self.safe_bound();
        while self.cfg.desync_interval > 0 {
            // Inputs are digested as they become final, up to the next check tick.
            self.digest_inputs(self.next_check.min(bound));
            if self.next_check > bound {
                break;
            }
            let t = self.next_check;
            match self.ring.checksum(t) {
                Some(c) => {
                    if !self.digests.is_lost() && self.digests.end() == t {
                        self.recon.snapshot(t, self.digests.current());
                    }
                    self.checks.push(t, c, self.digests.current());
                    let mut theirs = std::mem::take(&mut self.their_digests);
                    for i in 0..self.peers.len() {
                        if let Some(r) = self.peers[i].take_pending(t, &mut theirs) {
                            self.compare(i, t, c, r, &theirs);
                        }
                    }
                    self.their_digests = theirs;
                    self.decide(t);
                }
                // Saved in this batch: its checksum comes with confirm_save.
                None if self.ring.slot_of(t).is_some() => break,
                None => {}
            }
            self.next_check += self.cfg.desync_interval;
        }
        self.expire_deferred();
        if let Some(rec) = self.recorder.as_mut() {
            while rec.end_tick() < bound {
                let t = rec.end_tick();
                rec.begin_tick();
                for q in self.players.iter().map(|p| &p.queue) {
                    match q.disconnect_tick() {
                        Some(d) if t >= d => rec.push(&self.zero, InputStatus::Disconnected),
                        _ => rec.push(q.confirmed(t).expect("confirmed input in history"), InputStatus::Confirmed),
                    }
                }
            }
        }
    }

    /// The engine's checksum of the state it saved for `tick` (answer to
    /// [`Request::Save`]). Without it, that tick is not checked for desyncs.
    pub fn confirm_save(&mut self, tick: Tick, checksum: u64) -> Result<(), SessionError> {
        if self.ring.set_checksum(tick, checksum) { Ok(()) } else { Err(SessionError::UnexpectedTick(tick)) }
    }

    /// The next request to run, in order.
    pub fn poll_request(&mut self) -> Option<Request<'_>> {
        self.requests.poll()
    }

    /// Requests of the last advance not polled yet (the next advance drops them).
    pub fn pending_requests(&self) -> usize {
        self.requests.pending()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Measures our advantage over each peer while simulating a tick, `pending` ticks
    /// (this one included) before the end of this frame's ticks.
    fn record_advantage(&mut self, pending: u32) {
        let tick_us = self.cfg.game.tick_us();
        // Our position as peers report theirs: the tick count once this frame's ticks
        // are done (a message's tick is the sender's count after its frame), plus the
        // clock's fraction, as the remote estimate is fractional. Comparing anything
        // else biases both sides alike (a whole tick count: toward "I am ahead"; the
        // count before this tick: a tick toward "I am behind"), and the agreement gate
        // then never corrects an offset smaller than the bias.
        let me = (self.current + pending) as f64 + self.clock.alpha();
        for p in self.peers.iter_mut().filter(|p| p.phase.heard()) {
            let elapsed = self.now.saturating_sub(p.remote_tick_at) as f64 + p.rtt_us / 2.0;
            let est = p.remote_tick as f64 + elapsed / tick_us;
            p.local_adv = (me - est) as f32;
            p.adv.record(p.local_adv, p.remote_adv);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::GameShape;
    use crate::transport::{Endpoint, EndpointConfig, max_unreliable_for};

    #[test]
    fn a_message_carries_no_more_ticks_than_the_transport_takes() {
        // 2 players of 132 bytes: 4 ticks fit a message at 1,200-byte datagrams, 3 at
        // 1,170-byte ones. The config says 1,200; the transport says less.
        let cfg = P2pConfig::new(GameShape::new(2, 132));
        let players = [PlayerKind::Local, PlayerKind::Remote(7)];
        let mut s = P2pSession::new(cfg, &players, 0).unwrap();
        let (big, small) = (MAX_UNRELIABLE, max_unreliable_for(1_170));
        assert_eq!((ticks_per_msg(1, 2, 132, big), ticks_per_msg(1, 2, 132, small)), (4, 3));
        assert_eq!(s.max_ticks_per_msg, 4);
        let mut ep =
            Endpoint::new(EndpointConfig { max_datagram_size: 1_170, ..EndpointConfig::default() }, 0).unwrap();
        s.send_messages(0, &mut ep);
        assert_eq!(s.max_ticks_per_msg, 3);
        // Back on a transport of the config's limit, the config's count again.
        s.send_messages(1, &mut Endpoint::new(EndpointConfig::default(), 0).unwrap());
        assert_eq!(s.max_ticks_per_msg, 4);
    }
}
