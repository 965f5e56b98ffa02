//! The part of the core endpoint that the network loop drives.
//!
//! The loop is written against this trait rather than [`Endpoint`] directly so that its
//! mechanics (waking, shutdown, panics, simulators, buffer recycling) are unit-tested
//! with a scripted fake that does not depend on the transport's behaviour.

use std::net::SocketAddr;

use tickwire_proto::{
    Binding, ConnectionStats, DisconnectReason, Endpoint, EndpointStats, Micros, NetEvent as Event, PeerId, SendError,
};

/// A sans-IO connection state machine, as the network thread sees it. The methods
/// mirror [`Endpoint`]'s; see there for their meaning.
pub(crate) trait Protocol: Send + 'static {
    fn connect_bound(
        &mut self,
        now: Micros,
        addr: SocketAddr,
        peer: PeerId,
        binding: Option<Binding>,
    ) -> Result<(), SendError>;
    /// Our own id in handshakes bound to us.
    fn set_local_id(&mut self, _id: Option<u32>) {}
    /// `reason`: what the peer is told (None: the endpoint's own choice).
    fn disconnect(&mut self, now: Micros, peer: PeerId, reason: Option<DisconnectReason>);
    fn shutdown(&mut self, now: Micros);
    /// The silence timeout of every connection (`Micros::MAX`: never); the caller has
    /// checked that it is above 0.
    fn set_timeout(&mut self, timeout_us: Micros);
    fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), SendError>;
    fn flush(&mut self, now: Micros);
    fn handle_datagram(&mut self, now: Micros, from: SocketAddr, data: &[u8]);
    fn update(&mut self, now: Micros);
    fn poll_transmit(&mut self, out: &mut [u8]) -> Option<(SocketAddr, usize)>;
    /// The next event and when it happened (for a message: when its datagram arrived).
    fn poll_event(&mut self) -> Option<(Micros, Event)>;
    /// Events waiting to be polled.
    fn pending_events(&self) -> usize;
    fn recycle(&mut self, buf: Vec<u8>);
    fn next_timeout(&self) -> Option<Micros>;
    fn stats(&self, peer: PeerId) -> Option<ConnectionStats>;
    fn endpoint_stats(&self) -> EndpointStats;
    /// Whether it needs the wall clock: it checks connect tokens.
    fn wants_unix_time(&self) -> bool {
        false
    }
    /// The Unix time read at `now` (None: unknown), before datagrams are handed over.
    fn set_unix_time(&mut self, _now: Micros, _unix_secs: Option<u64>) {}
    /// What the other end said, unauthenticated, when it refused `peer`'s handshake
    /// (which ended `DeniedUnverified`): for the log only.
    fn unverified_denial(&self, _peer: PeerId) -> Option<DisconnectReason> {
        None
    }
    /// Calls `f` with the bytes queued for it, in the sense of `send_queue_limit_bytes`
    /// (what the endpoint's `send` checks the limit against), of every peer whose
    /// connection changed since the last call (at least those; a protocol may report
    /// more).
    fn drain_changed(&mut self, f: &mut dyn FnMut(PeerId, usize));
}

