//! Host-level tests of the runtime mechanics against a scripted stand-in for the
//! endpoint (`fake_endpoint.rs`): waking, panics, shutdown and buffer recycling,
//! independent of the real transport.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::fake_endpoint::{FakeEndpoint, Told};
use super::*;
use crate::system_clock::SystemClock;
use tickwire_proto::{PeerId, SMALL_BUFFER};

/// A host around the fake endpoint, and the fake's count of recycled buffers.
fn fake_host(idle_cap: Duration) -> (Host, Arc<AtomicUsize>) {
    let (host, proto) = fake_host_with(HostConfig::new("127.0.0.1:0".parse().unwrap()), idle_cap);
    (host, proto.recycled)
}

/// The fake's handles a test can use after the fake has moved to the thread.
struct FakeHandles {
    recycled: Arc<AtomicUsize>,
    refuse_sends: Arc<AtomicBool>,
    told: Told,
}

fn fake_host_with(cfg: HostConfig, idle_cap: Duration) -> (Host, FakeHandles) {
    let proto = FakeEndpoint::new();
    let ids = proto.ids.clone();
    let handles = FakeHandles {
        recycled: proto.recycled.clone(),
        refuse_sends: proto.refuse_sends.clone(),
        told: proto.told.clone(),
    };
    let host = Host::start_with(cfg, SystemClock::new(), idle_cap, |_| Ok((proto, ids))).unwrap();
    (host, handles)
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

/// A fake host connected to an observer socket, whose thread has published what it had
/// and gone back to a one-minute sleep.
fn asleep_for_a_minute() -> (Host, UdpSocket, PeerId) {
    let (mut host, _) = fake_host(Duration::from_secs(60));
    let (obs, obs_addr) = observer();
    let peer = host.connect(obs_addr).unwrap();
    wait_event(&mut host, |e| matches!(e, HostEvent::Connected { .. }).then_some(()));
    std::thread::sleep(Duration::from_millis(50));
    (host, obs, peer)
}

#[test]
fn flush_wakes_a_thread_that_would_sleep_for_a_minute() {
    let (mut host, obs, peer) = asleep_for_a_minute();
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
    let buffer = || {
        let mut b = Vec::with_capacity(SMALL_BUFFER);
        b.extend_from_slice(&data);
        b
    };
    let wait_for = |count: usize| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while recycled.load(Ordering::Relaxed) < count && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(recycled.load(Ordering::Relaxed), count);
    };
    // The core is free (the thread is not in its turn): the buffer goes straight back.
    // (The thread's turn, every 10 ms, may hold the core at that moment: then the
    // buffer takes the channel, and the next try is made once it is back.)
    let mut at_once = false;
    for tried in 1..=5 {
        host.recycle(buffer());
        at_once = recycled.load(Ordering::Relaxed) == tried;
        if at_once {
            break;
        }
        wait_for(tried);
    }
    assert!(at_once, "handed to the endpoint at once");
    // The core is held (as in the thread's turn): the buffer takes the pool's channel,
    // and the thread hands it over on its next turn (within the cap).
    let before = recycled.load(Ordering::Relaxed);
    {
        let core = host.shared_core();
        let _turn = core.lock().unwrap();
        host.recycle(buffer());
        assert_eq!(recycled.load(Ordering::Relaxed), before, "not while the core is held");
    }
    wait_for(before + 1);
    // A buffer too small to be reused is freed, not handed over.
    host.recycle(Vec::with_capacity(8));
    std::thread::sleep(3 * IDLE_TEST_CAP);
    assert_eq!(recycled.load(Ordering::Relaxed), before + 1);
}

const IDLE_TEST_CAP: Duration = Duration::from_millis(10);

