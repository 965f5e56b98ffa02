//! The server's input jitter buffer for one client (seeds 001 and 003).
//!
//! Inputs carry the client's tick. Every server tick consumes exactly one step when
//! the next one is there. The buffer keeps Hypersomnia's ledger of *accepted counts*:
//! - `1`: the next input was there (or is missing and was substituted: lost for good,
//!   or late under a substituting [`LatePolicy`]);
//! - `0`: underflow: nothing arrived in time, a substitute (repeat or empty) is used and
//!   the client's input will be consumed one tick later;
//! - `k > 1`: `k` steps were merged into this tick: a pile-up beyond the queue's usual
//!   span, or a wait that turned out to be for lost inputs, taken back at once.
//!
//! What a missing input costs depends on the [`LatePolicy`]. The default substitutes an
//! input that is merely late (one step, no slip of the client's stream) and waits only
//! when the stream itself is late (a latency step, a hitch), where substituting would
//! cost a step per tick until the client's lead has caught up.
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
    /// Substitute while at most `substitute_run` consecutive inputs are missing, then
    /// delay. One packet late by less than its send interval is jitter: substituting
    /// costs one step per missing input and no slip. A longer silence means the
    /// client's stream itself is late (a latency step, a hitch, a burst of loss, a
    /// drifting clock): substituting would drop every input until the client's lead
    /// catches up, while waiting costs one step per tick of delay and keeps the rest.
    Adaptive { substitute_run: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JitterConfig {
    /// Ticks queued (from the next input to the newest, gaps included) beyond this
    /// many *above the queue's usual span* are merged into the current tick. That cuts
    /// a pile-up (a client that hitched and then sent a burst) but leaves alone a queue
    /// that a long lead keeps deep (on a lossy link the lead covers late copies, ten
    /// ticks or more): merging there would take back the very lead the client's loop
    /// asked for, every few ticks. The usual span is a one-second average.
    pub max_depth: usize,
    /// A client is kicked (flooding, or far ahead) whose queue holds more inputs than
    /// this, or reaches more ticks than this beyond the ticks the server has waited
    /// for it. Merges take at most this many inputs (and at most 255) per step.
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
            max_depth: 64,
            hard_cap: 120,
            underflow: UnderflowPolicy::RepeatLast,
            max_starved_ticks: 300,
            max_input_size: 256,
            late: LatePolicy::Adaptive { substitute_run: 2 },
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
    /// Consecutive ticks that found the queue empty.
    empty_run: u32,
    /// Average span of the queue in ticks (see `JitterConfig::max_depth`).
    usual_span: f64,
    /// Underflows since the last real input was consumed: ticks that already ran with a
    /// substitute while waiting for inputs that may turn out lost.
    owed: u64,
    /// Recently received client ticks (tick + 1; 0 = empty), so a late first copy can
    /// be told from a repeat of an input already used.
    seen: Vec<u64>,
}

const SEEN: usize = 1024;
/// The most inputs one step may carry (a count in one byte on the wire).
pub const MAX_STEP_INPUTS: usize = u8::MAX as usize;
/// Per-tick weight of the usual span's average (about a second at 60 Hz): it follows a
/// lead the client changes by dilation, not a burst.
const SPAN_AVERAGE: f64 = 1.0 / 60.0;

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
            empty_run: 0,
            usual_span: 0.0,
            owed: 0,
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

    /// The most inputs one step takes. A step's inputs are counted in a byte on the
    /// wire, and the buffers made at creation cover `hard_cap` of them; a longer
    /// pile-up is merged over several ticks.
    fn max_merge(&self) -> usize {
        self.cfg.hard_cap.clamp(2, MAX_STEP_INPUTS)
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
        let span = self.queue.back().map_or(0, |(t, _)| (t + 1).saturating_sub(next) as usize);
        // Far ahead: the queue reaches beyond the hard cap past what it waited for (a
        // client back from a silence resends from where the server stopped, so the
        // ticks waited for are not its fault). Only a broken or hostile client sends an
        // input this far beyond its stream.
        if span.saturating_sub(self.owed as usize) > self.cfg.hard_cap {
            return Err(KickReason::Overflow);
        }
        let max_merge = self.max_merge();
        let limit = self.usual_span.round() as usize + self.cfg.max_depth;
        if self.owed == 0 {
            // While waiting the queue is empty by definition; the usual span is the one
            // from before the wait.
            self.usual_span += (span as f64 - self.usual_span) * SPAN_AVERAGE;
        }
        let front = self.queue.front().map(|(t, _)| *t);
        let substitute = match self.cfg.late {
            LatePolicy::Delay => false,
            LatePolicy::Substitute => true,
            LatePolicy::Adaptive { substitute_run } => self.empty_run < substitute_run,
        };
        self.empty_run = if front.is_none() { self.empty_run.saturating_add(1) } else { 0 };
        let (kind, count) = match front {
            None if substitute => (StepKind::Lost, 0),
            None => (StepKind::Underflow, 0),
            // A wait that was for lost inputs (later ones arrived first): the
            // underflow ticks already ran with substitutes, so they stand in for the
            // lost inputs, which this one step skips. That takes back the slip the wait
            // made instead of substituting each lost input again, a tick apiece.
            Some(t) if t > next && self.owed > 0 => {
                (StepKind::Merged, ((t - next).min(self.owed) as usize + 1).min(max_merge))
            }
            Some(t) if t > next => (StepKind::Lost, 0),
            Some(_) if span > limit => (StepKind::Merged, (span - limit + 1).min(max_merge)),
            Some(_) => (StepKind::Normal, 1),
        };
        match kind {
            StepKind::Underflow => {
                self.starved += 1;
                self.stats.underflows += 1;
                self.shift += 1;
                self.owed += 1;
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
                    self.owed = 0;
                }
                _ => {
                    self.owed = self.owed.saturating_sub(1);
                    self.substitute()
                }
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
        JitterConfig {
            max_depth: 3,
            hard_cap: 10,
            max_starved_ticks: 5,
            late: LatePolicy::Delay,
            ..JitterConfig::default()
        }
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
    fn adaptive_substitutes_a_short_gap_and_waits_on_a_long_one() {
        let mut j = JitterBuffer::new(JitterConfig { late: LatePolicy::Adaptive { substitute_run: 2 }, ..cfg() });
        j.push(-0.5, 10, &[1]);
        assert_eq!(j.pop(0).unwrap().kind, StepKind::Normal);
        // Two missing inputs in a row are jitter: substituted, no slip.
        assert_eq!(j.pop(1).unwrap().kind, StepKind::Lost);
        assert_eq!(j.pop(2).unwrap().kind, StepKind::Lost);
        assert_eq!(j.shift(), 0);
        // The third empty tick means the stream itself is late: wait for it.
        let s = j.pop(3).unwrap();
        assert_eq!((s.kind, s.accepted, s.first_client_tick), (StepKind::Underflow, 0, 13));
        assert_eq!(j.shift(), 1);
        // It comes: consumed a tick later than planned, the slip stays (that lead is
        // what the late stream now needs).
        assert!(matches!(j.push(3.5, 13, &[4]), PushOutcome::Queued { margin } if margin > 0.0));
        let s = j.pop(4).unwrap();
        assert_eq!((s.kind, s.first_client_tick), (StepKind::Normal, 13));
        assert_eq!(j.shift(), 1);
        // One miss after the stream is back is substituted again.
        assert_eq!(j.pop(5).unwrap().kind, StepKind::Lost);
    }

    #[test]
    fn a_wait_for_lost_inputs_is_taken_back_in_one_step() {
        let mut j = JitterBuffer::new(JitterConfig { late: LatePolicy::Delay, ..cfg() });
        j.push(-0.5, 10, &[1]);
        j.pop(0).unwrap();
        // Inputs 11..=14 are lost in a burst; the buffer waits three ticks.
        for s in 1..=3 {
            assert_eq!(j.pop(s).unwrap().kind, StepKind::Underflow);
        }
        assert_eq!(j.shift(), 3);
        // 15 arrives: 11..=14 were lost. The three waits stand in for three of them,
        // so this one step skips all four and the slip is gone.
        j.push(3.2, 15, &[5]);
        let s = j.pop(4).unwrap();
        assert_eq!((s.kind, s.accepted, s.first_client_tick), (StepKind::Merged, 4, 11));
        assert_eq!(s.inputs, &[vec![1], vec![1], vec![1], vec![1]], "substitutes for the lost inputs");
        assert_eq!(j.shift(), 0);
        let s = j.pop(5).unwrap();
        assert_eq!((s.kind, s.first_client_tick), (StepKind::Normal, 15));
        // A shorter loss than the wait: only the lost input is skipped, with 17.
        for s in 6..=8 {
            assert_eq!(j.pop(s).unwrap().kind, StepKind::Underflow);
        }
        j.push(8.5, 17, &[7]);
        let s = j.pop(9).unwrap();
        assert_eq!((s.kind, s.accepted, s.first_client_tick), (StepKind::Merged, 2, 16));
        assert_eq!(j.shift(), 2, "the rest of the wait was a real delay");
    }

    #[test]
    fn merges_a_pile_up_but_not_a_steady_deep_queue() {
        // The client's loop grows its lead from 1 to 12 ticks by dilation (one tick per
        // 20, 5% fast) and holds it: the queue gets 12 deep and is never merged.
        let mut j = JitterBuffer::new(JitterConfig { max_depth: 4, hard_cap: 100, ..cfg() });
        let mut sent = 0u64;
        for s in 0..600u64 {
            let lead = (1 + s / 20).min(12);
            while sent <= s + lead {
                j.push(s as f64, sent, &[0]);
                sent += 1;
            }
            assert_eq!(j.pop(s).unwrap().kind, StepKind::Normal, "tick {s}");
        }
        assert_eq!(j.depth(), 12);
        // A burst of 8 on top: the queue spans 20 ticks against a usual 13, more than 4
        // over, so this step merges the 3 beyond that with its own input.
        for t in sent..sent + 8 {
            j.push(600.0, t, &[0]);
        }
        let s = j.pop(600).unwrap();
        assert_eq!((s.kind, s.accepted), (StepKind::Merged, 20 - (13 + 4) + 1));
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

    #[test]
    fn an_input_far_beyond_the_stream_is_an_overflow() {
        // Two inputs in a row, then one two billion ticks ahead: the queue is only 3
        // deep, but it reaches past the hard cap.
        let mut j = JitterBuffer::new(cfg());
        j.push(0.0, 0, &[0]);
        j.push(0.0, 1, &[1]);
        j.push(0.0, 2_000_000_000, &[2]);
        assert_eq!(j.pop(0).unwrap_err(), KickReason::Overflow);
    }

    #[test]
    fn a_stream_back_from_a_long_silence_merges_in_bounded_steps() {
        // Default config: the server waits 290 ticks for a silent client (under the
        // starvation limit), then the client's stream resumes 290 ticks on. The ticks
        // waited for are merged back, at most `hard_cap` (120) inputs a step, and no
        // input of the new stream is lost.
        let mut j = JitterBuffer::new(JitterConfig::default());
        j.push(0.0, 0, &[0]);
        assert_eq!(j.pop(0).unwrap().kind, StepKind::Normal);
        let mut server = 1;
        for _ in 0..290 {
            assert!(j.pop(server).is_ok());
            server += 1;
        }
        for t in 291..301 {
            j.push(server as f64, t, &[t as u8]);
        }
        let mut merged = Vec::new();
        let mut last_input = Vec::new();
        loop {
            let s = j.pop(server).expect("not kicked");
            server += 1;
            assert!(s.accepted as usize <= 120 && s.inputs.len() == s.accepted as usize, "{:?}", (s.kind, s.accepted));
            if s.kind != StepKind::Merged {
                // The wait is taken back; the stream goes on from its next input.
                assert_eq!((s.kind, s.first_client_tick), (StepKind::Normal, 292));
                break;
            }
            merged.push(s.accepted);
            last_input = s.inputs.last().cloned().unwrap_or_default();
        }
        assert_eq!(last_input, vec![(291 % 256) as u8], "the first input of the new stream is in the last merge");
        assert!(merged.len() >= 3, "290 ticks in steps of at most 120: {merged:?}");
    }
}
