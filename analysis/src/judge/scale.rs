//! Each kind of metric on its log scale, worse upward: what one run's estimate y_r and
//! its within-run variance v_r are, from the run's trials.
//!
//! - latency p99 (`LogP99`): ln of each trial's p99, averaged over the run's trials;
//!   v_r = s²_w / T_r, s²_w the side's pooled variance of a trial about its run's mean;
//! - dropouts (`LogRate`): ln of the run's dropouts per hour, (K + ½) over its hours
//!   (a run without dropouts still has an estimate); v_r = φ / (λ S_r + ½) at the rate
//!   λ both sides of a comparison share (a calibration: its runs'), over the run's S_r
//!   hours, φ the side's
//!   over-dispersion of trials about their run's rate (Pearson's χ² over its degrees of
//!   freedom, at least 1), counted only over runs that had dropouts: a run with none
//!   adds nothing to χ² and must add nothing to its degrees of freedom either;
//! - a trial criterion (`LogOdds`): ln of the odds that a trial fails,
//!   (fail + ½) / (pass + ½); v_r = 1/(pass + ½) + 1/(fail + ½) (binomial: known, no df);
//! - a trial value (`LogValue`): ln of each trial's value (ln(1 + x) when some value is
//!   0 or below), as for latencies.

pub use results::calibration::Scale;

use super::model::{RunEst, SideRuns};
use crate::stats::LOG_RESOLUTION_VAR;

/// One run's trials, as a metric's scale reads them.
#[derive(Debug, Clone, PartialEq)]
pub enum RunData {
    /// Per trial: a positive value (a latency p99, a trial value).
    Values(Vec<f64>),
    /// Per trial: (dropouts, seconds of audio).
    Events(Vec<(u64, f64)>),
    /// Trials that passed the criterion, of how many.
    Shares { pass: usize, n: usize },
}

impl RunData {
    pub fn trials(&self) -> usize {
        match self {
            RunData::Values(v) => v.len(),
            RunData::Events(v) => v.len(),
            RunData::Shares { n, .. } => *n,
        }
    }
}

/// The within-run spread a side's trials show: s²_w (values) or φ (events), and its
/// degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Within {
    pub var: f64,
    pub df: f64,
}

/// ln x, or ln(1 + x) when `log1p` (some value of the comparison is 0 or below).
pub fn transform(x: f64, log1p: bool) -> f64 {
    if log1p { (x.max(0.0)).ln_1p() } else { x.ln() }
}

/// Events with exposure only (a trial without audio says nothing).
fn exposed(v: &[(u64, f64)]) -> impl Iterator<Item = &(u64, f64)> {
    v.iter().filter(|x| x.1 > 0.0)
}

/// The within-run spread of a side's runs; None when no run has two trials (or, for
/// events, no run with dropouts has two trials): then it must come from elsewhere.
pub fn within_of(scale: Scale, runs: &[RunData], log1p: bool) -> Option<Within> {
    match scale {
        Scale::LogOdds => None,
        Scale::LogRate => {
            let (mut x2, mut df) = (0.0, 0.0);
            for r in runs {
                let RunData::Events(t) = r else { continue };
                let k: u64 = exposed(t).map(|x| x.0).sum();
                let s: f64 = exposed(t).map(|x| x.1).sum();
                let n = exposed(t).count();
                if k == 0 || n < 2 {
                    continue;
                }
                let rate = k as f64 / s;
                x2 += exposed(t)
                    .map(|&(c, e)| (c as f64 - rate * e).powi(2) / (rate * e))
                    .sum::<f64>();
                df += (n - 1) as f64;
            }
            (df > 0.0).then(|| Within {
                var: (x2 / df).max(1.0),
                df,
            })
        }
        Scale::LogP99 | Scale::LogValue => {
            let (mut ss, mut df) = (0.0, 0.0);
            for r in runs {
                let RunData::Values(v) = r else { continue };
                if v.len() < 2 {
                    continue;
                }
                let l: Vec<f64> = v.iter().map(|x| transform(*x, log1p)).collect();
                let m = l.iter().sum::<f64>() / l.len() as f64;
                ss += l.iter().map(|x| (x - m).powi(2)).sum::<f64>();
                df += (l.len() - 1) as f64;
            }
            (df > 0.0).then(|| Within {
                var: (ss / df).max(LOG_RESOLUTION_VAR),
                df,
            })
        }
    }
}

