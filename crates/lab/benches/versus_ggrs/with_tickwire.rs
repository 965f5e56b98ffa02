//! tickwire's run: a `P2pSession` over a transport `Endpoint` per peer, over the links.

use crate::game::{GameState, input_for};
use crate::measure::{Meter, Results, compare_checksums};
use crate::scenario::{Scenario, link_config, link_seed};
use crate::{DESYNC_INTERVAL, WARMUP, frame_time};

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use tickwire_proto::wire::{FrameReader, MAX_DATAGRAM_SIZE, Packet, decode_packet, p2p};
use tickwire_proto::{
    AdvanceStatus, Endpoint, EndpointConfig, GameShape, LinkConditioner, NetEvent, P2pConfig, P2pSession, PeerId,
    PlayerKind, Request, RollbackEvent as Event, Security,
};

/// Datagrams in flight live in preallocated buffers; the links carry buffer indices.
pub(crate) struct TwNet {
    pub(crate) n: usize,
    pub(crate) links: Vec<LinkConditioner<u32>>,
    pub(crate) bufs: Vec<[u8; MAX_DATAGRAM_SIZE]>,
    pub(crate) meta: Vec<(usize, usize)>,
    pub(crate) free: Vec<u32>,
    pub(crate) addrs: Vec<SocketAddr>,
    /// Scratch: (arrival time, buffer) of the datagrams due at one peer.
    pub(crate) due: Vec<(u64, u32)>,
}

impl TwNet {
    pub(crate) fn new(s: &Scenario) -> Self {
        let n = s.peers;
        let slots = 8_192;
        TwNet {
            n,
            links: (0..n * n)
                .map(|k| LinkConditioner::new(link_config(s.latency_ticks), link_seed(s.seed, k / n, k % n)))
                .collect(),
            bufs: vec![[0; MAX_DATAGRAM_SIZE]; slots],
            meta: vec![(0, 0); slots],
            free: (0..slots as u32).rev().collect(),
            addrs: (0..n)
                .map(|i| SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(127, 0, 2, i as u8 + 1), 7000)))
                .collect(),
            due: Vec::with_capacity(slots),
        }
    }

    /// Puts a datagram on the link `from -> to` at `now`.
    pub(crate) fn send(&mut self, now: u64, from: usize, to: usize, data: &[u8]) {
        let slot = self.free.pop().expect("datagram buffers exhausted");
        self.bufs[slot as usize][..data.len()].copy_from_slice(data);
        self.meta[slot as usize] = (from, data.len());
        let link = &mut self.links[from * self.n + to];
        let before = link.in_flight();
        link.send(now, data.len(), slot);
        if link.in_flight() == before {
            self.free.push(slot); // lost
        }
    }
}

pub(crate) struct TwPeer {
    pub(crate) ep: Endpoint,
    pub(crate) session: Option<P2pSession>,
    pub(crate) game: GameState,
    pub(crate) slots: Vec<GameState>,
    pub(crate) sums: Vec<Option<u64>>,
    pub(crate) ids: Vec<PeerId>,
    pub(crate) desyncs: u64,
    /// Messages delivered with their arrival time (see `deliver_tw`).
    pub(crate) inbox: VecDeque<(u64, NetEvent)>,
}

