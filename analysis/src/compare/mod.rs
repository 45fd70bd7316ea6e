//! `xrunrig compare A B [C ...]`: the same metrics across runs of one experiment
//! (kernels, patches, machines), LKP style: value ± spread, % change against the first
//! directory, a test per metric over per-trial values (the trial, not the cycle, is the
//! unit of evidence) with Holm's correction for the number of metrics, a verdict per
//! metric in plain words, side-by-side plots, and exit code 1 when something regressed
//! beyond the threshold. Too few trials a side: no verdict, said so. Runs of different
//! rigs, settings or variants, and a run compared with itself, are refused.
//!
//! The steps, a file each: `load` (the directories, checked and matched metric by
//! metric), `sample` (a metric's per-trial values and the test between two), `verdict`,
//! `plots`, `write`. The files go into `--out` or a new directory beside the baseline,
//! never into a results directory.

pub(crate) mod load;
mod plots;
pub mod sample;
mod verdict;
mod write;

use crate::out::Ctx;
use std::path::{Path, PathBuf};

/// Significance level for calling a change real.
pub const ALPHA: f64 = 0.05;

pub struct Outcome {
    pub text: String,
    /// compare.json's document, as written.
    pub json: serde_json::Value,
    pub regressions: usize,
    pub improvements: usize,
}

pub fn run(
    paths: &[PathBuf],
    threshold: f64,
    out: Option<&Path>,
    redact: bool,
) -> Result<Outcome, String> {
    // Every refusal comes before anything is written.
    let dirs = load::load(paths, redact)?;
    let metrics = load::metrics(&dirs.results);
    let v = verdict::judge(&metrics, &dirs.labels, threshold);
    let out = out_dir(paths, out)?;
    let mut ctx = Ctx::new(&out, dirs.red.clone(), dirs.results[0].rig.clone())?;
    ctx.mkdir("plots")?;
    let imgs = plots::plots(&metrics, &dirs, &mut ctx)?;
    ctx.flush()?;
    let d = write::document(&dirs, &v, threshold, imgs);
    let (mut text, json) = write::write(&mut ctx, &d, &v, &dirs.labels[0], threshold)?;
    text += &format!("\ncomparison: {}\n", out.display());
    Ok(Outcome {
        text,
        json,
        regressions: v.regressions,
        improvements: v.improvements,
    })
}

pub fn main(
    dirs: &[PathBuf],
    threshold: f64,
    out: Option<&Path>,
    redact: bool,
) -> Result<i32, String> {
    let o = outcome(dirs, threshold, out, redact)?;
    print!("{}", o.text);
    Ok(o.exit_code())
}

impl Outcome {
    /// 1 when something regressed beyond the threshold, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.regressions > 0 { 1 } else { 0 }
    }
}

/// The comparison, written into `out` (default: a new directory beside the first),
/// not printed: the caller prints its text or its JSON document (`xrunrig compare
/// --json`).
pub fn outcome(
    dirs: &[PathBuf],
    threshold: f64,
    out: Option<&Path>,
    redact: bool,
) -> Result<Outcome, String> {
    if !(threshold.is_finite() && threshold >= 0.0) {
        return Err(format!(
            "--threshold {threshold}: give a percentage of 0 or more, e.g. 10"
        ));
    }
    run(dirs, threshold, out, redact)
}

/// Where the comparison's files go: `--out` (never one of the compared directories, nor
/// another results directory), else a new `compare-A-vs-B` beside the baseline, made
/// with one mkdir (`-2`, `-3`... when taken).
fn out_dir(dirs: &[PathBuf], out: Option<&Path>) -> Result<PathBuf, String> {
    let canon = |p: &Path| p.canonicalize().ok();
    if let Some(o) = out {
        if let Some(c) = canon(o)
            && let Some(d) = dirs.iter().find(|d| canon(d) == Some(c.clone()))
        {
            return Err(format!(
                "--out {} is one of the compared directories ({}): a comparison is not written \
                 into a run's results; give another --out, or none for a new directory",
                o.display(),
                d.display()
            ));
        }
        if o.join(results::SUMMARY_JSON).exists() {
            return Err(format!(
                "--out {} holds a run's results: give another --out, or none for a new directory",
                o.display()
            ));
        }
        std::fs::create_dir_all(o).map_err(|e| format!("cannot create {}: {e}", o.display()))?;
        return Ok(o.to_path_buf());
    }
    let name = |p: &PathBuf| {
        p.canonicalize()
            .ok()
            .and_then(|c| c.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "run".into())
    };
    let mut stem = format!("compare-{}-vs-{}", name(&dirs[0]), name(&dirs[1]));
    if dirs.len() > 2 {
        stem += &format!("-and-{}-more", dirs.len() - 2);
    }
    let stem = results::file_part(&stem);
    let parent = dirs[0]
        .canonicalize()
        .ok()
        .and_then(|c| c.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    for n in 1..10_000 {
        let cand = if n == 1 {
            parent.join(&stem)
        } else {
            parent.join(format!("{stem}-{n}"))
        };
        match std::fs::create_dir(&cand) {
            Ok(()) => return Ok(cand),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create {}: {e}", cand.display())),
        }
    }
    Err(format!(
        "cannot find a free name for {} in {}: give --out",
        stem,
        parent.display()
    ))
}
