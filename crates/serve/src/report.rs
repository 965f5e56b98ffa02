//! What the server says: a log line per event (plain or JSON), the metrics and the
//! match list it refreshes every second for the HTTP threads, and its summary.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use tickwire_proto::{
    ClaimRefusal, KickCause, KickReason, MatchEnd, MatchServer, MatchServerEvent, Micros, RejectReason,
    ServerSessionEvent,
};
use tickwire_runtime::Host;

use crate::http::{Request, Response};
use crate::metrics::{self, Exposition, Histogram};

/// Admin calls to end matches kept until the loop takes them.
const ADMIN_QUEUE: usize = 256;

/// What the loop publishes for the HTTP threads, and what they ask of it.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    metrics: String,
    matches: String,
    live: Vec<u64>,
    end: Vec<u64>,
}

/// An HTTP endpoint's answer to a request, from what the loop published.
pub(crate) type Endpoint = fn(&Mutex<Shared>, &Request) -> Response;

/// Answers `GET /metrics`.
pub(crate) fn metrics_endpoint(shared: &Mutex<Shared>, r: &Request) -> Response {
    match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/metrics") => {
            let body = shared.lock().map(|s| s.metrics.clone()).unwrap_or_default();
            Response { status: 200, content_type: "text/plain; version=0.0.4; charset=utf-8", body: body.into_bytes() }
        }
        ("GET", _) => Response::text(404, "only /metrics here"),
        _ => Response::text(405, "GET only"),
    }
}

/// Answers the admin calls: `GET /matches` (a JSON list) and `POST /matches/ID/end`.
pub(crate) fn admin_endpoint(shared: &Mutex<Shared>, r: &Request) -> Response {
    let Ok(mut s) = shared.lock() else { return Response::text(500, "poisoned") };
    match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/matches") => {
            Response { status: 200, content_type: "application/json", body: s.matches.clone().into_bytes() }
        }
        ("POST", path) => {
            let id = path.strip_prefix("/matches/").and_then(|p| p.strip_suffix("/end")).and_then(|i| i.parse().ok());
            match id {
                Some(id) if s.live.contains(&id) && s.end.len() < ADMIN_QUEUE => {
                    s.end.push(id);
                    Response::text(200, format!("ending match {id}"))
                }
                Some(id) if s.live.contains(&id) => Response::text(503, "too many ends queued"),
                Some(id) => Response::text(404, format!("no match {id}")),
                None => Response::text(404, "POST /matches/ID/end"),
            }
        }
        _ => Response::text(404, "GET /matches or POST /matches/ID/end"),
    }
}

/// The matches the admin asked to end.
pub(crate) fn take_admin_ends(shared: &Mutex<Shared>) -> Vec<u64> {
    shared.lock().map(|mut s| std::mem::take(&mut s.end)).unwrap_or_default()
}

/// How a run went, printed as one JSON line at the end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Matches made.
    pub matches_started: u64,
    /// Matches over (vacant, ended by the admin, or cut short).
    pub matches_ended: u64,
    /// Matches that ended by themselves while draining.
    pub drained: u64,
    /// Matches cut short at the drain's end.
    pub cut_short: u64,
    /// Matches the admin ended.
    pub ended_by_admin: u64,
    /// The most players connected at once (sampled every second).
    pub peak_players: u64,
    /// Connections refused a match.
    pub refused: u64,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{{\"event\":\"done\",\"matches_started\":{},\"matches_ended\":{},\"drained\":{},\"cut_short\":{},\
             \"ended_by_admin\":{},\"peak_players\":{},\"refused\":{}}}",
            self.matches_started,
            self.matches_ended,
            self.drained,
            self.cut_short,
            self.ended_by_admin,
            self.peak_players,
            self.refused
        )
    }
}

/// The loop's reporting state.
pub(crate) struct Report {
    json: bool,
    pub(crate) players: u64,
    peak_players: u64,
    pub(crate) drained: u64,
    pub(crate) cut_short: u64,
    pub(crate) ended_by_admin: u64,
    /// How late the loop woke past a tick's instant.
    lateness: Histogram,
}

