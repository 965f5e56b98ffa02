//! The wait set on Linux: one epoll instance holding the wake channel, every
//! watched host's socket and the hosts' stall timers (`stall_timer.rs`).
//!
//! `ppoll` over every socket made each wake of a process of many hosts cost the kernel
//! a look at each of them (a process of 512 client hosts spent 31% of its CPU in that
//! walk, docs/benchmarks.md, row 10); an epoll wait costs what is ready. The set is
//! changed only when hosts come or go, and when a host's socket goes out of the wait
//! or back in (receive moderation, `Poller::mute`): one `epoll_ctl` each.
//!
//! Registrations are keyed by descriptor number (the event's data) and mapped to the
//! host's index on the way out, so a host leaving does not renumber the others'.
//! epoll forgets a registration only when every descriptor of its file is closed, and
//! the service's socket is a duplicate of the one the host's core reads: the service
//! therefore lets go of a socket (a [`watch`](EpollSet::watch) without it) *before* it
//! closes its handle, or the set would report a closed descriptor for as long as the
//! core keeps the file open.
//!
//! The wait is `epoll_pwait2` (Linux 5.11) through `syscall()` for its nanosecond
//! timeout, so the library does not need glibc 2.35's wrapper. On older kernels, or
//! where a seccomp filter refuses it, the set falls back to `ppoll` on the epoll
//! descriptor (readable when any registered socket is) and then `epoll_wait` with a
//! zero timeout to collect what is ready: two calls per wake, the same timeout.

use std::io;
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::{WaitSet, imp};

/// The event data of the wake channel (socket events carry their descriptor).
const WAKE: u64 = u64::MAX;

/// One watched host's socket.
#[derive(Debug, Clone, Copy)]
struct Entry {
    fd: RawFd,
    /// In the epoll set now (not muted).
    registered: bool,
}

pub(crate) struct EpollSet {
    epoll: OwnedFd,
    /// Per watched host, in the order of the last `watch`.
    hosts: Vec<Option<Entry>>,
    /// Descriptor number to host index (`u32::MAX`: none), for the events of a wait.
    by_fd: Vec<u32>,
    /// Per host index, whether the last wait found its socket ready.
    ready: Vec<bool>,
    /// The indices set in `ready`, to clear them without a walk of every host.
    ready_list: Vec<usize>,
    /// Room for one wait's events: one per host and the wake channel's.
    events: Vec<libc::epoll_event>,
    /// `epoll_pwait2` worked or was not tried yet (see the module docs).
    pwait2: bool,
    /// The hosts' stall timers in the set (`stall_timer.rs`): never muted, and
    /// reported as their host's readiness.
    timers: Vec<RawFd>,
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r) }
}

impl EpollSet {
    fn ctl(&self, op: libc::c_int, fd: RawFd, data: u64) -> io::Result<()> {
        let mut event = libc::epoll_event { events: libc::EPOLLIN as u32, u64: data };
        // SAFETY: `event` is a live local for the call (ignored by EPOLL_CTL_DEL); both
        // descriptors are open: the epoll one is ours, and `fd` is the wake channel's
        // (owned by the poller's channel) or a socket or stall timer the service holds
        // until after the set has let go of it (module docs).
        check(unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd, &mut event) }).map(drop)
    }

    /// Adds or removes one host's socket. A failure leaves the socket out of the set
    /// (its host is then served by its deadlines and its engine's wakes, as a muted
    /// socket is) rather than stopping every host.
    fn register(&mut self, entry: &mut Entry, on: bool) {
        if entry.registered == on {
            return;
        }
        let op = if on { libc::EPOLL_CTL_ADD } else { libc::EPOLL_CTL_DEL };
        entry.registered = self.ctl(op, entry.fd, entry.fd as u64).is_ok() && on;
    }

    /// One wait: the number of events written to `self.events`.
    fn collect(&mut self, timeout: Duration) -> io::Result<usize> {
        let timeout = timeout.min(Duration::from_secs(3600));
        let max = self.events.len() as libc::c_int;
        let events = self.events.as_mut_ptr();
        let epoll = self.epoll.as_raw_fd();
        if self.pwait2 {
            // The kernel's `struct __kernel_timespec`: 64-bit fields on every target.
            #[repr(C)]
            struct KernelTimespec {
                tv_sec: i64,
                tv_nsec: i64,
            }
            let ts = KernelTimespec { tv_sec: timeout.as_secs() as i64, tv_nsec: i64::from(timeout.subsec_nanos()) };
            // SAFETY: `events` points to `max` writable epoll_events owned by `self`,
            // `ts` is a live local of the layout the kernel reads, and a null signal
            // mask (its size then unused) keeps the thread's mask.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_epoll_pwait2,
                    epoll,
                    events,
                    max,
                    &ts as *const KernelTimespec,
                    std::ptr::null::<libc::sigset_t>(),
                    0usize,
                )
            };
            if r >= 0 {
                return Ok(r as usize);
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                // Before Linux 5.11, or refused by a seccomp filter: the fallback below
                // from now on.
                Some(libc::ENOSYS) | Some(libc::EPERM) => self.pwait2 = false,
                _ => return Err(e),
            }
        }
        let mut pfd = libc::pollfd { fd: epoll, events: libc::POLLIN, revents: 0 };
        let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
        // SAFETY: one live pollfd and a live timespec for the call; a null signal mask
        // keeps the thread's mask.
        check(unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) })?;
        if pfd.revents == 0 {
            return Ok(0);
        }
        // SAFETY: as for epoll_pwait2 above; a zero timeout never blocks.
        let n = check(unsafe { libc::epoll_wait(epoll, events, max, 0) })?;
        Ok(n as usize)
    }

    /// Uses the fallback wait from now on (tests of it on a kernel that has
    /// `epoll_pwait2`).
    #[cfg(test)]
    pub(crate) fn without_pwait2(mut self) -> EpollSet {
        self.pwait2 = false;
        self
    }
}

