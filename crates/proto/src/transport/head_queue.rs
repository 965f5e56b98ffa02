//! A first-in, first-out queue whose oldest item lives inline, in the queue itself.
//!
//! Why: a server's state is cold at each tick, and a queue that holds one item at a
//! time (a peer's next event, for an engine that reads every tick) would touch its
//! ring's allocation, another cold cache line, for every item. Inline, the item shares
//! the lines of whatever holds the queue. Items beyond the first go to the ring.

use std::collections::VecDeque;

#[derive(Debug)]
pub(super) struct HeadQueue<T> {
    oldest: Option<T>,
    rest: VecDeque<T>,
}

impl<T> Default for HeadQueue<T> {
    fn default() -> Self {
        HeadQueue { oldest: None, rest: VecDeque::new() }
    }
}

impl<T> HeadQueue<T> {
    /// An empty queue whose items beyond the first go to `rest` (emptied first): a ring
    /// kept from an earlier queue keeps its allocation.
    pub(super) fn with_rest(mut rest: VecDeque<T>) -> Self {
        rest.clear();
        HeadQueue { oldest: None, rest }
    }

    /// Empties the queue and gives back its ring (to keep for another queue).
    pub(super) fn into_rest(self) -> VecDeque<T> {
        let mut rest = self.rest;
        rest.clear();
        rest
    }

    pub(super) fn is_empty(&self) -> bool {
        self.oldest.is_none()
    }

    pub(super) fn len(&self) -> usize {
        usize::from(self.oldest.is_some()) + self.rest.len()
    }

    pub(super) fn push_back(&mut self, item: T) {
        if self.oldest.is_none() {
            self.oldest = Some(item);
        } else {
            self.rest.push_back(item);
        }
    }

    pub(super) fn pop_front(&mut self) -> Option<T> {
        let item = self.oldest.take()?;
        self.oldest = self.rest.pop_front();
        Some(item)
    }

    /// Keeps the items `keep` says to, in their order.
    pub(super) fn retain_mut(&mut self, keep: impl FnMut(&mut T) -> bool) {
        if let Some(item) = self.oldest.take() {
            self.rest.push_front(item);
        }
        self.rest.retain_mut(keep);
        self.oldest = self.rest.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The queue against a plain `VecDeque` over a long run of mixed operations.
    #[test]
    fn keeps_the_order_of_a_plain_queue() {
        let mut q = HeadQueue::default();
        let mut model = VecDeque::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for i in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 10 {
                0..=4 => {
                    q.push_back(i);
                    model.push_back(i);
                }
                5..=7 => assert_eq!(q.pop_front(), model.pop_front()),
                8 => {
                    q.retain_mut(|v| *v % 3 != 0);
                    model.retain_mut(|v| *v % 3 != 0);
                }
                _ => {}
            }
            assert_eq!((q.len(), q.is_empty()), (model.len(), model.is_empty()));
        }
    }

    #[test]
    fn a_kept_ring_comes_back_empty_with_its_allocation() {
        let mut q = HeadQueue::with_rest(VecDeque::with_capacity(16));
        for i in 0..10 {
            q.push_back(i);
        }
        let rest = q.into_rest();
        assert!(rest.is_empty() && rest.capacity() >= 16);
        let mut q = HeadQueue::with_rest(VecDeque::from([7, 8]));
        assert!(q.is_empty());
        q.push_back(1);
        assert_eq!(q.pop_front(), Some(1));
        assert_eq!(q.pop_front(), None);
    }
}
