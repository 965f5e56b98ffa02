//! Connection progress of a P2P session (issue 18, missing 4): before the match starts,
//! one `PeerSynchronized` per remote peer, counting up to the total, then one
//! `Synchronized`.

use crate::support::toy_game::{Mesh, TICK_US};
use tickwire_proto::{LinkConfig, LossModel, P2pConfig, RollbackEvent as Event};

#[test]
fn each_peer_counts_its_remote_peers_up_to_the_total_before_synchronized() {
    let link = LinkConfig { latency_us: 3 * TICK_US, loss: LossModel::Bernoulli { p: 0.1 }, ..LinkConfig::perfect() };
    let mut mesh = Mesh::new(81, 4, 1, link, P2pConfig::default());
    let start = mesh.net.now();
    mesh.run_until(start + 3_000_000);
    for (i, p) in mesh.peers.iter().enumerate() {
        let progress: Vec<(u32, u32)> = p
            .events
            .iter()
            .filter_map(|e| match *e {
                Event::PeerSynchronized { synchronized, total, .. } => Some((synchronized, total)),
                _ => None,
            })
            .collect();
        assert_eq!(progress, vec![(1, 3), (2, 3), (3, 3)], "peer {i}: {:?}", p.events);
        let peers: std::collections::BTreeSet<_> = p
            .events
            .iter()
            .filter_map(|e| match *e {
                Event::PeerSynchronized { peer, .. } => Some(peer),
                _ => None,
            })
            .collect();
        assert_eq!(peers.len(), 3, "each remote peer once");
        let last_progress = p.events.iter().rposition(|e| matches!(e, Event::PeerSynchronized { .. })).unwrap();
        let synchronized: Vec<usize> =
            p.events.iter().enumerate().filter(|(_, e)| **e == Event::Synchronized).map(|(k, _)| k).collect();
        assert_eq!(synchronized.len(), 1, "peer {i}: one Synchronized");
        assert!(synchronized[0] > last_progress, "peer {i}: Synchronized after every peer");
        assert!(p.session.stats().confirmed_tick > 100, "the match ran");
    }
}
