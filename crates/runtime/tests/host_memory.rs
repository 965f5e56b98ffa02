//! A host holds memory for what it has used, not for its bounds: a process that runs
//! many hosts (a fleet server's matches, a load generator's clients, `bench-transport`'s
//! scale row) pays for each one. A host was about 970 KB as soon as it started, most of
//! it channel slots and free-list entries reserved to their bounds and never used
//! (ENet's host is about 12 KB).
//!
//! Counted with a global counting allocator, so this binary holds this one test.

use std::time::{Duration, Instant};

use tickwire_proto::{CHANNEL_RELIABLE, CHANNEL_UNRELIABLE, EndpointConfig, PeerId};
use tickwire_runtime::{Host, HostConfig, HostEvent};
use tickwire_testkit::counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

/// Clients in the match: enough that per-host figures are averages, not one host's.
const CLIENTS: usize = 16;

/// The most a started host may hold before it has a peer. Measured at 310,916 B: the
/// endpoint's prefilled buffers (93 KB), the runtime's send buffers (75 KB) and the
/// channels' reserves (about 44 KB), each sized so that an engine's stall or a
/// scheduling hitch allocates nothing (`relay_predict_alloc.rs`,
/// `relay_session_alloc.rs`); the batches of `recvmmsg` and `sendmmsg` (38 KB); the
/// rest of the endpoint and the thread's state.
const HOST_STARTED_MAX: u64 = 352 * 1024;

/// The most one connection may add to its two ends. Measured at 163,173 B: the sent
/// records and their unit ring (48 KB an end), the peer's event queue, the reliable
/// receive window.
const CONNECTION_PAIR_MAX: u64 = 224 * 1024;

fn host(max_incoming: u32) -> Host {
    let mut cfg = HostConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.endpoint = EndpointConfig { max_incoming, max_incoming_per_ip: 0, ..EndpointConfig::default() };
    Host::start(cfg).unwrap()
}

/// Takes every event waiting; returns the peers that connected.
fn drain(h: &mut Host) -> Vec<PeerId> {
    let mut connected = Vec::new();
    while let Some(e) = h.poll_event() {
        match e {
            HostEvent::Message { data, .. } => h.recycle(data),
            HostEvent::Connected { peer, .. } => connected.push(peer),
            other => panic!("unexpected {other:?}"),
        }
    }
    connected
}

/// A server tick's traffic: each client sends an input, the server answers each.
fn traffic(server: &mut Host, peers: &[PeerId], clients: &mut [Host], to_server: &[PeerId], rounds: u32) {
    for round in 0..rounds {
        for (c, p) in clients.iter_mut().zip(to_server) {
            c.send(*p, CHANNEL_UNRELIABLE, &[7u8; 32]).unwrap();
            if round % 10 == 0 {
                c.send(*p, CHANNEL_RELIABLE, &[8u8; 64]).unwrap();
            }
            c.flush().unwrap();
        }
        for p in peers {
            server.send(*p, CHANNEL_UNRELIABLE, &[9u8; 256]).unwrap();
        }
        server.flush().unwrap();
        std::thread::sleep(Duration::from_millis(2));
        drain(server);
        for c in clients.iter_mut() {
            drain(c);
        }
    }
}

#[test]
fn a_host_holds_memory_for_what_it_uses_not_for_its_bounds() {
    let at_start = counting_alloc::live_bytes();
    let mut server = host(CLIENTS as u32);
    let with_server = counting_alloc::live_bytes();
    let mut clients: Vec<Host> = (0..CLIENTS).map(|_| host(0)).collect();
    let with_clients = counting_alloc::live_bytes();
    let per_host = (with_clients - with_server) / CLIENTS as u64;
    eprintln!("a started host: server {} B, client {per_host} B each", with_server - at_start);
    assert!(per_host <= HOST_STARTED_MAX, "a started client host holds {per_host} B");
    assert!(with_server - at_start <= HOST_STARTED_MAX, "a started server host holds {} B", with_server - at_start);

    let addr = server.local_addr();
    let to_server: Vec<PeerId> = clients.iter_mut().map(|c| c.connect(addr).unwrap()).collect();
    let mut peers = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while peers.len() < CLIENTS {
        assert!(Instant::now() < deadline, "only {} of {CLIENTS} clients connected", peers.len());
        peers.extend(drain(&mut server));
        for c in clients.iter_mut() {
            drain(c);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let connected = counting_alloc::live_bytes();
    let per_pair = (connected - with_clients) / CLIENTS as u64;
    eprintln!("a connection: {per_pair} B for its two ends");
    assert!(per_pair <= CONNECTION_PAIR_MAX, "a connection holds {per_pair} B at its two ends");

    // Warm up (the pools and queues grow to the traffic's peak), then the same traffic
    // again holds nothing more per tick. A busy machine's scheduling makes a new peak
    // now and then (a few buffers more: up to 308 B a client read under two spinning
    // processes); anything held per tick, even the smallest allocation of 16 B, would
    // be 3,200 B a client over these 200 ticks.
    traffic(&mut server, &peers, &mut clients, &to_server, 100);
    let warm = counting_alloc::live_bytes();
    traffic(&mut server, &peers, &mut clients, &to_server, 200);
    let after = counting_alloc::live_bytes();
    let grew = after.saturating_sub(warm) as f64 / CLIENTS as f64;
    eprintln!("warm-up: {:.0} B a client; 200 more ticks: {grew:.0} B a client", (warm - connected) as f64 / 16.0);
    assert!(grew <= 2048.0, "memory grew by {grew} B a client in steady traffic");

    // What the hosts held goes with them.
    drop(clients);
    drop(server);
    let end = counting_alloc::live_bytes();
    eprintln!("after dropping every host: {} B more than at the start", end as i64 - at_start as i64);
    assert!(end <= at_start + 64 * 1024, "{} B outlived the hosts", end - at_start);
}
