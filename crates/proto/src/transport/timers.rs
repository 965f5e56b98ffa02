//! Which connection's timer comes next, without a walk of every connection.
//!
//! The owner of an endpoint asks for the next timer at the end of every turn
//! ([`Endpoint::next_timeout`]) and runs the due ones when it passes
//! ([`Endpoint::update`]). Both used to walk every connection: on a server of 800
//! clients the network thread turns many times a tick, and those walks (and the timers
//! they recomputed) were 11% of the whole server's time (`perf record` of `tickwire
//! serve` at 200 matches).
//!
//! Here each connection has at most one live entry in a min-heap, at the timer it had
//! when it was last settled. A touch of a connection forgets its timer
//! (`endpoint::touched`) and lists it as unsettled; settling computes the timers of the
//! listed connections alone and pushes those that moved. An entry is live while its
//! connection exists, is settled, and was queued at that time (`queued_timer`); the
//! others are dropped when they reach the top. Dead entries pile up behind connections
//! whose timers move every tick, so the heap is rebuilt from the connections once it
//! holds more than twice their number (a walk of all of them, paid for by as many
//! pushes).
//!
//! [`Endpoint::next_timeout`]: super::Endpoint::next_timeout
//! [`Endpoint::update`]: super::Endpoint::update

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::PeerId;
use super::connection::Connection;
use super::connections::Connections;
use crate::Micros;

/// Entries the heap may hold beyond twice the connections before it is rebuilt.
const SLACK: usize = 64;

/// The connections' timers in time order (see the module docs).
#[derive(Debug, Default)]
pub(super) struct TimerQueue {
    heap: BinaryHeap<Reverse<(Micros, PeerId)>>,
    /// Connections touched since the last settle, each once (its `timer_unsettled`).
    unsettled: Vec<PeerId>,
}

impl TimerQueue {
    /// Makes room for the entries of `connections` connections, so that no settle
    /// allocates while their number holds (a running session allocates nothing per
    /// tick): the heap reaches at most twice that and [`SLACK`], plus one settle's
    /// pushes, before it is rebuilt.
    pub(super) fn reserve_for(&mut self, connections: usize) {
        let entries = 3 * connections + SLACK;
        self.heap.reserve(entries.saturating_sub(self.heap.len()));
        // Each live connection is listed once; closed ones until the next settle.
        self.unsettled.reserve((2 * connections).saturating_sub(self.unsettled.len()));
    }

    /// Lists `c` to have its timer computed again at the next settle.
    pub(super) fn unsettle(&mut self, c: &mut Connection) {
        if !c.timer_unsettled {
            c.timer_unsettled = true;
            self.unsettled.push(c.peer);
        }
    }

    /// Computes the timer (`timer_of`) of every connection touched since the last
    /// settle, and queues those that moved.
    pub(super) fn settle(&mut self, conns: &mut Connections, timer_of: impl Fn(&Connection) -> Micros) {
        for peer in self.unsettled.drain(..) {
            // (A connection closed since it was listed has nothing to settle.)
            let Some(c) = conns.get_mut(&peer) else { continue };
            c.timer_unsettled = false;
            let t = timer_of(c);
            if c.queued_timer != Some(t) {
                c.queued_timer = Some(t);
                self.heap.push(Reverse((t, peer)));
            }
        }
        if self.heap.len() > 2 * conns.len() + SLACK {
            self.heap.clear();
            for c in conns.values_mut() {
                let t = timer_of(c);
                c.queued_timer = Some(t);
                self.heap.push(Reverse((t, c.peer)));
            }
        }
    }

    /// The earliest timer of any connection. Only after [`TimerQueue::settle`].
    pub(super) fn next(&mut self, conns: &Connections) -> Option<Micros> {
        while let Some(&Reverse((t, peer))) = self.heap.peek() {
            if live(conns, t, peer) {
                return Some(t);
            }
            self.heap.pop();
        }
        None
    }

    /// Takes the connections whose timers are due at `now` into `due` (each once) and
    /// lists them as unsettled: what runs them touches them anyway. Only after
    /// [`TimerQueue::settle`].
    pub(super) fn take_due(&mut self, now: Micros, conns: &mut Connections, due: &mut Vec<PeerId>) {
        while let Some(&Reverse((t, peer))) = self.heap.peek() {
            if t > now {
                break;
            }
            self.heap.pop();
            let Some(c) = conns.get_mut(&peer).filter(|c| is_current(c, t)) else { continue };
            c.queued_timer = None;
            self.unsettle(c);
            due.push(peer);
        }
    }

