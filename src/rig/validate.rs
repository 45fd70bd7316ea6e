//! Turns a parsed rig file into plans, collecting every problem with its position.

use super::limits::{self, MAX_INSTANCES, MAX_OPS, MAX_REPEATS, MAX_THREADS, MAX_VARIANTS};
use super::model::*;
use super::plan::*;
use super::units::{Bound, BoundOp, parse_duration, unit_scale};
use super::{instruments, livefx};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use toml::Spanned;

use super::problem::Problem;

/// Upper bound on samples one mark keeps per trial, so memory stays bounded.
pub const MARK_CAP: usize = 100_000;

pub struct Checker<'a> {
    pub problems: Vec<Problem>,
    rig: &'a RigFile,
}

fn at<T>(s: &Spanned<T>) -> Range<usize> {
    s.span()
}

impl<'a> Checker<'a> {
    pub fn new(rig: &'a RigFile) -> Self {
        Checker {
            problems: Vec::new(),
            rig,
        }
    }

    fn err(&mut self, span: Range<usize>, msg: impl Into<String>) {
        self.problems.push(Problem {
            span,
            msg: msg.into(),
        });
    }

    fn duration(&mut self, s: &Spanned<String>) -> u64 {
        match parse_duration(s.get_ref()) {
            Ok(v) => v,
            Err(e) => {
                self.err(at(s), e);
                0
            }
        }
    }

    fn cpus(&mut self, spec: &Spanned<CpuSpec>) -> Vec<usize> {
        match spec.get_ref() {
            CpuSpec::List(v) => {
                let mut out = Vec::new();
                for &c in v {
                    if !(0..limits::cpu_limit() as i64).contains(&c) {
                        self.err(at(spec), limits::cpu_refusal(c));
                    } else {
                        out.push(c as usize);
                    }
                }
                out.sort_unstable();
                out.dedup();
                if out.is_empty() {
                    self.err(at(spec), "cpus is empty: list at least one CPU");
                }
                out
            }
            CpuSpec::Text(s) => match limits::parse_cpu_list(s, limits::cpu_limit()) {
                Ok(v) if !v.is_empty() => v,
                Ok(_) => {
                    self.err(at(spec), "cpus is empty: list at least one CPU");
                    vec![]
                }
                Err(e) => {
                    self.err(at(spec), format!("cpus: {e}; write e.g. [1, 3] or \"1-3\""));
                    vec![]
                }
            },
        }
    }

    fn policy(&mut self, p: Option<&Spanned<String>>) -> Policy {
        match p {
            None => Policy::Fifo,
            Some(s) => Policy::parse(s.get_ref()).unwrap_or_else(|| {
                self.err(
                    at(s),
                    format!("unknown policy '{}': use fifo, rr or other", s.get_ref()),
                );
                Policy::Fifo
            }),
        }
    }

    fn priority(&mut self, policy: Policy, p: Option<&Spanned<i64>>, span: Range<usize>) -> i32 {
        match (policy, p) {
            (Policy::Other, None) => 0,
            (_, None) => {
                self.err(span, "a fifo or rr thread needs a priority (1..=99)");
                1
            }
            (Policy::Other, Some(v)) => {
                if !(-20..=19).contains(v.get_ref()) {
                    self.err(
                        at(v),
                        format!(
                            "priority {} is out of range for policy other: it is the nice value, -20..=19",
                            v.get_ref()
                        ),
                    );
                }
                *v.get_ref() as i32
            }
            (_, Some(v)) => {
                if !(1..=99).contains(v.get_ref()) {
                    self.err(
                        at(v),
                        format!(
                            "priority {} is out of range for fifo/rr: use 1..=99",
                            v.get_ref()
                        ),
                    );
                }
                *v.get_ref() as i32
            }
        }
    }

    fn protocol(&mut self, l: &Spanned<LockDef>) -> Protocol {
        match l.get_ref().protocol.get_ref().as_str() {
            "inherit" => Protocol::Inherit,
            "none" => Protocol::None,
            other => {
                self.err(
                    at(&l.get_ref().protocol),
                    format!("unknown lock protocol '{other}': use inherit or none"),
                );
                Protocol::None
            }
        }
    }
}

/// Names that steps refer to, resolved to indices across all threads of a plan.
#[derive(Default)]
struct Names {
    events: Vec<String>,
    barriers: Vec<(String, BTreeSet<String>)>,
    signalled: BTreeSet<String>,
    waited: BTreeMap<String, Range<usize>>,
}

