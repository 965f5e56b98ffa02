//! Conditioner tests. Statistical assertions use fixed seeds and tolerances of about 4.5
//! standard errors of the estimate, so they are meaningful (not loose) and would also
//! hold for almost any other seed.

use super::*;

/// Drains everything scheduled, in delivery order, with delivery times.
fn drain<T: Clone>(link: &mut LinkConditioner<T>) -> Vec<(Micros, T)> {
    std::iter::from_fn(|| link.poll_timed(Micros::MAX)).collect()
}

fn cfg(edit: impl FnOnce(&mut LinkConfig)) -> LinkConfig {
    let mut c = LinkConfig::perfect();
    edit(&mut c);
    c
}

/// 4.5 standard errors of a fraction estimated from `n` independent trials.
fn tol(p: f64, n: usize) -> f64 {
    4.5 * (p * (1.0 - p) / n as f64).sqrt()
}

fn assert_stats_balance<T: Clone>(link: &LinkConditioner<T>) {
    let s = link.stats();
    assert_eq!(
        s.sent - s.dropped_loss - s.dropped_queue + s.duplicated,
        s.delivered + link.in_flight() as u64,
        "{s:?}"
    );
}

#[test]
fn perfect_link_delivers_in_order_at_exactly_latency() {
    let mut link = LinkConditioner::new(cfg(|c| c.latency_us = 5_000), 1);
    let mut sends = Vec::new();
    let mut t = 0;
    for i in 0..1000u32 {
        t += (i % 7) as u64 * 300; // irregular gaps, including several sends per instant
        link.send(t, 100, i);
        sends.push(t);
    }
    for (i, &sent_at) in sends.iter().enumerate() {
        let due = sent_at + 5_000;
        assert_eq!(link.next_delivery(), Some(due));
        assert_eq!(link.poll(due - 1), None, "nothing before its time");
        assert_eq!(link.poll_timed(due), Some((due, i as u32)));
    }
    assert_eq!(link.next_delivery(), None);
    assert_eq!(link.poll(Micros::MAX), None);
    let s = link.stats();
    assert_eq!(
        (s.sent, s.delivered, s.dropped_loss, s.dropped_queue, s.duplicated, s.reordered),
        (1000, 1000, 0, 0, 0, 0)
    );

    // With no latency a datagram is due the instant it is sent.
    let mut zero = LinkConditioner::new(LinkConfig::perfect(), 1);
    zero.send(42, 10, "x");
    assert_eq!(zero.poll_timed(42), Some((42, "x")));
}

#[test]
fn bernoulli_loss_rate_and_independence() {
    let n = 100_000;
    let mut link = LinkConditioner::new(cfg(|c| c.loss = LossModel::Bernoulli { p: 0.2 }), 2);
    for i in 0..n {
        link.send(i as u64 * 1000, 100, i);
    }
    let mut got = vec![false; n];
    let out = drain(&mut link);
    assert!(out.windows(2).all(|w| w[0].1 < w[1].1), "survivors stay in send order");
    for (_, i) in out {
        got[i] = true;
    }
    let lost = got.iter().filter(|g| !**g).count();
    assert_eq!(link.stats().dropped_loss, lost as u64);
    let rate = lost as f64 / n as f64;
    assert!((rate - 0.2).abs() < tol(0.2, n), "loss rate {rate}");
    // Independent losses: a loss right after a loss is no likelier than any loss.
    let after_loss: Vec<bool> = got.windows(2).filter(|w| !w[0]).map(|w| !w[1]).collect();
    let cond = after_loss.iter().filter(|l| **l).count() as f64 / after_loss.len() as f64;
    assert!((cond - 0.2).abs() < tol(0.2, after_loss.len()), "P(loss | loss) {cond}");
}

