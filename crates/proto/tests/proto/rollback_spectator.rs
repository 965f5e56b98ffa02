//! A spectator that joins at minute 5: the host sends a state snapshot (asked of its
//! engine through a DumpState request), then confirmed inputs; the spectator restores,
//! catches up and ends in sync with the players.

use crate::support::toy_game::{Game, Mesh, TICK_US};
use tickwire_proto::{
    AdvanceStatus, EndpointConfig, GameShape, LinkConfig, LossModel, NetEvent, P2pConfig, SpectatorConfig,
    SpectatorSession,
};

const SEC: u64 = 1_000_000;

/// What a spectator saw: the tick of the snapshot it restored, its state after each
/// tick it played, and where it ended.
struct Watched {
    restored_at: Option<u32>,
    sums: Vec<(u32, u64)>,
    current_tick: u32,
}

/// A spectator joins the match of `mesh` (watching peer 0) now and plays for `secs`.
fn join_and_watch(mesh: &mut Mesh, cfg: SpectatorConfig, secs: u64) -> Watched {
    let spec_node = mesh.net.add(EndpointConfig::default());
    let host_addr = mesh.net.addr(mesh.peers[0].node);
    let now = mesh.net.local_now(spec_node);
    let host_on_spec = mesh.net.endpoint(spec_node).connect(now, host_addr).unwrap();
    let mut spec = SpectatorSession::new(cfg, host_on_spec).unwrap();
    let mut game = Game::new(2, 1);
    game.state.iter_mut().for_each(|w| *w = 0);
    let mut added = false;
    let mut restored_at = None;
    let mut sums = Vec::new();
    let join_at = mesh.net.now();
    while mesh.net.now() < join_at + secs * SEC {
        if !added {
            let spec_addr = mesh.net.addr(spec_node);
            if let Some(&(id, _)) = mesh.peers[0].connected.iter().find(|c| c.1 == spec_addr) {
                mesh.peers[0].session.add_spectator(id);
                added = true;
            }
        }
        let now = mesh.net.local_now(spec_node);
        for e in mesh.net.take_events(spec_node) {
            if let NetEvent::Message { peer, data, .. } = e {
                spec.handle_message(peer, &data);
            }
        }
        let status = spec.advance();
        while let Some(r) = spec.poll_request() {
            if let tickwire_proto::Request::Restore { tick, .. } = r {
                restored_at = Some(tick);
            }
            assert!(game.apply(r).is_none());
        }
        if status == AdvanceStatus::Advanced {
            sums.push((spec.current_tick(), game.checksum()));
        }
        spec.send_messages(now, mesh.net.endpoint(spec_node), TICK_US);
        mesh.net.flush(spec_node);
        mesh.frame();
    }
    Watched { restored_at, sums, current_tick: spec.current_tick() }
}

#[test]
fn spectator_joining_at_minute_5_ends_in_sync() {
    let link = LinkConfig { latency_us: 3 * TICK_US, loss: LossModel::Bernoulli { p: 0.05 }, ..LinkConfig::perfect() };
    let mut mesh = Mesh::new(41, 2, 1, link, P2pConfig::default());
    let start = mesh.net.now();
    mesh.run_until(start + 300 * SEC);
    let cfg =
        SpectatorConfig { game: GameShape::new(2, 2), max_behind: 10, catchup_speed: 3, ..SpectatorConfig::default() };
    let w = join_and_watch(&mut mesh, cfg, 60);
    let restored_at = w.restored_at.expect("the spectator restored a snapshot");
    assert!(restored_at > 17_000, "snapshot from around minute 5, tick {restored_at}");
    let host = &mesh.peers[0];
    let confirmed = host.session.stats().confirmed_tick;
    assert!(confirmed - w.current_tick <= 12, "caught up: host confirmed {confirmed}, spectator at {}", w.current_tick);
    let mut compared = 0;
    for &(t, c) in &w.sums {
        if let Some(Some(h)) = host.game.checksums.get(t as usize) {
            assert_eq!(c, *h, "spectator's state at tick {t}");
            compared += 1;
        }
    }
    assert!(compared > 3_000, "a minute of ticks compared, got {compared}");
    let (t, c) = *w.sums.last().unwrap();
    assert_eq!(Some(c), host.game.checksums[t as usize], "ends in sync");
}

/// A spectator joins at `join_secs` on a jittery, lossy link and plays 5 s; returns the
/// first tick whose state differs from the host's, if any.
fn join_and_compare(seed: u64, join_secs: u64) -> Option<u32> {
    let link = LinkConfig {
        latency_us: 2 * TICK_US,
        jitter: tickwire_proto::JitterModel::Uniform { max_us: 3 * TICK_US },
        loss: LossModel::Bernoulli { p: 0.1 },
        ..LinkConfig::perfect()
    };
    let mut mesh = Mesh::new(seed, 2, 1, link, P2pConfig::default());
    mesh.period = 1; // inputs change every tick: most predictions are wrong
    let start = mesh.net.now();
    mesh.run_until(start + join_secs * SEC);
    let w = join_and_watch(&mut mesh, SpectatorConfig { game: GameShape::new(2, 2), ..SpectatorConfig::default() }, 5);
    assert!(w.sums.len() > 100, "seed {seed}: the spectator played {} ticks", w.sums.len());
    let host = &mesh.peers[0];
    w.sums
        .iter()
        .find(|&&(t, c)| host.game.checksums.get(t as usize).copied().flatten().is_some_and(|h| h != c))
        .map(|s| s.0)
}

/// The host's snapshot for a spectator is the corrected state: the inputs that make a
/// tick final may also correct it, in the same advance, and the state was dumped
/// before that advance's re-simulation (a spectator then stayed out of sync; a C# test
/// saw it once). Many joins with mostly wrong predictions.
#[test]
fn a_spectator_snapshot_is_the_corrected_state() {
    let bad: Vec<(u64, u32)> =
        (0..24u64).filter_map(|seed| join_and_compare(100 + seed, 2 + seed % 3).map(|t| (seed, t))).collect();
    assert!(bad.is_empty(), "(seed, first differing tick): {bad:?}");
}