impl Names {
    fn event(&mut self, n: &str) -> usize {
        if let Some(i) = self.events.iter().position(|e| e == n) {
            return i;
        }
        self.events.push(n.to_string());
        self.events.len() - 1
    }
    fn barrier(&mut self, n: &str, thread: &str) -> usize {
        let i = match self.barriers.iter().position(|(b, _)| b == n) {
            Some(i) => i,
            None => {
                self.barriers.push((n.to_string(), BTreeSet::new()));
                self.barriers.len() - 1
            }
        };
        self.barriers[i].1.insert(thread.to_string());
        i
    }
}

struct ThreadCtx<'b> {
    thread: String,
    base: String,
    instance: u32,
    locks: &'b [LockPlan],
    held: Vec<usize>,
    marks: &'b mut Vec<MarkSlot>,
    names: &'b mut Names,
}

/// The action key of a step, for messages.
fn step_keys(s: &StepDef) -> Vec<&'static str> {
    let mut k = Vec::new();
    macro_rules! has {
        ($f:ident) => {
            if s.$f.is_some() {
                k.push(stringify!($f));
            }
        };
    }
    has!(run);
    has!(spin);
    has!(spin_until);
    has!(sleep);
    has!(lock);
    has!(unlock);
    has!(signal);
    has!(wait);
    has!(barrier);
    has!(mark);
    has!(repeat);
    has!(repeat_for);
    k
}

fn compile_steps(
    ck: &mut Checker,
    cx: &mut ThreadCtx,
    steps: &[Spanned<StepDef>],
    mult: usize,
) -> Vec<Op> {
    let mut ops = Vec::new();
    for st in steps {
        let s = st.get_ref();
        let keys = step_keys(s);
        if keys.len() != 1 {
            let msg = if keys.is_empty() {
                "a step needs one action: run, spin, spin_until, sleep, lock, unlock, signal, wait, barrier, mark, repeat or repeat_for".to_string()
            } else {
                format!(
                    "a step has one action, this one has {}: split it into separate steps",
                    keys.join(" and ")
                )
            };
            ck.err(at(st), msg);
            continue;
        }
        if s.steps.is_some() && s.repeat.is_none() && s.repeat_for.is_none() {
            ck.err(
                at(st),
                "'steps' inside a step belongs to repeat or repeat_for",
            );
        }
        let lock_idx = |ck: &mut Checker, n: &Spanned<String>| -> Option<usize> {
            let i = cx.locks.iter().position(|l| &l.name == n.get_ref());
            if i.is_none() {
                ck.err(
                    at(n),
                    format!(
                        "lock '{}' is not defined: add [locks.{}] with protocol = \"inherit\" or \"none\"",
                        n.get_ref(),
                        n.get_ref()
                    ),
                );
            }
            i
        };
        if let Some(d) = &s.run {
            ops.push(Op::Run(ck.duration(d)));
        } else if let Some(d) = &s.spin {
            ops.push(Op::Spin(ck.duration(d)));
        } else if let Some(d) = &s.sleep {
            ops.push(Op::Sleep(ck.duration(d)));
        } else if let Some(e) = &s.spin_until {
            cx.names.waited.entry(e.get_ref().clone()).or_insert(at(e));
            ops.push(Op::SpinUntil(cx.names.event(e.get_ref())));
        } else if let Some(e) = &s.wait {
            cx.names.waited.entry(e.get_ref().clone()).or_insert(at(e));
            ops.push(Op::Wait(cx.names.event(e.get_ref())));
        } else if let Some(e) = &s.signal {
            cx.names.signalled.insert(e.get_ref().clone());
            ops.push(Op::Signal(cx.names.event(e.get_ref())));
        } else if let Some(b) = &s.barrier {
            ops.push(Op::Barrier(cx.names.barrier(b.get_ref(), &cx.thread)));
        } else if let Some(n) = &s.lock {
            if let Some(i) = lock_idx(ck, n) {
                if cx.held.contains(&i) {
                    ck.err(
                        at(n),
                        format!(
                            "thread '{}' locks '{}' while already holding it: it would deadlock",
                            cx.base,
                            n.get_ref()
                        ),
                    );
                } else {
                    cx.held.push(i);
                }
                ops.push(Op::Lock(i));
            }
        } else if let Some(n) = &s.unlock {
            if let Some(i) = lock_idx(ck, n) {
                if let Some(p) = cx.held.iter().position(|&h| h == i) {
                    cx.held.remove(p);
                } else {
                    ck.err(
                        at(n),
                        format!(
                            "thread '{}' unlocks '{}' without holding it",
                            cx.base,
                            n.get_ref()
                        ),
                    );
                }
                ops.push(Op::Unlock(i));
            }
        } else if let Some(m) = &s.mark {
            let name = m.get_ref();
            let slot = match cx
                .marks
                .iter()
                .position(|x| x.thread == cx.thread && &x.mark == name)
            {
                Some(i) => {
                    let cap = (cx.marks[i].capacity + mult).min(MARK_CAP);
                    cx.marks[i].capacity = cap;
                    i
                }
                None => {
                    cx.marks.push(MarkSlot {
                        thread: cx.thread.clone(),
                        base: cx.base.clone(),
                        instance: cx.instance,
                        mark: name.clone(),
                        capacity: mult.min(MARK_CAP),
                    });
                    cx.marks.len() - 1
                }
            };
            ops.push(Op::Mark(slot));
        } else if s.repeat.is_some() || s.repeat_for.is_some() {
            let Some(body) = &s.steps else {
                ck.err(at(st), "repeat needs steps = [ ... ] to repeat");
                continue;
            };
            let held_before = cx.held.clone();
            if let Some(n) = &s.repeat {
                let times = *n.get_ref();
                if times == 0 {
                    ck.err(at(n), "repeat = 0 does nothing: use 1 or more");
                }
                let m = mult.saturating_mul(times as usize).min(MARK_CAP);
                let body = compile_steps(ck, cx, body, m);
                ops.push(Op::Repeat { times, body });
            } else if let Some(d) = &s.repeat_for {
                let ns = ck.duration(d);
                let body = compile_steps(ck, cx, body, MARK_CAP);
                ops.push(Op::RepeatFor { ns, body });
            }
            if cx.held != held_before {
                ck.err(
                    at(st),
                    "the steps of a repeat must unlock every lock they lock",
                );
                cx.held = held_before;
            }
        }
    }
    ops
}

