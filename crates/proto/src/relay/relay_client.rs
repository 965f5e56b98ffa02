//! The relay client's synchronisation layer: its tick clock, steered by the
//! input-lead loop on the margins the server reports; its inputs, sent with redundancy
//! until acknowledged; and the canonical steps, delivered to the engine in order and
//! exactly once. Prediction and reconciliation build on this (the relay client session).
//!
//! Like the server, it borrows the caller's transport on each call. It allocates
//! nothing per tick after construction, stalls and merges included: inputs and steps
//! live in buffers made up front, sized from the config. (The interpolation buffer's
//! window, in `sync::interp`, still grows to its high-water mark.)

use std::collections::VecDeque;
use std::net::SocketAddr;

use super::messages::{self, PlayerStep, StepRules, UpdateView};
use super::step_queue::{StepQueue, StepQueueSize};
use super::step_receiver::{StepReceiver, Taken};
use crate::clock::Micros;
use crate::engine::Tick;
use crate::stream::{SACK_BYTES, SendLedger, SendPlan};
use crate::sync::interp::{AdaptiveInterpolation, InterpConfig, RemoteTimeline};
use crate::sync::redundancy::{LeadCover, MAX_COPIES, RedundancyConfig, RedundancyPlanner};
use crate::sync::{InputLeadController, LeadConfig, ServerTally};
use crate::tick::{TickClock, TickClockConfig, TickEvent};
use crate::transport::{CHANNEL_UNRELIABLE, DisconnectReason, Event, PeerId, SendError, Transport};
use crate::wire::MAX_DATAGRAM_SIZE;

#[derive(Debug, Clone, PartialEq)]
/// Settings of a [`RelayClient`].
pub struct RelayClientConfig {
    /// The local tick clock.
    pub tick: TickClockConfig,
    /// Client ticks between input packets (k_c) on a link that loses little.
    pub send_interval: u32,
    /// Send every tick while the uplink loses more than half the lead loop's late
    /// budget (`lead.late_rate` / 2, measured as the copies are and held as long).
    /// Each lost packet delays the inputs it carried by a send interval, so on a lossy
    /// link the interval sets the lead: at 33% loss every tick takes about 5 ticks
    /// (80 ms at 60 Hz) off it, for twice the input packets. Off: always
    /// `send_interval`.
    pub every_tick_when_lossy: bool,
    /// The input-lead loop that steers the clock from the server's margin reports.
    pub lead: LeadConfig,
    /// How many copies of each input to send, from the measured loss.
    pub redundancy: RedundancyConfig,
    /// Interpolation of the server's timeline (its `send_interval` is the server's).
    pub interp: InterpConfig,
    /// Largest input in bytes; larger ones are refused.
    pub max_input_size: usize,
    /// Steps whose inputs are not exactly this long are refused (fixed-size sessions).
    pub input_size: Option<usize>,
    /// Steps naming a player id at or above this are refused.
    pub max_players: Option<u32>,
}

impl Default for RelayClientConfig {
    fn default() -> Self {
        RelayClientConfig {
            tick: TickClockConfig::default(),
            send_interval: 2,
            every_tick_when_lossy: true,
            lead: LeadConfig::default(),
            redundancy: RedundancyConfig::default(),
            interp: InterpConfig::default(),
            max_input_size: 64,
            input_size: None,
            max_players: None,
        }
    }
}

