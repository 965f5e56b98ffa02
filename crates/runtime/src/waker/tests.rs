//! The wake channel and every wait set this platform can build: each test runs
//! against the platform's set (epoll on Linux), and on Linux also against epoll's
//! fallback wait and the `poll` set of the other platforms.

use super::*;
use std::time::Instant;

/// Runs a test body generic over the wait set against each set this target builds.
macro_rules! for_each_set {
    ($name:ident, $body:ident) => {
        mod $name {
            use super::*;
            #[test]
            fn platform() {
                $body(Poller::<PlatformSet>::new);
            }
            #[cfg(target_os = "linux")]
            #[test]
            fn epoll_fallback_wait() {
                $body(|chan| {
                    Poller::<epoll_set::EpollSet>::new(chan)
                        .map(|p| Poller { chan: p.chan, set: p.set.without_pwait2() })
                });
            }
            #[cfg(target_os = "linux")]
            #[test]
            fn poll() {
                $body(Poller::<poll_set::PollSet>::new);
            }
        }
    };
}

type Make<S> = fn(WakeChannel) -> io::Result<Poller<S>>;

fn bind() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0").unwrap()
}

fn send_to(sock: &UdpSocket) {
    bind().send_to(b"x", sock.local_addr().unwrap()).unwrap();
}

/// `n` fresh sockets and a poller of the set `make` builds, watching them all.
fn watching<S: WaitSet>(make: Make<S>, n: usize) -> (Vec<UdpSocket>, Poller<S>) {
    let socks: Vec<UdpSocket> = (0..n).map(|_| bind()).collect();
    let mut poller = make(WakeChannel::new().unwrap()).unwrap();
    poller.watch(socks.iter().map(Some));
    (socks, poller)
}

fn readable<S: WaitSet>(poller: &Poller<S>, n: usize) -> Vec<bool> {
    (0..n).map(|i| poller.readable(i)).collect()
}

/// Waits that must time out: nothing watched is readable.
fn assert_times_out<S: WaitSet>(poller: &mut Poller<S>) {
    let start = Instant::now();
    assert!(!poller.wait(Duration::from_millis(30)).unwrap(), "a timeout is no signal");
    assert!(start.elapsed() >= Duration::from_millis(20), "woke after {:?}", start.elapsed());
}

fn wake_interrupts_a_long_wait_and_sets_only_its_flag<S: WaitSet>(make: Make<S>) {
    let sock = bind();
    let chan = WakeChannel::new().unwrap();
    let mut poller = make(chan.clone()).unwrap();
    poller.watch(std::iter::once(Some(&sock)));
    let (waker, flag) = chan.waker();
    let (_other, other_flag) = chan.waker();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        waker.wake();
    });
    let start = Instant::now();
    assert!(poller.wait(Duration::from_secs(30)).unwrap(), "the wait says it was signalled");
    // Without the wake this would take 30 s; the margin is huge on purpose.
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    assert!(flag.load(Ordering::Acquire));
    assert!(!other_flag.load(Ordering::Acquire));
    assert!(!poller.readable(0));
    t.join().unwrap();
}
for_each_set!(wake_interrupts, wake_interrupts_a_long_wait_and_sets_only_its_flag);

fn many_wakes_never_block_and_are_drained<S: WaitSet>(make: Make<S>) {
    let sock = bind();
    let chan = WakeChannel::new().unwrap();
    let mut poller = make(chan.clone()).unwrap();
    poller.watch(std::iter::once(Some(&sock)));
    let (waker, _flag) = chan.waker();
    // Far more than a pipe holds: the writes past capacity must return (EAGAIN).
    for _ in 0..200_000 {
        waker.wake();
    }
    poller.wait(Duration::from_secs(30)).unwrap();
    // After draining, a short wait times out rather than returning at once forever.
    assert_times_out(&mut poller);
}
for_each_set!(many_wakes, many_wakes_never_block_and_are_drained);

fn a_readable_socket_ends_the_wait_and_is_named<S: WaitSet>(make: Make<S>) {
    let (socks, mut poller) = watching(make, 3);
    send_to(&socks[1]);
    let start = Instant::now();
    poller.wait(Duration::from_secs(30)).unwrap();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(readable(&poller, 4), [false, true, false, false]);
    // Level-triggered: unread, it is named again; read, the next wait times out.
    poller.wait(Duration::from_secs(30)).unwrap();
    assert_eq!(readable(&poller, 3), [false, true, false]);
    socks[1].recv(&mut [0; 8]).unwrap();
    assert_times_out(&mut poller);
    assert_eq!(readable(&poller, 3), [false, false, false]);
}
for_each_set!(readable_named, a_readable_socket_ends_the_wait_and_is_named);

/// Hosts leave and come (the service's `watch` after a round): the indices follow the
/// new order, a host without a socket is never readable, and a leaver is not watched.
fn a_new_set_renumbers_the_hosts_and_forgets_the_leavers<S: WaitSet>(make: Make<S>) {
    let (socks, mut poller) = watching(make, 4);
    // Socket 1 leaves, a host without a socket comes, then socket 3 again.
    poller.watch([Some(&socks[0]), None, Some(&socks[2]), Some(&socks[3])].into_iter());
    send_to(&socks[3]);
    poller.wait(Duration::from_secs(30)).unwrap();
    assert_eq!(readable(&poller, 4), [false, false, false, true]);
    socks[3].recv(&mut [0; 8]).unwrap();
    send_to(&socks[1]);
    assert_times_out(&mut poller);
    assert_eq!(readable(&poller, 4), [false; 4]);
}
for_each_set!(renumbered, a_new_set_renumbers_the_hosts_and_forgets_the_leavers);