/// `run` steps become migrate-disabled runs (the thread's `migrate_disable = true`).
fn migrate_disabled_runs(ops: &mut [Op]) {
    for op in ops {
        match op {
            Op::Run(ns) => *op = Op::RunMigrateDisabled(*ns),
            Op::Repeat { body, .. } | Op::RepeatFor { body, .. } => migrate_disabled_runs(body),
            _ => {}
        }
    }
}

/// Checks the whole file and builds one plan per variant.
pub fn compile(ck: &mut Checker, path: &std::path::Path, text: &str) -> Option<Rig> {
    let rig = ck.rig;
    let name = rig_name(ck, rig, path);
    let kind = kind(ck, rig);
    let (trials, trial_timeout_ns, trial_gap_ns) = trial_shape(ck, rig);
    if kind == Kind::Trials && rig.threads.is_empty() {
        ck.err(0..0, "the rig has no threads: add at least one [[threads]]");
    }
    let seen = thread_names(ck, rig);
    // Nothing is expanded (instances, variants) while a count is past its cap.
    if !within_caps(ck, rig) {
        return None;
    }
    check_variant_defs(ck, rig, &seen);
    let mut variant_defs: Vec<Option<&Spanned<VariantDef>>> =
        rig.variants.iter().map(Some).collect();
    if variant_defs.is_empty() {
        variant_defs.push(None);
    }
    let mut found = Found::default();
    let mut variants = Vec::new();
    for (vi, vdef) in variant_defs.iter().enumerate() {
        // Problems in the shared parts are reported once, from the first variant.
        let before = ck.problems.len();
        variants.push(compile_variant(ck, rig, *vdef, text, &mut found));
        if vi > 0 {
            // Same file text: the first variant already reported shared problems.
            let extra: Vec<Problem> = ck.problems.drain(before..).collect();
            for p in extra {
                if !ck
                    .problems
                    .iter()
                    .any(|q| q.span == p.span && q.msg == p.msg)
                {
                    ck.problems.push(p);
                }
            }
        }
    }
    for v in &variants {
        let samples: usize = v.plan.marks.iter().map(|m| m.capacity).sum();
        if samples > limits::MAX_MARK_SAMPLES {
            ck.err(
                0..0,
                format!(
                    "variant '{}' keeps up to {samples} mark timestamps per trial; at most {}: fewer marks inside repeats, or fewer instances",
                    v.name,
                    limits::MAX_MARK_SAMPLES
                ),
            );
        }
    }
    let metrics = compile_metrics(ck, rig, kind, &seen, &found);
    early_ends(ck, rig, &metrics, &mut variants);
    for v in &mut variants {
        // Only when no metric is left out: one without end_early may still be waiting.
        v.plan.end_when_measured =
            !v.plan.early_ends.is_empty() && v.plan.early_ends.len() == metrics.len();
    }
    if kind == Kind::Trials
        && metrics.is_empty()
        && !rig.threads.is_empty()
        && rig.instruments.is_none()
    {
        ck.err(
            0..0,
            "the rig measures nothing: add a [metrics.NAME] with from = \"thread.mark\" and to = \"thread.mark\", or [instruments]",
        );
    }

    let (livefx, instruments) = compile_tables(rig, kind, &seen, &variants[0].plan, ck);

    if !ck.problems.is_empty() {
        return None;
    }
    Some(Rig {
        name,
        description: rig.description.clone().unwrap_or_default(),
        path: path.to_path_buf(),
        text: text.to_string(),
        kind,
        trials,
        trial_timeout_ns,
        trial_gap_ns,
        metrics,
        variants,
        instruments,
        livefx,
    })
}

