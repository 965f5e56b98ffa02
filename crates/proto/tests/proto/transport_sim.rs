//! Deterministic transport tests: endpoints on a simulated timeline joined by seeded
//! link conditioners. Each runs minutes of simulated time in milliseconds.

use tickwire_proto::wire;
use tickwire_proto::{
    ACK_EVERY_UNRELIABLE, CHANNEL_RELIABLE, CHANNEL_SEQUENCED, CHANNEL_UNRELIABLE, DisconnectReason, EndpointConfig,
    JitterModel, LinkConfig, LossModel, NetEvent as Event, NodeId, PeerId, SimNet, UnreliableAcks,
};

const MS: u64 = 1_000;
const SEC: u64 = 1_000_000;

fn server_cfg(max: u32) -> EndpointConfig {
    EndpointConfig { max_incoming: max, ..EndpointConfig::default() }
}

fn lossy(p: f64) -> LinkConfig {
    LinkConfig { latency_us: 20 * MS, loss: LossModel::Bernoulli { p }, ..LinkConfig::perfect() }
}

/// Connects `client` to `server`; returns (peer id on the client, peer id on the server).
fn connect(net: &mut SimNet, client: NodeId, server: NodeId, limit: u64) -> Option<(PeerId, PeerId)> {
    let addr = net.addr(server);
    let now = net.now();
    let cp = net.endpoint(client).connect(now, addr).unwrap();
    let mut sp = None;
    let mut client_ok = false;
    net.run_until(MS, limit, |n| {
        for e in n.take_events(client) {
            if matches!(e, Event::Connected { peer, .. } if peer == cp) {
                client_ok = true;
            }
        }
        for e in n.take_events(server) {
            if let Event::Connected { peer, .. } = e {
                sp = Some(peer);
            }
        }
        client_ok && sp.is_some()
    });
    (client_ok && sp.is_some()).then(|| (cp, sp.unwrap()))
}

#[test]
fn handshake_completes_under_20_percent_loss() {
    for seed in 1..=30 {
        let mut net = SimNet::new(seed, lossy(0.20));
        let s = net.add(server_cfg(8));
        let c = net.add(EndpointConfig::default());
        assert!(connect(&mut net, c, s, 5 * SEC).is_some(), "seed {seed}: no connection within 5 s at 20% loss");
    }
}

