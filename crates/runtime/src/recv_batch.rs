//! Reading a host's socket a batch of datagrams at a time.
//!
//! On Linux one `recvmmsg` call reads up to [`BATCH`] datagrams, and a call that
//! returns fewer than that found the socket empty, so the usual turn of a host (woken
//! by one datagram) costs one receive call instead of two (the datagram, then the
//! "would block" that says there is no other). Elsewhere each datagram is one
//! `recv_from`, and the socket is empty when one says "would block".
//!
//! On Linux each datagram also comes with its kernel receive timestamp (`SO_TIMESTAMPNS`,
//! turned on by [`enable_timestamps`]), so its age at the read is known
//! ([`RecvBatch::age_us`]) and the arrival time the protocol gets stays true when the
//! read was late (receive moderation, a busy thread). Elsewhere the age is 0: the read
//! is the arrival.
//!
//! Each slot holds [`MAX_DATAGRAM_SIZE`] + [`RELAY_HEADER_SIZE`] + 1 bytes (a datagram
//! from a NAT traversal's relay is the endpoint's largest behind the relay's header):
//! a longer datagram arrives cut to that length, which the endpoint refuses as too
//! large, as it refuses the whole one.
//! Windows instead fails the read of such a datagram (`WSAEMSGSIZE`) and drops it: it
//! is counted ([`RecvBatch::take_oversized`]) and the read goes on, so a stranger's
//! long datagrams never stop a host's reads. No datagram is taken for another, and
//! nothing allocates after creation.

use std::io;
use std::net::{SocketAddr, UdpSocket};

use tickwire_proto::RELAY_HEADER_SIZE;
use tickwire_proto::wire::MAX_DATAGRAM_SIZE;

/// Datagrams one call reads at most.
pub(crate) const BATCH: usize = 16;
/// Bytes kept of a datagram: one more than any datagram a host accepts (the endpoint's
/// largest, relayed).
const SLOT: usize = MAX_DATAGRAM_SIZE + RELAY_HEADER_SIZE + 1;
/// Control-message room per datagram, in 8-byte words (cmsghdr's alignment): one
/// `SCM_TIMESTAMPNS` takes CMSG_SPACE(16) = 32 bytes; twice that leaves room.
#[cfg(target_os = "linux")]
const CONTROL_WORDS: usize = 8;
/// The oldest a timestamp may make a datagram: a kernel timestamp is wall-clock time
/// (`CLOCK_REALTIME`), so a clock step between arrival and read would otherwise move
/// an arrival far off. Datagrams wait far less than this in a socket.
#[cfg(target_os = "linux")]
const MAX_AGE_NS: i64 = 1_000_000_000;

/// Asks the kernel to timestamp each datagram `socket` receives (Linux:
/// `SO_TIMESTAMPNS`). Returns whether the batches will carry receive timestamps:
/// `false` elsewhere, or if the option was refused.
pub(crate) fn enable_timestamps(socket: &UdpSocket) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let on: libc::c_int = 1;
        // SAFETY: the option value is a live c_int of the length given; the fd is open
        // (borrowed from `socket`) for the call.
        let r = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        r == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = socket;
        false
    }
}

/// What one receive call read.
pub(crate) enum Received {
    /// `n` datagrams (`n >= 1`), in [`RecvBatch::datagram`]`(0..n)`; `drained`: the
    /// socket had no more at the time.
    Some { n: usize, drained: bool },
    /// Nothing to read.
    Empty,
}

/// Buffers for one batch, made once.
pub(crate) struct RecvBatch {
    data: Vec<u8>,
    lens: [usize; BATCH],
    from: [Option<SocketAddr>; BATCH],
    /// How long each datagram had waited in the socket when the batch was read, in
    /// microseconds (0: no timestamp).
    ages: [u64; BATCH],
    #[cfg(target_os = "linux")]
    addrs: Vec<socket2::SockAddrStorage>,
    /// Each datagram's control messages (its receive timestamp), CONTROL_WORDS words.
    #[cfg(target_os = "linux")]
    control: Vec<u64>,
    /// An error met after some datagrams of a batch, for the next call.
    #[cfg(not(target_os = "linux"))]
    deferred: Option<io::Error>,
    /// Datagrams the system dropped as longer than a slot, since the last
    /// [`RecvBatch::take_oversized`] (Windows).
    oversized: u64,
}

