//! Waking the service thread (`service.rs`) from engine threads, and its wait.
//!
//! The service thread sleeps in one blocking call until a host's socket is readable,
//! an engine wakes it, or the earliest host's deadline arrives. A message an engine
//! flushes through the thread must reach the wire without waiting for that deadline.
//!
//! One wake channel serves the whole service: each host's [`Waker`] sets the host's own
//! flag, then signals the channel, and the thread runs a turn for every host whose
//! flag it finds set. The thread drains the channel *before* it reads the flags, so a
//! wake is never lost: a flag set after the read is followed by a signal after the
//! drain, which ends the next wait.
//!
//! * unix: a self-pipe. The thread waits on [pipe read end, every host's socket]: with
//!   epoll on Linux (`waker/epoll_set.rs`: a wake costs what is ready, not every
//!   host's socket), with `poll()` elsewhere (`waker/poll_set.rs`); a wake writes one
//!   byte to the non-blocking write end. A full pipe (EAGAIN) means a wake is already
//!   pending.
//!
//!   Both ends of the pipe belong to one object that every [`Waker`] and the
//!   [`Poller`] share through an `Arc`, and are closed only when the last of them is
//!   dropped. So the read end is open whenever a write can happen: the service thread
//!   exiting (normally, or after a panic) drops its `Poller` but cannot close the read
//!   end under a `Waker` an engine still holds. A write to a pipe without readers fails
//!   with EPIPE *and raises SIGPIPE*, whose default action kills the process; Rust
//!   programs ignore SIGPIPE, but C, C++ and C# hosts of this library usually do not.
//!   Keeping the read end alive makes that impossible by construction rather than by
//!   signal handling, which a library must not change for its host process.
//! * Windows: `WSAPoll` on [wake socket, every host's socket]. The wake channel is a
//!   UDP socket on the loopback interface, connected to itself (so it accepts datagrams
//!   from itself only); a wake sends it one byte without blocking, and a full buffer
//!   (WSAEWOULDBLOCK) means a wake is already pending. Chosen over `WSAEventSelect` +
//!   `WaitForMultipleObjects` because it is the same shape as the unix code (one poll
//!   over sockets, the same timeout rounding and draining), needs no event handles
//!   whose lifetime must be tied to the sockets, is not limited to 64 handles, and
//!   leaves the data sockets in their ordinary mode.
//! * elsewhere: no wake primitive. The thread never sleeps longer than
//!   [`FALLBACK_SLICE`] (1 ms) and treats every socket as readable, so a flush reaches
//!   the wire within about that slice.
//!
//! The wait set changes only when hosts come or go (and, on Linux, when a socket is
//! muted or watched again): a wait allocates nothing.

use std::io;
use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// On targets without a wake primitive, the longest single sleep of the service thread.
#[cfg_attr(any(unix, windows), allow(dead_code))]
pub(crate) const FALLBACK_SLICE: Duration = Duration::from_millis(1);

/// The service thread's wake channel (see the module docs), shared by every waker.
#[derive(Debug, Clone)]
pub(crate) struct WakeChannel {
    chan: Arc<imp::Channel>,
}

impl WakeChannel {
    pub(crate) fn new() -> io::Result<WakeChannel> {
        Ok(WakeChannel { chan: Arc::new(imp::Channel::new()?) })
    }

    /// Signals the channel: the thread's current or next wait returns promptly.
    pub(crate) fn signal(&self) {
        self.chan.signal();
    }

    /// A waker for one host, and the flag the thread reads to know it was that host.
    pub(crate) fn waker(&self) -> (Waker, Arc<AtomicBool>) {
        let flag = Arc::new(AtomicBool::new(false));
        (Waker { flag: flag.clone(), chan: self.clone() }, flag)
    }
}

/// One host's way to wake the service thread for a turn of that host. Never blocks;
/// safe to call from any thread.
#[derive(Debug)]
pub(crate) struct Waker {
    flag: Arc<AtomicBool>,
    chan: WakeChannel,
}

impl Waker {
    /// Makes the service thread run a turn of this waker's host promptly.
    pub(crate) fn wake(&self) {
        // The flag before the signal: the thread drains the channel before reading
        // flags (see the module docs).
        self.flag.store(true, Ordering::Release);
        self.chan.signal();
    }
}