/// The rig's `name`, else its file's stem (made path-safe): it names the results
/// directory, so a name that could leave `results/` is refused.
fn rig_name(ck: &mut Checker, rig: &RigFile, path: &std::path::Path) -> String {
    match &rig.name {
        Some(n) => {
            if let Err(e) = limits::check_path_name(n.get_ref()) {
                ck.err(at(n), format!("name {e}"));
            }
            n.get_ref().clone()
        }
        None => limits::path_safe(
            &path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "rig".into()),
        ),
    }
}

/// `kind`, and a `[livefx]` table exactly when it is livefx.
fn kind(ck: &mut Checker, rig: &RigFile) -> Kind {
    let kind = match rig.kind.as_ref().map(|k| k.get_ref().as_str()) {
        None | Some("trials") => Kind::Trials,
        Some("livefx") => Kind::Livefx,
        Some(other) => {
            ck.err(
                at(rig.kind.as_ref().unwrap()),
                format!("unknown kind '{other}': use \"trials\" or \"livefx\""),
            );
            Kind::Trials
        }
    };
    if kind == Kind::Livefx && rig.livefx.is_none() {
        ck.err(0..0, "kind = \"livefx\" needs a [livefx] table");
    }
    if kind == Kind::Trials
        && let Some(l) = &rig.livefx
    {
        ck.err(at(l), "a [livefx] table needs kind = \"livefx\"");
    }
    kind
}

/// `trials`, `trial_timeout` and `trial_gap` (ns), with their defaults.
fn trial_shape(ck: &mut Checker, rig: &RigFile) -> (u32, u64, u64) {
    let trials = rig.trials.as_ref().map_or(8, |t| *t.get_ref());
    if let Some(t) = &rig.trials
        && !(1..=limits::MAX_TRIALS).contains(&trials)
    {
        ck.err(at(t), format!("trials must be 1..={}", limits::MAX_TRIALS));
    }
    let trial_timeout_ns = rig
        .trial_timeout
        .as_ref()
        .map_or(10_000_000_000, |d| ck.duration(d));
    if let Some(t) = &rig.trial_timeout
        && trial_timeout_ns == 0
    {
        ck.err(at(t), "trial_timeout must be more than 0");
    }
    if let Some(t) = &rig.trial_timeout
        && trial_timeout_ns > limits::MAX_TRIAL_NS
    {
        ck.err(at(t), "trial_timeout is at most 24 h");
    }
    let trial_gap_ns = rig
        .trial_gap
        .as_ref()
        .map_or(100_000_000, |d| ck.duration(d));
    if let Some(g) = &rig.trial_gap
        && trial_gap_ns > limits::MAX_GAP_NS
    {
        ck.err(at(g), "trial_gap is at most 1 h");
    }
    // The run's own budget (trials × variants here; settings are the profile's): it
    // must fit, or the watchdog's bound would not.
    let variants = rig.variants.len().max(1) as u64;
    let counts_ok = (1..=limits::MAX_TRIALS).contains(&trials)
        && trial_timeout_ns <= limits::MAX_TRIAL_NS
        && trial_gap_ns <= limits::MAX_GAP_NS;
    if counts_ok
        && let Err(e) = limits::run_estimate_ns(
            &[trial_timeout_ns, trial_gap_ns],
            &[u64::from(trials), variants],
        )
    {
        let span = rig
            .trials
            .as_ref()
            .map(at)
            .or(rig.trial_timeout.as_ref().map(at))
            .unwrap_or(0..0);
        ck.err(span, format!("trials × trial_timeout: {e}"));
    }
    (trials, trial_timeout_ns, trial_gap_ns)
}

