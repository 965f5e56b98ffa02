//! Issue 13, 1, over real loopback sockets: an attacker with valid credentials (a real
//! endpoint: the encrypted handshake, sealed packets) floods the server with full
//! datagrams of empty frames, reconnecting whenever it is dropped, while honest peers
//! play at 60 Hz. Memory is counted with the testkit's
//! counting allocator (peak live heap bytes); the figures are printed.
//!
//! The tests in this binary take turns (one lock): the heap is counted process-wide.
//! Hence a binary of its own, not a module of `tests/runtime/`.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tickwire_proto::wire::MAX_DATAGRAM_SIZE;
use tickwire_proto::{
    AdvanceStatus, CHANNEL_UNRELIABLE, ClientSessionEvent, DisconnectReason, Endpoint, EndpointConfig, GameShape,
    MAX_UNRELIABLE, NetEvent, PeerId, ServerSessionEvent,
};
use tickwire_runtime::{
    EngineLoop, Host, HostConfig, HostEvent, Networked, RelayClient, RelayClientSettings, RelayServer,
    RelayServerSettings, RequestKind, SessionEvent,
};
use tickwire_testkit::counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How long the attack lasts.
const ATTACK: Duration = Duration::from_secs(4);
/// Flood datagrams the attacker sends per millisecond (about 5,000 a second, 6 MB/s).
const DATAGRAMS_PER_MS: usize = 5;
/// The test stops the attack and fails past this much heap growth: the flood is being
/// queued without bound, and the machine must not run out of memory finding out.
const MEMORY_GUARD: u64 = 512 << 20;
const FRAME: Duration = Duration::from_micros(16_667);

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// What the attacker saw.
#[derive(Debug, Default)]
struct AttackReport {
    connections: u32,
    datagrams: u64,
    /// Reasons of the Disconnect packets the server sent it.
    reasons: Vec<DisconnectReason>,
}

/// A peer that speaks the protocol correctly, handshake and encryption included (a
/// player with valid credentials), then floods: a real endpoint on its own socket,
/// whose packets carry the attack's raw frames, sealed with the connection's key.
struct Attacker {
    sock: UdpSocket,
    server: SocketAddr,
    ep: Endpoint,
    peer: Option<PeerId>,
    started: Instant,
    buf: Vec<u8>,
    report: AttackReport,
}

impl Attacker {
    fn new(server: SocketAddr) -> Attacker {
        let sock = UdpSocket::bind(local()).unwrap();
        sock.set_nonblocking(true).unwrap();
        let ep = Endpoint::new(EndpointConfig { seed: 0xBAD, ..EndpointConfig::default() }, 0).unwrap();
        Attacker {
            sock,
            server,
            ep,
            peer: None,
            started: Instant::now(),
            buf: vec![0; MAX_DATAGRAM_SIZE],
            report: AttackReport::default(),
        }
    }

