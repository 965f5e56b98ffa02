//! The command line, declared with clap: every subcommand, its options, their types,
//! ranges and defaults, and the help text (`tickwire help`, `tickwire <command> --help`).
//! clap reports a usage error (an unknown option, a missing or bad value, naming the
//! option) on stderr and exits with status 2; help goes to stdout with status 0.

use std::fmt::Display;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, Parser, Subcommand};
use tickwire_proto::token::USER_DATA_SIZE;

pub use super::args_serve::{LogFormat, ServeArgs, ServeBenchArgs};

/// A refusal found after parsing (for example an unreadable key file); the caller
/// prints it and exits with status 2, as clap does for its own usage errors.
#[derive(Debug)]
pub struct UsageError(pub String);

/// tickwire's command-line tool: a live relay demo over the link simulator, benchmarks,
/// the time-sync scenario lab, and connect tokens for a game backend.
#[derive(Debug, Parser)]
#[command(
    name = "tickwire",
    version,
    subcommand_required = true,
    arg_required_else_help = true,
    after_help = "Exit status: 0 success; 1 the run completed but failed its check (a client's state differs \
                  from the server's in `demo`, an error in `lab`); 2 bad arguments."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Demo(DemoArgs),
    Bench(BenchArgs),
    Lab(LabArgs),
    Token(TokenArgs),
    Rendezvous(RendezvousArgs),
    Peer(PeerArgs),
    Serve(ServeArgs),
}

/// Runs a rendezvous: it introduces the peers of P2P matches and relays what cannot go direct.
///
/// Peers present tickets: connect tokens minted with this service's key (`tickwire
/// token mint --match N --slot K --players P`), which name the match and the player's
/// slot. The service tells each peer the others' candidate addresses, and relays, for
/// the match's members only and within a byte budget per match and a lifetime, the
/// datagrams that cannot go direct: sealed end to end, it cannot read them. Prints
/// `listening IP:PORT` once bound; runs until SIGTERM or SIGINT, then prints its figures
/// as one JSON line. The key comes from --key-file or TICKWIRE_TOKEN_KEY, never the
/// command line.
#[derive(Debug, Args)]
pub struct RendezvousArgs {
    /// The address to listen on (also the address tickets must name).
    #[arg(long, value_name = "IP:PORT", value_parser = address)]
    pub bind: SocketAddr,
    /// A file holding the key tickets are minted with, as `tickwire token key > PATH`
    /// writes it. Without it, the key comes from TICKWIRE_TOKEN_KEY.
    #[arg(long, value_name = "PATH")]
    pub key_file: Option<PathBuf>,
    /// The game's protocol id; tickets for another are refused.
    #[arg(long, value_name = "N", default_value_t = tickwire_proto::EndpointConfig::default().protocol_id)]
    pub protocol_id: u32,
    /// The public address tickets name, when it is not the bound one (behind a load
    /// balancer or a NAT of the server's own).
    #[arg(long, value_name = "IP:PORT", value_parser = address)]
    pub public: Option<SocketAddr>,
    /// Kilobytes per second one match may relay.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = ranged(1u32, 1_000_000))]
    pub relay_kbps: u32,
    /// Seconds a match lives, relay and all, from its first ticket.
    #[arg(long, value_name = "S", default_value_t = 7200, value_parser = ranged(1u64, 7 * 86_400))]
    pub match_secs: u64,
    /// Appends the sealed part of every relayed packet (past its plaintext header) to
    /// this file, each as a u16 little-endian length then the bytes: evidence that the
    /// relay carries nothing it can read.
    #[arg(long, value_name = "PATH")]
    pub record: Option<PathBuf>,
}