/// Why a connection was refused a slot, as the log names it.
fn rejection(reason: RejectReason) -> &'static str {
    match reason {
        RejectReason::Malformed => "malformed_hello",
        RejectReason::WrongGame => "wrong_game",
        RejectReason::BadToken => "bad_token",
        RejectReason::WrongCredential => "wrong_credential",
        RejectReason::Full => "full",
        RejectReason::NoHello => "no_hello",
    }
}

/// Why a player was kicked, as the log names it.
fn kick_cause(cause: KickCause) -> &'static str {
    match cause {
        KickCause::Jitter(KickReason::Overflow) => "inputs_overflowed",
        KickCause::Jitter(KickReason::Starved) => "inputs_starved",
        KickCause::FellBehind => "fell_behind",
        KickCause::ResyncFlood => "resync_flood",
        KickCause::CatchUpFlood => "catch_up_flood",
        KickCause::Engine { .. } => "engine",
    }
}

fn refusal(why: ClaimRefusal) -> &'static str {
    match why {
        ClaimRefusal::NoClaim => "no_claim",
        ClaimRefusal::Shape => "shape",
        ClaimRefusal::Full => "full",
        ClaimRefusal::Draining => "draining",
    }
}

impl Report {
    pub(crate) fn new(json: bool) -> Self {
        Report {
            json,
            players: 0,
            peak_players: 0,
            drained: 0,
            cut_short: 0,
            ended_by_admin: 0,
            lateness: Histogram::new(metrics::SECONDS_BUCKETS),
        }
    }

    pub(crate) fn woke(&mut self, late_us: Micros) {
        self.lateness.observe(late_us as f64 / 1e6);
    }

    fn line(&self, now: Micros, event: &str, fields: &[(&str, String)], out: &mut dyn FnMut(&str)) {
        let mut s = String::new();
        if self.json {
            let _ = write!(s, "{{\"t_us\":{now},\"event\":\"{event}\"");
            for (k, v) in fields {
                let _ = write!(s, ",\"{k}\":{v}");
            }
            s.push('}');
        } else {
            s.push_str(event);
            for (k, v) in fields {
                let _ = write!(s, " {k}={}", v.trim_matches('"'));
            }
        }
        out(&s);
    }

    /// A note of the server's own (a drain, the sidecar's answers).
    pub(crate) fn note(&self, now: Micros, text: &str, out: &mut dyn FnMut(&str)) {
        self.line(now, "note", &[("text", json_string(text))], out);
    }

    pub(crate) fn event(&mut self, now: Micros, e: &MatchServerEvent, out: &mut dyn FnMut(&str)) {
        match *e {
            MatchServerEvent::MatchStarted { match_id, claim } => self.line(
                now,
                "match_started",
                &[
                    ("match", match_id.to_string()),
                    ("players", claim.players.to_string()),
                    ("input_size", claim.input_size.to_string()),
                    ("tick_rate_hz", claim.tick_rate_hz.to_string()),
                ],
                out,
            ),
            MatchServerEvent::MatchEnded { match_id, end, ticks } => {
                let end = match end {
                    MatchEnd::Vacant => "vacant",
                    MatchEnd::Ended => "ended",
                };
                let f = [("match", match_id.to_string()), ("end", json_string(end)), ("ticks", ticks.to_string())];
                self.line(now, "match_ended", &f, out)
            }
            MatchServerEvent::Refused { peer, why } => {
                self.line(now, "refused", &[("peer", peer.to_string()), ("why", json_string(refusal(why)))], out)
            }
            MatchServerEvent::Session { match_id, event } => {
                // Fields past the match and the player: why it was kicked or refused.
                let mut why = Vec::new();
                let (name, player) = match event {
                    ServerSessionEvent::PlayerJoined { player, .. } => ("player_joined", Some(player)),
                    ServerSessionEvent::PlayerReconnected { player, .. } => ("player_reconnected", Some(player)),
                    ServerSessionEvent::PlayerInterrupted { player, .. } => ("player_interrupted", Some(player)),
                    ServerSessionEvent::PlayerLeft { player } => ("player_left", Some(player)),
                    ServerSessionEvent::PlayerKicked { player, cause, .. } => {
                        why.push(("cause", json_string(kick_cause(cause))));
                        if let KickCause::Engine { code } = cause {
                            why.push(("code", code.to_string()));
                        }
                        ("player_kicked", Some(player))
                    }
                    ServerSessionEvent::PlayerCatchingUp { player, .. } => ("player_catching_up", Some(player)),
                    ServerSessionEvent::ConnectionRejected { reason, .. } => {
                        why.push(("why", json_string(rejection(reason))));
                        ("connection_rejected", None)
                    }
                };
                let mut f = vec![("match", match_id.to_string())];
                f.extend(player.map(|p| ("player", p.to_string())));
                f.extend(why);
                self.line(now, name, &f, out)
            }
        }
    }

