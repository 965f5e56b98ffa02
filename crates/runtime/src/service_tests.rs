//! The service thread against scripted hosts: who gets a turn when, a host's panic
//! staying its own, and the thread leaving with the last host.

use super::*;
use std::sync::atomic::AtomicUsize;

/// A scripted host: counts its turns, drains its socket, sleeps `sleep` between turns,
/// panics on turn `panic_on`, finishes once `finish` is set.
struct Scripted {
    socket: UdpSocket,
    sleep: Duration,
    turns: AtomicUsize,
    panic_on: Option<usize>,
    finish: AtomicBool,
    failed: Mutex<Option<String>>,
    exited: AtomicBool,
    /// A stall timer its turns disarm, as a host's do when they keep the socket.
    timer: Option<crate::stall_timer::StallTimer>,
}

impl Turn for Scripted {
    fn turn(&self) -> Result<Option<Plan>, String> {
        let n = self.turns.fetch_add(1, Ordering::SeqCst) + 1;
        if self.panic_on == Some(n) {
            panic!("scripted panic on turn {n}");
        }
        let mut buf = [0u8; 64];
        while self.socket.recv_from(&mut buf).is_ok() {}
        if let Some(t) = &self.timer {
            t.disarm();
        }
        Ok((!self.finish.load(Ordering::SeqCst)).then_some(Plan::sleep(self.sleep)))
    }
    fn failed(&self, message: String) {
        *self.failed.lock().unwrap() = Some(message);
    }
    fn exited(&self) {
        self.exited.store(true, Ordering::SeqCst);
    }
}

struct Joined {
    host: Arc<Scripted>,
    waker: Waker,
    addr: std::net::SocketAddr,
    done: crossbeam_channel::Receiver<()>,
}

fn scripted(sleep: Duration, panic_on: Option<usize>) -> Joined {
    scripted_with(sleep, panic_on, None)
}

fn scripted_with(sleep: Duration, panic_on: Option<usize>, timer: Option<crate::stall_timer::StallTimer>) -> Joined {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_nonblocking(true).unwrap();
    let addr = socket.local_addr().unwrap();
    let host = Arc::new(Scripted {
        socket: socket.try_clone().unwrap(),
        sleep,
        turns: AtomicUsize::new(0),
        panic_on,
        finish: AtomicBool::new(false),
        failed: Mutex::new(None),
        exited: AtomicBool::new(false),
        timer,
    });
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let turn: Arc<dyn Turn> = host.clone();
    let timer = host.timer.as_ref().map(|t| t.handle().unwrap());
    let waker = join(|waker| (Joining { turn, socket: Some(socket), timer, done: done_tx }, waker)).unwrap();
    Joined { host, waker, addr, done }
}

fn turns(j: &Joined) -> usize {
    j.host.turns.load(Ordering::SeqCst)
}

/// Waits up to 10 s for `f`.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "not within 10 s: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_host_gets_a_turn_for_its_deadline_its_socket_and_its_waker_only() {
    let sleeper = scripted(Duration::from_secs(60), None);
    let busy = scripted(Duration::from_millis(2), None);
    eventually("the first turns", || turns(&sleeper) == 1 && turns(&busy) >= 1);
    // The busy host's turns (every 2 ms) do not give the sleeper any.
    let before = turns(&busy);
    eventually("the busy host's turns", || turns(&busy) >= before + 20);
    assert_eq!(turns(&sleeper), 1);
    // Its engine's wake does, once.
    sleeper.waker.wake();
    eventually("a turn for the wake", || turns(&sleeper) == 2);
    // A datagram on its socket does.
    let other = UdpSocket::bind("127.0.0.1:0").unwrap();
    other.send_to(b"x", sleeper.addr).unwrap();
    eventually("a turn for the datagram", || turns(&sleeper) == 3);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(turns(&sleeper), 3, "the drained socket and the spent wake give no more turns");
    sleeper.host.finish.store(true, Ordering::SeqCst);
    busy.host.finish.store(true, Ordering::SeqCst);
    sleeper.waker.wake();
}

