//! Input delay per local player (issue 18, missing 7; GGPO's `ggpo_set_frame_delay`):
//! each local player's input is applied its own delay after it was given, and peers
//! with mixed delays stay in sync.

use crate::support::toy_game::{Mesh, TICK_US};
use tickwire_proto::{AdvanceStatus, LinkConfig, LossModel, P2pConfig, P2pSession, PlayerKind, Request};

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
    let loss: f64 = std::env::var("TW_LOSS").ok().and_then(|v| v.parse().ok()).unwrap_or(0.05);
    let link = LinkConfig { latency_us: 3 * TICK_US, loss: LossModel::Bernoulli { p: loss }, ..LinkConfig::perfect() };
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

/// Issue 18, missing 7: P2P inputs up to `MAX_INPUT_SIZE` bytes, as long as a tick of
/// every player's fits one datagram. Two peers exchange large inputs intact for 10 s;
/// 8 players of 255 bytes are refused when the session is built, not later.
///
/// A message carries as many ticks as fit, and each input rides in that many
/// messages: 2 for 255-byte inputs of 2 players, 4 for 128. Measured (this test, 3
/// ticks each way, no input delay): 255 bytes keep up at 1% loss but stall a quarter
/// of the ticks at 5%; 128 bytes keep up at 5%. docs/p2p.md says so.
fn run_large_inputs(size: usize, loss: f64) {
    use tickwire_proto::{GameShape, MAX_INPUT_SIZE, NetEvent, SessionError, p2p_inputs_fit};
    assert!(p2p_inputs_fit(4, MAX_INPUT_SIZE) && p2p_inputs_fit(8, 128) && p2p_inputs_fit(16, 49));
    assert!(!p2p_inputs_fit(8, MAX_INPUT_SIZE) && !p2p_inputs_fit(16, 50) && !p2p_inputs_fit(32, 13));
    let cfg = P2pConfig::new(GameShape::new(2, size));
    let too_many = vec![PlayerKind::Local; 8];
    let refused = P2pSession::new(P2pConfig::new(GameShape::new(8, MAX_INPUT_SIZE)), &too_many, 0).err();
    let Some(SessionError::Config(problems)) = refused else { panic!("8 players of 255 bytes built: {refused:?}") };
    assert_eq!(problems.iter().map(|p| p.field.as_str()).collect::<Vec<_>>(), ["input_size"]);

    // The mesh only connects the peers and builds the sessions; the frames are run here
    // with 255-byte inputs.
    // 3 ticks each way: a message carries 2 ticks of 255-byte inputs (4 of 128), fewer
    // than a round trip holds unacknowledged (this stalled the match at the prediction
    // window before messages learned to start at the newest ticks).
    let link = LinkConfig { latency_us: 3 * TICK_US, loss: LossModel::Bernoulli { p: loss }, ..LinkConfig::perfect() };
    let mut mesh = Mesh::new(5, 2, 1, link, cfg);
    let input =
        |p: usize, t: u32| -> Vec<u8> { (0..size).map(|i| (i as u32 * 7 + t * 13 + p as u32 * 101) as u8).collect() };
    let mut checked = 0;
    let net = &mut mesh.net;
    for _ in 0..1200 {
        for (me, peer) in mesh.peers.iter_mut().enumerate() {
            let (node, s) = (peer.node, &mut peer.session);
            let now = net.local_now(node);
            for (at, e) in net.take_events_timed(node) {
                if let NetEvent::Message { peer, data, .. } = e {
                    s.handle_message(at, peer, &data);
                }
            }
            for _ in 0..s.ticks_due(now) {
                let t = s.current_tick() + s.input_delay();
                s.add_local_input(me, &input(me, t)).unwrap();
                s.advance();
                while let Some(r) = s.poll_request() {
                    match r {
                        Request::Advance { tick, inputs, .. } => {
                            for p in 0..2 {
                                let (bytes, status) = inputs.get(p);
                                if status == tickwire_proto::InputStatus::Confirmed {
                                    assert_eq!(bytes, &input(p, tick)[..], "player {p}'s input of tick {tick}");
                                    checked += 1;
                                }
                            }
                        }
                        Request::Save { tick, .. } => s.confirm_save(tick, u64::from(tick)).unwrap(),
                        _ => {}
                    }
                }
            }
            s.send_messages(now, net.endpoint(node));
            net.flush(node);
            while s.poll_event().is_some() {}
        }
        net.step(TICK_US / 2);
    }
    assert!(checked > 1_000, "confirmed 255-byte inputs compared: {checked}");
    let confirmed: Vec<(u32, u32)> =
        mesh.peers.iter().map(|p| (p.session.stats().confirmed_tick, p.session.current_tick())).collect();
    let st: Vec<_> = mesh.peers.iter().map(|p| p.session.stats()).collect();
    assert!(
        confirmed.iter().all(|&(c, _)| c > 500),
        "confirmed, current {confirmed:?}, {checked} inputs checked: {st:?}"
    );
}

#[test]
fn p2p_inputs_of_255_bytes_arrive_intact_at_1pct_loss() {
    run_large_inputs(tickwire_proto::MAX_INPUT_SIZE, 0.01);
}

#[test]
fn p2p_inputs_of_128_bytes_arrive_intact_at_5pct_loss() {
    run_large_inputs(128, 0.05);
}
