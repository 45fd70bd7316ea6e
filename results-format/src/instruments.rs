//! The instruments' per-trial files beside samples.jsonl: `ipi/<trial>.json` (IPI
//! counter deltas per interval) and `trace/<trial>.derived.json` (the sched trace's
//! runtime intervals, migrations and PI boosts, so readers need not parse the raw text).
//! `<trial>` is `crate::trial_stem`. Fields in alphabetical order, as written before.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const IPI_DIR: &str = "ipi";
pub const TRACE_DIR: &str = "trace";

/// `ipi/<trial>.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IpiCapture {
    /// Per counter and CPU (`"CAL_cpu1"`), the count in each interval.
    pub deltas: BTreeMap<String, Vec<u64>>,
    pub interval_ns: u64,
    /// When each sample was taken, from the first.
    pub times_ns: Vec<u64>,
}

/// `trace/<trial>.derived.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DerivedTrace {
    pub boosts: Vec<TraceBoost>,
    /// The names of an interval's fields, in order (`INTERVAL_COLUMNS`).
    pub columns: Vec<String>,
    /// Per thread, its runtime intervals.
    pub intervals: BTreeMap<String, Vec<TraceInterval>>,
    pub migrations: Vec<TraceMigration>,
    /// (thread name, tid).
    pub tids: Vec<(String, i32)>,
}

pub const INTERVAL_COLUMNS: [&str; 4] = ["start_ms", "length_ms", "cpu", "end_state"];

/// One stretch a thread ran, written as `[start_ms, length_ms, cpu, end_state]` (times
/// from the trial's start).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceInterval(pub f64, pub f64, pub u32, pub String);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceMigration {
    pub dest_cpu: u32,
    /// Moved from interrupt context (a push IPI).
    pub hardirq: bool,
    pub orig_cpu: u32,
    pub t_ms: f64,
    pub tid: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceBoost {
    /// Kernel priorities: lower is higher; a boost lowers it.
    pub newprio: i32,
    pub oldprio: i32,
    pub t_ms: f64,
    pub tid: i32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_trace_is_written_as_before() {
        let text = r#"{"boosts":[{"newprio":9,"oldprio":89,"t_ms":1.5,"tid":7}],"columns":["start_ms","length_ms","cpu","end_state"],"intervals":{"a":[[0.5,2.0,1,"R+"]]},"migrations":[{"dest_cpu":3,"hardirq":true,"orig_cpu":1,"t_ms":2.5,"tid":7}],"tids":[["a",7]]}"#;
        let d: DerivedTrace = serde_json::from_str(text).unwrap();
        assert_eq!(d.intervals["a"][0].3, "R+");
        assert_eq!(serde_json::to_string(&d).unwrap(), text);
    }
}
