//! The engine's own reads of the socket, as receive moderation sees them
//! ([`NetLoop::quiet_after`](crate::thread)): how long the network thread leaves the
//! socket to an engine that polls it.
//!
//! An engine that polls once a frame (in a burst: it polls until the queue is empty)
//! gets the socket for `moderation_us` after its last poll. Once its frames come at a
//! steady rate (a server's tick loop, a game's frame loop: [`STEADY_FRAMES`] frames in a
//! row, each at most [`MAX_FRAME_US`] apart), it keeps the socket from frame to frame
//! ([`Cadence`]; one odd frame among steady ones does not end that, two in a row
//! do), and the thread checks only every [`STALL_CHECK_FRAMES`] frames (and a little
//! after) that the frames still come: the datagrams of a whole frame wait in the
//! socket with their kernel receive timestamps and the engine's poll reads them in
//! batches, so a message crosses no thread and the network thread does not wake for
//! them; a socket without traffic in the last frame or two is not left to it (the
//! thread sleeps on the socket rather than wake every frame to check for a stall).
//! The thread still runs the timers meanwhile (without reading the socket), and
//! takes the socket back at a check that finds the frames stopped (a stalled engine).
//! On Linux a host that accepts many clients has that check as a timer each frame
//! pushes ([`stall_check_at`](EnginePolls::stall_check_at), `stall_timer.rs`), so the
//! thread wakes for it only when the frames stop.
//! An engine whose frames until the check would not fit in the socket's receive buffer
//! is not left them.
//!
//! An engine that keeps polling (a busy poller, or a
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

/// The longest frame the thread leaves the socket to the engine for: a loop slower
/// than 20 frames a second is not one whose reads its peers should wait for.
pub(crate) const MAX_FRAME_US: Micros = 50_000;
/// Frames in a row, each about as long as the ones before, after which the socket is
/// left to the engine until its next frame.
pub(crate) const STEADY_FRAMES: u32 = 3;
/// A steady engine's frames the thread lets pass between its stall checks, when the
/// socket's buffer holds that many frames' datagrams and one more: it wakes every
/// fourth frame, not every frame (each wake cost a 64-client server about 6% of its
/// CPU) nor every other (about 40 µs of the thread's time a wake on the 2-core VM,
/// 14-24 µs a tick of row 5b's server, against 9-10 µs at every fourth:
/// docs/benchmarks.md). An engine that stalls has its socket taken back at most four
/// frames and a grace after its last read (71 ms at 60 Hz): a stall check is for an
/// engine that stopped, a level load or a hung frame, and the datagrams meanwhile keep
/// their kernel arrival times; only the acknowledgements of that time leave later. A
/// socket that holds three frames' but not five is checked every other frame, one
/// that holds two frames' every frame.
pub(crate) const STALL_CHECK_FRAMES: u64 = 4;
/// The steady engine's stall checks (a turn when its next frame is late) fall on this
/// grid of the clock: a process of many hosts whose frames all come from one loop
/// (a client per match, a server of many matches) then pays one wake of the network
/// thread for many of them, not one each, for at most this much later a check.
pub(crate) const STALL_CHECK_GRID_US: Micros = 2_000;
/// Polls closer together than this are one frame's burst.
const BURST_GAP_US: Micros = 500;
/// What the kernel charges a socket's receive buffer for a datagram beyond its payload
/// (Linux's `truesize`: the buffer head and the allocation's slack; about 700 bytes for
/// a small datagram on x86-64), rounded up.
pub(crate) const DATAGRAM_OVERHEAD: usize = 1_024;

/// The engine's frames as its polls show them: when the latest burst of polls began,
/// the frames' length (the latest one's until they are steady, then their mean), and
/// how many frames in a row kept within a quarter of it.
#[derive(Debug, Default)]
struct Cadence {
    burst_at: Option<Micros>,
    last_poll: Micros,
    period: Micros,
    steady: u32,
    /// While the latest burst was one frame off a steady cadence: the start of the
    /// burst before it (the next frame may come on its deadline from there).
    off_from: Option<Micros>,
    /// What the engine's reads of the current burst took from the socket (payload and
    /// [`DATAGRAM_OVERHEAD`] per datagram), and of the one before: a frame's load.
    load: usize,
    last_load: usize,
    /// Datagrams read from the socket by anyone (the engine or the thread) since the
    /// current burst, and in the frame before: a socket without traffic is not left to
    /// the engine (there is nothing to leave, and the thread would wake every frame
    /// for the stall check; it sleeps on the socket instead).
    traffic: usize,
    last_traffic: usize,
}