#[test]
fn reliable_ordered_exactly_once_in_order_under_hostile_link() {
    let hostile = LinkConfig {
        latency_us: 1_000 * MS,
        jitter: JitterModel::Uniform { max_us: 100 * MS },
        loss: LossModel::Bernoulli { p: 0.25 },
        duplicate: 0.25,
        reorder: 0.10,
        reorder_delay_us: 150 * MS,
        ..LinkConfig::perfect()
    };
    let mut net = SimNet::new(7, LinkConfig::perfect());
    let s = net.add(server_cfg(4));
    let c = net.add(EndpointConfig { timeout_us: 20 * SEC, ..EndpointConfig::default() });
    let s_cfg = EndpointConfig { max_incoming: 4, timeout_us: 20 * SEC, ..EndpointConfig::default() };
    let _ = s_cfg;
    net.set_links(c, s, hostile);
    let (cp, _sp) = connect(&mut net, c, s, 30 * SEC).expect("connects");

    // 3000 messages of varied sizes (some fragmented), sent 5 per 16 ms tick.
    let total = 3000u32;
    let msg = |i: u32| -> Vec<u8> {
        let len = match i % 50 {
            0 => 3000,
            1 => 0,
            _ => (i as usize * 37) % 200 + 4,
        };
        let mut v = vec![(i % 251) as u8; len];
        if len >= 4 {
            v[..4].copy_from_slice(&i.to_le_bytes());
        }
        v
    };
    let mut sent = 0u32;
    let mut got: Vec<Vec<u8>> = Vec::new();
    let done = net.run_until(16 * MS, 600 * SEC, |n| {
        for _ in 0..5 {
            if sent < total {
                n.endpoint(c).send(cp, CHANNEL_RELIABLE, &msg(sent)).unwrap();
                sent += 1;
            }
        }
        n.flush(c);
        n.flush(s);
        // The send queue's figure on its own is the statistics' figure, at every step
        // of a stream that queues, resends and is acknowledged out of order.
        let queued = n.endpoint(c).queued_bytes(cp).unwrap();
        assert_eq!(queued as u64, n.endpoint(c).stats(cp).unwrap().send_queue_bytes);
        for e in n.take_events(s) {
            match e {
                Event::Message { channel, data, .. } => {
                    assert_eq!(channel, CHANNEL_RELIABLE);
                    got.push(data);
                }
                Event::Disconnected { reason, .. } => panic!("server lost the client: {reason:?}"),
                _ => {}
            }
        }
        got.len() as u32 >= total
    });
    assert!(done, "only {} of {total} delivered", got.len());
    // Run on: nothing more may arrive (no duplicates).
    net.run_until(16 * MS, 10 * SEC, |n| {
        n.flush(c);
        n.flush(s);
        for e in n.take_events(s) {
            if let Event::Message { .. } = e {
                got.push(Vec::new());
            }
        }
        false
    });
    assert_eq!(got.len() as u32, total, "duplicates delivered");
    // Every unit acknowledged: nothing is held for resending (the connection keeps a
    // summary of its senders, checked against them in debug builds at every send).
    assert_eq!(net.endpoint(c).queued_bytes(cp), Some(0));
    for (i, m) in got.iter().enumerate() {
        assert_eq!(m, &msg(i as u32), "message {i} differs or out of order");
    }
    let st = net.endpoint(c).stats(cp).unwrap();
    assert!(st.resent > 0, "a 25% loss link must have needed resends");
    assert!(st.loss > 0.15 && st.loss < 0.40, "loss estimate {}", st.loss);
}

#[test]
fn one_mebibyte_message_reassembles() {
    for (seed, link) in [(1u64, LinkConfig::perfect()), (2, lossy(0.05))] {
        let mut net = SimNet::new(seed, link);
        let s = net.add(server_cfg(4));
        let c = net.add(EndpointConfig::default());
        let (cp, _) = connect(&mut net, c, s, 5 * SEC).unwrap();
        let big: Vec<u8> = (0..(1u32 << 20)).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        net.endpoint(c).send(cp, CHANNEL_RELIABLE, &big).unwrap();
        let mut got = None;
        assert!(
            net.run_until(16 * MS, 60 * SEC, |n| {
                n.flush(c);
                n.flush(s);
                for e in n.take_events(s) {
                    if let Event::Message { data, .. } = e {
                        got = Some(data);
                    }
                }
                got.is_some()
            }),
            "seed {seed}: 1 MiB message not delivered"
        );
        assert!(got.unwrap() == big, "seed {seed}: reassembled bytes differ");
    }
}

#[test]
fn oversized_reliable_message_is_refused_at_send() {
    let mut net = SimNet::new(1, LinkConfig::perfect());
    let s = net.add(server_cfg(4));
    let c = net.add(EndpointConfig::default());
    let (cp, _) = connect(&mut net, c, s, SEC).unwrap();
    let err = net.endpoint(c).send(cp, CHANNEL_RELIABLE, &vec![0; (1 << 20) + 1]).unwrap_err();
    assert!(err.to_string().contains("exceeds"), "{err}");
    let err = net.endpoint(c).send(cp, CHANNEL_UNRELIABLE, &[0; 1200]).unwrap_err();
    assert!(err.to_string().contains("exceeds"), "{err}");
    assert!(net.endpoint(c).send(cp, 9, b"x").is_err());
    assert!(net.endpoint(c).send(999, CHANNEL_RELIABLE, b"x").is_err());
}

