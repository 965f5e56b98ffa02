//! The network side of [`P2pSession`]: receiving and sending messages, timers,
//! disconnects and spectators.

use super::peer::{PeerPhase, SpectatorFeed};
use super::{Event, P2pSession, PeerId, SessionError, Spectator, Tick};
use crate::clock::Micros;
use crate::rollback::input_queue::AddOutcome;
use crate::rollback::message::{self, Header, KIND_INPUT, KIND_SPECTATE, KIND_SPECTATOR_ACK};
use crate::stream::SendPlan;
use crate::transport::{DisconnectReason, Transport};

/// Host to spectator, reliable: `u8 kind, u32 tick, state bytes`.
pub(crate) const KIND_SNAPSHOT: u8 = 0x24;
/// Checksum reports carried by a message that carries any.
const REPORTS_PER_MESSAGE: usize = 2;
/// How long an input that went in `input_redundancy` messages and is still unacked
/// waits before it goes again. An input's ack is a round trip away (20 ticks at 10
/// ticks of latency): repeating it in every message until then, as GGPO and GGRS do,
/// sends it ~20 times. After its first copies it only needs to go again if all of
/// them were lost, which with independent losses almost never happens; but losses
/// come in bursts too, and a burst longer than the copies would then cost a wait for
/// the resend, so that wait is kept short: 50 ms (3 ticks at 60 Hz).
const INPUT_REFRESH_US: Micros = 50_000;
/// Messages to each peer that carry a new checksum report. Checks run every few ticks
/// while messages go every tick, so repeating reports in all of them (as before) spent
/// about a third of each datagram; three copies survive 5% loss with odds of 10^-4.
const REPORT_SENDS: u8 = 3;

impl P2pSession {
    /// Takes a message the endpoint delivered from `peer`, which arrived at `now` (the
    /// runtime's `received_at`): time sync measures the peer's tick from it, and a
    /// later time (say the frame's, for a message that arrived during the frame)
    /// makes the peer look up to that much further behind on both sides, which the
    /// agreement gate then leaves uncorrected. Malformed messages and unknown peers
    /// are counted and ignored.
    pub fn handle_message(&mut self, now: Micros, peer: PeerId, data: &[u8]) {
        self.now = self.now.max(now);
        if let Some(pi) = self.peers.iter().position(|p| p.id == peer) {
            if self.peers[pi].phase.is_gone() {
                return;
            }
            return match data.first() {
                Some(&super::reconcile::KIND_REPAIR_REQUEST) => self.on_repair_request(pi, data),
                Some(&super::reconcile::KIND_REPAIR) => self.on_repair(pi, data),
                _ => self.on_peer_message(pi, data),
            };
        }
        if let Some(s) = self.spectators.iter_mut().find(|s| s.id == peer) {
            let mut scratch = std::mem::take(&mut self.scratch);
            match message::decode(data, self.cfg.game.input_size, &mut scratch) {
                // An ack of ticks never sent would stop the stream to it for good.
                Ok(d) if d.header.kind == KIND_SPECTATOR_ACK && d.header.ack > s.sent_end => {
                    self.stats.violations += 1;
                    let peer = s.id;
                    self.drop_spectator(peer);
                }
                Ok(d) if d.header.kind == KIND_SPECTATOR_ACK => s.acked = s.acked.max(d.header.ack),
                _ => self.stats.malformed += 1,
            }
            self.scratch = scratch;
            return;
        }
        self.stats.malformed += 1;
    }

