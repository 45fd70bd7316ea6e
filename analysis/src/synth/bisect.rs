//! A synthetic `xrunrig bisect` directory, shaped as the engine writes one: bisect.json,
//! bisect.log and under runs/ an ordinary trials directory per batch (one guest boot
//! each). A history of 16 commits after the good end in which commit 11 broke PI
//! boosting under NO_RT_PUSH_IPI: the ends differ, commit 8 is good, 12 does not build,
//! 13's run fails, 14 is like neither end at its maximum (skipped), 10 is good after two
//! looks, 11 is bad; the bad end with 11 reverted is good again. Every step's verdict and
//! p-values come from the bisection's own rule (`analysis::bisect`), so they are what
//! the engine would have decided. SYNTHETIC, not a measurement.

use super::{LABEL, run_json, write};
use crate::bisect::{Class, StepRule, classify, describe};
use crate::sequential::fisher_two_sided;
use results::bisect::{
    BISECT_JSON, BISECT_LOG, BisectDoc, Commit, Inputs, KIND_BISECT, Outcome, Role, Rule, Step,
    Verdict,
};
use results::kbuild::{KernelBuild, PatchInfo};
use results::run::GuestSection;
use results::trials::{Row, Summary, TrialRecord, TrialStatus};
use std::fmt::Write as _;
use std::path::Path;

pub const RIG: &str = "pi-boost-synthetic";
pub const SETTING: &str = "NO_RT_PUSH_IPI";
pub const VARIANT: &str = "pi";
pub const TREE: &str = "/synthetic/linux";
/// Commits after the good end: the bad end's place.
pub const RANGE: u32 = 16;
/// The commit that broke it.
pub const FIRST_BAD_AT: u32 = 11;
pub const BATCH: u32 = 5;
pub const MAX_TRIALS: u32 = 15;
pub const ALPHA: f64 = 0.01;
pub const CRITERION: &str = "wait < 100 ms";
/// The kernels' config hash (one config for every step).
pub const CONFIG_SHA256: &str = "c0f1c0f1c0f1c0f1c0f1c0f1c0f1c0f1c0f1c0f1c0f1c0f1c0f1c0f1c0f1c0f1";
pub const CONFIG: &str = "x86_64_defconfig + kvm_guest.config + xrunrig guest.config";
pub const BUILD_ERROR: &str = "kernel/sched/rt.c:2417:9: error: implicit declaration of \
                               function 'push_rt_owner' (synthetic)\nmake[4]: *** \
                               [scripts/Makefile.build:229: kernel/sched/rt.o] Error 1";
pub const RUN_ERROR: &str = "the guest run failed: the guest went silent for 120 s (synthetic)";

