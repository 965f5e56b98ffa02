//! The Agones SDK's REST calls, as a game server in an Agones pod makes them to its
//! SDK sidecar on localhost (`AGONES_SDK_HTTP_PORT`, default 9358): Ready once
//! listening (tried again every second until the sidecar, which may come up after the
//! server, takes it), Health every period, the player capacity once, the players and matches
//! as labels when they change, Shutdown at the end, and the GameServer watch, which
//! says when the server was Allocated. Bodies are JSON; int64 numbers are strings.
//!
//! Written against the published API (the SDK's REST description; see
//! ../shared/reference/fleet.md); no Agones cluster runs here. The tests check every
//! request's method, path and body against it with a stand-in sidecar.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::http;

/// The environment variable an Agones pod sets to the SDK's HTTP port.
pub const PORT_ENV: &str = "AGONES_SDK_HTTP_PORT";

/// The SDK's HTTP port from the environment, if an Agones pod set it.
pub fn port_from_env() -> Option<Result<u16, String>> {
    let v = std::env::var_os(PORT_ENV)?;
    let text = v.to_string_lossy();
    Some(
        text.trim().parse::<u16>().ok().filter(|&p| p != 0).ok_or_else(|| format!("{PORT_ENV}={text:?} is not a port")),
    )
}

/// What the server tells the sidecar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    Ready { capacity: u64 },
    Counts { players: u64, matches: u64 },
    Shutdown,
}

/// Figures of the SDK client.
#[derive(Debug, Default)]
pub struct AgonesStats {
    /// Calls answered 200.
    pub calls: AtomicU64,
    /// Calls that failed (no answer, or not 200).
    pub failures: AtomicU64,
    /// The GameServer watch saw the state Allocated.
    pub allocated: AtomicBool,
    /// Shutdown was called: the watch stops opening its stream again.
    stopping: AtomicBool,
}

/// The SDK client: its thread sends Health every period and the calls asked of it.
pub struct Agones {
    tx: Sender<Signal>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<AgonesStats>,
    last_counts: Option<(u64, u64)>,
}

impl Agones {
    /// Starts talking to the sidecar at `sdk` (Health every `health`, from the first
    /// Ready on), and watches the GameServer. `log` gets a line for each failure and
    /// for each GameServer state seen.
    pub fn start(sdk: SocketAddr, health: Duration, log: Sender<String>) -> Agones {
        let (tx, rx) = channel();
        let stats = Arc::new(AgonesStats::default());
        let s = Arc::clone(&stats);
        let l = log.clone();
        let thread = std::thread::Builder::new()
            .name("tickwire-agones".into())
            .spawn(move || calls(sdk, health, &rx, &s, &l))
            .expect("spawning the Agones thread");
        let s = Arc::clone(&stats);
        // The watch blocks on its stream: a thread of its own, never joined (it opens
        // the stream again until Shutdown, and ends with the process).
        let _ = std::thread::Builder::new().name("tickwire-agones-watch".into()).spawn(move || watch(sdk, &s, &log));
        Agones { tx, thread: Some(thread), stats, last_counts: None }
    }

    /// The figures.
    pub fn stats(&self) -> &AgonesStats {
        &self.stats
    }

    /// Ready (the server listens), with the player capacity.
    pub fn ready(&self, capacity: u64) {
        let _ = self.tx.send(Signal::Ready { capacity });
    }

    /// The players and matches now; sent when they changed.
    pub fn counts(&mut self, players: u64, matches: u64) {
        if self.last_counts != Some((players, matches)) {
            self.last_counts = Some((players, matches));
            let _ = self.tx.send(Signal::Counts { players, matches });
        }
    }