/// Plays one peer of a P2P match met through a rendezvous, and reports it as JSON lines.
///
/// A small rollback game (its state a hash of every input so far) at 60 Hz, with desync
/// detection. One JSON line per event on stdout: `path` (the path to a remote player
/// changed: direct to an address, or relayed through the rendezvous), `synchronized`,
/// `desync`; then `done` with the frames played, the desyncs, the time to
/// synchronized and each remote player's final path. Exit status 1 if the match never
/// synchronizes within 10 s or any desync happened. The ticket and the match secret
/// come from files or the environment, never the command line.
#[derive(Debug, Args)]
pub struct PeerArgs {
    /// The rendezvous's address.
    #[arg(long, value_name = "IP:PORT", value_parser = address)]
    pub rendezvous: SocketAddr,
    /// A file holding this player's ticket (hex, as `tickwire token mint` prints it).
    /// Without it, the ticket comes from TICKWIRE_TICKET.
    #[arg(long, value_name = "PATH")]
    pub ticket_file: Option<PathBuf>,
    /// A file holding the match secret (64 hex digits) every player shares. Without
    /// it, the secret comes from TICKWIRE_MATCH_SECRET.
    #[arg(long, value_name = "PATH")]
    pub secret_file: Option<PathBuf>,
    /// This player's slot (the ticket's).
    #[arg(long, value_name = "K", value_parser = ranged(0u8, 7))]
    pub slot: u8,
    /// Players of the match.
    #[arg(long, value_name = "P", value_parser = ranged(2u8, 8))]
    pub players: u8,
    /// Seconds to play once synchronized.
    #[arg(long, value_name = "S", default_value_t = 60, value_parser = ranged(1u64, 86_400))]
    pub seconds: u64,
    /// Relay everything: no peer learns another's address.
    #[arg(long)]
    pub private: bool,
    /// Delays every datagram this peer sends by this many milliseconds, in the library
    /// (a longer path without netem).
    #[arg(long, value_name = "MS", default_value_t = 0, value_parser = ranged(0u64, 5_000))]
    pub delay_ms: u64,
    /// The local address to bind.
    #[arg(long, value_name = "IP:PORT", default_value = "0.0.0.0:0", value_parser = address)]
    pub bind: SocketAddr,
    /// The game's protocol id (the ticket's).
    #[arg(long, value_name = "N", default_value_t = tickwire_proto::EndpointConfig::default().protocol_id)]
    pub protocol_id: u32,
}

/// A relay match in this process: a server and N clients play a small game at 60 Hz.
///
/// The server and every client are tw_session relay sessions, each with its own socket
/// on 127.0.0.1 and the link simulator on what it sends; the clients predict ahead of
/// the server. A net-graph line per client every second (RTT, lead, server buffer,
/// prediction distance, re-simulated ticks, late inputs); at the end every client's
/// state is compared with the server's at every tick since it joined (exit status 1 if
/// any differ). Latency, jitter and loss apply to each direction.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Clients in the match.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = ranged(1usize, 64))]
    pub clients: usize,
    /// Seconds of play after the clients join.
    #[arg(long, value_name = "S", default_value_t = 10, value_parser = ranged(1u64, 3600))]
    pub seconds: u64,
    /// One-way latency of every link, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 40.0, value_parser = ranged(0.0f64, 5000.0))]
    pub latency_ms: f64,
    /// Jitter added to the latency, uniform from 0 to this many milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5.0, value_parser = ranged(0.0f64, 5000.0))]
    pub jitter_ms: f64,
    /// Packets lost, in percent.
    #[arg(long, value_name = "P", default_value_t = 2.0, value_parser = ranged(0.0f64, 90.0))]
    pub loss_pct: f64,
}

/// Benchmarks that print tables: the runtime on loopback UDP, or a relay server's cost.
///
/// Build with --release for meaningful numbers.
#[derive(Debug, Args)]
#[command(subcommand_required = true, arg_required_else_help = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub which: Bench,
}

#[derive(Debug, Subcommand)]
pub enum Bench {
    Loopback(LoopbackArgs),
    Relay(RelayArgs),
    Crypto(CryptoArgs),
    Endpoint(EndpointBenchArgs),
    Serve(ServeBenchArgs),
}

