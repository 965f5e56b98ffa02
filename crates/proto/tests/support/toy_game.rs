//! The engine side of the rollback tests: a toy game (8 x i64 of state per player,
//! updated from a 2-byte input) that answers requests the way an engine would, and a
//! harness that runs P2P sessions over a `SimNet` mesh.

use tickwire_proto::{
    AdvanceStatus, ConnectionStats, DisconnectReason, EndpointConfig, GameShape, InputStatus, Inputs, LinkConfig,
    Micros, NetEvent, NodeId, P2pConfig, P2pSession, PeerId, PlayerKind, Request, RollbackEvent as Event, SendError,
    SimNet, Tick, Transport,
};

pub const INPUT_SIZE: usize = 2;
pub const WORDS: usize = 8;
pub const TICK_US: u64 = 16_667;

/// What the engine hands back to the session after running a request.
pub enum Answer {
    Saved(Tick, u64),
    State(Tick, Vec<u8>),
}

/// The toy game. Snapshots live in engine-owned, preallocated slots.
pub struct Game {
    pub state: Vec<i64>,
    slots: Vec<Vec<i64>>,
    /// Final checksum of each tick's starting state (the last save wins), if recording.
    /// A rollback forgets the saves after the tick it loads: a resimulation deeper than
    /// the session's slots saves only some ticks again.
    pub checksums: Vec<Option<u64>>,
    /// The checksum of each tick's starting state as last played (saved or not).
    pub played: Vec<Option<u64>>,
    pub record: bool,
    /// Injected nondeterminism: the game reads a counter that is not part of the state.
    pub nondeterministic: bool,
    hidden: i64,
    /// From this tick on, player 0's update differs (a real desync on one peer).
    pub desync_from: Option<Tick>,
    pub advances: u64,
    pub resimulated: u64,
}

impl Game {
    pub fn new(players: usize, slots: usize) -> Self {
        let state: Vec<i64> = (0..players * WORDS).map(|i| i as i64 * 1_000_003).collect();
        Game {
            slots: vec![state.clone(); slots],
            state,
            checksums: Vec::with_capacity(40_000),
            played: Vec::with_capacity(40_000),
            record: true,
            nondeterministic: false,
            hidden: 0,
            desync_from: None,
            advances: 0,
            resimulated: 0,
        }
    }

    pub fn checksum(&self) -> u64 {
        // FNV-style over whole words (fast in debug builds), with a final mix.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &w in &self.state {
            h = (h ^ w as u64).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
        }
        h ^ (h >> 31)
    }

    pub fn serialize(&self) -> Vec<u8> {
        self.state.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    pub fn deserialize(&mut self, b: &[u8]) {
        assert_eq!(b.len(), self.state.len() * 8, "state blob size");
        for (w, c) in self.state.iter_mut().zip(b.chunks_exact(8)) {
            *w = i64::from_le_bytes(c.try_into().unwrap());
        }
    }

    fn step(&mut self, tick: Tick, inputs: &Inputs<'_>) {
        let n = self.state.len();
        for p in 0..inputs.len() {
            let (b, status) = inputs.get(p);
            let mut v = u16::from_le_bytes([b[0], b[1]]) as i64;
            if status == InputStatus::Disconnected {
                assert_eq!(v, 0, "disconnected inputs are zero");
                v = -1;
            }
            if p == 0 && self.desync_from.is_some_and(|d| tick >= d) {
                v += 1;
            }
            for k in 0..WORDS {
                let i = p * WORDS + k;
                let next = self.state[(i + 1) % n];
                self.state[i] = self.state[i].wrapping_mul(31).wrapping_add(v * (k as i64 + 1)) ^ (next >> 7);
            }
        }
        if self.nondeterministic {
            self.hidden += 1;
            if self.hidden % 7 == 0 {
                self.state[0] ^= self.hidden;
            }
        }
    }

    /// Runs one request; the answer goes back to the session.
    fn remember(list: &mut Vec<Option<u64>>, tick: Tick, c: u64) {
        let t = tick as usize;
        if list.len() <= t {
            list.resize(t + 1, None);
        }
        list[t] = Some(c);
    }

    pub fn apply(&mut self, r: Request<'_>) -> Option<Answer> {
        match r {
            Request::Save { tick, slot } => {
                self.slots[slot].copy_from_slice(&self.state);
                let c = self.checksum();
                if self.record {
                    Self::remember(&mut self.checksums, tick, c);
                }
                Some(Answer::Saved(tick, c))
            }
            Request::Load { slot, tick } => {
                self.state.copy_from_slice(&self.slots[slot]);
                for c in self.checksums.iter_mut().skip(tick as usize + 1) {
                    *c = None;
                }
                None
            }
            Request::Advance { tick, inputs, resimulating, .. } => {
                if self.record {
                    let c = self.checksum();
                    Self::remember(&mut self.played, tick, c);
                }
                self.advances += 1;
                self.resimulated += resimulating as u64;
                self.step(tick, &inputs);
                None
            }
            Request::Restore { state, .. } => {
                self.deserialize(state);
                None
            }
            Request::DumpState { tick, slot } => {
                Some(Answer::State(tick, self.slots[slot].iter().flat_map(|w| w.to_le_bytes()).collect()))
            }
        }
    }
}

