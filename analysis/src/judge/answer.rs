//! The four answers: worse, better, same or inconclusive, from a change's confidence
//! interval against the threshold (criterion.rs's noise-threshold rule: the interval,
//! not the point estimate, must clear it), with Holm's correction over the metrics of
//! one comparison.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Two-sided confidence level of the intervals: a change is called when its 95 %
/// interval lies wholly beyond the threshold, i.e. a one-sided test at 2.5 %.
pub const CONFIDENCE: f64 = 0.95;

/// The threshold of a change, in percent, where none is given: compare's default and
/// the report's own contrasts'.
pub const THRESHOLD: f64 = 10.0;

/// The one-sided level of each call, before Holm: (1 − CONFIDENCE) / 2.
pub const ONE_SIDED: f64 = (1.0 - CONFIDENCE) / 2.0;

/// The two-sided confidence, in percent, of intervals taken at `one_sided` a side
/// ("95 %" at 0.025; "99.5 %" at a sequential look's 0.0025).
pub fn confidence_label(one_sided: f64) -> String {
    let c = 100.0 * (1.0 - 2.0 * one_sided);
    let s = format!("{c:.3}");
    format!("{} %", s.trim_end_matches('0').trim_end_matches('.'))
}

/// A comparison's answer, for one metric or for a whole comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Answer {
    /// The change's interval (Holm-adjusted) lies wholly above +threshold: worse.
    Worse,
    /// Wholly below −threshold: better.
    Better,
    /// Wholly inside ±threshold: the same, within the threshold.
    Same,
    /// None of these: the evidence cannot tell a change from the run-to-run variation.
    Inconclusive,
}

impl Answer {
    pub fn word(self) -> &'static str {
        match self {
            Answer::Worse => "worse",
            Answer::Better => "better",
            Answer::Same => "same",
            Answer::Inconclusive => "inconclusive",
        }
    }

    /// A comparison's answer from its metrics': worse when any is; else inconclusive when
    /// any is (an untold metric could hide a regression); else better when any is; else
    /// the same. None for no metric.
    pub fn overall(each: &[Answer]) -> Option<Answer> {
        if each.is_empty() {
            return None;
        }
        Some(if each.contains(&Answer::Worse) {
            Answer::Worse
        } else if each.contains(&Answer::Inconclusive) {
            Answer::Inconclusive
        } else if each.contains(&Answer::Better) {
            Answer::Better
        } else {
            Answer::Same
        })
    }
}

/// A change on a metric's log scale, worse upward: B's estimate minus A's, with its
/// standard error and degrees of freedom (infinite: the normal distribution).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Effect {
    pub d: f64,
    pub se: f64,
    pub df: f64,
}

/// One metric judged against the threshold, before Holm.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    pub effect: Effect,
    /// One-sided p of "worse beyond the threshold" (H0: change ≤ +θ).
    pub p_worse: f64,
    /// One-sided p of "better beyond the threshold" (H0: change ≥ −θ).
    pub p_better: f64,
    /// Two one-sided tests of "within ±θ": the larger of the two p's.
    pub p_same: f64,
    /// The change's 95 % interval on the log scale.
    pub lo: f64,
    pub hi: f64,
    /// The smallest observed change (log scale) that would have been called worse: θ plus
    /// the interval's half-width. What a "cannot tell" could have missed.
    pub detectable: f64,
    /// A count's evidence (dropouts, hangs): the interval and tests are its exact ones.
    pub counts: Option<super::counts::Exact>,
}

impl Judged {
    /// The change's interval with its lower end at one-sided level `lo_level` and its
    /// upper end at `hi_level`.
    pub fn interval(&self, lo_level: f64, hi_level: f64) -> (f64, f64) {
        if let Some(c) = &self.counts {
            return c.interval(lo_level, hi_level);
        }
        let e = self.effect;
        (
            e.d - quantile(1.0 - lo_level, e.df) * e.se,
            e.d + quantile(1.0 - hi_level, e.df) * e.se,
        )
    }
}

/// A metric's answer in a comparison, with the interval it was taken from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Call {
    pub answer: Answer,
    /// Holm-adjusted p's of worse and better.
    pub p_worse: f64,
    pub p_better: f64,
    /// The interval the answer was decided on (log scale): each end at its Holm level
    /// (the unadjusted level for "the same", which needs no adjustment).
    pub lo: f64,
    pub hi: f64,
    /// Whether the ends are Holm-adjusted (some metric's level is not the plain 2.5 %).
    pub adjusted: bool,
}

