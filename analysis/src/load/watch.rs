//! A watch directory (`xrunrig watch`): summary.json as `results::watch::WatchSummary`,
//! and events.jsonl (`results::watch::XrunEvent`, one line per xrun) streamed into what
//! the report shows: the xruns grouped by culprit and, under each, by `why` sentence with
//! the figures of each; the counts per cause and per client; when each xrun happened;
//! and the kept trace windows under `xruns/`. Memory grows with the xruns by a few words
//! each (their times and figures), not by their lines.

use results::watch::{Cause, Task, WatchSummary, XrunEvent};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The counts per client name the late threads of xruns with no late thread under.
pub const NO_LATE_THREAD: &str = "(no late thread found)";
/// More kept windows than this are counted, not listed.
pub const MAX_WINDOWS: usize = 1000;

/// Every cause, in the order the report lists them (and the plot its lanes); here so
/// report and plot both take it from below.
pub const CAUSES: [Cause; 8] = [
    Cause::SelfWork,
    Cause::Preempted,
    Cause::PiChain,
    Cause::Blocked,
    Cause::Interrupt,
    Cause::LateWakeup,
    Cause::Unexplained,
    Cause::NoTrace,
];

/// How the late thread spent the cycle, and how long the culprit held it, over the
/// xruns that share a sentence (ns, one value per xrun, in the order read).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    pub culprit_ns: Vec<u64>,
    pub running_ns: Vec<u64>,
    pub runnable_ns: Vec<u64>,
    pub asleep_ns: Vec<u64>,
    pub interrupt_ns: Vec<u64>,
}

/// One distinct `why` sentence under a culprit.
#[derive(Debug, Clone, PartialEq)]
pub struct Sentence {
    pub cause: Cause,
    pub why: String,
    pub n: u64,
    pub figures: Figures,
}

/// Who made xruns: a task, interrupt handlers, or nobody named (unexplained, no trace).
#[derive(Debug, Clone, PartialEq)]
pub enum Who {
    Task(Task),
    Interrupt(String),
    Nobody,
}

/// The xruns of one culprit, its sentences most first.
#[derive(Debug, Clone, PartialEq)]
pub struct Culprit {
    pub who: Who,
    pub n: u64,
    pub sentences: Vec<Sentence>,
}

/// A kept trace window: its folder (`xruns/NNNN`), the xruns that point to it, and the
/// files it holds with their sizes (empty when the folder is gone).
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub folder: String,
    pub xruns: Vec<u64>,
    pub causes: BTreeMap<Cause, u64>,
    pub files: Vec<(String, u64)>,
}

/// Where the timeline's zero is.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    /// run.json's `started` (UTC, to the second).
    Started(String),
    /// The first xrun (run.json's start unknown or unreadable).
    FirstXrun,
}

pub struct WatchData {
    pub summary: WatchSummary,
    /// Lines of events.jsonl read as xruns.
    pub xruns: u64,
    /// Most xruns first; ties by name.
    pub culprits: Vec<Culprit>,
    pub by_cause: BTreeMap<Cause, u64>,
    /// The late thread's client -> cause -> xruns.
    pub by_client: BTreeMap<String, BTreeMap<Cause, u64>>,
    /// Each xrun: seconds since `origin`, and its cause.
    pub times: Vec<(f64, Cause)>,
    pub origin: Origin,
    /// The end of the time axis (s since `origin`): the watch's length or the last xrun.
    pub t_max: f64,
    /// In folder order.
    pub windows: Vec<Window>,
    /// Xruns whose window was not kept (`--keep` reached, or it could not be written).
    pub unkept: u64,
    /// Windows named past `MAX_WINDOWS`, not listed.
    pub windows_unlisted: u64,
    pub bad_lines: usize,
}

impl WatchData {
    /// "watch of JACK 'rep'": what the report is about.
    pub fn title(&self) -> String {
        let s = &self.summary;
        let server = match s.server.as_str() {
            "jack" => "JACK".to_string(),
            "pipewire" => "PipeWire".to_string(),
            other => other.to_string(),
        };
        match &s.server_name {
            Some(n) if !n.is_empty() => format!("watch of {server} '{n}'"),
            _ => format!("watch of {server}"),
        }
    }
}