impl Cadence {
    fn polled(&mut self, now: Micros) {
        let new_burst = self.burst_at.is_none() || now.saturating_sub(self.last_poll) > BURST_GAP_US;
        self.last_poll = now;
        if !new_burst {
            return;
        }
        if let Some(before) = self.burst_at {
            let period = now.saturating_sub(before);
            let tolerance = frame_tolerance(self.period);
            let steady = self.steady >= STEADY_FRAMES;
            // Judged against the frames' mean length once they are steady, not against
            // the frame before: a loop that sleeps to absolute deadlines answers a late
            // frame with a short one (it catches up), and the two differ by twice the
            // lateness while each is off the mean by only that much. Until then the
            // period is the latest frame's, so that a new cadence is learnt at once.
            let on_cadence = period.abs_diff(self.period) <= tolerance;
            // After a frame off the cadence, the frame that catches up comes on its
            // deadline: two frames after the burst before the odd one.
            let caught_up = self
                .off_from
                .is_some_and(|from| now.saturating_sub(from).abs_diff(self.period.saturating_mul(2)) <= tolerance);
            if on_cadence || caught_up {
                if !steady {
                    self.period = period;
                } else if self.off_from.is_none() {
                    self.period = mean_step(self.period, period);
                }
                self.steady = self.steady.saturating_add(1);
                self.off_from = None;
            } else if steady && self.off_from.is_none() {
                // One frame off a steady cadence (a frame late by more than the
                // tolerance, a second burst within a frame) keeps it, and the socket
                // stays the engine's: when every late frame broke the cadence, the
                // thread read the socket for the next three frames, and on a busy
                // 2-core machine that was 23-55 µs a tick of a 64-client server
                // (docs/benchmarks.md). A stall still loses the socket at its check.
                self.off_from = Some(before);
            } else {
                self.steady = 0;
                self.period = period;
                self.off_from = None;
            }
        }
        self.burst_at = Some(now);
        self.last_load = std::mem::take(&mut self.load);
        self.last_traffic = std::mem::take(&mut self.traffic);
    }

    /// Until when the socket stays the engine's, when its frames are steady: frames
    /// after the latest burst (as many as the socket's buffer, `capacity` bytes, holds
    /// with one frame's datagrams to spare: [`STALL_CHECK_FRAMES`], two, one, or none),
    /// and a grace of [`frame_tolerance`] or `moderation`, whichever is longer. Its
    /// next frames read the socket meanwhile; if they do not come, the thread takes
    /// it back then.
    fn next_frame_by(&self, moderation: Micros, capacity: usize) -> Option<Micros> {
        let at = self.burst_at?;
        let steady = self.steady >= STEADY_FRAMES && self.period <= MAX_FRAME_US;
        let load = self.load.max(self.last_load);
        let fit = |frames: u64| load.saturating_mul(frames as usize + 1) <= capacity;
        let frames = [STALL_CHECK_FRAMES, 2, 1].into_iter().find(|&f| fit(f))?;
        let traffic = self.traffic.max(self.last_traffic) > 0;
        (steady && traffic).then(|| {
            at.saturating_add(self.period.saturating_mul(frames))
                .saturating_add(frame_tolerance(self.period).max(moderation))
        })
    }
}

/// The frames' mean length moved an eighth of the way to a new frame's `period`.
fn mean_step(mean: Micros, period: Micros) -> Micros {
    if period >= mean { mean + (period - mean) / 8 } else { mean - (mean - period) / 8 }
}

/// How far a steady engine's frame may move from its period: a quarter of a frame (or a
/// burst's gap, whichever is longer). Both what still counts as steady and the grace
/// the thread gives a frame before its stall check takes the socket back.
///
/// A frame loop's sleep overshoots by scheduling noise, and a vsync'd one drifts by a
/// fraction of a frame. More than that, a loop that serves many hosts (a client per
/// match, a server of many matches) reaches each host's poll at an offset into its frame
/// that moves with the work before it, and on a loaded machine that is milliseconds:
/// with 512 client hosts in one 60 Hz loop on 2 cores, an eighth of a frame (2 ms) found
/// their frames unsteady so often that the network thread made 30% of the reads of their
/// sockets itself, with its wakes, its hand-overs and an `epoll_ctl` for every host that
/// lost or won back its socket (docs/benchmarks.md, issue 35). A loop whose
/// frames alternate by more than a quarter is still not steady.
fn frame_tolerance(period: Micros) -> Micros {
    (period / 4).max(BURST_GAP_US)
}

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
    cadence: Cadence,
}