#[test]
fn gilbert_elliott_matches_requested_loss_and_burst_length() {
    let (n, mean_loss, mean_burst) = (200_000, 0.05, 3.0);
    let model = LossModel::bursty(mean_loss, mean_burst);
    let mut link = LinkConditioner::new(cfg(|c| c.loss = model), 3);
    for i in 0..n {
        link.send(i as u64 * 1000, 100, i);
    }
    let mut got = vec![false; n];
    for (_, i) in drain(&mut link) {
        got[i] = true;
    }
    let lost = got.iter().filter(|g| !**g).count();
    let bursts: Vec<usize> = got.split(|g| *g).map(|run| run.len()).filter(|&len| len > 0).collect();
    let LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, .. } = model else { unreachable!() };

    // Successive datagrams are correlated: the variance of the loss fraction is inflated by
    // (1 + lambda) / (1 - lambda), lambda = 1 - p_gb - p_bg being the chain's second eigenvalue.
    let lambda = 1.0 - p_good_to_bad - p_bad_to_good;
    let loss_tol = tol(mean_loss, n) * ((1.0 + lambda) / (1.0 - lambda)).sqrt();
    let rate = lost as f64 / n as f64;
    assert!((rate - mean_loss).abs() < loss_tol, "loss {rate} vs {mean_loss} (tol {loss_tol})");

    // Burst lengths are geometric with mean 1/p_bg and sd sqrt(1 - p_bg)/p_bg.
    let mean = bursts.iter().sum::<usize>() as f64 / bursts.len() as f64;
    let burst_tol = 4.5 * (1.0 - p_bad_to_good).sqrt() / p_bad_to_good / (bursts.len() as f64).sqrt();
    assert!((mean - mean_burst).abs() < burst_tol, "mean burst {mean} (tol {burst_tol}, {} bursts)", bursts.len());
    assert_eq!(link.stats().dropped_loss, lost as u64);
}

/// Extra delays (above latency) of `n` datagrams spaced far enough apart that the FIFO
/// rule never binds, so they are raw draws of the jitter model.
fn jitter_samples(jitter: JitterModel, n: usize, seed: u64) -> Vec<u64> {
    let mut link = LinkConditioner::new(cfg(|c| (c.latency_us, c.jitter) = (1_000, jitter)), seed);
    let mut out = Vec::with_capacity(n);
    for i in 0..n as u64 {
        let t = i * 10_000_000;
        link.send(t, 100, ());
        let (at, ()) = link.poll_timed(Micros::MAX).expect("no loss configured");
        out.push(at - t - 1_000);
    }
    out
}

/// Checks the empirical CDF at the model's analytic q-quantiles.
fn assert_quantiles(model: JitterModel, samples: &[u64], qs: &[f64]) {
    for &q in qs {
        let x = model.quantile_us(q);
        let below = samples.iter().filter(|&&d| d as f64 <= x).count() as f64 / samples.len() as f64;
        assert!((below - q).abs() < tol(q, samples.len()), "{model:?}: P(d <= {x:.0}) = {below}, want {q}");
    }
}

fn empirical_quantile(samples: &[u64], q: f64) -> f64 {
    let mut s = samples.to_vec();
    s.sort_unstable();
    s[((q * s.len() as f64).ceil() as usize).saturating_sub(1)] as f64
}

#[test]
fn gaussian_jitter_is_folded_normal() {
    let (model, n) = (JitterModel::Gaussian { sigma_us: 5_000.0 }, 100_000);
    let d = jitter_samples(model, n, 4);
    assert_quantiles(model, &d, &[0.25, 0.5, 0.9, 0.99]);
    // Folded normal: mean sigma*sqrt(2/pi), sd sigma*sqrt(1 - 2/pi).
    let mean = d.iter().sum::<u64>() as f64 / n as f64;
    let (want, sd) =
        (5_000.0 * (2.0 / std::f64::consts::PI).sqrt(), 5_000.0 * (1.0 - 2.0 / std::f64::consts::PI).sqrt());
    assert!((mean - want).abs() < 4.5 * sd / (n as f64).sqrt(), "mean {mean} vs {want}");
}

#[test]
fn uniform_jitter_covers_its_range() {
    let (model, n) = (JitterModel::Uniform { max_us: 20_000 }, 100_000);
    let d = jitter_samples(model, n, 5);
    assert!(d.iter().all(|&x| x <= 20_000));
    assert_quantiles(model, &d, &[0.1, 0.5, 0.9, 0.99]);
}

#[test]
fn pareto_jitter_hits_requested_tail() {
    let n = 200_000;
    let model = JitterModel::pareto_with_p99(30_000.0, 3.0);
    let d = jitter_samples(model, n, 6);
    assert_quantiles(model, &d, &[0.5, 0.9, 0.99, 0.999]);
    // The p99 estimate's sd here is ~1% (sqrt(q(1-q)/n) / density at p99), so 4% is ~4 sd.
    let p99 = empirical_quantile(&d, 0.99);
    assert!((p99 / 30_000.0 - 1.0).abs() < 0.04, "p99 {p99}");

    // Scenario S2 as written: p99 = 30 ms and p99.9 = 80 ms.
    let s2 = JitterModel::pareto_with_p99_p999(30_000.0, 80_000.0).unwrap();
    let d = jitter_samples(s2, n, 7);
    assert_quantiles(s2, &d, &[0.5, 0.99, 0.999]);
    assert!(d.iter().filter(|&&x| x > 80_000).count() as f64 / (n as f64) < 0.001 + tol(0.001, n));
}

