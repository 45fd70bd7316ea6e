//! The report of an `xrunrig bisect` directory: what was bisected (rig, setting,
//! variant, tree, the ends, the range), the rule in words, every step (role, commit,
//! verdict, passes, p against each end, build and run time), the first bad commit and
//! its confirmation, the error rate, the time spent, how to replay it in the tree, and
//! the plot of each tested commit's pass fraction in history's order.

use super::common::fmt_dur;
use super::part::Part;
use crate::doc::Block;
use crate::load::Results;
use crate::load::bisect::BisectData;
use crate::out::Ctx;
use crate::plot::bisect::BisectPlot;
use results::bisect::{BISECT_LOG, Commit, Outcome, Role, Step, Verdict};

/// How a role reads in a table.
pub fn role_word(r: Role) -> &'static str {
    match r {
        Role::GoodEnd => "good end",
        Role::BadEnd => "bad end",
        Role::Step => "step",
        Role::Revert => "revert",
    }
}

/// A p-value as the bisection prints it: its levels are small, so two significant
/// digits in exponent form.
pub fn fmt_p(p: Option<f64>) -> String {
    p.map_or("-".into(), |v| format!("{v:.2e}"))
}

/// "0123456789ab subject".
fn named(c: &Commit) -> String {
    if c.subject.is_empty() {
        c.short().to_string()
    } else {
        format!("{} {}", c.short(), c.subject)
    }
}

/// What a step's commit is: the commit, or for the revert the bad end without the
/// first bad commit.
fn commit_text(d: &BisectData, s: &Step) -> String {
    match (s.role, &d.doc.first_bad) {
        (Role::Revert, Some(f)) => format!("{} with {} reverted", named(&s.commit), f.short()),
        _ => named(&s.commit),
    }
}

/// "(commit 8 of 16)", when its place is known.
fn place(d: &BisectData, s: &Step) -> String {
    match (s.role, d.position(s)) {
        (Role::Step, Some(p)) => format!(" (commit {p} of {})", d.doc.range),
        _ => String::new(),
    }
}

