//! Each metric of one run as one value per trial — what `xrunrig compare` sets side by
//! side and a report's contrasts judge — the figure a table shows for several runs of
//! it, and what each is judged as on its scale (`judge::scale`): a trial rig's values and
//! its criterion (a bound, or that trials finished), an audio rig's latency p99s,
//! dropouts and finished trials. A trial rig's samples are made here; an audio rig's
//! in `compare::sample` (from the report's cases).

use crate::dist::Dist;
use crate::judge::{RunData, Scale};
use crate::load::TrialsData;
use crate::stats::{median, sorted};
use results::trials::{TrialRecord, TrialStatus};
use results::units::{Bound, BoundOp, unit_scale};

/// (setting, variant, metric name)
pub type Key = (String, String, String);

/// One metric of one run, per trial.
#[derive(Clone, Debug)]
pub enum Sample {
    /// Trial rigs: each finished trial's value (its median when it has several), with
    /// the trials' criterion.
    Trials {
        vals: Vec<f64>,
        /// Trials without a value: timed out, failed, hung.
        missing: usize,
        /// Trials that ended early (end_early): each value only known to be at least
        /// this. Never among `vals`.
        censored: Vec<f64>,
        unit: String,
        bound: Option<String>,
        /// Trials that kept the criterion (finished, measured, within the bound when
        /// there is one), of `n`.
        passed: usize,
        n: usize,
        /// The bound holds below its limit ("< 100 ms"): larger values are worse. False
        /// for "> 5 us" bounds.
        higher_is_worse: bool,
    },
    /// An audio latency: each trial's p99 (µs), and every cycle pooled (for the plot).
    Tails { p99_us: Vec<f64>, pooled: Dist },
    /// Dropouts: each trial's count and seconds of audio, and each trial's dropout
    /// episodes (None: an older run that did not count them).
    Events {
        dropouts: Vec<(u64, f64)>,
        episodes: Option<Vec<u64>>,
    },
    /// Audio trials that finished (status ok), of all that ran.
    Finished { ok: usize, n: usize },
}

/// The suffix of dropouts counted in episodes (`results::livefx::EPISODE_GAP_NS`):
/// dropouts within one episode come from one event and are not independent, so the
/// episodes are the counts tested.
pub const EPISODES: &str = " (episodes)";

/// One judged metric of a sample: its name's suffix, its scale and its data.
#[derive(Clone)]
pub struct Item {
    pub suffix: &'static str,
    pub scale: Scale,
    pub data: RunData,
    pub lower_is_worse: bool,
    /// Whether the item carries information: a criterion every trial of both sides kept
    /// is no evidence either way (see `Sample::items`).
    pub failures: bool,
    /// Trials that did not finish, tested as counts trial by trial (`judge` `hangs`).
    pub hangs: bool,
}

impl Sample {
    /// Trials that ran.
    pub fn trials(&self) -> usize {
        match self {
            Sample::Trials { n, .. } => *n,
            Sample::Tails { p99_us, .. } => p99_us.len(),
            Sample::Events { dropouts, .. } => dropouts.iter().filter(|x| x.1 > 0.0).count(),
            Sample::Finished { n, .. } => *n,
        }
    }

    /// A trial rig's trials without a value (hung, timed out, failed); 0 otherwise.
    fn missing_trials(&self) -> usize {
        match self {
            Sample::Trials { missing, .. } => *missing,
            _ => 0,
        }
    }

