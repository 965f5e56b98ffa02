//! Measuring: the meter around library calls, what one run produced, and the
//! checksum comparison that voids a run.

use tickwire_testkit::counting_alloc;

use std::fmt::Write as _;
use std::time::Instant;

/// Time and allocations spent in library calls during one engine frame of one peer.
#[derive(Default, Clone, Copy)]
pub(crate) struct Meter {
    pub(crate) ns: u64,
    pub(crate) sections: u64,
    pub(crate) allocs: u64,
}

impl Meter {
    #[inline(always)]
    pub(crate) fn start() -> (Instant, u64) {
        (Instant::now(), counting_alloc::allocations())
    }

    #[inline(always)]
    pub(crate) fn stop(&mut self, s: (Instant, u64)) {
        let ns = s.0.elapsed().as_nanos() as u64;
        self.allocs += counting_alloc::allocations() - s.1;
        self.ns += ns;
        self.sections += 1;
    }
}

/// The mean cost of an empty `Meter::start` / `Meter::stop` pair, in ns.
pub(crate) fn calibrate() -> f64 {
    let mut m = Meter::default();
    for _ in 0..200_000 {
        let s = Meter::start();
        m.stop(std::hint::black_box(s));
    }
    let mut m = Meter::default();
    let n = 1_000_000;
    let t = Instant::now();
    for _ in 0..n {
        let s = Meter::start();
        m.stop(std::hint::black_box(s));
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

/// What one run of one library produced.
pub(crate) struct Results {
    pub(crate) cpu_ns: Vec<f64>,
    /// The same without the timer overhead taken out.
    pub(crate) cpu_raw_ns: Vec<f64>,
    pub(crate) allocs: u64,
    pub(crate) bytes: u64,
    pub(crate) datagrams: u64,
    /// Bytes of GGRS's wall-clock-timed messages (quality reports, replies, keepalives).
    pub(crate) timed_bytes: u64,
    pub(crate) rollbacks: u64,
    pub(crate) depth_sum: u64,
    pub(crate) depth_max: u64,
    pub(crate) ticks: u64,
    pub(crate) frames: u64,
    pub(crate) peers: usize,
    pub(crate) void: Option<String>,
    pub(crate) compared: u64,
    /// Peer-frames in which no new tick was simulated, and of those, the ones where
    /// the library refused to advance (prediction window full) or the engine skipped
    /// the frame on GGRS's wait recommendation.
    pub(crate) idle: u64,
    pub(crate) stalled: u64,
    pub(crate) skipped: u64,
    /// Per message kind (BENCH_DETAIL=1): name, count, bytes.
    pub(crate) kinds: Vec<(&'static str, u64, u64)>,
    /// Input messages, the ticks they carry in all, checksum reports carried.
    pub(crate) input_msgs: u64,
    pub(crate) carried: u64,
    pub(crate) reports: u64,
    /// tickwire: messages that carried inputs again after their first copies (whole run).
    pub(crate) resends: u64,
    /// tickwire, BENCH_DETAIL=1: each peer's tick, frames ahead and time scale at the end.
    pub(crate) peers_line: String,
}

impl Results {
    pub(crate) fn new(frames: u64, peers: usize) -> Self {
        Results {
            cpu_ns: Vec::with_capacity(frames as usize * peers),
            cpu_raw_ns: Vec::with_capacity(frames as usize * peers),
            allocs: 0,
            bytes: 0,
            datagrams: 0,
            timed_bytes: 0,
            rollbacks: 0,
            depth_sum: 0,
            depth_max: 0,
            ticks: 0,
            frames,
            peers,
            void: None,
            compared: 0,
            idle: 0,
            stalled: 0,
            skipped: 0,
            kinds: Vec::new(),
            input_msgs: 0,
            carried: 0,
            reports: 0,
            resends: 0,
            peers_line: String::new(),
        }
    }

    pub(crate) fn kind(&mut self, name: &'static str, bytes: usize) {
        match self.kinds.iter_mut().find(|k| k.0 == name) {
            Some(k) => {
                k.1 += 1;
                k.2 += bytes as u64;
            }
            None => self.kinds.push((name, 1, bytes as u64)),
        }
    }

    /// Notes one peer-frame that simulated `new` new ticks.
    pub(crate) fn frame_done(&mut self, new: u64, stalled: bool, skipped: bool) {
        if new == 0 {
            self.idle += 1;
            self.stalled += stalled as u64;
            self.skipped += skipped as u64;
        }
    }

    /// The diagnostic lines BENCH_DETAIL=1 prints under a library's row.
    pub(crate) fn detail(&self) -> String {
        let pf = |x: u64| self.per_peer_frame(x);
        let mut out = format!(
            "idle frames {:.3}/f (window full {:.3}, skipped {:.3}); B per simulated tick {:.1}; input msgs {:.2}/f carrying {:.2} ticks each, {:.3} reports/f; late refreshes {}",
            pf(self.idle),
            pf(self.stalled),
            pf(self.skipped),
            self.bytes as f64 / self.ticks.max(1) as f64,
            pf(self.input_msgs),
            self.carried as f64 / self.input_msgs.max(1) as f64,
            pf(self.reports),
            self.resends,
        );
        if !self.peers_line.is_empty() {
            let _ = write!(out, "\n{:>23} peers at the end:{}", "", self.peers_line);
        }
        for (name, count, bytes) in &self.kinds {
            let _ = write!(
                out,
                "\n{:>23} {name}: {:.3}/f, {:.1} B each, {:.1} B/f",
                "",
                pf(*count),
                *bytes as f64 / *count as f64,
                pf(*bytes)
            );
        }
        out
    }

    pub(crate) fn sample(&mut self, m: &Meter, calib: f64) {
        self.cpu_ns.push((m.ns as f64 - m.sections as f64 * calib).max(0.0));
        self.cpu_raw_ns.push(m.ns as f64);
        self.allocs += m.allocs;
    }

    pub(crate) fn rollback(&mut self, depth: u64) {
        self.rollbacks += 1;
        self.depth_sum += depth;
        self.depth_max = self.depth_max.max(depth);
    }

    pub(crate) fn per_peer_frame(&self, x: u64) -> f64 {
        x as f64 / (self.frames as f64 * self.peers as f64)
    }

    pub(crate) fn percentile(&self, q: f64) -> f64 {
        percentile(&self.cpu_ns, q)
    }

    pub(crate) fn depth_mean(&self) -> f64 {
        if self.rollbacks == 0 { 0.0 } else { self.depth_sum as f64 / self.rollbacks as f64 }
    }

    pub(crate) fn rollbacks_per_sec(&self) -> f64 {
        self.rollbacks as f64 / self.peers as f64 / (self.frames as f64 / 60.0)
    }
}

pub(crate) fn percentile(samples: &[f64], q: f64) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * q).round() as usize;
    v.get(i).copied().unwrap_or(0.0)
}

/// Compares per-frame checksums of every peer over `0..=last`; `None` marks a frame
/// a peer never saved.
pub(crate) fn compare_checksums(sums: &[Vec<Option<u64>>], last: u64, out: &mut Results) {
    if last < out.frames / 2 {
        out.void = Some(format!("only {last} frames confirmed everywhere"));
        return;
    }
    for f in 0..=last as usize {
        let first = sums[0].get(f).copied().flatten();
        if first.is_none() {
            out.void = Some(format!("peer 0 has no checksum for confirmed frame {f}"));
            return;
        }
        for (i, s) in sums.iter().enumerate().skip(1) {
            if s.get(f).copied().flatten() != first {
                out.void = Some(format!("frame {f}: peer {i} differs from peer 0"));
                return;
            }
        }
    }
    out.compared = last + 1;
}
