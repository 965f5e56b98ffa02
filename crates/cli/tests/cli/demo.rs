//! `tickwire demo` as a user runs it (README): the binary, its arguments, its exit
//! code. A real-time run on 127.0.0.1 with the link simulator, so it takes its 30 s of
//! play plus the joins. Issue 15: at 16 clients on 100 ± 30 ms with 8% loss every
//! client must stay in the match and end in the server's state (exit 0). The same run
//! at 32 clients is in `scripts/relay-scale.sh`. And the command line around it: every
//! command's help, and options refused before anything runs.

use std::process::Command;

#[test]
fn demo_sixteen_clients_100ms_30ms_jitter_8pct_loss_exits_0() {
    let args =
        ["demo", "--clients", "16", "--seconds", "30", "--latency-ms", "100", "--jitter-ms", "30", "--loss-pct", "8"];
    let out = Command::new(env!("CARGO_BIN_EXE_tickwire")).args(args).output().expect("tickwire runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The net graph is long: the end (the per-client table) and any error say what happened.
    let tail: Vec<&str> = stdout.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect();
    assert!(
        out.status.success(),
        "tickwire {} exited with {:?}\n--- stdout (last 30 lines) ---\n{}\n--- stderr ---\n{stderr}",
        args.join(" "),
        out.status.code(),
        tail.join("\n")
    );
}

fn tickwire(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tickwire")).args(args).output().expect("tickwire runs")
}

#[test]
fn every_command_answers_help_with_status_0() {
    let commands: [&[&str]; 10] = [
        &[],
        &["demo"],
        &["bench"],
        &["bench", "loopback"],
        &["bench", "relay"],
        &["lab"],
        &["token"],
        &["token", "key"],
        &["token", "mint"],
        &["help", "demo"],
    ];
    for words in commands {
        let mut args = words.to_vec();
        if words.first() != Some(&"help") {
            args.push("--help");
        }
        let o = tickwire(&args);
        let help = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{args:?}: {:?} {}", o.status.code(), String::from_utf8_lossy(&o.stderr));
        assert!(help.contains("Usage: tickwire"), "{args:?}: {help}");
    }
    let help = String::from_utf8_lossy(&tickwire(&["demo", "--help"]).stdout).into_owned();
    for option in ["--clients", "--seconds", "--latency-ms", "--jitter-ms", "--loss-pct", "[default: 4]"] {
        assert!(help.contains(option), "{option}: {help}");
    }
}

#[test]
fn bad_demo_options_are_refused_with_status_2_naming_the_option() {
    for (args, names) in [
        (&["demo", "--clients", "many"][..], "--clients"),
        (&["demo", "--clients", "65"][..], "--clients"),
        (&["demo", "--loss-pct", "95"][..], "--loss-pct"),
        (&["demo", "--players", "4"][..], "--players"),
        (&["demo", "--seconds"][..], "--seconds"),
        (&["bench", "relay", "--input-size", "0"][..], "--input-size"),
        (&["bench", "endpoint", "--clients", "0"][..], "--clients"),
        (&["bench", "endpoint", "--only", "cold"][..], "--only"),
        (&["lab", "--seeds", "1"][..], "--seeds"),
    ] {
        let o = tickwire(args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(o.stdout.is_empty(), "{args:?}: nothing runs");
        assert!(stderr.contains(names), "{args:?}: {stderr}");
    }
    // No command: the help, on stderr, with status 2.
    let o = tickwire(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("Usage: tickwire"));
}

#[test]
fn bench_endpoint_prints_a_row_for_each_size_and_protection() {
    let o = tickwire(&["bench", "endpoint", "--clients", "3,5", "--ticks", "4", "--rounds", "1"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out} {}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| l.starts_with("| ") && l.as_bytes().get(2).is_some_and(u8::is_ascii_digit))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    let shape: Vec<(&str, &str)> = rows.iter().map(|r| (r[0], r[1])).collect();
    assert_eq!(shape, [("3", "plaintext"), ("3", "encrypted"), ("5", "plaintext"), ("5", "encrypted")], "{out}");
    for r in &rows {
        let figures: Vec<f64> = r[2..].iter().map(|f| f.parse().expect("a number")).collect();
        assert!(figures.iter().all(|&f| f > 0.0 && f.is_finite()), "{out}");
    }
    // --only times one kind of tick; the other columns say so.
    let o = tickwire(&["bench", "endpoint", "--clients", "3", "--ticks", "4", "--rounds", "1", "--only", "swept"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out} {}", String::from_utf8_lossy(&o.stderr));
    let row: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("| 3 | plaintext"))
        .expect("a row")
        .trim_matches('|')
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!((row[2], row[4], row[5]), ("-", "-", "-"), "{out}");
    assert!(row[3].parse::<f64>().is_ok_and(|f| f > 0.0), "{out}");
}
