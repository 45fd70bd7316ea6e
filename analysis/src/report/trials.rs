//! The report of a trial rig (pi-inversion and friends): the table, the verdict per
//! metric with a Mann–Whitney test between settings (or variants), trace evidence and
//! the plots.

use super::common::{self, bound_words, fmt_val};
use super::part::Part;
use crate::doc::Block;
use crate::load::Results;
use crate::load::trials::{TRow, TrialsData};
use crate::out::Ctx;
use crate::plot::cdf::{Figure, Panel, PanelKind, Series, ecdf_with_missing, value_steps};
use crate::plot::strip::{Column, Strip};
use crate::stats::{fmt_p, sorted};
use results::file_part as safe;
use results::trials::{TrialStatus, at_least};
use results::units::bound_limit;

pub fn table(t: &TrialsData) -> Block {
    let metrics = t.metrics();
    if let [(_, unit, bound)] = metrics.as_slice() {
        // One metric: its name, unit and bound go in the header, so rows fit 80 columns.
        let within_h = bound.as_ref().map_or("-".to_string(), |b| bound_words(b));
        let rows = t
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.setting.clone(),
                    r.variant.clone(),
                    format!("{}{}", r.n, r.not_measured("none")),
                    r.within_bound
                        .map_or("-".into(), |w| format!("{w}/{}", r.n)),
                    median_text(r),
                    min_max_text(r),
                ]
            })
            .collect();
        return Block::Table {
            head: vec![
                "setting".into(),
                "variant".into(),
                "n".into(),
                within_h,
                format!("median {unit}"),
                format!("min / max {unit}"),
            ],
            rows,
            right: vec![false, false, true, true, true, true],
        };
    }
    let head = [
        "setting",
        "variant",
        "metric",
        "n",
        "within bound",
        "median",
        "min / max",
    ];
    let mut rows = Vec::new();
    for r in &t.rows {
        let within = match (&r.bound, r.within_bound) {
            (Some(b), Some(w)) => format!("{w}/{} ({b})", r.n),
            _ => "-".into(),
        };
        let n = format!("{}{}", r.n, r.not_measured("no value"));
        let unit = |t: String| {
            if t == "-" {
                t
            } else {
                format!("{t} {}", r.unit)
            }
        };
        rows.push(vec![
            r.setting.clone(),
            r.variant.clone(),
            r.metric.clone(),
            n,
            within,
            unit(median_text(r)),
            unit(min_max_text(r)),
        ]);
    }
    Block::Table {
        head: head.iter().map(|s| s.to_string()).collect(),
        rows,
        right: vec![false, false, false, true, false, true, false],
    }
}

/// The median, "≥ 100.0" where it falls on a censored value (only a lower bound).
fn median_text(r: &TRow) -> String {
    r.median
        .map_or("-".into(), |m| at_least(r.median_at_least, fmt_val(m)))
}

fn min_max_text(r: &TRow) -> String {
    match (r.min, r.max) {
        (Some(a), Some(b)) => format!(
            "{} / {}",
            at_least(r.min_at_least, fmt_val(a)),
            at_least(r.max_at_least, fmt_val(b))
        ),
        _ => "-".into(),
    }
}

/// The row's share within the bound, counting trials without a value as outside.
fn within(r: &TRow) -> Option<(usize, usize)> {
    r.within_bound.map(|w| (w, r.n.max(w)))
}

