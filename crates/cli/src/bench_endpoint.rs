//! `tickwire bench endpoint`: a server endpoint's own cost per client a tick, in memory
//! (the sans-IO state machine, no socket, no thread, no kernel). N client endpoints each
//! send a 32-byte unreliable input a tick; the server takes the datagrams, delivers the
//! messages, sends each client one 256-byte unreliable message and flushes: the shape of
//! the transport benchmark's row 5b, without the system calls.
//!
//! A 60 Hz server's state is cold at every tick, so each tick is timed three ways, in
//! alternating rounds:
//! - slept: after a sleep of one 60 Hz tick, as a real server's loop sleeps to its next
//!   tick. On the virtual machines we measured this is far colder than any sweep: after
//!   16 ms asleep a load from a page not touched since costs about 240-350 ns (its
//!   translation is gone too), against 85-130 ns after a sweep
//!   (`bench/probe/cold_pages.c`);
//! - swept: after a sweep of 32 MiB of other memory (the caches below the last level
//!   lose the server's state, the last level keeps it);
//! - warm: neither.
//!
//! The figure is the median tick's time over the clients; only the server's work is
//! timed. The gaps between the three are what the misses cost.
//!
//! The endpoints are configured as a host's are: AWS-LC's AEADs and the CPU's prefetch
//! hints (`EndpointConfig::prefetch`). With `TICKWIRE_BENCH_NO_PREFETCH` set in the
//! environment they run without the hints, to measure what those give.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Instant;

use super::bench::{BUILD, median};

use tickwire_proto::wire::MAX_DATAGRAM_SIZE;
use tickwire_proto::{CHANNEL_UNRELIABLE, Endpoint, EndpointConfig, NetEvent, PeerId, Security};

/// The memory swept between ticks, well beyond the caches below the last level.
const SWEEP_BYTES: usize = 32 << 20;
/// One tick at 60 Hz, in µs: what the clock moves on by, and what a slept tick sleeps.
const TICK_US: u64 = 16_667;
/// Ticks of each round before timing starts (connections settle, pools fill).
const WARMUP_TICKS: usize = 20;

/// What comes before each timed tick (`--only` names one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Before {
    /// A sleep of one tick.
    Slept,
    /// A sweep of other memory.
    Swept,
    /// Nothing.
    Warm,
}

struct Bench {
    server: Endpoint,
    clients: Vec<(Endpoint, SocketAddr, PeerId)>,
    index: HashMap<SocketAddr, usize>,
    peers: Vec<PeerId>,
    server_addr: SocketAddr,
    now: u64,
    sweep: Vec<u8>,
    delivered: u64,
}

fn setup(n: usize, encrypted: bool) -> Result<Bench, String> {
    let security = if encrypted { Security::default() } else { Security::InsecurePlaintext };
    let cfg = |max_incoming, seed| EndpointConfig {
        max_incoming,
        max_incoming_per_ip: 0,
        seed,
        security: security.clone(),
        // As a host's endpoint seals: AWS-LC's AEADs.
        aead: Some(tickwire_runtime::aws_lc_aead()),
        prefetch: std::env::var_os("TICKWIRE_BENCH_NO_PREFETCH").is_none().then(tickwire_runtime::cpu_prefetch),
        ..EndpointConfig::default()
    };
    let server_addr: SocketAddr = "10.0.0.1:7000".parse().expect("an address");
    let server = Endpoint::new(cfg(n as u32, 1), 0).map_err(|e| e.to_string())?;
    let mut clients = Vec::with_capacity(n);
    let mut index = HashMap::with_capacity(n);
    for i in 0..n {
        let mut ep = Endpoint::new(cfg(0, 100 + i as u64), 0).map_err(|e| e.to_string())?;
        let peer = ep.connect(0, server_addr).map_err(|e| e.to_string())?;
        let addr = SocketAddr::from(([10, 1, (i / 250) as u8, (i % 250) as u8 + 1], 1000 + (i % 50_000) as u16));
        index.insert(addr, i);
        clients.push((ep, addr, peer));
    }
    let mut b = Bench {
        server,
        clients,
        index,
        peers: Vec::new(),
        server_addr,
        now: 1,
        sweep: vec![0; SWEEP_BYTES],
        delivered: 0,
    };
    let mut buf = vec![0u8; MAX_DATAGRAM_SIZE];
    for _ in 0..10 {
        b.now += 1_000;
        for (ep, addr, _) in b.clients.iter_mut() {
            ep.update(b.now);
            while let Some((_, len)) = ep.poll_transmit(&mut buf) {
                b.server.handle_datagram(b.now, *addr, &buf[..len]);
            }
        }
        b.server.update(b.now);
        b.deliver_sent(&mut buf);
        while let Some(e) = b.server.poll_event() {
            if let NetEvent::Connected { peer, .. } = e {
                b.peers.push(peer);
            }
        }
    }
    if b.peers.len() != n {
        return Err(format!("{} of {n} in-memory clients connected", b.peers.len()));
    }
    Ok(b)
}

