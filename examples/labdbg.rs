use tickwire::lab::{model, scenario};
fn main() {
    let cfg = model::LabConfig::default();
    let sc = scenario::by_id(&std::env::args().nth(1).unwrap_or("S5".into())).unwrap();
    let rec = model::run(&sc, model::Controller::Tickwire, &cfg);
    let t = cfg.tick_us;
    let mut b = 55_000_000u64;
    while b < 100_000_000 {
        let w: Vec<_> = rec.inputs.iter().filter(|r| r.sampled >= b && r.sampled < b + 500_000).collect();
        let l: Vec<f64> = w.iter().filter_map(|r| Some((r.consumed? as f64 - r.sampled as f64) / t)).collect();
        let mut n: Vec<f64> = w.iter().map(|r| r.first_arrival.map_or(f64::INFINITY, |a| (a - r.sampled) as f64 / t)).collect();
        n.sort_by(|a, b| a.total_cmp(b));
        let late = w.iter().filter(|r| matches!((r.consumed, r.first_arrival), (Some(c), Some(a)) if a > c)).count();
        print!("{:.1}:{:.2}/{:.2}/{} ", b as f64 / 1e6, l.iter().sum::<f64>() / l.len().max(1) as f64, n[n.len() * 99 / 100], late);
        b += 500_000;
    }
    println!();
}
