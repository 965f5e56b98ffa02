//! NAT traversal on a hand-driven network with model NATs (RFC 4787's mapping and
//! filtering behaviours): a rendezvous, two peers behind NATs of each kind, and the
//! peers' "endpoint" datagrams (a numbered stream each way, as a match's would be),
//! sent through `Traversal::route` and read back through `Traversal::claim`. The real
//! Linux NATs are `tests/nat/matrix.sh`'s; this is the deterministic half.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};

use tickwire_proto::token::{self, ConnectToken, TokenParams};
use tickwire_proto::{
    Claimed, MatchClaim, PeerPath, RefusedReason, Rendezvous, RendezvousConfig, Route, Secret, Traversal,
    TraversalConfig, TraversalEvent, peer_address, relay_header,
};

const RDV: &str = "203.0.113.10:7000";
const PROTOCOL: u32 = 0x5457_4e41;
const ONE_WAY_US: u64 = 25_000;
const UNIX: u64 = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Nat {
    Open,
    EimEif,
    EimAdf,
    EimApdf,
    Edm,
}

struct Box_ {
    kind: Nat,
    public: IpAddr,
    next_port: u16,
    /// (inside, remote for EDM or None) -> public port
    map: HashMap<(SocketAddr, Option<SocketAddr>), u16>,
    /// public port -> inside, and whom it sent to
    back: HashMap<u16, (SocketAddr, HashSet<SocketAddr>)>,
}

impl Box_ {
    fn new(kind: Nat, public: &str) -> Self {
        Box_ { kind, public: public.parse().unwrap(), next_port: 40_000, map: HashMap::new(), back: HashMap::new() }
    }
    fn out(&mut self, inside: SocketAddr, to: SocketAddr) -> SocketAddr {
        if self.kind == Nat::Open {
            return inside;
        }
        let key = (inside, (self.kind == Nat::Edm).then_some(to));
        let port = match self.map.get(&key) {
            Some(&p) => p,
            None => {
                // EIM keeps the inside port (as Linux does when it is free); EDM picks anew.
                let p = if self.kind == Nat::Edm {
                    self.next_port += 7;
                    self.next_port
                } else {
                    inside.port()
                };
                self.map.insert(key, p);
                p
            }
        };
        self.back.entry(port).or_insert_with(|| (inside, HashSet::new())).1.insert(to);
        SocketAddr::new(self.public, port)
    }
    fn inbound(&self, from: SocketAddr, to: SocketAddr) -> Option<SocketAddr> {
        if self.kind == Nat::Open {
            return Some(to);
        }
        let (inside, sent) = self.back.get(&to.port())?;
        let ok = match self.kind {
            Nat::EimEif => true,
            Nat::EimAdf => sent.iter().any(|s| s.ip() == from.ip()),
            Nat::EimApdf | Nat::Edm => sent.contains(&from),
            Nat::Open => true,
        };
        ok.then_some(*inside)
    }
    fn flush(&mut self) {
        self.map.clear();
        self.back.clear();
    }
}

struct Peer {
    inside: SocketAddr,
    nat: Box_,
    t: Traversal,
    events: Vec<(u64, TraversalEvent)>,
    sent: u64,
    got: Vec<u64>,
    /// Where this peer's datagrams went on the wire.
    wire_to: HashSet<SocketAddr>,
    wire_from: HashSet<SocketAddr>,
    unclaimed: u64,
}

fn ticket(key: &Secret, slot: u8, client_id: u64) -> ConnectToken {
    let params = TokenParams {
        protocol_id: PROTOCOL,
        client_id,
        created: UNIX - 10,
        expires: UNIX + 3600,
        timeout_secs: 0,
        addresses: vec![RDV.parse().unwrap()],
        user_data: MatchClaim { match_id: 9, slot, players: 2 }.user_data(b"").unwrap(),
    };
    let mut random = [0u8; 56];
    random[0] = slot;
    random[55] = client_id as u8;
    ConnectToken::decode(&token::mint(key, &params, &random).unwrap()).unwrap()
}

