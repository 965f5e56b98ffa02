//! Issue 17, item 3: every host of a process shares one network thread, and hosts
//! stay independent on it. Real hosts over 127.0.0.1.
//!
//! The tests in this binary take turns (one lock): the first counts the process's
//! network threads. Hence a binary of its own, not a module of `tests/runtime/`: a
//! host of any other test would be one more user of the network thread.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use tickwire_proto::{EndpointConfig, PeerId};
use tickwire_runtime::{Host, HostConfig, HostEvent};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn config(incoming: u32) -> HostConfig {
    let bind: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut cfg = HostConfig::new(bind);
    cfg.endpoint =
        EndpointConfig { max_incoming: incoming, max_incoming_per_ip: incoming.max(1), ..EndpointConfig::default() };
    cfg
}

/// Threads of this process named `name` (Linux: /proc; elsewhere None).
fn threads_named(name: &str) -> Option<usize> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    Some(
        tasks
            .filter(|t| {
                let comm = t.as_ref().ok().and_then(|t| std::fs::read_to_string(t.path().join("comm")).ok());
                comm.is_some_and(|c| c.trim_end() == name)
            })
            .count(),
    )
}

/// Polls every host until each has seen a connection, for at most 20 s; any
/// disconnect fails.
fn all_connected(hosts: &mut [Host]) {
    let mut up = vec![false; hosts.len()];
    let deadline = Instant::now() + Duration::from_secs(20);
    while !up.iter().all(|&u| u) {
        assert!(Instant::now() < deadline, "connections within 20 s: {up:?}");
        for (i, h) in hosts.iter_mut().enumerate() {
            while let Some(e) = h.poll_event() {
                match e {
                    HostEvent::Connected { .. } => up[i] = true,
                    HostEvent::Disconnected { peer, reason } => panic!("host {i}: peer {peer} gone ({reason:?})"),
                    _ => {}
                }
            }
        }
        sleep(Duration::from_millis(1));
    }
}

#[test]
fn sixty_four_hosts_share_one_network_thread_which_leaves_with_the_last() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    assert_eq!(threads_named("tickwire-net").unwrap_or(0), 0, "no host yet");
    let mut hosts = vec![Host::start(config(63)).unwrap()];
    let server = hosts[0].local_addr();
    let mut server_peer = vec![PeerId::from(0u32)];
    for _ in 0..63 {
        let mut c = Host::start(config(0)).unwrap();
        server_peer.push(c.connect(server).unwrap());
        hosts.push(c);
    }
    if let Some(n) = threads_named("tickwire-net") {
        assert_eq!(n, 1, "64 hosts, network threads");
    }
    all_connected(&mut hosts);
    // Every client says hello on the reliable channel; the server echoes each; every
    // client hears its own echo.
    for (i, c) in hosts.iter_mut().enumerate().skip(1) {
        c.send(server_peer[i], 0, &[i as u8; 32]).unwrap();
        c.flush().unwrap();
    }
    let mut echoed = [false; 64];
    echoed[0] = true;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !echoed.iter().all(|&e| e) {
        assert!(Instant::now() < deadline, "echoes heard: {echoed:?}");
        while let Some(e) = hosts[0].poll_event() {
            if let HostEvent::Message { peer, channel, data, .. } = e {
                hosts[0].send(peer, channel, &data).unwrap();
                hosts[0].recycle(data);
            }
        }
        hosts[0].flush().unwrap();
        for (i, c) in hosts.iter_mut().enumerate().skip(1) {
            while let Some(e) = c.poll_event() {
                match e {
                    HostEvent::Message { data, .. } => {
                        assert_eq!(data, [i as u8; 32], "client {i}'s echo");
                        echoed[i] = true;
                    }
                    HostEvent::Disconnected { peer, reason } => panic!("client {i}: {peer} gone ({reason:?})"),
                    _ => {}
                }
            }
        }
        sleep(Duration::from_millis(1));
    }
    if let Some(n) = threads_named("tickwire-net") {
        assert_eq!(n, 1, "64 hosts after the exchange, network threads");
    }
    drop(hosts);
    assert_eq!(threads_named("tickwire-net").unwrap_or(0), 0, "the thread leaves with the last host");
}

#[test]
fn a_flood_at_one_host_and_a_panic_in_another_leave_the_rest_alone() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut victim = Host::start(config(8)).unwrap();
    let mut doomed = Host::start(config(0)).unwrap();
    // An idle pair on a short timeout: 700 ms of silence ends it, so its keepalives
    // (a quarter of that) must go out and be read on time by the shared thread.
    let short = |incoming| {
        let mut c = config(incoming);
        c.endpoint.timeout_us = 700_000;
        c
    };
    let mut pair = [Host::start(short(8)).unwrap(), Host::start(short(0)).unwrap()];
    let peer = pair[1].connect(pair[0].local_addr()).unwrap();
    all_connected(&mut pair);
    let heard_before = pair[1].stats(peer).unwrap().packets_received;

    // The flood: junk datagrams at the victim from another thread, about 20,000 a
    // second, for 3 s. Nobody polls any host meanwhile: only the network thread works.
    let target = victim.local_addr();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let flooder = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
            let junk = [0xA5u8; 200];
            let mut sent = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..20 {
                    if sock.send_to(&junk, target).is_ok() {
                        sent += 1;
                    }
                }
                sleep(Duration::from_millis(1));
            }
            sent
        })
    };
    doomed.debug_inject_panic();
    sleep(Duration::from_secs(3));
    stop.store(true, Ordering::Relaxed);
    let sent = flooder.join().unwrap();

    // The panic ended the doomed host only.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match doomed.poll_event() {
            Some(HostEvent::Fatal { message }) => {
                assert!(message.contains("injected panic"), "{message}");
                break;
            }
            Some(_) => {}
            None => {
                assert!(Instant::now() < deadline, "no Fatal for the doomed host");
                sleep(Duration::from_millis(1));
            }
        }
    }
    // The flood reached the victim's endpoint (and was refused there): thousands of
    // datagrams, each a read and a refusal on the shared thread. (Not all of them: what
    // the socket's buffer cannot hold the OS drops, and under Wine, where each read is
    // a round trip to wineserver, it dropped four in five.)
    let seen = victim.endpoint_stats().datagrams_received;
    println!("flood: {sent} junk datagrams sent, {seen} read by the victim's host");
    assert!(seen >= 2_000, "the thread read {seen} of {sent} flood datagrams");
    // The pair's connection held through 3 s without engine calls, four timeouts'
    // worth: its keepalives (about every 175 ms each way) went and came on time.
    let heard = pair[1].stats(peer).unwrap().packets_received - heard_before;
    assert!(heard >= 10, "the client heard {heard} packets in 3 s");
    for (i, h) in pair.iter_mut().enumerate() {
        while let Some(e) = h.poll_event() {
            assert!(!matches!(e, HostEvent::Disconnected { .. } | HostEvent::Fatal { .. }), "pair host {i}: {e:?}");
        }
    }
    while let Some(e) = victim.poll_event() {
        assert!(!matches!(e, HostEvent::Fatal { .. }), "victim: {e:?}");
    }
}