    /// Refreshes the metrics and the match list (every second).
    pub(crate) fn refresh(&mut self, server: &MatchServer, host: &mut Host, shared: &Arc<Mutex<Shared>>) {
        let mut rtt = Histogram::new(metrics::SECONDS_BUCKETS);
        let mut loss = Histogram::new(metrics::RATIO_BUCKETS);
        let (mut sent, mut recv) = (Histogram::new(metrics::RATE_BUCKETS), Histogram::new(metrics::RATE_BUCKETS));
        let mut players = 0u64;
        let mut list = String::from("[");
        let mut live = Vec::with_capacity(server.match_count());
        for (id, claim, session) in server.matches() {
            let s = session.stats();
            players += u64::from(s.players);
            for peer in session.connections() {
                if let Some(c) = host.stats(peer) {
                    rtt.observe(c.srtt_us / 1e6);
                    loss.observe(c.loss);
                    sent.observe(c.sent_bytes_per_sec);
                    recv.observe(c.recv_bytes_per_sec);
                }
            }
            if !live.is_empty() {
                list.push(',');
            }
            let _ = write!(
                list,
                "{{\"match\":{id},\"players\":{},\"slots\":{},\"tick\":{},\"tick_rate_hz\":{}}}",
                s.players, claim.players, s.tick, claim.tick_rate_hz
            );
            live.push(id);
        }
        list.push(']');
        self.players = players;
        self.peak_players = self.peak_players.max(players);
        let st = server.stats();
        let ep = host.endpoint_stats();
        let mut e = Exposition::default();
        e.gauge("tickwire_serve_matches", "Live matches.", server.match_count() as f64);
        e.gauge("tickwire_serve_players", "Players connected.", players as f64);
        e.gauge(
            "tickwire_serve_draining",
            "1 while the server drains (after SIGTERM).",
            server.is_draining() as u8 as f64,
        );
        e.counter("tickwire_serve_matches_started_total", "Matches made by a token.", st.matches_started);
        e.counter("tickwire_serve_matches_ended_total", "Matches over.", st.matches_ended);
        e.counter_by(
            "tickwire_serve_refused_connections_total",
            "Connections refused a match.",
            "reason",
            &[
                ("no_claim", st.refused_no_claim),
                ("shape", st.refused_shape),
                ("full", st.refused_full),
                ("draining", st.refused_draining),
            ],
        );
        e.counter(
            "tickwire_serve_late_ticks_total",
            "Match ticks run late (more than one due at a wake), over all matches.",
            st.late_ticks,
        );
        e.histogram(
            "tickwire_serve_wake_lateness_seconds",
            "How late the match thread woke past a tick's instant.",
            &self.lateness,
        );
        e.histogram("tickwire_serve_peer_rtt_seconds", "Each connection's smoothed round-trip time.", &rtt);
        e.histogram("tickwire_serve_peer_loss_ratio", "Each connection's measured packet loss.", &loss);
        e.histogram("tickwire_serve_peer_sent_bytes_per_second", "Bytes a second sent to each connection.", &sent);
        e.histogram(
            "tickwire_serve_peer_received_bytes_per_second",
            "Bytes a second received from each connection.",
            &recv,
        );
        e.counter_by(
            "tickwire_serve_datagrams_refused_total",
            "Datagrams dropped before any connection's state, by reason.",
            "reason",
            &[
                ("malformed", ep.malformed),
                ("wrong_protocol", ep.wrong_protocol),
                ("wrong_version", ep.wrong_version),
                ("unknown_sender", ep.unknown_sender),
                ("bad_cookie", ep.bad_cookie),
                ("auth_refused", ep.auth_refused),
                ("replayed", ep.replayed),
                ("over_budget", ep.over_budget),
                ("flooding", ep.flooding),
            ],
        );
        e.counter("tickwire_serve_datagrams_forged_total", "Datagrams that failed authentication.", ep.forged);
        e.counter(
            "tickwire_serve_snapshots_from_clients_total",
            "Joiners' snapshots taken from a client.",
            st.snapshots_from_clients,
        );
        e.counter(
            "tickwire_serve_snapshot_uploads_refused_total",
            "Clients' snapshot uploads refused (outvoted, or not the state their donor vouched for).",
            st.snapshot_uploads_refused,
        );
        e.counter(
            "tickwire_serve_minority_checksums_total",
            "Checksum reports that differ from the players' majority (desyncs).",
            st.minority_checks,
        );
        e.counter(
            "tickwire_serve_client_reports_refused_total",
            "Clients' reports refused (malformed, not asked for, stale).",
            st.client_reports_refused,
        );
        e.counter("tickwire_serve_datagrams_received_total", "Datagrams received.", ep.datagrams_received);
        e.counter("tickwire_serve_datagrams_sent_total", "Datagrams sent.", ep.datagrams_sent);
        // Prometheus's standard name for the process's CPU.
        e.counter_f64(
            "process_cpu_seconds_total",
            "Total user and system CPU time spent in seconds.",
            metrics::process_cpu_seconds(),
        );
        let text = e.finish();
        if let Ok(mut s) = shared.lock() {
            s.metrics = text;
            s.matches = list;
            s.live = live;
        }
    }

