//! Issue 18, missing 4: a P2P session's connection progress through the C ABI, as a
//! loading screen reads it: SYNCHRONIZING_WITH_PEER (connecting, then connected),
//! SYNCHRONIZED_WITH_PEER with the count, then SYNCHRONIZED.

use crate::support::abi_engine;

use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

const K: fn(tw_session_event_kind) -> u32 = |k| k as u32;

/// (kind, peer, player, step, synchronized, total) of the progress-related events.
fn progress(events: &[tw_session_event]) -> Vec<(u32, u32, u32, u32, u32, u32)> {
    use tw_session_event_kind as E;
    events
        .iter()
        .filter_map(|e| {
            if e.kind == K(E::SynchronizingWithPeer) || e.kind == K(E::SynchronizedWithPeer) {
                // SAFETY: the member named by the kind.
                let p = unsafe { e.data.progress };
                Some((e.kind, e.peer, p.player, p.step, p.synchronized, p.total))
            } else if e.kind == K(E::PeerConnected) || e.kind == K(E::Synchronized) {
                Some((e.kind, e.peer, 0, 0, 0, 0))
            } else {
                None
            }
        })
        .collect()
}

#[test]
fn p2p_progress_events_in_order() {
    use tw_session_event_kind as E;
    let cfg = session_config(tw_session_mode::P2p, 2);
    let (a, b) = p2p_pair(&cfg, &cfg);
    // SAFETY: live sessions.
    unsafe {
        ok(tw_session_start(a.0));
        ok(tw_session_start(b.0));
    }
    let (mut ea, mut eb) = (Engine::new(2, 18), Engine::new(2, 18));
    let (mut va, mut vb): (Vec<tw_session_event>, Vec<tw_session_event>) = (Vec::new(), Vec::new());
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end && va.iter().chain(&vb).filter(|e| e.kind == K(E::Synchronized)).count() < 2 {
        frame(a.0, &mut ea, &[0], 61, 5, &mut va);
        frame(b.0, &mut eb, &[1], 61, 5, &mut vb);
        std::thread::sleep(Duration::from_millis(2));
    }
    for (name, events, remote) in [("A", &va, 1u32), ("B", &vb, 0u32)] {
        let got = progress(events);
        eprintln!("{name}: {got:?}");
        assert_eq!(got.len(), 5, "{name}: {got:?}");
        let peer = got[1].1;
        assert!(peer != 0, "{name}: PEER_CONNECTED names the connection");
        // Connecting: the dialling side knows its connection already, the other not yet.
        assert_eq!((got[0].0, got[0].2, got[0].3, got[0].4, got[0].5), (K(E::SynchronizingWithPeer), remote, 0, 0, 1));
        assert!(got[0].1 == 0 || got[0].1 == peer, "{name}: no connection yet, or the one dialled");
        assert_eq!(got[1].0, K(E::PeerConnected), "{name}");
        assert_eq!(got[2], (K(E::SynchronizingWithPeer), peer, remote, 1, 0, 1), "{name}: connected");
        assert_eq!(got[3], (K(E::SynchronizedWithPeer), peer, remote, 2, 1, 1), "{name}: 1 of 1");
        assert_eq!(got[4].0, K(E::Synchronized), "{name}: then the match runs");
    }
}
