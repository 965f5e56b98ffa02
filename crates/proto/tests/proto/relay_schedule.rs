//! Issue 37, 2: the relay client's send schedule. Each lost input packet delays the
//! inputs it carried by one send interval, so on a lossy uplink the interval sets the
//! lead. The client sends every other tick while its uplink loses little, and every
//! tick while it loses more than half the lead's late budget
//! (`RelayClientConfig::every_tick_when_lossy`, on by default).

use crate::support::relay_world::{World, link};
use tickwire_proto::{GameShape, RelayClientSessionConfig, RelayServerSessionConfig};

const SECOND: u64 = 1_000_000;

/// Two clients on `loss` both ways for 90 s: each one's send interval at the end and
/// its lead (ticks, the sync figures' estimate), averaged over the last 30 s.
fn run(loss: f64, every_tick_when_lossy: bool) -> Vec<(u32, f64)> {
    let scfg = RelayServerSessionConfig { game: GameShape::new(2, 2), ..RelayServerSessionConfig::default() };
    let mut ccfg = RelayClientSessionConfig { game: GameShape::new(2, 2), ..RelayClientSessionConfig::default() };
    ccfg.sync.every_tick_when_lossy = every_tick_when_lossy;
    let mut w = World::new(41, link(loss), scfg, ccfg);
    for _ in 0..2 {
        w.add_client();
    }
    w.run_for(60 * SECOND);
    let mut lead = [0.0; 2];
    for _ in 0..30 {
        w.run_for(SECOND);
        for (i, l) in lead.iter_mut().enumerate() {
            *l += w.clients[i].session.stats().sync.lead_ticks / 30.0;
        }
    }
    for i in 0..2 {
        w.assert_same_states(i, w.joined_tick(i));
    }
    (0..2).map(|i| (w.clients[i].session.stats().sync.send_interval, lead[i])).collect()
}

#[test]
fn a_lossy_uplink_is_sent_every_tick_and_a_clean_one_every_other() {
    let clean = run(0.0, true);
    let lossy = run(0.2, true);
    let fixed = run(0.2, false);
    println!("clean {clean:?}, 20% loss {lossy:?}, 20% loss at every other tick {fixed:?}");
    assert!(clean.iter().all(|c| c.0 == 2), "clean: {clean:?}");
    assert!(lossy.iter().all(|c| c.0 == 1), "lossy: {lossy:?}");
    assert!(fixed.iter().all(|c| c.0 == 2), "schedule off: {fixed:?}");
    // At 20% loss a lost packet costs an input a send interval: sending every tick
    // takes more than a tick off the lead that covers ε of them.
    for (a, b) in lossy.iter().zip(&fixed) {
        assert!(a.1 + 1.0 < b.1, "lead every tick {:.2}, every other {:.2}", a.1, b.1);
    }
}
