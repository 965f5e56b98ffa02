//! An idle connection is cheap: its network threads sleep until a timer is due. Two
//! hosts connected over 127.0.0.1 with nothing to say wake about twice a second each
//! (their own keepalive and the peer's), not every few milliseconds, and the
//! connection stays up. Counted with the thread's own wakeup counter, so other tests'
//! threads do not disturb the figure.

use std::net::SocketAddr;
use std::thread::sleep;
use std::time::{Duration, Instant};

use tickwire_proto::EndpointConfig;
use tickwire_runtime::{Host, HostConfig, HostEvent};

fn config(server: bool) -> HostConfig {
    let bind: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut cfg = HostConfig::new(bind);
    cfg.endpoint = EndpointConfig { max_incoming: if server { 8 } else { 0 }, ..EndpointConfig::default() };
    cfg
}

fn connected(host: &mut Host, seen: &mut bool) -> bool {
    while let Some(e) = host.poll_event() {
        match e {
            HostEvent::Connected { .. } => *seen = true,
            HostEvent::Disconnected { peer, reason } => panic!("peer {peer} disconnected: {reason:?}"),
            _ => {}
        }
    }
    *seen
}

#[test]
fn idle_connection_wakes_its_threads_about_twice_a_second() {
    let mut server = Host::start(config(true)).unwrap();
    let mut client = Host::start(config(false)).unwrap();
    let peer = client.connect(server.local_addr()).unwrap();
    let (mut s_up, mut c_up) = (false, false);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(connected(&mut server, &mut s_up) & connected(&mut client, &mut c_up)) {
        assert!(Instant::now() < deadline, "no connection within 10 s");
        sleep(Duration::from_millis(1));
    }
    // Let the handshake's acks and statistics settle, then measure without any call
    // but the statistics reads at both ends.
    sleep(Duration::from_millis(1500));
    let before = (server.runtime_stats().wakeups, client.runtime_stats().wakeups);
    let heard_before = client.stats(peer).unwrap().packets_received;
    let window = Duration::from_secs(4);
    sleep(window);
    let after = (server.runtime_stats().wakeups, client.runtime_stats().wakeups);
    let secs = window.as_secs_f64();
    let rates = ((after.0 - before.0) as f64 / secs, (after.1 - before.1) as f64 / secs);
    println!("idle wakeups per second: server {:.2}, client {:.2}", rates.0, rates.1);
    // One keepalive a second each way (EndpointConfig's default interval): two wakeups,
    // with a little room for a statistics turn at the window's edges.
    assert!(rates.0 <= 2.5 && rates.1 <= 2.5, "idle threads woke {rates:?} times a second");
    // The keepalives flow (about one a second from the server) and nobody
    // disconnected (`connected` panics on a Disconnected).
    let heard = client.stats(peer).unwrap().packets_received - heard_before;
    assert!((3..=6).contains(&heard), "the client heard {heard} packets in 4 idle seconds");
    connected(&mut server, &mut s_up);
    connected(&mut client, &mut c_up);
}

/// A keepalive interval longer than the timeout is not a broken configuration: each
/// connection sends a keepalive after a quarter of its timeout at most, so a 10 s
/// interval with a 700 ms timeout holds an idle connection.
#[test]
fn keepalives_follow_a_timeout_shorter_than_the_interval() {
    let short = |server| {
        let mut c = config(server);
        c.endpoint.keepalive_interval_us = 10_000_000;
        c.endpoint.timeout_us = 700_000;
        c
    };
    let mut server = Host::start(short(true)).unwrap();
    let mut client = Host::start(short(false)).unwrap();
    client.connect(server.local_addr()).unwrap();
    let (mut s_up, mut c_up) = (false, false);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(connected(&mut server, &mut s_up) & connected(&mut client, &mut c_up)) {
        assert!(Instant::now() < deadline, "no connection within 10 s");
        sleep(Duration::from_millis(1));
    }
    // Three timeouts of silence from the engines; `connected` panics on a Disconnected.
    let end = Instant::now() + Duration::from_millis(2100);
    while Instant::now() < end {
        connected(&mut server, &mut s_up);
        connected(&mut client, &mut c_up);
        sleep(Duration::from_millis(50));
    }
}
