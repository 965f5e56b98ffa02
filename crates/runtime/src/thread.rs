//! A host's network core: its socket, endpoint and link simulators.
//!
//! They live in a core (`NetLoop`) behind a mutex that the engine's thread may take
//! too, never waiting for it ([`DirectPath`]): a flush writes to the socket from the
//! engine's thread, and a poll that finds nothing published reads the socket itself.
//! A message so crosses no thread on its way, as with a library without a thread of
//! its own. The network thread (the process's one service thread, `service.rs`, which
//! runs every host's core) does the rest, and everything while the engine does not
//! call: timers, resends, keepalives, the simulators, receiving.
//!
//! Each turn of a host: apply the engine's commands, take back message buffers, read
//! the datagrams the socket has (a bounded number), run the endpoint's timers when one
//! is due, transmit, forward events and (every ~100 ms, when something changed)
//! statistics, then say when the next turn is due: the endpoint's next timer, a
//! simulator's next delivery, the auto-flush time, or at most the idle cap. The
//! service thread also runs a turn when the host's socket is readable or its engine
//! woke it through its [`Waker`](super::waker::Waker).
//!
//! A turn never blocks on the engine: events go through a bounded channel
//! (`to_engine.rs`). When it is full they wait in the endpoint, one bounded queue per
//! peer served round-robin, and are looked at again every millisecond.
//!
//! At the end of every turn the core publishes each peer's send-queue figures (see
//! `budget.rs`), which the engine side checks sends against.

use std::collections::VecDeque;
use std::collections::hash_map::Entry;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod datagrams;
mod reports;

use super::budget::{BudgetBoard, SendBudget, ThreadBudget};
use super::carrier::Wire;
use super::counted::{CountedReceiver, CountedSender};
use super::engine_polls::EnginePolls;
use super::host_config::Direction;
use super::host_event::HostEvent;
use super::log::{DropTally, LogLevel, LogQueue};
use super::pool::BufferPool;
use super::recv_batch::{Received, RecvBatch, enable_timestamps};
use super::send_batch::SendBatch;
use super::service::{Plan, Turn};
use super::stall_timer::{STALL_BACKSTOP_US, StallCheck, StallTimer};
use super::stats_board::StatsBoard;
use super::to_engine::{Polled, ToEngine};
use super::waker::Waker;
use crate::system_clock::{self, SystemClock};
use tickwire_proto::wire::MAX_DATAGRAM_SIZE;
use tickwire_proto::{
    Binding, Clock, ConnectionStats, DisconnectReason, Driver, EndpointStats, LinkConditioner, LinkConfig, Micros,
    NetEvent as Event, PeerId, PeerMap, ProbeError, Probes, Rng, SendError, Traversal, TraversalConfig, TraversalEvent,
    peer_map,
};

/// Longest sleep when nothing is due. Nothing depends on it (statistics and log
/// summaries that are owed are deadlines of their own); it only bounds the damage of a
/// wake that was somehow missed.
pub(crate) const IDLE_CAP: Duration = Duration::from_secs(5);
/// How often statistics are published (when they changed), on average. The engine
/// reads them from the core itself whenever the network thread is not in a turn
/// (`DirectPath::peer_stats`), so these copies only stand in while it is: each costs a
/// snapshot and a message per peer on both threads, which a server with many peers
/// pays on every publication.
const STATS_INTERVAL_US: Micros = 100_000;
/// Publications allowed back to back before the interval applies: an idle
/// connection's few turns (its keepalive, the peer's) each publish at once instead of
/// waking the thread again an interval later, while a busy one still publishes 10
/// times a second at most.
const STATS_BURST: u32 = 3;
/// How long a shutting-down thread keeps running so that disconnect packets held by the
/// outbound simulator still leave. Well inside [`super::SHUTDOWN_WAIT`].
const SHUTDOWN_LINGER_US: Micros = 250_000;
/// Datagrams read per loop turn before commands get another look.
const MAX_RECV_PER_TURN: usize = 1024;
/// Idle datagram buffers the simulators may keep.
const SIM_POOL_LIMIT: usize = 4096;
/// Datagrams each simulator holds at once without allocating (buffers and queue
/// room made when it is turned on): a second of traffic at 128 datagrams a second,
/// so a stall of the network thread does not grow them either.
const SIM_PREFILL: usize = 128;
/// How often events waiting for room in the channel to the engine are looked at again.
const BACKLOG_RETRY_US: Micros = 1_000;
/// Connections (requested or announced) from which a host counts as busy enough for
/// receive moderation ([`ThreadParts::moderation_us`]): below it every datagram is
/// read as it arrives, as a two-player session's latency wants, and there are few to
/// batch anyway.
pub(crate) const MODERATION_MIN_PEERS: usize = 8;
/// On a host with [`MODERATION_MIN_PEERS`] connections or more, the endpoint's timers
/// (delayed acks, resends, keepalives, timeouts, handshake retries) wake the thread on
/// this grid of the process's clock (`system_clock.rs`: one timeline), up to this much
/// after they are due: one wake serves every connection whose timers fall in the same
/// millisecond, and their packets leave in one batch. A server's delayed acks are each
/// due 20 ms (`MAX_ACK_DELAY_US`) after a client's packet, at that client's own phase:
/// at 800 clients they woke its thread 2,500-3,300 times a second, and 850 on the
/// grid, for 16-17% less of the server's CPU (`tickwire serve` at 200 matches,
/// docs/benchmarks.md). An ack carries its own delay, so round-trip times do not see
/// the wait.
///
/// Not below that: every host of a process shares the timeline, so a grid would also
/// line up the resends of many hosts of few connections (a load generator's clients),
/// and they would meet a peer's full receive buffer together again and again. With the
/// grid on every host, 6 of 22 runs of `tickwire bench serve` at 500 matches, on a
/// machine that dropped 3% of its datagrams, lost 1-9 late joiners to the server's
/// hello timeout; none of 9 with it on the server's host alone.
pub(crate) const TIMER_GRID_US: Micros = 1_000;
/// How long after asking for receive timestamps moderation may begin: Linux turns
/// timestamping on for the stack a moment later (deferred work), and datagrams of that
/// moment are stamped when read, which a delayed read would make late.
const TIMESTAMPS_SETTLE_US: Micros = 10_000;

