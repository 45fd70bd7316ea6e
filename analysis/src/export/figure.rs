//! What each kind exports as KCIDB tests (and LAVA test cases): a `Figure` per summary
//! row and metric (a bisection: per tested commit), with its KCIDB status and number.
//! Below `kind/`, which hands these to `kcidb.rs`; nothing here looks a directory's kind
//! up.

use crate::load::bisect::BisectData;
use crate::load::livefx::{LRow, LivefxData};
use crate::load::trials::{TRow, TrialsData};
use results::bisect::{Role, Step, Verdict};
use results::kbuild::KernelBuild;
use results::livefx::Pcts;
use serde::Serialize;
use serde_json::{Map, Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Fail,
    Error,
    Miss,
    Pass,
    Done,
    Skip,
}

#[derive(Debug, Clone, Serialize)]
pub struct Number {
    pub value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

/// The status a trial rig's row gets from its bound.
pub fn trial_row_status(r: &TRow) -> Status {
    match (&r.bound, r.within_bound) {
        (None, _) => Status::Done,
        // Nothing ran: the harness, not the kernel, is to blame.
        (Some(_), _) if r.n == 0 => Status::Miss,
        (Some(_), Some(w)) if w >= r.n => Status::Pass,
        (Some(_), Some(_)) => Status::Fail,
        // A bound but no count of values within it: unreadable, not a result.
        (Some(_), None) => Status::Error,
    }
}

/// The figures of a livefx row exported as tests: (metric, value, unit, must be 0).
pub fn livefx_figures(r: &LRow) -> Vec<(&'static str, f64, Option<&'static str>, bool)> {
    let c = &r.counts;
    let real_misses = c
        .misses_not_injected
        .unwrap_or(c.deadline_misses.saturating_sub(c.injected));
    let mut out = vec![
        ("xruns", c.xruns as f64, None, true),
        ("deadline_misses", real_misses as f64, None, true),
    ];
    if let Some(d) = c.discontinuities {
        out.push(("discontinuities", d as f64, None, true));
    }
    let pcts: [(&'static str, &'static str, &Pcts); 3] = [
        ("callback_p99", "callback_max", &r.callback_us),
        ("lateness_p99", "lateness_max", &r.lateness_us),
        ("wake_p99", "wake_max", &r.wake_us),
    ];
    for (p99, max, p) in pcts {
        if let Some(v) = p.p99 {
            out.push((p99, v, Some("us"), false));
        }
        if let Some(v) = p.max {
            out.push((max, v, Some("us"), false));
        }
    }
    out
}

/// One figure of one summary row, as its kind exports it; `kcidb.rs` `tests()` makes it a
/// `Test`.
pub struct Figure {
    pub setting: String,
    pub variant: String,
    pub metric: String,
    pub status: Status,
    pub number: Option<Number>,
    /// Seconds measured.
    pub duration: Option<f64>,
    pub misc: Map<String, Value>,
    /// Measured on a kernel of its own (a bisection's tested commit); None: on the
    /// directory's one kernel, run.json's.
    pub at: Option<AtCommit>,
}

/// A figure measured on a kernel of its own: its test gets that kernel's checkout and
/// build, its own path, and an instance that tells it from the other tests of that path
/// in one submission.
#[derive(Debug, Clone)]
pub struct AtCommit {
    /// The test path's parts after `xrunrig`, the same at every commit, so KCIDB shows
    /// the test's history across them.
    pub path: Vec<String>,
    /// What sets it apart (its role and commit): its test id and its LAVA case name end
    /// with it.
    pub instance: String,
    /// The test's comment.
    pub comment: String,
    pub revision: Revision,
}

/// A kernel built from one commit of a git tree.
#[derive(Debug, Clone)]
pub struct Revision {
    /// Names its checkout among the origin's: the commit and what was applied to it.
    pub checkout: String,
    /// The tree: a local path, unless it is an https:// URL (KCIDB's repository).
    pub tree: String,
    pub commit: String,
    pub subject: String,
    /// What was applied to the commit, in words ("0123456789ab reverted", patch files).
    pub applied: Vec<String>,
    /// It built; false: it did not (or a patch did not apply), and its test was skipped.
    pub built: bool,
    /// Seconds spent building it here (0: kept from an earlier build).
    pub build_s: f64,
    /// Its provenance (config, version, cache key), when it built.
    pub build: Option<KernelBuild>,
    /// Why it did not build.
    pub build_error: Option<String>,
}

/// A trial rig's figures: one per summary row, its median, PASS or FAIL by its bound.
pub fn trial_figures(t: &TrialsData) -> Vec<Figure> {
    t.rows
        .iter()
        .map(|r| Figure {
            setting: r.setting.clone(),
            variant: r.variant.clone(),
            metric: r.metric.clone(),
            status: trial_row_status(r),
            // A median on a censored trial is a lower bound, not a measurement: no
            // number (trial_misc gives it, with `median_at_least`).
            number: r
                .median
                .filter(|v| v.is_finite() && !r.median_at_least)
                .map(|v| Number {
                    value: v,
                    unit: (!r.unit.is_empty()).then(|| r.unit.clone()),
                }),
            duration: trials_seconds(t, &r.setting, &r.variant),
            misc: trial_misc(r),
            at: None,
        })
        .collect()
}

/// A livefx rig's figures: each row's `livefx_figures()`, a count PASS at 0.
pub fn livefx_tests(d: &LivefxData) -> Vec<Figure> {
    let mut out = Vec::new();
    for r in &d.rows {
        for (metric, value, unit, zero_bound) in livefx_figures(r) {
            let status = if !zero_bound {
                Status::Done
            } else if value == 0.0 {
                Status::Pass
            } else {
                Status::Fail
            };
            out.push(Figure {
                setting: r.setting.clone(),
                variant: r.variant.clone(),
                metric: metric.to_string(),
                status,
                number: Some(Number {
                    value,
                    unit: unit.map(String::from),
                }),
                duration: r.duration_s,
                misc: livefx_misc(d, r, zero_bound),
                at: None,
            });
        }
    }
    out
}

/// A bisection's figures: one per tested commit (the ends, each step, the revert), on
/// that commit's kernel, path `xrunrig.bisect.<rig>.<setting>.<variant>`. PASS for good,
/// FAIL for bad, SKIP for a step skipped (undecided or unbuildable), ERROR for a run
/// that failed; the ends PASS and FAIL when they were found to differ, else DONE.
pub fn bisect_figures(d: &BisectData) -> Vec<Figure> {
    let doc = &d.doc;
    let i = &doc.inputs;
    let patches: Vec<String> = i.patches.iter().map(|p| p.file.clone()).collect();
    let patch_key: String = i
        .patches
        .iter()
        .map(|p| format!("+{}", p.sha256.get(..12).unwrap_or(&p.sha256)))
        .collect();
    d.tested()
        .map(|s| {
            let status = match (s.verdict, s.role) {
                (Verdict::Good, _) => Status::Pass,
                (Verdict::Bad, _) => Status::Fail,
                (Verdict::Undecided | Verdict::BuildFailed, _) => Status::Skip,
                (Verdict::RunFailed, _) => Status::Error,
                (Verdict::Measured, Role::GoodEnd) if d.ends_differ() => Status::Pass,
                (Verdict::Measured, Role::BadEnd) if d.ends_differ() => Status::Fail,
                (Verdict::Measured, _) => Status::Done,
            };
            let reverted = match s.role {
                Role::Revert => doc.first_bad.as_ref().map(|f| f.sha.clone()),
                _ => None,
            };
            let mut applied: Vec<String> = reverted
                .iter()
                .map(|r| format!("{} reverted", r.get(..12).unwrap_or(r)))
                .collect();
            applied.extend(patches.iter().cloned());
            let checkout = format!(
                "git:{}{}{patch_key}",
                s.commit.sha,
                reverted
                    .as_ref()
                    .map_or(String::new(), |r| format!("-revert:{r}"))
            );
            let role = match s.role {
                Role::GoodEnd => "good-end",
                Role::BadEnd => "bad-end",
                Role::Step => "step",
                Role::Revert => "revert",
            };
            Figure {
                setting: i.setting.clone(),
                variant: i.variant.clone(),
                metric: "passed".into(),
                status,
                number: (s.trials > 0).then(|| Number {
                    value: f64::from(s.passed) / f64::from(s.trials),
                    unit: Some("fraction".into()),
                }),
                duration: (s.run_s > 0.0).then_some(s.run_s),
                misc: step_misc(d, s),
                at: Some(AtCommit {
                    path: vec![
                        "bisect".into(),
                        d.rig.clone(),
                        i.setting.clone(),
                        i.variant.clone(),
                    ],
                    instance: format!("{role}-{}", s.commit.short()),
                    comment: format!(
                        "{}: {role} {} {}{}: {} ({}/{} passed)",
                        d.rig,
                        s.commit.short(),
                        s.commit.subject,
                        if applied.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", applied.join(", "))
                        },
                        s.verdict.word(),
                        s.passed,
                        s.trials
                    ),
                    revision: Revision {
                        checkout,
                        tree: i.tree.clone(),
                        commit: s.commit.sha.clone(),
                        subject: s.commit.subject.clone(),
                        applied,
                        built: s.verdict != Verdict::BuildFailed,
                        build_s: s.build_s,
                        build: s.build.clone(),
                        build_error: (s.verdict == Verdict::BuildFailed)
                            .then(|| s.note.clone())
                            .flatten(),
                    },
                }),
            }
        })
        .collect()
}

