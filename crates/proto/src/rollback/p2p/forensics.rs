//! Desync detection and forensics for [`P2pSession`]: comparing checksums of ticks
//! confirmed everywhere, and on a mismatch building a dump a developer can diff (the
//! confirmed inputs around the tick and the engine's state bytes for it, asked for
//! through a `DumpState` request). With the checksums, peers compare digests of the
//! inputs each received from every player, which name the player whose peer sent
//! different peers different inputs: without them, the peers it lied to
//! blamed each other, and nobody it.

use super::super::desync::InputDigest;
use super::peer::SpectatorFeed;
use super::*;

/// The forensic dump of a desync: one at a time, from the desync found to the dump
/// taken by the engine.
#[derive(Debug, Clone)]
pub(super) enum Dump {
    /// None being built or waiting: the next first desync with a peer is dumped.
    Idle,
    /// A desync being dumped, waiting for the engine's state bytes of its tick.
    Collecting(DumpJob),
    /// Built, until [`P2pSession::take_desync_dump`] takes it.
    Ready(Vec<u8>),
}

/// A desync being dumped.
#[derive(Debug, Clone, Copy)]
pub(super) struct DumpJob {
    tick: Tick,
    local: u64,
    remote: u64,
    peer: PeerId,
    culprit: Option<usize>,
    /// The engine was asked for the tick's state (or the dump was built without it).
    requested: bool,
}

impl P2pSession {
    /// Digests every player's final inputs of the ticks before `until` (the next
    /// check tick, or the bound of final ticks if lower).
    pub(super) fn digest_inputs(&mut self, until: Tick) {
        while self.digests.end() < until {
            if self.digests.is_lost() {
                return self.digests.lose(until);
            }
            let t = self.digests.end();
            for (p, q) in self.players.iter().map(|p| &p.queue).enumerate() {
                match q.disconnect_tick() {
                    Some(d) if t >= d => self.digests.add(p, InputStatus::Disconnected, &self.zero),
                    _ => match q.confirmed(t) {
                        Some(b) => self.digests.add(p, InputStatus::Confirmed, b),
                        // Only a final tick is digested, and its inputs stay in the
                        // history while the bound follows the session; a peer whose
                        // confirmed tick leapt can still move the bound past them.
                        // Digests that every peer would see differ are worse than
                        // none: they stop.
                        None => return self.digests.lose(until),
                    },
                }
            }
            self.digests.next_tick();
        }
    }

    /// The player whose inputs this peer and peer `pi` received differently by check
    /// tick `tick`, from our digests and `theirs` (one per player, or none).
    ///
    /// A remote player's inputs that differ were sent differently to the two of us
    /// (whether its peer is `pi` or a third one), or `pi` misreports them: the
    /// lowest such player is named. If only our own players' differ, `pi` holds
    /// inputs we never sent, so it misreports: its first player is named.
    fn culprit(&self, pi: usize, tick: Tick, theirs: &[InputDigest]) -> Option<usize> {
        let mine = self.checks.digests(tick)?;
        if mine.len() != theirs.len() {
            return None;
        }
        let differ = |x: &usize| mine[*x] != theirs[*x];
        let local = |x: &usize| self.players[*x].is_local();
        let remote = (0..mine.len()).filter(differ).find(|x| !local(x));
        remote.or_else(|| (0..mine.len()).any(|x| differ(&x)).then(|| self.peers[pi].players[0]))
    }

    /// Compares our checksum of check tick `tick` with a peer's report, once per tick
    /// and peer (its reports come again in later messages, against loss). A mismatch is
    /// a `Desync` event, naming the culprit that the input digests `theirs` show (if
    /// any); the first one with each peer is also dumped.
    pub(super) fn compare(&mut self, peer_index: usize, tick: Tick, local: u64, remote: u64, theirs: &[InputDigest]) {
        let p = &mut self.peers[peer_index];
        if p.compared_until.is_some_and(|t| tick <= t) {
            return;
        }
        p.compared_until = Some(tick);
        self.stats.checks_compared += 1;
        if local == remote {
            return self.record_vote(peer_index, tick, theirs, None);
        }
        let culprit = self.culprit(peer_index, tick, theirs);
        // A third peer's player whose inputs the two of us received differently: the
        // votes of every peer on it settle whose inputs stand (`reconcile.rs`).
        if let Some(c) = culprit.filter(|&c| self.defers(peer_index, c)) {
            return self.record_vote(peer_index, tick, theirs, Some((local, remote, c)));
        }
        self.record_vote(peer_index, tick, theirs, None);
        self.report_desync(peer_index, tick, local, remote, culprit);
    }

