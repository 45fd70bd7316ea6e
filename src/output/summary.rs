//! Results of trial rigs: per-trial records (samples.jsonl) and per setting, variant
//! and metric rows (summary.json), computed from the marks the threads took.

use crate::rig::units::unit_scale;
use crate::rig::{Metric, Plan};

/// The records and rows are the results format's types; this module computes them.
pub use results::trials::{Row, Summary, TrialRecord, TrialStatus};

/// Values of `metric` in one trial: pairs the n-th `from` mark with the n-th `to` mark,
/// per thread instance.
pub fn metric_values(metric: &Metric, plan: &Plan, marks: &[Vec<u64>]) -> Vec<f64> {
    let scale = unit_scale(&metric.unit).unwrap_or(1e6);
    let slots = |(t, m): &(String, String)| -> Vec<(u32, usize)> {
        plan.marks
            .iter()
            .enumerate()
            .filter(|(_, s)| &s.base == t && &s.mark == m)
            .map(|(i, s)| (s.instance, i))
            .collect()
    };
    let from = slots(&metric.from);
    let to = slots(&metric.to);
    let mut out = Vec::new();
    let pairs: Vec<(usize, usize)> = if from.len() == to.len() {
        from.iter().zip(&to).map(|(a, b)| (a.1, b.1)).collect()
    } else if from.len() == 1 {
        to.iter().map(|b| (from[0].1, b.1)).collect()
    } else if to.len() == 1 {
        from.iter().map(|a| (a.1, to[0].1)).collect()
    } else {
        vec![]
    };
    for (f, t) in pairs {
        let (Some(fv), Some(tv)) = (marks.get(f), marks.get(t)) else {
            continue;
        };
        for (a, b) in fv.iter().zip(tv) {
            out.push((*b as i64 - *a as i64) as f64 / scale);
        }
    }
    out
}

/// Builds rows in the order settings, variants and metrics were given.
pub fn rows(
    records: &[TrialRecord],
    settings: &[String],
    variants: &[String],
    metrics: &[Metric],
) -> Vec<Row> {
    let mut out = Vec::new();
    for s in settings {
        for v in variants {
            let recs: Vec<&TrialRecord> = records
                .iter()
                .filter(|r| &r.setting == s && &r.variant == v)
                .collect();
            if recs.is_empty() {
                continue;
            }
            for m in metrics {
                let mut values: Vec<f64> = Vec::new();
                let mut censored: Vec<f64> = Vec::new();
                let mut missing = 0;
                for r in &recs {
                    match (r.metrics.get(&m.name), r.censored.get(&m.name)) {
                        (Some(vs), _) if !vs.is_empty() => values.extend(vs),
                        // Ended early: a value, known only from below, not a missing one.
                        (_, Some(c)) => censored.push(*c),
                        _ => missing += 1,
                    }
                }
                let scale = unit_scale(&m.unit).unwrap_or(1e6);
                // Censored values passed the bound (that is why their trials ended): never within.
                let within = m.bound.map(|b| {
                    values
                        .iter()
                        .filter(|&&x| x >= 0.0 && b.holds((x * scale).round() as u64))
                        .count()
                });
                let mut row = Row {
                    setting: s.clone(),
                    variant: v.clone(),
                    metric: m.name.clone(),
                    unit: m.unit.clone(),
                    bound: m.bound.map(|b| b.display(&m.unit)),
                    n: recs.len(),
                    within_bound: within,
                    missing,
                    values,
                    censored,
                    ..Row::default()
                };
                // A median that falls on a censored value is "at least" it.
                row.set_order_stats();
                out.push(row);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::path::Path;

    #[test]
    fn rows_count_bounds_and_missing() {
        let rig = crate::rig::parse(
            Path::new("r.toml"),
            r#"
[[threads]]
name = "w"
policy = "other"
steps = [ { mark = "a" }, { mark = "b" } ]
[metrics.wait]
from = "w.a"
to = "w.b"
bound = "< 100 ms"
"#,
        )
        .unwrap();
        let plan = &rig.variants[0].plan;
        let m = &rig.metrics[0];
        assert_eq!(
            metric_values(m, plan, &[vec![1_000_000], vec![51_000_000]]),
            vec![50.0]
        );
        let rec = |v: Option<f64>| TrialRecord {
            setting: "s".into(),
            variant: "default".into(),
            trial: 0,
            status: TrialStatus::Ok,
            detail: None,
            duration_ms: 0.0,
            metrics: v
                .map(|x| ("wait".to_string(), vec![x]))
                .into_iter()
                .collect(),
            censored: BTreeMap::new(),
            marks: BTreeMap::new(),
            evidence: vec![],
        };
        let recs = vec![rec(Some(50.0)), rec(Some(150.0)), rec(None), rec(Some(1.0))];
        let r = rows(&recs, &["s".into()], &["default".into()], &rig.metrics);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].n, 4);
        assert_eq!(r[0].missing, 1);
        assert_eq!(r[0].within_bound, Some(2));
        assert_eq!(r[0].median, Some(50.0));
        assert_eq!((r[0].min, r[0].max), (Some(1.0), Some(150.0)));
        assert_eq!(r[0].bound.as_deref(), Some("< 100 ms"));
        assert!(r[0].censored.is_empty() && !r[0].median_at_least);
        // Trials that ended early: censored at the bound, neither values nor missing,
        // never within it; the median that falls on one is a lower bound.
        let cut = || {
            let mut t = rec(None);
            t.censored.insert("wait".into(), 100.0);
            t
        };
        let recs = vec![rec(Some(50.0)), cut(), rec(None), cut(), cut()];
        let r = rows(&recs, &["s".into()], &["default".into()], &rig.metrics);
        assert_eq!((r[0].n, r[0].missing, r[0].within_bound), (5, 1, Some(1)));
        assert_eq!(
            (r[0].values.clone(), r[0].censored.clone()),
            (vec![50.0], vec![100.0; 3])
        );
        assert_eq!((r[0].median, r[0].median_at_least), (Some(100.0), true));
        assert_eq!((r[0].min, r[0].min_at_least), (Some(50.0), false));
        assert_eq!((r[0].max, r[0].max_at_least), (Some(100.0), true));
    }
}
