//! Thread rigs (`kind = "trials"`): each trial starts the rig's threads through the
//! engine, with the instruments around it, and becomes one samples.jsonl record.

mod kind;
pub use kind::Threads;

use crate::engine::trial::{EarlyWhy, TrialStatus, run_trial_with};
use crate::exit::*;
use crate::instruments::Instruments;
use crate::knobs::profile::Setting;
use crate::output::summary::{self, TrialRecord};
use crate::sweep::{Prepared, RunExtra, finish_with, sweep};
use std::sync::atomic::AtomicBool;

/// Runs a prepared thread rig; the exit code says how it went.
pub fn run_main(mut p: Prepared) -> i32 {
    let estimate = p.estimate_ns;
    let mut inst = Instruments::from_rig(&p.plan.rig, &p.dir);
    if let Err(e) = inst.before_run() {
        return refuse_run(&p, &e);
    }
    // Every check passed: now the results directory.
    if let Err(e) = p.create_dir() {
        return refuse_run(&p, &e);
    }
    inst.set_dir(&p.dir);
    let p = p;
    let rig = &p.plan.rig;
    crate::note!(
        "xrunrig: {} — {} trial(s) × {} setting(s) × {} variant(s), results in {}",
        rig.name,
        p.plan.trials,
        p.plan.settings.len(),
        p.plan.variants.len(),
        p.dir.display()
    );
    if let Some(n) = &p.plan.settings_note {
        crate::note!("xrunrig: {n}");
    }
    let mut one = |s: &Setting, v: usize, t: u32, stop: &AtomicBool| {
        let var = &rig.variants[v];
        let r = run_trial_with(&var.plan, rig.trial_timeout_ns, stop, &mut |tids| {
            inst.start_trial(&s.name, &var.name, t, tids)
        });
        // The instruments count only what came before an early end: after it, the
        // threads' release.
        let found = inst.end_trial(r.ended_early.map(|e| r.t0_ns + e.at_ns));
        let (status, mut detail) = record_status(&r.status);
        let mut metrics: std::collections::BTreeMap<String, Vec<f64>> = rig
            .metrics
            .iter()
            .map(|m| {
                (
                    m.name.clone(),
                    summary::metric_values(m, &var.plan, &r.marks),
                )
            })
            .filter(|(_, v)| !v.is_empty())
            .collect();
        metrics.extend(found.metrics);
        let mut censored = found.censored;
        match r.ended_early.map(|e| (e, e.why)) {
            Some((e, EarlyWhy::PastBound { metric, to_taken })) => {
                let m = &rig.metrics[metric];
                // Unmeasured (the `to` mark never came): only known to have passed the
                // bound. Recorded as censored there, never as a value in `metrics`.
                if !metrics.contains_key(&m.name)
                    && let Some(b) = m.bound_limit()
                {
                    censored.insert(m.name.clone(), b);
                }
                let note = ended_early_note(m, e.at_ns, to_taken);
                detail = Some(detail.map_or(note.clone(), |d| format!("{note}; {d}")));
            }
            Some((e, EarlyWhy::Measured)) => {
                let note = format!(
                    "ended early at {:.1} ms: every metric measured (end_early), the rest of the trial not run",
                    e.at_ns as f64 / 1e6
                );
                detail = Some(detail.map_or(note.clone(), |d| format!("{note}; {d}")));
            }
            None => {}
        }
        let marks = var
            .plan
            .marks
            .iter()
            .zip(&r.marks)
            .map(|(s, t)| (format!("{}.{}", s.thread, s.mark), t.clone()))
            .collect();
        TrialRecord {
            setting: s.name.clone(),
            variant: var.name.clone(),
            trial: t,
            status,
            detail,
            duration_ms: r.duration_ns as f64 / 1e6,
            metrics,
            censored,
            marks,
            evidence: {
                let mut ev = found.evidence;
                if let Some(l) = cycles_line(&r.cycles, r.duration_ns) {
                    ev.push(l);
                }
                ev
            },
        }
    };
    let sw = sweep(&p, estimate, &mut one);
    let inst_json = inst.after_run();
    let sw = match sw {
        Ok(s) => s,
        Err(e) => {
            eprintln!("xrunrig: {e}");
            return EXIT_FAILED;
        }
    };
    let mut metrics = rig.metrics.clone();
    metrics.extend(inst.metric_defs());
    finish_with(
        &p,
        &sw,
        RunExtra {
            instruments: inst_json,
            livefx: None,
        },
        &metrics,
    )
}

