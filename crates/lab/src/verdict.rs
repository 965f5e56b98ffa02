//! Whether tickwire beats a baseline in a scenario, over K seeds,
//! by one stated rule.
//!
//! Each seed gives both controllers the same link realisation and the same oracle, so
//! the seeds pair them: the rule reads the per-seed differences tickwire − baseline
//! and their 95% t-interval ([`super::stats::t_interval`]; the seeds are independent
//! draws of the scenario, and the interval is that of the mean difference). A pair is
//! won when the interval lies wholly on tickwire's side, lost when it lies wholly on
//! the baseline's, and tied otherwise: a difference smaller than the seed-to-seed
//! noise decides nothing.
//!
//! Lead excess (M2) only compares like with like between controllers that reach the
//! late-rate target ε: one that misses it holds less lead by being late more often. A
//! controller meets ε when its late rate averaged over the seeds is at most ε. So:
//!
//! - both meet ε: the excess decides (lower is better);
//! - either misses ε: the late rate decides (lower is better). tickwire cannot win
//!   on excess while it misses ε, and a baseline that misses ε is not beaten by
//!   tickwire missing it too unless tickwire is significantly less late.

use super::metrics::Metrics;
use super::model::LabConfig;
use super::stats::{Interval, mean, t_interval};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Won,
    Tied,
    Lost,
}

/// Which figure decided a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// Lead excess, ticks (both met ε).
    Excess,
    /// Late rate, a fraction (one or both missed ε).
    LateRate,
}

/// The verdict of one pair over the seeds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairVerdict {
    pub outcome: Outcome,
    pub by: Decided,
    /// The deciding difference tickwire − baseline: mean and 95% interval.
    pub diff: Interval,
    pub tw_meets: bool,
    pub baseline_meets: bool,
}

impl PairVerdict {
    /// "won on excess by 0.41 [0.37, 0.45] tk", "lost on late rate by 0.52 [...] %".
    pub fn label(&self) -> String {
        let (what, unit, k) = match self.by {
            Decided::Excess => ("excess", "tk", 1.0),
            Decided::LateRate => ("late rate", "%", 100.0),
        };
        let word = match self.outcome {
            Outcome::Won => "won",
            Outcome::Tied => "tied",
            Outcome::Lost => "lost",
        };
        let d = self.diff;
        format!("{word} on {what}: {:+.2} [{:+.2}, {:+.2}] {unit}", d.mean * k, d.lo * k, d.hi * k)
    }
}

/// Whether a controller met the late-rate target over the seeds: mean late rate ≤ ε.
pub fn meets_target(runs: &[Metrics], cfg: &LabConfig) -> bool {
    mean(runs.iter().map(|m| m.late_rate)) <= cfg.epsilon
}

/// The rule in the module docs: tickwire's runs `tw` against a baseline's `b`, seed by
/// seed (the same seeds, in the same order).
pub fn judge(tw: &[Metrics], b: &[Metrics], cfg: &LabConfig) -> PairVerdict {
    assert_eq!(tw.len(), b.len(), "paired seeds");
    let (tw_meets, baseline_meets) = (meets_target(tw, cfg), meets_target(b, cfg));
    let (by, d): (Decided, Vec<f64>) = if tw_meets && baseline_meets {
        (Decided::Excess, tw.iter().zip(b).map(|(x, y)| x.lead_excess - y.lead_excess).collect())
    } else {
        (Decided::LateRate, tw.iter().zip(b).map(|(x, y)| x.late_rate - y.late_rate).collect())
    };
    let diff = t_interval(&d);
    let outcome = if diff.hi < 0.0 {
        Outcome::Won
    } else if diff.lo > 0.0 {
        Outcome::Lost
    } else {
        Outcome::Tied
    };
    PairVerdict { outcome, by, diff, tw_meets, baseline_meets }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs with late rates (percent) and excesses: one per seed.
    fn runs(late_pct: &[f64], excess: &[f64]) -> Vec<Metrics> {
        late_pct
            .iter()
            .zip(excess)
            .map(|(&l, &e)| Metrics { late_rate: l / 100.0, lead_excess: e, ..Metrics::default() })
            .collect()
    }

    #[test]
    fn both_within_epsilon_the_excess_interval_decides() {
        let cfg = LabConfig::default();
        let tw = runs(&[0.5, 0.6, 0.4, 0.5], &[0.1, 0.2, 0.1, 0.15]);
        let b = runs(&[0.9, 0.8, 0.7, 0.9], &[0.5, 0.6, 0.5, 0.55]);
        let v = judge(&tw, &b, &cfg);
        assert_eq!((v.outcome, v.by), (Outcome::Won, Decided::Excess));
        assert_eq!(judge(&b, &tw, &cfg).outcome, Outcome::Lost);
        // A lower mean inside the noise is a tie.
        let noisy = runs(&[0.5; 4], &[0.0, 1.0, 0.2, 0.9]);
        let close = runs(&[0.5; 4], &[0.5, 0.6, 0.4, 0.55]);
        assert_eq!(judge(&noisy, &close, &cfg).outcome, Outcome::Tied);
    }

    #[test]
    fn missing_epsilon_never_wins_on_excess() {
        let cfg = LabConfig::default();
        // tickwire misses ε with far less lead: the late rate decides, and it is worse.
        let tw = runs(&[1.5, 1.6, 1.4, 1.5], &[-1.0, -1.1, -0.9, -1.0]);
        let b = runs(&[0.5, 0.6, 0.4, 0.5], &[2.0, 2.1, 1.9, 2.0]);
        let v = judge(&tw, &b, &cfg);
        assert_eq!((v.outcome, v.by), (Outcome::Lost, Decided::LateRate));
        assert!(!v.tw_meets && v.baseline_meets);
        // Both miss: the less late one wins, whatever the excess.
        let worse = runs(&[5.0, 5.5, 4.5, 5.0], &[-3.0; 4]);
        assert_eq!(judge(&tw, &worse, &cfg).outcome, Outcome::Won);
    }
}
