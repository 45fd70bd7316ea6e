//! A synthetic `xrunrig watch` directory, shaped exactly as the engine writes one
//! (summary.json, run.json with its watch section, events.jsonl, kept windows under
//! `xruns/`), with xruns whose causes, culprits and figures a test knows: a FIFO 99
//! spinner preempting a DAW's audio thread (4 on CPU1, 1 on CPU0), a PI chain through a disk thread kept
//! off its CPU by a backup job (3 behind the hog, 1 with the holder itself running), a
//! softsynth's own overrun (2), interrupt handlers (1), one unexplained and one without
//! a trace. Sentences repeat out of order, so grouping has to gather them. SYNTHETIC,
//! not a measurement.

use super::{LABEL, write};
use results::run::{Cpus, RunDoc};
use results::watch::{
    Cause, Client, KIND_WATCH, Recorder, Task, WatchSection, WatchSummary, XrunEvent,
};
use std::collections::BTreeMap;
use std::path::Path;

pub const RATE: u32 = 48_000;
pub const PERIOD: u32 = 256;
pub const DURATION_S: f64 = 60.0;
/// 60 s of 256-frame periods at 48 kHz.
pub const CYCLES: u64 = 11_250;
pub const STARTED: &str = "2026-01-01T00:00:00Z";
/// CLOCK_MONOTONIC at `STARTED` (ns).
pub const MONO_AT_START: u64 = 1_000_000_000_000;
/// watch's own CPU time over the minute (s).
pub const CPU_S: f64 = 0.42;
/// The windows kept (watch's `--keep`).
pub const KEEP: u64 = 4;

fn task(comm: &str, tid: i32, pid: i32, process: &str, policy: &str) -> Task {
    Task {
        comm: comm.into(),
        tid,
        pid: Some(pid),
        process: Some(process.into()),
        policy: policy.into(),
    }
}

pub fn daw() -> Task {
    task("ardour-audio", 3001, 3000, "ardour", "FIFO 70")
}
pub fn synth() -> Task {
    task("zyn-synth", 4101, 4100, "zynaddsubfx", "FIFO 60")
}
pub fn spinner() -> Task {
    task("spin", 4242, 4242, "spin", "FIFO 99")
}
pub fn worker() -> Task {
    task("ardour-fx", 3002, 3000, "ardour", "FIFO 65")
}
pub fn holder() -> Task {
    task("disk-io", 3100, 3000, "ardour", "FIFO 10")
}
pub fn hog() -> Task {
    task("backup", 5000, 5000, "backup", "FIFO 90")
}

pub const SPIN_WHY: &str = "'ardour-audio' (tid 3001, FIFO 70) was runnable but not running: CPU1 ran 'spin' (tid 4242, FIFO 99)";
/// The spinner once more, after it moved to CPU0: the same culprit and cause, another
/// sentence.
pub const SPIN_CPU0_WHY: &str = "'ardour-audio' (tid 3001, FIFO 70) was runnable but not running: CPU0 ran 'spin' (tid 4242, FIFO 99)";
/// The DAW's callback waited for its worker, which waited on the disk thread's lock.
pub const PI_HOG_WHY: &str = "'ardour-audio' (tid 3001, FIFO 70) waited for 'ardour-fx' (tid 3002, FIFO 65), which waited on a PI lock held by 'disk-io' (tid 3100, FIFO 10): boosted to FIFO 65 but queued on CPU0 behind 'backup' (FIFO 90); got out when 'backup' slept and it ran again on CPU0";
pub const PI_RUN_WHY: &str = "'ardour-audio' (tid 3001, FIFO 70) waited on a PI lock held by 'disk-io' (tid 3100, FIFO 10): boosted to FIFO 70 and running on CPU0 at the deadline";
pub const SELF_WHY: &str =
    "'zyn-synth' (tid 4101, FIFO 60) was running its own work through the deadline (self)";
pub const IRQ_WHY: &str =
    "'ardour-audio' (tid 3001, FIFO 70): its CPU1 was taken by interrupt handlers: irq 45 nvme0q1";
