//! What a guest run prints: each kernel's table as its run comes home, and the table
//! across kernels (with combined.json) when several ran.

use super::boot::emulated_note;
use super::qemu::{Accel, Outcome};
use super::run_ctx::KernelRun;
use crate::output::summary::Row;
use crate::output::{console, table};
use crate::sweep::RigKind;
use results::combined::{COMBINED_JSON, Combined, KernelEntry, KernelRow, LivefxKernelRow};
use std::path::Path;

/// One kernel's table, printed when its results are home; its trial rows go into
/// `run.rows` for the combined table.
pub fn print_kernel(run: &mut KernelRun, outcome: &Outcome, kind: &dyn RigKind) {
    let k = &run.kernel;
    let accel = run.accel.unwrap_or(Accel::Tcg);
    let mut out = format!(
        "\nkernel {} ({}), guest {} — {}; boot to rig start {}\n",
        k.name(),
        k.label,
        accel.name().to_uppercase(),
        emulated_note(accel),
        outcome.ready_s.map_or("-".into(), |b| format!("{b:.1} s"))
    );
    match kind.brought(&run.dir) {
        Some(b) => {
            out.push_str(&b.table);
            run.rows = b.rows;
            run.livefx_rows = b.livefx_rows;
            run.decided = b.decided;
        }
        None => out.push_str("(no summary.json: the guest run wrote no results)\n"),
    }
    // The verdict in words, as a run on this machine ends (from the results brought
    // home, merged).
    out.push_str(&crate::output::answer(&run.dir));
    console::report(&out);
}

/// `--json` for a one-kernel guest run: the summary.json the guest wrote, as it came
/// home (none when it wrote none).
pub fn document(dir: &Path) {
    if !console::json() {
        return;
    }
    match std::fs::read_to_string(dir.join(results::SUMMARY_JSON))
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).map_err(|e| e.to_string()))
    {
        Ok(v) => console::document(&v),
        Err(e) => eprintln!(
            "xrunrig: no JSON document: {}: {e}",
            dir.join(results::SUMMARY_JSON).display()
        ),
    }
}

