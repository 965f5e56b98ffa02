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
//!
//! [`RedundancyPlanner`] makes that decision over time for a client session: what loss
//! and burstiness to believe, and when copies may drop. (The inputs still lost in every
//! copy are measured by the lead loop from the server's substitution count.)

#[derive(Debug, Clone, Copy, PartialEq)]
/// How many copies of each input to send.
pub struct RedundancyConfig {
    /// Most copies of one input.
    pub max_copies: u32,
    /// Share of inputs lost in every copy to aim for: a tenth of the default ε. They
    /// are late for good, they take the lead loop's budget from jitter, and on bursty
    /// links (where they come in runs) 0.25% left a third of ε to the rest. Copies cost
    /// only bytes: an input is a few of them.
    pub residual_loss: f64,
}

impl Default for RedundancyConfig {
    fn default() -> Self {
        RedundancyConfig { max_copies: 6, residual_loss: 0.001 }
    }
}

/// Copies that loss calls for: the smallest `r` with `p · p_burst^(r-1) <= residual_loss`,
/// where `p` is the chance a copy is lost and `p_burst` the chance the next copy is lost
/// too. With independent loss `p_burst = p` and this is `p^r`; with bursts `p_burst` is
/// higher and more copies are needed for the same residual.
pub(crate) fn copies_for_loss(p: f64, p_burst: f64, cfg: &RedundancyConfig) -> u32 {
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
pub(crate) fn copies_to_send(
    loss: f64,
    loss_burst: f64,
    late_rate: f64,
    spare_ticks: f64,
    send_interval_ticks: u32,
    cfg: &RedundancyConfig,
) -> u32 {
    let wanted = copies_for_loss(loss, loss_burst, cfg);
    if loss > late_rate / 2.0 {
        return wanted;
    }
    let covered = 1 + (spare_ticks.max(0.0) / send_interval_ticks.max(1) as f64).floor() as u32;
    wanted.min(covered)
}

/// How long a lower copy count must be wanted before copies drop (µs).
const HOLD_US: u64 = 10_000_000;
/// Time constant of the long-run loss average (µs): at 1% loss a window of a few
/// hundred packets often shows none, but a minute of them does.
const LONG_LOSS_US: f64 = 60_000_000.0;
/// Weight of one report in the burst estimate.
const BURST_WEIGHT: f64 = 1.0 / 128.0;
/// Chance that the next copy is lost too, assumed while unmeasured: loss is often
/// bursty, and it takes three copies to see whether it is.
const BURST_PRIOR: f64 = 0.5;

/// The client's redundancy decision over time: copies per input from the uplink's
/// loss and burstiness.
///
/// Loss is the larger of the transport's recent figure and its one-minute average (a
/// bursty 1% often reads zero over a few hundred packets); burstiness is measured from
/// which copy of each input arrived first. Copies rise at once and fall only after the
/// lower figure has held for a while: one copy too few loses inputs for good.
#[derive(Debug, Clone)]
pub(crate) struct RedundancyPlanner {
    cfg: RedundancyConfig,
    copies: u32,
    hold_until: u64,
    window_loss: f64,
    long_loss: f64,
    last_update: Option<u64>,
    burst: Option<f64>,
}

impl RedundancyPlanner {
    pub(crate) fn new(cfg: RedundancyConfig, initial_copies: u32) -> Self {
        RedundancyPlanner {
            cfg,
            copies: initial_copies.clamp(1, cfg.max_copies.max(1)),
            hold_until: 0,
            window_loss: 0.0,
            long_loss: 0.0,
            last_update: None,
            burst: None,
        }
    }

    /// The server's report that copy `first_copy` of an input was the first to arrive
    /// (copy 0 is the original). With three or more copies in flight, an input whose
    /// first copy was lost shows whether the next one was lost too.
    pub(crate) fn on_first_copy(&mut self, first_copy: u8) {
        if first_copy >= 1 && self.copies > 2 {
            let b = self.burst.get_or_insert(BURST_PRIOR);
            *b += ((first_copy >= 2) as u8 as f64 - *b) * BURST_WEIGHT;
        }
    }

    /// The loss figure that steers the copies.
    pub(crate) fn loss(&self) -> f64 {
        self.window_loss.max(self.long_loss)
    }

    /// Chance the next copy is lost when one was (the prior until measured; the loss
    /// itself when there is too little loss to be worth measuring).
    pub(crate) fn burst(&self) -> f64 {
        self.burst.unwrap_or(BURST_PRIOR).max(self.loss())
    }

    /// Takes the transport's recent uplink loss at local time `now` and returns the
    /// copies to send. `spare_ticks`, `late_rate` and `send_interval_ticks` as for
    /// [`copies_to_send`].
    pub(crate) fn update(
        &mut self,
        now: u64,
        window_loss: f64,
        spare_ticks: f64,
        late_rate: f64,
        send_interval_ticks: u32,
    ) -> u32 {
        let window_loss = if window_loss.is_finite() { window_loss.clamp(0.0, 1.0) } else { 0.0 };
        // The average starts at the first figure, then follows it over a minute.
        let weight = self.last_update.map_or(1.0, |t| (now.saturating_sub(t) as f64 / LONG_LOSS_US).min(1.0));
        self.last_update = Some(now);
        self.window_loss = window_loss;
        self.long_loss += (window_loss - self.long_loss) * weight;
        let wanted = copies_to_send(self.loss(), self.burst(), late_rate, spare_ticks, send_interval_ticks, &self.cfg);
        if wanted >= self.copies {
            self.copies = wanted;
            self.hold_until = now + HOLD_US;
        } else if now >= self.hold_until {
            self.copies = wanted;
        }
        self.copies
    }

    pub(crate) fn copies(&self) -> u32 {
        self.copies
    }
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
        assert_eq!(copies_for_loss(0.04, 0.04, &c), 3, "0.0016 is not either");
        assert_eq!(copies_for_loss(0.03, 0.03, &c), 2);
        assert_eq!(copies_for_loss(0.33, 0.33, &c), 6, "capped");
        assert_eq!(copies_for_loss(1.0, 1.0, &c), 6);
        assert_eq!(copies_for_loss(f64::NAN, f64::NAN, &c), 1);
        // Bursts: 5% loss where the next copy is lost 2 times in 3 needs more copies.
        assert_eq!(copies_for_loss(0.05, 0.67, &c), 6);
        let wide = RedundancyConfig { max_copies: 10, ..c };
        assert_eq!(copies_for_loss(0.05, 0.5, &wide), 7, "0.05 * 0.5^6 = 0.00078");
    }

    #[test]
    fn planner_remembers_sparse_bursty_loss_and_measures_bursts() {
        let c = RedundancyConfig::default();
        let mut p = RedundancyPlanner::new(c, 2);
        // A minute at 1% windowed loss, then windows that happen to show none: the
        // one-minute memory keeps the copies up.
        for t in 0..600u64 {
            p.update(t * 100_000, 0.01, 0.0, 0.01, 2);
        }
        let up = p.copies();
        assert!(up >= 3, "bursts unmeasured: assumed bursty, {up} copies");
        for t in 600..700u64 {
            p.update(t * 100_000, 0.0, 0.0, 0.01, 2);
        }
        assert!(p.loss() > 0.007, "loss memory {}", p.loss());
        assert_eq!(p.copies(), up);
        // Reports show independent loss (copy 1 arrives whenever copy 0 was lost):
        // fewer copies are needed, after the hold.
        for _ in 0..2000 {
            p.on_first_copy(1);
        }
        assert!(p.burst() < 0.02, "burst {}", p.burst());
        for t in 700..900u64 {
            p.update(t * 100_000, 0.01, 0.0, 0.01, 2);
        }
        assert_eq!(p.copies(), 2);
        // Bursty loss: copy 1 lost too two times in three.
        for k in 0..3000 {
            p.on_first_copy(if k % 3 == 0 { 1 } else { 2 });
            p.update(90_000_000 + k * 10_000, 0.05, 0.0, 0.01, 2);
        }
        assert_eq!(p.copies(), c.max_copies);
    }

    #[test]
    fn copies_below_epsilon_need_spare_lead() {
        let c = RedundancyConfig::default();
        // 0.4% loss < ε/2: the second copy only if first copies arrive 2+ ticks early.
        assert_eq!(copies_to_send(0.004, 0.004, 0.01, 0.5, 2, &c), 1);
        assert_eq!(copies_to_send(0.004, 0.004, 0.01, 2.1, 2, &c), 2);
        // 1% and 5% loss: copies are sent and the lead loop will cover them.
        assert_eq!(copies_to_send(0.01, 0.01, 0.01, 0.0, 2, &c), 2);
        assert_eq!(copies_to_send(0.03, 0.03, 0.01, 0.0, 2, &c), 2);
    }
}