#[test]
fn jitter_alone_never_reorders() {
    let (n, max) = (20_000u64, 20_000);
    let mut link =
        LinkConditioner::new(cfg(|c| (c.latency_us, c.jitter) = (10_000, JitterModel::Uniform { max_us: max })), 8);
    for i in 0..n {
        link.send(i * 1_000, 100, i);
    }
    let out = drain(&mut link);
    assert_eq!(out.len(), n as usize);
    let mut extra_sum = 0;
    for (k, &(at, i)) in out.iter().enumerate() {
        assert_eq!(i, k as u64, "delivered in send order");
        let extra = at - i * 1_000 - 10_000;
        assert!(extra <= max, "FIFO never pushes past the previous datagram's worst case");
        extra_sum += extra;
    }
    // Sends are 1 ms apart against 20 ms of jitter, so datagrams often wait behind a slower
    // predecessor: the mean extra delay is well above the model's 10 ms (which it would be
    // within ~0.1 ms without the FIFO rule).
    let mean = extra_sum as f64 / n as f64;
    assert!(mean > 12_000.0, "mean extra delay {mean}");
}

#[test]
fn reordered_datagrams_are_overtaken() {
    let (n, p) = (100_000u64, 0.02);
    let mut link =
        LinkConditioner::new(cfg(|c| (c.latency_us, c.reorder, c.reorder_delay_us) = (20_000, p, 10_000)), 9);
    for i in 0..n {
        link.send(i * 1_000, 100, i);
    }
    let out = drain(&mut link);
    assert_eq!(out.len(), n as usize);
    let mut pos = vec![0usize; n as usize];
    let mut held = vec![false; n as usize];
    for (k, &(at, i)) in out.iter().enumerate() {
        pos[i as usize] = k;
        let delay = at - i * 1_000;
        assert!(delay == 20_000 || delay == 30_000, "delay {delay}");
        held[i as usize] = delay == 30_000;
    }
    let count = held.iter().filter(|h| **h).count();
    assert_eq!(link.stats().reordered, count as u64);
    let rate = count as f64 / n as f64;
    assert!((rate - p).abs() < tol(p, n as usize), "reorder rate {rate}");
    // suffix_min[k] = earliest position of any datagram sent after k.
    let mut suffix_min = vec![usize::MAX; n as usize + 1];
    for k in (0..n as usize).rev() {
        suffix_min[k] = suffix_min[k + 1].min(pos[k]);
    }
    for k in 0..n as usize - 10 {
        if held[k] {
            assert!(suffix_min[k + 1] < pos[k], "held-back datagram {k} was overtaken");
        } else {
            assert!(suffix_min[k + 1] > pos[k], "datagram {k} was not held, nothing passes it");
        }
    }
}

#[test]
fn duplicates_match_rate() {
    let (n, p) = (100_000u64, 0.01);
    let jitter = JitterModel::Gaussian { sigma_us: 2_000.0 };
    let mut link = LinkConditioner::new(cfg(|c| (c.latency_us, c.jitter, c.duplicate) = (10_000, jitter, p)), 10);
    for i in 0..n {
        link.send(i * 1_000, 100, i);
    }
    let mut copies = vec![0u32; n as usize];
    for (_, i) in drain(&mut link) {
        copies[i as usize] += 1;
    }
    assert!(copies.iter().all(|&c| c == 1 || c == 2));
    let twice = copies.iter().filter(|&&c| c == 2).count();
    let s = link.stats();
    assert_eq!(s.duplicated, twice as u64);
    assert_eq!(s.delivered, n + twice as u64);
    let rate = twice as f64 / n as f64;
    assert!((rate - p).abs() < tol(p, n as usize), "duplicate rate {rate}");
}

