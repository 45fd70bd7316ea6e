//! `wake --trace`: where each wake-up's time goes, from tracefs, for the clock thread
//! and for cyclictest alike. A private tracefs instance on the measured CPU records
//! `hrtimer_start`/`hrtimer_expire_entry` (when the timer was due and when its interrupt
//! ran), `sched_wakeup`/`sched_switch` (when the thread was woken and got the CPU) and
//! `cpu_idle` (which idle state the CPU was in when the timer fired). The instance is
//! its own buffer: other users of tracefs are not disturbed.

use std::path::PathBuf;

const TRACEFS: &str = "/sys/kernel/tracing";

const EVENTS: [&str; 5] = [
    "sched/sched_wakeup",
    "sched/sched_switch",
    "timer/hrtimer_start",
    "timer/hrtimer_expire_entry",
    "power/cpu_idle",
];

pub struct Tracer {
    dir: PathBuf,
}

fn write(p: PathBuf, v: &str) -> Result<(), String> {
    std::fs::write(&p, v).map_err(|e| format!("cannot write {}: {e}", p.display()))
}

impl Tracer {
    /// A tracefs instance recording only `cpu`, on the CLOCK_MONOTONIC trace clock.
    pub fn new(cpu: usize) -> Result<Tracer, String> {
        let root = PathBuf::from(TRACEFS);
        if !root.join("instances").is_dir() {
            // Mounting is harmless when it is already mounted elsewhere.
            let _ = std::process::Command::new("mount")
                .args(["-t", "tracefs", "none", TRACEFS])
                .status();
        }
        let dir = root
            .join("instances")
            .join(format!("livefx-bench-{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| {
            format!(
                "cannot create a tracefs instance {} ({e}): run as root with tracefs",
                dir.display()
            )
        })?;
        let t = Tracer { dir };
        write(t.dir.join("tracing_on"), "0")?;
        write(t.dir.join("trace_clock"), "mono")?;
        write(t.dir.join("buffer_size_kb"), "16384")?;
        write(t.dir.join("tracing_cpumask"), &cpu_mask(cpu))?;
        for e in EVENTS {
            write(t.dir.join("events").join(e).join("enable"), "1")?;
        }
        Ok(t)
    }
    pub fn start(&self) -> Result<(), String> {
        write(self.dir.join("trace"), "")?;
        write(self.dir.join("tracing_on"), "1")
    }
    /// Stops recording and returns what was recorded since `start`.
    pub fn stop(&self) -> Result<String, String> {
        write(self.dir.join("tracing_on"), "0")?;
        std::fs::read_to_string(self.dir.join("trace"))
            .map_err(|e| format!("cannot read the trace: {e}"))
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        let _ = write(self.dir.join("tracing_on"), "0");
        for e in EVENTS {
            let _ = write(self.dir.join("events").join(e).join("enable"), "0");
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// tracing_cpumask's hex format, comma-separated in 32-bit groups.
fn cpu_mask(cpu: usize) -> String {
    let groups = cpu / 32 + 1;
    (0..groups)
        .rev()
        .map(|g| format!("{:08x}", if g == cpu / 32 { 1u32 << (cpu % 32) } else { 0 }))
        .collect::<Vec<_>>()
        .join(",")
}

/// One traced wake-up, ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wake {
    /// Timer interrupt ran this long after the requested expiry (hrtimer `now` − softexpires).
    pub irq_late: u64,
    /// Timer slack the kernel added (expires − softexpires).
    pub slack: u64,
    /// From the timer interrupt to the thread on the CPU (sched_switch), µs-precise.
    pub irq_to_run: u64,
    /// Requested expiry to the thread on the CPU.
    pub due_to_run: u64,
    /// From on the CPU to its next timer armed: the thread's own work per cycle.
    pub on_cpu: Option<u64>,
    /// The CPU's idle state when the timer fired (None: it was running something).
    pub idle: Option<u32>,
}

struct Line<'a> {
    comm: &'a str,
    pid: i32,
    ts: u64,
    event: &'a str,
    fields: &'a str,
}

/// `  comm-pid  [001] d.h2. 30306.214803: event: fields`; comm may hold spaces and dashes.
fn line(l: &str) -> Option<Line<'_>> {
    let close = l.find("] ")?;
    let open = l[..close].rfind(" [")?;
    let (comm, pid) = l[..open].trim().rsplit_once('-')?;
    let mut rest = l[close + 2..].trim_start().splitn(3, ' ');
    let _flags = rest.next()?;
    let ts = rest.next()?.strip_suffix(':')?;
    let (sec, usec) = ts.split_once('.')?;
    let ts = sec.parse::<u64>().ok()? * 1_000_000_000 + usec.parse::<u64>().ok()? * 1_000;
    let (event, fields) = rest.next()?.split_once(": ")?;
    Some(Line {
        comm,
        pid: pid.trim().parse().ok()?,
        ts,
        event,
        fields,
    })
}