/// The reference distribution's upper tail P(T > t).
fn sf(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return 1.0;
    }
    if t == f64::INFINITY {
        return 0.0;
    }
    if t == f64::NEG_INFINITY {
        return 1.0;
    }
    if !df.is_finite() || df > 1e6 {
        let n = Normal::standard();
        return n.sf(t);
    }
    match StudentsT::new(0.0, 1.0, df.max(0.5)) {
        Ok(s) => s.sf(t),
        Err(_) => 1.0,
    }
}

/// The reference distribution's quantile.
pub fn quantile(p: f64, df: f64) -> f64 {
    if !df.is_finite() || df > 1e6 {
        return Normal::standard().inverse_cdf(p);
    }
    StudentsT::new(0.0, 1.0, df.max(0.5)).map_or(f64::INFINITY, |s| s.inverse_cdf(p))
}

/// The threshold in percent as a change on the log scale: ln(1 + θ/100).
pub fn log_threshold(threshold_percent: f64) -> f64 {
    (1.0 + threshold_percent / 100.0).ln()
}

/// `e` against the threshold `theta` (log scale).
pub fn judge(e: Effect, theta: f64) -> Judged {
    let half = quantile(1.0 - ONE_SIDED, e.df) * e.se;
    let z = |x: f64| {
        if e.se > 0.0 {
            (e.d - x) / e.se
        } else if e.d > x {
            f64::INFINITY
        } else if e.d < x {
            f64::NEG_INFINITY
        } else {
            0.0
        }
    };
    let p_worse = sf(z(theta), e.df);
    let p_better = sf(-z(-theta), e.df);
    // Same: the change is below +θ (H0: ≥ θ) and above −θ (H0: ≤ −θ).
    let below = sf(-z(theta), e.df);
    let above = sf(z(-theta), e.df);
    Judged {
        effect: e,
        p_worse,
        p_better,
        p_same: below.max(above),
        lo: e.d - half,
        hi: e.d + half,
        detectable: theta + half,
        counts: None,
    }
}

/// Counts judged against the threshold `theta` (log scale): the exact tests and
/// interval of `counts`.
pub fn judge_counts(c: super::counts::Counts, theta: f64) -> Judged {
    let up = theta.exp();
    let down = (-theta).exp();
    let p_worse = c.p_above(up);
    let p_better = c.p_below(down);
    // Same: below +θ (H0: ≥ +θ) and above −θ (H0: ≤ −θ).
    let p_same = c.p_below(up).max(c.p_above(down));
    let (lo, hi) = c.interval(ONE_SIDED, ONE_SIDED);
    let d = c.estimate();
    let half = half_width(lo, hi);
    Judged {
        effect: Effect {
            d,
            se: half / quantile(1.0 - ONE_SIDED, c.df),
            df: c.df,
        },
        p_worse,
        p_better,
        p_same,
        lo,
        hi,
        detectable: c.detectable(up, ONE_SIDED),
        counts: Some(super::counts::Exact::Rates(c)),
    }
}

/// Half an exact interval's width (infinite when an end is): an exact test's stand-in
/// for a standard error.
fn half_width(lo: f64, hi: f64) -> f64 {
    if lo.is_finite() && hi.is_finite() {
        (hi - lo) / 2.0
    } else {
        f64::INFINITY
    }
}

/// Hangs judged against the threshold `theta` on their odds (Fisher's exact test).
pub fn judge_hangs(h: super::counts::Hangs, theta: f64) -> Judged {
    let (up, down) = (theta.exp(), (-theta).exp());
    let (lo, hi) = h.interval(ONE_SIDED, ONE_SIDED);
    let half = half_width(lo, hi);
    Judged {
        effect: Effect {
            d: h.estimate(),
            se: half / quantile(1.0 - ONE_SIDED, f64::INFINITY),
            df: f64::INFINITY,
        },
        p_worse: h.p_above(up),
        p_better: h.p_below(down),
        p_same: h.p_below(up).max(h.p_above(down)),
        lo,
        hi,
        detectable: theta + half,
        counts: Some(super::counts::Exact::Hangs(h)),
    }
}

/// Holm's step-down levels: each p's one-sided level α/(m − r) at its rank r, or, for a
/// p at or after the rank where the step-down stopped, that rank's level (so that its
/// interval at the level agrees with its answer).
fn holm_levels(ps: &[f64], one_sided: f64) -> Vec<f64> {
    let m = ps.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]));
    let mut out = vec![one_sided; m];
    let mut stop = m;
    for (r, &i) in order.iter().enumerate() {
        if stop == m && ps[i] >= one_sided / (m - r) as f64 {
            stop = r;
        }
        out[i] = one_sided / (m - r.min(stop)) as f64;
    }
    out
}

