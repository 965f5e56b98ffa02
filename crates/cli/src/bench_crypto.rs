//! `tickwire bench loopback`, part (d): what encryption costs per packet, measured on the
//! endpoint itself (the sans-IO state machine, no socket, no thread), the same code the
//! network thread runs. One client endpoint sends a message per packet to one server
//! endpoint in memory; the time to pack and seal a packet (send) and to open and
//! deliver it (receive) is taken over batches, encrypted and insecure plaintext, in
//! alternating rounds so that both see the same machine state.

use std::net::SocketAddr;
use std::time::Instant;

use tickwire_proto::wire::MAX_DATAGRAM_SIZE;
use tickwire_proto::{CHANNEL_UNRELIABLE, Endpoint, EndpointConfig, NetEvent, PeerId, Security};

const BATCH: usize = 2_000;
const ROUNDS: usize = 5;

struct Pair {
    client: Endpoint,
    server: Endpoint,
    peer: PeerId,
    now: u64,
    buf: Vec<u8>,
}

fn pair(security: &Security) -> Result<Pair, String> {
    let cfg = |max_incoming, seed| EndpointConfig {
        max_incoming,
        seed,
        security: security.clone(),
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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Prints the table: per-packet send and receive cost, encrypted and plaintext.
pub fn print_cost() -> Result<(), String> {
    println!(
        "\n(d) endpoint cost per packet, one message per packet, median of {ROUNDS} alternating rounds of {BATCH}:"
    );
    println!(
        "    {:>8} {:>14} {:>14} {:>14} {:>14} {:>12} {:>12}",
        "message", "send enc", "send plain", "recv enc", "recv plain", "seal", "open"
    );
    let modes = [Security::default(), Security::InsecurePlaintext];
    for size in [32usize, 1_100] {
        let mut pairs = [pair(&modes[0])?, pair(&modes[1])?];
        let mut times = [[Vec::new(), Vec::new()], [Vec::new(), Vec::new()]];
        for _ in 0..ROUNDS {
            for (m, p) in pairs.iter_mut().enumerate() {
                let (s, r) = round(p, size);
                times[m][0].push(s);
                times[m][1].push(r);
            }
        }
        let [[se, re], [sp, rp]] = times.map(|t| t.map(median));
        println!(
            "    {:>6} B {:>11.0} ns {:>11.0} ns {:>11.0} ns {:>11.0} ns {:>+9.0} ns {:>+9.0} ns",
            size,
            se,
            sp,
            re,
            rp,
            se - sp,
            re - rp
        );
    }
    Ok(())
}
