//! A deterministic in-memory network: endpoints joined by seeded link conditioners,
//! driven on a simulated timeline. Whole matches run in milliseconds and reproduce
//! exactly from the seed; the tests and the lab are built on it.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use crate::clock::Micros;
use crate::netsim::{DriftClock, LinkConditioner, LinkConfig};
use crate::rng::Rng;
use crate::transport::{Endpoint, EndpointConfig, Event};
use crate::wire::MAX_DATAGRAM_SIZE;

/// Index of a node in a [`SimNet`].
pub type NodeId = usize;

/// What one node sent to another over a [`SimNet`]: datagrams and their bytes (the
/// UDP payload as it leaves the sender, before the link's loss or duplication).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Datagrams sent.
    pub datagrams: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// Called with `(node, true)` right before and `(node, false)` right after every call
/// the net makes into a node's endpoint, so a test can attribute work done inside the
/// net's step (allocations, say) to one node and not to the net's own bookkeeping.
pub type EndpointProbe = fn(NodeId, bool);

/// One direction of a simulated link, carrying (source address, datagram).
type Link = LinkConditioner<(SocketAddr, Vec<u8>)>;

struct Node {
    addr: SocketAddr,
    /// This machine's clock against the simulation's true time.
    clock: DriftClock,
    endpoint: Endpoint,
    events: Vec<Event>,
    /// When each of `events` came out of the endpoint, on this node's clock.
    arrivals: Vec<Micros>,
}

/// Endpoints, the links between them, and simulated time.
pub struct SimNet {
    now: Micros,
    nodes: Vec<Node>,
    links: BTreeMap<(NodeId, NodeId), Link>,
    default_link: LinkConfig,
    rng: Rng,
    scratch: Vec<u8>,
    probe: Option<EndpointProbe>,
    /// Every datagram sent, as (from, to, bytes), while recording.
    recorded: Option<Vec<(SocketAddr, SocketAddr, Vec<u8>)>>,
    /// What each node sent to each other node, by (from, to).
    traffic: BTreeMap<(NodeId, NodeId), Traffic>,
    /// Datagrams addressed to no node (counted, dropped).
    pub unroutable: u64,
}

impl SimNet {
    /// An empty network at time 0; new links get `default_link`, and every draw comes from `seed`.
    pub fn new(seed: u64, default_link: LinkConfig) -> Self {
        SimNet {
            now: 0,
            nodes: Vec::new(),
            links: BTreeMap::new(),
            default_link,
            rng: Rng::new(seed),
            scratch: vec![0; MAX_DATAGRAM_SIZE],
            probe: None,
            recorded: None,
            traffic: BTreeMap::new(),
            unroutable: 0,
        }
    }

    /// Starts keeping a copy of every datagram sent from now on (what someone on the
    /// path would see), for [`SimNet::take_recorded`].
    pub fn record_datagrams(&mut self) {
        self.recorded.get_or_insert_with(Vec::new);
    }

