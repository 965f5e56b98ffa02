//! Input delay per local player (issue 18, missing 7; GGPO's `ggpo_set_frame_delay`):
//! each local player's input is applied its own delay after it was given, and peers
//! with mixed delays stay in sync.

#[path = "support/toy_game.rs"]
mod toy_game;

use tickwire_proto::{AdvanceStatus, LinkConfig, LossModel, P2pConfig, P2pSession, PlayerKind, Request};
use toy_game::{Mesh, TICK_US};

/// Two local players, no peers (the session runs at once); player 1 delayed 3 ticks.
/// Every input is the tick it was given at: the ADVANCE of tick t must carry t for
/// player 0 and t - 3 for player 1 (zero before anything was given).
#[test]
fn each_local_player_has_its_own_delay() {
    let mut s = P2pSession::new(P2pConfig::default(), &[PlayerKind::Local, PlayerKind::Local], 0).unwrap();
    s.set_player_input_delay(1, 3).unwrap();
    assert_eq!((s.player_input_delay(0).unwrap(), s.player_input_delay(1).unwrap()), (0, 3));
    assert!(s.set_player_input_delay(1, 99).is_err(), "above MAX_INPUT_DELAY");
    assert!(s.set_player_input_delay(2, 1).is_err(), "no such player");
    let mut seen = Vec::new();
    for t in 0..20u16 {
        for p in 0..2 {
            s.add_local_input(p, &t.to_le_bytes()).unwrap();
        }
        assert_eq!(s.advance(), AdvanceStatus::Advanced);
        while let Some(r) = s.poll_request() {
            if let Request::Advance { tick, inputs, .. } = r {
                let v = |p: usize| u16::from_le_bytes(inputs.get(p).0.try_into().unwrap());
                seen.push((tick, v(0), v(1)));
            }
        }
    }
    for &(tick, a, b) in &seen {
        assert_eq!(a as u32, tick, "player 0: no delay");
        assert_eq!(b as u32, tick.saturating_sub(3) * u32::from(tick >= 3), "player 1: 3 ticks late");
    }
    // Back to one delay for all: player 1's gap closes (inputs dropped until it does).
    s.set_input_delay(0).unwrap();
    assert_eq!(s.player_input_delay(1).unwrap(), 0);
}

/// Two peers with two local players each; one player per peer plays with 4 ticks of
/// delay. Every confirmed tick has the same checksum on both peers.
#[test]
fn peers_with_mixed_delays_stay_in_sync() {
    let link = LinkConfig { latency_us: 3 * TICK_US, loss: LossModel::Bernoulli { p: 0.05 }, ..LinkConfig::perfect() };
    let mut mesh = Mesh::new(91, 2, 2, link, P2pConfig::default());
    for peer in &mut mesh.peers {
        let delayed = peer.local[1];
        peer.session.set_player_input_delay(delayed, 4).unwrap();
        let remote = (0..4).find(|p| !peer.local.contains(p)).unwrap();
        assert!(peer.session.set_player_input_delay(remote, 1).is_err(), "a remote player has no local delay");
    }
    let start = mesh.net.now();
    mesh.run_until(start + 20_000_000);
    let confirmed = mesh.confirmed();
    assert!(confirmed > 1_100, "20 s at 60 Hz: {confirmed}");
    mesh.assert_in_sync(0, confirmed);
    assert_eq!(mesh.desyncs(), 0);
}
