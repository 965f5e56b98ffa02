//! Issue 3's deterministic quality figures for tickwire's time sync, on the simulator,
//! held over 20 seeds (issue 19): every check reads the seeds' median, 90th percentile
//! or worst seed, never one seed. Runs are short (40 s of game time, 30 s scored after
//! the warm-up: one oracle window) so the suite stays fast; `tickwire lab` runs 300 s.
//! tickwire's figures are the product's relay sessions over the real transport.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use tickwire_lab::{
    Controller, LabConfig, Metrics, Outcome, judge, late_limit, run_seeds, run_seeds_at, scenario as by_id,
};

const SEEDS: u64 = 20;
const SECONDS: u64 = 40;

fn seeds() -> Vec<u64> {
    (1..=SEEDS).collect()
}

/// A scenario cut to the tests' length (changes past the end dropped).
fn short(id: &str) -> tickwire_lab::Scenario {
    let mut sc = by_id(id).unwrap();
    sc.duration = SECONDS * 1_000_000;
    sc.changes.retain(|c| c.0 < sc.duration);
    sc
}

/// Every controller's figures on scenario `id`, one per seed. Each scenario runs once
/// per test binary: the per-scenario checks and the verdicts share the runs.
fn scored(id: &str) -> Arc<Vec<Vec<(Controller, Metrics)>>> {
    type Runs = Mutex<HashMap<String, Arc<OnceLock<Arc<Vec<Vec<(Controller, Metrics)>>>>>>>;
    static RUNS: OnceLock<Runs> = OnceLock::new();
    let cell = RUNS.get_or_init(Default::default).lock().unwrap().entry(id.to_string()).or_default().clone();
    cell.get_or_init(|| {
        let controllers = [Controller::Tickwire, Controller::Seed000, Controller::N4e, Controller::Lightyear];
        let runs = run_seeds(&short(id), &controllers, &seeds());
        for seed_runs in &runs {
            for (c, m) in seed_runs {
                // The figures assume the one client stays: a kick would void them.
                assert_eq!(m.kicks, 0, "{id} {}: the client was removed", c.name());
            }
        }
        Arc::new(runs)
    })
    .clone()
}

/// One controller's runs over the seeds.
fn of(id: &str, c: Controller) -> Vec<Metrics> {
    scored(id).iter().map(|s| s.iter().find(|r| r.0 == c).expect("ran").1).collect()
}

fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// The median, the 90th percentile and the worst seed of a figure.
fn spread(runs: &[Metrics], get: impl Fn(&Metrics) -> f64) -> (f64, f64, f64) {
    let v: Vec<f64> = runs.iter().map(get).collect();
    (quantile(v.clone(), 0.5), quantile(v.clone(), 0.9), quantile(v, 1.0))
}

/// tickwire's goals on a link it should master, read as issue 19 states them: late ≤
/// `late_allowed` and lead excess ≤ 0.5 tick at the median and at the 90th-percentile
/// seed (the worst is printed); at every seed no clock corrections to speak of and a
/// tick that never goes back.
fn goals(id: &str, late_allowed: f64) -> Vec<Metrics> {
    let runs = of(id, Controller::Tickwire);
    let (late_med, late_p90, late_worst) = spread(&runs, |m| m.late_rate);
    let (ex_med, ex_p90, ex_worst) = spread(&runs, |m| m.lead_excess);
    println!(
        "{id} over {SEEDS} seeds: late median {:.2}% p90 {:.2}% worst {:.2}%, excess median {ex_med:.2} p90 {ex_p90:.2} \
         worst {ex_worst:.2} ticks",
        late_med * 100.0,
        late_p90 * 100.0,
        late_worst * 100.0
    );
    assert!(late_p90 <= late_allowed, "{id}: late {:.3}% at the 90th-percentile seed", late_p90 * 100.0);
    assert!(ex_p90 <= 0.5, "{id}: lead excess {ex_p90:.3} ticks over the oracle at the 90th-percentile seed");
    for (i, m) in runs.iter().enumerate() {
        let seed = i + 1;
        assert!(m.corrections_per_min <= 0.5, "{id} seed {seed}: {:.2} corrections/min", m.corrections_per_min);
        assert!(!m.tick_went_back, "{id} seed {seed}: the tick went backwards");
    }
    runs
}

/// M7: on a link without loss the clock is dilated (more than 0.5% off) in under 3% of
/// frames at the median seed. A late input does not slip the stream under the default
/// late policy, so there is no slip to take back by slowing down.
fn rarely_dilated(id: &str, runs: &[Metrics]) {
    let (med, _, worst) = spread(runs, |m| m.dilated_fraction);
    assert!(
        med < 0.03,
        "{id}: dilated in {:.1}% of frames at the median seed (worst {:.1}%)",
        med * 100.0,
        worst * 100.0
    );
}

