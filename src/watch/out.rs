//! Where watch's results go: events.jsonl written as each xrun is explained (so a
//! watch killed outright keeps every xrun it had), the kept trace windows under
//! `xruns/NNNN/`, and at the end summary.json, run.json and the verdict in plain words.
//! Every file through the `results` types.

use super::explain::Explained;
use crate::options::WatchOptions;
use results::watch::{Cause, Client, Recorder, Task, WatchSection, WatchSummary, XrunEvent};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct Sink {
    dir: PathBuf,
    events: std::fs::File,
    pub recorder: Recorder,
    pub cycles: u64,
    pub windows_kept: u64,
    pub restored: Vec<String>,
    pub pw_note: Option<String>,
    /// The server's own count of errors, where it has one (PipeWire: pw-top's ERR).
    pub server_errors: Option<u64>,
    /// What summary.json needs of the xruns, tallied as they come: memory stays
    /// bounded over a session of days, the counts exact.
    tally: Tally,
    /// Reports folded into an xrun already counted (the same late cycle).
    reports_merged: u64,
    /// events.jsonl's bound (`EVENTS_MAX`; smaller in tests).
    events_max: u64,
    options: BTreeMap<String, String>,
    wall_offset: i64,
    pw_nodes: BTreeMap<String, u64>,
}

/// What the end of a watch knows.
pub struct Finish<'a> {
    pub server: &'a str,
    pub server_name: Option<String>,
    pub rate: u32,
    pub period: u32,
    pub duration_s: f64,
    pub ended: &'a str,
    pub started: String,
    pub clients: Vec<(String, Option<i32>)>,
    pub threads: Vec<Task>,
    pub clock_offset_ns: i64,
}

fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

