//! Livefx results: summary rows, per-trial cycle files (streamed), histograms.json as a
//! fallback when the cycle files are gone, and the event timeline.

use super::cycles::{self, CycleStats};
use super::events::{self, Timeline};
use super::json::{f64_at, lenient, str_at, str_or, u64_at};
use crate::hist::LogHist;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, Default)]
pub struct Pcts {
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: Option<f64>,
}

#[derive(Debug, Clone, Default)]
pub struct LRow {
    pub setting: String,
    pub variant: String,
    pub backend: String,
    pub backend_note: Option<String>,
    pub rate: Option<f64>,
    pub period: Option<f64>,
    pub trials: Option<u64>,
    pub duration_s: Option<f64>,
    pub cycles: u64,
    pub xruns: u64,
    pub deadline_misses: u64,
    pub injected: u64,
    /// Newer writers: misses on cycles without an injected overrun, injected overruns
    /// that were not seen as misses, and cycle records the writer had to drop.
    pub misses_not_injected: Option<u64>,
    pub injected_undetected: Option<u64>,
    pub records_dropped: Option<u64>,
    pub misses_per_hour: Option<f64>,
    pub xruns_per_hour: Option<f64>,
    pub discontinuities: Option<u64>,
    pub roundtrip_frames: Option<i64>,
    pub callback_us: Pcts,
    pub lateness_us: Pcts,
    pub wake_us: Pcts,
    /// Rigs with a bursting hog (livefx-push-ipi): bursts, misses in them, and causes.
    pub bursts: RowBursts,
}

/// The hog-burst fields of a summary row; all absent in older results and in rigs
/// without bursts.
#[derive(Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(default)]
pub struct RowBursts {
    #[serde(deserialize_with = "lenient::count")]
    pub bursts: Option<u64>,
    /// Bursts that started while a lock holder sat on the hog's CPU.
    #[serde(deserialize_with = "lenient::count")]
    pub bursts_caught: Option<u64>,
    /// Of those, the ones with at least one deadline miss.
    #[serde(deserialize_with = "lenient::count")]
    pub bursts_caught_missed: Option<u64>,
    /// All bursts with at least one deadline miss.
    #[serde(deserialize_with = "lenient::count")]
    pub bursts_missed: Option<u64>,
    #[serde(deserialize_with = "lenient::count")]
    pub misses_in_bursts: Option<u64>,
    #[serde(deserialize_with = "lenient::number")]
    pub misses_per_min: Option<f64>,
    /// 95 % interval of misses_per_min.
    #[serde(deserialize_with = "lenient::range")]
    pub misses_per_min_ci95: Option<(f64, f64)>,
    /// The misses grouped by cause, most frequent first.
    pub why: Option<Vec<Cause>>,
}

/// One cause of deadline misses and how often it struck.
#[derive(Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(default)]
pub struct Cause {
    #[serde(deserialize_with = "lenient::text")]
    pub cause: Option<String>,
    #[serde(deserialize_with = "lenient::count")]
    pub count: Option<u64>,
    /// [min, max] ms the lock holder was kept off a CPU (from the trace).
    #[serde(deserialize_with = "lenient::range")]
    pub stuck_ms: Option<(f64, f64)>,
    /// [min, max] ms the worker waited for the lock.
    #[serde(deserialize_with = "lenient::range")]
    pub wait_ms: Option<(f64, f64)>,
}

impl RowBursts {
    /// The typed fields of one summary row; Err when they are there but unreadable
    /// (e.g. "why" not an array of objects).
    pub fn parse(row: &Value) -> Result<RowBursts, String> {
        RowBursts::deserialize(row).map_err(|e| e.to_string())
    }
}

