//! Small statistics: medians and quantiles, geometric means, Holm's correction for
//! testing several metrics at once, the zero-count bound, and the wording of p-values.
//! The verdicts' model (runs and trials, the four answers) is `judge`, its distribution
//! functions statrs's.

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

/// Per-trial values known to 1 % (the latency histograms keep two significant digits):
/// the variance floor of their logarithms.
pub const LOG_RESOLUTION_VAR: f64 = 0.01 * 0.01 / 12.0;

/// The geometric mean of positive values (what `log_welch` compares).
pub fn geo_mean(v: &[f64]) -> Option<f64> {
    if v.is_empty() || v.iter().any(|x| *x <= 0.0 || !x.is_finite()) {
        return None;
    }
    Some((v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
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
        assert!((geo_mean(&[1.0, 100.0]).unwrap() - 10.0).abs() < 1e-9);
        // Geometric means only of positive finite values.
        for v in [&[][..], &[1.0, -1.0], &[0.0, 1.0], &[1.0, f64::INFINITY]] {
            assert!(geo_mean(v).is_none(), "{v:?}");
        }
    }

    #[test]
    fn spread_and_wording_at_their_boundaries() {
        assert_eq!(fmt_p(0.0005), "p < 0.001");
        assert_eq!(fmt_p(0.001), "p = 0.001");
        assert_eq!(fmt_p(0.005), "p = 0.005");
        assert_eq!(fmt_p(0.01), "p = 0.01");
        assert_eq!(fmt_p(0.5), "p = 0.50");
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
