//! `tickwire bench loopback`: what the runtime costs on 127.0.0.1, measured from the
//! outside. Not a test: it prints numbers, it asserts nothing.
//!
//! (a0) The observer's own cost: the same probe sent with a plain socket.
//! (a) Push-to-wire latency: the engine calls send + flush; a forwarding proxy between
//!     client and server timestamps the datagram when it arrives. Both timestamps come
//!     from the same monotonic clock (`Instant`). This includes the wake of the network
//!     thread, the endpoint's packing, the send syscall, the kernel's loopback delivery
//!     and the proxy's own wake-up, so it is an upper bound on the runtime's share.
//! (b) Engine-to-engine RTT of a 32-byte unreliable message: the client engine sends,
//!     the server engine (its own thread) echoes, the client engine receives. Both
//!     engines busy-poll (yielding the CPU between polls: there are only 2 cores for 2
//!     engines and 2 network threads).
//! (c) UDP payload bytes on the wire per 32-byte unreliable message at 60 Hz, from the
//!     endpoints' byte counters (acks and keepalives amortised in), encrypted (the
//!     default) and insecure plaintext.
//! (d) What each packet protection (AEAD, carrier, plaintext) costs per packet on the
//!     endpoint itself (`bench_crypto.rs`; alone: `tickwire bench crypto`).

use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use tickwire_proto::{CHANNEL_UNRELIABLE, EndpointConfig, PeerId, Security};
use tickwire_runtime::{Host, HostConfig, HostEvent};

const MAGIC: &[u8; 8] = b"TWBENCH!";
const MESSAGE_SIZE: usize = 32;
const WARMUP: usize = 50;
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(1);
/// Messages sent in (c): 4 s at 60 Hz.
const RATE_MESSAGES: u32 = 240;

/// What the benchmarks print as the build they ran in.
pub(crate) const BUILD: &str =
    if cfg!(debug_assertions) { "debug (numbers are pessimistic: use --release)" } else { "release" };

