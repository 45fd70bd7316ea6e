//! Small-sample statistics for latencies: medians and spreads, the Mann–Whitney U test
//! (exact without ties, normal approximation with tie correction otherwise), and an
//! exact conditional test for two event rates (xruns per hour).

use crate::dist::Dist;

pub fn sorted(v: &[f64]) -> Vec<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(|a, b| a.total_cmp(b));
    s
}

pub fn median(s: &[f64]) -> Option<f64> {
    quantile(s, 0.5)
}

/// Linear-interpolated quantile of sorted values.
pub fn quantile(s: &[f64], q: f64) -> Option<f64> {
    if s.is_empty() {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (s.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(s[lo] + (s[hi] - s[lo]) * (pos - lo as f64))
}

pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Sample standard deviation as a percentage of the mean (LKP's "±x%").
pub fn cv_percent(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let m = mean(v)?;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
    (m.abs() > 0.0).then(|| 100.0 * var.sqrt() / m.abs())
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample (number of pairs where the first is larger, ties half).
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    pub exact: bool,
}

/// Two-sided Mann–Whitney U test. None when a side is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let mut all: Vec<(f64, u8)> = a
        .iter()
        .map(|&x| (x, 0))
        .chain(b.iter().map(|&x| (x, 1)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    // Average ranks over ties.
    let mut r1 = 0.0;
    let mut ties = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        let avg = (i + j) as f64 / 2.0 + 1.0;
        r1 += avg * all[i..=j].iter().filter(|x| x.1 == 0).count() as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    let u = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    // Ties inside one sample do not change U; only ties across the samples need the
    // normal approximation's correction.
    let cross_ties = a.iter().any(|x| b.contains(x));
    if !cross_ties && n1 <= 60 && n2 <= 60 {
        return Some(MannWhitney {
            u,
            p: exact_p(n1, n2, u),
            exact: true,
        });
    }
    Some(MannWhitney {
        u,
        p: normal_p(n1 as f64, n2 as f64, u, ties),
        exact: false,
    })
}

/// Mann–Whitney over two histograms with aligned buckets: each bucket is one group of
/// ties, so 10^8 values cost one pass over the buckets.
pub fn mann_whitney_hist(a: &Dist, b: &Dist) -> Option<MannWhitney> {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    if n1 == 0.0 || n2 == 0.0 {
        return None;
    }
    let mut r1 = 0.0;
    let mut ties = 0.0;
    let mut below = 0.0;
    for (ca, cb) in a.counts().zip(b.counts()) {
        let t = (ca + cb) as f64;
        if t == 0.0 {
            continue;
        }
        r1 += ca as f64 * (below + (t + 1.0) / 2.0);
        ties += t * t * t - t;
        below += t;
    }
    let u = r1 - n1 * (n1 + 1.0) / 2.0;
    Some(MannWhitney {
        u,
        p: normal_p(n1, n2, u, ties),
        exact: false,
    })
}

fn normal_p(n1: f64, n2: f64, u: f64, ties: f64) -> f64 {
    let n = n1 + n2;
    let mu = n1 * n2 / 2.0;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0; // every value tied: no evidence of a difference
    }
    let z = ((u - mu).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_sf(z)).min(1.0)
}

/// Exact two-sided p of U for samples without ties: the distribution of U is the
/// coefficient list of the Gaussian binomial [n1+n2 choose n1].
fn exact_p(n1: usize, n2: usize, u: f64) -> f64 {
    let max = n1 * n2;
    let mut c = vec![0f64; max + 1];
    c[0] = 1.0;
    // prod_{i=1..n1} (1 - q^(n2+i)) / (1 - q^i)
    for i in 1..=n1 {
        let m = n2 + i;
        for k in (m..=max).rev() {
            c[k] -= c[k - m];
        }
        for k in i..=max {
            c[k] += c[k - i];
        }
    }
    let total: f64 = c.iter().sum();
    let uu = u.round() as usize;
    let le: f64 = c[..=uu.min(max)].iter().sum::<f64>() / total;
    let ge: f64 = c[uu.min(max)..].iter().sum::<f64>() / total;
    (2.0 * le.min(ge)).min(1.0)
}

/// The smallest two-sided p an exact test can reach with these sample sizes.
pub fn min_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let mut c = 1.0f64; // 1 / C(n1+n2, n1)
    for i in 0..n1 {
        c *= (i + 1) as f64 / (n2 + i + 1) as f64;
    }
    (2.0 * c).min(1.0)
}

/// Upper tail of the standard normal distribution.
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// erfc with relative error < 1.2e-7 (Numerical Recipes' Chebyshev fit).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.26551223
            + t * (1.00002368
                + t * (0.37409196
                    + t * (0.09678418
                        + t * (-0.18628806
                            + t * (0.27886807
                                + t * (-1.13520398
                                    + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
            .exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

fn ln_gamma(x: f64) -> f64 {
    // Lanczos, g = 7.
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

fn binom_pmf(n: u64, k: u64, p: f64) -> f64 {
    if p <= 0.0 {
        return if k == 0 { 1.0 } else { 0.0 };
    }
    if p >= 1.0 {
        return if k == n { 1.0 } else { 0.0 };
    }
    let (nf, kf) = (n as f64, k as f64);
    (ln_gamma(nf + 1.0) - ln_gamma(kf + 1.0) - ln_gamma(nf - kf + 1.0)
        + kf * p.ln()
        + (nf - kf) * (1.0 - p).ln())
    .exp()
}

/// Two-sided p that two Poisson counts, k1 over exposure t1 and k2 over t2, come from
/// the same rate (conditional binomial test). 1.0 when there are no events.
pub fn rate_p(k1: u64, t1: f64, k2: u64, t2: f64) -> f64 {
    let n = k1 + k2;
    if n == 0 || t1 <= 0.0 || t2 <= 0.0 {
        return 1.0;
    }
    let p = t2 / (t1 + t2);
    if n > 20_000 {
        let mu = n as f64 * p;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        let z = ((k2 as f64 - mu).abs() - 0.5).max(0.0) / sd;
        return (2.0 * normal_sf(z)).min(1.0);
    }
    let pk = binom_pmf(n, k2, p);
    // Sum of all outcomes no more likely than the observed one.
    let mut s = 0.0;
    for k in 0..=n {
        let q = binom_pmf(n, k, p);
        if q <= pk * (1.0 + 1e-7) {
            s += q;
        }
    }
    s.min(1.0)
}

/// 95 % upper bound of a Poisson rate when nothing was seen in `hours` ("rule of three").
pub fn zero_events_upper_per_hour(hours: f64) -> Option<f64> {
    (hours > 0.0).then(|| -(0.05f64).ln() / hours)
}

/// "p < 0.001", "p = 0.03", "p = 0.41".
pub fn fmt_p(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else if p < 0.01 {
        format!("p = {p:.3}")
    } else {
        format!("p = {p:.2}")
    }
}

/// How sure, in words, for a p-value.
pub fn sureness(p: f64) -> &'static str {
    if p < 0.001 {
        "clear"
    } else if p < 0.01 {
        "very likely real"
    } else if p < 0.05 {
        "likely real; more trials would make it certain"
    } else {
        "not distinguishable from chance with this many trials"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_and_spread() {
        let s = sorted(&[3.0, 1.0, 2.0, 4.0]);
        assert_eq!(median(&s), Some(2.5));
        assert_eq!(quantile(&s, 0.0), Some(1.0));
        assert_eq!(quantile(&s, 1.0), Some(4.0));
        assert!(median(&[]).is_none());
        let cv = cv_percent(&[10.0, 10.0, 10.0]).unwrap();
        assert_eq!(cv, 0.0);
        assert!((cv_percent(&[9.0, 11.0]).unwrap() - 14.142).abs() < 0.01);
    }

    #[test]
    fn exact_mann_whitney_matches_tables() {
        // Complete separation 8 vs 8: p = 2 / C(16, 8) = 2 / 12870.
        let a: Vec<f64> = (0..8).map(|i| 1500.0 + i as f64).collect();
        let b: Vec<f64> = (0..8).map(|i| 0.6 + i as f64 * 0.1).collect();
        let r = mann_whitney(&a, &b).unwrap();
        assert!(r.exact);
        assert_eq!(r.u, 64.0);
        assert!((r.p - 2.0 / 12870.0).abs() < 1e-12, "{}", r.p);
        assert!((min_p(8, 8) - 2.0 / 12870.0).abs() < 1e-12);
        // 3 vs 3, U = 0: two-sided 0.1 (tables).
        let r = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert_eq!(r.u, 0.0);
        assert!((r.p - 0.1).abs() < 1e-12);
        // Interleaved samples: nothing.
        let r = mann_whitney(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0]).unwrap();
        assert!(r.p > 0.5, "{}", r.p);
    }

    #[test]
    fn ties_use_normal_approximation() {
        // Ties within one sample only: still exact.
        let r = mann_whitney(&[5.0, 5.0, 6.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!(r.exact && (r.p - 0.1).abs() < 1e-12, "{r:?}");
        let a = [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0];
        let b = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0, 1.0];
        let r = mann_whitney(&a, &b).unwrap();
        assert!(!r.exact);
        assert!(r.p > 0.5);
        let r = mann_whitney(&[5.0; 10], &[5.0; 10]).unwrap();
        assert_eq!(r.p, 1.0);
        let mut x = vec![1.0; 20];
        x.extend([2.0; 20]);
        let r = mann_whitney(&[9.0; 20], &x).unwrap();
        assert!(r.p < 1e-6, "{}", r.p);
    }

    #[test]
    fn histogram_mann_whitney_agrees_with_values() {
        let a: Vec<u64> = (0..200).map(|i| 1000 + i * 3).collect();
        let b: Vec<u64> = (0..200).map(|i| 1100 + i * 3).collect();
        let (mut ha, mut hb) = (Dist::new(), Dist::new());
        a.iter().for_each(|&v| ha.record(v));
        b.iter().for_each(|&v| hb.record(v));
        let h = mann_whitney_hist(&ha, &hb).unwrap();
        let af: Vec<f64> = a.iter().map(|&v| v as f64).collect();
        let bf: Vec<f64> = b.iter().map(|&v| v as f64).collect();
        let v = mann_whitney(&af, &bf).unwrap();
        assert!(h.p < 1e-3 && v.p < 1e-3, "{} {}", h.p, v.p);
        assert!(mann_whitney_hist(&ha, &ha).unwrap().p > 0.99);
    }

    #[test]
    fn rate_test() {
        assert_eq!(rate_p(0, 1.0, 0, 1.0), 1.0);
        assert!(rate_p(0, 10.0, 37, 10.0) < 1e-9);
        assert!(rate_p(10, 10.0, 12, 10.0) > 0.5);
        // Same counts, twice the exposure on one side: a real difference at these counts.
        assert!(rate_p(100, 1.0, 100, 2.0) < 0.01);
        assert!((zero_events_upper_per_hour(1.0).unwrap() - 2.9957).abs() < 1e-3);
        assert!(normal_sf(1.959964).abs() - 0.025 < 1e-6);
    }
}
