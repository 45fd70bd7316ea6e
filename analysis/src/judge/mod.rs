//! Judging a change: the one rule behind `xrunrig compare`, a run's own verdict lines
//! and the report's setting-against-setting lines.
//!
//! - **The unit is what varies independently.** Across kernels (or days, or machines)
//!   it is the run — one boot, one process — with trials nested inside it
//!   (`model`: a variance for each level). Within one run, settings and variants are
//!   interleaved trial by trial, so the run's own effect is shared and the trial is the
//!   unit there (`Between::Shared`).
//! - **Each metric on its log scale** (`scale`): latencies' p99, dropout rates, a trial
//!   criterion's odds of failing, trial values; a change is a ratio.
//! - **The run-to-run spread** comes from the runs themselves when each side has two or
//!   more; with one run a side from a stored calibration of this rig on this machine
//!   (`calibration`); with neither, the largest spread this project has measured for
//!   such a metric, so that only a change beyond any such spread is called.
//! - **Four answers** (`answer`): worse, better, same, inconclusive, from the change's
//!   95 % interval against the threshold, Holm-adjusted over the metrics compared.

pub mod answer;
pub mod assumed;
pub mod counts;
pub mod model;
pub mod scale;

pub use answer::{Answer, Effect, Judged};
pub use model::{Between, RunEst, SideRuns};
pub use scale::{RunData, Scale, Within};

use results::calibration::Calibration;
use statrs::distribution::{DiscreteCDF, Hypergeometric};

/// One metric of a comparison, every run of each side read on its scale.
#[derive(Debug, Clone)]
pub struct MetricRuns {
    pub scale: Scale,
    pub a: Vec<RunData>,
    pub b: Vec<RunData>,
    /// ln(1 + x) instead of ln x (a value of the comparison is 0 or below).
    pub log1p: bool,
    /// Lower is worse (a bound such as "> 5 us"): the scale is turned over.
    pub lower_is_worse: bool,
    /// Trials that did not finish (`Shares`: finished of all): tested as counts trial by
    /// trial, with no run-to-run part (`Between::Hangs`).
    pub hangs: bool,
}

/// Where the comparison is: across runs (boots, days, machines) or inside one run.
#[derive(Debug, Clone, Copy)]
pub enum Across<'a> {
    /// Runs of each side; a calibration of the rig on this machine, if one was found.
    /// `interleaved`: the two sides' runs alternate in time (A B A B, A B B A), so a
    /// drift of the machine falls on both and the runs are the units; else each side
    /// is one block in time (always so with one run a side).
    Runs {
        calibration: Option<(&'a Calibration, &'a str)>,
        interleaved: bool,
    },
    /// Settings or variants of one run, trial against trial.
    OneRun,
}

/// A metric tested: its judgement and how it was reached.
#[derive(Debug, Clone)]
pub struct Tested {
    pub judged: Judged,
    pub between: Between,
    /// Where the within-run spread came from, when not from the side's own trials.
    pub within_note: Option<String>,
    /// Each side's estimate back in the metric's terms (A, B).
    pub estimates: (f64, f64),
}

/// Why a metric was not tested.
#[derive(Debug, Clone, PartialEq)]
pub enum Untested {
    /// A side has no run with data for it.
    NoData,
    /// No outcome of these trials could reach the level: the sentence says how many
    /// would be needed.
    CannotDecide(String),
    /// Counts with none on either side: no rate ratio to judge (each side's rate is
    /// only bounded).
    NoEvents,
}

/// (dropouts, exposure) over a side's trials with exposure, and its runs with exposure.
fn totals(runs: &[RunData]) -> (f64, f64, usize) {
    let mut out = (0.0, 0.0, 0);
    for r in runs {
        if let RunData::Events(t) = r {
            let (k, s): (u64, f64) = t
                .iter()
                .filter(|x| x.1 > 0.0)
                .fold((0, 0.0), |a, x| (a.0 + x.0, a.1 + x.1));
            if s > 0.0 {
                out = (out.0 + k as f64, out.1 + s, out.2 + 1);
            }
        }
    }
    out
}

