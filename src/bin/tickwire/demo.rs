//! `tickwire demo`: one server and N clients in this process, over 127.0.0.1 through the
//! link simulator, exchanging game-like traffic at 60 Hz.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use tickwire::core::netsim::{JitterModel, LinkConfig, LossModel};
use tickwire::core::transport::{EndpointConfig, PeerId, CHANNEL_RELIABLE, CHANNEL_UNRELIABLE};
use tickwire::runtime::{Host, HostConfig, HostEvent};

/// Parsed `demo` options.
pub struct Options {
    pub clients: usize,
    pub seconds: u64,
    pub latency_ms: f64,
    pub jitter_ms: f64,
    pub loss_pct: f64,
}

const TICK: Duration = Duration::from_micros(16_667);
const UNRELIABLE_SIZE: usize = 32;
const RELIABLE_SIZE: usize = 16;
/// After the sending stops, how long reliable streams get to complete.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// One direction of one client's traffic.
#[derive(Default, Clone, Copy)]
struct Stream {
    unreliable_sent: u32,
    unreliable_recv: u32,
    reliable_sent: u32,
    reliable_recv: u32,
    /// Next reliable sequence number expected; equals the count received while in order.
    reliable_next: u32,
    out_of_order: bool,
}

impl Stream {
    fn receive(&mut self, channel: u8, data: &[u8]) {
        if channel == CHANNEL_UNRELIABLE {
            self.unreliable_recv += 1;
        } else if channel == CHANNEL_RELIABLE {
            self.reliable_recv += 1;
            let seq = u32::from_le_bytes(data[..4].try_into().unwrap_or_default());
            if seq == self.reliable_next {
                self.reliable_next += 1;
            } else {
                self.out_of_order = true;
            }
        }
    }
    fn reliable_complete(&self) -> bool {
        !self.out_of_order && self.reliable_next == self.reliable_sent
    }
}

struct Client {
    host: Host,
    /// The server as this client names it.
    server: PeerId,
    /// This client as the server names it, once connected.
    at_server: Option<PeerId>,
    up: Stream,
    down: Stream,
}

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

fn host_config(o: &Options, max_incoming: u32) -> HostConfig {
    let mut cfg = HostConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.endpoint = EndpointConfig { max_incoming, ..EndpointConfig::default() };
    cfg.outbound_sim = Some(link(o));
    cfg
}

fn message(seq: u32, len: usize) -> [u8; UNRELIABLE_SIZE] {
    let mut m = [0u8; UNRELIABLE_SIZE];
    m[..4].copy_from_slice(&seq.to_le_bytes());
    m[4..len].fill((seq % 251) as u8);
    m
}