impl LRow {
    /// One period in µs, when rate and period are known.
    pub fn period_us(&self) -> Option<f64> {
        match (self.period, self.rate) {
            (Some(p), Some(r)) if r > 0.0 => Some(p * 1e6 / r),
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
            .map(|p| self.cycles as f64 * p / 1e6)
            .or(self.duration_s)
    }
}

#[derive(Debug, Clone, Default)]
pub struct LTrial {
    pub setting: String,
    pub variant: String,
    pub trial: u32,
    pub cycles_file: Option<String>,
    pub cycles: u64,
    pub xruns: u64,
    pub deadline_misses: u64,
    pub injected: u64,
}

/// Per (setting, variant): latency histograms in ns, from the cycle files or from
/// histograms.json.
#[derive(Debug, Clone)]
pub struct Latency {
    pub callback: LogHist,
    pub lateness: LogHist,
    pub wake: LogHist,
    /// "cycles" (raw) or "histograms.json".
    pub source: &'static str,
}

pub struct LivefxData {
    pub rows: Vec<LRow>,
    pub trials: Vec<LTrial>,
    /// From cycles/*.bin, per (setting, variant).
    pub cycle_stats: BTreeMap<(String, String), CycleStats>,
    pub latency: BTreeMap<(String, String), Latency>,
    pub timeline: Option<Timeline>,
}

impl LivefxData {
    pub fn keys(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for r in &self.rows {
            let k = (r.setting.clone(), r.variant.clone());
            if !out.contains(&k) {
                out.push(k);
            }
        }
        for k in self.latency.keys() {
            if !out.contains(k) {
                out.push(k.clone());
            }
        }
        out
    }
    pub fn row(&self, s: &str, v: &str) -> Option<&LRow> {
        self.rows.iter().find(|r| r.setting == s && r.variant == v)
    }
}

fn pcts(v: &Value, key: &str) -> Pcts {
    Pcts {
        p50: f64_at(v, &[key, "p50"]),
        p99: f64_at(v, &[key, "p99"]),
        p999: f64_at(v, &[key, "p999"]),
        max: f64_at(v, &[key, "max"]),
    }
}

pub fn parse_row(v: &Value) -> LRow {
    parse_row_checked(v).0
}

/// The row, and what was wrong with its burst fields when they could not be read.
pub fn parse_row_checked(v: &Value) -> (LRow, Option<String>) {
    let (bursts, err) = match RowBursts::parse(v) {
        Ok(b) => (b, None),
        Err(e) => (RowBursts::default(), Some(e)),
    };
    let row = LRow {
        setting: str_or(v, "setting", "-"),
        variant: str_or(v, "variant", "default"),
        backend: str_or(v, "backend", "?"),
        backend_note: str_at(v, &["backend_note"]),
        rate: f64_at(v, &["rate"]),
        period: f64_at(v, &["period"]),
        trials: u64_at(v, &["trials"]),
        duration_s: f64_at(v, &["duration_s"]),
        cycles: u64_at(v, &["cycles"]).unwrap_or(0),
        xruns: u64_at(v, &["xruns"]).unwrap_or(0),
        deadline_misses: u64_at(v, &["deadline_misses"]).unwrap_or(0),
        injected: u64_at(v, &["injected"]).unwrap_or(0),
        misses_not_injected: u64_at(v, &["misses_not_injected"]),
        injected_undetected: u64_at(v, &["injected_undetected"]),
        records_dropped: u64_at(v, &["records_dropped"]),
        misses_per_hour: f64_at(v, &["misses_per_hour"]),
        xruns_per_hour: f64_at(v, &["xruns_per_hour"]),
        discontinuities: u64_at(v, &["discontinuities"]),
        roundtrip_frames: f64_at(v, &["roundtrip_frames"]).map(|x| x as i64),
        callback_us: pcts(v, "callback_us"),
        lateness_us: pcts(v, "lateness_us"),
        wake_us: pcts(v, "wake_us"),
        bursts,
    };
    (row, err)
}

fn parse_trial(v: &Value) -> LTrial {
    LTrial {
        setting: str_or(v, "setting", "-"),
        variant: str_or(v, "variant", "default"),
        trial: u64_at(v, &["trial"]).unwrap_or(0) as u32,
        cycles_file: str_at(v, &["cycles_file"]),
        cycles: u64_at(v, &["cycles"]).unwrap_or(0),
        xruns: u64_at(v, &["xruns"]).unwrap_or(0),
        deadline_misses: u64_at(v, &["deadline_misses"]).unwrap_or(0),
        injected: u64_at(v, &["injected"]).unwrap_or(0),
    }
}

/// `<setting>__<variant>__<trial>.bin` -> (setting, variant).
fn key_from_name(name: &str) -> Option<(String, String)> {
    let stem = name.strip_suffix(".bin")?;
    let mut parts = stem.rsplitn(3, "__");
    let _trial = parts.next()?;
    let variant = parts.next()?;
    let setting = parts.next()?;
    Some((setting.to_string(), variant.to_string()))
}

/// The cycle files to read, with their (setting, variant).
fn cycle_files(dir: &Path, trials: &[LTrial]) -> Vec<((String, String), PathBuf)> {
    let mut out: Vec<((String, String), PathBuf)> = Vec::new();
    for t in trials {
        if let Some(f) = &t.cycles_file {
            let p = dir.join(f);
            if p.is_file() {
                out.push(((t.setting.clone(), t.variant.clone()), p));
            }
        }
    }
    if out.is_empty()
        && let Ok(rd) = std::fs::read_dir(dir.join("cycles"))
    {
        let mut names: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        names.sort();
        for p in names {
            let name = p
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_string();
            if let Some(k) = key_from_name(&name) {
                out.push((k, p));
            }
        }
    }
    out
}

/// Reads the cycle files on all CPUs (one file at a time each).
pub fn read_cycles(
    files: &[((String, String), PathBuf)],
) -> Result<BTreeMap<(String, String), CycleStats>, String> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Result<Vec<(usize, CycleStats)>, String>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads.min(files.len().max(1)))
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= files.len() {
                            break;
                        }
                        mine.push((i, cycles::read_file(&files[i].1, |_| {})?));
                    }
                    Ok(mine)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("cycle reader panicked".into()))
            })
            .collect()
    });
    let mut out: BTreeMap<(String, String), CycleStats> = BTreeMap::new();
    for r in results {
        for (i, st) in r? {
            out.entry(files[i].0.clone()).or_default().merge(&st);
        }
    }
    Ok(out)
}

