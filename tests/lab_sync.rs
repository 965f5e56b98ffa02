//! Issue 3's deterministic quality figures for tickwire's time sync, on the simulator
//! (5 minutes of game time per scenario; the figures do not depend on machine speed).

use tickwire::lab::metrics::{Metrics, score};
use tickwire::lab::model::{Controller, LabConfig, run};
use tickwire::lab::report::late_limit;
use tickwire::lab::scenario::by_id;

fn tickwire(id: &str) -> (Metrics, LabConfig) {
    let cfg = LabConfig::default();
    let sc = by_id(id).unwrap();
    let rec = run(&sc, Controller::Tickwire, &cfg);
    let m = score(&rec, &sc, &cfg);
    println!("{id}: {m:?}");
    (m, cfg)
}

fn common(id: &str, m: &Metrics, cfg: &LabConfig, late_allowed: f64) {
    assert!(m.late_rate <= late_allowed, "{id}: late rate {:.3}% > {:.3}%", m.late_rate * 100.0, late_allowed * 100.0);
    assert!(m.lead_excess <= 0.5, "{id}: lead excess {:.3} ticks over the oracle", m.lead_excess);
    assert!(m.corrections_per_min <= 0.5, "{id}: {:.2} discrete clock corrections per minute", m.corrections_per_min);
    assert!(!m.tick_went_back, "{id}: the tick went backwards");
    let _ = cfg;
}

#[test]
fn s1_gaussian_jitter() {
    let (m, cfg) = tickwire("S1");
    common("S1", &m, &cfg, cfg.epsilon);
}

#[test]
fn s3_five_percent_loss() {
    let (m, cfg) = tickwire("S3");
    // With loss the M1 limit is the inputs no lead could save (all copies lost) or ε,
    // whichever is higher; the issue allows that plus 0.5%.
    common("S3", &m, &cfg, late_limit(&m, &cfg) + 0.005);
    assert!(m.late_floor < 0.005, "redundancy should leave under 0.5% of inputs unrecoverable: {}", m.late_floor);
}

#[test]
fn s4_asymmetric_path() {
    let (m, cfg) = tickwire("S4");
    common("S4", &m, &cfg, cfg.epsilon);
}

#[test]
fn s5_latency_step_converges() {
    let (m, cfg) = tickwire("S5");
    common("S5", &m, &cfg, cfg.epsilon);
    let conv = m.convergence_s.expect("S5 has a step");
    // New RTT is 200 ms: converged within RTT + 0.6 s.
    assert!(conv <= 0.2 + 0.6, "converged after {conv} s");
}

#[test]
fn s6_clock_drift() {
    let (m, cfg) = tickwire("S6");
    common("S6", &m, &cfg, cfg.epsilon);
    // No steady oscillation (M7): the lead's standard deviation stays small. (The time
    // scale does move: each late input costs a brief correction; the lab reports how
    // often, as sign changes per minute and the fraction of time dilated beyond 0.5%.)
    assert!(m.lead_std < 0.5, "lead oscillates: standard deviation {:.2} ticks", m.lead_std);
}

#[test]
fn same_seed_same_figures() {
    let cfg = LabConfig::default();
    let mut sc = by_id("S3").unwrap();
    sc.duration = 60_000_000;
    let a = score(&run(&sc, Controller::Tickwire, &cfg), &sc, &cfg);
    let b = score(&run(&sc, Controller::Tickwire, &cfg), &sc, &cfg);
    assert_eq!(a, b);
}