/// Time-sync figures for one client (what the C ABI exposes).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SyncStats {
    /// How long before the server consumes it an input is sampled, estimated as half
    /// the round trip plus the median arrival margin (for display: the loop itself
    /// uses margins only, never RTT).
    pub lead_ticks: f64,
    /// The ε-quantile of arrival margin expected for an input sent now (ticks).
    pub margin_quantile_ticks: f64,
    /// Inputs waiting in this client's buffer on the server.
    pub server_buffer_depth: u32,
    /// Server steps that used no input of ours (underflow), merged several, or
    /// substituted a lost one.
    pub empty_steps: u64,
    /// Server steps that merged several of our inputs.
    pub merged_steps: u64,
    /// The tick clock's current time scale (1.0 = real time).
    pub time_scale: f64,
    /// Discrete clock corrections (snaps) and loop re-acquisitions.
    pub clock_corrections: u64,
    /// Ticks the rendered server timeline is behind the minimum-delay timeline.
    pub interp_delay_ticks: f64,
    /// Copies of each input currently sent (1 = no redundancy).
    pub copies: u32,
    /// Client ticks between input packets now ([`RelayClient::send_interval`]).
    pub send_interval: u32,
    /// The uplink loss figure that steers the copies (0..=1).
    pub uplink_loss: f64,
    /// The chance that an uplink packet is lost when the one before it was (0..=1):
    /// the bursts that steer the copies too.
    pub uplink_loss_burst: f64,
    /// Estimated clock drift against the server, in parts per million.
    pub drift_ppm: f64,
    /// Newest canonical step received in order.
    pub authoritative_tick: Tick,
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// What a [`RelayClient`] reports about its connection to the server.
pub enum RelayClientEvent {
    /// The connection to the server is up.
    Connected {
        /// The server's peer id.
        server: PeerId,
    },
    /// The connection to the server is gone.
    Disconnected {
        /// Why it ended.
        reason: DisconnectReason,
    },
}

/// Why a [`RelayClient`] call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelayClientError {
    #[error("no tick is due for an input: call ticks_due first (next input tick {0})")]
    /// An input was given with no tick due for it; the tick is the next input tick.
    NoTickDue(Tick),
    #[error("input of {size} bytes exceeds the maximum of {max}")]
    /// The input is larger than the configured maximum.
    InputTooLarge {
        /// The input's size in bytes.
        size: usize,
        /// The largest input allowed.
        max: usize,
    },
    #[error(transparent)]
    /// The transport refused the datagram.
    Send(#[from] SendError),
}

/// Server checksum reports kept until the owner takes them.
const CHECKS_QUEUED: usize = 16;
/// Canonical steps held for the engine. Beyond this the client takes no more until
/// the engine has caught up: the server repeats every step the client has not
/// acknowledged, and it sends at most `max_steps_per_update` past the acknowledged one
/// in an update, so the queue stays well below this while the engine runs.
const QUEUED_STEPS: usize = 128;
/// Datagrams' worth of room in the step queue beyond one-input steps, for merges.
const QUEUED_MERGE_DATAGRAMS: usize = 4;
/// Player entries per step made up front when the config sets no player limit.
const DEFAULT_STEP_PLAYERS: usize = 8;
/// Most missing inputs `ticks_due` fills in at once (repeating the last one).
const MAX_REPEATED_INPUTS: Tick = 1024;
/// Inputs one packet carries at most (a count in one byte on the wire).
const MAX_INPUTS_PER_PACKET: usize = u8::MAX as usize;

/// The relay client's synchronisation layer (see the module docs). It borrows the
/// caller's transport on each call.
pub struct RelayClient {
    cfg: RelayClientConfig,
    server: Option<PeerId>,
    my_player: Option<u32>,
    clock: Option<TickClock>,
    lead: InputLeadController,
    interp: AdaptiveInterpolation,
    start_local: Micros,
    start_pos: f64,
    next_tick: Tick,
    last_input: Vec<u8>,
    /// The inputs' mean size (bytes), for the copies' byte budget.
    input_bytes: f64,
    /// The newest inputs, by tick in a ring: every one a send may still carry.
    inputs: Vec<Vec<u8>>,
    /// What the inputs' stream sent and what the server acknowledged.
    stream: SendLedger,
    /// A send boundary passed since the last send.
    send_pending: bool,
    redundancy: RedundancyPlanner,
    steps: StepQueue,
    /// Steps that arrived out of order or in pieces, until they can go in `steps`.
    receiver: StepReceiver,
    sack: [u8; SACK_BYTES],
    /// The server started our step stream again at this tick (we fell behind it).
    restarted: Option<Tick>,
    view: UpdateView,
    rules: StepRules,
    first_input: Option<Tick>,
    checks: VecDeque<(Tick, u64)>,
    malformed: u64,
    depth: u32,
    empty: u64,
    merged: u64,
    snaps: u64,
    events: VecDeque<RelayClientEvent>,
    buf: Vec<u8>,
}

