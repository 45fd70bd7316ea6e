//! The verdict: each directory's metric against the baseline's, trial against trial,
//! as a table row and a sentence. A metric is a regression (or an improvement) when
//! its change is beyond the threshold and its p-value, adjusted by Holm's method for
//! every metric tested, is below `ALPHA`. A metric with too few trials a side is not
//! tested and says so; with none tested there is no verdict.

use super::ALPHA;
use super::load::Metric;
use super::sample::{Key, MIN_TRIALS, SUGGESTED_TRIALS, Sample, Tested, Untested, test, value_of};
use crate::report::common::{bound_words, fmt_us, fmt_val};
use crate::stats::{fmt_p, holm};
use results::trials::at_least;

pub struct Verdicts {
    /// The table's rows: metric, baseline, candidate, %change, adjusted p, flag.
    pub rows: Vec<Vec<String>>,
    /// One sentence per metric and directory.
    pub verdicts: Vec<String>,
    pub regressions: usize,
    pub improvements: usize,
    /// Metrics tested (Holm's family size).
    pub tested: usize,
    /// Metrics not tested for too few trials: the fewest trials seen on a side.
    pub too_few: Option<usize>,
    /// Metrics not tested, for any reason.
    pub untested: usize,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Flag {
    Regression,
    Improvement,
    Same,
    Untested,
}

/// One metric of one candidate directory against the baseline, before Holm.
struct Pair<'a> {
    key: &'a Key,
    i: usize,
    base: &'a Sample,
    cand: &'a Sample,
    test: Result<Tested, Untested>,
}

pub fn judge(metrics: &[Metric], labels: &[String], threshold: f64) -> Verdicts {
    let mut v = Verdicts {
        rows: Vec::new(),
        verdicts: Vec::new(),
        regressions: 0,
        improvements: 0,
        tested: 0,
        too_few: None,
        untested: 0,
    };
    let mut pairs: Vec<Pair> = Vec::new();
    for m in metrics {
        let Some(base) = &m.per_dir[0] else { continue };
        let name = format!("{} / {} {}", m.key.0, m.key.1, m.key.2);
        for (i, cand) in m.per_dir.iter().enumerate().skip(1) {
            let Some(cand) = cand else {
                v.verdicts.push(format!("{name}: not in {}.", labels[i]));
                continue;
            };
            pairs.push(Pair {
                key: &m.key,
                i,
                base,
                cand,
                test: test(base, cand),
            });
        }
    }
    // Holm over every metric tested, in every candidate directory.
    let raw: Vec<f64> = pairs
        .iter()
        .filter_map(|p| p.test.as_ref().ok().map(|t| t.p))
        .collect();
    let adjusted = holm(&raw);
    v.tested = raw.len();
    let mut next = adjusted.iter();
    for p in &pairs {
        let adj = p.test.as_ref().ok().and_then(|_| next.next().copied());
        if let Err(u) = &p.test {
            v.untested += 1;
            if let Untested::TooFewTrials(a, b) = u {
                let n = (*a).min(*b);
                v.too_few = Some(v.too_few.map_or(n, |m| m.min(n)));
            }
        }
        let (row, sentence, flag) = one(p, adj, labels, threshold);
        match flag {
            Flag::Regression => v.regressions += 1,
            Flag::Improvement => v.improvements += 1,
            Flag::Same | Flag::Untested => {}
        }
        v.rows.push(row);
        v.verdicts.push(sentence);
    }
    v
}

impl Verdicts {
    /// The verdict in one sentence.
    pub fn summary(&self, threshold: f64) -> String {
        let (regressions, improvements) = (self.regressions, self.improvements);
        let untested = if self.untested > 0 && self.tested > 0 {
            format!(
                " {} metric(s) not tested ({}).",
                self.untested,
                self.too_few
                    .map_or("no per-trial values".into(), |n| format!(
                        "{n} trial(s) on a side; {MIN_TRIALS} needed"
                    ))
            )
        } else {
            String::new()
        };
        if self.tested == 0 {
            return match self.too_few {
                Some(n) => format!(
                    "no verdict: {} trial(s) per side, and a comparison needs at least {MIN_TRIALS} \
                     per side to measure how much trials vary; run each side with \
                     `xrunrig run ... --trials {SUGGESTED_TRIALS}` (exit code 0: nothing was \
                     called a regression).",
                    if n == 1 {
                        "one".to_string()
                    } else {
                        n.to_string()
                    }
                ),
                None => "no verdict: the directories hold no per-trial values to compare \
                         (the cycle files or samples.jsonl are gone)."
                    .into(),
            };
        }
        let family = format!("Holm-adjusted p < {ALPHA} over {} test(s)", self.tested);
        if regressions > 0 {
            format!(
                "{regressions} metric(s) regressed beyond {threshold}% ({family}): exit code 1.{untested}"
            )
        } else if improvements > 0 {
            format!(
                "no regression beyond {threshold}%; {improvements} metric(s) improved ({family}).{untested}"
            )
        } else {
            format!("no significant change (threshold {threshold}%, {family}).{untested}")
        }
    }
}