fn hist_from_json(buckets: &Value) -> LogHist {
    let mut h = LogHist::new();
    if let Some(a) = buckets.as_array() {
        for b in a {
            let (Some(v), Some(c)) = (
                b.get(0).and_then(|x| x.as_f64()),
                b.get(1).and_then(|x| x.as_u64()),
            ) else {
                continue;
            };
            h.record_n((v.max(0.0) * 1000.0).round() as u64, c);
        }
    }
    h
}

pub fn load(dir: &Path, summary: &Value, warnings: &mut Vec<String>) -> Result<LivefxData, String> {
    let mut rows: Vec<LRow> = Vec::new();
    for v in summary
        .get("rows")
        .and_then(|r| r.as_array())
        .into_iter()
        .flatten()
    {
        let (r, err) = parse_row_checked(v);
        if let Some(e) = err {
            warnings.push(format!(
                "{}/{}: the hog-burst fields of summary.json are unreadable ({e}); left out",
                r.setting, r.variant
            ));
        }
        rows.push(r);
    }
    let trials: Vec<LTrial> = summary
        .get("trials")
        .and_then(|r| r.as_array())
        .map(|a| a.iter().map(parse_trial).collect())
        .unwrap_or_default();
    let files = cycle_files(dir, &trials);
    let cycle_stats = read_cycles(&files)?;
    let mut latency: BTreeMap<(String, String), Latency> = BTreeMap::new();
    for (k, st) in &cycle_stats {
        if st.truncated_bytes > 0 {
            warnings.push(format!(
                "cycle files of {}/{} end in a torn record ({} bytes ignored)",
                k.0, k.1, st.truncated_bytes
            ));
        }
        latency.insert(
            k.clone(),
            Latency {
                callback: st.callback.clone(),
                lateness: st.lateness.clone(),
                wake: st.wake.clone(),
                source: "cycles",
            },
        );
    }
    if latency.is_empty() {
        // No raw cycles: fall back to the run's histograms.
        if let Ok(h) = super::json::read_value(&dir.join("histograms.json")) {
            for e in h.as_array().into_iter().flatten() {
                let k = (str_or(e, "setting", "-"), str_or(e, "variant", "default"));
                let hist = hist_from_json(e.get("buckets").unwrap_or(&Value::Null));
                let ent = latency.entry(k).or_insert_with(|| Latency {
                    callback: LogHist::new(),
                    lateness: LogHist::new(),
                    wake: LogHist::new(),
                    source: "histograms.json",
                });
                match str_or(e, "metric", "").as_str() {
                    "callback_duration" => ent.callback = hist,
                    "lateness" => ent.lateness = hist,
                    "wake_latency" => ent.wake = hist,
                    _ => {}
                }
            }
        } else {
            warnings
                .push("neither cycles/*.bin nor histograms.json: no latency distributions".into());
        }
    }
    // Counters in summary.json against the raw records: a mismatch is worth a line.
    for r in &rows {
        if let Some(d) = r.records_dropped.filter(|d| *d > 0) {
            warnings.push(format!(
                "{}/{}: the writer dropped {d} cycle records (it fell behind); the cycle files miss them",
                r.setting, r.variant
            ));
        }
        if let Some(st) = cycle_stats.get(&(r.setting.clone(), r.variant.clone()))
            && (st.cycles != r.cycles || st.misses != r.deadline_misses)
        {
            warnings.push(format!(
                "{}/{}: summary.json says {} cycles, {} misses; cycle files hold {} and {}",
                r.setting, r.variant, r.cycles, r.deadline_misses, st.cycles, st.misses
            ));
        }
    }
    let ev = dir.join("events.jsonl");
    let timeline = if ev.is_file() {
        let hint = rows.iter().filter_map(|r| r.trial_s()).fold(0.0, f64::max);
        let known: Vec<(String, String, Option<u32>)> = trials
            .iter()
            .map(|t| (t.setting.clone(), t.variant.clone(), Some(t.trial)))
            .collect();
        let t = events::load(&ev, hint, &known)?;
        if t.bad_lines > 0 {
            warnings.push(format!(
                "{} lines of events.jsonl were not JSON; skipped",
                t.bad_lines
            ));
        }
        Some(t)
    } else {
        None
    };
    Ok(LivefxData {
        rows,
        trials,
        cycle_stats,
        latency,
        timeline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_from_the_right() {
        assert_eq!(
            key_from_name("RT__PUSH__pi__3.bin"),
            Some(("RT__PUSH".into(), "pi".into()))
        );
        assert_eq!(key_from_name("x.bin"), None);
    }

    #[test]
    fn rows_tolerate_nulls_and_floats() {
        let v: Value = serde_json::from_str(
            r#"{"setting":"S","variant":"v","cycles":10.0,"xruns":null,"rate":48000,"period":128,
                "callback_us":{"p50":1,"p99":null},"unknown":{"x":1}}"#,
        )
        .unwrap();
        let r = parse_row(&v);
        assert_eq!(r.cycles, 10);
        assert_eq!(r.xruns, 0);
        assert_eq!(r.callback_us.p50, Some(1.0));
        assert_eq!(r.callback_us.p99, None);
        assert!((r.period_us().unwrap() - 2666.666).abs() < 0.01);
        assert_eq!(r.bursts, RowBursts::default());
    }

    #[test]
    fn rows_read_burst_fields_and_causes() {
        let v: Value = serde_json::from_str(
            r#"{"setting":"S","variant":"v","bursts":40,"bursts_caught":11.0,
                "bursts_caught_missed":9,"bursts_missed":10,"misses_in_bursts":14,
                "misses_per_min":4.1,"misses_per_min_ci95":[5.6,2.9],
                "why":[{"cause":"c1","count":14,"stuck_ms":[31,118],"wait_ms":null},
                       {"cause":"c2","count":1,"stuck_ms":null,"wait_ms":[0.5,0.9],"x":1}]}"#,
        )
        .unwrap();
        let (r, err) = parse_row_checked(&v);
        assert_eq!(err, None);
        let b = &r.bursts;
        assert_eq!(
            (
                b.bursts,
                b.bursts_caught,
                b.bursts_caught_missed,
                b.bursts_missed
            ),
            (Some(40), Some(11), Some(9), Some(10))
        );
        assert_eq!(b.misses_in_bursts, Some(14));
        assert_eq!(b.misses_per_min, Some(4.1));
        assert_eq!(b.misses_per_min_ci95, Some((2.9, 5.6)));
        let why = b.why.as_ref().unwrap();
        assert_eq!(why.len(), 2);
        assert_eq!(why[0].cause.as_deref(), Some("c1"));
        assert_eq!(why[0].stuck_ms, Some((31.0, 118.0)));
        assert_eq!(why[1].count, Some(1));
        assert_eq!((why[1].stuck_ms, why[1].wait_ms), (None, Some((0.5, 0.9))));
        // A "why" that is not a list: the row still reads, the fault is told.
        let v: Value = serde_json::from_str(r#"{"setting":"S","cycles":5,"why":"oops"}"#).unwrap();
        let (r, err) = parse_row_checked(&v);
        assert_eq!(r.cycles, 5);
        assert_eq!(r.bursts, RowBursts::default());
        assert!(err.is_some_and(|e| e.contains("invalid type")));
    }
}
