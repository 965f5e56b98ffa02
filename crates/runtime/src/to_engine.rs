//! The way from the network thread to the engine: the bounded event channel, and how
//! much of it received messages may take.
//!
//! Nothing piles up beside the channel. The thread takes an event from the endpoint
//! only when the channel has room for it (and for the figures an accepted peer's
//! `Connected` brings along), so what the engine has not polled yet waits in the
//! endpoint: one queue per peer, bounded in bytes
//! (`PeerLimits::max_recv_queue_bytes`) and served round-robin. Received messages in
//! the channel are limited too, in number and in bytes ([`MAX_MESSAGES_IN_CHANNEL`],
//! [`MAX_BYTES_IN_CHANNEL`]), the engine counting what it takes out ([`Polled`]). So
//! the heap held for the engine is bounded whatever peers send and however long the
//! engine stalls, and a peer's next message reaches an engine that takes only a few
//! events a frame after at most that many others: one peer's flood never holds back
//! another peer's input for long.
//!
//! The thread's own events (the end of a connection attempt the endpoint refused) may
//! wait in a small queue of their own: there are only as many as the engine asked for.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_channel::TrySendError;

use super::counted::CountedSender;

use super::host_event::HostEvent;
use super::thread::{Shared, ThreadMsg};

/// Received messages in the channel at once: an engine that takes a few hundred events
/// a frame sees a newly received message within a few frames.
pub(crate) const MAX_MESSAGES_IN_CHANNEL: u64 = 1024;
/// Bytes of received messages in the channel at once (one message may go past it).
pub(crate) const MAX_BYTES_IN_CHANNEL: u64 = 1 << 20;
/// What a message costs besides its buffer: the event, its slot in the channel.
pub(crate) const MESSAGE_OVERHEAD: u64 = 64;

/// Bytes a received message holds while it waits: its buffer and the overhead.
fn message_cost(data: &Vec<u8>) -> u64 {
    data.capacity() as u64 + MESSAGE_OVERHEAD
}

/// What the engine has taken out of the channel; written by the engine side, read by
/// the thread.
#[derive(Debug, Default)]
pub(crate) struct Polled {
    messages: AtomicU64,
    bytes: AtomicU64,
}

impl Polled {
    /// The engine took this message's event off the channel.
    pub(crate) fn took(&self, data: &Vec<u8>) {
        self.messages.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(message_cost(data), Ordering::Relaxed);
    }
}

/// The thread's end of the channel.
pub(crate) struct ToEngine {
    tx: CountedSender<ThreadMsg>,
    capacity: usize,
    shared: Arc<Shared>,
    /// Received messages (and their bytes) put in the channel, ever.
    sent_messages: u64,
    sent_bytes: u64,
    /// The thread's own events that found the channel full.
    control: VecDeque<ThreadMsg>,
}

impl ToEngine {
    pub(crate) fn new(tx: CountedSender<ThreadMsg>, shared: Arc<Shared>) -> Self {
        let capacity = tx.capacity();
        ToEngine { tx, capacity, shared, sent_messages: 0, sent_bytes: 0, control: VecDeque::new() }
    }

    /// Whether everything sent has been taken off the channel and nothing of the
    /// thread's own waits: an event handed to the engine some other way now keeps its
    /// order. (Only the core's holder sends, so this stays true while it holds it.)
    pub(crate) fn is_drained(&self) -> bool {
        self.control.is_empty() && self.tx.is_empty()
    }

    /// Room for `n` more events of any kind.
    pub(crate) fn room_for(&self, n: usize) -> bool {
        self.control.is_empty() && self.tx.len().saturating_add(n) <= self.capacity
    }

    /// Room for the next event from the endpoint (with up to two more it brings along),
    /// which may be a received message.
    pub(crate) fn room_for_event(&self) -> bool {
        let polled = &self.shared.polled;
        let messages = self.sent_messages.wrapping_sub(polled.messages.load(Ordering::Relaxed));
        let bytes = self.sent_bytes.wrapping_sub(polled.bytes.load(Ordering::Relaxed));
        self.room_for(3) && messages < MAX_MESSAGES_IN_CHANNEL && bytes < MAX_BYTES_IN_CHANNEL
    }

    /// Puts `msg` in the channel; the caller checked the room.
    pub(crate) fn send(&mut self, msg: ThreadMsg) {
        if let ThreadMsg::Event(HostEvent::Message { data, .. }) = &msg {
            self.sent_messages += 1;
            self.sent_bytes += message_cost(data);
        }
        match self.tx.try_send(msg) {
            Ok(()) => {}
            // Not after a room check (the thread is the only sender); kept in order.
            Err(TrySendError::Full(msg)) => self.control.push_back(msg),
            // The engine side is gone (it is shutting us down): nothing to deliver to.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// The thread's own event: now if there is room, else once there is.
    pub(crate) fn control(&mut self, msg: ThreadMsg) {
        if self.room_for(1) {
            self.send(msg);
        } else {
            self.control.push_back(msg);
        }
    }

    /// Moves the thread's own waiting events into the channel as room allows.
    pub(crate) fn retry_control(&mut self) {
        while !self.control.is_empty() && self.tx.len() < self.capacity {
            let msg = self.control.pop_front().expect("not empty");
            match self.tx.try_send(msg) {
                Ok(()) => {}
                Err(TrySendError::Full(msg)) => {
                    self.control.push_front(msg);
                    return;
                }
                Err(TrySendError::Disconnected(_)) => self.control.clear(),
            }
        }
    }

    /// The thread's own events waiting for room.
    pub(crate) fn waiting(&self) -> usize {
        self.control.len()
    }
}
