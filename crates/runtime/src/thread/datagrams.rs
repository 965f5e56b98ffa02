//! A host core's datagram paths: reading the socket in batches, the link simulators
//! on either side, and writing what the endpoint has to send.

use super::*;
use crate::carrier::{self, ExternalLink};
use tickwire_proto::{Claimed, RELAY_HEADER_SIZE, RemoteId, Route, Traversal, relay_header};

impl<P: Driver> NetLoop<P> {
    /// Turns a simulator on, reconfigures it, or turns it off. A reconfigured simulator
    /// keeps what is in flight on its old schedule (as a real path would); one turned
    /// off delivers what it still held at once rather than losing it.
    pub(super) fn set_sim(&mut self, now: Micros, dir: Direction, cfg: Option<LinkConfig>) {
        let slot = match dir {
            Direction::Outbound => &mut self.sim_out,
            Direction::Inbound => &mut self.sim_in,
        };
        match (slot.as_mut(), cfg) {
            (Some(sim), Some(cfg)) => sim.set_config(cfg),
            (None, Some(cfg)) => {
                *slot = Some(Sim::new(cfg, self.sim_rng.next_u64()));
                self.prefill_sims();
            }
            (_, None) => {
                let Some(mut old) = slot.take() else { return };
                while let Some((addr, buf)) = old.poll(Micros::MAX) {
                    match dir {
                        Direction::Outbound => self.send_datagram(&buf, addr),
                        Direction::Inbound => hand_over(&mut self.p, &mut self.tally, now, addr, &buf),
                    }
                    self.reuse_sim_buffer(buf);
                }
            }
        }
    }

    /// Reads what the socket holds, a batch at a time, at most [`MAX_RECV_PER_TURN`]
    /// datagrams; returns how many.
    pub(super) fn receive(&mut self) -> usize {
        if let Wire::External(link) = &self.p.wire {
            let link = link.clone();
            return self.receive_pushed(&link);
        }
        self.read_bytes = 0;
        self.found_empty = false;
        let mut read = 0;
        while read < MAX_RECV_PER_TURN {
            let received = {
                let Wire::Udp(socket) = &self.p.wire else { break };
                self.rx.receive(socket)
            };
            match received {
                Ok(Received::Empty) => {
                    self.found_empty = true;
                    break;
                }
                Ok(Received::Some { n, drained }) => {
                    // Each datagram's arrival: when the kernel queued it (its receive
                    // timestamp, where the platform gives one), not when this read ran,
                    // which receive moderation or a busy thread may have delayed.
                    let read_at = self.p.clock.now_us();
                    for i in 0..n {
                        let (data, from) = self.rx.datagram(i);
                        self.read_bytes += data.len();
                        let at = read_at.saturating_sub(self.rx.age_us(i));
                        // (A UDP socket of ours reports IPv4 and IPv6 senders only.)
                        let Some(from) = from else { continue };
                        if self.sim_in.is_none()
                            && let Some(next) = (i + 1 < n).then(|| self.rx.datagram(i + 1).1).flatten()
                        {
                            // Its key loads while this one is handed over.
                            self.p.proto.prefetch_for(next);
                        }
                        match &mut self.sim_in {
                            Some(sim) => simulate(sim, &mut self.sim_pool, at, from, data),
                            None => hand_over(&mut self.p, &mut self.tally, at, from, data),
                        }
                    }
                    read += n;
                    if drained {
                        self.found_empty = true;
                        break;
                    }
                }
                Err(e) => match e.kind() {
                    // An ICMP "port unreachable" for an earlier send (reported on some
                    // platforms even for unconnected sockets): more datagrams may follow.
                    io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionRefused => {
                        self.rt.socket_recv_errors += 1;
                    }
                    _ => {
                        self.rt.socket_recv_errors += 1;
                        break;
                    }
                },
            }
        }
        self.rt.socket_recv_errors += self.rx.take_oversized();
        read
    }

    /// Takes the datagrams the engine pushed while the core was busy (an external
    /// carrier's host), at most [`MAX_RECV_PER_TURN`]; returns how many.
    fn receive_pushed(&mut self, link: &ExternalLink) -> usize {
        self.rt.socket_recv_errors += link.take_refused();
        let mut ring = carrier::lock(&link.inbound);
        let mut read = 0;
        while read < MAX_RECV_PER_TURN {
            let Some((remote, data, at)) = ring.front() else { break };
            self.arrive(at, remote.to_addr(), data);
            ring.pop();
            read += 1;
        }
        read
    }

    /// A datagram that arrived at `at` from `from`: into the inbound simulator when it
    /// is on, else to the endpoint.
    pub(super) fn arrive(&mut self, at: Micros, from: SocketAddr, data: &[u8]) {
        match &mut self.sim_in {
            Some(sim) => simulate(sim, &mut self.sim_pool, at, from, data),
            None => hand_over(&mut self.p, &mut self.tally, at, from, data),
        }
    }