/// Seconds since the Unix epoch of an RFC 3339 time ("2026-12-01T17:09:38.597270Z", as
/// xrunrig writes them); None for anything else.
pub fn unix_s(text: &str) -> Option<f64> {
    let dt: toml_datetime::Datetime = text.trim().parse().ok()?;
    let (d, t) = (dt.date?, dt.time?);
    let offset_min = match dt.offset? {
        toml_datetime::Offset::Z => 0,
        toml_datetime::Offset::Custom { minutes } => minutes as i64,
    };
    let days = days_from_civil(d.year as i64, d.month as i64, d.day as i64);
    let secs = days * 86_400 + t.hour as i64 * 3600 + t.minute as i64 * 60 - offset_min * 60
        + t.second.unwrap_or(0) as i64;
    Some(secs as f64 + t.nanosecond.unwrap_or(0) as f64 / 1e9)
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `xruns/NAME` with a plain NAME (no separator, not `.` or `..`): the only windows the
/// report looks for, so an events line cannot send it elsewhere on disk.
fn window_folder(w: &str) -> Option<&str> {
    let name = w
        .strip_prefix(results::watch::XRUNS_DIR)?
        .strip_prefix('/')?;
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    plain.then_some(w)
}

/// Streams events.jsonl, calling `f` with each xrun; the number of lines that are not
/// one.
pub fn each_xrun(path: &Path, f: impl FnMut(XrunEvent)) -> Result<usize, String> {
    super::each_line(path, f)
}

/// The grouping: culprit, then sentence, each in the order first seen until sorted.
#[derive(Default)]
struct Groups {
    culprits: Vec<Culprit>,
    index: BTreeMap<String, usize>,
    /// (culprit, cause, sentence) -> its place in the culprit's sentences.
    sentences: BTreeMap<(usize, Cause, String), usize>,
}

impl Groups {
    fn add(&mut self, e: &XrunEvent) {
        // A task is one culprit by its name, tid and policy (as sentences name it);
        // interrupt handlers by what they were.
        let (key, who) = match (&e.culprit, &e.interrupt) {
            (Some(t), _) => (format!("task {}", t.named()), Who::Task(t.clone())),
            (None, Some(i)) => (format!("interrupt {i}"), Who::Interrupt(i.clone())),
            (None, None) => (String::new(), Who::Nobody),
        };
        let ci = *self.index.entry(key).or_insert_with(|| {
            self.culprits.push(Culprit {
                who,
                n: 0,
                sentences: vec![],
            });
            self.culprits.len() - 1
        });
        let c = &mut self.culprits[ci];
        c.n += 1;
        let si = *self
            .sentences
            .entry((ci, e.cause, e.why.clone()))
            .or_insert_with(|| {
                c.sentences.push(Sentence {
                    cause: e.cause,
                    why: e.why.clone(),
                    n: 0,
                    figures: Figures::default(),
                });
                c.sentences.len() - 1
            });
        let s = &mut c.sentences[si];
        s.n += 1;
        let f = &mut s.figures;
        if let Some(v) = e.culprit_ns {
            f.culprit_ns.push(v);
        }
        f.running_ns.push(e.running_ns);
        f.runnable_ns.push(e.runnable_ns);
        f.asleep_ns.push(e.asleep_ns);
        f.interrupt_ns.push(e.interrupt_ns);
    }

    /// Most xruns first, ties by name (then the order seen); sentences likewise.
    fn sorted(mut self) -> Vec<Culprit> {
        let name = |c: &Culprit| match &c.who {
            Who::Task(t) => t.named(),
            Who::Interrupt(i) => i.clone(),
            // Nobody last among equals.
            Who::Nobody => "\u{10FFFF}".into(),
        };
        self.culprits
            .sort_by(|a, b| b.n.cmp(&a.n).then_with(|| name(a).cmp(&name(b))));
        for c in &mut self.culprits {
            c.sentences
                .sort_by(|a, b| b.n.cmp(&a.n).then_with(|| a.why.cmp(&b.why)));
        }
        self.culprits
    }
}

/// Groups xruns as the report shows them (for tests and for `load`).
pub fn group(events: &[XrunEvent]) -> Vec<Culprit> {
    let mut g = Groups::default();
    for e in events {
        g.add(e);
    }
    g.sorted()
}

pub fn load(
    dir: &Path,
    summary: &Value,
    run: &results::run::RunDoc,
    warnings: &mut Vec<String>,
) -> Result<WatchData, String> {
    let summary = WatchSummary::deserialize(summary)
        .map_err(|e| format!("{}: {e}", dir.join(results::SUMMARY_JSON).display()))?;
    let path = dir.join(results::EVENTS_JSONL);
    let started = run.started.as_deref().and_then(unix_s);
    let mut groups = Groups::default();
    let mut by_cause: BTreeMap<Cause, u64> = BTreeMap::new();
    let mut by_client: BTreeMap<String, BTreeMap<Cause, u64>> = BTreeMap::new();
    let mut times = Vec::new();
    let mut windows: BTreeMap<String, Window> = BTreeMap::new();
    let (mut unkept, mut windows_unlisted, mut odd_windows) = (0u64, 0u64, 0u64);
    let mut xruns = 0u64;
    // Times from the monotonic clock, placed on the axis by the first xrun's wall time:
    // the engine derives each wall time from it with one offset, so they agree.
    let mut anchor: Option<(u64, f64)> = None;
    let mut on_start = false;
    let bad_lines = if path.is_file() {
        each_xrun(&path, |e| {
            xruns += 1;
            groups.add(&e);
            *by_cause.entry(e.cause).or_default() += 1;
            let client = e.client.clone().unwrap_or_else(|| NO_LATE_THREAD.into());
            *by_client
                .entry(client)
                .or_default()
                .entry(e.cause)
                .or_default() += 1;
            let (m0, t0) = *anchor.get_or_insert_with(|| {
                let t = match (started, unix_s(&e.wall)) {
                    (Some(s), Some(w)) => {
                        on_start = true;
                        (w - s).max(0.0)
                    }
                    _ => 0.0,
                };
                (e.mono_ns, t)
            });
            let t = t0 + (e.mono_ns as f64 - m0 as f64) / 1e9;
            times.push((t.max(0.0), e.cause));
            match e.window.as_deref() {
                None => unkept += 1,
                Some(w) => match window_folder(w) {
                    None => odd_windows += 1,
                    Some(f) => {
                        if !windows.contains_key(f) && windows.len() >= MAX_WINDOWS {
                            windows_unlisted += 1;
                            return;
                        }
                        let win = windows.entry(f.to_string()).or_insert_with(|| Window {
                            folder: f.to_string(),
                            xruns: vec![],
                            causes: BTreeMap::new(),
                            files: vec![],
                        });
                        win.xruns.push(e.index);
                        *win.causes.entry(e.cause).or_default() += 1;
                    }
                },
            }
        })?
    } else {
        if summary.xruns > 0 {
            warnings.push(format!(
                "events.jsonl is missing: summary.json counts {} xruns, none can be shown",
                summary.xruns
            ));
        }
        0
    };
    if bad_lines > 0 {
        warnings.push(format!(
            "{bad_lines} lines of events.jsonl are not xruns this xrunrig reads; skipped"
        ));
    }
    if summary.events_unwritten > 0 && xruns + summary.events_unwritten == summary.xruns {
        warnings.push(format!(
            "events.jsonl holds the first {xruns} of the {} xruns (its bound); the {} after \
             them are in summary.json's counts only",
            summary.xruns, summary.events_unwritten
        ));
    } else if xruns != summary.xruns && path.is_file() {
        warnings.push(format!(
            "summary.json counts {} xruns, events.jsonl holds {xruns}: the report shows events.jsonl's",
            summary.xruns
        ));
    }
    if odd_windows > 0 {
        warnings.push(format!(
            "{odd_windows} xruns name a window that is not a folder under {}/; left out",
            results::watch::XRUNS_DIR
        ));
    }
    for w in windows.values_mut() {
        for f in [results::watch::WINDOW_TRACE, results::watch::WINDOW_DAT] {
            if let Ok(m) = std::fs::metadata(dir.join(&w.folder).join(f))
                && m.is_file()
            {
                w.files.push((f.to_string(), m.len()));
            }
        }
    }
    // With no xruns, the axis is the watch's length from its start.
    let origin = if started.is_some() && (on_start || xruns == 0) {
        Origin::Started(run.started.clone().unwrap_or_default())
    } else {
        Origin::FirstXrun
    };
    let last = times.iter().map(|t| t.0).fold(0.0, f64::max);
    let t_max = if matches!(origin, Origin::Started(_)) {
        summary.duration_s.max(last)
    } else {
        last
    };
    Ok(WatchData {
        summary,
        xruns,
        culprits: groups.sorted(),
        by_cause,
        by_client,
        times,
        origin,
        t_max: if t_max > 0.0 { t_max } else { 1.0 },
        windows: windows.into_values().collect(),
        unkept,
        windows_unlisted,
        bad_lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_in_seconds() {
        assert_eq!(unix_s("1970-01-01T00:00:00Z"), Some(0.0));
        // The engine's own test value (src/sys.rs utc_at_ns).
        let t = unix_s("2025-11-30T13:50:00.123456Z").unwrap();
        assert!((t - 1_764_510_600.123456).abs() < 1e-6, "{t}");
        assert_eq!(unix_s("2000-03-01T00:00:00Z"), Some(951_868_800.0));
        assert_eq!(
            unix_s("2026-12-01T17:09:35+01:00"),
            unix_s("2026-12-01T16:09:35Z")
        );
        assert_eq!(unix_s("2026-12-01T17:09:35"), None, "no offset: not UTC");
        assert_eq!(unix_s("yesterday"), None);
    }

    #[test]
    fn only_plain_folders_under_xruns_are_windows() {
        assert_eq!(window_folder("xruns/0001"), Some("xruns/0001"));
        for w in [
            "xruns/..",
            "xruns/",
            "xruns/a/b",
            "/etc",
            "../xruns/0001",
            "xrunsx/1",
        ] {
            assert_eq!(window_folder(w), None, "{w}");
        }
    }
}
