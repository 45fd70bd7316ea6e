//! The kinds of results directory (summary.json's `kind`, or a bisection's, told by its
//! bisect.json: `load::is_bisection()`): what each contributes to a report, an answer, a
//! comparison and the KCIDB and LAVA exports, behind one trait, `ResultKind`,
//! implemented once per kind in this folder. `KINDS` is the one place a kind's name
//! meets its implementation: a new kind is a file here and a line there.

pub mod bisect;
pub mod livefx;
pub mod trials;
pub mod watch;

use crate::export::figure::Figure;
use crate::load::{self, BisectData, Input, LivefxData, Results, TrialsData, WatchData};
use crate::out::Ctx;
use crate::report::part::{Answer, Part};
use crate::sample::{Key, Sample};
use std::any::Any;
use std::path::Path;

// Layering: what a kind does with its data (report/, compare/sample.rs, export/csv.rs,
// export/figure.rs) and `load::Results` sit below this folder and do not know the trait;
// what looks a directory's kind up and calls it (`load()`, `of()` and their callers:
// report::build, answer, compare, the exports) sits here or above.

/// One kind's data, loaded. `Any` lets a kind compare itself with another directory of
/// the same kind (`differs()`), and `Results` hold it.
pub trait ResultKind: Any {
    /// Reads the kind's data from the directory `load::open()` read; problems that do not
    /// stop the reading go into `warnings` (the report lists them).
    fn load(input: &Input, warnings: &mut Vec<String>) -> Result<Self, String>
    where
        Self: Sized;

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

    /// A rig ran: its figures can be exported as tests (KCIDB, LAVA). A watch watched
    /// someone else's session: refused there.
    fn rig_ran(&self) -> bool {
        true
    }

    /// Why `xrunrig compare` does not set the directory `dir` beside others, and what to
    /// do instead; None when it does (runs of one experiment).
    fn not_compared(&self, _dir: &Path) -> Option<String> {
        None
    }

    /// Every metric, one value per trial, for `xrunrig compare`.
    fn samples(&self) -> Vec<(Key, Sample)>;

    /// Every figure exported as a KCIDB test (and a LAVA test case).
    fn kcidb_figures(&self) -> Vec<Figure>;

    /// Why `other` (`xrunrig compare`'s `label`: B, C, ...), of the same kind, rig,
    /// settings and variants as this baseline (A), is still not a run of the same
    /// experiment; None when it is.
    fn differs(&self, _other: &dyn ResultKind, _label: &str) -> Option<String> {
        None
    }
}

/// A kind's loader, its data as `Results` hold it.
pub type Loader = fn(&Input, &mut Vec<String>) -> Result<Box<dyn Any>, String>;

/// A kind as registered: summary.json's `kind`, its loader, and how its data (held by
/// `Results` as `Any`) is seen as a `ResultKind` again.
pub struct Kind {
    pub name: &'static str,
    load: Loader,
    view: fn(&dyn Any) -> Option<&dyn ResultKind>,
}

impl Kind {
    /// `T` under `name`: its loader and its view are made from the one type, so the data
    /// a kind loads is always the data it views.
    const fn of<T: ResultKind>(name: &'static str) -> Kind {
        Kind {
            name,
            load: load_as::<T>,
            view: view_as::<T>,
        }
    }
}

fn load_as<T: ResultKind>(i: &Input, warnings: &mut Vec<String>) -> Result<Box<dyn Any>, String> {
    Ok(Box::new(T::load(i, warnings)?))
}

fn view_as<T: ResultKind>(data: &dyn Any) -> Option<&dyn ResultKind> {
    data.downcast_ref::<T>().map(|t| t as &dyn ResultKind)
}

/// The registration: a directory's kind (summary.json's `kind`; bisect.json's for a
/// bisection) and the type that implements it.
pub const KINDS: &[Kind] = &[
    Kind::of::<TrialsData>(results::KIND_TRIALS),
    Kind::of::<LivefxData>(results::KIND_LIVEFX),
    Kind::of::<WatchData>(results::watch::KIND_WATCH),
    Kind::of::<BisectData>(results::bisect::KIND_BISECT),
];

