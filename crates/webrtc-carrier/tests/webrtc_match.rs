//! A P2P match between two processes, each a `tickwire-webrtc-peer`, carried by a
//! WebRTC data channel (str0m, ICE over loopback UDP, DTLS, SCTP): this test relays
//! their signaling and checks that both confirm every tick of the match with the same
//! state, detect no desync, and that the match's datagrams really crossed the channel.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use tickwire_webrtc_carrier::digest;

const PEER: &str = env!("CARGO_BIN_EXE_tickwire-webrtc-peer");
const TICKS: u32 = 300;
const SEED: u64 = 0x7469_636b_7769_7265;
const DEADLINE: Duration = Duration::from_secs(60);
const IDS: [u64; 2] = [1_001, 2_002];
const ROLES: [&str; 2] = ["offer", "answer"];

/// A line a peer printed: on standard output (`Some`), or the end of it (`None`).
enum Said {
    Out(usize, Option<String>),
    Err(usize, String),
}

struct Peer {
    child: Child,
    stdin: ChildStdin,
}

fn spawn(i: usize, tx: &Sender<Said>) -> Peer {
    let mut child = Command::new(PEER)
        .args([ROLES[i], &IDS[i].to_string(), &IDS[1 - i].to_string(), &TICKS.to_string(), &SEED.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {PEER}: {e}"));
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = tx.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if out.send(Said::Out(i, Some(line))).is_err() {
                return;
            }
        }
        let _ = out.send(Said::Out(i, None));
    });
    let err = tx.clone();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        let _ = err.send(Said::Err(i, text));
    });
    Peer { child, stdin }
}

/// A peer still running when the test ends (it failed) is killed.
impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn tell(peer: &mut Peer, line: &str) {
    // A peer that died shows in its exit status and its standard error.
    let _ = writeln!(peer.stdin, "{line}").and_then(|()| peer.stdin.flush());
}

/// What one peer reported.
#[derive(Default)]
struct Report {
    ticks: BTreeMap<u32, String>,
    result: HashMap<String, String>,
    stderr: String,
    closed: bool,
    done: bool,
}

impl Report {
    fn figure(&self, key: &str) -> u64 {
        let v = self.result.get(key).unwrap_or_else(|| panic!("no {key} in {:?}", self.result));
        v.parse().unwrap_or_else(|_| panic!("{key}={v}"))
    }
}

