//! The progress watch of [`P2pSession`]: a peer that keeps talking (so the silence
//! timeout never fires) but whose inputs hold the confirmed tick back.

use super::{Event, P2pSession, PlayerKind};
use crate::transport::DisconnectReason;

impl P2pSession {
    /// While running, the confirmed tick must advance at no less than half the tick
    /// rate. Zero progress is not the only way to hold a match: a peer that lets one
    /// tick through every few seconds while talking kept it at 0.3 ticks/s for good
    /// under a zero-progress rule. `progress` is the last point (tick, time) from
    /// which the confirmed tick was on pace; once it is a disconnect timeout old, the
    /// peer whose inputs hold the confirmed tick back is named and dropped; if they
    /// are local, the engine is told and nobody is dropped.
    ///
    /// Half the rate leaves room for honest slowness: the clock's dilation (at most
    /// 10%), and a hitch or a loss burst the match catches up from (a 1 s hitch at
    /// 60 Hz is back on pace after 1 s of play). The session has no API for an engine
    /// to announce a long stall (a loading screen mid-match), so there is no grace
    /// beyond that: the timeout counts from the start of slow progress, as silence
    /// counts from the last message.
    pub(super) fn check_progress(&mut self) {
        let confirmed = self.confirmed_all();
        let (from, since) = self.progress;
        let elapsed = self.now.saturating_sub(since);
        // On pace: at least one tick per two tick durations since the anchor.
        let ticks = confirmed.saturating_sub(from) as u64;
        let on_pace = ticks * 2 * self.cfg.clock.tick_us as u64 >= elapsed;
        if !self.running || confirmed < from || (ticks > 0 && on_pace) {
            self.progress = (confirmed, self.now);
            return;
        }
        if self.cfg.disconnect_timeout_us == 0 || elapsed < self.cfg.disconnect_timeout_us {
            return;
        }
        self.progress = (confirmed, self.now);
        // Whose inputs hold the confirmed tick back now: the lowest queue; a local
        // player as far behind wins the tie (this side's own stall drops nobody).
        let blocker = (0..self.queues.len())
            .min_by_key(|&i| (self.queues[i].confirmed_until(), self.kinds[i] != PlayerKind::Local));
        let peer = match blocker.map(|i| self.kinds[i]) {
            Some(PlayerKind::Remote(id)) => id,
            _ => 0,
        };
        self.events.push_back(Event::NoProgress { tick: confirmed, peer });
        if peer != 0 {
            // The peer is told why (it may be an engine that stopped advancing).
            self.to_close.push((peer, Some(DisconnectReason::NoProgress)));
            self.peer_disconnected(peer, DisconnectReason::NoProgress);
        }
    }
}