impl Sink {
    pub fn create(dir: &Path, o: &WatchOptions) -> Result<Sink, String> {
        let p = dir.join(results::EVENTS_JSONL);
        let events = std::fs::OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&p)
            .map_err(|e| format!("cannot create {}: {e}", p.display()))?;
        let mut options = BTreeMap::new();
        options.insert("before".into(), ms(o.before_ns));
        options.insert("after".into(), ms(o.after_ns));
        options.insert("ring".into(), o.ring.to_string());
        options.insert("keep".into(), o.keep.to_string());
        options.insert("buffer_kb".into(), o.buffer_kb.to_string());
        if let Some(d) = o.duration_ns {
            options.insert("duration".into(), format!("{:.3} s", d as f64 / 1e9));
        }
        Ok(Sink {
            dir: dir.to_path_buf(),
            events,
            recorder: Recorder::default(),
            cycles: 0,
            windows_kept: 0,
            restored: vec![],
            pw_note: None,
            server_errors: None,
            tally: Tally::default(),
            reports_merged: 0,
            events_max: results::watch::EVENTS_MAX,
            options,
            wall_offset: crate::sys::mono_to_unix_ns(),
            pw_nodes: BTreeMap::new(),
        })
    }

    /// A PipeWire node the profiler counted an error for.
    pub fn pipewire_client(&mut self, node: String) {
        *self.pw_nodes.entry(node).or_default() += 1;
    }

    /// Writes a window into the next `xruns/NNNN/`; its folder name.
    pub fn keep_window(&mut self, text: &str) -> Option<String> {
        let name = format!("{:04}", self.tally.xruns + 1);
        let d = self.dir.join(results::watch::XRUNS_DIR).join(&name);
        let p = d.join(results::watch::WINDOW_TRACE);
        let r = std::fs::create_dir_all(&d)
            .and_then(|_| crate::output::write_atomic(&p, text.as_bytes()));
        match r {
            Ok(()) => {
                self.windows_kept += 1;
                Some(format!("{}/{name}", results::watch::XRUNS_DIR))
            }
            Err(e) => {
                eprintln!("xrunrig watch: cannot keep the window {}: {e}", p.display());
                None
            }
        }
    }

    /// One xrun: its events.jsonl line (flushed) and the live line.
    pub fn xrun(
        &mut self,
        e: &Explained,
        t_ns: u64,
        source: &str,
        window: Option<String>,
        _blind: u64,
        mergeable: bool,
    ) {
        // One late cycle is one xrun, however many reports the server sent for it
        // (JACK's notifications carry no cycle of their own; PipeWire's each name
        // theirs, and are never merged).
        if mergeable
            && let Some(c) = e.cycle
            && self.tally.last_cycle_start == Some(c.start_ns)
        {
            self.reports_merged += 1;
            return;
        }
        let index = self.tally.xruns + 1;
        let wall_ns = (t_ns as i64 + self.wall_offset).max(0) as u64;
        let wall = crate::sys::utc_at_ns(wall_ns);
        let ev = XrunEvent {
            index,
            wall: wall.clone(),
            mono_ns: t_ns,
            source: source.into(),
            client: e.client.clone(),
            cycle_start_ns: e.cycle.map(|c| c.start_ns),
            deadline_ns: e.cycle.map(|c| c.deadline_ns),
            frame: e.cycle.and_then(|c| c.frame),
            cause: e.cause,
            why: e.why.clone(),
            late: e.late.clone(),
            waited_for: e.waited_for.clone(),
            culprit: e.culprit.clone(),
            interrupt: e.interrupt.clone(),
            holder: e.holder.clone(),
            boost: e.boost.clone(),
            running_ns: e.spent.running_ns,
            runnable_ns: e.spent.runnable_ns,
            asleep_ns: e.spent.asleep_ns,
            interrupt_ns: e.spent.stolen.iter().map(|s| s.ns).sum(),
            culprit_ns: e.culprit_ns,
            window,
        };
        if index <= self.events_max {
            match serde_json::to_string(&ev) {
                Ok(line) => {
                    let _ = writeln!(self.events, "{line}");
                    let _ = self.events.flush();
                }
                Err(err) => eprintln!("xrunrig watch: cannot write xrun {index}: {err}"),
            }
            if index == self.events_max {
                eprintln!(
                    "xrunrig watch: events.jsonl holds {index} xruns, its bound: later xruns are counted in summary.json, not written"
                );
            }
        } else {
            self.tally.unwritten += 1;
        }
        // 2026-12-01T14:03:22.418123Z -> 14:03:22.418
        let clock = wall.get(11..23).unwrap_or(&wall);
        crate::note!("xruns {index} · last {clock}: {}", e.short);
        self.tally.add(&ev, std::process::id() as i32);
    }

    /// summary.json and run.json; the summary.
    pub fn finish(&mut self, f: Finish) -> Result<WatchSummary, String> {
        let t = &self.tally;
        let mut by_culprit: Vec<(String, u64)> =
            t.culprits.iter().map(|(k, v)| (k.clone(), *v)).collect();
        by_culprit.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let summary = WatchSummary {
            format: results::FORMAT_VERSION,
            kind: results::watch::KIND_WATCH.into(),
            server: f.server.into(),
            server_name: f.server_name.clone(),
            rate: f.rate,
            period: f.period,
            duration_s: f.duration_s,
            cycles: self.cycles,
            xruns: t.xruns,
            explained: t.explained,
            windows_kept: self.windows_kept,
            by_cause: t.by_cause.clone(),
            by_culprit,
            by_client: t.by_client.clone(),
            recorder: self.recorder.clone(),
            ended: f.ended.into(),
            cpu_s: own_cpu_s(),
            server_errors: self.server_errors,
            watch_culprit: t.watch_culprit,
            reports_merged: self.reports_merged,
            events_unwritten: t.unwritten,
        };
        let text = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
        crate::output::write_atomic(&self.dir.join(results::SUMMARY_JSON), text.as_bytes())
            .map_err(|e| format!("cannot write summary.json: {e}"))?;
        let mut options = self.options.clone();
        if let Some(n) = &self.pw_note {
            options.insert("pipewire".into(), n.clone());
        }
        let run = results::run::RunDoc {
            format: results::FORMAT_VERSION,
            xrunrig_version: Some(env!("CARGO_PKG_VERSION").into()),
            git: Some(crate::output::provenance::git()),
            command: std::env::args().collect(),
            started: Some(f.started),
            ended: Some(crate::sys::utc_now().0),
            host: Some(crate::output::provenance::hostname()),
            kernel: Some(crate::output::provenance::kernel()),
            cpus: Some(crate::output::provenance::cpus()),
            interrupted: f.ended == "interrupted",
            doctor: Some(crate::doctor::findings_for_run()),
            knobs_original: self.restored.clone(),
            watch: Some(WatchSection {
                server: f.server.into(),
                server_name: f.server_name,
                rate: f.rate,
                period: f.period,
                clients: f
                    .clients
                    .into_iter()
                    .map(|(name, pid)| Client { name, pid })
                    .collect(),
                threads: f.threads,
                recorder: self.recorder.clone(),
                clock_offset_ns: f.clock_offset_ns,
                options,
            }),
            ..Default::default()
        };
        let text = serde_json::to_string_pretty(&run).map_err(|e| e.to_string())?;
        crate::output::write_atomic(&self.dir.join(results::RUN_JSON), text.as_bytes())
            .map_err(|e| format!("cannot write run.json: {e}"))?;
        Ok(summary)
    }
}

