//! `xrunrig bisect RIG --tree PATH --good REF --bad REF`: finds the commit between two
//! kernels where a rig's behaviour changed, every step decided by statistics
//! (`analysis::bisect`), in QEMU guests booted from one build tree checked out in
//! place (`guest::build::worktree`).
//!
//! The ends are measured first and must differ (else it stops before building any
//! commit between them). Each step is built (a step that does not build is skipped, as
//! `git bisect skip`), booted for a batch of trials at a time, and classified against
//! the ends: good, bad, or after its maximum undecided and skipped. The first bad
//! commit is then confirmed: the bad end with it reverted, decided the same way.
//! `bisect.json` is written after every step (`results::bisect`), and `bisect.log` in
//! `git bisect log`'s form; a killed bisection given the same `--out` resumes.

pub mod git;
mod record;

use crate::exit::{EXIT_FAILED, EXIT_FOUND, EXIT_INTERRUPTED, EXIT_REFUSED};
use crate::guest::Blame;
use crate::guest::build::repo::OwnRepo;
use crate::guest::build::worktree::{Extra, TreeError, Worktree};
use crate::guest::kernel::Kernel;
use crate::guest::{Ctx, HostPlan};
use crate::options::{BisectOptions, Choices, RunOptions};
use crate::output::summary::TrialRecord;
use analysis::bisect::{Class, StepRule, classify};
use analysis::sequential::{self, Look};
use results::bisect::{BisectDoc, Commit, Inputs, Outcome, Role, Rule, Step, Verdict};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// A step's chance of a wrong call, at most; the ends' comparison's too.
pub const ALPHA: f64 = 0.01;

/// What every boot of the bisection shares.
struct Bench<'a> {
    o: &'a BisectOptions,
    run: RunOptions,
    host: HostPlan,
    qemu: PathBuf,
    qemu_version: String,
    xrunrig: PathBuf,
    stop: Arc<AtomicBool>,
    out: PathBuf,
    tree: Worktree,
    criterion: crate::sweep::decide::Criterion,
    rule: StepRule,
}

pub fn main(o: &BisectOptions) -> i32 {
    let _lock = match crate::knobs::lock::RunLock::for_run() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("xrunrig: {e}");
            return EXIT_REFUSED;
        }
    };
    let t0 = Instant::now();
    let (mut doc, mut bench) = match prepare(o) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("xrunrig bisect: {e}");
            return EXIT_REFUSED;
        }
    };
    let wall0 = doc.wall_s;
    let code = bisect(&mut bench, &mut doc, &|d: &mut BisectDoc| {
        d.wall_s = wall0 + t0.elapsed().as_secs_f64();
    });
    doc.wall_s = wall0 + t0.elapsed().as_secs_f64();
    if let Err(e) = record::write(&bench.out, &doc) {
        eprintln!("xrunrig bisect: {e}");
        return EXIT_FAILED;
    }
    print!("{}", record::table(&doc));
    eprintln!(
        "xrunrig bisect: {:.0} s in all; bisect.json and bisect.log (git bisect replay) in {}",
        doc.wall_s,
        bench.out.display()
    );
    // As a run ends: the command that makes the full report, with the plot.
    println!("next: xrunrig report {}", bench.out.display());
    code
}

