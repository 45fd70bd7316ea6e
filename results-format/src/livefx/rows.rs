//! summary.json of a livefx run: one row per setting and variant (summed over its
//! trials) and one per trial. Every field a reader may miss in older results is an
//! Option or has a default; numbers are read leniently (see `lenient`).

use super::counters::{BurstCounts, Counters};
use crate::lenient;
use crate::trials::TrialStatus;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;

/// summary.json's `kind` for livefx runs.
pub const KIND: &str = "livefx";

fn dash() -> String {
    "-".into()
}
fn default_variant() -> String {
    "default".into()
}
fn unknown_backend() -> String {
    "?".into()
}
pub(crate) fn setting_name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(lenient::text(d)?.unwrap_or_else(dash))
}
pub(crate) fn variant_name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(lenient::text(d)?.unwrap_or_else(default_variant))
}
fn backend_name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(lenient::text(d)?.unwrap_or_else(unknown_backend))
}
/// A trial status as written; an unknown name reads as `Unknown`, a non-string as absent.
/// Here, not in `lenient`, which stays below the types it reads.
fn status<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TrialStatus>, D::Error> {
    Ok(lenient::text(d)?.map(|s| TrialStatus::from(s.as_str())))
}

/// The livefx summary.json.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Summary {
    /// The results format version (absent before it had one: format 0).
    #[serde(
        default,
        deserialize_with = "lenient::count",
        skip_serializing_if = "Option::is_none"
    )]
    pub format: Option<u32>,
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub rig: String,
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub kind: String,
    #[serde(default, deserialize_with = "lenient::records")]
    pub rows: Vec<Row>,
    #[serde(default, deserialize_with = "lenient::records")]
    pub trials: Vec<TrialRow>,
    /// `--until-decided`: the stopping rule and each variant's comparison, as a thread
    /// rig's summary.json has them; absent for a run with a fixed number of trials (and
    /// in results from before livefx rigs had it). A damaged one reads as absent.
    #[serde(
        default,
        deserialize_with = "lenient::or_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub until_decided: Option<crate::trials::Decided>,
}

/// Percentiles of one latency in µs; all None when nothing was recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Pcts {
    #[serde(default, deserialize_with = "lenient::number")]
    pub p50: Option<f64>,
    #[serde(default, deserialize_with = "lenient::number")]
    pub p99: Option<f64>,
    #[serde(default, deserialize_with = "lenient::number")]
    pub p999: Option<f64>,
    #[serde(default, deserialize_with = "lenient::number")]
    pub max: Option<f64>,
}

/// One cause of deadline misses and how often it struck.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    #[serde(default, deserialize_with = "lenient::text")]
    pub cause: Option<String>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub count: Option<u64>,
    /// [min, max] ms the lock holder was kept off a CPU (from the trace).
    #[serde(default, deserialize_with = "lenient::range")]
    pub stuck_ms: Option<(f64, f64)>,
    /// [min, max] ms the worker waited for the lock.
    #[serde(default, deserialize_with = "lenient::range")]
    pub wait_ms: Option<(f64, f64)>,
}

/// A row's `why`: the misses grouped by cause, most frequent first. Absent in results
/// from before causes were recorded; unreadable ones are kept apart, so the rest of the
/// row still reads and the reader can say what was wrong.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Causes {
    #[default]
    Absent,
    Listed(Vec<Cause>),
    Unreadable(String),
}

impl Causes {
    pub fn list(&self) -> Option<&[Cause]> {
        match self {
            Causes::Listed(v) => Some(v),
            _ => None,
        }
    }
    pub fn is_absent(&self) -> bool {
        !matches!(self, Causes::Listed(_))
    }
}

impl Serialize for Causes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.list().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Causes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Causes, D::Error> {
        Ok(match Option::<serde_json::Value>::deserialize(d)? {
            None | Some(serde_json::Value::Null) => Causes::Absent,
            Some(v) => match Vec::<Cause>::deserialize(v) {
                Ok(c) => Causes::Listed(c),
                Err(e) => Causes::Unreadable(e.to_string()),
            },
        })
    }
}