/// What the engine asks of the thread, in order.
#[derive(Debug)]
pub(crate) enum Command {
    /// `budget` is the peer's send-queue accounting, shared with the engine side.
    Connect {
        peer: PeerId,
        addr: SocketAddr,
        budget: SendBudget,
        /// Who both ends are, bound into the handshake (`Host::connect_bound`).
        binding: Option<Binding>,
    },
    Send {
        peer: PeerId,
        channel: u8,
        data: Vec<u8>,
    },
    Flush,
    Disconnect {
        peer: PeerId,
        /// What the peer is told (None: the endpoint's own choice).
        reason: Option<DisconnectReason>,
    },
    SetSim {
        dir: Direction,
        cfg: Option<Box<LinkConfig>>,
    },
    /// The connections' silence timeout (checked by the host).
    SetTimeout {
        timeout_us: Micros,
    },
    /// Our own id in handshakes bound to us (`Host::set_local_id`).
    SetLocalId(Option<u32>),
    /// Ask a STUN server which address it sees this socket at (`Host::discover_reflexive`).
    Discover {
        probe: u32,
        server: SocketAddr,
        /// From the OS's generator: whoever has not seen the request cannot answer it.
        transaction: [u8; 12],
    },
    /// Start NAT traversal for a P2P match (`Host::start_traversal`); the key seed is
    /// OS randomness for its transaction ids.
    Traverse(Box<TraversalConfig>, [u8; 32]),
}

/// What the thread tells the engine, in order.
#[derive(Debug)]
pub(crate) enum ThreadMsg {
    Event(HostEvent),
    /// The send-queue accounting of an accepted peer; sent before its `Connected`.
    /// (Statistics do not come this way: `stats_board.rs`.)
    PeerBudget(PeerId, SendBudget),
    /// A reflexive address probe ended: the address the server saw, or why none.
    Reflexive(u32, Result<SocketAddr, ProbeError>),
    /// What the NAT traversal of a P2P match did (registered, a path changed).
    Traversal(TraversalEvent),
}

/// Counters of the runtime layer itself (what the endpoint cannot see).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Sends the endpoint refused on the network thread; the message was dropped. This
    /// happens when the peer had gone before the engine saw it go (its
    /// [`HostEvent::Disconnected`] follows). A full send queue never causes it:
    /// [`Host::send`](super::Host::send) refuses those synchronously. Any other refusal
    /// closes the connection, reported as `Disconnected` with reason `ProtocolError`.
    pub sends_rejected: u64,
    /// Connection attempts the endpoint refused; each also produced a `Disconnected`.
    pub connects_rejected: u64,
    /// Datagrams dropped because the socket's send buffer was full.
    pub socket_send_dropped: u64,
    /// Other socket send failures (unreachable network, ...). The datagram was dropped.
    pub socket_send_errors: u64,
    /// Socket receive failures other than "nothing to read" (on Windows, also each
    /// datagram longer than any of ours, which the system drops).
    pub socket_recv_errors: u64,
    /// Events waiting for room in the channel to the engine because the engine is not
    /// polling fast enough (in the endpoint, one bounded queue per peer).
    pub event_backlog: u64,
    /// Times the network thread woke from its sleep (a datagram, the engine, a timer).
    /// Not a change worth publishing statistics for by itself.
    pub wakeups: u64,
}

/// State shared by both sides for the signals that must work even when the command
/// queue is full.
#[derive(Debug)]
pub(crate) struct Shared {
    pub waker: Waker,
    pub shutdown: AtomicBool,
    pub inject_panic: AtomicBool,
    /// Why the thread stopped, for when the `Fatal` event could not be queued.
    pub fatal: Mutex<Option<String>>,
    /// What the engine has taken out of the event channel.
    pub polled: Polled,
    /// Log records for the engine (see `log.rs`): the thread only queues them.
    pub log: LogQueue,
    /// The statistics the thread last published (`stats_board.rs`).
    pub stats: StatsBoard,
    /// Set by the thread as its very last step (after its `Fatal`, if any, is queued):
    /// the engine's calls then fail with `ThreadGone`. (The channels cannot say so: the
    /// core the engine shares keeps both their ends alive.)
    pub exited: AtomicBool,
    /// Every peer's send-queue figures, published by the thread for the engine
    /// (`budget.rs`).
    pub budgets: Arc<BudgetBoard>,
}

