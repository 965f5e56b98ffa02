//! The server's figures in the Prometheus text format (version 0.0.4): what a scrape
//! of `/metrics` returns. Base units (seconds, bytes, ratios), counters end in
//! `_total`, histograms give cumulative `_bucket`s ending at `+Inf`, `_sum` and
//! `_count`. `promtool check metrics` lints it in the suite.

use std::fmt::Write;

/// A histogram being filled.
#[derive(Debug, Clone)]
pub struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    /// An empty histogram with these upper bounds (increasing).
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram { bounds, counts: vec![0; bounds.len()], sum: 0.0, count: 0 }
    }

    /// Adds one observation (a NaN is not one).
    pub fn observe(&mut self, v: f64) {
        if v.is_nan() {
            return;
        }
        if let Some(i) = self.bounds.iter().position(|&b| v <= b) {
            self.counts[i] += 1;
        }
        self.sum += v;
        self.count += 1;
    }
}

/// Seconds: from a tenth of a millisecond to 2 s.
pub const SECONDS_BUCKETS: &[f64] = &[0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0];
/// A share: 0 to 1.
pub const RATIO_BUCKETS: &[f64] = &[0.0, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0];
/// Bytes a second: 100 B/s to 1 MB/s.
pub const RATE_BUCKETS: &[f64] = &[100.0, 300.0, 1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6];

/// Writes one exposition.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
}

/// Escapes a label value: backslash, double quote and newline.
pub fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

fn number(v: f64) -> String {
    if v.is_infinite() { if v > 0.0 { "+Inf".into() } else { "-Inf".into() } } else { format!("{v}") }
}

impl Exposition {
    fn head(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    /// A gauge with one value.
    pub fn gauge(&mut self, name: &str, help: &str, v: f64) {
        self.head(name, "gauge", help);
        let _ = writeln!(self.out, "{name} {}", number(v));
    }

    /// A counter (`name` ends in `_total`) with one value.
    pub fn counter(&mut self, name: &str, help: &str, v: u64) {
        debug_assert!(name.ends_with("_total"));
        self.head(name, "counter", help);
        let _ = writeln!(self.out, "{name} {v}");
    }

    /// A counter (`name` ends in `_total`) of a quantity that is not a count (seconds).
    pub fn counter_f64(&mut self, name: &str, help: &str, v: f64) {
        debug_assert!(name.ends_with("_total"));
        self.head(name, "counter", help);
        let _ = writeln!(self.out, "{name} {}", number(v));
    }

    /// A counter with one value per value of `label`.
    pub fn counter_by(&mut self, name: &str, help: &str, label: &str, values: &[(&str, u64)]) {
        debug_assert!(name.ends_with("_total"));
        self.head(name, "counter", help);
        for (l, v) in values {
            let _ = writeln!(self.out, "{name}{{{label}=\"{}\"}} {v}", escape(l));
        }
    }

    /// A histogram.
    pub fn histogram(&mut self, name: &str, help: &str, h: &Histogram) {
        self.head(name, "histogram", help);
        let mut cum = 0;
        for (b, c) in h.bounds.iter().zip(&h.counts) {
            cum += c;
            let _ = writeln!(self.out, "{name}_bucket{{le=\"{}\"}} {cum}", number(*b));
        }
        let _ = writeln!(self.out, "{name}_bucket{{le=\"+Inf\"}} {}", h.count);
        let _ = writeln!(self.out, "{name}_sum {}", number(h.sum));
        let _ = writeln!(self.out, "{name}_count {}", h.count);
    }

    /// The text.
    pub fn finish(self) -> String {
        self.out
    }
}

/// The process's CPU time (user and system), in seconds.
pub fn process_cpu_seconds() -> f64 {
    #[cfg(unix)]
    {
        let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `u` is a valid, writable rusage; getrusage fills it or fails.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr()) };
        if rc != 0 {
            return f64::NAN;
        }
        // SAFETY: getrusage returned 0, so it wrote the whole struct (and zeroed()
        // made every byte initialised before anyway).
        let u = unsafe { u.assume_init() };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        secs(u.ru_utime) + secs(u.ru_stime)
    }
    #[cfg(not(unix))]
    {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_end_at_inf() {
        let mut h = Histogram::new(&[1.0, 2.0]);
        for v in [0.5, 1.5, 1.5, 9.0, f64::NAN] {
            h.observe(v);
        }
        let mut e = Exposition::default();
        e.histogram("x_seconds", "help", &h);
        e.counter_by("y_total", "help", "reason", &[("a\"b\\c\nd", 3)]);
        let t = e.finish();
        assert!(t.contains("x_seconds_bucket{le=\"1\"} 1\n"), "{t}");
        assert!(t.contains("x_seconds_bucket{le=\"2\"} 3\n"), "{t}");
        assert!(t.contains("x_seconds_bucket{le=\"+Inf\"} 4\n"), "{t}");
        assert!(t.contains("x_seconds_sum 12.5\n") && t.contains("x_seconds_count 4\n"), "{t}");
        assert!(t.contains("y_total{reason=\"a\\\"b\\\\c\\nd\"} 3\n"), "{t}");
    }

    #[test]
    fn the_process_cpu_time_is_read() {
        let a = process_cpu_seconds();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = process_cpu_seconds();
        assert!(a.is_finite() && b > a, "{a} then {b}");
    }
}
