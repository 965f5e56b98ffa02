//! Issue 3's deterministic quality figures for tickwire's time sync, on the simulator
//! (5 minutes of game time per scenario; the figures do not depend on machine speed).
//! tickwire's figures are the product's relay sessions over the real transport.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use tickwire_lab::{Controller, LabConfig, Metrics, judge, late_limit, run_scenario as run, scenario as by_id, score};

/// Scores `controller` on scenario `id` at the lab's defaults.
fn scored(id: &str, controller: Controller) -> Metrics {
    scored_at(id, controller, LabConfig::default().seed)
}

/// Scores `controller` on scenario `id` at the lab's defaults but `seed`. Each run is
/// made once per test binary: the per-scenario checks and the comparison share
/// tickwire's runs.
fn scored_at(id: &str, controller: Controller, seed: u64) -> Metrics {
    type Runs = Mutex<HashMap<(String, &'static str, u64), Arc<OnceLock<Metrics>>>>;
    static RUNS: OnceLock<Runs> = OnceLock::new();
    let cell = RUNS
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry((id.to_string(), controller.name(), seed))
        .or_default()
        .clone();
    *cell.get_or_init(|| {
        let cfg = LabConfig { seed, ..LabConfig::default() };
        let sc = by_id(id).unwrap();
        let m = score(&run(&sc, controller, &cfg), &sc, &cfg);
        // The figures assume the one client stays: a kick would void them.
        assert_eq!(m.kicks, 0, "{id} {}: the client was removed", controller.name());
        m
    })
}

fn tickwire(id: &str) -> (Metrics, LabConfig) {
    let m = scored(id, Controller::Tickwire);
    println!("{id}: {m:?}");
    (m, LabConfig::default())
}

fn common(id: &str, m: &Metrics, cfg: &LabConfig, late_allowed: f64) {
    assert!(m.late_rate <= late_allowed, "{id}: late rate {:.3}% > {:.3}%", m.late_rate * 100.0, late_allowed * 100.0);
    assert!(m.lead_excess <= 0.5, "{id}: lead excess {:.3} ticks over the oracle", m.lead_excess);
    assert!(m.corrections_per_min <= 0.5, "{id}: {:.2} discrete clock corrections per minute", m.corrections_per_min);
    assert!(!m.tick_went_back, "{id}: the tick went backwards");
    let _ = cfg;
}

/// M7: on a link without loss the clock is dilated (more than 0.5% off) in under 3% of
/// frames. A late input does not slip the stream under the default late policy, so
/// there is no slip to take back by slowing down.
fn rarely_dilated(id: &str, m: &Metrics) {
    assert!(m.dilated_fraction < 0.03, "{id}: dilated in {:.1}% of frames", m.dilated_fraction * 100.0);
}

#[test]
fn s1_gaussian_jitter() {
    let (m, cfg) = tickwire("S1");
    common("S1", &m, &cfg, cfg.epsilon);
    rarely_dilated("S1", &m);
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
    rarely_dilated("S4", &m);
}

#[test]
fn s5_latency_step_converges() {
    let (m, cfg) = tickwire("S5");
    common("S5", &m, &cfg, cfg.epsilon);
    rarely_dilated("S5", &m);
    let conv = m.convergence_s.expect("S5 has a step");
    // New RTT is 200 ms: converged within RTT + 0.6 s.
    assert!(conv <= 0.2 + 0.6, "converged after {conv} s");
}

#[test]
fn s6_clock_drift() {
    let (m, cfg) = tickwire("S6");
    common("S6", &m, &cfg, cfg.epsilon);
    // No steady oscillation (M7): the lead's standard deviation stays small, and the
    // clock runs at the server's rate (the drift term) rather than correcting.
    assert!(m.lead_std < 0.5, "lead oscillates: standard deviation {:.2} ticks", m.lead_std);
    rarely_dilated("S6", &m);
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

/// S2 (heavy-tailed jitter on a FIFO path, where one delay spike stalls every packet
/// behind it, and bursts of loss): every baseline misses ε at the lab's seed, and the
/// claim rests on tickwire meeting it. It does at other seeds too.
#[test]
fn s2_heavy_tail_meets_epsilon_at_several_seeds() {
    let cfg = LabConfig::default();
    for seed in 1..=4 {
        let m = scored_at("S2", Controller::Tickwire, seed);
        println!("S2 seed {seed}: late {:.2}% excess {:.2}", m.late_rate * 100.0, m.lead_excess);
        assert!(m.late_rate <= cfg.epsilon, "seed {seed}: late {:.3}%", m.late_rate * 100.0);
        assert!(m.lead_excess.is_finite());
    }
}

/// S8: the client's own 2 s stop leaves its server ticks with no input in existence.
/// The lab counts them apart (`late_frozen`); outside them tickwire holds ε.
#[test]
fn s8_the_clients_own_stop_is_counted_apart() {
    let (m, cfg) = tickwire("S8");
    // 2 s of the scored 290 s: 0.69% of the ticks, less the few the lead had covered.
    assert!(m.late_frozen > 0.0060 && m.late_frozen <= 0.0069, "frozen share {:.3}%", m.late_frozen * 100.0);
    assert!(
        m.late_rate - m.late_frozen <= cfg.epsilon,
        "late {:.2}% with {:.2}% frozen",
        m.late_rate * 100.0,
        m.late_frozen * 100.0
    );
    assert!(!m.tick_went_back);
    // A scenario without a client stop has none.
    assert_eq!(scored("S1", Controller::Tickwire).late_frozen, 0.0);
}

/// Runs tickwire and every baseline on each scenario and checks the claim of issue 3.
fn beats_every_baseline(ids: &[&str]) {
    let cfg = LabConfig::default();
    let mut failures = Vec::new();
    for id in ids {
        let tw = scored(id, Controller::Tickwire);
        for b in Controller::BASELINES {
            let m = scored(id, b);
            let v = judge(&tw, &m, &cfg);
            println!(
                "{id} vs {}: {} (tickwire late {:.2}% excess {:.2}; {} late {:.2}% excess {:.2})",
                b.name(),
                v.label(),
                tw.late_rate * 100.0,
                tw.lead_excess,
                b.name(),
                m.late_rate * 100.0,
                m.lead_excess
            );
            if !v.is_win() {
                failures.push(format!("{id} vs {}: not beaten", b.name()));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

#[test]
fn beats_every_baseline_s0_to_s3() {
    beats_every_baseline(&["S0", "S1", "S2", "S3a"]);
}

#[test]
fn beats_every_baseline_s3_to_s4() {
    beats_every_baseline(&["S3", "S3c", "S3d", "S4"]);
}

#[test]
fn beats_every_baseline_s5_to_s6() {
    beats_every_baseline(&["S5", "S5b", "S5c", "S6"]);
}

#[test]
fn beats_every_baseline_s6b_to_s9() {
    beats_every_baseline(&["S6b", "S7", "S8", "S9"]);
}
