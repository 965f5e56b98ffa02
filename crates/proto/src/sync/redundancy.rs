//! How many copies of each input (or step) a tick stream sends (rule M1 of ticksync.md).
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
//! Loss comes in bursts, and copies go in packets in a row, so a burst takes several
//! copies of one input together: the copies needed follow the loss process, not just
//! its rate. Each link's losses are fitted with a two-state (Gilbert-Elliott) process
//! from the transport's acks ([`LossCounts`]): its loss rate `p` and the chance `b` that a
//! packet is lost when the one before it was. All `r` copies are then lost with chance
//! `p · b^(r−1)`: at 5% loss in bursts of 3 (`b` = 2/3) that takes 11 copies to reach
//! 0.1%, where independent loss takes 3. Copies beyond [`RedundancyConfig::max_copies`]
//! (up to [`MAX_COPIES`]) go only while they fit the link's byte budget: inputs are a
//! few bytes, and 11 copies of an 8-byte input still fit one datagram.
//!
//! [`RedundancyPlanner`] makes that decision over time for one link: what loss and
//! burstiness to believe, and when copies may drop. The relay client plans its inputs'
//! copies with one, and the relay server one per client for its steps.

use crate::transport::LossCounts;

/// The most copies of one tick a stream sends, whatever the budget.
pub const MAX_COPIES: u32 = 16;

#[derive(Debug, Clone, Copy, PartialEq)]
/// How many copies of each input (or step) to send.
pub struct RedundancyConfig {
    /// Most copies of one tick whatever its size (at least 1; at most [`MAX_COPIES`]).
    pub max_copies: u32,
    /// Share of inputs lost in every copy to aim for: a tenth of the default ε. They
    /// are late for good, they take the lead loop's budget from jitter, and on bursty
    /// links (where they come in runs) 0.25% left a third of ε to the rest. Copies cost
    /// only bytes: an input is a few of them.
    pub residual_loss: f64,
    /// Bytes a second that the copies beyond `max_copies` (up to [`MAX_COPIES`]) may
    /// take on the link, counted as one copy of the stream's ticks at their measured
    /// size (0: none beyond `max_copies`). The default, 4,096, lets 4-byte inputs at
    /// 60 Hz (300 bytes a second a copy, with their length bytes) go up to 16 copies
    /// and 8-byte ones 13, and adds none to a 64-byte stream.
    pub extra_copy_bytes_per_sec: u32,
    /// The chance that a packet is lost when the one before it was, assumed until the
    /// link's own losses say otherwise (0..=1; the fit never reads less than the loss
    /// rate, so 0 assumes independent loss). Loss is often bursty, and at 1% a link
    /// shows a burst every ten seconds or so: a client's inputs, which cost a few bytes
    /// a copy, assume bursts (0.5). A server's steps to each client cost it bandwidth,
    /// and assume independence until measured. (A plain number, not an option: an
    /// absent one left uninitialised bytes that valgrind saw the optimised code read.)
    pub burst_prior: f64,
}

impl Default for RedundancyConfig {
    fn default() -> Self {
        RedundancyConfig { max_copies: 6, residual_loss: 0.001, extra_copy_bytes_per_sec: 4096, burst_prior: 0.5 }
    }
}

impl RedundancyConfig {
    /// The most copies on a link where one copy of the stream takes `copy_bytes_per_sec`.
    pub(crate) fn copy_cap(&self, copy_bytes_per_sec: f64) -> u32 {
        let base = self.max_copies.clamp(1, MAX_COPIES);
        if copy_bytes_per_sec.is_nan() || copy_bytes_per_sec <= 0.0 {
            return base;
        }
        let extra = (f64::from(self.extra_copy_bytes_per_sec) / copy_bytes_per_sec).floor();
        (base as f64 + extra).min(MAX_COPIES as f64) as u32
    }
}

/// Copies that loss calls for: the smallest `r` with `p · p_burst^(r-1) <= residual_loss`,
/// at most `cap`, where `p` is the chance a copy is lost and `p_burst` the chance the
/// next copy is lost too. With independent loss `p_burst = p` and this is `p^r`; with
/// bursts `p_burst` is higher and more copies are needed for the same residual.
pub(crate) fn copies_for_loss(p: f64, p_burst: f64, residual_loss: f64, cap: u32) -> u32 {
    let max = cap.clamp(1, MAX_COPIES);
    // NaN and non-positive loss both mean "no loss seen".
    if p.is_nan() || p <= residual_loss {
        return 1;
    }
    let pb = if p_burst.is_nan() { p } else { p_burst.clamp(p.min(1.0), 1.0) };
    let mut residual = p;
    let mut r = 1;
    while residual > residual_loss && r < max {
        residual *= pb;
        r += 1;
    }
    r
}

