//! Whether tickwire beats a baseline in a scenario (issue 3's claim), by one stated
//! rule applied to the lab's table.
//!
//! Lead excess (M2) is measured against the oracle lead for the late-rate target ε, so
//! it only compares like with like between controllers that reach ε. A controller that
//! misses ε holds less lead than that oracle by being late more often; its lower
//! excess is not a saving at the target. So the late-rate target comes first, then the
//! excess:
//!
//! The target counts the ticks the controller could have saved: ticks that ran while
//! the scenario had stopped the client itself (S8's 2 s hitch: 0.7% of the run, every
//! controller alike) had no input in existence and are left out of it. The late
//! rates compared below are the whole ones.
//!
//! - the baseline meets the target (late rate ≤ ε, finite oracle): tickwire must meet
//!   it too and have a strictly lower lead excess;
//! - the baseline misses the target: tickwire must have a strictly lower late rate,
//!   and either meet the target itself, or (missing it as well) also have a strictly
//!   lower excess. If the baseline's oracle is infinite (it loses more than ε of its
//!   inputs for good, so no lead gets it to ε) its excess is undefined and the late
//!   rate alone decides.
//!
//! The verdict says which of these cases decided it, so a reader can tell a win on
//! excess from a win on the target.

use super::metrics::Metrics;
use super::model::LabConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Lower lead excess at an equal (both within ε) or lower late rate.
    Excess,
    /// The baseline misses ε and tickwire meets it; the baseline's excess is lower
    /// (it under-leads) or equal.
    Target,
    /// Both miss ε; lower late rate, and the baseline's excess is undefined.
    LateRate,
    /// Not beaten by the rule.
    NotBeaten,
}

impl Verdict {
    pub fn is_win(self) -> bool {
        self != Verdict::NotBeaten
    }

    pub fn label(self) -> &'static str {
        match self {
            Verdict::Excess => "beats on excess",
            Verdict::Target => "beats on the target",
            Verdict::LateRate => "beats on late rate",
            Verdict::NotBeaten => "NOT beaten",
        }
    }
}

/// Whether a run met the late-rate target: at most ε late, not counting the ticks
/// that ran while the client itself was stopped (no input existed; see
/// [`Metrics::late_frozen`]), with a finite oracle.
pub fn meets_target(m: &Metrics, cfg: &LabConfig) -> bool {
    m.late_rate - m.late_frozen <= cfg.epsilon && m.lead_excess.is_finite()
}

/// The rule in the module docs: tickwire's figures `tw` against a baseline's `b`.
pub fn judge(tw: &Metrics, b: &Metrics, cfg: &LabConfig) -> Verdict {
    let (tw_ok, b_ok) = (meets_target(tw, cfg), meets_target(b, cfg));
    if b_ok {
        return if tw_ok && tw.lead_excess < b.lead_excess { Verdict::Excess } else { Verdict::NotBeaten };
    }
    if tw.late_rate >= b.late_rate {
        return Verdict::NotBeaten;
    }
    if tw.lead_excess < b.lead_excess {
        Verdict::Excess
    } else if tw_ok {
        Verdict::Target
    } else if !b.lead_excess.is_finite() && tw.lead_excess.is_finite() {
        Verdict::LateRate
    } else {
        Verdict::NotBeaten
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(late_pct: f64, excess: f64) -> Metrics {
        Metrics { late_rate: late_pct / 100.0, lead_excess: excess, ..Metrics::default() }
    }

    #[test]
    fn the_target_comes_first_then_the_excess() {
        let cfg = LabConfig::default();
        // Both within ε: only the excess counts, whichever is later.
        assert_eq!(judge(&m(0.9, 0.1), &m(0.0, 0.2), &cfg), Verdict::Excess);
        assert_eq!(judge(&m(0.5, 0.1), &m(0.9, 0.05), &cfg), Verdict::NotBeaten);
        // tickwire misses ε against a baseline that meets it: never a win.
        assert_eq!(judge(&m(1.2, -1.0), &m(0.5, 2.0), &cfg), Verdict::NotBeaten);
        // The baseline under-leads and misses ε; tickwire meets it.
        assert_eq!(judge(&m(0.8, 0.3), &m(5.0, -1.5), &cfg), Verdict::Target);
        assert_eq!(judge(&m(0.8, 0.3), &m(5.0, 1.5), &cfg), Verdict::Excess);
        // Both miss: lower late rate and lower excess, or an undefined baseline excess.
        assert_eq!(judge(&m(1.2, 0.3), &m(1.5, 0.5), &cfg), Verdict::Excess);
        assert_eq!(judge(&m(1.2, 0.3), &m(1.5, -0.5), &cfg), Verdict::NotBeaten);
        assert_eq!(judge(&m(1.2, 0.3), &m(5.0, f64::NAN), &cfg), Verdict::LateRate);
        assert_eq!(judge(&m(1.6, 0.3), &m(1.5, 0.5), &cfg), Verdict::NotBeaten);
        // An infinite tickwire oracle never meets the target.
        assert_eq!(judge(&m(0.5, f64::NAN), &m(0.9, 1.0), &cfg), Verdict::NotBeaten);
        // Ticks run while the client was stopped do not count against the target, but
        // the late rates are still compared whole.
        let frozen = |late_pct: f64, excess: f64| Metrics { late_frozen: 0.007, ..m(late_pct, excess) };
        assert_eq!(judge(&frozen(1.5, 0.1), &frozen(4.2, -0.5), &cfg), Verdict::Target);
        assert_eq!(judge(&frozen(1.8, 0.1), &frozen(4.2, -0.5), &cfg), Verdict::NotBeaten);
        assert_eq!(judge(&frozen(1.5, 0.6), &frozen(1.4, 0.5), &cfg), Verdict::NotBeaten);
        assert_eq!(judge(&frozen(1.5, 0.4), &frozen(1.4, 0.5), &cfg), Verdict::Excess);
    }
}
