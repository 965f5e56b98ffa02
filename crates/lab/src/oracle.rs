//! The oracle lead of a scenario, from the link itself.
//!
//! ticksync.md section 3.2, M2: "the oracle lead is the smallest `L*_ε` with
//! `P_late(L*) ≤ ε` under the *true* delay distribution". The lab used to take it from
//! each controller's own arrivals, so a controller that sent later or fewer copies
//! got a different (easier) oracle. Here it is measured once per scenario and seed, on
//! the same uplink realisation every controller meets ([`LabConfig::link_seeds`]), with
//! one reference send pattern that belongs to no controller:
//!
//! - the input of each tick of true time (no clock drift, no lead: the ideal client) is
//!   sampled on the first frame of the lab's client engine at or after the tick begins
//!   ([`EngineFrames`]), as every controller's client samples it: up to 0.42 tick later
//!   at 144 frames a second;
//! - a packet leaves every `k_c` ticks, when its newest input is sampled, carrying the
//!   inputs of the last [`REFERENCE_COPIES`] packets (so each input travels in up to
//!   that many packets);
//! - the need of an input is the arrival of its first delivered copy minus its sampling
//!   time, and the oracle of a 30 s window is the `1 − ε` quantile of the needs of the
//!   inputs sampled in it (an input never delivered needs an infinite lead).
//!
//! The same windows and the same oracle serve every controller. Nothing of a
//! controller enters it.

use tickwire_proto::{LinkConditioner, Micros};

use super::frames::EngineFrames;
use super::model::LabConfig;
use super::scenario::{Change, Scenario};

/// Copies of each input in the reference pattern: lightyear's default input
/// redundancy (ticksync.md section 1.4; the most any compared design sends by default).
/// With them an input is lost for good with probability `p^10`, far below ε even at
/// 33% loss, so the oracle measures the lead the link needs, not the loss.
pub const REFERENCE_COPIES: u32 = 10;

/// Length of the oracle's windows: long enough for a stable 99th percentile (1,800
/// inputs), short enough to follow the scenarios' latency steps.
pub const WINDOW_US: Micros = 30_000_000;

/// The oracle of one scenario and seed.
#[derive(Debug, Clone, Default)]
pub struct Oracle {
    /// (sampling time, need in ticks) of every reference input, in sampling order.
    needs: Vec<(Micros, f64)>,
    /// (window start, window end, `L*_ε` in ticks), from the warm-up on.
    windows: Vec<(Micros, Micros, f64)>,
    epsilon: f64,
}

