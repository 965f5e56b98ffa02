//! Waking the network thread from the engine thread.
//!
//! The thread sleeps in one blocking call until the socket is readable, the engine
//! wakes it, or its next deadline (endpoint timer, simulator delivery) arrives. A
//! message the engine flushes must reach the wire without waiting for that deadline.
//!
//! * unix: a self-pipe. The thread `poll()`s [socket, pipe read end] (`ppoll` on Linux
//!   for microsecond timeouts); [`Waker::wake`] writes one byte to the non-blocking write
//!   end. A full pipe (EAGAIN) means a wake is already pending, so it is ignored.
//!
//!   Both ends of the pipe belong to one object that the [`Waker`] and the [`Waiter`]
//!   share through an `Arc`, and are closed only when the last of them is dropped. So
//!   the read end is open whenever a write can happen: the network thread exiting
//!   (normally, or after a panic) drops its `Waiter` but cannot close the read end under
//!   a `Waker` the engine still holds. A write to a pipe without readers fails with
//!   EPIPE *and raises SIGPIPE*, whose default action kills the process; Rust programs
//!   ignore SIGPIPE, but C, C++ and C# hosts of this library usually do not. Keeping
//!   the read end alive makes that impossible by construction rather than by signal
//!   handling, which a library must not change for its host process.
//! * Windows: `WSAPoll` on [socket, wake socket]. The wake channel is a UDP socket on
//!   the loopback interface, connected to itself (so it accepts datagrams from itself
//!   only); [`Waker::wake`] sends it one byte without blocking, and a full buffer
//!   (WSAEWOULDBLOCK) means a wake is already pending. Chosen over `WSAEventSelect` +
//!   `WaitForMultipleObjects` because it is the same shape as the unix code (one poll
//!   over two sockets, the same timeout rounding and draining), needs no event handles
//!   whose lifetime must be tied to the sockets, and leaves the data socket in its
//!   ordinary mode (`WSAEventSelect` forces it non-blocking and keeps event
//!   associations that outlive the wait).
//! * elsewhere: no wake primitive. The thread never sleeps longer than
//!   [`FALLBACK_SLICE`] (1 ms) between socket polls, so a flush reaches the wire within
//!   about that slice.

use std::io;
use std::time::Duration;

/// On targets without a wake primitive, the longest single sleep of the network thread.
#[cfg_attr(any(unix, windows), allow(dead_code))]
pub(crate) const FALLBACK_SLICE: Duration = Duration::from_millis(1);

#[cfg(unix)]
mod imp {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::sync::Arc;
    use std::time::Duration;

    /// Both ends of the self-pipe, closed together when the last [`Waker`] or [`Waiter`]
    /// holding them is dropped (see the module docs: this is what rules out SIGPIPE).
    #[derive(Debug)]
    struct Pipe {
        read: OwnedFd,
        write: OwnedFd,
    }

    /// The engine side: cheap to clone through an `Arc`, safe to call from any thread.
    #[derive(Debug)]
    pub(crate) struct Waker {
        pipe: Arc<Pipe>,
    }

    /// The network-thread side: waits on the socket and the pipe.
    #[derive(Debug)]
    pub(crate) struct Waiter {
        pipe: Arc<Pipe>,
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

    pub(crate) fn pair() -> io::Result<(Waker, Waiter)> {
        let mut fds: [RawFd; 2] = [-1; 2];
        // SAFETY: `fds` is a valid array of two ints that pipe() fills on success.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: on success pipe() returned two fresh descriptors that nothing else owns;
        // each is wrapped exactly once, so each is closed exactly once.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        set_nonblocking_cloexec(read.as_raw_fd())?;
        set_nonblocking_cloexec(write.as_raw_fd())?;
        let pipe = Arc::new(Pipe { read, write });
        Ok((Waker { pipe: pipe.clone() }, Waiter { pipe }))
    }

    impl Waker {
        /// Makes the waiter's current or next `wait` return promptly. Never blocks.
        pub(crate) fn wake(&self) {
            let b = 1u8;
            // SAFETY: writes at most 1 byte from a live local to the pipe's write end,
            // which `self.pipe` keeps open. The read end is open too (the same `Pipe`
            // owns it), so the write cannot fail with EPIPE or raise SIGPIPE.
            // Errors are ignored on purpose: EAGAIN means the pipe already holds wake
            // bytes (the thread will wake, or has exited and needs no wake), and other
            // errors cannot be acted upon here.
            let _ = unsafe { libc::write(self.pipe.write.as_raw_fd(), (&b as *const u8).cast(), 1) };
        }
    }

