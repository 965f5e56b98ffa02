//! The instants at which the lab's client engine runs its frames, in true time.
//!
//! Every controller's client samples its inputs on its engine's frames: 144 per second
//! on the client's own (drifting) clock, stopped by a client hitch, at the rate a
//! `ClientFps` change sets (`relay.rs`, `baselines/mod.rs`). The oracle's reference
//! client samples on the same frames ([`super::oracle`]), so that the wait from a tick's
//! start to the frame that samples its input (up to 0.42 tick at 144 Hz) is the link's
//! for every controller alike, not the cost of one.

use tickwire_proto::{DriftClock, Micros};

use super::model::LabConfig;
use super::scenario::{Change, Scenario};

/// The frame instants of a scenario's client engine, one after another.
#[derive(Debug, Clone)]
pub(crate) struct EngineFrames {
    drift: DriftClock,
    frame_us: f64,
    next_local: Micros,
    hitch_until: Micros,
    /// The scenario's changes that move the frames, latest first.
    changes: Vec<(Micros, Change)>,
}

impl EngineFrames {
    pub(crate) fn new(scenario: &Scenario, cfg: &LabConfig) -> Self {
        let mut changes: Vec<_> = scenario
            .changes
            .iter()
            .copied()
            .filter(|(_, c)| matches!(c, Change::ClientDrift(_) | Change::ClientHitch(_) | Change::ClientFps(_)))
            .collect();
        changes.reverse();
        EngineFrames {
            drift: DriftClock::new(scenario.client_drift_ppm, 0),
            frame_us: 1e6 / cfg.frame_hz,
            next_local: 0,
            hitch_until: 0,
            changes,
        }
    }

    /// The true time of the next frame. As the lab's loops do: a change due at or
    /// before the frame applies first; the next frame is one frame length of the local
    /// clock after this one.
    pub(crate) fn next_frame(&mut self) -> Micros {
        loop {
            let at = self.drift.true_time_of(self.next_local).max(self.hitch_until);
            let due = self.changes.last().filter(|c| c.0 <= at).copied();
            if let Some((t, c)) = due {
                self.changes.pop();
                match c {
                    Change::ClientDrift(ppm) => self.drift.set_ppm(t, ppm),
                    Change::ClientHitch(d) => self.hitch_until = t + d,
                    Change::ClientFps(f) => self.frame_us = 1e6 / f.max(1.0),
                    _ => {}
                }
                continue;
            }
            self.next_local = self.drift.local(at) + self.frame_us as Micros;
            return at;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(s: &Scenario, until: Micros) -> Vec<Micros> {
        let mut f = EngineFrames::new(s, &LabConfig::default());
        std::iter::from_fn(|| Some(f.next_frame())).take_while(|&t| t < until).collect()
    }

    #[test]
    fn frames_come_144_times_a_second_on_the_clients_clock() {
        let s1 = super::super::scenario::by_id("S1").expect("S1 exists");
        let f = frames(&s1, 1_000_000);
        assert_eq!(f.len(), 145, "0 µs and every 6,944 µs after");
        assert!(f.windows(2).all(|w| w[1] - w[0] == 6_944));
        // A clock 1,000 ppm fast reaches each local reading earlier in true time.
        let s6 = super::super::scenario::by_id("S6").expect("S6 exists");
        let fast = frames(&s6, 1_000_000);
        assert!(fast.len() == 145 && fast[144] < f[144], "{} {}", fast[144], f[144]);
    }

    #[test]
    fn a_hitch_stops_the_frames_and_a_rate_change_spaces_them() {
        let s8 = super::super::scenario::by_id("S8").expect("S8 exists");
        let f = frames(&s8, 215_000_000);
        // The client's 2 s hitch at 100 s: no frame inside it, one at its end.
        assert!(!f.iter().any(|&t| t > 100_000_000 && t < 102_000_000));
        assert!(f.contains(&102_000_000));
        // 10 frames a second from 200 s to 210 s.
        let slow: Vec<_> = f.iter().filter(|&&t| t > 200_200_000 && t < 209_800_000).collect();
        assert!(slow.windows(2).all(|w| w[1] - w[0] == 100_000), "{:?}", &slow[..3]);
    }
}