/// One run's y on the scale; None for a run without trials (or audio).
pub fn run_y(scale: Scale, r: &RunData, log1p: bool) -> Option<f64> {
    match (scale, r) {
        (Scale::LogP99 | Scale::LogValue, RunData::Values(v)) if !v.is_empty() => {
            Some(v.iter().map(|x| transform(*x, log1p)).sum::<f64>() / v.len() as f64)
        }
        (Scale::LogRate, RunData::Events(t)) => {
            let k: u64 = exposed(t).map(|x| x.0).sum();
            let s: f64 = exposed(t).map(|x| x.1).sum();
            (s > 0.0).then(|| ((k as f64 + 0.5) / s * 3600.0).ln())
        }
        (Scale::LogOdds, RunData::Shares { pass, n }) if *n > 0 => {
            let fail = (n - pass) as f64;
            Some(((fail + 0.5) / (*pass as f64 + 0.5)).ln())
        }
        _ => None,
    }
}

/// Dropouts per second over all the trials of `sides` with audio; 0 without audio.
pub fn events_rate(sides: &[&[RunData]]) -> f64 {
    let (k_all, s_all) =
        sides
            .iter()
            .flat_map(|runs| runs.iter())
            .fold((0u64, 0.0f64), |acc, r| match r {
                RunData::Events(t) => (
                    acc.0 + exposed(t).map(|x| x.0).sum::<u64>(),
                    acc.1 + exposed(t).map(|x| x.1).sum::<f64>(),
                ),
                _ => acc,
            });
    if s_all > 0.0 {
        k_all as f64 / s_all
    } else {
        0.0
    }
}

/// The side's runs on the scale, with `within` (its own, or one found elsewhere) for
/// the variance of each run's trials. Runs without trials are left out. `rate`: where a
/// run's counting noise is taken (dropouts per second); None: at the side's own rate.
pub fn side_runs(
    scale: Scale,
    runs: &[RunData],
    within: Within,
    log1p: bool,
    rate: Option<f64>,
) -> SideRuns {
    // A run's counting noise at a fitted rate, not at its own count: the delta method
    // at an observed 0 (1 / ½ = 2) overstates ln(K + ½)'s variance several-fold (at a
    // mean of ½ a count, 0.35), at the fitted mean it does not. A comparison fits it to
    // both sides (the rate they share if nothing changed, as a score test does): a side
    // without dropouts against one with many is otherwise judged at a rate of 0, its
    // noise the largest there is, and 0 against 9 in three runs a side never called.
    let rate = rate.unwrap_or_else(|| events_rate(&[runs]));
    let mut out = Vec::new();
    for r in runs {
        let Some(y) = run_y(scale, r, log1p) else {
            continue;
        };
        let v = match r {
            RunData::Values(v) => within.var / v.len() as f64,
            RunData::Events(t) => {
                let s: f64 = exposed(t).map(|x| x.1).sum();
                within.var / (rate * s + 0.5)
            }
            RunData::Shares { pass, n } => {
                1.0 / (*pass as f64 + 0.5) + 1.0 / ((n - pass) as f64 + 0.5)
            }
        };
        out.push(RunEst { y, v });
    }
    SideRuns {
        runs: out,
        within_df: if scale == Scale::LogOdds {
            f64::INFINITY
        } else {
            within.df
        },
    }
}

