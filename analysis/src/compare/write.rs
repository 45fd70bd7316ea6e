//! The comparison as a document (verdict, directories, table, plots) and its files:
//! compare.txt, compare.md, compare.html and compare.json.

use super::ALPHA;
use super::load::Dirs;
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
                "Value: the median of the trials (± their standard deviation as % of the mean, LKP style) or, for \
                 audio, the p99 latency and events per hour. p: two-sided Mann-Whitney U (exact \
                 without ties) for trials and latencies, an exact conditional test for event rates. WORSE: slower beyond the threshold with p < 0.05."
                    .into(),
            ),
            Block::Table {
                head: [
                    "metric",
                    labels[0].as_str(),
                    if results.len() > 2 { "other" } else { labels[1].as_str() },
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
        "regressions": v.regressions, "improvements": v.improvements,
        "summary": v.summary(threshold), "verdicts": v.verdicts, "table": v.rows,
    });
    ctx.write(
        "compare.json",
        &(serde_json::to_string_pretty(&json).map_err(|e| e.to_string())? + "\n"),
    )?;
    Ok((text, json))
}
