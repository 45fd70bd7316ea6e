//! Small-sample statistics for latencies: medians and spreads, the Mann–Whitney U test
//! (exact without ties, normal approximation with tie correction otherwise), an exact
//! conditional test for two event rates (xruns per hour), and the per-trial tests the
//! verdicts use: Welch's t on per-trial values, a rate test over per-trial counts that
//! allows over-dispersion, and Holm's correction for testing several metrics at once.

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

/// One side of a rank test over trials: measured values, trials without a value
/// (timed out: slower than any), and censored ones (ended early: each known only to be
/// at least its value).
#[derive(Debug, Clone, Copy)]
pub struct TrialValues<'a> {
    pub values: &'a [f64],
    pub missing: usize,
    pub censored: &'a [f64],
}

/// Both sides as a rank test can order them, and the cap used, if any. A censored value
/// cannot be placed against a measured value above its censoring point, nor against
/// another censored value; so every value at or above the lowest censoring point of
/// either side (`cap`) is put at +∞, one group of ties, with the missing ones. That is
/// min(x, cap) for every trial, one monotone map of both sides, known for every trial
/// (a censored value is ≥ its point ≥ cap): the test stays exact and loses only the
/// order above the cap, which nothing measured. Without censored values, only missing
/// ones go to +∞, as before.
pub fn censored_ranks(a: TrialValues, b: TrialValues) -> (Vec<f64>, Vec<f64>, Option<f64>) {
    let cap = a
        .censored
        .iter()
        .chain(b.censored)
        .copied()
        .fold(None, |m: Option<f64>, c| Some(m.map_or(c, |m| m.min(c))));
    let side = |t: TrialValues| -> Vec<f64> {
        t.values
            .iter()
            .map(|&x| {
                if cap.is_some_and(|c| x >= c) {
                    f64::INFINITY
                } else {
                    x
                }
            })
            .chain(std::iter::repeat_n(
                f64::INFINITY,
                t.missing + t.censored.len(),
            ))
            .collect()
    };
    (side(a), side(b), cap)
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

/// Regularized incomplete beta function I_x(a, b) (Numerical Recipes' continued
/// fraction, relative error ~1e-12 here).
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    // The continued fraction converges fast for x < (a + 1) / (a + b + 2).
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_cf(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-14 {
            break;
        }
    }
    h
}

/// Upper tail P(T > t) of Student's t with `df` degrees of freedom (df may be
/// fractional, as Welch's is).
pub fn student_t_sf(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return if t > 0.0 { 0.0 } else { 1.0 };
    }
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 { tail } else { 1.0 - tail }
}

/// Welch's t-test between two samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    /// Mean of `b` minus mean of `a`, over the pooled standard error.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's unequal-variance t-test of `b` against `a`; each side needs two values or
/// more. `min_var` floors each side's variance (the values' own resolution), so
/// identical quantized values never give a certainty they do not hold.
pub fn welch(a: &[f64], b: &[f64], min_var: f64) -> Option<Welch> {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let var = |v: &[f64], m: f64| {
        (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).max(min_var)
    };
    let (ma, mb) = (mean(a)?, mean(b)?);
    let (va, vb) = (var(a, ma), var(b, mb));
    let (sa, sb) = (va / na, vb / nb);
    let se2 = sa + sb;
    if se2 <= 0.0 {
        let p = if ma == mb { 1.0 } else { 0.0 };
        return Some(Welch {
            t: if ma == mb {
                0.0
            } else {
                f64::INFINITY.copysign(mb - ma)
            },
            df: na + nb - 2.0,
            p,
        });
    }
    let t = (mb - ma) / se2.sqrt();
    let df = se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    Some(Welch {
        t,
        df,
        p: (2.0 * student_t_sf(t.abs(), df)).min(1.0),
    })
}

/// Per-trial values known to 1 % (the latency histograms keep two significant digits):
/// the variance floor of their logarithms for `welch`.
pub const LOG_RESOLUTION_VAR: f64 = 0.01 * 0.01 / 12.0;

/// Welch's t on the logarithms of positive per-trial values (latencies are skewed and
/// change by factors); None when a side has fewer than two values or any is not
/// positive.
pub fn log_welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.iter().chain(b).any(|x| *x <= 0.0) {
        return None;
    }
    let la: Vec<f64> = a.iter().map(|x| x.ln()).collect();
    let lb: Vec<f64> = b.iter().map(|x| x.ln()).collect();
    welch(&la, &lb, LOG_RESOLUTION_VAR)
}