/// Thread names are unique and well formed; returns them (`seen`).
fn thread_names(ck: &mut Checker, rig: &RigFile) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for t in &rig.threads {
        let n = t.get_ref().name.get_ref();
        if n.is_empty()
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            ck.err(
                at(&t.get_ref().name),
                format!("thread name '{n}' must be letters, digits, '_' or '-'"),
            );
        }
        if !seen.insert(n.clone()) {
            ck.err(
                at(&t.get_ref().name),
                format!("thread '{n}' is defined twice"),
            );
        }
        if let Some(i) = &t.get_ref().instances
            && !(1..=MAX_INSTANCES).contains(i.get_ref())
        {
            ck.err(at(i), format!("instances must be 1..={MAX_INSTANCES}"));
        }
    }
    seen
}

/// The counts that multiply into threads, steps and loops are within their caps:
/// instances and variants, the steps every thread instance of every variant compiles
/// to, and nested repeats. False (with the problems added) when one is not, so
/// `compile` stops before expanding anything.
fn within_caps(ck: &mut Checker, rig: &RigFile) -> bool {
    let before = ck.problems.len();
    if rig.variants.len() > MAX_VARIANTS {
        ck.err(
            at(&rig.variants[MAX_VARIANTS]),
            format!("at most {MAX_VARIANTS} variants"),
        );
    }
    let variants = rig.variants.len().max(1);
    let (mut threads, mut ops) = (0usize, 0usize);
    for t in &rig.threads {
        let td = t.get_ref();
        let n = td.instances.as_ref().map_or(1, |i| *i.get_ref()) as usize;
        threads = threads.saturating_add(n);
        if threads > MAX_THREADS {
            ck.err(
                at(&td.name),
                format!("at most {MAX_THREADS} thread instances in a rig (instances included)"),
            );
            break;
        }
        let steps = count_steps(&td.steps)
            .saturating_mul(n)
            .saturating_mul(variants);
        ops = ops.saturating_add(steps);
        if ops > MAX_OPS {
            ck.err(
                at(&td.name),
                format!(
                    "the rig compiles to more than {MAX_OPS} steps (steps × instances × variants): fewer steps or instances"
                ),
            );
            break;
        }
        check_repeats(ck, &td.steps, 1);
    }
    // Problems found earlier (a bad instances value) also stop the expansion.
    ck.problems.len() == before
        && rig.threads.iter().all(|t| {
            t.get_ref()
                .instances
                .as_ref()
                .is_none_or(|i| (1..=MAX_INSTANCES).contains(i.get_ref()))
        })
}

/// Steps in a list, those inside repeats included.
fn count_steps(steps: &[Spanned<StepDef>]) -> usize {
    steps.iter().fold(0usize, |a, s| {
        a.saturating_add(1)
            .saturating_add(s.get_ref().steps.as_deref().map_or(0, count_steps))
    })
}

/// Each repeat's count, times the counts of the repeats around it (`outer`), is at
/// most `MAX_REPEATS`: a loop that only signals or marks never looks at the clock.
fn check_repeats(ck: &mut Checker, steps: &[Spanned<StepDef>], outer: u64) {
    for st in steps {
        let s = st.get_ref();
        let mut inner = outer;
        if let Some(r) = &s.repeat {
            match outer.checked_mul(*r.get_ref()) {
                Some(x) if x <= MAX_REPEATS => inner = x,
                _ => {
                    ck.err(
                        at(r),
                        format!(
                            "repeat = {}{}: at most {MAX_REPEATS} iterations in all; use repeat_for = \"10 s\" for long loops",
                            r.get_ref(),
                            if outer > 1 {
                                format!(" inside repeats of {outer}")
                            } else {
                                String::new()
                            }
                        ),
                    );
                    continue;
                }
            }
        }
        if let Some(body) = &s.steps {
            check_repeats(ck, body, inner);
        }
    }
}