/// "NO_RT_PUSH_IPI: wait median ≥ 100 ms against 0.80 ms under RT_PUSH_IPI, 0/8 against
/// 8/8 under 100 ms: worse (trials within the bound: Fisher's exact test, one-sided p =
/// 7.8e-5)." Judged as `xrunrig compare` judges, trial against trial inside the one run
/// (`judge`, `Across::OneRun`): the trials' criterion (within the bound, or finished: a
/// hung or failed trial fails it) by Fisher's exact test, the finished trials' values on
/// their logarithms against a 10 % threshold (not when trials were cut at the bound:
/// their values are unknown above it), Holm-adjusted over the two.
pub fn contrast(
    t: &TrialsData,
    other: &TRow,
    base: &TRow,
    other_name: &str,
    base_name: &str,
) -> (String, Option<crate::judge::Answer>) {
    use crate::judge::{self, Across, Answer, MetricRuns, Untested};
    let u = &other.unit;
    let mut s = format!("{other_name}: {} median ", other.metric);
    match (other.median, base.median) {
        (Some(_), Some(_)) => {
            s += &format!(
                "{} {u} against {} {u} {base_name}",
                median_text(other),
                median_text(base)
            )
        }
        _ => s += &format!("unknown against {base_name}"),
    }
    let samples = crate::sample::trial_samples(t);
    let find = |r: &TRow| {
        samples
            .iter()
            .find(|(k, _)| k.0 == r.setting && k.1 == r.variant && k.2 == r.metric)
            .map(|x| &x.1)
    };
    let (Some(so), Some(sb)) = (find(other), find(base)) else {
        return (s + "; no values to judge.", None);
    };
    if let (
        crate::sample::Sample::Trials {
            passed: pa, n: na, ..
        },
        crate::sample::Sample::Trials {
            passed: pb, n: nb, ..
        },
        Some(b),
    ) = (so, sb, &other.bound)
    {
        s += &format!(", {pa}/{na} against {pb}/{nb} {}", bound_words(b));
    }
    let (io, ib) = (so.items(), sb.items());
    let mut tested = Vec::new();
    for x in &io {
        // The same item of the other row (a row cut at the bound has no values item).
        let Some(y) = ib
            .iter()
            .find(|y| y.suffix == x.suffix && y.scale == x.scale)
        else {
            continue;
        };
        if !(x.failures || y.failures) {
            continue;
        }
        let log1p = [&x.data, &y.data].iter().any(|d| match d {
            judge::RunData::Values(v) => v.iter().any(|v| *v <= 0.0),
            _ => false,
        });
        let m = MetricRuns {
            scale: x.scale,
            a: vec![y.data.clone()],
            b: vec![x.data.clone()],
            log1p,
            lower_is_worse: x.lower_is_worse,
            hangs: x.hangs,
        };
        let what = if x.suffix.is_empty() {
            "the values".to_string()
        } else if other.bound.is_some() && !x.hangs {
            "trials within the bound".to_string()
        } else {
            "trials that finished".to_string()
        };
        let r = judge::test(
            &m,
            (&other.setting, &other.variant, &other.metric),
            Across::OneRun,
            crate::judge::answer::THRESHOLD,
        );
        tested.push((what, x.scale, r));
    }
    let judged: Vec<judge::Judged> = tested
        .iter()
        .filter_map(|x| x.2.as_ref().ok().map(|t| t.judged))
        .collect();
    let calls = judge::answer::answers(&judged, judge::answer::ONE_SIDED);
    let mut next = calls.iter();
    let mut parts = Vec::new();
    let mut each = Vec::new();
    for (what, scale, r) in &tested {
        match r {
            Ok(tst) => {
                let call = next.next().copied();
                let (a, p_worse, p_better) = call.map_or((Answer::Inconclusive, 1.0, 1.0), |c| {
                    (c.answer, c.p_worse, c.p_better)
                });
                let (lo, hi) = call.map_or((tst.judged.lo, tst.judged.hi), |c| (c.lo, c.hi));
                let adjusted = call.is_some_and(|c| c.adjusted);
                each.push(a);
                let j = &tst.judged;
                let how = if *scale == judge::Scale::LogOdds {
                    format!(
                        "Fisher's exact test, one-sided {}",
                        fmt_p(if a == Answer::Better {
                            p_better
                        } else {
                            p_worse
                        })
                    )
                } else {
                    format!(
                        "{}, 95 % {}interval {} to {}",
                        judge::answer::fmt_change(j.effect.d),
                        if adjusted { "Holm-adjusted " } else { "" },
                        judge::answer::fmt_change(lo),
                        judge::answer::fmt_change(hi)
                    )
                };
                let word = if a == Answer::Same {
                    "the same"
                } else {
                    a.word()
                };
                parts.push(format!("{what} {word} ({how})"));
            }
            Err(Untested::CannotDecide(why)) => {
                each.push(Answer::Inconclusive);
                parts.push(format!("{what} inconclusive ({why})"));
            }
            Err(Untested::NoData | Untested::NoEvents) => {}
        }
    }
    if parts.is_empty() {
        return (s + "; no values to judge.", None);
    }
    let overall = Answer::overall(&each);
    s += &format!(
        ": {} — {}.",
        overall.map_or("inconclusive", |a| a.word()),
        parts.join("; ")
    );
    (s, overall)
}

