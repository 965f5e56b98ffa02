//! A stand-in for the endpoint in the network loop's unit tests (`tests.rs`,
//! `thread_tests.rs`): it implements proto's [`Transport`] and [`Driver`] as trivially
//! as it can, so that the loop's mechanics (waking, shutdown, panics, simulators,
//! buffer recycling) are tested independently of the transport's behaviour. No
//! handshake, no acks: a datagram is `[channel, payload...]`, and the first datagram
//! from a new address creates a peer.

use std::collections::VecDeque;
use std::net::SocketAddr;

use tickwire_proto::{
    Binding, ConfigError, ConnectionStats, Credential, DisconnectReason, Driver, EndpointStats, Micros,
    NetEvent as Event, PeerId, PeerIdAllocator, SendError, Transport,
};
/// The disconnects a [`FakeEndpoint`] was asked for, with the reason for the peer.
pub(crate) type Told = std::sync::Arc<std::sync::Mutex<Vec<(PeerId, Option<DisconnectReason>)>>>;

/// The stand-in endpoint; the handles below stay with a test after the fake has moved
/// into a host's core.
pub(crate) struct FakeEndpoint {
    pub ids: PeerIdAllocator,
    peers: Vec<(PeerId, SocketAddr)>,
    queued: Vec<(SocketAddr, Vec<u8>)>,
    out: VecDeque<(SocketAddr, Vec<u8>)>,
    events: VecDeque<Event>,
    stats: EndpointStats,
    /// Buffers handed back through `recycle`, to prove the return path works.
    pub recycled: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// While set, `send` refuses every message with `QueueFull`, as an endpoint
    /// that disagrees with the engine's accounting would.
    pub refuse_sends: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Every `disconnect` asked for, with the reason the peer would be told.
    pub told: Told,
    /// `update` calls so far.
    pub updates: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// What `next_timeout` answers (`u64::MAX`: no timer).
    pub timer: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The `now` of every `handle_datagram`: each datagram's arrival time.
    pub arrivals: Vec<Micros>,
}

impl FakeEndpoint {
    pub(crate) fn new() -> Self {
        FakeEndpoint {
            ids: PeerIdAllocator::default(),
            peers: Vec::new(),
            queued: Vec::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: EndpointStats::default(),
            recycled: Default::default(),
            refuse_sends: Default::default(),
            told: Default::default(),
            updates: Default::default(),
            timer: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(u64::MAX)),
            arrivals: Vec::new(),
        }
    }
    pub(crate) fn queued_bytes(&self, peer: PeerId) -> Option<usize> {
        let addr = self.addr_of(peer)?;
        // Payload bytes not yet flushed (each queued datagram starts with its channel).
        Some(self.queued.iter().filter(|q| q.0 == addr).map(|q| q.1.len() - 1).sum())
    }
    /// A disconnect: recorded in `told` with the reason asked for (None: the
    /// endpoint's own choice), and announced with it (`Client` for None).
    fn close(&mut self, _now: Micros, peer: PeerId, reason: Option<DisconnectReason>) {
        self.told.lock().unwrap().push((peer, reason));
        self.peers.retain(|p| p.0 != peer);
        self.events.push_back(Event::Disconnected { peer, reason: reason.unwrap_or(DisconnectReason::Client) });
    }
    fn addr_of(&self, peer: PeerId) -> Option<SocketAddr> {
        self.peers.iter().find(|p| p.0 == peer).map(|p| p.1)
    }
}