/// Statistics come from the core itself when the network thread is not in its turn:
/// what a flush just sent is counted at once, not after the thread's next publication
/// (which a minute-long sleep would put off for a minute).
#[test]
fn stats_are_read_fresh_from_the_core() {
    let (mut host, obs, peer) = asleep_for_a_minute();
    let before = host.stats(peer).unwrap().packets_sent;
    let sent_before = host.endpoint_stats().datagrams_sent;
    for i in 0..5u8 {
        host.send(peer, 0, &[i]).unwrap();
        host.flush().unwrap();
    }
    let mut buf = [0u8; 16];
    for _ in 0..5 {
        obs.recv_from(&mut buf).expect("each flush sent its datagram");
    }
    // Read at once: the thread (asleep) has published nothing since.
    assert_eq!(host.stats(peer).unwrap().packets_sent, before + 5);
    assert_eq!(host.endpoint_stats().datagrams_sent, sent_before + 5);
}

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

/// The send-queue limit is checked in `send`, against what is queued on the thread and
/// what is still on its way there; the fake drains its queue on flush.
#[test]
fn send_refuses_synchronously_past_the_peer_send_queue_limit_and_recovers() {
    let mut cfg = HostConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.endpoint.send_queue_limit_bytes = 100;
    let (mut host, _) = fake_host_with(cfg, IDLE_TEST_CAP);
    let (obs, obs_addr) = observer();
    let peer = host.connect(obs_addr).unwrap();
    host.send(peer, 0, &[1; 60]).unwrap();
    // Refused at once, whether or not the thread has taken the first message yet.
    let err = host.send(peer, 0, &[2; 41]).unwrap_err();
    assert!(
        matches!(err, HostError::QueueFull(FullQueue::PeerSendQueue { peer: p, pending: 60, size: 41, limit: 100 }) if p == peer),
        "{err:?}"
    );
    host.send(peer, 0, &[3; 40]).unwrap();
    assert!(matches!(host.send(peer, 2, &[4; 1]), Err(HostError::QueueFull(FullQueue::PeerSendQueue { .. }))));
    host.send(peer, 1, &[]).unwrap();
    host.flush().unwrap();
    // Both accepted messages leave; the refused ones never do.
    let mut buf = [0u8; 256];
    let (n, _) = obs.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], [&[0u8][..], &[1; 60]].concat());
    let (n, _) = obs.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], [&[0u8][..], &[3; 40]].concat());
    // Once the thread has published the drained queue, a full-size message fits again.
    let deadline = Instant::now() + Duration::from_secs(10);
    while host.send(peer, 0, &[5; 100]).is_err() {
        assert!(Instant::now() < deadline, "the budget never recovered");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(host.runtime_stats().sends_rejected, 0);
}

/// An accepted peer gets its budget with its Connected event, so the limit holds for
/// it too, from its first message.
#[test]
fn accepted_peers_are_limited_too() {
    let mut cfg = HostConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.endpoint.send_queue_limit_bytes = 100;
    let (mut host, _) = fake_host_with(cfg, IDLE_TEST_CAP);
    let (obs, _) = observer();
    obs.send_to(b"\x00hi", host.local_addr()).unwrap();
    let peer = wait_event(&mut host, |e| match e {
        HostEvent::Connected { peer, .. } => Some(peer),
        _ => None,
    });
    host.send(peer, 0, &[1; 100]).unwrap();
    assert!(matches!(host.send(peer, 0, &[1; 1]), Err(HostError::QueueFull(FullQueue::PeerSendQueue { .. }))));
    host.flush().unwrap();
    let mut buf = [0u8; 256];
    let (n, _) = obs.recv_from(&mut buf).unwrap();
    assert_eq!(n, 101);
}

