//! `tickwire bench serve`: a load generator for `tickwire serve`. It plays N matches
//! of P clients against a running server from this process, each client a relay
//! client session with its own socket, admitted by a token minted for its match; K
//! of each match's players join mid-match (their snapshot comes from the others).
//! Then every client leaves, so every match ends. It prints one table: whether every
//! client synchronized, the slowest client's authoritative ticks a second, kicks,
//! desyncs and the checksums compared; exit status 1 if any client failed.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use tickwire_proto::token::ConnectToken;
use tickwire_proto::{Admission, ClientSessionEvent, PacketProtection, Presented, Secret, Security, ServeClaim};
use tickwire_runtime::{EngineLoop, HostConfig, RelayClient, RelayClientSettings, SessionEvent};

use super::args::{ServeBenchArgs, UsageError};
use super::boxes::{Engine, INPUT_SIZE, input_for};
use super::token::{self, KEY_ENV, MintOptions, env_secret, read_key};

const FRAME: Duration = Duration::from_millis(2);
/// The slowest client must follow at this rate (issue 36's goal at 60 Hz).
const MIN_RATE_SHARE: f64 = 59.5 / 60.0;

struct Client {
    session: RelayClient,
    engine: Engine,
    pushed: u64,
    synchronized_at: Option<(Instant, u32)>,
    desyncs: u64,
    lost: bool,
}

struct Planned {
    match_id: u64,
    client_id: u64,
    join_at: Duration,
}

fn client(a: &ServeBenchArgs, key: &Secret, p: &Planned) -> Result<Client, String> {
    let claim = ServeClaim {
        match_id: p.match_id,
        players: a.players,
        input_size: INPUT_SIZE as u16,
        tick_rate_hz: a.tick_rate,
    };
    let token = token::mint(&MintOptions {
        key: key.clone(),
        protocol_id: a.protocol_id,
        client_id: p.client_id,
        addresses: vec![a.server],
        expire_secs: a.seconds + 600,
        timeout_secs: 0,
        user_data: claim.user_data(&[]).map_err(|e| e.to_string())?,
    })?;
    let token = ConnectToken::decode(&token).map_err(|e| e.to_string())?;
    let bind: SocketAddr = if a.server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().expect("an address");
    let mut host = HostConfig::new(bind);
    host.endpoint.protocol_id = a.protocol_id;
    host.endpoint.security = Security::Encrypted {
        admission: Admission::default(),
        presented: Presented::Token(Box::new(token)),
        packets: PacketProtection::Aead,
    };
    let mut session = RelayClient::new(RelayClientSettings::new(claim.shape(), host)).map_err(|e| e.to_string())?;
    session.set_server(a.server).map_err(|e| e.to_string())?;
    session.start().map_err(|e| e.to_string())?;
    let engine = Engine::lean(a.players as usize, session.state_slots(), false);
    Ok(Client { session, engine, pushed: 0, synchronized_at: None, desyncs: 0, lost: false })
}

fn frame(i: usize, c: &mut Client) -> Result<(), String> {
    for _ in 0..c.session.ticks_due().map_err(|e| e.to_string())? {
        c.session.add_local_input(&input_for(i, c.pushed)).map_err(|e| e.to_string())?;
        c.pushed += 1;
        c.session.advance().map_err(|e| e.to_string())?;
        c.engine.run_requests(&mut c.session).map_err(|e| e.to_string())?;
    }
    while let Some(e) = c.session.poll_event() {
        match e {
            SessionEvent::RelayClient(ClientSessionEvent::Synchronized { tick }) => {
                c.synchronized_at.get_or_insert((Instant::now(), tick));
            }
            SessionEvent::RelayClient(ClientSessionEvent::Desync { .. }) => c.desyncs += 1,
            SessionEvent::RelayClient(
                ClientSessionEvent::Disconnected { .. } | ClientSessionEvent::Interrupted { .. },
            )
            | SessionEvent::Fatal(_) => c.lost = true,
            _ => {}
        }
    }
    Ok(())
}

pub fn run(a: &ServeBenchArgs) -> Result<ExitCode, UsageError> {
    let key = read_key(a.key_file.as_deref(), env_secret(KEY_ENV), ("--key-file", KEY_ENV), "bench serve: the key")?;
    let late = a.late_players.min(a.players.saturating_sub(1));
    let late_at = Duration::from_secs_f64(a.seconds as f64 / 3.0);
    let mut plan = Vec::new();
    for m in 0..a.matches as u64 {
        for p in 0..a.players {
            let join_at = if p >= a.players - late { late_at } else { Duration::ZERO };
            plan.push(Planned {
                match_id: a.match_base + m,
                client_id: (a.match_base + m) * 256 + u64::from(p),
                join_at,
            });
        }
    }
    println!(
        "tickwire bench serve: {} matches of {} players ({} joining at {:.1} s) against {} for {} s",
        a.matches,
        a.players,
        late,
        late_at.as_secs_f64(),
        a.server,
        a.seconds
    );
    let start = Instant::now();
    let mut clients: Vec<Option<Client>> = (0..plan.len()).map(|_| None).collect();
    let end = start + Duration::from_secs(a.seconds);
    while Instant::now() < end {
        for (i, p) in plan.iter().enumerate() {
            if clients[i].is_none() && start.elapsed() >= p.join_at {
                clients[i] = Some(client(a, &key, p).map_err(|e| UsageError(format!("bench serve: {e}")))?);
            }
        }
        for (i, c) in clients.iter_mut().enumerate() {
            if let Some(c) = c {
                frame(i, c).map_err(|e| UsageError(format!("bench serve: client {i}: {e}")))?;
            }
        }
        std::thread::sleep(FRAME);
    }
    // The slowest client's authoritative rate, from its synchronization to now.
    let (mut unsynced, mut lost, mut desyncs, mut checks, mut slowest) = (0, 0, 0u64, 0u64, f64::INFINITY);
    let now = Instant::now();
    for c in clients.iter_mut().flatten() {
        let st = c.session.stats();
        checks += st.core.checks_compared;
        desyncs += c.desyncs;
        lost += usize::from(c.lost);
        match c.synchronized_at {
            Some((at, tick)) => {
                let secs = now.duration_since(at).as_secs_f64();
                if secs > 1.0 {
                    slowest = slowest.min(f64::from(st.core.authoritative_tick.saturating_sub(tick)) / secs);
                }
            }
            None => unsynced += 1,
        }
    }
    let n = clients.iter().flatten().count();
    let rate_ok = slowest >= MIN_RATE_SHARE * f64::from(a.tick_rate);
    println!(
        "\n{:<9} {:>8} {:>13} {:>13} {:>6} {:>8} {:>16}",
        "matches", "clients", "synchronized", "slowest t/s", "lost", "desyncs", "checks compared"
    );
    println!(
        "{:<9} {:>8} {:>13} {:>13.2} {:>6} {:>8} {:>16}",
        a.matches,
        n,
        n - unsynced,
        slowest,
        lost,
        desyncs,
        checks
    );
    // Leaving: every client closes its connection, so every match empties and ends.
    clients.clear();
    let ok = unsynced == 0 && lost == 0 && desyncs == 0 && checks > 0 && rate_ok;
    println!(
        "\nevery client synchronized, kept its connection, never desynced and followed at >= {:.1} t/s: {}",
        MIN_RATE_SHARE * f64::from(a.tick_rate),
        if ok { "yes" } else { "NO" }
    );
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
