//! The `tickwire` command-line tool: a live demo over the link simulator, loopback
//! and relay benchmarks, the scenario lab, and connect tokens. The command line and
//! its help are declared in `args.rs`.
//!
//! Exit codes: 0 success, 1 the run completed but failed its check (a client's state
//! differs from the server's in `demo`, an error in `lab`), 2 bad arguments.

mod args;
mod args_serve;
mod bench;
mod bench_aead;
mod bench_crypto;
mod bench_endpoint;
mod bench_relay;
mod bench_serve;
mod boxes;
mod demo;
mod peer;
mod rendezvous;
mod serve;
mod signals;
mod token;

use std::process::ExitCode;

use args::{Bench, Cli, Command, TokenAction, UsageError};
use clap::Parser;

fn main() -> ExitCode {
    // `serve --config FILE`: the file's options go before the command line's.
    let argv = match serve::expand_config(std::env::args_os().collect()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}\n\nFor more information, try 'tickwire serve --help'.");
            return ExitCode::from(2);
        }
    };
    // Usage errors and help: clap prints them and exits (2, or 0 for help).
    let cli = Cli::parse_from(argv);
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match run(cli.command, &argv) {
        Ok(code) => code,
        Err((UsageError(msg), command)) => {
            eprintln!("error: {msg}\n\nFor more information, try 'tickwire {command} --help'.");
            ExitCode::from(2)
        }
    }
}

/// Runs the command; a refusal comes back with the words that name the subcommand.
fn run(command: Command, argv: &[String]) -> Result<ExitCode, (UsageError, &'static str)> {
    match command {
        Command::Demo(a) => Ok(demo::run(&demo::Options {
            clients: a.clients,
            seconds: a.seconds,
            latency_ms: a.latency_ms,
            jitter_ms: a.jitter_ms,
            loss_pct: a.loss_pct,
        })),
        Command::Bench(b) => match b.which {
            Bench::Loopback(a) => Ok(bench::run(a.messages, argv)),
            Bench::Crypto(_) => Ok(bench_crypto::run(argv)),
            Bench::Endpoint(a) => Ok(bench_endpoint::run(&a.clients, a.ticks, a.rounds, a.only, argv)),
            Bench::Serve(a) => bench_serve::run(&a).map_err(|e| (e, "bench serve")),
            Bench::Relay(a) => {
                let scenarios = if a.one_run() {
                    let latency = a.latency_ms.unwrap_or(0.0);
                    let jitter = a.jitter_ms.unwrap_or(0.0);
                    let loss = a.loss_pct.unwrap_or(0.0);
                    vec![bench_relay::Scenario {
                        label: if latency + jitter + loss == 0.0 {
                            "perfect link".to_string()
                        } else {
                            format!("{latency}±{jitter} ms, {loss}% loss")
                        },
                        clients: a.clients.unwrap_or(16),
                        input_size: a.input_size.unwrap_or(2),
                        input_period: a.input_period.unwrap_or(1),
                        link: bench_relay::link(latency, jitter, loss),
                        seconds: a.seconds,
                    }]
                } else {
                    bench_relay::presets(a.seconds)
                };
                Ok(bench_relay::run(&scenarios, argv))
            }
        },
        Command::Lab(a) => match tickwire_lab::run(&a.options(), |s| print!("{s}")) {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(e) => {
                eprintln!("tickwire lab: {e}");
                Ok(ExitCode::from(1))
            }
        },
        Command::Rendezvous(a) => rendezvous::run(&a).map_err(|e| (e, "rendezvous")),
        Command::Peer(a) => peer::run(&a).map_err(|e| (e, "peer")),
        Command::Serve(a) => serve::run(&a).map_err(|e| (e, "serve")),
        Command::Token(t) => {
            let words = match t.action {
                TokenAction::Key => "token key",
                TokenAction::Mint(_) => "token mint",
            };
            token::run(&t.action).map_err(|e| (e, words))
        }
    }
}
