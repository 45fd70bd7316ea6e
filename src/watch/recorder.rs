//! The flight recorder: the scheduler's story (switches, wake-ups, migrations, PI
//! boosts, interrupts, IPIs) recorded all the time into a tracefs instance of xrunrig's
//! own, in overwrite mode, so the ring always holds the last moments; at an xrun the
//! window around it is frozen and kept. Where the kernel has the snapshot buffer
//! (CONFIG_TRACER_SNAPSHOT: Debian's kernels) freezing is a buffer swap and the
//! recorder is never blind; where it has not but reading `trace` need not pause the
//! ring (the `pause-on-trace` option, 0: Linux 5.10 on), the ring is read (consumed,
//! through `trace_pipe`) while it goes on recording, also never blind; else (or with `--no-snapshot`) tracing stops while
//! the buffer is read, then restarts, and the blind time is recorded. The instance is journaled
//! (`instruments::tracefs`): every exit path, and the next start after a kill -9,
//! removes it.

use crate::instruments::tracefs::{Session, write_file};
use std::io::Write;
use std::path::PathBuf;

/// The events asked for, as `system/event`; those the kernel lacks are listed, not fatal.
pub const EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_waking",
    "sched/sched_wakeup",
    "sched/sched_migrate_task",
    "sched/sched_pi_setprio",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "ipi/ipi_send_cpu",
    "ipi/ipi_send_cpumask",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Snapshot,
    /// `trace` read with recording going on (pause-on-trace 0).
    LiveRead,
    StopRead,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Snapshot => "snapshot",
            Mode::LiveRead => "live-read",
            Mode::StopRead => "stop-read-rearm",
        }
    }
}

/// A frozen ring: its text (the kernel's trace format) and how long tracing was off.
pub struct Frozen {
    pub text: String,
    pub blind_ns: u64,
    /// When the freeze happened (CLOCK_MONOTONIC ns).
    pub at_ns: u64,
}

pub struct Recorder {
    /// Before `session`: fields drop in order, and an open file of the instance keeps it
    /// from being removed (EBUSY).
    marker: Option<std::fs::File>,
    session: Session,
    pub mode: Mode,
    pub events: Vec<String>,
    pub missing: Vec<String>,
    pub buffer_kb: u32,
    pub blind_ns: u64,
    pub blind_max_ns: u64,
    /// The last stretches tracing was off (CLOCK_MONOTONIC ns), newest last.
    blind: std::collections::VecDeque<(u64, u64)>,
}

impl Recorder {
    /// Starts recording; Err says in one line why the recorder cannot run and what to do.
    /// `stop_to_read`: stop tracing to read each window whatever the kernel offers.
    pub fn start(buffer_kb: u32, stop_to_read: bool) -> Result<Recorder, String> {
        if !crate::sys::is_root() {
            return Err(
                "not root: the flight recorder needs tracefs (run `xrunrig watch` as root to have \
                 each xrun explained; xruns are still counted and timestamped)"
                    .into(),
            );
        }
        let session = Session::begin(buffer_kb)?;
        let inst = session.instance.clone();
        let mut events = Vec::new();
        let mut missing = Vec::new();
        for ev in EVENTS {
            let enable = inst.join("events").join(ev).join("enable");
            if enable.exists() {
                write_file(&enable, "1")?;
                events.push(ev.to_string());
            } else {
                missing.push(ev.to_string());
            }
        }
        if !events.iter().any(|e| e == "sched/sched_switch") {
            return Err(
                "this kernel has no sched_switch trace event: nothing to explain with".into(),
            );
        }
        // Overwrite: the ring keeps the newest events (a flight recorder), not the oldest.
        let _ = write_file(&inst.join("options/overwrite"), "1");
        // The snapshot buffer is allocated now (echo 1 allocates it and takes a first
        // snapshot), so freezing later allocates nothing.
        let snap = inst.join("snapshot");
        let mode = if stop_to_read {
            Mode::StopRead
        } else if snap.exists() && write_file(&snap, "1").is_ok() {
            Mode::Snapshot
        } else if write_file(&inst.join("options/pause-on-trace"), "0").is_ok() {
            Mode::LiveRead
        } else {
            Mode::StopRead
        };
        let marker = std::fs::OpenOptions::new()
            .write(true)
            .open(inst.join("trace_marker"))
            .ok();
        write_file(&inst.join("tracing_on"), "1")?;
        Ok(Recorder {
            session,
            mode,
            events,
            missing,
            buffer_kb,
            marker,
            blind_ns: 0,
            blind_max_ns: 0,
            blind: std::collections::VecDeque::new(),
        })
    }

