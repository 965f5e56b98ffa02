//! A relay server session and its client sessions over a `SimNet`, each with a
//! `BoxGame` engine answering its requests, stepped in 4 ms frames.

use std::collections::BTreeMap;

use tickwire_proto::{
    AdvanceStatus, Binding, ClientSessionEvent, ConnectionStats, DisconnectReason, Endpoint, EndpointConfig,
    JitterModel, LinkConfig, LossModel, Micros, NodeId, PeerId, RelayClientSession, RelayClientSessionConfig,
    RelayServerSession, RelayServerSessionConfig, Request, SendError, ServerSessionEvent, SimNet, Transport,
};

use super::relay_game::{Answer, BoxGame, input_bytes, input_for};

pub const MS: u64 = 1_000;
pub const FRAME_US: u64 = 4 * MS;
pub const TICK_US: f64 = 1e6 / 60.0;

/// RTT 100 ms (50 ms each way), |N(0, 10 ms)| jitter on each packet, `loss` each way.
pub fn link(loss: f64) -> LinkConfig {
    LinkConfig {
        latency_us: 50 * MS,
        jitter: JitterModel::Gaussian { sigma_us: 10_000.0 },
        loss: LossModel::Bernoulli { p: loss },
        ..LinkConfig::perfect()
    }
}

pub struct Client {
    pub node: NodeId,
    pub session: RelayClientSession,
    pub game: BoxGame,
    pub events: Vec<ClientSessionEvent>,
    pub inputs_pushed: u64,
    pub alive: bool,
    /// Prediction distance (current − authoritative tick) after each advance, once
    /// synchronized and past the warm-up.
    pub distance_sum: f64,
    pub distance_n: u64,
    pub distance_max: u32,
    /// Resimulated advances per frame, max.
    pub resim_per_frame_max: u64,
    /// Advance requests of one `advance` call, max.
    pub advances_per_call_max: u64,
    /// Advances that answered `WindowFull`, and the latest answer.
    pub window_full: u64,
    pub last_status: Option<AdvanceStatus>,
}

/// An endpoint as a session's transport, counting the messages it refuses as too
/// large: a session sizes its unreliable messages to the transport's
/// `max_unreliable`, so there should be none.
struct Counted<'a> {
    ep: &'a mut Endpoint,
    too_large: &'a mut u64,
}

impl Transport for Counted<'_> {
    fn connect_bound(
        &mut self,
        now: Micros,
        addr: std::net::SocketAddr,
        binding: Option<Binding>,
    ) -> Result<PeerId, SendError> {
        Transport::connect_bound(&mut *self.ep, now, addr, binding)
    }
    fn set_local_id(&mut self, id: Option<u32>) {
        self.ep.set_local_id(id)
    }
    fn disconnect(&mut self, now: Micros, peer: PeerId) {
        self.ep.disconnect(now, peer)
    }
    fn disconnect_with(&mut self, now: Micros, peer: PeerId, reason: DisconnectReason) {
        self.ep.disconnect_with(now, peer, reason)
    }
    fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), SendError> {
        let r = self.ep.send(peer, channel, data);
        if matches!(r, Err(SendError::TooLarge { .. })) {
            *self.too_large += 1;
        }
        r
    }
    fn flush(&mut self, now: Micros) {
        self.ep.flush(now)
    }
    fn recycle(&mut self, buf: Vec<u8>) {
        self.ep.recycle(buf)
    }
    fn stats(&mut self, peer: PeerId) -> Option<ConnectionStats> {
        self.ep.stats(peer)
    }
    fn max_unreliable(&self) -> usize {
        self.ep.max_unreliable()
    }
}

pub struct World {
    pub net: SimNet,
    pub server_node: NodeId,
    pub server: RelayServerSession,
    pub server_game: BoxGame,
    pub server_events: Vec<ServerSessionEvent>,
    pub clients: Vec<Client>,
    pub client_cfg: RelayClientSessionConfig,
    pub input_seed: u64,
    pub warmup_us: u64,
    /// How the clients' inputs change: 0, the default 2-byte pattern (a direction
    /// held 5 to 35 ticks, [`input_for`]); n > 0, every byte of an input of the
    /// client config's `input_size` drawn afresh every n ticks ([`input_bytes`]).
    pub input_period: u64,
    /// Messages a session sent that its endpoint refused as too large.
    pub too_large: u64,
}

/// The tick of the latest Joined event among a client's `events`.
pub fn latest_joined_tick(events: &[ClientSessionEvent]) -> u32 {
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            ClientSessionEvent::Joined { tick, .. } => Some(*tick),
            _ => None,
        })
        .expect("joined")
}