    pub(super) fn deliver_inbound(&mut self, now: Micros) {
        while let Some((from, buf)) = self.sim_in.as_mut().and_then(|s| s.poll(now)) {
            hand_over(&mut self.p, &mut self.tally, now, from, &buf);
            self.reuse_sim_buffer(buf);
        }
    }

    /// Writes what the endpoint has to send: in batches (`send_batch.rs`), or into the
    /// outbound simulator when it is on; then what the simulator has due.
    pub(super) fn transmit(&mut self, now: Micros) {
        self.transmit_probes(now);
        if self.p.traversal.is_some() {
            self.transmit_traversed(now);
        } else if let Some(sim) = &mut self.sim_out {
            while let Some((addr, n)) = self.p.proto.poll_transmit(self.tx.slot()) {
                simulate(sim, &mut self.sim_pool, now, addr, &self.tx.slot()[..n]);
            }
        } else if let Wire::External(link) = &self.p.wire {
            let mut ring = carrier::lock(&link.outbound);
            loop {
                // Straight into the ring's next slot; with the ring full, into the
                // batch's slot, and dropped (counted as a full socket buffer would be).
                let written = match ring.free_slot() {
                    Some(slot) => self.p.proto.poll_transmit(slot).map(|(addr, n)| (addr, n, true)),
                    None => self.p.proto.poll_transmit(self.tx.slot()).map(|(addr, n)| (addr, n, false)),
                };
                let Some((addr, n, kept)) = written else { break };
                // Every address this endpoint sends to came from the engine as a remote
                // (a connect, or a datagram it pushed); one that is not has nowhere to
                // go and is counted, never sent to a made-up remote.
                match (RemoteId::from_addr(addr), kept) {
                    (Some(remote), true) => ring.commit(remote, n, now),
                    (Some(_), false) => self.rt.socket_send_dropped += 1,
                    (None, _) => self.rt.socket_send_errors += 1,
                }
            }
        } else if let Wire::Udp(socket) = &self.p.wire {
            loop {
                while !self.tx.is_full() {
                    let Some((addr, n)) = self.p.proto.poll_transmit(self.tx.slot()) else { break };
                    self.tx.push(addr, n);
                }
                let more = self.tx.is_full();
                if self.tx.len() > 0 {
                    let rt = &mut self.rt;
                    self.tx.send(socket, &mut |e| count_send(rt, Err(e)));
                }
                if !more {
                    break;
                }
            }
        }
        while let Some((addr, buf)) = self.sim_out.as_mut().and_then(|s| s.poll(now)) {
            self.send_datagram(&buf, addr);
            self.reuse_sim_buffer(buf);
        }
    }

    /// A P2P match's datagrams through its NAT traversal: each of the endpoint's to a
    /// peer address goes where the traversal routes it (direct, or to the relay behind
    /// the relay's header, or held until the peer has a path); then the traversal's
    /// own (Hellos, checks, held datagrams), and its events to the engine. Everything
    /// passes the outbound simulator when it is on, as a real path would delay it.
    fn transmit_traversed(&mut self, now: Micros) {
        const H: usize = RELAY_HEADER_SIZE;
        let mut buf = [0u8; RELAY_HEADER_SIZE + MAX_DATAGRAM_SIZE];
        while let Some((addr, n)) = self.p.proto.poll_transmit(&mut buf[H..]) {
            let Some(t) = self.p.traversal.as_mut() else { return };
            match t.route(addr) {
                Route::Direct(to) => self.emit(now, to, &buf[H..H + n]),
                Route::Relay { via, slot } => {
                    buf[..H].copy_from_slice(&relay_header(slot));
                    self.emit(now, via, &buf[..H + n]);
                }
                Route::Hold(slot) => t.hold(slot, &buf[H..H + n]),
                Route::NotMine => self.emit(now, addr, &buf[H..H + n]),
            }
        }
        while let Some((to, n)) = self.p.traversal.as_mut().and_then(|t| t.poll_transmit(&mut buf)) {
            self.emit(now, to, &buf[..n]);
        }
        while let Some(ev) = self.p.traversal.as_mut().and_then(Traversal::poll_event) {
            self.to_engine.control(ThreadMsg::Traversal(ev));
        }
    }

