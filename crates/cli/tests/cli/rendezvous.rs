//! `tickwire rendezvous` and `tickwire peer` as processes on loopback: tickets minted
//! by `token mint --match`, two peers that meet, go direct and play in sync, a private
//! pair relayed, the service's figures on SIGTERM; bad tickets and arguments refused.
//! (Real NATs: `tests/nat/matrix.sh`.)

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tickwire"));
    c.env_remove("TICKWIRE_TOKEN_KEY").env_remove("TICKWIRE_TICKET").env_remove("TICKWIRE_MATCH_SECRET");
    c
}

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("rdv-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("tickwire runs")
}

fn write(path: &PathBuf, o: Output) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(path, o.stdout).unwrap();
}

/// A rendezvous on a free loopback port: the child and its address.
fn rendezvous(key: &Path) -> (Child, String) {
    let mut child = bin()
        .args(["rendezvous", "--bind", "127.0.0.1:0", "--key-file", key.to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("listening ").expect("a listening line").to_string();
    (child, addr)
}

fn stop(mut child: Child) -> String {
    // As an orchestrator stops it.
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(5);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the rendezvous did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Two peers of match `id` through `rdv`, `private` or not: their stdouts.
fn pair(d: &Path, key: &Path, rdv: &str, id: &str, private: bool) -> [String; 2] {
    let secret = d.join(format!("secret{id}"));
    write(&secret, run(&["token", "key"]));
    let peers: Vec<Child> = (0..2)
        .map(|slot| {
            let ticket = d.join(format!("ticket{id}-{slot}"));
            let s = slot.to_string();
            let k = key.to_str().unwrap();
            write(
                &ticket,
                run(&[
                    "token",
                    "mint",
                    "--key-file",
                    k,
                    "--addresses",
                    rdv,
                    "--match",
                    id,
                    "--slot",
                    &s,
                    "--players",
                    "2",
                ]),
            );
            let mut args = vec!["peer", "--rendezvous", rdv, "--slot", &s, "--players", "2", "--seconds", "2"];
            let (t, sec) = (ticket.to_str().unwrap().to_string(), secret.to_str().unwrap().to_string());
            args.extend(["--ticket-file", &t, "--secret-file", &sec, "--bind", "127.0.0.1:0"]);
            if private {
                args.push("--private");
            }
            bin().args(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
        })
        .collect();
    let outs: Vec<String> = peers
        .into_iter()
        .map(|p| {
            let o = p.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            assert!(o.status.success(), "{text}\n{}", String::from_utf8_lossy(&o.stderr));
            text
        })
        .collect();
    [outs[0].clone(), outs[1].clone()]
}

#[test]
fn peers_meet_through_tickwire_rendezvous_and_play_in_sync() {
    let d = dir("meet");
    let key = d.join("key");
    write(&key, run(&["token", "key"]));
    let (child, rdv) = rendezvous(&key);
    for (i, out) in pair(&d, &key, &rdv, "7", false).iter().enumerate() {
        let done = out.lines().last().unwrap();
        assert!(done.contains("\"desyncs\":0") && done.contains("\"disconnects\":0"), "peer {i}: {done}");
        assert!(done.contains(&format!("\"{}\":\"direct\"", 1 - i)), "peer {i}: {done}");
        assert!(out.contains(&format!("\"path\":\"relayed\",\"addr\":\"{rdv}\"")), "relayed first: {out}");
        assert!(out.contains("\"event\":\"synchronized\""), "{out}");
    }
    for (i, out) in pair(&d, &key, &rdv, "8", true).iter().enumerate() {
        let done = out.lines().last().unwrap();
        assert!(done.contains(&format!("\"{}\":\"relayed\"", 1 - i)), "peer {i}: {done}");
        assert!(!out.contains("\"direct\""), "a private peer never goes direct: {out}");
    }
    let figures = stop(child);
    let last = figures.lines().last().unwrap();
    assert!(last.starts_with("{\"event\":\"done\",") && last.contains("\"matches_made\":2"), "{last}");
    assert!(last.contains("\"refused\":0") && last.contains("\"strangers\":0"), "{last}");
}

#[test]
fn bad_tickets_and_arguments_are_refused_by_name() {
    let d = dir("bad");
    let key = d.join("key");
    write(&key, run(&["token", "key"]));
    let k = key.to_str().unwrap();
    let mint = |extra: &[&str]| {
        let mut a = vec!["token", "mint", "--key-file", k, "--addresses", "127.0.0.1:9"];
        a.extend_from_slice(extra);
        run(&a)
    };
    let o = mint(&["--match", "1", "--slot", "2", "--players", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("slot 2 is not below players 2"));
    let o = mint(&["--match", "1", "--slot", "0", "--players", "9"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("2..=8"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = mint(&["--slot", "0"]);
    assert_eq!(o.status.code(), Some(2), "--slot needs --match");
    // A peer without its secret, or with a ticket that does not read.
    let o = run(&["peer", "--rendezvous", "127.0.0.1:9", "--slot", "0", "--players", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--secret-file"));
    let junk = d.join("junk");
    std::fs::write(&junk, "abcd").unwrap();
    let j = junk.to_str().unwrap();
    let o = run(&[
        "peer",
        "--rendezvous",
        "127.0.0.1:9",
        "--slot",
        "0",
        "--players",
        "2",
        "--secret-file",
        k,
        "--ticket-file",
        j,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("ticket"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&["rendezvous", "--bind", "127.0.0.1:0"]);
    assert_eq!(o.status.code(), Some(2), "no key: refused");
}