pub fn run_client_requests(session: &mut RelayClientSession, game: &mut BoxGame) {
    while let Some(r) = session.poll_request() {
        match game.apply(r) {
            Some(Answer::Saved(t, c)) => session.confirm_save(t, c).expect("save was requested"),
            // Only a relay-only server asks a client for its state.
            Some(Answer::State(t, b)) => session.provide_state(t, &b).expect("dump was requested"),
            None => {}
        }
    }
}

impl World {
    pub fn new(
        seed: u64,
        link: LinkConfig,
        server_cfg: RelayServerSessionConfig,
        client_cfg: RelayClientSessionConfig,
    ) -> World {
        Self::with_server_endpoint(
            seed,
            link,
            server_cfg,
            client_cfg,
            EndpointConfig { max_incoming: 16, ..EndpointConfig::default() },
        )
    }

    /// Like [`World::new`], with the server's endpoint configured by the caller.
    pub fn with_server_endpoint(
        seed: u64,
        link: LinkConfig,
        server_cfg: RelayServerSessionConfig,
        client_cfg: RelayClientSessionConfig,
        endpoint: EndpointConfig,
    ) -> World {
        let mut net = SimNet::new(seed, link);
        let server_node = net.add(endpoint);
        let now = net.now();
        let server = RelayServerSession::new(server_cfg.clone(), now).expect("server config");
        let mut server_game = BoxGame::new(server_cfg.game.players, server.state_slots());
        server_game.record_after_advance = true;
        server_game.record_inputs = true;
        // The state at the start of the first tick.
        let c = server_game.checksum();
        server_game.checksums.resize(2, None);
        server_game.checksums[1] = Some(c);
        World {
            net,
            server_node,
            server,
            server_game,
            server_events: Vec::new(),
            clients: Vec::new(),
            client_cfg,
            input_seed: seed ^ 0xA5A5,
            warmup_us: 10_000_000,
            input_period: 0,
            too_large: 0,
        }
    }

    /// Adds a client and starts its connection.
    pub fn add_client(&mut self) -> usize {
        self.add_client_with(EndpointConfig::default())
    }

    /// Like [`World::add_client`], with the client's endpoint configured by the caller.
    pub fn add_client_with(&mut self, endpoint: EndpointConfig) -> usize {
        let node = self.net.add(endpoint);
        let mut session = RelayClientSession::new(self.client_cfg.clone()).expect("client config");
        let mut game = BoxGame::new(self.client_cfg.game.players, session.state_slots());
        game.record_inputs = true;
        let addr = self.net.addr(self.server_node);
        let now = self.net.local_now(node);
        session.connect(now, self.net.endpoint(node), addr).expect("connect");
        self.clients.push(Client {
            node,
            session,
            game,
            events: Vec::new(),
            inputs_pushed: 0,
            alive: true,
            distance_sum: 0.0,
            distance_n: 0,
            distance_max: 0,
            resim_per_frame_max: 0,
            advances_per_call_max: 0,
            window_full: 0,
            last_status: None,
        });
        self.clients.len() - 1
    }

    /// One frame for everyone.
    pub fn frame(&mut self) {
        self.net.step(FRAME_US);
        let s = self.server_node;
        let now = self.net.local_now(s);
        for e in self.net.take_events(s) {
            let mut t = Counted { ep: self.net.endpoint(s), too_large: &mut self.too_large };
            self.server.on_event(now, &mut t, e);
        }
        for _ in 0..self.server.ticks_due(now) {
            assert_eq!(self.server.advance(), AdvanceStatus::Advanced);
            while let Some(r) = self.server.poll_request() {
                let is_advance = matches!(r, Request::Advance { authoritative: true, resimulating: false, .. });
                assert!(
                    is_advance || !matches!(r, Request::Advance { .. }),
                    "server advances are authoritative, never resimulated"
                );
                match self.server_game.apply(r) {
                    Some(Answer::Saved(t, c)) => self.server.confirm_save(t, c).expect("save requested"),
                    Some(Answer::State(t, b)) => self.server.provide_state(t, &b).expect("dump requested"),
                    None => {}
                }
            }
        }
        while let Some(e) = self.server.poll_event() {
            self.server_events.push(e);
        }
        let mut t = Counted { ep: self.net.endpoint(s), too_large: &mut self.too_large };
        self.server.send_messages(now, &mut t);
        for i in 0..self.clients.len() {
            self.client_frame(i);
        }
    }

