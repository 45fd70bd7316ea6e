//! A livefx run's summary.json and histograms.json rebuilt from what its finished
//! trials left on disk: each trial's record (samples.jsonl), its cycles
//! (cycles/*.bin) and its events (events.jsonl). The guest's merge of a run resumed
//! in a fresh boot, or cut short by a crash (`guest::resume::merge`), has no run's
//! memory to finish from: it replays every trial through the same tally
//! (`tally::group`, `tally::row`) and the same tables (`finish::tables`) as a run.

use super::Told;
use super::bursts::Burst;
use super::report::Group;
use super::tally::{self, Done};
use super::trial::{Outcome, Params};
use super::why::Why;
use super::writer::Stats;
use crate::audio::{BackendKind, StreamInfo, StreamSpec};
use crate::instruments::TrialFindings;
use crate::output::summary::TrialRecord;
use crate::rig::Rig;
use results::livefx::cycles::{F_XRUN, LAST_WORKER_SHIFT};
use results::livefx::events::{BURST, DEADLINE_MISS};
use results::livefx::{Event, LivefxSection};
use std::collections::BTreeMap;
use std::path::Path;

/// (setting, variant, trial) as the merged directory numbers trials.
type Key = (String, String, u32);

/// One trial's cycles as its writer counted them: each stored record back into the
/// writer's own accounting (`Stats::add`), which fills the histograms and counters.
fn stats_of(path: &Path, has_workers: bool) -> Result<Stats, String> {
    let mut st = Stats::new();
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    results::livefx::cycles::stream(std::io::BufReader::new(f), |r| {
        // Times relative to the trial's start (t0 = 0); lateness is wake - start.
        let wake = (r.start_ns as i64 + r.lateness_ns as i64).max(0) as u64;
        let rec = super::rt::Rec {
            start_ns: r.start_ns,
            wake_ns: wake,
            end_ns: wake + r.callback_ns as u64,
            flags: r.flags & ((1 << LAST_WORKER_SHIFT) - 1),
            last_worker: r.last_worker(),
            max_wake_ns: r.wake_ns,
            xruns: u32::from(r.flags & F_XRUN != 0),
            ..Default::default()
        };
        st.add(&rec, 0, has_workers);
    })
    .map_err(|e| format!("{}: {e}", path.display()))?;
    // The trial's events and their explanations are events.jsonl's, not these.
    st.events.clear();
    Ok(st)
}

/// events.jsonl's misses (with their explanations) and bursts, per trial.
fn told_of(dir: &Path) -> BTreeMap<Key, Told> {
    let text = std::fs::read_to_string(dir.join(results::EVENTS_JSONL)).unwrap_or_default();
    let mut out: BTreeMap<Key, Told> = BTreeMap::new();
    for l in text.lines() {
        let Ok(e) = serde_json::from_str::<Event>(l) else {
            continue;
        };
        let Some(t) = e.trial else { continue };
        let told = out
            .entry((e.setting.clone(), e.variant.clone(), t))
            .or_insert_with(|| Told {
                misses: vec![],
                bursts: vec![],
                evidence: vec![],
            });
        let ns = |v: Option<f64>, unit: f64| v.map(|x| (x * unit).round().max(0.0) as u64);
        if e.kind == DEADLINE_MISS
            && let Some(why) = e.why
        {
            told.misses.push((
                Why {
                    why,
                    worker: e.worker,
                    lock: e.lock,
                    holder: e.holder,
                    wait_ns: ns(e.wait_us, 1e3),
                    stuck_ns: ns(e.stuck_ms, 1e6),
                },
                e.burst.map(|b| b as usize),
            ));
        } else if e.kind == BURST {
            told.bursts.push(Burst {
                start_ns: 0,
                end_ns: 0,
                // Only whether it caught a holder counts (`bursts::count`).
                caught: e.caught.map(|_| (0, 0)),
                misses: e.misses.unwrap_or(0),
            });
        }
    }
    out
}

