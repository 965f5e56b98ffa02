//! Metrics M1, M2, M3, M6, M7 and M9 (ticksync.md section 3.2), each beside its limit
//! computed from the simulator's ground truth: the scenario's oracle
//! ([`super::oracle`]), the same for every controller.

use super::model::{LabConfig, RunRecord};
use super::oracle::Oracle;
use super::scenario::{Change, Scenario};
use super::stats::{mean, quantile};
use tickwire_proto::{Micros, StepKind};

/// The scored figures of one run. Leads and delays in ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Metrics {
    /// M1: server ticks without this client's real input (underflow, lost, merged).
    pub late_rate: f64,
    /// M1 split: inputs that never arrived at all (all copies lost).
    pub late_loss: f64,
    /// M1 floor: the fraction of inputs no lead could have saved (never arrived).
    pub late_floor: f64,
    /// M1 by window: the oracle's windows in which more than ε of the server ticks
    /// ran without the real input, and the windows scored. Such a window still counts
    /// in the excess (it is never dropped); this says how often ε was missed.
    pub windows_missed: u32,
    pub windows: u32,
    /// M2: mean lead, the scenario's oracle lead for ε ([`Oracle`](crate::Oracle)), and
    /// the excess: the mean over consumed inputs of their lead minus their window's
    /// oracle.
    pub lead: f64,
    pub lead_oracle: f64,
    pub lead_excess: f64,
    /// M3: mean prediction distance and its floor P_min.
    pub prediction: f64,
    pub prediction_min: f64,
    /// M6: how long after the first latency step the controller's own clock action
    /// (the client's tick minus the tick the server consumes now) took to settle within
    /// T/2 of where it settled (s), the limit, and the server ticks without the real
    /// input from the step to the end of its window (the price of the dead time).
    pub convergence_s: Option<f64>,
    pub convergence_limit_s: Option<f64>,
    pub step_late_ticks: Option<u64>,
    /// M7: discrete corrections per minute (snaps, lead-loop resets, seed 000's
    /// stalls, skips, step-backs and resets), time-scale sign changes per minute, the
    /// fraction of frames dilated by more than 0.5%, and the lead's standard deviation.
    pub corrections_per_min: f64,
    pub scale_flips_per_min: f64,
    pub dilated_fraction: f64,
    pub lead_std: f64,
    /// M9: interpolation delay behind the minimum-delay timeline, its oracle D*, and
    /// the starvation rate.
    pub interp_delay: f64,
    pub interp_oracle: f64,
    pub starvation: f64,
    pub tick_went_back: bool,
    /// Players the server removed during the run (kicked, fell behind, left).
    pub kicks: usize,
    /// The slowest client's canonical steps received per second over the last 30 s
    /// (or the last half of a shorter run): 60 when every client keeps up.
    pub step_rate: f64,
    /// The redundancy's cost on the uplink: copies sent per input the client sampled,
    /// and the bytes that carried them per input (see `RunRecord::uplink_bytes`).
    pub copies_per_input: f64,
    pub uplink_bytes_per_input: f64,
    /// The same on the downlink, per server tick: copies of each step and the updates'
    /// bytes (tickwire only; NaN for a baseline).
    pub copies_per_step: f64,
    pub downlink_bytes_per_step: f64,
}

/// M9's loss cover k: the fewest consecutive downlink losses to survive so that the
/// share of updates lost beyond k in a row is at most ε. ticksync.md gives the
/// smallest k with `p^(k+1) <= ε`, which is this for independent loss; with bursts
/// (`P(run > k)`, as M1 does for redundancy) it takes the runs as they were. Runs are
/// read from the gaps between the send times of delivered updates, which the server
/// sends every `k_s` ticks.
fn loss_cover(rec: &RunRecord, cfg: &LabConfig) -> u32 {
    let interval = cfg.k_s as f64 * cfg.tick_us;
    let mut sent: Vec<Micros> = rec.downlink.iter().map(|d| d.0).collect();
    sent.sort_unstable();
    sent.dedup();
    let total = rec.downlink_sent.max(1) as f64;
    // beyond[j]: updates that were the (j+1)-th or later loss in a row.
    let mut beyond = [0.0f64; 8];
    for w in sent.windows(2) {
        let run = ((w[1] - w[0]) as f64 / interval).round() as i64 - 1;
        for (j, b) in beyond.iter_mut().enumerate() {
            *b += (run - j as i64).max(0) as f64;
        }
    }
    (0..8).find(|&k| beyond[k] / total <= cfg.epsilon).unwrap_or(8) as u32
}

/// Scores a run against the scenario's oracle (measured here; see [`score_with`]).
pub fn score(rec: &RunRecord, scenario: &Scenario, cfg: &LabConfig) -> Metrics {
    score_with(rec, scenario, cfg, &Oracle::measure(scenario, cfg))
}

