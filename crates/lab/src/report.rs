//! The lab's tables: per scenario each controller's figures over the seeds (medians,
//! with the worst seed where it matters) beside their oracle limits, tickwire's goals,
//! the verdict of each pair, and a CSV of every run.

use std::fmt::Write as _;

use super::bound::{Bound, Causal, EXCESS_GOAL, independent_correlation, margin_for, window_spread};
use super::metrics::Metrics;
use super::model::{Controller, LabConfig};
use super::scenario::Scenario;
use super::stats::{quantile, spread};
use super::verdict::{Outcome, PairVerdict, judge};

fn f(x: f64, prec: usize) -> String {
    if x.is_nan() {
        "-".into()
    } else if x.is_infinite() {
        "inf".into()
    } else {
        format!("{x:.prec$}")
    }
}

/// The M1 limit of one run: ε, or the fraction of inputs that never arrived if that is
/// higher.
pub fn late_limit(m: &Metrics, cfg: &LabConfig) -> f64 {
    cfg.epsilon.max(m.late_floor)
}

/// The median over seeds of one figure (NaN-free figures only).
fn med(runs: &[Metrics], get: impl Fn(&Metrics) -> f64) -> f64 {
    let mut v: Vec<f64> = runs.iter().map(get).filter(|x| !x.is_nan()).collect();
    quantile(&mut v, 0.5)
}

/// One table for one scenario: each figure is the median over the seeds; M1 and M2
/// also give the worst seed's figure (after "w").
pub fn table(scenario: &Scenario, rows: &[(Controller, Vec<Metrics>)], cfg: &LabConfig) -> String {
    let mut s = String::new();
    let seeds = rows.first().map_or(0, |r| r.1.len());
    let _ = writeln!(
        s,
        "{}  {}  (medians over {seeds} seeds; w = worst seed; read at a send every {} ticks)",
        scenario.id,
        scenario.about,
        cfg.at(scenario).k_c
    );
    let _ = writeln!(
        s,
        "  {:<10} {:>19} {:>9} {:>17} {:>13} {:>11} {:>15} {:>11} {:>6} {:>12} {:>8} {:>7} {:>5} {:>11} {:>12}",
        "controller",
        "M1 late %/limit",
        "win miss",
        "M2 excess tk",
        "lead/oracle",
        "M3 P/Pmin",
        "M6 s/lim/late",
        "M7 corr/min",
        "dil %",
        "M9 D/D* tk",
        "starve %",
        "steps/s",
        "kicks",
        "copies B/in",
        "steps B/tk"
    );
    for (c, runs) in rows {
        let late: Vec<f64> = runs.iter().map(|m| m.late_rate * 100.0).collect();
        let excess: Vec<f64> = runs.iter().map(|m| m.lead_excess).collect();
        let (late_med, _, late_worst, _) = spread(&late);
        let (ex_med, _, ex_worst, _) = spread(&excess);
        let missed: u32 = runs.iter().map(|m| m.windows_missed).sum();
        let windows: u32 = runs.iter().map(|m| m.windows).sum();
        let conv = if runs.iter().any(|m| m.convergence_s.is_some()) {
            format!(
                "{}/{}/{}",
                f(med(runs, |m| m.convergence_s.unwrap_or(f64::NAN)), 1),
                f(med(runs, |m| m.convergence_limit_s.unwrap_or(f64::NAN)), 1),
                f(med(runs, |m| m.step_late_ticks.map_or(f64::NAN, |n| n as f64)), 0)
            )
        } else {
            "-".into()
        };
        let _ = writeln!(
            s,
            "  {:<10} {:>19} {:>9} {:>17} {:>13} {:>11} {:>15} {:>11} {:>6} {:>12} {:>8} {:>7} {:>5} {:>11} {:>12}",
            c.name(),
            format!("{} w{}/{}", f(late_med, 2), f(late_worst, 2), f(med(runs, |m| late_limit(m, cfg)) * 100.0, 2)),
            format!("{missed}/{windows}"),
            format!("{} w{}", f(ex_med, 2), f(ex_worst, 2)),
            format!("{}/{}", f(med(runs, |m| m.lead), 2), f(med(runs, |m| m.lead_oracle), 2)),
            format!("{}/{}", f(med(runs, |m| m.prediction), 1), f(med(runs, |m| m.prediction_min), 1)),
            conv,
            f(med(runs, |m| m.corrections_per_min), 2),
            f(med(runs, |m| m.dilated_fraction) * 100.0, 1),
            format!("{}/{}", f(med(runs, |m| m.interp_delay), 2), f(med(runs, |m| m.interp_oracle), 2)),
            f(med(runs, |m| m.starvation) * 100.0, 2),
            if c.is_tickwire() { f(med(runs, |m| m.step_rate), 1) } else { "-".into() },
            if c.is_tickwire() { runs.iter().map(|m| m.kicks).sum::<usize>().to_string() } else { "-".into() },
            format!("{} {}", f(med(runs, |m| m.copies_per_input), 1), f(med(runs, |m| m.uplink_bytes_per_input), 0)),
            if c.is_tickwire() {
                format!("{} {}", f(med(runs, |m| m.copies_per_step), 1), f(med(runs, |m| m.downlink_bytes_per_step), 0))
            } else {
                "-".into()
            },
        );
    }
    s
}

