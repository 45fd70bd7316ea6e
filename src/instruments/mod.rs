//! Instruments sampled around each trial: IPI counters from /proc/interrupts and a
//! sched trace of the rig's threads (runtime intervals, migrations, PI boosts). The
//! rig's `[instruments]` table says which (rigs/INSTRUMENTS.md). Raw captures go to
//! the results directory (`trace/`, `ipi/`); tracing state is restored on every exit
//! path (see `tracefs`).

pub mod config;
pub mod evidence;
pub mod intervals;
pub mod ipi;
pub mod parse;
pub mod story;
pub mod trace;
pub mod trace_journal;
pub mod tracefs;

use config::{Config, IPI_EVENTS, Of};
use results::instruments as files;
use results::run::{self, InstrumentsSection};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a rig's `[instruments]` table asks for, running across a whole run.
#[derive(Default)]
pub struct Instruments {
    cfg: Config,
    dir: PathBuf,
    ipi_cpus: Vec<usize>,
    session: Option<tracefs::Session>,
    sampler: Option<ipi::Sampler>,
    capture: Option<trace::Capture>,
    trial: Option<TrialCtx>,
    files: Vec<String>,
    lost_events: u64,
    restored: Vec<String>,
    problems: Vec<String>,
}

struct TrialCtx {
    stem: String,
    tids: Vec<(String, i32)>,
    /// The tids whose events the trace keeps (`threads`, default all).
    traced: Vec<i32>,
    t0_ns: u64,
    error: Option<String>,
}

/// What instruments found in one trial.
#[derive(Default)]
pub struct TrialFindings {
    /// Extra metric values, in the unit the instrument states, keyed by metric name.
    pub metrics: BTreeMap<String, Vec<f64>>,
    /// One-line evidence (e.g. "boost 10->90 at +1.0 ms; never migrated").
    pub evidence: Vec<String>,
    /// Metrics the trial ended early before (`end_trial`'s `cut`): each known only to
    /// be at least the value given (`results::trials::TrialRecord::censored`).
    pub censored: BTreeMap<String, f64>,
    /// The trial's parsed sched trace, for callers that explain events from it.
    pub records: Option<Vec<parse::Record>>,
}

/// Cleans up tracing state a killed run left behind (see `tracefs::recover`). Call it
/// at the start of every run and from `xrunrig restore`.
pub fn recover() -> Result<Vec<String>, String> {
    tracefs::recover()
}

/// For the watchdog's last resort, beside `knobs::emergency_restore`.
pub fn emergency_restore() {
    tracefs::emergency_restore()
}

/// `xrunrig restore --discard`: drops the trace journals (only the one named `only`),
/// none of a live run; one line per journal dropped.
pub fn discard(only: Option<&str>) -> Vec<String> {
    tracefs::discard(only)
}

/// Whether `name` is the file name of a trace journal.
pub fn is_trace_journal_name(name: &str) -> bool {
    trace_journal::is_journal_name(name)
}

/// Does thread instance `name` (`worker`, `worker.2`) match `spec` (base or instance)?
fn matches(spec: &str, name: &str) -> bool {
    name == spec || name.split('.').next() == Some(spec) && !spec.contains('.')
}

impl Instruments {
    /// The instruments the rig's `[instruments]` table asks for (checked when the rig
    /// was loaded). `dir` is the results directory for raw captures.
    pub fn from_rig(rig: &crate::rig::Rig, dir: &Path) -> Instruments {
        let Some(cfg) = &rig.instruments else {
            return Instruments::default();
        };
        let ipi_cpus = match &cfg.ipi {
            Some(i) if !i.cpus.is_empty() => i.cpus.clone(),
            _ => crate::sys::online_cpus(),
        };
        Instruments {
            cfg: cfg.clone(),
            dir: dir.to_path_buf(),
            ipi_cpus,
            ..Default::default()
        }
    }