/// What became of a step, as planned: its batches' passes, or no trials at all.
enum Plan {
    Batches(&'static [u32]),
    BuildFailed,
    RunFailed,
}

/// The steps in the order tested: (commits after the good end, plan, the verdict the
/// rule must reach).
fn plan() -> [(u32, Plan, Verdict); 6] {
    [
        (8, Plan::Batches(&[5]), Verdict::Good),
        (12, Plan::BuildFailed, Verdict::BuildFailed),
        (13, Plan::RunFailed, Verdict::RunFailed),
        (14, Plan::Batches(&[2, 3, 2]), Verdict::Undecided),
        (10, Plan::Batches(&[4, 5]), Verdict::Good),
        (FIRST_BAD_AT, Plan::Batches(&[0]), Verdict::Bad),
    ]
}

/// The commit `position` commits after the good end: a made-up full object name.
pub fn sha(position: u32) -> String {
    let x = u64::from(position + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!("{:016x}{:016x}{:08x}", x, x.rotate_left(17), position)
}

pub fn subject(position: u32) -> String {
    match position {
        0 => "Linux 6.12 (synthetic)".into(),
        FIRST_BAD_AT => "sched/rt: skip pushing a boosted owner (synthetic regression)".into(),
        RANGE => "Merge branch 'sched/core' (synthetic)".into(),
        p => format!("sched: synthetic change {p}"),
    }
}

pub fn commit(position: u32) -> Commit {
    Commit {
        sha: sha(position),
        subject: subject(position),
    }
}

/// The --patch every step applies.
pub fn patch() -> PatchInfo {
    PatchInfo {
        file: "patches/0001-synthetic-trace-point.patch".into(),
        sha256: "ab".repeat(32),
        subject: Some("trace: a synthetic trace point".into()),
    }
}

fn build(c: &Commit, reverted: Option<&Commit>, build_s: f64) -> KernelBuild {
    KernelBuild {
        source: format!("git:{TREE}"),
        source_detail: Some(match reverted {
            Some(r) => format!("{} with {} reverted", c.short(), r.short()),
            None => format!("{} {}", c.short(), c.subject),
        }),
        source_sha256: None,
        version: Some("6.12.0-synthetic".into()),
        patches: vec![patch()],
        config_sha256: Some(CONFIG_SHA256.into()),
        config: Some(CONFIG.into()),
        key: Some(format!("synthetic-{}", c.short())),
        build_dir: Some(format!("/synthetic/cache/build-{}", c.short())),
        cached: false,
        started_from: None,
        build_s: Some(build_s),
        log: Some(format!("/synthetic/cache/build-{}/build.log", c.short())),
    }
}

/// One batch as an ordinary trials directory: `passes` of `n` trials waited under the
/// bound, the rest did not.
fn write_run(dir: &Path, passes: u32, n: u32, c: &Commit, kb: &KernelBuild) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let waits: Vec<f64> = (0..n)
        .map(|t| {
            if t < passes {
                0.8 + 0.05 * f64::from(t)
            } else {
                1499.0 + f64::from(t)
            }
        })
        .collect();
    let mut lines = String::new();
    for (t, w) in waits.iter().enumerate() {
        let rec = TrialRecord {
            setting: SETTING.into(),
            variant: VARIANT.into(),
            trial: t as u32,
            status: TrialStatus::Ok,
            detail: None,
            duration_ms: w + 25.0,
            metrics: [("wait".to_string(), vec![*w])].into(),
            censored: Default::default(),
            marks: Default::default(),
            evidence: vec![],
        };
        lines += &serde_json::to_string(&rec).map_err(|e| e.to_string())?;
        lines.push('\n');
    }
    let mut sorted = waits.clone();
    sorted.sort_by(f64::total_cmp);
    let row = Row {
        setting: SETTING.into(),
        variant: VARIANT.into(),
        metric: "wait".into(),
        unit: "ms".into(),
        bound: Some("< 100 ms".into()),
        n: n as usize,
        within_bound: Some(passes as usize),
        missing: 0,
        median: crate::stats::median(&sorted),
        min: sorted.first().copied(),
        max: sorted.last().copied(),
        values: waits,
        ..Row::default()
    };
    let summary = Summary::new(RIG, vec![row]);
    write(
        &dir.join(results::SUMMARY_JSON),
        &(serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())? + "\n"),
    )?;
    write(&dir.join(results::SAMPLES_JSONL), &lines)?;
    let mut run = run_json(
        RIG,
        results::KIND_TRIALS,
        &[(
            SETTING,
            "push IPIs off (the non-PREEMPT_RT default)",
            SETTING,
        )],
        &[(
            VARIANT,
            "owner FIFO 10, hog FIFO 99, waiter FIFO 90 on a PI mutex",
        )],
        n,
    );
    let guest = GuestSection {
        accel: Some("tcg".into()),
        emulated: true,
        cpus: Some(4),
        memory: Some("1G".into()),
        qemu: Some("QEMU emulator version 9.2.0 (synthetic)".into()),
        kernel: Some(format!("git:{TREE}@{}", c.short())),
        kernel_release: Some("6.12.0-synthetic".into()),
        kernel_build: Some(kb.clone()),
        ..Default::default()
    };
    run["guest"] = serde_json::to_value(&guest).map_err(|e| e.to_string())?;
    write(
        &dir.join(results::RUN_JSON),
        &(serde_json::to_string_pretty(&run).map_err(|e| e.to_string())? + "\n"),
    )
}

