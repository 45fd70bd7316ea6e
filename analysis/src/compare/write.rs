//! The comparison as a document (verdict, sides, table, plots) and its files:
//! compare.txt, compare.md, compare.html and compare.json.

use super::load::{Sides, kernel_of};
use super::verdict::Verdicts;
use crate::doc::{self, Block, Doc};
use crate::judge::answer::confidence_label;
use crate::load::Results;
use crate::out::Ctx;
use crate::redact::Redactor;

pub fn document(
    sides: &Sides,
    v: &Verdicts,
    plots: Vec<Block>,
    calibration: Option<&str>,
    problems: &[String],
) -> Doc {
    let labels = sides.labels();
    let change_head = format!("change [{}]", confidence_label(v.one_sided));
    let mut d = Doc {
        title: format!("xrunrig compare: {}", sides.base().rig),
        subtitle: None,
        sections: vec![],
    };
    let mut verdict = vec![
        Block::Para(format!("Verdict: {}", v.summary())),
        Block::Para(format!("Method: {}", method(v))),
    ];
    if let Some(c) = calibration {
        verdict.push(Block::Para(sides.red.apply(c)));
    }
    for p in problems {
        verdict.push(Block::Para(format!("Not read: {}", sides.red.apply(p))));
    }
    verdict.extend(injected_notes(sides).into_iter().map(Block::Para));
    verdict.push(Block::Bullets(v.verdicts.clone()));
    d.section("Verdict", verdict);
    d.section(
        "Sides",
        vec![Block::Bullets(
            sides
                .sides
                .iter()
                .flat_map(|s| {
                    s.runs
                        .iter()
                        .enumerate()
                        .map(move |(i, r)| describe_run(&s.label, i, s.runs.len(), r, &sides.red))
                })
                .collect(),
        )],
    );
    d.section(
        "Table",
        vec![
            Block::Para(format!(
                "Value: the median trial over a side's runs (a hung trial counts as slower than \
                 any), for audio latencies the geometric mean of each trial's p99, dropouts per \
                 hour of audio; a criterion as the trials that kept it. Change: B against A \
                 with its {} interval. p: Holm-adjusted p of worse beyond the threshold.",
                confidence_label(v.one_sided)
            )),
            Block::Table {
                head: [
                    "metric",
                    labels[0].as_str(),
                    if labels.len() > 2 {
                        "other"
                    } else {
                        labels[1].as_str()
                    },
                    change_head.as_str(),
                    "p",
                    "answer",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect(),
                rows: v.rows.clone(),
                right: vec![false, true, true, true, true, false],
            },
        ],
    );
    d.section("Plots", plots);
    d
}

/// How the verdict was reached, in words: printed with every comparison.
pub fn method(v: &Verdicts) -> String {
    let t = v.threshold;
    format!(
        "the unit is the run (one boot, one process): trials within a run share its \
         conditions, runs do not, so a side's evidence grows with its runs. Each metric is \
         judged on a log scale (latencies: each trial's p99; a trial criterion: the odds \
         that a trial fails it, a hung or failed trial failing; trial values: each finished \
         trial's value), each run's estimate the mean over its trials, a side's the mean \
         over its runs. Dropouts are counted in episodes (dropouts less than 50 ms apart \
         are one: one stall of the machine is one event, however many cycles it lost; runs \
         recorded before episodes were counted: each dropout) and tested as counts: the two \
         sides' totals by an exact conditional binomial test, over-dispersed by the trials' \
         and the runs' spread, a side with none carrying the information of its audio \
         time. The run-to-run \
         spread: {}. A metric is worse (better) when the {} interval of its change lies \
         wholly above +{t}% (below −{t}%), Holm-adjusted over the metrics tested; the same \
         when it lies wholly inside ±{t}%; otherwise inconclusive.",
        spreads(v),
        confidence_label(v.one_sided)
    )
}

/// Where the between-run spread came from, each way once.
fn spreads(v: &Verdicts) -> String {
    use crate::judge::{Between, Scale};
    let word = |s: Scale| match s {
        Scale::LogP99 => "latency p99s",
        Scale::LogRate => "dropouts",
        Scale::LogOdds => "criteria",
        Scale::LogValue => "trial values",
    };
    // One list per way the spread was found: "dropouts σ = 1.50 (source)".
    let list = |pick: &dyn Fn(&Between) -> Option<String>| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (s, b) in &v.between {
            if let Some(x) = pick(b) {
                let item = format!("{} {x}", word(*s));
                if !out.contains(&item) {
                    out.push(item);
                }
            }
        }
        out
    };
    let mut out: Vec<String> = Vec::new();
    let runs = list(&|b| match b {
        Between::Runs {
            var,
            df,
            calibration,
        } => Some(format!(
            "σ = {:.2} ({df:.0} df{})",
            var.sqrt(),
            if calibration.is_some() {
                ", with the calibration"
            } else {
                ""
            }
        )),
        _ => None,
    });
    if !runs.is_empty() {
        out.push(format!(
            "the sides' runs interleaved in time: from the runs themselves, each side's runs \
             about their own mean, pooled over the sides (and with the calibration of this rig \
             on this machine when one matches; on the log scale: {})",
            runs.join(", ")
        ));
    }
    let cal = list(&|b| match b {
        Between::Calibrated { var, df, .. } => Some(format!("σ = {:.2} ({df:.0} df)", var.sqrt())),
        _ => None,
    });
    if !cal.is_empty() {
        out.push(format!(
            "each side one block in time (one run a side, or one side's runs all before the \
             other's): a block's effect is a run's and its runs do not average it away, its \
             spread the calibration's named below or the runs' own, the larger (on the log \
             scale: {})",
            cal.join(", ")
        ));
    }
    let assumed = list(&|b| match b {
        Between::Assumed { var, source } => Some(format!("σ = {:.2} ({source})", var.sqrt())),
        _ => None,
    });
    if !assumed.is_empty() {
        out.push(format!(
            "each side one block in time (one run a side, or one side's runs all before the \
             other's) and no calibration: the largest between-run spread this project has \
             measured, taken as known (or the runs' own, when larger), so that only a change \
             beyond any such spread is called (on the log scale: {})",
            assumed.join(", ")
        ));
    }
    if v.between.iter().any(|b| b.1 == Between::Shared) {
        out.push("none (one run)".into());
    }
    if out.is_empty() {
        "none was needed".into()
    } else {
        out.join("; ")
    }
}

