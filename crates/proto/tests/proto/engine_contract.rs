//! The contract every session kind keeps with the engine (`Session`), driven through
//! the trait alone: `current_tick` is the tick the next `advance` runs, in every kind.

use tickwire_proto::{
    AdvanceStatus, GameShape, P2pConfig, P2pSession, PlayerKind, RelayServerSession, RelayServerSessionConfig, Request,
    Session, SyncTestSession, Tick,
};

/// Runs `ticks` ticks through the trait. Before each advance `feed` gives the inputs;
/// each `Save` is confirmed with `confirm`. Every advance must run exactly the tick
/// `current_tick` named before it (resimulated ticks aside), and move it on by one.
fn holds_the_tick_contract<S: Session>(
    s: &mut S,
    ticks: u32,
    mut feed: impl FnMut(&mut S),
    mut confirm: impl FnMut(&mut S, Tick),
) {
    let mut saves = Vec::new();
    for _ in 0..ticks {
        let t = s.current_tick();
        feed(s);
        assert_eq!(s.advance(), AdvanceStatus::Advanced, "tick {t}");
        let mut ran = Vec::new();
        while let Some(r) = s.poll_request() {
            match r {
                Request::Advance { tick, resimulating: false, .. } => ran.push(tick),
                Request::Save { tick, .. } => saves.push(tick),
                _ => {}
            }
        }
        for tick in saves.drain(..) {
            confirm(s, tick);
        }
        while s.poll_event().is_some() {}
        assert_eq!(ran, [t], "the advance after current_tick() = {t}");
        assert_eq!(s.current_tick(), t + 1);
    }
}

#[test]
fn current_tick_is_the_next_tick_run_in_every_session() {
    let mut synctest = SyncTestSession::new(GameShape::new(2, 4), 3).unwrap();
    holds_the_tick_contract(
        &mut synctest,
        40,
        |s| (0..2).for_each(|p| s.add_input(p, &[p as u8; 4]).unwrap()),
        |s, t| s.confirm_save(t, 7).unwrap(),
    );

    let mut p2p = P2pSession::new(P2pConfig::new(GameShape::new(2, 4)), &[PlayerKind::Local; 2], 0).unwrap();
    holds_the_tick_contract(
        &mut p2p,
        40,
        |s| (0..2).for_each(|p| s.add_local_input(p, &[p as u8; 4]).unwrap()),
        |s, t| s.confirm_save(t, 7).unwrap(),
    );

    let cfg = RelayServerSessionConfig::new(GameShape::new(2, 4));
    let mut server = RelayServerSession::new(cfg, 0).unwrap();
    assert_eq!(server.current_tick(), server.last_tick() + 1);
    holds_the_tick_contract(&mut server, 40, |_| {}, |s, t| s.confirm_save(t, 7).unwrap());
    assert_eq!(server.last_tick() + 1, server.current_tick());
}
