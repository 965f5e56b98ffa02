//! The sessions' reliable side channel: chat, settings, loadouts, sent between the
//! members of a session over the connections it already has, with no second host.
//!
//! It is one more reliable-ordered transport channel ([`MESSAGE_CHANNEL`]) beside the
//! ones the session's own protocol uses. The transport puts every unreliable message
//! (the inputs, the canonical steps) in a datagram before any reliable unit, and a
//! reliable channel orders only its own messages, so a large chat message never
//! delays an input, a step, or the relay's join handshake on channel 2.
//!
//! Both directions are bounded, so that a peer can only ever cost its own share:
//! * sending, a message waits for room: it is refused ([`FullQueue::MessageQueue`](crate::FullQueue::MessageQueue))
//!   while the peer's send queue (every channel counted) would go past
//!   [`MAX_QUEUED_MESSAGE_BYTES`], far below the host's own limit, so chat never takes
//!   the room the game's traffic needs;
//! * receiving, each member's messages the engine has not polled yet take at most
//!   [`MAX_UNREAD_MESSAGE_BYTES`] (each counted with [`UNREAD_OVERHEAD`] bytes more, so
//!   empty messages are not free); past it that member's messages are dropped and
//!   counted until the engine polls. Twice the sender's bound, so an honest sender
//!   fills it only if the engine stops polling events for a while. The room belongs
//!   to the member's place in the session (its player slot, its P2P peer's players,
//!   the relay server), not to its connection: a member that leaves and comes back
//!   on a new connection, or the next one to take its slot, shares the room with the
//!   messages still unread from before, so reconnecting never buys more memory.
//!   Each message keeps the connection it came on: one from a connection that has
//!   ended names that connection, never the one that took its place.
//!
//! Messages from a connection that is not a member (a spectator, a relay client that
//! has not said Hello, a stranger) and messages over [`MAX_MESSAGE_SIZE`] are dropped
//! and counted too. The payload buffers are recycled: no allocation per message in
//! steady state.

use std::collections::VecDeque;

use crate::Host;
use crate::host_error::HostError;
use tickwire_proto::PeerId;

/// The transport channel of session messages: the first after the default layout's
/// three (unreliable, sequenced, reliable). Reliable-ordered.
pub const MESSAGE_CHANNEL: u8 = 3;

/// The largest session message in bytes (16 KiB: a chat line, a settings blob, a
/// loadout; larger data belongs in the game state or a snapshot).
pub const MAX_MESSAGE_SIZE: usize = 16 << 10;

/// A session message is refused while the peer's send queue (every channel: unsent
/// messages, unacknowledged reliable ones, sends on their way) would hold more than
/// this many bytes with it: 64 KiB, four of the largest messages.
pub const MAX_QUEUED_MESSAGE_BYTES: usize = 64 << 10;

/// Bytes of one member's received messages that may wait for the engine to poll them
/// (each counted as its size plus [`UNREAD_OVERHEAD`]): 128 KiB.
pub const MAX_UNREAD_MESSAGE_BYTES: usize = 128 << 10;

/// What each waiting message counts on top of its size.
pub const UNREAD_OVERHEAD: usize = 64;

/// Free payload buffers kept for reuse.
const FREE_BUFFERS: usize = 64;

/// Where a P2P or relay server message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageTarget {
    /// The connection of this player (P2P: its peer, once even if several players
    /// share it; relay server: its client).
    Player(usize),
    /// Every connected member (P2P: every remote player's peer, once each; relay
    /// server: every player's client).
    All,
}

/// The side channel's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageStats {
    /// Messages accepted for sending (a broadcast counts once per connection).
    pub sent: u64,
    /// Messages received and queued for the engine.
    pub received: u64,
    /// Messages dropped because their sender already had
    /// [`MAX_UNREAD_MESSAGE_BYTES`] waiting for the engine.
    pub dropped_unread: u64,
    /// Messages dropped because their connection is not a member (a spectator, a
    /// relay client before its Hello, any other connection) or because they were over
    /// [`MAX_MESSAGE_SIZE`].
    pub dropped_refused: u64,
}

/// A message received and not yet polled.
struct Unread {
    /// The member's place, whose room it takes (see [`Inbox::accept`]).
    place: usize,
    data: Vec<u8>,
}

/// The receiving side: messages waiting for the engine, in arrival order, the one the
/// engine polled last, and the bytes each member has waiting.
#[derive(Default)]
pub(super) struct Inbox {
    queue: VecDeque<Unread>,
    /// Bytes waiting per member place (entries at 0 are removed, so this stays as
    /// small as the number of places with something waiting).
    waiting: Vec<(usize, usize)>,
    /// The payload of the message event polled last, until read or the next poll.
    current: Option<Vec<u8>>,
    free: Vec<Vec<u8>>,
    pub(super) stats: MessageStats,
}

fn cost(len: usize) -> usize {
    len + UNREAD_OVERHEAD
}

impl Inbox {
    /// Queues a message that arrived on a connection whose member holds `place` in
    /// the session (None: not a member). True if it was queued: the caller then
    /// raises its event, which names the connection.
    ///
    /// The room is counted per place rather than per connection because connection
    /// ids are never reused: counted per connection, each reconnection of the same
    /// member (or each newcomer in a freed slot) would get a fresh
    /// [`MAX_UNREAD_MESSAGE_BYTES`] while the old connection's messages still wait.
    pub(super) fn accept(&mut self, place: Option<usize>, data: &[u8]) -> bool {
        let Some(place) = place.filter(|_| data.len() <= MAX_MESSAGE_SIZE) else {
            self.stats.dropped_refused += 1;
            return false;
        };
        let i = match self.waiting.iter().position(|w| w.0 == place) {
            Some(i) => i,
            None => {
                self.waiting.push((place, 0));
                self.waiting.len() - 1
            }
        };
        if self.waiting[i].1 + cost(data.len()) > MAX_UNREAD_MESSAGE_BYTES {
            self.stats.dropped_unread += 1;
            return false;
        }
        self.waiting[i].1 += cost(data.len());
        let mut buf = self.free.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(data);
        self.queue.push_back(Unread { place, data: buf });
        self.stats.received += 1;
        true
    }