/// Everything the thread owns, assembled by the host before spawning.
pub(crate) struct ThreadParts<P> {
    pub proto: P,
    /// Reflexive address probes in flight (proto's `Probes`): their answers arrive on
    /// the socket beside the connections' datagrams and are taken out before the
    /// endpoint sees them.
    pub probes: Probes,
    /// A P2P match's NAT traversal (proto's `Traversal`), once started: between the
    /// endpoint and the socket, it takes its own datagrams out before the endpoint
    /// sees them and routes the endpoint's datagrams for peer addresses.
    pub traversal: Option<Traversal>,
    /// The socket, or the engine's carrier (`carrier.rs`).
    pub wire: Wire,
    pub shared: Arc<Shared>,
    pub clock: SystemClock,
    pub commands: CountedReceiver<Command>,
    pub events: CountedSender<ThreadMsg>,
    pub send_pool: BufferPool,
    pub msg_pool: BufferPool,
    pub outbound_sim: Option<LinkConfig>,
    pub inbound_sim: Option<LinkConfig>,
    pub sim_seed: u64,
    pub auto_flush_us: Micros,
    pub idle_cap: Duration,
    /// Receive moderation (`HostConfig::receive_moderation_us`): after a turn that read
    /// datagrams, with at least [`MODERATION_MIN_PEERS`] connections, the socket stays
    /// out of the service thread's wait this long, so that the datagrams of many peers
    /// are read in one batch rather than each waking the thread; and while the engine
    /// polls the socket itself, it stays out until this long after the engine's last
    /// poll, longer beside an engine that keeps polling ([`NetLoop::quiet_after`],
    /// [`EnginePolls`]). 0: off. Only with kernel receive timestamps,
    /// asked for when the host first gets that busy (a host whose engine never polls
    /// between datagrams, with few peers, never pays for them): a datagram's arrival
    /// time must not be the time of a delayed read. Where the socket refuses them,
    /// moderation stays off.
    pub moderation_us: Micros,
    /// The stall timer of a host that accepts many clients (`stall_timer.rs`), if the
    /// system gave one and the service waits on it.
    pub stall_timer: Option<StallTimer>,
}

/// What the engine's thread may run itself, under the core's lock, instead of asking
/// the network thread and waiting for it to wake: the two hops a message used to pay
/// (engine to thread on send, thread to engine on receive). The network thread keeps
/// everything else: timers, resends, the simulators, and receiving while the engine
/// does not poll. Both return whether the network thread must be woken to replan (the
/// work made something due before it means to wake).
pub(crate) trait DirectPath: Send {
    /// Applies the queued commands, flushes, and writes what is due to the socket.
    fn flush_now(&mut self) -> bool;
    /// Hands a message the engine's checks accepted to the endpoint, after any
    /// commands still queued (so that it keeps its place behind them); what
    /// `Command::Send` does on the network thread, without the copy into a pooled
    /// buffer and the two channel operations.
    fn send_now(&mut self, peer: PeerId, channel: u8, data: &[u8]);
    /// Reads what the socket holds and moves the events to the engine: into `events`
    /// (the engine's queue) while it has room and nothing waits in the channel, else
    /// through the channel (see `NetLoop::forward_events_to`).
    fn receive_now(&mut self, events: &mut VecDeque<HostEvent>) -> bool;
    /// Gives the endpoint a message buffer the engine has finished with
    /// (`Host::recycle`), without the trip through the pool's channel.
    fn take_back(&mut self, buf: Vec<u8>);
    /// Hands a datagram the engine's carrier received from `from` at `at` to the
    /// endpoint (an external carrier's host only; `carrier.rs`), without a copy;
    /// [`pushed`](Self::pushed) ends the batch.
    fn push_datagram(&mut self, from: SocketAddr, data: &[u8], at: Micros);
    /// Ends a batch of [`push_datagram`](Self::push_datagram)s: what they made due is
    /// sent (into the outbound ring) and their events move to the engine, into
    /// `events` as [`receive_now`](Self::receive_now) puts them.
    fn pushed(&mut self, events: &mut VecDeque<HostEvent>) -> bool;
    /// The connection's statistics now, with the time (the core's clock).
    fn peer_stats(&mut self, peer: PeerId) -> Option<(ConnectionStats, Micros)>;
    /// The endpoint's and the runtime's counters now, with the time.
    fn totals(&self) -> (EndpointStats, RuntimeStats, Micros);
}

impl<P: Driver + Send> DirectPath for NetLoop<P> {
    fn flush_now(&mut self) -> bool {
        let now = self.p.clock.now_us();
        self.apply_commands(now);
        self.p.proto.flush(now);
        self.send_and_report(now, None)
    }

    fn send_now(&mut self, peer: PeerId, channel: u8, data: &[u8]) {
        if !self.p.commands.is_empty() {
            let now = self.p.clock.now_us();
            self.apply_commands(now);
        }
        self.send_one(peer, channel, data);
    }