    /// Where the per-trial files go: the results directory, once it exists (instruments
    /// are checked, `before_run`, before it is created).
    pub fn set_dir(&mut self, dir: &Path) {
        self.dir = dir.to_path_buf();
    }

    fn needs_trace(&self) -> bool {
        self.cfg.needs_trace()
    }

    /// The metrics these instruments add, for summary rows: name, unit, description.
    pub fn metric_defs(&self) -> Vec<crate::rig::Metric> {
        let mut out = Vec::new();
        let m = |name: String, unit: &str, description: String| crate::rig::Metric {
            name: name.clone(),
            from: ("instrument".into(), name.clone()),
            to: ("instrument".into(), name),
            bound: None,
            unit: unit.into(),
            description,
            end_early: false,
        };
        if let Some(i) = &self.cfg.ipi {
            let secs = i.interval_ns as f64 / 1e9;
            for c in &self.cpus_for_ipi() {
                for r in &i.counters {
                    out.push(m(
                        format!("ipi_{r}_cpu{c}"),
                        "count",
                        format!("{r} interrupts on CPU{c} per {secs} s interval, mean over the trial's intervals"),
                    ));
                    out.push(m(
                        format!("ipi_{r}_cpu{c}_cov"),
                        "%",
                        format!("coefficient of variation of {r} on CPU{c} over the intervals"),
                    ));
                }
                if i.senders {
                    out.push(m(
                        format!("ipi_push_cpu{c}"),
                        "count",
                        format!("RT pushes (rto_push_irq_work_func) queued to CPU{c}, per {secs} s interval"),
                    ));
                }
            }
        }
        if let Some(t) = &self.cfg.trace {
            for tm in &t.metrics {
                out.push(m(tm.name.clone(), tm.of.unit(), tm.description.clone()));
            }
        }
        out
    }

    fn cpus_for_ipi(&self) -> Vec<usize> {
        self.ipi_cpus.clone()
    }

    /// Before the first trial; may change tracing state (and must restore it in `after_run`
    /// and on every exit path).
    pub fn before_run(&mut self) -> Result<(), String> {
        if let Some(i) = &self.cfg.ipi {
            // Fails now, not mid-run, when a row is missing on this kernel.
            ipi::snapshot(&i.counters)?;
        }
        if self.needs_trace() {
            let kb = self.cfg.trace.as_ref().map_or(8192, |t| t.buffer_kb);
            self.session = Some(tracefs::Session::begin(kb)?);
        } else {
            tracefs::warn_recovered(tracefs::recover());
        }
        Ok(())
    }

    /// All rig threads exist (name, tid) and are about to be released.
    pub fn start_trial(
        &mut self,
        setting: &str,
        variant: &str,
        trial: u32,
        tids: &[(String, i32)],
    ) {
        let stem = results::trial_stem(setting, variant, trial);
        let mut ctx = TrialCtx {
            stem: stem.clone(),
            tids: tids.to_vec(),
            traced: vec![],
            t0_ns: 0,
            error: None,
        };
        if let Some(s) = &self.session {
            let events = self
                .cfg
                .trace
                .as_ref()
                .map(|t| t.events.clone())
                .unwrap_or_default();
            let unfiltered: Vec<String> = if self.cfg.ipi.as_ref().is_some_and(|i| i.senders) {
                IPI_EVENTS.iter().map(|s| s.to_string()).collect()
            } else {
                vec![]
            };
            let only = self
                .cfg
                .trace
                .as_ref()
                .map(|t| t.threads.clone())
                .unwrap_or_default();
            let ids: Vec<i32> = tids
                .iter()
                .filter(|(n, _)| only.is_empty() || only.iter().any(|s| matches(s, n)))
                .map(|(_, t)| *t)
                .collect();
            ctx.traced = ids.clone();
            let out = self.dir.join(files::TRACE_DIR).join(format!("{stem}.txt"));
            match trace::Capture::start(&s.instance, &events, &unfiltered, &ids, out, self.cfg.cpu)
            {
                Ok(c) => self.capture = Some(c),
                Err(e) => ctx.error = Some(format!("trace: {e}")),
            }
        }
        if let Some(i) = &self.cfg.ipi {
            match ipi::Sampler::start(i.counters.clone(), i.interval_ns, self.cfg.cpu) {
                Ok(s) => self.sampler = Some(s),
                Err(e) => ctx.error = Some(format!("ipi: {e}")),
            }
        }
        ctx.t0_ns = crate::sys::now_ns();
        self.trial = Some(ctx);
    }