pub(crate) fn run_tickwire(s: &Scenario, frames: u64, calib: f64) -> Results {
    let n = s.peers;
    let total = WARMUP + frames;
    let mut net = TwNet::new(s);
    let mut peers: Vec<TwPeer> = (0..n)
        .map(|i| TwPeer {
            ep: Endpoint::new(
                EndpointConfig {
                    max_incoming: n as u32 + 2,
                    seed: s.seed ^ (i as u64 + 1),
                    security: tw_security(),
                    ..EndpointConfig::default()
                },
                0,
            )
            .expect("endpoint config"),
            session: None,
            game: GameState::new(n),
            slots: Vec::new(),
            sums: vec![None; total as usize + 64],
            ids: vec![0; n],
            desyncs: 0,
            inbox: VecDeque::with_capacity(1024),
        })
        .collect();
    let mut buf = vec![0u8; MAX_DATAGRAM_SIZE];
    let mut res = Results::new(frames, n);
    let detail = detail_wanted();
    let mut scratch = Vec::new();
    let stamp = std::env::var_os("BENCH_TW_FRAME_TIMES").is_none_or(|v| v == "0");

    // Transport handshakes (not measured).
    for (i, p) in peers.iter_mut().enumerate() {
        for j in i + 1..n {
            p.ids[j] = p.ep.connect(0, net.addrs[j]).expect("connect");
        }
    }
    let mut frame = 0u64;
    loop {
        let now = frame_time(frame);
        deliver_tw(&mut net, &mut peers, now, None, false);
        for (i, p) in peers.iter_mut().enumerate() {
            p.ep.update(now);
            while let Some(e) = p.ep.poll_event() {
                if let NetEvent::Connected { peer, addr, .. } = e {
                    let j = net.addrs.iter().position(|a| *a == addr).expect("known address");
                    p.ids[j] = peer;
                }
            }
            p.ep.flush(now);
            while let Some((to, len)) = p.ep.poll_transmit(&mut buf) {
                let j = net.addrs.iter().position(|a| *a == to).expect("known address");
                net.send(now, i, j, &buf[..len]);
            }
        }
        frame += 1;
        let connected = peers.iter().enumerate().all(|(i, p)| (0..n).all(|j| j == i || p.ep.is_connected(p.ids[j])));
        if connected {
            break;
        }
        assert!(frame < 60 * 60, "tickwire mesh did not connect");
    }
    let start = frame;
    for (i, p) in peers.iter_mut().enumerate() {
        let kinds: Vec<PlayerKind> =
            (0..n).map(|j| if j == i { PlayerKind::Local } else { PlayerKind::Remote(p.ids[j]) }).collect();
        let mut cfg =
            P2pConfig { game: GameShape::new(n, 2), desync_interval: DESYNC_INTERVAL, ..P2pConfig::default() };
        if let Some(k) = std::env::var("BENCH_TW_REDUNDANCY").ok().and_then(|v| v.parse().ok()) {
            cfg.input_redundancy = k;
        }
        let session = P2pSession::new(cfg, &kinds, frame_time(start)).expect("session");
        p.slots = vec![p.game; session.state_slots()];
        p.session = Some(session);
    }

    let mut meters = vec![Meter::default(); n];
    for f in 0..total {
        let now = frame_time(start + f);
        let measuring = f >= WARMUP;
        meters.iter_mut().for_each(|m| *m = Meter::default());
        deliver_tw(&mut net, &mut peers, now, Some(&mut meters), stamp);
        for (i, p) in peers.iter_mut().enumerate() {
            let m = &mut meters[i];
            let session = p.session.as_mut().expect("session");
            let (ticks0, depth0) = (res.ticks, res.depth_sum);
            let mut window_full = false;
            let t = Meter::start();
            p.ep.update(now);
            while let Some((at, e)) = p.inbox.pop_front().or_else(|| p.ep.poll_event().map(|e| (now, e))) {
                match e {
                    NetEvent::Message { peer, data, .. } => {
                        session.handle_message(at, peer, &data);
                        p.ep.recycle(data);
                    }
                    NetEvent::Disconnected { peer, reason } => session.peer_disconnected(peer, reason),
                    NetEvent::Connected { .. } => {}
                }
            }
            let due = session.ticks_due(now);
            m.stop(t);
            for _ in 0..due {
                let tick = session.current_tick() + session.input_delay();
                let input = input_for(s.seed, i, tick as u64, s.period);
                let t = Meter::start();
                session.add_local_input(i, &input).expect("local input");
                let current = session.current_tick();
                window_full |= session.advance() == AdvanceStatus::WindowFull;
                m.stop(t);
                loop {
                    let t = Meter::start();
                    let Some(r) = session.poll_request() else {
                        m.stop(t);
                        break;
                    };
                    m.stop(t);
                    let saved = match r {
                        Request::Save { tick, slot } => {
                            p.slots[slot] = p.game;
                            let c = p.game.checksum();
                            p.sums[tick as usize] = Some(c);
                            Some((tick, c))
                        }
                        Request::Load { tick, slot } => {
                            p.game = p.slots[slot];
                            if measuring {
                                res.rollback((current - tick) as u64);
                            }
                            None
                        }
                        Request::Advance { inputs, .. } => {
                            p.game.step(|q| {
                                let (b, _) = inputs.get(q);
                                [b[0], b[1]]
                            });
                            if measuring {
                                res.ticks += 1;
                            }
                            None
                        }
                        Request::Restore { .. } | Request::DumpState { .. } => unreachable!("no spectators, no desync"),
                    };
                    if let Some((tick, c)) = saved {
                        let t = Meter::start();
                        session.confirm_save(tick, c).expect("save was requested");
                        m.stop(t);
                    }
                }
            }
            let t = Meter::start();
            while let Some(e) = session.poll_event() {
                if matches!(e, Event::Desync { .. }) {
                    p.desyncs += 1;
                }
            }
            session.send_messages(now, &mut p.ep);
            p.ep.flush(now);
            m.stop(t);
            loop {
                let t = Meter::start();
                let Some((to, len)) = p.ep.poll_transmit(&mut buf) else {
                    m.stop(t);
                    break;
                };
                m.stop(t);
                let j = net.addrs.iter().position(|a| *a == to).expect("known address");
                net.send(now, i, j, &buf[..len]);
                if measuring {
                    res.bytes += len as u64;
                    res.datagrams += 1;
                    if detail {
                        classify_tw(&buf[..len], &mut scratch, &mut res);
                    }
                }
            }
            if measuring {
                res.frame_done((res.ticks - ticks0) - (res.depth_sum - depth0), window_full, false);
            }
        }
        if measuring {
            for m in &meters {
                res.sample(m, calib);
            }
        }
    }
    // `ticks` counted every Advance, resimulated ones too: a rollback of depth d
    // resimulates d ticks.
    res.ticks -= res.depth_sum;

    let last = peers.iter().map(|p| p.session.as_ref().expect("session").confirmed_tick() as u64).min().unwrap_or(0);
    let sums: Vec<Vec<Option<u64>>> = peers.iter().map(|p| p.sums.clone()).collect();
    compare_checksums(&sums, last, &mut res);
    res.resends = peers.iter().map(|p| p.session.as_ref().expect("session").stats().input_refreshes).sum();
    if detail {
        for p in &peers {
            let st = p.session.as_ref().expect("session").stats();
            let _ = write!(
                res.peers_line,
                " [tick {} ahead {:+.2} scale {:.4}]",
                st.current_tick, st.frames_ahead, st.time_scale
            );
        }
    }
    let desyncs: u64 = peers.iter().map(|p| p.desyncs).sum();
    if desyncs > 0 && res.void.is_none() {
        res.void = Some(format!("{desyncs} desync events"));
    }
    res
}

