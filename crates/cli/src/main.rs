//! The `tickwire` command-line tool: a live demo over the link simulator, loopback
//! benchmarks, and the scenario lab.
//!
//! Exit codes: 0 success, 1 the run completed but failed its check (e.g. an incomplete
//! reliable stream in `demo`), 2 bad arguments or a subcommand that is not available.

mod args;
mod bench;
mod bench_crypto;
mod bench_relay;
mod boxes;
mod demo;
mod token;

use std::process::ExitCode;

use args::{Args, UsageError};

const USAGE: &str = "\
usage:
  tickwire demo [--clients N] [--seconds S] [--latency-ms MS] [--jitter-ms MS] [--loss-pct P]
      A relay match in this process: a server and N clients (tw_session's relay modes,
      each with its own socket on 127.0.0.1 and the link simulator) play a small game
      at 60 Hz, the clients predicting ahead of the server. A net-graph line per client
      every second (RTT, lead, server buffer, prediction distance, re-simulated ticks,
      late inputs); at the end every client's state is compared with the server's at
      every tick (exit 1 if any differ). S seconds of play after the clients join.
      Defaults: --clients 4 --seconds 10 --latency-ms 40 --jitter-ms 5 --loss-pct 2
      (latency, jitter and loss apply to each direction).
  tickwire bench loopback [--messages N]
      Push-to-wire latency, engine-to-engine RTT and wire bytes per message on
      127.0.0.1 (encrypted and insecure plaintext), and what sealing and opening a
      packet costs. Default --messages 2000. Build with --release for meaningful numbers.
  tickwire bench relay [--clients N] [--input-size B] [--input-period T] [--latency-ms MS]
                       [--jitter-ms MS] [--loss-pct P] [--seconds S]
      A relay server session and N client sessions on the deterministic link simulator:
      the server's CPU per tick (its session's calls only), bytes per client per second
      down and up, and the slowest client's authoritative tick rate. Without options,
      issue 15's scale targets (64 x 16 B and 16 x 64 B on a perfect link, 3 clients at
      500±100 ms with 25% loss and duplicates and 10% reordering, 16 and 32 clients at
      100±30 ms with 8% loss); with any, one run (defaults: 16 clients, 2 B inputs new
      every tick, a perfect link). Latency ± jitter is uniform, each direction. Default
      --seconds 60 of game time. Build with --release for meaningful numbers.
  tickwire lab [--scenario ID[,ID...]] [--seconds N] [--seeds K] [--seed N] [--out DIR | --bound]
      Time-sync scenarios S0-S9 on the deterministic simulator: tickwire against three
      baselines over K seeds (default 20, from seed N, default 1), one table per
      scenario of medians beside the oracle limits, each pair won, tied or lost by the
      95% interval of the paired differences; issue 15's far links
      (F1, F2) and wide matches (W1-W4), tickwire only, with the slowest client's steps
      per second and the kicks; --out writes CSV and SVG plots (lead, server buffer,
      time scale). Default: every scenario but W1-W4 (they run when named), 300 s of
      game time each. --bound runs no controller: the hindsight bound of a steady lead
      against the oracle per scenario (crates/lab/src/bound.rs).
  tickwire token key
      Prints a new random 32-byte key (hex): a relay server's connect key, shared with
      the game backend, or a P2P match secret.
  tickwire token mint [--key-file PATH] --addresses IP:PORT[,IP:PORT...] [--client-id N]
                      [--protocol-id N] [--expire-secs S] [--timeout-secs S] [--user-data HEX]
      Prints a connect token (hex, 1024 bytes) for one client, as a backend mints it
      (tw_connect_token_generate does the same from C). The key (64 hex digits) comes
      from --key-file (as `tickwire token key > PATH` writes it) or else from the
      TICKWIRE_TOKEN_KEY environment variable; never on the command line, where the
      process list shows it (--key is refused). Defaults: --client-id 1, the default
      protocol id, --expire-secs 3600, --timeout-secs 0 (the endpoints' own).
  tickwire help";

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match run(&argv) {
        Ok(code) => code,
        Err(UsageError(msg)) => {
            eprintln!("tickwire: {msg}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run(argv: &[String]) -> Result<ExitCode, UsageError> {
    let Some((cmd, rest)) = argv.split_first() else {
        return Err(UsageError("missing subcommand".into()));
    };
    match cmd.as_str() {
        "demo" => {
            let mut a = Args::parse(rest, &["clients", "seconds", "latency-ms", "jitter-ms", "loss-pct"])?;
            a.no_positional()?;
            let opts = demo::Options {
                clients: a.get("clients", 4usize, 1..=64)?,
                seconds: a.get("seconds", 10u64, 1..=3600)?,
                latency_ms: a.get("latency-ms", 40.0f64, 0.0..=5000.0)?,
                jitter_ms: a.get("jitter-ms", 5.0f64, 0.0..=5000.0)?,
                loss_pct: a.get("loss-pct", 2.0f64, 0.0..=90.0)?,
            };
            Ok(demo::run(&opts))
        }
        "bench" if rest.first().is_some_and(|w| w == "relay") => {
            let a = Args::parse(
                &rest[1..],
                &["clients", "input-size", "input-period", "seconds", "latency-ms", "jitter-ms", "loss-pct"],
            )?;
            let seconds = a.get("seconds", 60u64, 4..=3600)?;
            let custom = ["clients", "input-size", "input-period", "latency-ms", "jitter-ms", "loss-pct"];
            let mut one_run = false;
            for name in custom {
                one_run |= a.text(name)?.is_some();
            }
            let scenarios = if one_run {
                let (latency, jitter) =
                    (a.get("latency-ms", 0.0f64, 0.0..=5000.0)?, a.get("jitter-ms", 0.0, 0.0..=5000.0)?);
                let loss = a.get("loss-pct", 0.0f64, 0.0..=90.0)?;
                vec![bench_relay::Scenario {
                    label: if latency + jitter + loss == 0.0 {
                        "perfect link".to_string()
                    } else {
                        format!("{latency}±{jitter} ms, {loss}% loss")
                    },
                    clients: a.get("clients", 16usize, 1..=64)?,
                    input_size: a.get("input-size", 2usize, 1..=64)?,
                    input_period: a.get("input-period", 1u64, 1..=1_000_000)?,
                    link: bench_relay::link(latency, jitter, loss),
                    seconds,
                }]
            } else {
                bench_relay::presets(seconds)
            };
            Ok(bench_relay::run(&scenarios, argv))
        }
        "bench" => {
            let mut a = Args::parse(rest, &["messages"])?;
            match a.positional().as_slice() {
                [what] if what == "loopback" => {}
                [] => return Err(UsageError("bench: missing benchmark name (loopback, relay)".into())),
                other => {
                    return Err(UsageError(format!(
                        "bench: unknown benchmark {:?} (expected: loopback, relay)",
                        other.join(" ")
                    )));
                }
            }
            let messages = a.get("messages", 2000usize, 10..=10_000_000)?;
            Ok(bench::run(messages, argv))
        }
        "lab" => {
            let opts = match tickwire_lab::parse_args(rest) {
                Ok(o) => o,
                Err(e) if e.is_empty() => {
                    println!("{}", tickwire_lab::LAB_USAGE);
                    return Ok(ExitCode::SUCCESS);
                }
                Err(e) => return Err(UsageError(format!("lab: {e}"))),
            };
            match tickwire_lab::run(&opts, |s| print!("{s}")) {
                Ok(()) => Ok(ExitCode::SUCCESS),
                Err(e) => {
                    eprintln!("tickwire lab: {e}");
                    Ok(ExitCode::from(1))
                }
            }
        }
        "token" => token::run(rest),
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        other => Err(UsageError(format!("unknown subcommand {other:?}"))),
    }
}
