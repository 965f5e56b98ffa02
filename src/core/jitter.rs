//! The server's input jitter buffer for one client (seeds 001 and 003).
//!
//! Inputs carry the client's tick. Every server tick consumes exactly one step when
//! the next one is there. The buffer keeps Hypersomnia's ledger of *accepted counts*:
//! - `1`: the next input was there (or was lost for good and is substituted);
//! - `0`: underflow: nothing arrived in time, a substitute (repeat or empty) is used and
//!   the client's input will be consumed one tick later;
//! - `k > 1`: the queue passed its depth and `k` steps were merged into this tick.
//!
//! A client that pops the accepted count from its queue of predicted inputs stays in
//! step with the server without any clock being exchanged. Each input's *arrival
//! margin* (ticks between its arrival and the tick that consumes it; negative = late)
//! is recorded for the client's lead controller.

use std::collections::VecDeque;

/// What the server uses when a client's input is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnderflowPolicy {
    /// Repeat the client's last input (keys held stay held).
    RepeatLast,
    /// An empty (zero-length) input.
    Empty,
}

/// What a tick does when the client's next input has not arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatePolicy {
    /// Hypersomnia's ledger: accept nothing this tick (accepted 0) and consume the
    /// input when it comes, one tick later. Nothing is lost, but every later input
    /// shifts a tick, which the client's lead loop then removes.
    Delay,
    /// Tick-aligned: substitute the missing input (accepted 1) and move on; if the real
    /// one arrives later it is dropped, reporting how late it was. Consumption never
    /// shifts, so the lead stays steadier, at the price of a misprediction per late input.
    Substitute,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JitterConfig {
    /// Steps queued beyond this are merged into the current tick.
    pub max_depth: usize,
    /// A client whose queue passes this is kicked (it is far ahead or flooding).
    pub hard_cap: usize,
    pub underflow: UnderflowPolicy,
    /// A client with this many consecutive underflows is kicked (it cannot keep up).
    pub max_starved_ticks: u32,
    /// Largest input in bytes.
    pub max_input_size: usize,
    pub late: LatePolicy,
}

impl Default for JitterConfig {
    fn default() -> Self {
        JitterConfig {
            max_depth: 8,
            hard_cap: 120,
            underflow: UnderflowPolicy::RepeatLast,
            max_starved_ticks: 300,
            max_input_size: 256,
            late: LatePolicy::Delay,
        }
    }
}

/// Why a client was kicked by its jitter buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KickReason {
    /// The queue passed the hard cap.
    Overflow,
    /// Too many consecutive ticks without an input.
    Starved,
}

/// What a push did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PushOutcome {
    /// First copy of this input; `margin` in ticks (negative = it missed its tick).
    Queued { margin: f64 },
    /// A redundant copy of an input already queued or consumed.
    Duplicate,
    /// The first copy of an input whose tick was already substituted: dropped, with how
    /// late it was (`margin` < 0) so the client's lead loop still learns of it.
    Late { margin: f64 },
    /// Refused: too large.
    TooLarge,
}

/// The kind of step a tick consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// One real input.
    Normal,
    /// Underflow: nothing consumed, a substitute used.
    Underflow,
    /// The next input never arrived but later ones did: substituted and skipped.
    Lost,
    /// Several steps consumed at once.
    Merged,
}

/// The result of one server tick for one client. `inputs` holds `accepted` inputs
/// (one substitute for `Underflow` and `Lost`), each as its own slice.
#[derive(Debug)]
pub struct Step<'a> {
    pub kind: StepKind,
    pub accepted: u32,
    /// The client tick of the first consumed input (or the one substituted).
    pub first_client_tick: u64,
    pub inputs: &'a [Vec<u8>],
}

/// Counters for metrics (M1, M11).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JitterStats {
    pub ticks: u64,
    pub normal: u64,
    pub underflows: u64,
    pub lost: u64,
    pub merges: u64,
    pub merged_steps: u64,
    pub late_arrivals: u64,
    pub duplicates: u64,
}

#[derive(Debug)]
pub struct JitterBuffer {
    cfg: JitterConfig,
    /// Queued inputs by client tick, ascending; may have gaps.
    queue: VecDeque<(u64, Vec<u8>)>,
    /// The client tick the next step should consume.
    next_tick: Option<u64>,
    /// Server tick that will consume `next_tick` if nothing underflows or merges.
    next_server_tick: u64,
    last_input: Vec<u8>,
    out: Vec<Vec<u8>>,
    spare: Vec<Vec<u8>>,
    starved: u32,
    stats: JitterStats,
    /// Ticks by which consumption has slipped: +1 per underflow, -(k-1) per merge of k.
    shift: i64,
    /// Recently received client ticks (tick + 1; 0 = empty), so a late first copy can
    /// be told from a repeat of an input already used.
    seen: Vec<u64>,
}

