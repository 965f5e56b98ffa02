//! The lab: scenarios S0-S9 (and issue 15's far links F1-F2 and wide matches W1-W4)
//! on the deterministic simulator, tickwire's time sync and
//! three baselines on the same kind of seeded networks, scored against the oracle.
//! tickwire's rows are the product's relay sessions over the real transport (see
//! `relay.rs`); the baselines are models of other designs (see `baselines.rs`).

mod baselines;
mod metrics;
mod model;
mod relay;
mod report;
mod scenario;
mod verdict;

// What the lab's tests read besides `run`: one scenario run and its scores.
pub use metrics::{Metrics, score};
pub use model::{Controller, LabConfig, run as run_scenario};
pub use report::late_limit;
pub use scenario::by_id as scenario;
pub use verdict::judge;

use std::path::PathBuf;

/// Options of `tickwire lab`.
#[derive(Debug, Clone)]
pub struct LabOptions {
    pub scenarios: Vec<String>,
    pub out: Option<PathBuf>,
    pub seed: u64,
    pub seconds: Option<u64>,
}

pub const LAB_USAGE: &str = "usage: tickwire lab [--scenario ID[,ID...]] [--seconds N] [--seed N] [--out DIR]
  Runs scenarios S0-S9 (and variants) on the deterministic simulator with tickwire's
  relay sessions (the product's RelayServer and RelayClient over the real transport)
  and three modelled baselines (seed000, n4e, lightyear), prints one table per
  scenario with M1, M2, M3, M6, M7 and M9 beside their oracle limits and whether
  tickwire beats each baseline, the slowest client's steps per second and the kicks
  (F1-F2 far links and W1-W4 wide matches of issue 15: tickwire only), and with --out writes summary.csv plus <scenario>.csv
  and <scenario>.svg (lead, buffer depth and time scale over time). Default: every
  scenario, 300 s of game time each.";

/// Parses `lab` arguments (after the subcommand).
pub fn parse_args(args: &[String]) -> Result<LabOptions, String> {
    let mut o = LabOptions { scenarios: Vec::new(), out: None, seed: 1, seconds: None };
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
            "--seconds" => {
                let s: u64 = value(a)?.parse().map_err(|_| "--seconds needs a positive integer".to_string())?;
                if !(20..=3600).contains(&s) {
                    return Err(format!("--seconds {s} not in 20..=3600"));
                }
                o.seconds = Some(s);
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(o)
}

/// Runs the lab; returns the text to print, or an error (for example an unwritable
/// output directory).
pub fn run(opts: &LabOptions, mut print: impl FnMut(&str)) -> Result<(), String> {
    let cfg = LabConfig { seed: opts.seed, ..LabConfig::default() };
    let mut list = if opts.scenarios.is_empty() {
        scenario::all()
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
    let mut summary = String::from(report::SUMMARY_HEADER);
    summary.push('\n');
    print(&format!(
        "tickwire lab: 60 Hz, client sends every {} ticks, server every {}, epsilon {}, seed {}, {} frames/s\n\
         M1 late %/limit (limit: epsilon, or the share of inputs that never arrived, plus ticks run while the client itself\n\
         was stopped by the scenario, when no input existed); M2 lead excess over the oracle (ticks);\n\
         M3 prediction distance/P_min; M6 convergence after the first step (2 s moving average within T/2 of the new oracle);\n\
         M7 discrete corrections/min / time-scale sign changes per min, and the share of frames dilated by more than 0.5%;\n\
         M9 interpolation delay/D* and starvation. tw-delay is tickwire with the Delay late policy (an experiment).\n\
         Beats (crates/lab/src/verdict.rs): against a baseline within epsilon, tickwire within epsilon with a lower excess; against\n\
         one beyond epsilon, a lower late rate and either within epsilon or also a lower excess.\n",
        cfg.k_c, cfg.k_s, cfg.epsilon, cfg.seed, cfg.frame_hz
    ));
    for sc in &list {
        let mut rows = Vec::new();
        let mut plots = Vec::new();
        let mut oracle = Vec::new();
        let mut csv = String::from("controller,time_s,lead_ticks,buffer_depth,time_scale\n");
        for c in Controller::ALL {
            // The baselines model one client's time sync: a match of several clients
            // (its step stream) is tickwire's alone.
            if sc.clients > 1 && !c.is_tickwire() {
                continue;
            }
            let rec = model::run(sc, c, &cfg);
            let m = metrics::score(&rec, sc, &cfg);
            summary.push_str(&report::summary_row(sc, c, &m, &cfg));
            summary.push('\n');
            let pts = report::series(&rec, &cfg, sc.duration);
            for p in &pts {
                csv.push_str(&format!("{},{:.2},{:.4},{:.3},{:.5}\n", c.name(), p.0, p.1, p.2, p.3));
            }
            if c == Controller::Tickwire {
                oracle = report::oracle_series(&rec, &cfg, sc.duration);
            }
            plots.push((c, pts));
            rows.push((c, m));
        }
        print(&report::table(sc, &rows, &cfg));
        print(&report::verdicts(&rows, &cfg));
        if let Some(dir) = &opts.out {
            let write = |name: String, text: &str| {
                std::fs::write(dir.join(&name), text)
                    .map_err(|e| format!("cannot write {}: {e}", dir.join(&name).display()))
            };
            write(format!("{}.csv", sc.id), &csv)?;
            write(format!("{}.svg", sc.id), &report::svg(sc, &plots, &oracle))?;
        }
    }
    if let Some(dir) = &opts.out {
        std::fs::write(dir.join("summary.csv"), &summary).map_err(|e| format!("cannot write summary.csv: {e}"))?;
        print(&format!("wrote summary.csv and one .csv and .svg per scenario to {}\n", dir.display()));
    }
    Ok(())
}
