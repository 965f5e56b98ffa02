//! The per-frame half of [`Session`]: ticks, inputs, advancing, requests, events,
//! desync dumps, replays and statistics.

use std::path::Path;

use super::config::{argument, state};
use super::{Core, Mode, Phase, PolledRequest, Session, SessionEvent, SessionFailure};
use crate::HostError;
use tickwire_proto::rollback::{AdvanceStatus, Tick};

/// Counters and gauges of a session (zero where a mode has no such figure).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SessionStats {
    /// Started and every connection up.
    pub running: bool,
    /// The next tick to simulate.
    pub current_tick: Tick,
    /// Every input before this tick is final (a relay client: the authoritative tick).
    pub confirmed_tick: Tick,
    /// P2P: mean ticks ahead of the peers (ungated).
    pub frames_ahead: f32,
    /// P2P and relay client: the tick clock's time scale (1.0 elsewhere).
    pub time_scale: f64,
    /// P2P: rollbacks done. Relay client: re-predictions.
    pub rollbacks: u64,
    /// P2P and relay client: ticks re-simulated.
    pub resimulated: u64,
    /// P2P: the longest rollback, in ticks. Relay client: the deepest re-prediction.
    pub max_rollback: u32,
    /// P2P: ticks skipped because the prediction window was full.
    pub window_full: u64,
    /// P2P: checksums compared with peers. Relay client: server checksums compared;
    /// relay server: checksum reports sent.
    pub checks_compared: u64,
    /// P2P and relay client: desyncs detected.
    pub desyncs: u64,
    /// Session messages refused by strict decoding or from unknown peers.
    pub malformed: u64,
    /// P2P: messages the host refused to queue.
    pub send_errors: u64,
    /// Synctest: mismatches found.
    pub synctest_mismatches: u64,
    /// Spectator: ticks received and not yet played.
    pub frames_behind: u32,
    /// Incoming connections from addresses nobody registered (closed at once); a
    /// relay server: connections refused for any reason.
    pub rejected_connections: u64,
    /// Connections up: remote players' peers, spectators, the watched host, a relay
    /// server's players, a relay client's server.
    pub connected_peers: u32,
    /// Bytes the host sent (all connections, headers included).
    pub bytes_sent: u64,
    /// Bytes the host received (all connections, headers included).
    pub bytes_received: u64,
    /// P2P and relay client: the current input delay.
    pub input_delay: u32,
    /// Snapshots the engine holds.
    pub state_slots: u32,
    /// Relay client: how long before the server consumes it an input is sampled, in
    /// ticks (half the round trip plus the median arrival margin).
    pub lead_ticks: f64,
    /// Relay client: ticks the interpolated server timeline is behind the newest.
    pub interp_delay_ticks: f64,
    /// Relay client: the smoothed round trip to the server, in microseconds.
    pub rtt_us: f64,
    /// Relay client: canonical ticks that did not use this client's input on time.
    /// Relay server: inputs whose first copy came after their tick (0 under the
    /// jitter buffer's default policy, which shows lateness as empty steps).
    pub late_inputs: u64,
    /// Relay: server steps that merged several of a client's inputs (client: its own;
    /// server: every player's).
    pub merged_steps: u64,
    /// Relay: server steps without a real input (client: its own, nothing had arrived;
    /// server: every player's, nothing had arrived or it was lost for good).
    pub empty_steps: u64,
    /// Relay client: discrete clock corrections (snaps, loop re-acquisitions).
    pub clock_corrections: u64,
    /// Relay client: canonical ticks where its own input was mispredicted.
    pub local_mispredictions: u64,
    /// Relay client: canonical ticks where another player's input was mispredicted.
    pub remote_mispredictions: u64,
    /// Relay client: inputs waiting in its jitter buffer on the server (as last told).
    pub server_buffer_depth: u32,
    /// Relay client: current minus authoritative tick.
    pub prediction_distance: u32,
    /// Relay server: players connected. Relay client: 1 once it has a player slot.
    pub players: u32,
    /// Relay client: its player slot, once the server gave it one.
    pub local_player: Option<u32>,
    /// Relay client: times it got its slot back after a dropped connection.
    pub reconnects: u64,
    /// Relay: snapshots asked for again on a live connection (after a desync or a
    /// broken timeline).
    pub resyncs: u64,
}

impl Session {
    pub(super) fn require_started(&self, what: &str) -> Result<(), SessionFailure> {
        if self.phase == Phase::Setup {
            return Err(state(format!("{what}: the session is not started (call start first)")));
        }
        if let Some(m) = &self.dead {
            return Err(SessionFailure::Host(HostError::ThreadGone(m.clone())));
        }
        Ok(())
    }