/// A host's stall timer is in the service's wait: its expiry gives the host a turn
/// though its deadline is a minute off, and once that turn has disarmed it, no more.
/// A host that leaves takes its timer out of the wait.
#[cfg(target_os = "linux")]
#[test]
fn a_stall_timers_expiry_is_a_turn() {
    let j = scripted_with(Duration::from_secs(60), None, Some(crate::stall_timer::StallTimer::new().unwrap()));
    let other = scripted(Duration::from_secs(60), None);
    eventually("the first turn", || turns(&j) == 1 && turns(&other) == 1);
    let timer = j.host.timer.as_ref().unwrap();
    let armed = Instant::now();
    assert!(timer.fire_in(30_000));
    eventually("a turn for the expiry", || turns(&j) == 2);
    assert!(armed.elapsed() >= Duration::from_millis(29), "a turn before the expiry: {:?}", armed.elapsed());
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(turns(&j), 2, "the disarmed timer gives no more turns");
    assert_eq!(turns(&other), 1, "nor does it give another host any");
    // Pushed later before it expires, it waits: the engine's frames do that.
    assert!(timer.fire_in(40_000));
    std::thread::sleep(Duration::from_millis(20));
    assert!(timer.fire_in(60_000));
    std::thread::sleep(Duration::from_millis(40));
    assert_eq!(turns(&j), 2, "a turn for an expiry that was pushed later");
    eventually("a turn for the pushed expiry", || turns(&j) == 3);
    // Leaving with the timer armed: the host goes, and the others are not disturbed.
    assert!(timer.fire_in(1_000));
    j.host.finish.store(true, Ordering::SeqCst);
    j.waker.wake();
    eventually("the host leaves", || j.done.try_recv() == Err(crossbeam_channel::TryRecvError::Disconnected));
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(turns(&other), 1);
    other.host.finish.store(true, Ordering::SeqCst);
    other.waker.wake();
}

#[test]
fn a_host_whose_turn_panics_stops_alone() {
    let doomed = scripted(Duration::from_millis(1), Some(3));
    let others: Vec<Joined> = (0..3).map(|_| scripted(Duration::from_millis(1), None)).collect();
    eventually("the doomed host's end", || doomed.host.exited.load(Ordering::SeqCst));
    let message = doomed.host.failed.lock().unwrap().clone().expect("told why");
    assert!(message.contains("scripted panic on turn 3"), "{message}");
    assert_eq!(
        doomed.done.recv_timeout(Duration::from_secs(10)),
        Err(crossbeam_channel::RecvTimeoutError::Disconnected)
    );
    assert_eq!(turns(&doomed), 3, "no turn after the panic");
    // Every other host goes on turning.
    let before: Vec<usize> = others.iter().map(turns).collect();
    eventually("the others' turns", || others.iter().zip(&before).all(|(j, &b)| turns(j) >= b + 5));
    assert!(others.iter().all(|j| !j.host.exited.load(Ordering::SeqCst) && j.host.failed.lock().unwrap().is_none()));
    for j in &others {
        j.host.finish.store(true, Ordering::SeqCst);
        j.waker.wake();
    }
    for j in &others {
        eventually("a finished host leaves", || {
            j.done.try_recv() == Err(crossbeam_channel::TryRecvError::Disconnected)
        });
        assert!(j.host.failed.lock().unwrap().is_none());
    }
}

/// Threads of this process named `name` (Linux only: /proc).
#[cfg(target_os = "linux")]
pub(crate) fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter(|t| {
            let comm = t.as_ref().ok().and_then(|t| std::fs::read_to_string(t.path().join("comm")).ok());
            comm.is_some_and(|c| c.trim_end() == name)
        })
        .count()
}

/// Runs in a child process, where no other test's host shares the service.
#[cfg(unix)]
#[test]
fn the_thread_starts_with_the_first_host_and_leaves_with_the_last() {
    crate::tests::run_in_child("service::tests::child_thread_lifetime");
}

#[cfg(unix)]
#[test]
#[ignore = "runs in a child process started by the_thread_starts_with_the_first_host_and_leaves_with_the_last"]
fn child_thread_lifetime() {
    for round in 0..2 {
        assert!(!is_running(), "round {round}: a thread before any host");
        let hosts: Vec<Joined> = (0..16).map(|_| scripted(Duration::from_millis(5), None)).collect();
        assert!(is_running());
        eventually("every host's first turn", || hosts.iter().all(|j| turns(j) >= 1));
        #[cfg(target_os = "linux")]
        assert_eq!(threads_named("tickwire-net"), 1, "16 hosts, one thread");
        for (i, j) in hosts.iter().enumerate() {
            j.host.finish.store(true, Ordering::SeqCst);
            j.waker.wake();
            eventually("the host leaves", || j.done.try_recv() == Err(crossbeam_channel::TryRecvError::Disconnected));
            // The thread stays while a host is left.
            assert_eq!(is_running(), i + 1 < hosts.len(), "after host {i} of round {round}");
        }
        reap();
        #[cfg(target_os = "linux")]
        assert_eq!(threads_named("tickwire-net"), 0, "the thread was joined with the last host");
    }
}