/// The backend a setting ran on, as the guest's run.json told it; None when no part's
/// run.json arrived (a boot that crashed before its run ended).
fn params_of(
    rig: &Rig,
    section: Option<&LivefxSection>,
    setting: &str,
    variant: &str,
) -> (Params, Option<StreamInfo>) {
    let cfg = rig.livefx.as_ref();
    let used = section.and_then(|x| x.backends.iter().find(|b| b.setting == setting));
    let kind = used
        .and_then(|b| BackendKind::named(&b.backend))
        .unwrap_or(BackendKind::Clock);
    let why = used.map_or(String::new(), |b| b.why.clone());
    let spec = StreamSpec {
        period: used.and_then(|b| b.period).unwrap_or(0),
        rate: used.and_then(|b| b.rate).unwrap_or(0),
        nperiods: used.and_then(|b| b.nperiods).unwrap_or(0),
        device: used.and_then(|b| b.device.clone()),
        priority: 0,
        cpus: vec![],
        period_explicit: false,
        loopback: None,
        journal: None,
    };
    let info = used.map(|b| {
        // The run's note is "<why>; <the stream's note>".
        let found = section.and_then(|x| {
            x.notes
                .iter()
                .find(|n| n.setting == setting && n.variant == variant)
        });
        let note = found.map(|n| n.backend_note.as_str()).unwrap_or("");
        StreamInfo {
            backend: kind.name(),
            rate: b.rate.unwrap_or(0),
            period: b.period.unwrap_or(0),
            note: note
                .strip_prefix(&format!("{}; ", b.why))
                .unwrap_or(note)
                .to_string(),
            clock_offset_ns: 0,
            server: found.and_then(|n| n.server.clone()),
        }
    });
    let pr = Params {
        kind,
        why,
        spec,
        duration_ns: cfg.map_or(0, |c| c.duration_ns),
        inject_every: used.and_then(|b| b.inject_every).unwrap_or(0),
        inject_factor: used.and_then(|b| b.inject_factor).unwrap_or(0.0),
        loopback: used.is_some_and(|b| b.loopback),
        progress: false,
    };
    (pr, info)
}

/// Writes `dir`'s summary.json and histograms.json from its finished trials
/// (`records`, in the sweep's order), over the run's settings and variants; `until`:
/// the stopping rule the run had.
pub fn rebuild(
    dir: &Path,
    rig: &Rig,
    settings: &[String],
    variants: &[String],
    records: &[TrialRecord],
    section: Option<&LivefxSection>,
    until: Option<&crate::sweep::decide::Rule>,
) -> Result<(), String> {
    let cfg = rig
        .livefx
        .as_ref()
        .ok_or_else(|| format!("rig '{}' has no [livefx] table", rig.name))?;
    let mut groups: Vec<Group> = settings
        .iter()
        .flat_map(|s| variants.iter().map(move |v| Group::new(s, v)))
        .collect();
    let mut told = told_of(dir);
    let mut rows = vec![];
    for r in records {
        let cycles = dir.join(results::cycles_path(&r.setting, &r.variant, r.trial));
        // A trial that failed before its stream opened wrote no cycles.
        let stats = if cycles.is_file() {
            stats_of(&cycles, !cfg.workers.is_empty())?
        } else {
            Stats::new()
        };
        let metric = |k: &str| r.metrics.get(k).and_then(|v| v.first()).map(|&x| x as u64);
        let (pr, info) = params_of(rig, section, &r.setting, &r.variant);
        let o = Outcome {
            status: r.status,
            detail: r.detail.clone(),
            info,
            stats,
            xruns: metric("xruns").unwrap_or(0),
            discontinuities: metric(tally::DISCONTINUITIES),
            roundtrip: metric(tally::ROUNDTRIP).map(|v| v as u32),
            unexplained: metric(tally::UNEXPLAINED),
            duration_ns: (r.duration_ms * 1e6).round() as u64,
            server_gone: false,
            dropped: metric(tally::DROPPED).unwrap_or(0),
            worker_tids: vec![],
            bursts: vec![],
            t0_ns: 0,
        };
        let t = told
            .remove(&(r.setting.clone(), r.variant.clone(), r.trial))
            .unwrap_or(Told {
                misses: vec![],
                bursts: vec![],
                evidence: vec![],
            });
        let done = Done::new(&o, &t, cfg.bursts.is_some());
        if let Some(g) = groups
            .iter_mut()
            .find(|g| g.setting == r.setting && g.variant == r.variant)
        {
            if o.info.is_none() && g.backend.is_empty() {
                g.backend = "unknown".into();
                g.backend_note =
                    "the guest's run.json did not arrive: the backend was not recorded".into();
            }
            tally::group(g, &pr, &done);
        }
        let found = TrialFindings {
            metrics: r
                .metrics
                .iter()
                .filter(|(k, _)| !tally::OWN_METRICS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            evidence: vec![],
            censored: Default::default(),
            records: None,
        };
        rows.push(tally::row(&r.setting, &r.variant, r.trial, &done, &found));
    }
    // As a run's end: settings and variants never reached have no row.
    groups.retain(|g| g.trials > 0);
    // The stopping rule's decisions replayed from the merged records, as the guest's
    // sweep made them.
    let decided = crate::sweep::decide::decided(until, records);
    let (summary, hists) = super::finish::tables(&rig.name, &groups, rows, decided);
    crate::output::write_json(&dir.join(results::SUMMARY_JSON), &summary)?;
    crate::output::write_json(&dir.join(results::HISTOGRAMS_JSON), &hists)
}
