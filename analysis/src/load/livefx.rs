//! Livefx results: summary rows, per-trial cycle files (streamed), histograms.json as a
//! fallback when the cycle files are gone, and the event timeline; all read through the
//! `results::livefx` types.

use super::cycles::{self, CycleStats};
use super::events::{self, Timeline};
use crate::dist::Dist;
use results::livefx::hist::{CALLBACK_DURATION, LATENESS, WAKE_LATENCY};
use results::livefx::{Causes, HistEntry, Summary};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A summary row and a trial of summary.json, as the results format has them.
pub use results::livefx::{Row as LRow, TrialRow as LTrial};

/// Per (setting, variant): latency histograms in ns, from the cycle files or from
/// histograms.json.
#[derive(Debug, Clone)]
pub struct Latency {
    pub callback: Dist,
    pub lateness: Dist,
    pub wake: Dist,
    pub source: Source,
}

/// Where a latency distribution was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Every cycle's raw record (cycles/*.bin).
    Cycles,
    /// The run's histograms.json, when the cycle files are gone.
    Histograms,
}

/// One trial's latency tails, from its own cycle file: the unit the verdicts compare
/// (cycles within a trial are not independent; trials are).
#[derive(Debug, Clone, PartialEq)]
pub struct TrialLatency {
    pub trial: Option<u32>,
    pub cycles: u64,
    pub callback_p99_ns: Option<u64>,
    pub lateness_p99_ns: Option<u64>,
    pub wake_p99_ns: Option<u64>,
    /// Its dropout episodes (`results::livefx::EPISODE_GAP_NS`).
    pub episodes: u64,
}

pub struct LivefxData {
    pub rows: Vec<LRow>,
    pub trials: Vec<LTrial>,
    /// From cycles/*.bin, per (setting, variant).
    pub cycle_stats: BTreeMap<(String, String), CycleStats>,
    /// Per (setting, variant), each trial's latency tails (empty without cycle files).
    pub trial_latency: BTreeMap<(String, String), Vec<TrialLatency>>,
    pub latency: BTreeMap<(String, String), Latency>,
    pub timeline: Option<Timeline>,
    /// `--until-decided`: the rule and each variant's comparison, when the run had them.
    pub until_decided: Option<Box<results::trials::Decided>>,
}

impl LivefxData {
    /// (setting, variant) as the summary rows, then the latency distributions, name them.
    pub fn keys(&self) -> Vec<(String, String)> {
        let rows = self
            .rows
            .iter()
            .map(|r| (r.setting.clone(), r.variant.clone()));
        super::first_seen(rows.chain(self.latency.keys().cloned()))
    }
    pub fn row(&self, s: &str, v: &str) -> Option<&LRow> {
        self.rows.iter().find(|r| r.setting == s && r.variant == v)
    }
}

/// A cycle file: its (setting, variant), its trial when known, its path.
type CycleFile = ((String, String), Option<u32>, PathBuf);

/// The cycle files to read, with their (setting, variant) and trial.
fn cycle_files(dir: &Path, trials: &[LTrial]) -> Vec<CycleFile> {
    let mut out: Vec<CycleFile> = Vec::new();
    for t in trials {
        if let Some(f) = &t.cycles_file {
            let p = dir.join(f);
            if p.is_file() {
                out.push(((t.setting.clone(), t.variant.clone()), Some(t.trial), p));
            }
        }
    }
    if out.is_empty()
        && let Ok(rd) = std::fs::read_dir(dir.join(results::CYCLES_DIR))
    {
        let mut names: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        names.sort();
        for p in names {
            let name = p
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_string();
            if let Some(k) = results::cycles_file_key(&name) {
                out.push((k, results::cycles_file_trial(&name), p));
            }
        }
    }
    out
}

/// histograms.json: a list of `HistEntry`; entries that do not read are left out.
fn read_hists(p: &Path) -> Result<Vec<HistEntry>, String> {
    let text =
        std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    let all: Vec<Value> = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not valid JSON: {e}", p.display()))?;
    Ok(all
        .into_iter()
        .filter_map(|v| HistEntry::deserialize(v).ok())
        .collect())
}

