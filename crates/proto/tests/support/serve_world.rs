//! A match server (`MatchServer`) and its clients over a `SimNet`: each client a
//! relay client session with a `BoxGame` engine, admitted by a connect token that
//! names its match, stepped in 4 ms frames.

use std::net::SocketAddr;

use tickwire_proto::token::{self, ConnectToken, TokenParams};
use tickwire_proto::{
    Admission, ClientSessionEvent, EndpointConfig, GameShape, KEY_SIZE, LinkConfig, MatchServer, MatchServerConfig,
    MatchServerEvent, NodeId, PacketProtection, Presented, RelayClientSession, RelayClientSessionConfig, Secret,
    Security, ServeClaim, SimNet, TokenAdmission,
};

use super::relay_game::{BoxGame, input_for};
use super::relay_world::{FRAME_US, latest_joined_tick, run_client_requests};

pub const KEY: [u8; KEY_SIZE] = [0x3c; KEY_SIZE];
/// Unix time at the server's time 0.
pub const T0: u64 = 1_700_000_000;

pub struct ServeClient {
    pub node: NodeId,
    pub session: RelayClientSession,
    pub game: BoxGame,
    pub events: Vec<ClientSessionEvent>,
    pub match_id: u64,
    inputs: u64,
}

pub struct ServeWorld {
    pub net: SimNet,
    pub server_node: NodeId,
    pub server: MatchServer,
    pub events: Vec<MatchServerEvent>,
    pub clients: Vec<ServeClient>,
    seed: u64,
}

/// The server is the simulator's first node.
pub fn server_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 1, 1], 9000))
}

/// A client endpoint presenting a token for `client_id` with `user_data`.
pub fn token_endpoint(client_id: u64, user_data: Vec<u8>) -> EndpointConfig {
    token_client_endpoint(&KEY, client_id, user_data, (client_id % 251) as u8)
}

/// A client endpoint presenting a fresh connect token minted with `key` for the
/// server at [`server_addr`], valid an hour around `T0` (`nonce` makes each token's
/// nonce and key its own).
pub fn token_client_endpoint(key: &[u8; KEY_SIZE], client_id: u64, user_data: Vec<u8>, nonce: u8) -> EndpointConfig {
    let p = TokenParams {
        protocol_id: EndpointConfig::default().protocol_id,
        client_id,
        created: T0 - 60,
        expires: T0 + 3600,
        timeout_secs: 0,
        addresses: vec![server_addr()],
        user_data,
    };
    let bytes = token::mint(&Secret(*key), &p, &[nonce; 56]).expect("mint");
    let t = ConnectToken::decode(&bytes).expect("decode");
    let security = Security::Encrypted {
        admission: Admission::default(),
        presented: Presented::Token(Box::new(t)),
        packets: PacketProtection::Aead,
    };
    EndpointConfig { security, ..EndpointConfig::default() }
}

impl ServeWorld {
    pub fn new(seed: u64, link: LinkConfig, cfg: MatchServerConfig) -> Self {
        let mut net = SimNet::new(seed, link);
        let admission = Admission::Tokens(TokenAdmission { key: Secret(KEY), public_addresses: vec![server_addr()] });
        let server = EndpointConfig {
            max_incoming: 256,
            security: Security::Encrypted { admission, presented: Presented::Open, packets: PacketProtection::Aead },
            ..EndpointConfig::default()
        };
        let server_node = net.add(server);
        assert_eq!(net.addr(server_node), server_addr());
        let now = net.local_now(server_node);
        net.endpoint(server_node).set_unix_time(now, Some(T0));
        ServeWorld {
            net,
            server_node,
            server: MatchServer::new(cfg).expect("config"),
            events: Vec::new(),
            clients: Vec::new(),
            seed,
        }
    }

    /// A client of match `claim` (client id `client_id`), connecting now.
    pub fn add_client(&mut self, client_id: u64, claim: ServeClaim) -> usize {
        self.add_client_with(client_id, claim.shape(), claim.match_id, claim.user_data(&[]).expect("claim"))
    }

