//! `xrunrig watch`'s results: a directory `watch-<UTC>/` beside a musician's own JACK or
//! PipeWire session with events.jsonl (one line per xrun: when, the late thread, the
//! cause, the culprit), summary.json (counts by cause, culprit and client; what the
//! flight recorder could do), run.json (a `RunDoc` with its `watch` section), and one
//! folder per kept xrun under `xruns/` holding its trace window.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// summary.json's `kind` for a watch directory.
pub const KIND_WATCH: &str = "watch";
/// The folder of kept trace windows, one `NNNN/` per xrun.
pub const XRUNS_DIR: &str = "xruns";
/// A kept window's trace, in the kernel's text format (ftrace `trace` output), which
/// the Perfetto UI and `trace-cmd`'s text tools read.
pub const WINDOW_TRACE: &str = "trace.txt";
/// A kept window as trace-cmd's trace.dat (what KernelShark opens), when trace-cmd is
/// installed.
pub const WINDOW_DAT: &str = "trace.dat";

/// A thread named in an explanation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// The thread's name as the trace saw it.
    pub comm: String,
    pub tid: i32,
    /// Its process (thread group) id, when the thread still existed to be asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// Its process's name (/proc/PID/comm), likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// Policy and priority as the trace and /proc give them: "FIFO 99", "RR 50",
    /// "nice 0" (FIFO where the trace alone cannot tell FIFO from RR).
    pub policy: String,
}

impl Task {
    /// `'comm' (pid N, FIFO 99)`: how sentences name a task.
    pub fn named(&self) -> String {
        format!("'{}' (tid {}, {})", self.comm, self.tid, self.policy)
    }
}

/// What made an xrun, as one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// The late thread ran the whole time: its own work was too much ("self").
    #[serde(rename = "self")]
    SelfWork,
    /// Runnable but not running: another task held its CPU.
    Preempted,
    /// Blocked on a PI lock whose holder could not run.
    PiChain,
    /// Blocked on something (a lock, I/O) that another task released late.
    Blocked,
    /// Interrupt handlers (hard or soft) took its CPU.
    Interrupt,
    /// Woken, but its CPU stayed idle past the deadline: the wake-up came late (deep
    /// idle, a delayed IPI or timer). The idle task is never named a culprit.
    LateWakeup,
    /// Nothing in the trace stands out (the server itself, the driver, the clock).
    Unexplained,
    /// The flight recorder was off (no root, no tracefs) or blind at that moment.
    NoTrace,
}

impl Cause {
    pub fn label(self) -> &'static str {
        match self {
            Cause::SelfWork => "self",
            Cause::Preempted => "preempted",
            Cause::PiChain => "pi-chain",
            Cause::Blocked => "blocked",
            Cause::Interrupt => "interrupt",
            Cause::LateWakeup => "late-wakeup",
            Cause::Unexplained => "unexplained",
            Cause::NoTrace => "no-trace",
        }
    }
}

/// One xrun (events.jsonl line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct XrunEvent {
    /// 1, 2, ... in the order seen.
    pub index: u64,
    /// Wall-clock time (UTC, ms) the server reported it.
    pub wall: String,
    /// CLOCK_MONOTONIC ns the report arrived (the trace clock).
    pub mono_ns: u64,
    /// What reported it: "jack" (the server's xrun callback) or "pipewire" (the
    /// profiler's per-node status, as pw-top counts ERR).
    pub source: String,
    /// The client (JACK name or PipeWire node) the report names, where it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The late cycle: its start and deadline (CLOCK_MONOTONIC ns), and the server's
    /// frame time at its start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle_start_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<u64>,
    pub cause: Cause,
    /// One sentence; xruns with the same cause and culprit have the same sentence.
    pub why: String,
    /// The thread that was late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<Task>,
    /// The thread of the late thread's own process it was waiting for, when the story
    /// goes through one (a DAW's worker the process callback waits on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_for: Option<Task>,
    /// Who or what made it late (the late thread itself for "self").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub culprit: Option<Task>,
    /// For an interrupt: which (`irq 45 nvme0q1`, `softirq NET_RX`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupt: Option<String>,
    /// For a PI chain: the lock's holder, and its priority as boosted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<Task>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boost: Option<String>,
    /// How the late thread spent the cycle (ns): running, runnable, asleep, and
    /// interrupt handlers on its CPU.
    #[serde(default)]
    pub running_ns: u64,
    #[serde(default)]
    pub runnable_ns: u64,
    #[serde(default)]
    pub asleep_ns: u64,
    #[serde(default)]
    pub interrupt_ns: u64,
    /// How long the culprit held the CPU, the lock or the thread (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub culprit_ns: Option<u64>,
    /// The kept window's folder under `xruns/` (None: not kept, `--keep` reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
}