fn describe(r: &TRow, name: &str) -> String {
    let mut s = format!("{name}: {}", r.metric);
    if let (Some((w, n)), Some(b)) = (within(r), &r.bound) {
        s += &format!(" {} in {w}/{n} trials", bound_words(b));
    }
    if r.median.is_some() {
        s += &format!(", median {} {}", median_text(r), r.unit);
    }
    if let (Some(a), Some(b)) = (r.min, r.max) {
        s += &format!(
            " ({} to {})",
            at_least(r.min_at_least, fmt_val(a)),
            at_least(r.max_at_least, fmt_val(b))
        );
    }
    if r.missing > 0 {
        s += &format!("; {} trials gave no value", r.missing);
    }
    if !r.censored.is_empty() {
        s += &format!(
            "; {} trials ended early, their values censored (at least {} {})",
            r.censored.len(),
            fmt_val(r.censored.iter().copied().fold(f64::INFINITY, f64::min)),
            r.unit
        );
    }
    s + "."
}

/// Verdict bullets and the one-paragraph conclusion.
pub fn verdict(t: &TrialsData) -> (Vec<String>, String) {
    let keys = t.keys();
    let ax = Axes::of(&keys);
    let mut bullets = Vec::new();
    // Each group's conclusion fragments, one per metric, in order of first appearance.
    let mut groups_out: Vec<(String, Vec<String>)> = Vec::new();
    for (metric, _unit, bound) in t.metrics() {
        let rows: Vec<&TRow> = t.rows.iter().filter(|r| r.metric == metric).collect();
        bullets.extend(ax.contrasts(t, &rows));
        for (g, c) in ax.group_sentences(t, &metric, &bound, &rows) {
            match groups_out
                .iter_mut()
                .find(|x: &&mut (String, Vec<String>)| x.0 == g)
            {
                Some(x) => x.1.push(c),
                None => groups_out.push((g, vec![c])),
            }
        }
    }
    let conclusion = ax.conclusion(groups_out);
    bullets.extend(ax.odd_endings(t, &keys));
    (bullets, format!("Conclusion: {}", conclusion.join(" ")))
}

/// A trial rig's settings and variants, each in order of first appearance: what the
/// verdict contrasts (settings when there are several, else variants).
struct Axes {
    settings: Vec<String>,
    variants: Vec<String>,
}

impl Axes {
    fn of(keys: &[(String, String)]) -> Axes {
        let mut settings: Vec<String> = Vec::new();
        let mut variants: Vec<String> = Vec::new();
        for (s, v) in keys {
            if !settings.contains(s) {
                settings.push(s.clone());
            }
            if !variants.contains(v) {
                variants.push(v.clone());
            }
        }
        Axes { settings, variants }
    }

    /// A (setting, variant) as the prose names it: only the parts that vary.
    fn name(&self, s: &str, v: &str) -> String {
        match (self.settings.len() > 1, self.variants.len() > 1) {
            (true, true) => format!("{s} / {v}"),
            (true, false) => s.to_string(),
            _ => v.to_string(),
        }
    }

    /// One metric's bullets: each setting against the first (per variant), else each
    /// variant against the first, else the lone row described.
    fn contrasts(&self, t: &TrialsData, rows: &[&TRow]) -> Vec<String> {
        let (settings, variants) = (&self.settings, &self.variants);
        let mut bullets = Vec::new();
        if settings.len() > 1 {
            for v in variants {
                let Some(base) = rows
                    .iter()
                    .find(|r| &r.variant == v && r.setting == settings[0])
                else {
                    continue;
                };
                for s in settings.iter().skip(1) {
                    if let Some(o) = rows.iter().find(|r| &r.variant == v && &r.setting == s) {
                        let bn = if variants.len() > 1 {
                            format!("under {} ({v})", settings[0])
                        } else {
                            format!("under {}", settings[0])
                        };
                        bullets.push(contrast(t, o, base, &self.name(s, v), &bn).0);
                    }
                }
            }
        } else if variants.len() > 1 {
            let s = &settings[0];
            if let Some(base) = rows
                .iter()
                .find(|r| &r.setting == s && r.variant == variants[0])
            {
                for v in variants.iter().skip(1) {
                    if let Some(o) = rows.iter().find(|r| &r.setting == s && &r.variant == v) {
                        bullets.push(contrast(t, o, base, v, &format!("with {}", variants[0])).0);
                    }
                }
            }
        } else if let Some(r) = rows.first() {
            bullets.push(describe(r, &self.name(&r.setting, &r.variant)));
        }
        bullets
    }