impl RelayClient {
    /// A client on `cfg`, with its buffers made up front; not connected yet.
    pub fn new(cfg: RelayClientConfig) -> Self {
        let lead = InputLeadController::new(cfg.lead);
        let interp = AdaptiveInterpolation::new(cfg.interp);
        let redundancy = RedundancyPlanner::new(cfg.redundancy, 2);
        // Only the newest `copies × send_interval` inputs are ever sent, so no more are
        // kept: their buffers are all made now.
        let kept = inputs_kept(&cfg);
        let inputs = (0..kept).map(|_| Vec::with_capacity(cfg.max_input_size)).collect();
        let size = step_queue_size(&cfg);
        let steps = StepQueue::new(size);
        // Deltas of one-input steps, with room for a merge; in full, what a datagram
        // holds (the step queue's own bound on a merged step).
        let one_input_step = 1 + size.players * (7 + cfg.max_input_size);
        let rules =
            StepRules { max_input: cfg.max_input_size, input_size: cfg.input_size, max_players: cfg.max_players };
        let receiver = StepReceiver::new(one_input_step + 64, one_input_step.max(MAX_DATAGRAM_SIZE), &rules);
        let last_input = Vec::with_capacity(cfg.max_input_size);
        RelayClient {
            cfg,
            server: None,
            my_player: None,
            clock: None,
            lead,
            interp,
            start_local: 0,
            start_pos: 0.0,
            next_tick: 0,
            last_input,
            input_bytes: 0.0,
            inputs,
            stream: SendLedger::new(0, kept),
            send_pending: false,
            redundancy,
            steps,
            receiver,
            sack: [0; SACK_BYTES],
            restarted: None,
            view: UpdateView::with_datagram_capacity(),
            rules,
            first_input: None,
            checks: VecDeque::with_capacity(CHECKS_QUEUED),
            malformed: 0,
            depth: 0,
            empty: 0,
            merged: 0,
            snaps: 0,
            events: VecDeque::new(),
            buf: Vec::with_capacity(MAX_DATAGRAM_SIZE),
        }
    }

    /// Starts connecting to the server at `addr`.
    pub fn connect<T: Transport + ?Sized>(
        &mut self,
        now: Micros,
        ep: &mut T,
        addr: SocketAddr,
    ) -> Result<PeerId, SendError> {
        let peer = ep.connect(now, addr)?;
        self.server = Some(peer);
        Ok(peer)
    }

    /// Whether the clock runs (the first server update has arrived).
    pub fn started(&self) -> bool {
        self.clock.is_some()
    }

    /// Our player id in the canonical steps, once known.
    pub fn player(&self) -> Option<u32> {
        self.my_player
    }

    /// The next event, oldest first.
    pub fn poll_event(&mut self) -> Option<RelayClientEvent> {
        self.events.pop_front()
    }

    /// The next canonical step, in tick order, each exactly once, as an owned copy
    /// (which allocates): an engine loop uses [`RelayClient::peek_step`] and
    /// [`RelayClient::discard_step`] instead.
    pub fn poll_step(&mut self) -> Option<(Tick, Vec<PlayerStep>)> {
        let (tick, players) = self.steps.front()?;
        let step = (tick, players.to_vec());
        self.steps.pop_front();
        Some(step)
    }

    /// The next canonical step without taking it (no allocation): follow with
    /// [`RelayClient::discard_step`].
    pub fn peek_step(&self) -> Option<(Tick, &[PlayerStep])> {
        self.steps.front()
    }

    /// Drops the step [`RelayClient::peek_step`] showed, keeping its buffers for reuse.
    pub fn discard_step(&mut self) {
        self.steps.pop_front();
        self.deliver_steps();
    }

    /// The tick the server started our step stream again at, once (we had fallen
    /// behind the steps it keeps; a snapshot of that tick is on its way).
    pub fn take_restart(&mut self) -> Option<Tick> {
        self.restarted.take()
    }

    /// Moves the steps that are complete and in order to the queue.
    fn deliver_steps(&mut self) {
        let mine = self.my_player.unwrap_or(u32::MAX);
        let (empty, merged) = (&mut self.empty, &mut self.merged);
        self.receiver.deliver(&mut self.steps, &self.rules, |_, bytes| match messages::step_accepted(bytes, mine) {
            Some(0) => *empty += 1,
            Some(1) | None => {}
            Some(_) => *merged += 1,
        });
    }

    /// Canonical steps received and not yet taken.
    pub fn queued_steps(&self) -> usize {
        self.steps.len()
    }