/// A server endpoint's own cost per client a tick, in memory: slept, swept and warm.
///
/// N in-memory clients each send a 32-byte input a tick; the server endpoint takes
/// them, sends each client a 256-byte message and flushes (no socket, no thread: the
/// library's own work). Each tick runs after a 16.7 ms sleep, as a 60 Hz server's
/// does; after a sweep of 32 MiB of other memory; or warm; plaintext and encrypted.
/// Build with --release for meaningful numbers.
#[derive(Debug, Args)]
pub struct EndpointBenchArgs {
    /// Client counts, one table row each (comma-separated).
    #[arg(long, value_name = "N[,N...]", value_delimiter = ',', default_value = "64,512,2048",
          value_parser = ranged(1usize, 4096))]
    pub clients: Vec<usize>,
    /// Ticks timed in each round (the median tick is taken).
    #[arg(long, value_name = "T", default_value_t = 200, value_parser = ranged(1usize, 100_000))]
    pub ticks: usize,
    /// Rounds of each mode, alternating (the median round is taken).
    #[arg(long, value_name = "R", default_value_t = 3, value_parser = ranged(1usize, 100))]
    pub rounds: usize,
    /// Time only ticks of this kind (for a cache simulator, which sees a slept tick
    /// as a warm one: `--only swept` is then the cold one).
    #[arg(long, value_name = "KIND", value_enum)]
    pub only: Option<crate::bench_endpoint::Before>,
}

/// What each packet protection costs per packet on the endpoint (part (d) of loopback).
///
/// Nanoseconds per packet to send and to receive one unreliable message of 32 and of
/// 1100 bytes between two endpoints in memory (no socket), with our AEAD
/// (ChaCha20-Poly1305, the default), carrier protection (the same handshake, packets
/// without our tag: Steam, EOS) and insecure plaintext. Build with --release for
/// meaningful numbers.
#[derive(Debug, Args)]
pub struct CryptoArgs {}

/// Push-to-wire latency, RTT and wire bytes on 127.0.0.1, and what encryption costs.
///
/// Push-to-wire latency, engine-to-engine RTT and wire bytes per 32-byte message on
/// 127.0.0.1 (encrypted and insecure plaintext), and what sealing and opening a packet
/// costs. Build with --release for meaningful numbers.
#[derive(Debug, Args)]
pub struct LoopbackArgs {
    /// Messages timed for the latency and the RTT.
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = ranged(10usize, 10_000_000))]
    pub messages: usize,
}

/// A relay server session and N clients on the link simulator: the server's costs.
///
/// A relay server session and N client sessions on the deterministic link simulator:
/// the server's CPU per tick (its session's calls only), bytes per client per second
/// down and up, and the slowest client's authoritative tick rate.
///
/// Without options other than --seconds, the preset scale runs: 64 clients x 16-byte
/// inputs and 16 x 64-byte inputs on a perfect link, 3 clients at 500±100 ms with 25%
/// loss and duplicates and 10% reordering, 16 and 32 clients at 100±30 ms with 8% loss.
/// With any of the other options, one run with those settings (the rest as their help
/// says). Latency ± jitter is uniform, on each direction. Build with --release for
/// meaningful numbers.
#[derive(Debug, Args)]
pub struct RelayArgs {
    /// Clients in the one run [default: 16].
    #[arg(long, value_name = "N", value_parser = ranged(1usize, 64))]
    pub clients: Option<usize>,
    /// Bytes of each client's input per tick in the one run [default: 2].
    #[arg(long, value_name = "B", value_parser = ranged(1usize, 64))]
    pub input_size: Option<usize>,
    /// Every input byte changes every T ticks in the one run [default: 1, every tick].
    #[arg(long, value_name = "T", value_parser = ranged(1u64, 1_000_000))]
    pub input_period: Option<u64>,
    /// Mean one-way latency in milliseconds in the one run [default: 0].
    #[arg(long, value_name = "MS", value_parser = ranged(0.0f64, 5000.0))]
    pub latency_ms: Option<f64>,
    /// The latency varies by ± this many milliseconds in the one run [default: 0].
    #[arg(long, value_name = "MS", value_parser = ranged(0.0f64, 5000.0))]
    pub jitter_ms: Option<f64>,
    /// Packets lost, in percent, in the one run [default: 0].
    #[arg(long, value_name = "P", value_parser = ranged(0.0f64, 90.0))]
    pub loss_pct: Option<f64>,
    /// Game time of every run, in seconds.
    #[arg(long, value_name = "S", default_value_t = 60, value_parser = ranged(4u64, 3600))]
    pub seconds: u64,
}