/// The network thread's last line of defence: if the endpoint refuses a message the
/// engine was told was accepted (the engine-side checks make this unreachable with the
/// real endpoint), the loss is not silent: the connection is closed and the engine sees
/// `Disconnected` with reason `ProtocolError`, exactly once.
#[test]
fn a_message_refused_on_the_thread_closes_the_connection_visibly() {
    let (mut host, fake) = fake_host_with(HostConfig::new("127.0.0.1:0".parse().unwrap()), IDLE_TEST_CAP);
    let (_obs, obs_addr) = observer();
    let peer = host.connect(obs_addr).unwrap();
    wait_event(&mut host, |e| matches!(e, HostEvent::Connected { .. }).then_some(()));
    fake.refuse_sends.store(true, Ordering::Relaxed);
    host.send(peer, 0, b"accepted, then refused").unwrap();
    host.flush().unwrap();
    let reason = wait_event(&mut host, |e| match e {
        HostEvent::Disconnected { peer: p, reason } if p == peer => Some(reason),
        _ => None,
    });
    assert_eq!(reason, tickwire_proto::DisconnectReason::ProtocolError);
    // The peer is told the same: not `Client`, which a relay server takes for a client
    // leaving on purpose (its slot freed, its token void).
    assert_eq!(*fake.told.lock().unwrap(), [(peer, Some(tickwire_proto::DisconnectReason::ProtocolError))]);
    assert!(matches!(host.send(peer, 0, b"x"), Err(HostError::UnknownPeer(_))));
    let deadline = Instant::now() + Duration::from_secs(10);
    while host.runtime_stats().sends_rejected != 1 {
        assert!(Instant::now() < deadline, "the refusal was not counted");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(30));
    assert!(host.poll_event().is_none(), "one Disconnected only");
}

#[test]
fn host_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<Host>();
}

/// Set in the environment of a child process started by [`run_in_child`]; names the
/// test it runs.
const CHILD_ENV: &str = "TICKWIRE_TEST_CHILD";

/// Runs the `#[ignore]`d test at `path` (its module path inside this crate, e.g.
/// `tests::child_x`) in a child process of this test binary and asserts that it
/// ran, passed, and was not killed by a signal. The child calls
/// [`child_with_default_sigpipe`] first, so SIGPIPE has its default action there (kill
/// the process), as in a C program: Rust's runtime ignores SIGPIPE, which would hide
/// the bug these tests are about.
#[cfg(unix)]
pub(super) fn run_in_child(path: &str) {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(exe)
        .args([path, "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning the child test process");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child running {path} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut out = String::new();
    let mut err = String::new();
    use std::io::Read;
    let _ = child.stdout.take().map(|mut s| s.read_to_string(&mut out));
    let _ = child.stderr.take().map(|mut s| s.read_to_string(&mut err));
    assert_eq!(
        status.signal(),
        None,
        "the child running {path} was killed by signal {:?} (SIGPIPE is {})\nstdout:\n{out}\nstderr:\n{err}",
        status.signal(),
        libc::SIGPIPE
    );
    assert!(status.success(), "the child running {path} failed: {status}\nstdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("1 passed"), "the child did not run {path}:\n{out}");
}

/// In a child started by [`run_in_child`]: gives SIGPIPE its default action (terminate
/// the process) and returns true. Anywhere else (a plain `cargo test -- --ignored`)
/// leaves the signal alone and returns false.
#[cfg(unix)]
pub(super) fn child_with_default_sigpipe() -> bool {
    if std::env::var_os(CHILD_ENV).is_none() {
        return false;
    }
    // SAFETY: signal() with a valid signal number and SIG_DFL touches no memory of ours;
    // this process is a short-lived child that runs a single test.
    let previous = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    assert_ne!(previous, libc::SIG_ERR);
    true
}

/// The C-program scenario of `tests/c/abi_misuse.c`: the network thread dies, the
/// engine sees `Fatal`, then wakes the thread that is gone (`debug_inject_panic` wakes,
/// and so does dropping the host). With SIGPIPE at its default action this killed the
/// process while the waker could write to a pipe whose read end the thread had closed.
#[cfg(unix)]
#[test]
fn waking_a_dead_network_thread_cannot_raise_sigpipe() {
    run_in_child("tests::child_wake_dead_network_thread");
}

#[cfg(unix)]
#[test]
#[ignore = "runs in a child process started by waking_a_dead_network_thread_cannot_raise_sigpipe"]
fn child_wake_dead_network_thread() {
    child_with_default_sigpipe();
    let (mut host, _) = fake_host(Duration::from_secs(60));
    host.debug_inject_panic();
    wait_event(&mut host, |e| matches!(e, HostEvent::Fatal { .. }).then_some(()));
    // The Fatal event is sent after the loop (and its end of the wake pipe) was dropped;
    // the thread may still be finishing, so give it a moment to be really gone.
    std::thread::sleep(Duration::from_millis(50));
    for _ in 0..3 {
        host.debug_inject_panic();
    }
    drop(host);
}
