//! `xrunrig compare A B [C ...]`: the same metrics across results directories (kernels,
//! settings), LKP style: value ± spread, % change against the first directory, a
//! significance test fit for small skewed samples, a verdict per metric in plain words,
//! a side-by-side plot, and exit code 1 when something regressed beyond the threshold.

use crate::doc::{self, Block, Doc};
use crate::hist::LogHist;
use crate::load::{self, Kind, Results};
use crate::out::Ctx;
use crate::plot::cdf::{Figure, Panel, PanelKind, Series, hist_ccdf};
use crate::plot::strip::{Column, Strip};
use crate::redact::Redactor;
use crate::report::common::{fmt_us, fmt_val};
use crate::stats::{cv_percent, fmt_p, mann_whitney, mann_whitney_hist, median, rate_p, sorted};
use results::file_part as safe;
use std::path::{Path, PathBuf};

/// Significance level for calling a change real.
pub const ALPHA: f64 = 0.05;

/// One metric of one directory.
#[derive(Clone)]
enum Sample {
    /// Trial values (unit), with bound counts.
    Values {
        vals: Vec<f64>,
        /// Trials without a value (timed out): the slowest, for the test.
        missing: usize,
        unit: String,
        within: Option<(usize, usize)>,
        bound: Option<String>,
    },
    /// A latency distribution (ns), compared at its p99.
    Hist(LogHist),
    /// Events over hours of audio.
    Rate { events: u64, hours: f64 },
}

type Keyed = Vec<((String, String, String), Sample)>;

struct Metric {
    /// (setting, variant, metric name)
    key: (String, String, String),
    per_dir: Vec<Option<Sample>>,
}

fn samples(r: &Results) -> Vec<((String, String, String), Sample)> {
    let mut out = Vec::new();
    match &r.kind {
        Kind::Trials(t) => {
            for row in &t.rows {
                out.push((
                    (row.setting.clone(), row.variant.clone(), row.metric.clone()),
                    Sample::Values {
                        vals: row.values.clone(),
                        missing: row.missing,
                        unit: row.unit.clone(),
                        within: row.within_bound.map(|w| (w, row.n.max(w))),
                        bound: row.bound.clone(),
                    },
                ));
            }
        }
        Kind::Livefx(d) => {
            for c in crate::report::livefx::cases(d) {
                let k = |m: &str| (c.setting.clone(), c.variant.clone(), m.to_string());
                if let Some(s) = c.audio_s {
                    out.push((
                        k("dropouts"),
                        Sample::Rate {
                            events: c.trouble(),
                            hours: s / 3600.0,
                        },
                    ));
                }
                for (name, h) in [
                    ("callback p99", c.callback),
                    ("lateness p99", c.lateness),
                    ("wake p99", c.wake),
                ] {
                    if let Some(h) = h {
                        out.push((k(name), Sample::Hist(h.clone())));
                    }
                }
            }
        }
    }
    out
}

/// (value, spread text, unit) for the table.
fn value_of(s: &Sample) -> (Option<f64>, String, String) {
    match s {
        Sample::Values { vals, unit, .. } => {
            let so = sorted(vals);
            (
                median(&so),
                cv_percent(vals).map_or(String::new(), |c| format!(" ±{c:.0}%")),
                unit.clone(),
            )
        }
        Sample::Hist(h) => (
            h.quantile(0.99).map(|v| v as f64 / 1e3),
            String::new(),
            "us".into(),
        ),
        Sample::Rate { events, hours } => (
            (*hours > 0.0).then(|| *events as f64 / hours),
            format!(" ({events} in {hours:.2} h)"),
            "/h".into(),
        ),
    }
}

fn p_of(base: &Sample, cand: &Sample) -> Option<f64> {
    match (base, cand) {
        (
            Sample::Values {
                vals: a,
                missing: ma,
                ..
            },
            Sample::Values {
                vals: b,
                missing: mb,
                ..
            },
        ) => {
            let with = |v: &[f64], m: usize| -> Vec<f64> {
                v.iter()
                    .copied()
                    .chain(std::iter::repeat_n(f64::INFINITY, m))
                    .collect()
            };
            mann_whitney(&with(b, *mb), &with(a, *ma)).map(|m| m.p)
        }
        (Sample::Hist(a), Sample::Hist(b)) => mann_whitney_hist(b, a).map(|m| m.p),
        (
            Sample::Rate {
                events: ka,
                hours: ta,
            },
            Sample::Rate {
                events: kb,
                hours: tb,
            },
        ) => Some(rate_p(*ka, *ta, *kb, *tb)),
        _ => None,
    }
}