impl WaitSet for EpollSet {
    fn new(chan: &imp::Channel) -> io::Result<EpollSet> {
        // SAFETY: epoll_create1 takes an integer flag and returns a new descriptor or -1.
        let fd = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: a fresh descriptor that nothing else owns, wrapped once.
        let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut set = EpollSet {
            epoll,
            hosts: Vec::new(),
            by_fd: Vec::new(),
            ready: Vec::new(),
            ready_list: Vec::new(),
            events: Vec::new(),
            pwait2: true,
            timers: Vec::new(),
        };
        set.ctl(libc::EPOLL_CTL_ADD, chan.read_fd(), WAKE)?;
        set.events.resize(1, libc::epoll_event { events: 0, u64: 0 });
        Ok(set)
    }

    /// See `Poller::watch`. Every socket is watched afterwards (none muted). Lets go
    /// of the sockets that are not in `sockets` (the module docs say why that must
    /// come before they close).
    fn watch<'a>(&mut self, sockets: impl Iterator<Item = Option<&'a UdpSocket>>) {
        let old = std::mem::take(&mut self.hosts);
        for slot in &mut self.by_fd {
            *slot = u32::MAX;
        }
        for (i, socket) in sockets.enumerate() {
            let entry = socket.map(|s| {
                let fd = s.as_raw_fd();
                let idx = fd as usize;
                if self.by_fd.len() <= idx {
                    self.by_fd.resize(idx + 1, u32::MAX);
                }
                self.by_fd[idx] = i as u32;
                Entry { fd, registered: false }
            });
            self.hosts.push(entry);
        }
        // The sockets of both sets are open now (the service closes a leaver's only
        // after this), so a number in both is the same socket: it keeps its
        // registration. The leavers' go.
        for mut entry in old.into_iter().flatten() {
            let stays = self.by_fd.get(entry.fd as usize).is_some_and(|&i| i != u32::MAX);
            if stays {
                let i = self.by_fd[entry.fd as usize] as usize;
                if let Some(e) = self.hosts[i].as_mut() {
                    e.registered = entry.registered;
                }
            } else {
                self.register(&mut entry, false);
            }
        }
        for i in 0..self.hosts.len() {
            if let Some(mut entry) = self.hosts[i] {
                self.register(&mut entry, true);
                self.hosts[i] = Some(entry);
            }
        }
        self.ready.clear();
        self.ready.resize(self.hosts.len(), false);
        self.ready_list.clear();
        self.events.resize(self.hosts.len() + 1, libc::epoll_event { events: 0, u64: 0 });
    }

    /// Waits; returns whether the wake channel was ready.
    fn wait(&mut self, timeout: Duration) -> io::Result<bool> {
        for i in self.ready_list.drain(..) {
            self.ready[i] = false;
        }
        let n = match self.collect(timeout) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            Err(e) => return Err(e),
        };
        let mut woken = false;
        for event in &self.events[..n] {
            let data = event.u64;
            if data == WAKE {
                woken = true;
                continue;
            }
            let host = self.by_fd.get(data as usize).copied().unwrap_or(u32::MAX);
            if let Some(flag) = self.ready.get_mut(host as usize) {
                *flag = true;
                self.ready_list.push(host as usize);
            }
        }
        Ok(woken)
    }

    fn mute(&mut self, i: usize, muted: bool) {
        if let Some(Some(mut entry)) = self.hosts.get(i).copied() {
            self.register(&mut entry, !muted);
            self.hosts[i] = Some(entry);
            if muted {
                // As poll's muted descriptor: never reported readable.
                if let Some(flag) = self.ready.get_mut(i) {
                    *flag = false;
                }
            }
        }
    }

    fn readable(&self, i: usize) -> bool {
        self.ready.get(i).copied().unwrap_or(false)
    }
    /// Sets the hosts' stall timers, in the order of the last [`watch`](WaitSet::watch)
    /// (`timers[i]` wakes host `i`, as its socket does); call it after every `watch`,
    /// which forgets them. The last set's timers must still be open (the service closes
    /// a leaver's only after this), as its sockets must.
    fn watch_timers(&mut self, timers: impl Iterator<Item = Option<RawFd>>) {
        for fd in std::mem::take(&mut self.timers) {
            let _ = self.ctl(libc::EPOLL_CTL_DEL, fd, fd as u64);
        }
        for (i, fd) in timers.enumerate() {
            let Some(fd) = fd else { continue };
            let idx = fd as usize;
            if self.by_fd.len() <= idx {
                self.by_fd.resize(idx + 1, u32::MAX);
            }
            self.by_fd[idx] = i as u32;
            // A timer the set refuses leaves its host to the thread's longest wait
            // (`STALL_BACKSTOP_US`): the check comes late, it is not lost.
            if self.ctl(libc::EPOLL_CTL_ADD, fd, fd as u64).is_ok() {
                self.timers.push(fd);
            }
        }
        self.events.resize(self.hosts.len() + self.timers.len() + 1, libc::epoll_event { events: 0, u64: 0 });
    }
}
