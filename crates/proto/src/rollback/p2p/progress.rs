//! The progress watch of [`P2pSession`]: a peer that keeps talking (so the silence
//! timeout never fires) but whose inputs hold the confirmed tick back.
//!
//! Two rules, both over `P` = the config's `progress_timeout_us` (never longer than
//! the disconnect timeout, and off with it):
//! - **a stall**: the confirmed tick has not moved for `P`;
//! - **a crawl**: since the last point from which it was on pace, it has advanced
//!   at under half the tick rate, for `2P`.
//!
//! Up to the moment it ends, an honest engine's hitch and a liar's stall look the
//! same; the difference is what follows. So `P` is the longest unannounced hitch a
//! peer is allowed, and it bounds what a liar gets: a trickler
//! (one tick every 4.5 s) is a stall, dropped after `P`; a liar that lets a tick
//! through just under every `P` is a crawl, dropped after `2P`. The crawl's `2P` costs
//! honest hitches nothing: a peer back from a hitch of `h < P` runs at the full rate
//! and is on pace again within `2h < 2P`.
//!
//! A blocker that falls silent is left to the silence timer. When it is heard again
//! the watch starts over, once per stall: an honest link back from an outage needs a
//! round trip for the inputs to flow, and counting the outage against it dropped a
//! peer back from 1.5 s of silence as NO_PROGRESS.
//!
//! Longer honest stalls (a loading screen mid-match) are announced by the engine
//! ([`P2pSession::set_loading`]): the flag rides on every message, and while it is
//! up neither rule counts against the peer, from a grace of `loading_grace_us` per
//! peer for the whole match (so a liar announcing loading for ever is dropped once it
//! is spent).

use super::{Event, P2pSession, PlayerKind};
use crate::clock::Micros;
use crate::engine::Tick;
use crate::transport::DisconnectReason;

/// A peer counts as announcing a stall for this long after its last message that
/// said so: one message reordered or lost must not end its grace.
pub(super) const LOADING_HOLD_US: Micros = 250_000;
/// A blocker not heard for this long is left to the silence timeout (it is not
/// "talking"; a loss burst must not turn a TIMEOUT into NO_PROGRESS).
const TALKING_US: Micros = 500_000;

/// What the watch remembers.
#[derive(Debug, Clone, Copy)]
pub(super) struct ProgressWatch {
    /// The last point (tick, time) from which the confirmed tick was on pace.
    anchor: (Tick, Micros),
    /// The confirmed tick and when it last moved.
    moved: (Tick, Micros),
    /// When the watch last ran (grace is charged by the time between runs).
    checked_at: Micros,
    /// The player whose inputs held the confirmed tick back when the watch last
    /// looked.
    blocker: Option<usize>,
    /// The blocker fell silent during this stall (the silence timer's case), and
    /// whether the watch already started over once when it was heard again.
    silent_seen: bool,
    resumed: bool,
    /// This side's engine announced a stall.
    pub(super) loading: bool,
}

impl ProgressWatch {
    pub(super) fn new(now: Micros) -> Self {
        ProgressWatch {
            anchor: (0, now),
            moved: (0, now),
            checked_at: now,
            blocker: None,
            silent_seen: false,
            resumed: false,
            loading: false,
        }
    }

    /// Starts over from `confirmed` at `now`: nothing before counts.
    pub(super) fn restart(&mut self, confirmed: Tick, now: Micros) {
        self.anchor = (confirmed, now);
        self.moved = (confirmed, now);
    }
}

impl P2pSession {
    /// Announces (or ends) a stall of this side's engine, such as a loading screen
    /// mid-match. Peers then give this side their loading grace (their
    /// `loading_grace_us`, in total over the match) before its held-back inputs count
    /// as no progress. The flag goes with every message from now on.
    pub fn set_loading(&mut self, loading: bool) {
        self.watch.loading = loading;
    }

    /// Whether this side announces a stall (see [`P2pSession::set_loading`]).
    pub fn is_loading(&self) -> bool {
        self.watch.loading
    }

    /// Whether this side's own watch is about to drop `player`'s peer too: `player`
    /// holds the match here, and the watch has counted all of its time against it but
    /// `skew_us` (how much later than a peer this side can see the same stall: the
    /// inputs reach the peers at different times). A peer that dropped it as
    /// NO_PROGRESS a moment earlier is then followed, not refused and named. Without
    /// the skew a liar could get a player with an honest hitch removed by proposing it
    /// early; with it, only a hitch within `skew_us` of the progress timeout.
    pub(super) fn about_to_drop(&self, player: usize, skew_us: Micros) -> bool {
        let p = self.progress_timeout();
        p != 0
            && self.watch.blocker == Some(player)
            && self.confirmed_all() == self.watch.moved.0
            && self.counted_out(p, skew_us)
    }