#[test]
fn silent_peer_times_out_with_reason_timeout() {
    let mut net = SimNet::new(3, LinkConfig::perfect());
    let s = net.add(server_cfg(4));
    let c = net.add(EndpointConfig::default());
    let (cp, sp) = connect(&mut net, c, s, SEC).unwrap();
    let cut = LinkConfig { loss: LossModel::Bernoulli { p: 1.0 }, ..LinkConfig::perfect() };
    net.set_links(c, s, cut);
    let t0 = net.now();
    let (mut cr, mut sr) = (None, None);
    net.run_until(10 * MS, 10 * SEC, |n| {
        for e in n.take_events(c) {
            if let Event::Disconnected { peer, reason } = e {
                assert_eq!(peer, cp);
                cr = Some((reason, n.now()));
            }
        }
        for e in n.take_events(s) {
            if let Event::Disconnected { peer, reason } = e {
                assert_eq!(peer, sp);
                sr = Some((reason, n.now()));
            }
        }
        cr.is_some() && sr.is_some()
    });
    let timeout = EndpointConfig::default().timeout_us;
    for (side, r) in [("client", cr), ("server", sr)] {
        let (reason, at) = r.unwrap_or_else(|| panic!("{side} never timed out"));
        assert_eq!(reason, DisconnectReason::Timeout, "{side}");
        assert!(
            at - t0 >= timeout - 100 * MS && at - t0 <= timeout + 200 * MS,
            "{side} timed out after {} us",
            at - t0
        );
    }
}

#[test]
fn connecting_to_nobody_times_out() {
    let mut net = SimNet::new(4, LinkConfig::perfect());
    let c = net.add(EndpointConfig::default());
    let nobody = "127.0.9.9:9".parse().unwrap();
    let now = net.now();
    let cp = net.endpoint(c).connect(now, nobody).unwrap();
    let mut r = None;
    net.run_until(10 * MS, 10 * SEC, |n| {
        for e in n.take_events(c) {
            if let Event::Disconnected { peer, reason } = e {
                r = Some((peer, reason));
            }
        }
        r.is_some()
    });
    assert_eq!(r, Some((cp, DisconnectReason::Timeout)));
}

#[test]
fn full_server_rejects_the_next_client_cleanly() {
    let mut net = SimNet::new(5, LinkConfig { latency_us: 10 * MS, ..LinkConfig::perfect() });
    let s = net.add(server_cfg(2));
    let a = net.add(EndpointConfig::default());
    let b = net.add(EndpointConfig::default());
    let c = net.add(EndpointConfig::default());
    let (ap, _) = connect(&mut net, a, s, SEC).unwrap();
    connect(&mut net, b, s, SEC).unwrap();
    let addr = net.addr(s);
    let now = net.now();
    let cp = net.endpoint(c).connect(now, addr).unwrap();
    let mut r = None;
    net.run_until(MS, 2 * SEC, |n| {
        for e in n.take_events(c) {
            match e {
                Event::Disconnected { peer, reason } => r = Some((peer, reason)),
                Event::Connected { .. } => panic!("third client was admitted"),
                _ => {}
            }
        }
        r.is_some()
    });
    assert_eq!(r, Some((cp, DisconnectReason::ServerFull)));
    assert!(net.now() < 500 * MS + now, "refusal should be prompt, not a timeout");
    let st = net.endpoint(s).endpoint_stats();
    assert_eq!(st.connections, 2);
    assert!(st.denied >= 1);
    // The admitted clients still work.
    net.endpoint(a).send(ap, CHANNEL_RELIABLE, b"still here").unwrap();
    let mut ok = false;
    net.run_until(MS, SEC, |n| {
        n.flush(a);
        ok |= n.take_events(s).iter().any(|e| matches!(e, Event::Message { data, .. } if data == b"still here"));
        ok
    });
    assert!(ok);
    // A slot frees up when a client leaves, and the refused client can then get in.
    let ap_now = net.now();
    net.endpoint(a).disconnect(ap_now, ap);
    net.step(50 * MS);
    assert!(connect(&mut net, c, s, 2 * SEC).is_some());
}