/// The counts a summary row (summed over its trials) and a trial row both carry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RowCounts {
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub cycles: u64,
    /// The backend's xruns (RT path and JACK's notifications).
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub xruns: u64,
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub deadline_misses: u64,
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub injected: u64,
    /// Newer writers: injected overruns not seen as misses, and misses on cycles without
    /// an injected overrun.
    #[serde(default, deserialize_with = "lenient::count")]
    pub injected_undetected: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub misses_not_injected: Option<u64>,
    /// Loopback discontinuities (None: no loopback check).
    #[serde(default, deserialize_with = "lenient::count")]
    pub discontinuities: Option<u64>,
    /// Of those, the ones with no xrun or miss just before them.
    #[serde(default, deserialize_with = "lenient::count")]
    pub discontinuities_unexplained: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub roundtrip_frames: Option<u32>,
    /// Newer writers: dropout episodes (dropouts closer than
    /// `counters::EPISODE_GAP_NS` are one), tested by `compare` beside the dropouts.
    /// Left out when unknown, so an older run's rows are written back as they were.
    #[serde(
        default,
        deserialize_with = "lenient::count",
        skip_serializing_if = "Option::is_none"
    )]
    pub episodes: Option<u64>,
}

impl RowCounts {
    /// The counters as the engine summed them: every counter field written. The
    /// loopback's figures are not flags of the cycles: the caller sets them.
    pub fn set(&mut self, c: &Counters) {
        self.cycles = c.cycles;
        self.xruns = c.xruns;
        self.deadline_misses = c.deadline_misses;
        self.injected = c.injected;
        self.injected_undetected = Some(c.injected_undetected);
        self.misses_not_injected = Some(c.misses_not_injected);
        self.episodes = Some(c.episodes.count);
    }

    /// The loopback check's figures (None without a loopback).
    pub fn set_loopback(
        &mut self,
        discontinuities: Option<u64>,
        unexplained: Option<u64>,
        roundtrip_frames: Option<u32>,
    ) {
        self.discontinuities = discontinuities;
        self.discontinuities_unexplained = unexplained;
        self.roundtrip_frames = roundtrip_frames;
    }
}

/// One row of summary.json: a setting and variant, summed over its trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    #[serde(default = "dash", deserialize_with = "setting_name")]
    pub setting: String,
    #[serde(default = "default_variant", deserialize_with = "variant_name")]
    pub variant: String,
    #[serde(default = "unknown_backend", deserialize_with = "backend_name")]
    pub backend: String,
    /// Why this backend, and what it measures.
    #[serde(default, deserialize_with = "lenient::text")]
    pub backend_note: Option<String>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub rate: Option<u32>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub period: Option<u32>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub trials: Option<u32>,
    /// Summed over the row's trials.
    #[serde(default, deserialize_with = "lenient::number")]
    pub duration_s: Option<f64>,
    #[serde(flatten)]
    pub counts: RowCounts,
    /// Newer writers: cycle records the writer had to drop.
    #[serde(default, deserialize_with = "lenient::count")]
    pub records_dropped: Option<u64>,
    #[serde(default, deserialize_with = "lenient::number")]
    pub misses_per_hour: Option<f64>,
    #[serde(default, deserialize_with = "lenient::number")]
    pub xruns_per_hour: Option<f64>,
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub callback_us: Pcts,
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub lateness_us: Pcts,
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub wake_us: Pcts,
    #[serde(default, deserialize_with = "lenient::number")]
    pub misses_per_min: Option<f64>,
    /// 95 % interval of misses_per_min.
    #[serde(default, deserialize_with = "lenient::range")]
    pub misses_per_min_ci95: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Causes::is_absent")]
    pub why: Causes,
    /// Rigs with bursts of background load (livefx-push-ipi): written together, absent
    /// otherwise; see `BurstCounts`.
    #[serde(flatten)]
    pub burst: BurstFields,
    #[serde(
        default,
        deserialize_with = "lenient::count",
        skip_serializing_if = "Option::is_none"
    )]
    pub bursts_missed: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient::count",
        skip_serializing_if = "Option::is_none"
    )]
    pub misses_in_bursts: Option<u64>,
    /// The driver under the server (`AudioServer::driver`: "dummy", "alsa hw:0"), so the
    /// report can say whether a sound card was in the loop; absent when not known.
    #[serde(
        default,
        deserialize_with = "lenient::text",
        skip_serializing_if = "Option::is_none"
    )]
    pub driver: Option<String>,
}

/// What a reader makes of a row with nothing in it (or nothing readable).
impl Default for Row {
    fn default() -> Row {
        Row {
            setting: dash(),
            variant: default_variant(),
            backend: unknown_backend(),
            backend_note: None,
            rate: None,
            period: None,
            trials: None,
            duration_s: None,
            counts: RowCounts::default(),
            records_dropped: None,
            misses_per_hour: None,
            xruns_per_hour: None,
            callback_us: Pcts::default(),
            lateness_us: Pcts::default(),
            wake_us: Pcts::default(),
            misses_per_min: None,
            misses_per_min_ci95: None,
            why: Causes::Absent,
            burst: BurstFields::default(),
            bursts_missed: None,
            misses_in_bursts: None,
            driver: None,
        }
    }
}

