//! Log records for the engine: a bounded queue from the network thread (and the
//! engine side) to whoever polls, and the tally that turns a flood of refused
//! datagrams into one summary a second.
//!
//! The network thread never calls user code (DESIGN.md), so it only leaves records
//! here; the C ABI hands them to the engine's log function from `poll_event`, on the
//! engine's thread. The queue holds [`LOG_QUEUE_CAPACITY`] records of at most
//! [`MAX_RECORD_LEN`] bytes in buffers made once: a full queue drops the new record and
//! counts it ([`LogQueue::take_dropped`]), it never grows. With logging off (the
//! default) nothing is formatted at all, and with it on a quiet network formats
//! nothing either, so neither costs an allocation per frame.

use std::fmt::{self, Write};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};

use tickwire_proto::{EndpointStats, Micros};

/// How much a record matters; a log set to one level gets it and the ones above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum LogLevel {
    /// Something failed: a desync, a lost server, a network-thread fault.
    Error = 1,
    /// Something is wrong but handled: refused or malformed datagrams, timeouts,
    /// dropped connections, dropped log records.
    Warn = 2,
    /// The normal story of a match: connections up and down, joins, synchronization.
    Info = 3,
    /// Detail for a developer: dials, prediction stalls.
    Debug = 4,
}

impl LogLevel {
    /// The level numbered `n` (1..=4), as in the C `tw_log_level`.
    pub fn from_u32(n: u32) -> Option<LogLevel> {
        Some(match n {
            1 => LogLevel::Error,
            2 => LogLevel::Warn,
            3 => LogLevel::Info,
            4 => LogLevel::Debug,
            _ => return None,
        })
    }
}

/// Records the queue holds before it drops new ones.
pub const LOG_QUEUE_CAPACITY: usize = 32;
/// Longest record text in bytes; longer text is cut at a character boundary.
pub const MAX_RECORD_LEN: usize = 255;

/// The bounded log queue of one host, shared by its network thread and its engine
/// side. Every method takes `&self`: the ring sits behind a mutex held only to copy
/// one record in or out.
#[derive(Debug)]
pub struct LogQueue {
    /// The lowest level wanted (a `LogLevel` number); 0 is off.
    min_level: AtomicU8,
    /// Records in the ring, read without the lock so an empty poll costs one load.
    pending: AtomicUsize,
    /// Records refused because the ring was full, since the last `take_dropped`.
    dropped: AtomicU64,
    ring: Mutex<Ring>,
}

#[derive(Debug)]
struct Ring {
    slots: Vec<(LogLevel, String)>,
    head: usize,
    len: usize,
}

impl Default for LogQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl LogQueue {
    /// An empty queue, off, with its buffers made.
    pub fn new() -> Self {
        let slots = (0..LOG_QUEUE_CAPACITY).map(|_| (LogLevel::Debug, String::with_capacity(MAX_RECORD_LEN))).collect();
        LogQueue {
            min_level: AtomicU8::new(0),
            pending: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            ring: Mutex::new(Ring { slots, head: 0, len: 0 }),
        }
    }

    /// Sets the lowest level queued (`None`: off). Turning it off also discards what
    /// is queued and the dropped count, so a log turned on later starts clean.
    pub fn set_min_level(&self, level: Option<LogLevel>) {
        self.min_level.store(level.map_or(0, |l| l as u8), Ordering::Relaxed);
        if level.is_none() {
            let mut ring = self.lock();
            ring.len = 0;
            self.pending.store(0, Ordering::Release);
            self.dropped.store(0, Ordering::Relaxed);
        }
    }

    /// Whether a record at `level` would be queued: check before gathering what it says.
    pub fn wants(&self, level: LogLevel) -> bool {
        level as u8 <= self.min_level.load(Ordering::Relaxed)
    }

    /// Queues a record, if its level is wanted and there is room (else counts it as
    /// dropped). Formats into a buffer made beforehand, cut at [`MAX_RECORD_LEN`].
    pub fn push(&self, level: LogLevel, args: fmt::Arguments<'_>) {
        if !self.wants(level) {
            return;
        }
        let mut ring = self.lock();
        if ring.len == ring.slots.len() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let i = (ring.head + ring.len) % ring.slots.len();
        let slot = &mut ring.slots[i];
        slot.0 = level;
        slot.1.clear();
        let _ = Bounded(&mut slot.1).write_fmt(args);
        ring.len += 1;
        self.pending.store(ring.len, Ordering::Release);
    }

