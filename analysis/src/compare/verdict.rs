//! The verdict: each candidate side's metrics against the baseline's, run against run
//! (`judge`), as a table row and a sentence, and the comparison's one answer.

use super::load::{Metric, Sides};
use super::sample::{EPISODES, Item, Sample, passed_of, value_of};
use crate::judge::{self, Across, Answer, Between, MetricRuns, RunData, Scale, Tested, Untested};
use crate::report::common::{fmt_us, fmt_val};
use crate::stats::fmt_p;
use results::calibration::Calibration;
use results::trials::at_least;

pub struct Verdicts {
    /// The table's rows: metric, baseline, candidate, change (95 % interval), p, answer.
    pub rows: Vec<Vec<String>>,
    /// One sentence per metric and candidate side.
    pub verdicts: Vec<String>,
    /// Each metric's answer.
    pub answers: Vec<Answer>,
    /// The comparison's answer; None when nothing could be judged.
    pub answer: Option<Answer>,
    pub regressions: usize,
    pub improvements: usize,
    pub same: usize,
    pub inconclusive: usize,
    /// Metrics tested (Holm's family size).
    pub tested: usize,
    /// How the between-run spread was found for each scale, each way used once.
    pub between: Vec<(Scale, Between)>,
    /// The threshold, in percent.
    pub threshold: f64,
    /// Each direction's level before Holm (`judge::answer::ONE_SIDED` unless a
    /// sequential look spends less).
    pub one_sided: f64,
}

struct Pair<'a> {
    name: String,
    side: usize,
    base: Vec<&'a Sample>,
    cand: Vec<&'a Sample>,
    suffix: &'static str,
    scale: Scale,
    test: Result<Tested, Untested>,
}

/// Whether the baseline's and side `i`'s runs alternate in time (by run.json's start):
/// neither side one contiguous block. A run without a start time makes it a block.
pub fn interleaved(sides: &Sides, i: usize) -> bool {
    let mut runs: Vec<(String, bool)> = Vec::new();
    for (j, side) in [(0, &sides.sides[0]), (i, &sides.sides[i])] {
        for r in &side.runs {
            let Some(t) = r.run.started.clone() else {
                return false;
            };
            runs.push((t, j == 0));
        }
    }
    runs.sort();
    runs.windows(2).filter(|w| w[0].1 != w[1].1).count() >= 2
}

