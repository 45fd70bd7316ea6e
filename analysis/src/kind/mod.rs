//! The kinds of results directory (summary.json's `kind`): what each contributes to a
//! report, an answer, a comparison and the KCIDB and LAVA exports, behind one trait,
//! `ResultKind`, implemented once per kind in this folder. `KINDS` is the one place a
//! kind's name meets its implementation: a new kind is a file here and a line there.

pub mod livefx;
pub mod trials;
pub mod watch;

use crate::compare::sample::{Key, Sample};
use crate::export::kcidb;
use crate::load::Results;
use crate::out::Ctx;
use crate::report::Part;
use crate::report::answer::Answer;
use results::run::RunDoc;
use serde_json::Value;
use std::any::Any;
use std::path::Path;

/// One kind's data, loaded. `Any` lets a kind compare itself with another directory of
/// the same kind (`differs()`).
pub trait ResultKind: Any {
    /// summary.json's `kind` (the name it is registered under in `KINDS`).
    fn name(&self) -> &'static str;

    /// (setting, variant) of each summary row, in the order the run wrote them.
    fn keys(&self) -> Vec<(String, String)>;

    /// What the report is called when no rig ran (a watch names what it watched).
    fn title(&self) -> Option<String> {
        None
    }

    /// The verdict: one line per setting and variant (and comparison), and the
    /// conclusion. report.txt's Verdict, the KCIDB log excerpt and the run's answer.
    fn verdict(&self) -> (Vec<String>, String);

    /// The answer `xrunrig run` ends with: the verdict, by default.
    fn answer(&self) -> Answer {
        let (lines, one_line) = self.verdict();
        Answer { lines, one_line }
    }

    /// This kind's part of the report; plots are written through `ctx`.
    fn part(&self, res: &Results, ctx: &mut Ctx) -> Result<Part, String>;

    /// Its files of the CSV export (`export::csv`), under export/ in the results
    /// directory.
    fn csv(&self, res: &Results, ctx: &mut Ctx) -> Result<(), String>;

    /// A rig ran: its figures can be set side by side (`xrunrig compare`) and exported
    /// as tests (KCIDB, LAVA). A watch watched someone else's session: refused there.
    fn rig_ran(&self) -> bool {
        true
    }

    /// Every metric, one value per trial, for `xrunrig compare`.
    fn samples(&self) -> Vec<(Key, Sample)>;

    /// Every figure exported as a KCIDB test (and a LAVA test case).
    fn kcidb_figures(&self) -> Vec<kcidb::Figure>;

    /// Why `other` (`xrunrig compare`'s `label`: B, C, ...), of the same kind, rig,
    /// settings and variants as this baseline (A), is still not a run of the same
    /// experiment; None when it is.
    fn differs(&self, _other: &dyn ResultKind, _label: &str) -> Option<String> {
        None
    }
}

/// What a kind's loader reads: the directory, its summary.json and run.json (empty when
/// missing). Problems go into the warnings the report lists.
pub struct Input<'a> {
    pub dir: &'a Path,
    pub summary: &'a Value,
    pub run: &'a RunDoc,
}

pub type Loader = fn(&Input, &mut Vec<String>) -> Result<Box<dyn ResultKind>, String>;

/// The registration: summary.json's `kind` and the loader of that kind's data.
pub const KINDS: &[(&str, Loader)] = &[
    (results::KIND_TRIALS, trials::load),
    (results::KIND_LIVEFX, livefx::load),
    (results::watch::KIND_WATCH, watch::load),
];

/// Loads the data of the kind named `name`; an unknown name is refused naming the kinds
/// this build reads.
pub fn load(
    name: &str,
    input: &Input,
    warnings: &mut Vec<String>,
) -> Result<Box<dyn ResultKind>, String> {
    match KINDS.iter().find(|k| k.0 == name) {
        Some((_, loader)) => loader(input, warnings),
        None => Err(format!(
            "{}: unknown kind {name:?} (this xrunrig reads {})",
            input.dir.join(results::SUMMARY_JSON).display(),
            known()
        )),
    }
}

/// "\"trials\", \"livefx\" and \"watch\"".
fn known() -> String {
    let names: Vec<String> = KINDS.iter().map(|k| format!("{:?}", k.0)).collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("analysis-kind-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn every_kind_is_registered_once() {
        for (i, (name, _)) in KINDS.iter().enumerate() {
            assert!(
                KINDS[..i].iter().all(|k| k.0 != *name),
                "{name} registered twice"
            );
        }
    }

    #[test]
    fn each_kind_loads_as_the_kind_it_is_registered_under() {
        let dirs = [
            (results::KIND_TRIALS, scratch("trials")),
            (results::KIND_LIVEFX, scratch("livefx")),
            (results::watch::KIND_WATCH, scratch("watch")),
        ];
        crate::synth::trials::generate(&dirs[0].1).unwrap();
        crate::synth::livefx::generate(&dirs[1].1, &crate::synth::livefx::Spec::ab(2_000, 1))
            .unwrap();
        crate::synth::watch::generate(&dirs[2].1).unwrap();
        assert_eq!(dirs.len(), KINDS.len(), "a synthetic directory per kind");
        for (name, d) in &dirs {
            let res = crate::load::load(d).unwrap();
            assert_eq!(res.kind.name(), *name);
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn an_unknown_kind_is_refused_naming_the_known_ones() {
        let run = RunDoc::default();
        let input = Input {
            dir: Path::new("/r"),
            summary: &Value::Null,
            run: &run,
        };
        let e = load("weird", &input, &mut vec![]).err().unwrap();
        assert_eq!(
            e,
            "/r/summary.json: unknown kind \"weird\" (this xrunrig reads \"trials\", \
             \"livefx\" and \"watch\")"
        );
    }
}