/// Variants: names unique, overrides name real locks and threads.
fn check_variant_defs(ck: &mut Checker, rig: &RigFile, seen: &BTreeSet<String>) {
    let mut vnames = BTreeSet::new();
    for v in rig.variants.iter() {
        let vd = v.get_ref();
        if !vnames.insert(vd.name.get_ref().clone()) {
            ck.err(
                at(&vd.name),
                format!("variant '{}' is defined twice", vd.name.get_ref()),
            );
        }
        for (ln, l) in &vd.locks {
            if !rig.locks.contains_key(ln) {
                ck.err(
                    at(l),
                    format!(
                        "variant '{}' overrides lock '{ln}', which is not defined",
                        vd.name.get_ref()
                    ),
                );
            }
        }
        for (tn, t) in &vd.threads {
            if !seen.contains(tn) {
                ck.err(
                    at(t),
                    format!(
                        "variant '{}' overrides thread '{tn}', which is not defined",
                        vd.name.get_ref()
                    ),
                );
            }
        }
    }
}

/// What the variants' plans tell the metrics: every (thread, mark) taken in any
/// variant, and each thread's instance count.
#[derive(Default)]
struct Found {
    marks: BTreeSet<(String, String)>,
    instances_of: BTreeMap<String, u32>,
}

/// One variant's plan: the rig's locks and threads with the variant's overrides.
fn compile_variant(
    ck: &mut Checker,
    rig: &RigFile,
    vdef: Option<&Spanned<VariantDef>>,
    text: &str,
    found: &mut Found,
) -> Variant {
    let locks: Vec<LockPlan> = rig
        .locks
        .iter()
        .map(|(n, l)| {
            let over = vdef.and_then(|v| v.get_ref().locks.get(n));
            LockPlan {
                name: n.clone(),
                protocol: ck.protocol(over.unwrap_or(l)),
            }
        })
        .collect();
    let mut names = Names::default();
    let mut marks = Vec::new();
    let mut threads = Vec::new();
    for t in &rig.threads {
        let td = t.get_ref();
        let over = vdef
            .and_then(|v| v.get_ref().threads.get(td.name.get_ref()))
            .map(|o| o.get_ref());
        let n = td
            .instances
            .as_ref()
            .map_or(1, |i| *i.get_ref())
            .clamp(1, MAX_INSTANCES);
        found.instances_of.insert(td.name.get_ref().clone(), n);
        let mut shared = Shared {
            locks: &locks,
            marks: &mut marks,
            names: &mut names,
        };
        threads.extend(compile_thread(ck, td, over, n, text, &mut shared));
    }
    for (ev, span) in &names.waited {
        if !names.signalled.contains(ev) {
            ck.err(
                span.clone(),
                format!("event '{ev}' is waited for but no thread signals it"),
            );
        }
    }
    for m in &marks {
        found.marks.insert((m.base.clone(), m.mark.clone()));
    }
    let barriers = names
        .barriers
        .iter()
        .map(|(n, ts)| (n.clone(), ts.len() as u32))
        .collect();
    Variant {
        name: vdef.map_or("default".into(), |v| v.get_ref().name.get_ref().clone()),
        description: vdef
            .and_then(|v| v.get_ref().description.clone())
            .unwrap_or_default(),
        plan: Plan {
            threads,
            locks,
            events: names.events,
            barriers,
            marks,
            early_ends: Vec::new(),
            end_when_measured: false,
        },
    }
}

/// What the threads of one variant share while their steps compile.
struct Shared<'b> {
    locks: &'b [LockPlan],
    marks: &'b mut Vec<MarkSlot>,
    names: &'b mut Names,
}