/// Player `p`'s input for tick `t`: changes every `period` ticks, from a hash.
pub fn input_for(seed: u64, p: usize, t: Tick, period: u32) -> [u8; INPUT_SIZE] {
    let mut x = seed
        ^ (p as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ ((t / period) as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    [(x & 0x1f) as u8, ((x >> 8) & 0x3) as u8]
}

/// One peer of a mesh: its session, its engine and its place in the SimNet.
pub struct Peer {
    pub node: NodeId,
    pub session: P2pSession,
    pub game: Game,
    pub local: Vec<usize>,
    /// peer id on this node's endpoint, by node index (0 for itself).
    pub ids: Vec<PeerId>,
    pub events: Vec<Event>,
    pub alive: bool,
    /// A stalled engine: it keeps receiving and sending messages but adds no input
    /// and simulates nothing.
    pub frozen: bool,
    /// Connections accepted after the mesh was built (spectators).
    pub connected: Vec<(PeerId, std::net::SocketAddr)>,
}

/// Runs every request of `session` against `game`, feeding the answers back.
pub fn run_requests(session: &mut P2pSession, game: &mut Game) {
    while let Some(r) = session.poll_request() {
        match game.apply(r) {
            Some(Answer::Saved(t, c)) => session.confirm_save(t, c).expect("save was requested"),
            Some(Answer::State(t, b)) => session.provide_state(t, &b).expect("state was requested"),
            None => {}
        }
    }
}

/// Rewrites a message before it leaves a peer: `(sender index, destination peer id
/// on the sender, channel, bytes)`. A hostile peer in a test (one that sends each
/// peer something else) is an honest session behind such a hook.
pub type Tamper = Box<dyn FnMut(usize, PeerId, u8, &mut Vec<u8>)>;

/// The sender's transport with its outgoing messages passed through a [`Tamper`].
struct Tampered<'a, T: Transport + ?Sized> {
    inner: &'a mut T,
    from: usize,
    hook: &'a mut Tamper,
    buf: Vec<u8>,
}

impl<T: Transport + ?Sized> Transport for Tampered<'_, T> {
    fn connect_bound(
        &mut self,
        now: Micros,
        addr: std::net::SocketAddr,
        binding: Option<tickwire_proto::Binding>,
    ) -> Result<PeerId, SendError> {
        self.inner.connect_bound(now, addr, binding)
    }
    fn set_local_id(&mut self, id: Option<u32>) {
        self.inner.set_local_id(id)
    }
    fn disconnect(&mut self, now: Micros, peer: PeerId) {
        self.inner.disconnect(now, peer)
    }
    fn disconnect_with(&mut self, now: Micros, peer: PeerId, reason: DisconnectReason) {
        self.inner.disconnect_with(now, peer, reason)
    }
    fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), SendError> {
        self.buf.clear();
        self.buf.extend_from_slice(data);
        (self.hook)(self.from, peer, channel, &mut self.buf);
        self.inner.send(peer, channel, &self.buf)
    }
    fn flush(&mut self, now: Micros) {
        self.inner.flush(now)
    }
    fn recycle(&mut self, buf: Vec<u8>) {
        self.inner.recycle(buf)
    }
    fn stats(&mut self, peer: PeerId) -> Option<ConnectionStats> {
        self.inner.stats(peer)
    }
    fn max_unreliable(&self) -> usize {
        self.inner.max_unreliable()
    }
}

