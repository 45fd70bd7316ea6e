//! The comparison as a document (verdict, directories, table, plots) and its files:
//! compare.txt, compare.md, compare.html and compare.json.

use super::ALPHA;
use super::load::Dirs;
use super::sample::MIN_TRIALS;
use super::verdict::Verdicts;
use crate::doc::{self, Block, Doc};
use crate::load::Results;
use crate::out::Ctx;
use crate::redact::Redactor;

pub fn document(dirs: &Dirs, v: &Verdicts, threshold: f64, plots: Vec<Block>) -> Doc {
    let Dirs {
        results,
        labels,
        red,
    } = dirs;
    let mut d = Doc {
        title: format!(
            "xrunrig compare: {}",
            results
                .iter()
                .map(|r| r.rig.clone())
                .collect::<Vec<_>>()
                .join(" vs ")
        ),
        subtitle: None,
        sections: vec![],
    };
    d.section(
        "Verdict",
        vec![
            Block::Para(format!("Verdict: {}", v.summary(threshold))),
            Block::Para(format!("Method: {}", method(threshold))),
            Block::Bullets(v.verdicts.clone()),
        ],
    );
    d.section(
        "Directories",
        vec![Block::Bullets(
            results
                .iter()
                .zip(labels)
                .map(|(r, l)| describe_dir(l, r, red))
                .collect(),
        )],
    );
    d.section(
        "Table",
        vec![
            Block::Para(
                "Value: the median trial (± the trials' standard deviation as % of their mean, \
                 LKP style); for audio latencies the geometric mean of each trial's p99, and \
                 dropouts per hour of audio. p: Holm-adjusted (see Method). WORSE: slower \
                 beyond the threshold with p < 0.05; untested: too few trials a side."
                    .into(),
            ),
            Block::Table {
                head: [
                    "metric",
                    labels[0].as_str(),
                    if results.len() > 2 {
                        "other"
                    } else {
                        labels[1].as_str()
                    },
                    "%change",
                    "p",
                    "",
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
pub fn method(threshold: f64) -> String {
    format!(
        "each trial is one observation (cycles within a trial are not independent; trials \
         are). Audio latencies: each trial's p99, compared by Welch's t-test on their \
         logarithms. Dropouts: each trial's count over its seconds of audio, compared as \
         rates allowing over-dispersion (quasi-Poisson: the totals divided by the \
         dispersion the trials show, then the conditional test of two Poisson counts). \
         Trial metrics: \
         Mann-Whitney U over per-trial values (a timed-out trial ranks slowest). A metric \
         needs {MIN_TRIALS} or more trials a side to be tested. The p-values are adjusted \
         by Holm's method for the number of metrics tested; a metric is a regression (or an \
         improvement) when its adjusted p < {ALPHA} and it changed by more than \
         {threshold}%."
    )
}

fn describe_dir(label: &str, r: &Results, red: &Redactor) -> String {
    let k = r
        .run
        .kernel
        .as_ref()
        .and_then(|k| k.release.clone())
        .unwrap_or_else(|| "kernel ?".into());
    let when = r.run.started.clone().unwrap_or_default();
    red.apply(&format!(
        "{label} = {} (rig {}, kernel {k}{})",
        r.dir.display(),
        r.rig,
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
    baseline: &str,
    threshold: f64,
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
        "baseline": baseline, "threshold_percent": threshold, "alpha": ALPHA,
        "correction": "holm", "tests": v.tested, "untested": v.untested,
        "min_trials": MIN_TRIALS, "method": method(threshold),
        "regressions": v.regressions, "improvements": v.improvements,
        "summary": v.summary(threshold), "verdicts": v.verdicts, "table": v.rows,
    });
    ctx.write(
        "compare.json",
        &(serde_json::to_string_pretty(&json).map_err(|e| e.to_string())? + "\n"),
    )?;
    Ok((text, json))
}