impl EnginePolls {
    /// The engine read the socket itself at `now`.
    pub(crate) fn polled(&mut self, now: Micros) {
        self.first.get_or_insert(now);
        self.last = Some(now);
        self.cadence.polled(now);
    }

    /// Whether `at` (a time at or before the latest poll) falls in the engine's current
    /// burst of polls: its frame's, when its frames are steady.
    pub(crate) fn in_current_burst(&self, at: Micros) -> bool {
        self.cadence.burst_at.is_some_and(|b| at >= b)
    }

    /// The engine's read at its latest poll took `bytes` from the socket in `datagrams`.
    pub(crate) fn read(&mut self, datagrams: usize, bytes: usize) {
        let load = bytes.saturating_add(datagrams.saturating_mul(DATAGRAM_OVERHEAD));
        self.cadence.load = self.cadence.load.saturating_add(load);
        self.thread_read(datagrams);
    }

    /// A read of the socket (the engine's or the thread's) took `datagrams`.
    pub(crate) fn thread_read(&mut self, datagrams: usize) {
        self.cadence.traffic = self.cadence.traffic.saturating_add(datagrams);
    }

    /// Whether the socket is the engine's at `now`: its frames are steady and its next
    /// one is not late. The thread's turns then leave the datagrams to it.
    /// `capacity`: the socket's receive buffer in bytes.
    pub(crate) fn owns_socket(&self, now: Micros, moderation: Micros, capacity: usize) -> bool {
        moderation > 0 && self.cadence.next_frame_by(moderation, capacity).is_some_and(|by| now < by)
    }

    /// When the thread should check that a steady engine's frames still come (its
    /// next frame and a grace, see [`Cadence::next_frame_by`]); None while the socket
    /// is not left to it from frame to frame. `moderation`: as for
    /// [`quiet_after`](Self::quiet_after).
    pub(crate) fn stall_check_at(&self, moderation: Micros, capacity: usize) -> Option<Micros> {
        self.cadence.next_frame_by(moderation, capacity).filter(|_| moderation > 0)
    }

    /// At the end of a thread's turn at `now`: how long from `now` the socket stays out
    /// of the thread's wait for the engine's sake (0: the engine is not polling).
    /// `moderation` is the host's `moderation_us` (0: off).
    pub(crate) fn quiet_after(&mut self, now: Micros, moderation: Micros, capacity: usize) -> Micros {
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
        let polling = last.saturating_add(self.quiet).saturating_sub(now);
        let frame =
            self.cadence.next_frame_by(moderation, capacity).filter(|&by| now < by).map_or(0, |by| {
                by.div_ceil(STALL_CHECK_GRID_US).saturating_mul(STALL_CHECK_GRID_US).saturating_sub(now)
            });
        polling.max(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: Micros = 1_000;

    impl EnginePolls {
        /// `quiet_after` with a socket that never fills.
        fn quiet_after_(&mut self, now: Micros, moderation: Micros) -> Micros {
            self.quiet_after(now, moderation, usize::MAX)
        }
    }

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
            let quiet = e.quiet_after_(now, M);
            seen.push(quiet);
            busy(e, now + 10, now + quiet);
            now += quiet;
        }
        (seen, now)
    }

    #[test]
    fn an_engine_that_never_polled_gets_no_quiet_time() {
        let mut e = EnginePolls::default();
        assert_eq!(e.quiet_after_(5_000, M), 0);
        assert_eq!(e.quiet_after_(6_000, M), 0);
    }

    #[test]
    fn a_frames_burst_of_polls_gets_the_moderation_time_until_its_frames_are_steady() {
        // 60 Hz, but every other frame late by 3 ms: never steady. Each frame polls
        // three times within 20 µs; the thread turns when the quiet time after the
        // frame's last poll ends.
        let mut e = EnginePolls::default();
        let mut turn = 0;
        for frame in 1..=20u64 {
            let at = frame * 16_667 + (frame % 2) * 3_000;
            e.polled(at);
            e.polled(at + 10);
            e.polled(at + 20);
            let quiet = e.quiet_after_(turn.max(at + 20), M);
            assert_eq!(quiet, M, "frame {frame}");
            turn = at + 20 + quiet;
            assert_eq!(e.quiet_after_(turn, M), 0, "frame {frame}: the thread watches the socket until the next");
            assert!(!e.owns_socket(turn, M, usize::MAX));
        }
    }

