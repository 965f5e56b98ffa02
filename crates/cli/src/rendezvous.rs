//! `tickwire rendezvous`: the rendezvous and relay service of P2P matches behind NATs
//! (proto's `Rendezvous`, on the runtime's `RendezvousServer` thread), until SIGTERM or
//! SIGINT; then its figures as one JSON line.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tickwire_proto::RendezvousConfig;
use tickwire_runtime::{RelayRecorder, RendezvousServer};

use super::args::{RendezvousArgs, UsageError};
use super::token::{KEY_ENV, env_secret, read_key};

pub fn run(a: &RendezvousArgs) -> Result<ExitCode, UsageError> {
    let key = read_key(a.key_file.as_deref(), env_secret(KEY_ENV), ("--key-file", KEY_ENV), "rendezvous: the key")?;
    let mut cfg = RendezvousConfig::new(key, a.protocol_id);
    cfg.relay_bytes_per_sec = a.relay_kbps.saturating_mul(1024);
    cfg.match_lifetime_us = a.match_secs * 1_000_000;
    cfg.public_addresses.extend(a.public);
    let record: Option<RelayRecorder> = match &a.record {
        None => None,
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| UsageError(format!("rendezvous: --record {}: {e}", path.display())))?;
            let mut out = std::io::BufWriter::new(file);
            Some(Box::new(move |payload: &[u8]| {
                if let Some(body) = tickwire_proto::wire::sealed_body(payload) {
                    let _ = out.write_all(&(body.len() as u16).to_le_bytes());
                    let _ = out.write_all(body);
                    let _ = out.flush();
                }
            }))
        }
    };
    let stop = super::signals::catch_stop();
    let server = match RendezvousServer::start(a.bind, cfg, record) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tickwire rendezvous: binding {}: {e}", a.bind);
            return Ok(ExitCode::from(1));
        }
    };
    println!("listening {}", server.local_addr());
    let _ = std::io::stdout().flush();
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let s = server.stop();
    println!(
        "{{\"event\":\"done\",\"matches\":{},\"matches_made\":{},\"members\":{},\"hellos\":{},\"relayed_datagrams\":{},\
         \"relayed_bytes\":{},\"refused\":{},\"over_budget\":{},\"strangers\":{},\"dropped\":{}}}",
        s.matches,
        s.matches_made,
        s.members,
        s.hellos,
        s.relayed_datagrams,
        s.relayed_bytes,
        s.refused,
        s.over_budget,
        s.strangers,
        s.dropped
    );
    Ok(ExitCode::SUCCESS)
}
