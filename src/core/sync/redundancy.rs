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
        RedundancyConfig { max_copies: 6, residual_loss: 0.0025 }
    }
}

/// Copies that loss calls for: the smallest `r` with `p · p_burst^(r-1) <= residual_loss`,
/// where `p` is the chance a copy is lost and `p_burst` the chance the next copy is lost
/// too. With independent loss `p_burst = p` and this is `p^r`; with bursts `p_burst` is
/// higher and more copies are needed for the same residual.
pub fn copies_for_loss(p: f64, p_burst: f64, cfg: &RedundancyConfig) -> u32 {
    let max = cfg.max_copies.max(1);
    // NaN and non-positive loss both mean "no loss seen".
    if p.is_nan() || p <= cfg.residual_loss {
        return 1;
    }
    let pb = if p_burst.is_nan() { p } else { p_burst.clamp(p.min(1.0), 1.0) };
    let mut residual = p;
    let mut r = 1;
    while residual > cfg.residual_loss && r < max {
        residual *= pb;
        r += 1;
    }
    r
}

/// The copies to send now.
/// - `loss`, `loss_burst`: measured uplink loss and conditional loss of the next copy;
/// - `late_rate`: the lead loop's ε;
/// - `spare_ticks`: ε-quantile of first-copy margins (how early first copies are);
/// - `send_interval_ticks`: ticks between client packets.
///
/// Loss above ε/2 would take most of the late budget by itself, so copies are sent and
/// the lead loop covers them; below that, extra copies go only while first copies'
/// spare margin already covers them.
pub fn copies_to_send(loss: f64, loss_burst: f64, late_rate: f64, spare_ticks: f64, send_interval_ticks: u32, cfg: &RedundancyConfig) -> u32 {
    let wanted = copies_for_loss(loss, loss_burst, cfg);
    if loss > late_rate / 2.0 {
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
        assert_eq!(copies_for_loss(0.0, 0.0, &c), 1);
        assert_eq!(copies_for_loss(0.001, 0.001, &c), 1);
        assert_eq!(copies_for_loss(0.01, 0.01, &c), 2);
        assert_eq!(copies_for_loss(0.05, 0.05, &c), 3, "0.05^2 = 0.0025 is not below the residual");
        assert_eq!(copies_for_loss(0.04, 0.04, &c), 2);
        assert_eq!(copies_for_loss(0.33, 0.33, &c), 6, "capped");
        assert_eq!(copies_for_loss(1.0, 1.0, &c), 6);
        assert_eq!(copies_for_loss(f64::NAN, f64::NAN, &c), 1);
        // Bursts: 5% loss where the next copy is lost 2 times in 3 needs more copies.
        assert_eq!(copies_for_loss(0.05, 0.67, &c), 6);
        let wide = RedundancyConfig { max_copies: 10, ..c };
        assert_eq!(copies_for_loss(0.05, 0.5, &wide), 6);
    }

    #[test]
    fn copies_below_epsilon_need_spare_lead() {
        let c = RedundancyConfig::default();
        // 0.4% loss < ε/2: the second copy only if first copies arrive 2+ ticks early.
        assert_eq!(copies_to_send(0.004, 0.004, 0.01, 0.5, 2, &c), 1);
        assert_eq!(copies_to_send(0.004, 0.004, 0.01, 2.1, 2, &c), 2);
        // 1% and 5% loss: copies are sent and the lead loop will cover them.
        assert_eq!(copies_to_send(0.01, 0.01, 0.01, 0.0, 2, &c), 2);
        assert_eq!(copies_to_send(0.04, 0.04, 0.01, 0.0, 2, &c), 2);
    }
}