/// A wait set: the wake channel and the watched hosts' sockets (see [`Poller`], whose
/// methods these are).
pub(crate) trait WaitSet: Sized {
    fn new(chan: &imp::Channel) -> io::Result<Self>;
    fn watch<'a>(&mut self, sockets: impl Iterator<Item = Option<&'a UdpSocket>>);
    /// Returns whether the wake channel was ready.
    fn wait(&mut self, timeout: Duration) -> io::Result<bool>;
    fn mute(&mut self, i: usize, muted: bool);
    fn readable(&self, i: usize) -> bool;
    /// See `Poller::watch_timers`; a set without timers ignores them (none is made
    /// where the platform's set cannot wait on one).
    #[cfg(target_os = "linux")]
    fn watch_timers(&mut self, timers: impl Iterator<Item = Option<std::os::fd::RawFd>>) {
        debug_assert!(timers.flatten().next().is_none(), "a wait set without timers was given one");
    }
}

/// The wait set of this platform: epoll on Linux, `poll` or `WSAPoll` elsewhere.
#[cfg(target_os = "linux")]
pub(crate) type PlatformSet = epoll_set::EpollSet;
#[cfg(not(target_os = "linux"))]
pub(crate) type PlatformSet = poll_set::PollSet;

/// The service thread's side: waits on the wake channel and the hosts' sockets.
pub(crate) struct Poller<S = PlatformSet> {
    chan: WakeChannel,
    set: S,
}

impl<S: WaitSet> Poller<S> {
    /// Fails only when the system refuses the wait set's resources (Linux: an epoll
    /// descriptor), before any host relies on it.
    pub(crate) fn new(chan: WakeChannel) -> io::Result<Poller<S>> {
        let set = S::new(&chan.chan)?;
        Ok(Poller { chan, set })
    }

    /// Sets the sockets the next waits watch, in order (socket `i` is
    /// [`readable`](Self::readable)`(i)`); `None` stands for a host without a socket,
    /// never readable. Every socket is watched afterwards (none muted). A socket of the
    /// previous set must stay open until the set that leaves it out is given (epoll
    /// would otherwise keep reporting it). Allocates only when the set outgrows its
    /// room.
    pub(crate) fn watch<'a>(&mut self, sockets: impl Iterator<Item = Option<&'a UdpSocket>>) {
        self.set.watch(sockets);
    }

    /// Sets the hosts' stall timers (`stall_timer.rs`), in the order of the last
    /// [`watch`](Self::watch), which forgets them: call it after every `watch`. A
    /// timer's expiry makes its host [`readable`](Self::readable); timers are never
    /// muted.
    #[cfg(target_os = "linux")]
    pub(crate) fn watch_timers(&mut self, timers: impl Iterator<Item = Option<std::os::fd::RawFd>>) {
        self.set.watch_timers(timers);
    }

    /// Blocks until a watched socket is readable, the channel is signalled, or
    /// `timeout` passes. Drains the channel. EINTR counts as a (spurious) wake.
    /// Returns whether the channel was signalled: if not, no host's flag was set
    /// before the wait (a flag is set before its signal), and one set since has its
    /// signal still pending for the next wait. (Always true where there is no wake
    /// primitive.)
    pub(crate) fn wait(&mut self, timeout: Duration) -> io::Result<bool> {
        let signalled = self.set.wait(timeout)?;
        if signalled {
            self.chan.chan.drain();
        }
        Ok(signalled)
    }

    /// Leaves socket `i` (of the last [`watch`](Self::watch)) out of the waits from now
    /// on (`true`), or watches it again. A muted socket is never reported readable.
    pub(crate) fn mute(&mut self, i: usize, muted: bool) {
        self.set.mute(i, muted);
    }

    /// Whether watched socket `i` was readable (or in error) at the last wait; false
    /// for an index the last [`watch`](Self::watch) did not cover.
    pub(crate) fn readable(&self, i: usize) -> bool {
        self.set.readable(i)
    }
}

#[cfg(target_os = "linux")]
mod epoll_set;
#[cfg(any(not(target_os = "linux"), test))]
mod poll_set;

#[cfg(unix)]
mod imp {
    // On Linux the poll functions serve only `poll_set.rs`'s tests: the wait is epoll's.
    #![cfg_attr(all(target_os = "linux", not(test)), allow(dead_code))]
    use std::io;
    use std::net::UdpSocket;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::time::Duration;