struct World {
    now: u64,
    rdv: Rendezvous,
    peers: Vec<Peer>,
    /// (arrival, to public address, from public address, bytes)
    wire: Vec<(u64, SocketAddr, SocketAddr, Vec<u8>)>,
    blocked: bool,
}

fn world(a: Nat, b: Nat, private: bool) -> World {
    let key = Secret([7; 32]);
    let mut cfg = RendezvousConfig::new(key.clone(), PROTOCOL);
    cfg.public_addresses = vec![RDV.parse().unwrap()];
    let rdv = Rendezvous::new(cfg, 1, &[2; 32]);
    let mk = |slot: u8, nat: Nat, public: &str, inside: &str| {
        let inside: SocketAddr = inside.parse().unwrap();
        let cfg = TraversalConfig {
            rendezvous: RDV.parse().unwrap(),
            ticket: ticket(&key, slot, 100 + u64::from(slot)),
            match_secret: Secret([5; 32]),
            local_slot: slot,
            private,
            hosts: vec![inside],
            unix_us: 0,
        };
        Peer {
            inside,
            nat: Box_::new(nat, public),
            t: Traversal::new(1_000, cfg, &[slot; 32]),
            events: Vec::new(),
            sent: 0,
            got: Vec::new(),
            wire_to: HashSet::new(),
            wire_from: HashSet::new(),
            unclaimed: 0,
        }
    };
    let p0 = mk(0, a, "198.51.100.2", if a == Nat::Open { "198.51.100.2:20000" } else { "192.168.1.10:20000" });
    let p1 = mk(1, b, "198.51.100.3", if b == Nat::Open { "198.51.100.3:30000" } else { "192.168.2.10:30000" });
    World { now: 1_000, rdv, peers: vec![p0, p1], wire: Vec::new(), blocked: false }
}

impl World {
    fn send(&mut self, from_peer: Option<usize>, to: SocketAddr, bytes: Vec<u8>) {
        let rdv: SocketAddr = RDV.parse().unwrap();
        let from = match from_peer {
            Some(i) => {
                let p = &mut self.peers[i];
                p.wire_to.insert(to);
                // A datagram to a private address of another LAN goes nowhere.
                if let IpAddr::V4(v4) = to.ip() {
                    if v4.is_private() {
                        return;
                    }
                }
                p.nat.out(p.inside, to)
            }
            None => rdv,
        };
        if self.blocked && from_peer.is_some() && to != rdv {
            return;
        }
        self.wire.push((self.now + ONE_WAY_US, to, from, bytes));
    }

    fn step(&mut self) {
        self.now += 1_000;
        let now = self.now;
        let rdv: SocketAddr = RDV.parse().unwrap();
        let due: Vec<_> = {
            let (due, rest) = std::mem::take(&mut self.wire).into_iter().partition(|d| d.0 <= now);
            self.wire = rest;
            due
        };
        for (_, to, from, bytes) in due {
            if to == rdv {
                self.rdv.handle(now, UNIX, from, &bytes);
                continue;
            }
            let Some(i) = self.peers.iter().position(|p| {
                let public = if p.nat.kind == Nat::Open { p.inside.ip() } else { p.nat.public };
                public == to.ip()
            }) else {
                continue;
            };
            let Some(inside) = self.peers[i].nat.inbound(from, to) else { continue };
            assert_eq!(inside, self.peers[i].inside);
            let p = &mut self.peers[i];
            p.wire_from.insert(from);
            match p.t.claim(now, from, &bytes) {
                Claimed::Deliver { from, data } => {
                    assert_eq!(from, peer_address(1 - i as u8), "delivered as from the other peer's slot");
                    p.got.push(u64::from_le_bytes(data[..8].try_into().unwrap()));
                }
                Claimed::Taken => {}
                // From an address not yet proved (a NAT's new mapping): for the
                // endpoint, which has no connection there and drops it.
                Claimed::NotMine => p.unclaimed += 1,
            }
        }
        self.rdv.update(now);
        let mut buf = vec![0u8; 2048];
        while let Some((to, n)) = self.rdv.poll_transmit(&mut buf) {
            self.send(None, to, buf[..n].to_vec());
        }
        for i in 0..2 {
            let p = &mut self.peers[i];
            if p.t.next_timeout().is_some_and(|t| t <= now) {
                p.t.update(now);
            }
            // The endpoint's stream: one datagram each 16 ms.
            if now % 16_000 == 0 {
                p.sent += 1;
                let data = [p.sent.to_le_bytes().as_slice(), &[0xAB; 40]].concat();
                match p.t.route(peer_address(1 - i as u8)) {
                    Route::Direct(addr) => self.send(Some(i), addr, data),
                    Route::Relay { via, slot } => {
                        let d = [relay_header(slot).as_slice(), &data].concat();
                        self.send(Some(i), via, d);
                    }
                    Route::Hold(slot) => self.peers[i].t.hold(slot, &data),
                    Route::NotMine => panic!("a peer address is the traversal's"),
                }
            }
            let p = &mut self.peers[i];
            let mut out = Vec::new();
            while let Some((to, n)) = p.t.poll_transmit(&mut buf) {
                out.push((to, buf[..n].to_vec()));
            }
            while let Some(e) = p.t.poll_event() {
                p.events.push((now, e));
            }
            for (to, d) in out {
                self.send(Some(i), to, d);
            }
        }
    }

