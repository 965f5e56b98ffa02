//! Many relay-only matches on one transport: what `tickwire serve` runs.
//!
//! A connection's connect token names its match and the match's shape
//! ([`ServeClaim`]). The first connection of a match id creates the match, a relay
//! server session in [`ServerMode::RelayOnly`] with that shape, its tick clock on the
//! grid of its tick length (so that every match of one rate ticks at the same
//! instants and the owner wakes once a tick for all of them). Later connections of
//! that id join it; one whose token names another shape is refused. A match ends once
//! it is vacant (every slot free: its players left, or did not come back within the
//! reconnect timeout), when the owner ends it, or when the server drains.
//!
//! The owner's loop: [`MatchServer::on_event`] for every transport event,
//! [`MatchServer::run`] on each wake (every match's ticks, events and messages, and one
//! flush for them all); sleep until [`MatchServer::next_tick_at`].

use std::collections::{HashMap, VecDeque};

use super::claim::ServeClaim;
use crate::clock::Micros;
use crate::engine::Tick;
use crate::game::ConfigProblems;
use crate::relay::relay_server_session::{
    RelayServerSession, RelayServerSessionConfig, ServerMode, ServerSessionEvent,
};
use crate::transport::{Credential, DisconnectReason, Event, PeerId, Transport};

/// Events kept for the owner; past it the oldest go (counted).
const EVENTS_KEPT: usize = 4096;

/// Settings of a [`MatchServer`].
#[derive(Debug, Clone, PartialEq)]
pub struct MatchServerConfig {
    /// What every match's session starts from. Its `game` comes from the tokens and its
    /// `mode` is [`ServerMode::RelayOnly`]; its `seed` is mixed with a count of the
    /// matches made, so that no two matches draw the same session tokens.
    pub session: RelayServerSessionConfig,
    /// Most matches live at once; a token for a new match past it is refused
    /// (`ServerFull`).
    pub max_matches: usize,
}

impl Default for MatchServerConfig {
    fn default() -> Self {
        MatchServerConfig {
            session: RelayServerSessionConfig { mode: ServerMode::RelayOnly, ..RelayServerSessionConfig::default() },
            max_matches: 1000,
        }
    }
}

impl MatchServerConfig {
    /// Every problem of these settings, by field name.
    pub fn validate(&self) -> Result<(), ConfigProblems> {
        let mut p = ConfigProblems::new();
        if self.max_matches == 0 {
            p.push("max_matches", "at least 1");
        }
        // The session settings with a shape a token could give.
        let probe = RelayServerSessionConfig { mode: ServerMode::RelayOnly, ..self.session.clone() };
        if let Err(crate::ServerSessionError::Config(problems)) = RelayServerSession::new(probe, 0) {
            for q in problems.iter() {
                p.push(format!("session.{}", q.field), q.message.clone());
            }
        }
        p.into_result()
    }
}

/// Why a connection was refused a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimRefusal {
    /// Its credential holds no match claim (no connect token, or another kind of
    /// user data).
    NoClaim,
    /// The match exists with another shape than its token names.
    Shape,
    /// A new match past `max_matches`.
    Full,
    /// A new match while the server drains.
    Draining,
}

/// How a match ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchEnd {
    /// Nobody left in it.
    Vacant,
    /// The owner ended it ([`MatchServer::end_match`]).
    Ended,
}

/// What happened, for the owner's logs and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchServerEvent {
    /// A token named a new match: it exists from now on.
    MatchStarted {
        /// The backend's name for it.
        match_id: u64,
        /// Its shape.
        claim: ServeClaim,
    },
    /// A match is over and forgotten.
    MatchEnded {
        /// The backend's name for it.
        match_id: u64,
        /// Why.
        end: MatchEnd,
        /// Ticks it ran.
        ticks: Tick,
    },
    /// A match session's own event.
    Session {
        /// The match.
        match_id: u64,
        /// The event.
        event: ServerSessionEvent,
    },
    /// A connection was refused and closed.
    Refused {
        /// The connection.
        peer: PeerId,
        /// Why.
        why: ClaimRefusal,
    },
}

