//! `tickwire serve`: the options made into a `tickwire_serve::ServeConfig` (the key
//! from a file or the environment, Agones from the environment or --agones), a config
//! file made into options, and the signals that start the drain.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::CommandFactory;
use tickwire_serve::ServeConfig;

use super::args::{Cli, LogFormat, ServeArgs, UsageError};
use super::token::{KEY_ENV, env_secret, read_key};

/// The Agones SDK's default HTTP port.
const AGONES_DEFAULT_PORT: u16 = 9358;

pub fn run(a: &ServeArgs) -> Result<ExitCode, UsageError> {
    let key = read_key(a.key_file.as_deref(), env_secret(KEY_ENV), ("--key-file", KEY_ENV), "serve: the key")?;
    let mut cfg = ServeConfig::new(a.bind, key);
    cfg.public = a.public.clone();
    cfg.protocol_id = a.protocol_id;
    cfg.max_matches = a.max_matches;
    cfg.max_clients = a.max_clients;
    cfg.max_clients_per_ip = a.max_clients_per_ip;
    cfg.checksum_interval = a.checksum_interval;
    cfg.reconnect_timeout_us = a.reconnect_secs * 1_000_000;
    cfg.drain_timeout_us = a.drain_secs * 1_000_000;
    cfg.metrics = a.metrics;
    cfg.admin = a.admin;
    cfg.health_period = Duration::from_secs(a.health_secs);
    cfg.json_logs = a.log_format == LogFormat::Json;
    cfg.realtime_priority = a.realtime_priority;
    let port = match tickwire_serve::agones::port_from_env() {
        Some(Ok(p)) => Some(p),
        Some(Err(e)) => return Err(UsageError(format!("serve: {e}"))),
        None => a.agones.then_some(AGONES_DEFAULT_PORT),
    };
    cfg.agones = port.map(|p| std::net::SocketAddr::from(([127, 0, 0, 1], p)));
    let stop = super::signals::catch_stop();
    let mut stdout = std::io::stdout();
    let mut out = |line: &str| {
        let _ = writeln!(stdout, "{line}");
        let _ = stdout.flush();
    };
    match tickwire_serve::run(&cfg, stop, &mut out) {
        Ok(summary) => {
            out(&summary.to_string());
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("tickwire serve: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

/// `tickwire serve --config PATH ...`: the file's `key = value` lines become options
/// placed before the command line's own, so that the command line wins (the serve
/// options override themselves). Other command lines are returned as they are.
pub fn expand_config(argv: Vec<OsString>) -> Result<Vec<OsString>, String> {
    let serve = argv.iter().position(|a| a == "serve");
    let Some(at) = serve.filter(|&i| argv[..i].iter().skip(1).all(|a| a.to_string_lossy().starts_with('-'))) else {
        return Ok(argv);
    };
    let mut path = None;
    let mut i = at + 1;
    while i < argv.len() {
        let s = argv[i].to_string_lossy();
        if s == "--config" {
            path = argv.get(i + 1).cloned();
            i += 1;
        } else if let Some(p) = s.strip_prefix("--config=") {
            path = Some(OsString::from(p));
        }
        i += 1;
    }
    let Some(path) = path else { return Ok(argv) };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("--config {}: {e}", path.to_string_lossy()))?;
    let cmd = Cli::command();
    let serve_cmd = cmd.find_subcommand("serve").expect("the serve subcommand");
    let mut extra = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let where_ = || format!("--config {} line {}", path.to_string_lossy(), n + 1);
        let (k, v) = line.split_once('=').ok_or_else(|| format!("{}: not `key = value`: {line:?}", where_()))?;
        let (k, v) = (k.trim(), v.trim());
        let arg = serve_cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(k) && k != "config")
            .ok_or_else(|| format!("{}: no option {k:?} (keys are serve's long option names)", where_()))?;
        let takes_value = arg.get_action().takes_values();
        if takes_value {
            extra.push(OsString::from(format!("--{k}={v}")));
        } else {
            match v {
                "true" => extra.push(OsString::from(format!("--{k}"))),
                "false" => {}
                _ => return Err(format!("{}: {k} is true or false, not {v:?}", where_())),
            }
        }
    }
    let mut out = argv[..=at].to_vec();
    out.extend(extra);
    out.extend(argv[at + 1..].iter().cloned());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Command;
    use clap::Parser;
    use std::sync::atomic::Ordering;

    fn with_config(text: &str, line: &[&str]) -> Result<Vec<OsString>, String> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tw-serve-conf-{}-{n}", std::process::id()));
        std::fs::write(&dir, text).unwrap();
        let mut argv: Vec<OsString> = vec!["tickwire".into(), "serve".into(), "--config".into(), dir.clone().into()];
        argv.extend(line.iter().map(OsString::from));
        let r = expand_config(argv);
        let _ = std::fs::remove_file(&dir);
        r
    }

    fn serve_args(argv: Vec<OsString>) -> ServeArgs {
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Serve(a) => a,
            other => panic!("not serve: {other:?}"),
        }
    }

    #[test]
    fn a_config_files_options_come_first_and_the_command_line_wins() {
        let text =
            "# comment\nmax-matches = 500\n\nagones = true   # a flag\nlog-format = json\nbind = 127.0.0.1:9000\n";
        let a = serve_args(with_config(text, &["--max-matches", "7"]).unwrap());
        assert_eq!(a.max_matches, 7, "the command line wins");
        assert!(a.agones);
        assert_eq!(a.log_format, LogFormat::Json);
        assert_eq!(a.bind, "127.0.0.1:9000".parse().unwrap());
        let a = serve_args(with_config("agones = false\n", &[]).unwrap());
        assert!(!a.agones);
    }

    #[test]
    fn a_bad_config_file_is_refused_naming_the_line() {
        for (text, needle) in [
            ("max-matchs = 5\n", "line 1: no option \"max-matchs\""),
            ("\nmax-matches 5\n", "line 2: not `key = value`"),
            ("agones = yes\n", "agones is true or false"),
            ("config = other\n", "no option \"config\""),
        ] {
            let e = with_config(text, &[]).expect_err(text);
            assert!(e.contains(needle), "{text:?}: {e}");
        }
        let missing =
            expand_config(vec!["tickwire".into(), "serve".into(), "--config".into(), "/nonexistent/x".into()]);
        assert!(missing.expect_err("missing").contains("/nonexistent/x"));
        // A value out of range is clap's to refuse, naming the option.
        let e = Cli::try_parse_from(with_config("max-matches = 0\n", &[]).unwrap()).expect_err("0 matches");
        assert!(e.to_string().contains("--max-matches"), "{e}");
    }

    #[test]
    fn other_command_lines_are_left_alone() {
        let argv: Vec<OsString> = ["tickwire", "demo", "--config", "x"].iter().map(OsString::from).collect();
        assert_eq!(expand_config(argv.clone()).unwrap(), argv);
    }
}