/// tickwire's goals in a scenario (late ≤ ε, excess ≤ 0.5 tick): median, 90th
/// percentile and worst seed of each, with the worst seed's number.
pub fn goals(runs: &[Metrics], seeds: &[u64]) -> String {
    let late: Vec<f64> = runs.iter().map(|m| m.late_rate * 100.0).collect();
    let excess: Vec<f64> = runs.iter().map(|m| m.lead_excess).collect();
    let (lm, lp, lw, li) = spread(&late);
    let (em, ep, ew, ei) = spread(&excess);
    let over = late.iter().filter(|&&l| l > 1.0).count();
    format!(
        "  tickwire goals over {} seeds: late % median {} p90 {} worst {} (seed {}), {} seeds over 1%; \
         excess tk median {} p90 {} worst {} (seed {})\n",
        runs.len(),
        f(lm, 2),
        f(lp, 2),
        f(lw, 2),
        seeds.get(li).copied().unwrap_or(0),
        over,
        f(em, 2),
        f(ep, 2),
        f(ew, 2),
        seeds.get(ei).copied().unwrap_or(0)
    )
}

/// The hindsight bound of a steady lead in a scenario ([`super::bound`]): median, 90th
/// percentile and worst seed of each figure, with the worst seed's number, and the
/// seeds that miss the goal (late over ε, excess over [`EXCESS_GOAL`]). Each causal
/// rule is shown bare and with the least margin that brings the 90th-percentile seed's
/// late share within ε, and within `also_late` too when given (a share).
pub fn bound(scenario: &Scenario, bounds: &[Bound], seeds: &[u64], cfg: &LabConfig, also_late: Option<f64>) -> String {
    let over = |v: &[f64], goal: f64| v.iter().filter(|&&x| x > goal).count();
    // One figure over the seeds, its seeds over `goal`.
    let line = |get: &dyn Fn(&Bound) -> f64, scale: f64, goal: f64, unit: &str| {
        let v: Vec<f64> = bounds.iter().map(|b| get(b) * scale).collect();
        let (m, p, w, i) = spread(&v);
        format!(
            "median {} p90 {} worst {} (seed {}), {} seeds over {}{unit}",
            f(m, 2),
            f(p, 2),
            f(w, 2),
            seeds.get(i).copied().unwrap_or(0),
            over(&v, goal),
            goal
        )
    };
    let late_goal = cfg.epsilon * 100.0;
    let oracle: Vec<f64> = bounds.iter().map(|b| b.oracle_mean).collect();
    let (om, op, ow, _) = spread(&oracle);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}  {}  (hindsight bound over {} seeds; reference sent every {} ticks)",
        scenario.id,
        scenario.about,
        bounds.len(),
        cfg.at(scenario).k_c
    );
    let _ =
        writeln!(s, "  window oracle tk (input-weighted mean): median {} p90 {} max {}", f(om, 2), f(op, 2), f(ow, 2));
    let (spreads, r) = window_spread(&bounds.iter().map(|b| b.oracles.as_slice()).collect::<Vec<_>>());
    let (sm, sp, _, _) = spread(&spreads);
    let windows = bounds.first().map_or(0, |b| b.oracles.len());
    let _ = writeln!(
        s,
        "  window oracle within a seed: std tk median {} p90 {}; consecutive windows' correlation {} \
         (less each seed's mean; independent windows read about {})",
        f(sm, 2),
        f(sp, 2),
        f(r, 2),
        f(independent_correlation(windows), 2)
    );
    let _ = writeln!(s, "  steady, hindsight: excess tk {}", line(&|b| b.steady.excess, 1.0, EXCESS_GOAL, ""));
    let _ =
        writeln!(s, "  steady at oracle+{EXCESS_GOAL}: late % {}", line(&|b| b.at_goal.late, 100.0, late_goal, "%"));
    type Rule = fn(&Bound) -> &Causal;
    let rules: [(&str, Rule); 2] = [("previous window", |b| &b.previous), ("all past windows", |b| &b.past)];
    for (name, get) in rules {
        let _ = writeln!(
            s,
            "  causal, {name}: late % {}; excess tk {}",
            line(&|b| get(b).score.late, 100.0, late_goal, "%"),
            line(&|b| get(b).score.excess, 1.0, EXCESS_GOAL, "")
        );
        let rules_of_seeds = bounds.iter().map(get).collect::<Vec<_>>();
        for late in std::iter::once(cfg.epsilon).chain(also_late) {
            let m = margin_for(&rules_of_seeds, 0.9, late);
            let _ = writeln!(
                s,
                "    + {} tk (least margin for late <= {}% at the p90 seed): late % {}; excess tk {}",
                f(m, 2),
                // (To 0.01 point: a share given in percent comes back as typed.)
                (late * 1e4).round() / 100.0,
                line(&|b| get(b).late_with(m), 100.0, late_goal, "%"),
                line(&|b| get(b).score.excess + m, 1.0, EXCESS_GOAL, "")
            );
        }
    }
    // The law's rule: one lead for all seeds (its margin over a lead of 0).
    let law: Vec<&Causal> = bounds.iter().map(|b| &b.law).collect();
    for late in std::iter::once(cfg.epsilon).chain(also_late) {
        let m = margin_for(&law, 0.9, late);
        let _ = writeln!(
            s,
            "  one lead for all seeds, {} tk (knows the link's law; least for late <= {}% at the p90 seed): late % {}; excess tk {}",
            f(m, 2),
            (late * 1e4).round() / 100.0,
            line(&|b| b.law.late_with(m), 100.0, late_goal, "%"),
            line(&|b| b.law.score.excess + m, 1.0, EXCESS_GOAL, "")
        );
    }
    s
}

