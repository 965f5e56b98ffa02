//! The buffer itself: `push` as inputs arrive, `pop` once per server tick.

use std::collections::VecDeque;

use crate::engine::Tick;

use super::{
    JitterConfig, JitterStats, KickReason, LOSSY_SUBSTITUTE_RUN, LatePolicy, PushOutcome, Step, StepKind,
    UnderflowPolicy,
};

#[derive(Debug)]
/// The server's input jitter buffer for one client (see the module docs).
pub struct JitterBuffer {
    cfg: JitterConfig,
    /// Queued inputs by client tick, ascending; may have gaps.
    queue: VecDeque<(Tick, Vec<u8>)>,
    /// The client tick the next step should consume (a stream that reaches `Tick::MAX`
    /// stays there).
    next_tick: Option<Tick>,
    /// Server tick that will consume `next_tick` if nothing underflows or merges.
    next_server_tick: Tick,
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
    /// The client sends every tick (see [`LatePolicy::Adaptive`]).
    every_tick: bool,
    /// Ticks since the buffer last waited for this client (saturating).
    since_wait: u32,
}

const SEEN: usize = 1024;
/// The most inputs one step may carry (a count in one byte on the wire).
pub(super) const MAX_STEP_INPUTS: usize = u8::MAX as usize;
/// Ticks after a wait during which a client that sends every tick gets the short
/// substitute run again (about a second at 60 Hz): the wait showed its stream itself
/// late (its own hitch, a latency step), and the silences that follow are then its
/// clock catching up, not loss. (Two clients stalled for 1.5 s on a link losing 5%,
/// five drop patterns, `relay_predict_alloc`: with their later silences substituted
/// too they missed 7% more steps than under the short run alone; waited for, 4% fewer.
/// The lab's lossy scenarios read the same either way.)
const RECENT_WAIT_TICKS: u32 = 60;
/// Per-tick weight of the usual span's average (about a second at 60 Hz): it follows a
/// lead the client changes by dilation, not a burst.
const SPAN_AVERAGE: f64 = 1.0 / 60.0;

impl JitterBuffer {
    /// An empty buffer. Its queue is allocated up front for `hard_cap` inputs, so a deep
    /// burst does not allocate mid-game.
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
            every_tick: false,
            since_wait: u32::MAX,
        }
    }

    /// How many ticks apart the client's input packets are, as the server measures
    /// them: from a client that sends every tick the adaptive policy substitutes longer
    /// silences (see [`LatePolicy::Adaptive`]).
    pub fn set_send_interval(&mut self, ticks: u32) {
        self.every_tick = ticks == 1;
    }

    /// The counters since the buffer was made.
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
    pub fn contiguous_received(&self) -> Option<Tick> {
        // (In u64: the run may end at `Tick::MAX`.)
        let next = u64::from(self.next_tick?);
        let run = self.queue.iter().enumerate().take_while(|(i, (t, _))| u64::from(*t) == next + *i as u64).count();
        (next + run as u64).checked_sub(1).map(|t| t as Tick)
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
    pub fn push(&mut self, arrival: f64, client_tick: Tick, input: &[u8]) -> PushOutcome {
        if input.len() > self.cfg.max_input_size {
            return PushOutcome::TooLarge;
        }
        let next = *self.next_tick.get_or_insert(client_tick);
        let slot = client_tick as usize % SEEN;
        let seen_before = self.seen[slot] == u64::from(client_tick) + 1;
        if self.queue.is_empty() && self.stats.ticks == 0 && client_tick < next {
            // Before the first step, an older input simply becomes the start.
            self.next_tick = Some(client_tick);
        } else if client_tick < next {
            if seen_before || next - client_tick >= SEEN as Tick {
                self.stats.duplicates += 1;
                return PushOutcome::Duplicate;
            }
            // Its tick was substituted: too late to use, but say how late.
            self.seen[slot] = u64::from(client_tick) + 1;
            self.stats.late_arrivals += 1;
            self.stats.late_substituted += 1;
            let deadline = self.next_server_tick as f64 - (next - client_tick) as f64;
            return PushOutcome::Late { margin: deadline - arrival };
        }
        // Past the cap the next tick kicks this client; until then more inputs would
        // only cost memory and sorted inserts (a burst between two ticks is bounded
        // by nothing else).
        if self.queue.len() > self.room() {
            self.stats.refused += 1;
            return PushOutcome::Overflow;
        }
        self.seen[slot] = u64::from(client_tick) + 1;
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

    /// The most inputs the queue may hold: `hard_cap`, plus the ticks the server has
    /// waited for this client (at most `max_starved_ticks`, past which it is kicked
    /// anyway). A stream held up on its path (a stall on a FIFO route) arrives all at
    /// once when the path clears, every input the server waited for in one burst: those
    /// inputs are not a flood, and the wait they end is taken back by merges (see
    /// `pop`). Counted as the span rule counts them, so a client is never kicked for
    /// the inputs of a wait the server already accepted. (The buffers made at creation
    /// cover `hard_cap` inputs; a longer queue after a wait allocates.)
    fn room(&self) -> usize {
        self.cfg.hard_cap + self.owed.min(u64::from(self.cfg.max_starved_ticks)) as usize
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

    /// Inputs queued now.
    #[cfg(test)]
    pub(super) fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Consumes this server tick's step. `Err` means the client should be kicked.
    pub fn pop(&mut self, server_tick: Tick) -> Result<Step<'_>, KickReason> {
        self.spare.append(&mut self.out);
        self.stats.ticks += 1;
        self.next_server_tick = server_tick + 1;
        if self.queue.len() > self.room() {
            return Err(KickReason::Overflow);
        }
        let Some(next) = self.next_tick else {
            // Nothing ever arrived: an empty step, not (yet) a starved client.
            self.stats.underflows += 1;
            self.substitute();
            return Ok(Step { kind: StepKind::Underflow, accepted: 0, first_client_tick: 0, inputs: &self.out });
        };
        let span = self.queue.back().map_or(0, |(t, _)| (u64::from(*t) + 1).saturating_sub(u64::from(next)) as usize);
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
            LatePolicy::Adaptive { substitute_run } if self.every_tick && self.since_wait > RECENT_WAIT_TICKS => {
                self.empty_run < substitute_run.max(LOSSY_SUBSTITUTE_RUN)
            }
            LatePolicy::Adaptive { substitute_run } => self.empty_run < substitute_run,
        };
        self.empty_run = if front.is_none() { self.empty_run.saturating_add(1) } else { 0 };
        self.since_wait = self.since_wait.saturating_add(1);
        let (kind, count) = match front {
            None if substitute => (StepKind::Lost, 0),
            None => (StepKind::Underflow, 0),
            // A wait that was for lost inputs (later ones arrived first): the
            // underflow ticks already ran with substitutes, so they stand in for the
            // lost inputs, which this one step skips. That takes back the slip the wait
            // made instead of substituting each lost input again, a tick apiece.
            Some(t) if t > next && self.owed > 0 => {
                (StepKind::Merged, (u64::from(t - next).min(self.owed) as usize + 1).min(max_merge))
            }
            Some(t) if t > next => (StepKind::Lost, 0),
            Some(_) if span > limit => (StepKind::Merged, (span - limit + 1).min(max_merge)),
            Some(_) => (StepKind::Normal, 1),
        };
        match kind {
            StepKind::Underflow => {
                self.since_wait = 0;
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
                self.next_tick = Some(next.saturating_add(1));
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
            tick = tick.saturating_add(1);
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