    /// Shutdown: the last call; waits until it was made.
    pub fn shutdown(mut self) {
        let _ = self.tx.send(Signal::Shutdown);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How long after a failed Ready the next try comes: the sidecar may come up after the
/// server (the official SDKs wait for it too).
const READY_RETRY: Duration = Duration::from_secs(1);
/// The longest line the watch reads (a GameServer as JSON is a few KiB).
const MAX_WATCH_LINE: usize = 64 * 1024;
/// The watch's backoff after its stream failed or ended: doubling up to this.
const WATCH_BACKOFF_MAX: Duration = Duration::from_secs(30);

fn calls(sdk: SocketAddr, health: Duration, rx: &Receiver<Signal>, stats: &AgonesStats, log: &Sender<String>) {
    // True when the sidecar answered 200; a failure is logged unless `quiet`.
    let call = |method: &str, path: &str, body: &str, quiet: bool| {
        let failure = match http::call(sdk, method, path, Some(body)) {
            Ok((200, _)) => {
                stats.calls.fetch_add(1, Ordering::Relaxed);
                return true;
            }
            Ok((status, answer)) => format!("agones {method} {path}: status {status}: {}", answer.trim()),
            Err(e) => format!("agones {method} {path}: {e}"),
        };
        stats.failures.fetch_add(1, Ordering::Relaxed);
        if !quiet {
            let _ = log.send(failure);
        }
        false
    };
    // The capacity to report once Ready is answered, and how many tries it took.
    let mut pending_ready: Option<(u64, u32)> = None;
    let mut ready = false;
    let mut next_try = Instant::now();
    let mut next_health = Instant::now() + health;
    loop {
        if let Some((capacity, tries)) = pending_ready.filter(|_| Instant::now() >= next_try) {
            if call("POST", "/ready", "{}", tries > 0) {
                call("PUT", "/alpha/player/capacity", &format!("{{\"count\":\"{capacity}\"}}"), false);
                pending_ready = None;
                ready = true;
                call("POST", "/health", "{}", false);
                next_health = Instant::now() + health;
            } else {
                if tries == 0 {
                    let _ = log.send(format!("agones: Ready not taken; trying again every {READY_RETRY:?}"));
                }
                pending_ready = Some((capacity, tries + 1));
                next_try = Instant::now() + READY_RETRY;
            }
        }
        let until = match (pending_ready, ready) {
            (Some(_), _) => next_try,
            (None, true) => next_health,
            (None, false) => Instant::now() + Duration::from_secs(3600),
        };
        match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(Signal::Ready { capacity }) => {
                pending_ready = Some((capacity, 0));
                next_try = Instant::now();
            }
            Ok(Signal::Counts { players, matches }) => {
                for (key, value) in [("players", players), ("matches", matches)] {
                    call("PUT", "/metadata/label", &format!("{{\"key\":\"{key}\",\"value\":\"{value}\"}}"), false);
                }
            }
            Ok(Signal::Shutdown) | Err(RecvTimeoutError::Disconnected) => {
                stats.stopping.store(true, Ordering::Release);
                call("POST", "/shutdown", "{}", false);
                return;
            }
            Err(RecvTimeoutError::Timeout) if ready && Instant::now() >= next_health => {
                call("POST", "/health", "{}", false);
                next_health += health;
                if next_health < Instant::now() {
                    next_health = Instant::now() + health;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// The GameServer watch: one JSON object a line, `{"result": GameServer}`; each new
/// `status.state` is logged, and Allocated is remembered. A stream that cannot be
/// opened, fails or ends is opened again after a backoff (1 s, doubling up to 30 s;
/// back to 1 s after a stream that gave a state), until Shutdown.
fn watch(sdk: SocketAddr, stats: &AgonesStats, log: &Sender<String>) {
    let mut last = String::new();
    let mut backoff = Duration::from_secs(1);
    let mut told = false;
    while !stats.stopping.load(Ordering::Acquire) {
        match watch_once(sdk, stats, log, &mut last) {
            Ok(true) => backoff = Duration::from_secs(1),
            Ok(false) => {}
            Err(e) if !told => {
                let _ = log.send(format!("agones watch: {e}; trying again"));
                told = true;
            }
            Err(_) => {}
        }
        std::thread::sleep(backoff);
        backoff = (backoff * 2).min(WATCH_BACKOFF_MAX);
    }
}

/// One watch stream, read to its end; whether it gave a state.
fn watch_once(sdk: SocketAddr, stats: &AgonesStats, log: &Sender<String>, last: &mut String) -> Result<bool, String> {
    let mut s = TcpStream::connect_timeout(&sdk, Duration::from_secs(2)).map_err(|e| format!("{sdk}: {e}"))?;
    let req = format!("GET /watch/gameserver HTTP/1.1\r\nHost: {sdk}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).map_err(|e| format!("{sdk}: {e}"))?;
    let mut any = false;
    let mut reader = BufReader::new(s);
    let mut line = String::new();
    loop {
        line.clear();
        // One GameServer a line; a line longer than any GameServer ends the stream
        // rather than growing without bound.
        match (&mut reader).take(MAX_WATCH_LINE as u64).read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(n) if n == MAX_WATCH_LINE && !line.ends_with('\n') => {
                return Err(format!("{sdk}: a watch line past {MAX_WATCH_LINE} bytes"));
            }
            Ok(_) => {}
        }
        let Some(state) = json_string_field(&line, "state") else { continue };
        any = true;
        if state != *last {
            let _ = log.send(format!("agones: the GameServer is {state}"));
            if state == "Allocated" {
                stats.allocated.store(true, Ordering::Release);
            }
            *last = state;
        }
    }
    Ok(any)
}

/// The value of the first string field `name` in a JSON text (`"name": "value"`);
/// enough for the watch's `status.state`, whose values are plain words.
fn json_string_field(text: &str, name: &str) -> Option<String> {
    let key = format!("\"{name}\"");
    let mut rest = text;
    while let Some(i) = rest.find(&key) {
        rest = &rest[i + key.len()..];
        let after = rest.trim_start();
        let Some(after) = after.strip_prefix(':') else { continue };
        let after = after.trim_start();
        let Some(after) = after.strip_prefix('"') else { continue };
        let end = after.find('"')?;
        return Some(after[..end].to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sidecar comes up 1.5 s after the server: Ready is tried until it is taken,
    /// then Health beats, the watch reconnects and sees the state, and Shutdown comes last.
    #[test]
    fn ready_is_tried_until_the_sidecar_takes_it_and_the_watch_reconnects() {
        use std::sync::Mutex;
        let addr = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap() // closed: nothing listens there yet
        };
        let (tx, rx) = channel();
        let agones = Agones::start(addr, Duration::from_millis(200), tx);
        agones.ready(42);
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(agones.stats().calls.load(Ordering::Relaxed), 0, "nobody to answer yet");
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let s = Arc::clone(&seen);
        let _sidecar = http::Listener::start(addr, move |r| {
            s.lock().unwrap().push(format!("{} {}", r.method, r.path));
            let body = if r.path == "/watch/gameserver" {
                r#"{"result":{"status":{"state":"Allocated"}}}"#.to_string() + "\n"
            } else {
                "{}".to_string()
            };
            http::Response { status: 200, content_type: "application/json", body: body.into_bytes() }
        })
        .expect("the port is free again");
        let until = Instant::now() + Duration::from_secs(10);
        while !(agones.stats().allocated.load(Ordering::Acquire)
            && seen.lock().unwrap().iter().filter(|c| *c == "POST /health").count() >= 2)
        {
            assert!(Instant::now() < until, "calls seen: {:?}", seen.lock().unwrap());
            std::thread::sleep(Duration::from_millis(50));
        }
        agones.shutdown();
        let calls: Vec<String> = seen.lock().unwrap().iter().filter(|c| !c.contains("/watch")).cloned().collect();
        assert_eq!(calls[..2], ["POST /ready", "PUT /alpha/player/capacity"], "{calls:?}");
        assert_eq!(calls.last().map(String::as_str), Some("POST /shutdown"), "{calls:?}");
        let logged: Vec<String> = rx.try_iter().collect();
        assert!(logged.iter().any(|l| l.contains("Ready not taken")), "{logged:?}");
        assert_eq!(
            logged.iter().filter(|l| l.contains("/ready")).count(),
            1,
            "the first failure told, the retries quiet: {logged:?}"
        );
    }

    /// A sidecar that streams a line without end: the watch gives up on the stream at
    /// 64 KiB instead of growing its buffer.
    #[test]
    fn a_watch_line_without_end_is_cut_off() {
        let sidecar = http::Listener::start("127.0.0.1:0".parse().unwrap(), |_| http::Response {
            status: 200,
            content_type: "application/json",
            body: vec![b'a'; 3 * MAX_WATCH_LINE],
        })
        .unwrap();
        let (tx, _rx) = channel();
        let stats = AgonesStats::default();
        let mut last = String::new();
        let e = watch_once(sidecar.local_addr(), &stats, &tx, &mut last).expect_err("cut off");
        assert!(e.contains("a watch line past 65536 bytes"), "{e}");
    }

    #[test]
    fn the_state_is_read_from_a_watch_line() {
        let line =
            r#"{"result":{"object_meta":{"name":"gs-1"},"status":{"state" : "Allocated","address":"10.0.0.1"}}}"#;
        assert_eq!(json_string_field(line, "state").as_deref(), Some("Allocated"));
        assert_eq!(json_string_field(r#"{"state":3}"#, "state"), None);
        assert_eq!(json_string_field("{}", "state"), None);
    }
}
