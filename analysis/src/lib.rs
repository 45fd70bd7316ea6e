//! Statistics, reports and plots over xrunrig results directories.
//!
//! `report_main` turns one results directory into report.txt (80 columns, for a kernel
//! list), report.md, a self-contained report.html, report.json, PNG and SVG plots and
//! CSV / cyclictest-style exports. `compare_main` sets results directories side by side
//! with a significance test per metric and gates on regressions. The crate reads the
//! results format only; it does not depend on the xrunrig crate.

pub mod bisect;
pub mod cache;
pub mod compare;
pub mod dist;
pub mod doc;
pub mod export;
pub mod judge;
pub mod kind;
pub mod load;
pub mod out;
pub mod plot;
pub mod redact;
pub mod report;
pub mod sample;
pub mod sequential;
pub mod stats;
pub mod synth;

use std::path::{Path, PathBuf};

/// `xrunrig report DIR`: returns the process exit code.
pub fn report_main(dir: &Path, out: Option<&Path>, redact: bool) -> Result<i32, String> {
    report::main(dir, out, redact)
}

/// `xrunrig compare A B ...` with one run a side: returns the process exit code: 0 the
/// same or better, 1 worse, 4 inconclusive (`compare::Outcome::exit_code`).
pub fn compare_main(dirs: &[PathBuf], threshold: f64, out: Option<&Path>) -> Result<i32, String> {
    compare::main(&compare::Request::one_run_a_side(dirs, threshold, out))
}

/// The comparison a request asks for, printing nothing: the text, compare.json's
/// document and the exit code, for the caller to route (`xrunrig compare --json`).
pub fn compare_outcome(r: &compare::Request) -> Result<compare::Outcome, String> {
    compare::outcome(r)
}