    /// One metric's conclusion, LatencyMon style: what happened, under which setting,
    /// how sure: one sentence per group that was contrasted, with the group's name.
    fn group_sentences(
        &self,
        t: &TrialsData,
        metric: &str,
        bound: &Option<String>,
        rows: &[&TRow],
    ) -> Vec<(String, String)> {
        let groups: Vec<(String, Vec<&TRow>)> = if self.settings.len() > 1 {
            self.variants
                .iter()
                .map(|v| {
                    (
                        v.clone(),
                        rows.iter().copied().filter(|r| &r.variant == v).collect(),
                    )
                })
                .collect()
        } else {
            vec![(self.settings[0].clone(), rows.to_vec())]
        };
        groups
            .into_iter()
            .map(|(g, grows)| (g, self.group_sentence(t, metric, bound, &grows)))
            .collect()
    }

    /// One group's sentence: each row's share within the bound (or median), then how
    /// sure the strongest contrast inside the group is, if the sizes allow any.
    fn group_sentence(
        &self,
        t: &TrialsData,
        metric: &str,
        bound: &Option<String>,
        grows: &[&TRow],
    ) -> String {
        let label = |r: &TRow| {
            if self.settings.len() > 1 {
                r.setting.clone()
            } else {
                r.variant.clone()
            }
        };
        let parts: Vec<String> = grows
            .iter()
            .map(|r| match (within(r), r.median) {
                (Some((w, n)), _) if bound.is_some() => format!("{w}/{n} with {}", label(r)),
                (_, Some(_)) => format!("median {} {} with {}", median_text(r), r.unit, label(r)),
                _ => format!("no value with {}", label(r)),
            })
            .collect();
        let what = match bound {
            Some(b) => format!("{metric} {} in", bound_words(b)),
            None => metric.to_string(),
        };
        let mut c = format!("{what} {}", parts.join(", "));
        // Each contrast's answer, named: the ones worse or better said, else the same,
        // else that the trials cannot tell.
        let mut answers = Vec::new();
        if let Some(base) = grows.first() {
            for o in grows.iter().skip(1) {
                if let (_, Some(a)) = contrast(t, o, base, "", "") {
                    answers.push((label(o), a));
                }
            }
        }
        let same = grows.windows(2).all(|w| within(w[0]) == within(w[1])) && bound.is_some();
        use crate::judge::Answer;
        let told: Vec<String> = answers
            .iter()
            .filter(|(_, a)| matches!(a, Answer::Worse | Answer::Better))
            .map(|(n, a)| format!("{n} {}", a.word()))
            .collect();
        match () {
            _ if grows.len() < 2 => {}
            _ if !told.is_empty() => c += &format!(" ({}, trial against trial)", told.join(", ")),
            _ if same => c += " (the same everywhere)",
            _ if answers.iter().any(|a| a.1 == Answer::Same) => {
                c += " (the same within 10 %, trial against trial)"
            }
            _ => c += " (too few trials to tell)",
        }
        c
    }

    /// The conclusion's sentences: one per group, named when anything varies.
    fn conclusion(&self, groups_out: Vec<(String, Vec<String>)>) -> Vec<String> {
        let kind = if self.settings.len() > 1 {
            "variant"
        } else {
            "setting"
        };
        groups_out
            .into_iter()
            .map(|(g, frags)| {
                if self.variants.len() > 1 || self.settings.len() > 1 {
                    format!("{kind} {g}: {}.", frags.join("; "))
                } else {
                    format!("{}.", frags.join("; "))
                }
            })
            .collect()
    }