/// Counters of a [`MatchServer`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MatchServerStats {
    /// Matches made and ended.
    pub matches_started: u64,
    /// Matches ended (vacant, or by the owner).
    pub matches_ended: u64,
    /// Connections refused, by reason.
    pub refused_no_claim: u64,
    /// See [`ClaimRefusal::Shape`].
    pub refused_shape: u64,
    /// See [`ClaimRefusal::Full`].
    pub refused_full: u64,
    /// See [`ClaimRefusal::Draining`].
    pub refused_draining: u64,
    /// Messages from connections that belong to no match (dropped).
    pub stray_messages: u64,
    /// Events the owner did not take in time (the oldest were dropped).
    pub events_dropped: u64,
    /// Ticks run past the first of a wake, summed over matches: each is a tick
    /// that ran late (the owner woke late, or the matches' work overran a tick).
    pub late_ticks: u64,
    /// Over every match, live or ended: joiners' snapshots taken from a client.
    pub snapshots_from_clients: u64,
    /// Over every match: clients' snapshot uploads refused (outvoted, or not the state
    /// their donor vouched for).
    pub snapshot_uploads_refused: u64,
    /// Over every match: checksum reports that differ from the players' majority.
    pub minority_checks: u64,
    /// Over every match: clients' reports refused (malformed, unasked, stale).
    pub client_reports_refused: u64,
}

impl MatchServerStats {
    /// Adds a match's session counters.
    fn add_session(&mut self, s: &crate::ServerSessionStats) {
        self.snapshots_from_clients += s.snapshots_from_clients;
        self.snapshot_uploads_refused += s.snapshot_uploads_refused;
        self.minority_checks += s.minority_checks;
        self.client_reports_refused += s.hosted_refused;
    }
}

/// One match.
struct Match {
    claim: ServeClaim,
    session: RelayServerSession,
}

/// Many relay-only matches on one transport. See the module docs.
pub struct MatchServer {
    cfg: MatchServerConfig,
    matches: HashMap<u64, Match>,
    by_peer: HashMap<PeerId, u64>,
    draining: bool,
    made: u64,
    events: VecDeque<MatchServerEvent>,
    stats: MatchServerStats,
}