impl Protocol for Endpoint {
    fn unverified_denial(&self, peer: PeerId) -> Option<DisconnectReason> {
        Endpoint::unverified_denial(self, peer)
    }
    fn connect_bound(
        &mut self,
        now: Micros,
        addr: SocketAddr,
        peer: PeerId,
        binding: Option<Binding>,
    ) -> Result<(), SendError> {
        Endpoint::connect_bound(self, now, addr, peer, binding)
    }
    fn set_local_id(&mut self, id: Option<u32>) {
        Endpoint::set_local_id(self, id)
    }
    fn disconnect(&mut self, now: Micros, peer: PeerId, reason: Option<DisconnectReason>) {
        match reason {
            Some(r) => Endpoint::disconnect_with(self, now, peer, r),
            None => Endpoint::disconnect(self, now, peer),
        }
    }
    fn shutdown(&mut self, now: Micros) {
        Endpoint::shutdown(self, now)
    }
    fn set_timeout(&mut self, timeout_us: Micros) {
        // Checked by `Host::set_timeout`; a refusal changes nothing.
        let _ = Endpoint::set_timeout(self, timeout_us);
    }
    fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), SendError> {
        Endpoint::send(self, peer, channel, data)
    }
    fn flush(&mut self, now: Micros) {
        Endpoint::flush(self, now)
    }
    fn handle_datagram(&mut self, now: Micros, from: SocketAddr, data: &[u8]) {
        Endpoint::handle_datagram(self, now, from, data)
    }
    fn update(&mut self, now: Micros) {
        Endpoint::update(self, now)
    }
    fn poll_transmit(&mut self, out: &mut [u8]) -> Option<(SocketAddr, usize)> {
        Endpoint::poll_transmit(self, out)
    }
    fn poll_event(&mut self) -> Option<(Micros, Event)> {
        Endpoint::poll_event_timed(self)
    }
    fn pending_events(&self) -> usize {
        Endpoint::pending_events(self)
    }
    fn recycle(&mut self, buf: Vec<u8>) {
        Endpoint::recycle(self, buf)
    }
    fn next_timeout(&self) -> Option<Micros> {
        Endpoint::next_timeout(self)
    }
    fn stats(&self, peer: PeerId) -> Option<ConnectionStats> {
        Endpoint::stats(self, peer)
    }
    fn endpoint_stats(&self) -> EndpointStats {
        Endpoint::endpoint_stats(self)
    }
    fn wants_unix_time(&self) -> bool {
        Endpoint::wants_unix_time(self)
    }
    fn set_unix_time(&mut self, now: Micros, unix_secs: Option<u64>) {
        Endpoint::set_unix_time(self, now, unix_secs)
    }
    fn drain_changed(&mut self, f: &mut dyn FnMut(PeerId, usize)) {
        Endpoint::drain_changed(self, f)
    }
}

/// A trivial protocol for unit tests of the loop: no handshake, no acks. A datagram is
/// `[channel, payload...]`; the first datagram from a new address creates a peer.
#[cfg(test)]
pub(crate) mod fake {
    use std::collections::VecDeque;

    use super::*;
    use tickwire_proto::{Binding, Credential, DisconnectReason, PeerIdAllocator};

    /// The disconnects a [`FakeProtocol`] was asked for, with the reason for the peer.
    pub(crate) type Told = std::sync::Arc<std::sync::Mutex<Vec<(PeerId, Option<DisconnectReason>)>>>;

    pub(crate) struct FakeProtocol {
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

    impl FakeProtocol {
        pub(crate) fn new() -> Self {
            FakeProtocol {
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
        fn addr_of(&self, peer: PeerId) -> Option<SocketAddr> {
            self.peers.iter().find(|p| p.0 == peer).map(|p| p.1)
        }
    }

    impl Protocol for FakeProtocol {
        fn connect_bound(
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
        fn disconnect(&mut self, _now: Micros, peer: PeerId, reason: Option<DisconnectReason>) {
            self.told.lock().unwrap().push((peer, reason));
            self.peers.retain(|p| p.0 != peer);
            self.events.push_back(Event::Disconnected { peer, reason: reason.unwrap_or(DisconnectReason::Client) });
        }
        fn shutdown(&mut self, _now: Micros) {}
        fn set_timeout(&mut self, _timeout_us: Micros) {}
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
        fn poll_transmit(&mut self, out: &mut [u8]) -> Option<(SocketAddr, usize)> {
            let (addr, d) = self.out.pop_front()?;
            out[..d.len()].copy_from_slice(&d);
            self.stats.datagrams_sent += 1;
            self.stats.bytes_sent += d.len() as u64;
            Some((addr, d.len()))
        }
        fn poll_event(&mut self) -> Option<(Micros, Event)> {
            self.events.pop_front().map(|e| (0, e))
        }
        fn pending_events(&self) -> usize {
            self.events.len()
        }
        fn recycle(&mut self, _buf: Vec<u8>) {
            self.recycled.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        fn next_timeout(&self) -> Option<Micros> {
            Some(self.timer.load(std::sync::atomic::Ordering::Relaxed)).filter(|&t| t != u64::MAX)
        }
        fn stats(&self, peer: PeerId) -> Option<ConnectionStats> {
            self.addr_of(peer)
                .map(|_| ConnectionStats { packets_sent: self.stats.datagrams_sent, ..Default::default() })
        }
        fn endpoint_stats(&self) -> EndpointStats {
            self.stats
        }
        fn drain_changed(&mut self, f: &mut dyn FnMut(PeerId, usize)) {
            // Every peer, every time: the fake keeps no list.
            for &(peer, _) in &self.peers {
                f(peer, self.queued_bytes(peer).unwrap_or(0));
            }
        }
    }
}