#[test]
fn disconnect_reasons_reach_the_other_side() {
    let mut net = SimNet::new(6, LinkConfig { latency_us: 5 * MS, ..LinkConfig::perfect() });
    let s = net.add(server_cfg(4));
    let a = net.add(EndpointConfig::default());
    let b = net.add(EndpointConfig::default());
    let c = net.add(EndpointConfig::default());
    let (ap, asp) = connect(&mut net, a, s, SEC).unwrap();
    let (bp, bsp) = connect(&mut net, b, s, SEC).unwrap();
    let (cp, _) = connect(&mut net, c, s, SEC).unwrap();
    let reason_of = |evs: Vec<Event>, who: PeerId| {
        evs.into_iter().find_map(|e| match e {
            Event::Disconnected { peer, reason } if peer == who => Some(reason),
            _ => None,
        })
    };
    // Client leaves: server hears "client"; client's own event says "client".
    let now = net.now();
    net.endpoint(a).disconnect(now, ap);
    assert_eq!(reason_of(net.take_events(a), ap), Some(DisconnectReason::Client));
    net.step(20 * MS);
    assert_eq!(reason_of(net.take_events(s), asp), Some(DisconnectReason::Client));
    // Server kicks b.
    let now = net.now();
    net.endpoint(s).disconnect(now, bsp);
    assert_eq!(reason_of(net.take_events(s), bsp), Some(DisconnectReason::Kicked));
    net.step(20 * MS);
    assert_eq!(reason_of(net.take_events(b), bp), Some(DisconnectReason::Kicked));
    // Server shuts down: c hears "server".
    let now = net.now();
    net.endpoint(s).shutdown(now);
    net.step(20 * MS);
    assert_eq!(reason_of(net.take_events(c), cp), Some(DisconnectReason::Server));
}

#[test]
fn sequenced_and_unreliable_channels() {
    let link = LinkConfig {
        latency_us: 30 * MS,
        jitter: JitterModel::Uniform { max_us: 5 * MS },
        duplicate: 0.3,
        reorder: 0.3,
        reorder_delay_us: 40 * MS,
        ..LinkConfig::perfect()
    };
    let mut net = SimNet::new(8, link);
    let s = net.add(server_cfg(4));
    let c = net.add(EndpointConfig::default());
    let (cp, _) = connect(&mut net, c, s, SEC).unwrap();
    let (mut seq_got, mut unrel_got) = (Vec::new(), Vec::new());
    let mut i = 0u32;
    net.run_until(16 * MS, 20 * SEC, |n| {
        if i < 1000 {
            n.endpoint(c).send(cp, CHANNEL_SEQUENCED, &i.to_le_bytes()).unwrap();
            n.endpoint(c).send(cp, CHANNEL_UNRELIABLE, &i.to_le_bytes()).unwrap();
            i += 1;
        }
        n.flush(c);
        for e in n.take_events(s) {
            if let Event::Message { channel, data, .. } = e {
                let v = u32::from_le_bytes(data[..4].try_into().unwrap());
                if channel == CHANNEL_SEQUENCED { seq_got.push(v) } else { unrel_got.push(v) }
            }
        }
        false
    });
    assert!(seq_got.windows(2).all(|w| w[0] < w[1]), "sequenced delivered an older message");
    assert!(seq_got.len() > 500, "sequenced delivered only {}", seq_got.len());
    let mut sorted = unrel_got.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), unrel_got.len(), "unreliable delivered a duplicate");
    assert_eq!(unrel_got.len(), 1000, "no loss configured: every unreliable message arrives");
    assert!(unrel_got.windows(2).any(|w| w[0] > w[1]), "reordering link should reorder unreliable messages");
}