/// The answers of several metrics judged in one comparison: worse (better) where the
/// Holm-adjusted p of worse (better) is below the one-sided level, so the chance of any
/// false call among them stays within it; the same where the metric's two one-sided
/// tests both are (an intersection-union test: every metric "same" at that level makes
/// the comparison "same" at that level, no adjustment needed). Each answer comes with the
/// interval it was taken from. `one_sided` is each direction's level before Holm:
/// `ONE_SIDED` (a 95 % interval), or less where several looks share it (`--until-decided
/// --boots`).
pub fn answers(judged: &[Judged], one_sided: f64) -> Vec<Call> {
    let pw: Vec<f64> = judged.iter().map(|j| j.p_worse).collect();
    let pb: Vec<f64> = judged.iter().map(|j| j.p_better).collect();
    let (worse, better) = (crate::stats::holm(&pw), crate::stats::holm(&pb));
    let (lw, lb) = (holm_levels(&pw, one_sided), holm_levels(&pb, one_sided));
    judged
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let answer = if worse[i] < one_sided {
                Answer::Worse
            } else if better[i] < one_sided {
                Answer::Better
            } else if j.p_same < one_sided {
                Answer::Same
            } else {
                Answer::Inconclusive
            };
            let (l, h) = if answer == Answer::Same {
                (one_sided, one_sided)
            } else {
                (lw[i], lb[i])
            };
            let (lo, hi) = j.interval(l, h);
            Call {
                answer,
                p_worse: worse[i],
                p_better: better[i],
                lo,
                hi,
                adjusted: l < one_sided || h < one_sided,
            }
        })
        .collect()
}

/// A change on the log scale in percent: e^d − 1.
pub fn percent(d: f64) -> f64 {
    100.0 * (d.exp() - 1.0)
}