    fn receive_now(&mut self, events: &mut VecDeque<HostEvent>) -> bool {
        let now = self.p.clock.now_us();
        self.engine_polls.polled(now);
        if let Some(stall) = self.stall.as_mut() {
            let (polls, moderation, capacity) = (&self.engine_polls, self.p.moderation_us, self.recv_capacity);
            stall.push(now, || polls.stall_check_at(moderation, capacity));
        }
        self.take_back_buffers();
        self.tell_unix_time(now);
        // A steady engine polls until its queue is empty, once a frame: the poll right
        // after a read of its frame's burst that found the socket empty does not read
        // it again (that read would find nothing, a system call per host per frame).
        // What arrived in between is read by the next poll: the next frame's, or the
        // one after this in the same burst (an engine that keeps polling in its frame,
        // waiting for a reply, is held up by one poll).
        let skip = self.engine_emptied_at.take().is_some_and(|at| self.engine_polls.in_current_burst(at))
            && self.engine_reads(now);
        let read = if skip { 0 } else { self.receive() };
        if !skip {
            self.engine_emptied_at = self.found_empty.then_some(now);
        }
        self.engine_polls.read(read, self.read_bytes);
        self.deliver_inbound(now);
        self.send_and_report(now, Some(events))
    }

    fn take_back(&mut self, buf: Vec<u8>) {
        self.p.proto.recycle(buf);
    }

    fn push_datagram(&mut self, from: SocketAddr, data: &[u8], at: Micros) {
        self.arrive(at, from, data);
    }

    fn pushed(&mut self, events: &mut VecDeque<HostEvent>) -> bool {
        let now = self.p.clock.now_us();
        self.take_back_buffers();
        self.deliver_inbound(now);
        self.send_and_report(now, Some(events))
    }

    fn peer_stats(&mut self, peer: PeerId) -> Option<(ConnectionStats, Micros)> {
        Some((self.p.proto.stats(peer)?, self.p.clock.now_us()))
    }

    fn totals(&self) -> (EndpointStats, RuntimeStats, Micros) {
        (self.p.proto.endpoint_stats(), self.rt, self.p.clock.now_us())
    }
}

/// The core both threads run (one at a time): the network thread for its turns, the
/// engine's for [`DirectPath`].
pub(crate) type Core<P> = Mutex<NetLoop<P>>;

/// A host's core as the service thread (`service.rs`) runs it, with what it needs to
/// tell the engine that the host's network side stopped.
pub(crate) struct Hosted<P> {
    pub core: Arc<Core<P>>,
    pub shared: Arc<Shared>,
    pub events: CountedSender<ThreadMsg>,
}

impl<P: Driver + Send + 'static> Turn for Hosted<P> {
    fn turn(&self) -> Result<Option<Plan>, String> {
        // Poisoned: an engine call panicked inside the core, whose state is then
        // unknown; the host stops and says so.
        let mut l = self
            .core
            .lock()
            .map_err(|_| "network thread stopped: an engine call panicked inside the network core".to_string())?;
        Ok(l.turn())
    }

    fn failed(&self, message: String) {
        self.shared.log.push(LogLevel::Error, format_args!("{message}"));
        *self.shared.fatal.lock().unwrap_or_else(|p| p.into_inner()) = Some(message.clone());
        let _ = self.events.try_send(ThreadMsg::Event(HostEvent::Fatal { message }));
    }

    fn exited(&self) {
        self.shared.exited.store(true, Ordering::Release);
    }
}

type Sim = LinkConditioner<(SocketAddr, Vec<u8>)>;

pub(crate) struct NetLoop<P> {
    p: ThreadParts<P>,
    sim_out: Option<Sim>,
    sim_in: Option<Sim>,
    sim_rng: Rng,
    /// Idle buffers for datagrams held by the simulators (a dropped datagram's buffer
    /// comes back here too, so a lossy simulator allocates nothing in steady state).
    sim_pool: Vec<Vec<u8>>,
    rx: RecvBatch,
    /// What `Driver::poll_transmit` writes into: a batch of datagrams.
    tx: SendBatch,
    to_engine: ToEngine,
    /// Peers whose statistics are published: requested or announced, not yet gone.
    peers: Vec<PeerId>,
    /// Send-queue accounting per peer (requested or announced, not yet gone).
    budgets: PeerMap<ThreadBudget>,
    /// Peers this thread is closing because the endpoint refused a message the engine
    /// had been told was accepted; their `Disconnected` gets reason `ProtocolError`.
    broken: Vec<PeerId>,
    /// Publications the thread may make now (at most [`STATS_BURST`]); one more is
    /// earned every [`STATS_INTERVAL_US`] after `stats_earned_at`.
    stats_credits: u32,
    stats_earned_at: Micros,
    /// When statistics that may have changed but could not be published yet (no
    /// credit, or no room in the channel) are looked at again: a deadline of the
    /// thread's sleep.
    stats_owed_at: Option<Micros>,
    published: (EndpointStats, RuntimeStats),
    next_auto_flush: Option<Micros>,
    rt: RuntimeStats,
    /// Set once shutdown began: the time by which the thread exits regardless.
    linger_until: Option<Micros>,
    /// When the network thread will wake next without a datagram or a wake: the
    /// engine's direct work wakes it when it makes something due earlier.
    planned_wake: Micros,
    /// The endpoint's next timer as of the end of the last turn, lowered by direct
    /// work: turns before it skip `Driver::update`.
    timers_at: Micros,
    /// The earliest timer of the connections changed since the last look
    /// (`publish_budgets` gathers it, `must_replan` takes it).
    changed_timers: Micros,
    /// Refused datagrams of the current second, for the log's summary.
    tally: DropTally,
    /// Receive timestamps: when they were asked for (receive moderation's
    /// precondition, see [`ThreadParts::moderation_us`]), or whether the socket
    /// refused them.
    stamped_since: Option<Micros>,
    stamps_refused: bool,
    /// The engine's own reads of the socket (`DirectPath::receive_now`). While it
    /// keeps polling, the socket is left to it (see [`NetLoop::quiet_after`]).
    engine_polls: EnginePolls,
    /// The steady engine's stall check as a timer its polls push (`stall_timer.rs`).
    stall: Option<StallCheck>,
    /// Whether the log was told that the wall clock is unknown (a token server then
    /// refuses every token), since it last was known: said once, not every turn.
    told_clock_unknown: bool,
    /// The socket is IPv6 (dual-stack): IPv4 destinations are written mapped.
    wire_v6: bool,
    /// The socket's receive buffer in bytes (as the OS reports it): how much of a
    /// frame's datagrams may wait in it for the engine ([`EnginePolls::owns_socket`]).
    recv_capacity: usize,
    /// Payload bytes of the datagrams the last `receive` read.
    read_bytes: usize,
    /// Whether the last `receive` found the socket empty (it stopped short of its
    /// limit), and when the engine's read that found it so ran (`receive_now`).
    found_empty: bool,
    engine_emptied_at: Option<Micros>,
}