#[test]
fn stats_measure_rtt_loss_and_rates() {
    let link = LinkConfig { latency_us: 50 * MS, loss: LossModel::Bernoulli { p: 0.10 }, ..LinkConfig::perfect() };
    let mut net = SimNet::new(9, link);
    let s = net.add(server_cfg(4));
    let c = net.add(EndpointConfig::default());
    let (cp, _) = connect(&mut net, c, s, 5 * SEC).unwrap();
    net.run_until(16 * MS, 30 * SEC, |n| {
        n.endpoint(c).send(cp, CHANNEL_UNRELIABLE, &[0; 32]).unwrap();
        n.flush(c);
        n.flush(s);
        n.take_events(s);
        false
    });
    let st = net.endpoint(c).stats(cp).unwrap();
    // The server only sends keepalives and delayed acks; ack delay is taken out of samples.
    assert!((st.srtt_us - 100_000.0).abs() < 2_000.0, "srtt {}", st.srtt_us);
    assert!((st.min_rtt_us - 100_000.0).abs() < 1_000.0, "min rtt {}", st.min_rtt_us);
    assert!(st.loss > 0.05 && st.loss < 0.16, "loss {}", st.loss);
    assert!((st.sent_packets_per_sec - 62.5).abs() < 3.0, "pps {}", st.sent_packets_per_sec);
    // Header without acks, frame header, message, and the tag (connections are
    // encrypted by default); the 8 bytes of ack fields ride only on the packet after
    // each one the server sends, the only times there is something new to acknowledge.
    let per_packet = wire::PAYLOAD_HEADER_NO_ACKS_SIZE as f64 + 2.0 + 32.0 + wire::TAG_SIZE as f64;
    let ack_fields = (wire::PAYLOAD_HEADER_SIZE - wire::PAYLOAD_HEADER_NO_ACKS_SIZE) as f64;
    let expected = 62.5 * per_packet + ack_fields * st.recv_packets_per_sec;
    assert!((st.sent_bytes_per_sec - expected).abs() < 100.0, "Bps {} against {expected}", st.sent_bytes_per_sec);
    assert!(st.recv_packets_per_sec > 5.0, "acks come back");
}

#[test]
fn same_seed_same_run() {
    let run = |seed: u64| -> Vec<String> {
        let mut net = SimNet::new(seed, lossy(0.2));
        let s = net.add(server_cfg(4));
        let c = net.add(EndpointConfig::default());
        let now = net.now();
        let addr = net.addr(s);
        let cp = net.endpoint(c).connect(now, addr).unwrap();
        let mut trace = Vec::new();
        let mut i = 0u32;
        net.run_until(5 * MS, 10 * SEC, |n| {
            if n.endpoint(c).is_connected(cp) && i < 200 {
                n.endpoint(c).send(cp, CHANNEL_RELIABLE, &i.to_le_bytes()).unwrap();
                i += 1;
            }
            n.flush(c);
            for e in n.take_events(s) {
                trace.push(format!("{} {:?}", n.now(), e));
            }
            false
        });
        trace
    };
    let a = run(42);
    assert!(a.len() > 100);
    assert_eq!(a, run(42));
    assert_ne!(a, run(43));
}

#[test]
fn drifting_clocks_still_connect_and_measure_rtt() {
    let link = LinkConfig { latency_us: 40 * MS, ..LinkConfig::perfect() };
    let mut net = SimNet::new(12, link);
    let s = net.add(server_cfg(4));
    let c = net.add(EndpointConfig::default());
    net.set_drift(s, 1000.0);
    net.set_drift(c, -1000.0);
    let (cp, _) = connect(&mut net, c, s, 5 * SEC).unwrap();
    net.run_until(16 * MS, 120 * SEC, |n| {
        n.endpoint(c).send(cp, CHANNEL_UNRELIABLE, &[0; 8]).unwrap();
        n.flush(c);
        n.take_events(s);
        false
    });
    assert!(net.endpoint(c).is_connected(cp));
    // The client's clock runs 0.1% slow, so it sees an 80 ms RTT as about 79.92 ms.
    let st = net.endpoint(c).stats(cp).unwrap();
    assert!((st.srtt_us - 79_920.0).abs() < 300.0, "srtt {}", st.srtt_us);
    assert!(net.local_now(s) > net.local_now(c) + 200 * MS, "clocks diverged by 2000 ppm over 2 min");
}

