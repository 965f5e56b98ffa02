//! Issue 4's relay with prediction, end to end over the deterministic simulator: a
//! server session and client sessions, each driving a `BoxGame` engine through
//! requests, on a 100 ms RTT link with 10 ms jitter and 5% loss.

#[path = "support/relay_game.rs"]
mod relay_game;
#[path = "support/relay_world.rs"]
mod relay_world;

use relay_world::{TICK_US, World, link};
use tickwire::core::session::relay_client_session::{ClientSessionEvent, RelayClientSessionConfig};
use tickwire::core::session::relay_server_session::{RelayServerSessionConfig, ServerSessionEvent};
#[allow(unused_imports)]
use tickwire::core::session::relay_client_session::ClientSessionStats;

const SECOND: u64 = 1_000_000;
const MAX_PREDICTION: u32 = 16;

fn configs() -> (RelayServerSessionConfig, RelayClientSessionConfig) {
    let s = RelayServerSessionConfig { max_players: 8, checksum_interval: 30, ..RelayServerSessionConfig::default() };
    let c = RelayClientSessionConfig { max_players: 8, max_prediction: MAX_PREDICTION, ..RelayClientSessionConfig::default() };
    (s, c)
}

/// The oracle for M3/M5's prediction distance at this link (ticksync.md 3.2):
/// `P_min = (L*_ε + E[d] + S_s/2) / T` with `L*_ε = u_min + Q_{1-ε}(j_u) + (k_c - 1)·T`.
/// Jitter is |N(0, σ)|: Q_.99 = 2.576σ, mean 0.798σ. With 5% loss a 1% late rate
/// also needs the second copy to be in time, one client send interval later.
fn prediction_floor(sigma_ms: f64, one_way_ms: f64) -> (f64, f64) {
    let t = TICK_US / 1000.0;
    let lead = one_way_ms + 2.576 * sigma_ms + t;
    let down = one_way_ms + 0.798 * sigma_ms;
    let s_s = 3.0 * t;
    let jitter_only = (lead + down + s_s / 2.0) / t;
    (jitter_only, jitter_only + 2.0)
}

#[test]
fn four_clients_ten_minutes_100ms_rtt_jitter_and_5_percent_loss() {
    let (scfg, ccfg) = configs();
    let mut w = World::new(41, link(0.05), scfg, ccfg);
    for _ in 0..4 {
        w.add_client();
    }
    let minutes: u64 = std::env::var("RELAY_MINUTES").ok().and_then(|m| m.parse().ok()).unwrap_or(10);
    w.run_for(minutes * 60 * SECOND);
    let seconds = (minutes * 60) as f64;

    let st = w.server.stats();
    let ticks = st.tick as f64;
    println!("server: {st:?}");
    let mut late_total = 0u64;
    for (p, j) in w.server_players() {
        let late = j.ticks - j.normal;
        late_total += late;
        println!(
            "player {p}: M1 late {:.3}% (empty {}, lost {}, merges {}) of {} ticks",
            100.0 * late as f64 / j.ticks as f64,
            j.underflows,
            j.lost,
            j.merges,
            j.ticks
        );
    }
    let (pmin, pmin_loss) = prediction_floor(10.0, 50.0);
    for i in 0..4 {
        let c = &w.clients[i];
        let s = c.session.stats();
        let p = s.prediction;
        let mean_p = c.distance_sum / c.distance_n as f64;
        println!(
            "client {i}: M3 resimulated {:.1} ticks/s (max depth {}, max {} per frame, {} re-predictions of {} canonical ticks); \
             P mean {:.2} max {} vs P_min {:.2} (jitter only) / {:.2} (with loss cover), P/P_min {:.2}; \
             M5 local mispredictions {} ({} late inputs, {} on time), remote {}; checks {} ({} missed)",
            p.resimulated as f64 / seconds,
            p.max_resim_depth,
            c.resim_per_frame_max,
            p.repredictions,
            p.canonical_ticks,
            mean_p,
            c.distance_max,
            pmin,
            pmin_loss,
            mean_p / pmin,
            p.local_mispredictions,
            p.local_late,
            p.local_mispredicted_on_time,
            p.remote_mispredictions,
            s.checks_compared,
            s.checks_missed,
        );
        assert_eq!(s.desyncs, 0, "client {i}: desyncs");
        assert!(!c.events.iter().any(|e| matches!(e, ClientSessionEvent::Desync { .. })));
        assert!(s.checks_compared as f64 > 0.9 * ticks / 30.0, "client {i}: only {} checksum comparisons", s.checks_compared);
        let compared = w.assert_same_states(i, w.joined_tick(i));
        assert!(compared as f64 > 0.99 * ticks, "client {i}: compared {compared} of {ticks} ticks");
        // The local player is mispredicted only where its input was late.
        assert_eq!(p.local_mispredicted_on_time, 0, "client {i}: local mispredictions with on-time inputs");
        assert!(p.local_mispredictions <= p.local_late, "client {i}");
        // Re-simulation is bounded by the maximum prediction.
        assert!(p.max_resim_depth <= MAX_PREDICTION, "client {i}: re-prediction depth {}", p.max_resim_depth);
        assert!(c.distance_max <= MAX_PREDICTION);
        let resim_per_s = p.resimulated as f64 / seconds;
        assert!(resim_per_s <= MAX_PREDICTION as f64 * 20.0, "client {i}: {resim_per_s} resimulated ticks/s");
        // Re-prediction is paid only when needed: most canonical ticks are confirmed.
        assert!(p.confirmed_predictions as f64 > 0.5 * p.canonical_ticks as f64, "client {i}: {p:?}");
        assert!(mean_p > pmin * 0.8 && mean_p < pmin_loss + 4.0, "client {i}: prediction distance {mean_p}");
        assert_eq!(s.malformed, 0);
        assert_eq!(s.reconnects, 0);
    }
    let late_rate = late_total as f64 / (4.0 * ticks);
    println!("M1 over all clients: {:.3}%", 100.0 * late_rate);
    assert!(late_rate < 0.02, "late rate {late_rate}");
}
