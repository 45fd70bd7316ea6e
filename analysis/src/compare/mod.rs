//! `xrunrig compare A B [C ...]`: the same metrics across results directories (kernels,
//! settings), LKP style: value ± spread, % change against the first directory, a
//! significance test fit for small skewed samples, a verdict per metric in plain words,
//! a side-by-side plot, and exit code 1 when something regressed beyond the threshold.
//!
//! The steps, a file each: `load` (the directories, matched metric by metric), `sample`
//! (a metric's value and the test between two), `verdict`, `plots`, `write`.

mod load;
mod plots;
mod sample;
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

pub fn run(dirs: &[PathBuf], threshold: f64, out: &Path, redact: bool) -> Result<Outcome, String> {
    let dirs = load::load(dirs, redact)?;
    let metrics = load::metrics(&dirs.results);
    let v = verdict::judge(&metrics, &dirs.labels, threshold);
    std::fs::create_dir_all(out.join("plots"))
        .map_err(|e| format!("cannot create {}: {e}", out.join("plots").display()))?;
    let mut ctx = Ctx {
        dir: out.to_path_buf(),
        red: dirs.red.clone(),
        rig: dirs.results[0].rig.clone(),
        files: vec![],
    };
    let imgs = plots::plots(&metrics, &dirs, &mut ctx)?;
    let d = write::document(&dirs, &v, threshold, imgs);
    let (text, json) = write::write(&mut ctx, &d, &v, &dirs.labels[0], threshold)?;
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

/// The comparison, written into `out` (default: the first directory), not printed: the
/// caller prints its text or its JSON document (`xrunrig compare --json`).
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
    let out = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dirs[0].clone());
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    run(dirs, threshold, &out, redact)
}