    /// The client tick of the first of our inputs the server consumed (with the
    /// accepted counts, which input each step used), once the server has said.
    pub fn first_input(&self) -> Option<Tick> {
        self.first_input
    }

    /// The next server checksum report `(tick, checksum)` received (in arrival order,
    /// each at most once per update carrying it; duplicates are possible).
    pub fn take_check(&mut self) -> Option<(Tick, u64)> {
        self.checks.pop_front()
    }

    /// Server updates refused by strict decoding.
    pub fn malformed(&self) -> u64 {
        self.malformed
    }

    /// The client tick the next input is for.
    pub fn next_input_tick(&self) -> Tick {
        self.next_tick
    }

    /// Whether a tick is due for an input (see [`RelayClient::record_input`]).
    pub fn input_due(&self) -> bool {
        self.clock.as_ref().is_some_and(|c| self.next_tick < c.tick())
    }

    fn phase(&self, clock: &TickClock, now: Micros) -> f64 {
        clock.position() - self.start_pos - now.saturating_sub(self.start_local) as f64 / self.cfg.tick.tick_us
    }

    /// Advances the tick clock; returns how many ticks to simulate now. Push one input
    /// for each with [`RelayClient::push_input`]. Ticks left without an input repeat
    /// the previous one.
    pub fn ticks_due<T: Transport + ?Sized>(&mut self, now: Micros, ep: &mut T) -> u32 {
        let Some(mut clock) = self.clock.take() else { return 0 };
        // Inputs the engine did not push for earlier due ticks: repeat the last one. At
        // most a bounded run of them (the clock only jumps that far on garbage): the
        // server substitutes for any skipped.
        if clock.tick().saturating_sub(self.next_tick) > MAX_REPEATED_INPUTS {
            self.next_tick = clock.tick() - MAX_REPEATED_INPUTS;
        }
        while self.next_tick < clock.tick() {
            self.record(now, &clock, None);
            let _ = self.send_pending(now, ep);
        }
        let n = clock.advance(now);
        while let Some(e) = clock.poll_event() {
            match e {
                TickEvent::SnapForward { .. } | TickEvent::SnapBack { .. } => self.snaps += 1,
                TickEvent::Hitch { .. } => self.lead.reset(),
            }
        }
        let phase = self.phase(&clock, now);
        let ctl = self.lead.control(phase);
        if let Some(s) = ctl.snap_ticks {
            clock.snap(s);
        }
        clock.set_scale(ctl.scale);
        // Uplink loss and its bursts are the transport's own, from its acks (the planner
        // waits for enough of them).
        if let Some(st) = self.server.and_then(|p| ep.stats(p)) {
            let cover = LeadCover {
                late_rate: self.cfg.lead.late_rate,
                spare_ticks: self.lead.expected_margin_quantile(phase).unwrap_or(0.0),
                send_interval_ticks: self.send_interval(),
            };
            // One copy of the stream: each input and its length byte, every tick.
            let cap = self.cfg.redundancy.copy_cap((self.input_bytes + 1.0) * 1e6 / self.cfg.tick.tick_us);
            self.redundancy.update(now, st.loss, st.loss_counts, cap, Some(&cover));
        }
        self.clock = Some(clock);
        n
    }

    /// Pushes the local input for the next due tick and returns that tick. Every
    /// [`RelayClient::send_interval`] ticks the unacknowledged inputs go to the server.
    pub fn push_input<T: Transport + ?Sized>(
        &mut self,
        now: Micros,
        ep: &mut T,
        input: &[u8],
    ) -> Result<Tick, RelayClientError> {
        let tick = self.record_input(now, input)?;
        self.send_pending(now, ep)?;
        Ok(tick)
    }

    /// [`RelayClient::push_input`] without the sending: records the input for the next
    /// due tick; [`RelayClient::send_pending`] sends when a send boundary has passed.
    pub fn record_input(&mut self, now: Micros, input: &[u8]) -> Result<Tick, RelayClientError> {
        if input.len() > self.cfg.max_input_size {
            return Err(RelayClientError::InputTooLarge { size: input.len(), max: self.cfg.max_input_size });
        }
        let Some(clock) = self.clock.take() else { return Err(RelayClientError::NoTickDue(self.next_tick)) };
        let r = if self.next_tick < clock.tick() {
            Ok(self.record(now, &clock, Some(input)))
        } else {
            Err(RelayClientError::NoTickDue(self.next_tick))
        };
        self.clock = Some(clock);
        r
    }

