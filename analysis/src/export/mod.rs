//! Exports for other tools, behind one trait, `Export`: the CSV and cyclictest-style
//! files `xrunrig report` writes into a results directory's export/ (`csv.rs`), and the
//! documents `xrunrig export NAME DIR…` prints: KCIDB I/O JSON (`kcidb.rs`) and LAVA test
//! cases (`lava.rs`). `all()` lists them: the next export is a file here and a line
//! there.

pub mod csv;
pub mod figure;
pub mod kcidb;
pub mod lava;

use crate::kind;
use crate::load::Results;
use crate::out::Ctx;
use std::path::PathBuf;

/// Where an export writes.
pub enum Out<'a> {
    /// Into the results directory being reported on (`xrunrig report`), redacted as the
    /// report is.
    Dir(&'a mut Ctx),
    /// One document on a stream (`xrunrig export NAME`: standard output).
    Stream(&'a mut dyn std::io::Write),
}

impl Out<'_> {
    /// `text` as the file `name` of the results directory, or on the stream.
    pub fn write(&mut self, name: &str, text: &str) -> Result<(), String> {
        match self {
            Out::Dir(ctx) => ctx.write(name, text),
            Out::Stream(w) => w
                .write_all(text.as_bytes())
                .and_then(|()| w.flush())
                .map_err(|e| format!("cannot write {name}: {e}")),
        }
    }
}

pub trait Export {
    /// Its name (`xrunrig export NAME`).
    fn name(&self) -> &'static str;
    /// What it writes, in words.
    fn writes(&self) -> &'static str;
    /// `xrunrig report` writes it into the results directory (under export/).
    fn in_report(&self) -> bool {
        false
    }
    /// Refuses a directory it cannot export, naming it and what to do instead; checked
    /// for every directory before anything is written.
    fn accepts(&self, _res: &Results) -> Result<(), String> {
        Ok(())
    }
    /// Exports `res`, in the order given, into `out`.
    fn export(&self, res: &[Results], out: &mut Out) -> Result<(), String>;
}

/// The registration: every export, with its default options.
pub fn all() -> Vec<Box<dyn Export>> {
    vec![
        Box::new(Csv),
        Box::new(kcidb::Kcidb::default()),
        Box::new(lava::Lava),
    ]
}

/// The CSV export: each kind's files under export/ (`csv.rs`, below `kind/`: here, the
/// export that looks each directory's kind up).
pub struct Csv;

impl Export for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }
    fn writes(&self) -> &'static str {
        "CSV of samples, trials, events and cycles, and cyclictest-style histograms, \
         under the results directory's export/"
    }
    fn in_report(&self) -> bool {
        true
    }
    fn export(&self, res: &[Results], out: &mut Out) -> Result<(), String> {
        // Some files are streamed as they are made, straight into the directory.
        let Out::Dir(ctx) = out else {
            return Err(
                "the CSV export writes files into a results directory: `xrunrig report DIR`".into(),
            );
        };
        ctx.mkdir("export")?;
        for r in res {
            kind::of(r).csv(r, ctx)?;
        }
        Ok(())
    }
}

/// The results directories `dirs`, loaded in order, each accepted by `e`.
pub fn load(e: &dyn Export, dirs: &[PathBuf]) -> Result<Vec<Results>, String> {
    let mut out = Vec::with_capacity(dirs.len());
    for d in dirs {
        let res = kind::load(d)?;
        e.accepts(&res)?;
        out.push(res);
    }
    Ok(out)
}

/// `xrunrig export NAME DIR…`: `e`'s document for `dirs` on standard output; the exit
/// code.
pub fn main(e: &dyn Export, dirs: &[PathBuf]) -> Result<i32, String> {
    let res = load(e, dirs)?;
    e.export(&res, &mut Out::Stream(&mut std::io::stdout().lock()))?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_export_has_its_own_name_and_says_what_it_writes() {
        let all = all();
        let names: Vec<&str> = all.iter().map(|e| e.name()).collect();
        assert_eq!(names, ["csv", "kcidb", "lava"]);
        for (i, e) in all.iter().enumerate() {
            assert!(!names[..i].contains(&e.name()), "{} twice", e.name());
            assert!(!e.writes().is_empty(), "{}", e.name());
        }
        // `xrunrig report` writes only what belongs in a results directory.
        let in_report: Vec<&str> = all
            .iter()
            .filter(|e| e.in_report())
            .map(|e| e.name())
            .collect();
        assert_eq!(in_report, ["csv"]);
    }

    #[test]
    fn a_stream_export_writes_its_document_only() {
        let d = std::env::temp_dir().join(format!("analysis-export-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        crate::synth::trials::generate(&d).unwrap();
        let res = load(&lava::Lava, std::slice::from_ref(&d)).unwrap();
        let mut text = Vec::new();
        lava::Lava
            .export(&res, &mut Out::Stream(&mut text))
            .unwrap();
        let text = String::from_utf8(text).unwrap();
        let io = kcidb::io(&res, &kcidb::Options::default()).unwrap();
        assert_eq!(text.lines().count(), io.tests.len());
        assert!(text.lines().all(|l| !l.starts_with("xrunrig.")), "{text}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
