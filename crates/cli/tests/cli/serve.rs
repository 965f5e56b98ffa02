//! `tickwire serve` and `tickwire bench serve` as an operator starts them: every option
//! in `--help` with its environment variable, serve tokens minted by `token mint`, and
//! bad starts refused by name. (The server playing 20 matches under an Agones stand-in,
//! Prometheus and a drain is tests/serve/run.sh.)

use std::process::{Command, Output};

use tickwire_proto::token::{self, ConnectToken};
use tickwire_proto::{EndpointConfig, Secret, ServeClaim};

const ENV: &str = "TICKWIRE_TOKEN_KEY";
const KEY: &str = "1111111111111111111111111111111111111111111111111111111111111111";

fn tickwire(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tickwire"));
    c.args(args).env_remove(ENV).env_remove("AGONES_SDK_HTTP_PORT");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("tickwire runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn serve_help_lists_every_option_with_its_environment_variable() {
    let o = tickwire(&["serve", "--help"], &[]);
    assert!(o.status.success());
    let help = text(&o.stdout);
    for (option, env) in [
        ("--bind", "TICKWIRE_SERVE_BIND"),
        ("--public", "TICKWIRE_SERVE_PUBLIC"),
        ("--key-file", "TICKWIRE_SERVE_KEY_FILE"),
        ("--protocol-id", "TICKWIRE_SERVE_PROTOCOL_ID"),
        ("--max-matches", "TICKWIRE_SERVE_MAX_MATCHES"),
        ("--max-clients", "TICKWIRE_SERVE_MAX_CLIENTS"),
        ("--max-clients-per-ip", "TICKWIRE_SERVE_MAX_CLIENTS_PER_IP"),
        ("--checksum-interval", "TICKWIRE_SERVE_CHECKSUM_INTERVAL"),
        ("--reconnect-secs", "TICKWIRE_SERVE_RECONNECT_SECS"),
        ("--drain-secs", "TICKWIRE_SERVE_DRAIN_SECS"),
        ("--metrics", "TICKWIRE_SERVE_METRICS"),
        ("--admin", "TICKWIRE_SERVE_ADMIN"),
        ("--agones", "TICKWIRE_SERVE_AGONES"),
        ("--health-secs", "TICKWIRE_SERVE_HEALTH_SECS"),
        ("--log-format", "TICKWIRE_SERVE_LOG_FORMAT"),
        ("--realtime-priority", "TICKWIRE_SERVE_REALTIME_PRIORITY"),
    ] {
        assert!(help.contains(option) && help.contains(&format!("[env: {env}=")), "{option} {env}: {help}");
    }
    assert!(help.contains("--config"), "{help}");
    let o = tickwire(&["bench", "serve", "--help"], &[]);
    assert!(o.status.success() && text(&o.stdout).contains("--late-players"));
}

#[test]
fn token_mint_makes_serve_tokens_and_refuses_mixed_claims() {
    let mint = |extra: &[&str]| {
        let mut args = vec!["token", "mint", "--addresses", "127.0.0.1:7777", "--client-id", "9"];
        args.extend_from_slice(extra);
        tickwire(&args, &[(ENV, KEY)])
    };
    let o = mint(&["--serve-match", "77", "--players", "4", "--input-size", "8", "--tick-rate", "30"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let hex = text(&o.stdout);
    let bytes: Vec<u8> =
        (0..hex.trim().len()).step_by(2).map(|i| u8::from_str_radix(&hex.trim()[i..i + 2], 16).unwrap()).collect();
    let t = ConnectToken::decode(&bytes).unwrap();
    let key = Secret([0x11; 32]);
    let claims = token::open(&key, EndpointConfig::default().protocol_id, t.expires, &t.nonce, &t.sealed).unwrap();
    let claim = ServeClaim::from_user_data(&claims.user_data).expect("a serve claim");
    assert_eq!(claim, ServeClaim { match_id: 77, players: 4, input_size: 8, tick_rate_hz: 30 });
    for (extra, needle) in [
        (&["--serve-match", "1"][..], "--players"),
        (&["--serve-match", "1", "--players", "4", "--slot", "0"][..], "--slot"),
        (&["--serve-match", "1", "--players", "65"][..], "players: 65"),
        (&["--serve-match", "1", "--players", "4", "--tick-rate", "0"][..], "tick_rate_hz: 0"),
        (&["--players", "4"][..], "--players needs --match or --serve-match"),
    ] {
        let o = mint(extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o.stdout));
        assert!(text(&o.stderr).contains(needle), "{extra:?}: {}", text(&o.stderr));
    }
}

#[test]
fn bad_serve_starts_are_refused_by_name() {
    // No key at all.
    let o = tickwire(&["serve", "--bind", "127.0.0.1:0"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    assert!(text(&o.stderr).contains("TICKWIRE_TOKEN_KEY"), "{}", text(&o.stderr));
    // A broken Agones environment.
    let o = tickwire(&["serve", "--bind", "127.0.0.1:0"], &[(ENV, KEY), ("AGONES_SDK_HTTP_PORT", "nine")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("AGONES_SDK_HTTP_PORT"), "{}", text(&o.stderr));
    // A bad environment variable is clap's to refuse, naming the option.
    let o = tickwire(&["serve"], &[(ENV, KEY), ("TICKWIRE_SERVE_MAX_MATCHES", "0")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--max-matches"), "{}", text(&o.stderr));
    // A config file with an unknown key.
    let path = std::env::temp_dir().join(format!("tw-serve-bad-{}.conf", std::process::id()));
    std::fs::write(&path, "max-players = 3\n").unwrap();
    let o = tickwire(&["serve", "--config", path.to_str().unwrap()], &[(ENV, KEY)]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("no option \"max-players\""), "{}", text(&o.stderr));
    // A port already taken: the bind fails with its reason, exit status 1.
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = tickwire(&["serve", "--bind", &addr], &[(ENV, KEY)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains(&addr), "{}", text(&o.stderr));
}

/// Two load runs in a row against one server each pick their own match ids, and a
/// first id past the bound is refused. (Both once took ids from 1: a run right after a
/// 500-match one met the connections the server still held for those ids, and 34 of
/// its 400 clients were refused.)
#[test]
fn bench_serve_runs_in_a_row_each_play_their_own_matches() {
    use std::io::{BufRead, BufReader};
    /// The server ends with the test, passed or failed.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut server = Command::new(env!("CARGO_BIN_EXE_tickwire"))
        .args(["serve", "--bind", "127.0.0.1:0", "--max-clients-per-ip", "0"])
        .env(ENV, KEY)
        .env_remove("AGONES_SDK_HTTP_PORT")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("tickwire serve runs");
    let mut first = String::new();
    BufReader::new(server.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let server = Killed(server);
    let addr = first.trim().strip_prefix("listening ").expect("the listening line").to_string();
    let run = || {
        let o = tickwire(
            &[
                "bench",
                "serve",
                "--server",
                &addr,
                "--matches",
                "2",
                "--players",
                "2",
                "--late-players",
                "0",
                "--seconds",
                "4",
            ],
            &[(ENV, KEY)],
        );
        let out = text(&o.stdout);
        // Every client synchronized and kept its connection (the rate over so short a
        // run is not judged here).
        let row: Vec<&str> =
            out.lines().find(|l| l.starts_with("2 ")).expect("the table's row").split_whitespace().collect();
        assert_eq!((row[1], row[2], row[4], row[5]), ("4", "4", "0", "0"), "{out}{}", text(&o.stderr));
        out.split("(ids ").nth(1).and_then(|r| r.split(')').next()).expect("the ids").to_string()
    };
    let (a, b) = (run(), run());
    drop(server);
    assert_ne!(a, b);
    let o = tickwire(&["bench", "serve", "--server", "127.0.0.1:9", "--match-base", "1099511627776"], &[(ENV, KEY)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--match-base"), "{}", text(&o.stderr));
}

/// `--realtime-priority 5`: the match thread (the main one) and the network thread run
/// at SCHED_FIFO 5, the metrics endpoint's thread at a fair priority. (CI runs as root;
/// without the right, the server refuses to start and names it.)
#[cfg(target_os = "linux")]
#[test]
fn serve_at_a_realtime_priority_puts_its_two_server_threads_there() {
    use std::io::{BufRead, BufReader};
    let mut server = Command::new(env!("CARGO_BIN_EXE_tickwire"))
        .args(["serve", "--bind", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--realtime-priority", "5"])
        .env(ENV, KEY)
        .env_remove("AGONES_SDK_HTTP_PORT")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("tickwire serve runs");
    let pid = server.id();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let first = lines.next().and_then(Result::ok);
    let second = lines.next().and_then(Result::ok);
    let mut threads = Vec::new();
    if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in dir.flatten() {
            let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else { continue };
            let (head, rest) = stat.rsplit_once(')').unwrap();
            let comm = head.split_once('(').unwrap().1.to_string();
            let f: Vec<&str> = rest.split_whitespace().collect();
            let tid: u32 = t.file_name().to_string_lossy().parse().unwrap();
            threads.push((tid, comm, f[41 - 3].parse::<u32>().unwrap(), f[40 - 3].parse::<u32>().unwrap()));
        }
    }
    let _ = server.kill();
    let out = server.wait_with_output().unwrap();
    let Some(first) = first.filter(|l| l.starts_with("listening ")) else {
        let err = text(&out.stderr);
        assert!(err.contains("CAP_SYS_NICE"), "{err}");
        return;
    };
    assert!(second.is_some_and(|l| l.starts_with("metrics ")), "{first}");
    let (fifo, other) = (1, 0);
    let main = threads.iter().find(|t| t.0 == pid).expect("the main thread");
    assert_eq!((main.2, main.3), (fifo, 5), "{threads:?}");
    let net: Vec<_> = threads.iter().filter(|t| t.1 == "tickwire-net").collect();
    assert!(!net.is_empty() && net.iter().all(|t| (t.2, t.3) == (fifo, 5)), "{threads:?}");
    let rest: Vec<_> = threads.iter().filter(|t| t.0 != pid && t.1 != "tickwire-net").collect();
    assert!(!rest.is_empty() && rest.iter().all(|t| (t.2, t.3) == (other, 0)), "{threads:?}");
    // Out of range: refused by name.
    let o = tickwire(&["serve", "--bind", "127.0.0.1:0", "--realtime-priority", "100"], &[(ENV, KEY)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--realtime-priority"), "{}", text(&o.stderr));
}