    /// One datagram of a traversing host to the wire: through the outbound simulator
    /// when it is on. An IPv4 address from a dual-stack socket is written mapped.
    fn emit(&mut self, now: Micros, to: SocketAddr, data: &[u8]) {
        let to = match to {
            SocketAddr::V4(v4) if self.wire_v6 => {
                SocketAddr::new(crate::socket::mapped(std::net::IpAddr::V4(*v4.ip())), v4.port())
            }
            _ => to,
        };
        match &mut self.sim_out {
            Some(sim) => simulate(sim, &mut self.sim_pool, now, to, data),
            None => self.send_datagram(data, to),
        }
    }

    /// Sends the reflexive probes' requests that are due (straight to the socket: they
    /// are for servers, not peers, and no simulator stands between), and moves their
    /// results to the engine.
    fn transmit_probes(&mut self, now: Micros) {
        let mut buf = [0u8; tickwire_proto::BINDING_REQUEST_SIZE];
        while let Some((server, n)) = self.p.probes.poll_transmit(now, &mut buf) {
            if let Wire::Udp(socket) = &self.p.wire {
                let r = send_to(socket, &buf[..n], server);
                count_send(&mut self.rt, r);
            }
        }
        while let Some((probe, result)) = self.p.probes.poll_result() {
            self.to_engine.control(ThreadMsg::Reflexive(probe, result));
        }
    }

    pub(super) fn send_datagram(&mut self, data: &[u8], addr: SocketAddr) {
        match &self.p.wire {
            Wire::Udp(socket) => {
                let r = send_to(socket, data, addr);
                count_send(&mut self.rt, r);
            }
            Wire::External(link) => match RemoteId::from_addr(addr) {
                Some(remote) => {
                    let now = self.p.clock.now_us();
                    if !carrier::lock(&link.outbound).push(remote, data, now) {
                        self.rt.socket_send_dropped += 1;
                    }
                }
                None => self.rt.socket_send_errors += 1,
            },
        }
    }

    pub(super) fn reuse_sim_buffer(&mut self, buf: Vec<u8>) {
        recycle_sim_buffer(&mut self.sim_pool, buf);
    }
}

/// Hands a received datagram to the endpoint; one it refuses is counted for the log's
/// summary by source (only while someone wants warnings: the comparison is two copies
/// of the counters).
fn hand_over<P: Driver>(p: &mut ThreadParts<P>, tally: &mut DropTally, now: Micros, from: SocketAddr, data: &[u8]) {
    // A STUN server's answer to a probe of ours: never the endpoint's.
    if p.probes.claim(from, data) {
        return;
    }
    // The NAT traversal's own (from the rendezvous, checks), or a peer's packet that
    // it gives the peer's fixed address (relayed, or from a path it proved).
    let (from, data) = match p.traversal.as_mut().map(|t| t.claim(now, from, data)) {
        Some(Claimed::Taken) => return,
        Some(Claimed::Deliver { from, data }) => (from, data),
        Some(Claimed::NotMine) | None => (from, data),
    };
    if !p.shared.log.wants(LogLevel::Warn) {
        p.proto.handle_datagram(now, from, data);
        return;
    }
    let before = DropTally::refused(&p.proto.endpoint_stats());
    p.proto.handle_datagram(now, from, data);
    let after = DropTally::refused(&p.proto.endpoint_stats());
    if after > before {
        tally.note(from, after - before);
    }
}

fn count_send(rt: &mut RuntimeStats, r: io::Result<()>) {
    match r {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => rt.socket_send_dropped += 1,
        Err(_) => rt.socket_send_errors += 1,
    }
}

/// Hands a copy of `data` to a link simulator in a buffer from the pool; the buffer
/// of a datagram the simulator drops goes back to the pool.
fn simulate(sim: &mut Sim, pool: &mut Vec<Vec<u8>>, now: Micros, addr: SocketAddr, data: &[u8]) {
    let mut buf = pool.pop().unwrap_or_default();
    buf.extend_from_slice(data);
    if let Some((_, dropped)) = sim.send_copying(now, data.len(), (addr, buf), |d| pooled_copy(pool, d)) {
        recycle_sim_buffer(pool, dropped);
    }
}

fn recycle_sim_buffer(pool: &mut Vec<Vec<u8>>, mut buf: Vec<u8>) {
    if pool.len() < SIM_POOL_LIMIT {
        buf.clear();
        pool.push(buf);
    }
}

/// A simulator's duplicate of a datagram, in a buffer from the pool.
fn pooled_copy(pool: &mut Vec<Vec<u8>>, (addr, data): &(SocketAddr, Vec<u8>)) -> (SocketAddr, Vec<u8>) {
    let mut buf = pool.pop().unwrap_or_default();
    buf.extend_from_slice(data);
    (*addr, buf)
}

fn send_to(socket: &std::net::UdpSocket, data: &[u8], addr: SocketAddr) -> io::Result<()> {
    loop {
        match socket.send_to(data, addr) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r.map(|_| ()),
        }
    }
}
