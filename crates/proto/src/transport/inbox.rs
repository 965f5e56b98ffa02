//! Events waiting for the endpoint's owner: one queue per peer, served round-robin,
//! each with its size in bytes (which the connection checks against
//! `PeerLimits::max_recv_queue_bytes` before taking more from that peer).
//!
//! Round-robin is what keeps one peer's backlog from delaying another peer's input:
//! however much a peer has queued, every other peer's next event comes out within one
//! turn of the ring.

use std::collections::VecDeque;

use super::head_queue::HeadQueue;
use super::peer_map::PeerMap;
use super::{Event, PeerId};
use crate::clock::Micros;

/// What a queued event costs besides its payload's buffer: the event itself and its
/// slot in the queue, rounded up. Charged for every event, so an empty message is not
/// free.
pub(super) const EVENT_OVERHEAD: usize = 64;

/// Idle per-peer queues kept for the next peers (their allocations are reused).
const SPARE_QUEUES: usize = 64;

/// Events a peer's queue holds without growing: a burst of datagrams after a stall of
/// the owner fits. A queue kept as a spare is shrunk back to this.
const QUEUE_RESERVED: usize = 256;

/// Bytes an event holds while it waits.
pub(super) fn cost(e: &Event) -> usize {
    match e {
        Event::Message { data, .. } => data.capacity() + EVENT_OVERHEAD,
        _ => EVENT_OVERHEAD,
    }
}

/// An event and when it happened (for a message: when its datagram arrived).
type Timed = (Micros, Event);

/// One peer's events, oldest first (the oldest inline: the one cache line the map's
/// lookup brought in, when the engine reads every tick; `head_queue.rs`).
#[derive(Debug, Default)]
struct PeerQueue {
    events: HeadQueue<Timed>,
    bytes: usize,
}

#[derive(Debug, Default)]
pub(super) struct Inbox {
    queues: PeerMap<PeerQueue>,
    /// Peers with events waiting, in the order they are served.
    ring: VecDeque<PeerId>,
    spare: Vec<VecDeque<Timed>>,
    len: usize,
    /// The time pushed events are stamped with: the endpoint's latest `now`.
    pub now: Micros,
}

impl Inbox {
    pub(super) fn push(&mut self, e: Event) {
        let peer = e.peer();
        let c = cost(&e);
        let spare = &mut self.spare;
        let q = self.queues.entry(peer).or_insert_with(|| PeerQueue {
            events: HeadQueue::with_rest(spare.pop().unwrap_or_else(|| VecDeque::with_capacity(QUEUE_RESERVED))),
            bytes: 0,
        });
        if q.events.is_empty() {
            self.ring.push_back(peer);
        }
        q.events.push_back((self.now, e));
        q.bytes += c;
        self.len += 1;
    }

    /// The next event and when it happened, one peer after the other. A peer's own
    /// events keep their order, and its `Disconnected` (always its last) lets go of its
    /// queue.
    pub(super) fn pop(&mut self) -> Option<Timed> {
        let peer = self.ring.pop_front()?;
        let q = self.queues.get_mut(&peer).expect("a peer in the ring has a queue");
        let (at, e) = q.events.pop_front().expect("a peer in the ring has events");
        q.bytes -= cost(&e);
        self.len -= 1;
        if !q.events.is_empty() {
            self.ring.push_back(peer);
        } else if matches!(e, Event::Disconnected { .. }) {
            let q = self.queues.remove(&peer).expect("just used");
            if self.spare.len() < SPARE_QUEUES {
                let mut rest = q.events.into_rest();
                rest.shrink_to(QUEUE_RESERVED);
                self.spare.push(rest);
            }
        }
        Some((at, e))
    }

    /// Drops `peer`'s waiting messages (its other events stay), handing their buffers
    /// to `recycle`: for a peer dropped for flooding, whose backlog nobody wants.
    pub(super) fn discard_messages(&mut self, peer: PeerId, mut recycle: impl FnMut(Vec<u8>)) {
        let Some(q) = self.queues.get_mut(&peer) else { return };
        let before = q.events.len();
        let mut bytes = q.bytes;
        q.events.retain_mut(|(_, e)| match e {
            Event::Message { data, .. } => {
                bytes -= data.capacity() + EVENT_OVERHEAD;
                recycle(std::mem::take(data));
                false
            }
            _ => true,
        });
        q.bytes = bytes;
        self.len -= before - q.events.len();
        if q.events.is_empty() {
            self.ring.retain(|&p| p != peer);
        }
    }

