//! What a run leaves behind: the results directory (summary.json, samples.jsonl,
//! run.json), the printed table and the progress lines.

pub mod provenance;
pub mod summary;
pub mod table;

use std::path::{Path, PathBuf};

/// `results/<rig>-<UTC time>` unless the user named one.
pub fn results_dir(rig: &str, out: Option<&Path>) -> PathBuf {
    match out {
        Some(p) => p.to_path_buf(),
        None => {
            let (_, stamp) = crate::sys::utc_now();
            // Path-safe whatever the caller passes (the rig parser already refuses bad names).
            let rig = crate::rig::limits::path_safe(rig);
            PathBuf::from("results").join(format!("{rig}-{stamp}"))
        }
    }
}

/// Creates the directory; refuses one that already holds results, so nothing is lost.
pub fn create_results_dir(dir: &Path) -> Result<(), String> {
    if dir.join(results::SUMMARY_JSON).exists() || dir.join(results::RUN_JSON).exists() {
        return Err(format!(
            "{} already holds results; choose another --out (nothing was overwritten)",
            dir.display()
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

pub fn write_json<T: serde::Serialize>(path: &Path, v: &T) -> Result<(), String> {
    let text = serde_json::to_string_pretty(v).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}