/// The scale's estimate back in the metric's own terms: a latency or a value (e^y, or
/// e^y − 1 after ln(1 + x)), dropouts per hour (e^y, the ½ included), a pass share.
pub fn back(scale: Scale, y: f64, log1p: bool) -> f64 {
    match scale {
        Scale::LogOdds => 1.0 / (1.0 + y.exp()),
        _ if log1p => y.exp_m1(),
        _ => y.exp(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispersion_counts_only_runs_with_dropouts() {
        // A run of five trials without a dropout and one whose trials vary a lot: the
        // empty run must not dilute φ (it adds nothing to χ², so nothing to df).
        let empty = RunData::Events(vec![(0, 10.0); 5]);
        let busy = RunData::Events(vec![(0, 10.0), (20, 10.0), (1, 10.0), (19, 10.0)]);
        let both = within_of(Scale::LogRate, &[empty.clone(), busy.clone()], false).unwrap();
        let alone = within_of(Scale::LogRate, &[busy], false).unwrap();
        assert_eq!(both, alone);
        assert!(alone.var > 5.0, "{alone:?}");
        assert_eq!(alone.df, 3.0);
        // All empty: nothing to estimate φ from.
        assert!(within_of(Scale::LogRate, &[empty], false).is_none());
    }

    #[test]
    fn a_run_without_dropouts_still_has_an_estimate() {
        let r = RunData::Events(vec![(0, 1800.0), (0, 1800.0)]);
        let y = run_y(Scale::LogRate, &r, false).unwrap();
        assert!((back(Scale::LogRate, y, false) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn a_silent_side_is_judged_at_the_rate_both_sides_share() {
        // 0 dropouts against 9 in a run each: at its own rate (0) the silent run's
        // counting variance is φ / ½ = 2φ; at the shared rate it is φ / (4.5 + ½).
        let quiet = [RunData::Events(vec![(0, 1.0); 3])];
        let busy = [RunData::Events(vec![(3, 1.0); 3])];
        let w = Within { var: 1.0, df: 2.0 };
        let own = side_runs(Scale::LogRate, &quiet, w, false, None);
        let rate = events_rate(&[&quiet, &busy]);
        assert!((rate - 1.5).abs() < 1e-12, "{rate}");
        let shared = side_runs(Scale::LogRate, &quiet, w, false, Some(rate));
        assert!((own.runs[0].v - 2.0).abs() < 1e-12, "{:?}", own.runs[0]);
        assert!(
            (shared.runs[0].v - 1.0 / 5.0).abs() < 1e-12,
            "{:?}",
            shared.runs[0]
        );
    }

    #[test]
    fn failing_is_worse_upward_on_the_odds_scale() {
        let good = run_y(Scale::LogOdds, &RunData::Shares { pass: 8, n: 8 }, false).unwrap();
        let bad = run_y(Scale::LogOdds, &RunData::Shares { pass: 2, n: 8 }, false).unwrap();
        assert!(bad > good);
        assert!((back(Scale::LogOdds, good, false) - 8.5 / 9.0).abs() < 1e-12);
    }

    #[test]
    fn values_pool_their_spread_over_the_runs_of_a_side() {
        let runs = [
            RunData::Values(vec![1.0, std::f64::consts::E]),
            RunData::Values(vec![1.0, std::f64::consts::E]),
            RunData::Values(vec![5.0]),
        ];
        let w = within_of(Scale::LogP99, &runs, false).unwrap();
        assert!((w.var - 0.5).abs() < 1e-12 && w.df == 2.0, "{w:?}");
        let s = side_runs(Scale::LogP99, &runs, w, false, None);
        assert_eq!(s.runs.len(), 3);
        assert!((s.runs[0].y - 0.5).abs() < 1e-12);
        assert!((s.runs[2].v - 0.5).abs() < 1e-12);
        assert!((s.runs[0].v - 0.25).abs() < 1e-12);
    }
}