/// This process's CPU time so far (user + system, every thread), seconds.
fn own_cpu_s() -> f64 {
    // SAFETY: rusage is plain data that getrusage fills.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// The most distinct culprit and client names tallied; the rest under `OTHERS`
/// (a session of days can meet many short-lived processes).
const NAMES_MAX: usize = 1000;
const OTHERS: &str = "(others, past the 1000 names kept)";

/// summary.json's counts, kept as the xruns come.
#[derive(Default)]
struct Tally {
    xruns: u64,
    explained: u64,
    watch_culprit: u64,
    unwritten: u64,
    last_cycle_start: Option<u64>,
    by_cause: BTreeMap<String, u64>,
    culprits: BTreeMap<String, u64>,
    by_client: BTreeMap<String, u64>,
}

impl Tally {
    /// One xrun; `me` is watch's own pid (an xrun whose culprit is watch itself).
    fn add(&mut self, x: &XrunEvent, me: i32) {
        self.xruns += 1;
        self.last_cycle_start = x.cycle_start_ns;
        if !matches!(x.cause, Cause::NoTrace | Cause::Unexplained) {
            self.explained += 1;
        }
        if x.culprit.as_ref().and_then(|c| c.pid) == Some(me) {
            self.watch_culprit += 1;
        }
        *self.by_cause.entry(x.cause.label().into()).or_default() += 1;
        if let Some(c) = &x.culprit {
            bump(&mut self.culprits, c.named());
        }
        let who = x
            .client
            .clone()
            .unwrap_or_else(|| "(no late thread found)".into());
        bump(&mut self.by_client, who);
    }
}

fn bump(m: &mut BTreeMap<String, u64>, name: String) {
    let key = if m.len() < NAMES_MAX || m.contains_key(&name) {
        name
    } else {
        OTHERS.to_string()
    };
    *m.entry(key).or_default() += 1;
}

/// The end of a watch in plain words: how many xruns, their causes and culprits, what
/// the recorder could do, and what to run next.
pub fn verdict(s: &WatchSummary, dir: &Path) -> String {
    let mut out = String::new();
    let mins = s.duration_s / 60.0;
    if s.xruns == 0 {
        out.push_str(&format!(
            "no xruns in {:.1} min of {} cycles ({} Hz, period {}) on {}\n",
            mins, s.cycles, s.rate, s.period, s.server
        ));
    } else {
        out.push_str(&format!(
            "{} xrun(s) in {:.1} min ({} cycles at {} Hz, period {}); {} explained\n",
            s.xruns, mins, s.cycles, s.rate, s.period, s.explained
        ));
        if let Some(n) = s.server_errors {
            out.push_str(&format!(
                "  (PipeWire's profiler counted {n} errors, as pw-top's ERR column does: it \
                 counts a late cycle once per sample; the xruns above are the late cycles)\n"
            ));
        }
        for (c, n) in &s.by_cause {
            out.push_str(&format!("  {n:>4} {c}\n"));
        }
        for (who, n) in s.by_culprit.iter().take(5) {
            out.push_str(&format!("  {n:>4} culprit {who}\n"));
        }
        if s.events_unwritten > 0 {
            out.push_str(&format!(
                "  {} of them counted but not in events.jsonl (its bound of {} lines)\n",
                s.events_unwritten,
                results::watch::EVENTS_MAX
            ));
        }
        if s.watch_culprit > 0 {
            out.push_str(&format!(
                "  watch itself held the CPU in {} of them (reading the kernel's trace; a \
                 smaller --buffer-kb reads less)\n",
                s.watch_culprit
            ));
        }
    }
    if s.duration_s > 0.0 {
        out.push_str(&format!(
            "watch used {:.2} s of CPU ({:.2} % of one core)\n",
            s.cpu_s,
            100.0 * s.cpu_s / s.duration_s
        ));
    }
    match s.recorder.mode.as_str() {
        "off" => out.push_str(&format!(
            "flight recorder off: {}\n",
            s.recorder.off_reason.as_deref().unwrap_or("unknown")
        )),
        "stop-read-rearm" => out.push_str(&format!(
            "flight recorder: stop-read mode (no snapshot buffer or live read on this kernel, \
             or --no-snapshot), so tracing stopped {} in all \
             (longest {}) while windows were read\n",
            ms(s.recorder.blind_ns),
            ms(s.recorder.blind_max_ns)
        )),
        _ => {}
    }
    out.push_str(&format!(
        "results: {}\nnext: xrunrig report {}\n",
        dir.display(),
        dir.display()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(tid: i32, pid: Option<i32>) -> Task {
        Task {
            comm: "t".into(),
            tid,
            pid,
            process: None,
            policy: "nice 0".into(),
        }
    }

    /// watch's defaults, for a sink in a test.
    fn options() -> WatchOptions {
        WatchOptions {
            server: None,
            duration_ns: None,
            out: None,
            before_ns: 500_000_000,
            after_ns: 100_000_000,
            ring: 64,
            keep: 0,
            buffer_kb: 1024,
            no_snapshot: false,
        }
    }

    /// The issue's case: three reports with one identical cycle start were three
    /// xruns. One late cycle is one xrun; the other reports are counted apart.
    #[test]
    fn one_late_cycle_is_one_xrun_however_many_reports() {
        let d = crate::testkit::private_dir("watch-merge");
        let mut sink = Sink::create(&d, &options()).unwrap();
        let c = |start_ns| crate::watch::explain::Cycle {
            start_ns,
            deadline_ns: start_ns + 5_333_000,
            frame: None,
        };
        let e = |start| {
            let mut e = crate::watch::explain::no_trace(&[c(start)], "test");
            e.cycle = Some(c(start));
            e
        };
        sink.xrun(&e(1_000_000_000), 1_006_000_000, "jack", None, 0, true);
        sink.xrun(&e(1_000_000_000), 1_006_100_000, "jack", None, 0, true);
        sink.xrun(&e(1_000_000_000), 1_006_200_000, "jack", None, 0, true);
        sink.xrun(&e(1_005_333_000), 1_011_000_000, "jack", None, 0, true);
        assert_eq!((sink.tally.xruns, sink.reports_merged), (2, 2));
        let lines = std::fs::read_to_string(d.join(results::EVENTS_JSONL)).unwrap();
        assert_eq!(lines.lines().count(), 2);
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A session of days: events.jsonl stops at its bound, the counts go on exact, and
    /// the names tallied stop growing.
    #[test]
    fn events_and_names_are_bounded_and_the_counts_exact() {
        let d = crate::testkit::private_dir("watch-bound");
        let mut sink = Sink::create(&d, &options()).unwrap();
        sink.events_max = 3;
        for i in 0..5u64 {
            let start = 1_000_000_000 + i * 10_000_000;
            let mut e = crate::watch::explain::no_trace(
                &[crate::watch::explain::Cycle {
                    start_ns: start,
                    deadline_ns: start + 5_333_000,
                    frame: None,
                }],
                "test",
            );
            e.cycle = None;
            sink.xrun(&e, start + 6_000_000, "jack", None, 0, true);
        }
        let lines = std::fs::read_to_string(d.join(results::EVENTS_JSONL)).unwrap();
        assert_eq!(lines.lines().count(), 3);
        let f = Finish {
            server: "jack",
            server_name: None,
            rate: 48000,
            period: 256,
            duration_s: 1.0,
            ended: "duration",
            started: String::new(),
            clients: vec![],
            threads: vec![],
            clock_offset_ns: 0,
        };
        let s = sink.finish(f).unwrap();
        assert_eq!((s.xruns, s.events_unwritten), (5, 2));
        assert_eq!(s.by_cause.values().sum::<u64>(), 5);
        assert!(verdict(&s, &d).contains("2 of them counted but not in events.jsonl"));
        let mut m = BTreeMap::new();
        for i in 0..NAMES_MAX + 10 {
            bump(&mut m, format!("p{i}"));
        }
        bump(&mut m, "p0".into());
        assert_eq!(m.len(), NAMES_MAX + 1);
        assert_eq!((m["p0"], m[OTHERS]), (2, 10));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn watch_names_the_xruns_it_caused_itself() {
        let x = |culprit: Option<Task>| XrunEvent {
            culprit,
            ..serde_json::from_str::<XrunEvent>(
                r#"{"index":1,"wall":"","mono_ns":0,"source":"jack","cause":"preempted","why":""}"#,
            )
            .unwrap()
        };
        let xs = vec![
            x(Some(task(7, Some(42)))),
            x(Some(task(8, Some(43)))),
            x(Some(task(9, Some(42)))),
            x(None),
            x(Some(task(42, None))),
        ];
        let mut t = Tally::default();
        for x in &xs {
            t.add(x, 42);
        }
        assert_eq!((t.xruns, t.watch_culprit), (5, 2));
        let mut s = WatchSummary {
            xruns: 5,
            duration_s: 10.0,
            watch_culprit: 2,
            ..Default::default()
        };
        s.recorder.mode = "snapshot".into();
        let v = verdict(&s, Path::new("/tmp/w"));
        assert!(v.contains("watch itself held the CPU in 2 of them"), "{v}");
        s.watch_culprit = 0;
        assert!(!verdict(&s, Path::new("/tmp/w")).contains("watch itself"));
    }
}