    fn run(&mut self, ms: u64) {
        for _ in 0..ms {
            self.step();
        }
    }

    fn path(&self, i: usize) -> PeerPath {
        self.peers[i].t.path(1 - i as u8)
    }

    /// The numbers peer `i` received in `from..to` µs is not checked: just how many
    /// datagrams of the other's stream reached it.
    fn got(&self, i: usize) -> usize {
        self.peers[i].got.len()
    }
}

fn expect_direct(a: Nat, b: Nat) -> bool {
    use Nat::*;
    !matches!((a, b), (Edm, Edm) | (Edm, EimApdf) | (EimApdf, Edm))
}

#[test]
fn every_pair_of_nat_kinds_connects_direct_where_the_nats_allow_and_relays_elsewhere() {
    use Nat::*;
    let kinds = [Open, EimEif, EimAdf, EimApdf, Edm];
    let mut table = String::new();
    for &a in &kinds {
        for &b in &kinds {
            let mut w = world(a, b, false);
            w.run(3_000);
            let (pa, pb) = (w.path(0), w.path(1));
            let direct = matches!((pa, pb), (PeerPath::Direct(_), PeerPath::Direct(_)));
            let relayed = matches!((pa, pb), (PeerPath::Relayed(_), PeerPath::Relayed(_)));
            table += &format!("{a:?} x {b:?}: {pa:?} / {pb:?}\n");
            assert!(direct || relayed, "{a:?} x {b:?}: paths {pa:?} / {pb:?}");
            assert_eq!(direct, expect_direct(a, b), "{a:?} x {b:?}: {pa:?} / {pb:?}");
            // The first path is set within a round trip to the rendezvous and back, and
            // a direct one (when there is one) within a few more.
            let first = w.peers[0].events.iter().find(|(_, e)| matches!(e, TraversalEvent::Path { .. })).unwrap().0;
            assert!(first < 200_000, "{a:?} x {b:?}: first path at {first} µs");
            // The stream flows both ways: all but what left before any path existed and
            // did not fit the hold, and what is still in flight.
            for i in 0..2 {
                assert_eq!(w.peers[i].unclaimed, 0, "{a:?} x {b:?}: nothing arrives from an unproved address");
                let sent = w.peers[1 - i].sent as usize;
                assert!(w.got(i) + 12 >= sent, "{a:?} x {b:?}: peer {i} got {} of {sent}", w.got(i));
            }
        }
    }
    eprintln!("{table}");
}

