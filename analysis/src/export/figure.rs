//! What each kind exports as KCIDB tests (and LAVA test cases): a `Figure` per summary
//! row and metric, with its KCIDB status and number. Below `kind/`, which hands these to
//! `kcidb.rs`; nothing here looks a directory's kind up.

use crate::load::livefx::{LRow, LivefxData};
use crate::load::trials::{TRow, TrialsData};
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
            number: r.median.filter(|v| v.is_finite()).map(|v| Number {
                value: v,
                unit: (!r.unit.is_empty()).then(|| r.unit.clone()),
            }),
            duration: trials_seconds(t, &r.setting, &r.variant),
            misc: trial_misc(r),
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
            });
        }
    }
    out
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