/// An audio rig's rows across kernels: one line per kernel × setting × variant with
/// cycles, xruns, misses (not injected) and dropouts per hour of audio.
pub fn livefx_combined(rows: &[LivefxKernelRow]) -> String {
    let head = [
        "kernel", "setting", "variant", "backend", "cycles", "xruns", "misses", "per hour",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|k| {
            let r = &k.row;
            let c = &r.counts;
            let misses = c
                .misses_not_injected
                .unwrap_or(c.deadline_misses.saturating_sub(c.injected));
            let dropouts = c.xruns.max(misses) + c.discontinuities.unwrap_or(0);
            vec![
                k.kernel.clone(),
                r.setting.clone(),
                r.variant.clone(),
                r.backend.clone(),
                c.cycles.to_string(),
                c.xruns.to_string(),
                misses.to_string(),
                r.audio_s().filter(|s| *s > 0.0).map_or("-".into(), |s| {
                    format!("{:.1}", dropouts as f64 * 3600.0 / s)
                }),
            ]
        })
        .collect();
    let w: Vec<usize> = (0..head.len())
        .map(|i| {
            cells
                .iter()
                .map(|r| r[i].len())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |r: &[String]| {
        let mut s = String::new();
        for (i, c) in r.iter().enumerate() {
            // Names left, numbers right.
            if i < 4 {
                s += &format!("{c:<width$}  ", width = w[i]);
            } else {
                s += &format!("{c:>width$}  ", width = w[i]);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(&head.map(String::from));
    for r in &cells {
        out += &line(r);
    }
    out + "misses: deadline misses not caused by an injected overrun; per hour: dropouts (the larger of xruns and misses, plus clicks) per hour of audio\n"
}

/// The kernel column's width: its longest label, or its heading.
fn label_width(labels: &[String]) -> usize {
    labels
        .iter()
        .map(|l| l.len())
        .max()
        .unwrap_or(0)
        .max("kernel".len())
}

/// A thread rig's rows of several kernels as one table, each row led by its kernel's
/// label (`labels`, one per row).
fn kernel_table(rows: &[Row], labels: &[String]) -> String {
    let w = label_width(labels);
    let mut out = String::new();
    for (i, line) in table::render(rows).lines().enumerate() {
        let k = match i {
            0 => "kernel",
            i if i <= labels.len() => &labels[i - 1],
            // A note under the rows (what "censored" means): no kernel of its own.
            _ => {
                out.push_str(&format!("{line}\n"));
                continue;
            }
        };
        out.push_str(&format!("{k:<w$}  {line}\n"));
    }
    out
}

/// combined.json in the parent directory.
pub fn combined(
    rig: &str,
    base: &Path,
    runs: &[KernelRun],
    boots_decided: Option<&results::combined::BootsDecided>,
) {
    let mut rows: Vec<Row> = vec![];
    let mut labels: Vec<String> = vec![];
    for r in runs {
        for row in &r.rows {
            rows.push(row.clone());
            labels.push(r.label());
        }
    }
    let livefx_rows: Vec<LivefxKernelRow> = runs
        .iter()
        .flat_map(|r| {
            r.livefx_rows.iter().map(|row| LivefxKernelRow {
                kernel: r.label(),
                row: row.clone(),
            })
        })
        .collect();
    let mut out = String::new();
    // A thread rig's table; an audio rig's; none when no kernel brought rows home.
    if !rows.is_empty() {
        out.push_str(&kernel_table(&rows, &labels));
    }
    if !livefx_rows.is_empty() {
        out.push_str(&livefx_combined(&livefx_rows));
    }
    if rows.is_empty() && livefx_rows.is_empty() {
        out.push_str("(no kernel brought results home)\n");
    }
    // --until-decided: each kernel's comparisons under the table.
    let w = label_width(&labels);
    for r in runs {
        if let Some(d) = &r.decided {
            for p in &d.pairs {
                out.push_str(&format!(
                    "{:<w$}  {}",
                    r.label(),
                    crate::sweep::decide::render_pair(p)
                ));
            }
        }
    }
    if let Some(d) = runs.iter().find_map(|r| r.decided.as_ref()) {
        out.push_str(&format!("until decided: {}\n", d.rule));
    }
    if let Some(d) = boots_decided {
        out.push_str(&super::decided::render(d));
    }
    let mut text = format!("\nall kernels ({rig}):\n{out}");
    for r in runs {
        let acc = r.accel.map_or("-", |a| a.name());
        text.push_str(&match &r.error {
            Some(_) => format!(
                "  {} ({}): FAILED, see {}\n",
                r.label(),
                r.kernel.label,
                r.dir.display()
            ),
            None => format!(
                "  {} ({}): {} {}, boot {} s, {:.1} s in all, {}{}\n",
                r.label(),
                r.kernel.label,
                acc,
                if r.accel == Some(Accel::Tcg) {
                    "(emulated)"
                } else {
                    ""
                },
                r.boot_s.map_or("-".into(), |b| format!("{b:.1}")),
                r.wall_s,
                r.dir.display(),
                if r.code != 0 {
                    format!(" (the guest run exited with {})", r.code)
                } else {
                    String::new()
                }
            ),
        });
    }
    let v = Combined {
        rig: rig.into(),
        kernels: runs
            .iter()
            .map(|r| KernelEntry {
                kernel: r.kernel.label.clone(),
                release: r.kernel.release.clone(),
                dir: r.dir.display().to_string(),
                accel: r.accel.map(|a| a.name().into()),
                emulated: r.accel == Some(Accel::Tcg),
                exit: r.code,
                error: r.error.clone(),
                boot_s: r.boot_s,
                build: r.kernel.build.clone(),
                until_decided: r.decided.clone(),
                boot: r.place.as_ref().map(|p| p.boot),
            })
            .collect(),
        rows: runs
            .iter()
            .flat_map(|r| {
                r.rows.iter().map(|row| KernelRow {
                    kernel: r.label(),
                    row: row.clone(),
                })
            })
            .collect(),
        livefx_rows,
        boots_per_kernel: runs.iter().find_map(|r| r.place.as_ref().map(|p| p.boots)),
        boots_decided: boots_decided.cloned(),
    };
    if let Err(e) = crate::output::write_json(&base.join(COMBINED_JSON), &v) {
        eprintln!("xrunrig: {e}");
    }
    let _ = std::fs::write(base.join("combined.txt"), &out);
    if let Some(n) = v.boots_per_kernel {
        let order: Vec<String> = runs.iter().map(|r| r.label()).collect();
        text.push_str(&format!(
            "{n} boots of each kernel at most, run in this order: {}; each boot is a run of its own: \
             `xrunrig compare {}` judges the kernels' boots against each other\n",
            order.join(", "),
            base.display()
        ));
    }
    text.push_str(&format!(
        "combined: {}\n",
        base.join(COMBINED_JSON).display()
    ));
    console::report(&text);
    // --json: combined.json's document, from the same value.
    console::document(&v);
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::livefx::Summary as LivefxSummary;

    /// A thread rig's rows of two kernels, one with trials that ended early: each row
    /// led by its kernel, the note on censored values under them, on no kernel's line.
    #[test]
    fn kernel_rows_with_censored_values_keep_their_labels() {
        let mut cut = Row {
            setting: "NO_RT_PUSH_IPI".into(),
            variant: "pi".into(),
            metric: "wait".into(),
            unit: "ms".into(),
            bound: Some("< 100 ms".into()),
            n: 6,
            within_bound: Some(0),
            censored: vec![100.0; 6],
            ..Row::default()
        };
        cut.set_order_stats();
        let mut fixed = Row {
            within_bound: Some(6),
            censored: vec![],
            values: vec![0.8; 6],
            ..cut.clone()
        };
        fixed.set_order_stats();
        let t = kernel_table(&[cut, fixed], &["6.12".into(), "6.12+fix".into()]);
        let l: Vec<&str> = t.lines().collect();
        assert_eq!(l.len(), 5, "{t}");
        assert!(
            l[1].starts_with("6.12  ") && l[1].contains("≥ 100.0 ms"),
            "{t}"
        );
        assert!(l[2].starts_with("6.12+fix") && l[2].contains("6/6"), "{t}");
        assert!(l[3].starts_with("censored: "), "{t}");
    }

    /// Several kernels of an audio rig: a row per kernel × setting × variant (the table
    /// used to have a header and no rows, combined.json `rows: []`).
    #[test]
    fn livefx_rows_across_kernels_make_one_table() {
        let sum: LivefxSummary = serde_json::from_str(
            r#"{"kind": "livefx", "rows": [
                {"setting": "NO_RT_PUSH_IPI", "variant": "pi", "backend": "clock", "period": 2048,
                 "rate": 48000, "cycles": 703, "xruns": 0, "deadline_misses": 35,
                 "injected": 0, "misses_not_injected": 35},
                {"setting": "RT_PUSH_IPI", "variant": "pi", "backend": "clock", "period": 2048,
                 "rate": 48000, "cycles": 703, "xruns": 0, "deadline_misses": 0}
            ]}"#,
        )
        .unwrap();
        let rows: Vec<LivefxKernelRow> = ["6.12.117-src", "6.12.117-src+0001-fix"]
            .iter()
            .flat_map(|k| {
                sum.rows.iter().map(|r| LivefxKernelRow {
                    kernel: k.to_string(),
                    row: r.clone(),
                })
            })
            .collect();
        let t = livefx_combined(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[0].starts_with("kernel") && lines[0].contains("per hour"),
            "{t}"
        );
        assert_eq!(lines.len(), 1 + 4 + 1, "{t}");
        // 35 misses in 703 × 2048 / 48000 s = 29.995 s: 4200.7 per hour.
        assert!(
            lines[1].starts_with("6.12.117-src ")
                && lines[1].contains(" 35 ")
                && lines[1].ends_with("4200.7"),
            "{t}"
        );
        assert!(
            lines[4].starts_with("6.12.117-src+0001-fix") && lines[4].ends_with("0.0"),
            "{t}"
        );
        let c = Combined {
            rig: "livefx-push-ipi".into(),
            livefx_rows: rows,
            ..Default::default()
        };
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["livefx_rows"].as_array().unwrap().len(), 4);
        assert_eq!(v["livefx_rows"][0]["kernel"], "6.12.117-src");
        assert_eq!(v["livefx_rows"][0]["deadline_misses"], 35);
    }
}