impl Oracle {
    /// Sends the reference pattern over the scenario's uplink (with its timed uplink
    /// changes) and measures the needs.
    pub fn measure(scenario: &Scenario, cfg: &LabConfig) -> Oracle {
        let (up_seed, _) = cfg.link_seeds(scenario, 0);
        let mut link: LinkConditioner<(u32, u32)> = LinkConditioner::new(scenario.up, up_seed);
        let mut ups: Vec<_> = scenario
            .changes
            .iter()
            .filter_map(|&(at, c)| if let Change::Up(l) = c { Some((at, l)) } else { None })
            .collect();
        ups.reverse();
        let t = cfg.tick_us;
        let n = (scenario.duration as f64 / t) as u32;
        let mut first: Vec<Option<Micros>> = vec![None; n as usize];
        let window = REFERENCE_COPIES * cfg.k_c;
        let deliver = |link: &mut LinkConditioner<(u32, u32)>, now: Micros, first: &mut [Option<Micros>]| {
            while let Some((at, (oldest, newest))) = link.poll_timed(now) {
                for i in oldest..=newest {
                    first[i as usize].get_or_insert(at);
                }
            }
        };
        let mut frames = EngineFrames::new(scenario, cfg);
        let mut frame = frames.next_frame();
        let sampled: Vec<Micros> = (0..n)
            .map(|i| {
                let start = (i as f64 * t) as Micros;
                while frame < start {
                    frame = frames.next_frame();
                }
                frame
            })
            .collect();
        for i in (0..n).filter(|i| i % cfg.k_c == 0) {
            let now = sampled[i as usize];
            deliver(&mut link, now, &mut first);
            while ups.last().is_some_and(|u| u.0 <= now) {
                link.set_config(ups.pop().expect("checked").1);
            }
            let oldest = (i + 1).saturating_sub(window);
            link.send(now, 20 + 2 * (i - oldest + 1) as usize, (oldest, i));
        }
        deliver(&mut link, Micros::MAX, &mut first);
        let needs: Vec<(Micros, f64)> = first
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let sampled = sampled[i];
                (sampled, a.map_or(f64::INFINITY, |a| a.saturating_sub(sampled) as f64 / t))
            })
            .collect();
        let mut o = Oracle { needs, windows: Vec::new(), epsilon: cfg.epsilon };
        let mut start = cfg.warmup_us;
        while start < scenario.duration {
            let end = (start + WINDOW_US).min(scenario.duration);
            o.windows.push((start, end, o.quantile_between(start, end)));
            start = end;
        }
        o
    }

    /// `L*_ε` (ticks) of the inputs sampled in `[from, to)`: the `1 − ε` quantile of
    /// their needs (infinite if more than ε of them never arrived; NaN if none).
    pub fn quantile_between(&self, from: Micros, to: Micros) -> f64 {
        let mut v: Vec<f64> = self.needs.iter().filter(|n| n.0 >= from && n.0 < to).map(|n| n.1).collect();
        super::stats::quantile(&mut v, 1.0 - self.epsilon)
    }

    /// The windows: (start, end, `L*_ε` in ticks).
    pub fn windows(&self) -> &[(Micros, Micros, f64)] {
        &self.windows
    }

    /// The index of the window holding time `at`, if any.
    pub fn window_of(&self, at: Micros) -> Option<usize> {
        self.windows.iter().position(|w| at >= w.0 && at < w.1)
    }

    /// (sampling time, need in ticks) of every reference input, in sampling order
    /// (warm-up included; the windows start after it).
    pub fn needs(&self) -> &[(Micros, f64)] {
        &self.needs
    }

    /// The ε the windows' `L*_ε` are for.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// An oracle of given needs over given windows (`[start, end)`), each window's
    /// `L*_ε` taken as [`Oracle::measure`] takes it: for tests of what reads an oracle.
    #[cfg(test)]
    pub(crate) fn from_needs(needs: Vec<(Micros, f64)>, windows: &[(Micros, Micros)], epsilon: f64) -> Oracle {
        let mut o = Oracle { needs, windows: Vec::new(), epsilon };
        o.windows = windows.iter().map(|&(a, b)| (a, b, o.quantile_between(a, b))).collect();
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickwire_proto::{LinkConfig, LossModel};

    fn scenario(up: LinkConfig) -> Scenario {
        let mut s = super::super::scenario::by_id("S0").expect("S0 exists");
        s.up = up;
        s.duration = 70_000_000;
        s
    }

    #[test]
    fn a_fixed_delay_needs_the_delay_plus_the_wait_for_the_next_send() {
        // 50 ms = 3 ticks, and the input sampled one tick before a send waits k_c − 1
        // for it, plus what the frames put between the two samples: at 144 frames a
        // second (6,944 µs apart) a tick's sample comes less than a frame (5/12 tick)
        // after its start, and the next tick's 1 − 1/6 or 1 + 1/4 tick after it.
        let cfg = LabConfig::default();
        let up = LinkConfig { latency_us: 50_000, ..LinkConfig::perfect() };
        let o = Oracle::measure(&scenario(up), &cfg);
        assert_eq!(o.windows().len(), 2);
        for w in o.windows() {
            assert!((w.2 - 4.25).abs() < 0.01, "oracle {}", w.2);
        }
        let t = cfg.tick_us;
        let mut waits: Vec<u64> = o.needs()[..60].iter().map(|n| ((n.1 - 3.0) * 12.0).round() as u64).collect();
        waits.sort_unstable();
        waits.dedup();
        assert_eq!(waits, [0, 10, 15], "in twelfths of a tick: the newest input's 0, the older's 5/6 or 5/4");
        for (i, n) in o.needs()[..60].iter().enumerate() {
            let start = (i as f64 * t) as Micros;
            assert!(n.0 >= start && n.0 - start < 6_944, "input {i} sampled at {}", n.0);
        }
    }

    #[test]
    fn loss_costs_send_intervals_until_a_copy_gets_through() {
        // At 33% loss the first copy of 1 input in 3 is lost; to cover 99% of the
        // inputs the lead must wait for up to four more packets (0.33^4 = 1.2% > ε,
        // 0.33^5 = 0.4% ≤ ε, less the share of inputs that wait no tick for a send).
        let cfg = LabConfig::default();
        let up = LinkConfig { latency_us: 50_000, loss: LossModel::Bernoulli { p: 0.33 }, ..LinkConfig::perfect() };
        let o = Oracle::measure(&scenario(up), &cfg);
        for w in o.windows() {
            assert!(w.2 >= 4.0 + 3.0 * cfg.k_c as f64 && w.2 <= 4.0 + 5.0 * cfg.k_c as f64, "oracle {}", w.2);
        }
    }

    #[test]
    fn the_oracle_is_the_scenarios_and_the_seeds_only() {
        let cfg = LabConfig::default();
        let s2 = super::super::scenario::by_id("S2").expect("S2 exists");
        let a = Oracle::measure(&s2, &cfg);
        let b = Oracle::measure(&s2, &cfg);
        assert_eq!(a.windows(), b.windows());
        let c = Oracle::measure(&s2, &LabConfig { seed: 2, ..cfg });
        assert_ne!(a.windows(), c.windows(), "another seed is another realisation");
    }
}
