//! Replays: a peer records the confirmed inputs and its initial state; the replay
//! session, fed the decoded file, reproduces every recorded checksum and the final one.

use crate::support::toy_game::{Game, Mesh, TICK_US};
use tickwire_proto::{AdvanceStatus, GameShape, LinkConfig, LossModel, P2pConfig, Replay, ReplaySession};

const SEC: u64 = 1_000_000;

#[test]
fn a_replay_reproduces_the_final_checksum() {
    let link = LinkConfig { latency_us: 3 * TICK_US, loss: LossModel::Bernoulli { p: 0.05 }, ..LinkConfig::perfect() };
    let mut mesh = Mesh::new(31, 3, 1, link, P2pConfig::default());
    let initial = mesh.peers[0].game.serialize();
    mesh.peers[0].session.start_recording(&initial);
    let start = mesh.net.now();
    mesh.run_until(start + 60 * SEC);

    let host = &mesh.peers[0];
    let bytes = host.session.replay().expect("recording").bytes().to_vec();
    let path = std::env::temp_dir().join(format!("tickwire-replay-{}.twrp", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let replay = Replay::decode(&std::fs::read(&path).unwrap()).expect("strict decode");
    std::fs::remove_file(&path).unwrap();
    let end = replay.start + replay.ticks;
    assert!(end > 3_500, "about a minute recorded, got {end} ticks");
    assert!(end <= host.session.stats().confirmed_tick);

    // The replaying engine starts from garbage: the Restore request must fix it.
    let mut game = Game::new(3, 1);
    game.state.iter_mut().for_each(|w| *w = -7);
    game.record = false;
    let mut s =
        ReplaySession::new(GameShape::new(3, 2), replay).expect("the replay of a 3-player match of 2-byte inputs");
    let mut compared = 0;
    loop {
        let status = s.advance();
        while let Some(r) = s.poll_request() {
            assert!(game.apply(r).is_none());
        }
        if status == AdvanceStatus::Finished {
            break;
        }
        let t = s.current_tick() as usize;
        if let Some(Some(c)) = host.game.checksums.get(t) {
            assert_eq!(game.checksum(), *c, "tick {t}");
            compared += 1;
        }
    }
    assert_eq!(s.current_tick(), end);
    let final_checksum = match host.game.checksums.get(end as usize) {
        Some(&Some(c)) => c,
        _ => host.game.checksum(),
    };
    assert_eq!(game.checksum(), final_checksum, "final checksum at tick {end}");
    assert!(compared as u32 >= end - 1);
}