/// Dropouts as counts (`counts`): each side's dispersion D = φ + τ²·μ / R (R its runs
/// when interleaved, 1 when a block), τ² = e^{σ²_b} − 1 from the between-run spread
/// found, μ at the rate both sides share, φ the side's (at least `floor` when its own
/// has under 10 df); the degrees of freedom by Welch–Satterthwaite over the parts of
/// the log ratio's variance (D_A/μ_A + D_B/μ_B).
fn counts_of(
    a: &[RunData],
    b: &[RunData],
    (wa, wb): (Within, Within),
    floor: Within,
    between: &Between,
) -> Option<counts::Counts> {
    let (ka, sa, ra) = totals(a);
    let (kb, sb, rb) = totals(b);
    if sa <= 0.0 || sb <= 0.0 || ra == 0 || rb == 0 {
        return None;
    }
    let (var, df_b, per_run) = match between {
        Between::Runs { var, df, .. } => (*var, *df, true),
        Between::Calibrated { var, df, .. } => (*var, *df, false),
        Between::Assumed { var, .. } => (*var, f64::INFINITY, false),
        Between::Shared | Between::Hangs => (0.0, f64::INFINITY, false),
    };
    let tau2 = var.exp() - 1.0;
    let lambda = (ka + kb) / (sa + sb);
    let (ma, mb) = (lambda * sa, lambda * sb);
    let (ua, ub) = if per_run {
        (ra as f64, rb as f64)
    } else {
        (1.0, 1.0)
    };
    // A dispersion estimated on few degrees of freedom (three trials give two) is too
    // uncertain to lean on either way: below 10 df it is taken as no smaller than
    // `floor` (this rig's on this machine, or the largest measured), with its df.
    let trust = |w: Within| {
        if w.df.is_finite() && w.df < 10.0 {
            Within {
                var: w.var.max(floor.var),
                df: floor.df,
            }
        } else {
            w
        }
    };
    let (wa, wb) = (trust(wa), trust(wb));
    let (pa, pb) = (wa.var.max(1.0), wb.var.max(1.0));
    let da = pa + tau2 * ma / ua;
    let db = pb + tau2 * mb / ub;
    let parts = [
        (pa / ma.max(1e-12), wa.df),
        (tau2 / ua, df_b),
        (pb / mb.max(1e-12), wb.df),
        (tau2 / ub, df_b),
    ];
    let df = model::satterthwaite(&parts).1;
    Some(counts::Counts {
        ka,
        sa,
        da,
        kb,
        sb,
        db,
        df,
    })
}

/// The over-dispersion a count's own few trials are taken as no smaller than: this
/// rig's trial-to-trial spread on this machine (its calibration's, when that has 10 df
/// or more: measured on many runs of the same configuration), else the largest
/// measured (`assumed`), as known.
fn count_floor(cal: Option<&results::calibration::MetricSpread>) -> Within {
    match cal.and_then(|c| c.trial_var.zip(c.trial_df)) {
        Some((var, df)) if df >= 10.0 => Within {
            var: var.max(1.0),
            df,
        },
        _ => Within {
            var: assumed::within(Scale::LogRate).0,
            df: f64::INFINITY,
        },
    }
}

/// The within-run spread for `side`: its own; else the other side's (one metric, one
/// machine: the same noise is assumed); else the calibration's; else the largest
/// measured. With a note when not its own.
fn within_for(
    m: &MetricRuns,
    own: &[RunData],
    other: &[RunData],
    cal: Option<&results::calibration::MetricSpread>,
) -> (Within, Option<String>) {
    if let Some(w) = scale::within_of(m.scale, own, m.log1p) {
        return (w, None);
    }
    // Why this side cannot give its own: too few trials, or (dropouts) none to count.
    let why = if m.scale == Scale::LogRate {
        "no run of this side with dropouts in two trials or more"
    } else {
        "one trial a run on this side"
    };
    if let Some(w) = scale::within_of(m.scale, other, m.log1p) {
        return (
            w,
            Some(format!("the other side's trial-to-trial spread ({why})")),
        );
    }
    if let Some(c) = cal
        && let (Some(var), Some(df)) = (c.trial_var, c.trial_df)
    {
        return (
            Within { var, df },
            Some(format!("{why}: the calibration's trial-to-trial spread")),
        );
    }
    let w = assumed::within(m.scale);
    (
        Within {
            var: w.0,
            df: f64::INFINITY,
        },
        Some(format!(
            "{why}: the largest trial-to-trial spread measured assumed ({})",
            w.1
        )),
    )
}