impl<P: Driver> NetLoop<P> {
    pub(crate) fn new(mut p: ThreadParts<P>) -> Self {
        // Host::start_with resolved a seed of 0 from the OS.
        let mut sim_rng = Rng::new(p.sim_seed);
        let sim_out = p.outbound_sim.map(|c| Sim::new(c, sim_rng.next_u64()));
        let sim_in = p.inbound_sim.map(|c| Sim::new(c, sim_rng.next_u64()));
        let now = p.clock.now_us();
        let to_engine = ToEngine::new(p.events.clone(), p.shared.clone());
        let p_wire_v6 = match &p.wire {
            Wire::Udp(socket) => socket.local_addr().ok().map(|a| a.is_ipv6()),
            Wire::External(_) => None,
        };
        // Unknown: assume Linux's default (an external carrier has no socket, and its
        // engine's pushes never wait in one).
        let recv_capacity = match &p.wire {
            Wire::Udp(socket) => socket2::SockRef::from(socket).recv_buffer_size().unwrap_or(212_992),
            Wire::External(_) => usize::MAX,
        };
        let stall = p.stall_timer.take().map(StallCheck::new);
        let mut l = NetLoop {
            next_auto_flush: (p.auto_flush_us > 0).then(|| now + p.auto_flush_us),
            p,
            sim_out,
            sim_in,
            sim_rng,
            sim_pool: Vec::new(),
            rx: RecvBatch::new(),
            tx: SendBatch::new(),
            to_engine,
            peers: Vec::new(),
            budgets: peer_map(),
            broken: Vec::new(),
            stats_credits: STATS_BURST,
            stats_earned_at: now,
            stats_owed_at: None,
            published: Default::default(),
            rt: RuntimeStats::default(),
            linger_until: None,
            planned_wake: now,
            timers_at: 0,
            changed_timers: Micros::MAX,
            tally: DropTally::new(now),
            stamped_since: None,
            stamps_refused: false,
            engine_polls: EnginePolls::default(),
            stall,
            told_clock_unknown: false,
            // (A traversing host writes IPv4 addresses mapped on a dual-stack socket.)
            wire_v6: matches!(&p_wire_v6, Some(true)),
            recv_capacity,
            read_bytes: 0,
            found_empty: false,
            engine_emptied_at: None,
        };
        l.prefill_sims();
        l
    }

    /// Gives the endpoint back the message buffers the engine has finished with.
    fn take_back_buffers(&mut self) {
        while let Some(buf) = self.p.msg_pool.try_take() {
            self.p.proto.recycle(buf);
        }
    }

    /// The end of the engine's direct work: what is due goes out, events (into
    /// `events`, the engine's queue, when given: `forward_events_to`) and send-queue
    /// figures go to the engine; returns whether the network thread must replan.
    fn send_and_report(&mut self, now: Micros, events: Option<&mut VecDeque<HostEvent>>) -> bool {
        self.transmit(now);
        self.forward_events_to(events);
        self.publish_budgets();
        self.must_replan(now)
    }

    /// Tells a token server the wall clock as read now, before it reads datagrams:
    /// tokens are judged by the clock of the moment, not of the host's start (a clock
    /// stepped since by NTP or a resume is followed). A clock before 1970 or unreadable
    /// is unknown: the endpoint then refuses every token, and the log says why once.
    fn tell_unix_time(&mut self, now: Micros) {
        if !self.p.proto.wants_unix_time() {
            return;
        }
        let unix = system_clock::unix_secs();
        if unix.is_some() {
            self.told_clock_unknown = false;
        } else if !self.told_clock_unknown && self.p.shared.log.wants(LogLevel::Warn) {
            self.p.shared.log.push(
                LogLevel::Warn,
                format_args!(
                    "the system clock reads before 1970 or cannot be read: every connect token is refused until it \
                     is set right"
                ),
            );
            self.told_clock_unknown = true;
        }
        self.p.proto.set_unix_time(now, unix);
    }

