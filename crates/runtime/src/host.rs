//! The engine side of the runtime: [`Host`].

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError, TrySendError};

use super::aws_lc_aead;
use super::budget::{BudgetBoard, EngineBudget, SendBudget};
use super::carrier::{self, Carrier, ExternalLink, Incoming, Outgoing, Wire};
use super::channel_limits::ChannelLimits;
use super::counted::{self, CountedReceiver, CountedSender};
use super::host_config::{Direction, HostConfig};
use super::host_error::{FullQueue, HostError};
use super::host_event::HostEvent;
use super::log::LogQueue;
use super::pool::BufferPool;
use super::resolve::{Resolution, Resolver, Ticket};
use super::service::{self, Joining};
use super::socket;
use super::stall_timer::StallTimer;
use super::thread::{
    Command, DirectPath, Hosted, IDLE_CAP, MODERATION_MIN_PEERS, NetLoop, RuntimeStats, Shared, ThreadMsg, ThreadParts,
};
use super::to_engine::Polled;
use crate::os_seed::{os_random_bytes, os_seed};
use crate::prefetch;
use crate::system_clock::SystemClock;
use tickwire_proto::wire::{MAX_DATAGRAM_SIZE, MIN_DATAGRAM_SIZE};
use tickwire_proto::{
    AddressText, Admission, Binding, Clock, ConnectionStats, DisconnectReason, Driver, Endpoint, EndpointStats,
    LinkConfig, MAX_PROBES, Micros, PeerId, PeerIdAllocator, PeerMap, ProbeError, Probes, RemoteId, SMALL_BUFFER,
    Secret, Security, peer_map,
};

/// Commands (sends, flushes, connects, ...) that may wait for the network thread.
/// Beyond this, calls fail with [`HostError::QueueFull`] ([`FullQueue::Commands`])
/// instead of blocking.
pub const COMMAND_QUEUE_CAPACITY: usize = 4096;

/// Events that may wait for the engine in the channel (received messages at most
/// `to_engine::MAX_MESSAGES_IN_CHANNEL` of them); more wait in the endpoint, per peer.
/// The channel holds memory for a reserve of a few hundred events, or the most it has
/// held at once if more (`counted.rs`), not for this bound.
const EVENT_QUEUE_CAPACITY: usize = 2048;

/// Events waiting for `poll_event` on the engine's side: what the engine's own reads
/// of the socket delivered straight from the endpoint, and what statistics calls moved
/// off the channel ahead of it (kept preallocated, never grown: a read takes no more
/// events than fit, the rest wait in the endpoint).
const PENDING_CAPACITY: usize = 256;

/// Send buffers made when a host starts: messages in flight to the network thread at
/// once before [`Host::send`] allocates. A running relay server's engine had more than
/// 8 in flight at a scheduling hitch, which then allocated (`tests/relay_session_alloc.rs`
/// holds a running match to none).
const SEND_BUFFERS_PREFILLED: usize = 64;

/// The longest time dropping a [`Host`] waits for the network thread to disconnect its
/// peers and exit. After that the thread is detached (it still exits on its own).
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(1);

