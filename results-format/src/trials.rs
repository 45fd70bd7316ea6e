//! Trial rigs' results: one record per trial (samples.jsonl) and per setting, variant
//! and metric one summary row (summary.json). Reading is lenient where results from
//! other versions may differ: absent or null fields take the defaults below.

use crate::lenient;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// How a trial ended, as samples.jsonl names it.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum TrialStatus {
    Ok,
    /// Threads were still running at the trial timeout.
    TimedOut,
    /// Stopped by the user or the run's hard bound.
    Aborted,
    /// The trial could not run (a thread could not be started, the backend failed).
    Failed,
    /// Threads did not stop even after being demoted; the run ends.
    Stuck,
    /// A status this version does not know (or none written).
    #[default]
    #[serde(other)]
    Unknown,
}

impl TrialStatus {
    /// The name written to disk.
    pub fn as_str(self) -> &'static str {
        match self {
            TrialStatus::Ok => "ok",
            TrialStatus::TimedOut => "timed_out",
            TrialStatus::Aborted => "aborted",
            TrialStatus::Failed => "failed",
            TrialStatus::Stuck => "stuck",
            TrialStatus::Unknown => "unknown",
        }
    }
}

impl fmt::Display for TrialStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// From the on-disk name (the livefx trial reports its status by that name).
impl From<&str> for TrialStatus {
    fn from(s: &str) -> Self {
        match s {
            "ok" => TrialStatus::Ok,
            "timed_out" => TrialStatus::TimedOut,
            "aborted" => TrialStatus::Aborted,
            "failed" => TrialStatus::Failed,
            "stuck" => TrialStatus::Stuck,
            _ => TrialStatus::Unknown,
        }
    }
}

/// One trial as recorded in samples.jsonl.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialRecord {
    #[serde(default = "dash", deserialize_with = "setting_name")]
    pub setting: String,
    #[serde(default = "default_variant", deserialize_with = "variant_name")]
    pub variant: String,
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub trial: u32,
    #[serde(default, deserialize_with = "status")]
    pub status: TrialStatus,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::text"
    )]
    pub detail: Option<String>,
    /// NaN when a record read back has none.
    #[serde(default = "nan", deserialize_with = "lenient::number_or_nan")]
    pub duration_ms: f64,
    /// Metric values in the metric's unit.
    #[serde(default, deserialize_with = "lenient::number_lists")]
    pub metrics: BTreeMap<String, Vec<f64>>,
    /// Metrics this trial did not measure because it ended early (the rig's
    /// `end_early`): each is known only to be at least the value given, in the metric's
    /// unit (the bound it had passed, for the bounded metric). Such a metric has no
    /// entry in `metrics`: a censored value is never a measurement. Empty in files
    /// written before trials could end early.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "lenient::number_map"
    )]
    pub censored: BTreeMap<String, f64>,
    /// Mark times in ns since the trial's start, by `thread.mark`.
    #[serde(default, deserialize_with = "lenient::count_lists")]
    pub marks: BTreeMap<String, Vec<u64>>,
    /// Per-trial evidence lines (e.g. the trace's mechanism summary); may be empty.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "lenient::texts"
    )]
    pub evidence: Vec<String>,
}