    /// Gives every simulator that is on room and buffers for [`SIM_PREFILL`]
    /// datagrams in flight, so that steady traffic through it never allocates.
    fn prefill_sims(&mut self) {
        let mut sims = 0;
        for sim in [self.sim_out.as_mut(), self.sim_in.as_mut()].into_iter().flatten() {
            sim.reserve(SIM_PREFILL.saturating_sub(sim.in_flight()));
            sims += 1;
        }
        let want = (sims * SIM_PREFILL).min(SIM_POOL_LIMIT);
        self.sim_pool.reserve(want.saturating_sub(self.sim_pool.len()));
        while self.sim_pool.len() < want {
            self.sim_pool.push(Vec::with_capacity(MAX_DATAGRAM_SIZE));
        }
    }

    /// One turn of the network thread's loop. Returns how long to sleep (and whether to
    /// leave the socket alone meanwhile), or `None` once a shutdown has finished
    /// lingering (the thread then exits).
    fn turn(&mut self) -> Option<Plan> {
        self.rt.wakeups += 1;
        let now = self.p.clock.now_us();
        if self.p.shared.inject_panic.load(Ordering::Acquire) {
            panic!("injected panic (debug_inject_panic)");
        }
        if self.linger_until.is_none() && self.p.shared.shutdown.load(Ordering::Acquire) {
            // Commands queued before the drop still apply (a last send + flush).
            self.apply_commands(now);
            self.p.proto.shutdown(now);
            self.p.proto.flush(now);
            self.linger_until = Some(now + SHUTDOWN_LINGER_US);
        }
        if self.linger_until.is_none() {
            self.apply_commands(now);
        }
        self.take_back_buffers();
        self.tell_unix_time(now);
        // An engine whose frames are steady reads the socket itself at each frame (see
        // `engine_polls.rs`): this turn is for timers, and leaves the datagrams to it.
        let engine_reads = self.engine_reads(now);
        let read = if engine_reads { 0 } else { self.receive() };
        self.engine_polls.thread_read(read);
        self.deliver_inbound(now);
        // The endpoint's timers: run them when one is due, not on every datagram's turn
        // (a server's thread turns thousands of times a second).
        if now >= self.timers_at {
            self.p.proto.update(now);
        }
        if !self.p.probes.is_empty() {
            self.p.probes.update(now);
        }
        if let Some(t) = self.p.traversal.as_mut().filter(|t| t.next_timeout().is_some_and(|at| now >= at)) {
            t.update(now);
        }
        if let Some(t) = self.next_auto_flush.filter(|&t| now >= t) {
            self.p.proto.flush(now);
            // Keep the cadence, but never schedule in the past after a stall.
            self.next_auto_flush = Some((t + self.p.auto_flush_us).max(now + 1));
        }
        self.transmit(now);
        self.forward_events();
        self.publish_budgets();
        if engine_reads {
            // An engine that reads the socket itself reads statistics from the core
            // too (`DirectPath::peer_stats`, `totals`): copies would cost a snapshot and
            // a message per peer ten times a second for nothing. Publication resumes
            // at the first turn that finds it late.
            self.stats_owed_at = None;
        } else {
            self.publish_stats(now);
        }
        self.tally.roll(now, || self.p.proto.endpoint_stats(), &self.p.shared.log);
        if let Some(until) = self.linger_until {
            let sim_empty = self.sim_out.as_ref().is_none_or(|s| s.next_delivery().is_none());
            if sim_empty || now >= until {
                return None;
            }
        }
        let now = self.p.clock.now_us();
        let timers = self.p.proto.next_timeout();
        self.timers_at = timers.unwrap_or(Micros::MAX);
        self.changed_timers = Micros::MAX; // the walk just now saw them all
        self.planned_wake = self.wake_at(now, timers);
        let sleep = Duration::from_micros(self.planned_wake.saturating_sub(now));
        Some(Plan { sleep, quiet: Duration::from_micros(self.quiet_after(now, read)) })
    }

    /// Receive moderation after a turn that read `read` datagrams: how long the
    /// socket is left out of the wait (see [`ThreadParts::moderation_us`]). Two cases:
    /// - a host with many connections, after a turn that read something: the first
    ///   datagram after a lull is read at once, the ones right behind it wait for the
    ///   batch;
    /// - an engine that polls the socket itself (it did within the last
    ///   `moderation_us`): its next poll reads what arrives, and the thread keeps out
    ///   of the way until `moderation_us` after that poll, longer while the engine
    ///   keeps polling all through that time ([`EnginePolls`]). A thread that waits on the
    ///   socket is woken by every datagram: the kernel pays a cross-core wakeup inside
    ///   the sender's system call, and the woken turn then contends with the engine
    ///   for the core's lock (on loopback this was half of a busy-polled round trip).
    ///
    /// A shutting-down host is never quiet (its last turns should end it promptly).
    /// The first busy turn asks for receive timestamps; moderation begins once they
    /// have settled.
    fn quiet_after(&mut self, now: Micros, read: usize) -> Micros {
        let quiet = self.moderation_quiet(now, read);
        self.stall_check(now, quiet)
    }

