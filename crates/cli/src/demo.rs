//! `tickwire demo`: a relay match in this process. One relay server and N clients, each
//! a session ([`RelayServer`], [`RelayClient`]) with its own UDP socket on 127.0.0.1 and the link simulator on what it
//! sends, play the boxes game ([`super::boxes`]): the server runs the authoritative
//! simulation, every client predicts ahead of it and re-simulates when a prediction was
//! wrong. A net-graph line per client every second; at the end, every client's
//! authoritative states are compared with the server's, tick by tick.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use tickwire_proto::{ClientSessionEvent, GameShape, JitterModel, LinkConfig, LossModel, ServerSessionEvent};
use tickwire_runtime::{
    EngineLoop, HostConfig, Networked, RelayClient, RelayClientSettings, RelayServer, RelayServerSettings,
    SessionEvent, SessionFailure,
};

use super::boxes::{Engine, INPUT_SIZE, input_for};
use super::token::{self, MintOptions};
use tickwire_proto::token::ConnectToken;
use tickwire_proto::{Admission, KEY_SIZE, PacketProtection, Presented, Secret, Security, TokenAdmission};

/// Parsed `demo` options.
pub struct Options {
    pub clients: usize,
    pub seconds: u64,
    pub latency_ms: f64,
    pub jitter_ms: f64,
    pub loss_pct: f64,
}

/// Most ticks a client predicts: covers a round trip of about 200 ms at 60 Hz; longer
/// latency shows as input delay.
const MAX_PREDICTION: u32 = 16;
/// How long the clients get to join and catch up, plus a few round trips.
const JOIN_LIMIT: Duration = Duration::from_secs(10);
const FRAME: Duration = Duration::from_millis(2);

fn link(o: &Options) -> LinkConfig {
    LinkConfig {
        latency_us: (o.latency_ms * 1000.0) as u64,
        jitter: if o.jitter_ms > 0.0 {
            JitterModel::Uniform { max_us: (o.jitter_ms * 1000.0) as u64 }
        } else {
            JitterModel::None
        },
        loss: if o.loss_pct > 0.0 { LossModel::Bernoulli { p: o.loss_pct / 100.0 } } else { LossModel::None },
        ..LinkConfig::perfect()
    }
}

fn host(o: &Options) -> HostConfig {
    let mut host = HostConfig::new("127.0.0.1:0".parse().expect("an address"));
    host.outbound_sim = Some(link(o));
    host
}

fn game(o: &Options) -> GameShape {
    GameShape::new(o.clients, INPUT_SIZE)
}

/// Why the demo stopped before its verdict.
#[derive(Debug)]
pub enum DemoError {
    /// A session call failed.
    Session(SessionFailure),
    /// Setting the match up failed (the server's key, a client's connect token).
    Setup(String),
    /// The game could not use what a session handed it.
    Game(&'static str),
}

impl From<SessionFailure> for DemoError {
    fn from(e: SessionFailure) -> Self {
        DemoError::Session(e)
    }
}

impl std::fmt::Display for DemoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DemoError::Session(e) => write!(f, "{e}"),
            DemoError::Setup(m) => f.write_str(m),
            DemoError::Game(m) => f.write_str(m),
        }
    }
}

struct Client {
    session: RelayClient,
    engine: Engine,
    pushed: u64,
    player: Option<u32>,
    joined_tick: u32,
    synchronized: bool,
    desyncs: u32,
    lost: bool,
    /// Re-simulated ticks at the previous net-graph line.
    resimulated_before: u64,
}

/// Runs the demo; the exit code says whether every client's state matched the server's.
pub fn run(o: &Options) -> ExitCode {
    match play(o) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("demo: {e}");
            ExitCode::FAILURE
        }
    }
}

