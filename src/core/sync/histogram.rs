//! A histogram that forgets: old samples decay geometrically, so quantiles follow a
//! changing distribution (NetEQ's delay histogram, generalised to any quantile).

/// Fixed-range histogram with exponential forgetting.
#[derive(Debug, Clone)]
pub struct ForgettingHistogram {
    lo: f64,
    bin: f64,
    bins: Vec<f64>,
    total: f64,
    forget: f64,
    count_since_norm: u32,
}

impl ForgettingHistogram {
    /// Bins of width `bin` covering `[lo, hi)`; values outside fall in the end bins.
    /// Each new sample multiplies the weight of all older ones by `forget`.
    pub fn new(lo: f64, hi: f64, bin: f64, forget: f64) -> Self {
        let n = ((hi - lo) / bin).ceil().max(1.0) as usize;
        ForgettingHistogram { lo, bin, bins: vec![0.0; n], total: 0.0, forget, count_since_norm: 0 }
    }

    pub fn add(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        // Scaling every bin would cost O(bins) per sample; instead new samples get a
        // growing weight and everything is renormalised now and then.
        let w = 1.0 / self.forget.powf(self.count_since_norm as f64);
        self.count_since_norm += 1;
        let i = (((x - self.lo) / self.bin).floor().max(0.0) as usize).min(self.bins.len() - 1);
        self.bins[i] += w;
        self.total += w;
        if w > 1e12 {
            self.renormalise();
        }
    }

    fn renormalise(&mut self) {
        let scale = self.forget.powf(self.count_since_norm as f64);
        for b in &mut self.bins {
            *b *= scale;
        }
        self.total *= scale;
        self.count_since_norm = 0;
    }

    /// Effective number of samples (sum of weights, relative to the newest).
    pub fn weight(&self) -> f64 {
        self.total * self.forget.powf(self.count_since_norm as f64)
    }

    /// The `q`-quantile (interpolated within a bin), or None when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.total <= 0.0 {
            return None;
        }
        let target = q.clamp(0.0, 1.0) * self.total;
        let mut acc = 0.0;
        for (i, &b) in self.bins.iter().enumerate() {
            if acc + b >= target && b > 0.0 {
                let frac = ((target - acc) / b).clamp(0.0, 1.0);
                return Some(self.lo + (i as f64 + frac) * self.bin);
            }
            acc += b;
        }
        Some(self.lo + self.bins.len() as f64 * self.bin)
    }

    /// Moves every sample by `delta` (rounded to whole bins). Mass pushed past an end
    /// piles up in the end bin, as out-of-range samples do.
    pub fn shift(&mut self, delta: f64) {
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
    }

    /// The per-sample forgetting factor.
    pub fn forget(&self) -> f64 {
        self.forget
    }

    /// Changes the forgetting factor from the next sample on (the weights of the
    /// samples already in are kept).
    pub fn set_forget(&mut self, forget: f64) {
        self.renormalise();
        self.forget = forget;
    }

    pub fn clear(&mut self) {
        self.bins.iter_mut().for_each(|b| *b = 0.0);
        self.total = 0.0;
        self.count_since_norm = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rng::Rng;

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