/// One batch of a step into `out`: its directory (named as the engine names it, for
/// its place among the step's batches), and the step's counts.
fn run_batch(
    out: &Path,
    s: &mut Step,
    name: &str,
    passes: u32,
    kb: &KernelBuild,
) -> Result<(), String> {
    let rel = format!("runs/{name}-b{}", s.runs.len() + 1);
    write_run(&out.join(&rel), passes, BATCH, &s.commit, kb)?;
    s.runs.push(rel);
    s.passed += passes;
    s.trials += BATCH;
    s.run_s += 42.0;
    Ok(())
}

/// A step of `commit` decided by the rule against the ends' counts; an error when the
/// rule does not reach `want` (the generator's plan and the rule disagree).
#[allow(clippy::too_many_arguments)]
fn decide(
    out: &Path,
    rule: &StepRule,
    role: Role,
    position: u32,
    reverted: Option<&Commit>,
    plan: &Plan,
    want: Verdict,
    ends: ((u32, u32), (u32, u32)),
) -> Result<Step, String> {
    let c = commit(position);
    let mut s = Step {
        role,
        commit: c.clone(),
        position: Some(position),
        verdict: Verdict::Undecided,
        build_s: 95.0 + f64::from(position),
        ..Default::default()
    };
    let name = match role {
        Role::Revert => format!("revert-{}", c.short()),
        _ => format!("step-{}", c.short()),
    };
    match plan {
        Plan::BuildFailed => {
            s.verdict = Verdict::BuildFailed;
            s.note = Some(BUILD_ERROR.into());
        }
        Plan::RunFailed => {
            s.build = Some(build(&c, reverted, s.build_s));
            s.runs.push(format!("runs/{name}-b1"));
            // The failed boot left its directory marked INCOMPLETE, as the engine's does.
            let d = out.join(&s.runs[0]);
            std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
            write(&d.join(results::INCOMPLETE), "")?;
            s.run_s = 120.0;
            s.verdict = Verdict::RunFailed;
            s.note = Some(RUN_ERROR.into());
        }
        Plan::Batches(b) => {
            let kb = build(&c, reverted, s.build_s);
            s.build = Some(kb.clone());
            for (k, p) in b.iter().enumerate() {
                run_batch(out, &mut s, &name, *p, &kb)?;
                let (class, pg, pb) = classify(rule, s.passed, s.trials, ends.0, ends.1);
                s.p_vs_good = Some(pg);
                s.p_vs_bad = Some(pb);
                s.verdict = match class {
                    Class::More => continue,
                    Class::Good => Verdict::Good,
                    Class::Bad => Verdict::Bad,
                    Class::Undecided => Verdict::Undecided,
                };
                if class == Class::Undecided {
                    s.note = Some(format!(
                        "{}/{} passed: like neither end at p ≤ {:.2e} after {} trials",
                        s.passed, s.trials, rule.per_look, s.trials
                    ));
                }
                if k + 1 != b.len() {
                    return Err(format!(
                        "synthetic step {position}: decided before its last batch"
                    ));
                }
                break;
            }
        }
    }
    if s.verdict != want {
        return Err(format!(
            "synthetic step {position}: the rule says {:?}, the plan {want:?}",
            s.verdict
        ));
    }
    Ok(s)
}