/// With sparse acks, a one-way stream of unreliable messages (a client's inputs with
/// nothing coming back) is acknowledged every 16 packets, not every ack delay: the
/// receiver sends about 1/16 of what it receives, and the sender's loss and RTT
/// figures stay right. Reliable data is still acknowledged within the ack delay.
#[test]
fn one_way_unreliable_stream_is_acked_sparingly_and_loss_stays_exact() {
    let sparse = EndpointConfig { max_incoming: 4, unreliable_acks: UnreliableAcks::Sparse, ..Default::default() };
    for (seed, p) in [(11, 0.0), (12, 0.05), (13, 0.10), (14, 0.20)] {
        let link = LinkConfig { latency_us: 30 * MS, loss: LossModel::Bernoulli { p }, ..LinkConfig::perfect() };
        let mut net = SimNet::new(seed, link);
        let s = net.add(sparse.clone());
        let c = net.add(EndpointConfig::default());
        let (cp, _) = connect(&mut net, c, s, 5 * SEC).unwrap();
        let (c0, s0) =
            (net.endpoint(c).endpoint_stats().datagrams_sent, net.endpoint(s).endpoint_stats().datagrams_sent);
        net.run_until(16 * MS, 20 * SEC, |n| {
            n.endpoint(c).send(cp, CHANNEL_UNRELIABLE, &[0; 32]).unwrap();
            n.flush(c);
            n.flush(s);
            n.take_events(s);
            false
        });
        let sent = net.endpoint(c).endpoint_stats().datagrams_sent - c0;
        let acks = net.endpoint(s).endpoint_stats().datagrams_sent - s0;
        let received = sent as f64 * (1.0 - p);
        let expected = received / ACK_EVERY_UNRELIABLE as f64;
        assert!(sent > 1200, "seed {seed}: {sent} sent");
        assert!(
            (acks as f64) < expected + 3.0 && (acks as f64) > expected - 3.0,
            "seed {seed}, loss {p}: {acks} acks for {received:.0} packets received"
        );
        let st = net.endpoint(c).stats(cp).unwrap();
        assert!((st.loss - p).abs() < 0.04, "seed {seed}: loss {} on a {p} link", st.loss);
        assert!((st.srtt_us - 60_000.0).abs() < 2_000.0, "seed {seed}: srtt {}", st.srtt_us);
    }
    // One reliable message: its ack comes back within the ack delay.
    let mut net = SimNet::new(15, LinkConfig { latency_us: 30 * MS, ..LinkConfig::perfect() });
    let s = net.add(sparse);
    let c = net.add(EndpointConfig::default());
    let (cp, _) = connect(&mut net, c, s, 5 * SEC).unwrap();
    // Quiet first: the handshake's traffic has settled.
    net.run_until(MS, 2 * SEC, |n| {
        n.take_events(s);
        n.take_events(c);
        false
    });
    let s0 = net.endpoint(s).endpoint_stats().datagrams_sent;
    net.endpoint(c).send(cp, CHANNEL_RELIABLE, b"once").unwrap();
    net.flush(c);
    let start = net.now();
    net.run_until(MS, SEC, |n| n.endpoint(s).endpoint_stats().datagrams_sent > s0);
    let waited = net.now() - start;
    assert!(waited <= 30 * MS + tickwire_proto::MAX_ACK_DELAY_US + MS, "reliable data acked after {waited} us");
}

/// The connections `s` lists as changed, with their send queues, in order.
fn changed(net: &mut SimNet, s: NodeId) -> Vec<(PeerId, usize)> {
    let mut v = Vec::new();
    net.endpoint(s).drain_changed(|peer, queued, _| v.push((peer, queued)));
    v.sort();
    v
}