#[test]
fn bandwidth_cap_serialises_and_tail_drops() {
    let rate = 100_000; // bytes/s: a 1000-byte datagram takes 10 ms
    // Underdriven (half the cap): nothing queues, each datagram just pays serialisation.
    let mut link = LinkConditioner::new(cfg(|c| (c.latency_us, c.bandwidth_bytes_per_sec) = (5_000, rate)), 11);
    for i in 0..500u64 {
        link.send(i * 20_000, 1000, i);
    }
    for (at, i) in drain(&mut link) {
        assert_eq!(at, i * 20_000 + 10_000 + 5_000);
    }
    assert_eq!(link.stats().dropped_queue, 0);

    // Overdriven twice over for 20 s with a 10 kB buffer: throughput pins at the cap and
    // about half the datagrams are tail-dropped.
    let limit = 10_000;
    let mut link = LinkConditioner::new(cfg(|c| (c.bandwidth_bytes_per_sec, c.queue_limit_bytes) = (rate, limit)), 12);
    let n = 4_000u64;
    for i in 0..n {
        link.send(i * 5_000, 1000, i);
        assert!(link.queued_bytes(i * 5_000) <= limit as u64);
    }
    let out = drain(&mut link);
    let last = out.last().unwrap().0;
    let throughput = out.len() as f64 * 1000.0 / (last as f64 / 1e6);
    assert!((throughput / rate as f64 - 1.0).abs() < 0.01, "throughput {throughput}");
    let dropped = link.stats().dropped_queue as f64 / n as f64;
    assert!((dropped - 0.5).abs() < 0.01, "queue drops {dropped}");
    // Queueing delay is bounded by the buffer: (limit + one datagram) / rate = 110 ms.
    assert!(out.iter().all(|&(at, i)| at - i * 5_000 <= 110_000));
    assert_stats_balance(&link);

    // A zero queue limit with a cap means the 64 KiB default: 65 of 100 simultaneous
    // 1000-byte datagrams fit (65 000 <= 65 536 < 66 000).
    let mut link = LinkConditioner::new(cfg(|c| c.bandwidth_bytes_per_sec = rate), 13);
    for i in 0..100 {
        link.send(0, 1000, i);
    }
    assert_eq!(link.stats().dropped_queue, 35);
    assert_eq!(link.queued_bytes(0), 65_000);
}

#[test]
fn set_config_rescales_bottleneck_backlog() {
    let mut link = LinkConditioner::new(cfg(|c| c.bandwidth_bytes_per_sec = 100_000), 14);
    for i in 0..10 {
        link.send(0, 1000, i);
    }
    assert_eq!(link.queued_bytes(0), 10_000);
    link.set_config(cfg(|c| c.bandwidth_bytes_per_sec = 200_000));
    // The 100 ms of link time still booked, counted at the new rate.
    assert_eq!(link.queued_bytes(0), 20_000);
    link.send(0, 1000, 10);
    let out = drain(&mut link);
    assert_eq!(out[9], (100_000, 9), "already queued datagrams keep their schedule");
    assert_eq!(out[10], (105_000, 10), "then 1 kB at 200 kB/s");
    // Removing the cap frees the link for new datagrams; FIFO still keeps them in order.
    link.send(200_000, 1000, 11);
    link.set_config(LinkConfig::perfect());
    assert_eq!(link.queued_bytes(200_000), 0);
    link.send(200_000, 1000, 12);
    assert_eq!(drain(&mut link), vec![(205_000, 11), (205_000, 12)]);
}

#[test]
fn set_config_latency_step_keeps_fifo() {
    let mut link = LinkConditioner::new(cfg(|c| c.latency_us = 50_000), 15);
    let ms = 1_000u64;
    for (phase, latency) in [(0u64, 50_000), (1, 150_000), (2, 20_000)] {
        link.set_config(cfg(|c| c.latency_us = latency));
        for t in (phase * 1000..(phase + 1) * 1000).map(|k| k * ms) {
            link.send(t, 100, t);
        }
    }
    let out = drain(&mut link);
    assert_eq!(out.len(), 3000);
    assert!(out.windows(2).all(|w| w[0].1 < w[1].1), "never reordered by the steps");
    for &(at, t) in &out {
        let want = match t {
            t if t < 1000 * ms => t + 50 * ms,
            t if t < 2000 * ms => t + 150 * ms,
            // After the drop, new datagrams queue behind the last one sent at 150 ms
            // (delivered at 1999 + 150 ms) until the new 20 ms path catches up.
            t => (t + 20 * ms).max(2149 * ms),
        };
        assert_eq!(at, want, "sent at {t}");
    }
}

fn busy_config() -> LinkConfig {
    LinkConfig {
        latency_us: 30_000,
        jitter: JitterModel::pareto_with_p99(20_000.0, 2.5),
        loss: LossModel::bursty(0.05, 3.0),
        duplicate: 0.02,
        reorder: 0.03,
        reorder_delay_us: 15_000,
        bandwidth_bytes_per_sec: 200_000,
        queue_limit_bytes: 8_000,
    }
}