const SEEN: usize = 1024;

impl JitterBuffer {
    pub fn new(cfg: JitterConfig) -> Self {
        // Buffers for a full queue (past `hard_cap` the client is kicked), made now so
        // that a burst deeper than any before does not allocate mid-game.
        let room = cfg.hard_cap + 2;
        JitterBuffer {
            cfg,
            queue: VecDeque::with_capacity(room),
            next_tick: None,
            next_server_tick: 0,
            last_input: Vec::with_capacity(cfg.max_input_size),
            out: Vec::with_capacity(room),
            spare: (0..room).map(|_| Vec::with_capacity(cfg.max_input_size)).collect(),
            starved: 0,
            stats: JitterStats::default(),
            shift: 0,
            seen: vec![0; SEEN],
        }
    }

    pub fn stats(&self) -> JitterStats {
        self.stats
    }

    /// How far consumption has slipped against the client's ticks: +1 per underflow
    /// (every later input is consumed a tick later), -(k-1) per merge of k steps. The
    /// client's lead loop needs it with each margin: a margin that grew because the
    /// server slipped is not a margin the client earned.
    pub fn shift(&self) -> i64 {
        self.shift
    }

    /// The highest client tick such that it and every earlier one have been received
    /// (or consumed): what the client may stop resending. None before any input.
    pub fn contiguous_received(&self) -> Option<u64> {
        let next = self.next_tick?;
        let run = self.queue.iter().enumerate().take_while(|(i, (t, _))| *t == next + *i as u64).count() as u64;
        (next + run).checked_sub(1)
    }

    /// Steps waiting.
    pub fn depth(&self) -> usize {
        self.queue.len()
    }

