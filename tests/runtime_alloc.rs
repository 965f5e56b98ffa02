//! The runtime's steady state allocates nothing on any thread: engine sends, flushes,
//! polls and recycles; the network threads receive, transmit, publish statistics. Counted
//! with a global counting allocator (one test in this binary, so nothing else runs).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tickwire::core::transport::{EndpointConfig, PeerId, CHANNEL_RELIABLE, CHANNEL_SEQUENCED, CHANNEL_UNRELIABLE};
use tickwire::runtime::{Host, HostConfig, HostEvent};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn host(max_incoming: u32) -> Host {
    let mut cfg = HostConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.endpoint = EndpointConfig { max_incoming, ..EndpointConfig::default() };
    Host::start(cfg).unwrap()
}

/// Polls everything pending, recycling message buffers; returns (messages, peers seen
/// connecting).
fn drain(h: &mut Host, connected: &mut Option<PeerId>) -> u64 {
    let mut n = 0;
    while let Some(e) = h.poll_event() {
        match e {
            HostEvent::Message { data, .. } => {
                n += 1;
                h.recycle(data);
            }
            HostEvent::Connected { peer, .. } => *connected = Some(peer),
            other => panic!("unexpected {other:?}"),
        }
    }
    n
}

#[test]
fn steady_state_traffic_allocates_nothing() {
    let mut server = host(4);
    let mut client = host(0);
    let to_server = client.connect(server.local_addr()).unwrap();
    let (mut to_client, mut ignored) = (None, None);
    let deadline = Instant::now() + Duration::from_secs(10);
    while to_client.is_none() {
        assert!(Instant::now() < deadline, "no connection");
        drain(&mut server, &mut to_client);
        drain(&mut client, &mut ignored);
        std::thread::sleep(Duration::from_millis(1));
    }
    let to_client = to_client.unwrap();
    let msg = [7u8; 32];
    let mut tick = |client: &mut Host, server: &mut Host| -> u64 {
        client.send(to_server, CHANNEL_UNRELIABLE, &msg).unwrap();
        client.send(to_server, CHANNEL_SEQUENCED, &msg).unwrap();
        client.send(to_server, CHANNEL_RELIABLE, &msg[..16]).unwrap();
        client.flush().unwrap();
        server.send(to_client, CHANNEL_UNRELIABLE, &msg).unwrap();
        server.send(to_client, CHANNEL_RELIABLE, &msg).unwrap();
        server.flush().unwrap();
        std::thread::sleep(Duration::from_millis(2));
        let _ = client.stats(to_server);
        let _ = server.endpoint_stats();
        drain(server, &mut None) + drain(client, &mut None)
    };
    // Warm up: pools fill, queues reach their working size, stats caches hold the peer.
    for _ in 0..300 {
        tick(&mut client, &mut server);
    }
    let before = ALLOCS.load(Ordering::Relaxed);
    let mut delivered = 0;
    let ticks = 300;
    for _ in 0..ticks {
        delivered += tick(&mut client, &mut server);
    }
    let allocs = ALLOCS.load(Ordering::Relaxed) - before;
    assert!(delivered > ticks * 4, "traffic flowed: {delivered} messages");
    assert_eq!(allocs, 0, "{allocs} allocations over {ticks} ticks ({delivered} messages)");
}