    /// Client ticks between input packets now: `send_interval`, or 1 while the uplink
    /// is lossy ([`RelayClientConfig::every_tick_when_lossy`]).
    pub fn send_interval(&self) -> u32 {
        if self.cfg.every_tick_when_lossy && self.redundancy.lossy() { 1 } else { self.cfg.send_interval.max(1) }
    }

    /// Sends the unacknowledged inputs if a send boundary (every
    /// [`RelayClient::send_interval`] ticks) has passed since the last send.
    pub fn send_pending<T: Transport + ?Sized>(&mut self, now: Micros, ep: &mut T) -> Result<(), RelayClientError> {
        if std::mem::take(&mut self.send_pending) {
            self.send_inputs(now, ep)?;
        }
        Ok(())
    }

    /// Records `input` (None: the previous one again) for the next input tick.
    fn record(&mut self, now: Micros, clock: &TickClock, input: Option<&[u8]>) -> Tick {
        let tick = self.next_tick;
        // (It starts from the server's tick: held at `Tick::MAX`, as the clock is.)
        self.next_tick = self.next_tick.saturating_add(1);
        self.lead.on_input_sent(tick, self.phase(clock, now));
        if let Some(input) = input {
            self.last_input.clear();
            self.last_input.extend_from_slice(input);
            self.input_bytes += (input.len() as f64 - self.input_bytes) / 64.0;
        }
        // (The input it takes the place of is older than any send carries.)
        let n = self.inputs.len();
        let slot = &mut self.inputs[tick as usize % n];
        slot.clear();
        slot.extend_from_slice(&self.last_input);
        if (u64::from(tick) + 1) % u64::from(self.send_interval()) == 0 {
            self.send_pending = true;
        }
        tick
    }

    /// Sends the server, as one run of ticks, every unacknowledged input of the newest
    /// `copies × send_interval` ticks (so each goes in `copies` packets a send interval
    /// apart and then never again: a lost one is substituted on the server, and the
    /// copies are there so that it rarely is), with the acknowledgement of the steps.
    fn send_inputs<T: Transport + ?Sized>(&mut self, now: Micros, ep: &mut T) -> Result<(), RelayClientError> {
        let Some(server) = self.server else { return Ok(()) };
        let copies = self.redundancy.copies();
        let plan = SendPlan {
            copies: copies.clamp(1, u8::MAX as u32) as u8,
            resend_copies: 0,
            resend_after: None,
            // The server's jitter buffer takes whatever comes (past its cap it kicks).
            window: usize::MAX,
        };
        let oldest = self.next_tick.saturating_sub(copies.saturating_mul(self.send_interval()));
        // No more inputs than the transport's largest message holds, each its length
        // byte and at most `max_input_size` bytes (6 copies of 2 ticks of 255-byte
        // inputs would not fit even 1,200 bytes).
        let room = ep.max_unreliable().saturating_sub(messages::CLIENT_INPUTS_HEAD_MAX) / (1 + self.cfg.max_input_size);
        let run = self.stream.run(now, oldest..self.next_tick, &plan, room.clamp(1, MAX_INPUTS_PER_PACKET), 0);
        let (step_ack, n) = self.receiver.ack(&mut self.sack);
        let kept = self.inputs.len();
        let inputs = run.ticks.clone().map(|t| self.inputs[t as usize % kept].as_slice());
        messages::encode_client_inputs(&mut self.buf, step_ack, &self.sack[..n], run.ticks.start, inputs);
        ep.send(server, CHANNEL_UNRELIABLE, &self.buf)?;
        self.stream.book_run(run.ticks, now, &plan);
        ep.flush(now);
        Ok(())
    }

    /// Handles one event from the endpoint.
    pub fn on_event<T: Transport + ?Sized>(&mut self, now: Micros, ep: &mut T, e: Event) {
        match e {
            Event::Connected { peer, .. } if Some(peer) == self.server => {
                self.events.push_back(RelayClientEvent::Connected { server: peer })
            }
            Event::Disconnected { peer, reason } if Some(peer) == self.server => {
                self.server = None;
                self.events.push_back(RelayClientEvent::Disconnected { reason });
            }
            Event::Message { peer, channel, data } => {
                if Some(peer) == self.server && channel == CHANNEL_UNRELIABLE {
                    self.handle_update(now, &data);
                }
                ep.recycle(data);
            }
            _ => {}
        }
    }

