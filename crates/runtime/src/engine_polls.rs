//! The engine's own reads of the socket, as receive moderation sees them
//! ([`NetLoop::quiet_after`](crate::thread)): how long the network thread leaves the
//! socket to an engine that polls it.
//!
//! An engine that polls once a frame (in a burst: it polls until the queue is empty)
//! gets the socket for `moderation_us` after its last poll, then the thread watches it
//! again until the next frame. An engine that keeps polling (a busy poller, or a
//! loop of a thousand frames a second and more) reads everything itself; a thread
//! that still woke every `moderation_us` to look would take a core from it a thousand
//! times a second, and its turn would contend with the engine for the core's lock. On
//! loopback that cost a busy-polled round trip a quarter of its time (the transport
//! benchmark's row 1). So while the engine is seen polling all through the thread's
//! quiet time, the quiet time doubles at each turn, up to [`MAX_ENGINE_QUIET_US`]; the
//! first turn that finds the engine stopped sets it back to `moderation_us`.

use tickwire_proto::Micros;

/// The longest the thread leaves the socket to a steadily polling engine: after the
/// engine's last poll, what arrives waits at most this long for the thread (its
/// arrival time is the kernel's receive timestamp, so no timing is lost; only the
/// acknowledgement leaves that much later, once, when a busy engine stops).
pub(crate) const MAX_ENGINE_QUIET_US: Micros = 16_000;

/// What the thread knows of the engine's polls.
#[derive(Debug, Default)]
pub(crate) struct EnginePolls {
    /// The engine's first and last poll since the thread's last turn.
    first: Option<Micros>,
    last: Option<Micros>,
    /// When the thread's last turn ended (the window the polls are judged over).
    turned_at: Micros,
    /// The quiet time the last turn gave (0 before the engine ever polled).
    quiet: Micros,
}

impl EnginePolls {
    /// The engine read the socket itself at `now`.
    pub(crate) fn polled(&mut self, now: Micros) {
        self.first.get_or_insert(now);
        self.last = Some(now);
    }