    impl Waiter {
        /// Blocks until `socket` is readable, a wake arrives, or `timeout` passes.
        /// Consumes pending wake bytes. EINTR counts as a (spurious) wake.
        pub(crate) fn wait(&self, socket: &std::net::UdpSocket, timeout: Duration) -> io::Result<()> {
            let mut fds = [
                libc::pollfd { fd: socket.as_raw_fd(), events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: self.pipe.read.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            ];
            let r = poll(&mut fds, timeout);
            if r < 0 {
                let e = io::Error::last_os_error();
                return if e.kind() == io::ErrorKind::Interrupted { Ok(()) } else { Err(e) };
            }
            if fds[1].revents != 0 {
                self.drain();
            }
            Ok(())
        }

        fn drain(&self) {
            let mut buf = [0u8; 64];
            loop {
                // SAFETY: reads at most buf.len() bytes into a live local buffer from an
                // fd we own; the fd is non-blocking, so this ends at EAGAIN.
                let n = unsafe { libc::read(self.pipe.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                if n < buf.len() as isize {
                    break;
                }
            }
        }
    }

    #[cfg(target_os = "linux")]
    fn poll(fds: &mut [libc::pollfd; 2], timeout: Duration) -> libc::c_int {
        // Cap far below time_t overflow; callers cap at milliseconds anyway.
        let timeout = timeout.min(Duration::from_secs(3600));
        let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
        // SAFETY: `fds` is a valid array of 2 pollfd and `ts` a valid timespec, both live
        // for the call; a null sigmask keeps the thread's mask.
        unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) }
    }

    #[cfg(not(target_os = "linux"))]
    fn poll(fds: &mut [libc::pollfd; 2], timeout: Duration) -> libc::c_int {
        // Round up so a sub-millisecond deadline does not turn into a busy loop.
        let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: `fds` is a valid array of 2 pollfd, live for the call.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) }
    }
}

#[cfg(windows)]
mod imp {
    use std::io;
    use std::net::{Ipv4Addr, UdpSocket};
    use std::os::windows::io::AsRawSocket;
    use std::sync::Arc;
    use std::time::Duration;

    use windows_sys::Win32::Networking::WinSock::{POLLRDNORM, SOCKET, SOCKET_ERROR, WSAPOLLFD, WSAPoll};

    /// The engine side: sends one byte to the wake socket. Safe to call from any thread.
    #[derive(Debug)]
    pub(crate) struct Waker {
        wake: Arc<UdpSocket>,
    }

    /// The network-thread side: waits on the data socket and the wake socket.
    #[derive(Debug)]
    pub(crate) struct Waiter {
        wake: Arc<UdpSocket>,
    }

    pub(crate) fn pair() -> io::Result<(Waker, Waiter)> {
        let wake = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        // Connected to itself: datagrams from any other source are dropped by the stack,
        // so another process on this machine cannot keep the thread awake.
        wake.connect(wake.local_addr()?)?;
        wake.set_nonblocking(true)?;
        let wake = Arc::new(wake);
        Ok((Waker { wake: wake.clone() }, Waiter { wake }))
    }

    impl Waker {
        /// Makes the waiter's current or next `wait` return promptly. Never blocks.
        pub(crate) fn wake(&self) {
            // WouldBlock means wake bytes are already queued; other errors cannot be
            // acted upon here. The socket outlives every waiter, so there is no
            // SIGPIPE-like hazard on this platform.
            let _ = self.wake.send(&[1]);
        }
    }