    /// Takes a ServerUpdate from the server (malformed ones are dropped and counted).
    pub fn handle_update(&mut self, now: Micros, data: &[u8]) {
        let mut view = std::mem::take(&mut self.view);
        match messages::decode_server_update_into(data, &self.rules, &mut view) {
            Ok(()) => self.on_update(now, data, &view),
            Err(_) => self.malformed += 1,
        }
        self.view = view;
    }

    fn on_update(&mut self, now: Micros, data: &[u8], u: &UpdateView) {
        let head = u.head.expect("decoded");
        let server_tick = head.server_tick;
        if self.clock.is_none() {
            // Start two ticks ahead of the server's stamp; the loop takes it from there.
            let start = server_tick.saturating_add(2);
            let mut clock = TickClock::new(self.cfg.tick, start);
            clock.advance(now);
            self.start_local = now;
            self.start_pos = start as f64;
            self.next_tick = start;
            self.stream.rebase(start);
            self.clock = Some(clock);
        }
        self.my_player = Some(head.your_player);
        self.depth = head.depth as u32;
        if head.first_input != messages::NONE && self.first_input.is_none() {
            self.first_input = Some(head.first_input);
        }
        for &(tick, checksum) in &u.checks {
            if self.checks.len() == CHECKS_QUEUED {
                self.checks.pop_front();
            }
            self.checks.push_back((tick, checksum));
        }
        self.lead.on_tally(ServerTally {
            server_tick,
            shift: head.shift as i64,
            substituted: head.substituted,
            late_substituted: head.late_substituted,
        });
        for m in &u.margins {
            self.lead.on_margin(m.tick, m.margin, head.shift as i64);
        }
        if head.input_ack != messages::NONE {
            // Never beyond the newest input sent: an ack of inputs to come would stop them.
            self.stream.ack(head.input_ack.saturating_add(1), self.stream.sent_end());
        }
        for e in u.entries(data, &self.rules) {
            match self.receiver.take(&e) {
                Taken::Restarted => self.restarted = Some(e.tick),
                Taken::Refused => self.malformed += 1,
                Taken::Kept | Taken::Ignored => {}
            }
        }
        self.deliver_steps();
        self.interp.on_packet(server_tick, now);
    }

    /// The time-sync figures now; reads the round trip from `ep`.
    pub fn stats<T: Transport + ?Sized>(&mut self, now: Micros, ep: &mut T) -> SyncStats {
        let rtt = self.server.and_then(|p| ep.stats(p)).map_or(0.0, |s| s.srtt_us);
        let (scale, phase) = self.clock.as_ref().map_or((1.0, 0.0), |c| (c.scale(), self.phase(c, now)));
        let lead = self.lead.expected_margin_median(phase).map_or(0.0, |m| m + rtt / 2.0 / self.cfg.tick.tick_us);
        let playback = self.interp.playback(now);
        SyncStats {
            lead_ticks: lead,
            margin_quantile_ticks: self.lead.expected_margin_quantile(phase).unwrap_or(0.0),
            server_buffer_depth: self.depth,
            empty_steps: self.empty,
            merged_steps: self.merged,
            time_scale: scale,
            clock_corrections: self.snaps + self.lead.resets(),
            interp_delay_ticks: playback.map_or(0.0, |_| self.interp.delay()),
            copies: self.redundancy.copies(),
            send_interval: self.send_interval(),
            uplink_loss: self.redundancy.loss(),
            uplink_loss_burst: self.redundancy.burst(),
            drift_ppm: self.lead.drift() * 1e6,
            authoritative_tick: self.receiver.next().map_or(0, |n| n.saturating_sub(1)),
        }
    }
}

/// What an engine reads every frame besides the due ticks: the clock's dilation, its
/// discrete corrections and where to render the server's timeline. (Also what the lab
/// scores, so the lab measures this client and not a model of it.)
impl RelayClient {
    /// The tick clock's time scale (1.0 before the clock starts).
    pub fn time_scale(&self) -> f64 {
        self.clock.as_ref().map_or(1.0, |c| c.scale())
    }