/// The service's sockets are duplicates of the ones the hosts' cores read. A socket
/// let go of and then closed, while its core's descriptor stays open, is never reported
/// again (epoll keeps a registration until every descriptor of the file is closed, so
/// it must be removed first); and a new socket that gets the closed descriptor's
/// number is watched.
fn a_closed_duplicate_is_not_reported_and_its_number_can_come_back<S: WaitSet>(make: Make<S>) {
    let core = bind();
    let service = core.try_clone().unwrap();
    let mut poller = make(WakeChannel::new().unwrap()).unwrap();
    poller.watch(std::iter::once(Some(&service)));
    poller.watch(std::iter::empty());
    drop(service);
    send_to(&core);
    assert_times_out(&mut poller);
    let newcomer = bind();
    poller.watch(std::iter::once(Some(&newcomer)));
    send_to(&newcomer);
    poller.wait(Duration::from_secs(30)).unwrap();
    assert!(poller.readable(0));
}
for_each_set!(closed_duplicate, a_closed_duplicate_is_not_reported_and_its_number_can_come_back);

/// Receive moderation: a muted socket is not reported however much waits in it, and
/// is again once watched; a new set watches every socket.
#[cfg(unix)]
fn a_muted_socket_is_left_out_until_watched_again<S: WaitSet>(make: Make<S>) {
    let (socks, mut poller) = watching(make, 2);
    poller.mute(0, true);
    poller.mute(0, true);
    send_to(&socks[0]);
    assert_times_out(&mut poller);
    assert!(!poller.readable(0));
    poller.mute(0, false);
    poller.wait(Duration::from_secs(30)).unwrap();
    assert_eq!(readable(&poller, 2), [true, false]);
    poller.mute(0, true);
    assert_times_out(&mut poller);
    poller.watch(socks.iter().map(Some));
    poller.wait(Duration::from_secs(30)).unwrap();
    assert_eq!(readable(&poller, 2), [true, false]);
}
#[cfg(unix)]
for_each_set!(muted, a_muted_socket_is_left_out_until_watched_again);

/// Hundreds of hosts (a process of many client sessions): the one readable socket
/// among them is named.
fn one_ready_socket_among_hundreds_is_named<S: WaitSet>(make: Make<S>) {
    let (socks, mut poller) = watching(make, 300);
    send_to(&socks[271]);
    poller.wait(Duration::from_secs(30)).unwrap();
    let named: Vec<usize> = (0..300).filter(|&i| poller.readable(i)).collect();
    assert_eq!(named, [271]);
}
for_each_set!(hundreds, one_ready_socket_among_hundreds_is_named);

/// A wake after the poller (the service thread's side) has been dropped is harmless,
/// even with SIGPIPE at its default action, as in a C program: the write end must never
/// face a closed read end. Runs in a child process so that death by SIGPIPE is a failed
/// assertion rather than a dead test binary.
#[cfg(unix)]
#[test]
fn wake_after_the_poller_is_dropped_cannot_raise_sigpipe() {
    crate::tests::run_in_child("waker::tests::child_wake_after_poller_dropped");
}

#[cfg(unix)]
#[test]
#[ignore = "runs in a child process started by wake_after_the_poller_is_dropped_cannot_raise_sigpipe"]
fn child_wake_after_poller_dropped() {
    crate::tests::child_with_default_sigpipe();
    let chan = WakeChannel::new().unwrap();
    let (waker, _flag) = chan.waker();
    drop(Poller::<PlatformSet>::new(chan).unwrap());
    // From another thread too, as an engine does after the service thread exits.
    let waker = Arc::new(waker);
    let w2 = waker.clone();
    std::thread::spawn(move || w2.wake()).join().unwrap();
    // More than the pipe holds: the writes past capacity must return (EAGAIN).
    for _ in 0..100_000 {
        waker.wake();
    }
}

/// The service reads the hosts' flags only after a wait that says it was signalled: a
/// wait ended by a socket or a timeout says not, and a wake that lands after one (its
/// flag set) ends the next wait at once, signalled.
fn a_wait_says_whether_it_was_signalled<S: WaitSet>(make: Make<S>) {
    let chan = WakeChannel::new().unwrap();
    let mut poller = make(chan.clone()).unwrap();
    let sock = bind();
    poller.watch(std::iter::once(Some(&sock)));
    send_to(&sock);
    assert!(!poller.wait(Duration::from_secs(30)).unwrap(), "a readable socket is no signal");
    assert!(poller.readable(0));
    let mut buf = [0u8; 8];
    sock.recv(&mut buf).unwrap();
    let (waker, flag) = chan.waker();
    waker.wake();
    let start = Instant::now();
    assert!(poller.wait(Duration::from_secs(30)).unwrap());
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(flag.load(Ordering::Acquire));
    assert_times_out(&mut poller);
}
for_each_set!(signalled, a_wait_says_whether_it_was_signalled);