pub struct Mesh {
    pub net: SimNet,
    pub peers: Vec<Peer>,
    pub input_seed: u64,
    pub period: u32,
    pub frame_us: u64,
    /// Rewrites every peer's outgoing messages (None: honest peers).
    pub tamper: Option<Tamper>,
}

impl Mesh {
    /// `n` peers with `per_peer` local players each, fully connected over `link`. The
    /// mesh sets `cfg.game.players` to their number, `n * per_peer`.
    pub fn new(seed: u64, n: usize, per_peer: usize, link: LinkConfig, cfg: P2pConfig) -> Mesh {
        Self::with_endpoint(seed, n, per_peer, link, cfg, EndpointConfig::default())
    }

    /// Like [`Mesh::new`], every peer's endpoint on `endpoint` (the mesh sets its
    /// `max_incoming` and a 10 s timeout).
    pub fn with_endpoint(
        seed: u64,
        n: usize,
        per_peer: usize,
        link: LinkConfig,
        cfg: P2pConfig,
        endpoint: EndpointConfig,
    ) -> Mesh {
        let mut net = SimNet::new(seed, link);
        let nodes: Vec<NodeId> = (0..n)
            .map(|_| net.add(EndpointConfig { max_incoming: n as u32 + 4, timeout_us: 10_000_000, ..endpoint.clone() }))
            .collect();
        let mut ids = vec![vec![0 as PeerId; n]; n];
        for i in 0..n {
            for j in i + 1..n {
                let addr = net.addr(nodes[j]);
                let now = net.local_now(nodes[i]);
                ids[i][j] = net.endpoint(nodes[i]).connect(now, addr).unwrap();
            }
        }
        let mut connected = vec![0usize; n];
        let ok = net.run_until(1_000, 10_000_000, |net| {
            for i in 0..n {
                for e in net.take_events(nodes[i]) {
                    if let NetEvent::Connected { peer, addr, .. } = e {
                        connected[i] += 1;
                        if let Some(j) = (0..n).find(|&j| net.addr(nodes[j]) == addr) {
                            ids[i][j] = peer;
                        }
                    }
                }
            }
            connected.iter().all(|&c| c == n - 1)
        });
        assert!(ok, "mesh connected");
        let players = n * per_peer;
        let cfg = P2pConfig { game: GameShape { players, ..cfg.game }, ..cfg };
        let peers = (0..n)
            .map(|i| {
                let kinds: Vec<PlayerKind> =
                    (0..players)
                        .map(|p| {
                            if p / per_peer == i { PlayerKind::Local } else { PlayerKind::Remote(ids[i][p / per_peer]) }
                        })
                        .collect();
                let now = net.local_now(nodes[i]);
                let session = P2pSession::new(cfg.clone(), &kinds, now).expect("valid session");
                let game = Game::new(players, session.state_slots());
                Peer {
                    node: nodes[i],
                    session,
                    game,
                    local: (i * per_peer..(i + 1) * per_peer).collect(),
                    ids: ids[i].clone(),
                    events: Vec::new(),
                    alive: true,
                    frozen: false,
                    connected: Vec::new(),
                }
            })
            .collect();
        Mesh { net, peers, input_seed: seed, period: 5, frame_us: TICK_US, tamper: None }
    }