    /// At the end of a thread's turn at `now`: how long from `now` the socket stays out
    /// of the thread's wait for the engine's sake (0: the engine is not polling).
    /// `moderation` is the host's `moderation_us` (0: off).
    pub(crate) fn quiet_after(&mut self, now: Micros, moderation: Micros) -> Micros {
        let first = self.first.take();
        let since_turn = std::mem::replace(&mut self.turned_at, now);
        let Some(last) = self.last.filter(|_| moderation > 0) else {
            return 0;
        };
        // Polling all through: once soon after the last turn and once just now. A
        // frame's burst is one moment, so it passes only when a turn came just before
        // it (the engine's wake, say), and then gets twice the moderation time once:
        // the turn at that time's end finds no poll and sets it back.
        let half = moderation / 2;
        let steady = first.is_some_and(|f| f.saturating_sub(since_turn) < half) && now.saturating_sub(last) < half;
        self.quiet = if steady {
            self.quiet.saturating_mul(2).clamp(moderation, MAX_ENGINE_QUIET_US.max(moderation))
        } else {
            moderation
        };
        last.saturating_add(self.quiet).saturating_sub(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: Micros = 1_000;

    /// A busy poller: polls every 10 µs from `from` to `to`.
    fn busy(e: &mut EnginePolls, from: Micros, to: Micros) {
        (from..=to).step_by(10).for_each(|t| e.polled(t));
    }

    /// `turns` turns of the thread from `now`, each at the end of the quiet time the
    /// last one gave, with the engine busy polling all through; returns the quiet
    /// times and the time of the last turn's end.
    fn busy_turns(e: &mut EnginePolls, mut now: Micros, turns: usize) -> (Vec<Micros>, Micros) {
        let mut seen = Vec::new();
        for _ in 0..turns {
            let quiet = e.quiet_after(now, M);
            seen.push(quiet);
            busy(e, now + 10, now + quiet);
            now += quiet;
        }
        (seen, now)
    }

    #[test]
    fn an_engine_that_never_polled_gets_no_quiet_time() {
        let mut e = EnginePolls::default();
        assert_eq!(e.quiet_after(5_000, M), 0);
        assert_eq!(e.quiet_after(6_000, M), 0);
    }

    #[test]
    fn a_frames_burst_of_polls_keeps_the_moderation_time() {
        // 60 Hz: each frame polls three times within 20 µs; the thread turns when the
        // quiet time after the frame's last poll ends.
        let mut e = EnginePolls::default();
        let mut turn = 0;
        for frame in 1..=20u64 {
            let at = frame * 16_667;
            e.polled(at);
            e.polled(at + 10);
            e.polled(at + 20);
            let quiet = e.quiet_after(turn.max(at + 20), M);
            assert_eq!(quiet, M, "frame {frame}");
            turn = at + 20 + quiet;
            assert_eq!(e.quiet_after(turn, M), 0, "frame {frame}: the thread watches the socket until the next");
        }
    }

    #[test]
    fn an_engine_that_keeps_polling_doubles_the_quiet_time_up_to_the_cap() {
        let mut e = EnginePolls::default();
        // The first turn finds polls that began long after the last turn (at 0).
        busy(&mut e, 10_000, 10_500);
        let (seen, _) = busy_turns(&mut e, 10_500, 8);
        assert_eq!(seen, [1_000, 2_000, 4_000, 8_000, 16_000, 16_000, 16_000, 16_000]);
    }

    #[test]
    fn an_engine_that_stops_gets_the_moderation_time_back_at_the_next_turn() {
        let mut e = EnginePolls::default();
        e.polled(100);
        let (_, mut now) = busy_turns(&mut e, 100, 6);
        assert_eq!(e.quiet, MAX_ENGINE_QUIET_US);
        // It stops 3 ms into the quiet time: the thread's turn at its end finds the
        // last poll 13 ms old and does not wait any longer.
        busy(&mut e, now + 10, now + 3_000);
        now += MAX_ENGINE_QUIET_US;
        assert_eq!(e.quiet_after(now, M), 0);
        assert_eq!(e.quiet, M);
        // A poll again: 1 ms, not 16.
        e.polled(now + 5_000);
        assert_eq!(e.quiet_after(now + 5_000, M), M);
    }

    #[test]
    fn a_turn_for_a_timer_in_the_middle_keeps_the_quiet_time_growing() {
        let mut e = EnginePolls::default();
        e.polled(0);
        let (_, now) = busy_turns(&mut e, 0, 3);
        let before = e.quiet;
        // A timer's turn 300 µs into the next quiet time: the engine polled all along.
        busy(&mut e, now + 10, now + 300);
        assert!(e.quiet_after(now + 300, M) > before);
    }

    #[test]
    fn moderation_off_means_never_quiet() {
        let mut e = EnginePolls::default();
        busy(&mut e, 0, 5_000);
        assert_eq!(e.quiet_after(5_000, 0), 0);
    }

    #[test]
    fn a_frame_right_after_a_turn_gets_twice_the_moderation_time_once() {
        let mut e = EnginePolls::default();
        // A frame's burst, the thread's turn at its end and at its quiet time's end.
        busy(&mut e, 10_000, 10_020);
        assert_eq!(e.quiet_after(10_020, M), M);
        assert_eq!(e.quiet_after(11_020, M), 0);
        // The next frame's burst 100 µs after a turn (a timer's), and a turn it woke
        // 20 µs later: it looks like polling all through, and gets twice the time.
        assert_eq!(e.quiet_after(26_600, M), 0);
        busy(&mut e, 26_700, 26_720);
        assert_eq!(e.quiet_after(26_740, M), 2 * M - 20);
        // At that time's end the engine has not polled again: watched again, and the
        // next frame's burst gets the moderation time.
        assert_eq!(e.quiet_after(28_720, M), 0);
        busy(&mut e, 43_400, 43_420);
        assert_eq!(e.quiet_after(44_420, M), 0);
        assert_eq!(e.quiet, M);
    }

    #[test]
    fn a_huge_moderation_does_not_overflow() {
        let mut e = EnginePolls::default();
        e.polled(0);
        assert_eq!(e.quiet_after(0, Micros::MAX / 2 + 1), Micros::MAX / 2 + 1);
        busy(&mut e, 10, 20);
        assert_eq!(e.quiet_after(20, Micros::MAX / 2 + 1), Micros::MAX / 2 + 1);
    }

    #[test]
    fn a_moderation_above_the_cap_is_kept() {
        let mut e = EnginePolls::default();
        e.polled(0);
        assert_eq!(e.quiet_after(0, 20_000), 20_000);
        busy(&mut e, 10, 20_000);
        assert_eq!(e.quiet_after(20_000, 20_000), 20_000);
    }
}