    pub(crate) fn summary(&self, server: &MatchServer) -> Summary {
        let st = server.stats();
        Summary {
            matches_started: st.matches_started,
            matches_ended: st.matches_ended,
            drained: self.drained,
            cut_short: self.cut_short,
            ended_by_admin: self.ended_by_admin,
            peak_players: self.peak_players,
            refused: st.refused_no_claim + st.refused_shape + st.refused_full + st.refused_draining,
        }
    }
}

/// `text` as a JSON string.
fn json_string(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    s.push('"');
    for c in text.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(json: bool, e: ServerSessionEvent) -> String {
        let mut r = Report::new(json);
        let mut s = String::new();
        r.event(7, &MatchServerEvent::Session { match_id: 42, event: e }, &mut |l| s.push_str(l));
        s
    }

    /// An operator reads why a player was kicked, and why a connection got no slot.
    #[test]
    fn kicks_and_refusals_name_their_cause() {
        let starved =
            ServerSessionEvent::PlayerKicked { player: 2, peer: 9, cause: KickCause::Jitter(KickReason::Starved) };
        assert_eq!(lines(false, starved), "player_kicked match=42 player=2 cause=inputs_starved");
        let engine = ServerSessionEvent::PlayerKicked { player: 1, peer: 9, cause: KickCause::Engine { code: 77 } };
        assert_eq!(
            lines(true, engine),
            r#"{"t_us":7,"event":"player_kicked","match":42,"player":1,"cause":"engine","code":77}"#
        );
        let no_hello = ServerSessionEvent::ConnectionRejected { peer: 9, reason: RejectReason::NoHello };
        assert_eq!(lines(false, no_hello), "connection_rejected match=42 why=no_hello");
    }
}