/// One row of summary.json and of the printed table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    #[serde(default = "dash", deserialize_with = "setting_name")]
    pub setting: String,
    #[serde(default = "default_variant", deserialize_with = "variant_name")]
    pub variant: String,
    #[serde(default = "default_metric", deserialize_with = "metric_name")]
    pub metric: String,
    #[serde(default, deserialize_with = "lenient::text_or_empty")]
    pub unit: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::text"
    )]
    pub bound: Option<String>,
    /// Trials run for this setting and variant.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub n: usize,
    /// Values meeting the bound (None without a bound). Missing values never do.
    #[serde(default, deserialize_with = "lenient::count")]
    pub within_bound: Option<usize>,
    /// Trials that produced no value (timed out before the mark was taken).
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub missing: usize,
    /// Over the measured and the censored values (`order_stats`); where one falls on
    /// a censored value it is only a lower bound, and its `*_at_least` says so.
    #[serde(default, deserialize_with = "lenient::number")]
    pub median: Option<f64>,
    #[serde(default, deserialize_with = "lenient::number")]
    pub min: Option<f64>,
    #[serde(default, deserialize_with = "lenient::number")]
    pub max: Option<f64>,
    /// The measured values only.
    #[serde(default, deserialize_with = "lenient::numbers")]
    pub values: Vec<f64>,
    /// Trials that ended early before this metric's end mark (`TrialRecord::censored`):
    /// each value is what it was censored at (its value is at least that). Never among
    /// `values`, never within the bound, not `missing`.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "lenient::numbers"
    )]
    pub censored: Vec<f64>,
    /// `median` is a lower bound: the median falls on a censored value ("≥ 100 ms").
    #[serde(
        default,
        skip_serializing_if = "is_false",
        deserialize_with = "lenient::flag"
    )]
    pub median_at_least: bool,
    #[serde(
        default,
        skip_serializing_if = "is_false",
        deserialize_with = "lenient::flag"
    )]
    pub min_at_least: bool,
    #[serde(
        default,
        skip_serializing_if = "is_false",
        deserialize_with = "lenient::flag"
    )]
    pub max_at_least: bool,
}

/// The median, min and max of measured `values` and `censored` ones (each known only to
/// be at least its value), and which of them are only lower bounds. A censored value
/// enters at its censoring point, which bounds it from below, so each figure is a
/// lower bound of the true one; it is exact when putting the censored values anywhere
/// above their points (here: at infinity) leaves it unchanged.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OrderStats {
    pub median: Option<f64>,
    pub median_at_least: bool,
    pub min: Option<f64>,
    pub min_at_least: bool,
    pub max: Option<f64>,
    pub max_at_least: bool,
}

impl OrderStats {
    pub fn of(values: &[f64], censored: &[f64]) -> OrderStats {
        let at = |c: &dyn Fn(f64) -> f64| -> Vec<f64> {
            let mut v: Vec<f64> = values
                .iter()
                .copied()
                .chain(censored.iter().map(|x| c(*x)))
                .collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let (lo, hi) = (at(&|x| x), at(&|_| f64::INFINITY));
        let pick = |f: fn(&[f64]) -> Option<f64>| {
            let (a, b) = (f(&lo), f(&hi));
            (a, a != b)
        };
        let (median, median_at_least) = pick(median_of_sorted);
        let (min, min_at_least) = pick(|v| v.first().copied());
        let (max, max_at_least) = pick(|v| v.last().copied());
        OrderStats {
            median,
            median_at_least,
            min,
            min_at_least,
            max,
            max_at_least,
        }
    }
}

/// The median of sorted values: the middle one, or the mean of the middle two.
pub fn median_of_sorted(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    Some(if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    })
}

