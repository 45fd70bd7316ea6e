//! The side-by-side plots: for trial metrics one strip per metric name, every (setting,
//! variant) with its sides side by side (a side's runs pooled); for audio, per
//! (setting, variant), the latency tails of every side on one axis.

use super::load::{Metric, Side, Sides, kernel_of};
use super::sample::Sample;
use crate::dist::Dist;
use crate::doc::Block;
use crate::out::Ctx;
use crate::plot::cdf::{Figure, Panel, PanelKind, Series, hist_ccdf};
use crate::plot::strip::{Column, Strip};
use results::file_part as safe;

/// Saves the plots into `ctx` (plots/ must exist); returns their blocks.
pub fn plots(metrics: &[Metric], sides: &Sides, ctx: &mut Ctx) -> Result<Vec<Block>, String> {
    let mut imgs = strips(metrics, sides, ctx)?;
    imgs.extend(tails(metrics, sides, ctx)?);
    Ok(imgs)
}

/// "kernel 6.12.57, 3 runs", for legends.
fn short_side(s: &Side) -> String {
    let r = &s.runs[0];
    let k = r
        .run
        .kernel
        .as_ref()
        .and_then(|k| k.release.as_ref())
        .map(|_| format!("kernel {}", kernel_of(r)))
        .unwrap_or_else(|| {
            r.dir
                .file_name()
                .map_or("?".into(), |n| n.to_string_lossy().to_string())
        });
    // A patch's subject can be long: the legend keeps a line that fits the plot (the
    // whole name is in compare.txt and the method line).
    const MAX: usize = 52;
    let k = if k.chars().count() > MAX {
        format!("{}…", k.chars().take(MAX - 1).collect::<String>())
    } else {
        k
    };
    if s.runs.len() > 1 {
        format!("{k}, {} runs", s.runs.len())
    } else {
        k
    }
}

/// Trials: one strip per metric name, every (setting, variant) with its directories
/// side by side, coloured by directory.
fn strips(metrics: &[Metric], sides: &Sides, ctx: &mut Ctx) -> Result<Vec<Block>, String> {
    let labels = sides.labels();
    let red = &sides.red;
    let mut names: Vec<String> = Vec::new();
    for m in metrics {
        if matches!(m.per_side[0].first(), Some(Sample::Trials { .. })) && !names.contains(&m.key.2)
        {
            names.push(m.key.2.clone());
        }
    }
    let mut imgs = Vec::new();
    for name in &names {
        let mut cols = Vec::new();
        let mut unit = String::new();
        let mut bound_v = None;
        for m in metrics.iter().filter(|m| &m.key.2 == name) {
            for (i, side) in m.per_side.iter().enumerate() {
                let (mut values, mut cens, mut hung) = (Vec::new(), Vec::new(), 0);
                for s in side {
                    if let Sample::Trials {
                        vals,
                        censored,
                        missing,
                        unit: u,
                        bound,
                        ..
                    } = s
                    {
                        unit = u.clone();
                        if let Some(b) = bound {
                            bound_v = results::units::bound_limit(b, u)
                                .map(|v| (v, format!("bound {b}")));
                        }
                        values.extend(vals);
                        cens.extend(censored);
                        hung += missing;
                    }
                }
                if side.is_empty() {
                    continue;
                }
                cols.push(Column {
                    label: vec![
                        labels[i].clone(),
                        red.apply(&format!("{}/{}", m.key.0, m.key.1)),
                    ],
                    color: i,
                    values,
                    missing: hung,
                    censored: cens,
                });
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
                .map(|(i, l)| {
                    (
                        red.apply(&format!("{l}: {}", short_side(&sides.sides[i]))),
                        i,
                    )
                })
                .collect(),
        };
        let rel = format!("plots/compare_{}", safe(name));
        ctx.save(&strip, &rel)?;
        imgs.push(Block::Image {
            file: rel,
            caption: format!("{name}: every trial of every side's runs, side by side"),
        });
    }
    Ok(imgs)
}

/// Audio: per (setting, variant), the latency tails of every side (its runs' cycles
/// pooled) on one axis.
fn tails(metrics: &[Metric], sides: &Sides, ctx: &mut Ctx) -> Result<Vec<Block>, String> {
    let labels = sides.labels();
    let red = &sides.red;
    let hist = |m: &Metric| matches!(m.per_side[0].first(), Some(Sample::Tails { .. }));
    let mut keys: Vec<(String, String)> = Vec::new();
    for m in metrics {
        if hist(m) && !keys.contains(&(m.key.0.clone(), m.key.1.clone())) {
            keys.push((m.key.0.clone(), m.key.1.clone()));
        }
    }
    let pooled = |side: &[Sample]| -> Option<Dist> {
        let mut d: Option<Dist> = None;
        for s in side {
            if let Sample::Tails { pooled: h, .. } = s {
                match &mut d {
                    Some(x) => x.merge(h),
                    None => d = Some(h.clone()),
                }
            }
        }
        d
    };
    let mut imgs = Vec::new();
    for (st, va) in &keys {
        let panels: Vec<Panel> = metrics
            .iter()
            .filter(|m| &m.key.0 == st && &m.key.1 == va && hist(m))
            .map(|m| Panel {
                title: m.key.2.trim_end_matches(" p99").to_string(),
                x_label: "us, log scale".into(),
                kind: PanelKind::Ccdf,
                series: m
                    .per_side
                    .iter()
                    .enumerate()
                    .filter_map(|(i, side)| {
                        pooled(side).map(|h| Series {
                            label: red.apply(&format!(
                                "{}: {}",
                                labels[i],
                                short_side(&sides.sides[i])
                            )),
                            color: i,
                            pts: hist_ccdf(&h),
                            dots: false,
                        })
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
            caption: format!("{st} / {va}: share of cycles slower than x, per side"),
        });
    }
    Ok(imgs)
}