/// One-sided Fisher tests of B's passes against A's: (p that B fails more, p that it
/// fails less).
fn fisher_one_sided(a: (usize, usize), b: (usize, usize)) -> (f64, f64) {
    let (pa, na) = a;
    let (pb, nb) = b;
    let total = (na + nb) as u64;
    let succ = (pa + pb) as u64;
    let Ok(h) = Hypergeometric::new(total, succ, nb as u64) else {
        return (1.0, 1.0);
    };
    let x = pb as u64;
    let worse = h.cdf(x);
    let better = if x == 0 { 1.0 } else { 1.0 - h.cdf(x - 1) };
    (worse.min(1.0), better.clamp(0.0, 1.0))
}

/// Tests one metric: B's runs against A's at `threshold_percent`.
pub fn test(
    m: &MetricRuns,
    key: (&str, &str, &str),
    across: Across,
    threshold_percent: f64,
) -> Result<Tested, Untested> {
    let theta = answer::log_threshold(threshold_percent);
    if m.hangs {
        let sum = |runs: &[RunData]| {
            runs.iter().fold((0u64, 0u64), |acc, r| match r {
                RunData::Shares { pass, n } => {
                    (acc.0 + (n - pass.min(n)) as u64, acc.1 + *n as u64)
                }
                _ => acc,
            })
        };
        let ((fa, na), (fb, nb)) = (sum(&m.a), sum(&m.b));
        if na == 0 || nb == 0 {
            return Err(Untested::NoData);
        }
        if fa + fb == 0 {
            return Err(Untested::NoEvents);
        }
        let h = counts::Hangs { fa, na, fb, nb };
        return Ok(Tested {
            judged: answer::judge_hangs(h, theta),
            between: Between::Hangs,
            within_note: None,
            estimates: (fa as f64 / na as f64, fb as f64 / nb as f64),
        });
    }
    let cal = match across {
        Across::Runs { calibration, .. } => {
            calibration.and_then(|(c, _)| c.spread(key.0, key.1, key.2, m.scale))
        }
        Across::OneRun => None,
    };
    let (wa, note_a) = within_for(m, &m.a, &m.b, cal);
    let (wb, note_b) = within_for(m, &m.b, &m.a, cal);
    // Counting noise at the rate both sides share if nothing changed.
    let rate = Some(scale::events_rate(&[&m.a, &m.b]));
    let a = scale::side_runs(m.scale, &m.a, wa, m.log1p, rate);
    let b = scale::side_runs(m.scale, &m.b, wb, m.log1p, rate);
    if a.runs.is_empty() || b.runs.is_empty() {
        return Err(Untested::NoData);
    }
    let cal_var = cal.map(|s| (s.between, s.df as f64));
    let own = model::pooled_between(&[&a, &b], cal_var);
    let between = match across {
        Across::OneRun => Between::Shared,
        // Interleaved runs: the runs' own spread, pooled with the calibration's.
        Across::Runs {
            calibration,
            interleaved: true,
        } if own.is_some() => {
            let (var, df) = own.unwrap_or_default();
            Between::Runs {
                var,
                df,
                calibration: cal.and(calibration).map(|(_, name)| name.to_string()),
            }
        }
        // Each side one block in time: a block's effect (the machine's state while it
        // ran) is shared by its runs and not averaged away by them. Its spread is that
        // of a run: the calibration's, else the largest measured; the runs' own when
        // that is larger.
        Across::Runs { calibration, .. } => {
            let own_var = model::pooled_between(&[&a, &b], None);
            match (cal, calibration) {
                (Some(s), Some((_, name))) => {
                    let (var, df) = match own_var {
                        Some((v, df)) if v > s.between => (v, df),
                        _ => (s.between, s.df as f64),
                    };
                    Between::Calibrated {
                        var,
                        df,
                        name: name.to_string(),
                    }
                }
                _ => {
                    let (var, source) = assumed::between(m.scale);
                    Between::Assumed {
                        var: own_var.map_or(var, |(v, _)| v.max(var)),
                        source: source.to_string(),
                    }
                }
            }
        }
    };
    let within_note = note_a.clone().or(note_b.clone());
    if m.scale == Scale::LogRate {
        // Counts tested as counts; a zero side carries its exposure.
        let c =
            counts_of(&m.a, &m.b, (wa, wb), count_floor(cal), &between).ok_or(Untested::NoData)?;
        if c.ka + c.kb == 0.0 {
            return Err(Untested::NoEvents);
        }
        let judged = answer::judge_counts(c, theta);
        return Ok(Tested {
            judged,
            estimates: ((c.ka + 0.5) / c.sa * 3600.0, (c.kb + 0.5) / c.sb * 3600.0),
            between,
            within_note,
        });
    }
    let mut e = model::effect(&a, &b, &between).ok_or(Untested::NoData)?;
    if m.lower_is_worse {
        e.d = -e.d;
    }
    let mut judged = answer::judge(e, theta);
    // Pass shares within one run: Fisher's exact test, as --until-decided uses, for the
    // calls; the interval from the odds' model.
    if m.scale == Scale::LogOdds
        && matches!(between, Between::Shared)
        && let ([RunData::Shares { pass: pa, n: na }], [RunData::Shares { pass: pb, n: nb }]) =
            (m.a.as_slice(), m.b.as_slice())
    {
        let (w, bt) = fisher_one_sided((*pa, *na), (*pb, *nb));
        judged.p_worse = w;
        judged.p_better = bt;
        let best = fisher_one_sided((*na, *na), (0, *nb)).0;
        if best >= answer::ONE_SIDED {
            let need = (1..=64)
                .find(|&n| fisher_one_sided((n, n), (0, n)).0 < answer::ONE_SIDED)
                .unwrap_or(64);
            return Err(Untested::CannotDecide(format!(
                "cannot be decided with {na} and {nb} trials: even every trial passing against \
                 every trial failing gives p = {best:.3} one-sided, above {:.3}; {need} trials a \
                 side are needed",
                answer::ONE_SIDED
            )));
        }
    }
    // A criterion over runs: could any outcome of these trials be called?
    if m.scale == Scale::LogOdds && !matches!(between, Between::Shared) {
        let extreme = |runs: &[RunData], pass_all: bool| -> Vec<RunData> {
            runs.iter()
                .map(|r| match r {
                    RunData::Shares { n, .. } => RunData::Shares {
                        pass: if pass_all { *n } else { 0 },
                        n: *n,
                    },
                    x => x.clone(),
                })
                .collect()
        };
        let xa = scale::side_runs(m.scale, &extreme(&m.a, true), wa, m.log1p, None);
        let xb = scale::side_runs(m.scale, &extreme(&m.b, false), wb, m.log1p, None);
        if let Some(xe) = model::effect(&xa, &xb, &between) {
            let best = answer::judge(xe, theta).p_worse;
            if best >= answer::ONE_SIDED {
                return Err(Untested::CannotDecide(format!(
                    "cannot be decided with {} and {} trials a side ({}): even every trial \
                     passing against every trial failing would not be called",
                    m.a.iter().map(RunData::trials).sum::<usize>(),
                    m.b.iter().map(RunData::trials).sum::<usize>(),
                    between.describe()
                )));
            }
        }
    }
    Ok(Tested {
        judged,
        estimates: (
            scale::back(m.scale, a.mean_y(), m.log1p),
            scale::back(m.scale, b.mean_y(), m.log1p),
        ),
        between,
        within_note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(v: &[(usize, usize)]) -> Vec<RunData> {
        v.iter()
            .map(|&(pass, n)| RunData::Shares { pass, n })
            .collect()
    }

    fn runs_of(m: &MetricRuns) -> Result<Tested, Untested> {
        test(
            m,
            ("s", "v", "m"),
            Across::Runs {
                calibration: None,
                interleaved: true,
            },
            10.0,
        )
    }

    #[test]
    fn a_hung_candidate_is_worse_by_its_criterion() {
        // 8/8 within the bound in A; 2/8 in B (six trials hung): within one run,
        // Fisher's one-sided p = 0.0035: worse.
        let m = MetricRuns {
            scale: Scale::LogOdds,
            a: shares(&[(8, 8)]),
            b: shares(&[(2, 8)]),
            log1p: false,
            lower_is_worse: false,
            hangs: false,
        };
        let t = test(&m, ("s", "v", "wait"), Across::OneRun, 10.0).unwrap();
        assert!(t.judged.p_worse < 0.004, "{:?}", t.judged);
        assert_eq!(
            answer::answers(&[t.judged], answer::ONE_SIDED)[0].answer,
            Answer::Worse
        );
    }

    #[test]
    fn three_trials_a_side_cannot_decide_a_criterion_within_a_run() {
        let m = MetricRuns {
            scale: Scale::LogOdds,
            a: shares(&[(3, 3)]),
            b: shares(&[(0, 3)]),
            log1p: false,
            lower_is_worse: false,
            hangs: false,
        };
        let e = test(&m, ("s", "v", "wait"), Across::OneRun, 10.0).unwrap_err();
        let Untested::CannotDecide(why) = e else {
            panic!("{e:?}")
        };
        assert!(why.contains("cannot be decided with 3 and 3"), "{why}");
    }

    #[test]
    fn several_runs_a_side_are_judged_run_against_run() {
        // Three runs a side; dropouts 3x higher in B in every run, runs steady: worse.
        let ev = |k: u64| RunData::Events(vec![(k, 10.0); 3]);
        let m = MetricRuns {
            scale: Scale::LogRate,
            a: vec![ev(10), ev(12), ev(9)],
            b: vec![ev(30), ev(33), ev(29)],
            log1p: false,
            lower_is_worse: false,
            hangs: false,
        };
        let t = runs_of(&m).unwrap();
        assert!(matches!(t.between, Between::Runs { .. }), "{:?}", t.between);
        assert_eq!(
            answer::answers(&[t.judged], answer::ONE_SIDED)[0].answer,
            Answer::Worse
        );
        // The same counts, but B's runs spread from 1 to 300: inconclusive.
        let m = MetricRuns {
            b: vec![ev(1), ev(33), ev(300)],
            ..m
        };
        let t = runs_of(&m).unwrap();
        assert_eq!(
            answer::answers(&[t.judged], answer::ONE_SIDED)[0].answer,
            Answer::Inconclusive
        );
    }

    #[test]
    fn one_run_a_side_without_a_calibration_is_judged_against_the_largest_spread() {
        // 91 against 1 dropouts in one run each: a trial-level test calls it; against
        // the largest run-to-run spread measured it is inconclusive.
        let m = MetricRuns {
            scale: Scale::LogRate,
            a: vec![RunData::Events(vec![(0, 10.0), (1, 10.0), (0, 10.0)])],
            b: vec![RunData::Events(vec![(30, 10.0), (31, 10.0), (30, 10.0)])],
            log1p: false,
            lower_is_worse: false,
            hangs: false,
        };
        let t = runs_of(&m).unwrap();
        assert!(matches!(t.between, Between::Assumed { .. }));
        assert_eq!(
            answer::answers(&[t.judged], answer::ONE_SIDED)[0].answer,
            Answer::Inconclusive
        );
        // Shared (one run, interleaved): the same counts are clearly worse.
        let t = test(&m, ("s", "v", "d"), Across::OneRun, 10.0).unwrap();
        assert_eq!(
            answer::answers(&[t.judged], answer::ONE_SIDED)[0].answer,
            Answer::Worse
        );
    }

    #[test]
    fn a_calibration_is_used_when_it_has_the_metric() {
        use results::calibration::{CALIBRATION_VERSION, CalibrationKey, MetricSpread};
        let cal = Calibration {
            format: CALIBRATION_VERSION,
            key: CalibrationKey::default(),
            created: String::new(),
            xrunrig_version: None,
            runs: vec![],
            trials_per_run: 3,
            duration_ms_per_trial: None,
            command: vec![],
            metrics: vec![MetricSpread {
                setting: "s".into(),
                variant: "v".into(),
                metric: "d".into(),
                scale: Scale::LogRate,
                between: 0.01,
                df: 59,
                total: 0.02,
                within: 0.01,
                trial_var: Some(1.0),
                trial_df: Some(100.0),
                runs: vec![],
                run_v: vec![],
            }],
            pairs: None,
        };
        let m = MetricRuns {
            scale: Scale::LogRate,
            a: vec![RunData::Events(vec![(1, 10.0), (1, 10.0), (0, 10.0)])],
            b: vec![RunData::Events(vec![(30, 10.0), (31, 10.0), (30, 10.0)])],
            log1p: false,
            lower_is_worse: false,
            hangs: false,
        };
        let t = test(
            &m,
            ("s", "v", "d"),
            Across::Runs {
                calibration: Some((&cal, "cal.json")),
                interleaved: false,
            },
            10.0,
        )
        .unwrap();
        assert!(
            matches!(t.between, Between::Calibrated { .. }),
            "{:?}",
            t.between
        );
        assert_eq!(
            answer::answers(&[t.judged], answer::ONE_SIDED)[0].answer,
            Answer::Worse
        );
        // Another metric's key: the calibration does not hold it, the assumption applies.
        let t = test(
            &m,
            ("s", "v", "other"),
            Across::Runs {
                calibration: Some((&cal, "cal.json")),
                interleaved: false,
            },
            10.0,
        )
        .unwrap();
        assert!(matches!(t.between, Between::Assumed { .. }));
    }

    #[test]
    fn one_run_a_side_of_values_is_welchs_t_on_their_logarithms() {
        // R: t.test(6:10, 1:5): t = 5, df = 8, p-value = 0.001053 (two-sided). On the log
        // scale: values e^1..e^5 against e^6..e^10, threshold 0.
        let e = |v: std::ops::RangeInclusive<i32>| {
            RunData::Values(v.map(|x| (x as f64).exp()).collect())
        };
        let m = MetricRuns {
            scale: Scale::LogValue,
            a: vec![e(1..=5)],
            b: vec![e(6..=10)],
            log1p: false,
            lower_is_worse: false,
            hangs: false,
        };
        let t = test(&m, ("s", "v", "x"), Across::OneRun, 0.0).unwrap();
        let j = t.judged;
        assert!((j.effect.d / j.effect.se - 5.0).abs() < 1e-9, "{j:?}");
        assert!((j.effect.df - 8.0).abs() < 1e-9, "{j:?}");
        assert!((2.0 * j.p_worse - 0.001053).abs() < 1e-6, "{j:?}");
    }

    #[test]
    fn fisher_one_sided_against_exact_values() {
        // 8/8 against 2/8: P(X ≤ 2) with 10 passes in 16, 8 drawn = 0.00350 (R:
        // fisher.test(matrix(c(8,0,2,6),2), alternative="greater")$p.value).
        let (w, b) = fisher_one_sided((8, 8), (2, 8));
        assert!((w - 0.003_496_5).abs() < 1e-6, "{w}");
        assert!((b - 1.0).abs() < 1e-9);
        // 5/5 against 0/5: 1/252.
        assert!((fisher_one_sided((5, 5), (0, 5)).0 - 1.0 / 252.0).abs() < 1e-12);
    }
}