/// Per (setting, variant): the cycle files' statistics merged, and each file's
/// (trial's) latency tails.
type ReadCycles = (
    BTreeMap<(String, String), CycleStats>,
    BTreeMap<(String, String), Vec<TrialLatency>>,
);

/// Reads the cycle files on all CPUs (one file at a time each).
fn read_cycles(files: &[CycleFile]) -> Result<ReadCycles, String> {
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
                        mine.push((i, cycles::read_file(&files[i].2, |_| {})?));
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
    let mut per: Vec<(usize, TrialLatency)> = Vec::new();
    for r in results {
        for (i, st) in r? {
            let p99 = |h: &Dist| h.quantile(0.99);
            per.push((
                i,
                TrialLatency {
                    trial: files[i].1,
                    cycles: st.counts.cycles,
                    callback_p99_ns: p99(&st.callback),
                    lateness_p99_ns: p99(&st.lateness),
                    wake_p99_ns: p99(&st.wake),
                    episodes: st.counts.episodes.count,
                },
            ));
            out.entry(files[i].0.clone()).or_default().merge(&st);
        }
    }
    // In the files' order (the run's), whichever thread read them.
    per.sort_by_key(|x| x.0);
    let mut trials: BTreeMap<(String, String), Vec<TrialLatency>> = BTreeMap::new();
    for (i, t) in per {
        trials.entry(files[i].0.clone()).or_default().push(t);
    }
    Ok((out, trials))
}

fn hist_from_entry(e: &HistEntry) -> Dist {
    let mut h = Dist::new();
    for &(v, c) in &e.buckets {
        h.record_n((v.max(0.0) * 1000.0).round() as u64, c);
    }
    h
}

pub fn load(dir: &Path, summary: &Value, warnings: &mut Vec<String>) -> Result<LivefxData, String> {
    let head = dir.join(results::SUMMARY_JSON);
    super::require(summary, &head, &["rows", "trials"])?;
    let Summary {
        rows,
        trials,
        until_decided,
        ..
    } = Summary::deserialize(summary)
        .map_err(|e| format!("{}: {e}", dir.join(results::SUMMARY_JSON).display()))?;
    // A trial whose setting and variant have no row: the rows are not this run's.
    if let Some(t) = trials.iter().find(|t| {
        !rows
            .iter()
            .any(|r| r.setting == t.setting && r.variant == t.variant)
    }) {
        return Err(format!(
            "{}: no row for setting {:?} variant {:?}, though its `trials` list a trial of \
             it: the summary is damaged; run again",
            head.display(),
            t.setting,
            t.variant
        ));
    }
    for r in &rows {
        if let Causes::Unreadable(e) = &r.why {
            warnings.push(format!(
                "{}/{}: the \"why\" of summary.json is unreadable ({e}); left out",
                r.setting, r.variant
            ));
        }
    }
    let files = cycle_files(dir, &trials);
    let (cycle_stats, trial_latency) = read_cycles(&files)?;
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
                source: Source::Cycles,
            },
        );
    }
    if latency.is_empty() {
        // No raw cycles: fall back to the run's histograms.
        if let Ok(h) = read_hists(&dir.join(results::HISTOGRAMS_JSON)) {
            for e in &h {
                let k = (e.setting.clone(), e.variant.clone());
                let hist = hist_from_entry(e);
                let ent = latency.entry(k).or_insert_with(|| Latency {
                    callback: Dist::new(),
                    lateness: Dist::new(),
                    wake: Dist::new(),
                    source: Source::Histograms,
                });
                match e.metric.as_str() {
                    CALLBACK_DURATION => ent.callback = hist,
                    LATENESS => ent.lateness = hist,
                    WAKE_LATENCY => ent.wake = hist,
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
            && (st.counts.cycles != r.counts.cycles
                || st.counts.deadline_misses != r.counts.deadline_misses)
        {
            warnings.push(format!(
                "{}/{}: summary.json says {} cycles, {} misses; cycle files hold {} and {}",
                r.setting,
                r.variant,
                r.counts.cycles,
                r.counts.deadline_misses,
                st.counts.cycles,
                st.counts.deadline_misses
            ));
        }
    }
    let ev = dir.join(results::EVENTS_JSONL);
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
        trial_latency,
        latency,
        timeline,
        until_decided: until_decided.map(Box::new),
    })
}