    /// Copies the oldest record into `out` (cleared first) and returns its level; None
    /// when the queue is empty (without taking the lock).
    pub fn pop_into(&self, out: &mut String) -> Option<LogLevel> {
        if self.pending.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut ring = self.lock();
        if ring.len == 0 {
            return None;
        }
        let head = ring.head;
        let (level, text) = &ring.slots[head];
        let level = *level;
        out.clear();
        let _ = Bounded(out).write_str(text);
        ring.head = (head + 1) % ring.slots.len();
        ring.len -= 1;
        self.pending.store(ring.len, Ordering::Release);
        Some(level)
    }

    /// Records dropped because the queue was full since the last call; resets it.
    pub fn take_dropped(&self) -> u64 {
        if self.dropped.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        self.dropped.swap(0, Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        // A panic while holding it leaves at worst one half-written record.
        self.ring.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A `fmt::Write` into a `String` that stops at [`MAX_RECORD_LEN`] bytes (at a
/// character boundary), so a record never grows its buffer.
pub struct Bounded<'a>(pub &'a mut String);

impl Write for Bounded<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = MAX_RECORD_LEN.saturating_sub(self.0.len());
        if s.len() <= room {
            self.0.push_str(s);
            return Ok(());
        }
        let mut cut = room;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        self.0.push_str(&s[..cut]);
        Err(fmt::Error)
    }
}

/// How long one summary of refused datagrams covers.
const TALLY_WINDOW_US: Micros = 1_000_000;
/// Source addresses named in a summary; the rest are counted together.
const TALLY_SOURCES: usize = 4;

/// The refusal counters of the endpoint, in the order and with the words a summary
/// uses.
fn refusals(s: &EndpointStats) -> [(u64, &'static str); 11] {
    [
        (s.malformed, "malformed"),
        (s.wrong_protocol, "of another protocol"),
        (s.wrong_version, "of another protocol version"),
        (s.unknown_sender, "from unknown senders"),
        (s.bad_cookie, "with a bad or expired cookie"),
        (s.security_mismatch, "refused for a security mismatch"),
        (s.auth_refused, "refused for their credentials"),
        (s.replayed, "replayed"),
        (s.forged, "failing authentication (forged)"),
        (s.denied, "connection requests denied"),
        (s.over_budget, "over their sender's budget"),
    ]
}

fn refused_total(s: &EndpointStats) -> u64 {
    refusals(s).iter().map(|(n, _)| n).sum()
}

/// Counts the datagrams the endpoint refused, by reason and by source, and writes one
/// WARN summary per second in which any were refused: a flood of hostile datagrams
/// becomes one record a second, never one per datagram. Lives on the network thread;
/// fixed size.
#[derive(Debug)]
pub(crate) struct DropTally {
    window_start: Micros,
    /// The endpoint's counters when the window began.
    base: EndpointStats,
    sources: [(Option<SocketAddr>, u64); TALLY_SOURCES],
    /// Refused datagrams from addresses beyond the named ones.
    others: u64,
}

impl DropTally {
    pub(crate) fn new(now: Micros) -> Self {
        DropTally { window_start: now, base: EndpointStats::default(), sources: [(None, 0); TALLY_SOURCES], others: 0 }
    }

    /// The counter the caller compares before and after handing a datagram over.
    pub(crate) fn refused(stats: &EndpointStats) -> u64 {
        refused_total(stats)
    }

    /// `n` datagrams from `from` were refused.
    pub(crate) fn note(&mut self, from: SocketAddr, n: u64) {
        for slot in &mut self.sources {
            match slot.0 {
                Some(a) if a == from => {
                    slot.1 += n;
                    return;
                }
                None => {
                    *slot = (Some(from), n);
                    return;
                }
                Some(_) => {}
            }
        }
        self.others += n;
    }

    /// Once a window has passed: writes its summary to `log` if anything was refused,
    /// and starts the next window from the endpoint's counters (read only then, once a
    /// second, and also while the log is off, so a log turned on later does not
    /// report old refusals as new).
    /// When the current window's summary is due, if it has anything to say: the
    /// network thread wakes for it, and sleeps through quiet windows.
    pub(crate) fn deadline(&self) -> Option<Micros> {
        (self.sources[0].0.is_some() || self.others > 0).then_some(self.window_start + TALLY_WINDOW_US)
    }

    pub(crate) fn roll(&mut self, now: Micros, stats: impl FnOnce() -> EndpointStats, log: &LogQueue) {
        if now < self.window_start + TALLY_WINDOW_US {
            return;
        }
        let stats = &stats();
        let total = refused_total(stats).saturating_sub(refused_total(&self.base));
        if total > 0 && log.wants(LogLevel::Warn) {
            let secs = (now - self.window_start) as f64 / 1e6;
            log.push(LogLevel::Warn, format_args!("{}", Summary { tally: self, stats, total, secs }));
        }
        self.window_start = now;
        self.base = *stats;
        self.sources = [(None, 0); TALLY_SOURCES];
        self.others = 0;
    }
}

/// The text of one window's summary.
struct Summary<'a> {
    tally: &'a DropTally,
    stats: &'a EndpointStats,
    total: u64,
    secs: f64,
}

impl fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dropped {} datagrams in the last {:.1} s:", self.total, self.secs)?;
        let mut first = true;
        for ((now, what), (then, _)) in refusals(self.stats).iter().zip(refusals(&self.tally.base).iter()) {
            let n = now.saturating_sub(*then);
            if n > 0 {
                write!(f, "{} {n} {what}", if first { "" } else { "," })?;
                first = false;
            }
        }
        let mut named = self.tally.sources.iter().filter_map(|(a, n)| a.map(|a| (a, *n))).peekable();
        if named.peek().is_some() {
            f.write_str("; from")?;
            for (i, (addr, n)) in named.enumerate() {
                write!(f, "{} {addr} ({n})", if i == 0 { "" } else { "," })?;
            }
            if self.tally.others > 0 {
                write!(f, " and {} from other addresses", self.tally.others)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_and_counts_and_never_grows() {
        let q = LogQueue::new();
        q.push(LogLevel::Error, format_args!("off: not queued"));
        assert_eq!(q.pending.load(Ordering::Relaxed), 0);
        q.set_min_level(Some(LogLevel::Warn));
        q.push(LogLevel::Info, format_args!("below the level"));
        for i in 0..LOG_QUEUE_CAPACITY + 5 {
            q.push(LogLevel::Warn, format_args!("record {i}"));
        }
        assert_eq!(q.take_dropped(), 5);
        assert_eq!(q.take_dropped(), 0);
        let mut out = String::new();
        assert_eq!(q.pop_into(&mut out), Some(LogLevel::Warn));
        assert_eq!(out, "record 0");
        let long = "é".repeat(400);
        q.set_min_level(None);
        q.set_min_level(Some(LogLevel::Debug));
        q.push(LogLevel::Debug, format_args!("{long}"));
        assert_eq!(q.pop_into(&mut out), Some(LogLevel::Debug));
        assert!(out.len() <= MAX_RECORD_LEN && out.len() >= MAX_RECORD_LEN - 1, "{}", out.len());
        assert_eq!(q.pop_into(&mut out), None);
        let ring = q.lock();
        assert!(ring.slots.iter().all(|(_, s)| s.capacity() == MAX_RECORD_LEN));
    }

    #[test]
    fn a_tally_summarizes_a_window_by_reason_and_source() {
        let q = LogQueue::new();
        q.set_min_level(Some(LogLevel::Warn));
        let mut t = DropTally::new(0);
        let a: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let mut s = EndpointStats::default();
        for i in 0..600u64 {
            s.malformed += 1;
            t.note(if i % 2 == 0 { a } else { SocketAddr::from(([10, 0, 0, 2], 1000 + (i % 10) as u16)) }, 1);
            t.roll(1000 + i, || s, &q);
        }
        assert_eq!(q.pending.load(Ordering::Relaxed), 0, "no summary before the window ends");
        t.roll(1_000_000, || s, &q);
        let mut out = String::new();
        assert_eq!(q.pop_into(&mut out), Some(LogLevel::Warn));
        assert!(
            out.starts_with("dropped 600 datagrams in the last 1.0 s: 600 malformed; from 10.0.0.1:5000 (300)"),
            "{out}"
        );
        assert!(out.ends_with("from other addresses"), "{out}");
        t.roll(2_500_000, || s, &q);
        assert_eq!(q.pop_into(&mut out), None, "a quiet window says nothing");
    }
}
