//! `tickwire peer`: one peer of a P2P match met through a rendezvous, reported as JSON
//! lines (for people and for `tests/nat/matrix.sh`). The game is the smallest that
//! rollback can get wrong: its state is a hash of every input so far, saved, loaded and
//! checksummed as a real game's would be, so a misprediction not rolled back, or a peer
//! that saw other inputs, shows as a desync.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use tickwire_proto::token::ConnectToken;
use tickwire_proto::{Admission, AdvanceStatus, GameShape, LinkConfig, PeerPath, Presented, RollbackEvent, Security};
use tickwire_runtime::{EngineLoop, HostConfig, P2pSession, P2pSettings, Rendezvous, RequestKind, SessionEvent};

use super::args::{PeerArgs, UsageError};
use super::token::{env_secret, read_key, read_text, unhex};

const TICKET_ENV: &str = "TICKWIRE_TICKET";
const SECRET_ENV: &str = "TICKWIRE_MATCH_SECRET";
/// How long a peer may take to synchronize.
const SYNC_LIMIT: Duration = Duration::from_secs(10);
/// How long a peer plays on past its last counted frame, so that the other peers
/// reach theirs with this one's inputs still coming.
const LINGER: Duration = Duration::from_secs(2);
const INPUT_SIZE: usize = 2;

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A player's input at a tick: changes often, so that predictions are often wrong.
fn input(slot: u8, tick: u32) -> [u8; INPUT_SIZE] {
    let r = mix(u64::from(tick / 7) << 8 | u64::from(slot));
    [r as u8, (r >> 8) as u8 & 0x0F]
}

fn path_json(p: PeerPath) -> String {
    match p {
        PeerPath::Pending => "\"path\":\"pending\"".into(),
        PeerPath::Direct(a) => format!("\"path\":\"direct\",\"addr\":\"{a}\""),
        PeerPath::Relayed(a) => format!("\"path\":\"relayed\",\"addr\":\"{a}\""),
    }
}

fn path_word(p: PeerPath) -> &'static str {
    match p {
        PeerPath::Pending => "pending",
        PeerPath::Direct(_) => "direct",
        PeerPath::Relayed(_) => "relayed",
    }
}

pub fn run(a: &PeerArgs) -> Result<ExitCode, UsageError> {
    if a.slot >= a.players {
        return Err(UsageError(format!("peer: --slot {} is not below --players {}", a.slot, a.players)));
    }
    let secret = read_key(
        a.secret_file.as_deref(),
        env_secret(SECRET_ENV),
        ("--secret-file", SECRET_ENV),
        "peer: the match secret",
    )?;
    let (text, _) =
        read_text(a.ticket_file.as_deref(), env_secret(TICKET_ENV), ("--ticket-file", TICKET_ENV), "peer: the ticket")?;
    let bytes = unhex(&text).map_err(|e| UsageError(format!("peer: the ticket: {e}")))?;
    let ticket = ConnectToken::decode(&bytes).map_err(|e| UsageError(format!("peer: the ticket: {e}")))?;
    let game = GameShape::new(a.players as usize, INPUT_SIZE);
    let mut host = HostConfig::new(a.bind);
    host.endpoint.protocol_id = a.protocol_id;
    host.endpoint.security = Security::Encrypted {
        admission: Admission::Secrets { players: Some(secret.clone()), spectators: None },
        presented: Presented::Secret(secret),
        packets: Default::default(),
    };
    if a.delay_ms > 0 {
        host.outbound_sim = Some(LinkConfig { latency_us: a.delay_ms * 1000, ..LinkConfig::perfect() });
    }
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("tickwire peer: {e}");
        ExitCode::from(1)
    };
    let mut s = match P2pSession::new(P2pSettings::new(game, host)) {
        Ok(s) => s,
        Err(e) => return Ok(fail(&e)),
    };
    let setup = s
        .set_rendezvous(Rendezvous { address: a.rendezvous, ticket, private: a.private })
        .and_then(|()| {
            (0..a.players as usize)
                .try_for_each(|p| if p == a.slot as usize { s.add_local_player(p) } else { s.add_rendezvous_player(p) })
        })
        .and_then(|()| s.start());
    if let Err(e) = setup {
        return Ok(fail(&e));
    }
    Ok(play(&mut s, a))
}