/// One `[[threads]]` entry (with the variant's override `over`) as its `n` instances.
fn compile_thread(
    ck: &mut Checker,
    td: &ThreadDef,
    over: Option<&ThreadOverride>,
    n: u32,
    text: &str,
    sh: &mut Shared,
) -> Vec<ThreadPlan> {
    let base = td.name.get_ref().clone();
    let policy = ck.policy(over.and_then(|o| o.policy.as_ref()).or(td.policy.as_ref()));
    let prio = ck.priority(
        policy,
        over.and_then(|o| o.priority.as_ref())
            .or(td.priority.as_ref()),
        at(&td.name),
    );
    let cpus_spec = over.and_then(|o| o.cpus.as_ref()).or(td.cpus.as_ref());
    let cpus_at = super::line_col(
        text,
        cpus_spec.map_or(td.name.span().start, |c| c.span().start),
    );
    let cpus = match cpus_spec {
        Some(c) => ck.cpus(c),
        None => crate::sys::online_cpus(),
    };
    if td.steps.is_empty() {
        ck.err(at(&td.name), format!("thread '{base}' has no steps"));
    }
    let mut threads = Vec::new();
    for inst in 0..n {
        let tname = if n == 1 {
            base.clone()
        } else {
            format!("{base}.{inst}")
        };
        let mut cx = ThreadCtx {
            thread: tname.clone(),
            base: base.clone(),
            instance: inst,
            locks: sh.locks,
            held: Vec::new(),
            marks: sh.marks,
            names: sh.names,
        };
        let mut ops = compile_steps(ck, &mut cx, &td.steps, 1);
        let md = over
            .and_then(|o| o.migrate_disable.as_ref())
            .or(td.migrate_disable.as_ref())
            .is_some_and(|m| *m.get_ref());
        if md {
            migrate_disabled_runs(&mut ops);
        }
        if !cx.held.is_empty() && inst == 0 {
            let held: Vec<String> = cx.held.iter().map(|&i| sh.locks[i].name.clone()).collect();
            ck.err(
                at(&td.name),
                format!(
                    "thread '{base}' never unlocks {}: add {{ unlock = \"{}\" }}",
                    held.join(", "),
                    held[0]
                ),
            );
        }
        threads.push(ThreadPlan {
            name: tname,
            base: base.clone(),
            instance: inst,
            policy,
            priority: prio,
            cpus: cpus.clone(),
            ops,
            cpus_at,
        });
    }
    threads
}

/// Metrics: marks exist, bound and unit parse.
fn compile_metrics(
    ck: &mut Checker,
    rig: &RigFile,
    kind: Kind,
    seen: &BTreeSet<String>,
    found: &Found,
) -> Vec<Metric> {
    let mut metrics = Vec::new();
    for (mname, m) in &rig.metrics {
        let md = m.get_ref();
        let from = metric_end(ck, mname, &md.from, seen, &found.marks);
        let to = metric_end(ck, mname, &md.to, seen, &found.marks);
        let (fi, ti) = (
            found.instances_of.get(&from.0).copied().unwrap_or(1),
            found.instances_of.get(&to.0).copied().unwrap_or(1),
        );
        if fi != ti && fi != 1 && ti != 1 {
            ck.err(
                at(m),
                format!("metric '{mname}': threads '{}' ({fi} instances) and '{}' ({ti}) cannot be paired", from.0, to.0),
            );
        }
        let unit = md
            .unit
            .as_ref()
            .map_or("ms".to_string(), |u| u.get_ref().clone());
        if unit_scale(&unit).is_none() {
            ck.err(
                at(md.unit.as_ref().unwrap()),
                format!("unknown unit '{unit}': use s, ms, us or ns"),
            );
        }
        let bound = md
            .bound
            .as_ref()
            .and_then(|b| match Bound::parse(b.get_ref()) {
                Ok(b) => Some(b),
                Err(e) => {
                    ck.err(at(b), e);
                    None
                }
            });
        let end_early = md.end_early.as_ref().filter(|e| *e.get_ref());
        if let Some(e) = end_early {
            end_early_bound(ck, mname, kind, md, bound, at(e));
        }
        metrics.push(Metric {
            name: mname.clone(),
            from,
            to,
            bound,
            unit,
            description: md.description.clone().unwrap_or_default(),
            end_early: end_early.is_some(),
        });
    }
    metrics
}

/// `end_early = true` (at `span`) needs a thread rig and an upper bound to end at.
fn end_early_bound(
    ck: &mut Checker,
    mname: &str,
    kind: Kind,
    md: &MetricDef,
    bound: Option<Bound>,
    span: Range<usize>,
) {
    if kind != Kind::Trials {
        ck.err(
            span,
            format!(
                "metric '{mname}': end_early is for thread rigs (kind = \"trials\"); remove it"
            ),
        );
        return;
    }
    match bound {
        // A bound that did not parse is reported where it is written.
        None if md.bound.is_some() => {}
        None => ck.err(
            span,
            format!(
                "metric '{mname}': end_early needs a bound to end the trial at: add e.g. bound = \"< 100 ms\""
            ),
        ),
        Some(b) if !matches!(b.op, BoundOp::Lt | BoundOp::Le) => ck.err(
            span,
            format!(
                "metric '{mname}': end_early needs an upper bound (< or <=): with '{}' a value that grows past its limit keeps it, so there is nothing to end early",
                md.bound.as_ref().map_or(String::new(), |b| b.get_ref().clone())
            ),
        ),
        Some(_) => {}
    }
}

