//! Reading a results directory: run.json (provenance), summary.json, and the raw
//! samples, streamed. Tolerant of fields it does not know and of fields left null.
//! A bisection's directory has bisect.json instead of summary.json (`bisect.rs`).

pub mod bisect;
pub mod cycles;
pub mod events;
pub mod livefx;
pub mod trials;
pub mod watch;

use results::SummaryHead;
use results::run::{ReadError, RunDoc};
use serde_json::Value;
use std::any::Any;
use std::path::{Path, PathBuf};

pub use bisect::BisectData;
pub use livefx::LivefxData;
pub use trials::TrialsData;
pub use watch::WatchData;

pub struct Results {
    pub dir: PathBuf,
    /// The file that named its kind: summary.json, or a bisection's bisect.json.
    pub head: PathBuf,
    pub rig: String,
    /// run.json as written; empty (every field absent) when the file is missing.
    pub run: RunDoc,
    /// False when run.json was missing or unreadable.
    pub has_run: bool,
    /// The directory's kind (summary.json's `kind`, or a bisection's), as registered in
    /// `kind::KINDS`.
    pub kind: &'static str,
    /// The kind's data (a `TrialsData`, `LivefxData`, ...). `Any`, not the kind's trait:
    /// the trait names what the report, compare and the exports make of it, and they
    /// read `Results`; `kind::of()` gives the trait back.
    pub data: Box<dyn Any>,
    /// Problems found while reading (bad lines, truncated files), said in the report.
    pub warnings: Vec<String>,
}

impl Results {
    /// The kind's own data, when it is a `T` (tests look inside a watch this way).
    pub fn data<T: Any>(&self) -> Option<&T> {
        self.data.downcast_ref()
    }
}

/// A results directory checked and its summary.json and run.json read: what a kind's
/// loader reads (`kind::load()` picks the loader by `kind`).
pub struct Input {
    pub dir: PathBuf,
    /// The file that says what the directory holds and so names its kind: summary.json,
    /// or a bisection's bisect.json.
    pub head: PathBuf,
    /// That file's JSON.
    pub summary: Value,
    /// run.json as written; empty (every field absent) when the file is missing.
    pub run: RunDoc,
    pub has_run: bool,
    /// The rig summary.json names, else run.json's, else "unknown rig".
    pub rig: String,
    /// summary.json's `kind` (trials when it has none), or bisect.json's.
    pub kind: String,
}

/// Each item once, in the order first seen (the order the run wrote them).
pub(crate) fn first_seen<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for x in items {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// Streams a JSON-lines file, calling `f` with each line that reads as a `T` (blank
/// lines skipped); the number of lines that do not.
pub(crate) fn each_line<T: serde::de::DeserializeOwned>(
    path: &Path,
    mut f: impl FnMut(T),
) -> Result<usize, String> {
    use std::io::BufRead;
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut bad = 0;
    let mut r = std::io::BufReader::with_capacity(1 << 16, file);
    let mut line = String::new();
    loop {
        line.clear();
        let n = r
            .read_line(&mut line)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<T>(&line) {
            Ok(e) => f(e),
            Err(_) => bad += 1,
        }
    }
    Ok(bad)
}

pub(crate) fn read_value(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not valid JSON: {e}", path.display()))
}

/// A bisection's directory: bisect.json and no summary.json of its own (each of its
/// runs under runs/ has one). The one place that tells it from a run's or a watch's,
/// whose summary.json names their kind.
pub fn is_bisection(dir: &Path) -> bool {
    !dir.join(results::SUMMARY_JSON).exists() && dir.join(results::bisect::BISECT_JSON).is_file()
}

/// The fields of `summary` (read from `head`) that its kind cannot be read without:
/// one absent or null is refused, naming it, rather than read as empty.
pub fn require(summary: &Value, head: &Path, fields: &[&str]) -> Result<(), String> {
    let missing: Vec<&str> = fields
        .iter()
        .copied()
        .filter(|f| summary.get(f).is_none_or(Value::is_null))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}: no {} field, which a results directory of this kind must have: it is damaged or \
         was not written by xrunrig; run again",
        head.display(),
        missing
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Checks `dir` (a directory, complete, of a format this build reads) and reads its
/// summary.json and run.json (a bisection's: bisect.json, `bisect::open()`); problems
/// that do not stop the reading go into `warnings`.
pub fn open(dir: &Path, warnings: &mut Vec<String>) -> Result<Input, String> {
    let summary_path = dir.join(results::SUMMARY_JSON);
    if !dir.is_dir() {
        return Err(format!(
            "{} is not a directory; give the results directory that `xrunrig run` wrote",
            dir.display()
        ));
    }
    // The engine removes INCOMPLETE last: a directory that has it is from a run that
    // was killed or could not write its files, and its numbers are not a result.
    if dir.join(results::INCOMPLETE).exists() {
        return Err(format!(
            "{} is marked {} (the run that wrote it was killed or failed before it finished); \
             its samples hold the trials that finished, but it is not a complete result: run again",
            dir.display(),
            results::INCOMPLETE
        ));
    }
    if is_bisection(dir) {
        return bisect::open(dir, warnings);
    }
    let summary = read_value(&summary_path).map_err(|e| {
        format!(
            "{e}; a results directory holds summary.json, run.json and samples (run `xrunrig \
             run` first), a bisection's bisect.json"
        )
    })?;
    let head: SummaryHead = serde_json::from_value(summary.clone())
        .map_err(|e| format!("{}: {e}", summary_path.display()))?;
    results::check_format(head.format, &summary_path.display().to_string())?;
    let run = match std::fs::read_to_string(dir.join(results::RUN_JSON)) {
        Ok(text) => match RunDoc::from_json(&text) {
            Ok(r) => Some(r),
            // A newer format is refused, not read as if it were this one.
            Err(ReadError::NewerFormat(e)) => {
                return Err(format!("{}: {e}", dir.display()));
            }
            Err(_) => None,
        },
        Err(_) => None,
    };
    if run.is_none() {
        warnings.push("run.json is missing or unreadable: kernel and settings unknown".into());
    }
    let has_run = run.is_some();
    let run = run.unwrap_or_default();
    let rig = head
        .rig
        .clone()
        .or_else(|| run.rig.as_ref().and_then(|r| r.name.clone()))
        .unwrap_or_else(|| "unknown rig".into());
    Ok(Input {
        dir: dir.to_path_buf(),
        kind: head.kind.unwrap_or_else(|| results::KIND_TRIALS.into()),
        head: summary_path,
        summary,
        run,
        has_run,
        rig,
    })
}
