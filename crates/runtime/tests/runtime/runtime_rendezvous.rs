//! P2P matches met through a rendezvous on loopback sockets: the runtime's side of NAT
//! traversal (the traversal between the endpoint and the socket, the peers' fixed
//! addresses, the path events and figures) with a real `RendezvousServer`. Real NATs
//! are `tests/nat/matrix.sh`'s.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tickwire_proto::token::{self, ConnectToken, TokenParams};
use tickwire_proto::{
    Admission, GameShape, MatchClaim, PeerPath, Presented, RollbackEvent, Secret, Security, canonical,
};
use tickwire_runtime::{
    EngineLoop, HostConfig, P2pSession, P2pSettings, Rendezvous, RendezvousServer, RequestKind, SessionEvent,
    SessionFailure, StateError,
};

const PROTOCOL: u32 = 0x7477_0001;

fn key() -> Secret {
    Secret([0x42; 32])
}

fn ticket(rdv: SocketAddr, slot: u8, players: u8, match_id: u64) -> ConnectToken {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let params = TokenParams {
        protocol_id: PROTOCOL,
        client_id: 1000 + u64::from(slot),
        created: now,
        expires: now + 600,
        timeout_secs: 0,
        addresses: vec![rdv],
        user_data: MatchClaim { match_id, slot, players }.user_data(b"").unwrap(),
    };
    let random = tickwire_runtime::os_random_bytes::<56>().unwrap();
    ConnectToken::decode(&token::mint(&key(), &params, &random).unwrap()).unwrap()
}

fn settings(game: GameShape, secret: Option<Secret>) -> P2pSettings {
    let mut host = HostConfig::new("127.0.0.1:0".parse().unwrap());
    host.endpoint.protocol_id = PROTOCOL;
    host.endpoint.security = Security::Encrypted {
        admission: Admission::Secrets { players: secret.clone(), spectators: None },
        presented: secret.map_or(Presented::Open, Presented::Secret),
        packets: Default::default(),
    };
    P2pSettings::new(game, host)
}

fn rendezvous_server(record: Option<Arc<Mutex<Vec<u8>>>>) -> RendezvousServer {
    let cfg = tickwire_proto::RendezvousConfig::new(key(), PROTOCOL);
    // The sealed part of each connected packet the relay carries (handshakes and the
    // packets' plaintext headers left out).
    let recorder = record.map(|r| {
        Box::new(move |payload: &[u8]| {
            if let Some(body) = tickwire_proto::wire::sealed_body(payload) {
                r.lock().unwrap().extend_from_slice(body);
            }
        }) as tickwire_runtime::RelayRecorder
    });
    RendezvousServer::start("127.0.0.1:0".parse().unwrap(), cfg, recorder).unwrap()
}

