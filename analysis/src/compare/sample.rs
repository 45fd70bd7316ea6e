//! What compare sets side by side: each metric of a directory as one value per trial
//! (the unit of evidence: cycles within a trial are correlated, trials are not), its
//! value for the table, and the test between two such samples.

use crate::dist::Dist;
use crate::load::TrialsData;
use crate::load::livefx::LivefxData;
use crate::stats::{
    TrialValues, censored_ranks, cv_percent, geo_mean, log_welch, mann_whitney, median,
    overdispersed_rate, sorted,
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
        /// Trials that ended early (end_early): each value only known to be at least
        /// this. Never among `vals`; see `test()` for how they are ranked.
        censored: Vec<f64>,
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
            Sample::Trials {
                vals,
                missing,
                censored,
                ..
            } => vals.len() + missing + censored.len(),
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
        let (vals, missing, censored) =
            if row.values.len() + row.missing + row.censored.len() == row.n {
                (row.values.clone(), row.missing, row.censored.clone())
            } else {
                let (mut vals, mut missing, mut censored) = (Vec::new(), 0, Vec::new());
                for tr in t
                    .trials
                    .iter()
                    .filter(|x| x.setting == row.setting && x.variant == row.variant)
                {
                    match tr.metrics.get(&row.metric).and_then(|v| median(&sorted(v))) {
                        Some(m) => vals.push(m),
                        None => match tr.censored.get(&row.metric) {
                            Some(c) => censored.push(*c),
                            None => missing += 1,
                        },
                    }
                }
                (vals, missing, censored)
            };
        out.push((
            (row.setting.clone(), row.variant.clone(), row.metric.clone()),
            Sample::Trials {
                vals,
                missing,
                censored,
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

/// A sample's figure for the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    pub value: Option<f64>,
    /// The spread (" ±12%"), or what the figure is over (" (3 in 0.50 h)").
    pub spread: String,
    pub unit: String,
    /// `value` is only a lower bound: the median trial ended early (censored).
    pub at_least: bool,
}

/// The table's figure: the median trial (trial rigs; with censored trials at their
/// censoring points, a lower bound when it falls on one), the geometric mean of the
/// trials' p99s (what the test compares), or dropouts per hour.
pub fn value_of(s: &Sample) -> Value {
    match s {
        Sample::Trials {
            vals,
            censored,
            unit,
            ..
        } => {
            let m = results::trials::OrderStats::of(vals, censored);
            let mut spread = cv_percent(vals).map_or(String::new(), |c| format!(" ±{c:.0}%"));
            if !censored.is_empty() {
                spread += &format!(" ({} censored)", censored.len());
            }
            Value {
                value: m.median,
                spread,
                unit: unit.clone(),
                at_least: m.median_at_least,
            }
        }
        Sample::Tails { p99_us, .. } => Value {
            value: geo_mean(p99_us),
            spread: cv_percent(p99_us).map_or(String::new(), |c| format!(" ±{c:.0}%")),
            unit: "us".into(),
            at_least: false,
        },
        Sample::Events(v) => {
            let k: u64 = v.iter().map(|x| x.0).sum();
            let s: f64 = v.iter().map(|x| x.1).sum();
            Value {
                value: (s > 0.0).then(|| k as f64 * 3600.0 / s),
                spread: format!(" ({k} in {:.2} h)", s / 3600.0),
                unit: "/h".into(),
                at_least: false,
            }
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
                censored: ca,
                unit,
                ..
            },
            Sample::Trials {
                vals: b,
                missing: mb,
                censored: cb,
                ..
            },
        ) => {
            // A trial that timed out took longer than any that finished: ranked last.
            // A censored one (ended early at its bound) is never used as the value it
            // was cut at, nor dropped (that would hide the failures): the rank test
            // orders it only where its order is known, every value from the lowest
            // censoring point up being one tie (`censored_ranks`: exact, it loses only
            // what was never measured). A Welch test on values could not take it.
            let side = |values, missing: &usize, censored| TrialValues {
                values,
                missing: *missing,
                censored,
            };
            let (xb, xa, cap) = censored_ranks(side(b, mb, cb), side(a, ma, ca));
            let m = mann_whitney(&xb, &xa).ok_or(Untested::NoPerTrialValues)?;
            Ok(Tested {
                p: m.p,
                how: format!(
                    "Mann-Whitney U{} over {nb} and {nc} trials{}",
                    if m.exact { " exact" } else { ", ties" },
                    cap.map_or(String::new(), |c| format!(
                        ", {} censored: from {} {unit} up one tie",
                        ca.len() + cb.len(),
                        crate::report::common::fmt_val(c)
                    ))
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