/// "kernel 6.12.57" or the directory's name, for legends.
fn short_dir(r: &Results) -> String {
    r.run
        .kernel
        .as_ref()
        .and_then(|k| k.release.as_ref())
        .map(|k| format!("kernel {k}"))
        .unwrap_or_else(|| {
            r.dir
                .file_name()
                .map_or("?".into(), |n| n.to_string_lossy().to_string())
        })
}

pub struct Outcome {
    pub text: String,
    pub regressions: usize,
    pub improvements: usize,
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

pub fn run(dirs: &[PathBuf], threshold: f64, out: &Path, redact: bool) -> Result<Outcome, String> {
    if dirs.len() < 2 {
        return Err(
            "compare needs two or more results directories; the first is the baseline".into(),
        );
    }
    let results: Vec<Results> = dirs
        .iter()
        .map(|d| load::load(d))
        .collect::<Result<_, _>>()?;
    let red = if redact {
        let hosts: Vec<String> = results
            .iter()
            .flat_map(|r| crate::report::run_hosts(&r.run))
            .collect();
        Redactor::for_this_machine(&hosts)
    } else {
        Redactor::none()
    };
    let labels: Vec<String> = (0..results.len())
        .map(|i| ((b'A' + (i % 26) as u8) as char).to_string())
        .collect();
    let per: Vec<Keyed> = results.iter().map(samples).collect();
    // Keys from the baseline; a directory with one setting that matches none of the
    // baseline's is matched on (variant, metric): a kernel against a kernel.
    let mut metrics: Vec<Metric> = Vec::new();
    for (k, s) in &per[0] {
        let mut m = Metric {
            key: k.clone(),
            per_dir: vec![Some(s.clone())],
        };
        for p in per.iter().skip(1) {
            let exact = p.iter().find(|(k2, _)| k2 == k).map(|x| x.1.clone());
            let loose = || {
                let one_setting = |v: &Vec<((String, String, String), Sample)>| {
                    v.iter().all(|x| x.0.0 == v[0].0.0)
                };
                (one_setting(&per[0]) && one_setting(p))
                    .then(|| {
                        p.iter()
                            .find(|(k2, _)| k2.1 == k.1 && k2.2 == k.2)
                            .map(|x| x.1.clone())
                    })
                    .flatten()
            };
            m.per_dir.push(exact.or_else(loose));
        }
        metrics.push(m);
    }
    let mut rows = Vec::new();
    let mut verdicts = Vec::new();
    let (mut regressions, mut improvements) = (0, 0);
    for m in &metrics {
        let Some(base) = &m.per_dir[0] else { continue };
        let (bv, bs, unit) = value_of(base);
        let name = format!("{} / {} {}", m.key.0, m.key.1, m.key.2);
        for (i, cand) in m.per_dir.iter().enumerate().skip(1) {
            let Some(cand) = cand else {
                verdicts.push(format!("{name}: not in {}.", labels[i]));
                continue;
            };
            let (cv, cs, _) = value_of(cand);
            let change = match (bv, cv) {
                (Some(b), Some(c)) if b.abs() > 0.0 => Some(100.0 * (c - b) / b.abs()),
                (Some(b), Some(c)) if b == 0.0 && c > 0.0 => Some(f64::INFINITY),
                (Some(_), Some(_)) => Some(0.0),
                _ => None,
            };
            let p = p_of(base, cand);
            let sig = p.is_some_and(|p| p < ALPHA);
            let flag = match change {
                Some(ch) if sig && ch > threshold => {
                    regressions += 1;
                    "REGRESSION"
                }
                Some(ch) if sig && ch < -threshold => {
                    improvements += 1;
                    "improvement"
                }
                _ => "no significant change",
            };
            let fmt = |v: Option<f64>| match (v, base) {
                (Some(v), Sample::Hist(_)) => fmt_us(v),
                (Some(v), _) => format!("{} {unit}", fmt_val(v)),
                (None, _) => "-".into(),
            };
            // Table cells: the unit is in the metric column.
            let bare = |v: Option<f64>| v.map_or("-".to_string(), fmt_val);
            let ch_s = match change {
                Some(c) if c.is_infinite() => "new".to_string(),
                Some(c) => format!("{c:+.1}%"),
                None => "-".into(),
            };
            let spread = |s: &str| {
                if matches!(base, Sample::Values { .. }) {
                    s.to_string()
                } else {
                    String::new()
                }
            };
            rows.push(vec![
                format!("{}/{} {} {unit}", m.key.0, m.key.1, m.key.2),
                format!("{}{}", bare(bv), spread(&bs)),
                if results.len() > 2 {
                    format!("{}: {}{}", labels[i], bare(cv), spread(&cs))
                } else {
                    format!("{}{}", bare(cv), spread(&cs))
                },
                ch_s.clone(),
                p.map_or("-".into(), |p| {
                    if p < 0.001 {
                        "<0.001".into()
                    } else {
                        format!("{p:.3}")
                    }
                }),
                match flag {
                    "REGRESSION" => "WORSE",
                    "improvement" => "better",
                    _ => "",
                }
                .to_string(),
            ]);
            let mut v = format!(
                "{}: {}{} {} against {} in {}",
                labels[i],
                m.key.2,
                if matches!(base, Sample::Values { .. }) {
                    " median"
                } else {
                    ""
                },
                fmt(cv),
                fmt(bv),
                labels[0]
            );
            if let (
                Sample::Values {
                    within: Some((wa, na)),
                    bound: Some(b),
                    ..
                },
                Sample::Values {
                    within: Some((wb, nb)),
                    ..
                },
            ) = (cand, base)
            {
                v += &format!(
                    ", {wa}/{na} against {wb}/{nb} {}",
                    crate::report::common::bound_words(b)
                );
            }
            v += &format!(
                " ({ch_s}{}): {}",
                p.map_or(String::new(), |p| format!(", {}", fmt_p(p))),
                match flag {
                    "REGRESSION" => format!("REGRESSION beyond the {threshold}% threshold"),
                    "improvement" => "improvement".into(),
                    _ => "no significant change".into(),
                }
            );
            verdicts.push(format!("{} / {}: {v}.", m.key.0, m.key.1));
        }
    }
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
    let summary = if regressions > 0 {
        format!(
            "{regressions} metric(s) regressed beyond {threshold}% with p < {ALPHA}: exit code 1."
        )
    } else if improvements > 0 {
        format!("no regression beyond {threshold}%; {improvements} metric(s) improved.")
    } else {
        format!("no significant change (threshold {threshold}%, p < {ALPHA}).")
    };
    d.section(
        "Verdict",
        vec![
            Block::Para(format!("Verdict: {summary}")),
            Block::Bullets(verdicts.clone()),
        ],
    );
    d.section(
        "Directories",
        vec![Block::Bullets(
            results
                .iter()
                .zip(&labels)
                .map(|(r, l)| describe_dir(l, r, &red))
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
                rows: rows.clone(),
                right: vec![false, true, true, true, true, false],
            },
        ],
    );
    // Side-by-side plots.
    std::fs::create_dir_all(out.join("plots"))
        .map_err(|e| format!("cannot create {}: {e}", out.join("plots").display()))?;
    let mut ctx = Ctx {
        dir: out.to_path_buf(),
        red: red.clone(),
        rig: results[0].rig.clone(),
        files: vec![],
    };
    let mut imgs = Vec::new();
    // Trials: one strip per metric name, every (setting, variant) with its directories
    // side by side, coloured by directory.
    let mut names: Vec<String> = Vec::new();
    for m in &metrics {
        if matches!(m.per_dir[0], Some(Sample::Values { .. })) && !names.contains(&m.key.2) {
            names.push(m.key.2.clone());
        }
    }
    for name in &names {
        let mut cols = Vec::new();
        let mut unit = String::new();
        let mut bound_v = None;
        for m in metrics.iter().filter(|m| &m.key.2 == name) {
            for (i, s) in m.per_dir.iter().enumerate() {
                if let Some(Sample::Values {
                    vals,
                    unit: u,
                    bound,
                    ..
                }) = s
                {
                    unit = u.clone();
                    if let Some(b) = bound {
                        bound_v =
                            results::units::bound_limit(b, u).map(|v| (v, format!("bound {b}")));
                    }
                    cols.push(Column {
                        label: vec![
                            labels[i].clone(),
                            red.apply(&format!("{}/{}", m.key.0, m.key.1)),
                        ],
                        color: i,
                        values: vals.clone(),
                        missing: 0,
                    });
                }
            }
        }
        let strip = Strip {
            title: red.apply(&format!("{name}: {} side by side", labels.join(" / "))),
            y_label: format!("{name} ({unit})"),
            columns: cols,
            bound: bound_v,
            legend: labels
                .iter()
                .enumerate()
                .map(|(i, l)| (red.apply(&format!("{l}: {}", short_dir(&results[i]))), i))
                .collect(),
        };
        let rel = format!("plots/compare_{}", safe(name));
        ctx.save(&strip, &rel)?;
        imgs.push(Block::Image {
            file: rel,
            caption: format!("{name}: every trial of every directory, side by side"),
        });
    }
    // Audio: per (setting, variant), the latency tails of every directory on one axis.
    let mut keys: Vec<(String, String)> = Vec::new();
    for m in &metrics {
        if matches!(m.per_dir[0], Some(Sample::Hist(_)))
            && !keys.contains(&(m.key.0.clone(), m.key.1.clone()))
        {
            keys.push((m.key.0.clone(), m.key.1.clone()));
        }
    }
    for (st, va) in &keys {
        let panels: Vec<Panel> = metrics
            .iter()
            .filter(|m| {
                &m.key.0 == st && &m.key.1 == va && matches!(m.per_dir[0], Some(Sample::Hist(_)))
            })
            .map(|m| Panel {
                title: m.key.2.trim_end_matches(" p99").to_string(),
                x_label: "us, log scale".into(),
                kind: PanelKind::Ccdf,
                series: m
                    .per_dir
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| match s {
                        Some(Sample::Hist(h)) => Some(Series {
                            label: red.apply(&format!("{}: {}", labels[i], short_dir(&results[i]))),
                            color: i,
                            pts: hist_ccdf(h),
                            dots: false,
                        }),
                        _ => None,
                    })
                    .collect(),
                vlines: vec![],
            })
            .collect();
        let fig = Figure {
            title: red.apply(&format!(
                "{st} / {va}: latency tails, {} side by side",
                labels.join(" / ")
            )),
            panels,
            panel_size: (620, 520),
        };
        let rel = format!("plots/compare_{}__{}", safe(st), safe(va));
        ctx.save(&fig, &rel)?;
        imgs.push(Block::Image {
            file: rel,
            caption: format!("{st} / {va}: share of cycles slower than x, per directory"),
        });
    }
    d.section("Plots", imgs);
    let text = red.apply(&doc::text::render(&d));
    ctx.write("compare.txt", &text)?;
    ctx.write("compare.md", &doc::markdown::render(&d))?;
    let o = out.to_path_buf();
    ctx.write(
        "compare.html",
        &doc::html::render(&d, &|f| {
            std::fs::read_to_string(o.join(format!("{f}.svg"))).ok()
        }),
    )?;
    let json = serde_json::json!({
        "baseline": labels[0], "threshold_percent": threshold, "alpha": ALPHA,
        "regressions": regressions, "improvements": improvements, "summary": summary,
        "verdicts": verdicts, "table": rows,
    });
    ctx.write(
        "compare.json",
        &(serde_json::to_string_pretty(&json).map_err(|e| e.to_string())? + "\n"),
    )?;
    Ok(Outcome {
        text,
        regressions,
        improvements,
    })
}

pub fn main(
    dirs: &[PathBuf],
    threshold: f64,
    out: Option<&Path>,
    redact: bool,
) -> Result<i32, String> {
    if !(threshold.is_finite() && threshold >= 0.0) {
        return Err(format!(
            "--threshold {threshold}: give a percentage of 0 or more, e.g. 10"
        ));
    }
    let out = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dirs[0].clone());
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let o = run(dirs, threshold, &out, redact)?;
    print!("{}", o.text);
    Ok(if o.regressions > 0 { 1 } else { 0 })
}