    /// Pumps the network and returns how many ticks are due now: the P2P core's
    /// dilated clock, or a fixed-rate clock for the other modes. Call once per frame.
    pub fn ticks_due(&mut self) -> Result<u32, SessionFailure> {
        self.require_started("ticks_due")?;
        self.pump();
        let now = self.now_us();
        let n = match self.core.as_mut() {
            Some(core) => core.ticks_due(now, self.host.as_mut()).unwrap_or_else(|| self.fixed.advance(now)),
            None => 0,
        };
        self.send_and_flush();
        Ok(n)
    }

    /// Gives a local player's input for the next advance (P2P: local players; synctest:
    /// every player; relay client: its own player, see also
    /// [`Session::add_local_input`]).
    pub fn add_input(&mut self, player: usize, input: &[u8]) -> Result<(), SessionFailure> {
        self.require_mode(&[Mode::P2p, Mode::SyncTest, Mode::RelayClient], "pushing inputs")?;
        self.require_started("pushing an input")?;
        if self.cfg.mode == Mode::RelayClient {
            self.check_relay_input_player(player)?;
            return self.add_local_input(input);
        }
        match self.core.as_mut() {
            Some(Core::P2p(s)) => Ok(s.add_local_input(player, input)?),
            Some(Core::SyncTest(s)) => Ok(s.add_input(player, input)?),
            _ => Err(state("the session is not running yet: push inputs for the ticks ticks_due reports")),
        }
    }

    /// Runs one tick: the requests to poll follow. Every request of the previous
    /// advance must have been polled.
    pub fn advance(&mut self) -> Result<AdvanceStatus, SessionFailure> {
        self.require_started("advance")?;
        self.current.clear();
        let Some(core) = self.core.as_mut() else { return Ok(AdvanceStatus::NotSynchronized) };
        let left = core.pending_requests();
        if left > 0 {
            return Err(state(format!(
                "{left} request(s) of the previous advance were not polled; poll until there are none before advancing"
            )));
        }
        let status = core.advance();
        self.collect_core_events();
        self.send_and_flush();
        Ok(status)
    }

    /// The next request of the last advance, in order. Its inputs or state stay
    /// readable until the next poll (or advance).
    pub fn poll_request(&mut self) -> Option<PolledRequest> {
        match self.core.as_mut().and_then(Core::poll_request) {
            Some(r) => Some(self.current.set(r)),
            None => {
                self.current.clear();
                None
            }
        }
    }

    /// The current request, if any.
    pub fn current_request(&self) -> Option<PolledRequest> {
        self.current.polled
    }

    /// The current Advance request's inputs (players x input_size bytes).
    pub fn request_inputs(&self) -> Option<&[u8]> {
        self.current.polled.filter(|p| p.kind == super::RequestKind::Advance).map(|_| self.current.inputs.as_slice())
    }

    /// The current Advance request's input statuses (one byte per player, as
    /// [`InputStatus`](tickwire_proto::rollback::InputStatus)).
    pub fn request_statuses(&self) -> Option<&[u8]> {
        self.current.polled.filter(|p| p.kind == super::RequestKind::Advance).map(|_| self.current.statuses.as_slice())
    }

    /// The current Restore request's state bytes.
    pub fn request_state(&self) -> Option<&[u8]> {
        self.current.polled.filter(|p| p.kind == super::RequestKind::Restore).map(|_| self.current.state.as_slice())
    }

    /// The engine's checksum of the state it saved for `tick`.
    pub fn confirm_save(&mut self, tick: Tick, checksum: u64) -> Result<(), SessionFailure> {
        self.require_started("confirm_save")?;
        match self.core.as_mut() {
            Some(core) => match core.confirm_save(tick, checksum)? {
                true => Ok(()),
                false => Err(state(format!("{:?} mode never requests saves", self.cfg.mode))),
            },
            None => Err(state("no save was requested: the session is not running yet")),
        }
    }