    /// The metrics this sample is judged as. A trial rig's values on their log scale
    /// (finished trials only; not when a side has trials cut at the bound: their values
    /// are unknown above it, and the criterion judges them), and its criterion: the
    /// trials within the bound, or (without a bound) the trials that finished; a hung,
    /// timed-out or failed trial fails it, so a kernel that hangs is worse, never left
    /// out. A criterion no trial of either side failed carries no evidence, and is not
    /// judged (`failures` false).
    pub fn items(&self) -> Vec<Item> {
        match self {
            Sample::Trials {
                vals,
                censored,
                bound,
                passed,
                n,
                higher_is_worse,
                ..
            } => {
                let mut out = Vec::new();
                if censored.is_empty() {
                    out.push(Item {
                        suffix: "",
                        scale: Scale::LogValue,
                        data: RunData::Values(vals.clone()),
                        lower_is_worse: !higher_is_worse,
                        failures: true,
                        hangs: false,
                    });
                }
                out.push(Item {
                    suffix: if bound.is_some() {
                        " within bound"
                    } else {
                        " measured"
                    },
                    scale: Scale::LogOdds,
                    data: RunData::Shares {
                        pass: *passed,
                        n: *n,
                    },
                    lower_is_worse: false,
                    failures: passed < n,
                    // Without a bound the criterion is that trials finished: hangs.
                    hangs: bound.is_none(),
                });
                // Hangs (timed out, failed, no value) apart from the bound: counted
                // trial by trial, they decide whenever their count does.
                let missing = self.missing_trials();
                if bound.is_some() {
                    out.push(Item {
                        suffix: " finished",
                        scale: Scale::LogOdds,
                        data: RunData::Shares {
                            pass: n - missing.min(*n),
                            n: *n,
                        },
                        lower_is_worse: false,
                        failures: missing > 0,
                        hangs: true,
                    });
                }
                out
            }
            Sample::Tails { p99_us, .. } => vec![Item {
                suffix: "",
                scale: Scale::LogP99,
                data: RunData::Values(p99_us.iter().copied().filter(|x| *x > 0.0).collect()),
                lower_is_worse: false,
                failures: true,
                hangs: false,
            }],
            Sample::Events { dropouts, episodes } => {
                let item = |suffix, v: Vec<(u64, f64)>| Item {
                    suffix,
                    scale: Scale::LogRate,
                    // No dropouts on either side: no rate ratio to judge.
                    failures: v.iter().any(|x| x.0 > 0),
                    data: RunData::Events(v),
                    lower_is_worse: false,
                    hangs: false,
                };
                let mut out = vec![item("", dropouts.clone())];
                // Episodes over the same trials' audio: what a comparison tests when
                // every run of both sides has them (`compare::verdict`).
                if let Some(e) = episodes.as_ref().filter(|e| e.len() == dropouts.len()) {
                    let v = e.iter().zip(dropouts).map(|(&k, &(_, s))| (k, s)).collect();
                    out.push(item(EPISODES, v));
                }
                out
            }
            Sample::Finished { ok, n } => vec![Item {
                suffix: "",
                scale: Scale::LogOdds,
                data: RunData::Shares { pass: *ok, n: *n },
                lower_is_worse: false,
                failures: ok < n,
                hangs: true,
            }],
        }
    }
}

/// Whether trial `t` kept a bounded metric: finished, measured, not cut at the bound,
/// every value within it. Without a bound: finished and measured.
fn kept(t: &TrialRecord, metric: &str, bound: Option<&Bound>, unit: &str) -> bool {
    if t.status != TrialStatus::Ok || t.censored.contains_key(metric) {
        return false;
    }
    let Some(vs) = t.metrics.get(metric).filter(|v| !v.is_empty()) else {
        return false;
    };
    match bound {
        None => true,
        Some(b) => {
            let scale = unit_scale(unit).unwrap_or(1e6);
            vs.iter()
                .all(|&x| x.is_finite() && x >= 0.0 && b.holds((x * scale).round() as u64))
        }
    }
}

/// A trial rig's: each row's values, or each trial's median of them, with the criterion
/// counted per trial.
pub fn trial_samples(t: &TrialsData) -> Vec<(Key, Sample)> {
    let mut out = Vec::new();
    for row in &t.rows {
        let recs: Vec<&TrialRecord> = t
            .trials
            .iter()
            .filter(|x| x.setting == row.setting && x.variant == row.variant)
            .collect();
        let bound = row.bound.as_deref().and_then(|b| Bound::parse(b).ok());
        let higher_is_worse = !matches!(bound.map(|b| b.op), Some(BoundOp::Gt | BoundOp::Ge));
        // One value per trial in the row: those are the trials. Several (one per
        // thread instance, per repeat): each trial's median, from samples.jsonl.
        let (vals, missing, censored) = if row.values.len() + row.missing + row.censored.len()
            == row.n
            || recs.len() != row.n
        {
            (row.values.clone(), row.missing, row.censored.clone())
        } else {
            let (mut vals, mut missing, mut censored) = (Vec::new(), 0, Vec::new());
            for tr in &recs {
                match tr.metrics.get(&row.metric).and_then(|v| median(&sorted(v))) {
                    Some(m) if tr.status == TrialStatus::Ok => vals.push(m),
                    _ => match tr.censored.get(&row.metric) {
                        Some(c) => censored.push(*c),
                        None => missing += 1,
                    },
                }
            }
            (vals, missing, censored)
        };
        let (passed, n) = if recs.len() != row.n {
            // No samples.jsonl, or not every trial in it: the row's counts (within_bound
            // counts values: one per trial in a row whose values are the trials).
            let n = row.n.max(vals.len() + missing + censored.len());
            (row.within_bound.unwrap_or(vals.len()).min(n), n)
        } else {
            let p = recs
                .iter()
                .filter(|r| kept(r, &row.metric, bound.as_ref(), &row.unit))
                .count();
            (p, recs.len())
        };
        out.push((
            (row.setting.clone(), row.variant.clone(), row.metric.clone()),
            Sample::Trials {
                vals,
                missing,
                censored,
                unit: row.unit.clone(),
                bound: row.bound.clone(),
                passed,
                n,
                higher_is_worse,
            },
        ));
    }
    out
}