/// The change in percent of the baseline; "new" (infinite) from a zero baseline.
fn change(bv: Option<f64>, cv: Option<f64>) -> Option<f64> {
    match (bv, cv) {
        (Some(b), Some(c)) if b.abs() > 0.0 => Some(100.0 * (c - b) / b.abs()),
        (Some(b), Some(c)) if b == 0.0 && c > 0.0 => Some(f64::INFINITY),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    }
}

fn p_cell(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// One pair's table row, sentence and flag; `adj` is its Holm-adjusted p when tested.
fn one(
    pair: &Pair,
    adj: Option<f64>,
    labels: &[String],
    threshold: f64,
) -> (Vec<String>, String, Flag) {
    let Pair {
        key,
        i,
        base,
        cand,
        test,
    } = pair;
    let i = *i;
    let (b, c) = (value_of(base), value_of(cand));
    let (bv, bs, unit, cv, cs) = (b.value, b.spread, b.unit, c.value, c.spread);
    // A median on a censored trial is only a lower bound: the change is then known
    // from one side (the candidate's a lower bound: at least this; the baseline's:
    // at most this), and from neither when both are.
    let change = change(bv, cv).filter(|_| !(b.at_least && c.at_least));
    let sig = adj.is_some_and(|p| p < ALPHA);
    let flag = match (change, test) {
        (_, Err(_)) => Flag::Untested,
        (Some(ch), _) if sig && ch > threshold && !b.at_least => Flag::Regression,
        (Some(ch), _) if sig && ch < -threshold && !c.at_least => Flag::Improvement,
        _ => Flag::Same,
    };
    let fmt = |v: Option<f64>, least: bool| match (v, base) {
        (Some(v), Sample::Tails { .. }) => fmt_us(v),
        (Some(v), _) => format!("{} {unit}", at_least(least, fmt_val(v))),
        (None, _) => "-".into(),
    };
    // Table cells: the unit is in the metric column.
    let bare =
        |v: Option<f64>, least: bool| v.map_or("-".to_string(), |v| at_least(least, fmt_val(v)));
    let bound_side = if c.at_least {
        "≥ "
    } else if b.at_least {
        "≤ "
    } else {
        ""
    };
    let ch_s = match change {
        Some(c) if c.is_infinite() => "new".to_string(),
        Some(c) => format!("{bound_side}{c:+.1}%"),
        None => "-".into(),
    };
    let row = vec![
        format!("{}/{} {} {unit}", key.0, key.1, key.2),
        format!("{}{bs}", bare(bv, b.at_least)),
        if labels.len() > 2 {
            format!("{}: {}{cs}", labels[i], bare(cv, c.at_least))
        } else {
            format!("{}{cs}", bare(cv, c.at_least))
        },
        ch_s.clone(),
        adj.map_or("-".into(), p_cell),
        match flag {
            Flag::Regression => "WORSE",
            Flag::Improvement => "better",
            Flag::Untested => "untested",
            Flag::Same => "",
        }
        .to_string(),
    ];
    let what = match base {
        Sample::Trials { .. } => format!("{} median trial", key.2),
        Sample::Tails { .. } => format!("{} (geometric mean over trials)", key.2),
        Sample::Events(_) => format!("{} per hour", key.2),
    };
    let mut v = format!(
        "{}: {what} {} against {} in {}",
        labels[i],
        fmt(cv, c.at_least),
        fmt(bv, b.at_least),
        labels[0]
    );
    if let (
        Sample::Trials {
            within: Some((wa, na)),
            bound: Some(b),
            ..
        },
        Sample::Trials {
            within: Some((wb, nb)),
            ..
        },
    ) = (cand, base)
    {
        v += &format!(", {wa}/{na} against {wb}/{nb} {}", bound_words(b));
    }
    v += &match test {
        Ok(t) => format!(
            " ({ch_s}; {}: {}, Holm-adjusted {}): {}",
            t.how,
            fmt_p(t.p),
            fmt_p(adj.unwrap_or(1.0)),
            match flag {
                Flag::Regression => format!("REGRESSION beyond the {threshold}% threshold"),
                Flag::Improvement => "improvement".into(),
                _ if b.at_least && c.at_least => {
                    "both medians censored (ended early), the change is not known".into()
                }
                _ => "no significant change".into(),
            }
        ),
        Err(Untested::TooFewTrials(a, b)) => {
            format!(" ({ch_s}): not tested, {a} and {b} trial(s) (at least {MIN_TRIALS} a side)")
        }
        Err(Untested::NoPerTrialValues) => {
            format!(" ({ch_s}): not tested, no per-trial values")
        }
    };
    (row, format!("{} / {}: {v}.", key.0, key.1), flag)
}
