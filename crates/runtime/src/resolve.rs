//! Remote addresses given as text: an IP literal or a host name with a port
//! ([`Target`]), and the [`Resolver`] that turns names into addresses off the engine's
//! thread.
//!
//! Why a thread of its own: the only portable lookup (`ToSocketAddrs`, getaddrinfo
//! underneath) blocks, for seconds when a DNS server is slow, and cannot be
//! cancelled. The engine thread must never wait on the network, and the network thread
//! must keep acking and keeping connections alive, so neither may call it. One
//! resolver thread per host, started on the first name, runs the lookups one after
//! the other; at most [`MAX_PENDING_RESOLUTIONS`] wait at once, so hostile or buggy
//! callers cannot grow it without bound.

use std::collections::VecDeque;
use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError, TrySendError};

use super::host_error::{FullQueue, HostError};

/// Name lookups that may wait for the resolver thread at once (queued or running).
/// Beyond this a lookup fails with [`HostError::QueueFull`]
/// ([`FullQueue::Resolutions`]); retry once some have finished.
pub const MAX_PENDING_RESOLUTIONS: usize = 16;

/// The longest host name accepted (RFC 1035: 253 characters without the final dot).
pub const MAX_HOST_NAME_LEN: usize = 253;

/// How long dropping a host waits for a lookup in progress before detaching the
/// resolver thread (a lookup cannot be cancelled; the thread exits when it returns).
const RESOLVER_SHUTDOWN_WAIT: Duration = Duration::from_millis(200);

/// A remote address as the engine gave it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// An IP literal with its port, used as is.
    Addr(SocketAddr),
    /// A host name (letters, digits, `-`, `_` and dots; at most 253 characters) and a
    /// port, looked up by the resolver thread.
    Name {
        /// The name, as given (a final dot kept).
        host: String,
        /// The port (never checked for 0 here: callers decide).
        port: u16,
    },
}

impl Target {
    /// Parses `"a.b.c.d:port"`, `"[v6]:port"` or `"name:port"`. The port is required.
    /// Anything else is refused with a sentence saying why (the text is not repeated:
    /// callers quote it).
    pub fn parse(text: &str) -> Result<Target, String> {
        if let Ok(addr) = text.parse::<SocketAddr>() {
            return Ok(Target::Addr(addr));
        }
        if text.starts_with("remote:") {
            return tickwire_proto::parse_address(text).map(Target::Addr);
        }
        if text.len() > MAX_HOST_NAME_LEN + 1 + 6 {
            return Err(format!("is {} bytes long, more than any host name and port", text.len()));
        }
        let Some((host, port)) = text.rsplit_once(':') else {
            return Err("has no port".into());
        };
        if host.starts_with('[') || host.contains(':') {
            return Err("is not a valid IPv6 address with a port: write it in brackets, like \"[::1]:7777\"".into());
        }
        if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err("has no valid port after the last ':' (a number up to 65535)".into());
        }
        let port: u16 = port.parse().map_err(|_| "has a port above 65535".to_string())?;
        check_host_name(host)?;
        Ok(Target::Name { host: host.to_string(), port })
    }

    /// The port.
    pub fn port(&self) -> u16 {
        match self {
            Target::Addr(a) => a.port(),
            Target::Name { port, .. } => *port,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Addr(a) => write!(f, "{a}"),
            Target::Name { host, port } => write!(f, "{host}:{port}"),
        }
    }
}

/// A host name by the rules of RFC 1123 (labels of letters, digits and hyphens, not
/// starting or ending with a hyphen), also allowing `_` (seen in real names). A name
/// whose last label is all digits is refused: it is a mistyped IP address (`999.1.1.1`,
/// or `127.1`, which getaddrinfo would quietly read as `127.0.0.1`), never a name.
fn check_host_name(host: &str) -> Result<(), String> {
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.is_empty() {
        return Err("has no host before the port".into());
    }
    if name.len() > MAX_HOST_NAME_LEN {
        return Err(format!("has a host name of {} characters (at most {MAX_HOST_NAME_LEN})", name.len()));
    }
    if !name.is_ascii() {
        return Err("has a host name with non-ASCII characters: write an international name in its \
                    \"xn--\" (punycode) form"
            .into());
    }
    for label in name.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err("is not a host name: each dot-separated part must have 1 to 63 characters".into());
        }
        if !label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            return Err("is not a host name: only letters, digits, '-', '_' and '.' may appear".into());
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err("is not a host name: a part starts or ends with '-'".into());
        }
    }
    if name.rsplit('.').next().is_some_and(|last| last.bytes().all(|b| b.is_ascii_digit())) {
        return Err("is not a valid IP address (and, all digits at the end, not a host name either)".into());
    }
    Ok(())
}

/// Which of a name's addresses a socket bound to `local` uses:
/// - an IPv4 socket: the first IPv4 address;
/// - an IPv6 socket bound to `::` (dual-stack, what an empty bind address gives): the
///   first IPv4 address if there is one, mapped (`::ffff:a.b.c.d`), else the first IPv6
///   one. IPv4 first because a server bound to `0.0.0.0` (the common case) is reachable
///   only over IPv4, while a dual-stack server takes either;
/// - an IPv6 socket bound to a specific address: the first IPv6 address.
///
/// The order within a family is the system resolver's (RFC 6724 on most systems).
pub fn pick(local: SocketAddr, found: &[SocketAddr]) -> Option<SocketAddr> {
    let v4 = found.iter().find(|a| a.is_ipv4()).copied();
    let v6 = found.iter().find(|a| a.is_ipv6()).copied();
    match local {
        SocketAddr::V4(_) => v4,
        SocketAddr::V6(l) if l.ip().is_unspecified() => {
            v4.map(|a| SocketAddr::new(super::socket::mapped(a.ip()), a.port())).or(v6)
        }
        SocketAddr::V6(_) => v6,
    }
}