/// Drives a link with an irregular, seeded send pattern and polls as time passes.
fn run(seed: u64) -> (Vec<(Micros, u32)>, LinkStats) {
    let mut link = LinkConditioner::new(busy_config(), seed);
    let mut traffic = Rng::new(99);
    let (mut now, mut out) = (0, Vec::new());
    for i in 0..20_000u32 {
        now += traffic.below(3_000);
        link.send(now, 40 + traffic.below(1200) as usize, i);
        while let Some(d) = link.poll_timed(now) {
            out.push(d);
        }
        assert_stats_balance(&link);
    }
    out.extend(drain(&mut link));
    (out, link.stats())
}

#[test]
fn same_seed_same_output() {
    let (a, sa) = run(1234);
    let (b, sb) = run(1234);
    assert_eq!(a, b);
    assert_eq!(sa, sb);
    assert!(sa.dropped_loss > 0 && sa.dropped_queue > 0 && sa.duplicated > 0 && sa.reordered > 0, "{sa:?}");
    let (c, _) = run(1235);
    assert_ne!(a, c, "the seed matters");
}

#[test]
fn impairments_draw_from_independent_streams() {
    // Adding jitter, reordering and duplication to a lossy link must not change which
    // datagrams are lost: scenario comparisons rely on it.
    let lossy = cfg(|c| c.loss = LossModel::bursty(0.1, 2.0));
    let busy = LinkConfig {
        latency_us: 7_000,
        jitter: JitterModel::Gaussian { sigma_us: 3_000.0 },
        duplicate: 0.05,
        reorder: 0.05,
        reorder_delay_us: 5_000,
        ..lossy
    };
    let survivors = |c: LinkConfig| {
        let mut link = LinkConditioner::new(c, 17);
        for i in 0..5_000u64 {
            link.send(i * 1_000, 100, i);
        }
        let mut ids: Vec<u64> = drain(&mut link).into_iter().map(|(_, i)| i).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    };
    let a = survivors(lossy);
    assert!(a.len() < 4_700, "some loss happened");
    assert_eq!(a, survivors(busy));
}

#[test]
fn invalid_config_never_panics() {
    let bad = LinkConfig {
        latency_us: u64::MAX,
        jitter: JitterModel::Pareto { scale_us: f64::NAN, shape: 0.0 },
        loss: LossModel::GilbertElliott {
            p_good_to_bad: 2.0,
            p_bad_to_good: -1.0,
            loss_in_good: f64::NAN,
            loss_in_bad: 5.0,
        },
        duplicate: 7.0,
        reorder: f64::INFINITY,
        reorder_delay_us: u64::MAX,
        bandwidth_bytes_per_sec: 1,
        queue_limit_bytes: usize::MAX,
    };
    assert!(bad.validate().is_err());
    let mut link = LinkConditioner::new(bad, 16);
    for i in 0..1000u64 {
        link.send(u64::MAX - 1000 + i, usize::MAX / 2, i);
        let _ = link.poll(u64::MAX);
    }
    for jitter in [JitterModel::Gaussian { sigma_us: f64::INFINITY }, JitterModel::Uniform { max_us: u64::MAX }] {
        link.set_config(cfg(|c| (c.jitter, c.bandwidth_bytes_per_sec) = (jitter, u64::MAX)));
        for i in 0..100 {
            link.send(i, 1500, i);
        }
    }
    drain(&mut link);
    assert_stats_balance(&link);
}

#[test]
fn dropped_datagrams_come_back_from_send() {
    // Lost ones: exactly those never delivered, so a driver can recycle their buffers.
    let mut link = LinkConditioner::new(cfg(|c| c.loss = LossModel::Bernoulli { p: 0.3 }), 21);
    let mut returned = Vec::new();
    for i in 0..1000u32 {
        if let Some(back) = link.send(i as u64 * 1000, 100, i) {
            returned.push(back);
        }
    }
    let delivered: Vec<u32> = drain(&mut link).into_iter().map(|(_, i)| i).collect();
    assert_eq!(returned.len() as u64, link.stats().dropped_loss);
    assert!(returned.len() > 200, "about 30% lost: {}", returned.len());
    let mut all: Vec<u32> = returned.iter().chain(&delivered).copied().collect();
    all.sort_unstable();
    assert_eq!(all, (0..1000).collect::<Vec<_>>(), "each datagram is either delivered or returned");
    // Tail-dropped ones too.
    let mut link = LinkConditioner::new(cfg(|c| c.bandwidth_bytes_per_sec = 100_000), 22);
    let back: Vec<u32> = (0..100).filter_map(|i| link.send(0, 1000, i)).collect();
    assert_eq!(back.len() as u64, link.stats().dropped_queue);
    assert_eq!(back, (65..100).collect::<Vec<_>>());
}
