//! What compare sets side by side: each metric of a directory as one value per trial
//! (the unit of evidence: cycles within a trial are correlated, trials are not), its
//! value for the table, and the test between two such samples.

use crate::dist::Dist;
use crate::load::TrialsData;
use crate::load::livefx::LivefxData;
use crate::stats::{
    cv_percent, geo_mean, log_welch, mann_whitney, median, overdispersed_rate, sorted,
};

/// (setting, variant, metric name)
pub type Key = (String, String, String);

/// Fewer trials than this on a side: the between-trial variation cannot be estimated,
/// and the metric gets no verdict.
pub const MIN_TRIALS: usize = 3;

/// What `xrunrig compare` suggests when a side has too few trials.
pub const SUGGESTED_TRIALS: usize = 5;

/// One metric of one directory, per trial.
#[derive(Clone)]
pub enum Sample {
    /// Trial rigs: each trial's value (its median when it has several), with bound
    /// counts.
    Trials {
        vals: Vec<f64>,
        /// Trials without a value (timed out): the slowest, for the test.
        missing: usize,
        unit: String,
        within: Option<(usize, usize)>,
        bound: Option<String>,
    },
    /// An audio latency: each trial's p99 (µs), and every cycle pooled (for the plot).
    Tails { p99_us: Vec<f64>, pooled: Dist },
    /// Dropouts: each trial's count and seconds of audio.
    Events(Vec<(u64, f64)>),
}

impl Sample {
    /// Trials that count for the test.
    pub fn trials(&self) -> usize {
        match self {
            Sample::Trials { vals, missing, .. } => vals.len() + missing,
            Sample::Tails { p99_us, .. } => p99_us.len(),
            Sample::Events(v) => v.iter().filter(|x| x.1 > 0.0).count(),
        }
    }
}

/// A trial rig's: each row's values, or each trial's median of them.
pub fn trial_samples(t: &TrialsData) -> Vec<(Key, Sample)> {
    let mut out = Vec::new();
    for row in &t.rows {
        // One value per trial in the row: those are the trials. Several (one per
        // thread instance, per repeat): each trial's median, from samples.jsonl.
        let (vals, missing) = if row.values.len() + row.missing == row.n {
            (row.values.clone(), row.missing)
        } else {
            let mut vals = Vec::new();
            let mut missing = 0;
            for tr in t
                .trials
                .iter()
                .filter(|x| x.setting == row.setting && x.variant == row.variant)
            {
                match tr.metrics.get(&row.metric).and_then(|v| median(&sorted(v))) {
                    Some(m) => vals.push(m),
                    None => missing += 1,
                }
            }
            (vals, missing)
        };
        out.push((
            (row.setting.clone(), row.variant.clone(), row.metric.clone()),
            Sample::Trials {
                vals,
                missing,
                unit: row.unit.clone(),
                within: row.within_bound.map(|w| (w, row.n.max(w))),
                bound: row.bound.clone(),
            },
        ));
    }
    out
}

/// A livefx rig's: dropouts, and each latency's per-trial p99s.
pub fn livefx_samples(d: &LivefxData) -> Vec<(Key, Sample)> {
    let mut out = Vec::new();
    for c in crate::report::livefx::cases(d) {
        let k = |m: &str| (c.setting.clone(), c.variant.clone(), m.to_string());
        let events = crate::report::livefx::trial_dropouts(d, &c.setting, &c.variant);
        if !events.is_empty() {
            out.push((k("dropouts"), Sample::Events(events)));
        }
        let per = d
            .trial_latency
            .get(&(c.setting.clone(), c.variant.clone()))
            .cloned()
            .unwrap_or_default();
        for (i, (name, h)) in [
            ("callback p99", c.callback),
            ("lateness p99", c.lateness),
            ("wake p99", c.wake),
        ]
        .into_iter()
        .enumerate()
        {
            let Some(h) = h else { continue };
            let p99_us: Vec<f64> = per
                .iter()
                .filter_map(|t| [t.callback_p99_ns, t.lateness_p99_ns, t.wake_p99_ns][i])
                .map(|ns| ns as f64 / 1e3)
                .collect();
            out.push((
                k(name),
                Sample::Tails {
                    p99_us,
                    pooled: h.clone(),
                },
            ));
        }
    }
    out
}

