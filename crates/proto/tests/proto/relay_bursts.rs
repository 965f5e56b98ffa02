//! Issue 37, 1: redundancy that covers bursts. Each link's losses are fitted as a
//! two-state process from the transport's acks, and a tick stream sends the copies
//! that keep the share of ticks lost in every copy near the residual it aims at:
//! both the relay client's inputs (uplink) and the server's steps to each client
//! (downlink). At 5% loss in bursts of 3 that takes 11 copies of an input where
//! independent 5% loss takes 3; copies beyond `max_copies` (6) come within the
//! link's byte budget.

use crate::support::relay_world::{MS, World};
use tickwire_proto::{
    GameShape, JitterModel, LinkConfig, LossModel, RedundancyConfig, RelayClientSessionConfig, RelayServerSessionConfig,
};

const SECOND: u64 = 1_000_000;

fn path(loss: LossModel) -> LinkConfig {
    LinkConfig {
        latency_us: 50 * MS,
        jitter: JitterModel::Gaussian { sigma_us: 5_000.0 },
        loss,
        ..LinkConfig::perfect()
    }
}

/// What three clients and the server planned and lost over two minutes of `link` each
/// way.
struct Figures {
    /// Each client's copies of its inputs at the end, and its fit of the uplink (loss,
    /// chance of a loss after a loss).
    clients: Vec<(u32, f64, f64)>,
    /// The copies the server plans for each step to each client at the end.
    step_copies: Vec<u8>,
    /// The share of the clients' inputs that never reached the server (substituted
    /// with no late copy after).
    never_arrived: f64,
}

fn run(link: LinkConfig, redundancy: RedundancyConfig) -> Figures {
    let mut scfg = RelayServerSessionConfig { game: GameShape::new(3, 2), ..RelayServerSessionConfig::default() };
    scfg.relay.redundancy.extra_copy_bytes_per_sec = redundancy.extra_copy_bytes_per_sec;
    let mut ccfg = RelayClientSessionConfig { game: GameShape::new(3, 2), ..RelayClientSessionConfig::default() };
    ccfg.sync.redundancy = redundancy;
    let mut w = World::new(37, link, scfg, ccfg);
    for _ in 0..3 {
        w.add_client();
    }
    w.run_for(120 * SECOND);
    for i in 0..3 {
        w.assert_same_states(i, w.joined_tick(i));
    }
    let clients = w
        .clients
        .iter()
        .map(|c| {
            let s = c.session.stats().sync;
            (s.copies, s.uplink_loss, s.uplink_loss_burst)
        })
        .collect();
    let step_copies = (0..3).map(|p| w.server.stream_stats(p).expect("a player").planned_copies).collect();
    let (mut never, mut ticks) = (0, 0);
    for j in w.server_players().values() {
        never += j.lost - j.late_substituted;
        ticks += j.ticks;
    }
    Figures { clients, step_copies, never_arrived: never as f64 / ticks.max(1) as f64 }
}

#[test]
fn bursts_of_loss_get_the_copies_they_call_for_both_ways() {
    let bursty = run(path(LossModel::bursty(0.05, 3.0)), RedundancyConfig::default());
    let independent = run(path(LossModel::Bernoulli { p: 0.05 }), RedundancyConfig::default());
    let capped = run(
        path(LossModel::bursty(0.05, 3.0)),
        RedundancyConfig { extra_copy_bytes_per_sec: 0, ..RedundancyConfig::default() },
    );
    for (name, f) in [("bursty", &bursty), ("independent", &independent), ("bursty, capped at 6", &capped)] {
        println!("{name}: clients {:?}, steps {:?}, {:.3}% never", f.clients, f.step_copies, f.never_arrived * 100.0);
    }
    // The fit: bursts of 3 lose the next packet 2 times in 3; independent loss 1 in 20.
    for &(_, loss, burst) in &bursty.clients {
        assert!(loss > 0.01 && (0.4..0.85).contains(&burst), "bursty uplink: loss {loss}, burst {burst}");
    }
    for &(copies, loss, burst) in &independent.clients {
        assert!(loss > 0.03 && burst < 0.15, "independent uplink: loss {loss}, burst {burst}");
        assert!((2..=4).contains(&copies), "independent: {copies} copies (0.05^3 is under 0.1%)");
    }
    // Inputs: 0.05 · (2/3)^(r−1) ≤ 0.1% wants 11 copies; a client's own realisation
    // of two minutes has its own rate, so the mean.
    let mean = |f: &Figures| f.clients.iter().map(|c| c.0 as f64).sum::<f64>() / f.clients.len() as f64;
    assert!(mean(&bursty) > 7.0, "bursty uplinks: {:?}", bursty.clients);
    assert!(capped.clients.iter().all(|c| c.0 <= 6), "no budget beyond max_copies: {:?}", capped.clients);
    // Steps (a residual of 0.01%): more copies for bursts than for the same rate alone.
    let most = |f: &Figures| *f.step_copies.iter().max().expect("three");
    let least = |f: &Figures| *f.step_copies.iter().min().expect("three");
    assert!(least(&bursty) > most(&independent), "{:?} vs {:?}", bursty.step_copies, independent.step_copies);
    assert!(least(&bursty) > 6, "bursty downlinks: {:?}", bursty.step_copies);
    // Inputs lost in every copy: the copies the bursts call for lose fewer than six.
    assert!(bursty.never_arrived < capped.never_arrived / 2.0, "{} vs {}", bursty.never_arrived, capped.never_arrived);
}
