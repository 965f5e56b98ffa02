//! Endpoints joined by an instant, perfect network that the test drives by hand: a
//! datagram moves only when the test says so, so the test can capture, alter, hold
//! back, reorder or replay any of them. It moves them with `datagrams`, its sibling
//! module.

use std::net::SocketAddr;

use tickwire_proto::{
    Admission, Endpoint, EndpointConfig, Micros, NetEvent as Event, PacketProtection, PeerId, Presented, Security,
};

use super::datagrams::drain;

pub struct HandNet {
    /// The time every call into an endpoint is made at.
    pub now: Micros,
    nodes: Vec<(SocketAddr, Endpoint)>,
}

impl HandNet {
    pub fn new() -> Self {
        HandNet { now: 0, nodes: Vec::new() }
    }

    /// Adds an endpoint; node `i` is at 127.0.0.(i+1):(5000+i).
    pub fn add(&mut self, cfg: EndpointConfig) -> usize {
        let i = self.nodes.len();
        let addr = SocketAddr::from(([127, 0, 0, i as u8 + 1], 5000 + i as u16));
        self.nodes.push((addr, Endpoint::new(cfg, self.now).expect("valid endpoint config")));
        i
    }

    pub fn addr(&self, n: usize) -> SocketAddr {
        self.nodes[n].0
    }

    pub fn ep(&mut self, n: usize) -> &mut Endpoint {
        &mut self.nodes[n].1
    }

    /// Node `n` takes `d` as if `from` had sent it, now.
    pub fn inject(&mut self, from: SocketAddr, n: usize, d: &[u8]) {
        let now = self.now;
        self.nodes[n].1.handle_datagram(now, from, d);
    }

    /// What node `n` has to send now, taken off it and not delivered.
    pub fn take(&mut self, n: usize) -> Vec<(SocketAddr, Vec<u8>)> {
        drain(&mut self.nodes[n].1)
    }

    /// Delivers every queued datagram, and whatever that draws, until all are quiet.
    /// Datagrams to an address with no node are dropped.
    pub fn settle(&mut self) {
        loop {
            let mut moved = false;
            for i in 0..self.nodes.len() {
                let from = self.nodes[i].0;
                for (to, d) in drain(&mut self.nodes[i].1) {
                    moved = true;
                    if let Some(j) = self.nodes.iter().position(|n| n.0 == to) {
                        self.nodes[j].1.handle_datagram(self.now, from, &d);
                    }
                }
            }
            if !moved {
                return;
            }
        }
    }

    /// Lets node `c`'s unanswered handshakes reach their connect timeout (the default
    /// one), then returns its events: how an unauthenticated refusal ends (issue 30).
    pub fn time_out_handshakes(&mut self, c: usize) -> Vec<Event> {
        self.now += tickwire_proto::EndpointConfig::default().connect_timeout_us;
        let now = self.now;
        self.nodes[c].1.update(now);
        self.events(c)
    }

    /// Every event node `n` has, in order.
    pub fn events(&mut self, n: usize) -> Vec<Event> {
        std::iter::from_fn(|| self.nodes[n].1.poll_event()).collect()
    }

    /// Node `c` connects to node `s` and the handshake runs to its end (success or
    /// refusal): the client's id for the server.
    pub fn connect(&mut self, c: usize, s: usize) -> PeerId {
        let (now, sa) = (self.now, self.addr(s));
        let cp = self.ep(c).connect(now, sa).expect("connect");
        self.settle();
        cp
    }

    /// Node `s`'s id for its connection with node `c`, if it has one.
    pub fn peer_of(&mut self, s: usize, c: usize) -> Option<PeerId> {
        let ca = self.addr(c);
        let ep = self.ep(s);
        ep.peers().find(|&p| ep.peer_addr(p) == Some(ca))
    }

    /// Node `n` sends `data` to `peer` on `channel` and flushes: the one datagram it
    /// makes, not delivered.
    pub fn packet(&mut self, n: usize, peer: PeerId, channel: u8, data: &[u8]) -> Vec<u8> {
        let now = self.now;
        self.ep(n).send(peer, channel, data).expect("send");
        self.ep(n).flush(now);
        let mut out = self.take(n);
        assert_eq!(out.len(), 1, "one message, one datagram");
        out.pop().expect("one").1
    }
}

/// The messages among `events`.
pub fn messages(events: &[Event]) -> Vec<Vec<u8>> {
    events.iter().filter_map(|e| if let Event::Message { data, .. } = e { Some(data.clone()) } else { None }).collect()
}

/// The default protocol id (what every endpoint of these tests uses).
pub fn pid() -> u32 {
    EndpointConfig::default().protocol_id
}

/// An encrypted endpoint that admits `admission` and shows `presented`.
pub fn encrypted(admission: Admission, presented: Presented, max_incoming: u32, seed: u64) -> EndpointConfig {
    EndpointConfig {
        max_incoming,
        seed,
        security: Security::Encrypted { admission, presented, packets: PacketProtection::Aead },
        ..EndpointConfig::default()
    }
}

/// Whether node `c` has announced its connection `cp` (takes its events).
pub fn connected(net: &mut HandNet, c: usize, cp: PeerId) -> bool {
    net.events(c).iter().any(|e| matches!(e, Event::Connected { peer, .. } if *peer == cp))
}
