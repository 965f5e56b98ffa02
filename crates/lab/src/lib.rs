//! The lab: scenarios S0-S9 (and the far links F1-F2 and wide matches W1-W4)
//! on the deterministic simulator, tickwire's time sync and three baselines on the
//! same seeded link realisations, scored against one oracle per scenario and seed
//! (`oracle.rs`), over many seeds, with each pair judged by the 95% interval of its
//! paired differences (`verdict.rs`). tickwire's rows are the product's relay sessions
//! over the real transport (`relay.rs`); the baselines are models of other designs,
//! each citing what it models (`baselines/`).

mod baselines;
mod bound;
mod frames;
mod metrics;
mod model;
mod oracle;
mod plot;
mod relay;
mod report;
mod scenario;
mod stats;
mod verdict;

// What the lab's tests read besides `run`: one scenario run and its scores, the
// oracle, and the verdict of a pair over seeds.
pub use metrics::{Metrics, score, score_with};
pub use model::{Controller, LabConfig, run as run_scenario};
pub use oracle::Oracle;
pub use report::late_limit;
pub use scenario::{Scenario, by_id as scenario};
pub use verdict::{Decided, Outcome, PairVerdict, judge};

use std::path::PathBuf;

/// Options of `tickwire lab`.
#[derive(Debug, Clone)]
pub struct LabOptions {
    pub scenarios: Vec<String>,
    pub out: Option<PathBuf>,
    /// The first seed; the run takes `seeds` consecutive ones from it.
    pub seed: u64,
    pub seeds: u64,
    pub seconds: Option<u64>,
    /// Only the hindsight bound of a steady lead per scenario (`bound.rs`): no
    /// controller runs.
    pub bound: bool,
    /// With `bound`: a late share (0 to 1) that the causal rules' margin also brings
    /// the 90th-percentile seed to, beside ε (a controller's own, to compare at).
    pub bound_late: Option<f64>,
    /// Client ticks between input packets, for every controller's client (tickwire's
    /// and the baselines') and the oracle's reference alike (None: [`LabConfig`]'s
    /// default, 2).
    pub client_send_interval: Option<u32>,
}

/// The client send intervals `--client-send-interval` takes: every tick to every fourth.
pub const CLIENT_SEND_INTERVALS: std::ops::RangeInclusive<u32> = 1..=4;

/// Seeds per scenario unless `--seeds` says otherwise (20 by default).
pub const DEFAULT_SEEDS: u64 = 20;

