//! The impairment models and the per-direction link configuration.
//!
//! Besides sampling, the models expose their analytic figures ([`JitterModel::quantile_us`],
//! [`LossModel::stationary_loss`]) because the scenario oracles (ticksync.md section 3.2)
//! score controllers against the *true* delay and loss distributions, and those should
//! come from the same definitions the simulator samples from.

use crate::rng::Rng;

/// How per-datagram delay varies above the base latency.
///
/// Every model draws an *extra* delay >= 0 that is added to `latency_us`, so `latency_us`
/// is the path's floor and no datagram ever beats it; that floor is what the oracles call
/// `u_min` / `d_min`. Jitter alone never reorders datagrams: see the FIFO rule on
/// [`LinkConditioner`](super::LinkConditioner). Draws are rounded to whole microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JitterModel {
    /// No extra delay.
    None,
    /// Extra delay uniform in [0, max_us] (whole microseconds, both ends included).
    Uniform {
        /// Largest extra delay, in microseconds.
        max_us: u64,
    },
    /// Extra delay |N(0, sigma)|, a folded normal: a one-sided bump whose median is
    /// 0.674 sigma and p99 is 2.576 sigma. Folding (rather than clamping negatives to 0)
    /// avoids a spike of datagrams at exactly the base latency.
    Gaussian {
        /// Standard deviation of the normal before folding, in microseconds.
        sigma_us: f64,
    },
    /// Heavy-tailed extra delay: the classic Pareto(x_m = `scale_us`, alpha = `shape`)
    /// shifted down by `scale_us` so that it starts at 0 (a Lomax / Pareto II law):
    /// `X = scale * (U^(-1/shape) - 1)`, `P(X > x) = (scale / (scale + x))^shape`.
    /// The shift keeps `latency_us` the true minimum. The mean is infinite for shape <= 1
    /// and the variance for shape <= 2. Build it from target quantiles with
    /// [`JitterModel::pareto_with_p99`] or [`JitterModel::pareto_with_p99_p999`].
    Pareto {
        /// The Pareto scale `x_m`, in microseconds.
        scale_us: f64,
        /// The Pareto tail index `alpha`: smaller is heavier.
        shape: f64,
    },
}

impl JitterModel {
    /// A Pareto model with the given tail index whose 99th percentile of extra delay is
    /// `p99_us`. Invalid inputs (shape <= 0, negative p99) give a model that
    /// [`LinkConfig::validate`] rejects.
    pub fn pareto_with_p99(p99_us: f64, shape: f64) -> Self {
        JitterModel::Pareto { scale_us: p99_us / (100f64.powf(1.0 / shape) - 1.0), shape }
    }

    /// A Pareto model whose extra delay has the given p99 and p99.9, as scenario S2 is
    /// written ("p99 = 30 ms, p99.9 = 80 ms" gives shape ~2.7, scale ~6.5 ms).
    ///
    /// For this family `p99.9 / p99` decreases with the shape towards
    /// `ln 1000 / ln 100 = 1.5`, so `None` is returned unless `p999_us > 1.5 * p99_us > 0`
    /// (a thinner tail than that needs another family, e.g. Gaussian).
    pub fn pareto_with_p99_p999(p99_us: f64, p999_us: f64) -> Option<Self> {
        if !(p99_us.is_finite() && p999_us.is_finite() && p99_us > 0.0) {
            return None;
        }
        let target = p999_us / p99_us;
        // In b = 1/shape, ratio(b) = (1000^b - 1) / (100^b - 1) rises from 1.5 (b -> 0)
        // without bound, so bisection on b finds the unique shape.
        let ratio = |b: f64| (1000f64.powf(b) - 1.0) / (100f64.powf(b) - 1.0);
        if target <= 1.5 + 1e-9 {
            return None;
        }
        let (mut lo, mut hi) = (1e-9, 1.0);
        while ratio(hi) < target {
            hi *= 2.0;
            if hi > 100.0 {
                return None;
            }
        }
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if ratio(mid) < target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let b = 0.5 * (lo + hi);
        Some(JitterModel::Pareto { scale_us: p99_us / (100f64.powf(b) - 1.0), shape: 1.0 / b })
    }

    /// The analytic `q`-quantile (`q` clamped to [0, 1]) of the extra delay, in µs, before
    /// rounding and before the FIFO rule. Under dense traffic the FIFO rule makes real
    /// one-way delays somewhat larger than these (a datagram waits behind a slow
    /// predecessor), so this is the path's figure, not a bound on what a receiver sees.
    /// `Uniform` is treated as continuous on [0, max].
    pub fn quantile_us(&self, q: f64) -> f64 {
        let q = q.clamp(0.0, 1.0);
        match *self {
            JitterModel::None => 0.0,
            JitterModel::Uniform { max_us } => q * max_us as f64,
            JitterModel::Gaussian { sigma_us } => sigma_us * inverse_normal_cdf(0.5 + 0.5 * q),
            JitterModel::Pareto { scale_us, shape } => scale_us * ((1.0 - q).powf(-1.0 / shape) - 1.0),
        }
    }