/// A tested commit's counts, p-values and verdict, and where its runs are.
fn step_misc(d: &BisectData, s: &Step) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("role".into(), json!(s.role));
    m.insert("commit".into(), json!(s.commit.sha));
    m.insert("subject".into(), json!(s.commit.subject));
    if let Some(p) = d.position(s) {
        m.insert("position".into(), json!(p));
    }
    m.insert("verdict".into(), json!(s.verdict));
    m.insert("passed".into(), json!(s.passed));
    m.insert("trials".into(), json!(s.trials));
    for (k, v) in [("p_vs_good", s.p_vs_good), ("p_vs_bad", s.p_vs_bad)] {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            m.insert(k.into(), json!(v));
        }
    }
    m.insert("criterion".into(), json!(d.doc.rule.criterion));
    m.insert("build_s".into(), json!(s.build_s));
    put(&mut m, "note", s.note.clone());
    m.insert("runs".into(), json!(s.runs));
    m
}

/// The trials' summed run time of a (setting, variant), in s.
fn trials_seconds(t: &TrialsData, setting: &str, variant: &str) -> Option<f64> {
    let ms: Vec<f64> = t
        .trials
        .iter()
        .filter(|x| x.setting == setting && x.variant == variant && x.duration_ms.is_finite())
        .map(|x| x.duration_ms)
        .collect();
    (!ms.is_empty()).then(|| ms.iter().sum::<f64>() / 1e3)
}