#[test]
fn s1_gaussian_jitter() {
    let cfg = LabConfig::default();
    let runs = goals("S1", cfg.epsilon);
    rarely_dilated("S1", &runs);
}

#[test]
fn s4_asymmetric_path() {
    let cfg = LabConfig::default();
    let runs = goals("S4", cfg.epsilon);
    rarely_dilated("S4", &runs);
}

#[test]
fn s6_clock_drift() {
    let cfg = LabConfig::default();
    let runs = goals("S6", cfg.epsilon);
    // No steady oscillation (M7): the lead's standard deviation stays small, and the
    // clock runs at the server's rate (the drift term) rather than correcting.
    let (_, _, worst) = spread(&runs, |m| m.lead_std);
    assert!(worst < 0.5, "lead oscillates: standard deviation {worst:.2} ticks at the worst seed");
    rarely_dilated("S6", &runs);
}

#[test]
fn s9_round_trip_past_the_prediction_ceiling() {
    let cfg = LabConfig::default();
    goals("S9", cfg.epsilon);
}

/// S3 (5% loss): the late rate stays within ε, or the inputs no lead could save (all
/// copies lost) if that is higher, plus 0.5% (issue 3's allowance) at every seed; the
/// excess over the oracle (which waits for a delivered copy) at the median seed.
#[test]
fn s3_five_percent_loss() {
    let cfg = LabConfig::default();
    let runs = of("S3", Controller::Tickwire);
    for (i, m) in runs.iter().enumerate() {
        assert!(m.late_rate <= late_limit(m, &cfg) + 0.005, "seed {}: late {:.3}%", i + 1, m.late_rate * 100.0);
        assert!(m.late_floor < 0.005, "seed {}: {:.3}% of inputs lost in every copy", i + 1, m.late_floor * 100.0);
    }
    let (med, p90, worst) = spread(&runs, |m| m.lead_excess);
    assert!(med <= 0.5, "S3: median excess {med:.2} ticks (p90 {p90:.2}, worst {worst:.2})");
}

/// S2 (heavy-tailed jitter on a FIFO path, bursts of loss): tickwire meets ε at the
/// median seed over the lab's full 300 s. (Not at every seed: see the lab's results in
/// docs/cli.md.) The other checks' 40 s runs measure 30 s after the warm-up: on S2
/// that is mostly the loop's acquisition and a few stalls, whose late rate over 20
/// seeds reads 0.94-1.22% at the median by schedule and aim alike, where the 300 s
/// runs read 0.74-0.83%; so this one runs the length the goal is stated for.
#[test]
fn s2_heavy_tail_meets_epsilon_at_the_median_seed() {
    let cfg = LabConfig::default();
    let runs: Vec<Metrics> =
        run_seeds(&by_id("S2").unwrap(), &[Controller::Tickwire], &seeds()).iter().map(|r| r[0].1).collect();
    let (med, _, worst) = spread(&runs, |m| m.late_rate);
    println!("S2: late median {:.2}% worst {:.2}%", med * 100.0, worst * 100.0);
    assert!(med <= cfg.epsilon, "S2: median late {:.3}%", med * 100.0);
    assert!(runs.iter().all(|m| m.lead_excess.is_finite()));
}

/// S5 moved earlier so a short run holds it: +50 ms both ways at 15 s. The client's
/// clock action settles within the new round trip plus 0.6 s, and the step's window
/// (25 s, so its ticks late from jitter count too) holds at most the dead time's worth
/// of ticks without the real input, `(RTT_new + S_s)/T` (ticksync.md M6: 15 ticks at
/// the new 200 ms round trip), both at the median and the 90th-percentile seed.
#[test]
fn s5_latency_step_costs_at_most_the_dead_time() {
    let mut sc = by_id("S5").unwrap();
    sc.duration = SECONDS * 1_000_000;
    for c in &mut sc.changes {
        c.0 = 15_000_000;
    }
    let runs: Vec<Metrics> = run_seeds(&sc, &[Controller::Tickwire], &seeds()).iter().map(|r| r[0].1).collect();
    let cfg = LabConfig::default();
    let dead_time = (200_000.0 + cfg.k_s as f64 * cfg.tick_us) / cfg.tick_us;
    for (i, m) in runs.iter().enumerate() {
        let late = m.step_late_ticks.unwrap();
        println!("seed {}: clock settled after {:.1} s, {late} ticks without input", i + 1, m.convergence_s.unwrap());
    }
    let (med, p90, worst) = spread(&runs, |m| m.step_late_ticks.unwrap() as f64);
    assert!(
        p90 <= dead_time,
        "{med} ticks without the real input at the median, {p90} at the 90th percentile (worst {worst})"
    );
    let (med, p90, worst) = spread(&runs, |m| m.convergence_s.unwrap());
    assert!(p90 <= 0.2 + 0.6, "settled after {med} s at the median, {p90} s at the 90th percentile (worst {worst})");
}

