//! Statistics, reports and plots over xrunrig results directories. (Being filled in.)

use std::path::{Path, PathBuf};

/// `xrunrig report DIR`: returns the process exit code.
pub fn report_main(_dir: &Path, _redact: bool) -> Result<i32, String> {
    Err("not implemented yet".into())
}

/// `xrunrig compare A B ...`: returns the process exit code.
pub fn compare_main(
    _dirs: &[PathBuf],
    _threshold: f64,
    _out: Option<&Path>,
    _redact: bool,
) -> Result<i32, String> {
    Err("not implemented yet".into())
}