impl MatchServer {
    /// A server with no match yet.
    pub fn new(cfg: MatchServerConfig) -> Result<Self, ConfigProblems> {
        cfg.validate()?;
        Ok(MatchServer {
            cfg,
            matches: HashMap::new(),
            by_peer: HashMap::new(),
            draining: false,
            made: 0,
            events: VecDeque::new(),
            stats: MatchServerStats::default(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &MatchServerConfig {
        &self.cfg
    }

    /// Live matches.
    pub fn match_count(&self) -> usize {
        self.matches.len()
    }

    /// Every live match: its id, its shape and its session (for figures).
    pub fn matches(&self) -> impl Iterator<Item = (u64, &ServeClaim, &RelayServerSession)> + '_ {
        self.matches.iter().map(|(&id, m)| (id, &m.claim, &m.session))
    }

    /// One match's session.
    pub fn session(&self, match_id: u64) -> Option<&RelayServerSession> {
        self.matches.get(&match_id).map(|m| &m.session)
    }

    /// The counters: the server's own, and its matches' summed over every match,
    /// live or ended (so they never go back).
    pub fn stats(&self) -> MatchServerStats {
        let mut s = self.stats;
        for m in self.matches.values() {
            s.add_session(&m.session.stats());
        }
        s
    }

    /// Stops making matches: tokens for new ones are refused (`ServerFull`), live ones
    /// play on.
    pub fn drain(&mut self) {
        self.draining = true;
    }

    /// Whether [`MatchServer::drain`] was called.
    pub fn is_draining(&self) -> bool {
        self.draining
    }

    /// The next event, oldest first.
    pub fn poll_event(&mut self) -> Option<MatchServerEvent> {
        self.events.pop_front()
    }

    fn push_event(&mut self, e: MatchServerEvent) {
        if self.events.len() == EVENTS_KEPT {
            self.events.pop_front();
            self.stats.events_dropped += 1;
        }
        self.events.push_back(e);
    }

    fn refuse<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, peer: PeerId, why: ClaimRefusal) {
        let (count, told) = match why {
            ClaimRefusal::NoClaim => (&mut self.stats.refused_no_claim, DisconnectReason::AuthFailed),
            ClaimRefusal::Shape => (&mut self.stats.refused_shape, DisconnectReason::VersionMismatch),
            ClaimRefusal::Full => (&mut self.stats.refused_full, DisconnectReason::ServerFull),
            ClaimRefusal::Draining => (&mut self.stats.refused_draining, DisconnectReason::ServerFull),
        };
        *count += 1;
        transport.disconnect_with(now, peer, told);
        self.push_event(MatchServerEvent::Refused { peer, why });
    }

    /// The match `claim` names, made if it is new and allowed.
    fn match_for(&mut self, now: Micros, claim: ServeClaim) -> Result<&mut Match, ClaimRefusal> {
        if let Some(m) = self.matches.get(&claim.match_id) {
            if m.claim != claim {
                return Err(ClaimRefusal::Shape);
            }
        } else {
            if self.draining {
                return Err(ClaimRefusal::Draining);
            }
            if self.matches.len() >= self.cfg.max_matches {
                return Err(ClaimRefusal::Full);
            }
            self.made += 1;
            let game = claim.shape();
            let cfg = RelayServerSessionConfig {
                game,
                mode: ServerMode::RelayOnly,
                seed: self.cfg.session.seed.wrapping_add(self.made),
                ..self.cfg.session.clone()
            };
            // On the grid of its tick length: every match of one rate ticks together.
            let start = grid_before(now, game.tick_us());
            let session = RelayServerSession::new(cfg, start).map_err(|_| ClaimRefusal::Shape)?;
            self.matches.insert(claim.match_id, Match { claim, session });
            self.stats.matches_started += 1;
            self.push_event(MatchServerEvent::MatchStarted { match_id: claim.match_id, claim });
        }
        Ok(self.matches.get_mut(&claim.match_id).expect("made above"))
    }

    /// Handles one transport event.
    pub fn on_event<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, e: Event) {
        match e {
            Event::Connected { peer, ref credential, .. } => {
                let claim = match credential {
                    Credential::ConnectToken(id) => ServeClaim::from_user_data(&id.user_data),
                    _ => None,
                };
                let Some(claim) = claim else {
                    return self.refuse(now, transport, peer, ClaimRefusal::NoClaim);
                };
                match self.match_for(now, claim) {
                    Ok(m) => {
                        m.session.on_event(now, transport, e);
                        self.by_peer.insert(peer, claim.match_id);
                    }
                    Err(why) => self.refuse(now, transport, peer, why),
                }
            }
            Event::Disconnected { peer, .. } => {
                if let Some(id) = self.by_peer.remove(&peer) {
                    if let Some(m) = self.matches.get_mut(&id) {
                        m.session.on_event(now, transport, e);
                    }
                }
            }
            Event::Message { peer, .. } => match self.by_peer.get(&peer).and_then(|id| self.matches.get_mut(id)) {
                Some(m) => m.session.on_event(now, transport, e),
                None => {
                    self.stats.stray_messages += 1;
                    if let Event::Message { data, .. } = e {
                        transport.recycle(data);
                    }
                }
            },
        }
    }

    /// Runs every match: its due ticks, its events, its messages; then ends the
    /// vacant ones and flushes the transport once.
    pub fn run<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T) {
        // A session flushes after its messages; here the matches share one flush, so
        // that the transport walks its changed connections once a wake, not once a match.
        let transport = &mut OneFlush(transport);
        let mut vacant = Vec::new();
        for (&id, m) in self.matches.iter_mut() {
            let due = m.session.ticks_due(now);
            self.stats.late_ticks += u64::from(due.saturating_sub(1));
            for _ in 0..due {
                m.session.advance();
            }
            while let Some(event) = m.session.poll_event() {
                if self.events.len() == EVENTS_KEPT {
                    self.events.pop_front();
                    self.stats.events_dropped += 1;
                }
                self.events.push_back(MatchServerEvent::Session { match_id: id, event });
            }
            m.session.send_messages(now, transport);
            if m.session.is_vacant() {
                vacant.push(id);
            }
        }
        for id in vacant {
            self.forget(id, MatchEnd::Vacant);
        }
        transport.0.flush(now);
    }