pub const LAB_USAGE: &str =
    "usage: tickwire lab [--scenario ID[,ID...]] [--seconds N] [--seeds K] [--seed N] [--client-send-interval K]
       [--out DIR | --bound [--bound-late PCT]]
  Runs scenarios S0-S9 (and variants) on the deterministic simulator with tickwire's
  relay sessions (the product's RelayServer and RelayClient over the real transport)
  and three modelled baselines (seed000, n4e, lightyear), K seeds each (default 20,
  seeds N..N+K-1, N default 1), every controller of a seed on the same links and
  against the same oracle. Prints one table per scenario with the medians over the
  seeds of M1, M2, M3, M6, M7 and M9 beside their oracle limits, tickwire's goals
  (median, 90th percentile, worst seed), and each pair won, tied or lost by the 95%
  interval of the paired differences, then the tally of pairs. F1-F2 far links and
  W1-W4 wide matches run tickwire only. With --out writes summary.csv (one
  line per scenario, controller and seed) plus <scenario>.csv and <scenario>.svg (lead,
  buffer depth and time scale over time, first seed). Default: every scenario but the
  wide matches W1-W4 (named, they run too), 300 s of game time each. --bound runs no
  controller: per scenario, over the seeds, the excess over the oracle of the least
  steady lead with at most epsilon of the oracle's reference inputs late (chosen per
  seed with hindsight), the late share at the steady lead oracle + 0.5 tick, and two
  causal leads (each window from the previous one's needs, or from all earlier ones),
  bare and with the least margin that keeps the 90th-percentile seed within epsilon
  (and, with --bound-late PCT, within PCT percent too: a controller's own late rate,
  to compare its excess with the rules' at that rate), and the least lead, one for
  all seeds, that does so (it knows the link's law, not the seed).
  --client-send-interval K (1-4): client ticks between input packets, for every
  controller's client (tickwire's and the baselines') and the oracle's reference
  alike. Without it: every 2 ticks, and every tick where the scenario's uplink loses
  more than epsilon/2 (tickwire's client then by its own rule, from the loss it
  measures).";

/// Parses `lab` arguments (after the subcommand).
pub fn parse_args(args: &[String]) -> Result<LabOptions, String> {
    let mut o = LabOptions {
        scenarios: Vec::new(),
        out: None,
        seed: 1,
        seeds: DEFAULT_SEEDS,
        seconds: None,
        bound: false,
        bound_late: None,
        client_send_interval: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--scenario" | "--scenarios" => {
                for id in value(a)?.split(',').filter(|s| !s.is_empty()) {
                    if scenario::by_id(id).is_none() {
                        let known: Vec<_> = scenario::all().iter().map(|s| s.id).collect();
                        return Err(format!("unknown scenario {id:?} (known: {})", known.join(", ")));
                    }
                    o.scenarios.push(id.to_string());
                }
            }
            "--out" => o.out = Some(PathBuf::from(value(a)?)),
            "--seed" => o.seed = value(a)?.parse().map_err(|_| "--seed needs a non-negative integer".to_string())?,
            "--seeds" => {
                let k: u64 = value(a)?.parse().map_err(|_| "--seeds needs a positive integer".to_string())?;
                // Two seeds are the fewest that give an interval.
                if !(2..=1000).contains(&k) {
                    return Err(format!("--seeds {k} not in 2..=1000"));
                }
                o.seeds = k;
            }
            "--seconds" => {
                let s: u64 = value(a)?.parse().map_err(|_| "--seconds needs a positive integer".to_string())?;
                if !(20..=3600).contains(&s) {
                    return Err(format!("--seconds {s} not in 20..=3600"));
                }
                o.seconds = Some(s);
            }
            "--client-send-interval" => {
                let k: u32 =
                    value(a)?.parse().map_err(|_| "--client-send-interval needs a positive integer".to_string())?;
                if !CLIENT_SEND_INTERVALS.contains(&k) {
                    let (lo, hi) = (CLIENT_SEND_INTERVALS.start(), CLIENT_SEND_INTERVALS.end());
                    return Err(format!("--client-send-interval {k} not in {lo}..={hi}"));
                }
                o.client_send_interval = Some(k);
            }
            "--bound" => o.bound = true,
            "--bound-late" => {
                let pct: f64 = value(a)?.parse().map_err(|_| "--bound-late needs a percentage".to_string())?;
                // Above 0 (no margin brings every seed to no late input at all) and at
                // most 100.
                if !(pct > 0.0 && pct <= 100.0) {
                    return Err(format!("--bound-late {pct} not in (0, 100]"));
                }
                o.bound_late = Some(pct / 100.0);
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if o.bound && o.out.is_some() {
        return Err("--bound writes no files: it runs no controller to plot (drop --out)".to_string());
    }
    if o.bound_late.is_some() && !o.bound {
        return Err("--bound-late is a figure of --bound (add --bound)".to_string());
    }
    Ok(o)
}

/// One seed of one scenario: every controller's figures, and (for plots) the records.
struct SeedRun {
    metrics: Vec<(Controller, Metrics)>,
    records: Vec<(Controller, model::RunRecord)>,
    oracle: Oracle,
}

/// Runs every controller of `controllers` on `sc` at `cfg`'s seed, against the one
/// oracle of that seed. `keep` keeps the records (for plots).
fn run_seed(sc: &scenario::Scenario, controllers: &[Controller], cfg: &LabConfig, keep: bool) -> SeedRun {
    let cfg = &cfg.at(sc);
    let oracle = Oracle::measure(sc, cfg);
    let mut out = SeedRun { metrics: Vec::new(), records: Vec::new(), oracle: Oracle::default() };
    for &c in controllers {
        let rec = model::run(sc, c, cfg);
        out.metrics.push((c, metrics::score_with(&rec, sc, cfg, &oracle)));
        if keep {
            out.records.push((c, rec));
        }
    }
    out.oracle = oracle;
    out
}

/// Runs `seeds` on `sc`, on as many threads as the machine has cores, in seed order.
pub fn run_seeds(
    sc: &scenario::Scenario,
    controllers: &[Controller],
    seeds: &[u64],
) -> Vec<Vec<(Controller, Metrics)>> {
    run_seeds_at(sc, controllers, seeds, &LabConfig::default())
}

/// [`run_seeds`] at `base`'s settings (its seed is replaced by each of `seeds`).
pub fn run_seeds_at(
    sc: &scenario::Scenario,
    controllers: &[Controller],
    seeds: &[u64],
    base: &LabConfig,
) -> Vec<Vec<(Controller, Metrics)>> {
    run_seeds_keeping(sc, controllers, seeds, false, base).into_iter().map(|r| r.metrics).collect()
}

fn run_seeds_keeping(
    sc: &scenario::Scenario,
    controllers: &[Controller],
    seeds: &[u64],
    keep_first: bool,
    base: &LabConfig,
) -> Vec<SeedRun> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(seeds.len()).max(1);
    let slots: Vec<std::sync::Mutex<Option<SeedRun>>> = seeds.iter().map(|_| Default::default()).collect();
    std::thread::scope(|s| {
        for t in 0..threads {
            let slots = &slots;
            s.spawn(move || {
                for (i, &seed) in seeds.iter().enumerate().skip(t).step_by(threads) {
                    let cfg = LabConfig { seed, ..*base };
                    let r = run_seed(sc, controllers, &cfg, keep_first && i == 0);
                    *slots[i].lock().expect("no panic holds it") = Some(r);
                }
            });
        }
    });
    slots.into_iter().map(|m| m.into_inner().expect("no panic holds it").expect("every seed ran")).collect()
}

/// Runs the lab; returns the text to print, or an error (for example an unwritable
/// output directory).
pub fn run(opts: &LabOptions, mut print: impl FnMut(&str)) -> Result<(), String> {
    let default = LabConfig::default();
    let k_c = opts.client_send_interval.unwrap_or(default.k_c);
    let cfg = LabConfig { seed: opts.seed, k_c, fixed_k_c: opts.client_send_interval.is_some(), ..default };
    let seeds: Vec<u64> = (opts.seed..opts.seed + opts.seeds).collect();
    let mut list = if opts.scenarios.is_empty() {
        // The wide matches (16-64 clients) take minutes per seed at 300 s: they run
        // when named.
        scenario::all().into_iter().filter(|s| s.clients <= 3).collect::<Vec<_>>()
    } else {
        opts.scenarios.iter().filter_map(|id| scenario::by_id(id)).collect()
    };
    if let Some(s) = opts.seconds {
        for sc in &mut list {
            sc.duration = s * 1_000_000;
            sc.changes.retain(|c| c.0 < sc.duration);
        }
    }
    if let Some(dir) = &opts.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    if opts.bound {
        print(&format!(
            "tickwire lab --bound: seeds {}..={} ({} per scenario), epsilon {}; no controller runs.\n\
             From the oracle's reference needs (crates/lab/src/oracle.rs: {} copies per input, sent {} by an ideal\n\
             client, over the seed's uplink; warm-up excluded, the oracle's 30 s windows), per seed (crates/lab/src/bound.rs):\n\
             steady: the least constant lead with at most epsilon of the inputs over it in the whole run (hindsight), and its\n\
             excess over the windows' oracles weighted by their inputs (as M2); at oracle+{}: the share of the inputs late at\n\
             the steady lead the excess goal allows; causal: each window's lead the 1 - epsilon quantile of the previous\n\
             window's arrived needs (the first window's: the warm-up's), or of all earlier ones (scored from the first window,\n\
             as the controllers are); + m: the same rule with the least margin m, one for all seeds of the scenario, that\n\
             keeps the p90 seed's late share within epsilon; one lead for all seeds: the least constant lead, the same for\n\
             every seed, that does so (it knows the link's law from every seed's needs, and nothing of the seed that runs).\n",
            seeds[0],
            seeds[seeds.len() - 1],
            seeds.len(),
            cfg.epsilon,
            oracle::REFERENCE_COPIES,
            schedule(&cfg),
            bound::EXCESS_GOAL
        ));
        for sc in &list {
            let b: Vec<bound::Bound> = seeds
                .iter()
                .map(|&seed| bound::measure(&Oracle::measure(sc, &LabConfig { seed, ..cfg }.at(sc))))
                .collect();
            print(&report::bound(sc, &b, &seeds, &cfg, opts.bound_late));
        }
        return Ok(());
    }
    let mut summary = String::from(report::SUMMARY_HEADER);
    summary.push('\n');
    print(&format!(
        "tickwire lab: 60 Hz, clients send {}, server every {} ticks, epsilon {}, seeds {}..={} ({} per scenario), {} frames/s\n\
         Oracle (crates/lab/src/oracle.rs): one per scenario and seed, from the uplink itself (a reference pattern of {} copies\n\
         per input over the same link realisation), the same 30 s windows and lead for every controller.\n\
         M1 late % (median, w worst seed)/limit (epsilon, or the share of inputs that never arrived); win miss: 30 s windows\n\
         over epsilon / windows, all seeds; M2 lead excess over the oracle (ticks, every window counted); M3 prediction\n\
         distance/P_min; M6 after the first latency step: seconds until the controller's own clock action settles (2 s average\n\
         within T/2 of where it settles) / limit / server ticks without the real input in the step's window; M7 discrete\n\
         corrections/min (snaps, lead-loop resets, seed 000's stalls/skips/resets); dil %: frames dilated by more than 0.5%;\n\
         M9 interpolation delay/D* and starvation; copies B/in: copies of each input the client sent, and the bytes that carried\n\
         them per input (a baseline's modelled packets; tickwire's input messages before the transport's header and tag);\n\
         steps B/tk: tickwire's downlink alike, copies of each step in the server's updates and their bytes per server tick.\n\
         tw-delay is tickwire with the Delay late policy (an experiment, not judged).\n\
         Pairs (crates/lab/src/verdict.rs): both within epsilon (mean late over the seeds), the lead excess decides; otherwise\n\
         the late rate. Won/lost when the 95% t-interval of the paired per-seed differences (tickwire - baseline) excludes 0.\n",
        schedule(&cfg),
        cfg.k_s,
        cfg.epsilon,
        seeds[0],
        seeds[seeds.len() - 1],
        seeds.len(),
        cfg.frame_hz,
        oracle::REFERENCE_COPIES
    ));
    let mut all_verdicts = Vec::new();
    for sc in &list {
        // The baselines model one client's time sync: a match of several clients (its
        // step stream) is tickwire's alone.
        let controllers: Vec<Controller> =
            Controller::ALL.into_iter().filter(|c| sc.clients == 1 || c.is_tickwire()).collect();
        let runs = run_seeds_keeping(sc, &controllers, &seeds, opts.out.is_some(), &cfg);
        let rows: Vec<(Controller, Vec<Metrics>)> =
            controllers.iter().enumerate().map(|(i, &c)| (c, runs.iter().map(|r| r.metrics[i].1).collect())).collect();
        for (k, r) in runs.iter().enumerate() {
            for (c, m) in &r.metrics {
                summary.push_str(&report::summary_row(sc, *c, seeds[k], m, &cfg));
                summary.push('\n');
            }
        }
        print(&report::table(sc, &rows, &cfg));
        if let Some((_, tw)) = rows.iter().find(|r| r.0 == Controller::Tickwire) {
            print(&report::goals(tw, &seeds));
        }
        let (text, v) = report::verdicts(&rows, &cfg);
        print(&text);
        all_verdicts.extend(v.into_iter().map(|(c, p)| (sc.id, c, p)));
        if let Some(dir) = &opts.out {
            write_plots(dir, sc, &runs[0], &cfg)?;
        }
    }
    if !all_verdicts.is_empty() {
        let v: Vec<_> = all_verdicts.iter().map(|x| (x.1, x.2)).collect();
        let [won, tied, lost] = report::tally(&v);
        print(&format!("pairs over {} seeds: {won} won, {tied} tied, {lost} lost of {}\n", seeds.len(), v.len()));
    }
    if let Some(dir) = &opts.out {
        std::fs::write(dir.join("summary.csv"), &summary).map_err(|e| format!("cannot write summary.csv: {e}"))?;
        print(&format!("wrote summary.csv and one .csv and .svg per scenario to {}\n", dir.display()));
    }
    Ok(())
}

/// The clients' send schedule, for the headers.
fn schedule(cfg: &LabConfig) -> String {
    if cfg.fixed_k_c {
        format!("every {} ticks (every controller's client, fixed)", cfg.k_c)
    } else {
        format!(
            "every {} ticks, and every tick where the scenario's uplink loses more than epsilon/2 (the oracle's reference\n\
             and the baselines on that schedule; tickwire's client by its own rule, from the loss it measures)",
            cfg.k_c
        )
    }
}

/// The first seed's time series and plot of a scenario.
fn write_plots(dir: &std::path::Path, sc: &scenario::Scenario, first: &SeedRun, cfg: &LabConfig) -> Result<(), String> {
    let mut csv = String::from("controller,time_s,lead_ticks,buffer_depth,time_scale\n");
    let mut plots = Vec::new();
    for (c, rec) in &first.records {
        let pts = plot::series(rec, cfg, sc.duration);
        for p in &pts {
            csv.push_str(&format!("{},{:.2},{:.4},{:.3},{:.5}\n", c.name(), p.0, p.1, p.2, p.3));
        }
        plots.push((*c, pts));
    }
    let write = |name: String, text: &str| {
        std::fs::write(dir.join(&name), text).map_err(|e| format!("cannot write {}: {e}", dir.join(&name).display()))
    };
    write(format!("{}.csv", sc.id), &csv)?;
    write(format!("{}.svg", sc.id), &plot::svg(sc, &plots, &plot::oracle_series(&first.oracle)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn bound_is_a_flag_and_writes_no_files() {
        let o = parse_args(&args("--scenario S2 --bound --seeds 5")).expect("valid");
        assert!(o.bound && o.seeds == 5 && o.scenarios == ["S2"]);
        assert!(!parse_args(&args("--seeds 5")).expect("valid").bound);
        assert!(parse_args(&args("--bound --out /tmp/x")).unwrap_err().contains("--bound writes no files"));
        assert_eq!(parse_args(&args("--bound yes")).unwrap_err(), "unknown argument \"yes\"");
        let late = parse_args(&args("--bound --bound-late 0.9")).expect("valid").bound_late;
        assert!(late.is_some_and(|l| (l - 0.009).abs() < 1e-12), "{late:?}");
        assert!(parse_args(&args("--bound-late 0.9")).unwrap_err().contains("add --bound"));
        assert!(parse_args(&args("--bound --bound-late 0")).unwrap_err().contains("not in (0, 100]"));
        assert!(parse_args(&args("--bound --bound-late 101")).unwrap_err().contains("not in (0, 100]"));
        assert!(parse_args(&args("--bound --bound-late NaN")).unwrap_err().contains("not in (0, 100]"));
    }

    #[test]
    fn the_client_send_interval_is_one_to_four_ticks() {
        assert_eq!(parse_args(&args("--seeds 5")).expect("valid").client_send_interval, None);
        for k in CLIENT_SEND_INTERVALS {
            let o = parse_args(&args(&format!("--client-send-interval {k}"))).expect("valid");
            assert_eq!(o.client_send_interval, Some(k));
        }
        for bad in ["0", "5", "-1", "two"] {
            let e = parse_args(&args(&format!("--client-send-interval {bad}"))).unwrap_err();
            assert!(e.contains("--client-send-interval"), "{bad}: {e}");
        }
        for bad in ["0", "5"] {
            let e = parse_args(&args(&format!("--client-send-interval {bad}"))).unwrap_err();
            assert_eq!(e, format!("--client-send-interval {bad} not in 1..=4"));
        }
        assert_eq!(parse_args(&args("--client-send-interval")).unwrap_err(), "--client-send-interval needs a value");
    }
}