/// GGRS neither encrypts nor authenticates its packets, so the comparison runs
/// tickwire's transport in plaintext too (the same work on both sides);
/// `BENCH_TW_ENCRYPTED=1` runs tickwire as it ships, every packet sealed with
/// ChaCha20-Poly1305, to show what that costs.
pub(crate) fn tw_encrypted() -> bool {
    std::env::var_os("BENCH_TW_ENCRYPTED").is_some_and(|v| v != "0")
}

fn tw_security() -> Security {
    match tw_encrypted() {
        true => Security::default(),
        false => Security::InsecurePlaintext,
    }
}

pub(crate) fn detail_wanted() -> bool {
    std::env::var_os("BENCH_DETAIL").is_some_and(|v| v != "0")
}

/// Sorts one of tickwire's datagrams into what it carries (BENCH_DETAIL=1).
pub(crate) fn classify_tw(datagram: &[u8], scratch: &mut Vec<u8>, res: &mut Results) {
    let Ok(Packet::Payload { frames, .. }) = decode_packet(datagram, EndpointConfig::default().protocol_id) else {
        res.kind("other packet", datagram.len());
        return;
    };
    let mut inputs = 0;
    for f in FrameReader::new(frames) {
        let f = f.expect("own frames decode");
        if let Ok(d) = p2p::decode(f.data, 2, scratch) {
            res.input_msgs += 1;
            res.carried += d.header.count as u64;
            res.reports += d.reports().count() as u64;
            inputs += 1;
        }
    }
    let name = match (frames.is_empty(), inputs) {
        (true, _) => "acks/keepalive only (transport)",
        (false, 0) => "transport frames, no input message",
        (false, 1) => "one input message",
        _ => "several input messages",
    };
    res.kind(name, datagram.len());
}

/// Hands every datagram due at `now` to its endpoint (timed as library work when
/// `meters` is given: it is the endpoint's receive path).
///
/// With `stamp`, each datagram is handed over at its arrival time, in arrival order,
/// and the messages it completes go to the peer's inbox stamped with that time: what
/// tickwire's runtime does (its network thread receives as datagrams arrive and
/// stamps `HostEvent::Message::received_at`; the session gets that time). Without,
/// everything due is handed over at the frame time `now`, as a game thread polling
/// a socket once per frame would.
pub(crate) fn deliver_tw(
    net: &mut TwNet,
    peers: &mut [TwPeer],
    now: u64,
    mut meters: Option<&mut Vec<Meter>>,
    stamp: bool,
) {
    let n = net.n;
    for to in 0..n {
        net.due.clear();
        for from in 0..n {
            while let Some((at, slot)) = net.links[from * n + to].poll_timed(now) {
                net.due.push((if stamp { at } else { now }, slot));
            }
        }
        net.due.sort_by_key(|d| d.0); // stable: same-time datagrams keep sender order
        for i in 0..net.due.len() {
            let (at, slot) = net.due[i];
            let (from, len) = net.meta[slot as usize];
            let p = &mut peers[to];
            let t = Meter::start();
            p.ep.handle_datagram(at, net.addrs[from], &net.bufs[slot as usize][..len]);
            if stamp {
                while let Some(e) = p.ep.poll_event() {
                    p.inbox.push_back((at, e));
                }
            }
            if let Some(m) = meters.as_deref_mut() {
                m[to].stop(t);
            }
            net.free.push(slot);
        }
    }
}
