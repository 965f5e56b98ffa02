//! One network thread for every host of the process: the service thread.
//!
//! A process that runs 64 client sessions, or a server that runs many matches, has one
//! network thread, not one per host (GameNetworkingSockets' service thread is the
//! model). Each host is a [`Slot`]: its core (`thread.rs`'s `NetLoop` behind its mutex,
//! seen as [`Turn`]), a handle of its socket, the flag its engine's [`Waker`] sets, and
//! its next deadline. The thread waits on every host's socket and the one wake channel
//! at once (`waker.rs`), then runs a turn of each host whose socket is readable, whose
//! engine woke it, or whose deadline has come, and nobody else's.
//!
//! Hosts stay independent:
//! - a turn is bounded (it reads at most a fixed number of datagrams), so a flooded
//!   host costs the others at most one such turn per round;
//! - a turn that panics (or finds its core poisoned by an engine call that panicked)
//!   ends that host alone, with its `Fatal` event, as its own thread's death used to.
//!   The process's panic hook runs first, on this thread: with backtraces on
//!   (`RUST_BACKTRACE`), capturing one holds every host for as long as that takes
//!   (milliseconds natively, seconds under Wine);
//! - the engine's side only ever `try_lock`s a core, and only for a bounded piece of
//!   work, so the thread's `lock` of a core waits for at most that.
//!
//! Lifetime: the first host starts the thread, later hosts join it, and it exits with
//! the last host (so a C program that drops its last host has no thread left, and
//! valgrind sees it joined). The registry ties the two together under one lock: a host
//! joins a running thread only while it has not decided to exit, and the thread decides
//! to exit only with nobody waiting to join. The thread's handle is then left for the
//! dropping host to join ([`reap`]). After `fork()` the child has no service thread,
//! whatever the parent's registry said: a registry written by another process id is
//! forgotten.

use std::io;
use std::net::UdpSocket;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use super::stall_timer::TimerHandle;
use super::waker::{Poller, WakeChannel, Waker};

/// What a host's turn asks of the service thread until its next turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The next turn comes after this long at the latest.
    pub sleep: Duration,
    /// Receive moderation: how long the host's socket stays out of the wait (zero: it
    /// is watched as usual). Datagrams arriving meanwhile wait in the socket and are
    /// read together, by the host's next turn (due when this ends at the latest) or by
    /// its engine's own poll, instead of each waking the thread.
    pub quiet: Duration,
}

impl Plan {
    /// Sleep at most `sleep`, socket watched (the scripted hosts of the tests).
    #[cfg(test)]
    pub(crate) fn sleep(sleep: Duration) -> Plan {
        Plan { sleep, quiet: Duration::ZERO }
    }
}

/// What the service thread runs for one host. `Ok(Some(plan))`: until the next turn;
/// `Ok(None)`: the host has finished (its shutdown lingered enough); `Err`: the host
/// failed and must stop, with why.
pub(crate) trait Turn: Send + Sync {
    fn turn(&self) -> Result<Option<Plan>, String>;
    /// Tells the host's engine that its network side stopped for `message` (the
    /// `Fatal` event and the reason kept for later calls). Called at most once.
    fn failed(&self, message: String);
    /// Marks the host's network side as gone, its very last step (after `failed`).
    fn exited(&self);
}

/// One host as the service thread holds it.
pub(crate) struct Slot {
    turn: Arc<dyn Turn>,
    /// A handle of the host's socket to wait on (the core owns the one it reads); none
    /// for a host whose engine carries its datagrams (its engine's pushes wake it).
    socket: Option<UdpSocket>,
    /// The host's stall timer, if it has one (`stall_timer.rs`): its expiry is a turn.
    /// (Only Linux makes one; elsewhere this is always `None`.)
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    timer: Option<TimerHandle>,
    /// Set by the host's [`Waker`].
    woken: Arc<AtomicBool>,
    /// When the host's next turn is due if nothing arrives.
    deadline: Instant,
    /// Whether the socket is out of the wait (receive moderation, [`Plan::quiet`]):
    /// until the deadline, which the quiet time's end brings forward.
    quiet: bool,
    /// Dropped once the host has finished: its `Host` waits for that on drop. `None`:
    /// finished, leaving at the end of the round.
    done: Option<Sender<()>>,
}