    /// One draw of extra delay. Never panics: out-of-range parameters saturate (a NaN
    /// draw becomes 0, an infinite one `u64::MAX`).
    pub(super) fn sample_us(&self, rng: &mut Rng) -> u64 {
        match *self {
            JitterModel::None => 0,
            JitterModel::Uniform { max_us } => rng.below(max_us.saturating_add(1)),
            JitterModel::Gaussian { sigma_us } => to_us((rng.normal() * sigma_us).abs()),
            JitterModel::Pareto { scale_us, shape } => {
                let u = 1.0 - rng.next_f64(); // (0, 1], so the power is finite for shape > 0
                to_us(scale_us * (u.powf(-1.0 / shape) - 1.0))
            }
        }
    }
}

fn to_us(x: f64) -> u64 {
    if x > 0.0 { x.round() as u64 } else { 0 } // `as` saturates; NaN fails the test
}

/// Inverse of the standard normal CDF by Acklam's rational approximation (relative error
/// about 1e-9), enough for quantile oracles; std has no erf to refine with.
fn inverse_normal_cdf(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239e0,
    ];
    const B: [f64; 5] =
        [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838e0,
        -2.549732539343734e0,
        4.374664141464968e0,
        2.938163982698783e0,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996e0, 3.754408661907416e0];
    const P_LOW: f64 = 0.02425;
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < P_LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - P_LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Which datagrams are dropped on the path (after the bottleneck queue, if any).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossModel {
    /// No loss.
    None,
    /// Each datagram is lost independently with probability `p`.
    Bernoulli {
        /// Loss probability per datagram.
        p: f64,
    },
    /// Two-state Markov chain: good and bad states with their own loss probabilities.
    /// The chain steps once per datagram offered to the path (a transition draw, then a
    /// loss draw in the new state), so bursts are counted in datagrams, not in time,
    /// which is how scenario S3 states them ("mean burst length 3"). It starts in the
    /// good state.
    GilbertElliott {
        /// Per-datagram probability of moving from the good to the bad state.
        p_good_to_bad: f64,
        /// Per-datagram probability of moving from the bad to the good state.
        p_bad_to_good: f64,
        /// Loss probability in the good state.
        loss_in_good: f64,
        /// Loss probability in the bad state.
        loss_in_bad: f64,
    },
}

impl LossModel {
    /// Bursty loss with the given long-run loss rate and mean burst length (in
    /// datagrams): a Gilbert-Elliott chain that loses everything in the bad state and
    /// nothing in the good one, so bursts are exactly the bad-state sojourns:
    /// `p_bad_to_good = 1 / mean_burst_len` and, from the stationary loss
    /// `p_gb / (p_gb + p_bg) = mean_loss`, `p_good_to_bad = mean_loss * p_bg / (1 - mean_loss)`.
    ///
    /// Feasible when `mean_burst_len >= 1` and `mean_loss <= mean_burst_len / (1 + mean_burst_len)`
    /// (otherwise a good-state sojourn would have to be shorter than one datagram). Inputs
    /// outside that give parameters that [`LinkConfig::validate`] rejects.
    pub fn bursty(mean_loss: f64, mean_burst_len: f64) -> Self {
        let p_bad_to_good = 1.0 / mean_burst_len;
        let p_good_to_bad = mean_loss * p_bad_to_good / (1.0 - mean_loss);
        LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_in_good: 0.0, loss_in_bad: 1.0 }
    }

    /// The long-run fraction of datagrams lost, for the oracles. A Gilbert-Elliott chain
    /// that can never leave the good state reports `loss_in_good`.
    pub fn stationary_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_in_good, loss_in_bad } => {
                let total = p_good_to_bad + p_bad_to_good;
                let bad = if total > 0.0 { p_good_to_bad / total } else { 0.0 };
                (1.0 - bad) * loss_in_good + bad * loss_in_bad
            }
        }
    }
}