/// The engine-side handle of one UDP endpoint and its network thread. The endpoint's
/// datagrams go through a socket of its own, or through the engine's carrier
/// ([`Carrier::External`]: see [`Host::push_datagrams`] and [`Host::pull_datagrams`]).
///
/// Every method returns without waiting for the network. Messages pushed with
/// [`send`](Self::send) leave on the next [`flush`](Self::flush) (or auto-flush).
/// Events, including received messages, arrive through
/// [`poll_event`](Self::poll_event).
///
/// No thread hop: `flush` writes to the socket from the caller's thread, and a
/// `poll_event` that finds nothing published reads the socket itself, whenever the
/// network thread is not in the middle of a turn (it never waits for it; then the
/// thread does the work). The network thread runs timers, resends and keepalives, and
/// receives while the engine does not poll.
///
/// Threading: a `Host` is `Send` (it may move to another thread) but its methods take
/// `&mut self`; use it from one thread at a time.
///
/// Waking: on unix and Windows `connect`, `disconnect`, `set_link_sim` and a `flush`
/// the thread does wake it (a self-pipe, a loopback socket), as does a direct flush
/// or poll that made a timer due earlier than the thread means to wake. On other
/// targets the thread polls the socket every millisecond instead (see `waker.rs`).
///
/// Drop: the thread disconnects every peer gracefully and exits. Dropping waits for
/// that at most [`SHUTDOWN_WAIT`] (1 s), then detaches the thread.
///
/// Failure: if the thread dies (a panic, a socket failure), the next `poll_event`
/// returns [`HostEvent::Fatal`] and every later call fails with
/// [`HostError::ThreadGone`].
pub struct Host {
    shared: Arc<Shared>,
    /// The core the network thread runs, for the work the engine's thread does itself
    /// (`thread::DirectPath`: flushing, and receiving while it polls).
    direct: Arc<Mutex<dyn DirectPath>>,
    commands: CountedSender<Command>,
    events: CountedReceiver<ThreadMsg>,
    /// Events not yet polled: delivered by the engine's own reads, or taken off the
    /// channel while refreshing statistics (`PENDING_CAPACITY`).
    pending: VecDeque<HostEvent>,
    send_pool: BufferPool,
    msg_pool: BufferPool,
    ids: PeerIdAllocator,
    /// Largest message per channel id (inline: a send reads it, and a list of its own
    /// was a cache line of its own, cold in every frame of a host with few peers).
    channel_limits: ChannelLimits,
    /// `send_queue_limit_bytes`: the most a peer's send queue may hold.
    send_queue_limit: usize,
    /// Whether sends may go straight to the endpoint (`DirectPath::send_now`): not
    /// with auto-flush, whose engine may never call `flush`, which bounds them.
    direct_sends: bool,
    /// Messages sent straight to the endpoint since the last flush. At
    /// [`COMMAND_QUEUE_CAPACITY`] further sends take the command queue, which is
    /// bounded: an engine that sends without flushing meets `QueueFull` as before,
    /// instead of filling the endpoint's queue with one small message after another.
    unflushed: usize,
    local_addr: SocketAddr,
    /// The rings shared with the core when the engine carries the datagrams.
    external: Option<Arc<ExternalLink>>,
    /// Peers the engine may send to (connected or connecting, as far as it has seen),
    /// with their send-queue budgets.
    live: PeerMap<EngineBudget>,
    /// Budgets the thread created for accepted peers whose `Connected` the engine has
    /// not polled yet.
    announced: PeerMap<SendBudget>,
    /// The newest statistics seen per peer, with when they were taken: read from the
    /// core directly, or published by the thread (whichever is newer wins).
    peer_stats: PeerMap<(ConnectionStats, Micros)>,
    endpoint_stats: EndpointStats,
    runtime_stats: RuntimeStats,
    /// When `endpoint_stats` and `runtime_stats` were taken.
    totals_at: Micros,
    /// Why the thread stopped, once the engine has been told (or should have been).
    gone: Option<String>,
    fatal_reported: bool,
    /// The network thread's clock: message arrival times are on this timeline.
    clock: SystemClock,
    /// Disconnected once the service thread has finished with this host.
    done: Receiver<()>,
    /// Host names being looked up, started on the first (`resolve.rs`).
    resolver: Resolver,
    /// Peers dialled by name whose `Connect` is not queued yet, by lookup.
    named: HashMap<Ticket, names::NamedPeer>,
    /// Lookups of named peers the engine disconnected before the answer came.
    cancelled: Vec<Ticket>,
    /// Answers to [`Host::resolve`] not taken yet.
    answers: HashMap<Ticket, Resolution>,
    /// Reflexive address probes ([`Host::discover_reflexive`]) not taken yet: `None`
    /// while in flight, then their results. At most [`MAX_PROBES`].
    probes: HashMap<u32, Option<Result<SocketAddr, ProbeError>>>,
    next_probe: u32,
    /// The NAT traversal of a P2P match, once started (`host_traversal.rs`).
    traversal: Option<traversal::TraversalView>,
}

#[path = "host_names.rs"]
mod names;
#[path = "host_traversal.rs"]
mod traversal;
pub use traversal::TraversalSetup;

impl Host {
    /// Binds the socket described by `cfg`, builds the endpoint and starts the network
    /// thread. Fails with [`HostError::Config`] for an invalid endpoint configuration and
    /// [`HostError::Io`] (naming the address) when the socket cannot be bound.
    pub fn start(mut cfg: HostConfig) -> Result<Host, HostError> {
        // A carrier's largest datagram is its endpoint's (checked in `start_with`).
        if let Carrier::External { max_datagram_size } = cfg.carrier {
            cfg.endpoint.max_datagram_size = max_datagram_size;
        }
        if cfg.endpoint.seed == 0 {
            cfg.endpoint.seed = seed_from_os()?;
        }
        // Every key, salt and cookie secret of the endpoint comes from a generator this
        // seeds: always the OS's, whatever seed the caller gave for reproducibility.
        cfg.endpoint.key_seed =
            Secret(os_random_bytes().map_err(|source| HostError::Io { context: "seeding the host".into(), source })?);
        // (The endpoint's config is checked when it is built, once the socket is bound:
        // a connect-token server may take its public address from the socket.)
        validate_sim(Direction::Outbound, cfg.outbound_sim.as_ref())?;
        validate_sim(Direction::Inbound, cfg.inbound_sim.as_ref())?;
        let clock = SystemClock::new();
        let mut endpoint_cfg = cfg.endpoint.clone();
        // AWS-LC's AEADs seal the packets (`aws_lc_aead.rs`) unless the caller gave others.
        endpoint_cfg.aead.get_or_insert_with(aws_lc_aead::aws_lc_aead);
        // And the CPU's prefetch hints a connection's lines ahead of use (`prefetch.rs`).
        endpoint_cfg.prefetch.get_or_insert_with(prefetch::cpu_prefetch);
        let now = clock.now_us();
        Self::start_with(cfg, clock, IDLE_CAP, move |local| {
            if let Security::Encrypted { admission: Admission::Tokens(t), .. } = &mut endpoint_cfg.security {
                // No public address given: the one this socket is bound to (its port
                // known only now), which must then be one clients can be told.
                if t.public_addresses.is_empty() {
                    if local.ip().is_unspecified() {
                        return Err(HostError::Config(format!(
                            "a server with a connect key needs its public address (connect tokens name it): it is \
                             bound to {local}, which clients cannot be given"
                        )));
                    }
                    t.public_addresses.push(local);
                }
            }
            let endpoint = Endpoint::new(endpoint_cfg, now).map_err(|e| HostError::Config(e.to_string()))?;
            let ids = endpoint.peer_id_allocator();
            Ok((endpoint, ids))
        })
    }