impl RecvBatch {
    pub(crate) fn new() -> RecvBatch {
        RecvBatch {
            data: vec![0; SLOT * BATCH],
            lens: [0; BATCH],
            from: [None; BATCH],
            ages: [0; BATCH],
            #[cfg(target_os = "linux")]
            addrs: (0..BATCH).map(|_| socket2::SockAddrStorage::zeroed()).collect(),
            #[cfg(target_os = "linux")]
            control: vec![0; CONTROL_WORDS * BATCH],
            #[cfg(not(target_os = "linux"))]
            deferred: None,
            oversized: 0,
        }
    }

    /// How many datagrams the system dropped as longer than any of ours since the last
    /// call (Windows reports each as a failed read; elsewhere they arrive cut and the
    /// endpoint counts them).
    pub(crate) fn take_oversized(&mut self) -> u64 {
        std::mem::take(&mut self.oversized)
    }

    /// Datagram `i` of the last call that returned [`Received::Some`], and its sender
    /// (`None` for an address family other than IPv4 and IPv6, which a UDP socket of
    /// ours never reports).
    pub(crate) fn datagram(&self, i: usize) -> (&[u8], Option<SocketAddr>) {
        (&self.data[i * SLOT..i * SLOT + self.lens[i]], self.from[i])
    }

    /// How long datagram `i` of the last batch had waited in the socket when it was
    /// read, in microseconds, from its kernel receive timestamp; 0 without one.
    pub(crate) fn age_us(&self, i: usize) -> u64 {
        self.ages[i]
    }

    /// Reads what `socket` (non-blocking) holds, up to [`BATCH`] datagrams. An error
    /// other than "would block" is returned as it is.
    #[cfg(target_os = "linux")]
    pub(crate) fn receive(&mut self, socket: &UdpSocket) -> io::Result<Received> {
        use std::os::fd::AsRawFd;
        // The headers point into `self.data` and `self.addrs`; they are built for each
        // call (cheap: a few stores per slot), so nothing keeps pointers across moves.
        let mut iov: [libc::iovec; BATCH] = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; BATCH];
        // SAFETY (of the zeroed value): mmsghdr is plain integers and raw pointers, for
        // which all zeroes (null pointers, zero lengths) is a valid value.
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        let base = self.data.as_mut_ptr();
        for i in 0..BATCH {
            // SAFETY: `i * SLOT + SLOT <= self.data.len()` (BATCH slots of SLOT bytes),
            // so the pointer stays inside the buffer.
            iov[i] = libc::iovec { iov_base: unsafe { base.add(i * SLOT) }.cast(), iov_len: SLOT };
            hdrs[i].msg_hdr.msg_iov = &mut iov[i];
            hdrs[i].msg_hdr.msg_iovlen = 1;
            // (SockAddrStorage is `repr(transparent)` over the platform's
            // sockaddr_storage.)
            hdrs[i].msg_hdr.msg_name = (&mut self.addrs[i] as *mut socket2::SockAddrStorage).cast();
            hdrs[i].msg_hdr.msg_namelen = self.addrs[i].size_of();
            // SAFETY: as above, `i * CONTROL_WORDS + CONTROL_WORDS <= self.control.len()`.
            hdrs[i].msg_hdr.msg_control = unsafe { self.control.as_mut_ptr().add(i * CONTROL_WORDS) }.cast();
            hdrs[i].msg_hdr.msg_controllen = CONTROL_WORDS * 8;
        }
        let n = loop {
            // SAFETY: `hdrs` holds BATCH valid headers whose iovecs and name buffers
            // point into `self.data` and `self.addrs` (live and not otherwise borrowed
            // for the call) with the lengths given; the fd is open for the call
            // (borrowed from `socket`); a null timeout is allowed. The raw system call,
            // not glibc's `recvmmsg`: that one is a thread cancellation point and pays
            // for it on every call, and a non-blocking read has no use for one.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_recvmmsg,
                    socket.as_raw_fd(),
                    hdrs.as_mut_ptr(),
                    BATCH as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut::<libc::timespec>(),
                )
            };
            if r >= 0 {
                break r as usize;
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => return Ok(Received::Empty),
                _ => return Err(e),
            }
        };
        if n == 0 {
            return Ok(Received::Empty);
        }
        let read_at = wall_clock_ns();
        for (i, hdr) in hdrs.iter().enumerate().take(n) {
            self.ages[i] = match receive_timestamp_ns(&hdr.msg_hdr) {
                Some(at) => read_at.saturating_sub(at).clamp(0, MAX_AGE_NS) as u64 / 1000,
                None => 0,
            };
            // A longer datagram was cut to the slot (MSG_TRUNC): it keeps SLOT bytes.
            self.lens[i] = (hdr.msg_len as usize).min(SLOT);
            let len = hdr.msg_hdr.msg_namelen;
            let storage = std::mem::replace(&mut self.addrs[i], socket2::SockAddrStorage::zeroed());
            // SAFETY: the kernel wrote a socket address of `len` bytes (at most the
            // storage's size, which it was given) into the storage.
            let addr = unsafe { socket2::SockAddr::new(storage, len) };
            self.from[i] = addr.as_socket();
        }
        Ok(Received::Some { n, drained: n < BATCH })
    }

    /// Reads what `socket` (non-blocking) holds, up to [`BATCH`] datagrams. An error
    /// other than "would block" is returned as it is; one met after some datagrams
    /// ends the batch and is returned by the next call.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn receive(&mut self, socket: &UdpSocket) -> io::Result<Received> {
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        let mut n = 0;
        // Dropped oversized datagrams count as reads too, so that a flood of them
        // bounds a call like any other: after 2 x BATCH reads with none of ours, the
        // call says "empty" and the socket, still readable, is read at the next turn.
        let mut reads = 0;
        while n < BATCH && reads < 2 * BATCH {
            reads += 1;
            let slot = &mut self.data[n * SLOT..(n + 1) * SLOT];
            match socket.recv_from(slot) {
                Ok((len, from)) => {
                    self.lens[n] = len.min(SLOT);
                    self.from[n] = Some(from);
                    self.ages[n] = 0;
                    n += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Windows: the datagram was longer than the slot and is gone.
                Err(e) if is_oversized(&e) => self.oversized += 1,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(if n == 0 { Received::Empty } else { Received::Some { n, drained: true } });
                }
                Err(e) if n == 0 => return Err(e),
                Err(e) => {
                    self.deferred = Some(e);
                    break;
                }
            }
        }
        Ok(if n == 0 { Received::Empty } else { Received::Some { n, drained: false } })
    }
}