/// Resolves each `end_early` metric against every variant's mark slots. The trial's
/// controlling thread watches one `from` and one `to` timestamp (no thread of the rig
/// does anything for it), so each must be a mark taken once per trial: one thread
/// instance, outside any repeat.
fn early_ends(ck: &mut Checker, rig: &RigFile, metrics: &[Metric], variants: &mut [Variant]) {
    for (mi, m) in metrics.iter().enumerate() {
        let Some(span) = rig
            .metrics
            .get(&m.name)
            .and_then(|d| d.get_ref().end_early.as_ref())
            .filter(|_| m.end_early && m.bound.is_some())
            .map(at)
        else {
            continue;
        };
        let Some(after) = m.bound.map(|b| b.limit_ns + u64::from(b.op == BoundOp::Le)) else {
            continue;
        };
        let mut reported = false;
        for v in variants.iter_mut() {
            let slot = |end: &(String, String)| -> Result<usize, String> {
                let slots: Vec<(usize, &MarkSlot)> = v
                    .plan
                    .marks
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.base == end.0 && s.mark == end.1)
                    .collect();
                match slots.as_slice() {
                    [(i, s)] if s.capacity == 1 => Ok(*i),
                    // A mark never taken is reported by the metric's own check.
                    [] => Err(String::new()),
                    many => Err(format!(
                        "metric '{}': end_early needs '{}.{}' taken once per trial (one thread instance, outside any repeat); it is taken up to {} times",
                        m.name,
                        end.0,
                        end.1,
                        many.iter().map(|(_, s)| s.capacity).sum::<usize>()
                    )),
                }
            };
            match (slot(&m.from), slot(&m.to)) {
                (Ok(from), Ok(to)) => v.plan.early_ends.push(EarlyEnd {
                    metric: mi,
                    from,
                    to,
                    after_ns: after,
                }),
                (Err(e), _) | (_, Err(e)) => {
                    if !e.is_empty() && !reported {
                        ck.err(span.clone(), e);
                        reported = true;
                    }
                }
            }
        }
    }
}

/// A metric's `from` or `to`: "thread.mark", a mark some thread takes.
fn metric_end(
    ck: &mut Checker,
    mname: &str,
    s: &Spanned<String>,
    seen: &BTreeSet<String>,
    marks: &BTreeSet<(String, String)>,
) -> (String, String) {
    let Some((t, mk)) = s.get_ref().split_once('.') else {
        ck.err(
            at(s),
            format!(
                "'{}' must name a mark as thread.mark, e.g. \"waiter.got\"",
                s.get_ref()
            ),
        );
        return (String::new(), String::new());
    };
    if !seen.contains(t) {
        ck.err(
            at(s),
            format!("metric '{mname}': thread '{t}' is not defined"),
        );
    } else if !marks.contains(&(t.to_string(), mk.to_string())) {
        ck.err(
            at(s),
            format!(
                "metric '{mname}': mark '{mk}' is never taken by thread '{t}': add {{ mark = \"{mk}\" }} to its steps"
            ),
        );
    }
    (t.to_string(), mk.to_string())
}

/// `[livefx]` (of a livefx rig) and `[instruments]`, checked against the threads
/// (`seen`), locks and marks (`first`, the first variant's plan) of the rest of the file.
fn compile_tables(
    rig: &RigFile,
    kind: Kind,
    seen: &BTreeSet<String>,
    first: &Plan,
    ck: &mut Checker,
) -> (Option<livefx::Config>, Option<instruments::Config>) {
    let livefx = rig
        .livefx
        .as_ref()
        .filter(|_| kind == Kind::Livefx)
        .map(|l| {
            let locks: Vec<String> = first.locks.iter().map(|l| l.name.clone()).collect();
            let marks: Vec<String> = first
                .marks
                .iter()
                .map(|m| format!("{}.{}", m.base, m.mark))
                .collect();
            livefx::compile(l, &locks, &marks, &mut ck.problems)
        });
    let instruments = rig.instruments.as_ref().map(|i| {
        let threads: Vec<String> = seen.iter().cloned().collect();
        instruments::compile(i.get_ref(), &threads, &mut ck.problems)
    });
    (livefx, instruments)
}
