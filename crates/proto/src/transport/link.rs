//! [`Endpoint`]'s interface, declared once, in two halves.
//!
//! - [`Transport`]: what a session needs from whatever carries its messages (connect,
//!   send, flush, disconnect, statistics). Sessions (relay server and client, P2P,
//!   spectator) are written against it rather than [`Endpoint`] so that the same code
//!   runs on the engine thread over the runtime's network thread (`runtime::Host`), in
//!   the deterministic simulator over a bare endpoint, and in tests over a scripted
//!   fake.
//! - [`Driver`]: the rest, what the owner of the socket calls to drive an endpoint
//!   (datagrams in and out, timers, events, shutdown). It extends [`Transport`], so
//!   that a driver sends, flushes and disconnects through the same declarations. The
//!   runtime's network thread is written against it, and its mechanics are tested
//!   with a scripted fake in place of the endpoint.

use std::net::SocketAddr;

use super::{
    Binding, ConfigError, ConnectionStats, DisconnectReason, Endpoint, EndpointStats, Event, MAX_UNRELIABLE, PeerId,
    SendError,
};
use crate::clock::Micros;

/// Connections and messages, as a session uses them. Incoming traffic is not part of
/// the trait: the owner drains its own events and feeds them to the session (with
/// the time each message arrived), because a session may share the transport.
pub trait Transport {
    /// Starts connecting to `addr`; the returned peer may be sent to at once.
    fn connect(&mut self, now: Micros, addr: SocketAddr) -> Result<PeerId, SendError> {
        self.connect_bound(now, addr, None)
    }
    /// Like [`Transport::connect`], binding who both ends are into the handshake
    /// ([`Binding`]): the other end must have `binding.responder` as its own id
    /// ([`Transport::set_local_id`]), or it refuses the handshake.
    fn connect_bound(&mut self, now: Micros, addr: SocketAddr, binding: Option<Binding>) -> Result<PeerId, SendError>;
    /// Our own id in handshakes bound to us; None refuses every bound handshake.
    fn set_local_id(&mut self, id: Option<u32>);
    /// Closes the connection to `peer` (unknown peers are ignored).
    fn disconnect(&mut self, now: Micros, peer: PeerId);
    /// Closes the connection to `peer`, telling it `reason` (a transport that cannot
    /// carry one closes it plainly).
    fn disconnect_with(&mut self, now: Micros, peer: PeerId, reason: DisconnectReason) {
        let _ = reason;
        self.disconnect(now, peer);
    }
    /// Queues a message for the next flush. A refused message had no effect.
    fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), SendError>;
    /// Puts everything queued on the wire.
    fn flush(&mut self, now: Micros);
    /// Gives a received message's buffer back for reuse.
    fn recycle(&mut self, buf: Vec<u8>);
    /// The connection's latest statistics, or `None` for an unknown peer.
    fn stats(&mut self, peer: PeerId) -> Option<ConnectionStats>;
    /// The largest unreliable or sequenced message [`Transport::send`] takes (one
    /// datagram's worth): sessions size their unreliable messages to it. At least
    /// [`max_unreliable_for`](super::max_unreliable_for)`(`[`MIN_DATAGRAM_SIZE`](crate::wire::MIN_DATAGRAM_SIZE)`)`,
    /// at most [`MAX_UNRELIABLE`] (the default, for a transport that takes 1,200-byte
    /// datagrams); an [`Endpoint`] answers its own ([`Endpoint::max_unreliable`]).
    fn max_unreliable(&self) -> usize {
        MAX_UNRELIABLE
    }
}

impl Transport for Endpoint {
    fn connect_bound(&mut self, now: Micros, addr: SocketAddr, binding: Option<Binding>) -> Result<PeerId, SendError> {
        let peer = self.ids.next();
        Endpoint::connect_bound(self, now, addr, peer, binding)?;
        Ok(peer)
    }
    fn set_local_id(&mut self, id: Option<u32>) {
        Endpoint::set_local_id(self, id)
    }
    fn disconnect(&mut self, now: Micros, peer: PeerId) {
        Endpoint::disconnect(self, now, peer)
    }
    fn disconnect_with(&mut self, now: Micros, peer: PeerId, reason: DisconnectReason) {
        Endpoint::disconnect_with(self, now, peer, reason)
    }
    fn send(&mut self, peer: PeerId, channel: u8, data: &[u8]) -> Result<(), SendError> {
        Endpoint::send(self, peer, channel, data)
    }
    fn flush(&mut self, now: Micros) {
        Endpoint::flush(self, now)
    }
    fn recycle(&mut self, buf: Vec<u8>) {
        Endpoint::recycle(self, buf)
    }
    fn stats(&mut self, peer: PeerId) -> Option<ConnectionStats> {
        Endpoint::stats(self, peer)
    }
    fn max_unreliable(&self) -> usize {
        Endpoint::max_unreliable(self)
    }
}