#[test]
fn a_direct_path_whose_mapping_dies_falls_back_to_the_relay_and_the_stream_goes_on() {
    let mut w = world(Nat::EimEif, Nat::EimApdf, false);
    w.run(2_000);
    assert!(matches!(w.path(0), PeerPath::Direct(_)) && matches!(w.path(1), PeerPath::Direct(_)));
    // Cut the direct path entirely (UDP between the two blocked): both fall back.
    w.blocked = true;
    let before = (w.got(0), w.got(1));
    w.run(6_000);
    assert!(matches!(w.path(0), PeerPath::Relayed(_)), "{:?}", w.path(0));
    assert!(matches!(w.path(1), PeerPath::Relayed(_)), "{:?}", w.path(1));
    // At most the dead time's datagrams (2 s at 16 ms, and the round trip) are lost.
    for i in 0..2 {
        let got = w.got(i) - if i == 0 { before.0 } else { before.1 };
        assert!(got >= 6_000 / 16 - 2_600 / 16, "peer {i} got {got} in 6 s");
    }
    // The way back: unblocked, the retries find the direct path again.
    w.blocked = false;
    w.run(7_000);
    assert!(matches!(w.path(0), PeerPath::Direct(_)) && matches!(w.path(1), PeerPath::Direct(_)));

    // A flushed symmetric NAT: new mappings; the match goes on (direct again through
    // the new mapping, or relayed), with the stream flowing.
    let mut w = world(Nat::EimEif, Nat::Edm, false);
    w.run(2_000);
    assert!(matches!(w.path(1), PeerPath::Direct(_)));
    w.peers[1].nat.flush();
    let before = w.got(0);
    w.run(5_000);
    assert!(w.got(0) - before >= 5_000 / 16 - 2_600 / 16, "{}", w.got(0) - before);
    assert!(!matches!(w.path(0), PeerPath::Pending) && !matches!(w.path(1), PeerPath::Pending));
}

#[test]
fn a_private_match_relays_everything_and_no_peer_learns_the_others_address() {
    let mut w = world(Nat::EimEif, Nat::EimEif, true);
    w.run(4_000);
    let rdv: SocketAddr = RDV.parse().unwrap();
    for i in 0..2 {
        assert_eq!(w.path(i), PeerPath::Relayed(rdv));
        assert_eq!(w.peers[i].wire_to, HashSet::from([rdv]), "peer {i} sent only to the relay");
        assert_eq!(w.peers[i].wire_from, HashSet::from([rdv]), "peer {i} heard only the relay");
        assert!(w.got(i) >= 4_000 / 16 - 20);
    }
    // The relay forwarded the stream's bytes as they were (it reads nothing of them).
    assert!(w.rdv.stats().relayed_datagrams >= 2 * (4_000 / 16 - 20) as u64);
}