/// Why a name did not give an address.
fn no_address_reason(local: SocketAddr, found: &[SocketAddr]) -> String {
    if found.is_empty() {
        "the name has no address".into()
    } else if local.is_ipv4() {
        format!(
            "the name has only IPv6 addresses, which this IPv4 socket ({local}) cannot reach: bind an IPv6 \
             address, or leave the bind address empty for a dual-stack socket"
        )
    } else {
        format!("the name has only IPv4 addresses, which this IPv6 socket ({local}) cannot reach")
    }
}

/// A lookup handed to the resolver; its answer comes back with the same number.
pub type Ticket = u64;

struct Job {
    ticket: Ticket,
    host: String,
    port: u16,
    local: SocketAddr,
}

/// What became of one lookup: the address to use, or why there is none.
pub type Resolution = Result<SocketAddr, String>;

/// The resolver thread of one host, started on the first lookup.
pub(crate) struct Resolver {
    running: Option<Running>,
    next: Ticket,
    /// Lookups submitted whose answer has not been taken, oldest first: the thread
    /// answers in that order, so should it ever stop, these are the ones to fail.
    waiting: VecDeque<Ticket>,
}

struct Running {
    jobs: Sender<Job>,
    answers: Receiver<(Ticket, Resolution)>,
    done: Receiver<()>,
    thread: JoinHandle<()>,
}

impl Resolver {
    pub(crate) fn new() -> Self {
        Resolver { running: None, next: 1, waiting: VecDeque::with_capacity(MAX_PENDING_RESOLUTIONS) }
    }

    /// Queues a lookup of `host` for a socket bound to `local`; never blocks. Fails
    /// when [`MAX_PENDING_RESOLUTIONS`] are waiting or the thread cannot start.
    pub(crate) fn submit(&mut self, host: &str, port: u16, local: SocketAddr) -> Result<Ticket, HostError> {
        if self.waiting.len() >= MAX_PENDING_RESOLUTIONS {
            return Err(HostError::QueueFull(FullQueue::Resolutions));
        }
        if self.running.is_none() {
            self.running = Some(spawn()?);
        }
        let Some(r) = &self.running else { unreachable!("started just above") };
        let ticket = self.next;
        let job = Job { ticket, host: host.to_string(), port, local };
        match r.jobs.try_send(job) {
            Ok(()) => {}
            // The channel holds MAX_PENDING_RESOLUTIONS: never full while `waiting` is not.
            Err(TrySendError::Full(_)) => return Err(HostError::QueueFull(FullQueue::Resolutions)),
            Err(TrySendError::Disconnected(_)) => {
                return Err(HostError::Config("the resolver thread has stopped".into()));
            }
        }
        self.next += 1;
        self.waiting.push_back(ticket);
        Ok(ticket)
    }

    /// The next finished lookup, if any; never blocks.
    pub(crate) fn poll(&mut self) -> Option<(Ticket, Resolution)> {
        let r = self.running.as_ref()?;
        let answer = match r.answers.try_recv() {
            Ok(answer) => answer,
            Err(TryRecvError::Empty) => return None,
            // Only a panic in a lookup ends the thread early: fail what was waiting,
            // one per poll (and start a new thread for the next lookup).
            Err(TryRecvError::Disconnected) => {
                let ticket = self.waiting.front().copied();
                if ticket.is_none() {
                    self.running = None;
                }
                (ticket?, Err("the resolver thread stopped unexpectedly".to_string()))
            }
        };
        if let Some(i) = self.waiting.iter().position(|t| *t == answer.0) {
            self.waiting.remove(i);
        }
        Some(answer)
    }
}

fn spawn() -> Result<Running, HostError> {
    let (jobs_tx, jobs_rx) = crossbeam_channel::bounded::<Job>(MAX_PENDING_RESOLUTIONS);
    let (answers_tx, answers_rx) = crossbeam_channel::bounded(MAX_PENDING_RESOLUTIONS);
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(1);
    let thread = std::thread::Builder::new()
        .name("tickwire-resolver".into())
        .spawn(move || {
            // Ends when the host drops its sender (or the host is gone).
            for job in jobs_rx {
                let answer = lookup(&job.host, job.port, job.local);
                if answers_tx.send((job.ticket, answer)).is_err() {
                    break;
                }
            }
            let _ = done_tx.send(());
        })
        .map_err(|source| HostError::Io { context: "spawning the resolver thread".into(), source })?;
    Ok(Running { jobs: jobs_tx, answers: answers_rx, done: done_rx, thread })
}

/// The blocking lookup, on the resolver thread only.
fn lookup(host: &str, port: u16, local: SocketAddr) -> Resolution {
    let found: Vec<SocketAddr> = match (host, port).to_socket_addrs() {
        Ok(it) => it.collect(),
        Err(e) => return Err(format!("looking up \"{host}\" failed: {e}")),
    };
    pick(local, &found).ok_or_else(|| format!("\"{host}\": {}", no_address_reason(local, &found)))
}

impl Drop for Resolver {
    fn drop(&mut self) {
        let Some(Running { jobs, answers, done, thread }) = self.running.take() else { return };
        // Closing both channels ends the thread after the lookup in progress (queued
        // ones are skipped: their answers have nowhere to go).
        drop(jobs);
        drop(answers);
        match done.recv_timeout(RESOLVER_SHUTDOWN_WAIT) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                let _ = thread.join();
            }
            // A slow lookup: detach; the thread exits as soon as it returns.
            Err(RecvTimeoutError::Timeout) => drop(thread),
        }
    }
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
