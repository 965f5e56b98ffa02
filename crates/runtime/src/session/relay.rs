//! The relay topology on a [`Session`]: the server ([`RelayServerSession`]) and the
//! client with prediction ([`RelayClientSession`]) as session cores.
//!
//! Unlike the rollback cores, the relay cores manage their connections themselves (a
//! client's Hello, the server's Welcome and snapshot, tokens, reconnects), so every
//! host event goes to them whole, with the host as their transport. The server
//! listens from `start` on; the client dials the address given with
//! [`Session::set_server`] at `start`, joins on its own and reconnects by itself
//! within its window.
//!
//! The server's session tokens are always seeded from the operating system: a token is
//! the proof of a player's slot, so it must not be predictable.

use std::net::SocketAddr;

use super::config::{argument, state};
use super::{Core, Mode, Phase, Session, SessionEvent, SessionFailure, SessionStats};
use crate::HostEvent;
use crate::os_seed::os_seed;
use tickwire_proto::jitter::JitterStats;
use tickwire_proto::relay::relay_client_session::{ClientSessionEvent, RelayClientSession};
use tickwire_proto::relay::relay_server_session::RelayServerSession;
use tickwire_proto::rollback::Tick;
use tickwire_proto::transport::{Event, PeerId};

/// A relay server's figures for one connected player.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RelayPlayerStats {
    /// The player slot.
    pub player: u32,
    /// Its connection.
    pub peer: PeerId,
    /// The first tick whose canonical step included it (since its latest join).
    pub joined_tick: Tick,
    /// Inputs waiting in its jitter buffer now.
    pub buffer_depth: u32,
    /// Its jitter buffer's counters since its latest join.
    pub jitter: JitterStats,
    /// The transport's smoothed round trip to it, in microseconds (0 if unknown).
    pub rtt_us: f64,
}

/// Checks a relay configuration and makes its copies of the shared settings (players,
/// input size, tick length, the server's send interval) agree with the session's.
/// Returns the snapshot slots the engine needs (0 for the other modes).
pub(super) fn prepare(cfg: &mut super::SessionConfig) -> Result<usize, SessionFailure> {
    let tick_us = cfg.p2p.clock.tick_us;
    match cfg.mode {
        Mode::RelayServer => {
            let s = &mut cfg.relay_server;
            s.max_players = cfg.players;
            s.input_size = cfg.p2p.input_size;
            s.relay.tick_us = tick_us;
            // A throwaway instance checks every field the way the running one will.
            Ok(RelayServerSession::new(s.clone(), 0)?.state_slots())
        }
        Mode::RelayClient => {
            let c = &mut cfg.relay_client;
            c.max_players = cfg.players;
            c.input_size = cfg.p2p.input_size;
            c.sync.tick.tick_us = tick_us;
            c.sync.interp.tick_us = tick_us;
            Ok(RelayClientSession::new(c.clone())?.state_slots())
        }
        _ => Ok(0),
    }
}

/// Keeps the "connection to the server is up" flag of a relay client in step with its
/// events.
pub(super) fn track_connection(up: &mut bool, e: &SessionEvent) {
    match e {
        SessionEvent::RelayClient(ClientSessionEvent::Connected { .. }) => *up = true,
        SessionEvent::RelayClient(ClientSessionEvent::Interrupted { .. } | ClientSessionEvent::Disconnected { .. }) => {
            *up = false
        }
        _ => {}
    }
}

impl Session {
    /// Relay client, before [`Session::start`]: the server to join.
    pub fn set_server(&mut self, addr: SocketAddr) -> Result<(), SessionFailure> {
        self.require_mode(&[Mode::RelayClient], "choosing the relay server")?;
        self.require_setup("choosing the relay server")?;
        let addr = self.check_reachable(addr, "server address")?;
        self.server_addr = Some(addr);
        Ok(())
    }

    /// Builds the relay core: the server starts its clock and listens, the client dials.
    pub(super) fn start_relay(&mut self) -> Result<(), SessionFailure> {
        let now = self.now_us();
        let core = match self.cfg.mode {
            Mode::RelayServer => {
                let mut c = self.cfg.relay_server.clone();
                c.seed = os_seed();
                Core::RelayServer(RelayServerSession::new(c, now)?)
            }
            _ => {
                let addr = self
                    .server_addr
                    .ok_or_else(|| state("a relay client needs the server's address (set_server) before starting"))?;
                let mut s = RelayClientSession::new(self.cfg.relay_client.clone())?;
                for (player, input) in self.pending_predictions.drain(..) {
                    // Checked when it was set.
                    let _ = s.set_prediction(player, input.as_deref());
                }
                let host = self.host.as_mut().ok_or_else(|| state("no socket"))?;
                s.connect(now, host, addr)?;
                Core::RelayClient(s)
            }
        };
        self.core = Some(core);
        self.phase = Phase::Running;
        Ok(())
    }

    /// Hands one host event to the relay core (messages with their arrival time).
    pub(super) fn relay_event(&mut self, ev: HostEvent) {
        let Some(host) = self.host.as_mut() else { return };
        let (at, e) = match ev {
            HostEvent::Message { peer, channel, data, received_at } => {
                (received_at, Event::Message { peer, channel, data })
            }
            HostEvent::Connected { peer, addr } => (host.now_us(), Event::Connected { peer, addr }),
            HostEvent::Disconnected { peer, reason } => (host.now_us(), Event::Disconnected { peer, reason }),
            HostEvent::Fatal { message } => return self.die(message),
        };
        match self.core.as_mut() {
            Some(core) => core.on_event(at, host, e),
            None => {
                if let Event::Message { data, .. } = e {
                    host.recycle(data);
                }
            }
        }
    }

