//! A latency distribution (ns): an HdrHistogram at 2 significant digits (exact below
//! 256, then 128 sub-buckets per power of two, < 0.8 % relative error: the bucket
//! layout reports were always computed from), plus the exact extremes. Fixed size, so
//! 10^8 cycles cost the same memory as 10.
//!
//! The extremes are kept beside the histogram because HdrHistogram reports `max()` as
//! the top of its bucket (9.3 ms read back as up to 65 µs more): reports print the
//! value that was measured, and quantiles are clamped to it.

use hdrhistogram::Histogram;

/// 2 digits: what the reports' µs columns can show; 3 would only cost memory.
const SIGFIG: u8 = 2;

#[derive(Clone, Debug)]
pub struct Dist {
    hist: Histogram<u64>,
    min: u64,
    max: u64,
}

impl Default for Dist {
    fn default() -> Self {
        Self::new()
    }
}

impl Dist {
    pub fn new() -> Self {
        Dist {
            // Every u64 trackable; the same bounds for all, so any two merge and align.
            hist: Histogram::new_with_bounds(1, u64::MAX, SIGFIG).expect("valid bounds"),
            min: u64::MAX,
            max: 0,
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
        // In range by construction (bounds cover every u64); counts saturate.
        self.hist.saturating_record_n(v, n);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    pub fn merge(&mut self, o: &Dist) {
        self.hist.add(&o.hist).expect("same bounds");
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// The smallest value recorded (u64::MAX when none).
    pub fn min(&self) -> u64 {
        self.min
    }

    /// The largest value recorded, exactly (0 when none).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value at quantile q (0..=1): the highest value of the bucket holding that
    /// rank, clamped to the recorded min and max.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.is_empty() {
            return None;
        }
        if q <= 0.0 {
            return Some(self.min);
        }
        Some(
            self.hist
                .value_at_quantile(q.min(1.0))
                .clamp(self.min, self.max),
        )
    }

    /// Non-empty buckets as (low, high, count), ascending, clamped to min and max.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.hist.iter_recorded().map(|v| {
            let lo = self.hist.lowest_equivalent(v.value_iterated_to());
            // Not value_iterated_to(): that saturates one short in the top bucket.
            let hi = lo + (self.hist.equivalent_range(lo) - 1);
            (lo.max(self.min), hi.min(self.max), v.count_at_value())
        })
    }

    /// Count per bucket, every bucket (aligned between any two Dists).
    pub fn counts(&self) -> impl Iterator<Item = u64> + '_ {
        self.hist.iter_all().map(|v| v.count_at_value())
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
            let mut h = Dist::new();
            h.record(v);
            // Unclamped bucket bounds: the layout itself.
            let (lo, hi) = (h.hist.lowest_equivalent(v), h.hist.highest_equivalent(v));
            assert!(lo <= v && v <= hi, "{v} not in {lo}..{hi}");
            assert!(
                (hi - lo) as f64 <= v as f64 / 128.0 + 1.0,
                "{v}: {lo}..{hi} too wide"
            );
            // Exact below 256; 2 wide from 256: the layout the old reports used.
            if v < 256 {
                assert_eq!((lo, hi), (v, v));
            }
            assert_eq!(h.buckets().collect::<Vec<_>>(), [(v, v, 1)]);
            assert_eq!((h.min(), h.max(), h.quantile(0.5)), (v, v, Some(v)));
        }
        let h = Dist::new();
        assert_eq!(
            (
                h.hist.lowest_equivalent(257),
                h.hist.highest_equivalent(257)
            ),
            (256, 257)
        );
    }

    #[test]
    fn quantiles_match_sorted_values() {
        let mut h = Dist::new();
        let vals: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        for &v in &vals {
            h.record(v);
        }
        let p50 = h.quantile(0.5).unwrap() as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.01, "{p50}");
        assert_eq!(h.quantile(1.0), Some(1_000_000));
        assert_eq!(h.quantile(0.0), Some(1000));
        assert_eq!(h.len(), 1000);
        let c: u64 = h.buckets().map(|b| b.2).sum();
        assert_eq!(c, 1000);
        let mut t = Dist::new();
        t.record_n(1000, 100);
        t.record_n(1_000_000, 5);
        let q95 = t.quantile(0.95).unwrap();
        assert!((1000..1008).contains(&q95), "{q95}");
        assert_eq!(t.quantile(0.96), Some(1_000_000));
        // Merged: counts add, extremes widen, buckets stay aligned.
        h.merge(&t);
        assert_eq!((h.len(), h.min(), h.max()), (1105, 1000, 1_000_000));
        assert_eq!(h.counts().count(), Dist::new().counts().count());
    }
}