fn play(o: &Options) -> Result<bool, DemoError> {
    println!("tickwire demo: a relay match, 1 server + {} clients on 127.0.0.1 at 60 Hz, {} s", o.clients, o.seconds);
    println!(
        "link, each direction: {:.0} ms latency + jitter 0..{:.0} ms, {:.1}% loss (RTT about {:.0} ms); clients predict up to {MAX_PREDICTION} ticks\n",
        o.latency_ms,
        o.jitter_ms,
        o.loss_pct,
        2.0 * o.latency_ms + o.jitter_ms,
    );
    // A backend's key: the server admits only clients with a connect token minted with
    // it for its address, and every connection is encrypted.
    let key = zeroize::Zeroizing::new(
        tickwire_runtime::os_random_bytes::<KEY_SIZE>().map_err(|e| DemoError::Setup(e.to_string()))?,
    );
    let mut server_host = host(o);
    server_host.endpoint.security = Security::Encrypted {
        admission: Admission::Tokens(TokenAdmission {
            key: Secret(*key),
            public_addresses: Vec::new(), // the bound socket's
        }),
        presented: Presented::Open,
        packets: PacketProtection::Aead,
    };
    // Every demo client is on 127.0.0.1: the per-address limit (8 by default, for
    // players behind one NAT) would refuse all but 8 of them.
    server_host.endpoint.max_incoming_per_ip = 0;
    let protocol_id = server_host.endpoint.protocol_id;
    let mut server = RelayServer::new(RelayServerSettings::new(game(o), server_host))?;
    server.start()?;
    let server_addr = server.local_addr();
    println!("encrypted; clients admitted by connect tokens minted for {server_addr}\n");
    let mut server_engine = Engine::new(o.clients, server.state_slots(), true);
    let mut clients = Vec::with_capacity(o.clients);
    for i in 0..o.clients {
        let token = token::mint(&MintOptions {
            key: Secret(*key),
            protocol_id,
            client_id: i as u64 + 1,
            addresses: vec![server_addr],
            expire_secs: o.seconds + 600,
            timeout_secs: 0,
            user_data: Vec::new(),
        })
        .map_err(DemoError::Setup)?;
        let token = ConnectToken::decode(&token).map_err(|e| DemoError::Setup(e.to_string()))?;
        let mut client_host = host(o);
        client_host.endpoint.security = Security::Encrypted {
            admission: Admission::default(),
            presented: Presented::Token(Box::new(token)),
            packets: PacketProtection::Aead,
        };
        let mut settings = RelayClientSettings::new(game(o), client_host);
        settings.client.max_prediction = MAX_PREDICTION;
        let mut session = RelayClient::new(settings)?;
        session.set_server(server_addr)?;
        session.start()?;
        let engine = Engine::new(o.clients, session.state_slots(), false);
        clients.push(Client {
            session,
            engine,
            pushed: 0,
            player: None,
            joined_tick: 0,
            synchronized: false,
            desyncs: 0,
            lost: false,
            resimulated_before: 0,
        });
    }

    let join_limit = JOIN_LIMIT + Duration::from_secs_f64(6.0 * o.latency_ms / 1000.0);
    let start = Instant::now();
    let mut playing_since: Option<Instant> = None;
    let mut next_graph = 1u64;
    loop {
        server_frame(&mut server, &mut server_engine)?;
        for (i, c) in clients.iter_mut().enumerate() {
            client_frame(i, c)?;
        }
        if clients.iter().any(|c| c.lost) {
            eprintln!("demo: a client lost its connection to the server");
            return Ok(false);
        }
        match playing_since {
            None if clients.iter().all(|c| c.synchronized) => {
                println!(
                    "all {} clients joined and caught up after {:.2} s\n",
                    clients.len(),
                    start.elapsed().as_secs_f64()
                );
                playing_since = Some(Instant::now());
            }
            None if start.elapsed() > join_limit => {
                let n = clients.iter().filter(|c| c.synchronized).count();
                eprintln!(
                    "demo: only {n} of {} clients caught up within {:.1} s",
                    clients.len(),
                    join_limit.as_secs_f64()
                );
                return Ok(false);
            }
            Some(t) if t.elapsed() >= Duration::from_secs(next_graph) => {
                net_graph(next_graph, &mut clients);
                if next_graph >= o.seconds {
                    break;
                }
                next_graph += 1;
            }
            _ => {}
        }
        std::thread::sleep(FRAME);
    }
    Ok(summary(&mut server, &server_engine, &mut clients))
}

fn server_frame(s: &mut RelayServer, engine: &mut Engine) -> Result<(), DemoError> {
    for _ in 0..s.ticks_due()? {
        s.advance()?;
        engine.run_requests(s)?;
    }
    while let Some(e) = s.poll_event() {
        let SessionEvent::RelayServer { event, tick } = e else { continue };
        match event {
            ServerSessionEvent::PlayerJoined { player, .. } => println!("server: player {player} joins at tick {tick}"),
            ServerSessionEvent::PlayerKicked { player, cause, .. } => {
                println!("server: player {player} kicked at tick {tick}: {cause:?}")
            }
            ServerSessionEvent::PlayerInterrupted { player, reason } => {
                println!("server: player {player} dropped at tick {tick}: {reason:?}")
            }
            _ => {}
        }
    }
    Ok(())
}

