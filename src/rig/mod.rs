//! Rig files: workloads as data. `load` parses and validates one, `[livefx]` and
//! `[instruments]` included, naming file, line and column for every problem found; the
//! rest of the program uses the typed `Rig` and never reads the rig text again.

pub mod backend;
pub mod instruments;
pub mod limits;
pub mod livefx;
pub mod model;
pub mod plan;
pub mod problem;
pub mod units;
pub mod validate;

pub use plan::*;

use std::ops::Range;
use std::path::Path;

/// Every problem found in one file, each with its position: one `file:line:col: what`
/// line each.
#[derive(Debug, thiserror::Error)]
#[error("{}", self.lines())]
pub struct RigError {
    pub file: String,
    pub problems: Vec<(usize, usize, String)>,
}

impl RigError {
    fn lines(&self) -> String {
        self.problems
            .iter()
            .map(|(line, col, msg)| format!("{}:{line}:{col}: {msg}", self.file))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let off = offset.min(text.len());
    let before = &text[..off];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(off, |p| off - p - 1) + 1;
    (line, col)
}

fn positioned(file: &str, text: &str, items: Vec<(Range<usize>, String)>) -> RigError {
    RigError {
        file: file.to_string(),
        problems: items
            .into_iter()
            .map(|(span, msg)| {
                let (l, c) = line_col(text, span.start);
                (l, c, msg)
            })
            .collect(),
    }
}

/// Parses and validates rig text; `path` names it in messages.
pub fn parse(path: &Path, text: &str) -> Result<Rig, RigError> {
    let file = path.display().to_string();
    let parsed: model::RigFile = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let msg = e.message().trim().replace('\n', " ");
        positioned(&file, text, vec![(span, msg)])
    })?;
    let mut ck = validate::Checker::new(&parsed);
    match validate::compile(&mut ck, path, text) {
        Some(r) => Ok(r),
        None => Err(positioned(
            &file,
            text,
            ck.problems.into_iter().map(|p| (p.span, p.msg)).collect(),
        )),
    }
}

/// Reads, parses and validates a rig file.
pub fn load(path: &Path) -> Result<Rig, RigError> {
    let text = limits::read_capped(path, "rig").map_err(|e| RigError {
        file: path.display().to_string(),
        problems: vec![(1, 1, e)],
    })?;
    parse(path, &text)
}

#[cfg(test)]
mod tests;