/// Scores a run against `oracle`, which must be the scenario's at `cfg`'s seed.
pub fn score_with(rec: &RunRecord, scenario: &Scenario, cfg: &LabConfig, oracle: &Oracle) -> Metrics {
    let t = cfg.tick_us;
    let warm = cfg.warmup_us;
    let eps = cfg.epsilon;
    let mut m = Metrics { tick_went_back: rec.tick_went_back, ..Metrics::default() };

    // M1 over server ticks after warm-up, whole and per oracle window.
    let ticks: Vec<_> = rec.server_ticks.iter().filter(|s| s.at >= warm).collect();
    let bad = ticks.iter().filter(|s| s.kind != StepKind::Normal).count();
    m.late_rate = bad as f64 / ticks.len().max(1) as f64;
    for &(a, b, _) in oracle.windows() {
        let w: Vec<_> = ticks.iter().filter(|s| s.at >= a && s.at < b).collect();
        if w.is_empty() {
            continue;
        }
        m.windows += 1;
        let late = w.iter().filter(|s| s.kind != StepKind::Normal).count() as f64 / w.len() as f64;
        if late > eps {
            m.windows_missed += 1;
        }
    }
    let inputs: Vec<_> =
        rec.inputs.iter().filter(|r| r.sampled >= warm && r.sampled + 2_000_000 < scenario.duration).collect();
    let never = inputs.iter().filter(|r| r.first_arrival.is_none()).count();
    m.late_floor = never as f64 / inputs.len().max(1) as f64;
    m.late_loss = inputs.iter().filter(|r| r.substituted && r.first_arrival.is_none()).count() as f64
        / inputs.len().max(1) as f64;

    // M2: every consumed input's lead against its window's oracle; no window is left
    // out for the controller's sake.
    let lead_of = |r: &super::model::InputRecord| r.consumed.map(|c| (c as f64 - r.sampled as f64) / t);
    let (mut ex_sum, mut ex_n, mut oracle_sum) = (0.0, 0usize, 0.0);
    for r in &inputs {
        let (Some(l), Some(w)) = (lead_of(r), oracle.window_of(r.sampled)) else { continue };
        let o = oracle.windows()[w].2;
        if o.is_finite() {
            ex_sum += l - o;
            oracle_sum += o;
            ex_n += 1;
        }
    }
    let all_leads: Vec<f64> = inputs.iter().filter_map(|r| lead_of(r)).collect();
    m.lead = mean(all_leads.iter().copied());
    m.lead_excess = if ex_n > 0 { ex_sum / ex_n as f64 } else { f64::NAN };
    m.lead_oracle = if ex_n > 0 { oracle_sum / ex_n as f64 } else { f64::INFINITY };
    let var = mean(all_leads.iter().map(|l| (l - m.lead).powi(2)));
    m.lead_std = var.sqrt();

    // M3: prediction distance vs P_min = L* + mean downlink delay + S_s/2.
    let frames: Vec<_> = rec.frames.iter().filter(|f| f.at >= warm).collect();
    m.prediction = mean(frames.iter().map(|f| f.prediction));
    let d_mean = mean(rec.downlink.iter().filter(|d| d.0 >= warm).map(|d| d.1 as f64)) / t;
    m.prediction_min = m.lead_oracle + d_mean + cfg.k_s as f64 / 2.0;

    // M6: convergence of the controller's own action after the first latency step.
    let step = scenario.changes.iter().find(|(_, c)| matches!(c, Change::Up(_) | Change::Down(_))).map(|c| c.0);
    if let Some(at) = step {
        // Up to the next change (or 40 s); where it settled is the second half's mean.
        let next = scenario.changes.iter().map(|c| c.0).find(|&t| t > at).unwrap_or(Micros::MAX);
        let end = next.min(at + 40_000_000).min(scenario.duration);
        let half = at + (end - at) / 2;
        let settled = mean(frames.iter().filter(|f| f.at >= half && f.at < end).map(|f| f.clock_lead));
        // The action's 2 s moving average, sampled every half second; converged from
        // the last sample outside ±T/2 of where it settled. (Averaging keeps the
        // frame-rate quantisation of a whole-tick clock from counting as movement.)
        let mut last_out = at;
        let mut b = at;
        while b < end {
            let hi = b + 500_000;
            let l =
                mean(frames.iter().filter(|f| f.at + 2_000_000 > hi && f.at < hi && f.at >= at).map(|f| f.clock_lead));
            if l.is_finite() && (l - settled).abs() > 0.5 {
                last_out = hi;
            }
            b = hi;
        }
        m.convergence_s = Some((last_out - at) as f64 / 1e6);
        m.step_late_ticks =
            Some(ticks.iter().filter(|s| s.at >= at && s.at < end && s.kind != StepKind::Normal).count() as u64);
        // Dead time (one round trip after the step plus a server send interval) plus the
        // slew of |Δ| (the oracle's move) at 10%.
        let after = oracle.quantile_between(half, end);
        let before = oracle.quantile_between(at.saturating_sub(20_000_000), at);
        let up_after: Vec<_> = inputs.iter().filter(|r| r.sampled >= half && r.sampled < end).collect();
        let rtt_new =
            mean(up_after.iter().filter_map(|r| r.first_arrival.map(|a| (a - r.sampled) as f64))) + d_mean * t;
        let delta = (after - before).abs() * t;
        m.convergence_limit_s = Some((rtt_new + cfg.k_s as f64 * t + delta / 0.10) / 1e6);
    }

    // M7: every discrete correction counts, whoever makes it.
    let minutes = (scenario.duration.saturating_sub(warm)) as f64 / 60e6;
    let snaps = rec.snaps.iter().chain(&rec.resets).filter(|&&s| s >= warm).count() as f64;
    m.corrections_per_min = (snaps + rec.seed_corrections as f64) / minutes;
    let mut flips = 0;
    let mut sign = 0i8;
    for f in &frames {
        let s = if f.scale > 1.001 {
            1
        } else if f.scale < 0.999 {
            -1
        } else {
            0
        };
        if s != 0 && s != sign {
            if sign != 0 {
                flips += 1;
            }
            sign = s;
        }
    }
    m.scale_flips_per_min = flips as f64 / minutes;
    m.dilated_fraction =
        frames.iter().filter(|f| (f.scale - 1.0).abs() > 0.005).count() as f64 / frames.len().max(1) as f64;

    // M9: D behind the minimum-delay timeline vs D* = S_s + Q(j_d) + k S_s.
    let d_min = rec.downlink.iter().map(|d| d.1).min().unwrap_or(0) as f64 / t;
    let mut jit: Vec<f64> = rec.downlink.iter().filter(|d| d.0 >= warm).map(|d| d.1 as f64 / t - d_min).collect();
    let qj = quantile(&mut jit, 1.0 - eps);
    let k = loss_cover(rec, cfg) as f64;
    let s_s = cfg.k_s as f64;
    m.interp_oracle = s_s + qj + k * s_s;
    m.interp_delay = mean(frames.iter().filter_map(|f| f.playback.map(|pb| f.server_pos - d_min - pb)));
    m.starvation = frames.iter().filter(|f| f.starved).count() as f64 / frames.len().max(1) as f64;

    m.kicks = rec.kicks.len();
    m.step_rate = step_rate(rec, scenario);
    let inputs = rec.inputs.len().max(1) as f64;
    m.copies_per_input = rec.uplink_copies as f64 / inputs;
    m.uplink_bytes_per_input = rec.uplink_bytes as f64 / inputs;
    let steps = rec.downlink_steps as f64;
    m.copies_per_step = if steps > 0.0 { rec.downlink_copies as f64 / steps } else { f64::NAN };
    m.downlink_bytes_per_step = if steps > 0.0 { rec.downlink_bytes as f64 / steps } else { f64::NAN };
    m
}

