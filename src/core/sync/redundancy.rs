//! How many copies of each input a client packet carries (rule M1 of ticksync.md).
//!
//! With loss `p` and `r` copies sent one send interval apart, the late rate can fall to
//! about `p^r` only if the lead covers the later copies: `L >= L_jit + (r-1) S_c`.
//! A copy the lead cannot cover is wasted bandwidth. So:
//! - loss above the late-rate target ε: send the copies the loss calls for; their
//!   late arrivals show up in the margins, and the lead loop grows the lead to cover
//!   them (it holds the ε-quantile of all first arrivals);
//! - loss at or below ε: send extra copies only while the first copies' spare margin
//!   already covers them.

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedundancyConfig {
    /// Most copies of one input.
    pub max_copies: u32,
    /// Loss-induced late rate to aim for (a fraction of ε, leaving room for jitter).
    pub residual_loss: f64,
}

impl Default for RedundancyConfig {
    fn default() -> Self {
        RedundancyConfig { max_copies: 4, residual_loss: 0.0025 }
    }
}

/// Copies that loss `p` calls for: the smallest `r` with `p^r <= residual_loss`.
pub fn copies_for_loss(p: f64, cfg: &RedundancyConfig) -> u32 {
    // NaN and non-positive loss both mean "no loss seen".
    if p.is_nan() || p <= cfg.residual_loss {
        return 1;
    }
    if p >= 1.0 {
        return cfg.max_copies.max(1);
    }
    let r = (cfg.residual_loss.ln() / p.ln()).ceil();
    (r as u32).clamp(1, cfg.max_copies.max(1))
}

/// The copies to send now.
/// - `loss`: measured uplink loss fraction;
/// - `late_rate`: the lead loop's ε;
/// - `spare_ticks`: ε-quantile of first-copy margins (how early first copies are);
/// - `send_interval_ticks`: ticks between client packets.
pub fn copies_to_send(loss: f64, late_rate: f64, spare_ticks: f64, send_interval_ticks: u32, cfg: &RedundancyConfig) -> u32 {
    let wanted = copies_for_loss(loss, cfg);
    if loss > late_rate {
        return wanted;
    }
    let covered = 1 + (spare_ticks.max(0.0) / send_interval_ticks.max(1) as f64).floor() as u32;
    wanted.min(covered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_follow_loss() {
        let c = RedundancyConfig::default();
        assert_eq!(copies_for_loss(0.0, &c), 1);
        assert_eq!(copies_for_loss(0.001, &c), 1);
        assert_eq!(copies_for_loss(0.01, &c), 2);
        assert_eq!(copies_for_loss(0.05, &c), 2);
        assert_eq!(copies_for_loss(0.33, &c), 4, "capped");
        assert_eq!(copies_for_loss(1.0, &c), 4);
        assert_eq!(copies_for_loss(f64::NAN, &c), 1);
    }

    #[test]
    fn copies_below_epsilon_need_spare_lead() {
        let c = RedundancyConfig::default();
        // 0.8% loss < 1% target: the second copy only if first copies arrive 2+ ticks early.
        assert_eq!(copies_to_send(0.008, 0.01, 0.5, 2, &c), 1);
        assert_eq!(copies_to_send(0.008, 0.01, 2.1, 2, &c), 2);
        // 5% loss > target: copies are sent and the lead loop will cover them.
        assert_eq!(copies_to_send(0.05, 0.01, 0.0, 2, &c), 2);
    }
}