    /// Relay client: this client's input for the next advance (its player slot is the
    /// one the server gives it; inputs go to the server from the first due tick on,
    /// before that slot is known).
    pub fn add_local_input(&mut self, input: &[u8]) -> Result<(), SessionFailure> {
        self.require_mode(&[Mode::RelayClient], "pushing this client's own input")?;
        self.require_started("pushing an input")?;
        match self.core.as_mut() {
            Some(Core::RelayClient(s)) => Ok(s.add_local_input(input)?),
            _ => Err(state("the relay client is not running")),
        }
    }

    /// Relay client: its connection to the server (None before start, while
    /// reconnecting between attempts, or once gone).
    pub fn server_peer(&self) -> Option<PeerId> {
        match self.core.as_ref() {
            Some(Core::RelayClient(s)) => s.server_peer(),
            _ => None,
        }
    }

    /// Relay client: the player slot the server gave this client, once joined.
    pub fn local_player(&self) -> Option<usize> {
        match self.core.as_ref() {
            Some(Core::RelayClient(s)) => s.player().map(|p| p as usize),
            _ => None,
        }
    }

    /// Relay client: drops the predicted timeline and asks the server for a new
    /// snapshot on the same connection (for example after a desync).
    pub fn request_snapshot(&mut self) -> Result<(), SessionFailure> {
        self.require_mode(&[Mode::RelayClient], "requesting a snapshot")?;
        self.require_started("request_snapshot")?;
        match self.core.as_mut() {
            Some(Core::RelayClient(s)) if s.token().is_some() => {
                s.request_snapshot();
                self.collect_core_events();
                Ok(())
            }
            _ => Err(state("the client has not joined yet: there is no snapshot to replace")),
        }
    }

    /// Relay server: the figures of a connected `player` (None if the slot has no
    /// connection now).
    pub fn relay_player_stats(&mut self, player: usize) -> Result<Option<RelayPlayerStats>, SessionFailure> {
        self.require_mode(&[Mode::RelayServer], "per-player relay statistics")?;
        self.check_player(player)?;
        let Some(Core::RelayServer(s)) = self.core.as_ref() else { return Ok(None) };
        let p = player as u32;
        let (Some(peer), Some(jitter)) = (s.peer_of(p), s.jitter_stats(p)) else { return Ok(None) };
        let mut st = RelayPlayerStats {
            player: p,
            peer,
            joined_tick: s.relay().joined_at(p).unwrap_or(0) as Tick,
            buffer_depth: s.relay().jitter_depth(peer).unwrap_or(0) as u32,
            jitter,
            rtt_us: 0.0,
        };
        if let Some(c) = self.host.as_mut().and_then(|h| h.stats(peer)) {
            st.rtt_us = c.srtt_us;
        }
        Ok(Some(st))
    }

    /// Fills the relay figures of `st` (no-op in the other modes).
    pub(super) fn relay_stats(&mut self, st: &mut SessionStats) {
        match self.core.as_ref() {
            Some(Core::RelayServer(s)) => {
                let r = s.stats();
                st.players = r.players;
                st.connected_peers = r.players;
                st.empty_steps = r.empty_steps + r.substituted_steps;
                st.merged_steps = r.merged_steps;
                st.late_inputs = r.late_inputs;
                st.malformed = r.malformed + r.unknown_peer + r.bad_hello;
                st.rejected_connections = r.rejected;
                st.checks_compared = r.checks_sent;
                st.resyncs = r.resyncs;
                st.input_delay = 0;
            }
            Some(Core::RelayClient(s)) => {
                let c = s.stats();
                let (y, p) = (c.sync, c.prediction);
                st.running = s.is_synchronized();
                st.lead_ticks = y.lead_ticks;
                st.interp_delay_ticks = y.interp_delay_ticks;
                st.time_scale = y.time_scale;
                st.clock_corrections = y.clock_corrections;
                st.server_buffer_depth = y.server_buffer_depth;
                st.empty_steps = y.empty_steps;
                st.merged_steps = y.merged_steps;
                st.late_inputs = p.local_late;
                st.rollbacks = p.repredictions;
                st.resimulated = p.resimulated;
                st.max_rollback = p.max_resim_depth;
                st.local_mispredictions = p.local_mispredictions;
                st.remote_mispredictions = p.remote_mispredictions;
                st.prediction_distance = c.prediction_distance;
                st.input_delay = c.input_delay;
                st.checks_compared = c.checks_compared;
                st.desyncs = c.desyncs;
                st.malformed = c.malformed;
                st.reconnects = c.reconnects;
                st.resyncs = c.resyncs;
                st.players = s.player().is_some() as u32;
                st.local_player = s.player();
                let server = s.server_peer();
                if let Some(c) = server.and_then(|p| self.host.as_mut().and_then(|h| h.stats(p))) {
                    st.rtt_us = c.srtt_us;
                }
            }
            _ => {}
        }
    }

    /// Checks the `player` argument of a relay client's input: its own slot.
    pub(super) fn check_relay_input_player(&self, player: usize) -> Result<(), SessionFailure> {
        match self.local_player() {
            Some(p) if p == player => Ok(()),
            Some(p) => Err(argument(format!("player {player} is not this relay client's player ({p})"))),
            None => Err(argument(format!(
                "player {player}: this relay client has not been given a player slot yet (push its own input without naming a slot)"
            ))),
        }
    }
}