impl Bench {
    /// Delivers what the server sent to the clients (untimed), as the network would.
    fn deliver_sent(&mut self, buf: &mut [u8]) {
        while let Some((to, len)) = self.server.poll_transmit(buf) {
            self.deliver(to, &buf[..len]);
        }
    }

    fn deliver(&mut self, to: SocketAddr, datagram: &[u8]) {
        if let Some(&i) = self.index.get(&to) {
            let (ep, _, _) = &mut self.clients[i];
            ep.handle_datagram(self.now, self.server_addr, datagram);
            while let Some(e) = ep.poll_event() {
                if let NetEvent::Message { data, .. } = e {
                    ep.recycle(data);
                }
            }
        }
    }

    /// The server's part of a tick, the part timed: takes the datagrams up, delivers the
    /// inputs, sends each client its message, flushes and copies the datagrams out. Not
    /// inlined, so that a profiler can single it out (`valgrind --tool=callgrind
    /// --toggle-collect='*Bench::serve*'`: docs/benchmarks.md).
    #[inline(never)]
    fn serve(&mut self, wire: &mut Wire) {
        const DOWN: [u8; 256] = [9; 256];
        for i in 0..wire.up.len() {
            if i + 1 < wire.up.len() {
                // As the network thread does: the next sender's key loads meanwhile.
                self.server.prefetch_for(wire.up.get(i + 1).0);
            }
            let (from, d) = wire.up.get(i);
            self.server.handle_datagram(self.now, from, d);
        }
        while let Some(e) = self.server.poll_event() {
            if let NetEvent::Message { data, .. } = e {
                self.delivered += 1;
                self.server.recycle(data);
            }
        }
        for &p in &self.peers {
            self.server.send(p, CHANNEL_UNRELIABLE, &DOWN).expect("a connected peer takes a message");
        }
        self.server.flush(self.now);
        if self.server.next_timeout().is_some_and(|t| t <= self.now) {
            self.server.update(self.now);
        }
        // The datagrams leave as a socket takes them: copied out.
        while let Some((to, len)) = self.server.poll_transmit(&mut wire.buf) {
            wire.down.push(to, &wire.buf[..len]);
        }
    }

    /// One tick; returns the server's nanoseconds. `wire` carries the datagrams both
    /// ways (reused, so that the harness allocates nothing in the timed part).
    fn tick(&mut self, before: Before, wire: &mut Wire) -> u128 {
        const INPUT: [u8; 32] = [7; 32];
        self.now += TICK_US;
        wire.up.clear();
        for (ep, addr, peer) in self.clients.iter_mut() {
            ep.send(*peer, CHANNEL_UNRELIABLE, &INPUT).expect("a connected client sends");
            ep.flush(self.now);
            while let Some((_, len)) = ep.poll_transmit(&mut wire.buf) {
                wire.up.push(*addr, &wire.buf[..len]);
            }
        }
        match before {
            Before::Slept => std::thread::sleep(std::time::Duration::from_micros(TICK_US)),
            Before::Swept => {
                for (i, b) in self.sweep.iter_mut().enumerate().step_by(64) {
                    *b = b.wrapping_add(i as u8);
                }
            }
            Before::Warm => {}
        }
        wire.down.clear();
        let t0 = Instant::now();
        self.serve(wire);
        let spent = t0.elapsed().as_nanos();
        for i in 0..wire.down.len() {
            let (to, d) = wire.down.get(i);
            self.deliver(to, d);
        }
        spent
    }
}