/// What the lead covers, for a stream whose late copies cost lateness (a client's
/// inputs): without it, a stream sends what the loss calls for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LeadCover {
    /// The lead loop's ε.
    pub(crate) late_rate: f64,
    /// ε-quantile of first-copy margins (how early first copies are), in ticks.
    pub(crate) spare_ticks: f64,
    /// Ticks between the stream's packets.
    pub(crate) send_interval_ticks: u32,
}

/// The copies to send of `wanted`, given what the lead covers. Loss above ε/2 would
/// take most of the late budget by itself, so copies are sent and the lead loop covers
/// them; below that, extra copies go only while first copies' spare margin already
/// covers them.
pub(crate) fn copies_to_send(wanted: u32, loss: f64, cover: &LeadCover) -> u32 {
    if loss > cover.late_rate / 2.0 {
        return wanted;
    }
    let covered = 1 + (cover.spare_ticks.max(0.0) / cover.send_interval_ticks.max(1) as f64).floor() as u32;
    wanted.min(covered)
}

/// How long a lower copy count must be wanted before copies drop (µs).
const HOLD_US: u64 = 10_000_000;
/// Packets resolved on the link before its loss figure may raise the copies: a lossy
/// link shows itself within a second (at 33% loss, 20 packets have lost a few), and
/// every second at too few copies there loses inputs for good.
const RESOLVED_TO_RISE: u64 = 20;
/// Packets resolved before it may lower them: a bursty 1% shows no loss in a few dozen.
const RESOLVED_TO_FALL: u64 = 200;
/// Time constant of the long-run loss counts (µs): at 1% loss a window of a few
/// hundred packets often shows none, but a minute of them does.
const LONG_LOSS_US: f64 = 60_000_000.0;
/// What the fit assumes until losses are measured (`RedundancyConfig::burst_prior`)
/// weighs as this many losses, so that a few measured ones move it.
const BURST_PRIOR_WEIGHT: f64 = 4.0;

/// One link's redundancy decision over time: copies per tick from its loss and
/// burstiness, and for a stream the lead covers, whether the link is lossy enough
/// that the stream should send every tick ([`RedundancyPlanner::lossy`]).
///
/// Loss is the larger of the transport's recent figure and its one-minute rate (a
/// bursty 1% often reads zero over a few hundred packets); burstiness is the chance a
/// packet is lost after a lost one, over the same minute, starting from the configured
/// prior. Copies rise at once and fall only after the lower figure has held
/// for a while: one copy too few loses ticks for good.
#[derive(Debug, Clone)]
pub(crate) struct RedundancyPlanner {
    cfg: RedundancyConfig,
    copies: u32,
    hold_until: u64,
    /// Loss above ε/2 of a stream the lead covers, held as the copies are.
    lossy: bool,
    lossy_hold_until: u64,
    window_loss: f64,
    /// The last counts taken, and a minute's memory of their differences since.
    counts: Option<LossCounts>,
    resolved: f64,
    lost: f64,
    lost_after_lost: f64,
    last_update: Option<u64>,
}

impl RedundancyPlanner {
    pub(crate) fn new(cfg: RedundancyConfig, initial_copies: u32) -> Self {
        RedundancyPlanner {
            cfg,
            copies: initial_copies.clamp(1, cfg.max_copies.clamp(1, MAX_COPIES)),
            hold_until: 0,
            lossy: false,
            lossy_hold_until: 0,
            window_loss: 0.0,
            counts: None,
            resolved: 0.0,
            lost: 0.0,
            lost_after_lost: 0.0,
            last_update: None,
        }
    }

    /// The loss figure that steers the copies.
    pub(crate) fn loss(&self) -> f64 {
        let long = if self.resolved > 0.0 { self.lost / self.resolved } else { 0.0 };
        self.window_loss.max(long)
    }

