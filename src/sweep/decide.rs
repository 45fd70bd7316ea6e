//! `--until-decided`: which rigs it works for, each trial's pass or fail, and the
//! replay of a run's records through the sequential rule (`analysis::sequential`): the
//! sweep asks it after every round which variants still get trials, finish writes its
//! result into summary.json, and a guest run merged from several boots replays the
//! same records to the same decisions.

use crate::output::summary::TrialRecord;
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
    pub metric: Metric,
    /// The two settings compared, in sweep order.
    pub settings: [String; 2],
    pub variants: Vec<String>,
}

const SUPPORTED: &str = "--until-decided needs a per-trial pass or fail: a thread rig \
     (kind = \"trials\") with exactly one metric that has a bound, such as \
     rigs/pi-boost-affinity.toml or rigs/pi-inversion.toml";

/// The rule for `rig` swept over `settings` and `variants`, at most `max_trials` per
/// setting; an error saying what to change when the run cannot have one.
pub fn rule(
    no_trial_verdict: Option<String>,
    rig: &Rig,
    settings: &[String],
    variants: &[String],
    max_trials: u32,
) -> Result<Rule, String> {
    if let Some(why) = no_trial_verdict {
        return Err(format!("{SUPPORTED}; {why}"));
    }
    let metric = bounded_metric(rig)?;
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
        metric,
        settings: [a.clone(), b.clone()],
        variants: variants.to_vec(),
    })
}

/// The rig's one metric with a bound: each trial's pass or fail.
fn bounded_metric(rig: &Rig) -> Result<Metric, String> {
    let bounded: Vec<&Metric> = rig.metrics.iter().filter(|m| m.bound.is_some()).collect();
    match bounded.as_slice() {
        [m] => Ok((*m).clone()),
        [] => Err(format!(
            "{SUPPORTED}; rig '{}' has no metric with a bound",
            rig.name
        )),
        many => Err(format!(
            "{SUPPORTED}; rig '{}' has several ({})",
            rig.name,
            many.iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// A trial's pass or fail as the rig states it (`xrunrig bisect` classifies the
/// records of each step with it).
#[derive(Debug, Clone)]
pub struct Criterion {
    metric: Metric,
}

impl Criterion {
    pub fn passed(&self, r: &TrialRecord) -> bool {
        passed(r, &self.metric)
    }

    /// "wait < 100 ms".
    pub fn describe(&self) -> String {
        let bound = self
            .metric
            .bound
            .map(|b| b.display(&self.metric.unit))
            .unwrap_or_default();
        format!("{} {bound}", self.metric.name)
    }
}

/// The plan's per-trial pass or fail; an error saying what the rig lacks.
pub fn criterion(plan: &super::Plan) -> Result<Criterion, String> {
    if let Some(why) = plan.kind.no_trial_verdict(&plan.rig) {
        return Err(format!("{SUPPORTED}; {why}"));
    }
    Ok(Criterion {
        metric: bounded_metric(&plan.rig)?,
    })
}

/// A trial passes when it completed (status ok), produced the metric and every value is
/// within its bound (a trial without a value does not pass). A timed-out or aborted trial can hold marks taken before it stopped;
/// what it measured then says nothing about whether the setting keeps its bound.
pub fn passed(r: &TrialRecord, m: &Metric) -> bool {
    if r.status != results::trials::TrialStatus::Ok {
        return false;
    }
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
            a += u32::from(passed(x, &rule.metric));
            b += u32::from(passed(y, &rule.metric));
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
    let bound = rule
        .metric
        .bound
        .map(|b| b.display(&rule.metric.unit))
        .unwrap_or_default();
    State {
        decided: Decided {
            rule: format!(
                "after each round, Fisher's exact test (two-sided) on trials with {} {bound}: \
                 {}; at most {} trials per setting; a pair that no remaining outcome can \
                 decide stops early, undecided",
                rule.metric.name,
                levels_text(plan),
                plan.max_trials
            ),
            test: "fisher_exact_two_sided".into(),
            metric: rule.metric.name.clone(),
            bound,
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
        rule(crate::kinds::of(r.kind).no_trial_verdict(r), r, s, v, max)
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

    #[test]
    fn audio_rigs_are_refused_with_the_rigs_that_work() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let lf = crate::rig::load(&root.join("rigs/livefx.toml")).unwrap();
        let e = rule_of(&lf, &names(&["A", "B"]), &names(&["default"]), 8).unwrap_err();
        assert!(
            e.contains("livefx") && e.contains("rigs/pi-boost-affinity.toml"),
            "{e}"
        );
        let pi = crate::rig::load(&root.join("rigs/pi-boost-affinity.toml")).unwrap();
        let v: Vec<String> = pi.variants.iter().map(|v| v.name.clone()).collect();
        let r = rule_of(&pi, &names(&["RT_PUSH_IPI", "NO_RT_PUSH_IPI"]), &v, 8).unwrap();
        assert_eq!(r.metric.name, "wait");
    }

    #[test]
    fn a_trial_passes_within_the_bound_only() {
        let r = rig("");
        let m = &r.metrics[0];
        assert!(passed(&rec("A", "x", 0, Some(99.0)), m));
        assert!(!passed(&rec("A", "x", 0, Some(100.0)), m));
        assert!(!passed(&rec("A", "x", 0, None), m));
    }

    #[test]
    fn only_a_completed_trial_passes() {
        // A trial stopped at its timeout (or aborted, stuck, failed) whose marks were
        // taken before the stop has a wait within the bound, yet did not complete.
        let r = rig("");
        let m = &r.metrics[0];
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
