//! The side-by-side plots: for trial metrics one strip per metric name, every (setting,
//! variant) with its directories side by side; for audio, per (setting, variant), the
//! latency tails of every directory on one axis.

use super::load::{Dirs, Metric};
use super::sample::Sample;
use crate::doc::Block;
use crate::load::Results;
use crate::out::Ctx;
use crate::plot::cdf::{Figure, Panel, PanelKind, Series, hist_ccdf};
use crate::plot::strip::{Column, Strip};
use results::file_part as safe;

/// Saves the plots into `ctx` (plots/ must exist); returns their blocks.
pub fn plots(metrics: &[Metric], dirs: &Dirs, ctx: &mut Ctx) -> Result<Vec<Block>, String> {
    let mut imgs = strips(metrics, dirs, ctx)?;
    imgs.extend(tails(metrics, dirs, ctx)?);
    Ok(imgs)
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

/// Trials: one strip per metric name, every (setting, variant) with its directories
/// side by side, coloured by directory.
fn strips(metrics: &[Metric], dirs: &Dirs, ctx: &mut Ctx) -> Result<Vec<Block>, String> {
    let Dirs {
        results,
        labels,
        red,
    } = dirs;
    let mut names: Vec<String> = Vec::new();
    for m in metrics {
        if matches!(m.per_dir[0], Some(Sample::Trials { .. })) && !names.contains(&m.key.2) {
            names.push(m.key.2.clone());
        }
    }
    let mut imgs = Vec::new();
    for name in &names {
        let mut cols = Vec::new();
        let mut unit = String::new();
        let mut bound_v = None;
        for m in metrics.iter().filter(|m| &m.key.2 == name) {
            for (i, s) in m.per_dir.iter().enumerate() {
                if let Some(Sample::Trials {
                    vals,
                    censored,
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
                        censored: censored.clone(),
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
    Ok(imgs)
}

/// Audio: per (setting, variant), the latency tails of every directory on one axis.
fn tails(metrics: &[Metric], dirs: &Dirs, ctx: &mut Ctx) -> Result<Vec<Block>, String> {
    let Dirs {
        results,
        labels,
        red,
    } = dirs;
    let hist = |m: &Metric| matches!(m.per_dir[0], Some(Sample::Tails { .. }));
    let mut keys: Vec<(String, String)> = Vec::new();
    for m in metrics {
        if hist(m) && !keys.contains(&(m.key.0.clone(), m.key.1.clone())) {
            keys.push((m.key.0.clone(), m.key.1.clone()));
        }
    }
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
                    .per_dir
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| match s {
                        Some(Sample::Tails { pooled: h, .. }) => Some(Series {
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
    Ok(imgs)
}