/// One line per tested commit, as the verdict lists them.
pub fn step_line(d: &BisectData, s: &Step) -> String {
    let counts = format!("{}/{} trials passed", s.passed, s.trials);
    let what = format!(
        "{} {}{}",
        capital(role_word(s.role)),
        commit_text(d, s),
        place(d, s)
    );
    match s.verdict {
        Verdict::Measured => {
            let against = match s.role {
                Role::GoodEnd => s.p_vs_bad,
                _ => s.p_vs_good,
            };
            format!(
                "{what}: {counts}{}.",
                against.map_or(String::new(), |p| format!(
                    " (the ends compared: p = {})",
                    fmt_p(Some(p))
                ))
            )
        }
        Verdict::Good | Verdict::Bad => format!(
            "{what}: {}, {counts} (p against the good end {}, against the bad end {}).",
            s.verdict.word(),
            fmt_p(s.p_vs_good),
            fmt_p(s.p_vs_bad)
        ),
        Verdict::Undecided | Verdict::BuildFailed | Verdict::RunFailed => {
            let why = s
                .note
                .as_deref()
                .and_then(|n| n.lines().next())
                .map_or(String::new(), |n| format!(": {n}"));
            format!("{what}: {}{why}.", s.verdict.word())
        }
    }
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// The confirmation in words.
fn confirmation_text(confirmed: Option<bool>, first: &Commit) -> String {
    match confirmed {
        Some(true) => format!(
            "confirmed: the bad end with {} reverted behaves like the good end",
            first.short()
        ),
        Some(false) => format!(
            "NOT confirmed: the bad end with {} reverted still behaves like the bad end (the \
             change has another cause too, or a step was called wrongly)",
            first.short()
        ),
        None => format!(
            "unconfirmed: the bad end with {} reverted could not be decided",
            first.short()
        ),
    }
}

/// Steps decided good or bad (each can be wrong with probability `alpha_step`).
fn decided(d: &BisectData) -> usize {
    d.doc.steps.iter().filter(|s| !s.verdict.skipped()).count()
}

/// The verdict: a line per tested commit, and the conclusion: the first bad commit and
/// whether its revert confirmed it, or why there is none.
pub fn verdict(d: &BisectData) -> (Vec<String>, String) {
    let doc = &d.doc;
    let lines = d.tested().map(|s| step_line(d, s)).collect();
    let n = doc.steps.len();
    let conclusion = match &doc.outcome {
        Outcome::Found { confirmed } => {
            let f = doc.first_bad.clone().unwrap_or_default();
            format!(
                "Conclusion: the first bad commit is {} ({} step(s) over {} commits); {}.",
                named(&f),
                n,
                doc.range,
                confirmation_text(*confirmed, &f)
            )
        }
        Outcome::Candidates { commits } => format!(
            "Conclusion: no single first bad commit: steps were skipped, so it is one of {} \
             commits: {}.",
            commits.len(),
            commits
                .iter()
                .map(|c| c.short().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Outcome::EndsDoNotDiffer { why } => {
            format!("Conclusion: nothing was bisected: {}.", bare(why))
        }
        Outcome::Stopped { why } => format!(
            "Conclusion: the bisection stopped after {n} step(s) ({}); the same `xrunrig \
             bisect` command resumes it.",
            bare(why)
        ),
        Outcome::Unfinished => format!(
            "Conclusion: the bisection is unfinished after {n} step(s) (still running, or \
             killed: the same `xrunrig bisect` command resumes it)."
        ),
    };
    (lines, conclusion)
}

/// The engine's reason, to be set inside a sentence of the report's.
fn bare(why: &str) -> &str {
    why.trim().trim_end_matches('.')
}

/// "What ran": the rig, setting and variant, the tree and its ends, the rule's sizes,
/// then where and with which xrunrig.
pub fn what_ran(res: &Results, d: &BisectData) -> Block {
    let doc = &d.doc;
    let i = &doc.inputs;
    let mut kv: Vec<(String, String)> = vec![
        ("kind".into(), res.kind.into()),
        ("rig".into(), format!("{} ({})", d.rig, i.rig)),
    ];
    if let Some(p) = &i.profile {
        kv.push(("profile".into(), p.clone()));
    }
    kv.push(("setting".into(), i.setting.clone()));
    kv.push(("variant".into(), i.variant.clone()));
    kv.push(("tree".into(), i.tree.clone()));
    kv.push((
        "good end".into(),
        format!("{} {}", i.good.sha, i.good.subject),
    ));
    kv.push(("bad end".into(), format!("{} {}", i.bad.sha, i.bad.subject)));
    kv.push((
        "range".into(),
        format!(
            "{} commits (git rev-list --count good..bad: the bad end counted, the good one not)",
            doc.range
        ),
    ));
    if !i.patches.is_empty() {
        kv.push((
            "patches".into(),
            i.patches
                .iter()
                .map(|p| {
                    format!(
                        "{} (sha256 {})",
                        p.file,
                        p.sha256.get(..16).unwrap_or(&p.sha256)
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    kv.push((
        "trials".into(),
        format!(
            "batches of {} (one guest boot each), at most {} per step; {} CPUs",
            doc.rule.batch, i.max_trials, i.cpus
        ),
    ));
    kv.push(("started".into(), doc.started.clone()));
    kv.push(("wall time".into(), fmt_dur(doc.wall_s)));
    if !doc.xrunrig.is_empty() {
        kv.push(("xrunrig".into(), doc.xrunrig.clone()));
    }
    // Not the first run's times, command or interruption: they are one boot's.
    if let Some(h) = &res.run.host {
        kv.push(("host".into(), h.clone()));
    }
    Block::KeyVals(kv)
}

/// The kernel: one per tested commit, built from the tree; how they were configured
/// and the guest they booted in (the first run's run.json).
pub fn kernel(res: &Results, d: &BisectData) -> Vec<Block> {
    let builds: Vec<_> = d.tested().filter_map(|s| s.build.as_ref()).collect();
    let mut kv = vec![(
        "kernels".into(),
        format!(
            "one per tested commit, built from {} ({} built or taken from the build cache; \
             each step's version and config hash are in export/steps.csv)",
            d.doc.inputs.tree,
            builds.len()
        ),
    )];
    let mut configs: Vec<&str> = builds.iter().filter_map(|b| b.config.as_deref()).collect();
    configs.sort_unstable();
    configs.dedup();
    if !configs.is_empty() {
        kv.push(("config".into(), configs.join("; ")));
    }
    let k = res.run.kernel.clone().unwrap_or_default();
    if let Some(m) = k.machine {
        kv.push(("machine".into(), m));
    }
    if let Some(p) = k.preemption {
        kv.push(("preemption".into(), format!("{p} (the first run's kernel)")));
    }
    if let Some(g) = &res.run.guest {
        let mut s = String::from("QEMU");
        for (name, v) in [
            ("accel", &g.accel),
            ("cpus", &g.cpus.map(|c| c.to_string())),
            ("memory", &g.memory),
            ("qemu", &g.qemu),
        ] {
            if let Some(v) = v {
                s += &format!(", {name} {v}");
            }
        }
        kv.push(("guest".into(), s));
    }
    vec![Block::KeyVals(kv)]
}

/// The step table: the ends, each step in the order tested, the confirmation.
pub fn table(d: &BisectData) -> Vec<Block> {
    let rows = d
        .tested()
        .map(|s| {
            let subject = match (s.role, &d.doc.first_bad) {
                (Role::Revert, Some(f)) => format!("{} reverted", f.short()),
                _ => s.commit.subject.clone(),
            };
            vec![
                role_word(s.role).to_string(),
                s.commit.short().to_string(),
                subject,
                s.verdict.word().to_string(),
                format!("{}/{}", s.passed, s.trials),
                fmt_p(s.p_vs_good),
                fmt_p(s.p_vs_bad),
                format!("{:.0}", s.build_s),
                format!("{:.0}", s.run_s),
            ]
        })
        .collect();
    vec![
        Block::Para(format!(
            "Every commit tested, in the order tested: the ends first, the confirmation last. \
             passed: trials that passed ({}), of those run; p vs good, p vs bad: Fisher's \
             exact two-sided p of its passes against each end's.",
            d.doc.rule.criterion
        )),
        Block::Table {
            head: [
                "role",
                "commit",
                "subject",
                "verdict",
                "passed",
                "p vs good",
                "p vs bad",
                "build s",
                "run s",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows,
            right: vec![false, false, false, false, true, true, true, true, true],
        },
    ]
}

/// "First bad commit": the commit, where it is, and its confirmation; or the
/// candidates, or why there is none.
fn first_bad_blocks(d: &BisectData) -> Vec<Block> {
    let doc = &d.doc;
    match &doc.outcome {
        Outcome::Found { confirmed } => {
            let f = doc.first_bad.clone().unwrap_or_default();
            let mut kv = vec![
                ("commit".to_string(), f.sha.clone()),
                ("subject".to_string(), f.subject.clone()),
            ];
            if let Some(p) = d
                .tested()
                .find(|s| s.commit.sha == f.sha && s.role != Role::Revert)
                .and_then(|s| d.position(s))
            {
                kv.push((
                    "where".into(),
                    format!("commit {p} of {} after the good end", doc.range),
                ));
            }
            kv.push((
                "confirmation".into(),
                confirmation_text(*confirmed, &f)
                    + &doc.confirmation.as_ref().map_or(String::new(), |c| {
                        format!(" ({}/{} trials passed)", c.passed, c.trials)
                    }),
            ));
            vec![
                Block::KeyVals(kv),
                Block::Para(format!(
                    "To see the change: git -C {} show {}",
                    doc.inputs.tree,
                    f.short()
                )),
            ]
        }
        Outcome::Candidates { commits } => vec![
            Block::Para(
                "Steps were skipped (they did not build, their run failed, or they were like \
                 neither end), so git cannot name one commit; the first bad commit is one of:"
                    .into(),
            ),
            Block::Bullets(commits.iter().map(named).collect()),
        ],
        Outcome::EndsDoNotDiffer { why } => vec![Block::Para(format!(
            "None: the ends were compared first, and {}.",
            bare(why)
        ))],
        Outcome::Stopped { why } => vec![Block::Para(format!(
            "Not yet: the bisection stopped ({}). Give the same `xrunrig bisect` command \
             (with the same --out) to resume it from the last step recorded.",
            bare(why)
        ))],
        Outcome::Unfinished => vec![Block::Para(
            "Not yet: the bisection is unfinished (still running, or killed). Give the same \
             `xrunrig bisect` command (with the same --out) to resume it."
                .into(),
        )],
    }
}

/// "The rule" and "Error rate".
fn rule_blocks(d: &BisectData) -> (Vec<Block>, Vec<Block>) {
    let doc = &d.doc;
    let r = &doc.rule;
    let looks: Vec<String> = r.looks.iter().map(u32::to_string).collect();
    let rule = vec![
        Block::Para(format!("{}.", capital(r.text.trim_end_matches('.')))),
        Block::KeyVals(vec![
            ("trial passes".into(), r.criterion.clone()),
            ("test".into(), r.test.replace('_', " ")),
            (
                "looks".into(),
                format!(
                    "after {} trials, each at p ≤ {:.2e}",
                    looks.join(", "),
                    r.per_look
                ),
            ),
        ]),
    ];
    let k = decided(d);
    let rate = if doc.overall_alpha > 0.0 {
        format!(
            "A decided step is called wrongly with probability at most {} (Bonferroni over its \
             looks), the ends' comparison at most {}; with {k} step(s) decided, the \
             bisection is wrong somewhere with probability at most {} (their sum). Skipped \
             steps cannot send it astray: they only cost a step.",
            r.alpha_step,
            r.alpha_ends,
            fmt_alpha(doc.overall_alpha)
        )
    } else {
        format!(
            "The ends were not found to differ, so no step was decided; their comparison's \
             error rate is at most {}.",
            r.alpha_ends
        )
    };
    (rule, vec![Block::Para(rate)])
}

fn fmt_alpha(a: f64) -> String {
    let s = format!("{a:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// "Time": the wall time, and what building and running took.
fn time_blocks(d: &BisectData) -> Vec<Block> {
    let build: f64 = d.tested().map(|s| s.build_s).sum();
    let run: f64 = d.tested().map(|s| s.run_s).sum();
    let boots: usize = d.tested().map(|s| s.runs.len()).sum();
    vec![Block::KeyVals(vec![
        ("wall time".into(), fmt_dur(d.doc.wall_s)),
        ("building".into(), fmt_dur(build)),
        (
            "running".into(),
            format!("{} in {boots} guest boot(s)", fmt_dur(run)),
        ),
    ])]
}

/// "Replay": the decisions again in the tree, and the runs behind each step.
fn replay_blocks(res: &Results, d: &BisectData) -> Vec<Block> {
    let tree = &d.doc.inputs.tree;
    // Absolute: the commands run in the tree, not here.
    let log = std::fs::canonicalize(&res.dir)
        .unwrap_or_else(|_| res.dir.clone())
        .join(BISECT_LOG);
    let mut out = vec![
        Block::Para(format!(
            "{BISECT_LOG} holds the steps in `git bisect log`'s form: in the tree, git \
             repeats the bisection's decisions without building or running anything and \
             names the first bad commit (skipped steps stay skipped; the revert is not \
             git's):"
        )),
        Block::Pre(vec![
            format!("cd {tree}"),
            format!("git bisect replay {}", log.display()),
            "git bisect reset".into(),
        ]),
    ];
    let first = d.tested().find(|s| !s.runs.is_empty());
    if let Some(s) = first {
        out.push(Block::Para(format!(
            "Each batch of trials is an ordinary results directory under runs/ (listed per \
             step in export/steps.csv), for `xrunrig report` or `xrunrig compare`: e.g. \
             xrunrig report {}",
            res.dir.join(&s.runs[0]).display()
        )));
    }
    out
}

/// The plot of the tested commits in history's order.
pub fn plots(d: &BisectData, ctx: &mut Ctx) -> Result<Vec<Block>, String> {
    let r = ctx.red.clone();
    let i = &d.doc.inputs;
    let p = BisectPlot {
        title: r.apply(&format!(
            "{}: bisection of {} commits, {} / {}",
            ctx.rig, d.doc.range, i.setting, i.variant
        )),
        data: d,
    };
    ctx.save(&p, "plots/bisect_steps")?;
    let x = if d.positions_known() {
        "in history's order (commits after the good end)"
    } else {
        "in the order tested (this bisect.json records no commit's place in history)"
    };
    Ok(vec![Block::Image {
        file: "plots/bisect_steps".into(),
        caption: format!(
            "each tested commit {x} against the share of its trials that passed, coloured by \
             its verdict; numbers: the order tested; the dashed line: the first bad commit"
        ),
    }])
}

/// A bisection's part of the report, writing its plot.
pub fn part(res: &Results, d: &BisectData, ctx: &mut Ctx) -> Result<Part, String> {
    let (verdict, conclusion) = verdict(d);
    let plots = plots(d, ctx)?;
    let (rule, rate) = rule_blocks(d);
    let sections = vec![
        ("First bad commit".to_string(), first_bad_blocks(d)),
        ("The rule".to_string(), rule),
        ("Error rate".to_string(), rate),
        ("Time".to_string(), time_blocks(d)),
        ("Replay".to_string(), replay_blocks(res, d)),
    ];
    Ok(Part {
        conclusion,
        verdict,
        table: table(d),
        what_ran: what_ran(res, d),
        kernel: Some(kernel(res, d)),
        sections,
        plots,
    })
}
