//! `--until-decided`: which rigs it works for, each trial's pass or fail, and the
//! replay of a run's records through the sequential rule (`analysis::sequential`): the
//! sweep asks it after every round which variants still get trials, finish writes its
//! result into summary.json, and a guest run merged from several boots replays the
//! same records to the same decisions.

use crate::output::summary::TrialRecord;
use crate::rig::livefx::Pass;
use crate::rig::units::unit_scale;
use crate::rig::{Metric, Rig};
use analysis::sequential::{self, Look, Plan};
use results::trials::{Decided, DecidedPair, Decision};

/// The overall error rate: the chance, when two settings do not differ, that any look
/// of a variant's comparison calls one of them worse.
pub const ALPHA: f64 = 0.01;

/// The rule of one run.
#[derive(Debug, Clone)]
pub struct Rule {
    pub plan: Plan,
    /// What a trial must keep to pass.
    pub criterion: Criterion,
    /// The two settings compared, in sweep order.
    pub settings: [String; 2],
    pub variants: Vec<String>,
}

const SUPPORTED: &str = "--until-decided needs a per-trial pass or fail: a thread rig \
     (kind = \"trials\") with exactly one metric that has a bound, such as \
     rigs/pi-boost-affinity.toml or rigs/pi-inversion.toml, or an audio rig \
     (kind = \"livefx\") whose [livefx] table states pass = { misses = N } or \
     pass = { misses_per_minute = X }, such as rigs/livefx-push-ipi.toml";

/// A trial's pass or fail, one concept across rig kinds: each kind says what its
/// trials must keep (`RigKind::trial_verdict`); `--until-decided` counts passes with
/// it and a bisect classifies records read back from samples.jsonl with it.
#[derive(Debug, Clone, PartialEq)]
pub enum Criterion {
    /// A thread rig's one bounded metric: measured, every value within the bound.
    Bound(Metric),
    /// A livefx rig's `[livefx] pass`: the trial's deadline misses not injected at
    /// most the bound.
    Misses(Pass),
}