    /// Starts a host around any [`Driver`] (the endpoint, or a test's stand-in);
    /// `idle_cap` bounds the thread's sleep. `make` builds it once the socket is bound,
    /// from its local address, with the allocator its connections' ids come from.
    pub(crate) fn start_with<P: Driver + Send + 'static>(
        cfg: HostConfig,
        clock: SystemClock,
        idle_cap: Duration,
        make: impl FnOnce(SocketAddr) -> Result<(P, PeerIdAllocator), HostError>,
    ) -> Result<Host, HostError> {
        let (wire, wait_socket, local_addr) = match cfg.carrier {
            Carrier::Udp => {
                let socket = socket::bind(&cfg)?;
                let local_addr = socket.local_addr().map_err(|source| HostError::Io {
                    context: format!("reading the local address of {}", cfg.bind),
                    source,
                })?;
                // The thread sleeps on its own handle of the socket, without the core's lock.
                let wait_socket = socket
                    .try_clone()
                    .map_err(|source| HostError::Io { context: "duplicating the socket handle".into(), source })?;
                (Wire::Udp(socket), Some(wait_socket), local_addr)
            }
            Carrier::External { max_datagram_size } => {
                if RemoteId::from_addr(cfg.bind).is_none() {
                    return Err(HostError::Config(format!(
                        "a host on an external carrier is known by a remote id (remote:<id>), not {}",
                        AddressText(cfg.bind)
                    )));
                }
                if !(MIN_DATAGRAM_SIZE..=MAX_DATAGRAM_SIZE).contains(&max_datagram_size) {
                    return Err(HostError::Config(format!(
                        "max_datagram_size is {max_datagram_size}: a carrier must take datagrams of \
                         {MIN_DATAGRAM_SIZE}..={MAX_DATAGRAM_SIZE} bytes"
                    )));
                }
                (Wire::External(Arc::new(ExternalLink::new(max_datagram_size))), None, cfg.bind)
            }
        };
        let external = match &wire {
            Wire::External(link) => Some(link.clone()),
            Wire::Udp(_) => None,
        };
        let (proto, ids) = make(local_addr)?;
        let (cmd_tx, cmd_rx) = counted::bounded(COMMAND_QUEUE_CAPACITY);
        let (ev_tx, ev_rx) = counted::bounded(EVENT_QUEUE_CAPACITY);
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        // Received messages come in buffers sized to them, down to the endpoint's small
        // ones: those come back too.
        let (send_pool, msg_pool) = (BufferPool::new(1), BufferPool::new(SMALL_BUFFER));
        // Sends waiting for the network thread each hold a buffer until it has taken
        // them; a datagram's worth each covers every unreliable message.
        send_pool.prefill(SEND_BUFFERS_PREFILLED, MAX_DATAGRAM_SIZE);
        let channel_limits = ChannelLimits::of_config(&cfg.endpoint);
        let send_queue_limit = cfg.endpoint.send_queue_limit_bytes;
        let auto_flush_us = cfg.auto_flush_interval_us;
        let sim_seed = if cfg.sim_seed == 0 { seed_from_os()? } else { cfg.sim_seed };
        // A host that accepts many clients checks its steady engine's frames with a
        // timer the engine pushes (`stall_timer.rs`); without one (refused, or another
        // platform) it keeps the thread's deadlines.
        let (stall_timer, timer_handle) = match &wire {
            Wire::Udp(_) if cfg.endpoint.max_incoming as usize >= MODERATION_MIN_PEERS => StallTimer::new()
                .and_then(|t| t.handle().map(|h| (t, h)))
                .map_or((None, None), |(t, h)| (Some(t), Some(h))),
            _ => (None, None),
        };
        let joined = service::join(|waker| {
            let shared = Arc::new(Shared {
                waker,
                shutdown: AtomicBool::new(false),
                inject_panic: AtomicBool::new(false),
                fatal: Mutex::new(None),
                polled: Polled::default(),
                log: LogQueue::new(),
                stats: Default::default(),
                exited: AtomicBool::new(false),
                budgets: BudgetBoard::new(),
            });
            let parts = ThreadParts {
                proto,
                probes: Probes::default(),
                traversal: None,
                wire,
                shared: shared.clone(),
                clock,
                commands: cmd_rx,
                events: ev_tx.clone(),
                send_pool: send_pool.clone(),
                msg_pool: msg_pool.clone(),
                outbound_sim: cfg.outbound_sim,
                inbound_sim: cfg.inbound_sim,
                sim_seed,
                auto_flush_us: cfg.auto_flush_interval_us,
                idle_cap,
                moderation_us: cfg.receive_moderation_us,
                stall_timer,
            };
            let core = Arc::new(Mutex::new(NetLoop::new(parts)));
            let direct: Arc<Mutex<dyn DirectPath>> = core.clone();
            let hosted = Hosted { core, shared: shared.clone(), events: ev_tx };
            (
                Joining { turn: Arc::new(hosted), socket: wait_socket, timer: timer_handle, done: done_tx },
                (shared, direct),
            )
        });
        let (shared, direct) =
            joined.map_err(|source| HostError::Io { context: "starting the network thread".into(), source })?;
        Ok(Host {
            shared,
            direct,
            commands: cmd_tx,
            events: ev_rx,
            pending: VecDeque::with_capacity(PENDING_CAPACITY),
            send_pool,
            msg_pool,
            ids,
            channel_limits,
            send_queue_limit,
            direct_sends: auto_flush_us == 0,
            unflushed: 0,
            local_addr,
            external,
            live: peer_map(),
            announced: peer_map(),
            peer_stats: peer_map(),
            endpoint_stats: EndpointStats::default(),
            runtime_stats: RuntimeStats::default(),
            totals_at: 0,
            gone: None,
            fatal_reported: false,
            clock,
            done: done_rx,
            resolver: Resolver::new(),
            named: HashMap::new(),
            cancelled: Vec::new(),
            answers: HashMap::new(),
            probes: HashMap::new(),
            next_probe: 1,
            traversal: None,
        })
    }

    /// The host's log queue: records from its network thread (connections, refused
    /// datagrams a second at a time, faults), off until a level is set. Drain it on
    /// the engine's thread.
    pub fn log(&self) -> &LogQueue {
        &self.shared.log
    }

    /// Now, in microseconds on the network thread's clock: the timeline of
    /// [`HostEvent::Message`]'s `received_at`. Sessions driven over this host use it.
    pub fn now_us(&self) -> Micros {
        self.clock.now_us()
    }

    /// The bound address (with the port the OS picked when the config said 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Starts connecting to `addr` and returns the new peer's id at once; a
    /// [`HostEvent::Connected`] or [`HostEvent::Disconnected`] for it follows. Messages
    /// may be sent to the peer right away; they wait for the handshake. If the endpoint
    /// refuses the attempt (a connection with `addr` already exists) the `Disconnected`
    /// has reason `ProtocolError`. An IPv6 `addr` from an IPv4 socket is a
    /// [`HostError::Config`]. Wakes the network thread.
    pub fn connect(&mut self, addr: SocketAddr) -> Result<PeerId, HostError> {
        self.connect_bound(addr, None)
    }

    /// Like [`Host::connect`], binding who both ends are into the handshake
    /// ([`Binding`]): the host at `addr` must have `binding.responder` as its own id
    /// ([`Host::set_local_id`]), or it refuses the handshake (a man in the middle
    /// cannot hand it to another holder of the same secret).
    pub fn connect_bound(&mut self, addr: SocketAddr, binding: Option<Binding>) -> Result<PeerId, HostError> {
        self.check_alive()?;
        // A peer's fixed address under NAT traversal is routed by the traversal.
        let addr = if self.traverses_to(addr) { addr } else { socket::reachable(self.local_addr, addr)? };
        let peer = self.ids.next();
        let budget = self.shared.budgets.take();
        self.command(Command::Connect { peer, addr, budget: budget.clone(), binding })?;
        self.live.insert(peer, EngineBudget::new(budget));
        Ok(peer)
    }

    /// Our own id in handshakes bound to us ([`Host::connect_bound`]); None (the
    /// start) refuses every bound handshake. Wakes the network thread.
    pub fn set_local_id(&mut self, id: Option<u32>) -> Result<(), HostError> {
        self.check_alive()?;
        self.command(Command::SetLocalId(id))
    }

    /// Queues `data` for `peer` on `channel`; it leaves on the next flush. Copies `data`
    /// into a recycled buffer (no allocation in steady state). Checks synchronously:
    /// the channel exists ([`HostError::BadChannel`]), the size fits it
    /// ([`HostError::TooLarge`]), the peer is live as far as the engine has seen
    /// ([`HostError::UnknownPeer`]), the peer's send queue has room for it under
    /// `send_queue_limit_bytes` ([`HostError::QueueFull`] with
    /// [`FullQueue::PeerSendQueue`]), and the command queue has room
    /// ([`FullQueue::Commands`]). Does not wake the thread; never blocks.
    ///
    /// `Ok` means the message was accepted: the network thread will hand it to the
    /// endpoint, which will not refuse it for lack of room. A reliable message accepted
    /// here is delivered, in order, unless the connection ends (a
    /// [`HostEvent::Disconnected`] says so). A refused message had no effect: retry it
    /// on a later frame, after a flush and once the peer has acknowledged some of the
    /// queue.
    pub fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), HostError> {
        self.check_send(peer, channel, data.len(), None)?;
        self.submit(peer, channel, data)
    }

    /// The largest message [`Host::send`] takes on an unreliable or sequenced channel:
    /// one datagram of the endpoint's `max_datagram_size`
    /// ([`max_unreliable_for`](tickwire_proto::max_unreliable_for) it;
    /// [`MAX_UNRELIABLE`](tickwire_proto::MAX_UNRELIABLE) at the default 1,200), or
    /// `max_message_size` if that is less.
    pub fn max_unreliable(&self) -> usize {
        self.channel_limits.unreliable
    }

    /// Checks what [`Host::send`] checks (a live thread, the channel, the size, the
    /// peer, its send queue) without sending. With `Some(limit)` the peer's whole send
    /// queue (every channel) must also stay within `limit` bytes: a session's message
    /// side channel uses a smaller bound than the host's, so that chat can never fill
    /// the queue the game's own traffic needs.
    pub(crate) fn check_send(
        &mut self,
        peer: PeerId,
        channel: u8,
        len: usize,
        message_limit: Option<usize>,
    ) -> Result<(), HostError> {
        self.check_alive()?;
        let max = self.channel_limits.of(channel).ok_or(HostError::BadChannel(channel))?;
        if len > max {
            return Err(HostError::TooLarge { size: len, max });
        }
        let budget = self.live.get(&peer).ok_or(HostError::UnknownPeer(peer))?;
        let limit = self.send_queue_limit;
        if let Err(pending) = budget.check(len, limit) {
            return Err(HostError::QueueFull(FullQueue::PeerSendQueue { peer, pending, size: len, limit }));
        }
        if let Some(limit) = message_limit
            && let Err(pending) = budget.check(len, limit)
        {
            return Err(HostError::QueueFull(FullQueue::MessageQueue { peer, pending, size: len, limit }));
        }
        Ok(())
    }

    /// Puts a checked message ([`Host::check_send`]) in the command queue.
    pub(crate) fn submit(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), HostError> {
        // A peer dialled by name whose connection is not queued yet keeps it here.
        let held = !self.named.is_empty() && self.hold_send(peer, channel, data);
        if !self.live.contains_key(&peer) {
            return Err(HostError::UnknownPeer(peer));
        }
        if !held && self.shared.exited.load(Ordering::Acquire) {
            return Err(self.thread_gone());
        }
        // Straight to the endpoint when the network thread is not in its turn (the
        // usual case): no copy into a pooled buffer, no trip through the command
        // channel. The thread's side of the budget counts it as taken at once, so
        // until the next publication it counts as on its way, as a queued one does.
        let direct = !held
            && self.direct_sends
            && self.unflushed < COMMAND_QUEUE_CAPACITY
            && self.core().map(|mut core| core.send_now(peer, channel, data)).is_some();
        self.unflushed += usize::from(direct);
        let budget = self.live.get_mut(&peer).ok_or(HostError::UnknownPeer(peer))?;
        if held || direct {
            budget.submitted(data.len());
            return Ok(());
        }
        let mut buf = self.send_pool.take();
        buf.extend_from_slice(data);
        match self.commands.try_send(Command::Send { peer, channel, data: buf }) {
            Ok(()) => {
                budget.submitted(data.len());
                Ok(())
            }
            Err(TrySendError::Full(cmd)) => {
                if let Command::Send { data, .. } = cmd {
                    self.send_pool.give(data);
                }
                Err(HostError::QueueFull(FullQueue::Commands))
            }
            Err(TrySendError::Disconnected(_)) => Err(self.thread_gone()),
        }
    }

    /// Puts everything queued on the wire now. Done on the caller's thread when the
    /// network thread is not in the middle of a turn (the usual case: no thread hop,
    /// no wake); otherwise the thread is asked to, and woken.
    pub fn flush(&mut self) -> Result<(), HostError> {
        self.check_alive()?;
        match self.directly(|core| core.flush_now()) {
            Some(()) => {}
            None => self.command(Command::Flush)?,
        }
        // (A queued flush reaches the direct sends too: they are in the endpoint.)
        self.unflushed = 0;
        Ok(())
    }

    /// Hands the endpoint datagrams the engine's carrier received (a host started with
    /// [`Carrier::External`]): each with the remote it came from and how long ago it
    /// arrived. Batched under one lock, without copying, whenever the network thread is
    /// not in a turn; otherwise copied into a ring of [`INBOUND_RING`] datagrams that
    /// its turn empties (it is woken), and what does not fit is dropped and counted in
    /// [`RuntimeStats::socket_recv_errors`], as is a datagram longer than the carrier's
    /// largest. Never blocks. A remote the endpoint does not know is treated like an
    /// unknown UDP source (the handshake's cookie first). Returns how many were taken.
    /// A host with a UDP socket refuses with [`HostError::Config`].
    ///
    /// [`INBOUND_RING`]: crate::INBOUND_RING
    pub fn push_datagrams<'a>(&mut self, items: impl IntoIterator<Item = Incoming<'a>>) -> Result<usize, HostError> {
        self.check_alive()?;
        let link = self.external_link()?;
        let max = link.max_datagram_size;
        let now = self.clock.now_us();
        let (mut taken, mut refused) = (0, 0);
        let replan = match core_of(&self.shared, &self.direct) {
            Some(mut core) => {
                for d in items {
                    if d.data.len() > max {
                        refused += 1;
                        continue;
                    }
                    core.push_datagram(d.remote.to_addr(), d.data, d.arrival(now));
                    taken += 1;
                }
                link.refused(refused);
                core.pushed(&mut self.pending)
            }
            None => {
                let mut ring = carrier::lock(&link.inbound);
                for d in items {
                    if ring.push(d.remote, d.data, d.arrival(now)) {
                        taken += 1;
                    } else {
                        refused += 1;
                    }
                }
                drop(ring);
                link.refused(refused);
                true
            }
        };
        if replan {
            self.shared.waker.wake();
        }
        Ok(taken)
    }

    /// Takes datagrams the engine's carrier should send (a host started with
    /// [`Carrier::External`]), oldest first: `take` gets each with the remote it goes
    /// to and returns whether it took it; the first it does not take stays for the next
    /// call, and the call ends. Returns how many were taken. What the network thread
    /// sends between calls (resends, keepalives, handshake replies) waits in a ring of
    /// [`OUTBOUND_RING`] datagrams; past that, new ones are dropped and counted in
    /// [`RuntimeStats::socket_send_dropped`], as a full socket buffer would drop them.
    /// Call it at least once a frame, after the flush. Never waits for the network
    /// thread. A host with a UDP socket refuses with [`HostError::Config`].
    ///
    /// [`OUTBOUND_RING`]: crate::OUTBOUND_RING
    pub fn pull_datagrams(&mut self, mut take: impl FnMut(Outgoing<'_>) -> bool) -> Result<usize, HostError> {
        self.check_alive()?;
        let link = self.external_link()?;
        let mut ring = carrier::lock(&link.outbound);
        let mut taken = 0;
        while let Some((remote, data, _)) = ring.front() {
            if !take(Outgoing { remote, data }) {
                break;
            }
            ring.pop();
            taken += 1;
        }
        Ok(taken)
    }

    /// The rings of a host the engine carries; a UDP host's refusal otherwise.
    fn external_link(&self) -> Result<&ExternalLink, HostError> {
        self.external.as_deref().ok_or_else(|| {
            HostError::Config(format!(
                "this host has a UDP socket ({}): only a host on an external carrier (bound to remote:<id>) takes \
                 pushed datagrams and gives datagrams to pull",
                self.local_addr
            ))
        })
    }

    /// Asks the STUN server at `server` (any RFC 8489 or 5389 server: coturn, a
    /// platform's, ours) which address and port it sees this host's socket at: the
    /// reflexive address a peer outside the NAT can be told. The request leaves from the
    /// socket the connections use, so the answer names their mapping too; the answer
    /// is told apart from the connections' datagrams by the server's address and a
    /// 96-bit transaction id from the OS's generator, and never reaches the endpoint.
    /// Retransmitted after 250 ms, then doubling; without an answer the probe ends
    /// with [`ProbeError::Timeout`] about 16 s after the start. Take the result with
    /// [`Host::take_reflexive`]. Returns the probe's id.
    ///
    /// Fails with [`HostError::QueueFull`] ([`FullQueue::Probes`]) when
    /// [`MAX_PROBES`] probes are in flight or not taken, and with
    /// [`HostError::Config`] on a host on an external carrier (it has no socket of its
    /// own) or for a server this socket cannot reach (IPv6 from an IPv4 socket). Wakes
    /// the network thread.
    pub fn discover_reflexive(&mut self, server: SocketAddr) -> Result<u32, HostError> {
        self.check_alive()?;
        if self.external.is_some() {
            return Err(HostError::Config(
                "a host on an external carrier has no socket of its own to ask a STUN server about".into(),
            ));
        }
        let server = socket::reachable(self.local_addr, server)?;
        if self.probes.len() >= MAX_PROBES {
            return Err(HostError::QueueFull(FullQueue::Probes));
        }
        let transaction = os_random_bytes::<12>()
            .map_err(|source| HostError::Io { context: "drawing a STUN transaction id".into(), source })?;
        let probe = self.next_probe;
        self.command(Command::Discover { probe, server, transaction })?;
        self.next_probe = self.next_probe.wrapping_add(1).max(1);
        self.probes.insert(probe, None);
        Ok(probe)
    }

    /// The result of a reflexive address probe, once it has one (then it is taken:
    /// later calls return `None`): the address the server saw, or why there is none.
    /// `None` while it is in flight, or for an id this host never gave.
    pub fn take_reflexive(&mut self, probe: u32) -> Option<Result<SocketAddr, ProbeError>> {
        self.pump(false);
        match self.probes.get(&probe) {
            Some(Some(_)) => self.probes.remove(&probe).flatten(),
            _ => None,
        }
    }

    /// Whether the engine carries this host's datagrams ([`Carrier::External`]).
    pub fn is_external(&self) -> bool {
        self.external.is_some()
    }

    /// Runs `work` on the core from this thread, if the network thread is alive and
    /// not in a turn (never waits for it), and wakes the thread when `work` says it
    /// must replan. `None`: not run.
    fn directly(&mut self, work: impl FnOnce(&mut dyn DirectPath) -> bool) -> Option<()> {
        directly(&self.shared, &self.direct, work)
    }

    /// Closes the connection to `peer` gracefully. The engine may no longer send to it
    /// (not even after a `Connected` for it that was already on its way); a
    /// [`HostEvent::Disconnected`] follows. Wakes the network thread.
    pub fn disconnect(&mut self, peer: PeerId) -> Result<(), HostError> {
        self.close(peer, None)
    }

    /// Like [`Host::disconnect`], telling the peer `reason` (what its `Disconnected`
    /// event will say: for example `ServerFull`, so that it knows to try again later).
    pub fn disconnect_with(&mut self, peer: PeerId, reason: DisconnectReason) -> Result<(), HostError> {
        self.close(peer, Some(reason))
    }

    fn close(&mut self, peer: PeerId, reason: Option<DisconnectReason>) -> Result<(), HostError> {
        self.check_alive()?;
        if !self.live.contains_key(&peer) {
            return Err(HostError::UnknownPeer(peer));
        }
        if !self.named.is_empty() && self.cancel_named(peer) {
            return Ok(());
        }
        self.command(Command::Disconnect { peer, reason })?;
        self.live.remove(&peer);
        Ok(())
    }

    /// The next event, or `None` if there is none right now. Never blocks.
    pub fn poll_event(&mut self) -> Option<HostEvent> {
        if self.pending.is_empty() {
            self.pump(true);
        }
        let ev = self.pending.pop_front()?;
        match &ev {
            HostEvent::Connected { peer, .. } => {
                // An accepted peer becomes live with the budget the thread made for it.
                // A peer this host connected to is live already, unless the engine has
                // disconnected it meanwhile: then it stays gone.
                if let Some(budget) = self.announced.remove(peer) {
                    self.live.insert(*peer, EngineBudget::new(budget));
                }
                // From here on `stats` answers for it (the thread put its figures on
                // the board before it sent the event).
                let peer = *peer;
                if let Some((s, at)) = self.fresh_stats(peer) {
                    self.keep_newer_stats(peer, s, at);
                }
            }
            HostEvent::Disconnected { peer, .. } => {
                self.live.remove(peer);
                self.announced.remove(peer);
                self.peer_stats.remove(peer);
            }
            HostEvent::Fatal { message } => self.gone = Some(message.clone()),
            HostEvent::Message { .. } => {}
        }
        Some(ev)
    }

    /// Gives a message buffer (from [`HostEvent::Message`]) back to the network thread
    /// for reuse. Optional; never blocks; a full free-list simply frees the buffer, and
    /// so does one too small to be reused (an empty message's, which holds nothing).
    pub fn recycle(&mut self, buf: Vec<u8>) {
        // Straight to the endpoint when the network thread is not in its turn (the
        // usual case; the engine's poll just held the core, so its lock is a warm line):
        // the pool's channel costs two operations a message, each on a line of its own
        // ring, and the thread's turn a third to take it back.
        if !self.msg_pool.keeps(buf.capacity()) {
            return;
        }
        match self.core() {
            Some(mut core) => core.take_back(buf),
            None => self.msg_pool.give(buf),
        }
    }

    /// The statistics of the connection to `peer`, or `None` if the peer is unknown
    /// or the engine has seen it disconnect. Read from the network core on this
    /// thread when the network thread is not in its turn (the usual case); otherwise
    /// the latest the thread published (at most about 100 ms behind a change, except
    /// beside an engine that reads the socket itself at a steady frame rate, whose
    /// turns publish nothing; an idle connection changes only at its keepalives).
    /// Never waits for the network thread; never goes back to older figures.
    pub fn stats(&mut self, peer: PeerId) -> Option<ConnectionStats> {
        self.pump(false);
        self.peer_stats.get(&peer)?;
        if let Some((fresh, at)) = self.fresh_stats(peer) {
            self.keep_newer_stats(peer, fresh, at);
        }
        self.peer_stats.get(&peer).map(|&(s, _)| s)
    }

    /// `peer`'s figures from the core itself, or, while the network thread is in a
    /// turn, the last it published (`stats_board.rs`).
    fn fresh_stats(&self, peer: PeerId) -> Option<(ConnectionStats, Micros)> {
        match self.read_directly(|core| core.peer_stats(peer)) {
            Some(direct) => direct,
            None => self.shared.stats.lock().peer(peer),
        }
    }

    /// The endpoint-wide statistics (as fresh as [`stats`](Self::stats)). Never
    /// blocks.
    pub fn endpoint_stats(&mut self) -> EndpointStats {
        self.refresh_totals();
        self.endpoint_stats
    }

    /// Counters of the runtime layer (dropped sends, socket errors, event backlog), as
    /// fresh as [`stats`](Self::stats).
    pub fn runtime_stats(&mut self) -> RuntimeStats {
        self.refresh_totals();
        self.runtime_stats
    }

    fn refresh_totals(&mut self) {
        self.pump(false);
        let totals = self.read_directly(|core| core.totals()).or_else(|| self.shared.stats.lock().totals());
        if let Some((e, r, at)) = totals {
            self.set_totals(e, r, at);
        }
    }

    fn set_totals(&mut self, e: EndpointStats, r: RuntimeStats, at: Micros) {
        if at >= self.totals_at {
            (self.endpoint_stats, self.runtime_stats, self.totals_at) = (e, r, at);
        }
    }

    /// Runs `read` on the core from this thread if the network thread is alive and not
    /// in its turn (never waits for it). `None`: not run.
    fn read_directly<T>(&self, read: impl FnOnce(&mut dyn DirectPath) -> T) -> Option<T> {
        Some(read(&mut *self.core()?))
    }

    /// The core, if the network thread is alive and not in this host's turn; never
    /// waits. (WouldBlock: the thread is in the turn. Poisoned: an earlier call panicked
    /// inside the core, and the thread stops on it; the command path reports that.)
    fn core(&self) -> Option<MutexGuard<'_, dyn DirectPath + 'static>> {
        core_of(&self.shared, &self.direct)
    }

    /// The core, shared: a test holds its lock as the thread's turn does.
    #[cfg(test)]
    pub(crate) fn shared_core(&self) -> Arc<Mutex<dyn DirectPath>> {
        self.direct.clone()
    }

    /// Keeps `s`, taken at `at`, as `peer`'s statistics unless newer ones were seen.
    fn keep_newer_stats(&mut self, peer: PeerId, s: ConnectionStats, at: Micros) {
        if self.peer_stats.get(&peer).is_none_or(|&(_, seen)| at >= seen) {
            self.peer_stats.insert(peer, (s, at));
        }
    }

    /// Turns a link simulator on, reconfigures it (`Some`) or turns it off (`None`).
    /// Datagrams the previous simulator still held are delivered at once.
    /// An invalid `cfg` fails with [`HostError::Config`]. Wakes the network thread.
    pub fn set_link_sim(&mut self, dir: Direction, cfg: Option<LinkConfig>) -> Result<(), HostError> {
        self.check_alive()?;
        validate_sim(dir, cfg.as_ref())?;
        // Boxed: a link config is several times any other command, and every slot of
        // the command queue is as large as its largest command.
        self.command(Command::SetSim { dir, cfg: cfg.map(Box::new) })
    }

    /// Changes the silence timeout of every connection (and of those to come) to
    /// `timeout_us` (`Micros::MAX`: never); a connection admitted with a connect token
    /// keeps its token's. Keepalives follow (a connection sends one after a quarter of
    /// its timeout at most). Fails with [`HostError::Config`] for 0. Wakes the network
    /// thread.
    pub fn set_timeout(&mut self, timeout_us: Micros) -> Result<(), HostError> {
        self.check_alive()?;
        if timeout_us == 0 {
            return Err(HostError::Config("timeout 0 us must be above 0".into()));
        }
        self.command(Command::SetTimeout { timeout_us })
    }

    /// Makes the network thread panic, to test the `Fatal` path. Only in test builds
    /// (this crate's tests, or the `test-hooks` feature the C ABI's tests turn on).
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn debug_inject_panic(&mut self) {
        self.shared.inject_panic.store(true, Ordering::Release);
        self.shared.waker.wake();
    }

    fn check_alive(&self) -> Result<(), HostError> {
        match &self.gone {
            Some(m) => Err(HostError::ThreadGone(m.clone())),
            None => Ok(()),
        }
    }

    /// Queues a command and wakes the thread (also when the queue is full: the thread
    /// then catches up sooner).
    fn command(&mut self, cmd: Command) -> Result<(), HostError> {
        if self.shared.exited.load(Ordering::Acquire) {
            return Err(self.thread_gone());
        }
        let r = self.commands.try_send(cmd);
        self.shared.waker.wake();
        match r {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => Err(HostError::QueueFull(FullQueue::Commands)),
            Err(TrySendError::Disconnected(_)) => Err(self.thread_gone()),
        }
    }

    /// The thread has exited: remember why, for every later call.
    fn thread_gone(&mut self) -> HostError {
        let message = self.gone.get_or_insert_with(|| fatal_message(&self.shared)).clone();
        HostError::ThreadGone(message)
    }

    /// Moves what the thread published into the caches, and reads the socket when the
    /// channel is empty (its events come straight into `pending`). With `until_event`,
    /// stops at the first event. Otherwise it stops when `pending` is full: statistics
    /// behind many unpolled events wait until the engine polls, rather than `pending`
    /// growing.
    fn pump(&mut self, until_event: bool) {
        self.drain_resolver();
        // Whether this thread has read the socket itself (polling only), and whether
        // it has looked at the channel once more after seeing the thread exit.
        let (mut received, mut exit_seen) = (!until_event, false);
        loop {
            if self.pending.len() == self.pending.capacity() {
                return;
            }
            match self.events.try_recv() {
                Ok(ThreadMsg::Event(ev)) => {
                    match &ev {
                        HostEvent::Fatal { .. } => self.fatal_reported = true,
                        HostEvent::Message { data, .. } => self.shared.polled.took(data),
                        _ => {}
                    }
                    self.pending.push_back(ev);
                    if until_event {
                        return;
                    }
                }
                Ok(ThreadMsg::PeerBudget(peer, budget)) => {
                    self.announced.insert(peer, budget);
                }
                Ok(ThreadMsg::Reflexive(probe, result)) => {
                    if let Some(slot) = self.probes.get_mut(&probe) {
                        *slot = Some(result);
                    }
                }
                Ok(ThreadMsg::Traversal(ev)) => {
                    if let Some(t) = self.traversal.as_mut() {
                        t.note(ev);
                    }
                }
                Err(TryRecvError::Empty) => {
                    // Nothing published: read the socket here rather than wait for the
                    // network thread to wake for it (a busy-polling engine then pays
                    // no thread hop on receive).
                    if !received {
                        received = true;
                        // The events come straight into `pending` when they can.
                        let pending = &mut self.pending;
                        if directly(&self.shared, &self.direct, |core| core.receive_now(pending)).is_some() {
                            if until_event && !self.pending.is_empty() {
                                return;
                            }
                            continue;
                        }
                    }
                    if !self.shared.exited.load(Ordering::Acquire) {
                        return;
                    }
                    // The thread queues its Fatal before it marks its exit: one more
                    // look sees it.
                    if !exit_seen {
                        exit_seen = true;
                        continue;
                    }
                    self.report_exit();
                    return;
                }
                Err(TryRecvError::Disconnected) => {
                    self.report_exit();
                    return;
                }
            }
        }
    }
}