    /// One engine frame on every live peer, then `frame_us` of network time.
    pub fn frame(&mut self) {
        for (index, peer) in self.peers.iter_mut().enumerate().filter(|(_, p)| p.alive) {
            let now = self.net.local_now(peer.node);
            // Messages carry their arrival time, as the runtime stamps them.
            for (at, e) in self.net.take_events_timed(peer.node) {
                match e {
                    NetEvent::Message { peer: from, data, .. } => peer.session.handle_message(at, from, &data),
                    NetEvent::Disconnected { peer: from, reason } => peer.session.peer_disconnected(from, reason),
                    NetEvent::Connected { peer: from, addr, .. } => peer.connected.push((from, addr)),
                }
            }
            let due = peer.session.ticks_due(now);
            for _ in 0..if peer.frozen { 0 } else { due } {
                let t = peer.session.current_tick() + peer.session.input_delay();
                for &p in &peer.local {
                    let input = input_for(self.input_seed, p, t, self.period);
                    peer.session.add_local_input(p, &input).unwrap();
                }
                let status = peer.session.advance();
                assert_ne!(status, AdvanceStatus::NotSynchronized, "ticks are only due once synchronized");
                run_requests(&mut peer.session, &mut peer.game);
            }
            match self.tamper.as_mut() {
                Some(hook) => {
                    let inner = self.net.endpoint(peer.node);
                    let mut t = Tampered { inner, from: index, hook, buf: Vec::new() };
                    peer.session.send_messages(now, &mut t);
                }
                None => peer.session.send_messages(now, self.net.endpoint(peer.node)),
            }
            self.net.flush(peer.node);
            while let Some(e) = peer.session.poll_event() {
                peer.events.push(e);
            }
        }
        self.net.step(self.frame_us);
    }

    /// Runs until simulated time `until_us`.
    pub fn run_until(&mut self, until_us: u64) {
        while self.net.now() < until_us {
            self.frame();
        }
    }

    /// The lowest confirmed tick over live peers.
    pub fn confirmed(&self) -> Tick {
        self.peers.iter().filter(|p| p.alive).map(|p| p.session.stats().confirmed_tick).min().unwrap()
    }

    /// Asserts every live peer played the same state at every tick in `start..end`
    /// (as it last played it); returns how many ticks were compared.
    pub fn assert_in_sync(&self, start: Tick, end: Tick) -> usize {
        let live: Vec<&Peer> = self.peers.iter().filter(|p| p.alive).collect();
        for t in start as usize..end as usize {
            let first = live[0].game.played.get(t).copied().flatten();
            assert!(first.is_some(), "peer 0 did not play confirmed tick {t}");
            for (i, p) in live.iter().enumerate().skip(1) {
                let c = p.game.played.get(t).copied().flatten();
                assert_eq!(c, first, "tick {t}: peer {i} differs from peer 0");
            }
        }
        (end - start) as usize
    }

    /// Compares the ticks before `end` for which every live peer saved a checksum
    /// (sparse saving skips some); returns how many were compared.
    pub fn assert_in_sync_where_saved(&self, end: Tick) -> usize {
        let live: Vec<&Peer> = self.peers.iter().filter(|p| p.alive).collect();
        let mut n = 0;
        for t in 0..end as usize {
            let all: Vec<Option<u64>> = live.iter().map(|p| p.game.checksums.get(t).copied().flatten()).collect();
            if all.iter().all(Option::is_some) {
                assert!(all.iter().all(|c| *c == all[0]), "tick {t}: {all:?}");
                n += 1;
            }
        }
        n
    }

    pub fn desyncs(&self) -> usize {
        self.peers.iter().flat_map(|p| &p.events).filter(|e| matches!(e, Event::Desync { .. })).count()
    }
}