    /// The trial's threads have finished. `cut`: the CLOCK_MONOTONIC ns at which the
    /// trial was ended early (the rig's `end_early`), if it was; the trace's metrics and
    /// evidence then count only what came before it, not the threads' release.
    pub fn end_trial(&mut self, cut: Option<u64>) -> TrialFindings {
        let mut f = TrialFindings::default();
        let Some(ctx) = self.trial.take() else {
            return f;
        };
        let mut snaps = None;
        if let (Some(s), Some(i)) = (self.sampler.take(), &self.cfg.ipi) {
            snaps = Some(s.stop(&i.counters));
        }
        let mut records = None;
        let mut hists = Vec::new();
        let mut csd_seen = false;
        if let Some(mut c) = self.capture.take() {
            hists = c.hist_texts();
            // Without the csd event (before 6.4) pushes cannot be told apart: no value.
            csd_seen = hists.iter().any(|(e, _)| e.ends_with("csd_queue_cpu"))
                || c.unfiltered.iter().any(|e| e.ends_with("csd_queue_cpu"));
            match c.stop() {
                Ok((bytes, lost)) => {
                    self.lost_events += lost;
                    self.files.push(rel(&self.dir, &c.path));
                    if lost > 0 {
                        f.evidence.push(format!(
                            "trace: the ring buffer dropped {lost} events (raise buffer_kb)"
                        ));
                    }
                    match std::fs::read_to_string(&c.path) {
                        Ok(t) => {
                            let (r, bad) = parse::parse_text(&t);
                            if bad > 0 {
                                f.evidence.push(format!(
                                    "trace: {bad} lines did not parse ({bytes} bytes captured)"
                                ));
                            }
                            records = Some(r);
                        }
                        Err(e) => f
                            .evidence
                            .push(format!("trace: cannot read back {}: {e}", c.path.display())),
                    }
                }
                Err(e) => f.evidence.push(format!("trace: {e}")),
            }
        }
        if let Some(e) = &ctx.error {
            f.evidence.push(e.clone());
        }
        if let (Some(snaps), Some(i)) = (&snaps, self.cfg.ipi.clone()) {
            let push_known = i.senders && csd_seen;
            let senders = Senders {
                records: records.as_deref(),
                hists: &hists,
                push_known,
            };
            self.ipi_findings(&ctx, snaps, &i, senders, &mut f);
        }
        if let (Some(r), Some(t)) = (&records, self.cfg.trace.clone()) {
            self.trace_until(&ctx, r, &t, cut, &mut f);
        }
        f.records = records;
        f
    }

    /// The tracing instance's `trace_marker`, opened for writing, when this run traces:
    /// lines written there land in the kept trace at the moment they are written.
    pub fn marker(&self) -> Option<std::fs::File> {
        let s = self.session.as_ref()?;
        std::fs::OpenOptions::new()
            .write(true)
            .open(s.instance.join("trace_marker"))
            .ok()
    }