    /// With a stall timer (a host of many connections, `stall_timer.rs`): a socket
    /// left to a steady engine until its stall check stays out of the wait until the
    /// timer expires (the engine's polls push it), not until the check: the thread
    /// then wakes only for its own timers and for an engine that stopped, with
    /// [`STALL_BACKSTOP_US`] as the longest wait should the timer never wake it.
    /// Otherwise the timer is disarmed, and a turn it woke leaves nothing readable.
    fn stall_check(&mut self, now: Micros, quiet: Micros) -> Micros {
        let Some(stall) = self.stall.as_mut() else { return quiet };
        let check = self
            .engine_polls
            .stall_check_at(self.p.moderation_us, self.recv_capacity)
            .filter(|&by| quiet > 0 && by > now && self.peers.len() >= MODERATION_MIN_PEERS);
        match check {
            Some(by) if stall.arm(now, by) => quiet.max(by - now + STALL_BACKSTOP_US),
            _ => {
                stall.disarm();
                quiet
            }
        }
    }

    /// Receive moderation's quiet time after a turn that read `read` datagrams (see
    /// [`Self::quiet_after`]).
    fn moderation_quiet(&mut self, now: Micros, read: usize) -> Micros {
        let moderation = self.p.moderation_us;
        let batch = if read > 0 && self.peers.len() >= MODERATION_MIN_PEERS { moderation } else { 0 };
        let engine = self.engine_polls.quiet_after(now, moderation, self.recv_capacity);
        let quiet = batch.max(engine);
        if quiet == 0 || self.linger_until.is_some() || self.stamps_refused {
            return 0;
        }
        match self.stamped_since {
            Some(t) if now >= t + TIMESTAMPS_SETTLE_US => quiet,
            Some(_) => 0,
            None => {
                // An external carrier's datagrams come with the engine's arrival times,
                // and there is no socket to leave out of the wait.
                let Wire::Udp(socket) = &self.p.wire else {
                    self.stamps_refused = true;
                    return 0;
                };
                if enable_timestamps(socket) {
                    self.stamped_since = Some(now);
                } else {
                    self.stamps_refused = true;
                }
                0
            }
        }
    }

    /// Whether the socket is the engine's now: its frames are steady and the next is not
    /// late ([`EnginePolls::owns_socket`]), and the datagrams that wait for it keep
    /// their arrival times (receive timestamps that have settled). Never while shutting
    /// down.
    fn engine_reads(&self, now: Micros) -> bool {
        self.linger_until.is_none()
            && self.stamped_since.is_some_and(|t| now >= t + TIMESTAMPS_SETTLE_US)
            && self.engine_polls.owns_socket(now, self.p.moderation_us, self.recv_capacity)
    }

    /// When the thread should wake if nothing arrives: the next work due, within the
    /// idle cap.
    fn wake_at(&self, now: Micros, endpoint_timers: Option<Micros>) -> Micros {
        let cap = now + self.p.idle_cap.as_micros() as Micros;
        self.next_due(now, endpoint_timers).map_or(cap, |d| d.min(cap))
    }

    #[cfg(test)]
    fn sleep_time(&mut self) -> Duration {
        let now = self.p.clock.now_us();
        let timers = self.p.proto.next_timeout();
        Duration::from_micros(self.wake_at(now, timers).saturating_sub(now))
    }

    /// The earliest time the loop has work to do, if any: every source of work that
    /// does not arrive on the socket or through the waker. `endpoint_timers`: the
    /// endpoint's `next_timeout` (computed once a turn).
    fn next_due(&self, now: Micros, endpoint_timers: Option<Micros>) -> Option<Micros> {
        let candidates = [
            endpoint_timers.map(|t| self.timer_wake(t)),
            self.sim_in.as_ref().and_then(|s| s.next_delivery()),
            self.sim_out.as_ref().and_then(|s| s.next_delivery()),
            self.next_auto_flush,
            self.stats_owed_at,
            self.tally.deadline(),
            self.p.probes.next_timeout(),
            self.p.traversal.as_ref().and_then(Traversal::next_timeout),
            (self.to_engine.waiting() > 0 || self.p.proto.pending_events() > 0 || self.linger_until.is_some())
                .then_some(now + BACKLOG_RETRY_US),
        ];
        // Through a sentinel rather than `flatten().min()`: optimized, that compared the
        // never-written payload of a `None` before discarding it, which valgrind reports
        // (tests/run.sh runs the C programs under it against the optimized library).
        let due = candidates.into_iter().map(|c| c.unwrap_or(Micros::MAX)).min().unwrap_or(Micros::MAX);
        (due != Micros::MAX).then_some(due)
    }

    /// When an endpoint timer due at `t` wakes the thread: on the grid
    /// ([`TIMER_GRID_US`]) for a host of many connections, at `t` otherwise.
    fn timer_wake(&self, t: Micros) -> Micros {
        if self.peers.len() >= MODERATION_MIN_PEERS {
            t.checked_next_multiple_of(TIMER_GRID_US).unwrap_or(t)
        } else {
            t
        }
    }