/// A figure for people: "12.5", or "≥ 100" when it is only a lower bound.
pub fn at_least(at_least: bool, text: String) -> String {
    if at_least {
        format!("≥ {text}")
    } else {
        text
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What a reader makes of a row with nothing in it (or nothing readable): the defaults
/// each field reads with.
impl Default for Row {
    fn default() -> Row {
        Row {
            setting: dash(),
            variant: default_variant(),
            metric: default_metric(),
            unit: String::new(),
            bound: None,
            n: 0,
            within_bound: None,
            missing: 0,
            median: None,
            min: None,
            max: None,
            values: Vec::new(),
            censored: Vec::new(),
            median_at_least: false,
            min_at_least: false,
            max_at_least: false,
        }
    }
}

impl Row {
    /// Sets `median`, `min` and `max`, and whether each is only a lower bound, from
    /// `values` and `censored` (`OrderStats`).
    pub fn set_order_stats(&mut self) {
        let s = OrderStats::of(&self.values, &self.censored);
        (self.median, self.median_at_least) = (s.median, s.median_at_least);
        (self.min, self.min_at_least) = (s.min, s.min_at_least);
        (self.max, self.max_at_least) = (s.max, s.max_at_least);
    }

    /// " (1 no value, 5 censored)": the row's trials without a measured value, for
    /// after its `n`; `none` names those without any ("no value", "none").
    pub fn not_measured(&self, none: &str) -> String {
        let mut parts = vec![];
        if self.missing > 0 {
            parts.push(format!("{} {none}", self.missing));
        }
        if !self.censored.is_empty() {
            parts.push(format!("{} censored", self.censored.len()));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        }
    }
}

/// summary.json of a trial rig.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// The results format (crate::FORMAT_VERSION); 0 when absent.
    #[serde(default)]
    pub format: u32,
    #[serde(default)]
    pub rig: String,
    /// "trials".
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub rows: Vec<Row>,
    /// `--until-decided`: the stopping rule and each variant's comparison; absent for
    /// a run with a fixed number of trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_decided: Option<Decided>,
}

impl Summary {
    pub fn new(rig: &str, rows: Vec<Row>) -> Summary {
        Summary {
            format: crate::FORMAT_VERSION,
            rig: rig.to_string(),
            kind: crate::KIND_TRIALS.into(),
            rows,
            until_decided: None,
        }
    }
}

/// A run with `--until-decided`: its rule, stated, and per variant the comparison of
/// the two settings that decided how many trials it got.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Decided {
    /// The rule in words, as the table prints it.
    #[serde(default)]
    pub rule: String,
    /// "fisher_exact_two_sided".
    #[serde(default)]
    pub test: String,
    /// The per-trial outcome: this metric's values all within its bound.
    #[serde(default)]
    pub metric: String,
    #[serde(default)]
    pub bound: String,
    /// The overall error rate, across every look.
    #[serde(default)]
    pub alpha: f64,
    /// The level the looks after the first share (in files without `levels`, every
    /// look's: alpha over the looks that can reach it, Tarone's).
    #[serde(default)]
    pub per_look: f64,
    /// Trials per setting at which a look can decide.
    #[serde(default)]
    pub looks: Vec<u32>,
    /// The level each of `looks` is tested at, in the same order: p ≤ it decides.
    /// Empty in files written before looks had levels of their own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<f64>,
    /// The rule's overall error rate, computed exactly over every outcome: the chance,
    /// when both settings pass with one probability, that any look decides, at the
    /// probability where it is largest (`error_rate_q`). None in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate_q: Option<f64>,
    /// The most trials a setting gets per variant.
    #[serde(default)]
    pub max_trials: u32,
    #[serde(default)]
    pub pairs: Vec<DecidedPair>,
}

/// One variant's two settings compared.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DecidedPair {
    #[serde(default)]
    pub variant: String,
    #[serde(default)]
    pub first: String,
    #[serde(default)]
    pub second: String,
    /// Trials per setting the decision used (complete rounds).
    #[serde(default)]
    pub trials: u32,
    /// Trials within the bound, per setting.
    #[serde(default)]
    pub first_within: u32,
    #[serde(default)]
    pub second_within: u32,
    /// Fisher's two-sided p at the last look; None before the first complete round.
    #[serde(default)]
    pub p: Option<f64>,
    #[serde(default)]
    pub decision: Decision,
    /// The setting within the bound less often, when decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worse: Option<String>,
}

/// How a variant's comparison ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// p at or below the per-look level: one setting is worse.
    Decided,
    /// The maximum was reached without a decision.
    UndecidedAtMaximum,
    /// Stopped early: no outcome of the remaining trials could decide it.
    Undecidable,
    /// The run ended (interrupted, failed) before the comparison did.
    Unfinished,
    /// A decision this version does not know.
    #[default]
    #[serde(other)]
    Unknown,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Decided => "decided",
            Decision::UndecidedAtMaximum => "undecided_at_maximum",
            Decision::Undecidable => "undecidable",
            Decision::Unfinished => "unfinished",
            Decision::Unknown => "unknown",
        }
    }
}

