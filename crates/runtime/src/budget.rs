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
//! the true `pending` is never negative.
//!
//! Where the published numbers live: a host's peers share a [`BudgetBoard`], lines of
//! eight 8-byte slots, so a server's tick (a check per send, a publication per flush)
//! touches one line per eight peers. Each peer had an `Arc` of its own, a cold line per
//! peer and tick, and publishing into it was the largest item of the runtime's own
//! work in row 5b's server profile. A slot is taken when a peer's budget is made (a
//! connection, once) and given back when both its handles are gone; a given-back slot
//! is reused, so the board holds the most peers the host ever had at once, rounded up
//! to a line. Steady traffic allocates nothing here: a new line is made only when a
//! connection finds every slot taken, and the free list grows only to the most slots
//! ever free at once.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Slots in one line of the board: 64 bytes of 8-byte offsets.
const SLOTS: usize = 8;

/// One line of eight peers' published offsets, and who holds each slot.
#[derive(Debug)]
struct BoardLine {
    /// `queued - taken` (wrapping) as of the thread's last publication, per slot.
    /// Self-contained: no other memory is read on its account, so relaxed ordering is
    /// enough.
    offsets: Offsets,
    /// Handles alive per slot (0: free). Only taking, cloning and dropping a handle
    /// touch these, never a send or a flush.
    holders: [AtomicU32; SLOTS],
    /// Where a slot goes back when its last handle is dropped (gone with the host).
    board: Weak<BudgetBoard>,
}

/// The hot half of a line: aligned so that the eight offsets are one cache line of
/// their own, apart from the `Arc`'s counts and the holders.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Offsets([AtomicU64; SLOTS]);

/// Every peer's published budget of one host (engine side and thread share it).
#[derive(Debug, Default)]
pub(crate) struct BudgetBoard {
    /// Free slots; a line with none free is held only by its handles.
    free: Mutex<Vec<(Arc<BoardLine>, u8)>>,
}

impl BudgetBoard {
    pub(crate) fn new() -> Arc<BudgetBoard> {
        Arc::new(BudgetBoard::default())
    }

    fn free(&self) -> MutexGuard<'_, Vec<(Arc<BoardLine>, u8)>> {
        // A push or a pop cannot leave the list half-changed: a panic while it was held
        // (none is possible but the allocator's) leaves it usable.
        self.free.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A peer's budget, at zero, in a free slot (a new line when none is free).
    pub(crate) fn take(self: &Arc<Self>) -> SendBudget {
        let mut free = self.free();
        if free.is_empty() {
            let line = Arc::new(BoardLine {
                offsets: Offsets::default(),
                holders: Default::default(),
                board: Arc::downgrade(self),
            });
            // Handed out from the front: slot 0 first, so peers made one after another
            // fill a line before the next.
            free.extend((0..SLOTS as u8).rev().map(|slot| (line.clone(), slot)));
        }
        let (line, slot) = free.pop().expect("a free slot was just made");
        drop(free);
        line.holders[usize::from(slot)].store(1, Ordering::Relaxed);
        line.offsets.0[usize::from(slot)].store(0, Ordering::Relaxed);
        SendBudget { line, slot }
    }
}

/// A handle to one peer's slot on its host's [`BudgetBoard`]: the engine's and the
/// thread's views each hold one (a clone); the slot is free again when both are gone.
#[derive(Debug)]
pub(crate) struct SendBudget {
    line: Arc<BoardLine>,
    slot: u8,
}

impl SendBudget {
    fn offset(&self) -> &AtomicU64 {
        &self.line.offsets.0[usize::from(self.slot)]
    }
}

impl Clone for SendBudget {
    fn clone(&self) -> Self {
        // Relaxed as for an `Arc`'s count: a new holder comes from an existing one.
        self.line.holders[usize::from(self.slot)].fetch_add(1, Ordering::Relaxed);
        SendBudget { line: self.line.clone(), slot: self.slot }
    }
}

impl Drop for SendBudget {
    fn drop(&mut self) {
        // AcqRel: the last holder's drop sees every other holder's use of the slot end
        // before the slot is handed to another peer (which then resets it).
        if self.line.holders[usize::from(self.slot)].fetch_sub(1, Ordering::AcqRel) == 1
            && let Some(board) = self.line.board.upgrade()
        {
            board.free().push((self.line.clone(), self.slot));
        }
    }
}

/// The engine's view of one peer's budget.
#[derive(Debug)]
pub(crate) struct EngineBudget {
    shared: SendBudget,
    /// Bytes of sends put in the command queue for this peer.
    submitted: u64,
}

impl EngineBudget {
    pub(crate) fn new(shared: SendBudget) -> Self {
        EngineBudget { shared, submitted: 0 }
    }