/// The geometric mean of positive values (what `log_welch` compares).
pub fn geo_mean(v: &[f64]) -> Option<f64> {
    if v.is_empty() || v.iter().any(|x| *x <= 0.0 || !x.is_finite()) {
        return None;
    }
    Some((v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// Two event rates compared over per-trial counts, allowing over-dispersion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateTest {
    /// Two-sided p-value.
    pub p: f64,
    /// The between-trial variance of the counts over what a Poisson process gives
    /// (Pearson's χ² over its degrees of freedom), at least 1.
    pub dispersion: f64,
    /// Degrees of freedom of that estimate: trials minus 2.
    pub df: usize,
}

/// Events per trial, `(count, exposure)` for each trial of `a` and of `b`, compared as
/// rates (quasi-Poisson): the dispersion φ is estimated from how much the trials'
/// counts vary around their side's rate (Pearson's χ² over trials − 2, at least 1),
/// and the totals, divided by φ (the "effective" counts, whose variance is their mean
/// again), go through the conditional test of two Poisson counts: given their sum, B's
/// share is binomial with the share of the exposure. The binomial tails are the
/// regularized incomplete beta function, so counts divided by φ need not be whole and
/// the p-value moves smoothly with φ (at φ = 1 it is the exact test's, by doubling the
/// smaller tail). Trials without exposure are left out; None with fewer than three
/// trials in all (no degree of freedom for φ).
pub fn overdispersed_rate(a: &[(u64, f64)], b: &[(u64, f64)]) -> Option<RateTest> {
    let a: Vec<(u64, f64)> = a.iter().copied().filter(|x| x.1 > 0.0).collect();
    let b: Vec<(u64, f64)> = b.iter().copied().filter(|x| x.1 > 0.0).collect();
    if a.is_empty() || b.is_empty() || a.len() + b.len() < 3 {
        return None;
    }
    let df = a.len() + b.len() - 2;
    let tot = |v: &[(u64, f64)]| {
        (
            v.iter().map(|x| x.0).sum::<u64>(),
            v.iter().map(|x| x.1).sum::<f64>(),
        )
    };
    let ((ka, ta), (kb, tb)) = (tot(&a), tot(&b));
    let pearson = |v: &[(u64, f64)], k: u64, t: f64| -> f64 {
        let rate = k as f64 / t;
        if rate <= 0.0 {
            return 0.0;
        }
        v.iter()
            .map(|&(c, e)| (c as f64 - rate * e).powi(2) / (rate * e))
            .sum()
    };
    let x2 = pearson(&a, ka, ta) + pearson(&b, kb, tb);
    let phi = (x2 / df as f64).max(1.0);
    let (xa, xb) = (ka as f64 / phi, kb as f64 / phi);
    let n = xa + xb;
    if n <= 0.0 {
        return Some(RateTest {
            p: 1.0,
            dispersion: phi,
            df,
        });
    }
    let share = tb / (ta + tb);
    // P(X ≥ x) and P(X ≤ x) for X ~ Binomial(n, share), n and x real.
    let upper = |x: f64| {
        if x <= 0.0 {
            1.0
        } else {
            inc_beta(x, n - x + 1.0, share)
        }
    };
    let lower = |x: f64| {
        // Whole only at x = n: for a real x within 1 of n (counts divided by φ) the tail
        // is still below 1 (n − x > 0 is a valid beta parameter).
        if x >= n {
            1.0
        } else {
            1.0 - inc_beta(x + 1.0, n - x, share)
        }
    };
    let p = (2.0 * upper(xb).min(lower(xb))).min(1.0);
    Some(RateTest {
        p,
        dispersion: phi,
        df,
    })
}

/// Holm's step-down adjustment of `p` (any order in, the same order out): each
/// adjusted p-value can be compared with the level as if it were the only test, and the
/// chance of any false call among them stays at most that level.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut idx: Vec<usize> = (0..m).collect();
    idx.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let mut out = vec![1.0; m];
    let mut run = 0.0f64;
    for (rank, &i) in idx.iter().enumerate() {
        run = run.max(((m - rank) as f64 * p[i]).min(1.0));
        out[i] = run;
    }
    out
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
    fn censored_values_are_ranked_only_where_their_order_is_known() {
        let t = |values: &'static [f64], missing, censored: &'static [f64]| TrialValues {
            values,
            missing,
            censored,
        };
        // None censored: missing ones last, as before, no cap.
        let (a, b, cap) = censored_ranks(t(&[1.0, 2.0], 1, &[]), t(&[3.0], 0, &[]));
        assert_eq!(
            (a, b, cap),
            (vec![1.0, 2.0, f64::INFINITY], vec![3.0], None)
        );
        // Censored at 100: above every measured value, tied among themselves.
        let (a, b, cap) = censored_ranks(
            t(&[0.8, 0.9, 1.0], 0, &[]),
            t(&[], 0, &[100.0, 100.0, 100.0]),
        );
        assert_eq!(cap, Some(100.0));
        let m = mann_whitney(&b, &a).unwrap();
        assert!((m.p - 0.1).abs() < 1e-9, "complete separation 3 v 3: {m:?}");
        // A measured value above the lowest censoring point cannot be ordered against
        // the censored ones: it joins their tie at the cap, as does a timed-out trial.
        let (a, b, _) = censored_ranks(t(&[0.8, 250.0], 1, &[]), t(&[99.0], 0, &[100.0, 120.0]));
        let inf = f64::INFINITY;
        assert_eq!((a, b), (vec![0.8, inf, inf], vec![99.0, inf, inf]));
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
        assert!((zero_events_upper_per_hour(2.0).unwrap() - 1.4979).abs() < 1e-3);
        assert_eq!(zero_events_upper_per_hour(0.0), None);
        // Was `normal_sf(1.959964).abs() - 0.025 < 1e-6`: true for any value up to 0.025.
        assert!((normal_sf(1.959964) - 0.025).abs() < 1e-6);
    }

    /// |got - want| within `tol` of `want` (relative), with the values in the message.
    #[track_caller]
    fn near(got: f64, want: f64, tol: f64) {
        assert!(
            (got - want).abs() <= tol * want.abs().max(1e-300),
            "got {got:e}, want {want:e}"
        );
    }

    // Reference values below: SciPy 1.17.1 (scipy.stats.norm.sf, scipy.special.gammaln,
    // scipy.stats.binom.pmf, binomtest(k, n, p).pvalue, mannwhitneyu(a, b,
    // method="asymptotic", use_continuity=True)), computed for these tests.

    #[test]
    fn the_normal_tail_matches_reference_values() {
        near(normal_sf(0.0), 0.5, 1e-7);
        near(normal_sf(1.0), 0.15865525393145707, 1e-6);
        near(normal_sf(1.959964), 0.024999999096442398, 1e-6);
        near(normal_sf(-1.959964), 0.9750000009035577, 1e-6);
        near(normal_sf(3.0), 0.0013498980316300933, 1e-6);
    }

    #[test]
    fn ln_gamma_matches_reference_values() {
        for (x, want) in [
            (0.1, 2.252712651734206),
            (0.3, 1.0957979948180756),
            (0.5, 0.5723649429247),
            (3.7, 1.428072326665388),
            (10.0, 12.801827480081469),
            (100.5, 361.43554046777757),
        ] {
            near(ln_gamma(x), want, 1e-12);
        }
        assert!(ln_gamma(1.0).abs() < 1e-12 && ln_gamma(2.0).abs() < 1e-12);
    }

    #[test]
    fn binomial_probabilities_match_reference_values() {
        near(binom_pmf(10, 3, 0.3), 0.2668279319999998, 1e-10);
        near(binom_pmf(40, 7, 0.25), 0.08572956051947798, 1e-10);
        // The certain cases.
        assert_eq!(binom_pmf(5, 0, 0.0), 1.0);
        assert_eq!(binom_pmf(5, 2, 0.0), 0.0);
        assert_eq!(binom_pmf(5, 5, 1.0), 1.0);
        assert_eq!(binom_pmf(5, 4, 1.0), 0.0);
    }

    #[test]
    fn rate_test_matches_the_exact_binomial_and_its_normal_approximation() {
        // Exact: the outcomes no more likely than the one seen, mirror images included.
        near(rate_p(3, 1.0, 9, 1.0), 0.14599609375, 1e-9);
        near(rate_p(5, 1.0, 30, 3.0), 0.17319207766198114, 1e-9);
        // 20000 events is still exact (the normal approximation gives 0.1593851).
        near(rate_p(9_900, 1.0, 10_100, 1.0), 0.15938343598473417, 1e-8);
        // Past 20000, the normal approximation with continuity correction.
        near(
            rate_p(12_000, 1.0, 13_000, 1.0),
            2.645747391113114e-10,
            1e-6,
        );
        near(rate_p(9_700, 1.0, 20_300, 2.0), 0.0002443492109915307, 1e-6);
        // No exposure on one side: no test.
        assert_eq!(rate_p(3, 0.0, 5, 1.0), 1.0);
        assert_eq!(rate_p(3, 1.0, 5, 0.0), 1.0);
    }

    #[test]
    fn ties_across_samples_match_the_reference_normal_approximation() {
        let a = [1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 5.0, 6.0];
        let b = [3.0, 4.0, 5.0, 5.0, 6.0, 7.0, 7.0, 8.0];
        let r = mann_whitney(&a, &b).unwrap();
        assert!(!r.exact);
        assert_eq!(r.u, 11.0);
        near(r.p, 0.029841918606115878, 1e-6);
        // The histogram form (each value its own bucket) gives the same.
        let (mut ha, mut hb) = (Dist::new(), Dist::new());
        a.iter().for_each(|&v| ha.record(v as u64));
        b.iter().for_each(|&v| hb.record(v as u64));
        let h = mann_whitney_hist(&ha, &hb).unwrap();
        assert_eq!(h.u, 11.0);
        near(h.p, r.p, 1e-12);
        // An empty side: no test.
        assert!(mann_whitney(&[], &b).is_none() && mann_whitney(&a, &[]).is_none());
        assert!(mann_whitney_hist(&Dist::new(), &hb).is_none());
        assert!(mann_whitney_hist(&ha, &Dist::new()).is_none());
        assert_eq!(min_p(0, 4), 1.0);
    }

    #[test]
    fn spread_and_wording_at_their_boundaries() {
        // Sample variance divides by n - 1: 1, 2, 3 has sd 1, mean 2.
        assert!((cv_percent(&[1.0, 2.0, 3.0]).unwrap() - 50.0).abs() < 1e-9);
        assert_eq!(cv_percent(&[-1.0, 1.0]), None, "mean 0: no percentage");
        assert_eq!(fmt_p(0.0005), "p < 0.001");
        assert_eq!(fmt_p(0.001), "p = 0.001");
        assert_eq!(fmt_p(0.005), "p = 0.005");
        assert_eq!(fmt_p(0.01), "p = 0.01");
        assert_eq!(fmt_p(0.5), "p = 0.50");
        assert_eq!(sureness(0.0005), "clear");
        assert_eq!(sureness(0.001), "very likely real");
        assert_eq!(sureness(0.005), "very likely real");
        assert_eq!(sureness(0.01), sureness(0.03));
        assert!(sureness(0.03).starts_with("likely real"));
        assert!(sureness(0.05).starts_with("not distinguishable"));
        assert!(sureness(0.5).starts_with("not distinguishable"));
    }

    #[test]
    fn student_t_matches_closed_forms_and_tables() {
        // df = 1 is Cauchy: P(T > 1) = 1/4; df = 2: 1/2 - t / (2 sqrt(t² + 2)).
        assert!((student_t_sf(1.0, 1.0) - 0.25).abs() < 1e-10);
        let t: f64 = 1.7;
        let want = 0.5 - t / (2.0 * (t * t + 2.0).sqrt());
        assert!((student_t_sf(t, 2.0) - want).abs() < 1e-10);
        assert!((student_t_sf(-t, 2.0) - (1.0 - want)).abs() < 1e-10);
        // R: 2 * pt(-2, 5) = 0.1019395; qt(0.975, 4) = 2.776445.
        assert!((2.0 * student_t_sf(2.0, 5.0) - 0.1019395).abs() < 1e-6);
        assert!((2.0 * student_t_sf(2.776445, 4.0) - 0.05).abs() < 1e-6);
        // Large df: the normal distribution.
        assert!((student_t_sf(1.959964, 1e6) - 0.025).abs() < 1e-5);
    }

    #[test]
    fn welch_matches_r() {
        // R: t.test(6:10, 1:5): t = 5, df = 8, p-value = 0.001053.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        let w = welch(&a, &b, 0.0).unwrap();
        assert!(
            (w.t - 5.0).abs() < 1e-12 && (w.df - 8.0).abs() < 1e-9,
            "{w:?}"
        );
        assert!((w.p - 0.001053).abs() < 1e-6, "{w:?}");
        // Unequal variances: df by Welch–Satterthwaite, by hand: sa = 2.5/5 = 0.5,
        // sb = 25/3; df = (0.5 + 25/3)² / (0.25/4 + (25/3)²/2).
        let c = [0.0, 5.0, 10.0];
        let w = welch(&a, &c, 0.0).unwrap();
        let want = (0.5f64 + 25.0 / 3.0).powi(2) / (0.25 / 4.0 + (25.0f64 / 3.0).powi(2) / 2.0);
        assert!((w.df - want).abs() < 1e-9, "{w:?}");
        assert!(w.p > 0.5);
        // One value a side: no variance, no test.
        assert!(welch(&[1.0], &[2.0, 3.0], 0.0).is_none());
        // Identical constants: nothing; a floor keeps two constants from certainty.
        assert_eq!(welch(&[2.0; 3], &[2.0; 3], 0.0).unwrap().p, 1.0);
        let w = log_welch(&[1000.0; 3], &[1005.0; 3]).unwrap();
        assert!(w.p > 0.05, "{w:?}");
        assert!((geo_mean(&[1.0, 100.0]).unwrap() - 10.0).abs() < 1e-9);
    }

    #[test]
    fn rate_test_allows_over_dispersion() {
        // At φ = 1 the exact conditional test (doubling the smaller tail): 15 against
        // 2 in equal exposure, P(X ≥ 15 | 17, 1/2) = (136 + 17 + 1) / 2^17.
        let a = [(2, 3.0), (0, 3.0), (0, 3.0), (0, 3.0), (0, 3.0)];
        let b = [(3, 3.0); 5];
        let r = overdispersed_rate(&a, &b).unwrap();
        assert!((r.p - 2.0 * 154.0 / 131072.0).abs() < 1e-9, "{r:?}");
        // Just over φ = 1 (exposures a little unequal): no jump in p.
        let b2 = [(3, 3.01), (3, 2.99), (3, 3.0), (3, 3.02), (3, 2.98)];
        let r2 = overdispersed_rate(&a, &b2).unwrap();
        assert!((r2.p - r.p).abs() < 2e-4, "{r2:?} against {r:?}");
        // The seed's shape: 30-40 misses per trial against none: clear.
        let a = [(35, 30.0), (32, 30.0), (38, 30.0)];
        let b = [(0, 30.0), (0, 30.0), (0, 30.0)];
        let r = overdispersed_rate(&a, &b).unwrap();
        assert!(r.p < 1e-6 && r.dispersion == 1.0, "{r:?}");
        // One bad trial (a stall) on one side: Poisson over the totals calls it
        // certain, the trials say it could be chance.
        let a = [(0, 30.0), (0, 30.0), (40, 30.0)];
        let b = [(0, 30.0), (0, 30.0), (0, 30.0)];
        assert!(rate_p(40, 90.0, 0, 90.0) < 1e-9);
        let r = overdispersed_rate(&a, &b).unwrap();
        assert!(r.p > 0.05 && r.dispersion > 10.0, "{r:?}");
        // Nothing anywhere: nothing to tell.
        let r = overdispersed_rate(&b, &b).unwrap();
        assert_eq!(r.p, 1.0);
        // Too few trials to estimate the dispersion.
        assert!(overdispersed_rate(&a[..1], &b[..1]).is_none());
        // Trials without audio are left out.
        assert!(overdispersed_rate(&[(3, 0.0), (1, 1.0)], &[(0, 1.0)]).is_none());
    }

    // Reference values for the tests below: an independent computation in Python 3's
    // standard library — the regularized incomplete beta by its hypergeometric series
    // (x^a (1-x)^b / (a B(a,b)) · 2F1(a+b, 1; a+1; x), summed to 1e-17, I_x = 1 − I_(1−x)
    // above x = 0.5) over math.lgamma, checked against the closed forms above (t with df
    // 1: 0.25 to 3e-16; df 2 to 1e-17; R's 2·pt(-2, 5) = 0.1019395) — and the
    // quasi-Poisson steps as the doc comment of `overdispersed_rate` writes them.

    #[test]
    fn student_t_at_infinity_and_welch_at_its_edges() {
        assert_eq!(student_t_sf(f64::INFINITY, 5.0), 0.0);
        assert_eq!(student_t_sf(f64::NEG_INFINITY, 5.0), 1.0);
        // Two values a side are enough; one on either side, or a value not finite, not.
        assert!(welch(&[1.0, 2.0], &[3.0, 5.0], 0.0).is_some());
        assert!(welch(&[1.0, 2.0], &[3.0], 0.0).is_none());
        assert!(welch(&[1.0, 2.0], &[3.0, f64::NAN], 0.0).is_none());
        assert!(welch(&[f64::INFINITY, 2.0], &[3.0, 4.0], 0.0).is_none());
        // Two different constants with no floor: certain, the sign of b - a.
        let w = welch(&[2.0; 3], &[5.0; 4], 0.0).unwrap();
        assert_eq!((w.t, w.df, w.p), (f64::INFINITY, 5.0, 0.0));
        let w = welch(&[5.0; 4], &[2.0; 3], 0.0).unwrap();
        assert_eq!((w.t, w.df, w.p), (f64::NEG_INFINITY, 5.0, 0.0));
        // The floor of log values (1 % resolution, variance 1e-4 / 12): 1000 against
        // 1005 three times each, t = ln(1.005) / sqrt(2 · 1e-4/12 / 3), df 4.
        let w = log_welch(&[1000.0; 3], &[1005.0; 3]).unwrap();
        near(w.t, 2.1160346543430326, 1e-12);
        near(w.p, 0.10179573214818075, 1e-10);
        // Geometric means only of positive finite values.
        for v in [&[][..], &[1.0, -1.0], &[0.0, 1.0], &[1.0, f64::INFINITY]] {
            assert!(geo_mean(v).is_none(), "{v:?}");
        }
    }

    #[test]
    fn inc_beta_takes_the_branch_that_converges() {
        // Large, equal parameters either side of the mean: the continued fraction taken
        // on the wrong side is off by 2e-8 at 5000 and wrong outright at 1e5.
        for (a, b, x, want) in [
            (5000.0, 5000.0, 0.49, 0.022742032324754427),
            (5000.0, 5000.0, 0.51, 0.9772579676752455),
            (1e5, 1e5, 0.498, 0.03681873885149573),
            (1e5, 1e5, 0.502, 0.9631812611485042),
        ] {
            near(inc_beta(a, b, x), want, 1e-9);
        }
        // Just below the switch, x = a / (a + b + 2): the right side agrees with the
        // series to 6e-14, the other is 1.2e-9 off.
        near(
            inc_beta(1e5, 1e5, 1e5 / 200_002.0),
            0.498215902210984,
            1e-11,
        );
    }

    #[test]
    fn over_dispersed_rates_match_the_reference() {
        // φ > 1 from both sides (Pearson's χ² 11.07 over df 3), events on both sides.
        let a = [(12, 10.0), (3, 10.0), (9, 10.0)];
        let b = [(30, 10.0), (14, 10.0)];
        let r = overdispersed_rate(&a, &b).unwrap();
        assert_eq!(r.df, 3);
        near(r.dispersion, 3.6893939393939394, 1e-12);
        near(r.p, 0.05635003600438989, 1e-10);
        // A's few events in a sliver of the exposure: its effective count (0.66) is
        // within 1 of the total, and B's lower tail is still a real tail.
        let a = [(5, 0.01), (0, 0.01), (0, 0.01)];
        let b = [(2, 50.0), (18, 50.0)];
        let r = overdispersed_rate(&a, &b).unwrap();
        near(r.dispersion, 7.6, 1e-12);
        near(r.p, 0.024182136168564128, 1e-10);
        // Three trials in all are enough; trials without exposure do not count.
        assert!(overdispersed_rate(&[(1, 1.0), (2, 1.0)], &[(3, 1.0)]).is_some());
        assert!(overdispersed_rate(&[(1, 1.0), (2, 1.0)], &[(3, 0.0)]).is_none());
        assert!(overdispersed_rate(&[], &[(1, 1.0), (2, 1.0), (3, 1.0)]).is_none());
    }

    #[test]
    fn holm_adjusts_step_down() {
        // By hand: sorted 0.01, 0.02, 0.04 over 3 tests: 0.03, 0.04, 0.04.
        let adj = holm(&[0.04, 0.01, 0.02]);
        let want = [0.04, 0.03, 0.04];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        assert_eq!(holm(&[0.5, 0.9]), vec![1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }
}