/// The slowest client's steps per second over the end of the run (see
/// [`Metrics::step_rate`]).
fn step_rate(rec: &RunRecord, scenario: &Scenario) -> f64 {
    let (Some(&(end_at, end)), Some(_)) = (rec.slowest_step.last(), rec.slowest_step.first()) else { return 0.0 };
    let from = end_at.saturating_sub((scenario.duration / 2).min(30_000_000));
    let Some(&(start_at, start)) = rec.slowest_step.iter().find(|s| s.0 >= from) else { return 0.0 };
    if end_at <= start_at {
        return 0.0;
    }
    end.saturating_sub(start) as f64 / ((end_at - start_at) as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::super::model::{InputRecord, ServerTickRecord};
    use super::*;

    /// A run on S0 (no delay: the oracle is the one tick an input may wait for the next
    /// send, and the quarter tick the frames may put between two ticks' samples) where every input is consumed 3 ticks after it was sampled, and the server
    /// ran without the real input in 5% of the second window's ticks.
    #[test]
    fn a_window_over_epsilon_counts_against_the_run_and_is_never_dropped() {
        let cfg = LabConfig::default();
        let mut sc = super::super::scenario::by_id("S0").expect("S0 exists");
        sc.duration = 70_000_000;
        let oracle = Oracle::measure(&sc, &cfg);
        assert_eq!(oracle.windows().len(), 2);
        let t = cfg.tick_us;
        let n = (sc.duration as f64 / t) as u32;
        let mut rec = RunRecord::default();
        for i in 0..n {
            let sampled = (i as f64 * t) as Micros;
            rec.inputs.push(InputRecord {
                sampled,
                first_arrival: Some(sampled),
                consumed: Some((sampled as f64 + 3.0 * t) as Micros),
                substituted: false,
            });
            let at = (sampled as f64 + 3.0 * t) as Micros;
            let late = at >= oracle.windows()[1].0 && i % 20 == 0;
            let kind = if late { StepKind::Lost } else { StepKind::Normal };
            rec.server_ticks.push(ServerTickRecord { at, kind, depth: 0 });
        }
        let m = score_with(&rec, &sc, &cfg, &oracle);
        assert_eq!((m.windows_missed, m.windows), (1, 2));
        // Every consumed input of both windows is in the excess: 3 ticks over 1.25.
        assert!((m.lead_excess - 1.75).abs() < 0.01, "excess {}", m.lead_excess);
        assert!((m.lead_oracle - 1.25).abs() < 0.01, "oracle {}", m.lead_oracle);
    }
}
