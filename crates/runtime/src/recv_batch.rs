//! Reading a host's socket a batch of datagrams at a time.
//!
//! On Linux one `recvmmsg` call reads up to [`BATCH`] datagrams, and a call that
//! returns fewer than that found the socket empty, so the usual turn of a host (woken
//! by one datagram) costs one receive call instead of two (the datagram, then the
//! "would block" that says there is no other). Elsewhere each datagram is one
//! `recv_from`, and the socket is empty when one says "would block".
//!
//! Each slot holds [`MAX_DATAGRAM_SIZE`] + 1 bytes: a longer datagram arrives cut to
//! that length, which the endpoint refuses as too large, as it refuses the whole one.
//! No datagram is taken for another, and nothing allocates after creation.

use std::io;
use std::net::{SocketAddr, UdpSocket};

use tickwire_proto::wire::MAX_DATAGRAM_SIZE;

/// Datagrams one call reads at most.
pub(crate) const BATCH: usize = 16;
/// Bytes kept of a datagram: one more than any datagram the endpoint accepts.
const SLOT: usize = MAX_DATAGRAM_SIZE + 1;

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
    #[cfg(target_os = "linux")]
    addrs: Vec<socket2::SockAddrStorage>,
    /// An error met after some datagrams of a batch, for the next call.
    #[cfg(not(target_os = "linux"))]
    deferred: Option<io::Error>,
}

impl RecvBatch {
    pub(crate) fn new() -> RecvBatch {
        RecvBatch {
            data: vec![0; SLOT * BATCH],
            lens: [0; BATCH],
            from: [None; BATCH],
            #[cfg(target_os = "linux")]
            addrs: (0..BATCH).map(|_| socket2::SockAddrStorage::zeroed()).collect(),
            #[cfg(not(target_os = "linux"))]
            deferred: None,
        }
    }

    /// Datagram `i` of the last call that returned [`Received::Some`], and its sender
    /// (`None` for an address family other than IPv4 and IPv6, which a UDP socket of
    /// ours never reports).
    pub(crate) fn datagram(&self, i: usize) -> (&[u8], Option<SocketAddr>) {
        (&self.data[i * SLOT..i * SLOT + self.lens[i]], self.from[i])
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
        }
        let n = loop {
            // SAFETY: `hdrs` holds BATCH valid headers whose iovecs and name buffers
            // point into `self.data` and `self.addrs` (live and not otherwise borrowed
            // for the call) with the lengths given; the fd is open for the call
            // (borrowed from `socket`); a null timeout is allowed.
            let r = unsafe {
                libc::recvmmsg(
                    socket.as_raw_fd(),
                    hdrs.as_mut_ptr(),
                    BATCH as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
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
        for (i, hdr) in hdrs.iter().enumerate().take(n) {
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
        while n < BATCH {
            let slot = &mut self.data[n * SLOT..(n + 1) * SLOT];
            match socket.recv_from(slot) {
                Ok((len, from)) => {
                    self.lens[n] = len.min(SLOT);
                    self.from[n] = Some(from);
                    n += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
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
        Ok(Received::Some { n, drained: false })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound() -> UdpSocket {
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
}