/// `drain_changed` lists exactly the connections something touched since the last
/// drain, each once with its send queue, and never a closed one (the list is bounded
/// by the live connections).
#[test]
fn drain_changed_lists_the_touched_connections_once() {
    let mut net = SimNet::new(11, LinkConfig::perfect());
    let s = net.add(server_cfg(4));
    let (c1, c2) = (net.add(EndpointConfig::default()), net.add(EndpointConfig::default()));
    let (_, p1) = connect(&mut net, c1, s, 5 * SEC).expect("c1 connects");
    let (_, p2) = connect(&mut net, c2, s, 5 * SEC).expect("c2 connects");
    let drained = |net: &mut SimNet| changed(net, s);
    drained(&mut net);
    assert_eq!(drained(&mut net), [], "nothing touched since");
    net.endpoint(s).send(p1, CHANNEL_RELIABLE, &[7; 100]).unwrap();
    net.endpoint(s).send(p1, CHANNEL_RELIABLE, &[8; 50]).unwrap();
    let queued = net.endpoint(s).queued_bytes(p1).unwrap();
    assert_eq!(queued, 150);
    assert_eq!(drained(&mut net), [(p1, 150)], "p1 once, with its queue");
    let now = net.now();
    net.endpoint(s).flush(now);
    let mut both = [(p1, net.endpoint(s).queued_bytes(p1).unwrap()), (p2, 0)];
    both.sort();
    assert_eq!(drained(&mut net), both, "a flush touches every connection");
    net.endpoint(s).send(p2, CHANNEL_RELIABLE, &[9; 10]).unwrap();
    net.endpoint(s).disconnect(now, p2);
    assert_eq!(drained(&mut net), [], "a closed connection is not listed");
    // Each listed connection comes with its next timer: what it would add to
    // `next_timeout`, so that the earliest of them all is that.
    let now = net.now();
    net.endpoint(s).send(p1, CHANNEL_RELIABLE, &[1; 10]).unwrap();
    net.endpoint(s).flush(now);
    let mut timers = Vec::new();
    net.endpoint(s).drain_changed(|peer, _, timer| timers.push((peer, timer)));
    assert_eq!(timers.len(), 1);
    assert_eq!(Some(timers[0].1), net.endpoint(s).next_timeout(), "p1's resend is the endpoint's next timer");
    assert!(timers[0].1 > now && timers[0].1 <= now + 1_000_000, "a resend timer {} at {now}", timers[0].1);
}

/// The timers' walk (`update`) touches only the connections whose timer is due: one
/// whose next timer is still ahead is neither listed as changed nor has its timer
/// recomputed (a server of 1,200 connections had every timer recomputed after every
/// walk), and a due one is run and listed.
#[test]
fn the_timers_walk_touches_only_the_connections_that_are_due() {
    let mut net = SimNet::new(12, LinkConfig::perfect());
    let s = net.add(server_cfg(4));
    let (c1, c2) = (net.add(EndpointConfig::default()), net.add(EndpointConfig::default()));
    let (_, p1) = connect(&mut net, c1, s, 5 * SEC).expect("c1 connects");
    let (_, p2) = connect(&mut net, c2, s, 5 * SEC).expect("c2 connects");
    let drained = |net: &mut SimNet| changed(net, s).into_iter().map(|(p, _)| p).collect::<Vec<_>>();
    drained(&mut net);
    let next = net.endpoint(s).next_timeout().expect("timers");
    let now = net.now();
    assert!(next > now, "nothing due yet");
    net.endpoint(s).update(now);
    assert!(drained(&mut net).is_empty(), "no timer due: nothing touched");
    assert_eq!(net.endpoint(s).next_timeout(), Some(next), "the timers kept");
    // p1 gets reliable data: its resend timer is the earliest; at that time only it is
    // run (the simulator is not stepped, so nothing is acknowledged and the resend is
    // owed).
    net.endpoint(s).send(p1, CHANNEL_RELIABLE, &[1; 10]).unwrap();
    net.endpoint(s).flush(now);
    drained(&mut net);
    let resend = net.endpoint(s).next_timeout().expect("a resend");
    let p2_timer = {
        let mut t = 0;
        net.endpoint(s).drain_changed(|_, _, _| {});
        net.endpoint(s).send(p2, CHANNEL_UNRELIABLE, &[2; 4]).unwrap();
        net.endpoint(s).drain_changed(|_, _, timer| t = timer);
        t
    };
    assert!(p2_timer > resend, "p2's next timer ({p2_timer}) after p1's resend ({resend})");
    net.endpoint(s).update(resend);
    assert_eq!(drained(&mut net), vec![p1], "only the due connection was run");
}