impl RelayArgs {
    /// Whether an option describes one run, rather than the presets.
    pub fn one_run(&self) -> bool {
        self.clients.is_some()
            || self.input_size.is_some()
            || self.input_period.is_some()
            || self.latency_ms.is_some()
            || self.jitter_ms.is_some()
            || self.loss_pct.is_some()
    }
}

/// Time-sync scenarios on the deterministic simulator: tickwire against three baselines.
///
/// Scenarios S0-S9 (and variants) on the deterministic simulator with tickwire's relay
/// sessions (the product's RelayServer and RelayClient over the real transport) and
/// three modelled baselines (seed000, n4e, lightyear), K seeds each (seeds N..N+K-1),
/// every controller of a seed on the same links and against the same oracle. Prints
/// one table per scenario of the medians over the seeds beside the oracle limits, each
/// pair won, tied or lost by the 95% interval of the paired differences. The far links
/// (F1, F2) and wide matches (W1-W4) run tickwire only, with the slowest client's steps
/// per second and the kicks. Default: every scenario but the wide matches W1-W4 (named,
/// they run too), 300 s of game time each.
#[derive(Debug, Args)]
pub struct LabArgs {
    /// The scenarios to run (comma-separated, or the option repeated) [default: all but
    /// W1-W4].
    #[arg(long, visible_alias = "scenarios", value_name = "ID[,ID...]", value_parser = scenario_list)]
    pub scenario: Vec<ScenarioList>,
    /// Game time of each scenario, in seconds [default: each scenario's own, 300].
    #[arg(long, value_name = "N", value_parser = ranged(20u64, 3600))]
    pub seconds: Option<u64>,
    /// Seeds per scenario (two are the fewest that give an interval).
    #[arg(long, value_name = "K", default_value_t = tickwire_lab::DEFAULT_SEEDS, value_parser = ranged(2u64, 1000))]
    pub seeds: u64,
    /// The first seed.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = ranged(0u64, u64::MAX - 1000))]
    pub seed: u64,
    /// Writes summary.csv (one line per scenario, controller and seed) and, per scenario,
    /// a CSV and an SVG plot of the lead, the server buffer and the time scale (first seed).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Runs no controller: per scenario, how much the windows' oracles vary within a seed
    /// and whether one foretells the next, the hindsight bound of a steady lead against
    /// the oracle, two causal rules and one lead for all seeds that knows the link's law
    /// (crates/lab/src/bound.rs). Writes no files.
    #[arg(long, conflicts_with = "out")]
    pub bound: bool,
    /// With --bound: the causal rules' margin also brings the 90th-percentile seed's
    /// late share within PCT percent (a controller's own late rate, to compare its
    /// excess with the rules' at that rate), beside epsilon.
    #[arg(long, value_name = "PCT", requires = "bound", value_parser = ranged(0.001f64, 100.0))]
    pub bound_late: Option<f64>,
    /// Client ticks between input packets, for every controller's client (tickwire's
    /// and the baselines') and the oracle's reference alike [default: 2, and 1 where the
    /// scenario's uplink loses more than epsilon/2, tickwire's client by its own rule].
    #[arg(long, value_name = "K", value_parser = ranged(
        *tickwire_lab::CLIENT_SEND_INTERVALS.start(),
        *tickwire_lab::CLIENT_SEND_INTERVALS.end(),
    ))]
    pub client_send_interval: Option<u32>,
}

impl LabArgs {
    pub fn options(&self) -> tickwire_lab::LabOptions {
        tickwire_lab::LabOptions {
            scenarios: self.scenario.iter().flat_map(|l| l.0.iter().cloned()).collect(),
            out: self.out.clone(),
            seed: self.seed,
            seeds: self.seeds,
            seconds: self.seconds,
            bound: self.bound,
            bound_late: self.bound_late.map(|pct| pct / 100.0),
            client_send_interval: self.client_send_interval,
        }
    }
}

/// Scenario ids, each known to the lab.
#[derive(Debug, Clone)]
pub struct ScenarioList(pub Vec<String>);

fn scenario_list(s: &str) -> Result<ScenarioList, String> {
    let mut ids = Vec::new();
    for id in s.split(',').filter(|id| !id.is_empty()) {
        if tickwire_lab::scenario(id).is_none() {
            // The lab's own parser names the scenarios it knows.
            let e = tickwire_lab::parse_args(&["--scenario".to_string(), id.to_string()]).err();
            return Err(e.unwrap_or_else(|| format!("unknown scenario {id:?}")));
        }
        ids.push(id.to_string());
    }
    Ok(ScenarioList(ids))
}