    fn now(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    /// Moves datagrams between the socket and the endpoint, runs its timers, and
    /// notes how its connection ended (the reason the server sent).
    fn pump(&mut self) {
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = self.sock.recv_from(&mut buf) {
            let now = self.now();
            self.ep.handle_datagram(now, from, &buf[..n]);
        }
        let now = self.now();
        self.ep.update(now);
        while let Some((to, n)) = self.ep.poll_transmit(&mut self.buf) {
            if self.sock.send_to(&self.buf[..n], to).is_ok() {
                self.report.datagrams += 1;
            }
        }
        while let Some(e) = self.ep.poll_event() {
            match e {
                NetEvent::Connected { .. } => self.report.connections += 1,
                NetEvent::Disconnected { reason, .. } => {
                    self.report.reasons.push(reason);
                    self.peer = None;
                }
                NetEvent::Message { data, .. } => self.ep.recycle(data),
            }
        }
    }

    /// Connects (the real handshake) and waits for it, as long as the endpoint's own
    /// connect timeout (a new attempt from the same socket would replace a connection
    /// the server made meanwhile, which the tests would see as a drop).
    fn connect(&mut self) -> bool {
        let now = self.now();
        let Ok(peer) = self.ep.connect(now, self.server) else { return false };
        let deadline = Instant::now() + Duration::from_secs(6);
        while Instant::now() < deadline {
            self.pump();
            if self.ep.is_connected(peer) {
                self.peer = Some(peer);
                return true;
            }
            if !self.ep.peers().any(|p| p == peer) {
                return false; // refused or dropped
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        self.ep.disconnect(self.now(), peer);
        false
    }

    /// Sends `per_ms` datagrams a millisecond until `stop`, reconnecting (a new
    /// connection) whenever it is dropped. `Flood`: empty frames filling each datagram
    /// (the attack). `Bulk`: one unreliable message of the largest size each, as
    /// much as the budget allows and no more.
    fn run(mut self, kind: Kind, per_ms: usize, stop: Arc<AtomicBool>) -> AttackReport {
        let frames: Vec<u8> = match kind {
            // An empty unreliable frame is 2 bytes; the endpoint cuts the list to what
            // one datagram holds.
            Kind::Flood => [0x00, 0x00].repeat(MAX_DATAGRAM_SIZE / 2),
            Kind::Bulk => {
                // Unreliable frame, channel 0, the largest length (LEB128), payload.
                let len = MAX_UNRELIABLE as u16;
                let mut f = vec![0x00, (len & 0x7F) as u8 | 0x80, (len >> 7) as u8];
                f.resize(f.len() + MAX_UNRELIABLE, 0xB0);
                f
            }
        };
        while !stop.load(Ordering::Relaxed) {
            self.pump();
            let Some(peer) = self.peer else {
                if !self.connect() {
                    std::thread::sleep(Duration::from_millis(10));
                }
                continue;
            };
            let now = self.now();
            for _ in 0..per_ms {
                self.ep.send_raw_frames(now, peer, &frames);
            }
            self.pump();
            std::thread::sleep(Duration::from_millis(1));
        }
        self.report
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Flood,
    Bulk,
}

fn start_attack(server: SocketAddr) -> (Arc<AtomicBool>, JoinHandle<AttackReport>) {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let attacker = Attacker::new(server);
    (stop, std::thread::spawn(move || attacker.run(Kind::Flood, DATAGRAMS_PER_MS, s)))
}

/// Heap growth since `baseline`; stops the attack and fails past the guard.
fn check_memory(baseline: u64, stop: &AtomicBool, started: Instant) {
    let grown = counting_alloc::live_bytes().saturating_sub(baseline);
    if grown > MEMORY_GUARD {
        stop.store(true, Ordering::Relaxed);
        panic!("the heap grew by {} MB after {:.1} s of flood", grown >> 20, started.elapsed().as_secs_f64());
    }
}

fn host(max_incoming: u32) -> Host {
    let mut cfg = HostConfig::new(local());
    cfg.endpoint.max_incoming = max_incoming;
    Host::start(cfg).unwrap()
}

/// Host level: a server and three clients sending a 16-byte input every frame (60 Hz),
/// the server's engine draining its events every frame. The attacker is dropped with
/// FLOODING, every time it comes back; every input arrives, promptly.
#[test]
fn a_flooding_peer_is_dropped_and_honest_inputs_keep_flowing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let epoch = Instant::now();
    let mut server = host(8);
    let mut clients: Vec<(Host, PeerId)> = (0..3)
        .map(|_| {
            let mut h = host(0);
            let p = h.connect(server.local_addr()).unwrap();
            (h, p)
        })
        .collect();
    let mut honest: Vec<PeerId> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while honest.len() < clients.len() {
        assert!(Instant::now() < deadline, "honest clients did not connect");
        while let Some(e) = server.poll_event() {
            if let HostEvent::Connected { peer, .. } = e {
                honest.push(peer);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    for (c, _) in &mut clients {
        while c.poll_event().is_some() {}
    }

    let baseline = counting_alloc::live_bytes();
    counting_alloc::reset_peak();
    let (stop, attack) = start_attack(server.local_addr());
    let started = Instant::now();
    let (mut sent, mut got, mut worst_age, mut frames) = (0u64, 0u64, Duration::ZERO, 0u64);
    let mut flooding_drops = Vec::new();
    let mut honest_drops = Vec::new();
    while started.elapsed() < ATTACK {
        let now_us = epoch.elapsed().as_micros() as u64;
        for (i, (c, to_server)) in clients.iter_mut().enumerate() {
            let mut input = [0u8; 16];
            input[0] = i as u8;
            input[8..].copy_from_slice(&now_us.to_le_bytes());
            c.send(*to_server, CHANNEL_UNRELIABLE, &input).unwrap();
            c.flush().unwrap();
            sent += 1;
            while let Some(e) = c.poll_event() {
                match e {
                    HostEvent::Message { data, .. } => c.recycle(data),
                    other => honest_drops.push(format!("client {i}: {other:?}")),
                }
            }
        }
        // The server's engine frame: every event, as a session's pump takes them.
        while let Some(e) = server.poll_event() {
            match e {
                HostEvent::Message { peer, data, .. } => {
                    if honest.contains(&peer) {
                        got += 1;
                        let at = u64::from_le_bytes(data[8..16].try_into().unwrap());
                        let age = Duration::from_micros(epoch.elapsed().as_micros() as u64 - at);
                        worst_age = worst_age.max(age);
                    }
                    server.recycle(data);
                }
                HostEvent::Connected { peer, .. } if !honest.contains(&peer) => {} // the attacker, again
                HostEvent::Disconnected { peer, reason } if !honest.contains(&peer) => flooding_drops.push(reason),
                other => honest_drops.push(format!("server: {other:?}")),
            }
        }
        for &p in &honest {
            let _ = server.send(p, CHANNEL_UNRELIABLE, &[1; 32]);
        }
        server.flush().unwrap();
        frames += 1;
        check_memory(baseline, &stop, started);
        std::thread::sleep(FRAME);
    }
    stop.store(true, Ordering::Relaxed);
    let report = attack.join().unwrap();
    let peak = counting_alloc::peak_bytes().saturating_sub(baseline);
    let secs = started.elapsed().as_secs_f64();
    let st = server.endpoint_stats();
    eprintln!(
        "host under flood, {secs:.1} s: heap peak +{:.1} MB; attacker sent {} datagrams ({:.1} MB) over {} connections, \
         dropped {} times for flooding; honest inputs {:.1}/s per client ({got} of {sent}), oldest {:.1} ms when polled; \
         server: {} datagrams over budget",
        peak as f64 / 1e6,
        report.datagrams,
        report.datagrams as f64 * MAX_DATAGRAM_SIZE as f64 / 1e6,
        report.connections,
        flooding_drops.len(),
        got as f64 / secs / clients.len() as f64,
        worst_age.as_secs_f64() * 1e3,
        st.over_budget,
    );
    assert!(honest_drops.is_empty(), "{honest_drops:?}");
    assert!(!flooding_drops.is_empty(), "the attacker was never dropped");
    assert!(flooding_drops.iter().all(|r| *r == DisconnectReason::Flooding), "{flooding_drops:?}");
    assert!(report.reasons.contains(&DisconnectReason::Flooding), "the attacker was not told: {report:?}");
    assert!(peak < 64 << 20, "heap peak +{} MB", peak >> 20);
    // Loopback loses nothing; allow for the last frame's inputs still in flight.
    assert!(got + 3 * 3 >= sent, "{got} of {sent} inputs arrived ({frames} frames)");
    assert!(worst_age < Duration::from_millis(250), "an input took {worst_age:?}");
}

/// Answers every request of a session the way a trivial game would: every save has the
/// same checksum per tick on every machine, so nobody desyncs.
fn run_requests<S: EngineLoop>(s: &mut S, mut save: impl FnMut(&mut S, u32), mut dump: impl FnMut(&mut S, u32)) {
    while let Some(r) = s.poll_request() {
        match r.kind {
            RequestKind::Save => save(s, r.tick),
            RequestKind::DumpState => dump(s, r.tick),
            RequestKind::Load | RequestKind::Advance | RequestKind::Restore => {}
        }
    }
}

/// Session level: a relay server and three relay clients at 60 Hz while the attacker
/// floods the server. No honest player is kicked (as STARVED, the symptom) or
/// interrupted, and the server and every client keep the full tick rate.
#[test]
fn a_relay_match_keeps_its_tick_rate_under_a_flood() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let game = GameShape::new(3, 4);
    let mut server = RelayServer::new(RelayServerSettings::new(game, HostConfig::new(local()))).unwrap();
    server.start().unwrap();
    let mut clients: Vec<RelayClient> = (0..3)
        .map(|_| {
            let mut c = RelayClient::new(RelayClientSettings::new(game, HostConfig::new(local()))).unwrap();
            c.set_server(server.local_addr()).unwrap();
            c.start().unwrap();
            c
        })
        .collect();
    let mut synced = [false; 3];
    let mut problems = Vec::new();
    let mut frame =
        |server: &mut RelayServer, clients: &mut [RelayClient], synced: &mut [bool; 3]| -> (u32, [u32; 3]) {
            let mut server_ticks = 0;
            for _ in 0..server.ticks_due().unwrap() {
                server.advance().unwrap();
                server_ticks += 1;
                run_requests(
                    server,
                    |s, t| s.confirm_save(t, u64::from(t)).unwrap(),
                    |s, t| s.provide_state(t, &[7; 16]).unwrap(),
                );
            }
            while let Some(e) = server.poll_event() {
                if let SessionEvent::RelayServer { event, .. } = e {
                    match event {
                        ServerSessionEvent::PlayerKicked { .. } | ServerSessionEvent::PlayerInterrupted { .. } => {
                            problems.push(format!("server: {event:?}"))
                        }
                        _ => {}
                    }
                }
            }
            let mut client_ticks = [0; 3];
            for (i, c) in clients.iter_mut().enumerate() {
                for _ in 0..c.ticks_due().unwrap() {
                    c.add_local_input(&[i as u8; 4]).unwrap();
                    if c.advance().unwrap() == AdvanceStatus::Advanced && synced[i] {
                        client_ticks[i] += 1;
                    }
                    run_requests(c, |c, t| c.confirm_save(t, u64::from(t)).unwrap(), |_, _| {});
                }
                while let Some(e) = c.poll_event() {
                    match e {
                        SessionEvent::RelayClient(ClientSessionEvent::Synchronized { .. }) => synced[i] = true,
                        SessionEvent::RelayClient(
                            ev @ (ClientSessionEvent::Interrupted { .. }
                            | ClientSessionEvent::Disconnected { .. }
                            | ClientSessionEvent::Desync { .. }
                            | ClientSessionEvent::Resyncing { .. }),
                        ) => problems.push(format!("client {i}: {ev:?}")),
                        _ => {}
                    }
                }
            }
            (server_ticks, client_ticks)
        };
    let deadline = Instant::now() + Duration::from_secs(15);
    while !synced.iter().all(|&s| s) {
        assert!(Instant::now() < deadline, "the clients did not synchronize: {synced:?}");
        frame(&mut server, &mut clients, &mut synced);
        std::thread::sleep(Duration::from_millis(2));
    }
    for _ in 0..60 {
        frame(&mut server, &mut clients, &mut synced);
        std::thread::sleep(FRAME);
    }

    let baseline = counting_alloc::live_bytes();
    counting_alloc::reset_peak();
    let (stop, attack) = start_attack(server.local_addr());
    let started = Instant::now();
    let (mut server_ticks, mut client_ticks) = (0u32, [0u32; 3]);
    while started.elapsed() < ATTACK {
        let (s, c) = frame(&mut server, &mut clients, &mut synced);
        server_ticks += s;
        for i in 0..3 {
            client_ticks[i] += c[i];
        }
        check_memory(baseline, &stop, started);
        std::thread::sleep(Duration::from_millis(2));
    }
    stop.store(true, Ordering::Relaxed);
    let report = attack.join().unwrap();
    let peak = counting_alloc::peak_bytes().saturating_sub(baseline);
    let secs = started.elapsed().as_secs_f64();
    let stats = server.stats();
    let min_client = *client_ticks.iter().min().unwrap() as f64 / secs;
    eprintln!(
        "relay match under flood, {secs:.1} s: heap peak +{:.1} MB; server {:.1} ticks/s, clients at least {min_client:.1} \
         ticks/s (target {}); attacker sent {} datagrams over {} connections, told {:?}; empty steps {}",
        peak as f64 / 1e6,
        server_ticks as f64 / secs,
        game.tick_rate_hz,
        report.datagrams,
        report.connections,
        report.reasons.iter().take(3).collect::<Vec<_>>(),
        stats.core.empty_steps,
    );
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(stats.core.players, 3);
    assert!(report.reasons.contains(&DisconnectReason::Flooding), "the attacker was not dropped: {report:?}");
    assert!(peak < 64 << 20, "heap peak +{} MB", peak >> 20);
    let full = game.tick_rate_hz * secs;
    assert!(server_ticks as f64 >= 0.97 * full, "server ran {server_ticks} ticks of {full:.0}");
    assert!(min_client >= 0.97 * game.tick_rate_hz, "a client ran {min_client:.1} ticks/s");
}

/// Peers that stay within their budget but send as much as it allows (six of them,
/// each about 3 MB/s of the largest unreliable messages) while the server's engine
/// stalls for 2 s (a load, a hitch), then handles at most 512 events a frame. What
/// waits for the engine stays bounded (per peer in the endpoint, a few hundred
/// kilobytes in the channel to it), and an honest client's inputs sent after the stall
/// are not stuck behind the bulk: they reach the engine within a few frames. Messages
/// that waited keep the time their datagram arrived.
#[test]
fn an_engine_stall_under_bulk_traffic_stays_bounded_and_fair() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let epoch = Instant::now();
    let mut server = host(16);
    let mut client = host(0);
    let to_server = client.connect(server.local_addr()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let honest = loop {
        assert!(Instant::now() < deadline, "the honest client did not connect");
        if let Some(HostEvent::Connected { peer, .. }) = server.poll_event() {
            break peer;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let baseline = counting_alloc::live_bytes();
    counting_alloc::reset_peak();
    let stop = Arc::new(AtomicBool::new(false));
    let bulk: Vec<_> = (0..6)
        .map(|_| {
            let (a, s) = (Attacker::new(server.local_addr()), stop.clone());
            std::thread::spawn(move || a.run(Kind::Bulk, 3, s))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let stall = Duration::from_secs(2);
    let mut late = Vec::new();
    let (mut sent_after, mut got_after, mut bulk_messages, mut transit) = (0u64, 0u64, 0u64, 0u64);
    let mut dropped = Vec::new();
    while started.elapsed() < stall + Duration::from_secs(1) {
        let now_us = epoch.elapsed().as_micros() as u64;
        let resumed = started.elapsed() >= stall;
        let mut input = [0u8; 16];
        input[0] = resumed as u8;
        input[8..].copy_from_slice(&now_us.to_le_bytes());
        client.send(to_server, CHANNEL_UNRELIABLE, &input).unwrap();
        client.flush().unwrap();
        sent_after += resumed as u64;
        while let Some(e) = client.poll_event() {
            if let HostEvent::Message { data, .. } = e {
                client.recycle(data);
            }
        }
        if resumed {
            for _ in 0..512 {
                let Some(e) = server.poll_event() else { break };
                match e {
                    HostEvent::Message { peer, data, received_at, .. } => {
                        if peer == honest {
                            // The arrival stamp is when the datagram came off the socket,
                            // not when the stalled engine got round to it.
                            let at = u64::from_le_bytes(data[8..16].try_into().unwrap());
                            let age = epoch.elapsed().as_micros() as u64 - at;
                            let waited = server.now_us() - received_at;
                            transit = transit.max(age.saturating_sub(waited));
                            if data[0] == 1 {
                                got_after += 1;
                                late.push(age);
                            }
                        } else {
                            bulk_messages += 1;
                        }
                        server.recycle(data);
                    }
                    HostEvent::Disconnected { peer, reason } => dropped.push((peer, reason)),
                    HostEvent::Connected { .. } | HostEvent::Fatal { .. } => {}
                }
            }
        }
        check_memory(baseline, &stop, started);
        std::thread::sleep(FRAME);
    }
    stop.store(true, Ordering::Relaxed);
    let reports: Vec<AttackReport> = bulk.into_iter().map(|t| t.join().unwrap()).collect();
    let peak = counting_alloc::peak_bytes().saturating_sub(baseline);
    late.sort_unstable();
    let worst = late.last().copied().unwrap_or(0);
    let sent: u64 = reports.iter().map(|r| r.datagrams).sum();
    let st = server.endpoint_stats();
    let rt = server.runtime_stats();
    eprintln!(
        "engine stall under bulk traffic: heap peak +{:.1} MB; bulk peers sent {sent} datagrams ({:.1} MB), the engine \
         took {bulk_messages} of them after the stall; honest inputs after the stall {got_after} of {sent_after}, oldest \
         {:.1} ms when polled, at most {:.1} ms from send to arrival stamp; events waiting at the end {}; \
         over budget {}",
        peak as f64 / 1e6,
        sent as f64 * MAX_DATAGRAM_SIZE as f64 / 1e6,
        worst as f64 / 1e3,
        transit as f64 / 1e3,
        rt.event_backlog,
        st.over_budget,
    );
    assert!(dropped.is_empty(), "peers within their budget were dropped: {dropped:?}");
    assert!(reports.iter().all(|r| r.connections == 1), "{reports:?}");
    assert!(peak < 24 << 20, "heap peak +{} MB", peak >> 20);
    assert!(got_after + 5 >= sent_after, "{got_after} of {sent_after} honest inputs after the stall");
    assert!(worst < 150_000, "an honest input sent after the stall waited {worst} us");
    assert!(transit < 50_000, "an input was stamped {transit} us after it was sent");
}
