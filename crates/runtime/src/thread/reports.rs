//! What a host core's turn tells the engine: its events, while the channel to it has
//! room, and its statistics (on the board, `stats_board.rs`), every ~100 ms when
//! something changed.

use super::*;

impl<P: Driver> NetLoop<P> {
    /// Moves events from the endpoint to the engine while the channel has room; the rest
    /// waits in the endpoint (see `to_engine.rs`).
    pub(super) fn forward_events(&mut self) {
        self.forward_events_to(None);
    }

    /// Like [`forward_events`](Self::forward_events), on the engine's own thread: the
    /// events go straight into its queue `direct` while that has room (the channel and
    /// the host's cache are hops a reading engine need not pay for), and only while
    /// the channel holds nothing the engine has not taken, so that it still sees every
    /// event in the endpoint's order. A `Connected` and everything after it take the
    /// channel: its send budget must reach the host before it.
    pub(super) fn forward_events_to(&mut self, mut direct: Option<&mut VecDeque<HostEvent>>) {
        self.to_engine.retry_control();
        if !self.to_engine.is_drained() {
            direct = None;
        }
        loop {
            let room = match direct.as_deref() {
                Some(q) => q.len() < q.capacity(),
                None => self.to_engine.room_for_event(),
            };
            if !room {
                break;
            }
            let Some((at, ev)) = self.p.proto.poll_event_timed() else { break };
            if matches!(ev, Event::Connected { .. }) {
                // The channel has room for it and its budget: it was empty when this
                // began, and nothing has gone into it since.
                debug_assert!(direct.is_none() || self.to_engine.room_for_event());
                direct = None;
            }
            let ev = match ev {
                Event::Connected { peer, addr, credential, binding } => {
                    if !self.peers.contains(&peer) {
                        self.peers.push(peer);
                    }
                    if let Entry::Vacant(slot) = self.budgets.entry(peer) {
                        // An accepted peer: the engine gets its budget with (just
                        // before) the Connected event, before it can send to it.
                        let budget = self.p.shared.budgets.take();
                        slot.insert(ThreadBudget::new(budget.clone()));
                        self.to_engine.send(ThreadMsg::PeerBudget(peer, budget));
                    }
                    // Statistics first, so `Host::stats` answers as soon as the engine
                    // has seen the connection.
                    if let Some(s) = self.p.proto.stats(peer) {
                        self.p.shared.stats.lock().set_peer(peer, s, self.p.clock.now_us());
                    }
                    self.p.shared.log.push(LogLevel::Info, format_args!("connection up: peer {peer} at {addr}"));
                    HostEvent::Connected { peer, addr, credential, binding }
                }
                Event::Disconnected { peer, mut reason } => {
                    self.peers.retain(|&p| p != peer);
                    self.p.shared.stats.lock().remove_peer(peer);
                    self.budgets.remove(&peer);
                    if let Some(i) = self.broken.iter().position(|&p| p == peer) {
                        self.broken.swap_remove(i);
                        reason = DisconnectReason::ProtocolError;
                    }
                    log_disconnect(&self.p.shared.log, peer, reason, self.p.proto.unverified_denial(peer));
                    HostEvent::Disconnected { peer, reason }
                }
                // When its datagram came off the socket, however long it then waited.
                Event::Message { peer, channel, data } => HostEvent::Message { peer, channel, data, received_at: at },
            };
            match direct.as_deref_mut() {
                Some(q) => q.push_back(ev),
                None => self.to_engine.send(ThreadMsg::Event(ev)),
            }
        }
        self.rt.event_backlog = (self.p.proto.pending_events() + self.to_engine.waiting()) as u64;
    }

    /// Statistics are snapshots: they go on the board (`stats_board.rs`), newest
    /// first, at most [`STATS_BURST`] times in a row and then every
    /// [`STATS_INTERVAL_US`], and only when something changed.
    pub(super) fn publish_stats(&mut self, now: Micros) {
        let earned = (now.saturating_sub(self.stats_earned_at) / STATS_INTERVAL_US) as u32;
        if earned > 0 {
            self.stats_credits = (self.stats_credits + earned).min(STATS_BURST);
            self.stats_earned_at += earned as Micros * STATS_INTERVAL_US;
        }
        if self.stats_credits == 0 {
            self.stats_owed_at = Some(self.stats_earned_at + STATS_INTERVAL_US);
            return;
        }
        self.stats_owed_at = None;
        let current = (self.p.proto.endpoint_stats(), self.rt);
        let unchanged =
            |a: &RuntimeStats, b: &RuntimeStats| RuntimeStats { wakeups: 0, ..*a } == RuntimeStats { wakeups: 0, ..*b };
        if current.0 == self.published.0 && unchanged(&current.1, &self.published.1) {
            return;
        }
        self.stats_credits -= 1;
        self.published = current;
        let mut board = self.p.shared.stats.lock();
        for &peer in &self.peers {
            if let Some(s) = self.p.proto.stats(peer) {
                board.set_peer(peer, s, now);
            }
        }
        board.set_totals(current.0, current.1, now);
    }
}

/// A connection's end, for the log: the ends either side chose are news (INFO), the
/// others say something went wrong (WARN).
fn log_disconnect(log: &LogQueue, peer: PeerId, reason: DisconnectReason, claimed: Option<DisconnectReason>) {
    let level = match reason {
        DisconnectReason::Client | DisconnectReason::Server => LogLevel::Info,
        _ => LogLevel::Warn,
    };
    match claimed {
        // Not a fact: anyone on the path could have said it. It is usually true (a
        // wrong secret, a mismatched security mode), so the log says it as a hint.
        Some(c) => log.push(
            level,
            format_args!(
                "connection down: peer {peer}, reason {reason:?} (the other end said, unverified: {})",
                c.as_str()
            ),
        ),
        None => log.push(level, format_args!("connection down: peer {peer}, reason {reason:?}")),
    }
}