    /// Whether the watch has counted a stall of `p` or a crawl of `2p` (less `skew_us`).
    fn counted_out(&self, p: Micros, skew_us: Micros) -> bool {
        let w = &self.watch;
        let (stalled, crawled) = (self.now.saturating_sub(w.moved.1), self.now.saturating_sub(w.anchor.1));
        stalled + skew_us >= p || crawled + skew_us >= 2 * p
    }

    /// `P`: the stall rule's time, 0 when the watch is off.
    fn progress_timeout(&self) -> Micros {
        let drop = self.cfg.disconnect_timeout_us;
        match self.cfg.progress_timeout_us {
            0 => drop,
            p => p.min(drop),
        }
    }

    /// Runs the watch (see the module's comment). A remote blocker is named and
    /// dropped with NO_PROGRESS; a local one is only reported to the engine (this
    /// side's own stall drops nobody).
    pub(super) fn check_progress(&mut self) {
        let now = self.now;
        let since_check = now.saturating_sub(self.watch.checked_at);
        self.watch.checked_at = now;
        let confirmed = self.confirmed_all();
        let running = self.is_running();
        let w = &mut self.watch;
        if !running || confirmed < w.moved.0 {
            w.restart(confirmed, now);
            return;
        }
        if confirmed > w.moved.0 {
            w.moved = (confirmed, now);
            w.resumed = false;
        }
        // On pace: at least one tick per two tick durations since the anchor.
        let (from, since) = w.anchor;
        let ticks = confirmed.saturating_sub(from) as u64;
        if ticks > 0 && ticks * 2 * self.cfg.game.tick_us() as u64 >= now.saturating_sub(since) {
            w.anchor = (confirmed, now);
            return;
        }
        let p = self.progress_timeout();
        if p == 0 {
            return;
        }
        // Whose inputs hold the confirmed tick back now: the lowest queue; a local
        // player as far behind wins the tie (this side's own stall drops nobody).
        let blocker = (0..self.players.len())
            .min_by_key(|&i| (self.players[i].queue.confirmed_until(), !self.players[i].is_local()));
        let last = std::mem::replace(&mut self.watch.blocker, blocker);
        if last.is_some_and(|b| self.players[b].queue.disconnect_tick().is_some()) && last != blocker {
            // The player that held the match was dropped, and another holds it now:
            // the time so far was not this one's doing (it may well have stalled
            // waiting for the dropped one, as everyone did). Without this, a peer
            // that waited for a vanished player was dropped as soon as it was. Only a
            // drop starts the watch over: were any change of blocker to, a peer with
            // two players could let their inputs through in turn and never be
            // watched for long.
            self.watch.restart(confirmed, now);
            return;
        }
        let peer = match blocker.map(|i| self.players[i].kind()) {
            Some(PlayerKind::Remote(id)) => id,
            _ => 0,
        };
        let mut remote = self.peers.iter_mut().find(|x| x.id == peer);
        if remote.as_ref().is_some_and(|r| now.saturating_sub(r.last_recv) > TALKING_US) {
            // Silent: the silence timer's case (a link that died is a TIMEOUT, not
            // NO_PROGRESS).
            self.watch.silent_seen = true;
            return;
        }
        if std::mem::take(&mut self.watch.silent_seen) && !std::mem::replace(&mut self.watch.resumed, true) {
            // Heard again after a silence: its inputs need a round trip to arrive,
            // so the watch starts over, once per stall (a peer that says one word
            // every few seconds and nothing more gets it once, not every time).
            self.watch.restart(confirmed, now);
            return;
        }
        if let Some(r) = remote.as_deref_mut().filter(|r| now < r.loading_until && r.loading_left_us > 0) {
            // An announced stall: the time it holds the match is charged to the
            // peer's grace, and the watch starts over (none of it counts after).
            r.loading_left_us = r.loading_left_us.saturating_sub(since_check);
            self.watch.restart(confirmed, now);
            return;
        }
        let local = remote.is_none();
        if !self.counted_out(p, 0) {
            return;
        }
        if local {
            self.watch.restart(confirmed, now);
            if !self.watch.loading {
                self.events.push_back(Event::NoProgress { tick: confirmed, peer: 0 });
            }
            return;
        }
        self.watch.restart(confirmed, now);
        self.events.push_back(Event::NoProgress { tick: confirmed, peer });
        // The peer is told why (it may be an engine that stopped advancing).
        self.to_close.push((peer, Some(DisconnectReason::NoProgress)));
        self.peer_disconnected(peer, DisconnectReason::NoProgress);
    }
}
