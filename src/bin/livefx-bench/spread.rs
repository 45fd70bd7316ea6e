//! `livefx-bench spread DIR`: the between-run spread of every metric over all the A/A
//! runs a `livefx-bench calibrate` left in DIR (aaNN-a1, aaNN-b3, ...), in the order they
//! ran: what `xrunrig calibrate` would keep had it made all of them, over the whole
//! session's span. The figures `analysis::judge::assumed` takes as the largest measured
//! come from here. Printed, not asserted.

use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// A `livefx-bench calibrate --out` directory.
    dir: PathBuf,
    /// Which runs: "aa" (the A/A pairs') or "ab-a" (the A/B pairs' undisturbed side).
    #[arg(long, default_value = "aa")]
    prefix: String,
}

pub fn main(a: &Args) -> i32 {
    let Ok(rd) = std::fs::read_dir(&a.dir) else {
        eprintln!("livefx-bench spread: cannot read {}", a.dir.display());
        return 2;
    };
    let mut dirs: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            n.starts_with(&a.prefix) && !n.contains("compare") && p.join("summary.json").is_file()
        })
        .collect();
    let mut runs = Vec::new();
    for d in &dirs {
        match analysis::kind::load(d) {
            Ok(r) => runs.push(r),
            Err(e) => eprintln!("livefx-bench spread: {}: {e}", d.display()),
        }
    }
    runs.sort_by(|x, y| x.run.started.cmp(&y.run.started));
    dirs.sort();
    let cal = match analysis::compare::calibration::measure(&runs, &[], "") {
        Ok(c) => c,
        Err(e) => {
            eprintln!("livefx-bench spread: {e}");
            return 2;
        }
    };
    println!(
        "{} runs from {} to {}",
        runs.len(),
        runs.first()
            .and_then(|r| r.run.started.clone())
            .unwrap_or_default(),
        runs.last()
            .and_then(|r| r.run.started.clone())
            .unwrap_or_default()
    );
    println!(
        "{:<40} {:>8} {:>8} {:>8} {:>10} {:>5}",
        "metric (scale)", "σ runs", "σ total", "σ within", "trial var", "df"
    );
    for m in &cal.metrics {
        println!(
            "{:<40} {:>8.3} {:>8.3} {:>8.3} {:>10} {:>5}",
            format!("{}/{} {} ({:?})", m.setting, m.variant, m.metric, m.scale),
            m.between.sqrt(),
            m.total.sqrt(),
            m.within.sqrt(),
            m.trial_var.map_or("-".into(), |v| format!("{v:.3}")),
            m.df
        );
    }
    // The largest difference between two identical runs a user would compare: each
    // A/A pair's first runs (aaNN-a1 against aaNN-b1), on each metric's scale.
    let by_name: std::collections::BTreeMap<String, &analysis::load::Results> = runs
        .iter()
        .map(|r| {
            (
                r.dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                r,
            )
        })
        .collect();
    let mut largest: std::collections::BTreeMap<String, (f64, String)> = Default::default();
    for (name, r) in &by_name {
        let Some(pair) = name.strip_suffix("-a1") else {
            continue;
        };
        let Some(b) = by_name.get(&format!("{pair}-b1")) else {
            continue;
        };
        let ys = |r: &analysis::load::Results| {
            analysis::compare::calibration::items(r)
                .into_iter()
                .filter_map(|(k, s, d, _)| {
                    analysis::judge::scale::run_y(s, &d, false)
                        .map(|y| (format!("{}/{} {} ({s:?})", k.0, k.1, k.2), y))
                })
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let (ya, yb) = (ys(r), ys(b));
        for (k, y) in &ya {
            if let Some(z) = yb.get(k) {
                let e = largest.entry(k.clone()).or_insert((0.0, String::new()));
                if (y - z).abs() > e.0 {
                    *e = ((y - z).abs(), pair.to_string());
                }
            }
        }
    }
    println!(
        "\nthe largest difference between a pair's first runs (ln), and the σ that puts it \
         at a 95 % interval's edge (|Δ| / (1.96 √2)):"
    );
    for (k, (d, pair)) in &largest {
        println!(
            "{k:<40} {d:>8.3} (×{:.1}, pair {pair})  σ {:.3}",
            d.exp(),
            d / (1.96 * 2f64.sqrt())
        );
    }
    0
}
