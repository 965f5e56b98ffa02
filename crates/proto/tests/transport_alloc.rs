//! The transport hot path allocates nothing in steady state: send, flush, receive,
//! ack, deliver and recycle, counted with a global counting allocator.
//!
//! It installs a counting global allocator, which is the whole process's (every test
//! of the binary would run on it, beside the counted one): hence a binary of its own,
//! not a module of `tests/proto/`.

use std::net::SocketAddr;

use tickwire_proto::wire::MAX_DATAGRAM_SIZE;
use tickwire_proto::{
    CHANNEL_RELIABLE, CHANNEL_SEQUENCED, CHANNEL_UNRELIABLE, Endpoint, EndpointConfig, NetEvent as Event,
};

use tickwire_testkit::counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

struct Pair {
    a: Endpoint,
    b: Endpoint,
    aa: SocketAddr,
    ba: SocketAddr,
    buf: Box<[u8; MAX_DATAGRAM_SIZE]>,
}

impl Pair {
    /// Delivers everything queued, both ways, instantly.
    fn exchange(&mut self, now: u64) -> usize {
        let mut delivered = 0;
        loop {
            let mut moved = false;
            while let Some((_, n)) = self.a.poll_transmit(&mut self.buf[..]) {
                self.b.handle_datagram(now, self.aa, &self.buf[..n]);
                moved = true;
            }
            while let Some((_, n)) = self.b.poll_transmit(&mut self.buf[..]) {
                self.a.handle_datagram(now, self.ba, &self.buf[..n]);
                moved = true;
            }
            for ep in [&mut self.a, &mut self.b] {
                while let Some(e) = ep.poll_event() {
                    if let Event::Message { data, .. } = e {
                        delivered += 1;
                        ep.recycle(data);
                    }
                }
            }
            if !moved {
                return delivered;
            }
        }
    }
}

#[test]
fn steady_state_ticks_do_not_allocate() {
    let aa: SocketAddr = "127.0.0.1:1000".parse().unwrap();
    let ba: SocketAddr = "127.0.0.1:2000".parse().unwrap();
    let a = Endpoint::new(EndpointConfig { seed: 1, ..EndpointConfig::default() }, 0).unwrap();
    let b = Endpoint::new(EndpointConfig { seed: 2, max_incoming: 4, ..EndpointConfig::default() }, 0).unwrap();
    let mut p = Pair { a, b, aa, ba, buf: Box::new([0; MAX_DATAGRAM_SIZE]) };
    let peer = p.a.connect(0, ba).unwrap();
    p.exchange(0);
    assert!(p.a.is_connected(peer));
    let server_peer = p.b.peers().next().unwrap();
    let tick = 16_667u64;
    let input = [7u8; 32];
    let snapshot = [9u8; 200];
    let run = |p: &mut Pair, ticks: u64, start: u64| -> usize {
        let mut delivered = 0;
        for t in start..start + ticks {
            let now = t * tick;
            p.a.send(peer, CHANNEL_UNRELIABLE, &input).unwrap();
            p.a.send(peer, CHANNEL_RELIABLE, &input[..8]).unwrap();
            p.b.send(server_peer, CHANNEL_SEQUENCED, &snapshot).unwrap();
            p.b.send(server_peer, CHANNEL_RELIABLE, &snapshot[..40]).unwrap();
            p.a.update(now);
            p.b.update(now);
            p.a.flush(now);
            p.b.flush(now);
            delivered += p.exchange(now);
        }
        delivered
    };
    // Warm up: pools, queues and rings reach their working sizes.
    let warmup_before = counting_alloc::thread_allocations();
    assert_eq!(run(&mut p, 600, 1), 600 * 4);
    // The counter sees this thread's allocations (the warm-up grows the pools).
    assert!(counting_alloc::thread_allocations() > warmup_before, "the counter counts nothing");
    let before = counting_alloc::thread_allocations();
    let delivered = run(&mut p, 3_600, 601);
    let allocs = counting_alloc::thread_allocations() - before;
    assert_eq!(delivered, 3_600 * 4);
    assert_eq!(allocs, 0, "{allocs} allocations over 3600 steady-state ticks");
}
