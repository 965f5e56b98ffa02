//! Bounded channels that know they are empty from one word, and that hold memory only
//! for what they have held.
//!
//! A host's channels between the engine and the network thread (events, commands, the
//! free-lists of buffers) are looked at far more often than anything is in them: an
//! engine's every poll and flush looks at each of them, and most find it empty. Each
//! channel keeps how many items it holds in one atomic word, and an empty look reads
//! that word alone (a look at a crossbeam array channel read three cache lines, cold at
//! each host's turn when a process runs many hosts: at 512 client hosts the looks took
//! a tenth of the client process's time, docs/benchmarks.md, issue 35).
//!
//! The items sit in a queue behind a lock with room for [`RESERVED`] items from the
//! start, which grows to the most the channel has held at once and stays there, up to
//! its bound. A crossbeam array channel allocates and writes every slot of its bound
//! when it is made: the commands' 4,096 slots and the events' 2,048 were 440 KB of
//! every host, resident and mostly never used (a host was about 1 MB; ENet's is about
//! 12 KB). A running host allocates here only when more pile up than ever before and
//! more than the reserve. The lock is held for a push or a pop only; the
//! engine's sends and polls go straight to the endpoint in the usual case
//! (`Host::submit`, `Host::pump`), so these channels carry the exceptions.
//!
//! The sender adds one after each item is in the channel, the receiver takes one off
//! after each item it took out. So the count is never below what the channel holds
//! once a send has returned, and never above it once a receive has returned: a
//! receiver that reads 0 may miss an item whose send has not returned yet (it is
//! there at its next look, as with a plain channel read a moment earlier), and a
//! sender that reads the count for room never finds more room than there is.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

pub(crate) use crossbeam_channel::{TryRecvError, TrySendError};

/// Items a channel has room for from the start (fewer if its bound is lower): a
/// scheduling hitch between the engine and the network thread piles up this many
/// without an allocation. A running relay server's engine grew its command queue past
/// what it had held in its warm-up at such a hitch, in about one run of three
/// (`tests/relay_session_alloc.rs` holds a running match to no allocation).
const RESERVED: usize = 256;

/// What both ends share.
#[derive(Debug)]
struct Shared<T> {
    queue: Mutex<VecDeque<T>>,
    /// Items in the channel (see the module docs for when it is exact).
    count: AtomicUsize,
    capacity: usize,
    /// Receiving ends alive: a send to a channel nobody can read is refused.
    receivers: AtomicUsize,
}

impl<T> Shared<T> {
    fn queue(&self) -> MutexGuard<'_, VecDeque<T>> {
        // A push or a pop cannot leave the queue half-changed, so a panic elsewhere
        // while it was held (none is possible but the allocator's) leaves it usable.
        self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A bounded channel of `capacity` items (at least one) with its count.
pub(crate) fn bounded<T>(capacity: usize) -> (CountedSender<T>, CountedReceiver<T>) {
    let shared = Arc::new(Shared {
        queue: Mutex::new(VecDeque::with_capacity(capacity.clamp(1, RESERVED))),
        count: AtomicUsize::new(0),
        capacity: capacity.max(1),
        receivers: AtomicUsize::new(1),
    });
    (CountedSender { shared: shared.clone() }, CountedReceiver { shared })
}

/// The sending end. Cloning shares the channel and its count.
#[derive(Debug)]
pub(crate) struct CountedSender<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for CountedSender<T> {
    fn clone(&self) -> Self {
        CountedSender { shared: self.shared.clone() }
    }
}

impl<T> CountedSender<T> {
    /// Puts `item` in the channel, or gives it back if the channel is full or its
    /// receivers are gone. Never blocks beyond another end's push or pop.
    pub(crate) fn try_send(&self, item: T) -> Result<(), TrySendError<T>> {
        let s = &*self.shared;
        if s.receivers.load(Ordering::Acquire) == 0 {
            return Err(TrySendError::Disconnected(item));
        }
        {
            let mut q = s.queue();
            if q.len() >= s.capacity {
                return Err(TrySendError::Full(item));
            }
            q.push_back(item);
        }
        // Release: a receiver that sees this count sees the item in the channel.
        s.count.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// Items in the channel: at least as many as it holds once this end's sends have
    /// returned (the receiver's takes may not have been counted off yet).
    pub(crate) fn len(&self) -> usize {
        self.shared.count.load(Ordering::Acquire)
    }

    /// Whether the channel holds nothing: every item sent has been taken and counted off.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most items the channel holds.
    pub(crate) fn capacity(&self) -> usize {
        self.shared.capacity
    }
}

/// The receiving end. Cloning shares the channel and its count.
#[derive(Debug)]
pub(crate) struct CountedReceiver<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for CountedReceiver<T> {
    fn clone(&self) -> Self {
        self.shared.receivers.fetch_add(1, Ordering::AcqRel);
        CountedReceiver { shared: self.shared.clone() }
    }
}

impl<T> Drop for CountedReceiver<T> {
    fn drop(&mut self) {
        self.shared.receivers.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<T> CountedReceiver<T> {
    /// The oldest item, if the count says there is one. `Empty` when the count is 0,
    /// also after the senders are gone: this end's owners learn that another way (the
    /// host's `exited` flag), since the core they share keeps both ends alive.
    pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
        let s = &*self.shared;
        if s.count.load(Ordering::Acquire) == 0 {
            return Err(TryRecvError::Empty);
        }
        let item = s.queue().pop_front().ok_or(TryRecvError::Empty)?;
        s.count.fetch_sub(1, Ordering::Release);
        Ok(item)
    }

    /// Whether the channel holds nothing that this end could take now.
    pub(crate) fn is_empty(&self) -> bool {
        self.shared.count.load(Ordering::Acquire) == 0
    }

    /// Items in the channel, as counted.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.shared.count.load(Ordering::Acquire)
    }