/// What the registry knows of the running thread.
struct Running {
    /// Where new hosts wait to be taken in, and the channel that wakes the thread.
    inbox: Arc<Inbox>,
    handle: JoinHandle<()>,
}

struct Inbox {
    wake: WakeChannel,
    joining: Mutex<Vec<Slot>>,
}

struct Registry {
    /// The process that wrote this registry (see the module docs on `fork`).
    pid: u32,
    running: Option<Running>,
    /// Threads that have exited or are exiting, to be joined.
    finished: Vec<JoinHandle<()>>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { pid: 0, running: None, finished: Vec::new() });

fn registry() -> MutexGuard<'static, Registry> {
    // Nothing panics under this lock; if something did, the data is still consistent
    // (every change to it is a single assignment or push).
    let mut r = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
    let pid = std::process::id();
    if r.pid != pid {
        // Written by a parent before fork(): its thread does not exist here. Its
        // handles cannot be joined from this process, so they are forgotten.
        std::mem::forget(r.running.take());
        std::mem::forget(std::mem::take(&mut r.finished));
        r.pid = pid;
    }
    r
}

/// A host's place in the service: built by `make` from the host's waker, then handed
/// to the running thread (started if there is none).
pub(crate) struct Joining {
    pub turn: Arc<dyn Turn>,
    pub socket: Option<UdpSocket>,
    /// A handle of the host's stall timer, if it has one.
    pub timer: Option<TimerHandle>,
    pub done: Sender<()>,
}

/// Adds a host to the service thread, starting it if it is not running. `make` gets
/// the host's waker and builds the host's side (its core keeps the waker). Returns what
/// `make` returned beside the slot.
pub(crate) fn join<T>(make: impl FnOnce(Waker) -> (Joining, T)) -> io::Result<T> {
    let mut r = registry();
    if r.running.is_none() {
        let inbox = Arc::new(Inbox { wake: WakeChannel::new()?, joining: Mutex::new(Vec::new()) });
        let thread_inbox = inbox.clone();
        // Made here, so that a system that refuses it fails the host being made.
        let poller = Poller::new(inbox.wake.clone())?;
        // The thread finds no host at first and asks to exit: it waits for this lock,
        // and by then the host below is in its inbox.
        let handle =
            std::thread::Builder::new().name("tickwire-net".into()).spawn(move || run(thread_inbox, poller))?;
        r.running = Some(Running { inbox, handle });
    }
    let inbox = r.running.as_ref().map(|running| running.inbox.clone()).expect("started above");
    let (waker, woken) = inbox.wake.waker();
    let (joining, out) = make(waker);
    let slot = Slot {
        turn: joining.turn,
        socket: joining.socket,
        timer: joining.timer,
        woken,
        deadline: Instant::now(),
        quiet: false,
        done: Some(joining.done),
    };
    inbox.joining.lock().unwrap_or_else(|p| p.into_inner()).push(slot);
    inbox.wake.signal();
    Ok(out)
}

/// Joins service threads that have exited (called by a host that was dropped, after its
/// own slot finished). Never waits for a running thread.
pub(crate) fn reap() {
    let finished = std::mem::take(&mut registry().finished);
    for handle in finished {
        let _ = handle.join();
    }
}

/// Whether a service thread is running in this process (for tests).
#[cfg(test)]
pub(crate) fn is_running() -> bool {
    registry().running.is_some()
}