/// "+35 %", "−12 %", "×40" for large ratios, "+∞".
pub fn fmt_change(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 {
            "+∞".into()
        } else {
            "−100 %".into()
        };
    }
    let r = d.exp();
    if r >= 10.0 {
        format!("×{r:.0}")
    } else {
        let p = percent(d);
        if p.abs() < 10.0 {
            format!("{p:+.1} %")
        } else {
            format!("{p:+.0} %")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(d: f64, se: f64) -> Effect {
        Effect {
            d,
            se,
            df: f64::INFINITY,
        }
    }

    #[test]
    fn the_interval_not_the_estimate_must_clear_the_threshold() {
        let th = log_threshold(10.0);
        // A +50 % change known to ±10 %: worse.
        let j = judge(e(1.5f64.ln(), 0.05), th);
        assert_eq!(answers(&[j], ONE_SIDED)[0].answer, Answer::Worse);
        // A +50 % change known only to ±100 %: the point is past the threshold, the
        // interval is not: inconclusive (the old rule would have called it).
        let j = judge(e(1.5f64.ln(), 0.5), th);
        assert_eq!(answers(&[j], ONE_SIDED)[0].answer, Answer::Inconclusive);
        assert!(j.lo < th && j.hi > th);
        // No change, known to ±2 %: the same.
        let j = judge(e(0.0, 0.01), th);
        assert_eq!(answers(&[j], ONE_SIDED)[0].answer, Answer::Same);
        // An improvement.
        let j = judge(e(-1.0, 0.1), th);
        assert_eq!(answers(&[j], ONE_SIDED)[0].answer, Answer::Better);
    }

    #[test]
    fn at_the_boundary_the_level_is_the_stated_one() {
        // d − θ = 1.959964 se: p of worse is 2.5 %.
        let th = 0.1;
        let j = judge(e(th + 1.959_964 * 0.2, 0.2), th);
        assert!((j.p_worse - 0.025).abs() < 1e-6, "{}", j.p_worse);
        assert!((j.lo - th).abs() < 1e-6);
        // Student's t widens it: with 4 df the quantile is 2.776.
        let j = judge(
            Effect {
                d: 1.0,
                se: 0.1,
                df: 4.0,
            },
            0.0,
        );
        assert!((j.hi - 1.0 - 0.2776).abs() < 1e-3, "{}", j.hi);
    }

    #[test]
    fn holm_keeps_the_family_within_the_level() {
        // Two metrics each at p 0.02 of worse: alone each would be called, together
        // only when Holm allows (0.04 > 0.025): neither.
        let th = 0.0;
        let z = Normal::standard().inverse_cdf(0.98);
        let j = judge(e(z * 0.1, 0.1), th);
        assert_eq!(answers(&[j], ONE_SIDED)[0].answer, Answer::Worse);
        let both = answers(&[j, j], ONE_SIDED);
        assert!(both.iter().all(|a| a.answer != Answer::Worse), "{both:?}");
        // The interval printed is the one decided on: with Holm it no longer clears 0.
        assert!(answers(&[j], ONE_SIDED)[0].lo > th);
        assert!(both.iter().all(|a| a.lo <= th && a.adjusted), "{both:?}");
    }

    /// A look that spends less than 2.5 % a side (one of several `--until-decided
    /// --boots` looks) calls only what clears its own level, and says its interval so.
    #[test]
    fn a_smaller_level_calls_less_and_names_its_interval() {
        let th = log_threshold(10.0);
        // z = (0.6 − 0.0953) / 0.2 ≈ 2.52: p ≈ 0.006, below 0.025, above 0.0025.
        let j = judge(e(0.6, 0.2), th);
        assert_eq!(answers(&[j], ONE_SIDED)[0].answer, Answer::Worse);
        let c = answers(&[j], ONE_SIDED / 10.0)[0];
        assert_eq!(c.answer, Answer::Inconclusive);
        assert!(
            c.lo < th,
            "the interval at the look's level reaches below the threshold"
        );
        assert_eq!(confidence_label(ONE_SIDED), "95 %");
        assert_eq!(confidence_label(ONE_SIDED / 10.0), "99.5 %");
        assert_eq!(confidence_label(ONE_SIDED / 3.0), "98.333 %");
    }

    #[test]
    fn holm_levels_agree_with_the_answers() {
        // Three p's: 0.001 (level 0.025/3), 0.011 (0.025/2), 0.02 (stops: 0.025/1 would
        // pass, but Holm's adjusted p of the third is 0.022 < 0.025: called too).
        let l = holm_levels(&[0.011, 0.001, 0.02], ONE_SIDED);
        assert!((l[1] - 0.025 / 3.0).abs() < 1e-15);
        assert!((l[0] - 0.025 / 2.0).abs() < 1e-15);
        assert!((l[2] - 0.025).abs() < 1e-15);
        // Stopped at the second: the third shares the second's level.
        let l = holm_levels(&[0.001, 0.02, 0.021], ONE_SIDED);
        assert!(
            (l[1] - 0.0125).abs() < 1e-15 && (l[2] - 0.0125).abs() < 1e-15,
            "{l:?}"
        );
    }

    #[test]
    fn counts_decide_zero_against_some() {
        use super::super::counts::Counts;
        // 22 dropouts against 0 over equal audio, an over-dispersion of 2.5 assumed:
        // worse, even Holm-adjusted over two metrics.
        let c = Counts {
            ka: 0.0,
            sa: 30.0,
            da: 2.5,
            kb: 22.0,
            sb: 30.0,
            db: 2.5,
            df: f64::INFINITY,
        };
        let j = judge_counts(c, log_threshold(10.0));
        let calls = answers(&[j, judge(e(0.0, 0.5), log_threshold(10.0))], ONE_SIDED);
        assert_eq!(calls[0].answer, Answer::Worse, "{j:?}");
        assert!(calls[0].lo > log_threshold(10.0), "{:?}", calls[0]);
        // 0 against 3: not called either way.
        let j = judge_counts(Counts { kb: 3.0, ..c }, log_threshold(10.0));
        assert_eq!(answers(&[j], ONE_SIDED)[0].answer, Answer::Inconclusive);
    }

    #[test]
    fn a_comparison_is_worse_if_any_metric_is_and_inconclusive_before_better() {
        use Answer::*;
        assert_eq!(Answer::overall(&[Same, Worse, Better]), Some(Worse));
        assert_eq!(Answer::overall(&[Better, Inconclusive]), Some(Inconclusive));
        assert_eq!(Answer::overall(&[Better, Same]), Some(Better));
        assert_eq!(Answer::overall(&[Same, Same]), Some(Same));
        assert_eq!(Answer::overall(&[]), None);
    }

    #[test]
    fn a_zero_standard_error_is_decided_by_the_estimate() {
        let th = log_threshold(10.0);
        assert_eq!(
            answers(&[judge(e(1.0, 0.0), th)], ONE_SIDED)[0].answer,
            Answer::Worse
        );
        assert_eq!(
            answers(&[judge(e(0.0, 0.0), th)], ONE_SIDED)[0].answer,
            Answer::Same
        );
    }

    #[test]
    fn changes_read_as_percentages_or_ratios() {
        assert_eq!(fmt_change(1.35f64.ln()), "+35 %");
        assert_eq!(fmt_change(0.95f64.ln()), "-5.0 %");
        assert_eq!(fmt_change(40f64.ln()), "×40");
        assert_eq!(fmt_change(f64::INFINITY), "+∞");
    }
}