impl Host {
    /// The thread exited without its Fatal getting through (the channel was full, or it
    /// died before sending): report it once.
    fn report_exit(&mut self) {
        if !self.fatal_reported {
            self.fatal_reported = true;
            self.pending.push_back(HostEvent::Fatal { message: fatal_message(&self.shared) });
        }
    }
}

/// [`Host::directly`], for a caller that borrows the host's other fields beside it.
fn directly(
    shared: &Shared,
    direct: &Mutex<dyn DirectPath>,
    work: impl FnOnce(&mut dyn DirectPath) -> bool,
) -> Option<()> {
    let replan = work(&mut *core_of(shared, direct)?);
    if replan {
        shared.waker.wake();
    }
    Some(())
}

/// [`Host::core`], for a caller that borrows the host's other fields beside it.
fn core_of<'a>(shared: &Shared, direct: &'a Mutex<dyn DirectPath>) -> Option<MutexGuard<'a, dyn DirectPath + 'static>> {
    if shared.exited.load(Ordering::Acquire) {
        return None;
    }
    direct.try_lock().ok()
}

/// A seed from the OS generator, as a host error naming what it was for.
fn seed_from_os() -> Result<u64, HostError> {
    os_seed().map_err(|source| HostError::Io { context: "seeding the host".into(), source })
}

fn validate_sim(dir: Direction, cfg: Option<&LinkConfig>) -> Result<(), HostError> {
    match cfg.map(LinkConfig::validate) {
        Some(Err(e)) => Err(HostError::Config(format!("{dir:?} link simulator: {e}"))),
        _ => Ok(()),
    }
}

fn fatal_message(shared: &Shared) -> String {
    shared
        .fatal
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .unwrap_or_else(|| "network thread exited unexpectedly".into())
}

impl Drop for Host {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        self.shared.waker.wake();
        // Disconnected: the service thread has finished with this host (its peers were
        // told). Timeout: it still lingers, and finishes on its own.
        if self.done.recv_timeout(SHUTDOWN_WAIT) != Err(RecvTimeoutError::Timeout) {
            // The last host's thread exits with it: reap it, so nothing is left running.
            service::reap();
        }
    }
}
