//! The steady engine's stall check as a timer the engine pushes forward (Linux).
//!
//! An engine whose frames come steadily reads the socket itself, and the network
//! thread only checks, a few frames after each read, that the frames still come
//! (`engine_polls.rs`). As a deadline of the thread's own wait, that check was a wake
//! every fourth frame whether or not the engine had stalled: on a 64-client server at
//! 60 Hz, 15 wakes a second of about 80 µs each on the 2-core VM (the switch in and out
//! of the vCPU, then the turn's look at every connection's timers), some 40 µs a server
//! tick and most of the "other threads" row of the transport benchmark
//! (docs/benchmarks.md, issue 35).
//!
//! Here the check is a `timerfd` in the thread's wait set. The thread arms it for the
//! stall check when it leaves the socket to the engine, and the engine's polls push it
//! later as their frames come, so it expires only for an engine that stopped: then it
//! is readable, the thread's turn runs and takes the socket back, as the deadline did.
//! Pushing costs the engine one `timerfd_settime` a frame (about a microsecond), not
//! a wake of another thread. Re-arming (or disarming) also clears an
//! expiry, so a turn that arms or disarms it leaves nothing readable behind.
//!
//! Only hosts that accept many clients have one: a process of many small hosts (a load
//! generator's clients) shares its stall checks' wakes on a grid instead
//! (`STALL_CHECK_GRID_US`), where one timer each would cost every host a system call
//! every frame. Elsewhere than Linux there is no timer and the deadline remains.

#[cfg(target_os = "linux")]
pub(crate) use linux::{StallTimer, TimerHandle};
#[cfg(not(target_os = "linux"))]
pub(crate) use other::{StallTimer, TimerHandle};

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};

    use tickwire_proto::Micros;

    /// The service thread's handle of a timer: a duplicate of its descriptor, which it
    /// waits on and closes only after its wait set has let go of it.
    pub(crate) type TimerHandle = OwnedFd;

    /// A one-shot monotonic timer whose expiry makes its descriptor readable.
    #[derive(Debug)]
    pub(crate) struct StallTimer {
        fd: OwnedFd,
    }

    impl StallTimer {
        /// A disarmed timer; fails only when the system refuses the descriptor.
        pub(crate) fn new() -> io::Result<StallTimer> {
            // SAFETY: timerfd_create takes a clock id and flags and returns a new
            // descriptor or -1.
            let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a fresh descriptor that nothing else owns, wrapped once.
            Ok(StallTimer { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
        }

        /// A handle for the service thread's wait set (the same timer).
        pub(crate) fn handle(&self) -> io::Result<TimerHandle> {
            self.fd.as_fd().try_clone_to_owned()
        }

        /// Arms it to expire `after_us` from now (at least a microsecond: zero would
        /// disarm it), replacing any earlier expiry and clearing one that has passed.
        /// False if the system refused, which leaves the timer as it was.
        pub(crate) fn fire_in(&self, after_us: Micros) -> bool {
            let us = after_us.max(1);
            let it_value = libc::timespec {
                tv_sec: (us / 1_000_000).min(i32::MAX as u64) as libc::time_t,
                tv_nsec: ((us % 1_000_000) * 1_000) as _,
            };
            self.set(it_value)
        }

        /// Disarms it and clears an expiry that has passed (nothing readable after).
        pub(crate) fn disarm(&self) {
            let _ = self.set(libc::timespec { tv_sec: 0, tv_nsec: 0 });
        }

        fn set(&self, it_value: libc::timespec) -> bool {
            let spec = libc::itimerspec { it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 }, it_value };
            // SAFETY: the descriptor is ours and open; `spec` is a live local the call
            // reads; a null old value is allowed.
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) == 0 }
        }

        /// Time left until it expires (None: disarmed, or expired).
        #[cfg(test)]
        pub(crate) fn remaining(&self) -> Option<std::time::Duration> {
            let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            let mut spec = libc::itimerspec { it_interval: zero, it_value: zero };
            // SAFETY: the descriptor is ours and open; `spec` is a live local the call
            // writes.
            assert_eq!(unsafe { libc::timerfd_gettime(self.fd.as_raw_fd(), &mut spec) }, 0);
            let left = std::time::Duration::new(spec.it_value.tv_sec as u64, spec.it_value.tv_nsec as u32);
            (!left.is_zero()).then_some(left)
        }

        /// Whether it has expired since it was last armed or disarmed (readable).
        #[cfg(test)]
        pub(crate) fn expired(&self) -> bool {
            let mut pfd = libc::pollfd { fd: raw(&self.fd), events: libc::POLLIN, revents: 0 };
            // SAFETY: one live pollfd; a zero timeout never blocks.
            unsafe { libc::poll(&mut pfd, 1, 0) == 1 }
        }
    }

    /// The descriptor number a wait set registers.
    pub(crate) fn raw(handle: &TimerHandle) -> RawFd {
        handle.as_raw_fd()
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use std::time::Duration;

        #[test]
        fn it_expires_once_armed_and_never_while_pushed_forward() {
            let t = StallTimer::new().unwrap();
            assert!(!t.expired() && t.remaining().is_none(), "a new timer is disarmed");
            assert!(t.fire_in(200_000));
            let left = t.remaining().expect("armed");
            assert!(left > Duration::from_millis(150) && left <= Duration::from_millis(200), "{left:?}");
            // Pushed later before it expires, again and again: it never does.
            for _ in 0..5 {
                std::thread::sleep(Duration::from_millis(20));
                assert!(t.fire_in(60_000));
                assert!(!t.expired());
            }
            // Left alone, it expires, and arming or disarming clears that.
            std::thread::sleep(Duration::from_millis(80));
            assert!(t.expired(), "not expired 80 ms after a 60 ms arming");
            assert!(t.fire_in(1_000_000));
            assert!(!t.expired(), "re-armed: the expiry is cleared");
            assert!(t.fire_in(0), "zero is a microsecond, not a disarm");
            std::thread::sleep(Duration::from_millis(5));
            assert!(t.expired());
            t.disarm();
            assert!(!t.expired() && t.remaining().is_none());
        }

        #[test]
        fn a_handle_is_the_same_timer() {
            let t = StallTimer::new().unwrap();
            let h = t.handle().unwrap();
            assert!(t.fire_in(1_000));
            std::thread::sleep(Duration::from_millis(5));
            let mut pfd = libc::pollfd { fd: raw(&h), events: libc::POLLIN, revents: 0 };
            // SAFETY: one live pollfd; a zero timeout never blocks.
            assert_eq!(unsafe { libc::poll(&mut pfd, 1, 0) }, 1, "the handle sees the expiry");
            t.disarm();
            // SAFETY: as above.
            assert_eq!(unsafe { libc::poll(&mut pfd, 1, 0) }, 0, "and its clearing");
        }
    }
}