    /// Takes an input for client tick `client_tick` that arrived at server position
    /// `arrival` (fractional server ticks; tick `s` is consumed at position `s`).
    ///
    /// `arrival` is the server's *simulation* position: the last tick run plus the
    /// fraction of a tick interval elapsed since, capped at 1. While a server hitches no
    /// tick runs, so inputs arriving meanwhile are not late: measuring against the
    /// wall-clock schedule instead would report them late by the length of the hitch
    /// and make every client add lead it does not need.
    pub fn push(&mut self, arrival: f64, client_tick: u64, input: &[u8]) -> PushOutcome {
        if input.len() > self.cfg.max_input_size {
            return PushOutcome::TooLarge;
        }
        let next = *self.next_tick.get_or_insert(client_tick);
        let slot = client_tick as usize % SEEN;
        let seen_before = self.seen[slot] == client_tick + 1;
        if self.queue.is_empty() && self.stats.ticks == 0 && client_tick < next {
            // Before the first step, an older input simply becomes the start.
            self.next_tick = Some(client_tick);
        } else if client_tick < next {
            if seen_before || next - client_tick >= SEEN as u64 {
                self.stats.duplicates += 1;
                return PushOutcome::Duplicate;
            }
            // Its tick was substituted: too late to use, but say how late.
            self.seen[slot] = client_tick + 1;
            self.stats.late_arrivals += 1;
            let deadline = self.next_server_tick as f64 - (next - client_tick) as f64;
            return PushOutcome::Late { margin: deadline - arrival };
        }
        self.seen[slot] = client_tick + 1;
        let next = self.next_tick.expect("set above");
        let pos = self.queue.partition_point(|(t, _)| *t < client_tick);
        if self.queue.get(pos).is_some_and(|(t, _)| *t == client_tick) {
            self.stats.duplicates += 1;
            return PushOutcome::Duplicate;
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(input);
        self.queue.insert(pos, (client_tick, buf));
        // Its deadline: the tick that would consume it if nothing changes.
        let deadline = self.next_server_tick as f64 + (client_tick - next) as f64;
        let margin = deadline - arrival;
        if margin < 0.0 {
            self.stats.late_arrivals += 1;
        }
        PushOutcome::Queued { margin }
    }

    fn substitute(&mut self) {
        let mut b = self.spare.pop().unwrap_or_default();
        b.clear();
        if self.cfg.underflow == UnderflowPolicy::RepeatLast {
            b.extend_from_slice(&self.last_input);
        }
        self.out.push(b);
    }

    /// Consumes this server tick's step. `Err` means the client should be kicked.
    pub fn pop(&mut self, server_tick: u64) -> Result<Step<'_>, KickReason> {
        self.spare.append(&mut self.out);
        self.stats.ticks += 1;
        self.next_server_tick = server_tick + 1;
        if self.queue.len() > self.cfg.hard_cap {
            return Err(KickReason::Overflow);
        }
        let Some(next) = self.next_tick else {
            // Nothing ever arrived: an empty step, not (yet) a starved client.
            self.stats.underflows += 1;
            self.substitute();
            return Ok(Step { kind: StepKind::Underflow, accepted: 0, first_client_tick: 0, inputs: &self.out });
        };
        let front = self.queue.front().map(|(t, _)| *t);
        let (kind, count) = match front {
            None if self.cfg.late == LatePolicy::Substitute => (StepKind::Lost, 0),
            None => (StepKind::Underflow, 0),
            Some(t) if t > next => (StepKind::Lost, 0),
            Some(_) if self.queue.len() > self.cfg.max_depth => (StepKind::Merged, self.queue.len() - self.cfg.max_depth + 1),
            Some(_) => (StepKind::Normal, 1),
        };
        match kind {
            StepKind::Underflow => {
                self.starved += 1;
                self.stats.underflows += 1;
                self.shift += 1;
                if self.starved > self.cfg.max_starved_ticks {
                    return Err(KickReason::Starved);
                }
                self.substitute();
                return Ok(Step { kind, accepted: 0, first_client_tick: next, inputs: &self.out });
            }
            StepKind::Lost => {
                // Under the substitute policy an empty queue is a missing input too;
                // consecutive ones still mean a client that cannot keep up.
                if front.is_none() {
                    self.starved += 1;
                    if self.starved > self.cfg.max_starved_ticks {
                        return Err(KickReason::Starved);
                    }
                } else {
                    self.starved = 0;
                }
                self.stats.lost += 1;
                self.substitute();
                self.next_tick = Some(next + 1);
                return Ok(Step { kind, accepted: 1, first_client_tick: next, inputs: &self.out });
            }
            _ => {}
        }
        self.starved = 0;
        // Consume `count` consecutive steps, substituting inside gaps.
        let mut tick = next;
        for _ in 0..count {
            match self.queue.front() {
                Some((t, _)) if *t == tick => {
                    let (_, b) = self.queue.pop_front().expect("front exists");
                    self.last_input.clear();
                    self.last_input.extend_from_slice(&b);
                    self.out.push(b);
                }
                _ => self.substitute(),
            }
            tick += 1;
        }
        self.next_tick = Some(tick);
        if kind == StepKind::Merged {
            self.shift -= count as i64 - 1;
            self.stats.merges += 1;
            self.stats.merged_steps += count as u64;
        } else {
            self.stats.normal += 1;
        }
        Ok(Step { kind, accepted: count as u32, first_client_tick: next, inputs: &self.out })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> JitterConfig {
        JitterConfig { max_depth: 3, hard_cap: 10, max_starved_ticks: 5, ..JitterConfig::default() }
    }

    #[test]
    fn steady_inputs_are_consumed_one_per_tick_with_margins() {
        let mut j = JitterBuffer::new(cfg());
        // Inputs for client ticks 100.. arrive 0.5 tick before the server tick that eats them.
        for i in 0..50u64 {
            let out = j.push(i as f64 - 0.5, 100 + i, &[i as u8]);
            if i > 0 {
                assert_eq!(out, PushOutcome::Queued { margin: 0.5 });
            }
            let s = j.pop(i).unwrap();
            assert_eq!((s.kind, s.accepted, s.first_client_tick), (StepKind::Normal, 1, 100 + i));
            assert_eq!(s.inputs, &[vec![i as u8]]);
        }
        assert_eq!(j.stats().normal, 50);
    }

    #[test]
    fn underflow_repeats_and_delays_then_merge_catches_up() {
        let mut j = JitterBuffer::new(cfg());
        j.push(-0.5, 10, &[1]);
        assert_eq!(j.pop(0).unwrap().accepted, 1);
        // Tick 1: nothing arrived.
        let s = j.pop(1).unwrap();
        assert_eq!((s.kind, s.accepted), (StepKind::Underflow, 0));
        assert_eq!(s.inputs, &[vec![1]], "repeat last");
        // Input 11 arrives late (its tick was 1); it is consumed at tick 2 instead.
        assert!(matches!(j.push(1.2, 11, &[2]), PushOutcome::Queued { margin } if margin > 0.0));
        assert_eq!(j.stats().late_arrivals, 0, "after the underflow its new deadline is tick 2");
        // A burst: 12..=16 arrive at once; depth 5 > 3 merges 3 of them with 11.
        for t in 12..=16 {
            j.push(1.3, t, &[t as u8]);
        }
        let s = j.pop(2).unwrap();
        assert_eq!((s.kind, s.accepted), (StepKind::Merged, 4));
        assert_eq!(s.inputs, &[vec![2], vec![12], vec![13], vec![14]]);
        assert_eq!(j.depth(), 2);
        assert_eq!(j.shift(), 1 - 3, "one underflow, one merge of 4");
    }

    #[test]
    fn duplicates_and_lost_inputs() {
        let mut j = JitterBuffer::new(JitterConfig { underflow: UnderflowPolicy::Empty, ..cfg() });
        j.push(0.0, 5, &[5]);
        assert_eq!(j.push(0.0, 5, &[5]), PushOutcome::Duplicate);
        j.pop(0).unwrap();
        assert_eq!(j.push(0.5, 5, &[5]), PushOutcome::Duplicate, "already consumed");
        // 6 is lost for good; 7 arrives.
        j.push(0.9, 7, &[7]);
        let s = j.pop(1).unwrap();
        assert_eq!((s.kind, s.accepted, s.first_client_tick), (StepKind::Lost, 1, 6));
        assert_eq!(s.inputs, &[Vec::<u8>::new()], "empty policy");
        let s = j.pop(2).unwrap();
        assert_eq!((s.kind, s.first_client_tick), (StepKind::Normal, 7));
        assert_eq!(j.push(2.5, 8, &[0; 300]), PushOutcome::TooLarge);
    }

    #[test]
    fn contiguous_received_stops_at_a_gap() {
        let mut j = JitterBuffer::new(cfg());
        assert_eq!(j.contiguous_received(), None);
        j.push(0.0, 10, &[0]);
        j.push(0.0, 11, &[0]);
        j.push(0.0, 13, &[0]);
        assert_eq!(j.contiguous_received(), Some(11), "12 is missing");
        j.push(0.1, 12, &[0]);
        assert_eq!(j.contiguous_received(), Some(13));
        j.pop(0).unwrap();
        assert_eq!(j.contiguous_received(), Some(13), "consumed inputs stay acknowledged");
    }

    #[test]
    fn substitute_policy_keeps_consumption_aligned() {
        let mut j = JitterBuffer::new(JitterConfig { late: LatePolicy::Substitute, ..cfg() });
        j.push(-0.5, 10, &[1]);
        assert_eq!(j.pop(0).unwrap().accepted, 1);
        // Tick 1: input 11 is missing: substituted, not delayed.
        let s = j.pop(1).unwrap();
        assert_eq!((s.kind, s.accepted, s.first_client_tick), (StepKind::Lost, 1, 11));
        assert_eq!(s.inputs, &[vec![1]]);
        assert_eq!(j.shift(), 0, "no slip");
        // 11 arrives 0.3 tick after its tick ran: dropped, reported 0.3 late; a second
        // copy is a plain duplicate.
        assert!(matches!(j.push(1.3, 11, &[2]), PushOutcome::Late { margin } if (margin + 0.3).abs() < 1e-9));
        assert_eq!(j.push(1.4, 11, &[2]), PushOutcome::Duplicate);
        // 12 on time is consumed at tick 2.
        j.push(1.5, 12, &[3]);
        let s = j.pop(2).unwrap();
        assert_eq!((s.kind, s.first_client_tick), (StepKind::Normal, 12));
    }

    #[test]
    fn late_margin_is_negative() {
        let mut j = JitterBuffer::new(cfg());
        j.push(0.0, 0, &[0]);
        j.pop(0).unwrap();
        // Input 1 is due at tick 1 but arrives at position 1.4: 0.4 tick late.
        assert!(matches!(j.push(1.4, 1, &[1]), PushOutcome::Queued { margin } if (margin + 0.4).abs() < 1e-9));
        assert_eq!(j.stats().late_arrivals, 1);
    }

    #[test]
    fn kicks_on_overflow_and_starvation() {
        let mut j = JitterBuffer::new(cfg());
        for t in 0..12 {
            j.push(0.0, t, &[0]);
        }
        assert_eq!(j.pop(0).unwrap_err(), KickReason::Overflow);
        let mut j = JitterBuffer::new(cfg());
        j.push(0.0, 0, &[0]);
        j.pop(0).unwrap();
        for s in 1..=5 {
            assert!(j.pop(s).is_ok());
        }
        assert_eq!(j.pop(6).unwrap_err(), KickReason::Starved);
    }
}
