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
    xruns: Vec<XrunEvent>,
    /// Reports folded into an xrun already counted (the same late cycle).
    reports_merged: u64,
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
            xruns: vec![],
            reports_merged: 0,
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
        let name = format!("{:04}", self.xruns.len() + 1);
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
            && self
                .xruns
                .last()
                .is_some_and(|x| x.cycle_start_ns == Some(c.start_ns))
        {
            self.reports_merged += 1;
            return;
        }
        let index = self.xruns.len() as u64 + 1;
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
        match serde_json::to_string(&ev) {
            Ok(line) => {
                let _ = writeln!(self.events, "{line}");
                let _ = self.events.flush();
            }
            Err(err) => eprintln!("xrunrig watch: cannot write xrun {index}: {err}"),
        }
        // 2026-12-01T14:03:22.418123Z -> 14:03:22.418
        let clock = wall.get(11..23).unwrap_or(&wall);
        crate::note!("xruns {index} · last {clock}: {}", e.short);
        self.xruns.push(ev);
    }

    /// summary.json and run.json; the summary.
    pub fn finish(&mut self, f: Finish) -> Result<WatchSummary, String> {
        let mut by_cause: BTreeMap<String, u64> = BTreeMap::new();
        let mut culprits: BTreeMap<String, u64> = BTreeMap::new();
        let mut by_client: BTreeMap<String, u64> = BTreeMap::new();
        for x in &self.xruns {
            *by_cause.entry(x.cause.label().into()).or_default() += 1;
            if let Some(c) = &x.culprit {
                *culprits.entry(c.named()).or_default() += 1;
            }
            let who = x
                .client
                .clone()
                .unwrap_or_else(|| "(no late thread found)".into());
            *by_client.entry(who).or_default() += 1;
        }
        let watch_culprit = own_culprits(&self.xruns, std::process::id() as i32);
        let mut by_culprit: Vec<(String, u64)> = culprits.into_iter().collect();
        by_culprit.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let explained = self
            .xruns
            .iter()
            .filter(|x| !matches!(x.cause, Cause::NoTrace | Cause::Unexplained))
            .count() as u64;
        let summary = WatchSummary {
            format: results::FORMAT_VERSION,
            kind: results::watch::KIND_WATCH.into(),
            server: f.server.into(),
            server_name: f.server_name.clone(),
            rate: f.rate,
            period: f.period,
            duration_s: f.duration_s,
            cycles: self.cycles,
            xruns: self.xruns.len() as u64,
            explained,
            windows_kept: self.windows_kept,
            by_cause,
            by_culprit,
            by_client,
            recorder: self.recorder.clone(),
            ended: f.ended.into(),
            cpu_s: own_cpu_s(),
            server_errors: self.server_errors,
            watch_culprit,
            reports_merged: self.reports_merged,
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

/// The xruns whose culprit was process `me` (watch itself).
fn own_culprits(xruns: &[XrunEvent], me: i32) -> u64 {
    xruns
        .iter()
        .filter(|x| x.culprit.as_ref().and_then(|c| c.pid) == Some(me))
        .count() as u64
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

    /// The issue's case: three reports with one identical cycle start were three
    /// xruns. One late cycle is one xrun; the other reports are counted apart.
    #[test]
    fn one_late_cycle_is_one_xrun_however_many_reports() {
        let d = crate::testkit::private_dir("watch-merge");
        let o = WatchOptions {
            server: None,
            duration_ns: None,
            out: None,
            before_ns: 500_000_000,
            after_ns: 100_000_000,
            ring: 64,
            keep: 0,
            buffer_kb: 1024,
            no_snapshot: false,
        };
        let mut sink = Sink::create(&d, &o).unwrap();
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
        assert_eq!((sink.xruns.len(), sink.reports_merged), (2, 2));
        let lines = std::fs::read_to_string(d.join(results::EVENTS_JSONL)).unwrap();
        assert_eq!(lines.lines().count(), 2);
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
        assert_eq!(own_culprits(&xs, 42), 2);
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