    pub fn client_frame(&mut self, i: usize) {
        let seed = self.input_seed;
        let (period, size) = (self.input_period, self.client_cfg.game.input_size);
        let mut wide = [0u8; tickwire_proto::MAX_INPUT_SIZE];
        let warm = self.net.now() >= self.warmup_us;
        let c = &mut self.clients[i];
        let node = c.node;
        let now = self.net.local_now(node);
        if !c.alive {
            // A stalled engine: what arrives waits for it.
            return;
        }
        let events = self.net.take_events(node);
        for e in events {
            let mut t = Counted { ep: self.net.endpoint(node), too_large: &mut self.too_large };
            c.session.on_event(now, &mut t, e);
        }
        let mut t = Counted { ep: self.net.endpoint(node), too_large: &mut self.too_large };
        let due = c.session.ticks_due(now, &mut t);
        let resim_before = c.game.resimulated;
        for _ in 0..due {
            let held = input_for(seed, i, c.inputs_pushed);
            let input: &[u8] = if period == 0 {
                &held
            } else {
                input_bytes(seed, i, c.inputs_pushed, period, &mut wide[..size]);
                &wide[..size]
            };
            c.inputs_pushed += 1;
            c.session.add_local_input(input).unwrap();
            let status = c.session.advance();
            c.window_full += u64::from(status == AdvanceStatus::WindowFull);
            c.last_status = Some(status);
            let before = c.game.advances;
            run_client_requests(&mut c.session, &mut c.game);
            c.advances_per_call_max = c.advances_per_call_max.max(c.game.advances - before);
            if status == AdvanceStatus::Advanced && c.session.is_synchronized() && warm {
                let d = c.session.current_tick() - c.session.authoritative_tick();
                c.distance_sum += d as f64;
                c.distance_n += 1;
                c.distance_max = c.distance_max.max(d);
            }
        }
        c.resim_per_frame_max = c.resim_per_frame_max.max(c.game.resimulated - resim_before);
        while let Some(e) = c.session.poll_event() {
            c.events.push(e);
        }
        let mut t = Counted { ep: self.net.endpoint(node), too_large: &mut self.too_large };
        c.session.send_messages(now, &mut t);
    }

    /// Cuts (`loss` 1.0) or restores the links between client `i` and the server.
    pub fn set_client_link(&mut self, i: usize, link: LinkConfig) {
        let (a, b) = (self.server_node, self.clients[i].node);
        self.net.set_links(a, b, link);
    }

    pub fn run_for(&mut self, us: u64) {
        let end = self.net.now() + us;
        while self.net.now() < end {
            self.frame();
        }
    }

    /// Checks that client `i`'s authoritative states equal the server's at every tick
    /// from its (latest) join up to its authoritative tick; returns how many ticks.
    pub fn assert_same_states(&self, i: usize, from: u32) -> usize {
        let c = &self.clients[i];
        let to = c.session.authoritative_tick() as usize;
        assert!(to > from as usize + 60, "client {i}: authoritative tick {to} barely past {from}");
        let mut compared = 0;
        for t in from as usize..=to {
            let server = self.server_game.checksums.get(t).copied().flatten();
            let client = c.game.checksums.get(t).copied().flatten();
            assert!(server.is_some(), "server has no checksum for tick {t}");
            assert_eq!(client, server, "client {i}: state at the start of tick {t} differs from the server's");
            compared += 1;
        }
        compared
    }

    /// Ticks at which the engine of client `i` last simulated its own player with
    /// another input than the server's canonical one, counted independently of the
    /// session's bookkeeping: its last predicted advance of each tick against the
    /// server engine's advance of that tick.
    /// Returns (mispredicted, compared).
    pub fn local_mispredicted_ticks(&self, i: usize) -> (u64, u64) {
        let c = &self.clients[i];
        let p = c.session.player().expect("player") as usize;
        let s = super::relay_game::INPUT_SIZE;
        let (mut n, mut compared) = (0, 0);
        for (t, pred) in c.game.predicted_inputs.iter().enumerate() {
            let (Some(pred), Some(Some(canon))) = (pred, self.server_game.authoritative_inputs.get(t)) else {
                continue;
            };
            if t >= c.session.authoritative_tick() as usize {
                continue;
            }
            n += (pred[p * s..(p + 1) * s] != canon[p * s..(p + 1) * s]) as u64;
            compared += 1;
        }
        (n, compared)
    }

    /// The tick of client `i`'s latest Joined event.
    pub fn joined_tick(&self, i: usize) -> u32 {
        latest_joined_tick(&self.clients[i].events)
    }

    pub fn count_events(&self, i: usize, f: impl Fn(&ClientSessionEvent) -> bool) -> usize {
        self.clients[i].events.iter().filter(|e| f(e)).count()
    }

    /// Per-player server late figures.
    pub fn server_players(&self) -> BTreeMap<u32, tickwire_proto::JitterStats> {
        (0..self.server.config().game.players as u32)
            .filter_map(|p| self.server.jitter_stats(p).map(|j| (p, j)))
            .collect()
    }
}