fn client_frame(i: usize, c: &mut Client) -> Result<(), DemoError> {
    for _ in 0..c.session.ticks_due()? {
        c.session.add_local_input(&input_for(i, c.pushed))?;
        c.pushed += 1;
        c.session.advance()?; // Advanced, or NotSynchronized before the snapshot came
        c.engine.run_requests(&mut c.session)?;
    }
    while let Some(e) = c.session.poll_event() {
        match e {
            SessionEvent::RelayClient(ClientSessionEvent::Joined { player, tick, .. }) => {
                c.player = Some(player);
                c.joined_tick = tick;
            }
            SessionEvent::RelayClient(ClientSessionEvent::Synchronized { .. }) => c.synchronized = true,
            SessionEvent::RelayClient(ClientSessionEvent::Desync { tick, .. }) => {
                println!("client {}: DESYNC at tick {tick}", i + 1);
                c.desyncs += 1;
            }
            SessionEvent::RelayClient(ClientSessionEvent::Disconnected { .. }) | SessionEvent::Fatal(_) => {
                c.lost = true
            }
            _ => {}
        }
    }
    Ok(())
}

/// One line per client: the net graph (round trip, lead, server buffer, prediction distance,
/// resimulated ticks a second, late inputs).
fn net_graph(second: u64, clients: &mut [Client]) {
    for (i, c) in clients.iter_mut().enumerate() {
        let st = c.session.stats();
        let (y, p) = (st.core.sync, st.core.prediction);
        let resim_per_s = p.resimulated - c.resimulated_before;
        c.resimulated_before = p.resimulated;
        println!(
            "[{second:>3} s] client {:>2}  rtt {:>5.1} ms  lead {:>5.2} ticks  server buffer {:>2}  prediction {:>2}  \
             resimulated {:>4}/s  late inputs {:>3}",
            i + 1,
            st.rtt_us / 1000.0,
            y.lead_ticks,
            y.server_buffer_depth,
            st.core.prediction_distance,
            resim_per_s,
            p.local_late,
        );
    }
}

/// Compares every client's authoritative checksums with the server's; prints a table.
fn summary(server: &mut RelayServer, server_engine: &Engine, clients: &mut [Client]) -> bool {
    let ss = server.stats();
    println!(
        "\nserver: {} ticks, {} players; empty steps {}, merged steps {}, checksums sent {}",
        ss.current_tick,
        ss.core.players,
        ss.core.empty_steps + ss.core.substituted_steps,
        ss.core.merged_steps,
        ss.core.checks_sent
    );
    println!(
        "\n{:<8} {:>6} {:>6} {:>13} {:>9} {:>6} {:>11} {:>11} {:>8} {:>7}",
        "client",
        "player",
        "joined",
        "authoritative",
        "compared",
        "differ",
        "re-predict",
        "resimulated",
        "checks",
        "desyncs"
    );
    let mut all_ok = true;
    for (i, c) in clients.iter_mut().enumerate() {
        let st = c.session.stats();
        let (mut compared, mut differ) = (0u64, 0u64);
        let authoritative = st.core.authoritative_tick;
        for t in c.joined_tick..authoritative {
            let server_sum = server_engine.checksums.get(t as usize).copied().flatten();
            let client_sum = c.engine.checksums.get(t as usize).copied().flatten();
            compared += 1;
            differ += u64::from(server_sum.is_none() || client_sum != server_sum);
        }
        let ok = c.player.is_some() && compared > 0 && differ == 0 && c.desyncs == 0;
        all_ok &= ok;
        println!(
            "{:<8} {:>6} {:>6} {:>13} {:>9} {:>6} {:>11} {:>11} {:>8} {:>7}",
            i + 1,
            c.player.map_or("-".to_string(), |p| p.to_string()),
            c.joined_tick,
            authoritative,
            compared,
            differ,
            st.core.prediction.repredictions,
            st.core.prediction.resimulated,
            st.core.checks_compared,
            c.desyncs,
        );
    }
    println!(
        "\nevery client's authoritative state matched the server's at every tick: {}",
        if all_ok { "yes" } else { "NO" }
    );
    all_ok
}
