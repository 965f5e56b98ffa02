//! A histogram that forgets: old samples decay geometrically, so quantiles follow a
//! changing distribution (NetEQ's delay histogram, generalised to any quantile).

/// Fixed-range histogram with exponential forgetting.
#[derive(Debug, Clone)]
pub(super) struct ForgettingHistogram {
    lo: f64,
    bin: f64,
    bins: Vec<f64>,
    /// Sums of `BLOCK` consecutive bins, so a quantile scans blocks, then one block.
    blocks: Vec<f64>,
    total: f64,
    forget: f64,
    /// Weight of the next sample, relative to the last renormalisation.
    next_weight: f64,
}

const BLOCK: usize = 32;

impl ForgettingHistogram {
    /// Bins of width `bin` covering `[lo, hi)`; values outside fall in the end bins.
    /// Each new sample multiplies the weight of all older ones by `forget`.
    pub(super) fn new(lo: f64, hi: f64, bin: f64, forget: f64) -> Self {
        let n = ((hi - lo) / bin).ceil().max(1.0) as usize;
        ForgettingHistogram {
            lo,
            bin,
            bins: vec![0.0; n],
            blocks: vec![0.0; n.div_ceil(BLOCK)],
            total: 0.0,
            forget,
            next_weight: 1.0,
        }
    }

    pub(super) fn add(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        // Scaling every bin would cost O(bins) per sample; instead new samples get a
        // growing weight and everything is renormalised now and then.
        let w = self.next_weight;
        self.next_weight /= self.forget;
        let i = (((x - self.lo) / self.bin).floor().max(0.0) as usize).min(self.bins.len() - 1);
        self.bins[i] += w;
        self.blocks[i / BLOCK] += w;
        self.total += w;
        if w > 1e12 {
            self.renormalise();
        }
    }

    /// Scales every weight so the next sample weighs 1 again.
    fn renormalise(&mut self) {
        let scale = 1.0 / self.next_weight;
        for b in &mut self.bins {
            *b *= scale;
        }
        self.total *= scale;
        self.next_weight = 1.0;
        self.rebuild_blocks();
    }

    fn rebuild_blocks(&mut self) {
        for (k, b) in self.blocks.iter_mut().enumerate() {
            *b = self.bins[k * BLOCK..((k + 1) * BLOCK).min(self.bins.len())].iter().sum();
        }
    }

    /// Effective number of samples (sum of weights, relative to the newest).
    pub(super) fn weight(&self) -> f64 {
        self.total * self.forget / self.next_weight
    }

    /// The `q`-quantile (interpolated within a bin), or None when empty.
    pub(super) fn quantile(&self, q: f64) -> Option<f64> {
        if self.total <= 0.0 {
            return None;
        }
        let target = q.clamp(0.0, 1.0) * self.total;
        let mut acc = 0.0;
        for (k, &sum) in self.blocks.iter().enumerate() {
            if acc + sum >= target && sum > 0.0 {
                // The first bin that reaches the target is in this block (unless rounding
                // in the block sum says otherwise: then carry on past it).
                let mut inner = acc;
                for i in k * BLOCK..((k + 1) * BLOCK).min(self.bins.len()) {
                    let b = self.bins[i];
                    if inner + b >= target && b > 0.0 {
                        let frac = ((target - inner) / b).clamp(0.0, 1.0);
                        return Some(self.lo + (i as f64 + frac) * self.bin);
                    }
                    inner += b;
                }
            }
            acc += sum;
        }
        Some(self.lo + self.bins.len() as f64 * self.bin)
    }

    /// Moves every sample by `delta` (rounded to whole bins). Mass pushed past an end
    /// piles up in the end bin, as out-of-range samples do.
    pub(super) fn shift(&mut self, delta: f64) {
        let n = self.bins.len();
        let k = (delta / self.bin).round();
        if k == 0.0 {
            return;
        }
        let m = (k.abs() as usize).min(n - 1);
        if k > 0.0 {
            // Bins n-1-m ..= n-1 all land in the last bin.
            let tail: f64 = self.bins[n - 1 - m..].iter().sum();
            self.bins.copy_within(0..n - 1 - m, m);
            self.bins[..m].iter_mut().for_each(|b| *b = 0.0);
            self.bins[n - 1] = tail;
        } else {
            let head: f64 = self.bins[..=m].iter().sum();
            self.bins.copy_within(m + 1.., 1);
            self.bins[n - m..].iter_mut().for_each(|b| *b = 0.0);
            self.bins[0] = head;
        }
        self.rebuild_blocks();
    }