/// One direction of a simulated link. See [`LinkConditioner`](super::LinkConditioner) for
/// the order in which the impairments apply.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkConfig {
    /// Fixed one-way delay added to every datagram (the path's floor).
    pub latency_us: u64,
    /// Extra per-datagram delay above `latency_us`.
    pub jitter: JitterModel,
    /// Which datagrams are dropped.
    pub loss: LossModel,
    /// Probability that a delivered datagram arrives twice.
    pub duplicate: f64,
    /// Probability that a datagram is held back by `reorder_delay_us`, letting later ones overtake it.
    pub reorder: f64,
    /// How long a datagram picked by `reorder` is held back, in microseconds.
    pub reorder_delay_us: u64,
    /// Bottleneck rate; 0 = unlimited.
    pub bandwidth_bytes_per_sec: u64,
    /// Bottleneck buffer size; 0 = [`DEFAULT_QUEUE_LIMIT_BYTES`]. Unused without a rate.
    pub queue_limit_bytes: usize,
}

/// The bottleneck buffer used when a rate is set but `queue_limit_bytes` is 0: 64 KiB,
/// roughly a home router's per-flow share. Unbounded would hide overload as ever-growing
/// delay instead of the drops a real path shows.
pub const DEFAULT_QUEUE_LIMIT_BYTES: usize = 64 * 1024;

impl LinkConfig {
    /// A link with no delay, loss, duplication, reordering or rate limit.
    pub fn perfect() -> Self {
        LinkConfig {
            latency_us: 0,
            jitter: JitterModel::None,
            loss: LossModel::None,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay_us: 0,
            bandwidth_bytes_per_sec: 0,
            queue_limit_bytes: 0,
        }
    }

    /// Checks every field; the error names the first bad field and its value.
    ///
    /// The conditioner itself never panics on a bad config (it saturates), so this is the
    /// gate for configs arriving from outside, e.g. through the C ABI.
    pub fn validate(&self) -> Result<(), String> {
        fn prob(field: &str, p: f64) -> Result<(), String> {
            if (0.0..=1.0).contains(&p) {
                Ok(())
            } else {
                Err(format!("LinkConfig.{field} must be a probability in [0, 1], got {p}"))
            }
        }
        fn non_negative(field: &str, x: f64) -> Result<(), String> {
            if x.is_finite() && x >= 0.0 {
                Ok(())
            } else {
                Err(format!("LinkConfig.{field} must be finite and >= 0, got {x}"))
            }
        }
        match self.jitter {
            JitterModel::None | JitterModel::Uniform { .. } => {}
            JitterModel::Gaussian { sigma_us } => non_negative("jitter.sigma_us", sigma_us)?,
            JitterModel::Pareto { scale_us, shape } => {
                non_negative("jitter.scale_us", scale_us)?;
                if !(shape.is_finite() && shape > 0.0) {
                    return Err(format!("LinkConfig.jitter.shape must be finite and > 0, got {shape}"));
                }
            }
        }
        match self.loss {
            LossModel::None => {}
            LossModel::Bernoulli { p } => prob("loss.p", p)?,
            LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_in_good, loss_in_bad } => {
                prob("loss.p_good_to_bad", p_good_to_bad)?;
                prob("loss.p_bad_to_good", p_bad_to_good)?;
                prob("loss.loss_in_good", loss_in_good)?;
                prob("loss.loss_in_bad", loss_in_bad)?;
            }
        }
        prob("duplicate", self.duplicate)?;
        prob("reorder", self.reorder)?;
        if self.reorder > 0.0 && self.reorder_delay_us == 0 {
            return Err(
                "LinkConfig.reorder_delay_us must be > 0 when reorder > 0 (a zero hold-back reorders nothing)".into()
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-12)
    }

    #[test]
    fn inverse_normal_matches_tables() {
        // Table values of the standard normal quantile, both tails and the centre.
        for (p, z) in
            [(0.5, 0.0), (0.75, 0.6744897502), (0.975, 1.9599639845), (0.995, 2.5758293035), (0.9995, 3.2905267315)]
        {
            assert!((inverse_normal_cdf(p) - z).abs() < 1e-8, "p={p}: {}", inverse_normal_cdf(p));
            assert!((inverse_normal_cdf(1.0 - p) + z).abs() < 1e-8, "p={}", 1.0 - p);
        }
        assert!((inverse_normal_cdf(0.01) + 2.3263478740).abs() < 1e-8);
    }

    #[test]
    fn analytic_quantiles() {
        let g = JitterModel::Gaussian { sigma_us: 5000.0 };
        assert!(close(g.quantile_us(0.5), 0.6744897502 * 5000.0, 1e-8));
        assert!(close(g.quantile_us(0.99), 2.5758293035 * 5000.0, 1e-8));
        assert_eq!(JitterModel::Uniform { max_us: 20_000 }.quantile_us(0.25), 5000.0);
        assert_eq!(JitterModel::None.quantile_us(0.99), 0.0);
        let p = JitterModel::pareto_with_p99(30_000.0, 2.0);
        assert!(close(p.quantile_us(0.99), 30_000.0, 1e-12));
        assert_eq!(p.quantile_us(0.0), 0.0);
    }