impl Row {
    /// A row with nothing counted yet.
    pub fn new(setting: &str, variant: &str) -> Row {
        Row {
            setting: setting.into(),
            variant: variant.into(),
            ..Row::default()
        }
    }

    pub fn set_bursts(&mut self, b: &BurstCounts) {
        self.burst.set(b);
        self.bursts_missed = Some(b.missed);
        self.misses_in_bursts = Some(b.misses_in_bursts);
    }

    /// One period in µs, when rate and period are known.
    pub fn period_us(&self) -> Option<f64> {
        match (self.period, self.rate) {
            (Some(p), Some(r)) if r > 0 => Some(p as f64 * 1e6 / r as f64),
            _ => None,
        }
    }
    /// One trial's length in s: duration_s is the sum over the row's trials.
    pub fn trial_s(&self) -> Option<f64> {
        let d = self.duration_s?;
        Some(match self.trials {
            Some(t) if t > 0 => d / t as f64,
            _ => d,
        })
    }
    /// Audio time covered, in seconds: cycles × period, else the trials' summed duration.
    pub fn audio_s(&self) -> Option<f64> {
        self.period_us()
            .map(|p| self.counts.cycles as f64 * p / 1e6)
            .or(self.duration_s)
    }
}

/// One trial in summary.json's `trials`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRow {
    #[serde(default = "dash", deserialize_with = "setting_name")]
    pub setting: String,
    #[serde(default = "default_variant", deserialize_with = "variant_name")]
    pub variant: String,
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub trial: u32,
    /// The trial's cycles/*.bin, relative to the results directory.
    #[serde(default, deserialize_with = "lenient::text")]
    pub cycles_file: Option<String>,
    #[serde(flatten)]
    pub counts: RowCounts,
    /// Ok, aborted or failed.
    #[serde(default, deserialize_with = "status")]
    pub status: Option<TrialStatus>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub detail: Option<String>,
    /// Rigs with bursts: this trial's bursts, those that caught the lock holder, and
    /// of those the ones with a miss.
    #[serde(flatten)]
    pub burst: BurstFields,
    /// The rig's instruments' per-trial metrics, when they measured any.
    #[serde(
        default,
        deserialize_with = "lenient::or_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub instruments: Option<BTreeMap<String, Vec<f64>>>,
}

/// What a reader makes of a trial with nothing in it (or nothing readable).
impl Default for TrialRow {
    fn default() -> TrialRow {
        TrialRow {
            setting: dash(),
            variant: default_variant(),
            trial: 0,
            cycles_file: None,
            counts: RowCounts::default(),
            status: None,
            detail: None,
            burst: BurstFields::default(),
            instruments: None,
        }
    }
}

impl TrialRow {
    pub fn set_bursts(&mut self, b: &BurstCounts) {
        self.burst.set(b);
    }
}

/// Bursts of background load (livefx-push-ipi), in a summary row and in each trial's row:
/// written together, absent for rigs without bursts; see `BurstCounts`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BurstFields {
    #[serde(
        default,
        deserialize_with = "lenient::count",
        skip_serializing_if = "Option::is_none"
    )]
    pub bursts: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient::count",
        skip_serializing_if = "Option::is_none"
    )]
    pub bursts_caught: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient::count",
        skip_serializing_if = "Option::is_none"
    )]
    pub bursts_caught_missed: Option<u64>,
}