/// Two livefx runs, A and `label`, where a (setting, variant) ran with another backend,
/// period or rate: what differs, in the words
/// `load.rs` `same_experiment()` refuses with.
pub fn audio_differs(x: &LivefxData, y: &LivefxData, label: &str) -> Option<String> {
    for r in &x.rows {
        let Some(o) = y.row(&r.setting, &r.variant) else {
            continue;
        };
        let (pa, pb) = (
            (&r.backend, r.period, r.rate),
            (&o.backend, o.period, o.rate),
        );
        if pa != pb {
            let show = |p: (&String, Option<u32>, Option<u32>)| {
                format!(
                    "backend {}, period {}, {} Hz",
                    p.0,
                    p.1.map_or("?".into(), |v| v.to_string()),
                    p.2.map_or("?".into(), |v| v.to_string())
                )
            };
            return Some(format!(
                "{} / {} ran with {} in A and {} in {label}",
                r.setting,
                r.variant,
                show(pa),
                show(pb)
            ));
        }
    }
    None
}

/// (value, spread text, unit) for the table: the median trial (trial rigs), the
/// geometric mean of the trials' p99s (what the test compares), or dropouts per hour.
pub fn value_of(s: &Sample) -> (Option<f64>, String, String) {
    match s {
        Sample::Trials { vals, unit, .. } => (
            median(&sorted(vals)),
            cv_percent(vals).map_or(String::new(), |c| format!(" ±{c:.0}%")),
            unit.clone(),
        ),
        Sample::Tails { p99_us, .. } => (
            geo_mean(p99_us),
            cv_percent(p99_us).map_or(String::new(), |c| format!(" ±{c:.0}%")),
            "us".into(),
        ),
        Sample::Events(v) => {
            let k: u64 = v.iter().map(|x| x.0).sum();
            let s: f64 = v.iter().map(|x| x.1).sum();
            (
                (s > 0.0).then(|| k as f64 * 3600.0 / s),
                format!(" ({k} in {:.2} h)", s / 3600.0),
                "/h".into(),
            )
        }
    }
}

/// A test between two samples: its two-sided p and its name.
#[derive(Debug, Clone, PartialEq)]
pub struct Tested {
    pub p: f64,
    pub how: String,
}

/// Why a metric was not tested.
#[derive(Debug, Clone, PartialEq)]
pub enum Untested {
    /// Fewer than `MIN_TRIALS` trials on a side: (baseline's, candidate's).
    TooFewTrials(usize, usize),
    /// The trials hold no per-trial values (e.g. the cycle files are gone).
    NoPerTrialValues,
}

/// The candidate against the baseline, trial against trial.
pub fn test(base: &Sample, cand: &Sample) -> Result<Tested, Untested> {
    let (nb, nc) = (base.trials(), cand.trials());
    if nb == 0 || nc == 0 {
        return Err(Untested::NoPerTrialValues);
    }
    if nb < MIN_TRIALS || nc < MIN_TRIALS {
        return Err(Untested::TooFewTrials(nb, nc));
    }
    match (base, cand) {
        (
            Sample::Trials {
                vals: a,
                missing: ma,
                ..
            },
            Sample::Trials {
                vals: b,
                missing: mb,
                ..
            },
        ) => {
            // A trial that timed out took longer than any that finished: ranked last.
            let with = |v: &[f64], m: usize| -> Vec<f64> {
                v.iter()
                    .copied()
                    .chain(std::iter::repeat_n(f64::INFINITY, m))
                    .collect()
            };
            let m = mann_whitney(&with(b, *mb), &with(a, *ma)).ok_or(Untested::NoPerTrialValues)?;
            Ok(Tested {
                p: m.p,
                how: format!(
                    "Mann-Whitney U{} over {nb} and {nc} trials",
                    if m.exact { " exact" } else { ", ties" }
                ),
            })
        }
        (Sample::Tails { p99_us: a, .. }, Sample::Tails { p99_us: b, .. }) => {
            let w = log_welch(a, b).ok_or(Untested::NoPerTrialValues)?;
            Ok(Tested {
                p: w.p,
                how: format!("Welch t on log p99, {nb} and {nc} trials, df {:.1}", w.df),
            })
        }
        (Sample::Events(a), Sample::Events(b)) => {
            let r = overdispersed_rate(a, b).ok_or(Untested::NoPerTrialValues)?;
            Ok(Tested {
                p: r.p,
                how: if r.dispersion > 1.0 {
                    format!(
                        "quasi-Poisson rate test over {nb} and {nc} trials, dispersion {:.1}",
                        r.dispersion
                    )
                } else {
                    format!("exact rate test over {nb} and {nc} trials (no over-dispersion seen)")
                },
            })
        }
        _ => Err(Untested::NoPerTrialValues),
    }
}