    /// A bullet per (setting, variant) with trials that did not finish normally, and
    /// one with trials that ended early at a bound.
    fn odd_endings(&self, t: &TrialsData, keys: &[(String, String)]) -> Vec<String> {
        let mut bullets = Vec::new();
        for (s, v) in keys {
            let trials = t
                .trials
                .iter()
                .filter(|x| &x.setting == s && &x.variant == v);
            let early: Vec<&results::trials::TrialRecord> =
                trials.clone().filter(|x| !x.censored.is_empty()).collect();
            if !early.is_empty() {
                // Per metric, in the table's order: the lowest point any was censored at.
                let what: Vec<String> = t
                    .metrics()
                    .into_iter()
                    .filter_map(|(m, unit, _)| {
                        let low = early
                            .iter()
                            .filter_map(|x| x.censored.get(&m))
                            .copied()
                            .reduce(f64::min)?;
                        Some(
                            format!("{m} ≥ {} {unit}", fmt_val(low))
                                .trim_end()
                                .to_string(),
                        )
                    })
                    .collect();
                bullets.push(format!(
                    "{}: {} of {} trials ended early once a metric had passed its bound \
                     (end_early): {} censored there, counted as outside the bound, never as \
                     a measured value.",
                    self.name(s, v),
                    early.len(),
                    trials.count(),
                    what.join(", ")
                ));
            }
            let st = t.statuses(s, v);
            let odd: Vec<String> = st
                .iter()
                .filter(|(k, _)| k.as_str() != TrialStatus::Ok.as_str())
                .map(|(k, c)| format!("{c} {k}"))
                .collect();
            if !odd.is_empty() {
                bullets.push(format!(
                    "{}: {} of {} trials did not end normally ({}); they count as outside the bound.",
                    self.name(s, v),
                    st.iter()
                        .filter(|(k, _)| k.as_str() != TrialStatus::Ok.as_str())
                        .map(|(_, c)| c)
                        .sum::<usize>(),
                    st.values().sum::<usize>(),
                    odd.join(", ")
                ));
            }
        }
        bullets
    }
}

/// `--until-decided`: the rule in words and each variant's comparison.
pub fn until_decided(d: &results::trials::Decided) -> Vec<Block> {
    use results::trials::Decision;
    let rows = d
        .pairs
        .iter()
        .map(|p| {
            let what = match (p.decision, &p.worse) {
                (Decision::Decided, Some(w)) => format!("decided: {w} worse"),
                (Decision::UndecidedAtMaximum, _) => "undecided at the maximum".into(),
                (Decision::Undecidable, _) => "undecidable: stopped early".into(),
                (Decision::Unfinished, _) => "unfinished".into(),
                (x, _) => x.as_str().into(),
            };
            vec![
                p.variant.clone(),
                format!("{} {}/{}", p.first, p.first_within, p.trials),
                format!("{} {}/{}", p.second, p.second_within, p.trials),
                p.p.map_or("-".into(), |x| format!("{x:.3e}")),
                what,
            ]
        })
        .collect();
    vec![
        Block::Para(format!(
            "Trials stopped per variant by a sequential test: {}.",
            d.rule
        )),
        Block::Table {
            head: vec![
                "variant".into(),
                "setting A within bound".into(),
                "setting B within bound".into(),
                "p".into(),
                "decision".into(),
            ],
            rows,
            right: vec![false, false, false, true, false],
        },
    ]
}

pub fn evidence(t: &TrialsData) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: Vec<(String, String, String)> = Vec::new();
    let mut extra = 0usize;
    for e in &t.evidence {
        // Same line in several trials of one case: show it once.
        let key = (e.setting.clone(), e.variant.clone(), e.line.clone());
        if seen.contains(&key) {
            continue;
        }
        if out.len() >= 24 {
            extra += 1;
            continue;
        }
        seen.push(key);
        out.push(format!(
            "[{} / {} #{}] {}",
            e.setting, e.variant, e.trial, e.line
        ));
    }
    if extra > 0 {
        out.push(format!("({extra} more lines in samples.jsonl)"));
    }
    out
}