    /// A client whose token carries `user_data` as given, playing `game`.
    pub fn add_client_with(&mut self, client_id: u64, game: GameShape, match_id: u64, user_data: Vec<u8>) -> usize {
        let node = self.net.add(token_endpoint(client_id, user_data));
        let cfg = RelayClientSessionConfig { game, ..RelayClientSessionConfig::default() };
        let mut session = RelayClientSession::new(cfg).expect("client config");
        let game = BoxGame::new(game.players, session.state_slots());
        let now = self.net.local_now(node);
        session.connect(now, self.net.endpoint(node), server_addr()).expect("connect");
        self.clients.push(ServeClient { node, session, game, events: Vec::new(), match_id, inputs: 0 });
        self.clients.len() - 1
    }

    /// Client `i` leaves on purpose (its connection closed, reason `Client`).
    pub fn leave(&mut self, i: usize) {
        let c = &mut self.clients[i];
        let node = c.node;
        if let Some(peer) = c.session.server_peer() {
            let now = self.net.local_now(node);
            self.net.endpoint(node).disconnect(now, peer);
        }
        c.match_id = u64::MAX;
    }

    pub fn frame(&mut self) {
        self.net.step(FRAME_US);
        let s = self.server_node;
        let now = self.net.local_now(s);
        for e in self.net.take_events(s) {
            self.server.on_event(now, self.net.endpoint(s), e);
        }
        self.server.run(now, self.net.endpoint(s));
        while let Some(e) = self.server.poll_event() {
            self.events.push(e);
        }
        for i in 0..self.clients.len() {
            self.client_frame(i);
        }
    }

    fn client_frame(&mut self, i: usize) {
        let c = &mut self.clients[i];
        if c.match_id == u64::MAX {
            return;
        }
        let node = c.node;
        let now = self.net.local_now(node);
        for e in self.net.take_events(node) {
            c.session.on_event(now, self.net.endpoint(node), e);
        }
        for _ in 0..c.session.ticks_due(now, self.net.endpoint(node)) {
            let input = input_for(self.seed, i, c.inputs);
            let input = &input[..c.session.config().game.input_size.min(input.len())];
            c.inputs += 1;
            c.session.add_local_input(input).expect("input");
            c.session.advance();
            run_client_requests(&mut c.session, &mut c.game);
        }
        while let Some(e) = c.session.poll_event() {
            c.events.push(e);
        }
        c.session.send_messages(now, self.net.endpoint(node));
    }

    pub fn run_for(&mut self, us: u64) {
        let end = self.net.now() + us;
        while self.net.now() < end {
            self.frame();
        }
    }

    /// Compares the authoritative states of clients `i` and `j` at every tick both
    /// have from `from` on; returns how many ticks.
    pub fn same_states(&self, i: usize, j: usize, from: u32) -> usize {
        let (a, b) = (&self.clients[i], &self.clients[j]);
        let to = a.session.authoritative_tick().min(b.session.authoritative_tick());
        assert!(to > from + 60, "clients {i} and {j}: authoritative ticks barely past {from} ({to})");
        for t in from as usize..=to as usize {
            let x = a.game.checksums.get(t).copied().flatten();
            assert!(x.is_some(), "client {i} has no state at tick {t}");
            assert_eq!(x, b.game.checksums.get(t).copied().flatten(), "clients {i} and {j} differ at tick {t}");
        }
        (to - from + 1) as usize
    }

    /// The tick of client `i`'s latest Joined event.
    pub fn joined_tick(&self, i: usize) -> u32 {
        latest_joined_tick(&self.clients[i].events)
    }

    pub fn count_events(&self, i: usize, f: impl Fn(&ClientSessionEvent) -> bool) -> usize {
        self.clients[i].events.iter().filter(|e| f(e)).count()
    }
}
