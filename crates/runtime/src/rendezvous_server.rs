//! [`RendezvousServer`]: proto's sans-IO [`Rendezvous`] on a UDP socket and a thread of
//! its own, for `tickwire rendezvous` and for tests. It introduces the peers of every
//! match that presents tickets, and relays what cannot go direct.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tickwire_proto::{Clock, HELLO_SIZE, Rendezvous, RendezvousConfig, RendezvousStats};

use crate::os_seed::{os_random_bytes, os_seed};
use crate::system_clock::{self, SystemClock};

/// What the thread does with each datagram it relays (the peers' bytes past the relay's
/// header): a recording for a test that the relay cannot read them.
pub type RelayRecorder = Box<dyn FnMut(&[u8]) + Send>;

/// How long the thread waits for a datagram before it checks its timers and whether to
/// stop.
const WAIT: Duration = Duration::from_millis(20);
/// How often the service's timers run.
const UPDATE_US: u64 = 100_000;

/// A rendezvous service running on its own thread.
pub struct RendezvousServer {
    local: SocketAddr,
    stop: Arc<AtomicBool>,
    stats: Arc<Mutex<RendezvousStats>>,
    thread: Option<JoinHandle<()>>,
}

impl RendezvousServer {
    /// Binds `bind` and starts serving with `cfg` (whose public addresses, when empty,
    /// become the bound address unless it is unspecified).
    pub fn start(bind: SocketAddr, mut cfg: RendezvousConfig, record: Option<RelayRecorder>) -> io::Result<Self> {
        let socket = UdpSocket::bind(bind)?;
        socket.set_read_timeout(Some(WAIT))?;
        let local = socket.local_addr()?;
        if cfg.public_addresses.is_empty() && !local.ip().is_unspecified() {
            cfg.public_addresses.push(local);
        }
        let rendezvous = Rendezvous::new(cfg, os_seed()?, &os_random_bytes::<32>()?);
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(RendezvousStats::default()));
        let (s, st) = (stop.clone(), stats.clone());
        let thread = std::thread::Builder::new()
            .name("tickwire-rendezvous".into())
            .spawn(move || serve(socket, rendezvous, &s, &st, record))?;
        Ok(RendezvousServer { local, stop, stats, thread: Some(thread) })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// What it has done so far (at most 100 ms old).
    pub fn stats(&self) -> RendezvousStats {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops the thread and returns the final figures.
    pub fn stop(mut self) -> RendezvousStats {
        self.halt();
        self.stats()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for RendezvousServer {
    fn drop(&mut self) {
        self.halt();
    }
}

fn serve(
    socket: UdpSocket,
    mut r: Rendezvous,
    stop: &AtomicBool,
    stats: &Mutex<RendezvousStats>,
    mut record: Option<RelayRecorder>,
) {
    let clock = SystemClock::new();
    let v6 = socket.local_addr().is_ok_and(|a| a.is_ipv6());
    let mut buf = vec![0u8; 2048];
    let mut out = vec![0u8; HELLO_SIZE.max(2048)];
    let (mut published, mut updated) = (0, 0);
    while !stop.load(Ordering::Acquire) {
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => {
                let now = clock.now_us();
                // A clock before 1970 reads 0: every ticket is then refused as expired.
                r.handle(now, system_clock::unix_secs().unwrap_or(0), from, &buf[..n]);
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // An ICMP error for an earlier send (some platforms report them): go on.
            Err(_) => {}
        }
        let now = clock.now_us();
        // Its timers are seconds (a member's silence, a match's end) and `update` walks
        // every match: ten times a second, not once per datagram.
        if now >= updated + UPDATE_US {
            updated = now;
            r.update(now);
        }
        while let Some((to, n)) = r.poll_transmit(&mut out) {
            if let (Some(rec), Some(payload)) = (record.as_mut(), tickwire_proto::relayed_payload(&out[..n])) {
                rec(payload);
            }
            let to = match to.ip() {
                IpAddr::V4(v4) if v6 => SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), to.port()),
                _ => to,
            };
            // A full buffer or an unreachable peer loses that datagram, as UDP does.
            let _ = socket.send_to(&out[..n], to);
        }
        if now >= published + 100_000 {
            published = now;
            *stats.lock().unwrap_or_else(|e| e.into_inner()) = r.stats();
        }
    }
    *stats.lock().unwrap_or_else(|e| e.into_inner()) = r.stats();
}
