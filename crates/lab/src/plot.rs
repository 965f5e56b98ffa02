//! The lab's plots: per scenario a half-second time series (CSV) and an SVG of lead,
//! server buffer depth and time scale over time, one line per controller, with the
//! oracle lead of the scenario's windows.

use std::fmt::Write as _;

use super::model::{Controller, LabConfig, RunRecord};
use super::oracle::Oracle;
use super::scenario::Scenario;

/// Half-second series of (time s, lead ticks, buffer depth, time scale).
pub fn series(rec: &RunRecord, cfg: &LabConfig, duration: u64) -> Vec<SeriesPoint> {
    let bin = 500_000u64;
    let n = (duration / bin) as usize + 1;
    let mut lead = vec![(0.0, 0usize); n];
    for r in &rec.inputs {
        if let Some(c) = r.consumed {
            let i = (r.sampled / bin) as usize;
            if i < n {
                lead[i].0 += (c as f64 - r.sampled as f64) / cfg.tick_us;
                lead[i].1 += 1;
            }
        }
    }
    let mut frame = vec![(0.0, 0.0, 0usize); n];
    for fr in &rec.frames {
        let i = (fr.at / bin) as usize;
        if i < n {
            frame[i].0 += fr.depth as f64;
            frame[i].1 += fr.scale;
            frame[i].2 += 1;
        }
    }
    (0..n)
        .filter(|&i| lead[i].1 > 0 && frame[i].2 > 0)
        .map(|i| {
            let k = frame[i].2 as f64;
            ((i as u64 * bin) as f64 / 1e6, lead[i].0 / lead[i].1 as f64, frame[i].0 / k, frame[i].1 / k)
        })
        .collect()
}

/// The scenario's oracle lead per window: (window start s, window end s, L*_ε).
pub fn oracle_series(oracle: &Oracle) -> Vec<(f64, f64, f64)> {
    oracle.windows().iter().filter(|w| w.2.is_finite()).map(|w| (w.0 as f64 / 1e6, w.1 as f64 / 1e6, w.2)).collect()
}

/// (time s, lead ticks, buffer depth, time scale), one point per half second.
pub type SeriesPoint = (f64, f64, f64, f64);

const COLORS: [&str; 5] = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"];

/// An SVG with three panels (lead, server buffer depth, time scale) over time, one
/// line per controller, and the oracle lead as a dashed line.
pub fn svg(scenario: &Scenario, runs: &[(Controller, Vec<SeriesPoint>)], oracle: &[(f64, f64, f64)]) -> String {
    let (w, ph, left, top) = (900.0, 170.0, 60.0, 40.0);
    let t_max = scenario.duration as f64 / 1e6;
    let mut s = String::new();
    let h = top + 3.0 * (ph + 30.0) + 30.0;
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(s, r#"<text x="{left}" y="20" font-size="14">{} - {}</text>"#, scenario.id, xml(scenario.about));
    type Get = fn(&SeriesPoint) -> f64;
    let panels: [(&str, Get); 3] =
        [("lead (ticks)", |p| p.1), ("server buffer depth (inputs)", |p| p.2), ("time scale", |p| p.3)];
    for (pi, (label, get)) in panels.iter().enumerate() {
        let y0 = top + pi as f64 * (ph + 30.0);
        // A robust range: 0.5th to 99.5th percentile over the runs, so a start-up
        // outlier does not flatten the plot (points outside are clipped to the frame).
        let mut vals: Vec<f64> = runs.iter().flat_map(|r| r.1.iter().map(get)).filter(|v| v.is_finite()).collect();
        vals.sort_by(|a, b| a.total_cmp(b));
        let pick = |q: f64| vals.get(((vals.len().max(1) - 1) as f64 * q) as usize).copied().unwrap_or(0.0);
        let (mut lo, mut hi) = (pick(0.005), pick(0.995));
        if pi == 0 {
            for o in oracle {
                lo = lo.min(o.2);
                hi = hi.max(o.2);
            }
        }
        if !(lo.is_finite() && hi.is_finite()) || hi - lo < 1e-9 {
            lo -= 0.5;
            hi += 0.5;
        }
        let pad = (hi - lo) * 0.05;
        let (lo, hi) = (lo - pad, hi + pad);
        let x = |t: f64| left + (w - left - 20.0) * t / t_max;
        let y = |v: f64| y0 + ph - ph * ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
        let _ = writeln!(
            s,
            r##"<rect x="{left}" y="{y0}" width="{}" height="{ph}" fill="none" stroke="#999"/>"##,
            w - left - 20.0
        );
        let _ = writeln!(s, r#"<text x="{left}" y="{}">{label}</text>"#, y0 - 4.0);
        for v in [lo, (lo + hi) / 2.0, hi] {
            let _ = writeln!(s, r#"<text x="{}" y="{}" text-anchor="end">{v:.3}</text>"#, left - 4.0, y(v) + 4.0);
        }
        if pi == 0 {
            for (k, o) in oracle.iter().enumerate() {
                let _ = writeln!(
                    s,
                    r##"<line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#000" stroke-dasharray="4 3"/>"##,
                    x(o.0),
                    x(o.1),
                    y(o.2),
                    y(o.2)
                );
                if k == 0 {
                    let _ = writeln!(
                        s,
                        r#"<text x="{:.1}" y="{:.1}">oracle L* (30 s windows)</text>"#,
                        x(o.0) + 4.0,
                        y(o.2) + 12.0
                    );
                }
            }
        }
        if pi == 2 {
            let mut t = 0.0;
            while t <= t_max {
                let _ =
                    writeln!(s, r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#, x(t), y0 + ph + 14.0, t);
                t += if t_max > 200.0 { 60.0 } else { 10.0 };
            }
        }
        for (ci, (c, pts)) in runs.iter().enumerate() {
            let color = COLORS[ci % COLORS.len()];
            let mut d = String::new();
            for (k, p) in pts.iter().enumerate() {
                let _ = write!(d, "{}{:.1},{:.1}", if k == 0 { "M" } else { " L" }, x(p.0), y(get(p)));
            }
            let _ = writeln!(s, r#"<path d="{d}" fill="none" stroke="{color}" stroke-width="1"/>"#);
            if pi == 0 {
                let _ = writeln!(
                    s,
                    r#"<text x="{}" y="{}" fill="{color}">{}</text>"#,
                    left + 10.0 + 90.0 * ci as f64,
                    y0 + 14.0,
                    c.name()
                );
            }
        }
    }
    let _ = writeln!(s, r#"<text x="{}" y="{}" text-anchor="middle">time (s)</text>"#, w / 2.0, h - 8.0);
    s.push_str("</svg>\n");
    s
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