pub fn plots(t: &TrialsData, ctx: &mut Ctx) -> Result<Vec<Block>, String> {
    let keys = t.keys();
    let mut settings: Vec<String> = Vec::new();
    for (s, _) in &keys {
        if !settings.contains(s) {
            settings.push(s.clone());
        }
    }
    let mut variants: Vec<String> = Vec::new();
    for (_, v) in &keys {
        if !variants.contains(v) {
            variants.push(v.clone());
        }
    }
    let vcolor = |v: &str| variants.iter().position(|x| x == v).unwrap_or(0);
    let mut blocks = Vec::new();
    let r = ctx.red.clone();
    for (metric, unit, bound) in t.metrics() {
        let rows: Vec<&TRow> = t.rows.iter().filter(|x| x.metric == metric).collect();
        let bound_v = bound.as_deref().and_then(|b| bound_limit(b, &unit));
        // Every trial as a point.
        let strip = Strip {
            title: r.apply(&format!("{}: {metric} in every trial", t_rig(ctx))),
            y_label: format!("{metric} ({unit})"),
            columns: rows
                .iter()
                .map(|x| Column {
                    label: vec![r.apply(&x.setting), r.apply(&x.variant)],
                    color: vcolor(&x.variant),
                    values: x.values.clone(),
                    missing: x.missing,
                    censored: x.censored.clone(),
                })
                .collect(),
            bound: bound_v.map(|b| (b, format!("bound {}", bound.clone().unwrap_or_default()))),
            legend: variants
                .iter()
                .enumerate()
                .map(|(i, v)| (r.apply(&format!("variant {v}")), i))
                .collect(),
        };
        let f = format!("plots/trials_{}", safe(&metric));
        ctx.save(&strip, &f)?;
        blocks.push(Block::Image {
            file: f,
            caption: format!(
                "{metric}: one point per trial, black bar = median, dashed = bound{}",
                if rows.iter().any(|x| !x.censored.is_empty()) {
                    ", triangle = ended early, censored (at least this)"
                } else {
                    ""
                }
            ),
        });
        // A/B: every setting and variant's distribution on one axis.
        let series: Vec<Series> = rows
            .iter()
            .enumerate()
            .map(|(i, x)| Series {
                // A censored trial has no point to draw (only "at least"): the curve
                // stops short of 1 by them, and a series with nothing else is empty,
                // so the legend says where they are.
                label: r.apply(&format!(
                    "{} / {}{}",
                    x.setting,
                    x.variant,
                    if x.censored.is_empty() {
                        String::new()
                    } else {
                        format!(" ({} of {} ended early, not drawn)", x.censored.len(), x.n)
                    }
                )),
                color: i,
                pts: ecdf_with_missing(&x.values, x.missing + x.censored.len()),
                dots: true,
            })
            .collect();
        let ab = Figure {
            title: r.apply(&format!("{}: {metric}, settings side by side", t_rig(ctx))),
            panels: vec![Panel {
                title: "cumulative share of trials".into(),
                x_label: format!("{metric} ({unit}, log scale)"),
                kind: PanelKind::Cdf,
                series,
                vlines: bound_v
                    .map(|b| (b, format!("bound {}", bound.clone().unwrap_or_default())))
                    .into_iter()
                    .collect(),
            }],
            panel_size: (1000, 560),
        };
        let f = format!("plots/ab_{}", safe(&metric));
        ctx.save(&ab, &f)?;
        blocks.push(Block::Image {
            file: f,
            caption: format!("A/B: {metric} per setting and variant as a cumulative distribution"),
        });
    }
    // Per setting: CDF and log-count histogram of each metric, one line per variant.
    for s in &settings {
        let mut panels = Vec::new();
        for (metric, unit, bound) in t.metrics().into_iter().take(3) {
            let rows: Vec<&TRow> = t
                .rows
                .iter()
                .filter(|x| x.metric == metric && &x.setting == s)
                .collect();
            let all: Vec<f64> = rows.iter().flat_map(|x| x.values.iter().copied()).collect();
            let sv = sorted(&all);
            let log_x = sv.first().is_some_and(|a| *a > 0.0)
                && sv.last().is_some_and(|b| *b / sv[0] > 30.0);
            let bound_v = bound.as_deref().and_then(|b| bound_limit(b, &unit));
            let vl: Vec<(f64, String)> = bound_v
                .map(|b| (b, format!("bound {}", bound.clone().unwrap_or_default())))
                .into_iter()
                .collect();
            panels.push(Panel {
                title: format!("{metric}: histogram"),
                x_label: format!(
                    "{metric} ({unit}{})",
                    if log_x { ", log scale" } else { "" }
                ),
                kind: PanelKind::Hist { log_x },
                series: rows
                    .iter()
                    .map(|x| Series {
                        label: r.apply(&x.variant),
                        color: vcolor(&x.variant),
                        pts: value_steps(&x.values, 40, log_x),
                        dots: false,
                    })
                    .collect(),
                vlines: vl.clone(),
            });
            panels.push(Panel {
                title: format!("{metric}: cumulative"),
                x_label: format!("{metric} ({unit}, log scale)"),
                kind: PanelKind::Cdf,
                series: rows
                    .iter()
                    .map(|x| Series {
                        label: r.apply(&x.variant),
                        color: vcolor(&x.variant),
                        pts: ecdf_with_missing(&x.values, x.missing + x.censored.len()),
                        dots: true,
                    })
                    .collect(),
                vlines: vl,
            });
        }
        let fig = Figure {
            title: r.apply(&format!("{}: setting {s}", t_rig(ctx))),
            panels,
            panel_size: (700, 520),
        };
        let f = format!("plots/latency_{}", safe(s));
        ctx.save(&fig, &f)?;
        blocks.push(Block::Image {
            file: f,
            caption: r.apply(&format!(
                "setting {s}: histogram (log count) and cumulative distribution"
            )),
        });
    }
    Ok(blocks)
}