#[test]
fn the_rendezvous_refuses_strangers_forged_tickets_taken_slots_and_caps_each_match() {
    let key = Secret([7; 32]);
    let mut cfg = RendezvousConfig::new(key.clone(), PROTOCOL);
    cfg.public_addresses = vec![RDV.parse().unwrap()];
    cfg.relay_bytes_per_sec = 10_000;
    let mut r = Rendezvous::new(cfg, 1, &[2; 32]);
    let a: SocketAddr = "198.51.100.2:20000".parse().unwrap();
    let b: SocketAddr = "198.51.100.3:30000".parse().unwrap();
    let mallory: SocketAddr = "198.51.100.66:666".parse().unwrap();
    let mut buf = vec![0u8; 2048];
    let mut drain = |r: &mut Rendezvous| {
        let mut v = Vec::new();
        while let Some((to, n)) = r.poll_transmit(&mut buf) {
            v.push((to, buf[..n].to_vec()));
        }
        v
    };
    // A relay datagram from a stranger goes nowhere.
    r.handle(0, UNIX, mallory, &[0xE4, 1, 1, 2, 3]);
    assert_eq!(r.stats().strangers, 1);
    assert!(drain(&mut r).is_empty());
    // A ticket minted with another key is refused.
    let hello = |t: &ConnectToken, seq: u64| {
        let cfg = TraversalConfig {
            rendezvous: RDV.parse().unwrap(),
            ticket: t.clone(),
            match_secret: Secret([5; 32]),
            local_slot: 0,
            private: false,
            hosts: vec![],
            unix_us: 0,
        };
        let mut tr = Traversal::new(seq, cfg, &[1; 32]);
        tr.update(seq);
        let mut b = vec![0u8; 2048];
        let (_, n) = tr.poll_transmit(&mut b).unwrap();
        b[..n].to_vec()
    };
    let forged = ticket(&Secret([8; 32]), 0, 100);
    r.handle(1, UNIX, mallory, &hello(&forged, 10));
    let out = drain(&mut r);
    assert_eq!(out, vec![(mallory, vec![0xE3, RefusedReason::BadTicket as u8])]);
    // Two members; another client id with a ticket for a taken slot is refused.
    r.handle(2, UNIX, a, &hello(&ticket(&key, 0, 100), 10));
    r.handle(3, UNIX, b, &hello(&ticket(&key, 1, 101), 10));
    assert_eq!(r.stats().members, 2);
    drain(&mut r);
    r.handle(4, UNIX, mallory, &hello(&ticket(&key, 1, 666), 10));
    assert_eq!(drain(&mut r), vec![(mallory, vec![0xE3, RefusedReason::SlotTaken as u8])]);
    // A's Hello replayed from Mallory's address moves nobody.
    r.handle(5, UNIX, mallory, &hello(&ticket(&key, 0, 100), 10));
    assert!(drain(&mut r).is_empty());
    r.handle(6, UNIX, mallory, &[0xE4, 1, 9, 9, 9]);
    assert_eq!(r.stats().strangers, 2, "Mallory is still no member");
    // The relay forwards A's bytes to B unchanged, and holds each match to its budget.
    r.handle(7, UNIX, a, &[0xE4, 1, 1, 2, 3]);
    assert_eq!(drain(&mut r), vec![(b, vec![0xE4, 0, 1, 2, 3])]);
    let big = [[0xE4u8, 1].as_slice(), &[0x55; 1000]].concat();
    let mut forwarded = 0;
    for i in 0..100u64 {
        r.handle(1_000_000 + i * 1_000, UNIX, a, &big);
        forwarded += drain(&mut r).len();
    }
    // 100 ms at 10 KB/s plus a one-second burst: about 11 of 100.
    assert!((9..=12).contains(&forwarded), "{forwarded}");
    assert_eq!(r.stats().over_budget, 100 - forwarded as u64);
    // One address sending tickets without pause is held to its own budget (8 a
    // second), and the others still get theirs opened.
    let before = r.stats();
    for i in 0..100u64 {
        r.handle(4_000_000 + i * 1_000, UNIX, mallory, &hello(&forged, 20 + i));
    }
    let flood = r.stats();
    assert!(flood.refused - before.refused <= 9, "{flood:?}");
    assert!(flood.dropped - before.dropped >= 90, "{flood:?}");
    drain(&mut r);
    r.handle(4_100_000, UNIX, a, &hello(&ticket(&key, 0, 100), 30));
    assert_eq!(r.stats().hellos, before.hellos + 1, "A's Hello is still taken");
    drain(&mut r);
    // To itself, to a slot nobody holds, too short, longer than any packet of ours:
    // dropped.
    let dropped = r.stats().dropped;
    r.handle(3_000_000, UNIX, a, &[0xE4, 0, 1]);
    r.handle(3_000_000, UNIX, a, &[0xE4, 5, 1]);
    r.handle(3_000_000, UNIX, a, &[0xE4, 1]);
    r.handle(3_000_000, UNIX, a, &[[0xE4u8, 1].as_slice(), &[7; 1201]].concat());
    assert_eq!(r.stats().dropped, dropped + 4);
    assert!(drain(&mut r).is_empty());
}

