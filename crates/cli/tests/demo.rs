//! `tickwire demo` as a user runs it (README): the binary, its arguments, its exit
//! code. A real-time run on 127.0.0.1 with the link simulator, so it takes its 30 s of
//! play plus the joins. Issue 15: at 16 clients on 100 ± 30 ms with 8% loss every
//! client must stay in the match and end in the server's state (exit 0). The same run
//! at 32 clients is in `scripts/relay-scale.sh`.

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
