//! Host-level tests of the runtime mechanics against a scripted fake protocol: waking,
//! panics, shutdown and buffer recycling, independent of the real transport.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::protocol::fake::FakeProtocol;
use super::*;
use crate::core::clock::SystemClock;

/// A host around the fake protocol, and the fake's count of recycled buffers.
fn fake_host(idle_cap: Duration) -> (Host, Arc<AtomicUsize>) {
    let proto = FakeProtocol::new();
    let ids = proto.ids.clone();
    let recycled = proto.recycled.clone();
    let host = Host::start_with(HostConfig::new("127.0.0.1:0".parse().unwrap()), proto, ids, SystemClock::new(), idle_cap)
        .unwrap();
    (host, recycled)
}

fn observer() -> (UdpSocket, SocketAddr) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let a = s.local_addr().unwrap();
    (s, a)
}

/// Polls until `f` picks an event, for at most 10 s.
fn wait_event<T>(host: &mut Host, mut f: impl FnMut(HostEvent) -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match host.poll_event() {
            Some(ev) => {
                if let Some(t) = f(ev) {
                    return t;
                }
            }
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    panic!("event not seen within 10 s");
}

#[test]
fn flush_wakes_a_thread_that_would_sleep_for_a_minute() {
    let (mut host, _) = fake_host(Duration::from_secs(60));
    let (obs, obs_addr) = observer();
    let peer = host.connect(obs_addr).unwrap();
    wait_event(&mut host, |e| matches!(e, HostEvent::Connected { .. }).then_some(()));
    // Let the thread go back to its (one-minute) sleep.
    std::thread::sleep(Duration::from_millis(50));
    let start = Instant::now();
    host.send(peer, 0, b"ping").unwrap();
    host.flush().unwrap();
    let mut buf = [0u8; 64];
    let (n, _) = obs.recv_from(&mut buf).expect("the flush must wake the thread");
    assert_eq!(&buf[..n], b"\0ping");
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
}

#[test]
fn received_messages_arrive_and_their_buffers_come_back() {
    let (mut host, recycled) = fake_host(IDLE_TEST_CAP);
    let (obs, _) = observer();
    obs.send_to(b"\x02hello", host.local_addr()).unwrap();
    let data = wait_event(&mut host, |e| match e {
        HostEvent::Message { channel: 2, data, .. } => Some(data),
        _ => None,
    });
    assert_eq!(data, b"hello");
    host.recycle(data);
    // The thread hands the buffer to the protocol on its next turn (within the cap).
    let deadline = Instant::now() + Duration::from_secs(10);
    while recycled.load(Ordering::Relaxed) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(recycled.load(Ordering::Relaxed), 1);
}

const IDLE_TEST_CAP: Duration = Duration::from_millis(10);

#[test]
fn panic_becomes_fatal_then_thread_gone() {
    let (mut host, _) = fake_host(Duration::from_secs(60));
    let (_obs, obs_addr) = observer();
    let peer = host.connect(obs_addr).unwrap();
    host.debug_inject_panic();
    let message = wait_event(&mut host, |e| match e {
        HostEvent::Fatal { message } => Some(message),
        _ => None,
    });
    assert!(message.contains("injected panic"), "{message}");
    assert!(matches!(host.send(peer, 0, b"x"), Err(HostError::ThreadGone(m)) if m.contains("injected")));
    assert!(matches!(host.flush(), Err(HostError::ThreadGone(_))));
    assert!(matches!(host.connect(obs_addr), Err(HostError::ThreadGone(_))));
    // Exactly one Fatal.
    std::thread::sleep(Duration::from_millis(20));
    assert!(host.poll_event().is_none());
    let start = Instant::now();
    drop(host);
    assert!(start.elapsed() < SHUTDOWN_WAIT + Duration::from_millis(500));
}

#[test]
fn drop_is_bounded_even_with_a_long_idle_cap() {
    let (mut host, _) = fake_host(Duration::from_secs(60));
    let (_obs, obs_addr) = observer();
    host.connect(obs_addr).unwrap();
    let start = Instant::now();
    drop(host);
    assert!(start.elapsed() < SHUTDOWN_WAIT + Duration::from_millis(500), "{:?}", start.elapsed());
}

#[test]
fn engine_side_checks_are_synchronous() {
    let (mut host, _) = fake_host(IDLE_TEST_CAP);
    let (_obs, obs_addr) = observer();
    assert!(matches!(host.send(42, 0, b"x"), Err(HostError::UnknownPeer(42))));
    let peer = host.connect(obs_addr).unwrap();
    assert!(matches!(host.send(peer, 3, b"x"), Err(HostError::BadChannel(3))));
    let big = vec![0u8; 2000];
    assert!(matches!(host.send(peer, 0, &big), Err(HostError::TooLarge { size: 2000, .. })));
    host.send(peer, 2, &big).unwrap();
    host.disconnect(peer).unwrap();
    assert!(matches!(host.send(peer, 0, b"x"), Err(HostError::UnknownPeer(_))));
    assert!(matches!(host.disconnect(peer), Err(HostError::UnknownPeer(_))));
    let v6: SocketAddr = "[::1]:9".parse().unwrap();
    assert!(matches!(host.connect(v6), Err(HostError::Config(m)) if m.contains("IPv6")));
}

#[test]
fn host_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<Host>();
}