/// `key=value` in a trace line's fields (the key preceded by a space or at the start).
fn field<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}=");
    let mut from = 0;
    while let Some(i) = fields[from..].find(&pat) {
        let at = from + i;
        if at == 0 || fields.as_bytes()[at - 1] == b' ' {
            let v = &fields[at + pat.len()..];
            return Some(v.split_whitespace().next().unwrap_or(""));
        }
        from = at + pat.len();
    }
    None
}

fn num<T: std::str::FromStr>(fields: &str, key: &str) -> Option<T> {
    field(fields, key)?.parse().ok()
}

/// The wake-ups of the thread named `comm` that sleeps on absolute hrtimers
/// (`clock_nanosleep(TIMER_ABSTIME)`), in trace order.
pub fn wakes(text: &str, comm: &str) -> Vec<Wake> {
    let mut target: Option<i32> = None;
    // (hrtimer, softexpires, expires) armed by the target; then the wake-up in progress.
    let mut armed: Option<(String, u64, u64)> = None;
    let mut fired: Option<(u64, u64, u64, Option<u32>)> = None; // due, now, slack, idle
    let mut ran: Option<usize> = None; // index of the last wake-up, until it re-arms
    let mut ran_at = 0u64;
    let mut idle: Option<u32> = None;
    let mut out = Vec::new();
    for l in text.lines().filter_map(line) {
        match l.event {
            "cpu_idle" => {
                idle = num::<u32>(l.fields, "state").filter(|&s| s != u32::MAX);
            }
            "hrtimer_start" => {
                let mine = l.comm == comm
                    && field(l.fields, "function") == Some("hrtimer_wakeup")
                    && field(l.fields, "mode").is_some_and(|m| m.starts_with("ABS"));
                if !mine || target.is_some_and(|t| t != l.pid) {
                    continue;
                }
                target = Some(l.pid);
                if let Some(i) = ran.take() {
                    let w: &mut Wake = &mut out[i];
                    w.on_cpu = Some(l.ts.saturating_sub(ran_at));
                }
                if let (Some(h), Some(s), Some(e)) = (
                    field(l.fields, "hrtimer"),
                    num::<u64>(l.fields, "softexpires"),
                    num::<u64>(l.fields, "expires"),
                ) {
                    armed = Some((h.to_string(), s, e));
                }
            }
            "hrtimer_expire_entry" => {
                if let Some((h, s, e)) = &armed
                    && field(l.fields, "hrtimer") == Some(h.as_str())
                    && let Some(now) = num::<u64>(l.fields, "now")
                {
                    fired = Some((*s, now, e.saturating_sub(*s), idle));
                    armed = None;
                }
            }
            "sched_switch" => {
                if target.is_some() && num::<i32>(l.fields, "next_pid") == target {
                    idle = None;
                    if let Some((due, now, slack, at_idle)) = fired.take() {
                        out.push(Wake {
                            irq_late: now.saturating_sub(due),
                            slack,
                            irq_to_run: l.ts.saturating_sub(now),
                            due_to_run: l.ts.saturating_sub(due),
                            on_cpu: None,
                            idle: at_idle,
                        });
                        ran = Some(out.len() - 1);
                        ran_at = l.ts;
                    }
                } else if field(l.fields, "next_comm").is_some() {
                    idle = None;
                }
            }
            _ => {}
        }
    }
    out
}

/// Percentile `q` of `v` (sorted here), ns → µs.
fn pct_us(v: &mut [u64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_unstable();
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i] as f64 / 1e3
}

/// The breakdown table's row for one side: median / p99 of each part, in µs.
pub fn row(name: &str, w: &[Wake]) -> String {
    let col = |f: &dyn Fn(&Wake) -> Option<u64>| {
        let mut v: Vec<u64> = w.iter().filter_map(f).collect();
        let m = pct_us(&mut v, 0.5);
        let p = pct_us(&mut v, 0.99);
        format!("{m:>6.1} /{p:>7.1}")
    };
    let n = w.len().max(1) as f64;
    let share = |s: Option<u32>| 100.0 * w.iter().filter(|x| x.idle == s).count() as f64 / n;
    format!(
        "{name:<11} {:>6} {} {} {} {} {}   {:>18.0}% / {:.0}% / {:.0}%",
        w.len(),
        col(&|x| Some(x.irq_late)),
        col(&|x| Some(x.irq_to_run)),
        col(&|x| Some(x.due_to_run)),
        col(&|x| x.on_cpu),
        col(&|x| Some(x.slack)),
        share(Some(1)),
        share(Some(0)),
        share(None),
    )
}

