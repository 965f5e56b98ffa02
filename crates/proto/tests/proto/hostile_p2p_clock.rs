//! Issue 31, finding 4: time sync from numbers the receiver can bound. A peer's tick
//! cannot be further ahead of ours than the inputs it has from us and its prediction
//! window allow; one forged far-future tick used to stick (ticks only moved forward)
//! and ran the victim's clock at its +10% limit for the rest of the match.

use crate::support::forge::{Lie, dropped, forge, plausible};
use crate::support::toy_game::{Mesh, TICK_US};
use tickwire_proto::{DisconnectReason, LinkConfig, P2pConfig, P2pStats};

const SEC: u64 = 1_000_000;

fn link() -> LinkConfig {
    LinkConfig { latency_us: 3 * TICK_US, ..LinkConfig::perfect() }
}

/// The victim's (peer 0's) figures over 20 s, with or without one far-future tick
/// from peer 1 at 2 s; and the time scale at the end.
fn run(seed: u64, n: usize, lie: bool) -> (Mesh, P2pStats) {
    let mut mesh = Mesh::new(seed, n, 1, link(), P2pConfig::default());
    mesh.run_until(2 * SEC);
    if lie {
        // "I am 100,000 ticks ahead of you", with a confirmed tick to match (so
        // "confirmed <= tick" holds) and an advantage that agrees with the victim's
        // own measurement, so the gate lets the correction through.
        let l = plausible(&mesh, 0);
        forge(&mut mesh, 0, 1, Lie { tick: l.tick + 100_000, confirmed: l.tick + 99_990, advantage: 6.0, ..l });
    }
    mesh.run_until(22 * SEC);
    let s = mesh.peers[0].session.stats();
    (mesh, s)
}

fn one_far_future_tick_has_no_lasting_effect(seed: u64, n: usize) {
    let (_, honest) = run(seed, n, false);
    let (mesh, lied) = run(seed, n, true);
    let liar = mesh.peers[0].ids[1];
    assert_eq!(dropped(&mesh, 0, liar), Some(DisconnectReason::ProtocolError), "the far-future tick is a violation");
    // Without the liar the victim plays on with the others at the honest level:
    // resimulation, rollback depth and stalls no higher than in the honest match
    // (before: 717 -> 1,891 resimulated ticks, rollbacks 3 -> 8 deep, 0 -> 115
    // stalls, the clock pinned at +10%).
    assert!(
        lied.resimulated <= honest.resimulated + honest.resimulated / 4 + 20,
        "resimulated {} (honest {})",
        lied.resimulated,
        honest.resimulated
    );
    assert!(
        lied.max_rollback <= honest.max_rollback + 1,
        "rollback {} (honest {})",
        lied.max_rollback,
        honest.max_rollback
    );
    assert!(lied.window_full <= honest.window_full + 5, "stalls {} (honest {})", lied.window_full, honest.window_full);
    assert!((lied.time_scale - 1.0).abs() < 0.03, "time scale {} at the end", lied.time_scale);
    let ticks = lied.confirmed_tick;
    assert!(ticks > 20 * 58, "the victim kept confirming ticks: {ticks}");
}

#[test]
fn three_peers_one_far_future_tick_has_no_lasting_effect() {
    one_far_future_tick_has_no_lasting_effect(41, 3);
}

#[test]
fn four_peers_one_far_future_tick_has_no_lasting_effect() {
    one_far_future_tick_has_no_lasting_effect(42, 4);
}