    /// The engine's answer to a DumpState request: the serialized state of `tick`.
    pub fn provide_state(&mut self, tick: Tick, bytes: &[u8]) -> Result<(), SessionFailure> {
        self.require_mode(&[Mode::P2p, Mode::RelayServer], "providing state")?;
        self.require_started("provide_state")?;
        match self.core.as_mut() {
            Some(Core::P2p(s)) => {
                s.provide_state(tick, bytes)?;
                self.collect_core_events();
                Ok(())
            }
            Some(Core::RelayServer(s)) => Ok(s.provide_state(tick, bytes)?),
            _ => Err(state("no state was requested: the session is not running yet")),
        }
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<SessionEvent> {
        self.collect_core_events();
        self.events.pop_front()
    }

    /// The forensic dump of the last desync, if one is ready; it stays until
    /// [`Session::release_desync_dump`].
    pub fn desync_dump(&mut self) -> Option<&[u8]> {
        if self.dump.is_none() {
            if let Some(Core::P2p(s)) = self.core.as_mut() {
                self.dump = s.take_desync_dump();
            }
        }
        self.dump.as_deref()
    }

    /// Drops the dump returned by [`Session::desync_dump`]; the next desync can be dumped.
    pub fn release_desync_dump(&mut self) {
        self.dump = None;
    }

    /// Writes the ready desync dump to `path` and releases it; Ok(false) if none is ready.
    pub fn write_desync_dump(&mut self, path: &Path) -> Result<bool, SessionFailure> {
        let Some(bytes) = self.desync_dump() else { return Ok(false) };
        std::fs::write(path, bytes)
            .map_err(|source| SessionFailure::Io { context: format!("writing {}", path.display()), source })?;
        self.release_desync_dump();
        Ok(true)
    }

    /// P2P: records every confirmed input from tick 0 on; `initial_state` is the
    /// engine's serialized state at tick 0 (may be empty). Only before the first tick.
    pub fn start_recording(&mut self, initial_state: &[u8]) -> Result<(), SessionFailure> {
        self.require_mode(&[Mode::P2p], "recording a replay")?;
        match self.core.as_mut() {
            Some(Core::P2p(s)) if s.current_tick() == 0 => s.start_recording(initial_state),
            Some(_) => return Err(state("recording must start before the first tick")),
            None => self.pending_recording = Some(initial_state.to_vec()),
        }
        Ok(())
    }

    /// P2P: the replay recorded so far (ticks final on every peer).
    pub fn replay_bytes(&self) -> Option<&[u8]> {
        match self.core.as_ref() {
            Some(Core::P2p(s)) => s.replay().map(|r| r.bytes()),
            _ => None,
        }
    }

    /// P2P: writes the replay recorded so far to `path`.
    pub fn save_replay(&self, path: &Path) -> Result<(), SessionFailure> {
        let bytes = self.replay_bytes().ok_or_else(|| {
            state(if self.pending_recording.is_some() {
                "nothing recorded yet: the session is not running"
            } else {
                "no recording: call start_recording before the first tick"
            })
        })?;
        std::fs::write(path, bytes)
            .map_err(|source| SessionFailure::Io { context: format!("writing {}", path.display()), source })
    }

    /// Counters and gauges.
    pub fn stats(&mut self) -> SessionStats {
        let mut st = SessionStats {
            running: self.phase == Phase::Running,
            time_scale: 1.0,
            rejected_connections: self.rejected,
            connected_peers: (self.roster.connected_peers() + usize::from(self.watched_connected)) as u32,
            state_slots: self.state_slots() as u32,
            input_delay: self.cfg.p2p.input_delay,
            ..SessionStats::default()
        };
        if let Some(h) = self.host.as_mut() {
            let e = h.endpoint_stats();
            st.bytes_sent = e.bytes_sent;
            st.bytes_received = e.bytes_received;
        }
        match self.core.as_ref() {
            Some(Core::P2p(s)) => {
                let p = s.stats();
                st.current_tick = p.current_tick;
                st.confirmed_tick = p.confirmed_tick;
                st.frames_ahead = p.frames_ahead;
                st.time_scale = p.time_scale;
                st.rollbacks = p.rollbacks;
                st.resimulated = p.resimulated;
                st.max_rollback = p.max_rollback;
                st.window_full = p.window_full;
                st.checks_compared = p.checks_compared;
                st.desyncs = p.desyncs;
                st.malformed = p.malformed;
                st.send_errors = p.send_errors;
                st.input_delay = s.input_delay();
            }
            Some(core) => {
                st.current_tick = core.current_tick();
                st.confirmed_tick = core.confirmed_tick();
                match core {
                    Core::SyncTest(s) => st.synctest_mismatches = s.mismatches(),
                    Core::Spectator(s) => {
                        st.frames_behind = s.frames_behind();
                        st.malformed = s.malformed();
                    }
                    _ => {}
                }
            }
            None => {}
        }
        self.relay_stats(&mut st);
        st
    }

    /// Checks a player index against the session.
    pub fn check_player(&self, player: usize) -> Result<(), SessionFailure> {
        if player >= self.cfg.players {
            return Err(argument(format!(
                "player {player} does not exist (the session has {} players)",
                self.cfg.players
            )));
        }
        Ok(())
    }
}