/// The service thread's loop: take in new hosts, run the turns that are due, retire
/// the hosts that finished, then wait for the next socket, wake or deadline.
fn run(inbox: Arc<Inbox>, mut poller: Poller) {
    let mut slots: Vec<Slot> = Vec::new();
    // Dropped after the exit decision, so that the last host's drop finds the
    // thread's handle to join.
    let mut finished: Vec<Sender<()>> = Vec::new();
    // Whether the last wait found the wake channel signalled. Only then can a host's
    // flag be set (see `Poller::wait`), so a round woken by sockets or deadlines alone
    // does not touch every host's flag: with hundreds of hosts those were a cold line
    // each, every round.
    let mut signalled = true;
    loop {
        let mut changed = false;
        {
            let mut joining = inbox.joining.lock().unwrap_or_else(|p| p.into_inner());
            if !joining.is_empty() {
                slots.append(&mut joining);
                changed = true;
            }
        }
        let now = Instant::now();
        for (i, slot) in slots.iter_mut().enumerate() {
            // Readiness is of the last wait, whose set was `slots` before this round's
            // newcomers (appended, so the indices hold; nobody leaves before the end
            // of the round).
            let woken = signalled && slot.woken.swap(false, Ordering::AcqRel);
            if !(woken || poller.readable(i) || now >= slot.deadline) {
                continue;
            }
            match run_turn(&*slot.turn) {
                Ok(Some(plan)) => {
                    // A quiet socket is read again when its quiet time ends (a turn
                    // then, whatever arrived), or earlier if something else is due.
                    let quiet = !plan.quiet.is_zero();
                    let sleep = if quiet { plan.sleep.min(plan.quiet) } else { plan.sleep };
                    slot.deadline = Instant::now() + sleep;
                    if quiet != slot.quiet {
                        slot.quiet = quiet;
                        poller.mute(i, quiet);
                    }
                }
                outcome => {
                    if let Err(message) = outcome {
                        slot.turn.failed(message);
                    }
                    slot.turn.exited();
                    finished.extend(slot.done.take());
                    changed = true;
                }
            }
        }
        if changed {
            // The poller lets go of the leavers' sockets before they close (epoll
            // would keep reporting a closed duplicate of a socket the core still has).
            poller.watch(slots.iter().filter(|s| s.done.is_some()).map(|s| s.socket.as_ref()));
            #[cfg(target_os = "linux")]
            poller.watch_timers(
                slots.iter().filter(|s| s.done.is_some()).map(|s| s.timer.as_ref().map(crate::stall_timer::raw)),
            );
            slots.retain(|s| s.done.is_some());
            for (i, slot) in slots.iter().enumerate() {
                if slot.quiet {
                    poller.mute(i, true);
                }
            }
        }
        if slots.is_empty() && may_exit(&inbox) {
            drop(finished);
            return;
        }
        finished.clear();
        let now = Instant::now();
        let timeout = slots.iter().map(|s| s.deadline.saturating_duration_since(now)).min().unwrap_or(Duration::ZERO);
        let waited = poller.wait(timeout);
        signalled = !matches!(waited, Ok(false));
        if let Err(e) = waited {
            // The wait itself failed (not a host's doing): every host is told, as each
            // was when its own thread's wait failed.
            let message = format!("network thread stopped: {e}");
            poller.watch(std::iter::empty());
            #[cfg(target_os = "linux")]
            poller.watch_timers(std::iter::empty());
            for slot in slots.drain(..) {
                slot.turn.failed(message.clone());
                slot.turn.exited();
                finished.extend(slot.done);
            }
            if may_exit(&inbox) {
                return;
            }
            finished.clear();
        }
    }
}

/// Decides, under the registry's lock, whether a thread without hosts exits: only when
/// nobody is waiting to join it. Its handle then goes to the registry's finished list.
fn may_exit(inbox: &Arc<Inbox>) -> bool {
    let mut r = registry();
    if !inbox.joining.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
        return false;
    }
    if r.running.as_ref().is_some_and(|running| Arc::ptr_eq(&running.inbox, inbox)) {
        let running = r.running.take().expect("checked above");
        r.finished.push(running.handle);
    }
    true
}

/// One host's turn, its panic caught: it ends that host only.
fn run_turn(turn: &dyn Turn) -> Result<Option<Plan>, String> {
    match catch_unwind(AssertUnwindSafe(|| turn.turn())) {
        Ok(outcome) => outcome,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".into());
            Err(format!("network thread panicked: {what}"))
        }
    }
}

#[cfg(test)]
#[path = "service_tests.rs"]
mod tests;
