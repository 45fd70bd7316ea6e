//! Two levels of variation, runs and trials (Kalibera and Jones, "Rigorous benchmarking
//! in reasonable time", ISMM 2013): a run (one boot, one process) has an effect of its
//! own that every trial in it shares, so a side's evidence grows with its runs, not with
//! its trials. Each run r of a side gives an estimate y_r on the metric's log scale with
//! a within-run variance v_r; y_r = μ + b_r + e_r, Var b_r = σ²_b (between runs),
//! Var e_r = v_r. A side's estimate is the plain mean of its runs' y_r (every run one
//! unit, whatever its trials), of variance (σ²_b + mean v_r) / R.

use super::answer::Effect;

/// One run's estimate on a metric's scale and its within-run variance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunEst {
    pub y: f64,
    pub v: f64,
}

/// Where σ²_b, the between-run variance, comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Between {
    /// A side has two runs or more: σ²_b from the runs themselves, each side's runs about
    /// their own mean (their sample variance less their mean within-run variance), pooled
    /// over the sides, and with a stored calibration of this rig on this machine when
    /// one matches; `df` its degrees of freedom (Σ runs − 1, plus the calibration's).
    Runs {
        var: f64,
        df: f64,
        calibration: Option<String>,
    },
    /// Each side one block in time (one run a side, or all of one side's runs before the
    /// other's): a block carries the machine's state of its time, which its runs share,
    /// so its effect is a run's, not divided by its runs: σ²_b from a stored calibration
    /// of this rig on this machine (or the runs' own when larger) with its degrees of
    /// freedom.
    Calibrated { var: f64, df: f64, name: String },
    /// The same without a calibration: the largest σ²_b this project has measured for
    /// such a metric (or the runs' own when larger), taken as known. Only a change
    /// beyond any such spread is called.
    Assumed { var: f64, source: String },
    /// Settings interleaved within one run share its effect: no between-run part.
    Shared,
    /// Hangs, counted trial by trial: a trial that does not finish is no part of the
    /// run-to-run spread (identical runs do not hang), so every trial is a unit.
    Hangs,
}

impl Between {
    /// In words, for the method line.
    pub fn describe(&self) -> String {
        match self {
            Between::Runs {
                var,
                df,
                calibration,
            } => format!(
                "run against run: the runs' own spread (σ = {:.2} on the log scale, {df:.0} \
                 df{})",
                var.sqrt(),
                calibration
                    .as_ref()
                    .map_or(String::new(), |c| format!(", pooled with calibration {c}"))
            ),
            Between::Calibrated { var, df, name } => format!(
                "each side one block in time: a block's spread from calibration {name} (σ = \
                 {:.2} on the log scale, {df:.0} df)",
                var.sqrt()
            ),
            Between::Assumed { var, source } => format!(
                "each side one block in time and no calibration: the largest between-run \
                 spread measured for such a metric (σ = {:.2} on the log scale: {source}), \
                 taken as known",
                var.sqrt()
            ),
            Between::Shared => "settings interleaved in one run: trial against trial".into(),
            Between::Hangs => "hangs counted trial by trial (Fisher's exact test): a trial \
                               that does not finish is no part of the run-to-run spread"
                .into(),
        }
    }
}

/// A side's runs, and the degrees of freedom of their within-run variances (infinite
/// when they come from counts alone, as a binomial's do).
#[derive(Debug, Clone, PartialEq)]
pub struct SideRuns {
    pub runs: Vec<RunEst>,
    pub within_df: f64,
}

impl SideRuns {
    pub fn mean_y(&self) -> f64 {
        self.runs.iter().map(|r| r.y).sum::<f64>() / self.runs.len() as f64
    }
    fn mean_v(&self) -> f64 {
        self.runs.iter().map(|r| r.v).sum::<f64>() / self.runs.len() as f64
    }
    /// σ²_b from this side's runs by moments, with its degrees of freedom; None below
    /// two runs.
    pub fn between(&self) -> Option<(f64, f64)> {
        between_by_moments(&self.runs).map(|(b, _, _, df)| (b, df as f64))
    }
}

/// σ²_b pooled over the sides that have two runs or more, and over `calibration`
/// (σ²_b, df) when given: Σ df·σ² / Σ df. None when no side has two runs.
pub fn pooled_between(sides: &[&SideRuns], calibration: Option<(f64, f64)>) -> Option<(f64, f64)> {
    let own: Vec<(f64, f64)> = sides.iter().filter_map(|s| s.between()).collect();
    if own.is_empty() {
        return None;
    }
    let all: Vec<(f64, f64)> = own.into_iter().chain(calibration).collect();
    let df: f64 = all.iter().map(|x| x.1).sum();
    let var = all.iter().map(|x| x.0 * x.1).sum::<f64>() / df;
    Some((var, df))
}

/// Σ of variance parts, each with its degrees of freedom: the total and its
/// Welch–Satterthwaite degrees of freedom.
pub fn satterthwaite(parts: &[(f64, f64)]) -> (f64, f64) {
    let total: f64 = parts.iter().map(|p| p.0).sum();
    let denom: f64 = parts
        .iter()
        .filter(|p| p.1.is_finite() && p.0 > 0.0)
        .map(|p| p.0 * p.0 / p.1.max(1e-9))
        .sum();
    let df = if denom > 0.0 {
        total * total / denom
    } else {
        f64::INFINITY
    };
    (total, df)
}

