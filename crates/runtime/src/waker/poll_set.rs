//! The wait set of `poll(2)` (`ppoll` on Linux) and Windows' `WSAPoll`: one array of
//! [wake channel, every host's socket], handed whole to the kernel at every wait.
//!
//! A wait costs the kernel a look at every socket in the array, so a process of
//! hundreds of hosts pays for all of them at every wake; Linux uses `epoll_set.rs`
//! instead, and this set serves the other platforms (and is tested on Linux too).

use std::io;
use std::net::UdpSocket;
use std::time::Duration;

use super::{WaitSet, imp};

pub(crate) struct PollSet {
    /// The wake channel's entry first, then the sockets.
    fds: Vec<imp::PollFd>,
    /// Per watched host, the index of its socket in `fds`; None for a host without one.
    index: Vec<Option<usize>>,
}

impl PollSet {
    fn fd(&self, i: usize) -> Option<usize> {
        self.index.get(i).copied().flatten()
    }
}

impl WaitSet for PollSet {
    fn new(chan: &imp::Channel) -> io::Result<PollSet> {
        Ok(PollSet { fds: vec![chan.poll_fd()], index: Vec::new() })
    }

    fn watch<'a>(&mut self, sockets: impl Iterator<Item = Option<&'a UdpSocket>>) {
        self.fds.truncate(1);
        self.index.clear();
        for socket in sockets {
            self.index.push(socket.map(|s| {
                self.fds.push(imp::socket_poll_fd(s));
                self.fds.len() - 1
            }));
        }
    }

    fn wait(&mut self, timeout: Duration) -> io::Result<bool> {
        for fd in &mut self.fds {
            imp::clear(fd);
        }
        imp::poll(&mut self.fds, timeout)?;
        Ok(imp::ready(&self.fds[0]))
    }

    fn mute(&mut self, i: usize, muted: bool) {
        if let Some(fd) = self.fd(i).and_then(|f| self.fds.get_mut(f)) {
            imp::mute(fd, muted);
        }
    }

    fn readable(&self, i: usize) -> bool {
        self.fd(i).and_then(|f| self.fds.get(f)).is_some_and(imp::ready)
    }
}