    /// Chance the next packet is lost when one was (toward the prior while few losses
    /// are measured; at least the loss itself).
    pub(crate) fn burst(&self) -> f64 {
        let loss = self.loss();
        let prior = if self.cfg.burst_prior.is_finite() { self.cfg.burst_prior.clamp(0.0, 1.0) } else { 0.0 };
        let fit = (self.lost_after_lost + prior * BURST_PRIOR_WEIGHT) / (self.lost + BURST_PRIOR_WEIGHT);
        fit.max(loss)
    }

    /// Takes the transport's figures of the link at local time `now` (its recent loss
    /// and its running counts) and returns the copies to send: what the loss calls for
    /// within `cap` ([`RedundancyConfig::copy_cap`]), and for a stream the lead must
    /// cover, what `cover` allows ([`copies_to_send`]).
    pub(crate) fn update(
        &mut self,
        now: u64,
        window_loss: f64,
        counts: LossCounts,
        cap: u32,
        cover: Option<&LeadCover>,
    ) -> u32 {
        self.window_loss = if window_loss.is_finite() { window_loss.clamp(0.0, 1.0) } else { 0.0 };
        let weight = self.last_update.map_or(0.0, |t| (now.saturating_sub(t) as f64 / LONG_LOSS_US).min(1.0));
        self.last_update = Some(now);
        if let Some(prev) = self.counts.replace(counts) {
            // Running counts only grow; a smaller one (another connection's) adds nothing.
            let d = |a: u64, b: u64| a.saturating_sub(b) as f64;
            let resolved = d(counts.resolved, prev.resolved);
            let lost = d(counts.lost, prev.lost).min(resolved);
            let after = d(counts.lost_after_lost, prev.lost_after_lost).min(lost);
            self.resolved += resolved - self.resolved * weight;
            self.lost += lost - self.lost * weight;
            self.lost_after_lost += after - self.lost_after_lost * weight;
        }
        if counts.resolved < RESOLVED_TO_RISE {
            return self.copies;
        }
        let loss = self.loss();
        let wanted = copies_for_loss(loss, self.burst(), self.cfg.residual_loss, cap);
        let wanted = cover.map_or(wanted, |c| copies_to_send(wanted, loss, c));
        let may_fall = counts.resolved >= RESOLVED_TO_FALL;
        if wanted >= self.copies {
            self.copies = wanted;
            self.hold_until = now + HOLD_US;
        } else if now >= self.hold_until && may_fall {
            self.copies = wanted;
        }
        // The same threshold as `copies_to_send`'s: loss that would take most of the
        // late budget by itself. It rises at once and falls after the same hold.
        let lossy = cover.is_some_and(|c| loss > c.late_rate / 2.0);
        if lossy {
            self.lossy = true;
            self.lossy_hold_until = now + HOLD_US;
        } else if now >= self.lossy_hold_until && may_fall {
            self.lossy = false;
        }
        self.copies
    }

    pub(crate) fn copies(&self) -> u32 {
        self.copies
    }