    /// Snaps the clock made (forward or back), since the start.
    pub fn snaps(&self) -> u64 {
        self.snaps
    }

    /// The server tick (fractional) to render now: the interpolation timeline, which
    /// rate-limits its own changes. Call once per rendered frame.
    pub fn remote_playback(&mut self, now: Micros) -> Option<f64> {
        self.interp.playback(now)
    }
}

/// The step queue's room: [`QUEUED_STEPS`] steps of one input per player, plus
/// merges; and for the decoded front step, the most players and inputs a datagram can
/// carry in one step.
fn step_queue_size(cfg: &RelayClientConfig) -> StepQueueSize {
    let players = cfg.max_players.map_or(DEFAULT_STEP_PLAYERS, |p| (p as usize).min(255));
    // Player id, accepted count, input count, then one input (its length and bytes).
    let one_input_step = 1 + players * (7 + cfg.max_input_size);
    // Every input is its length byte and, in fixed-size sessions, that many bytes.
    let inputs = MAX_DATAGRAM_SIZE / (1 + cfg.input_size.unwrap_or(0));
    StepQueueSize {
        steps: QUEUED_STEPS,
        bytes: QUEUED_STEPS * one_input_step + QUEUED_MERGE_DATAGRAMS * MAX_DATAGRAM_SIZE,
        players,
        inputs,
        // The input count is a byte.
        inputs_per_player: inputs.min(255),
        input_size: cfg.max_input_size,
    }
}

/// Inputs worth keeping: the most `send_inputs` ever sends (copies beyond `max_copies`
/// come within the byte budget, which depends on the inputs' size).
fn inputs_kept(cfg: &RelayClientConfig) -> usize {
    let most = if cfg.redundancy.extra_copy_bytes_per_sec > 0 { MAX_COPIES } else { cfg.redundancy.max_copies };
    (most.clamp(1, MAX_COPIES) as usize).saturating_mul(cfg.send_interval.max(1) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relay::step_codec::{self, StepForm};

    #[test]
    fn an_update_at_the_end_of_the_tick_range_does_not_overflow() {
        // The server's ticks come from the wire: a clock started from Tick::MAX holds
        // there, and a step numbered Tick::MAX (which has no next tick) is not taken.
        let mut client = RelayClient::new(RelayClientConfig::default());
        let head = messages::UpdateHead {
            server_tick: Tick::MAX,
            your_player: 0,
            shift: 0,
            input_ack: messages::NONE,
            depth: 0,
            first_input: Tick::MAX - 1,
            substituted: 0,
            late_substituted: 0,
        };
        let mut buf = Vec::new();
        messages::encode_server_update_head(&mut buf, &head, &[], &[(Tick::MAX, 1)], Tick::MAX - 1);
        let mut step = Vec::new();
        messages::write_step(&mut step, &[PlayerStep { player: 0, accepted: 1, inputs: vec![vec![1]] }]);
        let mut delta = Vec::new();
        step_codec::encode_delta(&mut delta, &step, &step);
        step_codec::write_entry(&mut buf, 0, StepForm::Full, &step);
        messages::set_entry_count(&mut buf, 0, 1, 1);
        client.handle_update(0, &buf);
        assert_eq!(client.malformed(), 0);
        // The step numbered Tick::MAX: the whole update is refused.
        step_codec::write_entry(&mut buf, 1, StepForm::Delta, &delta);
        messages::set_entry_count(&mut buf, 0, 1, 2);
        client.handle_update(0, &buf);
        assert_eq!(client.malformed(), 1);
        assert_eq!(client.next_input_tick(), Tick::MAX);
        assert_eq!(client.queued_steps(), 1, "only the step before the end");
        assert_eq!(client.peek_step().map(|s| s.0), Some(Tick::MAX - 1));
        assert_eq!(client.first_input(), Some(Tick::MAX - 1));
        assert_eq!(client.take_check(), Some((Tick::MAX, 1)));
        // Time passes: the clock holds at the end, so no input is ever due past it.
        client.clock.as_mut().expect("started").advance(1_000_000);
        assert_eq!(client.clock.as_ref().map(TickClock::tick), Some(Tick::MAX));
        assert!(!client.input_due());
    }
}