/// The bisection's record as the engine would have written it, with its runs under
/// `out`.
fn record(out: &Path) -> Result<BisectDoc, String> {
    let rule = StepRule::new(ALPHA, BATCH, MAX_TRIALS);
    let need = rule.end_trials();
    let (good, bad) = (commit(0), commit(RANGE));
    // The ends: every batch of the good end passes but one trial, the bad end's fail but
    // one.
    let mut ends = vec![];
    for (role, c, name) in [(Role::GoodEnd, &good, "good"), (Role::BadEnd, &bad, "bad")] {
        let mut s = Step {
            role,
            commit: c.clone(),
            position: Some(if role == Role::GoodEnd { 0 } else { RANGE }),
            verdict: Verdict::Measured,
            build_s: 610.0,
            ..Default::default()
        };
        let kb = build(c, None, s.build_s);
        s.build = Some(kb.clone());
        let k = (need / BATCH) as usize;
        let batches: Vec<u32> = (0..k)
            .map(|i| match (role, i + 1 == k) {
                (Role::GoodEnd, true) => BATCH - 1,
                (Role::GoodEnd, false) => BATCH,
                (_, true) => 1,
                (_, false) => 0,
            })
            .collect();
        for p in batches {
            run_batch(out, &mut s, name, p, &kb)?;
        }
        ends.push(s);
    }
    let g = (ends[0].passed, ends[0].trials);
    let b = (ends[1].passed, ends[1].trials);
    let p = fisher_two_sided(g.0, g.1, b.0, b.1);
    ends[0].p_vs_bad = Some(p);
    ends[1].p_vs_good = Some(p);
    let mut steps = vec![];
    for (pos, plan, want) in plan() {
        steps.push(decide(
            out,
            &rule,
            Role::Step,
            pos,
            None,
            &plan,
            want,
            (g, b),
        )?);
    }
    let first = commit(FIRST_BAD_AT);
    let conf = decide(
        out,
        &rule,
        Role::Revert,
        RANGE,
        Some(&first),
        &Plan::Batches(&[5]),
        Verdict::Good,
        (g, b),
    )?;
    let decided = steps.iter().filter(|s| !s.verdict.skipped()).count();
    let wall: f64 = ends
        .iter()
        .chain(&steps)
        .chain(std::iter::once(&conf))
        .map(|s| s.build_s + s.run_s)
        .sum();
    Ok(BisectDoc {
        format_version: results::FORMAT_VERSION,
        kind: KIND_BISECT.into(),
        xrunrig: "synthetic".into(),
        inputs: Inputs {
            rig: format!("rigs/{RIG}.toml"),
            profile: Some("profiles/rt-push-ipi.toml".into()),
            setting: SETTING.into(),
            variant: VARIANT.into(),
            tree: TREE.into(),
            good,
            bad,
            patches: vec![patch()],
            max_trials: MAX_TRIALS,
            cpus: 4,
        },
        rule: Rule {
            text: describe(&rule, CRITERION, ALPHA),
            criterion: CRITERION.into(),
            test: "fisher_exact_two_sided".into(),
            batch: BATCH,
            alpha_step: ALPHA,
            per_look: rule.per_look,
            looks: rule.looks.clone(),
            alpha_ends: ALPHA,
        },
        range: RANGE,
        ends,
        steps,
        first_bad: Some(first),
        confirmation: Some(conf),
        outcome: Outcome::Found {
            confirmed: Some(true),
        },
        overall_alpha: ALPHA * (1 + decided) as f64,
        started: "20260101T000000Z".into(),
        wall_s: wall + 30.0,
    })
}

/// The steps in `git bisect log`'s form, as the engine writes bisect.log.
pub fn git_log(doc: &BisectDoc) -> String {
    let i = &doc.inputs;
    let mut s = String::from("git bisect start\n");
    for (word, c) in [("bad", &i.bad), ("good", &i.good)] {
        let _ = writeln!(
            s,
            "# {word}: [{}] {}\ngit bisect {word} {}",
            c.sha, c.subject, c.sha
        );
    }
    for st in &doc.steps {
        let word = match st.verdict {
            Verdict::Good => "good",
            Verdict::Bad => "bad",
            _ => "skip",
        };
        let c = &st.commit;
        let _ = writeln!(
            s,
            "# {word}: [{}] {}\ngit bisect {word} {}",
            c.sha, c.subject, c.sha
        );
    }
    if let Some(f) = &doc.first_bad {
        let _ = writeln!(s, "# first bad commit: [{}] {}", f.sha, f.subject);
    }
    s
}

/// Writes bisect.json, bisect.log, the runs and a README into `dir`; the record.
pub fn generate(dir: &Path) -> Result<BisectDoc, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let doc = record(dir)?;
    write_doc(dir, &doc)?;
    write(
        &dir.join("README"),
        &format!(
            "{LABEL}.\nA bisection of 16 commits shaped as `xrunrig bisect` writes one; made by \
             analysis::synth::bisect::generate.\n"
        ),
    )?;
    Ok(doc)
}

/// bisect.json and bisect.log for `doc` (tests change the record and write it back).
pub fn write_doc(dir: &Path, doc: &BisectDoc) -> Result<(), String> {
    write(
        &dir.join(BISECT_JSON),
        &(serde_json::to_string_pretty(doc).map_err(|e| e.to_string())? + "\n"),
    )?;
    write(&dir.join(BISECT_LOG), &git_log(doc))
}