    /// Whether the link loses more than half the lead's late budget (ε/2), as last
    /// judged with a [`LeadCover`]: true at once when it does, false again only after
    /// the loss has stayed below for the copies' hold. Each lost packet of a stream
    /// delays the inputs it carried by a send interval, so on such a link the interval
    /// sets the lead: a client sends every tick while it holds.
    pub(crate) fn lossy(&self) -> bool {
        self.lossy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAP: u32 = 6;

    #[test]
    fn copies_follow_loss() {
        let r = RedundancyConfig::default().residual_loss;
        assert_eq!(copies_for_loss(0.0, 0.0, r, CAP), 1);
        assert_eq!(copies_for_loss(0.001, 0.001, r, CAP), 1);
        assert_eq!(copies_for_loss(0.01, 0.01, r, CAP), 2);
        assert_eq!(copies_for_loss(0.05, 0.05, r, CAP), 3, "0.05^2 = 0.0025 is not below the residual");
        assert_eq!(copies_for_loss(0.04, 0.04, r, CAP), 3, "0.0016 is not either");
        assert_eq!(copies_for_loss(0.03, 0.03, r, CAP), 2);
        assert_eq!(copies_for_loss(0.33, 0.33, r, CAP), 6, "capped");
        assert_eq!(copies_for_loss(0.33, 0.33, r, MAX_COPIES), 7, "0.33^7 = 0.0004");
        assert_eq!(copies_for_loss(1.0, 1.0, r, CAP), 6);
        assert_eq!(copies_for_loss(f64::NAN, f64::NAN, r, CAP), 1);
        // Bursts: 5% loss where the next copy is lost 2 times in 3 needs 11 copies.
        assert_eq!(copies_for_loss(0.05, 2.0 / 3.0, r, CAP), 6);
        assert_eq!(copies_for_loss(0.05, 2.0 / 3.0, r, MAX_COPIES), 11, "0.05 * (2/3)^10 = 0.00087");
        assert_eq!(copies_for_loss(0.05, 0.5, r, MAX_COPIES), 7, "0.05 * 0.5^6 = 0.00078");
        assert_eq!(copies_for_loss(1.0, 1.0, r, 1000), MAX_COPIES, "never beyond the most a stream sends");
    }

    #[test]
    fn copies_beyond_the_base_cap_fit_the_byte_budget() {
        let c = RedundancyConfig::default();
        // 4-byte inputs at 60 Hz, each with its length byte: 300 bytes a second a copy.
        assert_eq!(c.copy_cap(300.0), MAX_COPIES);
        // 8-byte: 540 a second, 7 more copies in 4,096.
        assert_eq!(c.copy_cap(540.0), 13);
        // 64-byte: 3,900 a second, one more.
        assert_eq!(c.copy_cap(3900.0), 7);
        assert_eq!(c.copy_cap(100_000.0), 6, "never fewer than max_copies");
        assert_eq!(c.copy_cap(0.0), 6, "unmeasured: max_copies");
        assert_eq!(c.copy_cap(f64::NAN), 6);
        let none = RedundancyConfig { extra_copy_bytes_per_sec: 0, ..c };
        assert_eq!(none.copy_cap(300.0), 6);
        let wide = RedundancyConfig { max_copies: 100, ..c };
        assert_eq!(wide.copy_cap(300.0), MAX_COPIES);
    }

    /// Counts of a link whose every `every`-th packet starts a burst of `burst` losses.
    fn counts_after(packets: u64, every: u64, burst: u64) -> LossCounts {
        let lost_at = |i: u64| i % every < burst;
        let mut c = LossCounts::default();
        for i in 0..packets {
            c.resolved += 1;
            c.lost += lost_at(i) as u64;
            c.lost_after_lost += (lost_at(i) && i > 0 && lost_at(i - 1)) as u64;
        }
        c
    }

    #[test]
    fn the_planner_fits_the_bursts_from_the_acks() {
        let c = RedundancyConfig::default();
        let mut p = RedundancyPlanner::new(c, 2);
        // 5% loss in bursts of 3 (three lost of every 60), 30 packets a second.
        for s in 0..120u64 {
            p.update(s * 1_000_000, 0.05, counts_after(30 * s, 60, 3), MAX_COPIES, None);
        }
        assert!((p.loss() - 0.05).abs() < 0.002, "loss {}", p.loss());
        // A minute's memory holds some 90 losses; the prior's 4 (at independence, 5%)
        // pull the fit a little below 2/3.
        assert!((p.burst() - 2.0 / 3.0).abs() < 0.05, "burst {}", p.burst());
        assert!((10..=11).contains(&p.copies()), "{} copies", p.copies());
        // The same rate alone: bursts of one are independent losses.
        let mut q = RedundancyPlanner::new(c, 2);
        for s in 0..120u64 {
            q.update(s * 1_000_000, 0.05, counts_after(30 * s, 20, 1), MAX_COPIES, None);
        }
        assert!(q.burst() < 0.06, "burst {}", q.burst());
        assert_eq!(q.copies(), 3);
    }

    #[test]
    fn the_planner_remembers_sparse_bursty_loss_and_holds_its_copies() {
        let c = RedundancyConfig::default();
        let mut p = RedundancyPlanner::new(c, 2);
        // A minute of 1% loss in bursts of 2, then windows that happen to show none: the
        // one-minute memory keeps the copies up.
        for s in 0..60u64 {
            p.update(s * 1_000_000, 0.01, counts_after(30 * s, 200, 2), CAP, None);
        }
        let up = p.copies();
        assert!(up >= 3, "bursty 1%: {up} copies");
        let quiet = counts_after(30 * 59, 200, 2);
        for s in 60..65u64 {
            let c = LossCounts { resolved: quiet.resolved + 30 * (s - 59), ..quiet };
            p.update(s * 1_000_000, 0.0, c, CAP, None);
        }
        assert!(p.loss() > 0.007, "loss memory {}", p.loss());
        assert_eq!(p.copies(), up);
    }

    #[test]
    fn a_covered_stream_is_lossy_above_half_epsilon_at_once_and_for_the_hold() {
        let cover = LeadCover { late_rate: 0.01, spare_ticks: 0.0, send_interval_ticks: 2 };
        let mut p = RedundancyPlanner::new(RedundancyConfig::default(), 2);
        // A clean link: never lossy, with or without a cover.
        for s in 0..30u64 {
            p.update(s * 1_000_000, 0.0, counts_after(30 * s + 30, 1_000_000, 0), CAP, Some(&cover));
        }
        assert!(!p.lossy());
        // 5% loss shows at the first update that sees it.
        let at = 30 * 30;
        let mut lossy = RedundancyPlanner::new(RedundancyConfig::default(), 2);
        lossy.update(0, 0.05, counts_after(at, 20, 1), CAP, Some(&cover));
        assert!(lossy.lossy(), "5% loss, {} resolved", at);
        // Without a cover (a server's steps) nothing is lossy: the schedule is the client's.
        let mut server = RedundancyPlanner::new(RedundancyConfig::default(), 2);
        server.update(0, 0.05, counts_after(at, 20, 1), CAP, None);
        assert!(!server.lossy());
        // 0.4% (below ε/2) is not lossy.
        let mut light = RedundancyPlanner::new(RedundancyConfig::default(), 2);
        for s in 0..120u64 {
            light.update(s * 1_000_000, 0.004, counts_after(30 * s + 30, 250, 1), CAP, Some(&cover));
        }
        assert!(light.loss() > 0.003 && !light.lossy(), "loss {}", light.loss());
        // The loss stops: lossy for the hold (10 s) after the figure falls below ε/2,
        // then not.
        let mut s = 1u64;
        let mut resolved = at;
        let mut fell_at = None;
        while s < 600 && lossy.lossy() {
            resolved += 30;
            let c = LossCounts { resolved, ..counts_after(at, 20, 1) };
            lossy.update(s * 1_000_000, 0.0, c, CAP, Some(&cover));
            if fell_at.is_none() && lossy.loss() <= 0.005 {
                fell_at = Some(s);
            }
            s += 1;
        }
        let fell_at = fell_at.expect("the loss figure falls");
        assert!(!lossy.lossy(), "still lossy after {s} s");
        assert!(s >= fell_at + 10 && s <= fell_at + 11, "cleared at {s} s, loss fell at {fell_at} s");
    }

    #[test]
    fn counts_from_the_wire_cannot_make_the_fit_absurd() {
        let mut p = RedundancyPlanner::new(RedundancyConfig::default(), 2);
        let good = LossCounts { resolved: 1000, lost: 10, lost_after_lost: 2 };
        p.update(0, 0.01, good, CAP, None);
        // Counts that fall (wrapped, or another connection's), or say more lost than
        // sent: nothing beyond what they could mean.
        p.update(1_000_000, 0.01, LossCounts { resolved: 5, lost: 900, lost_after_lost: 900 }, CAP, None);
        p.update(2_000_000, 0.01, LossCounts { resolved: 6, lost: u64::MAX, lost_after_lost: u64::MAX }, CAP, None);
        assert!(p.loss() <= 1.0 && p.burst() <= 1.0, "{} {}", p.loss(), p.burst());
        assert!(p.copies() <= CAP);
    }

    #[test]
    fn copies_below_epsilon_need_spare_lead() {
        let cover = |spare| LeadCover { late_rate: 0.01, spare_ticks: spare, send_interval_ticks: 2 };
        // 0.4% loss < ε/2: the second copy only if first copies arrive 2+ ticks early.
        assert_eq!(copies_to_send(2, 0.004, &cover(0.5)), 1);
        assert_eq!(copies_to_send(2, 0.004, &cover(2.1)), 2);
        // 1% and 5% loss: copies are sent and the lead loop will cover them.
        assert_eq!(copies_to_send(2, 0.01, &cover(0.0)), 2);
        assert_eq!(copies_to_send(3, 0.05, &cover(0.0)), 3);
    }
}
