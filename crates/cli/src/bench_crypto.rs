//! `tickwire bench loopback`, part (d), and `tickwire bench crypto` alone: what each
//! packet protection costs per packet, measured on the endpoint itself (the sans-IO
//! state machine, no socket, no thread), the same code the network thread runs. One
//! client endpoint sends a message per packet to one server endpoint in memory; the
//! time to pack and seal a packet (send) and to open and deliver it (receive) is taken
//! over batches, for our AEAD under each cipher (ChaCha20-Poly1305, and AES-256-GCM,
//! which two ends that run it in hardware agree on), carrier protection (the same
//! handshake, packets untagged: Steam, EOS) and insecure plaintext, in alternating
//! rounds so that all four see the same machine state.

use std::net::SocketAddr;
use std::time::Instant;

use super::bench::{BUILD, median};

use tickwire_proto::wire::MAX_DATAGRAM_SIZE;
use tickwire_proto::{CHANNEL_UNRELIABLE, Endpoint, EndpointConfig, NetEvent, PacketProtection, PeerId, Security};

const BATCH: usize = 2_000;
const ROUNDS: usize = 15;

struct Pair {
    client: Endpoint,
    server: Endpoint,
    peer: PeerId,
    now: u64,
    buf: Vec<u8>,
}

fn pair(security: &Security, aes_gcm: bool) -> Result<Pair, String> {
    let cfg = |max_incoming, seed| EndpointConfig {
        max_incoming,
        seed,
        security: security.clone(),
        aes_gcm,
        // Sealed as a host seals (AWS-LC's AEADs).
        aead: Some(tickwire_runtime::aws_lc_aead()),
        // No pacing in the way: this measures the cost of one packet.
        limits: tickwire_proto::PeerLimits {
            max_messages_per_sec: 1 << 30,
            max_bytes_per_sec: u32::MAX,
            ..Default::default()
        },
        ..EndpointConfig::default()
    };
    let mut p = Pair {
        client: Endpoint::new(cfg(0, 1), 0).map_err(|e| e.to_string())?,
        server: Endpoint::new(cfg(1, 2), 0).map_err(|e| e.to_string())?,
        peer: 0,
        now: 1,
        buf: vec![0; MAX_DATAGRAM_SIZE],
    };
    let (ca, sa): (SocketAddr, SocketAddr) = ("10.0.0.1:1".parse().unwrap(), "10.0.0.2:2".parse().unwrap());
    p.peer = p.client.connect(0, sa).map_err(|e| e.to_string())?;
    for _ in 0..8 {
        while let Some((_, n)) = p.client.poll_transmit(&mut p.buf) {
            p.server.handle_datagram(p.now, ca, &p.buf[..n]);
        }
        while let Some((_, n)) = p.server.poll_transmit(&mut p.buf) {
            p.client.handle_datagram(p.now, sa, &p.buf[..n]);
        }
    }
    if !p.client.is_connected(p.peer) {
        return Err("the in-memory endpoints did not connect".into());
    }
    if aes_gcm && p.client.cipher(p.peer) != Some(tickwire_proto::wire::Cipher::Aes256Gcm) {
        return Err("two endpoints with aes_gcm did not agree on AES-256-GCM".into());
    }
    while p.server.poll_event().is_some() {}
    Ok(p)
}

/// Nanoseconds per packet to send (pack + seal + take) and to receive (open + deliver +
/// poll), for one message of `size` bytes per packet.
fn round(p: &mut Pair, size: usize) -> (f64, f64) {
    let msg = vec![0x5A; size];
    let ca: SocketAddr = "10.0.0.1:1".parse().unwrap();
    let mut packets = Vec::with_capacity(BATCH);
    let t0 = Instant::now();
    for _ in 0..BATCH {
        p.now += 100;
        p.client.send(p.peer, CHANNEL_UNRELIABLE, &msg).expect("send");
        p.client.flush(p.now);
        let (_, n) = p.client.poll_transmit(&mut p.buf).expect("a packet");
        packets.push(p.buf[..n].to_vec());
    }
    let send = t0.elapsed().as_nanos() as f64 / BATCH as f64;
    let t1 = Instant::now();
    for d in &packets {
        p.server.handle_datagram(p.now, ca, d);
        while let Some(e) = p.server.poll_event() {
            if let NetEvent::Message { data, .. } = e {
                p.server.recycle(data);
            }
        }
    }
    let recv = t1.elapsed().as_nanos() as f64 / BATCH as f64;
    // Acks back, so that the client's state stays as in a live match.
    p.server.update(p.now + 30_000);
    while let Some((_, n)) = p.server.poll_transmit(&mut p.buf) {
        let sa: SocketAddr = "10.0.0.2:2".parse().unwrap();
        p.client.handle_datagram(p.now, sa, &p.buf[..n]);
    }
    (send, recv)
}

