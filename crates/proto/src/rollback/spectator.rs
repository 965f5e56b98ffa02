//! A spectator: receives confirmed inputs from one host peer and plays them, catching
//! up faster when it falls behind.
//!
//! A spectator added before the match starts gets every input from tick 0. One
//! added mid-match first receives a state snapshot (on the reliable channel), which
//! it hands to the engine as a `Restore` request, then the inputs from that tick.

use crate::game::CheckedConfig;
use std::collections::VecDeque;

use super::PredictionMode;
use super::event::Event;
use super::input_queue::InputQueue;
use super::message::{self, Header, KIND_SPECTATE, KIND_SPECTATOR_ACK};
use super::p2p::SessionError;
use crate::clock::Micros;
use crate::engine::{AdvanceStatus, Request, RequestQueue, Tick};
use crate::game::{ConfigProblems, GameShape, MAX_ROLLBACK_PLAYERS};
use crate::transport::{CHANNEL_UNRELIABLE, PeerId, Transport};

/// Settings of a [`SpectatorSession`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpectatorConfig {
    /// The watched match: its players (1..=[`MAX_ROLLBACK_PLAYERS`]) and input size;
    /// its tick rate and catch-up cap are for the caller's clock. Default: 2 players of
    /// 2 bytes at 60 Hz.
    pub game: GameShape,
    /// Ticks of input history kept, at least 64.
    pub history: usize,
    /// More than this many ticks of received inputs not yet played: catch up.
    pub max_behind: u32,
    /// Ticks played per advance while catching up, 1..=16.
    pub catchup_speed: u32,
    /// Channel for acks.
    pub channel: u8,
}

impl Default for SpectatorConfig {
    fn default() -> Self {
        SpectatorConfig {
            game: GameShape::new(2, 2),
            history: 256,
            max_behind: 10,
            catchup_speed: 2,
            channel: CHANNEL_UNRELIABLE,
        }
    }
}

impl SpectatorConfig {
    /// The defaults for `game`.
    pub fn new(game: GameShape) -> Self {
        SpectatorConfig { game, ..SpectatorConfig::default() }
    }
}

impl CheckedConfig for SpectatorConfig {
    /// Pushes every problem of these settings into `problems`, each under its field's
    /// name (the shape's under `players`, `input_size`, `tick_rate_hz` and
    /// `max_frame_us`).
    fn check(&self, problems: &mut ConfigProblems) {
        self.game.check(MAX_ROLLBACK_PLAYERS, problems);
        self.game.check_catch_up(problems);
        if self.history < 64 {
            problems.push("history", format!("{} is below 64", self.history));
        }
        if !(1..=16).contains(&self.catchup_speed) {
            problems.push("catchup_speed", format!("{} is not in 1..=16", self.catchup_speed));
        }
    }
}

/// The spectator side. Poll requests after each advance as with a P2P session.
pub struct SpectatorSession {
    cfg: SpectatorConfig,
    host: PeerId,
    queues: Vec<InputQueue>,
    current: Tick,
    /// Where play started: 0, or the tick of the join snapshot.
    start: Tick,
    /// One past the newest tick of the host's inputs taken, with no gap from `start`.
    received_end: Tick,
    started: bool,
    restore: Option<(Tick, Vec<u8>)>,
    requests: RequestQueue,
    events: VecDeque<Event>,
    scratch: Vec<u8>,
    out: Vec<u8>,
    last_ack_at: Option<Micros>,
    malformed: u64,
}

impl SpectatorSession {
    /// A spectator of the match hosted by `host`.
    pub fn new(cfg: SpectatorConfig, host: PeerId) -> Result<Self, SessionError> {
        cfg.validate().map_err(SessionError::Config)?;
        Ok(SpectatorSession {
            queues: (0..cfg.game.players)
                .map(|_| InputQueue::new(cfg.game.input_size, cfg.history, PredictionMode::Zero))
                .collect(),
            host,
            current: 0,
            start: 0,
            received_end: 0,
            started: false,
            restore: None,
            requests: RequestQueue::new(cfg.game.players, cfg.game.input_size, cfg.catchup_speed as usize + 1),
            events: VecDeque::new(),
            scratch: Vec::new(),
            out: Vec::with_capacity(64),
            last_ack_at: None,
            malformed: 0,
            cfg,
        })
    }