impl Criterion {
    /// A thread rig's criterion: its one metric with a bound; an error naming what it
    /// has instead.
    pub fn bounded_metric(rig: &Rig) -> Result<Criterion, String> {
        let bounded: Vec<&Metric> = rig.metrics.iter().filter(|m| m.bound.is_some()).collect();
        match bounded.as_slice() {
            [m] => Ok(Criterion::Bound((*m).clone())),
            [] => Err(format!("rig '{}' has no metric with a bound", rig.name)),
            many => Err(format!(
                "rig '{}' has several ({})",
                rig.name,
                many.iter()
                    .map(|m| m.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// Whether `r` passes. Only a completed trial (status ok) passes: a timed-out or
    /// aborted trial can hold marks or counts taken before it stopped, and what it
    /// measured then says nothing about whether the setting keeps the bound. A trial
    /// without the values the criterion reads does not pass either, nor one that ended
    /// early at the bound (the metric censored there: it had already failed).
    pub fn passed(&self, r: &TrialRecord) -> bool {
        if r.status != results::trials::TrialStatus::Ok {
            return false;
        }
        if let Criterion::Bound(m) = self
            && r.censored.contains_key(&m.name)
        {
            return false;
        }
        match self {
            Criterion::Bound(m) => within(r, m),
            Criterion::Misses(p) => misses_within(r, *p),
        }
    }

    /// summary.json's `decided.metric`: what is bounded.
    pub fn metric(&self) -> String {
        match self {
            Criterion::Bound(m) => m.name.clone(),
            Criterion::Misses(Pass::Misses(_)) => "misses".into(),
            Criterion::Misses(Pass::MissesPerMinute(_)) => "misses_per_minute".into(),
        }
    }

    /// summary.json's `decided.bound`: the bound, with its unit.
    pub fn bound(&self) -> String {
        match self {
            Criterion::Bound(m) => m.bound.map(|b| b.display(&m.unit)).unwrap_or_default(),
            Criterion::Misses(Pass::Misses(n)) => format!("≤ {n}"),
            Criterion::Misses(Pass::MissesPerMinute(x)) => format!("≤ {x}"),
        }
    }

    /// The pass in words, for the rule: "wait < 100 ms", "at most 0 deadline misses
    /// (not injected)".
    pub fn describe(&self) -> String {
        match self {
            Criterion::Bound(_) => format!("{} {}", self.metric(), self.bound()),
            Criterion::Misses(Pass::Misses(n)) => {
                format!("at most {n} deadline misses (not injected)")
            }
            Criterion::Misses(Pass::MissesPerMinute(x)) => {
                format!("at most {x} deadline misses (not injected) per minute")
            }
        }
    }
}

/// The plan's per-trial pass or fail (`xrunrig bisect` classifies each step's records
/// with it); an error saying what the rig lacks.
pub fn criterion(plan: &super::Plan) -> Result<Criterion, String> {
    plan.kind
        .trial_verdict(&plan.rig)
        .map_err(|why| format!("{SUPPORTED}; {why}"))
}

/// The rule for a rig whose kind gave `criterion`, swept over `settings` and
/// `variants`, at most `max_trials` per setting; an error saying what to change when
/// the run cannot have one.
pub fn rule(
    criterion: Result<Criterion, String>,
    settings: &[String],
    variants: &[String],
    max_trials: u32,
) -> Result<Rule, String> {
    let criterion = criterion.map_err(|why| format!("{SUPPORTED}; {why}"))?;
    let [a, b] = settings else {
        return Err(format!(
            "--until-decided compares two settings of a profile; this run has {} ({}): \
             give a profile with two, or pick two with --setting A --setting B",
            settings.len(),
            settings.join(", ")
        ));
    };
    if max_trials > sequential::MAX_TRIALS {
        return Err(format!(
            "--until-decided takes at most {} trials per setting (--trials is its maximum); {max_trials} asked",
            sequential::MAX_TRIALS
        ));
    }
    let plan = sequential::plan(ALPHA, max_trials);
    if plan.looks.is_empty() {
        let need = (1..=sequential::MAX_TRIALS)
            .find(|&n| sequential::min_attainable_p(n) <= ALPHA)
            .unwrap_or(sequential::MAX_TRIALS);
        return Err(format!(
            "--until-decided: with at most {max_trials} trials per setting no comparison can \
             reach p ≤ {ALPHA}; give --trials {need} or more (--trials is the maximum)"
        ));
    }
    Ok(Rule {
        plan,
        criterion,
        settings: [a.clone(), b.clone()],
        variants: variants.to_vec(),
    })
}

/// Whether `r` passes `c` (`Criterion::passed`): what the rounds count and a bisect
/// classifies samples.jsonl's records with.
pub fn passed(r: &TrialRecord, c: &Criterion) -> bool {
    c.passed(r)
}

/// The metric was measured and every value is within its bound.
fn within(r: &TrialRecord, m: &Metric) -> bool {
    let Some(bound) = m.bound else {
        return false;
    };
    let scale = unit_scale(&m.unit).unwrap_or(1e6);
    r.metrics.get(&m.name).is_some_and(|vs| {
        !vs.is_empty()
            && vs
                .iter()
                .all(|&x| x >= 0.0 && bound.holds((x * scale).round() as u64))
    })
}

/// The trial's deadline misses not injected within `p` (see `Pass` for why misses):
/// a record without the count measured nothing and fails. Per minute over its
/// `duration_ms` (the stream's time, opening included), so a trial shorter than a
/// minute may have fewer than the bound: at 2 a minute, none in 10 s.
fn misses_within(r: &TrialRecord, p: Pass) -> bool {
    use results::livefx::counters::record;
    // A count as written: a negative or non-finite one (a damaged file) is no count.
    let Some(n) = r
        .metrics
        .get(record::MISSES_NOT_INJECTED)
        .and_then(|v| v.first())
        .filter(|x| x.is_finite() && **x >= 0.0)
    else {
        return false;
    };
    match p {
        Pass::Misses(max) => *n <= max as f64,
        Pass::MissesPerMinute(rate) => {
            let minutes = r.duration_ms / 60_000.0;
            minutes.is_finite() && minutes > 0.0 && *n <= rate * minutes
        }
    }
}

/// What the records say so far.
pub struct State {
    pub decided: Decided,
    /// Variants whose comparison goes on: they get the next round's trials.
    pub open: Vec<String>,
}

/// Replays the records round by round (trial numbers are rounds) through the rule: a
/// variant's comparison looks after each round both settings finished, and stops at
/// the first look that ends it. Records after that point do not change it.
pub fn evaluate(rule: &Rule, records: &[TrialRecord]) -> State {
    let [s0, s1] = &rule.settings;
    let mut pairs = vec![];
    let mut open = vec![];
    for v in &rule.variants {
        let find = |s: &String, t: u32| {
            records
                .iter()
                .find(|r| &r.setting == s && &r.variant == v && r.trial == t)
        };
        let (mut a, mut b, mut n) = (0u32, 0u32, 0u32);
        let mut p = None;
        let mut end = None;
        while n < rule.plan.max_trials {
            let (Some(x), Some(y)) = (find(s0, n), find(s1, n)) else {
                break;
            };
            a += u32::from(rule.criterion.passed(x));
            b += u32::from(rule.criterion.passed(y));
            n += 1;
            let (pv, look) = rule.plan.look(a, b, n);
            p = Some(pv);
            if look != Look::Continue {
                end = Some(look);
                break;
            }
        }
        let (decision, worse) = match end {
            Some(Look::Decided { first_better }) => (
                Decision::Decided,
                Some(if first_better { s1 } else { s0 }.clone()),
            ),
            Some(Look::AtMaximum) => (Decision::UndecidedAtMaximum, None),
            Some(Look::Futile) => (Decision::Undecidable, None),
            Some(Look::Continue) | None => {
                open.push(v.clone());
                (Decision::Unfinished, None)
            }
        };
        pairs.push(DecidedPair {
            variant: v.clone(),
            first: s0.clone(),
            second: s1.clone(),
            trials: n,
            first_within: a,
            second_within: b,
            p,
            decision,
            worse,
        });
    }
    let plan = &rule.plan;
    State {
        decided: Decided {
            rule: format!(
                "after each round, Fisher's exact test (two-sided) on trials with {}: \
                 {}; at most {} trials per setting; a pair that no remaining outcome can \
                 decide stops early, undecided",
                rule.criterion.describe(),
                levels_text(plan),
                plan.max_trials
            ),
            test: "fisher_exact_two_sided".into(),
            metric: rule.criterion.metric(),
            bound: rule.criterion.bound(),
            alpha: plan.alpha,
            per_look: plan
                .later_level()
                .or(plan.levels.first().copied())
                .unwrap_or(0.0),
            looks: plan.looks.clone(),
            levels: plan.levels.clone(),
            error_rate: Some(plan.exact.error),
            error_rate_q: Some(plan.exact.q),
            max_trials: plan.max_trials,
            pairs,
        },
        open,
    }
}

/// What each look decides at, and the overall error rate that gives, as computed.
fn levels_text(plan: &Plan) -> String {
    let exact = format!(
        "computed exactly over all outcomes, the overall error rate is {:.3e} at worst \
         (both settings passing with probability {:.2})",
        plan.exact.error, plan.exact.q
    );
    let Some(&n) = plan.looks.first() else {
        return format!("no look can decide; {exact}");
    };
    let first = format!(
        "at {n} trials per setting, decides only {n}/{n} against 0/{n} (p ≤ {:.3e})",
        plan.levels[0]
    );
    match plan.later_level() {
        Some(c) => format!(
            "the first look, {first}, then the looks at {} trials per setting at p ≤ {c:.3e}, \
             the largest common level (at most alpha {}) that keeps the overall error rate \
             within alpha; {exact}",
            spans(&plan.looks[1..]),
            plan.alpha
        ),
        None => format!("one look, {first}; {exact}, within alpha {}", plan.alpha),
    }
}

/// Trials per setting, a run of three or more as a range: "6 to 8", "5, 7 to 64".
fn spans(looks: &[u32]) -> String {
    let mut out = vec![];
    let mut i = 0;
    while i < looks.len() {
        let mut j = i;
        while j + 1 < looks.len() && looks[j + 1] == looks[j] + 1 {
            j += 1;
        }
        out.push(match j - i {
            0 => looks[i].to_string(),
            1 => format!("{}, {}", looks[i], looks[j]),
            _ => format!("{} to {}", looks[i], looks[j]),
        });
        i = j + 1;
    }
    out.join(", ")
}

/// summary.json's `until_decided` for a run under `until` (None without
/// `--until-decided`): what every rig kind's summary writes, from its records.
pub fn decided(until: Option<&Rule>, records: &[TrialRecord]) -> Option<Decided> {
    until.map(|r| evaluate(r, records).decided)
}

/// A p-value with the figures a reader compares against the per-look level.
fn fmt_p(p: f64) -> String {
    if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

/// The rule and the comparisons under the printed table.
pub fn render(d: &Decided) -> String {
    let mut out = format!("until decided: {}\n", d.rule);
    for p in &d.pairs {
        out.push_str(&format!("  {}", render_pair(p)));
    }
    out
}

/// One comparison, one line: the counts, p and what was decided.
pub fn render_pair(p: &DecidedPair) -> String {
    {
        let pv = p.p.map_or("-".into(), fmt_p);
        let what = match (p.decision, &p.worse) {
            (Decision::Decided, Some(w)) => format!("decided: {w} worse"),
            (Decision::UndecidedAtMaximum, _) => "undecided at the maximum".into(),
            (Decision::Undecidable, _) => {
                "undecidable: stopped, no outcome of the remaining trials could decide it".into()
            }
            (Decision::Unfinished, _) => "unfinished: the run ended first".into(),
            (d, _) => d.as_str().into(),
        };
        format!(
            "{}: {} {}/{} vs {} {}/{} within bound, p = {pv}: {what}\n",
            p.variant, p.first, p.first_within, p.trials, p.second, p.second_within, p.trials
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `rule` as the plan calls it: with the rig's kind's answer.
    fn rule_of(r: &Rig, s: &[String], v: &[String], max: u32) -> Result<Rule, String> {
        rule(crate::kinds::of(r.kind).trial_verdict(r), s, v, max)
    }
    use std::collections::BTreeMap;
    use std::path::Path;

    fn rig(extra: &str) -> Rig {
        crate::rig::parse(
            Path::new("r.toml"),
            &format!(
                r#"
[[threads]]
name = "w"
policy = "other"
steps = [ {{ mark = "a" }}, {{ mark = "b" }} ]
[metrics.wait]
from = "w.a"
to = "w.b"
bound = "< 100 ms"
{extra}
[[variants]]
name = "x"
[[variants]]
name = "y"
"#
            ),
        )
        .unwrap()
    }

    /// One finished trial with its wait (None: not measured); the guest's resume tests
    /// build their records with it too.
    pub(crate) fn rec(s: &str, v: &str, t: u32, wait: Option<f64>) -> TrialRecord {
        TrialRecord {
            setting: s.into(),
            variant: v.into(),
            trial: t,
            status: results::trials::TrialStatus::Ok,
            detail: None,
            duration_ms: 0.0,
            metrics: wait
                .map(|x| ("wait".to_string(), vec![x]))
                .into_iter()
                .collect(),
            censored: BTreeMap::new(),
            marks: BTreeMap::new(),
            evidence: vec![],
        }
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn refuses_what_has_no_pass_or_fail() {
        let r = rig("");
        let e = rule_of(&r, &names(&["A"]), &names(&["x"]), 8).unwrap_err();
        assert!(e.contains("two settings") && e.contains("--setting"), "{e}");
        let e = rule_of(&r, &names(&["A", "B"]), &names(&["x"]), 4).unwrap_err();
        assert!(e.contains("--trials 5"), "{e}");
        let e = rule_of(&r, &names(&["A", "B"]), &names(&["x"]), 65).unwrap_err();
        assert!(e.contains("at most 64"), "{e}");
        // The maximum itself is allowed.
        assert!(rule_of(&r, &names(&["A", "B"]), &names(&["x"]), 64).is_ok());
        let r2 = rig("[metrics.w2]\nfrom = \"w.a\"\nto = \"w.b\"\nbound = \"< 1 s\"\n");
        let e = rule_of(&r2, &names(&["A", "B"]), &names(&["x"]), 8).unwrap_err();
        assert!(e.contains("several (w2, wait)"), "{e}");
        assert!(rule_of(&r, &names(&["A", "B"]), &names(&["x"]), 8).is_ok());
    }

    /// A livefx rig with `pass` in its `[livefx]` table (`pass`: the table's line).
    fn livefx_rig(pass: &str) -> Rig {
        crate::rig::parse(
            Path::new("lf.toml"),
            &format!(
                "kind = \"livefx\"\n[livefx]\n{pass}\n[[livefx.workers]]\nname = \"w\"\n\
                 priority = 10\nplugins = [ {{ run = \"1 ms\" }} ]\n"
            ),
        )
        .unwrap()
    }

    #[test]
    fn audio_rigs_without_a_pass_are_refused_with_the_rigs_that_work() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let lf = crate::rig::load(&root.join("rigs/livefx.toml")).unwrap();
        let e = rule_of(&lf, &names(&["A", "B"]), &names(&["default"]), 8).unwrap_err();
        for want in [
            "rigs/pi-boost-affinity.toml",
            "rigs/livefx-push-ipi.toml",
            "livefx rig 'livefx' states no pass or fail",
            "add pass = { misses = 0 }",
            "to its [livefx] table",
        ] {
            assert!(e.contains(want), "{want:?} not in {e}");
        }
        let pi = crate::rig::load(&root.join("rigs/pi-boost-affinity.toml")).unwrap();
        let v: Vec<String> = pi.variants.iter().map(|v| v.name.clone()).collect();
        let r = rule_of(&pi, &names(&["RT_PUSH_IPI", "NO_RT_PUSH_IPI"]), &v, 8).unwrap();
        assert_eq!(r.criterion.metric(), "wait");
    }

    #[test]
    fn a_livefx_rig_with_a_pass_gets_a_rule_that_states_it() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let lf = crate::rig::load(&root.join("rigs/livefx-push-ipi.toml")).unwrap();
        let v: Vec<String> = lf.variants.iter().map(|v| v.name.clone()).collect();
        let r = rule_of(&lf, &names(&["RT_PUSH_IPI", "NO_RT_PUSH_IPI"]), &v, 8).unwrap();
        assert_eq!(r.criterion, Criterion::Misses(Pass::Misses(0)));
        let d = evaluate(&r, &[]).decided;
        assert_eq!((d.metric.as_str(), d.bound.as_str()), ("misses", "≤ 0"));
        assert!(
            d.rule.contains(
                "Fisher's exact test (two-sided) on trials with at most 0 deadline misses \
                 (not injected): the first look"
            ),
            "{}",
            d.rule
        );
        let per = livefx_rig("pass = { misses_per_minute = 2.5 }");
        let r = rule_of(&per, &names(&["A", "B"]), &names(&["default"]), 8).unwrap();
        let d = evaluate(&r, &[]).decided;
        assert_eq!(
            (d.metric.as_str(), d.bound.as_str()),
            ("misses_per_minute", "≤ 2.5")
        );
        assert!(
            d.rule
                .contains("at most 2.5 deadline misses (not injected) per minute"),
            "{}",
            d.rule
        );
        // The settings' and trials' refusals are every kind's.
        let e = rule_of(&per, &names(&["A"]), &names(&["default"]), 8).unwrap_err();
        assert!(e.contains("two settings"), "{e}");
    }

    /// A livefx trial's record as `livefx::tally::record` writes it: its counts, over
    /// `ms` of audio.
    fn lf_rec(xruns: f64, misses: f64, injected: f64, ms: f64) -> TrialRecord {
        let mut r = rec("A", "default", 0, None);
        r.duration_ms = ms;
        for (k, v) in [
            ("cycles", 469.0),
            ("xruns", xruns),
            ("deadline_misses", misses + injected),
            ("injected", injected),
            ("misses_not_injected", misses),
        ] {
            r.metrics.insert(k.into(), vec![v]);
        }
        r
    }

    #[test]
    fn a_livefx_trial_passes_with_its_misses_within_the_pass() {
        let none = Criterion::Misses(Pass::Misses(0));
        assert!(passed(&lf_rec(0.0, 0.0, 0.0, 10_000.0), &none));
        assert!(!passed(&lf_rec(0.0, 1.0, 0.0, 10_000.0), &none));
        let two = Criterion::Misses(Pass::Misses(2));
        assert!(passed(&lf_rec(0.0, 2.0, 0.0, 10_000.0), &two));
        assert!(!passed(&lf_rec(0.0, 3.0, 0.0, 10_000.0), &two));
        // Injected misses are the rig's own overruns, and the xruns the server counts
        // are its word, not the cycle's: neither fails a trial.
        assert!(passed(&lf_rec(0.0, 0.0, 5.0, 10_000.0), &none));
        assert!(passed(&lf_rec(3.0, 0.0, 0.0, 10_000.0), &none));
        // A trial that did not complete fails, whatever it counted.
        use results::trials::TrialStatus as S;
        for status in [S::TimedOut, S::Aborted, S::Failed, S::Stuck, S::Unknown] {
            let mut t = lf_rec(0.0, 0.0, 0.0, 10_000.0);
            t.status = status;
            assert!(!passed(&t, &none), "{status:?} counted as a pass");
        }
        // A record without its count (or with a damaged one) measured nothing.
        let mut t = lf_rec(0.0, 0.0, 0.0, 10_000.0);
        t.metrics.remove("misses_not_injected");
        assert!(!passed(&t, &none));
        assert!(!passed(&lf_rec(0.0, -1.0, 0.0, 10_000.0), &none));
        assert!(!passed(&lf_rec(0.0, f64::NAN, 0.0, 10_000.0), &none));
        // A thread rig's criterion finds no metric of its own in an audio record.
        let r = rig("");
        let wait = Criterion::Bound(r.metrics[0].clone());
        assert!(!passed(&lf_rec(0.0, 0.0, 0.0, 10_000.0), &wait));
    }

    #[test]
    fn misses_per_minute_are_counted_over_the_trials_duration() {
        let c = Criterion::Misses(Pass::MissesPerMinute(2.0));
        // 3 in 2 minutes: 1.5 a minute; 3 in 1 minute: 3.
        assert!(passed(&lf_rec(0.0, 3.0, 0.0, 120_000.0), &c));
        assert!(!passed(&lf_rec(0.0, 3.0, 0.0, 60_000.0), &c));
        // Exactly at the bound passes ("at most").
        assert!(passed(&lf_rec(0.0, 2.0, 0.0, 60_000.0), &c));
        // A 10 s trial may have a third of a miss: none.
        assert!(passed(&lf_rec(0.0, 0.0, 0.0, 10_000.0), &c));
        assert!(!passed(&lf_rec(0.0, 1.0, 0.0, 10_000.0), &c));
        // No duration: no rate, no pass.
        assert!(!passed(&lf_rec(0.0, 0.0, 0.0, 0.0), &c));
    }

    #[test]
    fn a_trial_passes_within_the_bound_only() {
        let r = rig("");
        let m = &Criterion::Bound(r.metrics[0].clone());
        assert!(passed(&rec("A", "x", 0, Some(99.0)), m));
        assert!(!passed(&rec("A", "x", 0, Some(100.0)), m));
        assert!(!passed(&rec("A", "x", 0, None), m));
    }

    #[test]
    fn a_trial_ended_early_at_the_bound_fails() {
        let r = rig("");
        let m = &Criterion::Bound(r.metrics[0].clone());
        // Status ok (nothing went wrong), the wait censored at its bound: a failure.
        let mut t = rec("A", "x", 0, None);
        t.censored.insert("wait".into(), 100.0);
        assert!(!passed(&t, m));
        // Censored wins over any value a damaged record also holds.
        t.metrics.insert("wait".into(), vec![1.0]);
        assert!(!passed(&t, m));
        // Another metric censored (an instrument's) does not decide this one.
        let mut t = rec("A", "x", 0, Some(1.0));
        t.censored.insert("boost_to_run".into(), 90.0);
        assert!(passed(&t, m));
    }

    #[test]
    fn only_a_completed_trial_passes() {
        // A trial stopped at its timeout (or aborted, stuck, failed) whose marks were
        // taken before the stop has a wait within the bound, yet did not complete.
        let r = rig("");
        let m = &Criterion::Bound(r.metrics[0].clone());
        use results::trials::TrialStatus as S;
        for status in [S::TimedOut, S::Aborted, S::Failed, S::Stuck, S::Unknown] {
            let mut t = rec("A", "x", 0, Some(1.0));
            t.status = status;
            assert!(!passed(&t, m), "{status:?} counted as a pass");
        }
    }

    #[test]
    fn the_second_settings_passes_count_and_p_is_printed() {
        let r = rig("");
        let rule = rule_of(&r, &names(&["A", "B"]), &names(&["x"]), 8).unwrap();
        // A never timely, B always (the mirror of the test below): A is the worse, at the
        // first look, 5/5 against 0/5.
        let recs: Vec<_> = (0..6)
            .flat_map(|t| [rec("A", "x", t, Some(500.0)), rec("B", "x", t, Some(1.0))])
            .collect();
        let st = evaluate(&rule, &recs);
        let x = &st.decided.pairs[0];
        assert_eq!(
            (x.decision, x.trials, x.first_within, x.second_within),
            (Decision::Decided, 5, 0, 5)
        );
        assert_eq!(x.worse.as_deref(), Some("A"));
        assert!(
            render(&st.decided)
                .contains("x: A 0/5 vs B 5/5 within bound, p = 0.0079: decided: A worse"),
            "{}",
            render(&st.decided)
        );
        // Below 0.001 in scientific notation, from 0.001 up with four decimals.
        assert_eq!(fmt_p(2.0 / 924.0), "0.0022");
        assert_eq!(fmt_p(0.001), "0.0010");
        assert_eq!(fmt_p(0.000_5), "5.0e-4");
    }

    #[test]
    fn replay_decides_stops_and_leaves_open() {
        let r = rig("");
        let rule = rule_of(&r, &names(&["A", "B"]), &names(&["x", "y"]), 8).unwrap();
        let mut recs = vec![];
        // x: A always timely, B never: decided after 5 rounds. y: both stuck:
        // undecidable after 3 (0/8 against 5/8 is the best left: p = 0.026).
        for t in 0..6 {
            for (s, v, w) in [
                ("A", "x", 1.0),
                ("A", "y", 500.0),
                ("B", "x", 500.0),
                ("B", "y", 500.0),
            ] {
                recs.push(rec(s, v, t, Some(w)));
            }
        }
        let st = evaluate(&rule, &recs[..4 * 4]);
        assert_eq!(st.open, names(&["x"]));
        let st = evaluate(&rule, &recs);
        assert!(st.open.is_empty());
        let x = &st.decided.pairs[0];
        assert_eq!(
            (x.decision, x.trials, x.first_within, x.second_within),
            (Decision::Decided, 5, 5, 0)
        );
        assert_eq!(x.worse.as_deref(), Some("B"));
        assert!((x.p.unwrap() - 2.0 / 252.0).abs() < 1e-12);
        let y = &st.decided.pairs[1];
        assert_eq!((y.decision, y.trials), (Decision::Undecidable, 3));
        // A round one setting did not finish is not looked at: x stays open.
        let st = evaluate(&rule, &recs[..4 * 4 + 1]);
        assert_eq!(st.open, names(&["x"]));
        assert_eq!(st.decided.pairs[0].trials, 4);
        let text = render(&st.decided);
        assert!(
            text.contains(
                "the first look, at 5 trials per setting, decides only 5/5 against 0/5 \
                 (p ≤ 7.937e-3), then the looks at 6 to 8 trials per setting at p ≤ 1.000e-2"
            ) && text
                .contains("computed exactly over all outcomes, the overall error rate is 4.395e-3"),
            "{text}"
        );
        assert!(text.contains("y: A 0/3 vs B 0/3 within bound"), "{text}");
        // summary.json holds each look's level and the computed rate.
        let d = &st.decided;
        assert_eq!(d.looks, vec![5, 6, 7, 8]);
        assert_eq!(d.levels.len(), 4);
        assert!((d.levels[0] - 2.0 / 252.0).abs() < 1e-12 && d.per_look == 0.01);
        assert!(d.error_rate.is_some_and(|e| e <= d.alpha), "{d:?}");
    }

    #[test]
    fn the_rule_text_names_the_looks_and_levels_it_uses() {
        let r = rig("");
        let one = rule_of(&r, &names(&["A", "B"]), &names(&["x"]), 5).unwrap();
        let t = evaluate(&one, &[]).decided.rule;
        assert!(
            t.contains("one look, at 5 trials per setting, decides only 5/5 against 0/5")
                && t.contains("within alpha 0.01"),
            "{t}"
        );
        // At 64 the shared level is below 6/6 against 0/6's p (0.0022): no look at 6.
        let long = rule_of(&r, &names(&["A", "B"]), &names(&["x"]), 64).unwrap();
        let t = evaluate(&long, &[]).decided.rule;
        assert!(
            t.contains("then the looks at 7 to 64 trials per setting"),
            "{t}"
        );
        assert_eq!(spans(&[5, 6, 8, 10, 11, 12]), "5, 6, 8, 10 to 12");
    }
}