/// A side's figure for the table, over all its runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    pub value: Option<f64>,
    /// What the figure is over (" (3 in 0.50 h)", " (2 hung)").
    pub spread: String,
    pub unit: String,
    /// `value` is only a lower bound: the median trial ended early (censored) or hung.
    pub at_least: bool,
}

/// The table's figure of a side (its runs' samples pooled): the median trial (trial
/// rigs; a hung trial counts as slower than any, a censored one at its censoring point,
/// so the median is a lower bound when it falls on either), the geometric mean of the
/// trials' p99s, dropouts per hour, or the share of trials that finished.
pub fn value_of(runs: &[&Sample], suffix: &str) -> Value {
    let first = runs[0];
    match first {
        Sample::Trials { unit, .. } => {
            let (mut vals, mut cens, mut missing) = (Vec::new(), Vec::new(), 0);
            for s in runs {
                if let Sample::Trials {
                    vals: v,
                    censored: c,
                    missing: m,
                    ..
                } = s
                {
                    vals.extend(v);
                    cens.extend(c);
                    missing += m;
                }
            }
            // A hung trial is at least as slow as anything seen: +∞ for the median.
            let with_hung: Vec<f64> = cens
                .iter()
                .copied()
                .chain(std::iter::repeat_n(f64::INFINITY, missing))
                .collect();
            let m = results::trials::OrderStats::of(&vals, &with_hung);
            let mut spread = String::new();
            if !cens.is_empty() {
                spread += &format!(" ({} censored)", cens.len());
            }
            if missing > 0 {
                spread += &format!(" ({missing} hung or failed)");
            }
            let median = m.median.filter(|v| v.is_finite());
            Value {
                value: median,
                spread,
                unit: unit.clone(),
                at_least: m.median_at_least || (m.median.is_some() && median.is_none()),
            }
        }
        Sample::Tails { .. } => {
            let all: Vec<f64> = runs
                .iter()
                .filter_map(|s| match s {
                    Sample::Tails { p99_us, .. } => Some(p99_us.clone()),
                    _ => None,
                })
                .flatten()
                .collect();
            Value {
                value: crate::stats::geo_mean(&all),
                spread: String::new(),
                unit: "us".into(),
                at_least: false,
            }
        }
        Sample::Events { .. } => {
            let (mut k, mut s, mut e) = (0u64, 0.0f64, Some(0u64));
            for x in runs {
                if let Sample::Events { dropouts, episodes } = x {
                    k += dropouts.iter().map(|x| x.0).sum::<u64>();
                    s += dropouts.iter().map(|x| x.1).sum::<f64>();
                    e = e
                        .zip(episodes.as_ref())
                        .map(|(a, v)| a + v.iter().sum::<u64>());
                }
            }
            // The episodes row's figure is its episodes, with the dropouts they hold.
            let (per, spread) = match e {
                Some(e) if suffix == EPISODES => (
                    e,
                    format!(" ({e} holding {k} dropouts in {:.2} h)", s / 3600.0),
                ),
                _ => (k, format!(" ({k} in {:.2} h)", s / 3600.0)),
            };
            Value {
                value: (s > 0.0).then(|| per as f64 * 3600.0 / s),
                spread,
                unit: "/h".into(),
                at_least: false,
            }
        }
        Sample::Finished { .. } => {
            let (mut ok, mut n) = (0, 0);
            for x in runs {
                if let Sample::Finished { ok: o, n: m } = x {
                    ok += o;
                    n += m;
                }
            }
            Value {
                value: (n > 0).then(|| 100.0 * ok as f64 / n as f64),
                spread: format!(" ({ok}/{n})"),
                unit: "%".into(),
                at_least: false,
            }
        }
    }
}

/// A criterion's figure for a side: passes of trials over its runs, "7/8".
pub fn passed_of(runs: &[&Sample]) -> Option<(usize, usize)> {
    let mut any = false;
    let (mut p, mut n) = (0, 0);
    for s in runs {
        if let Sample::Trials { passed, n: m, .. } = s {
            any = true;
            p += passed;
            n += m;
        }
    }
    any.then_some((p, n))
}
