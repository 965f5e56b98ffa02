//! Writing a host's datagrams to its socket a batch at a time.
//!
//! A flush of a server with many peers writes a datagram per peer. On Linux one
//! `sendmmsg` call writes up to [`BATCH`] of them: the per-call cost (system call
//! entry and exit, the descriptor lookup) is paid once per batch instead of once per
//! datagram, which row 5 of the transport benchmark (64 clients) measured at about a
//! tenth of the engine thread's time. Elsewhere each datagram is one `send_to`.
//!
//! The endpoint writes each datagram straight into its slot ([`SendBatch::slot`]), so
//! nothing is copied, and nothing allocates after creation.

use std::io;
use std::net::{SocketAddr, UdpSocket};

use tickwire_proto::wire::MAX_DATAGRAM_SIZE;

/// Datagrams one call writes at most.
pub(crate) const BATCH: usize = 16;

/// Buffers for one batch, made once.
pub(crate) struct SendBatch {
    data: Vec<u8>,
    lens: [usize; BATCH],
    /// Each datagram's destination, in the form the system call takes.
    addrs: Vec<socket2::SockAddr>,
}

impl SendBatch {
    pub(crate) fn new() -> SendBatch {
        SendBatch { data: vec![0; MAX_DATAGRAM_SIZE * BATCH], lens: [0; BATCH], addrs: Vec::with_capacity(BATCH) }
    }

    /// Datagrams held.
    pub(crate) fn len(&self) -> usize {
        self.addrs.len()
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len() == BATCH
    }

    /// The next free slot, [`MAX_DATAGRAM_SIZE`] bytes, for a datagram to be written
    /// into (then [`push`](Self::push)ed, or not). The batch must not be full.
    pub(crate) fn slot(&mut self) -> &mut [u8] {
        let i = self.len();
        &mut self.data[i * MAX_DATAGRAM_SIZE..(i + 1) * MAX_DATAGRAM_SIZE]
    }

    /// Keeps the first `len` bytes of the slot as a datagram for `addr`.
    pub(crate) fn push(&mut self, addr: SocketAddr, len: usize) {
        debug_assert!(!self.is_full() && len <= MAX_DATAGRAM_SIZE);
        self.lens[self.len()] = len;
        self.addrs.push(addr.into());
    }

    /// Writes every datagram held, in order, and empties the batch. A datagram the
    /// socket refuses (a full send buffer: "would block"; an unreachable network) is
    /// dropped and reported to `failed`; the ones after it are still written.
    #[cfg(target_os = "linux")]
    pub(crate) fn send(&mut self, socket: &UdpSocket, failed: &mut dyn FnMut(io::Error)) {
        use std::os::fd::AsRawFd;
        let n = self.len();
        // Built for each call (a few stores per datagram), so nothing keeps pointers
        // into `self` across moves.
        let mut iov: [libc::iovec; BATCH] = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; BATCH];
        // SAFETY (of the zeroed value): mmsghdr is plain integers and raw pointers, for
        // which all zeroes (null pointers, zero lengths) is a valid value.
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        let base = self.data.as_mut_ptr();
        for i in 0..n {
            // SAFETY: `i < BATCH`, so the slot lies inside `self.data` (BATCH slots of
            // MAX_DATAGRAM_SIZE bytes), and `lens[i]` is at most a slot.
            iov[i] = libc::iovec { iov_base: unsafe { base.add(i * MAX_DATAGRAM_SIZE) }.cast(), iov_len: self.lens[i] };
            hdrs[i].msg_hdr.msg_iov = &mut iov[i];
            hdrs[i].msg_hdr.msg_iovlen = 1;
            // The kernel only reads the address.
            hdrs[i].msg_hdr.msg_name = self.addrs[i].as_ptr() as *mut libc::c_void;
            hdrs[i].msg_hdr.msg_namelen = self.addrs[i].len();
        }
        let mut done = 0;
        while done < n {
            // SAFETY: `hdrs[done..n]` are valid headers whose iovecs and addresses point
            // into `iov`, `self.data` and `self.addrs` (live, not otherwise borrowed for
            // the call) with the lengths given; the fd is open (borrowed from `socket`).
            // The raw system call, as in `recv_batch.rs`: glibc's `sendmmsg` is a
            // cancellation point, a cost per call and no use to a non-blocking socket.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_sendmmsg,
                    socket.as_raw_fd(),
                    hdrs[done..].as_mut_ptr(),
                    (n - done) as libc::c_uint,
                    0 as libc::c_int,
                )
            };
            if r > 0 {
                done += r as usize;
                continue;
            }
            // (0 is not returned for a non-empty batch; treat it as an error of the
            // first datagram rather than loop.)
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            // The call reports the error of its first datagram: that one is dropped.
            failed(e);
            done += 1;
        }
        self.addrs.clear();
    }

    /// Writes every datagram held, in order, and empties the batch. A datagram the
    /// socket refuses is dropped and reported to `failed`; the ones after it are still
    /// written.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn send(&mut self, socket: &UdpSocket, failed: &mut dyn FnMut(io::Error)) {
        for i in 0..self.len() {
            let Some(addr) = self.addrs[i].as_socket() else { continue };
            let data = &self.data[i * MAX_DATAGRAM_SIZE..i * MAX_DATAGRAM_SIZE + self.lens[i]];
            loop {
                match socket.send_to(data, addr) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => failed(e),
                    Ok(_) => {}
                }
                break;
            }
        }
        self.addrs.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recv_batch::tests::bound;

    /// Datagrams of a batch arrive once each, in order, at their own destinations,
    /// over several full batches; one the socket refuses (an IPv6 destination from an
    /// IPv4 socket) is reported and the ones after it still go.
    #[test]
    fn batches_write_every_datagram_in_order_and_report_refusals() {
        let sock = bound();
        let (a, b) = (bound(), bound());
        let (to_a, to_b) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        let refused: SocketAddr = "[::1]:9".parse().unwrap();
        let mut batch = SendBatch::new();
        let (mut sent_a, mut sent_b, mut failures) = (Vec::new(), Vec::new(), 0);
        for i in 0..40u32 {
            let len = 4 + (i as usize * 37) % (MAX_DATAGRAM_SIZE - 4);
            let slot = batch.slot();
            slot[..len].fill(i as u8);
            slot[..4].copy_from_slice(&i.to_le_bytes());
            let d = slot[..len].to_vec();
            let to = match i % 5 {
                0 => to_b,
                3 if i == 13 => refused,
                _ => to_a,
            };
            batch.push(to, len);
            if to == to_a {
                sent_a.push(d);
            } else if to == to_b {
                sent_b.push(d);
            }
            if batch.is_full() {
                batch.send(&sock, &mut |_| failures += 1);
                assert_eq!(batch.len(), 0);
            }
        }
        batch.send(&sock, &mut |_| failures += 1);
        assert_eq!(failures, 1, "the IPv6 destination");
        std::thread::sleep(std::time::Duration::from_millis(50));
        for (s, want) in [(&a, sent_a), (&b, sent_b)] {
            let mut buf = [0u8; 2048];
            let mut got = Vec::new();
            while let Ok((n, from)) = s.recv_from(&mut buf) {
                assert_eq!(from, sock.local_addr().unwrap());
                got.push(buf[..n].to_vec());
            }
            assert_eq!(got, want);
        }
    }
}