fn dash() -> String {
    "-".into()
}
fn default_variant() -> String {
    "default".into()
}
fn default_metric() -> String {
    "value".into()
}
fn nan() -> f64 {
    f64::NAN
}

fn setting_name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(lenient::text(d)?.unwrap_or_else(dash))
}
fn variant_name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(lenient::text(d)?.unwrap_or_else(default_variant))
}
fn metric_name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(lenient::text(d)?.unwrap_or_else(default_metric))
}
fn status<'de, D: Deserializer<'de>>(d: D) -> Result<TrialStatus, D::Error> {
    Ok(lenient::text(d)?
        .as_deref()
        .map_or(TrialStatus::Unknown, TrialStatus::from))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_row_reads_as_the_default_row() {
        let empty: Row = serde_json::from_str("{}").unwrap();
        assert_eq!(
            serde_json::to_value(&empty).unwrap(),
            serde_json::to_value(Row::default()).unwrap()
        );
    }

    #[test]
    fn statuses_keep_their_names_on_disk() {
        for s in [
            TrialStatus::Ok,
            TrialStatus::TimedOut,
            TrialStatus::Aborted,
            TrialStatus::Failed,
            TrialStatus::Stuck,
        ] {
            let j = serde_json::to_string(&s).unwrap();
            assert_eq!(j, format!("\"{}\"", s.as_str()));
            assert_eq!(serde_json::from_str::<TrialStatus>(&j).unwrap(), s);
            assert_eq!(TrialStatus::from(s.as_str()), s);
        }
        assert_eq!(TrialStatus::from("weird"), TrialStatus::Unknown);
    }

    #[test]
    fn records_round_trip_and_read_leniently() {
        let line = r#"{"setting":"as-is","variant":"none","trial":1,"status":"timed_out","detail":"unfinished","duration_ms":400.3,"metrics":{"wait":[380.1]},"marks":{"waiter.got":[400190776]}}"#;
        let r: TrialRecord = serde_json::from_str(line).unwrap();
        assert_eq!(r.status, TrialStatus::TimedOut);
        assert_eq!(r.marks["waiter.got"], vec![400190776]);
        assert_eq!(serde_json::to_string(&r).unwrap(), line);
        let r: TrialRecord =
            serde_json::from_str(r#"{"setting":null,"trial":2.0,"metrics":{"w":[1,"x",2]},"marks":{"a":[-1]},"evidence":["e",3]}"#)
                .unwrap();
        assert_eq!((r.setting.as_str(), r.variant.as_str()), ("-", "default"));
        assert_eq!((r.trial, r.status), (2, TrialStatus::Unknown));
        assert!(r.duration_ms.is_nan());
        assert_eq!(r.metrics["w"], vec![1.0, 2.0]);
        assert!(r.marks.is_empty());
        assert_eq!(r.evidence, vec!["e"]);
    }

    #[test]
    fn censored_metrics_round_trip_and_older_records_have_none() {
        let line = r#"{"setting":"NO_RT_PUSH_IPI","variant":"pi","trial":3,"status":"ok","detail":"ended early","duration_ms":101.2,"metrics":{"owner_migrations":[0.0]},"censored":{"wait":100.0},"marks":{"waiter.want":[2000000]}}"#;
        let r: TrialRecord = serde_json::from_str(line).unwrap();
        assert_eq!(r.censored.get("wait"), Some(&100.0));
        assert!(!r.metrics.contains_key("wait"));
        assert_eq!(serde_json::to_string(&r).unwrap(), line);
        // Written before trials could end early: no field, and none written back.
        let old = r#"{"setting":"a","variant":"v","trial":0,"status":"ok","duration_ms":1.0,"metrics":{"wait":[1.0]},"marks":{}}"#;
        let r: TrialRecord = serde_json::from_str(old).unwrap();
        assert!(r.censored.is_empty());
        assert_eq!(serde_json::to_string(&r).unwrap(), old);
        // A damaged entry costs itself only.
        let r: TrialRecord =
            serde_json::from_str(r#"{"censored":{"wait":"x","other":5}}"#).unwrap();
        assert_eq!(r.censored.len(), 1);
        assert_eq!(r.censored["other"], 5.0);
    }

    #[test]
    fn not_measured_counts_trials_without_a_value_and_censored_ones() {
        let mut r = Row::default();
        assert_eq!(r.not_measured("none"), "");
        r.missing = 1;
        assert_eq!(r.not_measured("none"), " (1 none)");
        r.censored = vec![100.0, 100.0];
        assert_eq!(r.not_measured("no value"), " (1 no value, 2 censored)");
        r.missing = 0;
        assert_eq!(r.not_measured("none"), " (2 censored)");
    }

    #[test]
    fn order_stats_say_where_a_censored_value_leaves_only_a_lower_bound() {
        // Medians on measured values stay exact.
        let s = OrderStats::of(&[1.0, 2.0, 3.0], &[100.0, 100.0]);
        assert_eq!((s.median, s.median_at_least), (Some(3.0), false));
        assert_eq!((s.min, s.min_at_least), (Some(1.0), false));
        assert_eq!((s.max, s.max_at_least), (Some(100.0), true));
        // The median on a censored value: at least the bound.
        let s = OrderStats::of(&[1.0], &[100.0, 100.0]);
        assert_eq!((s.median, s.median_at_least), (Some(100.0), true));
        // Between a measured and a censored value: at least their mean.
        let s = OrderStats::of(&[1.0, 2.0], &[100.0, 100.0]);
        assert_eq!((s.median, s.median_at_least), (Some(51.0), true));
        // All censored: every figure a lower bound.
        let s = OrderStats::of(&[], &[100.0]);
        assert_eq!(
            (s.median_at_least, s.min_at_least, s.max_at_least),
            (true, true, true)
        );
        // None censored: as before.
        let s = OrderStats::of(&[3.0, 1.0, 2.0, 4.0], &[]);
        assert_eq!(
            (s.median, s.median_at_least, s.max_at_least),
            (Some(2.5), false, false)
        );
        assert_eq!(OrderStats::of(&[], &[]), OrderStats::default());
        let mut r = Row {
            values: vec![0.8],
            censored: vec![100.0, 100.0],
            ..Row::default()
        };
        r.set_order_stats();
        let j = serde_json::to_string(&r).unwrap();
        assert!(
            j.contains(r#""censored":[100.0,100.0],"median_at_least":true"#),
            "{j}"
        );
        assert!(!j.contains("min_at_least"), "{j}");
        let back: Row = serde_json::from_str(&j).unwrap();
        assert!(back.median_at_least && back.max_at_least && !back.min_at_least);
        assert_eq!(at_least(true, "100".into()), "≥ 100");
    }

    #[test]
    fn a_decided_rule_written_before_levels_still_reads() {
        let d: Decided = serde_json::from_str(
            r#"{"rule":"r","test":"fisher_exact_two_sided","alpha":0.01,"per_look":0.0033333333333333335,"looks":[6,7,8],"max_trials":8,"pairs":[]}"#,
        )
        .unwrap();
        assert_eq!((d.looks, d.per_look), (vec![6, 7, 8], 0.01 / 3.0));
        assert!(d.levels.is_empty() && d.error_rate.is_none() && d.error_rate_q.is_none());
    }

    #[test]
    fn rows_read_leniently_and_write_as_before() {
        let r: Row = serde_json::from_str(
            r#"{"metric":"wait","n":"3","within_bound":2.0,"median":null,"values":[1,null,2]}"#,
        )
        .unwrap();
        assert_eq!((r.setting.as_str(), r.variant.as_str()), ("-", "default"));
        assert_eq!((r.n, r.within_bound, r.missing), (3, Some(2), 0));
        assert_eq!((r.median, r.bound.as_deref()), (None, None));
        assert_eq!(r.values, vec![1.0, 2.0]);
        let j = serde_json::to_string(&r).unwrap();
        assert!(!j.contains("\"bound\""), "{j}");
        assert!(j.contains("\"within_bound\":2"), "{j}");
    }
}