pub const UNEXPLAINED_WHY: &str = "no client's process thread was still in its cycle at the deadline, nor the server's (a late driver or timer, or a cause outside the trace)";
pub const NO_TRACE_WHY: &str =
    "not explained: the trace window does not cover the cycle (raise --buffer-kb)";

/// One xrun as a test states it: when (s after the start), the cause, the sentence, the
/// late thread and its client, the culprit, and the figures in µs (culprit, running,
/// runnable, asleep, interrupts).
struct Spec {
    t_s: f64,
    cause: Cause,
    why: &'static str,
    late: Option<(Task, &'static str)>,
    culprit: Option<Task>,
    interrupt: Option<&'static str>,
    /// culprit, running, runnable, asleep, interrupts (µs).
    us: (Option<u64>, u64, u64, u64, u64),
}

fn specs() -> Vec<Spec> {
    use Cause::*;
    let spin = |t_s: f64, held: u64, ran: u64| Spec {
        t_s,
        cause: Preempted,
        why: if t_s == 30.0 { SPIN_CPU0_WHY } else { SPIN_WHY },
        late: Some((daw(), "ardour")),
        culprit: Some(spinner()),
        interrupt: None,
        us: (Some(held), ran, held, 0, 0),
    };
    let pi_hog = |t_s: f64, held: u64| Spec {
        t_s,
        cause: PiChain,
        why: PI_HOG_WHY,
        late: Some((daw(), "ardour")),
        culprit: Some(hog()),
        interrupt: None,
        us: (Some(held), 20, 0, 5_300, 0),
    };
    let own = |t_s: f64, ran: u64| Spec {
        t_s,
        cause: SelfWork,
        why: SELF_WHY,
        late: Some((synth(), "zynaddsubfx")),
        culprit: Some(synth()),
        interrupt: None,
        us: (Some(ran), ran, 0, 0, 0),
    };
    vec![
        spin(2.0, 4_000, 0),
        pi_hog(3.5, 5_300),
        spin(7.25, 5_200, 100),
        own(11.0, 6_000),
        spin(14.0, 5_330, 0),
        Spec {
            t_s: 19.5,
            cause: Interrupt,
            why: IRQ_WHY,
            late: Some((daw(), "ardour")),
            culprit: None,
            interrupt: Some("irq 45 nvme0q1"),
            us: (Some(2_100), 2_900, 0, 0, 2_400),
        },
        pi_hog(22.0, 5_100),
        Spec {
            t_s: 22.2,
            cause: PiChain,
            why: PI_RUN_WHY,
            late: Some((daw(), "ardour")),
            culprit: Some(holder()),
            interrupt: None,
            us: (Some(4_800), 25, 0, 5_280, 0),
        },
        spin(30.0, 3_100, 2_200),
        Spec {
            t_s: 33.3,
            cause: Unexplained,
            why: UNEXPLAINED_WHY,
            late: None,
            culprit: None,
            interrupt: None,
            us: (None, 0, 0, 0, 0),
        },
        own(41.0, 5_900),
        pi_hog(47.5, 5_330),
        spin(52.0, 5_000, 0),
        Spec {
            t_s: 58.75,
            cause: NoTrace,
            why: NO_TRACE_WHY,
            late: None,
            culprit: None,
            interrupt: None,
            us: (None, 0, 0, 0, 0),
        },
    ]
}

/// RFC 3339 with µs for `STARTED` plus `t_s` (within the first hour).
fn wall(t_s: f64) -> String {
    let us = (t_s * 1e6).round() as u64;
    format!(
        "2026-01-01T00:{:02}:{:02}.{:06}Z",
        us / 60_000_000,
        us / 1_000_000 % 60,
        us % 1_000_000
    )
}

/// The xruns, as events.jsonl lines. The recorder froze once for the xruns 7 and 8
/// (0.2 s apart: they share `xruns/0007`), and kept `KEEP` windows in all: those of
/// xruns 1, 2, 3 and 7 (and 8).
pub fn xruns() -> Vec<XrunEvent> {
    let period_ns = PERIOD as u64 * 1_000_000_000 / RATE as u64;
    let mut window_of: BTreeMap<u64, &str> = BTreeMap::new();
    for (i, w) in [
        (1, "xruns/0001"),
        (2, "xruns/0002"),
        (3, "xruns/0003"),
        (7, "xruns/0007"),
        (8, "xruns/0007"),
    ] {
        window_of.insert(i, w);
    }
    specs()
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let index = i as u64 + 1;
            let mono_ns = MONO_AT_START + (s.t_s * 1e9).round() as u64;
            // The late cycle ended just before the report.
            let deadline = mono_ns - 1_000_000;
            let ns = |us: u64| us * 1000;
            XrunEvent {
                index,
                wall: wall(s.t_s),
                mono_ns,
                source: "jack".into(),
                client: s.late.as_ref().map(|l| l.1.to_string()),
                cycle_start_ns: Some(deadline - period_ns),
                deadline_ns: Some(deadline),
                frame: Some(((s.t_s * RATE as f64) as u64 / PERIOD as u64) * PERIOD as u64),
                cause: s.cause,
                why: s.why.into(),
                late: s.late.map(|l| l.0),
                waited_for: (s.why == PI_HOG_WHY).then(worker),
                culprit: s.culprit,
                interrupt: s.interrupt.map(String::from),
                holder: (s.cause == Cause::PiChain).then(holder),
                boost: (s.cause == Cause::PiChain).then(|| {
                    if s.why == PI_HOG_WHY {
                        "FIFO 65"
                    } else {
                        "FIFO 70"
                    }
                    .to_string()
                }),
                running_ns: ns(s.us.1),
                runnable_ns: ns(s.us.2),
                asleep_ns: ns(s.us.3),
                interrupt_ns: ns(s.us.4),
                culprit_ns: s.us.0.map(ns),
                window: window_of.get(&index).map(|w| w.to_string()),
            }
        })
        .collect()
}