    /// The engine polled an event: the unread payload of the previous message event is
    /// released, and if this event is a message its payload becomes the current one
    /// (events and payloads are queued in the same order).
    pub(super) fn polled(&mut self, is_message: bool) {
        self.release();
        if !is_message {
            return;
        }
        let Some(m) = self.queue.pop_front() else { return };
        if let Some(i) = self.waiting.iter().position(|w| w.0 == m.place) {
            self.waiting[i].1 -= cost(m.data.len());
            if self.waiting[i].1 == 0 {
                self.waiting.swap_remove(i);
            }
        }
        self.current = Some(m.data);
    }

    /// The payload of the message event polled last, unless released.
    pub(super) fn current(&self) -> Option<&[u8]> {
        self.current.as_deref()
    }

    /// Releases the current payload (read, or no longer wanted).
    pub(super) fn release(&mut self) {
        if let Some(buf) = self.current.take()
            && self.free.len() < FREE_BUFFERS
        {
            self.free.push(buf);
        }
    }
}

/// Sends `data` to every connection of `peers` on [`MESSAGE_CHANNEL`], all or none:
/// every connection is checked first (size, liveness, room under
/// [`MAX_QUEUED_MESSAGE_BYTES`]), then the message is queued for each and the host
/// flushed. Only a full command queue to the network thread, found mid-way, can leave
/// the message with some of them.
pub(super) fn send_to<I>(host: &mut Host, peers: I, data: &[u8], stats: &mut MessageStats) -> Result<(), HostError>
where
    I: Iterator<Item = PeerId> + Clone,
{
    check_size(data)?;
    for peer in peers.clone() {
        host.check_send(peer, MESSAGE_CHANNEL, data.len(), Some(MAX_QUEUED_MESSAGE_BYTES))?;
    }
    for peer in peers {
        host.submit(peer, MESSAGE_CHANNEL, data)?;
        stats.sent += 1;
    }
    host.flush()
}

/// Refuses a message over [`MAX_MESSAGE_SIZE`] (checked first, whatever the target).
pub(super) fn check_size(data: &[u8]) -> Result<(), HostError> {
    if data.len() > MAX_MESSAGE_SIZE {
        return Err(HostError::TooLarge { size: data.len(), max: MAX_MESSAGE_SIZE });
    }
    Ok(())
}

/// Adds the message channel to a session host's channel layout: the default layout
/// (three channels) gets it appended; a layout that already has a channel 3 must make
/// it reliable.
pub(super) fn add_channel(channels: &mut Vec<tickwire_proto::ChannelKind>) -> Result<(), HostError> {
    use tickwire_proto::ChannelKind;
    if channels.len() == MESSAGE_CHANNEL as usize {
        channels.push(ChannelKind::Reliable);
    }
    match channels.get(MESSAGE_CHANNEL as usize) {
        Some(ChannelKind::Reliable) => Ok(()),
        _ => Err(HostError::Config(format!(
            "channel {MESSAGE_CHANNEL} carries the session's messages and must be reliable (channels: {channels:?})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_that_is_not_read_is_bounded_and_others_still_get_through() {
        let mut inbox = Inbox::default();
        let big = vec![7u8; 4096];
        let mut queued = 0;
        while inbox.accept(Some(1), &big) {
            queued += 1;
        }
        assert_eq!(queued, MAX_UNREAD_MESSAGE_BYTES / cost(big.len()));
        assert_eq!(inbox.stats.dropped_unread, 1);
        // Another member is not affected by peer 1's backlog.
        assert!(inbox.accept(Some(2), b"hi"));
        // A stranger and an oversized message are refused and counted.
        assert!(!inbox.accept(None, b"hi"));
        assert!(!inbox.accept(Some(2), &vec![0; MAX_MESSAGE_SIZE + 1]));
        assert_eq!(inbox.stats.dropped_refused, 2);
        // Polling frees peer 1's room, one message at a time.
        inbox.polled(true);
        assert_eq!(inbox.current(), Some(&big[..]));
        assert!(inbox.accept(Some(1), &big));
    }

    #[test]
    fn payloads_follow_their_events_and_are_released_by_the_next_poll() {
        let mut inbox = Inbox::default();
        assert!(inbox.accept(Some(1), b"one"));
        assert!(inbox.accept(Some(2), b""));
        inbox.polled(false);
        assert_eq!(inbox.current(), None);
        inbox.polled(true);
        assert_eq!(inbox.current(), Some(&b"one"[..]));
        inbox.polled(true);
        assert_eq!(inbox.current(), Some(&b""[..]));
        inbox.release();
        assert_eq!(inbox.current(), None);
        assert!(inbox.waiting.is_empty());
    }

    #[test]
    fn the_channel_is_appended_to_the_default_layout_and_checked_in_others() {
        use tickwire_proto::ChannelKind::*;
        let mut c = vec![Unreliable, Sequenced, Reliable];
        add_channel(&mut c).unwrap();
        assert_eq!(c, vec![Unreliable, Sequenced, Reliable, Reliable]);
        add_channel(&mut c).unwrap();
        assert_eq!(c.len(), 4);
        let mut bad = vec![Unreliable, Sequenced, Reliable, Unreliable];
        assert!(add_channel(&mut bad).is_err());
    }
}
