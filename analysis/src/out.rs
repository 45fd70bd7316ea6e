//! Where a report's or a comparison's files go: plots and texts written into one
//! directory, every text through the redactor, each file listed as written. Below both
//! `report` and `export` (and `compare`), so none of them reaches back into another.

use crate::plot::{self, Plot};
use crate::redact::Redactor;
use std::path::PathBuf;

/// The output directory and what has been written into it.
pub struct Ctx {
    pub dir: PathBuf,
    pub red: Redactor,
    pub rig: String,
    /// Files written, relative to `dir`.
    pub files: Vec<String>,
}

impl Ctx {
    pub fn save(&mut self, p: &impl Plot, rel: &str) -> Result<(), String> {
        plot::save(p, &self.dir.join(rel), &self.red)?;
        self.files.push(format!("{rel}.png"));
        self.files.push(format!("{rel}.svg"));
        Ok(())
    }
    pub fn write(&mut self, rel: &str, text: &str) -> Result<(), String> {
        let p = self.dir.join(rel);
        std::fs::write(&p, self.red.apply(text))
            .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        self.files.push(rel.to_string());
        Ok(())
    }
}