impl Transport for FakeEndpoint {
    fn connect_bound(&mut self, now: Micros, addr: SocketAddr, binding: Option<Binding>) -> Result<PeerId, SendError> {
        let peer = self.ids.next();
        self.connect_as(now, addr, peer, binding)?;
        Ok(peer)
    }
    fn set_local_id(&mut self, _id: Option<u32>) {}
    fn disconnect(&mut self, now: Micros, peer: PeerId) {
        self.close(now, peer, None);
    }
    fn disconnect_with(&mut self, now: Micros, peer: PeerId, reason: DisconnectReason) {
        self.close(now, peer, Some(reason));
    }
    fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), SendError> {
        let addr = self.addr_of(peer).ok_or(SendError::UnknownPeer(peer))?;
        // Unfragmented, a message is one datagram: at most what one holds, as the
        // endpoint's datagrams are (the loop's transmit buffer is that size).
        let max = tickwire_proto::wire::MAX_DATAGRAM_SIZE - 1;
        if data.len() > max {
            return Err(SendError::TooLarge { size: data.len(), max });
        }
        if self.refuse_sends.load(std::sync::atomic::Ordering::Relaxed) {
            let queued = self.queued_bytes(peer).unwrap_or(0);
            return Err(SendError::QueueFull { queued, limit: queued });
        }
        let mut d = vec![channel];
        d.extend_from_slice(data);
        self.queued.push((addr, d));
        Ok(())
    }
    fn flush(&mut self, _now: Micros) {
        self.out.extend(self.queued.drain(..));
    }
    fn recycle(&mut self, _buf: Vec<u8>) {
        self.recycled.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn stats(&mut self, peer: PeerId) -> Option<ConnectionStats> {
        self.addr_of(peer).map(|_| ConnectionStats { packets_sent: self.stats.datagrams_sent, ..Default::default() })
    }
}

impl Driver for FakeEndpoint {
    fn connect_as(
        &mut self,
        _now: Micros,
        addr: SocketAddr,
        peer: PeerId,
        _binding: Option<Binding>,
    ) -> Result<(), SendError> {
        self.peers.push((peer, addr));
        self.events.push_back(Event::Connected { peer, addr, credential: Credential::Open, binding: None });
        Ok(())
    }
    fn shutdown(&mut self, _now: Micros) {}
    fn set_timeout(&mut self, _timeout_us: Micros) -> Result<(), ConfigError> {
        Ok(())
    }
    fn handle_datagram(&mut self, now: Micros, from: SocketAddr, data: &[u8]) {
        self.stats.datagrams_received += 1;
        self.arrivals.push(now);
        let peer = match self.peers.iter().find(|p| p.1 == from) {
            Some(p) => p.0,
            None => {
                let peer = self.ids.next();
                self.peers.push((peer, from));
                self.events.push_back(Event::Connected {
                    peer,
                    addr: from,
                    credential: Credential::Open,
                    binding: None,
                });
                peer
            }
        };
        if let Some((&channel, rest)) = data.split_first() {
            // Datagram-sized, like the endpoint's buffers (smaller ones are not recycled).
            let mut buf = Vec::with_capacity(tickwire_proto::wire::MAX_DATAGRAM_SIZE);
            buf.extend_from_slice(rest);
            self.events.push_back(Event::Message { peer, channel, data: buf });
        }
    }
    fn update(&mut self, _now: Micros) {
        self.updates.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn next_timeout(&mut self) -> Option<Micros> {
        Some(self.timer.load(std::sync::atomic::Ordering::Relaxed)).filter(|&t| t != u64::MAX)
    }
    fn poll_transmit(&mut self, out: &mut [u8]) -> Option<(SocketAddr, usize)> {
        let (addr, d) = self.out.pop_front()?;
        out[..d.len()].copy_from_slice(&d);
        self.stats.datagrams_sent += 1;
        self.stats.bytes_sent += d.len() as u64;
        Some((addr, d.len()))
    }
    fn poll_event_timed(&mut self) -> Option<(Micros, Event)> {
        self.events.pop_front().map(|e| (0, e))
    }
    fn pending_events(&self) -> usize {
        self.events.len()
    }
    fn endpoint_stats(&self) -> EndpointStats {
        self.stats
    }
    fn drain_changed(&mut self, f: &mut dyn FnMut(PeerId, usize, Micros)) {
        // Every peer, every time, with the fake's one timer: the fake keeps no list.
        let timer = self.timer.load(std::sync::atomic::Ordering::Relaxed);
        for &(peer, _) in &self.peers {
            f(peer, self.queued_bytes(peer).unwrap_or(0), timer);
        }
    }
}