    /// Entries held, live or not, and the room for them (for tests of the bound).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.heap.len()
    }
    #[cfg(test)]
    fn capacity(&self) -> (usize, usize) {
        (self.heap.capacity(), self.unsettled.capacity())
    }
}

/// Whether the entry `(t, peer)` is its connection's current one.
fn live(conns: &Connections, t: Micros, peer: PeerId) -> bool {
    conns.get(&peer).is_some_and(|c| is_current(c, t))
}

/// Whether an entry at `t` is `c`'s current one: settled, and queued at `t`.
fn is_current(c: &Connection, t: Micros) -> bool {
    !c.timer_unsettled && c.queued_timer == Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::EndpointConfig;

    /// Connections 1..=n, none settled yet (each test's `timer_of` gives their timers).
    fn conns(n: u32) -> Connections {
        let cfg = EndpointConfig::default();
        let mut m = Connections::new();
        for peer in 1..=n {
            let addr = format!("10.0.0.1:{peer}").parse().unwrap();
            m.insert(Connection::new(peer, addr, true, u64::from(peer), &cfg, 0));
        }
        m
    }

    #[test]
    fn the_next_timer_is_the_earliest_settled_one_and_due_ones_are_taken_once() {
        let mut m = conns(5);
        let timers = std::cell::RefCell::new(vec![0, 50, 10, 30, 10, 70]);
        let timer_of = |c: &Connection| timers.borrow()[c.peer as usize];
        let mut q = TimerQueue::default();
        for c in m.values_mut() {
            q.unsettle(c);
        }
        q.settle(&mut m, timer_of);
        assert_eq!(q.next(&m), Some(10));
        // Peer 2's timer moves later, peer 4's earlier: only once they are settled.
        timers.borrow_mut()[2] = 60;
        timers.borrow_mut()[4] = 5;
        q.unsettle(m.get_mut(&2).unwrap());
        q.unsettle(m.get_mut(&4).unwrap());
        q.settle(&mut m, timer_of);
        assert_eq!(q.next(&m), Some(5));
        let mut due = Vec::new();
        q.take_due(30, &mut m, &mut due);
        due.sort_unstable();
        assert_eq!(due, vec![3, 4], "peer 2's old entry at 10 is dead");
        // Taken connections wait for their next settle; the rest are still queued.
        assert_eq!(q.next(&m), Some(50));
        timers.borrow_mut()[3] = 40;
        timers.borrow_mut()[4] = 45;
        q.settle(&mut m, timer_of);
        assert_eq!(q.next(&m), Some(40));
        // A closed connection's entry is dead.
        m.remove(&3);
        assert_eq!(q.next(&m), Some(45));
        due.clear();
        q.take_due(1_000, &mut m, &mut due);
        due.sort_unstable();
        assert_eq!(due, vec![1, 2, 4, 5]);
        q.settle(&mut m, timer_of);
        due.clear();
        q.take_due(1_000, &mut m, &mut due);
        assert_eq!(due.len(), 4, "each settled again, each due once");
    }

    #[test]
    fn timers_that_move_every_tick_leave_a_bounded_heap_in_the_room_reserved() {
        let mut m = conns(100);
        let now = std::cell::Cell::new(0);
        // Every timer a second ahead of the latest touch: none is ever due, and each
        // touch leaves a dead entry behind.
        let timer_of = |c: &Connection| now.get() + 1_000_000 + Micros::from(c.peer);
        let mut q = TimerQueue::default();
        q.reserve_for(m.len());
        let room = q.capacity();
        for tick in 0..1_000 {
            now.set(tick * 16_667);
            // Some connections touched each tick, at times all of them.
            for c in m.values_mut().filter(|c| tick % 7 == 0 || u64::from(c.peer) % 3 == tick % 3) {
                q.unsettle(c);
            }
            q.settle(&mut m, timer_of);
            assert!(q.len() <= 2 * m.len() + SLACK, "{} entries at tick {tick}", q.len());
            assert_eq!(q.capacity(), room, "no settle allocates (tick {tick})");
        }
        assert!(q.next(&m).is_some_and(|t| t > now.get()));
    }
}