/// S8 (server hitches, a client stop, 10 fps): nothing breaks: no kick (checked in
/// `scored`), the tick never goes back.
#[test]
fn s8_hitches_never_turn_the_tick_back() {
    assert!(of("S8", Controller::Tickwire).iter().all(|m| !m.tick_went_back));
}

/// `--client-send-interval`: the lab runs the clients' inputs (here tickwire's) and the
/// oracle's reference at the interval it is given. At 33% loss (S3c) each lost packet costs an input one
/// send interval, so sending every tick instead of every other one lowers the lead
/// the reference needs and the lead tickwire holds by several ticks, for more input
/// messages (and bytes) per input; the late rate stays within ε over the seeds.
#[test]
fn a_client_sending_every_tick_needs_less_lead_on_a_lossy_link() {
    // Two minutes: one 30 s window of one seed is too few late inputs to hold to ε.
    let mut sc = by_id("S3c").unwrap();
    sc.duration = 120_000_000;
    let seeds: Vec<u64> = (1..=4).collect();
    let at = |k_c: u32| -> Vec<Metrics> {
        let base = LabConfig { k_c, fixed_k_c: true, ..LabConfig::default() };
        run_seeds_at(&sc, &[Controller::Tickwire], &seeds, &base).iter().map(|r| r[0].1).collect()
    };
    let (every, other) = (at(1), at(2));
    for (i, (a, b)) in every.iter().zip(&other).enumerate() {
        println!(
            "seed {}: oracle {:.2} / {:.2} ticks, lead {:.2} / {:.2}, late {:.2} / {:.2}%, {:.1} / {:.1} messages and {:.0} / {:.0} B per input",
            seeds[i],
            a.lead_oracle,
            b.lead_oracle,
            a.lead,
            b.lead,
            a.late_rate * 100.0,
            b.late_rate * 100.0,
            a.copies_per_input,
            b.copies_per_input,
            a.uplink_bytes_per_input,
            b.uplink_bytes_per_input
        );
        assert!(
            a.lead_oracle + 2.0 < b.lead_oracle,
            "seed {}: oracle {} vs {}",
            seeds[i],
            a.lead_oracle,
            b.lead_oracle
        );
        assert!(a.lead + 2.0 < b.lead, "seed {}: lead {} vs {}", seeds[i], a.lead, b.lead);
        assert!(a.copies_per_input > b.copies_per_input, "seed {}: messages per input", seeds[i]);
    }
    let mean_late = |m: &[Metrics]| m.iter().map(|m| m.late_rate).sum::<f64>() / m.len() as f64;
    let (a, b) = (mean_late(&every), mean_late(&other));
    assert!(a <= 0.01 && b <= 0.01, "mean late {a} / {b}");
}

/// Without `--client-send-interval` the lab runs tickwire's own schedule: every
/// other tick, and every tick while its measured uplink loss is above ε/2. On a clean
/// link (S1) that is exactly the fixed every-other-tick run; at 33% loss (S3c) the
/// client switches within the warm-up, so over the scenario's 300 s its lead is the
/// every-tick run's within a quarter of a tick and several ticks below every other
/// tick's, and the lab reads the scenario (the oracle's reference) at every tick.
/// (Over 60 s the loop is still acquiring, and two runs that switched at different
/// times can sit half a tick apart on one seed: seed 1 read 6.68 and 7.24 ticks at
/// 60 s and 7.05 and 7.16 at 300 s.)
#[test]
fn tickwire_sends_every_tick_on_a_lossy_link_by_its_own_measurement() {
    let run = |id: &str, base: LabConfig| -> Vec<Metrics> {
        let sc = by_id(id).unwrap();
        run_seeds_at(&sc, &[Controller::Tickwire], &[1, 2], &base).iter().map(|r| r[0].1).collect()
    };
    let product = LabConfig::default();
    let fixed = |k_c| LabConfig { k_c, fixed_k_c: true, ..LabConfig::default() };
    let (a, b) = (run("S1", product), run("S1", fixed(2)));
    for (a, b) in a.iter().zip(&b) {
        assert_eq!((a.lead, a.late_rate, a.copies_per_input), (b.lead, b.late_rate, b.copies_per_input), "S1");
    }
    assert_eq!(product.at(&by_id("S1").unwrap()).k_c, 2);
    assert_eq!(product.at(&by_id("S3c").unwrap()).k_c, 1);
    assert_eq!(product.at(&by_id("S2").unwrap()).k_c, 1, "1% bursty loss is above ε/2");
    let (own, every, other) = (run("S3c", product), run("S3c", fixed(1)), run("S3c", fixed(2)));
    for i in 0..2 {
        println!(
            "S3c seed {}: lead {:.2} (own schedule), {:.2} (every tick), {:.2} (every other); oracle {:.2} / {:.2} / {:.2}",
            i + 1,
            own[i].lead,
            every[i].lead,
            other[i].lead,
            own[i].lead_oracle,
            every[i].lead_oracle,
            other[i].lead_oracle
        );
        // (The oracle's windows are weighted by the run's own inputs.)
        assert!((own[i].lead_oracle - every[i].lead_oracle).abs() < 0.01, "read at every tick, seed {}", i + 1);
        assert!((own[i].lead - every[i].lead).abs() < 0.25, "seed {}", i + 1);
        assert!(own[i].lead + 2.0 < other[i].lead, "seed {}", i + 1);
    }
}