fn trial_misc(r: &TRow) -> Map<String, Value> {
    let mut m = Map::new();
    put(&mut m, "bound", r.bound.clone());
    m.insert("unit".into(), json!(r.unit));
    m.insert("trials".into(), json!(r.n));
    if let Some(w) = r.within_bound {
        m.insert("within_bound".into(), json!(w));
    }
    m.insert("missing".into(), json!(r.missing));
    for (k, v) in [("median", r.median), ("min", r.min), ("max", r.max)] {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            m.insert(k.into(), json!(v));
        }
    }
    m.insert("values".into(), json!(r.values));
    if !r.censored.is_empty() {
        m.insert("censored".into(), json!(r.censored));
        for (k, b) in [
            ("median_at_least", r.median_at_least),
            ("min_at_least", r.min_at_least),
            ("max_at_least", r.max_at_least),
        ] {
            if b {
                m.insert(k.into(), json!(true));
            }
        }
    }
    m
}

fn livefx_misc(d: &LivefxData, r: &LRow, zero_bound: bool) -> Map<String, Value> {
    let mut m = Map::new();
    if zero_bound {
        m.insert("bound".into(), json!("== 0"));
    }
    m.insert("backend".into(), json!(r.backend));
    for (k, v) in [("period", r.period), ("rate", r.rate), ("trials", r.trials)] {
        if let Some(v) = v {
            m.insert(k.into(), json!(v));
        }
    }
    let c = &r.counts;
    m.insert("cycles".into(), json!(c.cycles));
    m.insert("deadline_misses_all".into(), json!(c.deadline_misses));
    m.insert("injected".into(), json!(c.injected));
    let trials = d
        .trials
        .iter()
        .filter(|t| t.setting == r.setting && t.variant == r.variant)
        .count();
    m.insert("trial_rows".into(), json!(trials));
    m
}

pub(crate) fn put(m: &mut Map<String, Value>, k: &str, v: Option<String>) {
    if let Some(v) = v {
        m.insert(k.into(), json!(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rows_bound_gives_its_status() {
        let row = |bound: Option<&str>, n, w| TRow {
            bound: bound.map(String::from),
            n,
            within_bound: w,
            ..TRow::default()
        };
        assert_eq!(trial_row_status(&row(None, 3, None)), Status::Done);
        assert_eq!(
            trial_row_status(&row(Some("< 1 ms"), 3, Some(3))),
            Status::Pass
        );
        assert_eq!(
            trial_row_status(&row(Some("< 1 ms"), 3, Some(2))),
            Status::Fail
        );
        assert_eq!(
            trial_row_status(&row(Some("< 1 ms"), 0, Some(0))),
            Status::Miss
        );
        assert_eq!(
            trial_row_status(&row(Some("< 1 ms"), 3, None)),
            Status::Error
        );
        assert_eq!(serde_json::to_value(Status::Pass).unwrap(), json!("PASS"));
    }
}