    #[test]
    fn pareto_fit_to_two_quantiles() {
        let m = JitterModel::pareto_with_p99_p999(30_000.0, 80_000.0).expect("S2 is feasible");
        assert!(close(m.quantile_us(0.99), 30_000.0, 1e-9), "{m:?}");
        assert!(close(m.quantile_us(0.999), 80_000.0, 1e-9), "{m:?}");
        let JitterModel::Pareto { shape, .. } = m else { unreachable!() };
        assert!(shape > 2.0 && shape < 3.5, "shape {shape}");
        // The family cannot be thinner-tailed than p99.9 = 1.5 p99.
        assert_eq!(JitterModel::pareto_with_p99_p999(30_000.0, 44_000.0), None);
        assert_eq!(JitterModel::pareto_with_p99_p999(0.0, 1.0), None);
        assert_eq!(JitterModel::pareto_with_p99_p999(f64::NAN, 1.0), None);
    }

    #[test]
    fn bursty_derives_requested_chain() {
        let LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_in_good, loss_in_bad } =
            LossModel::bursty(0.05, 3.0)
        else {
            unreachable!()
        };
        assert!(close(p_bad_to_good, 1.0 / 3.0, 1e-12));
        assert!(close(p_good_to_bad / (p_good_to_bad + p_bad_to_good), 0.05, 1e-12));
        assert_eq!((loss_in_good, loss_in_bad), (0.0, 1.0));
        assert!(close(LossModel::bursty(0.05, 3.0).stationary_loss(), 0.05, 1e-12));
        assert_eq!(LossModel::bursty(0.0, 3.0).stationary_loss(), 0.0);
    }

    #[test]
    fn validate_accepts_sane_configs() {
        assert_eq!(LinkConfig::perfect().validate(), Ok(()));
        let cfg = LinkConfig {
            latency_us: 50_000,
            jitter: JitterModel::pareto_with_p99(30_000.0, 2.5),
            loss: LossModel::bursty(0.05, 3.0),
            duplicate: 0.01,
            reorder: 0.02,
            reorder_delay_us: 10_000,
            bandwidth_bytes_per_sec: 1_000_000,
            queue_limit_bytes: 0,
        };
        assert_eq!(cfg.validate(), Ok(()));
    }

    #[test]
    fn validate_names_the_bad_field() {
        let base = LinkConfig::perfect();
        let cases: Vec<(LinkConfig, &str)> = vec![
            (LinkConfig { loss: LossModel::Bernoulli { p: f64::NAN }, ..base }, "loss.p "),
            (LinkConfig { loss: LossModel::Bernoulli { p: 1.5 }, ..base }, "loss.p "),
            (LinkConfig { loss: LossModel::Bernoulli { p: -0.1 }, ..base }, "loss.p "),
            (LinkConfig { jitter: JitterModel::Gaussian { sigma_us: -1.0 }, ..base }, "jitter.sigma_us"),
            (LinkConfig { jitter: JitterModel::Gaussian { sigma_us: f64::INFINITY }, ..base }, "jitter.sigma_us"),
            (LinkConfig { jitter: JitterModel::Pareto { scale_us: 1000.0, shape: 0.0 }, ..base }, "jitter.shape"),
            (LinkConfig { jitter: JitterModel::Pareto { scale_us: f64::NAN, shape: 2.0 }, ..base }, "jitter.scale_us"),
            (LinkConfig { jitter: JitterModel::pareto_with_p99(30_000.0, -1.0), ..base }, "jitter."),
            (LinkConfig { duplicate: 1.01, ..base }, "duplicate"),
            (LinkConfig { reorder: f64::NAN, ..base }, "reorder"),
            (LinkConfig { reorder: 0.1, reorder_delay_us: 0, ..base }, "reorder_delay_us"),
            // Infeasible bursty requests surface as an out-of-range chain parameter.
            (LinkConfig { loss: LossModel::bursty(0.9, 2.0), ..base }, "loss.p_good_to_bad"),
            (LinkConfig { loss: LossModel::bursty(0.1, 0.5), ..base }, "loss.p_bad_to_good"),
            (LinkConfig { loss: LossModel::bursty(1.0, 3.0), ..base }, "loss.p_good_to_bad"),
        ];
        for (cfg, field) in cases {
            let err = cfg.validate().expect_err(&format!("{cfg:?} should be rejected"));
            assert!(err.contains(field), "{err:?} should name {field:?}");
        }
    }
}
