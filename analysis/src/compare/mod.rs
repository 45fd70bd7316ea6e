//! `xrunrig compare A B`, `A1 A2 A3 -- B1 B2 B3`: the same metrics across runs of one
//! experiment (kernels, patches, machines), LKP style, judged run against run
//! (`judge`: the run, one boot, is the unit; trials are nested inside it), each metric
//! worse, better, the same or inconclusive from its change's 95 % interval against the
//! threshold, Holm-adjusted over the metrics; side-by-side plots; exit code 1 when
//! something is worse, 4 when the comparison is inconclusive. With one run a side the
//! run-to-run spread comes from a calibration (`calibration`) or, without one, from the
//! largest this project has measured. Sides of different rigs, settings or variants, a
//! side that mixes kernels, and a run compared with itself are refused.
//!
//! The steps, a file each: `load` (the sides, checked and matched metric by metric),
//! `sample` (a metric's per-trial values, what each is judged as), `calibration`,
//! `verdict`, `plots`, `write`. The files go into `--out` or a new directory beside the
//! baseline, never into a results directory.

pub mod calibration;
pub(crate) mod load;
mod plots;
pub mod sample;
mod verdict;
mod write;

use crate::judge::Answer;
use crate::out::Ctx;
use std::path::{Path, PathBuf};

/// The exit code of an inconclusive comparison.
pub const EXIT_INCONCLUSIVE: i32 = 4;

pub struct Outcome {
    pub text: String,
    /// compare.json's document, as written.
    pub json: serde_json::Value,
    pub answer: Option<Answer>,
    pub regressions: usize,
    pub improvements: usize,
}

/// What to compare and how.
#[derive(Debug, Clone)]
pub struct Request {
    /// The sides' runs, the baseline first.
    pub sides: Vec<Vec<PathBuf>>,
    pub threshold: f64,
    pub out: Option<PathBuf>,
    pub redact: bool,
    /// A calibration file to use instead of the cache's.
    pub calibration: Option<PathBuf>,
    /// Each direction's level before Holm: `judge::answer::ONE_SIDED` (95 % intervals),
    /// less for one of several looks at the same runs (`--until-decided --boots`).
    pub one_sided: f64,
    /// Only these metrics (by name: "wait", "dropouts"), Holm over them alone; empty:
    /// all. `--until-decided --boots` judges the rig's criterion, as it does in a boot.
    pub only: Vec<String>,
}

impl Request {
    /// One directory a side, as `xrunrig compare A B C` gives them.
    pub fn one_run_a_side(dirs: &[PathBuf], threshold: f64, out: Option<&Path>) -> Request {
        Request {
            sides: dirs.iter().map(|d| vec![d.clone()]).collect(),
            threshold,
            out: out.map(Path::to_path_buf),
            redact: false,
            calibration: None,
            one_sided: crate::judge::answer::ONE_SIDED,
            only: vec![],
        }
    }
}

pub fn run(r: &Request) -> Result<Outcome, String> {
    // Every refusal comes before anything is written.
    let paths = load::expand(&r.sides)?;
    let sides = load::load(&paths, r.redact)?;
    let mut metrics = load::metrics(&sides);
    if !r.only.is_empty() {
        let names: Vec<String> = metrics.iter().map(|m| m.key.2.clone()).collect();
        metrics.retain(|m| r.only.contains(&m.key.2));
        if metrics.is_empty() {
            return Err(format!(
                "no metric {} in these runs; they have: {}",
                r.only.join(", "),
                names.join(", ")
            ));
        }
    }
    let mut problems = Vec::new();
    let cal = calibration::find(sides.base(), r.calibration.as_deref(), &mut problems)?;
    let cal_name = cal.as_ref().map(|(_, p)| p.display().to_string());
    let v = verdict::judge(
        &metrics,
        &sides,
        cal.as_ref().map(|(c, _)| c).zip(cal_name.as_deref()),
        r.threshold,
        r.one_sided,
    );
    let all: Vec<PathBuf> = paths.iter().flatten().cloned().collect();
    let out = out_dir(&all, r.out.as_deref())?;
    let mut ctx = Ctx::new(&out, sides.red.clone(), sides.base().rig.clone())?;
    ctx.mkdir("plots")?;
    let imgs = plots::plots(&metrics, &sides, &mut ctx)?;
    ctx.flush()?;
    let cal_line = Some(match &cal {
        Some((c, p)) => format!(
            "calibration used: {} ({} runs of {} trial(s), measured {})",
            p.display(),
            c.runs.len(),
            c.trials_per_run,
            c.created
        ),
        None => format!(
            "no calibration of this rig on this machine ({}): where a side is one block in \
             time (one run a side, or its runs all before the other's), the largest \
             run-to-run spread this project has measured was assumed",
            calibration::key_of(sides.base()).describe()
        ),
    });
    let d = write::document(&sides, &v, imgs, cal_line.as_deref(), &problems);
    let (mut text, json) = write::write(&mut ctx, &d, &v, &sides, cal_line.as_deref())?;
    text += &format!("\ncomparison: {}\n", out.display());
    Ok(Outcome {
        text,
        json,
        answer: v.answer,
        regressions: v.regressions,
        improvements: v.improvements,
    })
}