/// Prints the table: per-packet send and receive cost under each protection, and what
/// each cipher costs over the carrier's protection (the same packets, no tag). Each
/// size has two rows: the median round, and the fastest (on a shared machine the
/// fastest is the steadier figure of what the code costs; the median says what a
/// loaded one sees).
pub fn print_cost() -> Result<(), String> {
    println!(
        "\n(d) endpoint cost per packet (ns), one unreliable message per packet, sealed as a host seals (AWS-LC), \
         {ROUNDS} alternating rounds of {BATCH} packets; AES-256-GCM in hardware here: {}",
        tickwire_runtime::aes_gcm_in_hardware()
    );
    let group = |a: &str, b: &str, c: &str, d: &str| format!("{a:>6} {b:>6} {c:>7} {d:>6}");
    println!(
        "    {:>14} | {:^28} | {:^28} | {:>10} {:>10} {:>10} {:>10}",
        "", "send", "receive", "ChaCha", "ChaCha", "AES", "AES"
    );
    println!(
        "    {:>14} | {} | {} | {:>10} {:>10} {:>10} {:>10}",
        "message",
        group("chacha", "aes", "carrier", "plain"),
        group("chacha", "aes", "carrier", "plain"),
        "seal",
        "open",
        "seal",
        "open"
    );
    let carrier = Security::Encrypted {
        admission: Default::default(),
        presented: Default::default(),
        packets: PacketProtection::Carrier,
    };
    let modes = [
        (Security::default(), false),
        (Security::default(), true),
        (carrier, false),
        (Security::InsecurePlaintext, false),
    ];
    for size in [32usize, 1_100] {
        let mut pairs = modes.iter().map(|(s, aes)| pair(s, *aes)).collect::<Result<Vec<_>, _>>()?;
        let mut times: [[Vec<f64>; 2]; 4] = Default::default();
        for _ in 0..ROUNDS {
            for (m, p) in pairs.iter_mut().enumerate() {
                let (s, r) = round(p, size);
                times[m][0].push(s);
                times[m][1].push(r);
            }
        }
        let fastest = |v: Vec<f64>| v.into_iter().fold(f64::INFINITY, f64::min);
        for (label, pick) in [("median", median as fn(Vec<f64>) -> f64), ("fastest", fastest)] {
            let [[sc, rc], [sa, ra], [sk, rk], [sp, rp]] = times.clone().map(|t| t.map(pick));
            let g = |a: f64, b: f64, c: f64, d: f64| format!("{a:>6.0} {b:>6.0} {c:>7.0} {d:>6.0}");
            println!(
                "    {:>14} | {} | {} | {:>+10.0} {:>+10.0} {:>+10.0} {:>+10.0}",
                format!("{size} B {label}"),
                g(sc, sa, sk, sp),
                g(rc, ra, rk, rp),
                sc - sk,
                rc - rk,
                sa - sk,
                ra - rk
            );
        }
    }
    println!(
        "    seal, open: what the cipher adds to a packet's send or receive over the carrier's protection (the same \
         packet and handshake, no tag)"
    );
    Ok(())
}

/// `tickwire bench crypto`: part (d), and (e) the vetted AEADs side by side.
pub fn run(argv: &[String]) -> std::process::ExitCode {
    println!("$ tickwire {}", argv.join(" "));
    println!("build: {BUILD}");
    match print_cost().and_then(|()| super::bench_aead::print_cost()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