    /// Polls a burst of three at `at`, each read taking `load` datagrams of 100 bytes.
    fn frame(e: &mut EnginePolls, at: Micros, datagrams: usize) {
        for t in [at, at + 10, at + 20] {
            e.polled(t);
            e.read(datagrams / 3, datagrams / 3 * 100);
        }
    }

    const TICK: Micros = 16_667;

    /// Frames at the given times (each a burst of three polls, and a second poll that
    /// many µs after its burst where given): once the cadence is learnt, each one leaves
    /// the socket to the engine past its next frame.
    fn keeps_the_socket(name: &str, frames: impl Iterator<Item = (Micros, Option<Micros>)>) {
        let mut e = EnginePolls::default();
        for (f, (at, again)) in frames.enumerate() {
            frame(&mut e, at, 3);
            let mut end = at + 20;
            if let Some(again) = again {
                e.polled(at + again);
                e.read(1, 100);
                end = at + again;
            }
            let quiet = e.quiet_after_(end, M);
            if f > STEADY_FRAMES as usize + 2 {
                assert!(quiet > TICK, "{name}, frame {f}: the socket is left to the engine past its next frame");
            }
        }
    }

    #[test]
    fn steady_frames_get_the_socket_until_the_next_frame_and_a_late_one_loses_it() {
        let mut e = EnginePolls::default();
        let grace = frame_tolerance(TICK);
        // Frames 0-4 make the cadence (each as long as the one before from the third).
        for f in 0..=(STEADY_FRAMES as u64 + 1) {
            let at = f * TICK + u64::from(f == 1) * 100; // a little jitter at first
            frame(&mut e, at, 60);
            let quiet = e.quiet_after_(at + 20, M);
            if f <= STEADY_FRAMES as u64 {
                assert_eq!(quiet, M, "frame {f}: not steady yet");
            } else {
                let by = at + STALL_CHECK_FRAMES * TICK + grace;
                assert_eq!(
                    quiet,
                    by.next_multiple_of(STALL_CHECK_GRID_US) - (at + 20),
                    "frame {f}: until the stall check's frame and a grace, on the grid"
                );
                let check = at + STALL_CHECK_FRAMES * TICK;
                assert!(e.owns_socket(at + TICK + grace, M, usize::MAX), "the next frame reads it");
                assert!(e.owns_socket(check, M, usize::MAX), "the check's frame may run a little late");
                assert!(!e.owns_socket(check + grace, M, usize::MAX));
            }
        }
        // The engine stalls: the thread's turn at the stall check, STALL_CHECK_FRAMES
        // frames and a grace after the last read, finds no new frame and takes the
        // socket back.
        let last = (STEADY_FRAMES as u64 + 1) * TICK;
        let check = last + STALL_CHECK_FRAMES * TICK + grace;
        assert_eq!(e.quiet_after_(check, M), 0);
        assert!(!e.owns_socket(check, M, usize::MAX));
        // It comes back a frame after the check: one frame off a steady cadence, which
        // keeps it (`one_frame_off_a_steady_cadence_keeps_the_socket`), so the socket
        // is the engine's again until its next check. A second frame off the cadence
        // in a row starts it again.
        let back = last + (STALL_CHECK_FRAMES + 1) * TICK;
        frame(&mut e, back, 60);
        let by = back + STALL_CHECK_FRAMES * TICK + grace;
        assert_eq!(e.quiet_after_(back + 20, M), by.next_multiple_of(STALL_CHECK_GRID_US) - (back + 20));
        assert!(e.owns_socket(back + TICK, M, usize::MAX));
        let again = back + 3 * TICK;
        frame(&mut e, again, 60);
        assert_eq!(e.quiet_after_(again + 20, M), M);
        assert!(!e.owns_socket(again + 100, M, usize::MAX));
    }