/// Refuses a run before anything is changed: says why, and removes its results
/// directory if it was created and nothing was written there yet.
pub fn refuse_run(p: &Prepared, why: &str) -> i32 {
    eprintln!("xrunrig: {why}. Nothing was changed.");
    p.discard_dir();
    EXIT_REFUSED
}

/// The engine's trial outcome as samples.jsonl records it: the status, and what the
/// engine knows about it as the detail.
fn record_status(s: &TrialStatus) -> (results::trials::TrialStatus, Option<String>) {
    use results::trials::TrialStatus as S;
    match s {
        TrialStatus::Ok => (S::Ok, None),
        TrialStatus::TimedOut(th) => (
            S::TimedOut,
            Some(format!(
                "unfinished at the trial timeout: {}",
                th.join(", ")
            )),
        ),
        TrialStatus::Aborted => (S::Aborted, None),
        TrialStatus::Failed(e) => (S::Failed, Some(e.clone())),
        TrialStatus::Stuck(th) => (S::Stuck, Some(th.join(", "))),
    }
}

/// The record's detail for a trial its metric `m` ended early at `at_ns`, past its
/// bound: when, and what the metric is known to be (`to_taken`: measured after all).
fn ended_early_note(m: &crate::rig::Metric, at_ns: u64, to_taken: bool) -> String {
    let at = format!("ended early at {:.1} ms", at_ns as f64 / 1e6);
    let Some(b) = m.bound else {
        return at;
    };
    let limit = b.display(&m.unit);
    let limit = limit.trim_start_matches(['<', '=', ' ']);
    if to_taken {
        format!(
            "{at}: {}'s end mark came as the trial was ended, its value is measured",
            m.name
        )
    } else {
        // `<` failed: at least the limit; `<=` failed: above it (cut one ns past).
        let op = if b.op == crate::rig::units::BoundOp::Le {
            ">"
        } else {
            "≥"
        };
        format!(
            "{at}: {} {op} {limit}, its end mark had not come within the bound (end_early); censored there",
            m.name
        )
    }
}

/// "loop cycles: victim 2000 (1998.0/s), ...": what the threads' loops completed, so a
/// reader can set it against what the rig asked for (a slow or emulated machine runs
/// fewer cycles, and every count that follows from them is smaller).
fn cycles_line(cycles: &[(String, u64)], duration_ns: u64) -> Option<String> {
    if cycles.is_empty() || duration_ns == 0 {
        return None;
    }
    let secs = duration_ns as f64 / 1e9;
    let parts: Vec<String> = cycles
        .iter()
        .map(|(n, c)| format!("{n} {c} ({:.1}/s)", *c as f64 / secs))
        .collect();
    Some(format!("loop cycles in {secs:.1} s: {}", parts.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_early_end_is_noted_with_what_the_metric_is_known_to_be() {
        let rig = crate::rig::parse(
            std::path::Path::new("r.toml"),
            r#"
[[threads]]
name = "w"
policy = "other"
steps = [ { mark = "a" }, { mark = "b" } ]
[metrics.wait]
from = "w.a"
to = "w.b"
bound = "< 100 ms"
end_early = true
"#,
        )
        .unwrap();
        let mut m = rig.metrics[0].clone();
        assert_eq!(
            ended_early_note(&m, 101_250_000, false),
            "ended early at 101.2 ms: wait ≥ 100 ms, its end mark had not come within the bound (end_early); censored there"
        );
        m.bound.as_mut().unwrap().op = crate::rig::units::BoundOp::Le;
        assert!(ended_early_note(&m, 101_250_000, false).contains("wait > 100 ms"));
        assert!(ended_early_note(&m, 101_250_000, true).ends_with("its value is measured"));
    }

    #[test]
    fn cycles_line_gives_counts_and_rates() {
        assert_eq!(cycles_line(&[], 1_000_000_000), None);
        let l = cycles_line(
            &[("victim".into(), 3000), ("sleeper".into(), 10)],
            2_000_000_000,
        );
        assert_eq!(
            l.as_deref(),
            Some("loop cycles in 2.0 s: victim 3000 (1500.0/s), sleeper 10 (5.0/s)")
        );
    }
}