fn recorder() -> Recorder {
    Recorder {
        mode: "stop-read-rearm".into(),
        off_reason: None,
        instance: "/sys/kernel/tracing/instances/xrunrig-1234".into(),
        buffer_kb: 4096,
        events: vec!["sched/sched_switch".into(), "sched/sched_pi_setprio".into()],
        missing_events: vec![],
        before_ns: 500_000_000,
        after_ns: 100_000_000,
        blind_ns: 184_000_000,
        blind_max_ns: 52_500_000,
        lost_events: 0,
    }
}

/// summary.json as the engine's `Sink::finish` makes it from the xruns.
pub fn summary(x: &[XrunEvent]) -> WatchSummary {
    let mut by_cause: BTreeMap<String, u64> = BTreeMap::new();
    let mut culprits: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_client: BTreeMap<String, u64> = BTreeMap::new();
    for e in x {
        *by_cause.entry(e.cause.label().into()).or_default() += 1;
        if let Some(c) = &e.culprit {
            *culprits.entry(c.named()).or_default() += 1;
        }
        *by_client
            .entry(
                e.client
                    .clone()
                    .unwrap_or_else(|| "(no late thread found)".into()),
            )
            .or_default() += 1;
    }
    let mut by_culprit: Vec<(String, u64)> = culprits.into_iter().collect();
    by_culprit.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    WatchSummary {
        format: results::FORMAT_VERSION,
        kind: KIND_WATCH.into(),
        server: "jack".into(),
        server_name: Some("synthetic".into()),
        rate: RATE,
        period: PERIOD,
        duration_s: DURATION_S,
        cycles: CYCLES,
        xruns: x.len() as u64,
        explained: x
            .iter()
            .filter(|e| !matches!(e.cause, Cause::Unexplained | Cause::NoTrace))
            .count() as u64,
        windows_kept: KEEP,
        by_cause,
        by_culprit,
        by_client,
        recorder: recorder(),
        ended: "interrupted".into(),
        cpu_s: CPU_S,
        server_errors: None,
        watch_culprit: 0,
        reports_merged: 0,
        events_unwritten: 0,
    }
}