    /// `Err(pending)` if a message of `len` bytes could take the queue over `limit`.
    pub(crate) fn check(&self, len: usize, limit: usize) -> Result<(), u64> {
        let pending = self.submitted.wrapping_add(self.shared.offset().load(Ordering::Relaxed));
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
    shared: SendBudget,
    /// Bytes of sends taken off the command queue for this peer.
    taken: u64,
}

impl ThreadBudget {
    pub(crate) fn new(shared: SendBudget) -> Self {
        ThreadBudget { shared, taken: 0 }
    }

    /// Records a send of `len` bytes taken off the command queue (applied or not).
    pub(crate) fn took(&mut self, len: usize) {
        self.taken += len as u64;
    }

    /// Publishes the endpoint's current queue for the peer together with what was taken.
    pub(crate) fn publish(&self, endpoint_queued: usize) {
        self.shared.offset().store((endpoint_queued as u64).wrapping_sub(self.taken), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_counts_queued_commands_and_the_endpoint_queue_once() {
        let shared = BudgetBoard::new().take();
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

    fn line_of(b: &SendBudget) -> usize {
        b.offset() as *const AtomicU64 as usize / 64
    }

    #[test]
    fn eight_peers_share_one_line_of_their_own() {
        let board = BudgetBoard::new();
        let peers: Vec<SendBudget> = (0..20).map(|_| board.take()).collect();
        for (i, p) in peers.iter().enumerate() {
            // Aligned: slot k of a line is at byte 8k of its own cache line.
            assert_eq!(p.offset() as *const AtomicU64 as usize % 64, 8 * (i % SLOTS));
            assert_eq!(line_of(p), line_of(&peers[i - i % SLOTS]));
        }
        assert_ne!(line_of(&peers[0]), line_of(&peers[8]));
        assert_ne!(line_of(&peers[8]), line_of(&peers[16]));
        // The holders, written when peers come and go, are not on it (nor are the
        // Arc's counts, which sit before the 64-byte-aligned offsets).
        let holders = peers[0].line.holders.as_ptr_range();
        let (start, end) = (holders.start as usize / 64, (holders.end as usize - 1) / 64);
        assert!(start != line_of(&peers[0]) && end != line_of(&peers[0]));
    }

    #[test]
    fn a_slot_is_reused_only_when_both_views_are_gone_and_starts_at_zero() {
        let board = BudgetBoard::new();
        let first = board.take();
        let mut thread = ThreadBudget::new(first.clone());
        let engine = EngineBudget::new(first);
        thread.took(10);
        thread.publish(50);
        assert_eq!(engine.check(60, 100), Ok(()));
        assert_eq!(engine.check(61, 100), Err(40));
        let held = engine.shared.offset() as *const AtomicU64;
        // The thread's view gone (the connection ended there first): the engine's
        // still reads its slot, and a new peer gets another.
        drop(thread);
        let other = board.take();
        assert_ne!(other.offset() as *const AtomicU64, held);
        assert_eq!(engine.check(61, 100), Err(40));
        // Both gone: the next peer reuses the slot, from zero.
        drop(engine);
        let reused = board.take();
        assert_eq!(reused.offset() as *const AtomicU64, held);
        assert_eq!(EngineBudget::new(reused).check(100, 100), Ok(()));
        drop(other);
    }

    #[test]
    fn handles_outlive_their_board_and_peers_never_share_a_slot() {
        let board = BudgetBoard::new();
        let kept: Vec<SendBudget> = (0..3).map(|_| board.take()).collect();
        drop(board);
        // Dropping after the host's board is gone gives nothing back and frees the line.
        let weak = Arc::downgrade(&kept[0].line);
        drop(kept);
        assert!(weak.upgrade().is_none());

        // Many threads take, clone and drop at once: no two live peers ever hold one
        // slot, and every slot comes back.
        let board = BudgetBoard::new();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let board = &board;
                s.spawn(move || {
                    for round in 0..500u64 {
                        let mine: Vec<SendBudget> = (0..5).map(|_| board.take()).collect();
                        let marks: Vec<u64> = (0..5).map(|i| (t << 32) | (round << 8) | i).collect();
                        for (b, &m) in mine.iter().zip(&marks) {
                            let copy = b.clone();
                            copy.offset().store(m, Ordering::Relaxed);
                        }
                        for (b, &m) in mine.iter().zip(&marks) {
                            assert_eq!(b.offset().load(Ordering::Relaxed), m, "a slot shared by two peers");
                        }
                    }
                });
            }
        });
        let free = board.free().len();
        assert!(free.is_multiple_of(SLOTS) && free <= 4 * 5 + SLOTS, "{free} free slots");
        let lines: std::collections::HashSet<usize> =
            board.free().iter().map(|(l, _)| Arc::as_ptr(l) as usize).collect();
        assert_eq!(lines.len() * SLOTS, free, "every slot of every line came back");
    }
}
