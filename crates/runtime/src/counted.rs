//! Bounded channels that know they are empty from one word.
//!
//! A host's channels between the engine and the network thread (events, commands, the
//! free-lists of buffers) are looked at far more often than anything is in them: an
//! engine's every poll and flush looks at each of them, and most find it empty. An
//! empty look at a crossbeam array channel reads its head, its tail and the slot at the
//! head, three cache lines. With many hosts in one process (a client per match, a
//! server of many matches) those lines are cold at each host's turn in the frame:
//! at 512 client hosts the looks took a tenth of the client process's time
//! (docs/benchmarks.md, issue 35). Here each channel also keeps how many items it holds
//! in one atomic word, and an empty look reads that word alone.
//!
//! The sender adds one after each item is in the channel, the receiver takes one off
//! after each item it took out. So the count is never below what the channel holds
//! once a send has returned, and never above it once a receive has returned: a
//! receiver that reads 0 may miss an item whose send has not returned yet (it is
//! there at its next look, as with a plain channel read a moment earlier), and a
//! sender that reads the count for room never finds more room than there is.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_channel::{Receiver, Sender, TryRecvError, TrySendError};

/// A bounded channel of `capacity` items with its count.
pub(crate) fn bounded<T>(capacity: usize) -> (CountedSender<T>, CountedReceiver<T>) {
    let (tx, rx) = crossbeam_channel::bounded(capacity);
    let count = Arc::new(AtomicUsize::new(0));
    (CountedSender { tx, count: count.clone() }, CountedReceiver { rx, count })
}

/// The sending end. Cloning shares the channel and its count.
#[derive(Debug)]
pub(crate) struct CountedSender<T> {
    tx: Sender<T>,
    count: Arc<AtomicUsize>,
}

impl<T> Clone for CountedSender<T> {
    fn clone(&self) -> Self {
        CountedSender { tx: self.tx.clone(), count: self.count.clone() }
    }
}

impl<T> CountedSender<T> {
    /// Puts `item` in the channel, or gives it back if the channel is full or its
    /// receivers are gone. Never blocks.
    pub(crate) fn try_send(&self, item: T) -> Result<(), TrySendError<T>> {
        self.tx.try_send(item)?;
        // Release: a receiver that sees this count sees the item in the channel.
        self.count.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// Items in the channel: at least as many as it holds once this end's sends have
    /// returned (the receiver's takes may not have been counted off yet).
    pub(crate) fn len(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Whether the channel holds nothing: every item sent has been taken and counted off.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most items the channel holds.
    pub(crate) fn capacity(&self) -> usize {
        self.tx.capacity().unwrap_or(usize::MAX)
    }
}

/// The receiving end. Cloning shares the channel and its count.
#[derive(Debug)]
pub(crate) struct CountedReceiver<T> {
    rx: Receiver<T>,
    count: Arc<AtomicUsize>,
}

impl<T> Clone for CountedReceiver<T> {
    fn clone(&self) -> Self {
        CountedReceiver { rx: self.rx.clone(), count: self.count.clone() }
    }
}

impl<T> CountedReceiver<T> {
    /// The oldest item, if the count says there is one. `Empty` when the count is 0,
    /// also after the senders are gone: this end's owners learn that another way (the
    /// host's `exited` flag), since the core they share keeps both ends alive.
    pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
        if self.count.load(Ordering::Acquire) == 0 {
            return Err(TryRecvError::Empty);
        }
        let item = self.rx.try_recv()?;
        self.count.fetch_sub(1, Ordering::Release);
        Ok(item)
    }

    /// Whether the channel holds nothing that this end could take now.
    pub(crate) fn is_empty(&self) -> bool {
        self.count.load(Ordering::Acquire) == 0
    }

    /// Items in the channel, as counted.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// What the channel holds now, taken one by one.
    #[cfg(test)]
    pub(crate) fn try_iter(&self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(|| self.try_recv().ok())
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
    fn gone_senders_read_as_empty() {
        let (tx, rx) = bounded::<u8>(4);
        tx.try_send(7).unwrap();
        drop(tx);
        assert_eq!(rx.try_recv(), Ok(7), "what was sent is still delivered");
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    }
}