fn t_rig(ctx: &Ctx) -> String {
    ctx.rig.clone()
}

/// A trial rig's part, writing its plots.
pub fn part(res: &Results, t: &TrialsData, ctx: &mut Ctx) -> Result<Part, String> {
    let (bullets, conclusion) = verdict(t);
    let trials_run = t.trials.len();
    let what_ran = common::what_ran(
        &res.run,
        &res.rig,
        res.kind,
        vec![(
            "trials".to_string(),
            format!(
                "{} run{}",
                trials_run,
                res.run.trials.map_or(String::new(), |n| {
                    if t.until_decided.is_some() {
                        format!(", at most {n} per setting and variant (--until-decided)")
                    } else {
                        format!(", {n} per setting and variant")
                    }
                })
            ),
        )],
    );
    let table = vec![table(t)];
    let ev = evidence(t);
    let plots = plots(t, ctx)?;
    let mut sections = Vec::new();
    if let Some(d) = &t.until_decided {
        sections.push(("Until decided".to_string(), until_decided(d)));
    }
    if !ev.is_empty() {
        sections.push(("Trace evidence".to_string(), vec![Block::Pre(ev)]));
    }
    Ok(Part {
        conclusion,
        verdict: bullets,
        table,
        what_ran,
        kernel: None,
        sections,
        plots,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(s: &str, v: &str, vals: &[f64], w: usize) -> TRow {
        let so = sorted(vals);
        TRow {
            setting: s.into(),
            variant: v.into(),
            metric: "wait".into(),
            unit: "ms".into(),
            bound: Some("< 100 ms".into()),
            n: vals.len(),
            within_bound: Some(w),
            missing: 0,
            median: crate::stats::median(&so),
            min: so.first().copied(),
            max: so.last().copied(),
            values: vals.to_vec(),
            ..TRow::default()
        }
    }

    #[test]
    fn verdict_names_the_setting_and_the_odds() {
        let on = row(
            "RT_PUSH_IPI",
            "pi",
            &[0.6, 0.7, 0.8, 0.8, 0.9, 1.0, 1.1, 5.4],
            8,
        );
        let off = row(
            "NO_RT_PUSH_IPI",
            "pi",
            &[
                1146.1, 1499.0, 1499.5, 1499.6, 1499.7, 1500.0, 1501.0, 1502.6,
            ],
            0,
        );
        let t = TrialsData {
            rows: vec![on, off],
            ..Default::default()
        };
        let (b, c) = verdict(&t);
        assert_eq!(b.len(), 1);
        assert_eq!(
            b[0],
            "NO_RT_PUSH_IPI: wait median 1499.7 ms against 0.850 ms under RT_PUSH_IPI, 0/8 \
             against 8/8 under 100 ms: worse — the values worse (×1386, 95 % Holm-adjusted \
             interval ×693 to ×2773); trials within the bound worse (Fisher's exact test, one-sided p < \
             0.001)."
        );
        assert_eq!(
            c,
            "Conclusion: variant pi: wait under 100 ms in 8/8 with RT_PUSH_IPI, 0/8 with \
             NO_RT_PUSH_IPI (NO_RT_PUSH_IPI worse, trial against trial)."
        );
    }

    /// The seed's A/B with the failing trials ended early at the bound: censored.
    #[test]
    fn censored_trials_give_medians_at_least_the_bound_and_are_ranked_as_failures() {
        let on = row("RT_PUSH_IPI", "pi", &[0.6, 0.7, 0.8, 0.8, 0.9, 1.0], 6);
        let mut off = row("NO_RT_PUSH_IPI", "pi", &[], 0);
        off.n = 6;
        off.censored = vec![100.0; 6];
        off.set_order_stats();
        assert_eq!(table_cell(&off, 4), "≥ 100.0");
        assert_eq!(table_cell(&off, 2), "6 (6 censored)");
        assert_eq!(table_cell(&off, 5), "≥ 100.0 / ≥ 100.0");
        let mut t = TrialsData {
            rows: vec![on.clone(), off.clone()],
            ..Default::default()
        };
        for (s, i) in [
            ("NO_RT_PUSH_IPI", 0u32),
            ("NO_RT_PUSH_IPI", 1),
            ("RT_PUSH_IPI", 0),
        ] {
            let mut rec: results::trials::TrialRecord = serde_json::from_str("{}").unwrap();
            (rec.setting, rec.variant, rec.trial, rec.status) =
                (s.into(), "pi".into(), i, TrialStatus::Ok);
            if s == "NO_RT_PUSH_IPI" {
                rec.censored.insert("wait".into(), 100.0);
            }
            t.trials.push(rec);
        }
        let (b, c) = verdict(&t);
        assert!(
            b[0].starts_with(
                "NO_RT_PUSH_IPI: wait median ≥ 100.0 ms against 0.800 ms under RT_PUSH_IPI, \
                 0/6 against 6/6 under 100 ms: worse — trials within the bound worse \
                 (Fisher's exact test, one-sided p = 0.001)."
            ),
            "{}",
            b[0]
        );
        assert!(
            b.iter().any(|x| x == "NO_RT_PUSH_IPI: 2 of 2 trials ended early once a metric had passed its bound (end_early): wait ≥ 100.0 ms censored there, counted as outside the bound, never as a measured value."),
            "{b:?}"
        );
        assert!(c.contains("0/6 with NO_RT_PUSH_IPI"), "{c}");
        // One row alone is described with its censored trials.
        let d = describe(&off, "NO_RT_PUSH_IPI");
        assert!(d.contains("median ≥ 100.0 ms"), "{d}");
        assert!(
            d.contains("6 trials ended early, their values censored (at least 100.0 ms)"),
            "{d}"
        );
    }

    /// The one-metric table's cell `i` of row `r`.
    fn table_cell(r: &TRow, i: usize) -> String {
        let t = TrialsData {
            rows: vec![r.clone()],
            ..Default::default()
        };
        match table(&t) {
            Block::Table { rows, .. } => rows[0][i].clone(),
            b => panic!("{b:?}"),
        }
    }

    #[test]
    fn too_few_trials_say_so() {
        let a = row("A", "v", &[1.0, 2.0], 2);
        let b = row("B", "v", &[300.0, 400.0], 0);
        let t = TrialsData {
            rows: vec![a.clone(), b.clone()],
            ..Default::default()
        };
        let (text, _) = contrast(&t, &b, &a, "B", "under A");
        assert!(
            text.contains("cannot be decided with 2 and 2 trials"),
            "{text}"
        );
    }
}
