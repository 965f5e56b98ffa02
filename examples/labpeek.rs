use tickwire::lab::{metrics, model, scenario};
fn main() {
    let ids: Vec<String> = std::env::args().skip(1).collect();
    let cfg = model::LabConfig::default();
    for id in ids {
        let sc = scenario::by_id(&id).unwrap();
        println!("{} {}", sc.id, sc.about);
        for c in model::Controller::ALL {
            let rec = model::run(&sc, c, &cfg);
            let m = metrics::score(&rec, &sc, &cfg);
            println!("  {:10} late {:6.3}% floor {:5.3}% lead {:6.2} oracle {:6.2} excess {:6.2} P {:5.1}/{:5.1} conv {:?}/{:?} corr/min {:5.2} flips {:6.1} dil {:4.2} std {:4.2} D {:5.2}/{:5.2} starve {:5.3}%",
                c.name(), m.late_rate*100.0, m.late_floor*100.0, m.lead, m.lead_oracle, m.lead_excess, m.prediction, m.prediction_min,
                m.convergence_s, m.convergence_limit_s, m.corrections_per_min, m.scale_flips_per_min, m.dilated_fraction, m.lead_std, m.interp_delay, m.interp_oracle, m.starvation*100.0);
        }
    }
}
