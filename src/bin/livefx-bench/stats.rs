//! Percentiles of one side of a benchmark, and the median and spread of per-slice ratios.

use hdrhistogram::Histogram;

/// A histogram of latencies in whole µs (as cyclictest counts them) up to 10 s; values
/// past the bound are recorded at the bound.
pub fn new_us() -> Histogram<u64> {
    Histogram::new_with_max(10_000_000, 3).expect("static histogram bounds")
}

/// A histogram of durations in ns up to 10 s.
pub fn new_ns() -> Histogram<u64> {
    Histogram::new_with_max(10_000_000_000, 3).expect("static histogram bounds")
}

/// count, p50, p99, p99.9, max, in the histogram's unit divided by `div`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Figures {
    pub n: u64,
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

pub fn figures(h: &Histogram<u64>, div: f64) -> Figures {
    if h.is_empty() {
        return Figures::default();
    }
    let q = |q: f64| h.value_at_quantile(q) as f64 / div;
    Figures {
        n: h.len(),
        p50: q(0.5),
        p99: q(0.99),
        p999: q(0.999),
        max: h.max() as f64 / div,
    }
}

/// a / b, or None when b is 0 (a 0 µs percentile has no meaningful ratio).
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// Median, lowest and highest of `v` (None when empty).
pub fn median_spread(v: &[f64]) -> Option<(f64, f64, f64)> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let med = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    Some((med, s[0], s[n - 1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        assert_eq!(median_spread(&[3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(median_spread(&[4.0, 1.0, 2.0, 3.0]), Some((2.5, 1.0, 4.0)));
        assert_eq!(median_spread(&[]), None);
        assert_eq!(ratio(1.0, 0.0), None);
    }

    #[test]
    fn figures_of_whole_microseconds() {
        let mut h = new_us();
        for v in 1..=1000u64 {
            h.record(v).unwrap();
        }
        let f = figures(&h, 1.0);
        assert_eq!(
            (f.n, f.p50, f.p99, f.p999, f.max),
            (1000, 500.0, 990.0, 999.0, 1000.0)
        );
    }
}