/// Runs the demo; the exit code says whether every reliable stream was complete.
pub fn run(o: &Options) -> ExitCode {
    println!(
        "tickwire demo: 1 server + {} clients on 127.0.0.1, {} s at 60 Hz",
        o.clients, o.seconds
    );
    println!(
        "link, each direction: {:.0} ms latency + jitter 0..{:.0} ms, {:.1}% loss (RTT about {:.0} ms)",
        o.latency_ms,
        o.jitter_ms,
        o.loss_pct,
        2.0 * o.latency_ms + o.jitter_ms
    );
    println!(
        "per tick and direction: one {UNRELIABLE_SIZE}-byte unreliable and one {RELIABLE_SIZE}-byte reliable message, then flush\n"
    );
    let mut server = match Host::start(host_config(o, o.clients as u32)) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("demo: cannot start the server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut clients = Vec::new();
    let mut by_addr: HashMap<SocketAddr, usize> = HashMap::new();
    for i in 0..o.clients {
        let started = Host::start(host_config(o, 0)).and_then(|mut host| {
            let server_peer = host.connect(server.local_addr())?;
            Ok((host, server_peer))
        });
        match started {
            Ok((host, server_peer)) => {
                by_addr.insert(host.local_addr(), i);
                clients.push(Client { host, server: server_peer, at_server: None, up: Stream::default(), down: Stream::default() });
            }
            Err(e) => {
                eprintln!("demo: cannot start client {}: {e}", i + 1);
                return ExitCode::FAILURE;
            }
        }
    }
    let mut by_peer: HashMap<PeerId, usize> = HashMap::new();
    let mut errors = 0u64;

    // Connect.
    let deadline = Instant::now() + Duration::from_secs(10);
    while by_peer.len() < clients.len() {
        if Instant::now() > deadline {
            eprintln!("demo: only {} of {} clients connected within 10 s", by_peer.len(), clients.len());
            return ExitCode::FAILURE;
        }
        poll_all(&mut server, &mut clients, &by_addr, &mut by_peer);
        std::thread::sleep(Duration::from_millis(1));
    }
    println!("all {} clients connected\n", clients.len());

    // Play.
    let start = Instant::now();
    let mut next_tick = start;
    let mut next_report = 1u64;
    let mut tick = 0u32;
    while start.elapsed() < Duration::from_secs(o.seconds) {
        for c in clients.iter_mut() {
            errors += send_tick(&mut c.host, c.server, &mut c.up, tick);
        }
        for c in clients.iter_mut() {
            if let Some(peer) = c.at_server {
                errors += send_tick(&mut server, peer, &mut c.down, tick);
            }
        }
        errors += server.flush().is_err() as u64;
        tick += 1;
        poll_all(&mut server, &mut clients, &by_addr, &mut by_peer);
        if start.elapsed() >= Duration::from_secs(next_report) {
            report_second(next_report, &mut clients);
            next_report += 1;
        }
        next_tick += TICK;
        if let Some(wait) = next_tick.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }

    if next_report <= o.seconds {
        report_second(next_report, &mut clients);
    }

    // Let the reliable streams finish (flushing keeps acks and resends going).
    let drain_start = Instant::now();
    while drain_start.elapsed() < DRAIN_LIMIT
        && !clients.iter().all(|c| c.up.reliable_complete() && c.down.reliable_complete())
    {
        poll_all(&mut server, &mut clients, &by_addr, &mut by_peer);
        for c in clients.iter_mut() {
            let _ = c.host.flush();
        }
        let _ = server.flush();
        std::thread::sleep(Duration::from_millis(5));
    }
    summary(&clients, errors)
}

/// Sends this tick's two messages on one direction and flushes; returns the number of
/// calls that failed.
fn send_tick(host: &mut Host, peer: PeerId, s: &mut Stream, tick: u32) -> u64 {
    let mut failed = 0;
    match host.send(peer, CHANNEL_UNRELIABLE, &message(tick, UNRELIABLE_SIZE)) {
        Ok(()) => s.unreliable_sent += 1,
        Err(_) => failed += 1,
    }
    match host.send(peer, CHANNEL_RELIABLE, &message(s.reliable_sent, RELIABLE_SIZE)[..RELIABLE_SIZE]) {
        Ok(()) => s.reliable_sent += 1,
        Err(_) => failed += 1,
    }
    failed + host.flush().is_err() as u64
}

fn poll_all(
    server: &mut Host,
    clients: &mut [Client],
    by_addr: &HashMap<SocketAddr, usize>,
    by_peer: &mut HashMap<PeerId, usize>,
) {
    while let Some(ev) = server.poll_event() {
        match ev {
            HostEvent::Connected { peer, addr } => {
                if let Some(&i) = by_addr.get(&addr) {
                    by_peer.insert(peer, i);
                    clients[i].at_server = Some(peer);
                }
            }
            HostEvent::Message { peer, channel, data, .. } => {
                if let Some(&i) = by_peer.get(&peer) {
                    clients[i].up.receive(channel, &data);
                }
                server.recycle(data);
            }
            HostEvent::Disconnected { peer, reason } => {
                eprintln!("demo: server lost peer {peer}: {}", reason.as_str());
            }
            HostEvent::Fatal { message } => eprintln!("demo: server: {message}"),
        }
    }
    for (i, c) in clients.iter_mut().enumerate() {
        while let Some(ev) = c.host.poll_event() {
            match ev {
                HostEvent::Message { channel, data, .. } => {
                    c.down.receive(channel, &data);
                    c.host.recycle(data);
                }
                HostEvent::Disconnected { reason, .. } => eprintln!("demo: client {} disconnected: {}", i + 1, reason.as_str()),
                HostEvent::Fatal { message } => eprintln!("demo: client {}: {message}", i + 1),
                HostEvent::Connected { .. } => {}
            }
        }
    }
}

fn report_second(second: u64, clients: &mut [Client]) {
    for (i, c) in clients.iter_mut().enumerate() {
        match c.host.stats(c.server) {
            Some(s) => println!(
                "[{second:>3} s] client {:>2}   rtt {:>6.1} ms   loss {:>5.1}%   up {:>6.2} kB/s   down {:>6.2} kB/s",
                i + 1,
                s.srtt_us / 1000.0,
                s.loss * 100.0,
                s.sent_bytes_per_sec / 1000.0,
                s.recv_bytes_per_sec / 1000.0
            ),
            None => println!("[{second:>3} s] client {:>2}   (no statistics yet)", i + 1),
        }
    }
}

fn pct(recv: u32, sent: u32) -> f64 {
    if sent == 0 { 0.0 } else { 100.0 * recv as f64 / sent as f64 }
}

fn summary(clients: &[Client], errors: u64) -> ExitCode {
    println!("\nsummary (delivered / sent)");
    println!(
        "{:<8} {:>22} {:>22} {:>15} {:>15} {:>9}",
        "client", "unreliable up", "unreliable down", "reliable up", "reliable down", "in order"
    );
    let mut all_ok = true;
    for (i, c) in clients.iter().enumerate() {
        let ok = c.up.reliable_complete() && c.down.reliable_complete();
        all_ok &= ok;
        let unrel = |s: &Stream| {
            format!("{}/{} {:5.1}%", s.unreliable_recv, s.unreliable_sent, pct(s.unreliable_recv, s.unreliable_sent))
        };
        let rel = |s: &Stream| format!("{}/{}", s.reliable_recv, s.reliable_sent);
        println!(
            "{:<8} {:>22} {:>22} {:>15} {:>15} {:>9}",
            i + 1,
            unrel(&c.up),
            unrel(&c.down),
            rel(&c.up),
            rel(&c.down),
            if ok { "yes" } else { "NO" }
        );
    }
    if errors > 0 {
        println!("\n{errors} send/flush calls failed");
    }
    println!("\nreliable messages all delivered in order: {}", if all_ok { "yes" } else { "no" });
    if all_ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