/// Everything checked before anything is built or booted.
fn prepare(o: &BisectOptions) -> Result<(BisectDoc, Bench<'_>), String> {
    if !o.tree.join(".git").exists() {
        return Err(format!(
            "--tree {}: not a git repository (give the kernel tree's checkout)",
            o.tree.display()
        ));
    }
    // The bisection's own repository, borrowing the tree's objects: nothing of the
    // user's is written (`guest::build::repo`).
    let own = OwnRepo::open(&o.tree, &crate::guest::build::worktree::bisect_root())?;
    let good = git::commit(&own, &o.good)?;
    let bad = git::commit(&own, &o.bad)?;
    if good.sha == bad.sha {
        return Err("--good and --bad are the same commit: nothing to bisect".into());
    }
    if !git::is_ancestor(&own.git_dir, &good.sha, &bad.sha) {
        return Err(format!(
            "--good {} is not an ancestor of --bad {}: give a good commit the bad one descends from",
            o.good, o.bad
        ));
    }
    let range = git::range(&own.git_dir, &good.sha, &bad.sha)?;
    let run = RunOptions {
        rig: o.rig.clone(),
        profile: o.profile.clone(),
        out: None,
        choices: Choices {
            trials: Some(o.batch),
            variants: o.variant.iter().cloned().collect(),
            settings: o.setting.iter().cloned().collect(),
            settings_as_is: o.settings_as_is,
            max_time_ns: None,
            until_decided: false,
            audio: o.audio.clone(),
            rerun_of: None,
        },
        guest: Some(o.guest.clone()),
    };
    let host = crate::guest::plan(&run, &o.guest)?;
    let plan = &host.plan;
    if plan.settings.len() != 1 {
        return Err(format!(
            "a bisection runs one setting at every step; this profile has {} ({}): pick the one \
             that shows the regression with --setting",
            plan.settings.len(),
            plan.settings
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if plan.variants.len() != 1 {
        return Err(format!(
            "a bisection runs one variant at every step; rig '{}' has {} ({}): pick one with --variant",
            plan.rig.name,
            plan.variants.len(),
            plan.variants
                .iter()
                .map(|&v| plan.rig.variants[v].name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let criterion = crate::sweep::decide::criterion(plan)
        .map_err(|e| format!("a bisection decides each step from trials that pass or fail: {e}"))?;
    let rule = StepRule::new(ALPHA, o.batch, o.trials);
    if rule.looks.is_empty() || o.batch > o.trials {
        return Err(format!(
            "--batch {} is more than --trials {} (the most a step gets)",
            o.batch, o.trials
        ));
    }
    let inputs = Inputs {
        rig: o.rig.display().to_string(),
        profile: o.profile.as_ref().map(|p| p.display().to_string()),
        setting: plan.settings[0].name.clone(),
        variant: plan.rig.variants[plan.variants[0]].name.clone(),
        tree: std::fs::canonicalize(&o.tree)
            .unwrap_or(o.tree.clone())
            .display()
            .to_string(),
        good: good.clone(),
        bad: bad.clone(),
        patches: o
            .patches
            .iter()
            .map(|p| results::kbuild::PatchInfo {
                file: p.display().to_string(),
                sha256: std::fs::read(p)
                    .map(|b| crate::guest::build::sha256_hex(&b))
                    .unwrap_or_default(),
                subject: None,
            })
            .collect(),
        max_trials: o.trials,
        cpus: host.cpus,
    };
    let (_, stamp) = crate::sys::utc_now();
    let out = o.out.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(format!("bisect-{}-{stamp}", plan.rig.name))
    });
    let doc = match record::read(&out)? {
        Some(d) if d.inputs == inputs => {
            eprintln!(
                "xrunrig bisect: resuming the bisection in {} ({} step(s) done)",
                out.display(),
                d.steps.len()
            );
            d
        }
        Some(_) => {
            return Err(format!(
                "{} holds another bisection (other inputs): give another --out",
                out.display()
            ));
        }
        None => {
            if out.exists() && std::fs::read_dir(&out).is_ok_and(|mut d| d.next().is_some()) {
                return Err(format!(
                    "--out {} exists and holds no bisection: give a new directory",
                    out.display()
                ));
            }
            std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            BisectDoc {
                format_version: results::FORMAT_VERSION,
                kind: results::bisect::KIND_BISECT.into(),
                xrunrig: crate::output::provenance::VERSION.into(),
                rule: Rule {
                    text: analysis::bisect::describe(&rule, &criterion.describe(), ALPHA),
                    criterion: criterion.describe(),
                    test: "fisher_exact_two_sided".into(),
                    batch: rule.batch,
                    alpha_step: rule.alpha,
                    per_look: rule.per_look,
                    looks: rule.looks.clone(),
                    alpha_ends: ALPHA,
                },
                inputs,
                range,
                started: stamp,
                ..Default::default()
            }
        }
    };
    let qemu = crate::guest::qemu::qemu_binary()?;
    let qemu_version = crate::guest::qemu::version(&qemu);
    let xrunrig = std::env::var_os("XRUNRIG_GUEST_BIN")
        .map(PathBuf::from)
        .map(Ok)
        .unwrap_or_else(std::env::current_exe)
        .map_err(|e| format!("cannot find this program's binary to put in the guest: {e}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    crate::engine::watchdog::install_signal_flag(&stop)
        .map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let tree = Worktree::open(&own, &good.sha, &o.patches)?;
    Ok((
        doc,
        Bench {
            o,
            run,
            host,
            qemu,
            qemu_version,
            xrunrig,
            stop,
            out,
            tree,
            criterion,
            rule,
        },
    ))
}

/// The bisection from where `doc` left it; the exit code.
fn bisect(b: &mut Bench, doc: &mut BisectDoc, tick: &dyn Fn(&mut BisectDoc)) -> i32 {
    let save = |doc: &mut BisectDoc, out: &Path| {
        tick(doc);
        if let Err(e) = record::write(out, doc) {
            eprintln!("xrunrig bisect: {e}");
        }
    };
    let inputs = doc.inputs.clone();
    // 1. The ends.
    if doc.ends.len() < 2 || doc.overall_alpha == 0.0 {
        doc.ends = vec![
            Step {
                position: Some(0),
                ..step_of(Role::GoodEnd, &inputs.good)
            },
            Step {
                position: Some(doc.range),
                ..step_of(Role::BadEnd, &inputs.bad)
            },
        ];
        match measure_ends(b, doc, &save) {
            Ok(None) => {}
            Ok(Some(why)) => {
                eprintln!("xrunrig bisect: {why}");
                doc.outcome = Outcome::EndsDoNotDiffer { why };
                return EXIT_FOUND;
            }
            Err(e) => return stopped(b, doc, e),
        }
        doc.overall_alpha = ALPHA;
        save(doc, &b.out);
    }
    let good_counts = (doc.ends[0].passed, doc.ends[0].trials);
    let bad_counts = (doc.ends[1].passed, doc.ends[1].trials);
    // 2. The steps, replayed from the record first.
    let mut goods = vec![inputs.good.sha.clone()];
    let mut bad = inputs.bad.sha.clone();
    let mut skipped: Vec<String> = vec![];
    for s in &doc.steps {
        match s.verdict {
            Verdict::Good => goods.push(s.commit.sha.clone()),
            Verdict::Bad => bad = s.commit.sha.clone(),
            _ => skipped.push(s.commit.sha.clone()),
        }
    }
    loop {
        let all = match git::candidates(&b.tree.own.git_dir, &bad, &goods) {
            Ok(c) => c,
            Err(e) => return stopped(b, doc, e),
        };
        if all.is_empty() {
            break;
        }
        let Some(next) = all.iter().find(|c| !skipped.contains(c)).cloned() else {
            let mut commits: Vec<Commit> = all
                .iter()
                .map(|c| Commit {
                    sha: c.clone(),
                    subject: git::subject(&b.tree.own.git_dir, c),
                })
                .collect();
            commits.push(Commit {
                sha: bad.clone(),
                subject: git::subject(&b.tree.own.git_dir, &bad),
            });
            eprintln!(
                "xrunrig bisect: every commit left was skipped: the first bad commit is one of {}",
                commits
                    .iter()
                    .map(|c| c.short().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            doc.outcome = Outcome::Candidates { commits };
            return EXIT_FOUND;
        };
        let left = all.len() - skipped.iter().filter(|s| all.contains(s)).count();
        eprintln!(
            "xrunrig bisect: {left} commit(s) left to test (about {} step(s)); testing {} {}",
            usize::BITS - left.leading_zeros(),
            &next[..12.min(next.len())],
            git::subject(&b.tree.own.git_dir, &next)
        );
        let commit = Commit {
            subject: git::subject(&b.tree.own.git_dir, &next),
            sha: next.clone(),
        };
        let step = match decide_step(
            b,
            doc,
            Role::Step,
            &commit,
            &Extra::None,
            good_counts,
            bad_counts,
        ) {
            Ok(s) => s,
            Err(e) => return stopped(b, doc, e),
        };
        match step.verdict {
            Verdict::Good => goods.push(next),
            Verdict::Bad => bad = next,
            _ => skipped.push(next),
        }
        doc.steps.push(step);
        doc.overall_alpha =
            ALPHA * (1 + doc.steps.iter().filter(|s| !s.verdict.skipped()).count()) as f64;
        save(doc, &b.out);
    }
    let first = Commit {
        subject: git::subject(&b.tree.own.git_dir, &bad),
        sha: bad.clone(),
    };
    eprintln!(
        "xrunrig bisect: first bad commit: {} {}",
        first.short(),
        first.subject
    );
    doc.first_bad = Some(first.clone());
    // 3. The confirmation: the bad end without that commit.
    // Always built and measured, even when the range is one commit and the revert is the
    // good end's tree again: the confirmation is a measurement, never an inference.
    let step = match decide_step(
        b,
        doc,
        Role::Revert,
        &inputs.bad,
        &Extra::Revert(first.sha.clone()),
        good_counts,
        bad_counts,
    ) {
        Ok(s) => s,
        Err(e) => return stopped(b, doc, e),
    };
    let confirmed = match step.verdict {
        Verdict::Good => Some(true),
        Verdict::Bad => Some(false),
        _ => None,
    };
    doc.confirmation = Some(step);
    match confirmed {
        Some(true) => eprintln!(
            "xrunrig bisect: confirmed: the bad end with {} reverted behaves like the good end",
            first.short()
        ),
        Some(false) => eprintln!(
            "xrunrig bisect: NOT confirmed: the bad end with {} reverted still behaves like the bad end",
            first.short()
        ),
        None => eprintln!(
            "xrunrig bisect: the revert of {} could not be decided (see the confirmation's note)",
            first.short()
        ),
    }
    doc.outcome = Outcome::Found { confirmed };
    if confirmed == Some(true) {
        0
    } else {
        EXIT_FOUND
    }
}

fn stopped(b: &Bench, doc: &mut BisectDoc, why: String) -> i32 {
    stop(&b.out, b.stop.load(Ordering::SeqCst), doc, why)
}

/// The bisection stopped for `why` (the machine failed, git failed, Ctrl-C): said with
/// what resumes it, kept in the record, and the exit code that says the same command
/// resumes it (`exit::codes`).
fn stop(out: &Path, interrupted: bool, doc: &mut BisectDoc, why: String) -> i32 {
    eprintln!("{}", stop_words(out, &why));
    doc.outcome = Outcome::Stopped { why };
    if interrupted {
        EXIT_INTERRUPTED
    } else {
        EXIT_FAILED
    }
}

fn stop_words(out: &Path, why: &str) -> String {
    format!(
        "xrunrig bisect: stopped: {why}\nxrunrig bisect: give the same command (with --out {}) \
         to resume",
        out.display()
    )
}

fn step_of(role: Role, c: &Commit) -> Step {
    Step {
        role,
        commit: c.clone(),
        verdict: Verdict::Measured,
        ..Default::default()
    }
}

/// Why a step has no kernel.
enum NoKernel {
    /// The build tree could not be set (git), or the machine failed the build (a full
    /// disk, memory): the bisection stops, resumable with the same command.
    Tree(String),
    /// The commit does not build (or its revert or a patch does not apply): skipped.
    Build(String),
}

/// The kernel of `commit` (with `extra`): kept from an earlier build, or built now.
fn kernel_for(b: &mut Bench, step: &mut Step, extra: &Extra) -> Result<Kernel, NoKernel> {
    let sha = step.commit.sha.clone();
    if let Some(k) = b.tree.kept(&sha, extra) {
        step.build = k.build.clone();
        return Ok(k);
    }
    let t = Instant::now();
    let detail = match extra {
        Extra::None => format!("{} {}", step.commit.short(), step.commit.subject),
        Extra::Revert(c) => format!(
            "{} with {} reverted",
            step.commit.short(),
            &c[..12.min(c.len())]
        ),
    };
    let no_kernel = |e: TreeError| match e {
        TreeError::Git(e) | TreeError::Transient(e) => NoKernel::Tree(e),
        TreeError::Content(e) => NoKernel::Build(e),
    };
    let r = match b.tree.checkout(&sha, extra) {
        Err(e) => Err(no_kernel(e)),
        Ok(()) => b
            .tree
            .build(
                &sha,
                extra,
                &format!("git:{}", b.tree.repo.display()),
                &detail,
            )
            .map_err(no_kernel),
    };
    step.build_s = t.elapsed().as_secs_f64();
    let k = r?;
    step.build = k.build.clone();
    eprintln!("xrunrig bisect: built {detail} in {:.0} s", step.build_s);
    Ok(k)
}

/// Why a batch brought no counts.
#[derive(Debug, PartialEq)]
enum Failed {
    /// The machine's (no space, memory, an emulator fault, the guest lost): nothing is
    /// known of the commit, so the bisection stops and the same command resumes it.
    Stop(String),
    /// The commit's kernel's (it crashed, did not boot, no trial came home): the step
    /// is skipped.
    Skip(String),
}

impl Failed {
    fn text(self) -> String {
        match self {
            Failed::Stop(s) | Failed::Skip(s) => s,
        }
    }
}

/// A batch's failed guest run, by whose failure it was (`guest::blame`); one whose
/// blame is not known stops, since a skip would be a claim about the commit.
fn run_failed(error: &str, blame: Option<Blame>) -> Failed {
    match blame {
        Some(Blame::Kernel) => Failed::Skip(format!("the guest run failed: {error}")),
        Some(Blame::Machine) | None => Failed::Stop(format!(
            "the machine failed the guest run, which says nothing of the commit: {error}"
        )),
    }
}

/// One batch of trials of `kernel` into `step`'s counts.
fn batch(b: &Bench, step: &mut Step, kernel: &Kernel) -> Result<(), Failed> {
    if b.stop.load(Ordering::SeqCst) {
        return Err(Failed::Stop("interrupted".into()));
    }
    let name = match step.role {
        Role::GoodEnd => "good".to_string(),
        Role::BadEnd => "bad".to_string(),
        Role::Step => format!("step-{}", step.commit.short()),
        Role::Revert => format!("revert-{}", step.commit.short()),
    };
    let mut rel = format!("runs/{name}-b{}", step.runs.len() + 1);
    let mut i = 2;
    while b.out.join(&rel).exists() {
        rel = format!("runs/{name}-b{}-{i}", step.runs.len() + 1);
        i += 1;
    }
    let dir = b.out.join(&rel);
    crate::output::create_results_dir(&dir).map_err(Failed::Stop)?;
    let ctx = Ctx {
        plan: &b.host,
        args: &b.run,
        guest: &b.o.guest,
        qemu: &b.qemu,
        qemu_version: &b.qemu_version,
        xrunrig: &b.xrunrig,
        stop: &b.stop,
        place: None,
    };
    let t = Instant::now();
    let r = crate::guest::run_kernel(&ctx, kernel.clone(), dir.clone());
    step.run_s += t.elapsed().as_secs_f64();
    step.runs.push(rel);
    if let Some(e) = r.error {
        return Err(run_failed(&e, r.blame));
    }
    let recs = records(&dir);
    let mine: Vec<&TrialRecord> = recs
        .iter()
        .filter(|r| r.setting == b.host.plan.settings[0].name)
        .collect();
    if mine.is_empty() {
        return Err(Failed::Skip(format!(
            "no trial came home ({})",
            dir.display()
        )));
    }
    step.trials += mine.len() as u32;
    step.passed += mine.iter().filter(|r| b.criterion.passed(r)).count() as u32;
    Ok(())
}

fn records(dir: &Path) -> Vec<TrialRecord> {
    std::fs::read_to_string(dir.join(results::SAMPLES_JSONL))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The ends, a batch each in turn, until Fisher's test (the sequential rule of
/// `--until-decided`) decides they differ; then topped up so a step's first look can
/// decide. Some(why) when they do not differ.
fn measure_ends(
    b: &mut Bench,
    doc: &mut BisectDoc,
    save: &dyn Fn(&mut BisectDoc, &Path),
) -> Result<Option<String>, String> {
    let need = b.rule.end_trials();
    let max = need.max(b.o.trials);
    let plan = sequential::plan(ALPHA, max);
    let mut kernels = vec![];
    for i in 0..2 {
        let mut s = doc.ends[i].clone();
        let extra = Extra::None;
        let end = if i == 0 { "good" } else { "bad" };
        let k = kernel_for(b, &mut s, &extra).map_err(|e| match e {
            NoKernel::Tree(e) => format!("the build tree for the {end} end: {e}"),
            NoKernel::Build(e) => {
                format!("the {end} end {} does not build: {e}", s.commit.short())
            }
        })?;
        doc.ends[i] = s;
        kernels.push(k);
    }
    let mut decided = false;
    loop {
        for (i, k) in kernels.iter().enumerate() {
            let mut s = doc.ends[i].clone();
            batch(b, &mut s, k).map_err(Failed::text)?;
            doc.ends[i] = s;
        }
        let (g, n1) = (doc.ends[0].passed, doc.ends[0].trials);
        let (x, n2) = (doc.ends[1].passed, doc.ends[1].trials);
        let n = n1.min(n2);
        let (p, look) = plan.look(g, x, n);
        doc.ends[0].p_vs_bad = Some(p);
        doc.ends[1].p_vs_good = Some(p);
        eprintln!(
            "xrunrig bisect: ends after {n} trials each: good {g}/{n1} passed, bad {x}/{n2} (p = {p:.2e})"
        );
        save(doc, &b.out);
        match look {
            Look::Decided { first_better: true } => decided = true,
            Look::Decided {
                first_better: false,
            } => {
                return Ok(Some(format!(
                    "the bad end passes more often than the good end ({x}/{n2} against {g}/{n1}, \
                     p = {p:.2e}): swap --good and --bad if that is the change to find"
                )));
            }
            Look::AtMaximum | Look::Futile if !decided => {
                return Ok(Some(format!(
                    "the ends do not differ: good {g}/{n1} passed, bad {x}/{n2} (Fisher's exact \
                     p = {p:.2e}, the rule needs p ≤ {:.2e}); nothing between them was built",
                    plan.later_level()
                        .or(plan.levels.first().copied())
                        .unwrap_or(plan.alpha)
                )));
            }
            _ => {}
        }
        if decided && n >= need {
            return Ok(None);
        }
    }
}

/// A step (or the revert): built, then batches until it is decided or at its maximum.
#[allow(clippy::too_many_arguments)]
fn decide_step(
    b: &mut Bench,
    doc: &mut BisectDoc,
    role: Role,
    commit: &Commit,
    extra: &Extra,
    good: (u32, u32),
    bad: (u32, u32),
) -> Result<Step, String> {
    let mut s = step_of(role, commit);
    // Its place in history, for the report's plot (the steps are tested out of order).
    s.position = git::range(&b.tree.own.git_dir, &doc.inputs.good.sha, &commit.sha).ok();
    s.verdict = Verdict::Undecided;
    let kernel = match kernel_for(b, &mut s, extra) {
        Ok(k) => k,
        Err(NoKernel::Tree(e)) => return Err(format!("the build tree: {e}")),
        Err(NoKernel::Build(e)) => {
            if b.stop.load(Ordering::SeqCst) {
                return Err("interrupted".into());
            }
            let first = e.lines().take(6).collect::<Vec<_>>().join("\n");
            eprintln!(
                "xrunrig bisect: {} does not build: skipped\n{first}",
                commit.short()
            );
            s.verdict = Verdict::BuildFailed;
            s.note = Some(e);
            return Ok(s);
        }
    };
    loop {
        if let Err(f) = batch(b, &mut s, &kernel) {
            if b.stop.load(Ordering::SeqCst) {
                return Err("interrupted".into());
            }
            let e = match f {
                Failed::Stop(e) => return Err(e),
                Failed::Skip(e) => e,
            };
            eprintln!("xrunrig bisect: {}: {e}: skipped", commit.short());
            s.verdict = Verdict::RunFailed;
            s.note = Some(e);
            return Ok(s);
        }
        let (class, pg, pb) = classify(&b.rule, s.passed, s.trials, good, bad);
        s.p_vs_good = Some(pg);
        s.p_vs_bad = Some(pb);
        match class {
            Class::More => continue,
            Class::Good => s.verdict = Verdict::Good,
            Class::Bad => s.verdict = Verdict::Bad,
            Class::Undecided => {
                s.verdict = Verdict::Undecided;
                s.note = Some(format!(
                    "{}/{} passed: like neither end at p ≤ {:.2e} after {} trials",
                    s.passed, s.trials, b.rule.per_look, s.trials
                ));
            }
        }
        break;
    }
    eprintln!("{}", record::line(&s));
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest::crash::{self, QEMU_ABORT_SAMPLE, RCU_STALL_SAMPLE};
    use crate::guest::qemu::stand_in;
    use std::time::Duration;

    /// A guest's end as a step's batch meets it, from a real process standing in for
    /// QEMU (its exit, signal, console and stderr), through what `run_kernel` does
    /// with it (`crash::judge`, `guest::blame`) to what the step does
    /// (`run_failed`).
    fn step_after(tag: &str, script: &str) -> Failed {
        let quiet = Duration::from_secs(1);
        let r = stand_in(tag, script, quiet);
        let fault = crash::judge(&r.outcome, &r.console, &r.stderr, quiet);
        let why = format!("{:?} {:?}", r.outcome.end, fault.as_ref().map(|f| &f.line));
        let blame = crate::guest::blame(&r.outcome.end, r.outcome.code, fault.as_ref());
        run_failed(&why, Some(blame))
    }

    fn quoted(s: &str) -> String {
        format!("'{}'", s.replace('\'', "'\\''"))
    }

    /// The ready guest's first lines, as the console shows them.
    const READY: &str = "echo '[    1.0] Linux version 6.12' >>$1; echo 'XRUNRIG-READY 3.1 1.0' >>$1; \
                         echo '[1/4] x trial 1/4: wait 90 ms' >>$1;";

    /// Issue 35, item 4: an emulator fault, QEMU killed (the OOM killer) or failing by
    /// itself, a guest lost to silence or stopped timers stop the bisection, with the
    /// words and exit code that say the same command resumes it; a crash of the kernel
    /// under test, or a guest that reset itself, skips the step as before.
    #[test]
    fn the_machines_failures_stop_and_the_kernels_skip() {
        let stops = [
            (
                "abort",
                format!(
                    "{READY} printf '%s\\n' {} >&2; ulimit -c 0; kill -ABRT $$",
                    quoted(QEMU_ABORT_SAMPLE)
                ),
            ),
            ("oom-killed", format!("{READY} kill -KILL $$")),
            (
                "no-memory",
                "echo \"qemu-system-x86_64: cannot set up guest memory 'pc.ram': Cannot \
                 allocate memory\" >&2; exit 1"
                    .to_string(),
            ),
            ("silent", format!("{READY} sleep 30")),
            (
                "stalled",
                format!(
                    "{READY} printf '%s' {} >>$1; sleep 30",
                    quoted(RCU_STALL_SAMPLE)
                ),
            ),
        ];
        for (tag, script) in &stops {
            match step_after(tag, script) {
                Failed::Stop(e) => {
                    assert!(e.contains("says nothing of the commit"), "{tag}: {e}");
                    let mut doc = BisectDoc::default();
                    let out = Path::new("/tmp/bisect-out");
                    assert_eq!(stop(out, false, &mut doc, e.clone()), EXIT_FAILED, "{tag}");
                    assert!(
                        matches!(&doc.outcome, Outcome::Stopped { why } if *why == e),
                        "{tag}: {:?}",
                        doc.outcome
                    );
                    assert!(
                        stop_words(out, &e).contains(
                            "give the same command (with --out /tmp/bisect-out) to resume"
                        ),
                        "{tag}"
                    );
                }
                f => panic!("{tag}: a skip, not a stop: {f:?}"),
            }
        }
        let skips = [
            (
                "panic",
                format!(
                    "{READY} echo '[    5.0] BUG: kernel NULL pointer dereference, address: 8' \
                     >>$1; echo '[    5.1] Kernel panic - not syncing: Fatal exception' >>$1; \
                     sleep 30"
                ),
            ),
            // -no-reboot: the guest's reset (a triple fault) is QEMU's exit 0.
            ("reset", format!("{READY} exit 0")),
        ];
        for (tag, script) in &skips {
            match step_after(tag, script) {
                Failed::Skip(e) => assert!(e.starts_with("the guest run failed"), "{tag}: {e}"),
                f => panic!("{tag}: a stop, not a skip: {f:?}"),
            }
        }
        // A failure no one judged (none should reach here) stops: a skip would say
        // something of the commit.
        assert!(matches!(run_failed("x", None), Failed::Stop(_)));
        // The exit code's words say the same.
        let words = crate::exit::codes("bisect");
        let (_, w) = words.iter().find(|(c, _)| *c == EXIT_FAILED).unwrap();
        assert!(w.contains("the same command resumes"), "{w}");
        assert!(w.contains("emulator"), "{w}");
    }
}