    /// Ends match `match_id` now: every connection of it is closed (`Server`). False
    /// if there is no such match.
    pub fn end_match<T: Transport + ?Sized>(&mut self, now: Micros, transport: &mut T, match_id: u64) -> bool {
        let Some(m) = self.matches.get(&match_id) else { return false };
        for peer in m.session.connections() {
            transport.disconnect_with(now, peer, DisconnectReason::Server);
        }
        self.forget(match_id, MatchEnd::Ended);
        true
    }

    fn forget(&mut self, match_id: u64, end: MatchEnd) {
        let Some(m) = self.matches.remove(&match_id) else { return };
        self.by_peer.retain(|_, id| *id != match_id);
        self.stats.matches_ended += 1;
        self.stats.add_session(&m.session.stats());
        self.push_event(MatchServerEvent::MatchEnded { match_id, end, ticks: m.session.last_tick() });
    }

    /// When the next tick of any match is due (`now` if one is due already; None
    /// without matches): the owner may sleep until then.
    pub fn next_tick_at(&self, now: Micros) -> Option<Micros> {
        self.matches.values().map(|m| grid_after(now, m.session.config().game.tick_us())).min()
    }
}

/// A transport whose flush waits for the owner's: every match's messages go out in one
/// flush at the end of [`MatchServer::run`]. What a session reads back after its flush
/// (what waits for an acknowledgement) then also counts what is queued to go, which is
/// as good: it will be sent within this wake.
struct OneFlush<'a, T: Transport + ?Sized>(&'a mut T);

impl<T: Transport + ?Sized> Transport for OneFlush<'_, T> {
    fn connect_bound(
        &mut self,
        now: Micros,
        addr: std::net::SocketAddr,
        binding: Option<crate::transport::Binding>,
    ) -> Result<PeerId, crate::transport::SendError> {
        self.0.connect_bound(now, addr, binding)
    }
    fn set_local_id(&mut self, id: Option<u32>) {
        self.0.set_local_id(id)
    }
    fn disconnect(&mut self, now: Micros, peer: PeerId) {
        self.0.disconnect(now, peer)
    }
    fn disconnect_with(&mut self, now: Micros, peer: PeerId, reason: DisconnectReason) {
        self.0.disconnect_with(now, peer, reason)
    }
    fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), crate::transport::SendError> {
        self.0.send(peer, channel, data)
    }
    fn flush(&mut self, _now: Micros) {}
    fn recycle(&mut self, buf: Vec<u8>) {
        self.0.recycle(buf)
    }
    fn stats(&mut self, peer: PeerId) -> Option<crate::transport::ConnectionStats> {
        self.0.stats(peer)
    }
    fn max_unreliable(&self) -> usize {
        self.0.max_unreliable()
    }
}

/// The last instant at or before `now` on the grid of `tick_us` (from time 0).
fn grid_before(now: Micros, tick_us: f64) -> Micros {
    let k = (now as f64 / tick_us).floor();
    (k * tick_us) as Micros
}

/// The first instant at or after `now` on the grid of `tick_us`.
fn grid_after(now: Micros, tick_us: f64) -> Micros {
    let k = (now as f64 / tick_us).ceil();
    (k * tick_us).ceil() as Micros
}
