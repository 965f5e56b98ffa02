//! Hosts and sessions whose datagrams the engine carries (an external carrier: Steam,
//! EOS, WebRTC), moved here by an in-memory carrier: what each pulls is pushed into its
//! destination with the sender's remote id, as a platform's networking would deliver
//! it. Checks that everything a UDP host does works over it (the handshake, the AEAD,
//! messages of every kind, a P2P match, a relay match), that no datagram exceeds the
//! carrier's size, that the arrival time pushed is the one used, and that hostile
//! pushes (junk, forged remotes, floods, oversized datagrams) are dropped and counted.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tickwire_proto::{
    CHANNEL_RELIABLE, CHANNEL_UNRELIABLE, ClientSessionEvent, EndpointConfig, GameShape, PeerId, RemoteId, Rng,
    RollbackEvent,
};
use tickwire_runtime::{
    EngineLoop, Host, HostConfig, HostError, HostEvent, Incoming, MAX_PUSHED_AGE_US, Networked, Outgoing, P2pSession,
    P2pSettings, RelayClient, RelayClientSettings, RelayServer, RelayServerSettings, RequestKind, SessionEvent,
    Spectator, SpectatorSettings,
};

const WAIT: Duration = Duration::from_secs(15);
/// EOS P2P's largest packet, the smallest of the carriers the issue names.
const EOS_MAX: usize = 1170;

/// An in-memory carrier between remotes: pulls what each sends and pushes it into its
/// destination, dropping a share at random (seeded) and counting what it moved.
struct Wires {
    rng: Rng,
    loss: f64,
    moved: u64,
    largest: usize,
    buf: Vec<(RemoteId, RemoteId, Vec<u8>)>,
}

impl Wires {
    fn new(seed: u64, loss: f64) -> Wires {
        Wires { rng: Rng::new(seed), loss, moved: 0, largest: 0, buf: Vec::new() }
    }