/// run.json of the synthetic watch: marked synthetic, with one field no version knows.
pub fn run_json() -> serde_json::Value {
    let mut options = BTreeMap::new();
    for (k, v) in [
        ("before", "500.0 ms"),
        ("after", "100.0 ms"),
        ("ring", "16384"),
        ("keep", "4"),
        ("buffer_kb", "4096"),
    ] {
        options.insert(k.to_string(), v.to_string());
    }
    let run = RunDoc {
        format: results::FORMAT_VERSION,
        xrunrig_version: Some("synthetic".into()),
        command: vec![
            "xrunrig".into(),
            "watch".into(),
            "--server".into(),
            "synthetic".into(),
        ],
        started: Some(STARTED.into()),
        ended: Some("2026-01-01T00:01:01Z".into()),
        host: Some("synthetic-host".into()),
        kernel: Some(super::kernel()),
        cpus: Some(Cpus {
            model: Some("synthetic CPU".into()),
            count: Some(2),
            online: Some("{0-1}".into()),
        }),
        // Ctrl-C is how a watch without --duration ends.
        interrupted: true,
        knobs_original: vec![
            "trace instance /sys/kernel/tracing/instances/xrunrig-1234 removed".into(),
        ],
        watch: Some(WatchSection {
            server: "jack".into(),
            server_name: Some("synthetic".into()),
            rate: RATE,
            period: PERIOD,
            clients: vec![
                Client {
                    name: "ardour".into(),
                    pid: Some(3000),
                },
                Client {
                    name: "zynaddsubfx".into(),
                    pid: Some(4100),
                },
            ],
            threads: vec![
                task("jackd", 2001, 2000, "jackd", "FIFO 80"),
                daw(),
                synth(),
            ],
            recorder: recorder(),
            clock_offset_ns: 0,
            options,
        }),
        ..Default::default()
    };
    let mut v = serde_json::to_value(&run).expect("run.json serialises");
    v["some_future_field"] = serde_json::json!({"reports": "must ignore this"});
    v
}

/// A kept window: a few lines of ftrace text, labelled synthetic.
fn window_text(index: u64) -> String {
    format!(
        "# tracer: nop\n# {LABEL}\n#\n\
         \x20ardour-audio-3001  [001] d..2.  1002.000000: sched_switch: prev_comm=ardour-audio prev_pid=3001 prev_prio=29 prev_state=R+ ==> next_comm=spin next_pid=4242 next_prio=0\n\
         \x20ardour-audio-3001  [001] .....  1002.001000: tracing_mark_write: xrunrig xrun {index}\n"
    )
}

/// Writes summary.json, run.json, events.jsonl, the kept windows and a README into
/// `dir`.
pub fn generate(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let x = xruns();
    let mut lines = String::new();
    for e in &x {
        lines += &serde_json::to_string(e).map_err(|e| e.to_string())?;
        lines.push('\n');
    }
    write(&dir.join(results::EVENTS_JSONL), &lines)?;
    for e in &x {
        if let Some(w) = &e.window {
            let d = dir.join(w);
            std::fs::create_dir_all(&d)
                .map_err(|err| format!("cannot create {}: {err}", d.display()))?;
            let p = d.join(results::watch::WINDOW_TRACE);
            if !p.exists() {
                write(&p, &window_text(e.index))?;
            }
        }
    }
    let s = serde_json::to_string_pretty(&summary(&x)).map_err(|e| e.to_string())?;
    write(&dir.join(results::SUMMARY_JSON), &(s + "\n"))?;
    let r = serde_json::to_string_pretty(&run_json()).map_err(|e| e.to_string())?;
    write(&dir.join(results::RUN_JSON), &(r + "\n"))?;
    write(
        &dir.join("README"),
        &format!("{LABEL}.\nMade by analysis::synth::watch::generate.\n"),
    )
}