    pub(super) type PollFd = libc::pollfd;

    /// Both ends of the self-pipe, closed together when the last holder is dropped (see
    /// the module docs: this is what rules out SIGPIPE).
    #[derive(Debug)]
    pub(crate) struct Channel {
        read: OwnedFd,
        write: OwnedFd,
    }

    fn set_nonblocking_cloexec(fd: RawFd) -> io::Result<()> {
        // SAFETY: fcntl on an fd we own, with integer arguments only; no memory is passed.
        unsafe {
            let fl = libc::fcntl(fd, libc::F_GETFL);
            if fl < 0 || libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) < 0 {
                return Err(io::Error::last_os_error());
            }
            let fd_fl = libc::fcntl(fd, libc::F_GETFD);
            if fd_fl < 0 || libc::fcntl(fd, libc::F_SETFD, fd_fl | libc::FD_CLOEXEC) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    impl Channel {
        pub(super) fn new() -> io::Result<Channel> {
            let mut fds: [RawFd; 2] = [-1; 2];
            // SAFETY: `fds` is a valid array of two ints that pipe() fills on success.
            if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: on success pipe() returned two fresh descriptors that nothing else
            // owns; each is wrapped exactly once, so each is closed exactly once.
            let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            set_nonblocking_cloexec(read.as_raw_fd())?;
            set_nonblocking_cloexec(write.as_raw_fd())?;
            Ok(Channel { read, write })
        }

        pub(super) fn signal(&self) {
            let b = 1u8;
            // SAFETY: writes at most 1 byte from a live local to the pipe's write end,
            // which `self` keeps open. The read end is open too (`self` owns it), so the
            // write cannot fail with EPIPE or raise SIGPIPE. Errors are ignored on
            // purpose: EAGAIN means the pipe already holds wake bytes (the thread will
            // wake, or has exited and needs no wake), and other errors cannot be acted
            // upon here.
            let _ = unsafe { libc::write(self.write.as_raw_fd(), (&b as *const u8).cast(), 1) };
        }

        pub(super) fn drain(&self) {
            let mut buf = [0u8; 64];
            loop {
                // SAFETY: reads at most buf.len() bytes into a live local buffer from an
                // fd we own; the fd is non-blocking, so this ends at EAGAIN.
                let n = unsafe { libc::read(self.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                if n < buf.len() as isize {
                    break;
                }
            }
        }

        pub(super) fn poll_fd(&self) -> PollFd {
            libc::pollfd { fd: self.read.as_raw_fd(), events: libc::POLLIN, revents: 0 }
        }

        /// The read end, to wait on (it stays open as long as `self`).
        pub(super) fn read_fd(&self) -> RawFd {
            self.read.as_raw_fd()
        }
    }

    pub(super) fn socket_poll_fd(socket: &UdpSocket) -> PollFd {
        libc::pollfd { fd: socket.as_raw_fd(), events: libc::POLLIN, revents: 0 }
    }

    pub(super) fn clear(fd: &mut PollFd) {
        fd.revents = 0;
    }

    /// A negative descriptor is skipped by poll, its `revents` left 0 (POSIX); the
    /// descriptor is kept as its complement to be restored.
    pub(super) fn mute(fd: &mut PollFd, muted: bool) {
        if (fd.fd < 0) != muted {
            fd.fd = !fd.fd;
        }
    }

    pub(super) fn ready(fd: &PollFd) -> bool {
        fd.revents != 0
    }

    pub(super) fn poll(fds: &mut [PollFd], timeout: Duration) -> io::Result<()> {
        let r = poll_raw(fds, timeout);
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(()) } else { Err(e) };
        }
        Ok(())
    }

    #[cfg(target_os = "linux")]
    fn poll_raw(fds: &mut [PollFd], timeout: Duration) -> libc::c_int {
        // Cap far below time_t overflow; callers cap at seconds anyway.
        let timeout = timeout.min(Duration::from_secs(3600));
        let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
        // SAFETY: `fds` is a valid slice of pollfd and `ts` a valid timespec, both live
        // for the call; the count is the slice's length; a null sigmask keeps the
        // thread's mask.
        unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) }
    }

    #[cfg(not(target_os = "linux"))]
    fn poll_raw(fds: &mut [PollFd], timeout: Duration) -> libc::c_int {
        // Round up so a sub-millisecond deadline does not turn into a busy loop.
        let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: `fds` is a valid slice of pollfd, live for the call; the count is its
        // length.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) }
    }
}