/// The verdict of tickwire against each baseline in a scenario (see
/// [`super::verdict`]), as lines and as verdicts.
pub fn verdicts(rows: &[(Controller, Vec<Metrics>)], cfg: &LabConfig) -> (String, Vec<(Controller, PairVerdict)>) {
    let Some((_, tw)) = rows.iter().find(|r| r.0 == Controller::Tickwire) else { return (String::new(), Vec::new()) };
    let v: Vec<(Controller, PairVerdict)> = rows
        .iter()
        .filter(|r| Controller::BASELINES.contains(&r.0))
        .map(|(c, runs)| (*c, judge(tw, runs, cfg)))
        .collect();
    let mut s = String::new();
    for (c, p) in &v {
        let _ = writeln!(
            s,
            "  tickwire vs {:<9} {} (tickwire {} ε, {} {} ε)",
            c.name(),
            p.label(),
            if p.tw_meets { "meets" } else { "misses" },
            c.name(),
            if p.baseline_meets { "meets" } else { "misses" }
        );
    }
    (s, v)
}

/// The tally of pairs over the run: won, tied, lost.
pub fn tally(v: &[(Controller, PairVerdict)]) -> [usize; 3] {
    let count = |o: Outcome| v.iter().filter(|p| p.1.outcome == o).count();
    [count(Outcome::Won), count(Outcome::Tied), count(Outcome::Lost)]
}

