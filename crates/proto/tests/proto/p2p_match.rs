//! A P2P match's connection setup on the simulator (`P2pMatch`): who dials whom, a
//! dial retried until the other peer is reachable, strangers refused, spectators
//! accepted, remote players given by name, and the match then running in sync.

use std::net::SocketAddr;

use crate::support::toy_game::{Game, INPUT_SIZE, TICK_US, input_for, run_requests};
use tickwire_proto::{
    AdvanceStatus, EndpointConfig, GameShape, LinkConfig, LossModel, MatchEvent, NetEvent, NetSession, NodeId,
    P2pConfig, P2pMatch, RollbackEvent, Session, SimNet, SpectatorConfig, SpectatorMatch, Tick,
};

const SEC: u64 = 1_000_000;

struct Peer {
    node: NodeId,
    m: P2pMatch,
    game: Game,
    local: usize,
    events: Vec<MatchEvent>,
}

/// `n` endpoints, each with a match of `n` players where player `i` plays on peer `i`
/// (the others' addresses given), and the peers' dial timeouts short so that a dial
/// into a dead link fails and is tried again within a second.
/// The core's settings of a match of `n` players of the toy game.
fn config(n: usize) -> P2pConfig {
    P2pConfig::new(GameShape::new(n, INPUT_SIZE))
}

fn peers(net: &mut SimNet, n: usize, cfg: &P2pConfig) -> Vec<Peer> {
    let nodes: Vec<NodeId> = (0..n)
        .map(|_| net.add(EndpointConfig { max_incoming: 4, connect_timeout_us: 800_000, ..EndpointConfig::default() }))
        .collect();
    (0..n)
        .map(|i| {
            let mut m = P2pMatch::new(cfg.clone(), 1).unwrap();
            for (p, &node) in nodes.iter().enumerate() {
                match p == i {
                    true => m.add_local_player(p).unwrap(),
                    false => m.add_remote_player(p, net.addr(node)).unwrap(),
                }
            }
            let game = Game::new(n, cfg.state_slots());
            Peer { node: nodes[i], m, game, local: i, events: Vec::new() }
        })
        .collect()
}

fn start(net: &mut SimNet, p: &mut Peer) {
    let now = net.local_now(p.node);
    p.m.start(now, net.endpoint(p.node)).unwrap();
}

/// One engine frame on every peer, then a tick of network time.
fn frame(net: &mut SimNet, peers: &mut [Peer]) {
    for p in peers.iter_mut() {
        let now = net.local_now(p.node);
        for (at, e) in net.take_events_timed(p.node) {
            p.m.on_event(at, net.endpoint(p.node), e);
        }
        for _ in 0..p.m.ticks_due(now) {
            let core = p.m.core_mut().expect("ticks are due only once the core runs");
            let t: Tick = core.current_tick() + core.input_delay();
            core.add_local_input(p.local, &input_for(7, p.local, t, 3)).unwrap();
            core.advance();
            run_requests(core, &mut p.game);
        }
        p.m.send_messages(now, net.endpoint(p.node));
        net.flush(p.node);
        while let Some(e) = p.m.poll_event() {
            p.events.push(e);
        }
    }
    net.step(TICK_US);
}

fn run(net: &mut SimNet, peers: &mut [Peer], until: u64) {
    while net.now() < until {
        frame(net, peers);
    }
}

fn confirmed(peers: &[Peer]) -> Tick {
    peers.iter().map(|p| p.m.core().map_or(0, |c| c.confirmed_tick())).min().unwrap()
}

fn assert_in_sync(peers: &[Peer], end: Tick) {
    for t in 0..end as usize {
        let first = peers[0].game.played.get(t).copied().flatten();
        assert!(first.is_some(), "peer 0 played confirmed tick {t}");
        for (i, p) in peers.iter().enumerate().skip(1) {
            assert_eq!(p.game.played.get(t).copied().flatten(), first, "tick {t}: peer {i} differs from peer 0");
        }
    }
}