#[test]
fn same_seed_same_figures() {
    let sc = short("S3");
    let a = run_seeds(&sc, &[Controller::Tickwire], &[7]);
    let b = run_seeds(&sc, &[Controller::Tickwire], &[7]);
    assert_eq!(a[0][0].1, b[0][0].1);
}

/// tickwire against every baseline on each scenario, over the seeds, by the verdict's
/// rule (the 95% interval of the paired differences): every pair won.
fn beats_every_baseline(ids: &[&str]) {
    let cfg = LabConfig::default();
    let mut failures = Vec::new();
    for id in ids {
        let tw = of(id, Controller::Tickwire);
        for b in Controller::BASELINES {
            let v = judge(&tw, &of(id, b), &cfg);
            println!("{id} vs {}: {}", b.name(), v.label());
            if v.outcome != Outcome::Won {
                failures.push(format!("{id} vs {}: {}", b.name(), v.label()));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

#[test]
fn beats_every_baseline_on_clean_and_lossy_links() {
    beats_every_baseline(&["S0", "S1", "S3a", "S3", "S3c"]);
}

#[test]
fn beats_every_baseline_on_asymmetry_drift_and_reordering() {
    beats_every_baseline(&["S4", "S6", "S6b", "S7", "S9"]);
}

/// What redundancy costs, counted on the messages and packets sent: tickwire sends each
/// input and each step once on a clean link and adds copies where the link loses (5% in
/// S3); seed 000 sends every input once whatever the link, and N4E its 4 newest
/// commands in every packet.
#[test]
fn copies_follow_the_links_loss_and_the_baselines_their_design() {
    let median = |id: &str, c: Controller| spread(&of(id, c), |m| m.copies_per_input).0;
    let clean = median("S1", Controller::Tickwire);
    let lossy = median("S3", Controller::Tickwire);
    assert!((1.0..=1.2).contains(&clean), "tickwire's copies on a clean link: {clean}");
    assert!(lossy >= 2.0, "tickwire's copies at 5% loss: {lossy}");
    for id in ["S1", "S3"] {
        // S1 is read at every other tick, S3 (5% loss) at every tick: N4E's four
        // commands a packet are 2 copies on the first and 4 on the second.
        let n4e = 4.0 / LabConfig::default().at(&by_id(id).unwrap()).k_c as f64;
        let one = median(id, Controller::Seed000);
        let four = median(id, Controller::N4e);
        assert!(
            (0.99..=1.01).contains(&one) && (four - n4e).abs() <= 0.05 * n4e,
            "{id}: seed000 {one}, n4e {four} (its design: {n4e})"
        );
        // Bytes follow copies: every controller's bytes per input grow with its copies.
        let b = |c| spread(&of(id, c), |m| m.uplink_bytes_per_input).0;
        assert!(b(Controller::N4e) > b(Controller::Seed000), "{id}");
    }
    assert!(
        spread(&of("S3", Controller::Tickwire), |m| m.uplink_bytes_per_input).0
            > spread(&of("S1", Controller::Tickwire), |m| m.uplink_bytes_per_input).0
    );
    // The step stream alike: each step once on a clean link, more copies at 5% loss.
    let steps = |id: &str| spread(&of(id, Controller::Tickwire), |m| m.copies_per_step).0;
    let (clean, lossy) = (steps("S1"), steps("S3"));
    assert!((1.0..=1.2).contains(&clean) && lossy >= 2.0, "step copies: S1 {clean}, S3 {lossy}");
}