    /// Pulls from `from` (known as `id`) into the carrier.
    fn pull(&mut self, id: RemoteId, mut pull: impl FnMut(&mut dyn FnMut(Outgoing<'_>) -> bool)) {
        let buf = &mut self.buf;
        pull(&mut |o: Outgoing<'_>| {
            buf.push((id, o.remote, o.data.to_vec()));
            true
        });
    }

    /// Delivers what the carrier holds for `to`.
    fn deliver(&mut self, to: RemoteId, mut push: impl FnMut(&[Incoming<'_>])) {
        let mine: Vec<_> = {
            let (mine, rest) = std::mem::take(&mut self.buf).into_iter().partition(|(_, dst, _)| *dst == to);
            self.buf = rest;
            mine
        };
        let mut kept = Vec::new();
        for (src, _, data) in &mine {
            self.largest = self.largest.max(data.len());
            if self.rng.next_f64() >= self.loss {
                kept.push(Incoming { remote: *src, data, age_us: 0 });
            }
        }
        self.moved += kept.len() as u64;
        push(&kept);
    }
}

fn host_config(id: u64, server: bool) -> HostConfig {
    let mut cfg = HostConfig::external(RemoteId(id), EOS_MAX);
    cfg.endpoint = EndpointConfig { max_incoming: if server { 8 } else { 0 }, ..EndpointConfig::default() };
    cfg.sim_seed = 7;
    cfg
}

fn pull_host(h: &mut Host) -> impl FnMut(&mut dyn FnMut(Outgoing<'_>) -> bool) + '_ {
    move |take| {
        h.pull_datagrams(take).unwrap();
    }
}

/// Moves datagrams between two hosts (A known as `a`, B as `b`) once.
fn exchange(w: &mut Wires, (a, ha): (RemoteId, &mut Host), (b, hb): (RemoteId, &mut Host)) {
    ha.flush().unwrap();
    hb.flush().unwrap();
    w.pull(a, pull_host(ha));
    w.pull(b, pull_host(hb));
    w.deliver(a, |d| {
        ha.push_datagrams(d.iter().copied()).unwrap();
    });
    w.deliver(b, |d| {
        hb.push_datagrams(d.iter().copied()).unwrap();
    });
}

/// A server known as `a` and a client known as `b`, connected over a lossless carrier:
/// the hosts, the client's id of the server, and the carrier.
fn connected_pair(a: RemoteId, b: RemoteId, seed: u64) -> (Host, Host, PeerId, Wires) {
    let mut server = Host::start(host_config(a.0, true)).unwrap();
    let mut client = Host::start(host_config(b.0, false)).unwrap();
    let at_client = client.connect(a.to_addr()).unwrap();
    let mut w = Wires::new(seed, 0.0);
    let mut up = false;
    until("connected", || {
        exchange(&mut w, (a, &mut server), (b, &mut client));
        while server.poll_event().is_some() {}
        while let Some(e) = client.poll_event() {
            up |= matches!(e, HostEvent::Connected { .. });
        }
        up
    });
    (server, client, at_client, w)
}

/// Sends `payload` from the client (known as `b`) and pushes its datagrams into the
/// server `age_us` old; returns the server's clock just before and just after the push,
/// and the message's arrival time.
fn push_aged(
    client: &mut Host,
    to: PeerId,
    server: &mut Host,
    b: RemoteId,
    payload: &[u8],
    age_us: u64,
) -> (u64, u64, u64) {
    client.send(to, CHANNEL_UNRELIABLE, payload).unwrap();
    client.flush().unwrap();
    let mut sent = Vec::new();
    client
        .pull_datagrams(|o| {
            sent.push(o.data.to_vec());
            true
        })
        .unwrap();
    let before = server.now_us();
    server.push_datagrams(sent.iter().map(|d| Incoming { remote: b, data: d, age_us })).unwrap();
    let after = server.now_us();
    let mut received_at = None;
    until("the message", || {
        while let Some(e) = server.poll_event() {
            if let HostEvent::Message { received_at: at, data, .. } = e {
                if data == payload {
                    received_at = Some(at);
                }
            }
        }
        received_at.is_some()
    });
    (before, after, received_at.unwrap())
}

fn until(what: &str, mut step: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !step() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn two_hosts_connect_encrypted_and_exchange_every_kind_of_message_over_the_carrier() {
    let (a, b) = (RemoteId(76_561_198_000_000_001), RemoteId(76_561_198_000_000_002));
    let mut server = Host::start(host_config(a.0, true)).unwrap();
    let mut client = Host::start(host_config(b.0, false)).unwrap();
    assert!(server.is_external() && client.is_external());
    assert_eq!(server.local_addr(), a.to_addr());
    let at_client = client.connect(a.to_addr()).unwrap();
    let mut w = Wires::new(1, 0.0);
    let (mut at_server, mut client_up) = (None, false);
    until("both connected", || {
        exchange(&mut w, (a, &mut server), (b, &mut client));
        while let Some(e) = server.poll_event() {
            if let HostEvent::Connected { peer, addr, .. } = e {
                assert_eq!(addr, b.to_addr(), "the server knows the client by its remote");
                at_server = Some(peer);
            }
        }
        while let Some(e) = client.poll_event() {
            client_up |= matches!(e, HostEvent::Connected { peer, .. } if peer == at_client);
        }
        at_server.is_some() && client_up
    });
    let at_server = at_server.unwrap();
    // A reliable message in many fragments, and unreliable ones up to the limit.
    let big: Vec<u8> = (0..20_000u32).map(|i| i as u8).collect();
    client.send(at_client, CHANNEL_RELIABLE, &big).unwrap();
    client.send(at_client, CHANNEL_UNRELIABLE, b"ping").unwrap();
    server.send(at_server, CHANNEL_RELIABLE, b"pong").unwrap();
    let (mut got_big, mut got_ping, mut got_pong) = (false, false, false);
    until("messages both ways", || {
        exchange(&mut w, (a, &mut server), (b, &mut client));
        while let Some(e) = server.poll_event() {
            if let HostEvent::Message { data, channel, .. } = e {
                got_big |= channel == CHANNEL_RELIABLE && data == big;
                got_ping |= channel == CHANNEL_UNRELIABLE && data == b"ping";
            }
        }
        while let Some(e) = client.poll_event() {
            got_pong |= matches!(&e, HostEvent::Message { data, .. } if data == b"pong");
        }
        got_big && got_ping && got_pong
    });
    // The largest unreliable message the carrier's datagram holds, and one byte more.
    let limit = tickwire_proto::max_unreliable_for(EOS_MAX);
    let most = vec![7u8; limit];
    server.send(at_server, CHANNEL_UNRELIABLE, &most).unwrap();
    let too_big = server.send(at_server, CHANNEL_UNRELIABLE, &vec![7u8; limit + 1]);
    assert!(matches!(too_big, Err(HostError::TooLarge { .. })), "{too_big:?}");
    let mut got_most = false;
    until("the largest unreliable message", || {
        exchange(&mut w, (a, &mut server), (b, &mut client));
        while server.poll_event().is_some() {}
        while let Some(e) = client.poll_event() {
            got_most |= matches!(&e, HostEvent::Message { data, .. } if *data == most);
        }
        got_most
    });
    assert!(w.largest <= EOS_MAX, "a datagram of {} bytes over the carrier's {EOS_MAX}", w.largest);
    assert!(w.largest > EOS_MAX - 64, "the largest message filled a datagram: {}", w.largest);
    // The AEAD ran: a client's packets carry the 16-byte tag (the smallest packet is
    // larger than the plaintext header alone) and the endpoint saw no forgery.
    assert_eq!(server.endpoint_stats().forged, 0);
}

#[test]
fn a_pushed_arrival_time_is_the_one_messages_carry() {
    let (a, b) = (RemoteId(1), RemoteId(2));
    let (mut server, mut client, at_client, _) = connected_pair(a, b, 2);
    const AGE_US: u64 = 250_000;
    // The host's clock starts with it: let it pass the age first.
    std::thread::sleep(Duration::from_micros(AGE_US + 10_000));
    let (before, after, at) = push_aged(&mut client, at_client, &mut server, b, b"late", AGE_US);
    assert!(at + AGE_US >= before && at + AGE_US <= after, "arrival {at}, pushed within {before}..={after}");

    // An age no carrier's wait explains (a clock that disagrees, or garbage) counts as
    // the longest allowed, and the connection carries on.
    std::thread::sleep(Duration::from_micros(MAX_PUSHED_AGE_US));
    let (before, _, at) = push_aged(&mut client, at_client, &mut server, b, b"ancient", u64::MAX);
    assert!(at + MAX_PUSHED_AGE_US >= before, "arrival {at} more than the cap before the push at {before}");
}

#[test]
fn hostile_pushes_are_dropped_and_counted_and_hurt_no_connection() {
    let (a, b, stranger) = (RemoteId(10), RemoteId(11), RemoteId(666));
    let (mut server, mut client, at_client, mut w) = connected_pair(a, b, 3);
    // Junk from a stranger, junk claiming to be the client (a forged remote), empty
    // datagrams, and datagrams over the carrier's size: a flood of each.
    let mut rng = Rng::new(9);
    let junk: Vec<Vec<u8>> = (0..2000).map(|i| (0..(i % 1100)).map(|_| rng.next_u64() as u8).collect()).collect();
    let oversized = vec![0u8; EOS_MAX + 1];
    let before = server.runtime_stats();
    let mut taken = 0;
    for chunk in junk.chunks(64) {
        let forged = chunk.iter().map(|d| Incoming { remote: b, data: d, age_us: 0 });
        let strange = chunk.iter().map(|d| Incoming { remote: stranger, data: d, age_us: 0 });
        taken += server.push_datagrams(forged.chain(strange)).unwrap();
        taken += server.push_datagrams([Incoming { remote: stranger, data: &[], age_us: u64::MAX }]).unwrap();
        let big = server.push_datagrams([Incoming { remote: b, data: &oversized, age_us: 0 }]).unwrap();
        assert_eq!(big, 0, "a datagram over the carrier's size is not taken");
    }
    assert!(taken > 0);
    // Still connected and working: a message goes through after the flood.
    client.send(at_client, CHANNEL_RELIABLE, b"still here").unwrap();
    let mut got = false;
    until("a message after the flood", || {
        exchange(&mut w, (a, &mut server), (b, &mut client));
        while let Some(e) = server.poll_event() {
            assert!(!matches!(e, HostEvent::Disconnected { .. } | HostEvent::Fatal { .. }), "{e:?}");
            got |= matches!(&e, HostEvent::Message { data, .. } if data == b"still here");
        }
        while let Some(e) = client.poll_event() {
            assert!(!matches!(e, HostEvent::Disconnected { .. }), "{e:?}");
        }
        got
    });
    let e = server.endpoint_stats();
    assert!(e.forged + e.malformed + e.unknown_sender > 0, "the junk was refused and counted: {e:?}");
    let after = server.runtime_stats();
    assert!(after.socket_recv_errors >= before.socket_recv_errors + 32, "the oversized pushes are counted");
}

#[test]
fn a_udp_host_refuses_pushes_and_pulls_and_remotes_and_an_external_host_refuses_ip_addresses() {
    let mut udp = Host::start(HostConfig::new("127.0.0.1:0".parse().unwrap())).unwrap();
    assert!(matches!(udp.push_datagrams([]), Err(HostError::Config(_))));
    assert!(matches!(udp.pull_datagrams(|_| true), Err(HostError::Config(_))));
    assert!(matches!(udp.connect(RemoteId(5).to_addr()), Err(HostError::Config(_))));
    let mut ext = Host::start(host_config(4, false)).unwrap();
    assert!(matches!(ext.connect("127.0.0.1:9".parse().unwrap()), Err(HostError::Config(_))));
    // Bound to an IP address, or with a datagram size no carrier of ours takes.
    let mut bad = HostConfig::external(RemoteId(1), 1200);
    bad.bind = "127.0.0.1:0".parse().unwrap();
    assert!(matches!(Host::start(bad), Err(HostError::Config(_))));
    for size in [0, 500, 1104, 1201, 65_536] {
        assert!(matches!(Host::start(HostConfig::external(RemoteId(1), size)), Err(HostError::Config(_))), "{size}");
    }
}

/// Runs one frame of a session; `request` answers SAVE and DUMP_STATE requests.
/// Returns the newest tick advanced so far (`newest` carried from frame to frame).
fn frame<S: EngineLoop>(
    s: &mut S,
    newest: &mut u32,
    mut input: impl FnMut(&mut S),
    mut request: impl FnMut(&mut S, RequestKind, u32),
) -> u32 {
    for _ in 0..s.ticks_due().unwrap() {
        input(s);
        s.advance().unwrap();
        while let Some(r) = s.poll_request() {
            match r.kind {
                RequestKind::Advance => *newest = (*newest).max(r.tick),
                kind => request(s, kind, r.tick),
            }
        }
    }
    *newest
}

/// A desync or a fatal error.
fn bad(e: &SessionEvent) -> bool {
    matches!(
        e,
        SessionEvent::Core(RollbackEvent::Desync { .. })
            | SessionEvent::RelayClient(ClientSessionEvent::Desync { .. })
            | SessionEvent::Fatal(_)
    )
}

/// A P2P pair over the carrier at 5% loss runs to tick 300 in sync, watched by a
/// spectator of peer 0's, on the carrier too.
#[test]
fn a_p2p_match_runs_in_sync_over_a_lossy_carrier_with_a_spectator() {
    let game = GameShape::new(2, 2);
    let ids = [RemoteId(100), RemoteId(200)];
    let watcher = RemoteId(300);
    let mut peers: Vec<P2pSession> =
        ids.iter().map(|id| P2pSession::new(P2pSettings::new(game, host_config(id.0, false))).unwrap()).collect();
    peers[0].add_local_player(0).unwrap();
    peers[0].add_remote_player(1, ids[1].to_addr()).unwrap();
    peers[0].add_spectator(watcher.to_addr()).unwrap();
    peers[1].add_remote_player(0, ids[0].to_addr()).unwrap();
    peers[1].add_local_player(1).unwrap();
    for p in &mut peers {
        p.start().unwrap();
    }
    let mut spectator = Spectator::new(SpectatorSettings::new(game, host_config(watcher.0, false))).unwrap();
    spectator.spectate(ids[0].to_addr()).unwrap();
    spectator.start().unwrap();
    let mut watched = 0u32;
    let mut w = Wires::new(4, 0.05);
    let mut checksums: [HashMap<u32, u64>; 2] = Default::default();
    let mut newest = [0u32; 2];
    until("tick 300 on both peers", || {
        for (i, p) in peers.iter_mut().enumerate() {
            let sums = &mut checksums[i];
            frame(
                p,
                &mut newest[i],
                |s| s.add_input(i, &[i as u8, 1]).unwrap(),
                |s, kind, tick| {
                    if kind == RequestKind::Save {
                        // Any deterministic function of the tick stands for the game state.
                        s.confirm_save(tick, u64::from(tick) * 31).unwrap();
                        sums.insert(tick, u64::from(tick) * 31);
                    }
                },
            );
            while let Some(e) = p.poll_event() {
                assert!(!bad(&e), "{e:?}");
            }
            w.pull(ids[i], |take| {
                p.pull_datagrams(take).unwrap();
            });
        }
        frame(&mut spectator, &mut watched, |_| {}, |_, _, _| {});
        while let Some(e) = spectator.poll_event() {
            assert!(!bad(&e), "{e:?}");
        }
        w.pull(watcher, |take| {
            spectator.pull_datagrams(take).unwrap();
        });
        for (i, p) in peers.iter_mut().enumerate() {
            w.deliver(ids[i], |d| {
                p.push_datagrams(&mut d.iter().copied()).unwrap();
            });
        }
        w.deliver(watcher, |d| {
            spectator.push_datagrams(&mut d.iter().copied()).unwrap();
        });
        newest.iter().all(|&t| t >= 300) && watched >= 200
    });
    assert!(w.largest <= EOS_MAX);
    assert!(w.moved > 300, "the match crossed the carrier");
}

/// A relay server and two predicting clients over the carrier.
#[test]
fn a_relay_match_runs_over_the_carrier_with_clients_predicting() {
    let game = GameShape::new(2, 2);
    let server_id = RemoteId(1);
    let mut server = RelayServer::new(RelayServerSettings::new(game, host_config(server_id.0, true))).unwrap();
    server.start().unwrap();
    let client_ids = [RemoteId(2), RemoteId(3)];
    let mut clients: Vec<RelayClient> = client_ids
        .iter()
        .map(|id| {
            let mut c = RelayClient::new(RelayClientSettings::new(game, host_config(id.0, false))).unwrap();
            c.set_server(server_id.to_addr()).unwrap();
            c.start().unwrap();
            c
        })
        .collect();
    let mut w = Wires::new(5, 0.02);
    let mut joined = [false; 2];
    let (mut server_tick, mut newest) = (0, [0u32; 2]);
    until("both clients past tick 240", || {
        frame(
            &mut server,
            &mut server_tick,
            |_| {},
            |s, kind, tick| match kind {
                RequestKind::Save => s.confirm_save(tick, u64::from(tick)).unwrap(),
                RequestKind::DumpState => s.provide_state(tick, &[7; 8]).unwrap(),
                _ => {}
            },
        );
        while let Some(e) = server.poll_event() {
            assert!(!bad(&e), "{e:?}");
        }
        w.pull(server_id, |take| {
            server.pull_datagrams(take).unwrap();
        });
        for (i, c) in clients.iter_mut().enumerate() {
            let input = [i as u8, 0];
            frame(
                c,
                &mut newest[i],
                |c| c.add_local_input(&input).unwrap(),
                |s, kind, tick| {
                    if kind == RequestKind::Save {
                        s.confirm_save(tick, u64::from(tick)).unwrap();
                    }
                },
            );
            while let Some(e) = c.poll_event() {
                assert!(!bad(&e), "{e:?}");
                joined[i] |= matches!(e, SessionEvent::RelayClient(ClientSessionEvent::Joined { .. }));
            }
            w.pull(client_ids[i], |take| {
                c.pull_datagrams(take).unwrap();
            });
        }
        w.deliver(server_id, |d| {
            server.push_datagrams(&mut d.iter().copied()).unwrap();
        });
        for (i, c) in clients.iter_mut().enumerate() {
            w.deliver(client_ids[i], |d| {
                c.push_datagrams(&mut d.iter().copied()).unwrap();
            });
        }
        joined.iter().all(|&j| j) && newest.iter().all(|&t| t >= 240)
    });
    assert!(w.largest <= EOS_MAX);
}