    /// The next tick to play.
    pub fn current_tick(&self) -> Tick {
        self.current
    }

    /// True once the spectator knows where it starts (tick 0 or a snapshot).
    pub fn is_started(&self) -> bool {
        self.started
    }

    /// Ticks received but not played yet.
    pub fn frames_behind(&self) -> u32 {
        self.available().saturating_sub(self.current)
    }

    /// Messages refused.
    pub fn malformed(&self) -> u64 {
        self.malformed
    }

    /// The first tick not playable yet. A queue whose player is disconnected counts as
    /// known to `Tick::MAX`, so the ticks the host actually sent bound it too: with
    /// every player disconnected (which a host, whose own players never are, can only
    /// claim by lying) the spectator would otherwise play on, at catch-up speed, past
    /// anything it was sent.
    fn available(&self) -> Tick {
        let queues = self.queues.iter().map(|q| q.confirmed_until()).min().unwrap_or(0);
        queues.min(self.received_end)
    }

    /// Takes a message from the host (inputs or the join snapshot).
    pub fn handle_message(&mut self, peer: PeerId, data: &[u8]) {
        if peer != self.host {
            self.malformed += 1;
            return;
        }
        if data.first() == Some(&crate::rollback::p2p::KIND_SNAPSHOT_BYTE) {
            if data.len() < 5 || self.started {
                self.malformed += 1;
                return;
            }
            let tick = u32::from_le_bytes([data[1], data[2], data[3], data[4]]);
            for q in &mut self.queues {
                q.start_at(tick);
            }
            self.current = tick;
            self.start = tick;
            self.received_end = tick;
            self.started = true;
            self.events.push_back(Event::Synchronized);
            self.restore = Some((tick, data[5..].to_vec()));
            return;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        match message::decode(data, self.cfg.game.input_size, &mut scratch) {
            Ok(d) if d.header.kind == KIND_SPECTATE && d.header.players as usize == self.cfg.game.players => {
                let h = d.header;
                if !self.started && h.first == 0 {
                    self.started = true;
                    self.events.push_back(Event::Synchronized);
                }
                if self.started {
                    // A disconnect entry must name a player of the match and must not
                    // fall before inputs of that player the host already gave us as
                    // confirmed (from the start tick on: a player gone before a join
                    // snapshot is news, not a contradiction). An honest host only sends
                    // final ticks, so such an entry is a lie or corruption; taken, it
                    // would undo played ticks and count the player as known to
                    // Tick::MAX. The whole message is refused: its other numbers come
                    // from the same sender.
                    let contradicts = d
                        .disconnects()
                        .any(|(p, t)| self.queues.get(p as usize).is_none_or(|q| t.max(self.start) < q.next_needed()));
                    if contradicts {
                        self.malformed += 1;
                        self.scratch = scratch;
                        return;
                    }
                    for (p, t) in d.disconnects() {
                        self.queues[p as usize].disconnect(t);
                    }
                    let s = self.cfg.game.input_size;
                    for i in 0..h.count as usize {
                        // Ticks from the wire: never further ahead than half the history,
                        // and never the last tick number (it has no next).
                        let t = h.first as u64 + i as u64;
                        if t >= self.current as u64 + (self.cfg.history / 2) as u64 || t >= Tick::MAX as u64 {
                            break;
                        }
                        let t = t as Tick;
                        for (p, q) in self.queues.iter_mut().enumerate() {
                            let at = (i * self.cfg.game.players + p) * s;
                            q.add_confirmed(t, &d.inputs[at..at + s]);
                        }
                        // Only ticks the host sent, with no gap, count as received,
                        // whatever the queues say of disconnected players (see
                        // `available`). `t` is below Tick::MAX (checked above).
                        if t == self.received_end {
                            self.received_end = t + 1;
                        }
                    }
                }
            }
            _ => self.malformed += 1,
        }
        self.scratch = scratch;
    }

    /// Plays the next tick, or several while more than `max_behind` ticks behind.
    pub fn advance(&mut self) -> AdvanceStatus {
        self.requests.clear();
        if let Some((tick, state)) = self.restore.take() {
            self.requests.push_restore(tick, &state);
        }
        if !self.started || self.available() <= self.current {
            return AdvanceStatus::WaitingForInput;
        }
        let n = if self.frames_behind() > self.cfg.max_behind { self.cfg.catchup_speed } else { 1 };
        for _ in 0..n {
            if self.current >= self.available() {
                break;
            }
            self.requests.begin_advance(self.current, false);
            for q in &mut self.queues {
                let (b, s) = q.input_for(self.current);
                self.requests.push_input(b, s);
            }
            self.current += 1;
        }
        AdvanceStatus::Advanced
    }

    /// Acknowledges received inputs to the host (at most once per tick period).
    pub fn send_messages<T: Transport + ?Sized>(&mut self, now: Micros, endpoint: &mut T, tick_us: Micros) {
        if self.last_ack_at.is_some_and(|t| now < t + tick_us) {
            return;
        }
        self.last_ack_at = Some(now);
        let ack = if self.started { self.available() } else { 0 };
        let h = Header {
            kind: KIND_SPECTATOR_ACK,
            tick: self.current,
            ack,
            confirmed: 0,
            advantage: 0.0,
            first: 0,
            count: 0,
            players: 0,
            loading: false,
        };
        message::encode(
            &mut self.out,
            &h,
            self.cfg.game.input_size,
            |_, _| &[],
            std::iter::empty(),
            std::iter::empty(),
            &[],
        );
        let _ = endpoint.send(self.host, self.cfg.channel, &self.out);
    }

    /// The next request, in order.
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's inputs for `count` ticks from `first`, every player's input `[7, 7]`.
    fn spectate(first: Tick, count: u8, players: usize) -> Vec<u8> {
        let h = Header {
            kind: KIND_SPECTATE,
            tick: first.saturating_add(count as Tick),
            ack: 0,
            confirmed: first.saturating_add(count as Tick),
            advantage: 0.0,
            first,
            count,
            players: players as u8,
            loading: false,
        };
        let mut out = Vec::new();
        message::encode(&mut out, &h, 2, |_, _| &[7, 7], std::iter::empty(), std::iter::empty(), &[]);
        out
    }

    /// Found by fuzzing: a join snapshot near the last tick number, then the inputs
    /// after it, counted ticks past `Tick::MAX` (an overflow panic in a debug build).
    /// The last tick number has no next: inputs stop before it and so does play.
    #[test]
    fn inputs_never_run_past_the_last_tick_number() {
        let cfg = SpectatorConfig::default();
        let mut s = SpectatorSession::new(cfg, 1).unwrap();
        let mut snapshot = vec![crate::rollback::p2p::KIND_SNAPSHOT_BYTE];
        snapshot.extend_from_slice(&(Tick::MAX - 3).to_le_bytes());
        s.handle_message(1, &snapshot);
        s.handle_message(1, &spectate(Tick::MAX - 3, 8, cfg.game.players));
        assert_eq!(s.frames_behind(), 3, "the inputs of MAX-3..MAX-1 are taken");
        for _ in 0..10 {
            s.advance();
            while s.poll_request().is_some() {}
        }
        assert_eq!(s.current_tick(), Tick::MAX);
        assert_eq!(s.advance(), AdvanceStatus::WaitingForInput);
        assert_eq!(s.malformed(), 0);
    }
}