impl BurstFields {
    pub fn set(&mut self, b: &BurstCounts) {
        self.bursts = Some(b.bursts);
        self.bursts_caught = Some(b.caught);
        self.bursts_caught_missed = Some(b.caught_missed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn rows_tolerate_nulls_and_floats() {
        let r: Row = serde_json::from_str(
            r#"{"setting":"S","variant":"v","cycles":10.0,"xruns":null,"rate":48000,"period":128,
                "callback_us":{"p50":1,"p99":null},"unknown":{"x":1}}"#,
        )
        .unwrap();
        assert_eq!((r.counts.cycles, r.counts.xruns), (10, 0));
        assert_eq!(r.callback_us.p50, Some(1.0));
        assert_eq!(r.callback_us.p99, None);
        assert!((r.period_us().unwrap() - 2666.666).abs() < 0.01);
        assert_eq!((r.burst.bursts, &r.why), (None, &Causes::Absent));
        let r: Row = serde_json::from_str(r#"{"setting":7,"variant":null,"wake_us":5}"#).unwrap();
        assert_eq!((r.setting.as_str(), r.variant.as_str()), ("7", "default"));
        assert_eq!((r.backend.as_str(), r.wake_us), ("?", Pcts::default()));
        // Rows that are not objects, and a list that is not one, read as empty.
        let s: Summary =
            serde_json::from_str(r#"{"rows":[3,{"cycles":4}],"trials":null,"kind":"livefx"}"#)
                .unwrap();
        assert_eq!(
            (s.rows[0].setting.as_str(), s.rows[1].counts.cycles),
            ("-", 4)
        );
        assert!(s.trials.is_empty());
    }

    #[test]
    fn rows_read_burst_fields_and_causes() {
        let r: Row = serde_json::from_str(
            r#"{"setting":"S","variant":"v","bursts":40,"bursts_caught":11.0,
                "bursts_caught_missed":9,"bursts_missed":10,"misses_in_bursts":14,
                "misses_per_min":4.1,"misses_per_min_ci95":[5.6,2.9],
                "why":[{"cause":"c1","count":14,"stuck_ms":[31,118],"wait_ms":null},
                       {"cause":"c2","count":1,"stuck_ms":null,"wait_ms":[0.5,0.9],"x":1}]}"#,
        )
        .unwrap();
        assert_eq!(
            (
                r.burst.bursts,
                r.burst.bursts_caught,
                r.burst.bursts_caught_missed,
                r.bursts_missed
            ),
            (Some(40), Some(11), Some(9), Some(10))
        );
        assert_eq!(r.misses_in_bursts, Some(14));
        assert_eq!(r.misses_per_min, Some(4.1));
        assert_eq!(r.misses_per_min_ci95, Some((2.9, 5.6)));
        let why = r.why.list().unwrap();
        assert_eq!(why.len(), 2);
        assert_eq!(why[0].cause.as_deref(), Some("c1"));
        assert_eq!(why[0].stuck_ms, Some((31.0, 118.0)));
        assert_eq!((why[1].stuck_ms, why[1].wait_ms), (None, Some((0.5, 0.9))));
        // A "why" that is not a list: the row still reads, the fault is told.
        let r: Row = serde_json::from_str(r#"{"setting":"S","cycles":5,"why":"oops"}"#).unwrap();
        assert_eq!(r.counts.cycles, 5);
        assert!(matches!(&r.why, Causes::Unreadable(e) if e.contains("invalid type")));
    }

    #[test]
    fn written_rows_have_every_field_of_the_format() {
        let mut r = Row::new("as-is", "pi");
        r.counts.set(&Counters::default());
        r.why = Causes::Listed(vec![]);
        let v = serde_json::to_value(&r).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        for k in [
            "setting",
            "variant",
            "backend",
            "backend_note",
            "rate",
            "period",
            "trials",
            "duration_s",
            "cycles",
            "xruns",
            "deadline_misses",
            "injected",
            "injected_undetected",
            "misses_not_injected",
            "records_dropped",
            "misses_per_hour",
            "xruns_per_hour",
            "discontinuities",
            "discontinuities_unexplained",
            "roundtrip_frames",
            "callback_us",
            "lateness_us",
            "wake_us",
            "misses_per_min",
            "misses_per_min_ci95",
            "why",
        ] {
            assert!(keys.contains(&k), "missing {k}");
        }
        assert!(!keys.contains(&"bursts"), "bursts only with a rig's bursts");
        assert_eq!(
            v["callback_us"],
            json!({"p50": null, "p99": null, "p999": null, "max": null})
        );
        assert_eq!(v["discontinuities"], Value::Null);
        r.set_bursts(&BurstCounts::default());
        r.misses_per_min_ci95 = Some((1.0, 2.0));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["bursts_missed"], 0);
        assert_eq!(v["misses_per_min_ci95"], json!([1.0, 2.0]));
        let back: Row = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }

    /// `until_decided` is new: a summary without it (older results, a fixed number of
    /// trials) loads, one of the wrong shape reads as absent, and none is written back.
    #[test]
    fn until_decided_is_optional_and_a_damaged_one_reads_as_absent() {
        let s: Summary = serde_json::from_str(r#"{"kind":"livefx","rows":[]}"#).unwrap();
        assert!(s.until_decided.is_none());
        let out = serde_json::to_string(&s).unwrap();
        assert!(!out.contains("until_decided"), "{out}");
        let s: Summary = serde_json::from_str(
            r#"{"kind":"livefx","until_decided":{"metric":"misses","bound":"≤ 0","looks":[6,7,8]}}"#,
        )
        .unwrap();
        let d = s.until_decided.unwrap();
        assert_eq!((d.metric.as_str(), d.looks), ("misses", vec![6, 7, 8]));
        let s: Summary =
            serde_json::from_str(r#"{"kind":"livefx","rows":[],"until_decided":{"looks":"x"}}"#)
                .unwrap();
        assert!(s.until_decided.is_none());
    }
}
