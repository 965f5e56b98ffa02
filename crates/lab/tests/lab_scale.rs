//! Issue 15's lab scenarios: far links (F1, F2) and wide matches (W1-W4), tickwire's
//! relay sessions on the simulator, shortened (the lab's own runs are 300 s). Every
//! client of the match must stay in it and receive the server's steps at its 60 Hz.

use tickwire_lab::{Controller, LabConfig, Metrics, run_scenario as run, scenario as by_id, score};

const SEC: u64 = 1_000_000;

fn scored(id: &str, seconds: u64) -> Metrics {
    let cfg = LabConfig::default();
    let mut sc = by_id(id).unwrap();
    sc.duration = seconds * SEC;
    sc.changes.retain(|c| c.0 < sc.duration);
    let rec = run(&sc, Controller::Tickwire, &cfg);
    let m = score(&rec, &sc, &cfg);
    println!(
        "{id} ({}), {seconds} s: slowest client {:.2} steps/s over the end of the run, {} kicks{}; late {:.2}%, lead {:.2} ticks",
        sc.about,
        m.step_rate,
        m.kicks,
        rec.kicks.first().map_or(String::new(), |(at, e)| format!(" (the first at {:.1} s: {e})", *at as f64 / 1e6)),
        m.late_rate * 100.0,
        m.lead
    );
    m
}

fn keeps_every_client_at_60hz(id: &str, seconds: u64) {
    let m = scored(id, seconds);
    assert_eq!(m.kicks, 0, "{id}: {} players removed", m.kicks);
    assert!(m.step_rate >= 59.0, "{id}: the slowest client received {:.2} steps/s", m.step_rate);
    assert!(!m.tick_went_back, "{id}: the tick went backwards");
}

#[test]
fn f1_far_link_400ms_each_way() {
    keeps_every_client_at_60hz("F1", 60);
}

#[test]
fn f2_far_link_1s_rtt_lossy_duplicating_reordering() {
    keeps_every_client_at_60hz("F2", 60);
}

#[test]
fn w1_sixteen_clients_64_byte_inputs() {
    keeps_every_client_at_60hz("W1", 30);
}

#[test]
fn w2_sixty_four_clients_16_byte_inputs() {
    keeps_every_client_at_60hz("W2", 30);
}

#[test]
fn w3_sixteen_clients_100ms_8pct_loss() {
    keeps_every_client_at_60hz("W3", 30);
}

#[test]
fn w4_thirty_two_clients_100ms_8pct_loss() {
    keeps_every_client_at_60hz("W4", 30);
}