/// Datagrams in one buffer, each with its address.
#[derive(Default)]
struct Datagrams {
    bytes: Vec<u8>,
    spans: Vec<(SocketAddr, usize, usize)>,
}

impl Datagrams {
    fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }
    fn push(&mut self, addr: SocketAddr, d: &[u8]) {
        self.spans.push((addr, self.bytes.len(), d.len()));
        self.bytes.extend_from_slice(d);
    }
    fn len(&self) -> usize {
        self.spans.len()
    }
    fn get(&self, i: usize) -> (SocketAddr, &[u8]) {
        let (addr, at, len) = self.spans[i];
        (addr, &self.bytes[at..at + len])
    }
}

struct Wire {
    buf: Vec<u8>,
    up: Datagrams,
    down: Datagrams,
}

/// The median tick's nanoseconds per client over `ticks` timed ticks.
fn round(n: usize, encrypted: bool, before: Before, ticks: usize) -> Result<f64, String> {
    let mut b = setup(n, encrypted)?;
    let mut wire = Wire { buf: vec![0; MAX_DATAGRAM_SIZE], up: Datagrams::default(), down: Datagrams::default() };
    let mut times = Vec::with_capacity(ticks);
    for t in 0..WARMUP_TICKS + ticks {
        let spent = b.tick(before, &mut wire);
        if t >= WARMUP_TICKS {
            times.push(spent as f64);
        }
    }
    let expected = ((WARMUP_TICKS + ticks) * n) as u64;
    if b.delivered != expected {
        return Err(format!("the server delivered {} of {expected} inputs", b.delivered));
    }
    Ok(median(times) / n as f64)
}

/// Prints the table: for each size and protection, the server endpoint's nanoseconds
/// per client a tick, slept, swept and warm; medians over `rounds` rounds, each round
/// running the three in a different order.
pub fn print_cost(sizes: &[usize], ticks: usize, rounds: usize, only: Option<Before>) -> Result<(), String> {
    println!(
        "\nserver endpoint cost per client a tick (ns), in memory: a 32-B input up and a 256-B message down per \
         client a tick; median tick of {ticks}, median of {rounds} rounds; slept = each tick after a sleep of {} \
         µs, swept = after a sweep of {} MiB of other memory",
        TICK_US,
        SWEEP_BYTES >> 20
    );
    println!("| clients | protection | slept | swept | warm | slept / warm |");
    println!("|---:|---|---:|---:|---:|---:|");
    const ORDERS: [[Before; 3]; 3] = [
        [Before::Slept, Before::Swept, Before::Warm],
        [Before::Swept, Before::Warm, Before::Slept],
        [Before::Warm, Before::Slept, Before::Swept],
    ];
    for &n in sizes {
        for encrypted in [false, true] {
            let mut figures: [Vec<f64>; 3] = Default::default();
            for r in 0..rounds {
                // Rotate the order, so that none always runs first.
                for before in ORDERS[r % ORDERS.len()] {
                    if only.is_none_or(|o| o == before) {
                        figures[before as usize].push(round(n, encrypted, before, ticks)?);
                    }
                }
            }
            let [slept, swept, warm] = figures.map(|f| (!f.is_empty()).then(|| median(f)));
            let cell = |f: Option<f64>| f.map_or("-".to_string(), |f| format!("{f:.0}"));
            let ratio = slept.zip(warm).map_or("-".to_string(), |(s, w)| format!("{:.2}", s / w));
            println!(
                "| {n} | {} | {} | {} | {} | {ratio} |",
                if encrypted { "encrypted" } else { "plaintext" },
                cell(slept),
                cell(swept),
                cell(warm)
            );
        }
    }
    Ok(())
}

pub fn run(
    sizes: &[usize],
    ticks: usize,
    rounds: usize,
    only: Option<Before>,
    argv: &[String],
) -> std::process::ExitCode {
    println!("$ tickwire {}", argv.join(" "));
    println!("build: {BUILD}");
    match print_cost(sizes, ticks, rounds, only) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