/// B against A: the change of the side means (worse upward on the scale) with its
/// standard error and degrees of freedom: Var(ȳ) = σ²_b / R + mean v_r / R per side when
/// the sides' runs are interleaved, σ²_b + mean v_r / R when each side is one block in
/// time (`Between::Calibrated`, `Assumed`: one run a side is such a block), the
/// degrees of freedom by Welch–Satterthwaite over the between-run part and each side's
/// within-run part. None when a side has no run.
pub fn effect(a: &SideRuns, b: &SideRuns, between: &Between) -> Option<Effect> {
    let (ra, rb) = (a.runs.len(), b.runs.len());
    if ra == 0 || rb == 0 {
        return None;
    }
    let d = b.mean_y() - a.mean_y();
    // Interleaved runs are the units: their effects average away, 1/R a side. A side
    // that is one block in time carries its block's effect whole: 1 a side.
    let (part, df_b) = match between {
        Between::Runs { var, df, .. } => (var * (1.0 / ra as f64 + 1.0 / rb as f64), *df),
        Between::Calibrated { var, df, .. } => (2.0 * var, *df),
        Between::Assumed { var, .. } => (2.0 * var, f64::INFINITY),
        Between::Shared | Between::Hangs => (0.0, f64::INFINITY),
    };
    let (se2, df) = satterthwaite(&[
        (part, df_b),
        (a.mean_v() / ra as f64, a.within_df),
        (b.mean_v() / rb as f64, b.within_df),
    ]);
    Some(Effect {
        d,
        se: se2.max(0.0).sqrt(),
        df,
    })
}

/// σ²_b by moments from R runs of one configuration: the runs' sample variance of y minus
/// their mean within-run variance, at least 0; with that sample variance, the mean
/// within-run variance, and R − 1 degrees of freedom. None below two runs.
pub fn between_by_moments(runs: &[RunEst]) -> Option<(f64, f64, f64, u32)> {
    let n = runs.len();
    if n < 2 {
        return None;
    }
    let m = runs.iter().map(|r| r.y).sum::<f64>() / n as f64;
    let total = runs.iter().map(|r| (r.y - m).powi(2)).sum::<f64>() / (n - 1) as f64;
    let within = runs.iter().map(|r| r.v).sum::<f64>() / n as f64;
    Some(((total - within).max(0.0), total, within, (n - 1) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(ys: &[f64], v: f64, within_df: f64) -> SideRuns {
        SideRuns {
            runs: ys.iter().map(|&y| RunEst { y, v }).collect(),
            within_df,
        }
    }

    #[test]
    fn runs_against_runs_pool_the_sides_spread() {
        // Two sides of three runs, no within-run noise: σ²_b 1 and 4 by moments, pooled
        // 2.5 with 4 df; Var(d) = 2.5 (1/3 + 1/3).
        let a = side(&[0.0, 1.0, 2.0], 0.0, 10.0);
        let b = side(&[0.0, 2.0, 4.0], 0.0, 10.0);
        let (var, df) = pooled_between(&[&a, &b], None).unwrap();
        assert!((var - 2.5).abs() < 1e-12 && df == 4.0, "{var} {df}");
        let runs = Between::Runs {
            var,
            df,
            calibration: None,
        };
        let e = effect(&a, &b, &runs).unwrap();
        assert!((e.d - 1.0).abs() < 1e-12);
        assert!((e.se - (2.5f64 * 2.0 / 3.0).sqrt()).abs() < 1e-12);
        assert!((e.df - 4.0).abs() < 1e-9, "{}", e.df);
        // A calibration of σ²_b = 1 over 19 df pools in: (4·2.5 + 19·1) / 23.
        let (var, df) = pooled_between(&[&a, &b], Some((1.0, 19.0))).unwrap();
        assert!((var - 29.0 / 23.0).abs() < 1e-12 && df == 23.0);
        // No side with two runs: nothing to pool.
        let one = side(&[1.0], 0.0, 1.0);
        assert!(pooled_between(&[&one, &one], Some((1.0, 19.0))).is_none());
    }

    #[test]
    fn more_trials_per_run_do_not_shrink_the_between_run_part() {
        // One run a side; σ²_b = 1 calibrated: however small the within-run variance
        // (more trials), the standard error stays at least √2.
        let cal = Between::Calibrated {
            var: 1.0,
            df: 19.0,
            name: "x".into(),
        };
        for v in [1.0, 0.1, 0.001] {
            let e = effect(&side(&[0.0], v, 30.0), &side(&[0.0], v, 30.0), &cal).unwrap();
            assert!(e.se >= 2f64.sqrt(), "{v}: {}", e.se);
            assert!(e.df >= 19.0 - 1e-9, "{}", e.df);
        }
        // Shared (one run): only the within part counts, with its df.
        let e = effect(
            &side(&[0.0], 0.5, 8.0),
            &side(&[1.0], 0.5, 8.0),
            &Between::Shared,
        )
        .unwrap();
        assert!((e.se - 1.0).abs() < 1e-12);
        assert!((e.df - 16.0).abs() < 1e-9, "{}", e.df);
    }

    #[test]
    fn moments_subtract_the_within_part_and_never_go_negative() {
        let runs = [RunEst { y: 0.0, v: 0.5 }, RunEst { y: 2.0, v: 0.5 }];
        let (b, total, within, df) = between_by_moments(&runs).unwrap();
        assert_eq!((total, within, df), (2.0, 0.5, 1));
        assert!((b - 1.5).abs() < 1e-12);
        let runs = [RunEst { y: 0.0, v: 5.0 }, RunEst { y: 0.1, v: 5.0 }];
        assert_eq!(between_by_moments(&runs).unwrap().0, 0.0);
        assert!(between_by_moments(&runs[..1]).is_none());
    }
}
