//! Reading a results directory: run.json (provenance), summary.json, and the raw
//! samples, streamed. Tolerant of fields it does not know and of fields left null.

pub mod cycles;
pub mod events;
pub mod json;
pub mod livefx;
pub mod trials;

use serde_json::Value;
use std::path::{Path, PathBuf};

pub use livefx::LivefxData;
pub use trials::TrialsData;

pub enum Kind {
    Trials(TrialsData),
    Livefx(Box<LivefxData>),
}

pub struct Results {
    pub dir: PathBuf,
    pub rig: String,
    /// run.json as written; Null when the file is missing.
    pub run: Value,
    pub kind: Kind,
    /// Problems found while reading (bad lines, truncated files), said in the report.
    pub warnings: Vec<String>,
}

impl Results {
    /// Settings in the order the run swept them.
    pub fn settings(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let keys: Vec<(String, String)> = match &self.kind {
            Kind::Trials(t) => t.keys(),
            Kind::Livefx(l) => l.keys(),
        };
        for (s, _) in keys {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    pub fn variants(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let keys: Vec<(String, String)> = match &self.kind {
            Kind::Trials(t) => t.keys(),
            Kind::Livefx(l) => l.keys(),
        };
        for (_, v) in keys {
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }
}

pub fn load(dir: &Path) -> Result<Results, String> {
    let summary_path = dir.join("summary.json");
    if !dir.is_dir() {
        return Err(format!(
            "{} is not a directory; give the results directory that `xrunrig run` wrote",
            dir.display()
        ));
    }
    let summary = json::read_value(&summary_path).map_err(|e| {
        format!("{e}; a results directory holds summary.json, run.json and samples (run `xrunrig run` first)")
    })?;
    let run = match json::read_value(&dir.join("run.json")) {
        Ok(v) => v,
        Err(_) => Value::Null,
    };
    let mut warnings = Vec::new();
    if run.is_null() {
        warnings.push("run.json is missing or unreadable: kernel and settings unknown".into());
    }
    let rig = json::str_at(&summary, &["rig"])
        .or_else(|| json::str_at(&run, &["rig", "name"]))
        .unwrap_or_else(|| "unknown rig".into());
    let kind_name = json::str_at(&summary, &["kind"]).unwrap_or_else(|| "trials".into());
    let kind = match kind_name.as_str() {
        "trials" => Kind::Trials(trials::load(dir, &summary, &mut warnings)?),
        "livefx" => Kind::Livefx(Box::new(livefx::load(dir, &summary, &mut warnings)?)),
        other => {
            return Err(format!(
                "{}: unknown kind {other:?} (this xrunrig reads \"trials\" and \"livefx\")",
                summary_path.display()
            ));
        }
    };
    Ok(Results {
        dir: dir.to_path_buf(),
        rig,
        run,
        kind,
        warnings,
    })
}