    /// One host of a loop that serves many: its poll comes at an offset into each frame
    /// that moves with the work before it (here anywhere in the first 2 ms). Its frames
    /// still count as steady, and the socket stays its own through every frame.
    #[test]
    fn a_host_reached_late_in_a_busy_loop_keeps_its_socket() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        keeps_the_socket(
            "a host late in its loop",
            (0..200u64).map(|f| {
                // xorshift: offsets that jump about, the worst for a period's comparison.
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (f * TICK + x % 2_001, None)
            }),
        );
    }

    /// A loop that sleeps to absolute deadlines: every tenth frame runs 3 ms late, and
    /// the frame after it comes on its deadline, 3 ms short. Each is off the period by
    /// less than a quarter of a frame, so the loop stays steady and keeps its socket
    /// through both. (Judged frame against frame, the late one and the short one
    /// differ by 6 ms: the cadence broke at every late frame, and the thread read the
    /// socket for the next three frames, until the cadence was learnt again.)
    #[test]
    fn a_late_frame_and_the_short_one_that_catches_up_keep_the_socket() {
        keeps_the_socket("late 3 ms", (0..200u64).map(|f| (f * TICK + u64::from(f % 10 == 9) * 3_000, None)));
    }

    /// What row 5b's server did on the 2-core VM (its polls logged for a run, 86 breaks
    /// of its cadence in 25 s): a steady 60 Hz loop whose frame now and then came 4-8 ms
    /// late, then caught up on its deadline; or whose frame polled a second time 0.6-1.5
    /// ms after its burst. Each one broke the cadence two or three times in a row (the
    /// odd frame, then the frames judged against it), and the thread read the socket
    /// until three steady frames had come again. One frame off a steady cadence now
    /// keeps it: the socket stays the engine's through every frame here.
    #[test]
    fn one_frame_off_a_steady_cadence_keeps_the_socket() {
        // (what each frame does: late by `late` µs, and a second poll `again` µs after
        // its burst)
        type Pattern = fn(u64) -> (Micros, Option<Micros>);
        let patterns: [(&str, Pattern); 4] = [
            ("late 6 ms, catching up on its deadline", |f| (u64::from(f % 10 == 9) * 6_000, None)),
            ("late 8 ms, catching up on its deadline", |f| (u64::from(f % 7 == 6) * 8_000, None)),
            ("a second poll 700 µs into the frame", |f| (0, (f % 10 == 9).then_some(700))),
            ("a second poll 1.5 ms into the frame", |f| (0, (f % 5 == 4).then_some(1_500))),
        ];
        for (name, pattern) in patterns {
            keeps_the_socket(
                name,
                (0..200u64).map(|f| {
                    let (late, again) = pattern(f);
                    (f * TICK + late, again)
                }),
            );
        }
        // A loop that sleeps a frame from its last (not to deadlines): a late frame
        // moves every frame after it, and they are on the cadence from there.
        let mut at = 0;
        keeps_the_socket(
            "a relative loop",
            (0..200u64).map(|f| {
                at += TICK + u64::from(f % 10 == 9) * 6_000;
                (at, None)
            }),
        );
    }

    /// Two frames in a row off the cadence start it again: a loop that changed its rate
    /// (60 Hz to 30 Hz) is learnt anew, and is steady again after STEADY_FRAMES frames.
    #[test]
    fn two_frames_off_the_cadence_in_a_row_start_it_again() {
        let mut e = EnginePolls::default();
        let mut at = 0;
        for _ in 0..10 {
            at += TICK;
            frame(&mut e, at, 3);
            e.quiet_after_(at + 20, M);
        }
        at += 2 * TICK;
        frame(&mut e, at, 3);
        assert!(e.quiet_after_(at + 20, M) > TICK, "one frame off: kept");
        at += 2 * TICK;
        frame(&mut e, at, 3);
        assert_eq!(e.quiet_after_(at + 20, M), M, "the second in a row: the cadence starts again");
        for f in 0..=STEADY_FRAMES {
            at += 2 * TICK;
            frame(&mut e, at, 3);
            let quiet = e.quiet_after_(at + 20, M);
            if f < STEADY_FRAMES - 1 {
                assert_eq!(quiet, M, "30 Hz, frame {f}: not steady yet");
            } else {
                assert!(quiet > 2 * TICK, "30 Hz, frame {f}: steady at the new rate");
            }
        }
    }

    /// At 60 Hz the thread wakes for the stall check every STALL_CHECK_FRAMES frames: a
    /// turn at a check finds the frame before it read, and sleeps that many frames
    /// from that one.
    #[test]
    fn a_steady_engine_is_checked_every_stall_check_frames_frames() {
        let mut e = EnginePolls::default();
        let grace = frame_tolerance(TICK);
        for f in 0..=(STEADY_FRAMES as u64 + 1) {
            frame(&mut e, f * TICK, 60);
            e.quiet_after_(f * TICK + 20, M);
        }
        let mut check = (STEADY_FRAMES as u64 + 1 + STALL_CHECK_FRAMES) * TICK + grace;
        let mut checks = Vec::new();
        for f in (STEADY_FRAMES as u64 + 2)..40 {
            frame(&mut e, f * TICK, 60);
            let next = (f + 1) * TICK;
            if check.next_multiple_of(STALL_CHECK_GRID_US) < next {
                let now = check.next_multiple_of(STALL_CHECK_GRID_US);
                check = now + e.quiet_after_(now, M);
                checks.push(f);
            }
        }
        let gaps: Vec<u64> = checks.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.len() > 5 && gaps.iter().all(|&g| g == STALL_CHECK_FRAMES), "{checks:?}");
    }

    /// A 64-client server's frame (an input from each, a few more when two of a
    /// client's ticks land in one of the server's) in the buffer a default host gets
    /// where the OS caps it lowest (Linux's stock `rmem_max`, 212,992, reported
    /// doubled): checked every STALL_CHECK_FRAMES frames, where the OS's own default
    /// buffer held too few of its frames and the thread woke every frame. A buffer
    /// between the two, which holds three of its frames but not five, is checked
    /// every other frame.
    #[test]
    fn a_64_client_servers_frames_fit_a_default_hosts_buffer_for_every_check() {
        let default_host = 2 * crate::DEFAULT_RECV_BUFFER_BYTES.min(212_992);
        let os_default = 212_992;
        let quiet_at_last_frame = |capacity| {
            let mut e = EnginePolls::default();
            for f in 0..10 {
                // Payloads of 60 bytes: a 32-byte input with its header.
                e.polled(f * TICK);
                e.read(70, 70 * 60);
                e.polled(f * TICK + 10);
            }
            e.quiet_after(9 * TICK + 20, M, capacity)
        };
        let until =
            |frames: u64| (9 * TICK + frames * TICK + frame_tolerance(TICK)).next_multiple_of(STALL_CHECK_GRID_US);
        assert_eq!(quiet_at_last_frame(default_host), until(STALL_CHECK_FRAMES) - (9 * TICK + 20));
        assert_eq!(quiet_at_last_frame(300_000), until(2) - (9 * TICK + 20));
        assert_eq!(quiet_at_last_frame(os_default), until(1) - (9 * TICK + 20));
    }

    #[test]
    fn slow_frames_and_frames_too_big_for_the_socket_keep_the_moderation_time() {
        // 10 frames a second: steady, but slower than MAX_FRAME_US.
        let mut e = EnginePolls::default();
        for f in 0..10 {
            frame(&mut e, f * 100_000, 3);
            assert_eq!(e.quiet_after_(f * 100_000 + 20, M), M, "frame {f}");
        }
        // 60 Hz with 300 datagrams a frame: two frames of 300 × (100 + overhead) bytes
        // do not fit in a 212,992-byte buffer (Linux's default), so each read frame
        // keeps the moderation time; 80 a frame get a check every frame (two frames'
        // fit, three not); 30 a frame every other frame.
        let capacity = 212_992;
        let mut e = EnginePolls::default();
        for f in 0..10 {
            frame(&mut e, f * TICK, 300);
            assert_eq!(e.quiet_after(f * TICK + 20, M, capacity), M, "frame {f}");
            assert!(!e.owns_socket(f * TICK + 100, M, capacity));
        }
        for f in 10..20 {
            frame(&mut e, f * TICK, 80);
        }
        let by = 19 * TICK + TICK + frame_tolerance(TICK);
        assert_eq!(
            e.quiet_after(19 * TICK + 20, M, capacity),
            by.next_multiple_of(STALL_CHECK_GRID_US) - (19 * TICK + 20)
        );
        for f in 20..30 {
            frame(&mut e, f * TICK, 30);
        }
        let by = 29 * TICK + STALL_CHECK_FRAMES * TICK + frame_tolerance(TICK);
        assert_eq!(
            e.quiet_after(29 * TICK + 20, M, capacity),
            by.next_multiple_of(STALL_CHECK_GRID_US) - (29 * TICK + 20)
        );
    }

    #[test]
    fn steady_frames_without_traffic_leave_the_socket_to_the_thread() {
        // An idle server: steady frames that read nothing. The thread sleeps on the
        // socket instead of waking every frame for the stall check.
        let mut e = EnginePolls::default();
        for f in 0..10 {
            frame(&mut e, f * TICK, 0);
            assert_eq!(e.quiet_after_(f * TICK + 20, M), M, "frame {f}");
            assert!(!e.owns_socket(f * TICK + 100, M, usize::MAX));
        }
        // Traffic the thread read (between frames) counts too: the next frame has it.
        e.thread_read(2);
        frame(&mut e, 10 * TICK, 0);
        assert!(e.owns_socket(10 * TICK + 100, M, usize::MAX));
        // Two frames without any: the thread's again.
        frame(&mut e, 11 * TICK, 0);
        frame(&mut e, 12 * TICK, 0);
        assert!(!e.owns_socket(12 * TICK + 100, M, usize::MAX));
    }

    #[test]
    fn moderation_off_never_leaves_the_socket_to_steady_frames() {
        let mut e = EnginePolls::default();
        for f in 0..10 {
            frame(&mut e, f * TICK, 3);
            assert_eq!(e.quiet_after_(f * TICK + 20, 0), 0);
            assert!(!e.owns_socket(f * TICK + 100, 0, usize::MAX));
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
        assert_eq!(e.quiet_after_(now, M), 0);
        assert_eq!(e.quiet, M);
        // A poll again: 1 ms, not 16.
        e.polled(now + 5_000);
        assert_eq!(e.quiet_after_(now + 5_000, M), M);
    }

    #[test]
    fn a_turn_for_a_timer_in_the_middle_keeps_the_quiet_time_growing() {
        let mut e = EnginePolls::default();
        e.polled(0);
        let (_, now) = busy_turns(&mut e, 0, 3);
        let before = e.quiet;
        // A timer's turn 300 µs into the next quiet time: the engine polled all along.
        busy(&mut e, now + 10, now + 300);
        assert!(e.quiet_after_(now + 300, M) > before);
    }

    #[test]
    fn moderation_off_means_never_quiet() {
        let mut e = EnginePolls::default();
        busy(&mut e, 0, 5_000);
        assert_eq!(e.quiet_after_(5_000, 0), 0);
    }

    #[test]
    fn a_frame_right_after_a_turn_gets_twice_the_moderation_time_once() {
        let mut e = EnginePolls::default();
        // A frame's burst, the thread's turn at its end and at its quiet time's end.
        busy(&mut e, 10_000, 10_020);
        assert_eq!(e.quiet_after_(10_020, M), M);
        assert_eq!(e.quiet_after_(11_020, M), 0);
        // The next frame's burst 100 µs after a turn (a timer's), and a turn it woke
        // 20 µs later: it looks like polling all through, and gets twice the time.
        assert_eq!(e.quiet_after_(26_600, M), 0);
        busy(&mut e, 26_700, 26_720);
        assert_eq!(e.quiet_after_(26_740, M), 2 * M - 20);
        // At that time's end the engine has not polled again: watched again, and the
        // next frame's burst gets the moderation time.
        assert_eq!(e.quiet_after_(28_720, M), 0);
        busy(&mut e, 43_400, 43_420);
        assert_eq!(e.quiet_after_(44_420, M), 0);
        assert_eq!(e.quiet, M);
    }

    #[test]
    fn a_huge_moderation_does_not_overflow() {
        let mut e = EnginePolls::default();
        e.polled(0);
        assert_eq!(e.quiet_after_(0, Micros::MAX / 2 + 1), Micros::MAX / 2 + 1);
        busy(&mut e, 10, 20);
        assert_eq!(e.quiet_after_(20, Micros::MAX / 2 + 1), Micros::MAX / 2 + 1);
    }

    #[test]
    fn a_moderation_above_the_cap_is_kept() {
        let mut e = EnginePolls::default();
        e.polled(0);
        assert_eq!(e.quiet_after_(0, 20_000), 20_000);
        busy(&mut e, 10, 20_000);
        assert_eq!(e.quiet_after_(20_000, 20_000), 20_000);
    }
}