    fn ipi_findings(
        &mut self,
        ctx: &TrialCtx,
        snaps: &[ipi::Snapshot],
        cfg: &config::IpiConfig,
        senders: Senders,
        f: &mut TrialFindings,
    ) {
        let Senders {
            records,
            hists,
            push_known,
        } = senders;
        let n = snaps.len().saturating_sub(1);
        let span_s = match (snaps.first(), snaps.last()) {
            (Some(a), Some(b)) => (b.t_ns - a.t_ns) as f64 / 1e9,
            _ => 0.0,
        };
        let mut parts = Vec::new();
        let mut raw = BTreeMap::new();
        // RT push IPIs by target CPU, from the ipi trace events (senders = true).
        let mut push: BTreeMap<u32, u64> = BTreeMap::new();
        let mut by_cb: BTreeMap<(String, u32), u64> = BTreeMap::new();
        // Counted in the kernel (hist triggers) where it can, else from the text capture.
        // `csd_queue_cpu` names the function queued for the target CPU (the RT push is
        // rto_push_irq_work_func); `ipi_send_*` name the sending call site.
        let mut count = |target: Option<u32>, what: String, hits: u64, queued: bool| {
            let t = target.unwrap_or(NO_CPU);
            if queued && what == "rto_push_irq_work_func" {
                *push.entry(t).or_default() += hits;
            }
            let label = if queued {
                format!("queued {what}")
            } else {
                format!("sent by {what}")
            };
            *by_cb.entry((label, t)).or_default() += hits;
        };
        for (ev, text) in hists {
            let queued = ev.ends_with("csd_queue_cpu");
            for (k, hits) in trace::parse_hist(text) {
                let target = k.get("cpu").and_then(|c| c.parse().ok());
                let what = if queued {
                    k.get("func")
                } else {
                    k.get("callsite")
                };
                count(target, what.cloned().unwrap_or_default(), hits, queued);
            }
        }
        if let Some(r) = records.filter(|_| hists.is_empty()) {
            for rec in r {
                match &rec.ev {
                    parse::Ev::IpiSend {
                        targets, callsite, ..
                    } => {
                        for &t in targets {
                            count(Some(t), callsite.clone(), 1, false);
                        }
                    }
                    parse::Ev::CsdQueue { cpu, func } => count(Some(*cpu), func.clone(), 1, true),
                    _ => {}
                }
            }
        }
        for &c in &self.ipi_cpus {
            let mut cpu_parts = Vec::new();
            for r in &cfg.counters {
                let d = ipi::deltas(snaps, r, c);
                let (mean, cov) = ipi::mean_cov(&d);
                f.metrics.insert(format!("ipi_{r}_cpu{c}"), vec![mean]);
                if let Some(cv) = cov {
                    f.metrics.insert(format!("ipi_{r}_cpu{c}_cov"), vec![cv]);
                }
                cpu_parts.push(format!(
                    "{r} {mean:.1}{}",
                    cov.map_or(String::new(), |v| format!(" ±{v:.1}%"))
                ));
                raw.insert(format!("{r}_cpu{c}"), d);
            }
            if push_known && n > 0 {
                let p = *push.get(&(c as u32)).unwrap_or(&0) as f64 / n as f64;
                f.metrics.insert(format!("ipi_push_cpu{c}"), vec![p]);
                cpu_parts.push(format!("push {p:.1}"));
            }
            parts.push(format!("CPU{c}: {}", cpu_parts.join(", ")));
        }
        f.evidence.push(format!(
            "IPIs per {} s interval (mean ± CoV over {n} interval(s), {span_s:.1} s): {}",
            cfg.interval_ns as f64 / 1e9,
            parts.join("; ")
        ));
        if cfg.senders && !by_cb.is_empty() {
            let mut v: Vec<_> = by_cb.into_iter().collect();
            v.sort_by_key(|x| std::cmp::Reverse(x.1));
            let top: Vec<String> = v
                .iter()
                .take(6)
                .map(|((what, t), k)| match *t {
                    NO_CPU => format!("{what} -> a CPU mask {k}"),
                    t => format!("{what} -> CPU{t} {k}"),
                })
                .collect();
            f.evidence.push(format!(
                "IPIs by sender and work queued, by target CPU (whole trial): {}",
                top.join(", ")
            ));
        }
        let path = self
            .dir
            .join(files::IPI_DIR)
            .join(format!("{}.json", ctx.stem));
        let doc = files::IpiCapture {
            interval_ns: cfg.interval_ns,
            times_ns: snaps.iter().map(|s| s.t_ns - snaps[0].t_ns).collect(),
            deltas: raw,
        };
        if std::fs::create_dir_all(self.dir.join(files::IPI_DIR)).is_ok()
            && crate::output::write_json(&path, &doc).is_ok()
        {
            self.files.push(rel(&self.dir, &path));
        }
    }