#[cfg(target_os = "linux")]
pub(crate) use linux::raw;

use tickwire_proto::Micros;

/// How long past its stall check a socket left to the engine stays out of the
/// thread's wait at the longest, should the timer never wake the thread (a wait set
/// that refused it): the thread's own timers (keepalives) come about as often.
pub(crate) const STALL_BACKSTOP_US: Micros = 1_000_000;

/// A host's stall timer and the check it is armed for (the network thread arms and
/// disarms it at its turns; the engine's polls push it later).
#[derive(Debug)]
pub(crate) struct StallCheck {
    timer: StallTimer,
    /// The stall check it is armed for (None: disarmed by us).
    until: Option<Micros>,
    /// The kernel may hold an arming or an expiry: a disarm must reach it.
    armed: bool,
}

impl StallCheck {
    pub(crate) fn new(timer: StallTimer) -> StallCheck {
        StallCheck { timer, until: None, armed: false }
    }

    /// The thread leaves the socket to the engine until `by` (a stall check after
    /// `now`): arms the timer for it. False if the system refused (the thread then
    /// keeps its deadline).
    pub(crate) fn arm(&mut self, now: Micros, by: Micros) -> bool {
        self.armed = true;
        let ok = self.timer.fire_in(by.saturating_sub(now));
        self.until = ok.then_some(by);
        ok
    }

    /// The thread keeps the socket (or watches it again): nothing armed, nothing
    /// readable left behind.
    pub(crate) fn disarm(&mut self) {
        if std::mem::take(&mut self.armed) {
            self.timer.disarm();
        }
        self.until = None;
    }

    /// The engine polled at `now`: pushes an armed timer to the engine's next stall
    /// check (`check`, asked only then), so that it expires at the check and not
    /// before (a system call a frame: the check moves with each frame's first poll, not
    /// with the polls of its burst). A timer the thread did not arm stays as it is (the
    /// socket is the thread's to give).
    pub(crate) fn push(&mut self, now: Micros, check: impl FnOnce() -> Option<Micros>) {
        let Some(until) = self.until else { return };
        let Some(by) = check() else { return };
        if by > until && self.timer.fire_in(by.saturating_sub(now)) {
            self.until = Some(by);
        }
    }

    /// The check it is armed for.
    #[cfg(test)]
    pub(crate) fn until(&self) -> Option<Micros> {
        self.until
    }

    #[cfg(test)]
    pub(crate) fn timer(&self) -> &StallTimer {
        &self.timer
    }
}

#[cfg(not(target_os = "linux"))]
mod other {
    use std::convert::Infallible;
    use std::io;

    use tickwire_proto::Micros;

    /// No timer here: never made, so never waited on.
    pub(crate) type TimerHandle = Infallible;

    #[derive(Debug)]
    pub(crate) struct StallTimer(Infallible);

    impl StallTimer {
        pub(crate) fn new() -> io::Result<StallTimer> {
            Err(io::Error::new(io::ErrorKind::Unsupported, "no stall timer on this platform"))
        }
        pub(crate) fn handle(&self) -> io::Result<TimerHandle> {
            match self.0 {}
        }
        pub(crate) fn fire_in(&self, _after_us: Micros) -> bool {
            match self.0 {}
        }
        pub(crate) fn disarm(&self) {
            match self.0 {}
        }
    }
}
