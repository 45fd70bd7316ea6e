//! Statistics, reports and plots over xrunrig results directories.
//!
//! `report_main` turns one results directory into report.txt (80 columns, for a kernel
//! list), report.md, a self-contained report.html, report.json, PNG and SVG plots and
//! CSV / cyclictest-style exports. `compare_main` sets results directories side by side
//! with a significance test per metric and gates on regressions. The crate reads the
//! results format only; it does not depend on the xrunrig crate.

pub mod bisect;
pub mod compare;
pub mod dist;
pub mod doc;
pub mod export;
pub mod kind;
pub mod load;
pub mod out;
pub mod plot;
pub mod redact;
pub mod report;
pub mod sequential;
pub mod stats;
pub mod synth;

use std::path::{Path, PathBuf};

/// `xrunrig report DIR`: returns the process exit code.
pub fn report_main(dir: &Path, redact: bool) -> Result<i32, String> {
    report::main(dir, redact)
}

/// `xrunrig compare A B ...`: returns the process exit code: 0 when nothing regressed
/// beyond `threshold` percent with significance, 1 when something did.
pub fn compare_main(
    dirs: &[PathBuf],
    threshold: f64,
    out: Option<&Path>,
    redact: bool,
) -> Result<i32, String> {
    compare::main(dirs, threshold, out, redact)
}

/// As `compare_main`, printing nothing: the text, compare.json's document and the exit
/// code, for the caller to route (`xrunrig compare --json`).
pub fn compare_outcome(
    dirs: &[PathBuf],
    threshold: f64,
    out: Option<&Path>,
    redact: bool,
) -> Result<compare::Outcome, String> {
    compare::outcome(dirs, threshold, out, redact)
}