    /// Whether work done outside the thread's turn (on the engine's thread) made
    /// something due before the thread means to wake: it must be woken to replan. Also
    /// brings an endpoint timer that work made earlier into `timers_at`, so that the
    /// thread's next turn runs it.
    fn must_replan(&mut self, now: Micros) -> bool {
        // Only the connections the work touched can have a timer earlier than the
        // thread's last turn found (`publish_budgets` took their timers just before):
        // no look at the endpoint's timers on every flush and poll.
        let timers = std::mem::replace(&mut self.changed_timers, Micros::MAX);
        self.timers_at = self.timers_at.min(timers);
        self.next_due(now, (timers != Micros::MAX).then_some(timers)).is_some_and(|d| d < self.planned_wake)
    }

    fn apply_commands(&mut self, now: Micros) {
        // Bounded so an engine that pushes without pause cannot starve the socket.
        for _ in 0..super::COMMAND_QUEUE_CAPACITY {
            let Ok(cmd) = self.p.commands.try_recv() else { break };
            match cmd {
                Command::Send { peer, channel, data } => {
                    self.send_one(peer, channel, &data);
                    self.p.send_pool.give(data);
                }
                Command::Flush => self.p.proto.flush(now),
                Command::Connect { peer, addr, budget, binding } => {
                    match self.p.proto.connect_as(now, addr, peer, binding) {
                        Ok(()) => {
                            self.p.shared.log.push(LogLevel::Debug, format_args!("connecting to {addr} (peer {peer})"));
                            self.peers.push(peer);
                            self.budgets.insert(peer, ThreadBudget::new(budget));
                        }
                        Err(_) => {
                            // The endpoint never saw this peer, so it will not announce its
                            // end; the engine still needs one.
                            self.rt.connects_rejected += 1;
                            let reason = DisconnectReason::ProtocolError;
                            self.to_engine.control(ThreadMsg::Event(HostEvent::Disconnected { peer, reason }));
                        }
                    }
                }
                Command::Disconnect { peer, reason: None } => self.p.proto.disconnect(now, peer),
                Command::Disconnect { peer, reason: Some(reason) } => self.p.proto.disconnect_with(now, peer, reason),
                Command::SetSim { dir, cfg } => self.set_sim(now, dir, cfg.map(|c| *c)),
                // Checked by `Host::set_timeout`; a refusal changes nothing.
                Command::SetTimeout { timeout_us } => {
                    let _ = self.p.proto.set_timeout(timeout_us);
                }
                Command::SetLocalId(id) => self.p.proto.set_local_id(id),
                // The host counts its probes in flight: a start never finds them all taken.
                Command::Discover { probe, server, transaction } => {
                    let _ = self.p.probes.start(now, probe, server, transaction);
                }
                Command::Traverse(cfg, key_seed) => {
                    self.p.traversal = Some(Traversal::new(now, *cfg, &key_seed));
                }
            }
        }
    }

    /// Hands one message the engine accepted to the endpoint, from the command queue
    /// or directly (`DirectPath::send_now`), and counts it as taken from the peer's
    /// send-queue budget.
    fn send_one(&mut self, peer: PeerId, channel: u8, data: &[u8]) {
        if let Some(b) = self.budgets.get_mut(&peer) {
            b.took(data.len());
        }
        match self.p.proto.send(peer, channel, data) {
            Ok(()) => {}
            // Gone before the engine saw it go: its Disconnected tells it.
            Err(SendError::UnknownPeer(_)) => self.rt.sends_rejected += 1,
            // The engine's checks (channel, size, send-queue budget) make this
            // unreachable. Should it happen anyway, the message must not vanish
            // silently: a reliable stream with a gap is broken, so the connection is
            // closed and the engine is told.
            Err(_) => {
                self.rt.sends_rejected += 1;
                let now = self.p.clock.now_us();
                self.break_connection(now, peer);
            }
        }
    }

    /// Closes the connection to `peer` after the endpoint refused a message the engine
    /// had accepted; its `Disconnected` is reported with reason `ProtocolError`, and
    /// the peer is told the same (the default, `Client` from a dialling side, would
    /// tell a relay server its player left on purpose).
    fn break_connection(&mut self, now: Micros, peer: PeerId) {
        if !self.broken.contains(&peer) {
            self.broken.push(peer);
            self.p.proto.disconnect_with(now, peer, DisconnectReason::ProtocolError);
        }
    }

    /// Publishes the send-queue figures of every peer whose connection changed since
    /// the last publication (the endpoint lists them), for the engine's synchronous
    /// check. (Walking every peer cost a server's thread a lookup per peer on every
    /// turn.)
    fn publish_budgets(&mut self) {
        let budgets = &self.budgets;
        let timers = &mut self.changed_timers;
        self.p.proto.drain_changed(&mut |peer, queued, timer| {
            *timers = (*timers).min(timer);
            if let Some(b) = budgets.get(&peer) {
                b.publish(queued);
            }
        });
    }
}

#[cfg(test)]
#[path = "thread_tests.rs"]
mod tests;