/// Plays a match of `players` peers met through `rdv` until every peer passed `ticks`;
/// returns each peer's path events and the time to SYNCHRONIZED.
fn play(rdv: SocketAddr, players: u8, private: bool, ticks: u32) -> (Vec<Vec<PeerPath>>, Vec<Duration>) {
    let game = GameShape::new(players as usize, 2);
    let secret = Secret([7; 32]);
    let mut peers: Vec<P2pSession> = (0..players)
        .map(|me| {
            let mut p = P2pSession::new(settings(game, Some(secret.clone()))).unwrap();
            p.set_rendezvous(Rendezvous { address: rdv, ticket: ticket(rdv, me, players, 77), private }).unwrap();
            for slot in 0..players as usize {
                if slot == me as usize {
                    p.add_local_player(slot).unwrap();
                } else {
                    p.add_rendezvous_player(slot).unwrap();
                }
            }
            p
        })
        .collect();
    let start = Instant::now();
    for p in &mut peers {
        p.start().unwrap();
    }
    let n = players as usize;
    let mut paths = vec![Vec::new(); n];
    let mut synced = vec![None; n];
    let mut newest = vec![0u32; n];
    let mut sums: Vec<HashMap<u32, u64>> = vec![HashMap::new(); n];
    let deadline = start + Duration::from_secs(30);
    while newest.iter().any(|&t| t < ticks) {
        assert!(Instant::now() < deadline, "no progress: ticks {newest:?}, synced {synced:?}, paths {paths:?}");
        for (i, p) in peers.iter_mut().enumerate() {
            for _ in 0..p.ticks_due().unwrap() {
                p.add_input(i, &[i as u8, 1]).unwrap();
                p.advance().unwrap();
                while let Some(r) = p.poll_request() {
                    match r.kind {
                        RequestKind::Advance => newest[i] = newest[i].max(r.tick),
                        RequestKind::Save => {
                            let sum = u64::from(r.tick) * 31;
                            p.confirm_save(r.tick, sum).unwrap();
                            sums[i].insert(r.tick, sum);
                        }
                        _ => {}
                    }
                }
            }
            while let Some(e) = p.poll_event() {
                match e {
                    SessionEvent::PathChanged { player, path } => {
                        assert_ne!(player, i, "no path to ourselves");
                        paths[i].push(path);
                    }
                    SessionEvent::Core(RollbackEvent::Synchronized) => synced[i] = Some(start.elapsed()),
                    SessionEvent::Core(RollbackEvent::Desync { .. }) | SessionEvent::Fatal(_) => {
                        panic!("peer {i}: {e:?}")
                    }
                    _ => {}
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // The figures name the path too.
    for (i, p) in peers.iter_mut().enumerate() {
        for j in (0..n).filter(|&j| j != i) {
            let s = p.peer_stats_of(j).unwrap().expect("connected");
            assert_eq!(s.path, paths[i].last().copied(), "peer {i}'s figures for {j}");
        }
    }
    (paths, synced.into_iter().map(|s| s.expect("synchronized")).collect())
}

#[test]
fn peers_met_through_a_rendezvous_go_direct_and_stay_in_sync() {
    let server = rendezvous_server(None);
    let rdv = server.local_addr();
    let (paths, synced) = play(rdv, 2, false, 240);
    for (i, p) in paths.iter().enumerate() {
        // Through the relay as soon as introduced, then direct once a check succeeds.
        assert_eq!(p.first(), Some(&PeerPath::Relayed(canonical(rdv))), "peer {i}: {p:?}");
        assert!(matches!(p.last(), Some(PeerPath::Direct(_))), "peer {i}: {p:?}");
    }
    for s in &synced {
        assert!(*s < Duration::from_secs(2), "synchronized after {s:?}");
    }
    let stats = server.stop();
    assert_eq!((stats.matches_made, stats.refused, stats.strangers), (1, 0, 0));
}

#[test]
fn a_private_match_of_three_goes_through_the_relay_which_cannot_read_it() {
    let recording = Arc::new(Mutex::new(Vec::new()));
    let server = rendezvous_server(Some(recording.clone()));
    let rdv = server.local_addr();
    let (paths, _) = play(rdv, 3, true, 240);
    for p in &paths {
        assert!(p.iter().all(|&x| x == PeerPath::Relayed(canonical(rdv))), "{p:?}");
        assert_eq!(p.len(), 2, "one path per remote peer, never changed: {p:?}");
    }
    let stats = server.stop();
    assert!(stats.relayed_datagrams > 500, "{stats:?}");
    assert_eq!(stats.over_budget, 0);
    // What the relay carried does not compress past the packets' headers: sealed end
    // to end under keys it never had.
    let bytes = recording.lock().unwrap().clone();
    assert!(bytes.len() > 20_000, "{} bytes recorded", bytes.len());
    let packed = miniz_oxide::deflate::compress_to_vec_zlib(&bytes, 9);
    let ratio = packed.len() as f64 / bytes.len() as f64;
    assert!(ratio >= 0.95, "zlib ratio {ratio:.3} over {} bytes", bytes.len());
}

#[test]
fn a_rendezvous_needs_the_match_secret_one_local_player_and_comes_before_its_players() {
    let rdv: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let game = GameShape::new(2, 2);
    let r = Rendezvous { address: rdv, ticket: ticket(rdv, 0, 2, 1), private: false };
    let mut p = P2pSession::new(settings(game, None)).unwrap();
    assert!(matches!(p.set_rendezvous(r.clone()), Err(SessionFailure::Argument(_))));
    let mut p = P2pSession::new(settings(game, Some(Secret([1; 32])))).unwrap();
    assert!(matches!(p.add_rendezvous_player(1), Err(SessionFailure::State(StateError::NoRendezvous))));
    p.set_rendezvous(r).unwrap();
    p.add_rendezvous_player(1).unwrap();
    p.add_rendezvous_player(0).unwrap();
    assert!(matches!(p.start(), Err(SessionFailure::State(StateError::RendezvousLocalPlayers { count: 0 }))));
}

#[test]
fn the_relay_holds_each_match_to_its_byte_budget() {
    // 2,000 bytes a second: a 60 Hz match of two peers asks for several times that.
    let mut cfg = tickwire_proto::RendezvousConfig::new(key(), PROTOCOL);
    cfg.relay_bytes_per_sec = 2_000;
    let server = RendezvousServer::start("127.0.0.1:0".parse().unwrap(), cfg, None).unwrap();
    let rdv = server.local_addr();
    let game = GameShape::new(2, 2);
    let secret = Secret([9; 32]);
    let mut peers: Vec<P2pSession> = (0..2u8)
        .map(|me| {
            let mut p = P2pSession::new(settings(game, Some(secret.clone()))).unwrap();
            p.set_rendezvous(Rendezvous { address: rdv, ticket: ticket(rdv, me, 2, 5), private: true }).unwrap();
            p.add_local_player(me as usize).unwrap();
            p.add_rendezvous_player(1 - me as usize).unwrap();
            p.start().unwrap();
            p
        })
        .collect();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        for (i, p) in peers.iter_mut().enumerate() {
            for _ in 0..p.ticks_due().unwrap() {
                let _ = p.add_input(i, &[1, 2]);
                let _ = p.advance();
                while let Some(r) = p.poll_request() {
                    if r.kind == RequestKind::Save {
                        p.confirm_save(r.tick, 1).unwrap();
                    }
                }
            }
            while p.poll_event().is_some() {}
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let elapsed = start.elapsed().as_secs_f64();
    drop(peers);
    let s = server.stop();
    // What went through is the budget's: a second's burst and the rate since.
    assert!(s.over_budget > 0, "{s:?}");
    let cap = 2_000.0 * (elapsed + 1.0);
    assert!((s.relayed_bytes as f64) <= cap, "{} bytes relayed in {elapsed:.1} s: over {cap}", s.relayed_bytes);
    assert!(s.relayed_bytes as f64 > 2_000.0 * elapsed * 0.5, "the budget is used: {s:?}");
}