    /// The datagrams recorded so far, as (from, to, bytes); recording goes on.
    pub fn take_recorded(&mut self) -> Vec<(SocketAddr, SocketAddr, Vec<u8>)> {
        self.recorded.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// What node `from` has sent to node `to` so far (counted whether or not the link
    /// then lost it).
    pub fn traffic(&self, from: NodeId, to: NodeId) -> Traffic {
        self.traffic.get(&(from, to)).copied().unwrap_or_default()
    }

    /// The simulated time.
    pub fn now(&self) -> Micros {
        self.now
    }

    /// Adds an endpoint; its seed is drawn from the network's seed unless set.
    pub fn add(&mut self, mut cfg: EndpointConfig) -> NodeId {
        let id = self.nodes.len();
        if cfg.seed == 0 {
            cfg.seed = self.rng.next_u64();
        }
        let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(127, 0, 1, id as u8 + 1), 9000 + id as u16));
        let endpoint = Endpoint::new(cfg, self.now).expect("valid endpoint config");
        self.nodes.push(Node { addr, clock: DriftClock::exact(), endpoint, events: Vec::new(), arrivals: Vec::new() });
        id
    }

    /// Installs (or with None removes) the [`EndpointProbe`].
    pub fn set_endpoint_probe(&mut self, probe: Option<EndpointProbe>) {
        self.probe = probe;
    }

    fn probe(&self, n: NodeId, entering: bool) {
        if let Some(p) = self.probe {
            p(n, entering);
        }
    }

    /// Node `n`'s address.
    pub fn addr(&self, n: NodeId) -> SocketAddr {
        self.nodes[n].addr
    }

    /// Makes node `n`'s clock run `ppm` parts per million fast (negative: slow) from now on.
    pub fn set_drift(&mut self, n: NodeId, ppm: f64) {
        let now = self.now;
        self.nodes[n].clock.set_ppm(now, ppm);
    }

    /// Node `n`'s own clock reading: the time to pass to its endpoint.
    pub fn local_now(&self, n: NodeId) -> Micros {
        self.nodes[n].clock.local(self.now)
    }

    /// The true time at which node `n`'s clock reads `local`.
    pub fn true_time_of(&self, n: NodeId, local: Micros) -> Micros {
        self.nodes[n].clock.true_time_of(local)
    }

    /// Node `n`'s endpoint.
    pub fn endpoint(&mut self, n: NodeId) -> &mut Endpoint {
        &mut self.nodes[n].endpoint
    }

    /// Sets the link from `a` to `b` (one direction).
    pub fn set_link(&mut self, a: NodeId, b: NodeId, cfg: LinkConfig) {
        let seed = self.rng.next_u64();
        match self.links.get_mut(&(a, b)) {
            Some(l) => l.set_config(cfg),
            None => {
                self.links.insert((a, b), LinkConditioner::new(cfg, seed));
            }
        }
    }

    /// Sets the link from `a` to `b` as [`SimNet::set_link`] does, and if it is new,
    /// seeds its randomness with `seed`: a link conditioner made elsewhere with the same
    /// settings and seed drops, delays and reorders the same sends the same way (the lab
    /// gives every controller of a scenario the same link realisation).
    pub fn set_link_seeded(&mut self, a: NodeId, b: NodeId, cfg: LinkConfig, seed: u64) {
        match self.links.get_mut(&(a, b)) {
            Some(l) => l.set_config(cfg),
            None => {
                self.links.insert((a, b), LinkConditioner::new(cfg, seed));
            }
        }
    }

    /// Sets both directions between `a` and `b`.
    pub fn set_links(&mut self, a: NodeId, b: NodeId, cfg: LinkConfig) {
        self.set_link(a, b, cfg);
        self.set_link(b, a, cfg);
    }

    /// Injects a raw datagram as if `from` had sent it to node `to` (for attack tests).
    pub fn inject(&mut self, from: SocketAddr, to: NodeId, data: &[u8]) {
        let now = self.local_now(to);
        self.probe(to, true);
        self.nodes[to].endpoint.handle_datagram(now, from, data);
        self.probe(to, false);
    }

    /// Events collected for node `n` since the last call.
    pub fn take_events(&mut self, n: NodeId) -> Vec<Event> {
        self.pump(n);
        self.nodes[n].arrivals.clear();
        std::mem::take(&mut self.nodes[n].events)
    }

    /// The true time of the next datagram delivery or endpoint timer, if any. A driver
    /// that steps exactly to it sees every event at the moment it happens (arrival
    /// times as a network thread would stamp them).
    pub fn next_event_at(&mut self) -> Option<Micros> {
        let next_delivery = self.links.values().filter_map(|l| l.next_delivery()).min();
        let next_timer = (0..self.nodes.len())
            .filter_map(|i| {
                self.probe(i, true);
                let t = self.nodes[i].endpoint.next_timeout();
                self.probe(i, false);
                t.map(|t| self.nodes[i].clock.true_time_of(t))
            })
            .min();
        match (next_delivery, next_timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Like [`SimNet::take_events`], each event with the time (node `n`'s clock) it
    /// came out of the endpoint: for a message, when its datagram arrived. This is
    /// what the runtime's network thread stamps on messages (`received_at`).
    pub fn take_events_timed(&mut self, n: NodeId) -> Vec<(Micros, Event)> {
        self.pump(n);
        let node = &mut self.nodes[n];
        node.arrivals.drain(..).zip(node.events.drain(..)).collect()
    }

    /// Advances time by `dt`. Inside the step, time jumps from event to event (each
    /// datagram delivery and each endpoint timer at its exact time), so timing figures
    /// do not depend on the step size.
    pub fn step(&mut self, dt: Micros) {
        // Datagrams queued by direct calls since the last step leave now, not later.
        for n in 0..self.nodes.len() {
            self.pump(n);
        }
        let target = self.now + dt;
        loop {
            let next = self.next_event_at().unwrap_or(target);
            if next >= target {
                break;
            }
            self.advance_to(next.max(self.now));
        }
        self.advance_to(target);
    }

    fn advance_to(&mut self, t: Micros) {
        self.now = t;
        let now = t;
        let probe = self.probe;
        for (&(_, to), link) in self.links.iter_mut() {
            while let Some(d) = link.poll(now) {
                let (from_addr, node) = (d.0, &mut self.nodes[to]);
                let local = node.clock.local(now);
                if let Some(p) = probe {
                    p(to, true);
                }
                node.endpoint.handle_datagram(local, from_addr, &d.1);
                if let Some(p) = probe {
                    p(to, false);
                }
            }
        }
        for n in 0..self.nodes.len() {
            let local = self.local_now(n);
            self.probe(n, true);
            self.nodes[n].endpoint.update(local);
            self.probe(n, false);
            self.pump(n);
        }
    }

    /// Calls `flush` on node `n` and moves its datagrams onto the links now.
    pub fn flush(&mut self, n: NodeId) {
        let local = self.local_now(n);
        self.probe(n, true);
        self.nodes[n].endpoint.flush(local);
        self.probe(n, false);
        self.pump(n);
    }

    fn pump(&mut self, n: NodeId) {
        let now = self.now;
        let local = self.local_now(n);
        loop {
            self.probe(n, true);
            let e = self.nodes[n].endpoint.poll_event();
            self.probe(n, false);
            let Some(e) = e else { break };
            self.nodes[n].events.push(e);
            self.nodes[n].arrivals.push(local);
        }
        loop {
            self.probe(n, true);
            let t = self.nodes[n].endpoint.poll_transmit(&mut self.scratch);
            self.probe(n, false);
            let Some((to, len)) = t else { break };
            let Some(dst) = self.nodes.iter().position(|x| x.addr == to) else {
                self.unroutable += 1;
                continue;
            };
            if !self.links.contains_key(&(n, dst)) {
                let cfg = self.default_link;
                self.set_link(n, dst, cfg);
            }
            let t = self.traffic.entry((n, dst)).or_default();
            t.datagrams += 1;
            t.bytes += len as u64;
            let from = self.nodes[n].addr;
            if let Some(r) = &mut self.recorded {
                r.push((from, to, self.scratch[..len].to_vec()));
            }
            let datagram = (from, self.scratch[..len].to_vec());
            self.links.get_mut(&(n, dst)).expect("just ensured").send(now, len, datagram);
        }
    }

    /// Steps by `dt` until `done` is true or `limit` of simulated time has passed.
    /// Returns whether `done` became true.
    pub fn run_until(&mut self, dt: Micros, limit: Micros, mut done: impl FnMut(&mut SimNet) -> bool) -> bool {
        let end = self.now + limit;
        while self.now < end {
            if done(self) {
                return true;
            }
            self.step(dt);
        }
        done(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netsim::{JitterModel, LossModel};

    /// A seeded link in the net and a conditioner made alone with the same settings and
    /// seed treat the same sends alike: the lab relies on it to give tickwire's run the
    /// baselines' link realisation.
    #[test]
    fn a_seeded_link_realises_like_a_conditioner_with_that_seed() {
        let cfg = LinkConfig {
            latency_us: 30_000,
            jitter: JitterModel::Uniform { max_us: 20_000 },
            loss: LossModel::Bernoulli { p: 0.2 },
            duplicate: 0.1,
            reorder: 0.1,
            reorder_delay_us: 15_000,
            ..LinkConfig::perfect()
        };
        let mut net = SimNet::new(1, LinkConfig::perfect());
        let (a, b) = (net.add(EndpointConfig::default()), net.add(EndpointConfig::default()));
        net.set_link(b, a, cfg); // drawn from the net's generator: another realisation
        net.set_link_seeded(a, b, cfg, 0xBEEF);
        let mut alone: LinkConditioner<u32> = LinkConditioner::new(cfg, 0xBEEF);
        let from = net.addr(a);
        let (mut in_net, mut by_itself) = (Vec::new(), Vec::new());
        for i in 0..2_000u32 {
            let now = i as Micros * 1_000;
            net.links.get_mut(&(a, b)).unwrap().send(now, 100, (from, i.to_le_bytes().to_vec()));
            alone.send(now, 100, i);
            while let Some((t, (_, d))) = net.links.get_mut(&(a, b)).unwrap().poll_timed(now) {
                in_net.push((t, u32::from_le_bytes(d[..4].try_into().unwrap())));
            }
            while let Some(x) = alone.poll_timed(now) {
                by_itself.push(x);
            }
        }
        assert!(in_net.len() > 1_500 && in_net.len() < 2_000, "{} delivered", in_net.len());
        assert_eq!(in_net, by_itself);
    }
}
