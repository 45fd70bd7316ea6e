//! A bisection's directory (`xrunrig bisect`): bisect.json (`results::bisect::BisectDoc`:
//! the inputs, the rule, the ends, every step, the first bad commit and its
//! confirmation), bisect.log, and under runs/ an ordinary results directory per batch.
//! It has no summary.json or run.json of its own: the bisection's provenance (host,
//! guest, setting in force) is its first run's run.json, the same for every step but
//! the kernel, which each step's `build` says.

use super::{Input, read_value};
use results::bisect::{BISECT_JSON, BisectDoc, BisectHead, KIND_BISECT, Outcome, Step};
use results::run::{ReadError, RunDoc};
use std::path::{Component, Path, PathBuf};

/// A bisection as loaded.
#[derive(Debug, Clone)]
pub struct BisectData {
    pub doc: BisectDoc,
    /// The rig's name (as its runs' run.json give it, else the rig file's stem).
    pub rig: String,
}

impl BisectData {
    /// The ends, the steps in the order tested, then the confirmation.
    pub fn tested(&self) -> impl Iterator<Item = &Step> {
        let d = &self.doc;
        d.ends.iter().chain(&d.steps).chain(d.confirmation.as_ref())
    }

    /// The ends were measured and differ, so each end stands for good or bad; false
    /// when they did not differ or were not measured to the end.
    pub fn ends_differ(&self) -> bool {
        self.doc.overall_alpha > 0.0
            && self.doc.ends.len() == 2
            && !matches!(self.doc.outcome, Outcome::EndsDoNotDiffer { .. })
    }

    /// Every step has its place in history (bisections recorded before `position` have
    /// none; the ends are known without it).
    pub fn positions_known(&self) -> bool {
        self.doc
            .steps
            .iter()
            .chain(self.doc.confirmation.as_ref())
            .all(|s| s.position.is_some())
    }

    /// A step's place in history: recorded, or an end's (0 and `range`).
    pub fn position(&self, s: &Step) -> Option<u32> {
        use results::bisect::Role;
        s.position.or(match s.role {
            Role::GoodEnd => Some(0),
            Role::BadEnd | Role::Revert => Some(self.doc.range),
            Role::Step => None,
        })
    }
}

/// `dir`'s run directory `rel` (a path bisect.json gives), when it stays under `dir`: a
/// record copied from elsewhere must not make the report read outside it.
pub fn run_dir(dir: &Path, rel: &str) -> Option<PathBuf> {
    let p = Path::new(rel);
    p.components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| dir.join(p))
}

/// Reads bisect.json's head (its format refused when newer than this build reads) and
/// the record, and the first run's run.json as the bisection's provenance.
pub(super) fn open(dir: &Path, warnings: &mut Vec<String>) -> Result<Input, String> {
    let path = dir.join(BISECT_JSON);
    let value = read_value(&path)?;
    let head: BisectHead =
        serde_json::from_value(value.clone()).map_err(|e| format!("{}: {e}", path.display()))?;
    results::check_format(head.format_version, &path.display().to_string())?;
    let doc = parse(&value, &path)?;
    let mut missing = Vec::new();
    let mut run = None;
    // The good end's first boot first: it ran before any other.
    let every = doc
        .ends
        .iter()
        .chain(&doc.steps)
        .chain(doc.confirmation.as_ref());
    for rel in every.flat_map(|s| &s.runs) {
        let Some(d) = run_dir(dir, rel).filter(|d| d.is_dir()) else {
            missing.push(rel.clone());
            continue;
        };
        if run.is_some() {
            continue;
        }
        match std::fs::read_to_string(d.join(results::RUN_JSON)).map(|t| RunDoc::from_json(&t)) {
            Ok(Ok(r)) => run = Some(r),
            Ok(Err(ReadError::NewerFormat(e))) => return Err(format!("{}: {e}", d.display())),
            _ => {}
        }
    }
    if !missing.is_empty() {
        warnings.push(format!(
            "{} of the bisection's runs listed in bisect.json are missing (copied without \
             runs/?): {}",
            missing.len(),
            missing.join(", ")
        ));
    }
    let measured = doc
        .ends
        .iter()
        .chain(&doc.steps)
        .any(|s| !s.runs.is_empty());
    if run.is_none() && measured {
        warnings.push(
            "no run of the bisection has a readable run.json: the machine and the guest are \
             unknown"
                .into(),
        );
    }
    let has_run = run.is_some();
    let run = run.unwrap_or_default();
    let rig = run
        .rig
        .as_ref()
        .and_then(|r| r.name.clone())
        .or_else(|| {
            Path::new(&doc.inputs.rig)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        })
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "unknown rig".into());
    Ok(Input {
        dir: dir.to_path_buf(),
        head: path,
        summary: value,
        run,
        has_run,
        rig,
        kind: head.kind.unwrap_or_else(|| KIND_BISECT.into()),
    })
}

fn parse(value: &serde_json::Value, path: &Path) -> Result<BisectDoc, String> {
    serde_json::from_value(value.clone())
        .map_err(|e| format!("{}: {e} (not a bisection's record)", path.display()))
}

/// The bisection `open()` read.
pub fn load(i: &Input) -> Result<BisectData, String> {
    Ok(BisectData {
        doc: parse(&i.summary, &i.head)?,
        rig: i.rig.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_paths_stay_inside() {
        let d = Path::new("/r");
        assert_eq!(
            run_dir(d, "runs/good-b1"),
            Some(PathBuf::from("/r/runs/good-b1"))
        );
        for bad in ["../x", "/etc", "runs/../../x", "./runs/a"] {
            assert_eq!(run_dir(d, bad), None, "{bad}");
        }
    }
}