#[test]
fn a_p2p_match_runs_in_sync_between_two_processes_over_a_webrtc_data_channel() {
    let started = Instant::now();
    let (tx, rx) = mpsc::channel();
    let mut peers = [spawn(0, &tx), spawn(1, &tx)];
    drop(tx);
    let mut reports: [Report; 2] = Default::default();
    let mut stopped = false;
    let mut stderr_seen = [false; 2];
    let mut timed_out = false;
    while !(reports.iter().all(|r| r.closed) && stderr_seen.iter().all(|&s| s)) {
        let left = DEADLINE.saturating_sub(started.elapsed());
        let said = match rx.recv_timeout(left) {
            Ok(said) => said,
            Err(RecvTimeoutError::Timeout) => {
                timed_out = true;
                break;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        };
        match said {
            Said::Err(i, text) => {
                reports[i].stderr = text;
                stderr_seen[i] = true;
            }
            Said::Out(i, None) => reports[i].closed = true,
            Said::Out(i, Some(line)) => {
                let (word, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
                match word {
                    // Signaling: each SDP to the other peer.
                    "OFFER" | "ANSWER" => tell(&mut peers[1 - i], &line),
                    "TICK" => {
                        let (t, c) = rest.split_once(' ').unwrap_or_else(|| panic!("{line}"));
                        reports[i].ticks.insert(t.parse().unwrap(), c.to_string());
                    }
                    "RESULT" => {
                        for kv in rest.split_whitespace() {
                            let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("{kv}"));
                            reports[i].result.insert(k.to_string(), v.to_string());
                        }
                    }
                    "DONE" => reports[i].done = true,
                    _ => panic!("peer {i} said {line:?}"),
                }
                if !stopped && reports.iter().all(|r| r.done) {
                    stopped = true;
                    for p in &mut peers {
                        tell(p, "STOP");
                    }
                }
            }
        }
    }
    // Every peer's exit status; a peer still running at the deadline is killed.
    let mut statuses = Vec::new();
    for (i, p) in peers.iter_mut().enumerate() {
        let status = loop {
            match p.child.try_wait().unwrap() {
                Some(s) => break Some(s),
                None if timed_out || started.elapsed() > DEADLINE => {
                    let _ = p.child.kill();
                    let _ = p.child.wait();
                    break None;
                }
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        statuses.push((i, status));
    }
    let elapsed = started.elapsed();
    let logs = || {
        reports
            .iter()
            .enumerate()
            .map(|(i, r)| format!("--- peer {i} ({}) ---\n{}", ROLES[i], r.stderr))
            .collect::<String>()
    };
    for (i, status) in &statuses {
        match status {
            Some(s) if s.success() => {}
            Some(s) => panic!("peer {i} ({}) exited with {s}\n{}", ROLES[*i], logs()),
            None => panic!("peer {i} ({}) still running after {DEADLINE:?}: killed\n{}", ROLES[*i], logs()),
        }
    }
    for (i, r) in reports.iter().enumerate() {
        assert!(r.done, "peer {i} never reported\n{}", logs());
        let want: Vec<u32> = (0..TICKS).collect();
        assert_eq!(r.ticks.keys().copied().collect::<Vec<_>>(), want, "peer {i} reports every tick\n{}", logs());
        assert!(r.figure("confirmed") >= u64::from(TICKS), "peer {i} confirmed tick {TICKS}");
        assert_eq!(r.figure("desyncs"), 0, "peer {i} saw desync events\n{}", logs());
        assert_eq!(r.figure("core_desyncs"), 0, "peer {i} counted desyncs\n{}", logs());
        assert!(r.figure("checks") > 0, "peer {i} compared checksums with its peer");
        // The match crossed the data channel: the session's datagrams were written to
        // it (pulled) and what it delivered was taken (pushed), hundreds of each.
        assert!(r.figure("pulled") > u64::from(TICKS) / 2, "peer {i} sent over the channel: {:?}", r.result);
        assert!(r.figure("pushed") > u64::from(TICKS) / 2, "peer {i} received over the channel: {:?}", r.result);
        // Through the socket: every message the channel delivered came in UDP datagrams.
        assert!(r.figure("udp_received") >= r.figure("pushed"), "peer {i}'s socket: {:?}", r.result);
        // Each peer's digest is of the checksums it printed.
        let sums: Vec<u64> = r.ticks.values().map(|c| u64::from_str_radix(c, 16).unwrap()).collect();
        assert_eq!(format!("{:016x}", digest(&sums)), r.result["digest"], "peer {i}'s digest");
    }
    let [a, b] = &reports;
    if let Some(t) = (0..TICKS).find(|t| a.ticks[t] != b.ticks[t]) {
        panic!("tick {t}: offerer {} answerer {}\n{}", a.ticks[&t], b.ticks[&t], logs());
    }
    assert_eq!(a.result["digest"], b.result["digest"]);
    println!(
        "webrtc match: {TICKS} ticks in sync in {:.1} s, digest {}; checksums compared {} / {}, rollbacks {} / {}, \
         datagrams pulled {} / {}, pushed {} / {}, channel writes refused {} / {}, UDP datagrams received {} / {}, channel open after {} / {} ms",
        elapsed.as_secs_f64(),
        a.result["digest"],
        a.figure("checks"),
        b.figure("checks"),
        a.figure("rollbacks"),
        b.figure("rollbacks"),
        a.figure("pulled"),
        b.figure("pulled"),
        a.figure("pushed"),
        b.figure("pushed"),
        a.figure("refused_writes"),
        b.figure("refused_writes"),
        a.figure("udp_received"),
        b.figure("udp_received"),
        a.figure("connect_ms"),
        b.figure("connect_ms"),
    );
}