/// Whether a failed read was Windows refusing a datagram longer than the buffer
/// (`WSAEMSGSIZE`, 10040; the datagram is dropped).
#[cfg(not(target_os = "linux"))]
fn is_oversized(e: &io::Error) -> bool {
    cfg!(windows) && e.raw_os_error() == Some(10040)
}

/// `CLOCK_REALTIME` now, in nanoseconds: the clock of the kernel's receive timestamps.
/// (Linux turns timestamping on for the stack a moment after the first socket asks;
/// datagrams of that moment are stamped when read, age 0: the old behaviour.)
#[cfg(target_os = "linux")]
#[allow(clippy::unnecessary_cast)] // time_t and c_long are 32 bits on some Linux targets
fn wall_clock_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a live timespec for the call to write; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64
}

/// The `SCM_TIMESTAMPNS` receive timestamp among the control messages `msg` got back,
/// in nanoseconds of `CLOCK_REALTIME`; `None` without one (timestamps off, or the
/// control room was too small: MSG_CTRUNC).
#[cfg(target_os = "linux")]
#[allow(clippy::unnecessary_cast)] // time_t and c_long are 32 bits on some Linux targets
fn receive_timestamp_ns(msg: &libc::msghdr) -> Option<i64> {
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return None;
    }
    // SAFETY: `msg` is a header recvmmsg filled in: its control pointer and length
    // (which the kernel set to the bytes it wrote, within the room given) describe live
    // control messages in `RecvBatch::control`, which CMSG_FIRSTHDR and CMSG_NXTHDR walk
    // within those bounds. A timestamp's data is a timespec, read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                return Some((ts.tv_sec as i64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as i64));
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A non-blocking socket on a free loopback port (the send batch's tests too).
    pub(crate) fn bound() -> UdpSocket {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_nonblocking(true).unwrap();
        s
    }

    /// Everything sent arrives once, in order, with its sender and length, across
    /// batches; an oversized datagram is cut to one byte over the limit (so the
    /// endpoint refuses it); the socket then reads as empty.
    #[test]
    fn batches_deliver_every_datagram_with_its_sender() {
        let sock = bound();
        let (a, b) = (bound(), bound());
        let to = sock.local_addr().unwrap();
        let mut sent = Vec::new();
        for i in 0..40u32 {
            let from = if i % 3 == 0 { &b } else { &a };
            let len = if i == 17 { 1500 } else { 4 + (i as usize * 29) % 1100 };
            let mut d = vec![i as u8; len];
            d[..4].copy_from_slice(&i.to_le_bytes());
            from.send_to(&d, to).unwrap();
            sent.push((d, from.local_addr().unwrap()));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut batch = RecvBatch::new();
        let mut got = Vec::new();
        let mut calls = 0;
        loop {
            calls += 1;
            match batch.receive(&sock).unwrap() {
                Received::Empty => break,
                Received::Some { n, drained } => {
                    assert!((1..=BATCH).contains(&n));
                    for i in 0..n {
                        let (d, from) = batch.datagram(i);
                        got.push((d.to_vec(), from.unwrap()));
                    }
                    if drained {
                        break;
                    }
                }
            }
        }
        if cfg!(windows) {
            // Windows drops the datagram longer than a slot, and it is counted.
            assert_eq!(batch.take_oversized(), 1);
            sent.remove(17);
        }
        assert_eq!(batch.take_oversized(), 0);
        assert_eq!(got.len(), sent.len());
        for (i, ((d, from), (want, want_from))) in got.iter().zip(&sent).enumerate() {
            assert_eq!(from, want_from, "datagram {i}'s sender");
            if want.len() > SLOT {
                assert_eq!(d.len(), SLOT, "datagram {i} is cut to one byte over the limit");
                assert_eq!(d[..], want[..SLOT]);
            } else {
                assert_eq!(d, want, "datagram {i}");
            }
        }
        // 40 datagrams: three full batches and a last one that says the socket is empty.
        assert!(calls <= 40usize.div_ceil(BATCH) + 1, "{calls} calls");
        assert!(matches!(batch.receive(&sock).unwrap(), Received::Empty));
    }

    /// Windows drops each datagram longer than a slot with a failed read: a flood of
    /// them is counted, and a call reads a bounded number of them before it returns,
    /// so a host's turn stays bounded; the datagram behind them is read after.
    #[cfg(windows)]
    #[test]
    fn a_flood_of_oversized_datagrams_is_counted_and_bounded() {
        let sock = bound();
        let a = bound();
        let to = sock.local_addr().unwrap();
        for _ in 0..40 {
            a.send_to(&[0xEE; 1500], to).unwrap();
        }
        a.send_to(b"ours", to).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut batch = RecvBatch::new();
        assert!(matches!(batch.receive(&sock).unwrap(), Received::Empty), "2 x BATCH reads, none of ours");
        assert_eq!(batch.take_oversized(), 2 * BATCH as u64);
        let Received::Some { n: 1, .. } = batch.receive(&sock).unwrap() else { panic!("ours after the flood") };
        assert_eq!(batch.datagram(0).0, b"ours");
        assert_eq!(batch.take_oversized(), 40 - 2 * BATCH as u64);
    }

    /// Linux turns receive timestamping on for the whole stack a moment after the first
    /// socket asks (deferred work); until then a datagram is stamped when it is read.
    /// Waits (up to 2 s) until a datagram that waited 3 ms in a stamped socket of its
    /// own reads as having waited: a fixed 20 ms once fell short on a loaded 2-core
    /// machine (an arrival stamped at its read, 50 ms after its send). Without
    /// timestamps (not Linux) it returns at once.
    pub(crate) fn settle_timestamping() {
        let (probe, from) = (bound(), bound());
        if !enable_timestamps(&probe) {
            return;
        }
        let to = probe.local_addr().unwrap();
        let mut batch = RecvBatch::new();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while std::time::Instant::now() < until {
            from.send_to(&[0], to).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(3));
            if matches!(batch.receive(&probe), Ok(Received::Some { .. })) && batch.age_us(0) >= 2_000 {
                return;
            }
        }
        panic!("receive timestamps never came on");
    }

    /// With timestamps on (Linux), a datagram's age is how long it waited in the
    /// socket; without them it is 0 (the read is taken as the arrival).
    #[test]
    fn ages_come_from_the_kernels_receive_timestamps() {
        let (stamped, plain, from) = (bound(), bound(), bound());
        let on = enable_timestamps(&stamped);
        assert_eq!(on, cfg!(target_os = "linux"));
        settle_timestamping();
        from.send_to(&[1], stamped.local_addr().unwrap()).unwrap();
        from.send_to(&[2], plain.local_addr().unwrap()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(40));
        let mut batch = RecvBatch::new();
        assert!(matches!(batch.receive(&stamped).unwrap(), Received::Some { n: 1, .. }));
        let age = batch.age_us(0);
        if on {
            assert!((30_000..1_000_000).contains(&age), "waited 40 ms: age {age} us");
        } else {
            assert_eq!(age, 0);
        }
        assert!(matches!(batch.receive(&plain).unwrap(), Received::Some { n: 1, .. }));
        assert_eq!(batch.age_us(0), 0, "no timestamps asked for: no age");
    }
}