    /// Raises a `Desync` with peer `peer_index` (and dumps the first one with it).
    pub(super) fn report_desync(
        &mut self,
        peer_index: usize,
        tick: Tick,
        local: u64,
        remote: u64,
        culprit: Option<usize>,
    ) {
        let p = &mut self.peers[peer_index];
        let first_with_peer = !std::mem::replace(&mut p.desynced, true);
        let peer = p.id;
        self.stats.desyncs += 1;
        self.events.push_back(Event::Desync { tick, local, remote, peer, culprit });
        if first_with_peer && matches!(self.dump, Dump::Idle) {
            self.dump = Dump::Collecting(DumpJob { tick, local, remote, peer, culprit, requested: false });
            if self.ring.slot_of(tick).is_none() {
                self.build_dump(None);
            }
        }
    }

    /// Requests state bytes for a pending desync dump or spectator snapshot.
    /// One request per tick: `provide_state` serves everyone waiting for that tick's
    /// state at once (the dump and every spectator), so a second request for the same
    /// tick would have its answer refused.
    pub(super) fn queue_state_dumps(&mut self) {
        let mut requested: Option<Tick> = None;
        let ask = match &mut self.dump {
            Dump::Collecting(job) if !job.requested => {
                job.requested = true;
                Some(*job)
            }
            _ => None,
        };
        if let Some(job) = ask {
            match self.ring.slot_of(job.tick) {
                Some(slot) => {
                    self.requests.push_dump(job.tick, slot);
                    requested = Some(job.tick);
                }
                None => self.build_dump(None),
            }
        }
        let bound = self.safe_bound();
        for s in self.spectators.iter_mut() {
            let SpectatorFeed::NeedsSnapshot { asked } = &mut s.feed else { continue };
            if let Some((t, slot)) = self.ring.latest_at_or_before(bound) {
                *asked = Some(t);
                if requested != Some(t) {
                    self.requests.push_dump(t, slot);
                    requested = Some(t);
                }
            }
        }
    }

    pub(super) fn build_dump(&mut self, state: Option<&[u8]>) {
        let Dump::Collecting(job) = self.dump else { return };
        let first = job.tick.saturating_sub(DUMP_RADIUS);
        let end = (job.tick + DUMP_RADIUS + 1).min(self.confirmed_all()).min(self.current.max(job.tick + 1));
        let mut inputs = Vec::new();
        let players = self.players.len();
        for t in first..end {
            let mut row = Vec::with_capacity(players);
            for q in self.players.iter().map(|p| &p.queue) {
                match q.disconnect_tick() {
                    Some(d) if t >= d => row.push((InputStatus::Disconnected, vec![0; self.cfg.game.input_size])),
                    _ => match q.confirmed(t) {
                        Some(b) => row.push((InputStatus::Confirmed, b.to_vec())),
                        None => row.clear(),
                    },
                }
            }
            if row.len() == players {
                inputs.push(row);
            } else if inputs.is_empty() {
                continue;
            } else {
                break;
            }
        }
        let first_tick = end.saturating_sub(inputs.len() as Tick).max(first);
        let dump = DesyncDump {
            tick: job.tick,
            local: job.local,
            remote: job.remote,
            peer: job.peer,
            culprit: job.culprit,
            players,
            input_size: self.cfg.game.input_size,
            first_tick,
            inputs,
            state: state.map(<[u8]>::to_vec),
        };
        self.dump = Dump::Ready(dump.encode());
        self.events.push_back(Event::DesyncDumpReady { tick: job.tick });
    }

    /// The forensic dump of the last desync, ready to be written to a file
    /// (format: [`DesyncDump`]). Taking it allows a desync with another peer to be dumped
    /// (each peer's first mismatch is dumped, once).
    pub fn take_desync_dump(&mut self) -> Option<Vec<u8>> {
        match std::mem::replace(&mut self.dump, Dump::Idle) {
            Dump::Ready(dump) => Some(dump),
            other => {
                self.dump = other;
                None
            }
        }
    }

    /// The engine's answer to [`Request::DumpState`]: the serialized state of `tick`.
    pub fn provide_state(&mut self, tick: Tick, state: &[u8]) -> Result<(), SessionError> {
        let mut used = false;
        if matches!(self.dump, Dump::Collecting(j) if j.tick == tick && j.requested) {
            self.build_dump(Some(state));
            used = true;
        }
        for s in self.spectators.iter_mut().filter(|s| s.feed == SpectatorFeed::NeedsSnapshot { asked: Some(tick) }) {
            let mut msg = Vec::with_capacity(5 + state.len());
            msg.push(net::KIND_SNAPSHOT);
            msg.extend_from_slice(&tick.to_le_bytes());
            msg.extend_from_slice(state);
            s.feed = SpectatorFeed::SnapshotReady(msg);
            s.acked = tick;
            // The snapshot stands for every tick before `tick`: a spectator that acks it
            // (on a fast link, before our next frame sent any input) acks what it was
            // sent, not a lie beyond it.
            s.sent_end = s.sent_end.max(tick);
            used = true;
        }
        if used { Ok(()) } else { Err(SessionError::UnexpectedTick(tick)) }
    }
}