    /// The per-sample forgetting factor.
    pub(super) fn forget(&self) -> f64 {
        self.forget
    }

    /// Changes the forgetting factor from the next sample on (the weights of the
    /// samples already in are kept).
    pub(super) fn set_forget(&mut self, forget: f64) {
        self.renormalise();
        self.forget = forget;
    }

    pub(super) fn clear(&mut self) {
        self.bins.iter_mut().for_each(|b| *b = 0.0);
        self.blocks.iter_mut().for_each(|b| *b = 0.0);
        self.total = 0.0;
        self.next_weight = 1.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn quantiles_of_a_normal_and_forgetting() {
        let mut h = ForgettingHistogram::new(-10.0, 10.0, 0.02, 0.999);
        let mut r = Rng::new(1);
        for _ in 0..50_000 {
            h.add(r.normal());
        }
        assert!((h.quantile(0.5).unwrap()).abs() < 0.05);
        assert!((h.quantile(0.01).unwrap() + 2.326).abs() < 0.15, "{:?}", h.quantile(0.01));
        assert!((h.weight() - 1000.0).abs() < 5.0, "effective samples {}", h.weight());
        // The distribution moves: after ~7 memory lengths the old one is forgotten.
        for _ in 0..7_000 {
            h.add(r.normal() + 5.0);
        }
        assert!((h.quantile(0.5).unwrap() - 5.0).abs() < 0.1);
        assert!(h.quantile(0.01).unwrap() > 2.0);
    }

    #[test]
    fn shift_moves_mass_and_keeps_it() {
        let mut h = ForgettingHistogram::new(0.0, 10.0, 1.0, 1.0);
        for x in [0.5, 2.5, 8.5, 9.5] {
            h.add(x);
        }
        h.shift(3.0);
        assert_eq!(h.bins, vec![0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 2.0]);
        h.shift(-4.0);
        assert_eq!(h.bins, vec![1.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(h.bins.iter().sum::<f64>(), 4.0);
    }

    /// The plain scan over every bin, to check the block-wise one against.
    fn scan(h: &ForgettingHistogram, q: f64) -> f64 {
        let target = q * h.bins.iter().sum::<f64>();
        let mut acc = 0.0;
        for (i, &b) in h.bins.iter().enumerate() {
            if acc + b >= target && b > 0.0 {
                return h.lo + (i as f64 + ((target - acc) / b).clamp(0.0, 1.0)) * h.bin;
            }
            acc += b;
        }
        h.lo + h.bins.len() as f64 * h.bin
    }

    #[test]
    fn block_sums_follow_adds_shifts_and_renormalisation() {
        let mut h = ForgettingHistogram::new(-32.0, 64.0, 1.0 / 32.0, 0.95);
        let mut r = Rng::new(5);
        for k in 0..3000 {
            h.add(r.normal() * 3.0 + (k % 7) as f64);
            if k % 500 == 0 {
                h.shift(if k % 1000 == 0 { 4.0 } else { -4.0 });
            }
            if k % 100 == 0 {
                for q in [0.001, 0.01, 0.3, 0.5, 0.99] {
                    let (a, b) = (h.quantile(q).unwrap(), scan(&h, q));
                    assert!((a - b).abs() < 1e-6, "q {q}: {a} vs {b}");
                }
            }
        }
        h.set_forget(0.999);
        assert!((h.quantile(0.5).unwrap() - scan(&h, 0.5)).abs() < 1e-6);
    }

    #[test]
    fn low_quantile_rises_fast_when_values_drop() {
        let mut h = ForgettingHistogram::new(-10.0, 10.0, 0.05, 0.995);
        for _ in 0..2000 {
            h.add(3.0);
        }
        for _ in 0..5 {
            h.add(0.0);
        }
        assert!(h.quantile(0.01).unwrap() < 0.1, "5 low samples already move the 1% quantile");
        assert_eq!(ForgettingHistogram::new(0.0, 1.0, 0.1, 0.9).quantile(0.5), None);
    }
}