/// The median of `v` (not empty): the upper one of an even count.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the three measurements and prints them.
pub fn run(messages: usize, argv: &[String]) -> ExitCode {
    println!("$ tickwire {}", argv.join(" "));
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    println!("build: {BUILD}; {cores} cores; 127.0.0.1; {messages} samples after {WARMUP} warm-up\n");
    let result = (|| -> Result<(), String> {
        let (a0, a) = push_to_wire(messages)?;
        let b = engine_rtt(messages, Security::default())?;
        let b_plain = engine_rtt(messages, Security::InsecurePlaintext)?;
        let c = bytes_per_message(Security::default())?;
        let plain = bytes_per_message(Security::InsecurePlaintext)?;
        println!("{:<60} {:>10} {:>10} {:>9} {:>6}", "measurement", "p50", "p99", "samples", "lost");
        print_row("(a0) baseline: plain send_to -> datagram at proxy", &a0);
        print_row("(a) push-to-wire: send+flush -> datagram at proxy (plain)", &a);
        print_row("(b) engine-to-engine RTT, 32 B unreliable, encrypted", &b);
        print_row("(b) the same, insecure plaintext", &b_plain);
        println!("\n(c) wire bytes per 32 B unreliable message at 60 Hz ({RATE_MESSAGES} messages):");
        for (mode, c) in [("encrypted", &c), ("insecure plaintext", &plain)] {
            println!(
                "    {mode:<18} client -> server: {:.1} B of UDP payload and {:.2} datagrams per message; \
                 server -> client: {:.1} B (acks and keepalives only)",
                c.up_bytes, c.up_datagrams, c.down_bytes
            );
        }
        super::bench_crypto::print_cost()?;
        Ok(())
    })();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Samples {
    micros: Vec<f64>,
    lost: usize,
}

fn print_row(name: &str, s: &Samples) {
    let mut v = s.micros.clone();
    v.sort_by(f64::total_cmp);
    let q = |p: f64| v.get(((v.len() as f64 * p) as usize).min(v.len().saturating_sub(1))).copied().unwrap_or(f64::NAN);
    println!("{:<60} {:>7.1} µs {:>7.1} µs {:>9} {:>6}", name, q(0.50), q(0.99), v.len(), s.lost);
}

fn start_with(max_incoming: u32, security: Security) -> Result<Host, String> {
    let mut cfg = HostConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.endpoint = EndpointConfig { max_incoming, security, ..EndpointConfig::default() };
    Host::start(cfg).map_err(|e| e.to_string())
}

/// Connects `client` to `addr` and waits (polling `server` too) until the client has
/// its `Connected`.
fn connect(client: &mut Host, server: &mut Host, addr: SocketAddr) -> Result<PeerId, String> {
    let peer = client.connect(addr).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        while server.poll_event().is_some() {}
        if let Some(HostEvent::Connected { .. }) = client.poll_event() {
            return Ok(peer);
        }
        if Instant::now() > deadline {
            return Err("client did not connect within 5 s".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn probe(seq: u32) -> [u8; MESSAGE_SIZE] {
    let mut m = [0u8; MESSAGE_SIZE];
    m[..8].copy_from_slice(MAGIC);
    m[8..12].copy_from_slice(&seq.to_le_bytes());
    m
}

fn probe_seq(d: &[u8]) -> Option<u32> {
    let at = d.windows(MAGIC.len()).position(|w| w == MAGIC)?;
    d.get(at + 8..at + 12).map(|b| u32::from_le_bytes(b.try_into().unwrap()))
}

/// A UDP forwarder that reports when each probe passes it client -> server.
struct Proxy {
    addr: SocketAddr,
    seen: Receiver<(u32, Instant)>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Proxy {
    fn start(server: SocketAddr) -> std::io::Result<Proxy> {
        let front = UdpSocket::bind("127.0.0.1:0")?;
        let back = UdpSocket::bind("127.0.0.1:0")?;
        // Short timeouts only so the threads notice `stop`; data wakes them at once.
        front.set_read_timeout(Some(Duration::from_millis(50)))?;
        back.set_read_timeout(Some(Duration::from_millis(50)))?;
        let addr = front.local_addr()?;
        let client: Arc<OnceLock<SocketAddr>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, seen) = crossbeam_channel::unbounded();
        let (front2, back2, client2) = (front.try_clone()?, back.try_clone()?, client.clone());
        let (stop_up, stop_down) = (stop.clone(), stop.clone());
        let up = std::thread::spawn(move || forward_up(front, back, server, client, stop_up, tx));
        let down = std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while !stop_down.load(Ordering::Relaxed) {
                if let (Ok((n, _)), Some(c)) = (back2.recv_from(&mut buf), client2.get()) {
                    let _ = front2.send_to(&buf[..n], c);
                }
            }
        });
        Ok(Proxy { addr, seen, stop, threads: vec![up, down] })
    }
}

fn forward_up(
    front: UdpSocket,
    back: UdpSocket,
    server: SocketAddr,
    client: Arc<OnceLock<SocketAddr>>,
    stop: Arc<AtomicBool>,
    seen: Sender<(u32, Instant)>,
) {
    let mut buf = [0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        let Ok((n, from)) = front.recv_from(&mut buf) else { continue };
        let at = Instant::now();
        let _ = client.set(from);
        if let Some(seq) = probe_seq(&buf[..n]) {
            let _ = seen.send((seq, at));
        }
        let _ = back.send_to(&buf[..n], server);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Waits for the proxy to report probe `seq`; the arrival time, or `None` on timeout.
fn observed(proxy: &Proxy, seq: u32, t0: Instant) -> Option<Instant> {
    let deadline = t0 + SAMPLE_TIMEOUT;
    loop {
        match proxy.seen.recv_deadline(deadline) {
            Ok((s, at)) if s == seq => return Some(at),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
}

fn record(s: &mut Samples, i: u32, t0: Instant, at: Option<Instant>) {
    match at {
        Some(at) if i as usize >= WARMUP => s.micros.push(at.duration_since(t0).as_secs_f64() * 1e6),
        Some(_) => {}
        None => s.lost += 1,
    }
}

/// (a0) the observer's own cost: the same probes sent with a plain socket from the
/// engine thread; (a) through the host.
/// Insecure plaintext on both ends: the proxy finds each probe by reading it. What
/// encryption adds is measured apart, in (d).
fn push_to_wire(messages: usize) -> Result<(Samples, Samples), String> {
    let mut server = start_with(1, Security::InsecurePlaintext)?;
    let proxy = Proxy::start(server.local_addr()).map_err(|e| format!("proxy: {e}"))?;
    let plain = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let mut base = Samples { micros: Vec::with_capacity(messages), lost: 0 };
    let mut client = start_with(0, Security::InsecurePlaintext)?;
    // The host connects first: the proxy sends replies to the first address it saw.
    let peer = connect(&mut client, &mut server, proxy.addr)?;
    // Baseline probes are numbered from 2^31 so they never match the host's.
    const BASE: u32 = 1 << 31;
    for i in 0..(WARMUP + messages) as u32 {
        let t0 = Instant::now();
        plain.send_to(&probe(BASE + i), proxy.addr).map_err(|e| e.to_string())?;
        record(&mut base, i, t0, observed(&proxy, BASE + i, t0));
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut s = Samples { micros: Vec::with_capacity(messages), lost: 0 };
    for i in 0..(WARMUP + messages) as u32 {
        let t0 = Instant::now();
        client.send(peer, CHANNEL_UNRELIABLE, &probe(i)).map_err(|e| e.to_string())?;
        client.flush().map_err(|e| e.to_string())?;
        record(&mut s, i, t0, observed(&proxy, i, t0));
        while let Some(ev) = server.poll_event() {
            if let HostEvent::Message { data, .. } = ev {
                server.recycle(data);
            }
        }
        // Let the network thread fall asleep again: the wake path is what is measured.
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok((base, s))
}

fn engine_rtt(messages: usize, security: Security) -> Result<Samples, String> {
    let mut server = start_with(1, security.clone())?;
    let mut client = start_with(0, security)?;
    let addr = server.local_addr();
    let peer = connect(&mut client, &mut server, addr)?;
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let echo = std::thread::spawn(move || {
        while !stop2.load(Ordering::Relaxed) {
            let mut echoed = false;
            while let Some(ev) = server.poll_event() {
                if let HostEvent::Message { peer, channel, data, .. } = ev {
                    let _ = server.send(peer, channel, &data);
                    server.recycle(data);
                    echoed = true;
                }
            }
            if echoed {
                let _ = server.flush();
            }
            std::thread::yield_now();
        }
    });
    let mut s = Samples { micros: Vec::with_capacity(messages), lost: 0 };
    for i in 0..(WARMUP + messages) as u32 {
        let t0 = Instant::now();
        client.send(peer, CHANNEL_UNRELIABLE, &probe(i)).map_err(|e| e.to_string())?;
        client.flush().map_err(|e| e.to_string())?;
        let rtt = 'wait: loop {
            while let Some(ev) = client.poll_event() {
                if let HostEvent::Message { data, .. } = ev {
                    let seq = probe_seq(&data);
                    client.recycle(data);
                    if seq == Some(i) {
                        break 'wait Some(t0.elapsed());
                    }
                }
            }
            if t0.elapsed() > SAMPLE_TIMEOUT {
                break None;
            }
            std::thread::yield_now();
        };
        match rtt {
            Some(d) if i as usize >= WARMUP => s.micros.push(d.as_secs_f64() * 1e6),
            Some(_) => {}
            None => s.lost += 1,
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = echo.join();
    Ok(s)
}

struct WireBytes {
    up_bytes: f64,
    up_datagrams: f64,
    down_bytes: f64,
}

fn bytes_per_message(security: Security) -> Result<WireBytes, String> {
    let mut server = start_with(1, security.clone())?;
    let mut client = start_with(0, security)?;
    let addr = server.local_addr();
    let peer = connect(&mut client, &mut server, addr)?;
    let settle = |c: &mut Host, s: &mut Host| {
        // Statistics are published every ~20 ms; wait for a fresh snapshot.
        std::thread::sleep(Duration::from_millis(60));
        (c.endpoint_stats(), s.endpoint_stats())
    };
    let (c0, s0) = settle(&mut client, &mut server);
    let tick = Duration::from_micros(16_667);
    let start = Instant::now();
    for i in 0..RATE_MESSAGES {
        client.send(peer, CHANNEL_UNRELIABLE, &probe(i)).map_err(|e| e.to_string())?;
        client.flush().map_err(|e| e.to_string())?;
        while let Some(ev) = server.poll_event() {
            if let HostEvent::Message { data, .. } = ev {
                server.recycle(data);
            }
        }
        while client.poll_event().is_some() {}
        if let Some(wait) = (start + tick * (i + 1)).checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let (c1, s1) = settle(&mut client, &mut server);
    let n = RATE_MESSAGES as f64;
    Ok(WireBytes {
        up_bytes: (c1.bytes_sent - c0.bytes_sent) as f64 / n,
        up_datagrams: (c1.datagrams_sent - c0.datagrams_sent) as f64 / n,
        down_bytes: (s1.bytes_sent - s0.bytes_sent) as f64 / n,
    })
}