#[cfg(windows)]
mod imp {
    use std::io;
    use std::net::{Ipv4Addr, UdpSocket};
    use std::os::windows::io::AsRawSocket;
    use std::time::Duration;

    use windows_sys::Win32::Networking::WinSock::{POLLRDNORM, SOCKET, SOCKET_ERROR, WSAPOLLFD, WSAPoll};

    pub(super) type PollFd = WSAPOLLFD;

    /// The wake socket (see the module docs).
    #[derive(Debug)]
    pub(crate) struct Channel {
        wake: UdpSocket,
    }

    impl Channel {
        pub(super) fn new() -> io::Result<Channel> {
            let wake = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
            // Connected to itself: datagrams from any other source are dropped by the
            // stack, so another process on this machine cannot keep the thread awake.
            wake.connect(wake.local_addr()?)?;
            wake.set_nonblocking(true)?;
            Ok(Channel { wake })
        }

        pub(super) fn signal(&self) {
            // WouldBlock means wake bytes are already queued; other errors cannot be
            // acted upon here. There is no SIGPIPE-like hazard on this platform.
            let _ = self.wake.send(&[1]);
        }

        pub(super) fn drain(&self) {
            let mut buf = [0u8; 64];
            while self.wake.recv(&mut buf).is_ok() {}
        }

        pub(super) fn poll_fd(&self) -> PollFd {
            socket_poll_fd(&self.wake)
        }
    }

    pub(super) fn socket_poll_fd(socket: &UdpSocket) -> PollFd {
        WSAPOLLFD { fd: socket.as_raw_socket() as SOCKET, events: POLLRDNORM, revents: 0 }
    }

    pub(super) fn clear(fd: &mut PollFd) {
        fd.revents = 0;
    }

    /// Receive moderation is off where kernel receive timestamps are missing (see
    /// `thread.rs`), so nothing mutes a socket here; should something, the socket
    /// simply stays watched (a wake per datagram, as without moderation).
    pub(super) fn mute(_fd: &mut PollFd, _muted: bool) {}

    pub(super) fn ready(fd: &PollFd) -> bool {
        fd.revents != 0
    }

    pub(super) fn poll(fds: &mut [PollFd], timeout: Duration) -> io::Result<()> {
        // Round up so a sub-millisecond deadline does not turn into a busy loop.
        let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: `fds` is a valid slice of WSAPOLLFD, live for the call, and the count
        // is its length; every socket in it is open (the wake socket is owned by the
        // poller's channel, the hosts' sockets by the service's slots, which outlive
        // the set they are in).
        let r = unsafe { WSAPoll(fds.as_mut_ptr(), fds.len() as u32, ms) };
        if r == SOCKET_ERROR {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(not(any(unix, windows)))]
mod imp {
    use std::io;
    use std::net::UdpSocket;
    use std::time::Duration;

    /// No wake primitive: every socket counts as readable, and a wait is a short sleep.
    pub(super) type PollFd = ();

    #[derive(Debug)]
    pub(crate) struct Channel;

    impl Channel {
        pub(super) fn new() -> io::Result<Channel> {
            Ok(Channel)
        }
        pub(super) fn signal(&self) {}
        pub(super) fn drain(&self) {}
        pub(super) fn poll_fd(&self) -> PollFd {}
    }

    pub(super) fn socket_poll_fd(_socket: &UdpSocket) -> PollFd {}
    pub(super) fn clear(_fd: &mut PollFd) {}
    pub(super) fn mute(_fd: &mut PollFd, _muted: bool) {}
    pub(super) fn ready(_fd: &PollFd) -> bool {
        true
    }
    pub(super) fn poll(_fds: &mut [PollFd], timeout: Duration) -> io::Result<()> {
        std::thread::sleep(timeout.min(super::FALLBACK_SLICE));
        Ok(())
    }
}

#[cfg(all(test, any(unix, windows)))]
#[path = "waker/tests.rs"]
mod tests;