/// The match: the game's state, its saves by tick, the events as JSON lines.
fn play(s: &mut P2pSession, a: &PeerArgs) -> ExitCode {
    let start = Instant::now();
    let ms = |t: Instant| t.duration_since(start).as_millis();
    let out = &mut std::io::stdout();
    let mut state: u64 = 0;
    let mut saves: BTreeMap<u32, u64> = BTreeMap::new();
    let (mut synced, mut desyncs, mut newest) = (None::<Instant>, 0u32, 0u32);
    let mut disconnects = 0u32;
    // Each remote player's path when the last counted frame was played (what follows is
    // the linger, while the other peers finish and leave).
    let mut final_paths: BTreeMap<usize, PeerPath> = BTreeMap::new();
    let mut finished: Option<Instant> = None;
    let mut counted = 0u32;
    let target = (a.seconds * 60) as u32;
    let mut paths: BTreeMap<usize, PeerPath> = BTreeMap::new();
    let mut failure: Option<String> = None;
    let mut local_tick = 0u32;
    loop {
        let now = Instant::now();
        if synced.is_none() && now.duration_since(start) > SYNC_LIMIT {
            failure = Some("not synchronized within 10 s".into());
            break;
        }
        if finished.is_some_and(|f| now.duration_since(f) > LINGER) {
            break;
        }
        let due = match s.ticks_due() {
            Ok(n) => n,
            Err(e) => {
                failure = Some(e.to_string());
                break;
            }
        };
        for _ in 0..due {
            if s.add_input(a.slot as usize, &input(a.slot, local_tick)).is_err() {
                break;
            }
            match s.advance() {
                Ok(AdvanceStatus::Advanced) => local_tick += 1,
                Ok(_) => break,
                Err(e) => {
                    failure = Some(e.to_string());
                    break;
                }
            }
            while let Some(r) = s.poll_request() {
                match r.kind {
                    RequestKind::Save => {
                        saves.insert(r.tick, state);
                        let _ = s.confirm_save(r.tick, state);
                    }
                    RequestKind::Load => state = saves.get(&r.tick).copied().unwrap_or(state),
                    RequestKind::Advance => {
                        let inputs = s.request_inputs().unwrap_or(&[]);
                        let h = inputs.iter().fold(u64::from(r.tick), |h, &b| mix(h ^ u64::from(b)));
                        state = mix(state ^ h);
                        newest = newest.max(r.tick + 1);
                    }
                    _ => {}
                }
            }
            // Saves older than any rollback can reach are dropped.
            while saves.len() > 128 {
                saves.pop_first();
            }
        }
        if failure.is_some() {
            break;
        }
        while let Some(e) = s.poll_event() {
            let at = ms(Instant::now());
            let line = match e {
                SessionEvent::PathChanged { player, path } => {
                    paths.insert(player, path);
                    format!("{{\"event\":\"path\",\"player\":{player},{},\"at_ms\":{at}}}", path_json(path))
                }
                SessionEvent::Core(RollbackEvent::Synchronized) => {
                    synced = Some(Instant::now());
                    format!("{{\"event\":\"synchronized\",\"at_ms\":{at}}}")
                }
                SessionEvent::Core(RollbackEvent::Desync { tick, .. }) => {
                    desyncs += 1;
                    format!("{{\"event\":\"desync\",\"tick\":{tick},\"at_ms\":{at}}}")
                }
                SessionEvent::Core(RollbackEvent::PeerInterrupted { peer, .. }) => {
                    format!("{{\"event\":\"interrupted\",\"peer\":{peer},\"at_ms\":{at}}}")
                }
                SessionEvent::Core(RollbackEvent::PeerResumed { peer }) => {
                    format!("{{\"event\":\"resumed\",\"peer\":{peer},\"at_ms\":{at}}}")
                }
                SessionEvent::Core(RollbackEvent::PeerDisconnected { peer, reason }) => {
                    // A match that lost a peer before its last counted frame is no match
                    // played through: a failure. (In the linger, the others leave.)
                    if finished.is_none() {
                        disconnects += 1;
                    }
                    format!("{{\"event\":\"disconnected\",\"peer\":{peer},\"reason\":\"{reason:?}\",\"at_ms\":{at}}}")
                }
                SessionEvent::RendezvousRefused(reason) => {
                    format!("{{\"event\":\"refused\",\"reason\":\"{reason}\",\"at_ms\":{at}}}")
                }
                SessionEvent::Fatal(m) => {
                    failure = Some(m);
                    continue;
                }
                other => {
                    if std::env::var_os("TICKWIRE_PEER_DEBUG").is_some() {
                        eprintln!("{at} ms: {other:?}");
                    }
                    continue;
                }
            };
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
        if failure.is_some() {
            break;
        }
        if synced.is_some() && finished.is_none() && newest >= target {
            counted = newest;
            finished = Some(Instant::now());
            final_paths.clone_from(&paths);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let sync_ms = synced.map_or(-1, |t| ms(t) as i64);
    let finals = if finished.is_some() { &final_paths } else { &paths };
    let finals: Vec<String> = finals.iter().map(|(p, x)| format!("\"{p}\":\"{}\"", path_word(*x))).collect();
    let frames = if finished.is_some() { counted } else { newest };
    let _ = writeln!(
        out,
        "{{\"event\":\"done\",\"frames\":{frames},\"desyncs\":{desyncs},\"disconnects\":{disconnects},\"sync_ms\":{sync_ms},\"paths\":{{{}}}{}}}",
        finals.join(","),
        failure.as_ref().map_or(String::new(), |f| format!(",\"error\":{:?}", f))
    );
    let _ = out.flush();
    let good = failure.is_none() && desyncs == 0 && disconnects == 0 && finished.is_some();
    if good { ExitCode::SUCCESS } else { ExitCode::from(1) }
}