/// What the flight recorder could do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Recorder {
    /// "snapshot" (the kernel's snapshot buffer: no blind time), "live-read" (no
    /// snapshot, the ring read while it records: no blind time), "stop-read-rearm"
    /// (tracing stops while a window is read), or "off".
    pub mode: String,
    /// Why it is off, in one line with what to do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_reason: Option<String>,
    #[serde(default)]
    pub instance: String,
    #[serde(default)]
    pub buffer_kb: u32,
    #[serde(default)]
    pub events: Vec<String>,
    /// Events asked for that this kernel does not have.
    #[serde(default)]
    pub missing_events: Vec<String>,
    /// The window kept around each xrun (ns before and after the report).
    #[serde(default)]
    pub before_ns: u64,
    #[serde(default)]
    pub after_ns: u64,
    /// Total time tracing was stopped to read windows, and the longest stop.
    #[serde(default)]
    pub blind_ns: u64,
    #[serde(default)]
    pub blind_max_ns: u64,
    /// Events the ring buffer overwrote before they could be kept, summed.
    #[serde(default)]
    pub lost_events: u64,
}

/// summary.json of a watch directory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchSummary {
    pub format: u32,
    /// Always `KIND_WATCH`.
    pub kind: String,
    /// "jack" or "pipewire".
    pub server: String,
    #[serde(default)]
    pub server_name: Option<String>,
    pub rate: u32,
    pub period: u32,
    pub duration_s: f64,
    /// Cycles the passive client saw.
    pub cycles: u64,
    pub xruns: u64,
    /// Xruns given a cause other than no-trace and unexplained.
    pub explained: u64,
    pub windows_kept: u64,
    pub by_cause: BTreeMap<String, u64>,
    /// `named()` culprit -> count, most first.
    pub by_culprit: Vec<(String, u64)>,
    /// The late thread's process (or client) -> count.
    pub by_client: BTreeMap<String, u64>,
    pub recorder: Recorder,
    /// How the run ended: "duration", "interrupted" (Ctrl-C), "server gone", or an error.
    pub ended: String,
    /// watch's own CPU time (user + system, all its threads), seconds: what watching cost.
    #[serde(default)]
    pub cpu_s: f64,
    /// The server's own count of errors where it keeps one: under PipeWire, what pw-top's
    /// ERR column shows (each profiler sample of a node not finished; a late cycle can
    /// be sampled twice). `xruns` counts late cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_errors: Option<u64>,
    /// Xruns whose culprit was watch's own process (its reading of the trace held the
    /// CPU the late thread needed): what watching itself cost the session.
    #[serde(default)]
    pub watch_culprit: u64,
    /// Server reports of a late cycle already counted (JACK can notify one late cycle
    /// several times): one late cycle is one xrun, however many reports it brought.
    #[serde(default)]
    pub reports_merged: u64,
    /// Xruns counted here but not written to events.jsonl: it holds at most
    /// `EVENTS_MAX` lines, so that a session of days has a bounded file.
    #[serde(default)]
    pub events_unwritten: u64,
}

/// The most lines watch writes to events.jsonl (about 1 kB each: ~100 MB); xruns past
/// it are counted in summary.json (`events_unwritten`), not written.
pub const EVENTS_MAX: u64 = 100_000;

/// run.json's `watch` section: what was watched.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchSection {
    pub server: String,
    #[serde(default)]
    pub server_name: Option<String>,
    pub rate: u32,
    pub period: u32,
    /// The clients seen (JACK client names with their pid where the server gives it).
    #[serde(default)]
    pub clients: Vec<Client>,
    /// The real-time threads found, server's and clients'.
    #[serde(default)]
    pub threads: Vec<Task>,
    pub recorder: Recorder,
    /// CLOCK_MONOTONIC minus the server's time base (ns), as measured.
    #[serde(default)]
    pub clock_offset_ns: i64,
    /// The options watch ran with (before/after window, ring, keep).
    #[serde(default)]
    pub options: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Client {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_round_trips_and_names_its_cause_as_a_word() {
        let e = XrunEvent {
            index: 1,
            wall: "2026-12-01T14:03:22.418Z".into(),
            mono_ns: 5,
            source: "jack".into(),
            client: None,
            cycle_start_ns: Some(1),
            deadline_ns: Some(2),
            frame: Some(256),
            cause: Cause::SelfWork,
            why: "w".into(),
            late: None,
            waited_for: None,
            culprit: None,
            interrupt: None,
            holder: None,
            boost: None,
            running_ns: 1,
            runnable_ns: 0,
            asleep_ns: 0,
            interrupt_ns: 0,
            culprit_ns: None,
            window: None,
        };
        let t = serde_json::to_string(&e).unwrap();
        assert!(t.contains("\"cause\":\"self\""), "{t}");
        assert_eq!(serde_json::from_str::<XrunEvent>(&t).unwrap(), e);
        let c: Cause = serde_json::from_str("\"pi-chain\"").unwrap();
        assert_eq!(c, Cause::PiChain);
        assert_eq!(Cause::PiChain.label(), "pi-chain");
    }
}