#[test]
fn three_peers_connect_through_a_link_that_comes_up_late_and_play_in_sync() {
    let mut net = SimNet::new(31, LinkConfig { loss: LossModel::Bernoulli { p: 1.0 }, ..LinkConfig::perfect() });
    let cfg = config(3);
    let mut peers = peers(&mut net, 3, &cfg);
    for p in peers.iter_mut() {
        start(&mut net, p);
    }
    // Nothing gets through for two seconds: every first dial times out.
    run(&mut net, &mut peers, 2 * SEC);
    assert!(peers.iter().all(|p| p.m.core().is_none() && p.m.connected_peers() == 0));
    let nodes: Vec<NodeId> = peers.iter().map(|p| p.node).collect();
    for (i, &a) in nodes.iter().enumerate() {
        for &b in &nodes[i + 1..] {
            net.set_links(a, b, LinkConfig::perfect());
        }
    }
    run(&mut net, &mut peers, 12 * SEC);
    let end = confirmed(&peers);
    assert!(end > 500, "the match ran once the link came up: {end} ticks confirmed");
    assert_in_sync(&peers, end);
    for (i, p) in peers.iter().enumerate() {
        // One connection per pair: the lower player dials, the higher accepts.
        let connected: Vec<Option<usize>> = p
            .events
            .iter()
            .filter_map(|e| match e {
                MatchEvent::PeerConnected { player, .. } => Some(*player),
                _ => None,
            })
            .collect();
        let others: Vec<Option<usize>> = (0..3).filter(|&q| q != i).map(Some).collect();
        let mut sorted = connected.clone();
        sorted.sort();
        assert_eq!(sorted, others, "peer {i}: each other player's peer connected once");
        let waiting =
            p.events.iter().filter(|e| matches!(e, MatchEvent::SynchronizingWithPeer { connected: false, .. }));
        assert_eq!(waiting.count(), 2, "peer {i}: one notice per remote peer at the start");
        assert!(p.events.iter().any(|e| matches!(e, MatchEvent::Core(RollbackEvent::Synchronized))), "peer {i}");
        assert_eq!(p.m.connected_peers(), 2);
        let peer_of_next = p.m.peer_of((i + 1) % 3).expect("connected");
        assert_eq!(p.m.player_of(peer_of_next), Some((i + 1) % 3));
    }
}

#[test]
fn a_stranger_is_refused_and_a_registered_spectator_is_accepted() {
    let mut net = SimNet::new(32, LinkConfig::perfect());
    let cfg = config(2);
    let mut peers = peers(&mut net, 2, &cfg);
    let stranger = net.add(EndpointConfig::default());
    let watcher = net.add(EndpointConfig::default());
    let watcher_addr: SocketAddr = net.addr(watcher);
    peers[0].m.add_spectator(watcher_addr).unwrap();
    for p in peers.iter_mut() {
        start(&mut net, p);
    }
    let target = net.addr(peers[0].node);
    for n in [stranger, watcher] {
        let now = net.local_now(n);
        net.endpoint(n).connect(now, target).unwrap();
    }
    run(&mut net, &mut peers, 3 * SEC);
    let p0 = &peers[0];
    let rejected = p0.events.iter().filter(|e| matches!(e, MatchEvent::ConnectionRejected { .. })).count();
    assert_eq!((rejected, p0.m.rejected()), (1, 1), "the stranger, once");
    let spectators = p0.events.iter().filter(|e| matches!(e, MatchEvent::PeerConnected { player: None, .. })).count();
    assert_eq!(spectators, 1, "the watcher connected as a spectator");
    assert_eq!(p0.m.connected_peers(), 2, "the other player's peer and the spectator");
    let stranger_events = net.take_events(stranger);
    assert!(stranger_events.iter().any(|e| matches!(e, NetEvent::Disconnected { .. })), "{stranger_events:?}");
    assert!(confirmed(&peers) > 100);
}