    fn on_peer_message(&mut self, pi: usize, data: &[u8]) {
        let mut scratch = std::mem::take(&mut self.scratch);
        let d = match message::decode(data, self.cfg.game.input_size, &mut scratch) {
            Ok(d) if d.header.kind == KIND_INPUT && d.header.players as usize == self.peers[pi].players.len() => d,
            _ => {
                self.stats.malformed += 1;
                self.scratch = scratch;
                return;
            }
        };
        let now = self.now;
        if self.peers[pi].phase.is_gone() {
            self.scratch = scratch;
            return;
        }
        // Numbers this side can check: the peer cannot need inputs beyond those sent
        // to it, nor have confirmed ticks it has not simulated, nor be further ahead
        // than our inputs and its window allow. A lie here (or a corrupted datagram)
        // would stop the inputs it needs for good, or steer our clock: the
        // connection is closed instead, and the session goes on without it.
        let h = d.header;
        let tick_bound = self.peer_tick_bound(pi, &d);
        if h.ack > self.peers[pi].inputs.sent_end()
            || h.confirmed > h.tick
            || tick_bound.is_some_and(|b| h.tick as u64 > b)
        {
            self.scratch = scratch;
            return self.close_violator(pi);
        }
        // The bound proposals are checked against is the one before this message: its
        // confirmed tick may be past a player it disconnects in the same message (a
        // disconnected player confirms every tick), and checked against that, an
        // honest proposal looked like one reaching back past final ticks (an honest
        // peer was closed as a violator).
        let proposal_bound = self.safe_bound();
        let p = &mut self.peers[pi];
        p.last_recv = now;
        if h.loading {
            p.loading_until = now + super::progress::LOADING_HOLD_US;
        }
        let first = !p.phase.heard();
        if matches!(p.phase, PeerPhase::Interrupted { .. }) {
            self.events.push_back(Event::PeerResumed { peer: p.id });
        }
        p.phase = PeerPhase::Live;
        // The latest message's ack is the truth, even when lower than an earlier one
        // (which then was corrupted or forged): keeping the maximum would stop the
        // resends the peer still needs. Ordering by the sender's tick would not help,
        // a forged tick from the future would freeze it. A reordered older message
        // only costs a few redundant resends.
        p.inputs.set_ack(h.ack);
        p.remote_confirmed = p.remote_confirmed.max(h.confirmed);
        // The latest message's tick, as for the ack: keeping the highest let one
        // forged far-future tick stand for the rest of the match (the clock then ran
        // at its limit for good). A reordered older message only makes the peer look
        // a little behind until the next one. Where nothing of ours bounds the tick
        // (see `peer_tick_bound`), it is held to our own tick plus the window, so a
        // lie there costs at most the window's worth of correction.
        let window = self.cfg.max_prediction + super::MAX_INPUT_DELAY;
        p.remote_tick = match tick_bound {
            Some(_) => h.tick,
            None => h.tick.min(self.current.saturating_add(window)),
        };
        p.remote_tick_at = now;
        // The advantage the peer reports cannot honestly exceed what the two
        // windows allow either way (each side is at most its window plus its input
        // delay ahead of the inputs it has from the other): beyond that it is a lie
        // or noise, and only its bounded part may steer our clock.
        let w = window as f32;
        p.remote_adv = h.advantage.clamp(-w, w);
        if first && !self.is_running() {
            let synchronized = self.peers.iter().filter(|p| p.phase.heard()).count() as u32;
            let total = self.peers.len() as u32;
            let peer = self.peers[pi].id;
            self.events.push_back(Event::PeerSynchronized { peer, synchronized, total });
            self.start_when_settled();
        }
        // Inputs, in order; never further ahead than half the history (the rest of
        // the ring may still be needed).
        let s = self.cfg.game.input_size;
        let k = h.players as usize;
        let limit = self.current as u64 + (self.cfg.history / 2) as u64;
        'ticks: for i in 0..h.count as usize {
            let t = h.first as u64 + i as u64;
            if t >= limit {
                break;
            }
            for (j, &player) in self.peers[pi].players.iter().enumerate() {
                if self.recon.forwarded(player) {
                    // Its peer lied to this side: its inputs come from a majority peer.
                    continue;
                }
                let at = (i * k + j) * s;
                if self.players[player].queue.add_confirmed(t as Tick, &d.inputs[at..at + s]) == AddOutcome::Gap {
                    break 'ticks;
                }
            }
        }
        if !self.take_proposals(pi, &d, proposal_bound) {
            self.scratch = scratch;
            return self.close_violator(pi);
        }
        // Every peer lists the same players: digests of another number are malformed,
        // and the message's reports are not compared.
        let digests_ok = d.digests().len() == 0 || d.digests().len() == self.players.len();
        if !digests_ok {
            self.stats.malformed += 1;
        }
        let mut theirs = std::mem::take(&mut self.their_digests);
        for (i, (tick, checksum)) in d.reports().enumerate().filter(|_| digests_ok) {
            // The digests belong to the first (newest) report only.
            theirs.clear();
            if i == 0 {
                theirs.extend(d.digests());
            }
            match self.checks.get(tick) {
                Some(local) => self.compare(pi, tick, local, checksum, &theirs),
                None if tick >= self.next_check => self.peers[pi].add_pending(tick, checksum, &theirs),
                None => {}
            }
        }
        self.their_digests = theirs;
        self.scratch = scratch;
    }

    /// The highest tick an honest message from peer `pi` can carry, if this side
    /// can bound it. The sender simulates at most `max_prediction` ticks past the
    /// inputs it has confirmed (its advance refuses beyond, and every peer of a match
    /// runs the same window), and of our players' inputs it can have confirmed none
    /// beyond those we sent it (`sent_end`). Nothing of ours bounds it when we have
    /// no local players, or when the message counts one of them disconnected (the
    /// sender then no longer waits for our inputs).
    fn peer_tick_bound(&self, pi: usize, d: &message::Decoded<'_>) -> Option<u64> {
        let ours_gone = d.disconnects().any(|(player, _)| self.local.contains(&(player as usize)));
        if self.local.is_empty() || ours_gone {
            return None;
        }
        Some(self.peers[pi].inputs.sent_end() as u64 + self.cfg.max_prediction as u64)
    }

    /// Tells the session that the endpoint closed the connection to `peer` for
    /// `reason` (or call it to drop a peer on purpose). Its players are proposed
    /// disconnected from the first tick whose input is missing.
    pub fn peer_disconnected(&mut self, peer: PeerId, reason: DisconnectReason) {
        if let Some(pi) = self.peers.iter().position(|p| p.id == peer && !p.phase.is_gone()) {
            self.peers[pi].phase = PeerPhase::Gone;
            self.events.push_back(Event::PeerDisconnected { peer, reason });
            for j in 0..self.peers[pi].players.len() {
                let player = self.peers[pi].players[j];
                let tick = self.players[player].queue.next_needed();
                self.mark_disconnected(player, tick, None);
            }
            self.start_when_settled();
        }
        if let Some(i) = self.spectators.iter().position(|s| s.id == peer) {
            self.spectators.remove(i);
        }
    }

    /// Drops peer `pi` for a message that contradicted what this side knows, and closes
    /// its connection.
    pub(super) fn close_violator(&mut self, pi: usize) {
        self.stats.violations += 1;
        self.close_peer(self.peers[pi].id, DisconnectReason::ProtocolError);
    }

    /// Drops `peer` for `reason` and closes its connection at the next `send_messages`.
    fn close_peer(&mut self, peer: PeerId, reason: DisconnectReason) {
        self.to_close.push((peer, None));
        self.peer_disconnected(peer, reason);
    }

    /// The engine drops remote `player` on purpose (GGPO's `ggpo_disconnect_player`):
    /// its peer (with every player behind it) is dropped as after a timeout
    /// (`PeerDisconnected`, reason `KickedByEngine`), its connection closed and the peer
    /// told `KickedByEngine`; the match goes on with that peer's inputs marked
    /// disconnected from the first tick not yet received. The other peers take that
    /// proposal only if they lost the peer too or a majority of them propose it
    /// (one peer's word is what a liar's would be). Errors: no such player, a local
    /// player, or a peer already gone.
    pub fn disconnect_player(&mut self, player: usize) -> Result<(), SessionError> {
        let peer = match self.players.get(player).map(|p| p.kind()) {
            None => return Err(SessionError::UnknownPlayer(player)),
            Some(super::PlayerKind::Local) => return Err(SessionError::IsLocal(player)),
            Some(super::PlayerKind::Remote(id)) => id,
        };
        if !self.peers.iter().any(|p| p.id == peer && !p.phase.is_gone()) {
            return Err(SessionError::AlreadyDisconnected(player));
        }
        self.to_close.push((peer, Some(DisconnectReason::KickedByEngine)));
        self.peer_disconnected(peer, DisconnectReason::KickedByEngine);
        Ok(())
    }

    /// Drops a spectator that broke the protocol and closes its connection.
    fn drop_spectator(&mut self, peer: PeerId) {
        if let Some(i) = self.spectators.iter().position(|s| s.id == peer) {
            self.spectators.remove(i);
            self.to_close.push((peer, None));
            self.events.push_back(Event::SpectatorDropped { peer });
        }
    }

    /// Changes the silence timeouts from now on (0 = off, as in [`P2pConfig`](super::P2pConfig)): the
    /// drop after `disconnect_timeout_us` and the notice after `notify_after_us`. A
    /// peer already reported interrupted stays so until it is heard again. Error: the
    /// notice not below the drop while both are on.
    pub fn set_timeouts(&mut self, disconnect_timeout_us: Micros, notify_after_us: Micros) -> Result<(), SessionError> {
        if !super::config::p2p_timeouts_fit(notify_after_us, disconnect_timeout_us) {
            return Err(SessionError::Timeouts { notify_after_us, disconnect_timeout_us });
        }
        self.cfg.notify_after_us = notify_after_us;
        self.cfg.disconnect_timeout_us = disconnect_timeout_us;
        // The no-progress watch starts over: a shorter timeout does not fire at once
        // for a stall that began under the longer one.
        let confirmed = self.confirmed_all();
        self.watch.restart(confirmed, self.now);
        Ok(())
    }

    /// Runs the silence timers. [`P2pSession::ticks_due`] calls it.
    pub fn update(&mut self, now: Micros) {
        self.now = self.now.max(now);
        for i in 0..self.peers.len() {
            let p = &mut self.peers[i];
            if p.phase.is_gone() {
                continue;
            }
            let silent = self.now.saturating_sub(p.last_recv);
            let (notify, timeout) = (self.cfg.notify_after_us, self.cfg.disconnect_timeout_us);
            if timeout != 0 && silent >= timeout {
                let id = p.id;
                self.peer_disconnected(id, DisconnectReason::Timeout);
            } else if notify != 0 && silent >= notify && !matches!(p.phase, PeerPhase::Interrupted { .. }) {
                p.phase = PeerPhase::Interrupted { heard: p.phase.heard() };
                // Never dropped (timeout 0): "never" is the largest time.
                let left = if timeout == 0 { Micros::MAX } else { timeout - silent };
                self.events.push_back(Event::PeerInterrupted { peer: p.id, disconnect_in_us: left });
            }
        }
        self.check_progress();
    }

    /// Adds a spectator behind `peer`. Before the first tick it simply receives every
    /// confirmed input; later, the engine is first asked (through
    /// [`crate::engine::Request::DumpState`]) for a snapshot that is sent on the
    /// reliable channel, and inputs follow from the snapshot's tick.
    pub fn add_spectator(&mut self, peer: PeerId) {
        if peer == 0 || self.spectators.iter().any(|s| s.id == peer) || self.peers.iter().any(|p| p.id == peer) {
            return;
        }
        let mid_match = self.current > 0;
        self.spectators.push(Spectator {
            id: peer,
            acked: 0,
            sent_end: 0,
            feed: if mid_match { SpectatorFeed::NeedsSnapshot { asked: None } } else { SpectatorFeed::Inputs },
            last_sent_at: None,
        });
    }

    /// Queues this tick's messages on `endpoint`: inputs (with everything unacked),
    /// acks, frame advantage, disconnects and checksum reports to every peer, and
    /// confirmed inputs to spectators. Call once per engine frame, after advancing;
    /// then flush the endpoint.
    pub fn send_messages<T: Transport + ?Sized>(&mut self, now: Micros, endpoint: &mut T) {
        self.now = self.now.max(now);
        for (peer, told) in self.to_close.drain(..) {
            match told {
                Some(reason) => endpoint.disconnect_with(self.now, peer, reason),
                None => endpoint.disconnect(self.now, peer),
            }
        }
        // Messages no larger than the transport takes, if it says less than the config.
        let limit = endpoint.max_unreliable().min(self.cfg.max_unreliable);
        if limit != self.ticks_limit {
            let players = self.players.len();
            self.max_ticks_per_msg = super::ticks_per_msg(self.local.len(), players, self.cfg.game.input_size, limit);
            self.ticks_limit = limit;
        }
        let tick_us = self.cfg.game.tick_us() as Micros;
        let s = self.cfg.game.input_size;
        let local_next = self.local_next();
        let history = self.players[0].queue.capacity() as Tick;
        let own_confirmed = self.confirmed_all().min(self.current);
        let plan = self.input_plan();
        let mut out = std::mem::take(&mut self.out);
        for pi in 0..self.peers.len() {
            let p = &self.peers[pi];
            if p.phase.is_gone() {
                continue;
            }
            let due = p.last_sent_at.is_none_or(|t| self.now >= t + tick_us) || local_next > p.last_sent_next;
            if !due {
                continue;
            }
            let rtt = endpoint.stats(p.id).map(|st| st.srtt_us);
            // Our unacked inputs still in the history, from the oldest owed. When they
            // are more than a message carries, a tick unacked past a round trip (and a
            // tick of slack, never sooner than INPUT_REFRESH_US) counts as late: a
            // refresh at 50 ms on a 100 ms round trip would resend every input before
            // its ack could come. (With 255-byte inputs, 2 ticks a message, and a round
            // trip of 4 ticks, starting at the oldest owed every time stalled the match
            // at the prediction window.)
            let late_after = INPUT_REFRESH_US.max((p.rtt_us * 1.25) as Micros + tick_us);
            let held = local_next.saturating_sub(history - 1)..local_next;
            let run = self.peers[pi].inputs.run(self.now, held, &plan, self.max_ticks_per_msg, late_after);
            if run.resend && self.cfg.input_redundancy > 0 {
                self.stats.input_refreshes += 1;
            }
            let (first, count) = (run.ticks.start, run.ticks.len());
            let p = &self.peers[pi];
            let ack = p.players.iter().map(|&i| self.players[i].queue.next_needed()).min().unwrap_or(0);
            let h = Header {
                kind: KIND_INPUT,
                tick: self.current,
                ack,
                confirmed: own_confirmed,
                advantage: p.local_adv,
                first,
                count: count as u8,
                players: self.local.len() as u8,
                loading: self.watch.loading,
            };
            let newest_report = self.checks.iter_newest().next().map(|(t, _)| t);
            let send_reports =
                newest_report.is_some() && (p.report_tick != newest_report || p.report_sends < REPORT_SENDS);
            let reports = if send_reports { REPORTS_PER_MESSAGE } else { 0 };
            let (players, local) = (&self.players, &self.local);
            message::encode(
                &mut out,
                &h,
                s,
                |i, j| players[local[j]].queue.confirmed(first + i as Tick).expect("unacked local input in history"),
                self.disconnect_entries(),
                self.checks.iter_newest().take(reports),
                if send_reports { self.checks.newest_digests() } else { &[] },
            );
            if endpoint.send(p.id, self.cfg.channel, &out).is_err() {
                self.stats.send_errors += 1;
            }
            let p = &mut self.peers[pi];
            p.inputs.book_run(run.ticks, self.now, &plan);
            if send_reports {
                if p.report_tick != newest_report {
                    p.report_tick = newest_report;
                    p.report_sends = 0;
                }
                p.report_sends += 1;
            }
            if let Some(rtt) = rtt {
                p.rtt_us = rtt;
            }
            p.last_sent_at = Some(self.now);
            p.last_sent_next = local_next;
        }
        self.send_to_spectators(endpoint, &mut out);
        self.out = out;
        self.send_repairs(endpoint);
    }

    /// How our inputs go to each peer: each in `input_redundancy` consecutive messages,
    /// then, still unacked, again (one message) every [`INPUT_REFRESH_US`]; with
    /// `input_redundancy` 0, every unacked input in every message.
    fn input_plan(&self) -> SendPlan {
        match self.cfg.input_redundancy {
            0 => SendPlan { copies: u8::MAX, resend_copies: u8::MAX, resend_after: Some(0), window: usize::MAX },
            copies => SendPlan { copies, resend_copies: 1, resend_after: Some(INPUT_REFRESH_US), window: usize::MAX },
        }
    }

    fn disconnect_entries(&self) -> impl Iterator<Item = (u16, Tick)> + Clone + '_ {
        self.players.iter().enumerate().filter_map(|(i, p)| p.queue.disconnect_tick().map(|t| (i as u16, t)))
    }

    fn send_to_spectators<T: Transport + ?Sized>(&mut self, endpoint: &mut T, out: &mut Vec<u8>) {
        let tick_us = self.cfg.game.tick_us() as Micros;
        let confirmed = self.safe_bound();
        let history = self.players[0].queue.capacity() as Tick;
        let mut i = 0;
        while i < self.spectators.len() {
            let sp = &mut self.spectators[i];
            match std::mem::replace(&mut sp.feed, SpectatorFeed::Inputs) {
                SpectatorFeed::SnapshotReady(msg) => {
                    if endpoint.send(sp.id, self.cfg.reliable_channel, &msg).is_err() {
                        self.stats.send_errors += 1;
                    }
                    i += 1;
                    continue;
                }
                waiting @ SpectatorFeed::NeedsSnapshot { .. } => {
                    sp.feed = waiting;
                    i += 1;
                    continue;
                }
                SpectatorFeed::Inputs => {}
            }
            if confirmed.saturating_sub(sp.acked) > history / 2 {
                let peer = sp.id;
                self.spectators.remove(i);
                self.events.push_back(Event::SpectatorDropped { peer });
                continue;
            }
            if sp.last_sent_at.is_none_or(|t| self.now >= t + tick_us) {
                sp.last_sent_at = Some(self.now);
                let first = sp.acked.min(confirmed);
                let count = ((confirmed - first) as usize).min(self.max_ticks_per_msg);
                sp.sent_end = sp.sent_end.max(first + count as Tick);
                let h = Header {
                    kind: KIND_SPECTATE,
                    tick: self.current,
                    ack: 0,
                    confirmed,
                    advantage: 0.0,
                    first,
                    count: count as u8,
                    players: self.players.len() as u8,
                    loading: false,
                };
                let (players, zero) = (&self.players, &self.zero);
                message::encode(
                    out,
                    &h,
                    self.cfg.game.input_size,
                    |i, p| {
                        let t = first + i as Tick;
                        match players[p].queue.disconnect_tick() {
                            Some(d) if t >= d => zero.as_slice(),
                            _ => players[p].queue.confirmed(t).expect("confirmed input in history"),
                        }
                    },
                    self.disconnect_entries(),
                    std::iter::empty(),
                    &[],
                );
                if endpoint.send(self.spectators[i].id, self.cfg.channel, out).is_err() {
                    self.stats.send_errors += 1;
                }
            }
            i += 1;
        }
    }
}
