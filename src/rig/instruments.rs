//! The rig's `[instruments]` table (documented in rigs/INSTRUMENTS.md), checked with the
//! rest of the rig (`super::validate::compile`) so every problem names file:line:col.
//! Lives under `rig` so the rig parser does not reach up into `crate::instruments`,
//! which uses it (re-exported as `crate::instruments::config`).

use super::limits;
use super::problem::Problem;
use super::units::parse_duration;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[instruments]` as written; `compile` checks it.
pub struct InstrumentsDef {
    cpu: Option<Spanned<i64>>,
    ipi: Option<Spanned<IpiDef>>,
    trace: Option<Spanned<TraceDef>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct IpiDef {
    interval: Option<Spanned<String>>,
    counters: Option<Vec<Spanned<String>>>,
    cpus: Option<Spanned<Vec<i64>>>,
    senders: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceDef {
    events: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    threads: Vec<Spanned<String>>,
    buffer_kb: Option<Spanned<u32>>,
    #[serde(default)]
    evidence: Vec<Spanned<String>>,
    #[serde(default)]
    distribution: Vec<Spanned<String>>,
    #[serde(default)]
    metrics: BTreeMap<String, Spanned<TraceMetricDef>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceMetricDef {
    of: Spanned<String>,
    thread: Option<Spanned<String>>,
    above: Option<Spanned<String>>,
    description: Option<String>,
}

pub const SCHED_EVENTS: &[&str] = &[
    "sched_switch",
    "sched_wakeup",
    "sched_migrate_task",
    "sched_pi_setprio",
];
/// IPIs sent (by target and sending call site) and the function queued for a remote
/// CPU (`csd_queue_cpu`: `rto_push_irq_work_func` is the RT push). Those missing on a
/// kernel are skipped.
pub const IPI_EVENTS: &[&str] = &[
    "ipi/ipi_send_cpu",
    "ipi/ipi_send_cpumask",
    "csd/csd_queue_cpu",
];

#[derive(Debug, Clone, PartialEq)]
pub struct IpiConfig {
    pub interval_ns: u64,
    pub counters: Vec<String>,
    /// Empty: every online CPU.
    pub cpus: Vec<usize>,
    /// Also trace ipi_send_cpu/ipi_send_cpumask and count IPIs by callback.
    pub senders: bool,
}

/// What a trace metric counts or measures.
#[derive(Debug, Clone, PartialEq)]
pub enum Of {
    /// Runtime intervals longer than this many ns (count).
    IntervalsAbove(u64),
    Intervals,
    /// Quantile of the runtime interval lengths (ms), 1.0 = max.
    IntervalQuantile(f64),
    Migrations,
    /// Switch-outs while runnable with migration disabled (count).
    PreemptedMigrateDisabled,
    /// From the first PI boost of the thread to its next switch-in (ms).
    BoostToRun,
}

impl Of {
    pub fn unit(&self) -> &'static str {
        match self {
            Of::IntervalQuantile(_) | Of::BoostToRun => "ms",
            _ => "count",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TraceMetric {
    pub name: String,
    pub of: Of,
    /// A thread base name (`worker`, all instances) or instance (`worker.2`); None = all.
    pub thread: Option<String>,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TraceConfig {
    pub events: Vec<String>,
    /// Threads whose events are traced (base names or instances); empty: all.
    pub threads: Vec<String>,
    pub buffer_kb: u32,
    pub evidence: Vec<String>,
    pub distribution: Vec<String>,
    pub metrics: Vec<TraceMetric>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    /// The CPU the instrument threads (trace reader, IPI sampler) are pinned to.
    pub cpu: Option<usize>,
    pub ipi: Option<IpiConfig>,
    pub trace: Option<TraceConfig>,
}

impl Config {
    /// Whether these instruments read the sched trace (tracefs): a trace, or the IPI
    /// senders, which are traced.
    pub fn needs_trace(&self) -> bool {
        self.trace.is_some() || self.ipi.as_ref().is_some_and(|i| i.senders)
    }
}

/// Checks `[instruments]` and builds its config, adding every problem to `problems`.
/// `threads`: the rig's thread base names, for checking references (empty: not checked).
pub(super) fn compile(
    def: &InstrumentsDef,
    threads: &[String],
    problems: &mut Vec<Problem>,
) -> Config {
    let mut ck = Ck { problems, threads };
    ck.list_caps(def);
    let cpu = def.cpu.as_ref().and_then(|c| ck.instrument_cpu(c));
    let ipi = def.ipi.as_ref().map(|i| ck.ipi(i.get_ref()));
    let trace = def.trace.as_ref().map(|t| ck.trace(t));
    Config { cpu, ipi, trace }
}

/// Where `compile`'s seams report problems (at a span's start), with the rig's thread
/// names they check references against.
struct Ck<'a> {
    problems: &'a mut Vec<Problem>,
    threads: &'a [String],
}

/// Entries of any one list in `[instruments]` (events, counters, threads, metrics):
/// each is sampled or traced per trial, so the lists stay short.
pub const MAX_LIST: usize = 64;

impl Ck<'_> {
    fn err(&mut self, off: usize, msg: String) {
        self.problems.push(Problem {
            span: off..off,
            msg,
        })
    }

    /// Every list of the table is at most `MAX_LIST` long (reported at the first
    /// entry past it).
    fn list_caps(&mut self, def: &InstrumentsDef) {
        let mut lists: Vec<(&str, Vec<usize>)> = Vec::new();
        if let Some(i) = &def.ipi {
            let i = i.get_ref();
            if let Some(c) = &i.counters {
                lists.push(("ipi counters", c.iter().map(|x| x.span().start).collect()));
            }
        }
        if let Some(t) = &def.trace {
            let t = t.get_ref();
            if let Some(e) = &t.events {
                lists.push(("trace events", e.iter().map(|x| x.span().start).collect()));
            }
            for (what, l) in [
                ("trace threads", &t.threads),
                ("trace evidence", &t.evidence),
                ("trace distribution", &t.distribution),
            ] {
                lists.push((what, l.iter().map(|x| x.span().start).collect()));
            }
            lists.push((
                "trace metrics",
                t.metrics.values().map(|m| m.span().start).collect(),
            ));
        }
        for (what, starts) in lists {
            if let Some(&at) = starts.get(MAX_LIST) {
                self.err(at, format!("{what}: at most {MAX_LIST} entries"));
            }
        }
    }

    /// `cpu`: the instrument threads' CPU.
    fn instrument_cpu(&mut self, c: &Spanned<i64>) -> Option<usize> {
        if (0..limits::cpu_limit() as i64).contains(c.get_ref()) {
            Some(*c.get_ref() as usize)
        } else {
            self.err(c.span().start, limits::cpu_refusal(c.get_ref()));
            None
        }
    }

    /// `[instruments.ipi]`: interval, /proc/interrupts rows and CPUs sampled.
    fn ipi(&mut self, d: &IpiDef) -> IpiConfig {
        let interval_ns = self.ipi_interval(&d.interval);
        let counters = self.ipi_counters(&d.counters);
        let mut cpus = Vec::new();
        if let Some(c) = &d.cpus {
            for &x in c.get_ref() {
                if (0..limits::cpu_limit() as i64).contains(&x) {
                    cpus.push(x as usize);
                } else {
                    self.err(c.span().start, limits::cpu_refusal(x));
                }
            }
            cpus.sort_unstable();
            cpus.dedup();
        }
        IpiConfig {
            interval_ns,
            counters,
            cpus,
            senders: d.senders.unwrap_or(false),
        }
    }

    /// The IPI sampling interval: 5 s by default, at least 10 ms (0 when bad).
    fn ipi_interval(&mut self, interval: &Option<Spanned<String>>) -> u64 {
        match interval {
            None => 5_000_000_000,
            Some(s) => match parse_duration(s.get_ref()) {
                Ok(v) if v >= 10_000_000 => v,
                Ok(_) => {
                    self.err(s.span().start, "ipi interval must be at least 10 ms".into());
                    0
                }
                Err(e) => {
                    self.err(s.span().start, e);
                    0
                }
            },
        }
    }

    /// The /proc/interrupts rows counted: IWI, RES and CAL by default; bad names are
    /// reported and left out.
    fn ipi_counters(&mut self, counters: &Option<Vec<Spanned<String>>>) -> Vec<String> {
        match counters {
            None => vec!["IWI".into(), "RES".into(), "CAL".into()],
            Some(v) => {
                let mut out = Vec::new();
                for c in v {
                    let n = c.get_ref();
                    if n.is_empty() || !n.chars().all(|x| x.is_ascii_alphanumeric()) {
                        self.err(
                            c.span().start,
                            format!(
                                "'{n}' is not a /proc/interrupts row name (e.g. IWI, RES, CAL)"
                            ),
                        );
                    } else {
                        out.push(n.clone());
                    }
                }
                out
            }
        }
    }

    /// `[instruments.trace]`: its events, buffer, thread references and metrics, then
    /// whether the events cover what the metrics, distribution and evidence read.
    fn trace(&mut self, t: &Spanned<TraceDef>) -> TraceConfig {
        let d = t.get_ref();
        let events = self.trace_events(&d.events);
        let buffer_kb = match &d.buffer_kb {
            None => 8192,
            Some(b) if (64..=1_048_576).contains(b.get_ref()) => *b.get_ref(),
            Some(b) => {
                self.err(
                    b.span().start,
                    "buffer_kb must be 64..=1048576 (KiB per CPU)".into(),
                );
                8192
            }
        };
        let traced: Vec<String> = d.threads.iter().map(|s| self.thread_ref(s)).collect();
        let evidence: Vec<String> = d.evidence.iter().map(|s| self.thread_ref(s)).collect();
        let distribution: Vec<String> = d.distribution.iter().map(|s| self.thread_ref(s)).collect();
        let mut metrics = Vec::new();
        for (name, m) in &d.metrics {
            if let Some(metric) = self.trace_metric(name, m) {
                metrics.push(metric);
            }
        }
        let needs = |e: &str| {
            !events
                .iter()
                .any(|x| x == e || x.ends_with(&format!("/{e}")))
        };
        if (!metrics.is_empty() || !distribution.is_empty() || !evidence.is_empty())
            && needs("sched_switch")
        {
            self.err(
                t.span().start,
                "trace metrics, distribution and evidence need sched_switch in events".into(),
            );
        }
        if !evidence.is_empty() && (needs("sched_pi_setprio") || needs("sched_migrate_task")) {
            self.err(
                t.span().start,
                "evidence needs sched_pi_setprio and sched_migrate_task in events".into(),
            );
        }
        TraceConfig {
            events,
            threads: traced,
            buffer_kb,
            evidence,
            distribution,
            metrics,
        }
    }

    /// The trace events: the sched ones by default; bad names are reported and left out.
    fn trace_events(&mut self, events: &Option<Vec<Spanned<String>>>) -> Vec<String> {
        match events {
            None => SCHED_EVENTS.iter().map(|s| s.to_string()).collect(),
            Some(v) => v
                .iter()
                .filter_map(|e| {
                    let n = e.get_ref();
                    let ok = !n.is_empty()
                        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/')
                        && n.matches('/').count() <= 1;
                    if !ok {
                        self.err(e.span().start, format!("'{n}' is not a trace event name (e.g. sched_switch or ipi/ipi_send_cpu)"));
                    }
                    ok.then(|| n.clone())
                })
                .collect(),
        }
    }

    /// A thread named by the trace (base name or instance), reported when the rig has no
    /// such thread; kept as written either way.
    fn thread_ref(&mut self, s: &Spanned<String>) -> String {
        let t = s.get_ref();
        let known = self.threads.is_empty()
            || self
                .threads
                .iter()
                .any(|n| n == t.split('.').next().unwrap_or(t));
        if !known {
            self.err(
                s.span().start,
                format!(
                    "no thread '{}' in this rig; threads: {}",
                    s.get_ref(),
                    self.threads.join(", ")
                ),
            );
        }
        s.get_ref().clone()
    }

    /// One `[instruments.trace.metrics.NAME]`: None when its `of`/`above` are bad (its
    /// thread is checked either way).
    fn trace_metric(&mut self, name: &str, m: &Spanned<TraceMetricDef>) -> Option<TraceMetric> {
        let md = m.get_ref();
        let above = md
            .above
            .as_ref()
            .map(|a| (a.span().start, parse_duration(a.get_ref())));
        let of = match (md.of.get_ref().as_str(), above) {
            ("intervals_above", Some((_, Ok(ns)))) => Some(Of::IntervalsAbove(ns)),
            ("intervals_above", Some((at, Err(e)))) => {
                self.err(at, e);
                None
            }
            ("intervals_above", None) => {
                self.err(
                    m.span().start,
                    format!("metric '{name}': intervals_above needs above = \"8 ms\" (a duration)"),
                );
                None
            }
            (_, Some((at, _))) => {
                self.err(
                    at,
                    format!("metric '{name}': 'above' belongs to of = \"intervals_above\""),
                );
                None
            }
            ("intervals", None) => Some(Of::Intervals),
            ("interval_p50", None) => Some(Of::IntervalQuantile(0.5)),
            ("interval_p99", None) => Some(Of::IntervalQuantile(0.99)),
            ("interval_max", None) => Some(Of::IntervalQuantile(1.0)),
            ("migrations", None) => Some(Of::Migrations),
            ("preempted_migrate_disabled", None) => Some(Of::PreemptedMigrateDisabled),
            ("boost_to_run", None) => Some(Of::BoostToRun),
            (other, None) => {
                self.err(md.of.span().start, format!(
                    "unknown trace metric '{other}': use intervals_above, intervals, interval_p50, interval_p99, interval_max, migrations, preempted_migrate_disabled or boost_to_run"
                ));
                None
            }
        };
        let thread = md.thread.as_ref().map(|s| self.thread_ref(s));
        let of = of?;
        Some(TraceMetric {
            name: name.to_string(),
            of,
            thread,
            description: md.description.clone().unwrap_or_default(),
        })
    }
}
