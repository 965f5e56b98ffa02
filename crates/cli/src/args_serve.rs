//! The command lines of `tickwire serve` and `tickwire bench serve`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::args::{address, ranged};

/// How `serve` writes its log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// `event key=value ...`
    Text,
    /// One JSON object a line.
    Json,
}

/// Runs a server of many relay matches on one UDP port; matches come from connect tokens.
///
/// A headless relay server that runs no game code: a connect token minted with its
/// key (`tickwire token mint --serve-match N --players P`) names the match and its
/// shape; the first player of a match makes it, and it ends when its players are gone.
/// Joiners start from a snapshot one client uploads and others vouch for; checksums
/// are compared across the players. Prints `listening IP:PORT` once bound, then a line
/// per event; on SIGTERM or SIGINT it drains (no new match; live ones play on for up to
/// --drain-secs) and prints its figures as one JSON line. In an Agones pod
/// (AGONES_SDK_HTTP_PORT set) or with --agones it tells the SDK sidecar Ready, Health,
/// its players and Shutdown.
///
/// Every option can also come from the environment variable named beside it, or from
/// a --config file of `key = value` lines whose keys are the options' long names
/// (`max-matches = 500`; `#` starts a comment). The command line wins over the file,
/// the file over the environment. The key comes from --key-file or TICKWIRE_TOKEN_KEY,
/// never the command line.
#[derive(Debug, Args)]
#[command(args_override_self = true)]
pub struct ServeArgs {
    /// A file of `key = value` lines, one option each (see above).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The UDP address to listen on (also the address tokens name).
    #[arg(long, env = "TICKWIRE_SERVE_BIND", value_name = "IP:PORT", default_value = "0.0.0.0:7777", value_parser = address)]
    pub bind: SocketAddr,
    /// The addresses tokens name, when not the bound one (comma-separated, behind a
    /// load balancer or a NAT).
    #[arg(long, env = "TICKWIRE_SERVE_PUBLIC", value_name = "IP:PORT[,...]", value_delimiter = ',', value_parser = address)]
    pub public: Vec<SocketAddr>,
    /// A file holding the key tokens are minted with, as `tickwire token key > PATH`
    /// writes it. Without it, the key comes from TICKWIRE_TOKEN_KEY.
    #[arg(long, env = "TICKWIRE_SERVE_KEY_FILE", value_name = "PATH")]
    pub key_file: Option<PathBuf>,
    /// The game's protocol id; tokens for another are refused.
    #[arg(long, env = "TICKWIRE_SERVE_PROTOCOL_ID", value_name = "N", default_value_t = tickwire_proto::EndpointConfig::default().protocol_id)]
    pub protocol_id: u32,
    /// Most matches at once; tokens for a new match past it are refused.
    #[arg(long, env = "TICKWIRE_SERVE_MAX_MATCHES", value_name = "N", default_value_t = 1000, value_parser = ranged(1usize, 100_000))]
    pub max_matches: usize,
    /// Most connections at once (the player capacity reported to Agones).
    #[arg(long, env = "TICKWIRE_SERVE_MAX_CLIENTS", value_name = "N", default_value_t = 4096, value_parser = ranged(1u32, 65_536))]
    pub max_clients: u32,
    /// Most connections from one IP address (0: no limit; a load test from one machine
    /// needs it).
    #[arg(long, env = "TICKWIRE_SERVE_MAX_CLIENTS_PER_IP", value_name = "N", default_value_t = 8, value_parser = ranged(0u32, 65_536))]
    pub max_clients_per_ip: u32,
    /// Ticks between the checksums the clients report and compare.
    #[arg(long, env = "TICKWIRE_SERVE_CHECKSUM_INTERVAL", value_name = "TICKS", default_value_t = 30, value_parser = ranged(1u32, 100_000))]
    pub checksum_interval: u32,
    /// Seconds a dropped player's slot waits for it.
    #[arg(long, env = "TICKWIRE_SERVE_RECONNECT_SECS", value_name = "S", default_value_t = 30, value_parser = ranged(1u64, 3600))]
    pub reconnect_secs: u64,
    /// Seconds live matches may go on after SIGTERM before they are cut short (keep it
    /// under the pod's terminationGracePeriodSeconds, 30 by default).
    #[arg(long, env = "TICKWIRE_SERVE_DRAIN_SECS", value_name = "S", default_value_t = 25, value_parser = ranged(0u64, 86_400))]
    pub drain_secs: u64,
    /// Serves Prometheus metrics at http://ADDR/metrics.
    #[arg(long, env = "TICKWIRE_SERVE_METRICS", value_name = "IP:PORT", value_parser = address)]
    pub metrics: Option<SocketAddr>,
    /// Serves the admin endpoint (GET /matches, POST /matches/ID/end); keep it on
    /// 127.0.0.1.
    #[arg(long, env = "TICKWIRE_SERVE_ADMIN", value_name = "IP:PORT", value_parser = address)]
    pub admin: Option<SocketAddr>,
    /// Talks to the Agones SDK sidecar even without AGONES_SDK_HTTP_PORT (then on its
    /// default port, 9358).
    #[arg(long, env = "TICKWIRE_SERVE_AGONES")]
    pub agones: bool,
    /// Seconds between Agones Health calls.
    #[arg(long, env = "TICKWIRE_SERVE_HEALTH_SECS", value_name = "S", default_value_t = 5, value_parser = ranged(1u64, 3600))]
    pub health_secs: u64,
    /// How log lines look.
    #[arg(long, env = "TICKWIRE_SERVE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Runs the match thread and the network thread at this real-time priority
    /// (SCHED_FIFO, 1 to 99; Linux, with CAP_SYS_NICE or as root), so that other work
    /// on a busy host never delays a tick. Without it, fair scheduling.
    #[arg(long, env = "TICKWIRE_SERVE_REALTIME_PRIORITY", value_name = "N", value_parser = ranged(1u8, 99))]
    pub realtime_priority: Option<u8>,
}