    pub fn instance(&self) -> PathBuf {
        self.session.instance.clone()
    }

    /// A line in the trace (`tracing_mark_write`), so a kept window shows the moment.
    pub fn mark(&self, text: &str) {
        if let Some(mut f) = self.marker.as_ref() {
            let _ = f.write_all(text.as_bytes());
        }
    }

    /// Freezes the ring and reads it.
    pub fn freeze(&mut self) -> Result<Frozen, String> {
        let inst = self.session.instance.clone();
        let at_ns = crate::sys::now_ns();
        match self.mode {
            Mode::Snapshot => {
                // A swap: the live ring becomes the snapshot and recording goes on in the
                // spare, so nothing is missed.
                write_file(&inst.join("snapshot"), "1")?;
                let text = read_chunked(&inst.join("snapshot"))
                    .map_err(|e| format!("cannot read the snapshot: {e}"))?;
                Ok(Frozen {
                    text,
                    blind_ns: 0,
                    at_ns,
                })
            }
            Mode::LiveRead => {
                // A consuming read of what came since the last look (`trace_pipe`), not
                // the whole ring again: an xrun costs the events since the one before,
                // and the window's earlier part is in that look's text (the caller keeps
                // it), as after a snapshot swap.
                let cap = (self.buffer_kb as usize) << 10 << 4;
                let text = read_pipe(&inst.join("trace_pipe"), cap)
                    .map_err(|e| format!("cannot read the trace: {e}"))?;
                Ok(Frozen {
                    text,
                    blind_ns: 0,
                    at_ns,
                })
            }
            Mode::StopRead => {
                write_file(&inst.join("tracing_on"), "0")?;
                let t0 = crate::sys::now_ns();
                let read = read_chunked(&inst.join("trace"))
                    .map_err(|e| format!("cannot read the trace: {e}"));
                // Opening `trace` for writing with truncation clears the ring.
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(inst.join("trace"));
                let on = write_file(&inst.join("tracing_on"), "1");
                let t1 = crate::sys::now_ns();
                let blind = t1.saturating_sub(t0);
                if self.blind.len() == 64 {
                    self.blind.pop_front();
                }
                self.blind.push_back((t0, t1));
                self.blind_ns += blind;
                self.blind_max_ns = self.blind_max_ns.max(blind);
                on?;
                Ok(Frozen {
                    text: read?,
                    blind_ns: blind,
                    at_ns,
                })
            }
        }
    }

    /// Whether tracing was off for part of `[a, b]` (a window read without a snapshot
    /// buffer): a story told from such a stretch would miss what happened in it.
    pub fn blind_during(&self, a: u64, b: u64) -> bool {
        self.blind.iter().any(|&(s, e)| s < b && e > a)
    }

    /// Events the ring overwrote (overwrite mode: the oldest, by design), summed.
    pub fn overwritten(&self) -> u64 {
        self.overruns().values().sum()
    }

    /// Each CPU's count of events its ring overwrote so far (`per_cpu/cpuN/stats`).
    pub fn overruns(&self) -> std::collections::BTreeMap<u32, u64> {
        let Ok(rd) = std::fs::read_dir(self.session.instance.join("per_cpu")) else {
            return Default::default();
        };
        rd.flatten()
            .filter_map(|e| {
                let cpu: u32 = e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok()?;
                let s = std::fs::read_to_string(e.path().join("stats")).ok()?;
                let n = s
                    .lines()
                    .find_map(|l| l.strip_prefix("overrun:")?.trim().parse::<u64>().ok())?;
                Some((cpu, n))
            })
            .collect()
    }