fn describe_run(label: &str, i: usize, n: usize, r: &Results, red: &Redactor) -> String {
    let when = r.run.started.clone().unwrap_or_default();
    red.apply(&format!(
        "{label}{} = {} (rig {}, kernel {}{})",
        if n > 1 {
            (i + 1).to_string()
        } else {
            String::new()
        },
        r.dir.display(),
        r.rig,
        kernel_of(r),
        if when.is_empty() {
            String::new()
        } else {
            format!(", {when}")
        }
    ))
}

/// Writes the four files; returns compare.txt and compare.json's document as written.
pub fn write(
    ctx: &mut Ctx,
    d: &Doc,
    v: &Verdicts,
    sides: &Sides,
    calibration: Option<&str>,
) -> Result<(String, serde_json::Value), String> {
    let text = ctx.red.apply(&doc::text::render(d));
    ctx.write("compare.txt", &text)?;
    ctx.write("compare.md", &doc::markdown::render(d))?;
    let o = ctx.dir.clone();
    let html = doc::html::render(d, &|f| {
        std::fs::read_to_string(o.join(format!("{f}.svg"))).ok()
    });
    ctx.write("compare.html", &html)?;
    let json = serde_json::json!({
        "baseline": sides.sides[0].label, "threshold_percent": v.threshold,
        "confidence": 1.0 - 2.0 * v.one_sided, "correction": "holm",
        "answer": v.answer.map(|a| a.word()), "tests": v.tested,
        "regressions": v.regressions, "improvements": v.improvements,
        "same": v.same, "inconclusive": v.inconclusive,
        "runs_per_side": sides.sides.iter().map(|s| s.runs.len()).collect::<Vec<_>>(),
        "between": v.between.iter().map(|(s, b)| format!("{s:?}: {}", b.describe())).collect::<Vec<_>>(), "calibration": calibration.map(|c| ctx.red.apply(c)),
        "method": method(v), "summary": v.summary(), "verdicts": v.verdicts,
        "answers": v.answers.iter().map(|a| a.word()).collect::<Vec<_>>(),
        "table": v.rows,
    });
    ctx.write(
        "compare.json",
        &(serde_json::to_string_pretty(&json).map_err(|e| e.to_string())? + "\n"),
    )?;
    Ok((text, json))
}

/// A side whose runs injected overruns on purpose (`--inject-every`), named with how many:
/// a change between the sides may be theirs, not the kernel's.
fn injected_notes(sides: &Sides) -> Vec<String> {
    let mut out = Vec::new();
    for s in &sides.sides {
        let mut injected = 0u64;
        let mut every: Vec<u64> = Vec::new();
        for r in &s.runs {
            if let Some(d) = r.data::<crate::load::livefx::LivefxData>() {
                injected += d.trials.iter().map(|t| t.counts.injected).sum::<u64>();
            }
            for b in r.run.livefx.iter().flat_map(|l| &l.backends) {
                if let Some(k) = b.inject_every.filter(|k| *k > 0)
                    && !every.contains(&k)
                {
                    every.push(k);
                }
            }
        }
        if injected > 0 || !every.is_empty() {
            let k: Vec<String> = every.iter().map(u64::to_string).collect();
            out.push(format!(
                "{}: {injected} overruns injected on purpose (--inject-every{}): a \
                 difference between the sides may be theirs, not the kernel's",
                s.label,
                if k.is_empty() {
                    String::new()
                } else {
                    format!(" {}", k.join(", "))
                }
            ));
        }
    }
    out
}