    /// The trace's findings from what came before `cut` (a trial ended early): after it
    /// comes the threads' release, which the rig did not ask for.
    fn trace_until(
        &mut self,
        ctx: &TrialCtx,
        records: &[parse::Record],
        cfg: &config::TraceConfig,
        cut: Option<u64>,
        f: &mut TrialFindings,
    ) {
        let Some(c) = cut else {
            return self.trace_findings(ctx, records, cfg, None, f);
        };
        let before: Vec<parse::Record> = records.iter().filter(|x| x.ts_ns < c).cloned().collect();
        f.evidence.push(format!(
            "trace: the trial ended early at {:.1} ms (end_early); what follows it, the threads' release, is not counted",
            c.saturating_sub(ctx.t0_ns) as f64 / 1e6
        ));
        self.trace_findings(ctx, &before, cfg, cut, f);
    }

    fn trace_findings(
        &mut self,
        ctx: &TrialCtx,
        records: &[parse::Record],
        cfg: &config::TraceConfig,
        cut: Option<u64>,
        f: &mut TrialFindings,
    ) {
        // Only threads whose events were kept: a switch from a traced thread to an
        // untraced one would otherwise open a stretch nothing closes.
        let d = intervals::derive(records, &ctx.traced);
        let sel = |spec: &Option<String>| -> Vec<i32> {
            ctx.tids
                .iter()
                .filter(|(n, t)| {
                    ctx.traced.contains(t) && spec.as_deref().is_none_or(|s| matches(s, n))
                })
                .map(|(_, t)| *t)
                .collect()
        };
        for m in &cfg.metrics {
            let tids = sel(&m.thread);
            let lens = intervals::lengths(&d, &tids);
            let v: Option<f64> = match m.of {
                Of::IntervalsAbove(a) => Some(lens.iter().filter(|&&l| l > a).count() as f64),
                Of::Intervals => Some(lens.len() as f64),
                Of::IntervalQuantile(q) => intervals::quantile(&lens, q).map(|x| x as f64 / 1e6),
                Of::Migrations => Some(
                    d.migrations
                        .iter()
                        .filter(|x| tids.contains(&x.tid))
                        .count() as f64,
                ),
                Of::PreemptedMigrateDisabled => Some(
                    tids.iter()
                        .filter_map(|t| d.intervals.get(t))
                        .flatten()
                        .filter(|i| {
                            i.end_state.starts_with('R') && i.end_migrate_disable.unwrap_or(0) > 0
                        })
                        .count() as f64,
                ),
                Of::BoostToRun => {
                    let boost = d
                        .boosts
                        .iter()
                        .find(|b| tids.contains(&b.tid) && b.newprio < b.oldprio);
                    let run = boost.and_then(|b| {
                        d.switch_ins
                            .iter()
                            .find(|(t, ts, _)| *t == b.tid && *ts >= b.ts_ns)
                            .map(|(_, ts, _)| (ts - b.ts_ns) as f64 / 1e6)
                    });
                    // Boosted, and not run again before the trial ended early: only
                    // known to be at least the time to the cut.
                    if let (Some(b), None, Some(c)) = (boost, run, cut) {
                        f.censored
                            .insert(m.name.clone(), c.saturating_sub(b.ts_ns) as f64 / 1e6);
                    }
                    run
                }
            };
            if let Some(v) = v {
                f.metrics.insert(m.name.clone(), vec![v]);
            }
        }
        for spec in &cfg.distribution {
            let tids = sel(&Some(spec.clone()));
            let above = cfg.metrics.iter().find_map(|m| match m.of {
                Of::IntervalsAbove(a) if m.thread.as_deref() == Some(spec) => Some(a),
                _ => None,
            });
            f.evidence
                .push(evidence::distribution(&d, &tids, spec, above));
        }
        for spec in &cfg.evidence {
            for (name, tid) in ctx.tids.iter().filter(|(n, _)| matches(spec, n)) {
                let l = evidence::mechanism(&d, *tid, name, ctx.t0_ns, &ctx.tids);
                // Cut short: what the thread did after, it did in the release.
                let l = match (cut, l.strip_suffix(evidence::NOT_RESUMED)) {
                    (Some(_), Some(head)) => {
                        format!("{head}did not run again before the trial ended early")
                    }
                    _ => l,
                };
                f.evidence.push(l);
            }
        }
        // Each thread may have one stretch cut at each edge of the capture; more than
        // that means events were lost.
        if d.unmatched > 2 * ctx.traced.len() && !cfg.metrics.is_empty() {
            f.evidence.push(format!(
                "trace: {} switch events without a partner (capture edges or lost events); those stretches are not counted",
                d.unmatched
            ));
        }
        // The derived intervals, so reports need not parse the raw text again.
        let ms = |ts_ns: u64| (ts_ns as i64 - ctx.t0_ns as i64) as f64 / 1e6;
        let doc = files::DerivedTrace {
            columns: files::INTERVAL_COLUMNS.map(String::from).to_vec(),
            intervals: ctx
                .tids
                .iter()
                .map(|(n, t)| {
                    let v = d
                        .intervals
                        .get(t)
                        .into_iter()
                        .flatten()
                        .map(|i| {
                            files::TraceInterval(
                                ms(i.start_ns),
                                i.len_ns() as f64 / 1e6,
                                i.cpu,
                                i.end_state.clone(),
                            )
                        })
                        .collect();
                    (n.clone(), v)
                })
                .collect(),
            migrations: d
                .migrations
                .iter()
                .map(|m| files::TraceMigration {
                    tid: m.tid,
                    t_ms: ms(m.ts_ns),
                    orig_cpu: m.orig_cpu,
                    dest_cpu: m.dest_cpu,
                    hardirq: m.hardirq,
                })
                .collect(),
            boosts: d
                .boosts
                .iter()
                .map(|b| files::TraceBoost {
                    tid: b.tid,
                    t_ms: ms(b.ts_ns),
                    oldprio: b.oldprio,
                    newprio: b.newprio,
                })
                .collect(),
            tids: ctx.tids.clone(),
        };
        let path = self
            .dir
            .join(files::TRACE_DIR)
            .join(format!("{}.derived.json", ctx.stem));
        // Compact: it is as long as the trace, and guest results travel over a serial line.
        let text = serde_json::to_string(&doc).unwrap_or_default();
        if std::fs::write(&path, text + "\n").is_ok() {
            self.files.push(rel(&self.dir, &path));
        }
    }