#[test]
fn a_ticket_for_another_slot_stops_the_traversal() {
    let key = Secret([7; 32]);
    let cfg = RendezvousConfig::new(key.clone(), PROTOCOL);
    let mut r = Rendezvous::new(cfg, 1, &[2; 32]);
    let tcfg = TraversalConfig {
        rendezvous: RDV.parse().unwrap(),
        ticket: ticket(&key, 1, 100),
        match_secret: Secret([5; 32]),
        local_slot: 0,
        private: false,
        hosts: vec![],
        unix_us: 0,
    };
    let mut t = Traversal::new(0, tcfg, &[1; 32]);
    t.update(0);
    let mut buf = vec![0u8; 2048];
    let (to, n) = t.poll_transmit(&mut buf).unwrap();
    let me: SocketAddr = "198.51.100.2:20000".parse().unwrap();
    r.handle(0, UNIX, me, &buf[..n]);
    let (_, n) = r.poll_transmit(&mut buf).unwrap();
    assert_eq!(t.claim(1, to, &buf[..n]), Claimed::Taken);
    assert_eq!(t.poll_event(), Some(TraversalEvent::WrongSlot { ticket: 1, local: 0 }));
    assert_eq!(t.next_timeout(), None);
}

#[test]
fn a_peer_that_restarts_with_its_ticket_is_taken_back_at_once_and_a_replay_is_not() {
    let key = Secret([7; 32]);
    let mut r = Rendezvous::new(RendezvousConfig::new(key.clone(), PROTOCOL), 1, &[2; 32]);
    let (a, a2, b): (SocketAddr, SocketAddr, SocketAddr) = (
        "198.51.100.2:20000".parse().unwrap(),
        "198.51.100.2:20001".parse().unwrap(),
        "198.51.100.3:30000".parse().unwrap(),
    );
    // A traversal's first Hello, made at its host clock's `now` with the wall clock `unix_us`.
    let first_hello = |slot: u8, now: u64, unix_us: u64| {
        let cfg = TraversalConfig {
            rendezvous: RDV.parse().unwrap(),
            ticket: ticket(&key, slot, 100 + u64::from(slot)),
            match_secret: Secret([5; 32]),
            local_slot: slot,
            private: false,
            hosts: vec![],
            unix_us,
        };
        let mut t = Traversal::new(now, cfg, &[slot; 32]);
        t.update(now);
        let mut buf = vec![0u8; 2048];
        let (_, n) = t.poll_transmit(&mut buf).unwrap();
        buf[..n].to_vec()
    };
    let wall = 1_700_000_000_000_000u64;
    // A has run for a minute of its host clock; B is there too.
    r.handle(60_000_000, UNIX, a, &first_hello(0, 60_000_000, wall));
    r.handle(60_000_000, UNIX, b, &first_hello(1, 0, wall));
    let mut buf = vec![0u8; 2048];
    while r.poll_transmit(&mut buf).is_some() {}
    // A crashes and starts again 5 s later: its host clock starts from 0 again, the
    // wall clock has moved on. Taken back at once, at its new address.
    r.handle(65_000_000, UNIX, a2, &first_hello(0, 0, wall + 5_000_000));
    while r.poll_transmit(&mut buf).is_some() {}
    r.handle(65_000_001, UNIX, a2, &[0xE4, 1, 1, 2, 3]);
    assert_eq!(r.poll_transmit(&mut buf).map(|(to, n)| (to, buf[..n].to_vec())), Some((b, vec![0xE4, 0, 1, 2, 3])));
    let strangers = r.stats().strangers;
    r.handle(65_000_002, UNIX, a, &[0xE4, 1, 1, 2, 3]);
    assert_eq!(r.stats().strangers, strangers + 1, "the old address is no member now");
    // A Hello numbered below the last (an old one, replayed from elsewhere) moves nobody.
    let dropped = r.stats().dropped;
    r.handle(65_000_003, UNIX, a, &first_hello(0, 60_000_000, wall));
    assert_eq!(r.stats().dropped, dropped + 1);
    r.handle(65_000_004, UNIX, a2, &[0xE4, 1, 9]);
    assert!(r.poll_transmit(&mut buf).is_some_and(|(to, _)| to == b), "still at its new address");
}