/// The owner's half of an endpoint: datagrams in and out, timers, events, shutdown.
/// With [`Transport`] it is every operation of [`Endpoint`] that a driver of one needs;
/// [`Endpoint`]'s own methods of the same names say what each does.
///
/// A driver owns the socket and the clock: it hands each datagram to
/// [`handle_datagram`](Driver::handle_datagram) with its arrival time, runs
/// [`update`](Driver::update) when [`next_timeout`](Driver::next_timeout) comes,
/// writes what [`poll_transmit`](Driver::poll_transmit) gives, and passes on what
/// [`poll_event_timed`](Driver::poll_event_timed) gives.
pub trait Driver: Transport {
    /// Like [`Transport::connect_bound`], as `peer`: an id the driver took from the
    /// endpoint's allocator ([`Endpoint::peer_id_allocator`]) so that it could name the
    /// connection before this call.
    fn connect_as(
        &mut self,
        now: Micros,
        addr: SocketAddr,
        peer: PeerId,
        binding: Option<Binding>,
    ) -> Result<(), SendError>;
    /// Closes every connection, telling each peer.
    fn shutdown(&mut self, now: Micros);
    /// The silence timeout of every connection (`Micros::MAX`: never). Error: 0.
    fn set_timeout(&mut self, timeout_us: Micros) -> Result<(), ConfigError>;
    /// A hint that a datagram from `from` comes next ([`Endpoint::prefetch_for`]); by
    /// default nothing.
    fn prefetch_for(&self, _from: SocketAddr) {}
    /// A datagram from `from` that arrived at `now`.
    fn handle_datagram(&mut self, now: Micros, from: SocketAddr, data: &[u8]);
    /// Runs the timers due at `now` (resends, keepalives, timeouts).
    fn update(&mut self, now: Micros);
    /// When [`update`](Driver::update) next has work, if ever.
    fn next_timeout(&mut self) -> Option<Micros>;
    /// Copies the next outgoing datagram into `out` (a datagram's worth of bytes) and
    /// returns its destination and length.
    fn poll_transmit(&mut self, out: &mut [u8]) -> Option<(SocketAddr, usize)>;
    /// The next event and when it happened (for a message: when its datagram arrived).
    fn poll_event_timed(&mut self) -> Option<(Micros, Event)>;
    /// Events waiting to be polled.
    fn pending_events(&self) -> usize;
    /// The figures of the whole endpoint.
    fn endpoint_stats(&self) -> EndpointStats;
    /// Calls `f` with the bytes queued for it, in the sense of `send_queue_limit_bytes`
    /// (what [`Transport::send`] checks the limit against), and its connection's next
    /// timer, of every peer whose connection changed since the last call (at least
    /// those; a fake may report more). Only a changed connection's timer can have come
    /// earlier than [`Driver::next_timeout`] said, so the owner learns from this
    /// whether work done between its turns made anything due sooner, without a walk
    /// of every connection.
    fn drain_changed(&mut self, f: &mut dyn FnMut(PeerId, usize, Micros));
    /// Whether it needs the wall clock ([`Driver::set_unix_time`]): it checks connect
    /// tokens. No, unless it says so.
    fn wants_unix_time(&self) -> bool {
        false
    }
    /// The Unix time read at `now` (None: unknown), before datagrams are handed over.
    /// Ignored unless it says it [`wants_unix_time`](Driver::wants_unix_time).
    fn set_unix_time(&mut self, now: Micros, unix_secs: Option<u64>) {
        let _ = (now, unix_secs);
    }
    /// What the other end said, unauthenticated, when it refused `peer`'s handshake
    /// (which ended `DeniedUnverified`): for a log only. None unless it keeps it.
    fn unverified_denial(&self, peer: PeerId) -> Option<DisconnectReason> {
        let _ = peer;
        None
    }
}

impl Driver for Endpoint {
    fn connect_as(
        &mut self,
        now: Micros,
        addr: SocketAddr,
        peer: PeerId,
        binding: Option<Binding>,
    ) -> Result<(), SendError> {
        Endpoint::connect_bound(self, now, addr, peer, binding)
    }
    fn shutdown(&mut self, now: Micros) {
        Endpoint::shutdown(self, now)
    }
    fn set_timeout(&mut self, timeout_us: Micros) -> Result<(), ConfigError> {
        Endpoint::set_timeout(self, timeout_us)
    }
    fn prefetch_for(&self, from: SocketAddr) {
        Endpoint::prefetch_for(self, from)
    }
    fn handle_datagram(&mut self, now: Micros, from: SocketAddr, data: &[u8]) {
        Endpoint::handle_datagram(self, now, from, data)
    }
    fn update(&mut self, now: Micros) {
        Endpoint::update(self, now)
    }
    fn next_timeout(&mut self) -> Option<Micros> {
        Endpoint::next_timeout(self)
    }
    fn poll_transmit(&mut self, out: &mut [u8]) -> Option<(SocketAddr, usize)> {
        Endpoint::poll_transmit(self, out)
    }
    fn poll_event_timed(&mut self) -> Option<(Micros, Event)> {
        Endpoint::poll_event_timed(self)
    }
    fn pending_events(&self) -> usize {
        Endpoint::pending_events(self)
    }
    fn endpoint_stats(&self) -> EndpointStats {
        Endpoint::endpoint_stats(self)
    }
    fn drain_changed(&mut self, f: &mut dyn FnMut(PeerId, usize, Micros)) {
        Endpoint::drain_changed(self, f)
    }
    fn wants_unix_time(&self) -> bool {
        Endpoint::wants_unix_time(self)
    }
    fn set_unix_time(&mut self, now: Micros, unix_secs: Option<u64>) {
        Endpoint::set_unix_time(self, now, unix_secs)
    }
    fn unverified_denial(&self, peer: PeerId) -> Option<DisconnectReason> {
        Endpoint::unverified_denial(self, peer)
    }
}
