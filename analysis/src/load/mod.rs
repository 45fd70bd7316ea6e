//! Reading a results directory: run.json (provenance), summary.json, and the raw
//! samples, streamed. Tolerant of fields it does not know and of fields left null.

pub mod cycles;
pub mod events;
pub mod livefx;
pub mod trials;
pub mod watch;

use crate::kind::{self, ResultKind};
use results::SummaryHead;
use results::run::{ReadError, RunDoc};
use std::path::{Path, PathBuf};

pub use livefx::LivefxData;
pub use trials::TrialsData;
pub use watch::WatchData;

pub struct Results {
    pub dir: PathBuf,
    pub rig: String,
    /// run.json as written; empty (every field absent) when the file is missing.
    pub run: RunDoc,
    /// False when run.json was missing or unreadable.
    pub has_run: bool,
    /// The kind's data (summary.json's `kind`), through what every kind answers.
    pub kind: Box<dyn ResultKind>,
    /// Problems found while reading (bad lines, truncated files), said in the report.
    pub warnings: Vec<String>,
}

impl Results {
    /// The kind's own data, when it is a `T` (tests look inside a watch this way).
    pub fn data<T: ResultKind>(&self) -> Option<&T> {
        (self.kind.as_ref() as &dyn std::any::Any).downcast_ref()
    }

    /// Settings in the order the run swept them.
    pub fn settings(&self) -> Vec<String> {
        first_seen(self.kind.keys().into_iter().map(|k| k.0))
    }

    pub fn variants(&self) -> Vec<String> {
        first_seen(self.kind.keys().into_iter().map(|k| k.1))
    }
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

fn read_value(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not valid JSON: {e}", path.display()))
}

pub fn load(dir: &Path) -> Result<Results, String> {
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
    let summary = read_value(&summary_path).map_err(|e| {
        format!("{e}; a results directory holds summary.json, run.json and samples (run `xrunrig run` first)")
    })?;
    let head: SummaryHead = serde_json::from_value(summary.clone())
        .map_err(|e| format!("{}: {e}", summary_path.display()))?;
    results::check_format(head.format, &summary_path.display().to_string())?;
    let mut warnings = Vec::new();
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
    let mut rig = head
        .rig
        .clone()
        .or_else(|| run.rig.as_ref().and_then(|r| r.name.clone()))
        .unwrap_or_else(|| "unknown rig".into());
    let kind_name = head.kind.as_deref().unwrap_or(results::KIND_TRIALS);
    let input = kind::Input {
        dir,
        summary: &summary,
        run: &run,
    };
    let kind = kind::load(kind_name, &input, &mut warnings)?;
    // No rig ran (a watch): the report is named for what was watched.
    if let Some(t) = kind.title() {
        rig = t;
    }
    Ok(Results {
        dir: dir.to_path_buf(),
        rig,
        run,
        has_run,
        kind,
        warnings,
    })
}
