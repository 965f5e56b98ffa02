//! Per-peer send-queue accounting shared by the engine side and the network thread.
//!
//! The endpoint refuses a message that would take a peer's send queue over
//! `send_queue_limit_bytes`, but it runs on the network thread, after
//! [`Host::send`](super::Host::send) has already returned. To refuse such a message
//! synchronously (and never drop one the engine was told was accepted), the engine side
//! knows, per peer, the bytes that will be in the endpoint's queue at most when its next
//! message reaches the endpoint:
//!
//! ```text
//! pending = submitted - taken + queued
//! ```
//!
//! * `submitted`: bytes of sends the engine has put in the command queue (engine-local);
//! * `taken`: bytes of sends the thread has taken off the command queue (applied or not);
//! * `queued`: the endpoint's own count of queued bytes for the peer (unsent unreliable
//!   messages, unacknowledged reliable ones): what its `send` compares with the limit.
//!
//! The thread owns `taken` and `queued`, and publishes them as one number,
//! `queued - taken` (wrapping), in one atomic store per peer at the end of every loop
//! turn (after commands, acknowledgements and flushes). A single store cannot be seen
//! half-done, so the engine always combines a `taken` and a `queued` of the same moment
//! T. At T the estimate is exact: messages taken by then are in `queued` (or drained),
//! the others are still in `submitted - taken`. After T the endpoint's queue only
//! shrinks (sends, acks), except by sends taken after T, which the estimate still counts
//! as on their way. So the endpoint's queue, when a message arrives there, is never
//! larger than the `pending` the engine checked it against: a send the engine accepted
//! is never over the endpoint's limit. The estimate lags the truth by at most one loop
//! turn (the acknowledgements that shrink the queue arrive in a turn, which publishes
//! them), and only ever in the safe direction.
//!
//! Totals are `u64` and do not wrap in the life of a host; the published difference
//! wraps by design and is added back with wrapping arithmetic, which is exact because
//! the true `pending` is never negative. Nothing here allocates after the `Arc` is
//! created (once per connection).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The shared half: written by the network thread, read by the engine.
#[derive(Debug, Default)]
pub(crate) struct SendBudget {
    /// `queued - taken` (wrapping) as of the thread's last publication. Self-contained:
    /// no other memory is read on its account, so relaxed ordering is enough.
    offset: AtomicU64,
}

impl SendBudget {
    pub(crate) fn new() -> Arc<SendBudget> {
        Arc::new(SendBudget::default())
    }
}

/// The engine's view of one peer's budget.
#[derive(Debug)]
pub(crate) struct EngineBudget {
    shared: Arc<SendBudget>,
    /// Bytes of sends put in the command queue for this peer.
    submitted: u64,
}

impl EngineBudget {
    pub(crate) fn new(shared: Arc<SendBudget>) -> Self {
        EngineBudget { shared, submitted: 0 }
    }

    /// `Err(pending)` if a message of `len` bytes could take the queue over `limit`.
    pub(crate) fn check(&self, len: usize, limit: usize) -> Result<(), u64> {
        let pending = self.submitted.wrapping_add(self.shared.offset.load(Ordering::Relaxed));
        if pending.saturating_add(len as u64) > limit as u64 { Err(pending) } else { Ok(()) }
    }

    /// Records a message of `len` bytes put in the command queue.
    pub(crate) fn submitted(&mut self, len: usize) {
        self.submitted += len as u64;
    }
}

/// The network thread's view of one peer's budget.
#[derive(Debug)]
pub(crate) struct ThreadBudget {
    shared: Arc<SendBudget>,
    /// Bytes of sends taken off the command queue for this peer.
    taken: u64,
}

impl ThreadBudget {
    pub(crate) fn new(shared: Arc<SendBudget>) -> Self {
        ThreadBudget { shared, taken: 0 }
    }

    /// Records a send of `len` bytes taken off the command queue (applied or not).
    pub(crate) fn took(&mut self, len: usize) {
        self.taken += len as u64;
    }

    /// Publishes the endpoint's current queue for the peer together with what was taken.
    pub(crate) fn publish(&self, endpoint_queued: usize) {
        self.shared.offset.store((endpoint_queued as u64).wrapping_sub(self.taken), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_counts_queued_commands_and_the_endpoint_queue_once() {
        let shared = SendBudget::new();
        let mut engine = EngineBudget::new(shared.clone());
        let mut thread = ThreadBudget::new(shared);
        assert_eq!(engine.check(100, 100), Ok(()));
        assert_eq!(engine.check(101, 100), Err(0));
        engine.submitted(60);
        // In the command queue: counted in full.
        assert_eq!(engine.check(40, 100), Ok(()));
        assert_eq!(engine.check(41, 100), Err(60));
        // Taken, applied, not yet published: still counted as on its way, once.
        thread.took(60);
        assert_eq!(engine.check(41, 100), Err(60));
        // Published: now counted as in the endpoint's queue, still once.
        thread.publish(60);
        assert_eq!(engine.check(40, 100), Ok(()));
        assert_eq!(engine.check(41, 100), Err(60));
        // The endpoint drained 50 bytes (a flush of unreliable data, or acks).
        thread.publish(10);
        assert_eq!(engine.check(90, 100), Ok(()));
        assert_eq!(engine.check(91, 100), Err(10));
        // More sent and taken, partly drained: 10 + 30 queued, 20 on the way.
        engine.submitted(50);
        thread.took(30);
        thread.publish(40);
        assert_eq!(engine.check(40, 100), Ok(()));
        assert_eq!(engine.check(41, 100), Err(60));
        // Everything drained.
        thread.took(20);
        thread.publish(0);
        assert_eq!(engine.check(100, 100), Ok(()));
    }
}
