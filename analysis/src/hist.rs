//! A log-linear histogram of u64 values (ns), HdrHistogram-like: exact below 256,
//! then 128 sub-buckets per power of two (< 0.8 % relative error). Fixed size, so
//! 10^8 cycles cost the same memory as 10.

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS; // 128
/// Buckets: 0..128 exact, then 57 octaves (msb 7..=63) of 128.
pub const BUCKETS: usize = (SUB as usize) + 57 * (SUB as usize);

#[derive(Clone, Debug)]
pub struct LogHist {
    counts: Vec<u64>,
    pub total: u64,
    pub min: u64,
    pub max: u64,
    pub sum: u128,
}

impl Default for LogHist {
    fn default() -> Self {
        Self::new()
    }
}

pub fn index_of(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    let top = (v >> shift) - SUB; // 0..128
    (SUB + (msb - SUB_BITS) as u64 * SUB + top) as usize
}

/// Lowest and highest value that fall into bucket `i`.
pub fn bounds_of(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < SUB {
        return (i, i);
    }
    let octave = (i - SUB) / SUB; // msb - 7
    let top = (i - SUB) % SUB + SUB;
    let shift = octave as u32;
    let lo = top << shift;
    (lo, lo + ((1u64 << shift) - 1))
}

impl LogHist {
    pub fn new() -> Self {
        LogHist {
            counts: vec![0; BUCKETS],
            total: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        self.record_n(v, 1);
    }

    #[inline]
    pub fn record_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.counts[index_of(v)] += n;
        self.total += n;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v as u128 * n as u128;
    }

    pub fn merge(&mut self, o: &LogHist) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.total += o.total;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum += o.sum;
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    pub fn mean(&self) -> Option<f64> {
        (self.total > 0).then(|| self.sum as f64 / self.total as f64)
    }

    /// The value at quantile q (0..=1): the highest value of the bucket holding that
    /// rank, clamped to the recorded min and max (as HdrHistogram reports it).
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        if q <= 0.0 {
            return Some(self.min);
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(bounds_of(i).1.clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// Non-empty buckets as (low, high, count), ascending.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, &c)| {
                let (lo, hi) = bounds_of(i);
                (lo.max(self.min), hi.min(self.max), c)
            })
    }

    /// Count per bucket index (aligned between any two LogHists).
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Values above `v`.
    pub fn count_above(&self, v: u64) -> u64 {
        self.buckets()
            .filter(|(lo, _, _)| *lo > v)
            .map(|(_, _, c)| c)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values_and_stay_precise() {
        for v in [
            0u64,
            1,
            127,
            128,
            255,
            256,
            1000,
            123_456,
            9_300_000,
            u32::MAX as u64,
            u64::MAX,
        ] {
            let (lo, hi) = bounds_of(index_of(v));
            assert!(lo <= v && v <= hi, "{v} not in {lo}..{hi}");
            assert!(
                (hi - lo) as f64 <= v as f64 / 128.0 + 1.0,
                "{v}: {lo}..{hi} too wide"
            );
        }
        assert!(index_of(u64::MAX) < BUCKETS);
    }

    #[test]
    fn quantiles_match_sorted_values() {
        let mut h = LogHist::new();
        let vals: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        for &v in &vals {
            h.record(v);
        }
        let p50 = h.quantile(0.5).unwrap() as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.01, "{p50}");
        assert_eq!(h.quantile(1.0), Some(1_000_000));
        assert_eq!(h.quantile(0.0), Some(1000));
        assert_eq!(h.total, 1000);
        let c: u64 = h.buckets().map(|b| b.2).sum();
        assert_eq!(c, 1000);
        let mut t = LogHist::new();
        t.record_n(1000, 100);
        t.record_n(1_000_000, 5);
        assert_eq!(t.count_above(10_000), 5);
        let q95 = t.quantile(0.95).unwrap();
        assert!((1000..1008).contains(&q95), "{q95}");
        assert_eq!(t.quantile(0.96), Some(1_000_000));
    }
}