/// Header of the summary CSV: one line per scenario, controller and seed.
pub const SUMMARY_HEADER: &str = "scenario,controller,seed,late_rate,late_floor,late_limit,windows_missed,windows,lead_ticks,lead_oracle_ticks,lead_excess_ticks,prediction_ticks,prediction_min_ticks,convergence_s,convergence_limit_s,step_late_ticks,corrections_per_min,scale_flips_per_min,dilated_fraction,lead_std_ticks,interp_delay_ticks,interp_oracle_ticks,starvation,step_rate,kicks,copies_per_input,uplink_bytes_per_input,copies_per_step,downlink_bytes_per_step";

/// One summary CSV line.
pub fn summary_row(scenario: &Scenario, c: Controller, seed: u64, m: &Metrics, cfg: &LabConfig) -> String {
    let o = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.4}"));
    format!(
        "{},{},{},{:.6},{:.6},{:.6},{},{},{:.4},{:.4},{:.4},{:.4},{:.4},{},{},{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.6},{:.2},{},{:.3},{:.2},{:.3},{:.2}",
        scenario.id,
        c.name(),
        seed,
        m.late_rate,
        m.late_floor,
        late_limit(m, cfg),
        m.windows_missed,
        m.windows,
        m.lead,
        m.lead_oracle,
        m.lead_excess,
        m.prediction,
        m.prediction_min,
        o(m.convergence_s),
        o(m.convergence_limit_s),
        m.step_late_ticks.map_or(String::new(), |n| n.to_string()),
        m.corrections_per_min,
        m.scale_flips_per_min,
        m.dilated_fraction,
        m.lead_std,
        m.interp_delay,
        m.interp_oracle,
        m.starvation,
        m.step_rate,
        m.kicks,
        m.copies_per_input,
        m.uplink_bytes_per_input,
        m.copies_per_step,
        m.downlink_bytes_per_step
    )
}

#[cfg(test)]
mod tests {
    use super::super::oracle::Oracle;
    use super::*;

    /// The margin a causal rule's line gives for `late` (in percent), per rule.
    fn margins(text: &str, late: &str) -> Vec<f64> {
        let tag = format!(" tk (least margin for late <= {late}% at the p90 seed)");
        text.lines()
            .filter_map(|l| l.trim_start().strip_prefix("+ ")?.split_once(&tag).map(|(m, _)| m.parse().unwrap()))
            .collect()
    }

    #[test]
    fn a_second_late_share_adds_a_margin_line_per_rule() {
        let mut sc = super::super::scenario::by_id("S2").expect("S2 exists");
        sc.duration = 100_000_000;
        sc.changes.retain(|c| c.0 < sc.duration);
        let cfg = LabConfig::default();
        let seeds = [5, 6, 7];
        let bounds: Vec<Bound> = seeds
            .iter()
            .map(|&seed| super::super::bound::measure(&Oracle::measure(&sc, &LabConfig { seed, ..cfg })))
            .collect();
        let plain = bound(&sc, &bounds, &seeds, &cfg, None);
        let with = bound(&sc, &bounds, &seeds, &cfg, Some(0.02));
        assert_eq!(margins(&plain, "1").len(), 2, "{plain}");
        assert!(margins(&plain, "2").is_empty(), "{plain}");
        // The epsilon lines are the same with the second share; each rule gets one more,
        // whose margin is no larger (a higher late share needs no more lead).
        assert_eq!(margins(&with, "1"), margins(&plain, "1"), "{with}");
        let (at_eps, at_two) = (margins(&with, "1"), margins(&with, "2"));
        assert_eq!(at_two.len(), 2, "{with}");
        assert!(at_eps.iter().zip(&at_two).all(|(e, t)| t <= e), "{with}");
        assert!(with.starts_with(&plain[..plain.find("  causal").unwrap()]), "the lines above the rules are unchanged");
        // One lead for all seeds: a line per share, the higher share's lead no larger.
        let law = |text: &str| -> Vec<f64> {
            text.lines()
                .filter_map(|l| l.trim_start().strip_prefix("one lead for all seeds, ")?.split_once(" tk (knows"))
                .map(|(m, _)| m.parse().unwrap())
                .collect()
        };
        assert_eq!(law(&plain).len(), 1, "{plain}");
        let both = law(&with);
        assert_eq!((both.len(), both[0]), (2, law(&plain)[0]), "{with}");
        assert!(both[1] <= both[0] && both[0].is_finite(), "{with}");
    }
}
