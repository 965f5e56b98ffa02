//! The Agones SDK's REST calls, as a game server in an Agones pod makes them to its
//! SDK sidecar on localhost (`AGONES_SDK_HTTP_PORT`, default 9358): Ready once
//! listening, Health every period, the player capacity once, the players and matches
//! as labels when they change, Shutdown at the end, and the GameServer watch, which
//! says when the server was Allocated. Bodies are JSON; int64 numbers are strings.
//!
//! Written against the published API (the SDK's REST description; see
//! ../shared/reference/fleet.md); no Agones cluster runs here. The tests check every
//! request's method, path and body against it with a stand-in sidecar.

use std::io::{BufRead, BufReader, Write};
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
        // The watch blocks on its stream: a thread of its own, never joined (it ends
        // with the process, or when the sidecar closes the stream).
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

fn calls(sdk: SocketAddr, health: Duration, rx: &Receiver<Signal>, stats: &AgonesStats, log: &Sender<String>) {
    let call = |method: &str, path: &str, body: &str| match http::call(sdk, method, path, Some(body)) {
        Ok((200, _)) => {
            stats.calls.fetch_add(1, Ordering::Relaxed);
        }
        Ok((status, answer)) => {
            stats.failures.fetch_add(1, Ordering::Relaxed);
            let _ = log.send(format!("agones {method} {path}: status {status}: {}", answer.trim()));
        }
        Err(e) => {
            stats.failures.fetch_add(1, Ordering::Relaxed);
            let _ = log.send(format!("agones {method} {path}: {e}"));
        }
    };
    let mut ready = false;
    let mut next_health = Instant::now() + health;
    loop {
        let wait = next_health.saturating_duration_since(Instant::now());
        match rx.recv_timeout(if ready { wait } else { Duration::from_secs(3600) }) {
            Ok(Signal::Ready { capacity }) => {
                call("POST", "/ready", "{}");
                call("PUT", "/alpha/player/capacity", &format!("{{\"count\":\"{capacity}\"}}"));
                ready = true;
                call("POST", "/health", "{}");
                next_health = Instant::now() + health;
            }
            Ok(Signal::Counts { players, matches }) => {
                for (key, value) in [("players", players), ("matches", matches)] {
                    call("PUT", "/metadata/label", &format!("{{\"key\":\"{key}\",\"value\":\"{value}\"}}"));
                }
            }
            Ok(Signal::Shutdown) | Err(RecvTimeoutError::Disconnected) => {
                call("POST", "/shutdown", "{}");
                return;
            }
            Err(RecvTimeoutError::Timeout) => {
                call("POST", "/health", "{}");
                next_health += health;
                if next_health < Instant::now() {
                    next_health = Instant::now() + health;
                }
            }
        }
    }
}

/// The GameServer watch: one JSON object a line, `{"result": GameServer}`; each new
/// `status.state` is logged, and Allocated is remembered.
fn watch(sdk: SocketAddr, stats: &AgonesStats, log: &Sender<String>) {
    let Ok(mut s) = TcpStream::connect_timeout(&sdk, Duration::from_secs(2)) else {
        let _ = log.send(format!("agones watch: cannot connect to {sdk}"));
        return;
    };
    let req = format!("GET /watch/gameserver HTTP/1.1\r\nHost: {sdk}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return;
    }
    let mut last = String::new();
    let reader = BufReader::new(s);
    for line in reader.lines() {
        let Ok(line) = line else { return };
        let Some(state) = json_string_field(&line, "state") else { continue };
        if state != last {
            let _ = log.send(format!("agones: the GameServer is {state}"));
            if state == "Allocated" {
                stats.allocated.store(true, Ordering::Release);
            }
            last = state;
        }
    }
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

    #[test]
    fn the_state_is_read_from_a_watch_line() {
        let line =
            r#"{"result":{"object_meta":{"name":"gs-1"},"status":{"state" : "Allocated","address":"10.0.0.1"}}}"#;
        assert_eq!(json_string_field(line, "state").as_deref(), Some("Allocated"));
        assert_eq!(json_string_field(r#"{"state":3}"#, "state"), None);
        assert_eq!(json_string_field("{}", "state"), None);
    }
}