#[test]
fn a_remote_player_given_by_name_is_matched_once_the_name_is_known() {
    let mut net = SimNet::new(33, LinkConfig::perfect());
    let cfg = config(2);
    let mut peers = peers(&mut net, 2, &cfg);
    // Peer 1 knows player 0 only by name. Player 0 is lower, so peer 0 dials: its
    // connection arrives while the name is still unknown and waits to be sorted.
    let a = net.addr(peers[0].node);
    let mut m = P2pMatch::new(cfg.clone(), 0).unwrap();
    assert!(m.add_remote_named(0, "zero.example:7000").unwrap());
    m.add_local_player(1).unwrap();
    peers[1].m = m;
    for p in peers.iter_mut() {
        start(&mut net, p);
    }
    run(&mut net, &mut peers, SEC);
    assert!(peers[1].m.resolving());
    assert!(peers[1].m.core().is_none(), "not matched before the name is known");
    assert!(!peers[1].events.iter().any(|e| matches!(e, MatchEvent::ConnectionRejected { .. })));
    let now = net.local_now(peers[1].node);
    let node = peers[1].node;
    peers[1].m.resolve(now, net.endpoint(node), "zero.example:7000", a);
    assert!(!peers[1].m.resolving());
    run(&mut net, &mut peers, 4 * SEC);
    let end = confirmed(&peers);
    assert!(end > 100, "{end}");
    assert_in_sync(&peers, end);
}

#[test]
fn a_spectator_watches_through_its_connection_and_refuses_strangers() {
    let mut net = SimNet::new(34, LinkConfig::perfect());
    let cfg = config(2);
    let mut peers = peers(&mut net, 2, &cfg);
    // The watcher's endpoint takes incoming handshakes here, so that the stranger's
    // reaches the spectator (a runtime spectator's takes none at all).
    let watcher = net.add(EndpointConfig { max_incoming: 2, ..EndpointConfig::default() });
    let stranger = net.add(EndpointConfig::default());
    peers[0].m.add_spectator(net.addr(watcher)).unwrap();
    let spectator_cfg = SpectatorConfig::new(cfg.game);
    let mut s = SpectatorMatch::new(spectator_cfg);
    let mut sgame = Game::new(2, 1);
    assert!(s.start(0, net.endpoint(watcher)).is_err(), "nothing to watch yet");
    s.watch(net.addr(peers[0].node)).unwrap();
    for p in peers.iter_mut() {
        start(&mut net, p);
    }
    s.start(net.local_now(watcher), net.endpoint(watcher)).unwrap();
    let mut events = Vec::new();
    let mut dialled = false;
    while net.now() < 6 * SEC {
        let now = net.local_now(watcher);
        for (at, e) in net.take_events_timed(watcher) {
            s.on_event(at, net.endpoint(watcher), e);
        }
        for _ in 0..s.ticks_due(now, net.endpoint(watcher)) {
            if s.advance() == AdvanceStatus::Advanced {
                while let Some(r) = s.poll_request() {
                    sgame.apply(r);
                }
            }
        }
        s.send_messages(now, net.endpoint(watcher));
        net.flush(watcher);
        while let Some(e) = s.poll_event() {
            events.push(e);
        }
        if !dialled && net.now() > SEC {
            // A stranger dials the spectator: refused.
            let now = net.local_now(stranger);
            let to = net.addr(watcher);
            net.endpoint(stranger).connect(now, to).unwrap();
            dialled = true;
        }
        frame(&mut net, &mut peers);
    }
    assert!(s.is_connected() && s.core().is_some());
    assert_eq!(s.rejected(), 1);
    assert!(events.iter().any(|e| matches!(e, MatchEvent::PeerConnected { player: None, .. })));
    assert!(events.iter().any(|e| matches!(e, MatchEvent::ConnectionRejected { .. })));
    let played = s.current_tick();
    assert!(played > 100, "the spectator played {played} ticks");
    for t in 0..played as usize {
        assert_eq!(sgame.played[t], peers[0].game.played[t], "tick {t}: the spectator saw what the players played");
    }
}