    /// After the last trial: restore state; returns what goes into run.json under
    /// "instruments" (None when the rig has none).
    pub fn after_run(&mut self) -> Option<InstrumentsSection> {
        if self.cfg == Config::default() {
            return None;
        }
        self.capture = None;
        self.sampler = None;
        let mut tracing = None;
        if let Some(mut s) = self.session.take() {
            tracing = Some(run::TracingInfo {
                tracefs: s.root.display().to_string(),
                mounted_by_us: s.mounted_by_us,
                instance: s.instance.display().to_string(),
            });
            match s.end() {
                Ok(l) => self.restored.extend(l),
                Err(e) => {
                    eprintln!("xrunrig: {e}");
                    self.problems.push(e);
                }
            }
        }
        Some(InstrumentsSection {
            ipi: self.cfg.ipi.as_ref().map(|i| run::IpiInfo {
                interval_ns: i.interval_ns,
                counters: i.counters.clone(),
                cpus: self.ipi_cpus.clone(),
                senders: i.senders,
            }),
            trace: self.cfg.trace.as_ref().map(|t| run::TraceInfo {
                events: t.events.clone(),
                buffer_kb: t.buffer_kb,
                lost_events: self.lost_events,
            }),
            tracing,
            restored: self.restored.clone(),
            problems: self.problems.clone(),
            files: self.files.clone(),
            metrics: self
                .metric_defs()
                .into_iter()
                .map(|m| run::MetricInfo {
                    name: m.name,
                    unit: m.unit,
                    description: m.description,
                })
                .collect(),
        })
    }
}