    /// What the channel holds now, taken one by one.
    #[cfg(test)]
    pub(crate) fn try_iter(&self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(|| self.try_recv().ok())
    }

    /// Slots the queue has allocated (for tests of its growth).
    #[cfg(test)]
    fn allocated(&self) -> usize {
        self.shared.queue().capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_follows_sends_and_takes() {
        let (tx, rx) = bounded::<u32>(2);
        assert!(rx.is_empty() && tx.is_empty());
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)), "bounded");
        assert_eq!((tx.len(), rx.len()), (2, 2), "a refused send is not counted");
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(tx.len(), 1);
        assert_eq!(rx.try_recv(), Ok(2));
        assert!(tx.is_empty() && rx.is_empty());
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        assert_eq!(tx.capacity(), 2);
    }

    #[test]
    fn items_cross_threads_once_each_in_order() {
        let (tx, rx) = bounded::<u64>(64);
        let sender = std::thread::spawn(move || {
            for i in 0..100_000u64 {
                let mut item = i;
                loop {
                    match tx.try_send(item) {
                        Ok(()) => break,
                        Err(TrySendError::Full(back)) => {
                            item = back;
                            std::thread::yield_now();
                        }
                        Err(TrySendError::Disconnected(_)) => panic!("receiver gone"),
                    }
                }
            }
        });
        let mut next = 0u64;
        while next < 100_000 {
            match rx.try_recv() {
                Ok(v) => {
                    assert_eq!(v, next);
                    next += 1;
                }
                Err(_) => std::thread::yield_now(),
            }
        }
        sender.join().unwrap();
        assert!(rx.is_empty());
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    }

    #[test]
    fn memory_follows_what_was_held_not_the_bound() {
        let (tx, rx) = bounded::<u64>(4096);
        let reserved = rx.allocated();
        assert!((RESERVED..2 * RESERVED).contains(&reserved), "room for {RESERVED} from the start: {reserved}");
        for round in 0..100 {
            for i in 0..200 {
                tx.try_send(round * 200 + i).unwrap();
            }
            let got: Vec<u64> = rx.try_iter().collect();
            assert_eq!(got, (round * 200..round * 200 + 200).collect::<Vec<_>>());
        }
        assert_eq!(rx.allocated(), reserved, "what fits its reserve does not grow it");
        // Filled to its bound once, it holds that much and no more.
        while tx.try_send(0).is_ok() {}
        assert_eq!(tx.len(), 4096);
        assert!((4096..2 * 4096).contains(&rx.allocated()));
        // A channel bounded below the reserve has room for its bound only.
        let (_tx, small) = bounded::<u64>(16);
        assert!((16..RESERVED).contains(&small.allocated()));
    }

    #[test]
    fn a_send_with_no_receiver_left_is_refused() {
        let (tx, rx) = bounded::<u8>(4);
        let rx2 = rx.clone();
        drop(rx);
        tx.try_send(1).unwrap();
        drop(rx2);
        assert_eq!(tx.try_send(2), Err(TrySendError::Disconnected(2)));
    }

    #[test]
    fn gone_senders_read_as_empty() {
        let (tx, rx) = bounded::<u8>(4);
        tx.try_send(7).unwrap();
        drop(tx);
        assert_eq!(rx.try_recv(), Ok(7), "what was sent is still delivered");
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    }
}