/// What a game backend does with a relay server's key: make one, or mint connect tokens.
#[derive(Debug, Args)]
#[command(subcommand_required = true, arg_required_else_help = true)]
pub struct TokenArgs {
    #[command(subcommand)]
    pub action: TokenAction,
}

#[derive(Debug, Subcommand)]
pub enum TokenAction {
    /// Prints a new random 32-byte key (hex): a relay server's connect key, or a P2P match secret.
    ///
    /// Prints a new random 32-byte key (64 hex digits) from the OS's random source: a
    /// relay server's connect key, shared with the game backend that mints its tokens
    /// (`tickwire token key > PATH`, then `tickwire token mint --key-file PATH`), or a
    /// P2P match secret.
    Key,
    Mint(MintArgs),
}

/// Prints a connect token (hex, 1024 bytes) for one client, as a game backend mints it.
///
/// Prints a connect token (hex, 1024 bytes) for one client, as a backend mints it
/// (tw_connect_token_generate does the same from C). The relay server's key (64 hex
/// digits) comes from --key-file, or else from the TICKWIRE_TOKEN_KEY environment
/// variable; never from the command line, where the process list shows it to every
/// user of the machine (--key is refused).
#[derive(Debug, Args)]
pub struct MintArgs {
    /// A file holding the relay server's key, as `tickwire token key > PATH` writes it.
    /// Without it, the key comes from the TICKWIRE_TOKEN_KEY environment variable.
    #[arg(long, value_name = "PATH")]
    pub key_file: Option<PathBuf>,
    /// Refused: a key on the command line shows in the process list.
    #[arg(long, hide = true, value_name = "KEY", num_args = 0..=1)]
    pub key: Option<Option<String>>,
    /// The relay server's addresses the token is good for (comma-separated, at most 8).
    #[arg(long, required = true, value_name = "IP:PORT[,IP:PORT...]", value_delimiter = ',', value_parser = address)]
    pub addresses: Vec<SocketAddr>,
    /// The client's id, as the server sees it.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub client_id: u64,
    /// The game's protocol id; the server refuses tokens for another.
    #[arg(long, value_name = "N", default_value_t = tickwire_proto::EndpointConfig::default().protocol_id)]
    pub protocol_id: u32,
    /// Seconds from now until the token expires.
    #[arg(long, value_name = "S", default_value_t = 3600, value_parser = ranged(1u64, 365 * 86_400))]
    pub expire_secs: u64,
    /// The connection's timeout in seconds; 0 keeps the endpoints' own.
    #[arg(long, value_name = "S", default_value_t = 0, value_parser = ranged(0u32, 3600))]
    pub timeout_secs: u32,
    /// Data for the server about this client, in hex (at most 256 bytes; 238 after a
    /// match claim).
    #[arg(long, value_name = "HEX", value_parser = user_data)]
    pub user_data: Option<UserData>,
    /// A rendezvous ticket: the match it is for (with --slot and --players).
    #[arg(long = "match", value_name = "N", requires_all = ["slot", "players"])]
    pub match_id: Option<u64>,
    /// A rendezvous ticket: the player's slot, below --players.
    #[arg(long, value_name = "K", requires = "match_id")]
    pub slot: Option<u8>,
    /// The match's players: 2..=8 in a rendezvous ticket (with --match), 1..=64 in a
    /// `tickwire serve` token (with --serve-match).
    #[arg(long, value_name = "P")]
    pub players: Option<u8>,
    /// A `tickwire serve` token: the match it joins (with --players; the match's shape
    /// is --players, --input-size and --tick-rate).
    #[arg(long, value_name = "N", conflicts_with_all = ["match_id", "slot"], requires = "players")]
    pub serve_match: Option<u64>,
    /// A `tickwire serve` token: bytes per input.
    #[arg(long, value_name = "B", default_value_t = 2, requires = "serve_match")]
    pub input_size: u16,
    /// A `tickwire serve` token: ticks a second.
    #[arg(long, value_name = "HZ", default_value_t = 60, requires = "serve_match")]
    pub tick_rate: u16,
}