/// Every metric of every candidate side judged against the baseline.
pub fn judge(
    metrics: &[Metric],
    sides: &Sides,
    calibration: Option<(&Calibration, &str)>,
    threshold: f64,
    one_sided: f64,
) -> Verdicts {
    let labels = sides.labels();
    let mut pairs: Vec<Pair> = Vec::new();
    let mut not_in = Vec::new();
    for m in metrics {
        let base: Vec<&Sample> = m.per_side[0].iter().collect();
        if base.is_empty() {
            continue;
        }
        let name = format!("{} / {} {}", m.key.0, m.key.1, m.key.2);
        for (i, cand) in m.per_side.iter().enumerate().skip(1) {
            let cand: Vec<&Sample> = cand.iter().collect();
            if cand.is_empty() {
                not_in.push(format!("{name}: not in {}.", labels[i]));
                continue;
            }
            let items_a: Vec<Vec<Item>> = base.iter().map(|s| s.items()).collect();
            let items_b: Vec<Vec<Item>> = cand.iter().map(|s| s.items()).collect();
            // Every item any run has, by name: a run whose trials were cut at the bound
            // has no values item, and its criterion is still judged.
            let mut names: Vec<(&'static str, Scale)> = Vec::new();
            for it in items_a.iter().chain(&items_b).flatten() {
                if !names.contains(&(it.suffix, it.scale)) {
                    names.push((it.suffix, it.scale));
                }
            }
            // Dropouts are tested twice, as dropouts (how much audio was lost: one long
            // stall is many) and as episodes (how often it broke: one stall is one);
            // episodes only when every run of both sides counted them (not an older run).
            let all_have =
                |v: &[Vec<Item>]| v.iter().all(|x| x.iter().any(|i| i.suffix == EPISODES));
            if !(all_have(&items_a) && all_have(&items_b)) {
                names.retain(|n| n.0 != EPISODES);
            }
            for (suffix, scale) in names {
                let col = |v: &[Vec<Item>]| -> Vec<Item> {
                    v.iter()
                        .filter_map(|x| {
                            x.iter()
                                .find(|i| i.suffix == suffix && i.scale == scale)
                                .cloned()
                        })
                        .collect()
                };
                let (ia, ib) = (col(&items_a), col(&items_b));
                // A side with no run that has the item (values cut at the bound on every
                // run of one side): the criterion judges it.
                if ia.is_empty() || ib.is_empty() || ia.len() < base.len() || ib.len() < cand.len()
                {
                    continue;
                }
                // A criterion no trial of either side failed is no evidence either way.
                if !ia.iter().chain(&ib).any(|x| x.failures) {
                    continue;
                }
                let data =
                    |v: &[Item]| -> Vec<RunData> { v.iter().map(|x| x.data.clone()).collect() };
                let (da, db) = (data(&ia), data(&ib));
                let log1p = da.iter().chain(&db).any(|d| match d {
                    RunData::Values(v) => v.iter().any(|x| *x <= 0.0),
                    _ => false,
                });
                let mr = MetricRuns {
                    scale: ia[0].scale,
                    a: da,
                    b: db,
                    log1p,
                    lower_is_worse: ia[0].lower_is_worse,
                    hangs: ia[0].hangs,
                };
                let full = format!("{}{}", m.key.2, ia[0].suffix);
                let test = judge::test(
                    &mr,
                    (&m.key.0, &m.key.1, &full),
                    Across::Runs {
                        calibration,
                        interleaved: interleaved(sides, i),
                    },
                    threshold,
                );
                pairs.push(Pair {
                    name: name.clone(),
                    side: i,
                    base: base.clone(),
                    cand: cand.clone(),
                    suffix: ia[0].suffix,
                    scale: ia[0].scale,
                    test,
                });
            }
        }
    }
    let judged: Vec<judge::Judged> = pairs
        .iter()
        .filter_map(|p| p.test.as_ref().ok().map(|t| t.judged))
        .collect();
    let calls = judge::answer::answers(&judged, one_sided);
    let mut next = calls.iter();
    let mut v = Verdicts {
        rows: Vec::new(),
        verdicts: Vec::new(),
        answers: Vec::new(),
        answer: None,
        regressions: 0,
        improvements: 0,
        same: 0,
        inconclusive: 0,
        tested: judged.len(),
        between: Vec::new(),
        threshold,
        one_sided,
    };
    for p in &pairs {
        let call = p.test.as_ref().ok().and_then(|_| next.next().copied());
        let answer = call.map_or(Answer::Inconclusive, |c| c.answer);
        match answer {
            Answer::Worse => v.regressions += 1,
            Answer::Better => v.improvements += 1,
            Answer::Same => v.same += 1,
            Answer::Inconclusive => v.inconclusive += 1,
        }
        if let Ok(t) = &p.test {
            let b = (p.scale, t.between.clone());
            if !v.between.contains(&b) {
                v.between.push(b);
            }
        }
        // Runs that would decide it at Holm's strictest level (its first step's): no
        // fewer than would, so never "3 runs" beside three runs that did not.
        let need_level = one_sided / v.tested.max(1) as f64;
        let (row, sentence) = one(p, call, answer, &labels, threshold, one_sided, need_level);
        v.rows.push(row);
        v.verdicts.push(sentence);
        v.answers.push(answer);
    }
    v.verdicts.extend(not_in);
    v.answer = Answer::overall(&v.answers);
    v
}

impl Verdicts {
    /// The verdict in one sentence, ending with the exit code.
    pub fn summary(&self) -> String {
        let t = self.threshold;
        let family = format!(
            "{} intervals, Holm-adjusted over {} test(s)",
            judge::answer::confidence_label(self.one_sided),
            self.tested
        );
        match self.answer {
            None => "inconclusive: the sides hold no metric both can be judged on (the cycle \
                     files or samples.jsonl are gone): exit code 4."
                .into(),
            Some(Answer::Worse) => format!(
                "worse: {} metric(s) regressed beyond {t}% (the change's interval wholly above \
                 +{t}%; {family}): exit code 1.",
                self.regressions
            ),
            Some(Answer::Inconclusive) => format!(
                "inconclusive: {} metric(s) cannot be told from the run-to-run variation with \
                 these runs ({} the same within ±{t}%, {} better, none worse; {family}). Run \
                 each side more than once (`xrunrig compare A1 A2 A3 -- B1 B2 B3`), or \
                 calibrate this rig on this machine (`xrunrig calibrate`): exit code 4.",
                self.inconclusive, self.same, self.improvements
            ),
            Some(Answer::Better) => format!(
                "better: {} metric(s) improved beyond {t}%, the others the same within ±{t}% \
                 ({family}): exit code 0.",
                self.improvements
            ),
            Some(Answer::Same) => format!(
                "the same: every metric within ±{t}% (its interval wholly inside; {family}): \
                 exit code 0."
            ),
        }
    }
}

fn p_cell(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// What would decide a change of the size seen, from the spread estimated: how many
/// runs a side, interleaved, if the new runs came out as these did. None when the change
/// seen is not beyond the threshold, or beyond 64 times these runs.
fn needed(j: &judge::Judged, runs: usize, threshold: f64, one_sided: f64) -> Option<String> {
    use judge::answer::{log_threshold, quantile};
    let th = log_threshold(threshold);
    let m = match &j.counts {
        Some(judge::counts::Exact::Rates(c)) => c.scale_needed(th.exp(), one_sided)?,
        Some(judge::counts::Exact::Hangs(_)) => return None,
        None => {
            let gap = j.effect.d - th;
            if gap <= 0.0 || !j.effect.se.is_finite() {
                return None;
            }
            let z = quantile(1.0 - one_sided, f64::INFINITY);
            let m = (z * j.effect.se / gap).powi(2).ceil().max(1.0);
            if m > 64.0 {
                return None;
            }
            m as u32
        }
    };
    let n = (m as usize * runs.max(1)).max(2);
    Some(format!(
        "a change of this size would be decided by about {n} runs a side, interleaved \
         (`xrunrig compare A1 … A{n} -- B1 … B{n}`; `xrunrig calibrate` keeps the spread \
         for one run a side)"
    ))
}

/// One pair's table row and sentence.
fn one(
    p: &Pair,
    call: Option<judge::answer::Call>,
    answer: Answer,
    labels: &[String],
    threshold: f64,
    one_sided: f64,
    need_level: f64,
) -> (Vec<String>, String) {
    let i = p.side;
    // A suffix names a criterion ("within bound"), except the episodes of dropouts.
    let criterion = !p.suffix.is_empty() && p.suffix != EPISODES;
    let (b, c) = (value_of(&p.base, p.suffix), value_of(&p.cand, p.suffix));
    let unit = b.unit.clone();
    let show = |v: &super::sample::Value| -> String {
        match (v.value, p.base[0]) {
            (Some(x), Sample::Tails { .. }) => fmt_us(x),
            (Some(x), _) => format!("{} {unit}", at_least(v.at_least, fmt_val(x))),
            (None, _) if v.at_least => "hung".into(),
            (None, _) => "-".into(),
        }
    };
    let bare = |v: &super::sample::Value| {
        v.value.map_or(
            if v.at_least {
                "hung".into()
            } else {
                "-".to_string()
            },
            |x| at_least(v.at_least, fmt_val(x)),
        )
    };
    // A criterion's figure: passes of trials.
    let shares = |s: &[&Sample]| -> Option<String> {
        if !criterion {
            return None;
        }
        match s[0] {
            Sample::Trials { .. } => passed_of(s).map(|(k, n)| format!("{k}/{n}")),
            _ => None,
        }
    };
    let (bcell, ccell) = match (shares(&p.base), shares(&p.cand)) {
        (Some(x), Some(y)) => (x, y),
        _ => (
            format!("{}{}", bare(&b), b.spread),
            format!("{}{}", bare(&c), c.spread),
        ),
    };
    let (ra, rb) = (p.base.len(), p.cand.len());
    // The interval the answer was decided on (Holm-adjusted where the answer is).
    let (lo, hi) = match (&p.test, call) {
        (_, Some(c)) => (c.lo, c.hi),
        (Ok(t), None) => (t.judged.lo, t.judged.hi),
        _ => (f64::NAN, f64::NAN),
    };
    let change_cell = match &p.test {
        Ok(t) => format!(
            "{} [{}, {}]",
            judge::answer::fmt_change(t.judged.effect.d),
            judge::answer::fmt_change(lo),
            judge::answer::fmt_change(hi)
        ),
        Err(_) => "-".into(),
    };
    let metric_name = format!("{}{}", p.name, p.suffix);
    let unit_cell = if criterion {
        String::new()
    } else {
        format!(" {unit}")
    };
    let row = vec![
        format!("{}{unit_cell}", metric_name.replacen(" / ", "/", 1)),
        bcell,
        if labels.len() > 2 {
            format!("{}: {ccell}", labels[i])
        } else {
            ccell
        },
        change_cell,
        call.map_or("-".into(), |c| p_cell(c.p_worse)),
        answer.word().to_string(),
    ];
    let what = match p.base[0] {
        Sample::Trials { .. } if criterion => "trials that kept it".to_string(),
        Sample::Trials { .. } => "median trial".to_string(),
        Sample::Tails { .. } => "(geometric mean over trials)".to_string(),
        Sample::Events { .. } => "per hour".to_string(),
        Sample::Finished { .. } => "share".to_string(),
    };
    let figure = |s: &[&Sample], v: &super::sample::Value| match shares(s) {
        Some(x) => x,
        None => show(v),
    };
    let mut s = format!(
        "{}: {metric_name} {what} {} against {} in {} ({})",
        labels[i],
        figure(&p.cand, &c),
        figure(&p.base, &b),
        labels[0],
        if ra == rb {
            format!("{ra} run(s) a side")
        } else {
            format!("{rb} and {ra} runs")
        }
    );
    s += &match &p.test {
        Ok(t) => {
            let j = &t.judged;
            let adjusted = call.is_some_and(|c| c.adjusted);
            let mut x = format!(
                ": change {}, {} interval {} to {}",
                judge::answer::fmt_change(j.effect.d),
                if adjusted {
                    format!(
                        "{} Holm-adjusted",
                        judge::answer::confidence_label(one_sided)
                    )
                } else {
                    judge::answer::confidence_label(one_sided)
                },
                judge::answer::fmt_change(lo),
                judge::answer::fmt_change(hi),
            );
            if let Some(n) = &t.within_note {
                x += &format!(" (within runs: {n})");
            }
            x += &match answer {
                Answer::Worse => format!(": WORSE beyond the {threshold}% threshold"),
                Answer::Better => format!(": better beyond the {threshold}% threshold"),
                Answer::Same => format!(": the same within ±{threshold}%"),
                Answer::Inconclusive if j.detectable.is_infinite() => {
                    ": inconclusive, too few events in all for any change to be called worse"
                        .to_string()
                }
                Answer::Inconclusive => format!(
                    ": inconclusive, only a change beyond {} could have been called worse",
                    judge::answer::fmt_change(j.detectable)
                ),
            };
            if let Some(c) = call {
                x += &format!(" (Holm-adjusted {} of worse)", fmt_p(c.p_worse));
            }
            if answer == Answer::Inconclusive
                && let Some(need) = needed(j, ra.max(rb), threshold, need_level)
            {
                x += &format!("; {need}");
            }
            x
        }
        Err(Untested::NoEvents) => ": no dropouts on either side, nothing to judge".into(),
        Err(Untested::CannotDecide(why)) => format!(": inconclusive, {why}"),
        Err(Untested::NoData) => ": inconclusive, no per-trial values to judge".into(),
    };
    (row, format!("{s}."))
}