/// What the trace says about who sent IPIs: the text capture, hist triggers' counts,
/// and whether RT pushes can be told apart on this kernel.
struct Senders<'a> {
    records: Option<&'a [parse::Record]>,
    hists: &'a [(String, String)],
    push_known: bool,
}

/// Target of an IPI sent to a CPU mask (no single CPU).
const NO_CPU: u32 = u32::MAX;

fn rel(dir: &Path, p: &Path) -> String {
    p.strip_prefix(dir).unwrap_or(p).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_specs() {
        assert!(matches("worker", "worker"));
        assert!(matches("worker", "worker.2"));
        assert!(matches("worker.2", "worker.2"));
        assert!(!matches("worker.2", "worker.3"));
        assert!(!matches("work", "worker"));
        assert_eq!(results::file_part("NO_RT PUSH/x"), "NO_RT_PUSH_x");
    }

    /// The seed rig's owner boosted at +10 ms, running again at +500 ms (the hog left).
    #[test]
    fn a_trial_ended_early_counts_the_trace_only_up_to_the_cut() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let rig = crate::rig::load(&root.join("rigs/pi-boost-affinity.toml")).unwrap();
        let dir = crate::testkit::private_dir("trace-cut");
        let mut inst = Instruments::from_rig(&rig, &dir);
        let cfg = inst.cfg.trace.clone().unwrap();
        let text = "\
 waiter-302 [002] d..3. 100.010000: sched_pi_setprio: comm=owner pid=301 oldprio=89 newprio=9
 hog-303 [001] d..2. 100.500000: sched_switch: prev_comm=hog prev_pid=303 prev_prio=0 prev_state=S ==> next_comm=owner next_pid=301 next_prio=9
";
        let (records, bad) = parse::parse_text(text);
        assert_eq!(bad, 0);
        let ctx = TrialCtx {
            stem: "s__v__0".into(),
            tids: vec![
                ("owner".into(), 301),
                ("waiter".into(), 302),
                ("hog".into(), 303),
            ],
            traced: vec![301, 302, 303],
            t0_ns: 100_000_000_000,
            error: None,
        };
        let mut f = TrialFindings::default();
        inst.trace_until(&ctx, &records, &cfg, None, &mut f);
        assert_eq!(f.metrics.get("boost_to_run"), Some(&vec![490.0]));
        assert!(f.censored.is_empty());
        // Ended at +110 ms: the owner had not run again; it is at least 100 ms.
        let mut f = TrialFindings::default();
        inst.trace_until(&ctx, &records, &cfg, Some(100_110_000_000), &mut f);
        assert!(!f.metrics.contains_key("boost_to_run"), "{:?}", f.metrics);
        assert_eq!(f.censored.get("boost_to_run"), Some(&100.0));
        assert!(
            f.evidence
                .iter()
                .any(|e| e.contains("ended early at 110.0 ms")),
            "{:?}",
            f.evidence
        );
        assert!(
            f.evidence
                .iter()
                .any(|e| e.ends_with("did not run again before the trial ended early")),
            "{:?}",
            f.evidence
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