/// Most `--match-base`: a client's id (its match × 256 + its slot) stays well within
/// 64 bits for any number of matches.
pub const MAX_MATCH_BASE: u64 = (1 << 40) - 1;

/// Plays N matches against a running `tickwire serve`: a load generator and a check.
///
/// Plays --matches matches of --players clients each from this process, every client
/// with its own socket and a token minted for its match; --late-players of each match
/// join a third of the way through, from a snapshot the others give. Then every client
/// leaves. Prints whether every client synchronized and kept its connection, the
/// slowest client's authoritative ticks a second, desyncs and the checksums compared;
/// exit status 1 if any client failed or the slowest fell under 59.5 ticks a second at
/// 60 Hz. The key comes from --key-file or TICKWIRE_TOKEN_KEY.
#[derive(Debug, Args)]
pub struct ServeBenchArgs {
    /// The server's address.
    #[arg(long, value_name = "IP:PORT", value_parser = address)]
    pub server: SocketAddr,
    /// A file holding the server's key. Without it, the key comes from TICKWIRE_TOKEN_KEY.
    #[arg(long, value_name = "PATH")]
    pub key_file: Option<PathBuf>,
    /// The game's protocol id.
    #[arg(long, value_name = "N", default_value_t = tickwire_proto::EndpointConfig::default().protocol_id)]
    pub protocol_id: u32,
    /// Matches to play.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = ranged(1u32, 100_000))]
    pub matches: u32,
    /// Players of each match.
    #[arg(long, value_name = "P", default_value_t = 4, value_parser = ranged(1u8, 64))]
    pub players: u8,
    /// Players of each match who join mid-match.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = ranged(0u8, 63))]
    pub late_players: u8,
    /// The first match's id; the others follow it (a client's id is its match's times
    /// 256 plus its slot). Default: a random one, so that a run right after another
    /// does not meet the last run's matches and connections, which the server may
    /// still hold.
    #[arg(long, value_name = "ID", value_parser = ranged(0u64, MAX_MATCH_BASE))]
    pub match_base: Option<u64>,
    /// Ticks a second.
    #[arg(long, value_name = "HZ", default_value_t = 60, value_parser = ranged(1u16, 1000))]
    pub tick_rate: u16,
    /// Seconds to play.
    #[arg(long, value_name = "S", default_value_t = 20, value_parser = ranged(3u64, 86_400))]
    pub seconds: u64,
    /// Milliseconds between two frames of every client's engine (each frame runs the
    /// ticks due): more clients fit a core at longer frames.
    #[arg(long, value_name = "MS", default_value_t = 4, value_parser = ranged(1u64, 50))]
    pub frame_ms: u64,
    /// Client processes: the matches are shared among this many processes of this
    /// command (one thread each).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = ranged(1u32, 64))]
    pub procs: u32,
    /// The server's metrics (http://IP:PORT/metrics): its CPU per client-tick and how
    /// often its match thread woke within 2 ms of a tick over the steady part (the check
    /// then asks 99%).
    #[arg(long, value_name = "URL")]
    pub metrics: Option<String>,
    /// One process of a --procs run: prints its figures as one line.
    #[arg(long, hide = true)]
    pub worker: bool,
}
