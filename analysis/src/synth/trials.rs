//! A synthetic trial-rig results directory shaped like the seed's PI-boost table:
//! RT_PUSH_IPI 8/8 under 100 ms (median ~0.8 ms), NO_RT_PUSH_IPI 0/8 (median ~1500 ms),
//! and the no-boost control at ~1500 ms under both. SYNTHETIC, not a measurement.

use super::{LABEL, run_json, write};
use results::trials::{Row, Summary, TrialRecord, TrialStatus};
use std::path::Path;

/// (setting, variant, waits in ms; None = the trial timed out without a value).
pub fn cases() -> Vec<(&'static str, &'static str, Vec<Option<f64>>)> {
    vec![
        (
            "RT_PUSH_IPI",
            "pi",
            [0.62, 0.71, 0.78, 0.80, 0.83, 0.95, 1.10, 5.40]
                .map(Some)
                .to_vec(),
        ),
        (
            "RT_PUSH_IPI",
            "no-boost",
            [1499.1, 1499.2, 1499.4].map(Some).to_vec(),
        ),
        (
            "NO_RT_PUSH_IPI",
            "pi",
            vec![
                Some(1146.1),
                Some(1499.3),
                Some(1499.5),
                Some(1499.6),
                Some(1499.6),
                Some(1500.2),
                Some(1502.6),
                None,
            ],
        ),
        (
            "NO_RT_PUSH_IPI",
            "no-boost",
            [1499.0, 1499.2, 1499.3].map(Some).to_vec(),
        ),
    ]
}

/// Writes summary.json, samples.jsonl, run.json and a README into `dir`.
pub fn generate(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut rows = Vec::new();
    let mut lines = String::new();
    for (s, v, vals) in cases() {
        let got: Vec<f64> = vals.iter().flatten().copied().collect();
        let mut sorted = got.clone();
        sorted.sort_by(|a, b| a.total_cmp(b));
        rows.push(Row {
            setting: s.into(),
            variant: v.into(),
            metric: "wait".into(),
            unit: "ms".into(),
            bound: Some("< 100 ms".into()),
            n: vals.len(),
            within_bound: Some(got.iter().filter(|x| **x < 100.0).count()),
            missing: vals.len() - got.len(),
            median: crate::stats::median(&sorted),
            min: sorted.first().copied(),
            max: sorted.last().copied(),
            values: got.clone(),
            ..Row::default()
        });
        for (i, x) in vals.iter().enumerate() {
            let evidence: &[&str] = match (v, i, s) {
                ("pi", 0, "RT_PUSH_IPI") => &[
                    "sched_pi_setprio: owner 89 -> 9 at +20.001 ms (boost)",
                    "sched_migrate_task: owner cpu1 -> cpu3 at +20.610 ms, in hardirq (push IPI)",
                ],
                ("pi", 0, _) => &[
                    "sched_pi_setprio: owner 89 -> 9 at +20.001 ms (boost)",
                    "owner never migrated; ran on cpu1 after the hog left at +1520.1 ms",
                ],
                _ => &[],
            };
            let rec = TrialRecord {
                setting: s.into(),
                variant: v.into(),
                trial: i as u32,
                status: if x.is_some() {
                    TrialStatus::Ok
                } else {
                    TrialStatus::TimedOut
                },
                detail: x
                    .is_none()
                    .then(|| "trial timed out after 3 s (synthetic)".into()),
                duration_ms: x.map_or(3000.0, |w| w + 25.0),
                metrics: x
                    .map(|w| ("wait".to_string(), vec![w]))
                    .into_iter()
                    .collect(),
                censored: Default::default(),
                marks: [("waiter.want".to_string(), vec![20_000_000u64])].into(),
                evidence: evidence.iter().map(|e| e.to_string()).collect(),
            };
            lines += &serde_json::to_string(&rec).map_err(|e| e.to_string())?;
            lines.push('\n');
        }
    }
    let summary = Summary::new("pi-boost-synthetic", rows);
    write(
        &dir.join(results::SUMMARY_JSON),
        &(serde_json::to_string_pretty(&summary).unwrap() + "\n"),
    )?;
    write(&dir.join(results::SAMPLES_JSONL), &lines)?;
    let run = run_json(
        "pi-boost-synthetic",
        results::KIND_TRIALS,
        &[
            ("RT_PUSH_IPI", "push IPIs on", "RT_PUSH_IPI"),
            (
                "NO_RT_PUSH_IPI",
                "push IPIs off (the non-PREEMPT_RT default)",
                "NO_RT_PUSH_IPI",
            ),
        ],
        &[
            (
                "pi",
                "owner FIFO 10 mask {1,3}, hog FIFO 99, waiter FIFO 90 on a PI mutex",
            ),
            (
                "no-boost",
                "control: PTHREAD_PRIO_NONE, nothing boosts the owner",
            ),
        ],
        8,
    );
    write(
        &dir.join(results::RUN_JSON),
        &(serde_json::to_string_pretty(&run).unwrap() + "\n"),
    )?;
    write(
        &dir.join("README"),
        &format!(
            "{LABEL}.\nNumbers shaped like the seed's PI-boost table (seeds/001); made by analysis::synth::trials::generate.\n"
        ),
    )
}