    impl Waiter {
        /// Blocks until `socket` is readable, a wake arrives, or `timeout` passes.
        /// Consumes pending wake bytes.
        pub(crate) fn wait(&self, socket: &UdpSocket, timeout: Duration) -> io::Result<()> {
            let mut fds = [
                WSAPOLLFD { fd: socket.as_raw_socket() as SOCKET, events: POLLRDNORM, revents: 0 },
                WSAPOLLFD { fd: self.wake.as_raw_socket() as SOCKET, events: POLLRDNORM, revents: 0 },
            ];
            // Round up so a sub-millisecond deadline does not turn into a busy loop.
            let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
            // SAFETY: `fds` is a valid array of 2 WSAPOLLFD, live for the call; both
            // sockets are open (borrowed for the call / owned by `self`).
            let r = unsafe { WSAPoll(fds.as_mut_ptr(), 2, ms) };
            if r == SOCKET_ERROR {
                return Err(io::Error::last_os_error());
            }
            if fds[1].revents != 0 {
                let mut buf = [0u8; 64];
                while self.wake.recv(&mut buf).is_ok() {}
            }
            Ok(())
        }
    }
}

#[cfg(not(any(unix, windows)))]
mod imp {
    use std::io;
    use std::time::Duration;

    /// No wake primitive off unix: the waiter sleeps in short slices instead.
    #[derive(Debug)]
    pub(crate) struct Waker;

    /// See the module docs: sleeps at most [`super::FALLBACK_SLICE`].
    #[derive(Debug)]
    pub(crate) struct Waiter;

    pub(crate) fn pair() -> io::Result<(Waker, Waiter)> {
        Ok((Waker, Waiter))
    }

    impl Waker {
        pub(crate) fn wake(&self) {}
    }

    impl Waiter {
        pub(crate) fn wait(&self, _socket: &std::net::UdpSocket, timeout: Duration) -> io::Result<()> {
            std::thread::sleep(timeout.min(super::FALLBACK_SLICE));
            Ok(())
        }
    }
}

pub(crate) use imp::{Waiter, Waker};

/// Creates a connected waker / waiter pair.
pub(crate) fn pair() -> io::Result<(Waker, Waiter)> {
    imp::pair()
}

#[cfg(all(test, any(unix, windows)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn wake_interrupts_a_long_wait() {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let (waker, waiter) = pair().unwrap();
        let waker = Arc::new(waker);
        let w2 = waker.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            w2.wake();
        });
        let start = Instant::now();
        waiter.wait(&sock, Duration::from_secs(30)).unwrap();
        // Without the wake this would take 30 s; the margin is huge on purpose.
        assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
        t.join().unwrap();
    }

    #[test]
    fn many_wakes_never_block_and_are_drained() {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let (waker, waiter) = pair().unwrap();
        // Far more than a pipe holds: the writes past capacity must return (EAGAIN).
        for _ in 0..200_000 {
            waker.wake();
        }
        waiter.wait(&sock, Duration::from_secs(30)).unwrap();
        // After draining, a short wait times out rather than returning at once forever.
        let start = Instant::now();
        waiter.wait(&sock, Duration::from_millis(30)).unwrap();
        assert!(start.elapsed() >= Duration::from_millis(20), "{:?}", start.elapsed());
    }

    /// A wake after the waiter (the network thread's side) has been dropped is
    /// harmless, even with SIGPIPE at its default action, as in a C program: the write
    /// end must never face a closed read end. Runs in a child process so that the old
    /// behaviour (death by SIGPIPE) is a failed assertion rather than a dead test binary.
    #[cfg(unix)]
    #[test]
    fn wake_after_the_waiter_is_dropped_cannot_raise_sigpipe() {
        crate::tests::run_in_child("waker::tests::child_wake_after_waiter_dropped");
    }

    #[cfg(unix)]
    #[test]
    #[ignore = "runs in a child process started by wake_after_the_waiter_is_dropped_cannot_raise_sigpipe"]
    fn child_wake_after_waiter_dropped() {
        crate::tests::child_with_default_sigpipe();
        let (waker, waiter) = pair().unwrap();
        drop(waiter);
        // From another thread too, as the engine does after the network thread exits.
        let waker = Arc::new(waker);
        let w2 = waker.clone();
        std::thread::spawn(move || w2.wake()).join().unwrap();
        // More than the pipe holds: the writes past capacity must return (EAGAIN).
        for _ in 0..100_000 {
            waker.wake();
        }
    }

    #[test]
    fn readable_socket_ends_the_wait() {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let (_waker, waiter) = pair().unwrap();
        let other = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        other.send_to(b"x", sock.local_addr().unwrap()).unwrap();
        let start = Instant::now();
        waiter.wait(&sock, Duration::from_secs(30)).unwrap();
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