    /// Stops and removes the instance.
    pub fn end(mut self) -> Result<Vec<String>, String> {
        // An open file of the instance keeps it from being removed (EBUSY).
        self.marker = None;
        self.session.end()
    }
}

/// Reads a trace file 16 KiB a call. The kernel formats the text inside each read; on a
/// kernel without preemption (preempt=none) one large read is a long stretch no
/// real-time thread on that CPU can interrupt, while each return to user space here is
/// a point where it can run.
fn read_chunked(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Reads what a `trace_pipe` holds now, 16 KiB a call (as `read_chunked`), without
/// waiting for more: until it is empty, or `cap` bytes (events keep coming while it is
/// read; what is left is the next look's).
fn read_pipe(path: &std::path::Path, cap: usize) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    while out.len() < cap {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The lines of a trace text within `[from, to]` (ns), with its header comments: what a
/// kept window holds. Also the first and last timestamps kept.
pub fn window(text: &str, from: u64, to: u64) -> (String, Option<(u64, u64)>) {
    let mut out = String::new();
    let mut span: Option<(u64, u64)> = None;
    for l in text.lines() {
        if l.starts_with('#') {
            out.push_str(l);
            out.push('\n');
            continue;
        }
        // Only the timestamp is read here (a ring is tens of megabytes of text): the
        // lines kept are parsed once, later.
        if let Some(ts) = line_ts(l)
            && ts >= from
            && ts <= to
        {
            out.push_str(l);
            out.push('\n');
            span = Some(span.map_or((ts, ts), |(a, _)| (a, ts)));
        }
    }
    (out, span)
}

/// Each CPU's first timestamp in a trace text from which its events are unbroken: a
/// `CPU:N [LOST M EVENTS]` line (the ring overwrote what the reader had not read yet;
/// `trace_pipe` prints it where the gap is, after the events of its last page read)
/// starts that CPU again at its next event.
pub fn cpu_firsts(text: &str) -> std::collections::BTreeMap<u32, u64> {
    let mut out = std::collections::BTreeMap::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(cpu) = lost_line(l) {
            out.remove(&cpu);
        } else if let Some((cpu, ts)) = line_cpu_ts(l) {
            out.entry(cpu).or_insert(ts);
        }
    }
    out
}

/// The CPUs whose events a trace text says were lost (`CPU:N [LOST M EVENTS]`).
pub fn lost_cpus(text: &str) -> std::collections::BTreeSet<u32> {
    text.lines().filter_map(lost_line).collect()
}

/// N of a `CPU:N [LOST M EVENTS]` line.
fn lost_line(l: &str) -> Option<u32> {
    let rest = l.strip_prefix("CPU:")?;
    let (n, tail) = rest.split_once(' ')?;
    tail.starts_with("[LOST ").then_some(())?;
    n.parse().ok()
}

/// From when a frozen text holds every event of every CPU: a CPU whose ring wrapped
/// since the last look (`wrapped`) lost what came before its first event there, so a
/// story told from earlier would miss that CPU's part. None when no ring wrapped.
pub fn complete_from(
    firsts: &std::collections::BTreeMap<u32, u64>,
    wrapped: &std::collections::BTreeSet<u32>,
) -> Option<(u32, u64)> {
    wrapped
        .iter()
        .filter_map(|c| firsts.get(c).map(|t| (*c, *t)))
        .max_by_key(|x| x.1)
}

/// The timestamp of any trace line (`... [001] d..2. 123.456789: event: ...`).
fn line_ts(l: &str) -> Option<u64> {
    line_cpu_ts(l).map(|x| x.1)
}

/// The CPU and timestamp of any trace line.
fn line_cpu_ts(l: &str) -> Option<(u32, u64)> {
    // After the CPU column (" [003] "), which a command name cannot fake: it is the
    // first " [digits] " in the line (a comm of 15 bytes at most holds no such thing
    // followed by the flags and a timestamp; the full parser anchors the same way).
    let b = l.as_bytes();
    let mut i = 0;
    let (cpu, rest) = loop {
        let p = l[i..].find(" [")? + i + 2;
        let e = l[p..].find(']')? + p;
        if e > p && b[p..e].iter().all(u8::is_ascii_digit) && l[e + 1..].starts_with(' ') {
            break (l[p..e].parse::<u32>().ok()?, &l[e + 1..]);
        }
        i = p;
    };
    rest.split_whitespace()
        .take(2)
        .find_map(|tok| tok.strip_suffix(':').filter(|t| t.contains('.')))
        .and_then(|t| {
            let (s, f) = t.split_once('.')?;
            let s: u64 = s.parse().ok()?;
            if f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let fv: u64 = f.parse().ok()?;
            Some((cpu, s * 1_000_000_000 + fv * 10u64.pow(9 - f.len() as u32)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A busy CPU whose ring wrapped holds only its latest stretch: the text is whole
    /// only from that CPU's first event on, whatever a quiet CPU still holds.
    #[test]
    fn a_wrapped_cpu_makes_the_text_whole_only_from_its_first_event() {
        let t = "# tracer: nop\n\
 <idle>-0 [000] d..2. 90.000000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n\
 cc1-77 [001] d..2. 99.500000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n\
 cc1-77 [001] d..2. 99.600000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n";
        let f = cpu_firsts(t);
        assert_eq!(f.get(&0), Some(&90_000_000_000));
        assert_eq!(f.get(&1), Some(&99_500_000_000));
        let none = std::collections::BTreeSet::new();
        assert_eq!(complete_from(&f, &none), None);
        let one: std::collections::BTreeSet<u32> = [1].into();
        assert_eq!(complete_from(&f, &one), Some((1, 99_500_000_000)));
    }

    /// A consuming read's gap mark: the events of that CPU before it are not continuous
    /// with those after, so its text is whole only from its first event after the mark,
    /// and the CPU counts as wrapped.
    #[test]
    fn a_lost_events_mark_starts_that_cpu_again() {
        let t = " cc1-77 [001] d..2. 90.000000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n\
CPU:1 [LOST 5120 EVENTS]\n\
 cc1-77 [001] d..2. 99.600000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n\
 <idle>-0 [000] d..2. 95.000000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n";
        let f = cpu_firsts(t);
        assert_eq!(f.get(&1), Some(&99_600_000_000));
        assert_eq!(f.get(&0), Some(&95_000_000_000));
        let lost = lost_cpus(t);
        assert_eq!(lost, [1].into());
        assert_eq!(complete_from(&f, &lost), Some((1, 99_600_000_000)));
        assert_eq!(lost_line("CPU:12 [LOST 3 EVENTS]"), Some(12));
        assert_eq!(lost_line("CPU:1 something"), None);
    }

    #[test]
    fn a_window_keeps_its_span_and_the_header() {
        let t = "# tracer: nop\n#\n\
 a-1 [000] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n\
 b-2 [000] ..... 2.000000: tracing_mark_write: xrunrig xrun 1\n\
 b-2 [000] d..2. 3.000000: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=a next_pid=1 next_prio=120\n";
        let (w, span) = window(t, 1_500_000_000, 3_000_000_000);
        assert!(w.starts_with("# tracer: nop\n#\n"));
        assert!(!w.contains(" 1.000000:"));
        assert!(w.contains("tracing_mark_write"), "{w}");
        assert!(w.contains(" 3.000000:"));
        assert_eq!(span, Some((2_000_000_000, 3_000_000_000)));
        assert_eq!(
            line_ts(" b-2 [000] ..... 2.000000: tracing_mark_write: x"),
            Some(2_000_000_000)
        );
    }
}