/// The breakdown table's header, in `row`'s widths.
pub fn header() -> String {
    let cols = [
        "timer late",
        "irq → on CPU",
        "due → on CPU",
        "on-CPU/cycle",
        "timer slack",
    ];
    let mut h = format!("{:<11} {:>6}", "traced", "wakes");
    for c in cols {
        h += &format!(" {c:>15}");
    }
    h + "   CPU at expiry: halt / poll / busy\n(µs, median / p99)"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two periods of cyclictest as tracefs printed them on this machine (trimmed), with
    /// an idle CPU before the second.
    const TRACE: &str = "\
      cyclictest-14807   [001] d..1. 30306.214827: hrtimer_start: hrtimer=00000000be96b43a function=hrtimer_wakeup expires=30306215764804 softexpires=30306215764804 mode=ABS was_armed=0
      cyclictest-14807   [001] d..2. 30306.214847: sched_switch: prev_comm=cyclictest prev_pid=14807 prev_prio=19 prev_state=S ==> next_comm=opt cgu.15 next_pid=14345 next_prio=130
      opt cgu.15-14345   [001] d.h.. 30306.215797: local_timer_entry: vector=236
      opt cgu.15-14345   [001] d.h.. 30306.215799: hrtimer_expire_entry: hrtimer=00000000be96b43a function=hrtimer_wakeup now=30306215797487
      opt cgu.15-14345   [001] dNh3. 30306.215802: sched_wakeup: comm=cyclictest pid=14807 prio=19 target_cpu=001
      opt cgu.15-14345   [001] d..2. 30306.215819: sched_switch: prev_comm=opt cgu.15 prev_pid=14345 prev_prio=130 prev_state=R ==> next_comm=cyclictest next_pid=14807 next_prio=19
      cyclictest-14807   [001] d..1. 30306.215825: hrtimer_start: hrtimer=00000000ab2d43c7 function=hrtimer_wakeup expires=30306216764804 softexpires=30306216764804 mode=ABS was_armed=0
      cyclictest-14807   [001] d..2. 30306.215832: sched_switch: prev_comm=cyclictest prev_pid=14807 prev_prio=19 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d..1. 30306.215840: cpu_idle: state=1 cpu_id=1
          <idle>-0       [001] d.h1. 30306.216790: hrtimer_expire_entry: hrtimer=00000000ab2d43c7 function=hrtimer_wakeup now=30306216790000
          <idle>-0       [001] d..1. 30306.216795: cpu_idle: state=4294967295 cpu_id=1
          <idle>-0       [001] d..2. 30306.216800: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=cyclictest next_pid=14807 next_prio=19
      livefx-writer-14750 [001] d..1. 30306.217292: hrtimer_start: hrtimer=00000000362013e9 function=hrtimer_wakeup expires=30306222341936 softexpires=30306222291936 mode=REL was_armed=0
";

    #[test]
    fn splits_each_wake_up() {
        let w = wakes(TRACE, "cyclictest");
        assert_eq!(w.len(), 2, "{w:?}");
        // Due ...215764804, interrupt at ...215797487, on the CPU at ...215819000.
        assert_eq!(w[0].irq_late, 32_683);
        assert_eq!(w[0].irq_to_run, 21_513);
        assert_eq!(w[0].due_to_run, 54_196);
        assert_eq!(w[0].on_cpu, Some(6_000));
        assert_eq!((w[0].slack, w[0].idle), (0, None));
        // The second fired while the CPU was halted (state 1), and never re-armed.
        assert_eq!(
            (w[1].irq_late, w[1].idle, w[1].on_cpu),
            (25_196, Some(1), None)
        );
        assert!(wakes(TRACE, "livefx-clock").is_empty());
    }

    #[test]
    fn masks_and_lines() {
        assert_eq!(cpu_mask(1), "00000002");
        assert_eq!(cpu_mask(33), "00000002,00000000");
        let l = line(
            "   opt cgu.15-14345   [001] d.h.. 30306.215799: hrtimer_expire_entry: hrtimer=1 now=5",
        )
        .unwrap();
        assert_eq!(
            (l.comm, l.pid, l.ts, l.event),
            (
                "opt cgu.15",
                14345,
                30_306_215_799_000,
                "hrtimer_expire_entry"
            )
        );
        assert_eq!(field("comm=a pid=3 next_pid=4", "pid"), Some("3"));
        assert_eq!(field("prev_pid=3 next_pid=4", "pid"), None);
    }
}