pub fn main(r: &Request) -> Result<i32, String> {
    let o = outcome(r)?;
    print!("{}", o.text);
    Ok(o.exit_code())
}

impl Outcome {
    /// 1 when something is worse, 4 when inconclusive, else 0.
    pub fn exit_code(&self) -> i32 {
        match self.answer {
            Some(Answer::Worse) => 1,
            Some(Answer::Inconclusive) | None => EXIT_INCONCLUSIVE,
            Some(Answer::Better | Answer::Same) => 0,
        }
    }
}

/// The comparison, written into `out` (default: a new directory beside the first),
/// not printed: the caller prints its text or its JSON document (`xrunrig compare
/// --json`).
pub fn outcome(r: &Request) -> Result<Outcome, String> {
    if !(r.one_sided > 0.0 && r.one_sided <= crate::judge::answer::ONE_SIDED) {
        return Err(format!(
            "a comparison's one-sided level {} is outside (0, {}]",
            r.one_sided,
            crate::judge::answer::ONE_SIDED
        ));
    }
    if !(r.threshold.is_finite() && r.threshold >= 0.0) {
        return Err(format!(
            "--threshold {}: give a percentage of 0 or more, e.g. 10",
            r.threshold
        ));
    }
    run(r)
}

/// Where the comparison's files go: `--out` (never one of the compared directories, nor
/// another results directory), else a new `compare-A-vs-B` beside the baseline, made
/// with one mkdir (`-2`, `-3`... when taken).
fn out_dir(dirs: &[PathBuf], out: Option<&Path>) -> Result<PathBuf, String> {
    let canon = |p: &Path| p.canonicalize().ok();
    if let Some(o) = out {
        if let Some(c) = canon(o)
            && let Some(d) = dirs.iter().find(|d| canon(d) == Some(c.clone()))
        {
            return Err(format!(
                "--out {} is one of the compared directories ({}): a comparison is not written \
                 into a run's results; give another --out, or none for a new directory",
                o.display(),
                d.display()
            ));
        }
        if o.join(results::SUMMARY_JSON).exists() {
            return Err(format!(
                "--out {} holds a run's results: give another --out, or none for a new directory",
                o.display()
            ));
        }
        std::fs::create_dir_all(o).map_err(|e| format!("cannot create {}: {e}", o.display()))?;
        return Ok(o.to_path_buf());
    }
    let name = |p: &PathBuf| {
        p.canonicalize()
            .ok()
            .and_then(|c| c.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "run".into())
    };
    let mut stem = format!("compare-{}-vs-{}", name(&dirs[0]), name(&dirs[1]));
    if dirs.len() > 2 {
        stem += &format!("-and-{}-more", dirs.len() - 2);
    }
    let stem = results::file_part(&stem);
    let parent = dirs[0]
        .canonicalize()
        .ok()
        .and_then(|c| c.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    for n in 1..10_000 {
        let cand = if n == 1 {
            parent.join(&stem)
        } else {
            parent.join(format!("{stem}-{n}"))
        };
        match std::fs::create_dir(&cand) {
            Ok(()) => return Ok(cand),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create {}: {e}", cand.display())),
        }
    }
    Err(format!(
        "cannot find a free name for {} in {}: give --out",
        stem,
        parent.display()
    ))
}