    /// Bytes of `peer`'s events waiting (see [`cost`]).
    pub(super) fn bytes(&self, peer: PeerId) -> usize {
        self.queues.get(&peer).map_or(0, |q| q.bytes)
    }

    /// Events waiting, all peers.
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::DisconnectReason;

    fn msg(peer: PeerId, n: u8) -> Event {
        Event::Message { peer, channel: 0, data: vec![n] }
    }

    #[test]
    fn peers_take_turns_and_keep_their_own_order() {
        let mut inbox = Inbox::default();
        for n in 0..100 {
            inbox.push(msg(1, n));
        }
        inbox.push(msg(2, 0));
        inbox.push(msg(3, 0));
        inbox.push(Event::Disconnected { peer: 2, reason: DisconnectReason::Timeout });
        assert_eq!(inbox.len(), 103);
        let first: Vec<(PeerId, Option<u8>)> = (0..6)
            .map(|_| match inbox.pop().unwrap().1 {
                Event::Message { peer, data, .. } => (peer, Some(data[0])),
                e => (e.peer(), None),
            })
            .collect();
        // Peer 1's flood does not hold back peers 2 and 3.
        assert_eq!(first, [(1, Some(0)), (2, Some(0)), (3, Some(0)), (1, Some(1)), (2, None), (1, Some(2))]);
        assert_eq!(inbox.bytes(2), 0);
        assert!(!inbox.queues.contains_key(&2), "a disconnected peer's queue is let go");
        assert_eq!(inbox.bytes(1), 97 * (1 + EVENT_OVERHEAD));
        while inbox.pop().is_some() {}
        assert_eq!((inbox.len(), inbox.bytes(1)), (0, 0));
    }

    #[test]
    fn discarding_a_peers_messages_keeps_its_other_events() {
        let mut inbox = Inbox::default();
        let credential = crate::transport::Credential::Open;
        inbox.push(Event::Connected { peer: 1, addr: "127.0.0.1:1".parse().unwrap(), credential, binding: None });
        inbox.push(msg(2, 0));
        for n in 0..10 {
            inbox.push(msg(1, n));
        }
        let mut recycled = 0;
        inbox.discard_messages(1, |_| recycled += 1);
        assert_eq!((recycled, inbox.len(), inbox.bytes(1)), (10, 2, EVENT_OVERHEAD));
        inbox.push(Event::Disconnected { peer: 1, reason: DisconnectReason::Flooding });
        assert!(matches!(inbox.pop(), Some((_, Event::Connected { peer: 1, .. }))));
        assert!(matches!(inbox.pop(), Some((_, Event::Message { peer: 2, .. }))));
        assert!(matches!(inbox.pop(), Some((_, Event::Disconnected { peer: 1, .. }))));
        assert!(inbox.pop().is_none());
        // A peer with only messages waiting leaves the ring.
        inbox.push(msg(3, 0));
        inbox.discard_messages(3, |_| {});
        assert!(inbox.pop().is_none());
    }

    #[test]
    fn events_keep_the_time_they_happened() {
        let mut inbox = Inbox { now: 5, ..Inbox::default() };
        inbox.push(msg(1, 0));
        inbox.now = 9;
        inbox.push(msg(1, 1));
        assert_eq!(inbox.pop().map(|t| t.0), Some(5));
        assert_eq!(inbox.pop().map(|t| t.0), Some(9));
    }

    #[test]
    fn an_empty_message_costs_the_overhead_only() {
        let mut inbox = Inbox::default();
        inbox.push(Event::Message { peer: 1, channel: 0, data: Vec::new() });
        inbox.push(Event::Message { peer: 1, channel: 0, data: Vec::with_capacity(1_200) });
        assert_eq!(inbox.bytes(1), EVENT_OVERHEAD + 1_200 + EVENT_OVERHEAD);
    }
}