/// Reads the results directory `dir`: `load::open()`, then the loader of its kind.
pub fn load(dir: &Path) -> Result<Results, String> {
    let mut warnings = Vec::new();
    let input = load::open(dir, &mut warnings)?;
    let kind = find(&input.kind, &input.head)?;
    let data = (kind.load)(&input, &mut warnings)?;
    // No rig ran (a watch): the report is named for what was watched.
    let title = (kind.view)(data.as_ref()).and_then(|k| k.title());
    Ok(Results {
        dir: input.dir,
        head: input.head,
        rig: title.unwrap_or(input.rig),
        run: input.run,
        has_run: input.has_run,
        kind: kind.name,
        data,
        warnings,
    })
}

/// What `res`'s kind answers: its data through the trait of the kind it was loaded as.
pub fn of(res: &Results) -> &dyn ResultKind {
    KINDS
        .iter()
        .find(|k| k.name == res.kind)
        .and_then(|k| (k.view)(res.data.as_ref()))
        .unwrap_or_else(|| panic!("{}: data not of its kind {:?}", res.dir.display(), res.kind))
}

/// The kind named `name` (in `head`, the file that names it: summary.json or
/// bisect.json); an unknown name is refused naming the kinds this build reads.
fn find(name: &str, head: &Path) -> Result<&'static Kind, String> {
    KINDS.iter().find(|k| k.name == name).ok_or_else(|| {
        format!(
            "{}: unknown kind {name:?} (this xrunrig reads {})",
            head.display(),
            known()
        )
    })
}

/// "\"trials\", \"livefx\", \"watch\" and \"bisect\"".
fn known() -> String {
    let names: Vec<String> = KINDS.iter().map(|k| format!("{:?}", k.name)).collect();
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
        for (i, k) in KINDS.iter().enumerate() {
            assert!(
                KINDS[..i].iter().all(|x| x.name != k.name),
                "{} registered twice",
                k.name
            );
        }
    }

    #[test]
    fn each_kind_loads_as_the_kind_it_is_registered_under() {
        let dirs = [
            (results::KIND_TRIALS, scratch("trials")),
            (results::KIND_LIVEFX, scratch("livefx")),
            (results::watch::KIND_WATCH, scratch("watch")),
            (results::bisect::KIND_BISECT, scratch("bisect")),
        ];
        crate::synth::trials::generate(&dirs[0].1).unwrap();
        crate::synth::livefx::generate(&dirs[1].1, &crate::synth::livefx::Spec::ab(2_000, 1))
            .unwrap();
        crate::synth::watch::generate(&dirs[2].1).unwrap();
        crate::synth::bisect::generate(&dirs[3].1).unwrap();
        assert_eq!(dirs.len(), KINDS.len(), "a synthetic directory per kind");
        for (name, d) in &dirs {
            let res = load(d).unwrap();
            assert_eq!(res.kind, *name);
            // The data is seen through the trait of the kind it was loaded as.
            let _ = of(&res).keys();
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn an_unknown_kind_is_refused_naming_the_known_ones() {
        let e = find("weird", Path::new("/r/summary.json")).err().unwrap();
        assert_eq!(
            e,
            "/r/summary.json: unknown kind \"weird\" (this xrunrig reads \"trials\", \
             \"livefx\", \"watch\" and \"bisect\")"
        );
    }

    /// The file that names a directory's kind is the one an unknown kind is blamed on:
    /// summary.json, or a bisection's bisect.json.
    #[test]
    fn an_unknown_kind_names_the_file_it_came_from() {
        let d = scratch("unknown-bisect");
        crate::synth::bisect::generate(&d).unwrap();
        let p = d.join(results::bisect::BISECT_JSON);
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(
            &p,
            text.replace("\"kind\": \"bisect\"", "\"kind\": \"weird\""),
        )
        .unwrap();
        let e = load(&d).err().unwrap();
        assert!(
            e.starts_with(&format!("{}: unknown kind \"weird\"", p.display())),
            "{e}"
        );
        // A summary.json beside it makes it a run's directory, named by summary.json.
        std::fs::write(&p, &text).unwrap();
        crate::synth::trials::generate(&d).unwrap();
        assert_eq!(load(&d).unwrap().kind, results::KIND_TRIALS);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