/// `--user-data` decoded.
#[derive(Debug, Clone)]
pub struct UserData(pub Vec<u8>);

fn user_data(s: &str) -> Result<UserData, String> {
    let bytes = crate::token::unhex(s)?;
    if bytes.len() > USER_DATA_SIZE {
        return Err(format!("{} bytes, more than the {USER_DATA_SIZE} a token holds", bytes.len()));
    }
    Ok(UserData(bytes))
}

pub(crate) fn address(s: &str) -> Result<SocketAddr, String> {
    tickwire_proto::parse_address(s.trim()).map_err(|_| format!("{:?} is not an IP:port nor remote:<id>", s.trim()))
}

/// A value parser for a number in `lo..=hi`.
pub(crate) fn ranged<T>(lo: T, hi: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: FromStr + PartialOrd + Display + Copy + Send + Sync + 'static,
{
    move |s| {
        let v: T = s.parse().map_err(|_| "not a valid number".to_string())?;
        if !(lo..=hi).contains(&v) {
            return Err(format!("{v} is outside {lo}..={hi}"));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use clap::error::ErrorKind;

    fn parse(line: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("tickwire").chain(line.split_whitespace()))
    }

    /// The rendered error of a command line that must fail with `kind`, and exit 2.
    fn usage_error(line: &str, kind: ErrorKind) -> String {
        let e = parse(line).expect_err(line);
        assert_eq!(e.kind(), kind, "{line}: {e}");
        assert_eq!(e.exit_code(), 2, "{line}");
        e.to_string()
    }

    #[test]
    fn the_declarations_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_subcommand_has_help_that_exits_0() {
        for line in [
            "",
            "demo",
            "bench",
            "bench loopback",
            "bench relay",
            "bench crypto",
            "bench endpoint",
            "lab",
            "token",
            "token key",
            "token mint",
        ] {
            let e = parse(&format!("{line} --help")).expect_err(line);
            assert_eq!(e.kind(), ErrorKind::DisplayHelp, "{line}: {e}");
            assert_eq!(e.exit_code(), 0, "{line}");
            let help = e.to_string();
            assert!(help.contains("Usage: tickwire"), "{line}: {help}");
            assert!(!help.contains("issue"), "{line}: the help says what things are: {help}");
        }
        let help = parse("token mint --help").unwrap_err().to_string();
        for option in ["--key-file", "--addresses", "--client-id", "--expire-secs", "TICKWIRE_TOKEN_KEY"] {
            assert!(help.contains(option), "{option}: {help}");
        }
        assert!(!help.contains("--key <"), "the refused --key is not offered: {help}");
    }

    #[test]
    fn defaults_and_both_spellings() {
        let Command::Demo(d) = parse("demo --clients 3 --seconds=5").unwrap().command else { panic!("demo") };
        assert_eq!((d.clients, d.seconds, d.latency_ms, d.jitter_ms, d.loss_pct), (3, 5, 40.0, 5.0, 2.0));
        let Command::Bench(BenchArgs { which: Bench::Loopback(l) }) = parse("bench loopback").unwrap().command else {
            panic!("bench loopback")
        };
        assert_eq!(l.messages, 2000);
        let Command::Bench(BenchArgs { which: Bench::Relay(r) }) = parse("bench relay --seconds 10").unwrap().command
        else {
            panic!("bench relay")
        };
        assert!(!r.one_run() && r.seconds == 10, "--seconds alone keeps the presets");
        let Command::Bench(BenchArgs { which: Bench::Relay(r) }) = parse("bench relay --loss-pct 0").unwrap().command
        else {
            panic!("bench relay")
        };
        assert!(r.one_run());
        let Command::Lab(lab) = parse("lab --scenario S1,s5, --scenarios S2 --seeds 5").unwrap().command else {
            panic!("lab")
        };
        let o = lab.options();
        assert_eq!(
            (o.scenarios, o.seeds, o.seed, o.seconds, o.bound),
            (vec!["S1".into(), "s5".into(), "S2".into()], 5, 1, None, false)
        );
        let Command::Lab(lab) = parse("lab --scenario S2 --bound --bound-late 0.9").unwrap().command else {
            panic!("lab --bound-late")
        };
        let o = lab.options();
        assert!(o.bound && o.bound_late.is_some_and(|l| (l - 0.009).abs() < 1e-12), "{:?}", o.bound_late);
        assert_eq!(o.client_send_interval, None);
        let Command::Lab(lab) = parse("lab --scenario S3c --client-send-interval 1").unwrap().command else {
            panic!("lab --client-send-interval")
        };
        assert_eq!(lab.options().client_send_interval, Some(1));
        let Command::Token(TokenArgs { action: TokenAction::Mint(m) }) =
            parse("token mint --addresses 127.0.0.1:7000,[::1]:7001 --user-data 0aff").unwrap().command
        else {
            panic!("token mint")
        };
        assert_eq!(m.addresses.len(), 2);
        assert_eq!((m.client_id, m.expire_secs, m.timeout_secs), (1, 3600, 0));
        assert_eq!(m.user_data.unwrap().0, [0x0a, 0xff]);
        assert!(m.key.is_none() && m.key_file.is_none());
    }

    #[test]
    fn errors_name_the_option() {
        let e = usage_error("demo --clients 0", ErrorKind::ValueValidation);
        assert!(e.contains("--clients") && e.contains("1..=64"), "{e}");
        let e = usage_error("demo --loss-pct lots", ErrorKind::ValueValidation);
        assert!(e.contains("--loss-pct") && e.contains("lots"), "{e}");
        let e = usage_error("bench relay --input-size 65", ErrorKind::ValueValidation);
        assert!(e.contains("--input-size"), "{e}");
        let e = usage_error("lab --seeds 1", ErrorKind::ValueValidation);
        assert!(e.contains("--seeds"), "{e}");
        let e = usage_error("lab --scenario S1,S99", ErrorKind::ValueValidation);
        assert!(e.contains("--scenario") && e.contains("S99") && e.contains("known: S0"), "{e}");
        let e = usage_error("token mint --addresses 127.0.0.1", ErrorKind::ValueValidation);
        assert!(e.contains("--addresses") && e.contains("IP:port"), "{e}");
        let e = usage_error("token mint --addresses 127.0.0.1:1 --user-data abc", ErrorKind::ValueValidation);
        assert!(e.contains("--user-data"), "{e}");
        let e = usage_error("token mint --addresses 127.0.0.1:1 --client-id x", ErrorKind::ValueValidation);
        assert!(e.contains("--client-id"), "{e}");
        let e = usage_error("demo --clients", ErrorKind::InvalidValue);
        assert!(e.contains("--clients"), "{e}");
        let e = usage_error("demo --client 3", ErrorKind::UnknownArgument);
        assert!(e.contains("--client") && e.contains("--clients"), "names it and suggests: {e}");
        let e = usage_error("demo --clients 1 --clients 2", ErrorKind::ArgumentConflict);
        assert!(e.contains("--clients"), "{e}");
        let e = usage_error("token mint", ErrorKind::MissingRequiredArgument);
        assert!(e.contains("--addresses"), "{e}");
        let e = usage_error("lab --bound-late 0.9", ErrorKind::MissingRequiredArgument);
        assert!(e.contains("--bound"), "{e}");
        let e = usage_error("lab --bound --bound-late 0", ErrorKind::ValueValidation);
        assert!(e.contains("--bound-late"), "{e}");
        let e = usage_error("lab --bound --bound-late 101", ErrorKind::ValueValidation);
        assert!(e.contains("--bound-late"), "{e}");
        for k in ["0", "5", "x"] {
            let e = usage_error(&format!("lab --client-send-interval {k}"), ErrorKind::ValueValidation);
            assert!(e.contains("--client-send-interval"), "{e}");
        }
        let e = usage_error("lab --bound --out /tmp/x", ErrorKind::ArgumentConflict);
        assert!(e.contains("--bound") && e.contains("--out"), "{e}");
        usage_error("bench fast", ErrorKind::InvalidSubcommand);
        usage_error("demo extra", ErrorKind::UnknownArgument);
        // No subcommand: the help, on stderr, and status 2.
        let e = parse("bench").unwrap_err();
        assert_eq!((e.kind(), e.exit_code()), (ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand, 2));
    }
}
