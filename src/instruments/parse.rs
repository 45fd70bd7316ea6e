//! Parsing trace_pipe text lines (the default tracefs output format) into typed records.
//! Only the sched and ipi events the instruments enable are decoded; others are kept
//! as `Ev::Other` so a capture with extra events still parses.

/// One line of trace output.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The task that was current when the event fired, and its pid.
    pub comm: String,
    pub pid: i32,
    pub cpu: u32,
    /// The latency-format column, e.g. `d..3.`: irqs-off, need-resched,
    /// hardirq/softirq, preempt depth, migrate-disable depth.
    pub flags: String,
    /// Trace clock time in ns.
    pub ts_ns: u64,
    pub ev: Ev,
}

impl Record {
    /// The event fired in hard interrupt context (`h` or `H` in the third column).
    pub fn in_hardirq(&self) -> bool {
        matches!(self.flags.as_bytes().get(2), Some(b'h' | b'H'))
    }
    /// The event fired in interrupt context, hard or soft (`h`, `H`, `s` in the third
    /// column): its current task did not do it, an interrupt on its CPU did.
    pub fn in_interrupt(&self) -> bool {
        matches!(self.flags.as_bytes().get(2), Some(b'h' | b'H' | b's'))
    }
    /// Migrate-disable depth from the fifth column ('.' = 0); None if absent.
    pub fn migrate_disable(&self) -> Option<u32> {
        match self.flags.as_bytes().get(4)? {
            b'.' => Some(0),
            c if c.is_ascii_hexdigit() => (*c as char).to_digit(16),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Ev {
    Switch {
        prev_pid: i32,
        prev_prio: i32,
        /// `R`, `R+`, `S`, `D`, `X`...: R means preempted while runnable.
        prev_state: String,
        next_pid: i32,
        next_prio: i32,
    },
    Wakeup {
        pid: i32,
        prio: i32,
        target_cpu: u32,
    },
    /// `sched_waking`: fires in the waker's context (the record's pid is the waker).
    Waking {
        pid: i32,
        prio: i32,
        target_cpu: u32,
    },
    /// `irq_handler_entry` / `irq_handler_exit` (a hard interrupt's handler on this CPU).
    IrqEntry {
        irq: u32,
        name: String,
    },
    IrqExit {
        irq: u32,
    },
    /// `softirq_entry` / `softirq_exit` (`action` as the kernel names it: TIMER, NET_RX...).
    SoftirqEntry {
        vec: u32,
        action: String,
    },
    SoftirqExit {
        vec: u32,
    },
    Migrate {
        pid: i32,
        prio: i32,
        orig_cpu: u32,
        dest_cpu: u32,
    },
    PiSetprio {
        pid: i32,
        oldprio: i32,
        newprio: i32,
    },
    /// `ipi_send_cpu` (one target) or `ipi_send_cpumask` (targets as a CPU list).
    IpiSend {
        targets: Vec<u32>,
        callsite: String,
        callback: String,
    },
    /// `csd_queue_cpu`: a function queued to run on `cpu` (sent by IPI if needed).
    CsdQueue {
        cpu: u32,
        func: String,
    },
    Other(String),
}

/// The value after ` key=` (or `key=` at the start) up to the next space.
fn field<'a>(rest: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(i) = rest[from..].find(key) {
        let at = from + i;
        // `[action=TIMER]` (softirq events) brackets a field.
        let before_ok = at == 0 || matches!(rest.as_bytes()[at - 1], b' ' | b'[');
        let after = &rest[at + key.len()..];
        if before_ok && after.starts_with('=') {
            let v = &after[1..];
            return Some(v.split(' ').next().unwrap_or(""));
        }
        from = at + key.len();
    }
    None
}

fn num<T: std::str::FromStr>(rest: &str, key: &str) -> Option<T> {
    field(rest, key)?.parse().ok()
}

/// Seconds with a fraction ("927.126945") to ns.
fn parse_ts(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.').unwrap_or((s, ""));
    let sec: u64 = sec.parse().ok()?;
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let f: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    Some(sec * 1_000_000_000 + f * 10u64.pow(9 - frac.len() as u32))
}

/// A symbol as the kernel prints it (`rto_push_irq_work_func+0x0/0x50`) without offset.
fn symbol(s: &str) -> String {
    s.split('+').next().unwrap_or(s).to_string()
}

/// Parses one line; None for comments, blank lines and lines of another format.
pub fn parse_line(line: &str) -> Option<Record> {
    let line = line.trim_end();
    if line.trim_start().starts_with('#') || line.trim().is_empty() {
        return None;
    }
    // "  comm-pid  [003] d..3.  52.286120: event: fields". The comm may hold spaces and
    // dashes, so anchor on the CPU column: the last " [digits] " before the timestamp.
    let bytes = line.as_bytes();
    let mut cpu_at = None;
    let mut i = 0;
    while let Some(p) = line[i..].find(" [") {
        let s = i + p + 2;
        let e = line[s..].find(']').map(|x| s + x);
        if let Some(e) = e
            && e > s
            && bytes[s..e].iter().all(|b| b.is_ascii_digit())
            && line[e + 1..].starts_with(' ')
        {
            cpu_at = Some((i + p, s, e));
            break;
        }
        i = s;
    }
    let (head_end, s, e) = cpu_at?;
    let head = line[..head_end].trim();
    let (comm, pid) = head.rsplit_once('-')?;
    let pid: i32 = pid.trim().parse().ok()?;
    let cpu: u32 = line[s..e].parse().ok()?;
    let mut rest = line[e + 1..].trim_start();
    // The flags column is present with the irq-info option (default); it is not a
    // timestamp because it has no ':' at the end.
    let mut flags = String::new();
    let first = rest.split(' ').next()?;
    if !first.ends_with(':') {
        flags = first.to_string();
        rest = rest[first.len()..].trim_start();
    }
    let ts_tok = rest.split(' ').next()?;
    let ts_ns = parse_ts(ts_tok.strip_suffix(':')?)?;
    rest = rest[ts_tok.len()..].trim_start();
    let ev_tok = rest.split(' ').next()?;
    let name = ev_tok.strip_suffix(':')?;
    let f = rest[ev_tok.len()..].trim_start();
    let ev = match name {
        "sched_switch" => {
            let (a, b) = f.split_once(" ==> ")?;
            Ev::Switch {
                prev_pid: num(a, "prev_pid")?,
                prev_prio: num(a, "prev_prio")?,
                prev_state: field(a, "prev_state")?.to_string(),
                next_pid: num(b, "next_pid")?,
                next_prio: num(b, "next_prio")?,
            }
        }
        "sched_wakeup" | "sched_wakeup_new" => Ev::Wakeup {
            pid: num(f, "pid")?,
            prio: num(f, "prio")?,
            target_cpu: num(f, "target_cpu")?,
        },
        "sched_waking" => Ev::Waking {
            pid: num(f, "pid")?,
            prio: num(f, "prio")?,
            target_cpu: num(f, "target_cpu")?,
        },
        "irq_handler_entry" => Ev::IrqEntry {
            irq: num(f, "irq")?,
            name: field(f, "name")?.to_string(),
        },
        "irq_handler_exit" => Ev::IrqExit {
            irq: num(f, "irq")?,
        },
        "softirq_entry" => Ev::SoftirqEntry {
            vec: num(f, "vec")?,
            action: field(f, "action")?.trim_end_matches(']').to_string(),
        },
        "softirq_exit" => Ev::SoftirqExit {
            vec: num(f, "vec")?,
        },
        "sched_migrate_task" => Ev::Migrate {
            pid: num(f, "pid")?,
            prio: num(f, "prio")?,
            orig_cpu: num(f, "orig_cpu")?,
            dest_cpu: num(f, "dest_cpu")?,
        },
        "sched_pi_setprio" => Ev::PiSetprio {
            pid: num(f, "pid")?,
            oldprio: num(f, "oldprio")?,
            newprio: num(f, "newprio")?,
        },
        "ipi_send_cpu" => Ev::IpiSend {
            targets: vec![num(f, "cpu")?],
            callsite: symbol(field(f, "callsite")?),
            callback: symbol(field(f, "callback")?),
        },
        "csd_queue_cpu" => Ev::CsdQueue {
            cpu: num(f, "cpu")?,
            func: symbol(field(f, "func")?),
        },
        "ipi_send_cpumask" => Ev::IpiSend {
            targets: crate::sys::parse_cpu_list(field(f, "cpumask")?)
                .ok()?
                .into_iter()
                .map(|c| c as u32)
                .collect(),
            callsite: symbol(field(f, "callsite")?),
            callback: symbol(field(f, "callback")?),
        },
        other => Ev::Other(other.to_string()),
    };
    Some(Record {
        comm: comm.trim().to_string(),
        pid,
        cpu,
        flags,
        ts_ns,
        ev,
    })
}

/// Parses a whole capture; returns the records and the count of lines that did not parse.
pub fn parse_text(text: &str) -> (Vec<Record>, usize) {
    let mut out = Vec::new();
    let mut bad = 0;
    for l in text.lines() {
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        match parse_line(l) {
            Some(r) => out.push(r),
            None => bad += 1,
        }
    }
    // trace_pipe merges the per-CPU buffers in time order; sort anyway so a capture
    // concatenated from per-CPU files is handled too (stable: ties keep file order).
    out.sort_by_key(|r| r.ts_ns);
    (out, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waking_irq_and_softirq_lines() {
        let r = parse_line("  holder-300 [000] d..3. 100.000100: sched_waking: comm=client pid=200 prio=34 target_cpu=001").unwrap();
        assert_eq!(r.pid, 300);
        assert_eq!(
            r.ev,
            Ev::Waking {
                pid: 200,
                prio: 34,
                target_cpu: 1
            }
        );
        let r =
            parse_line("  <idle>-0 [001] d.h1. 100.000200: irq_handler_entry: irq=45 name=nvme0q1")
                .unwrap();
        assert_eq!(
            r.ev,
            Ev::IrqEntry {
                irq: 45,
                name: "nvme0q1".into()
            }
        );
        assert!(r.in_hardirq());
        let r =
            parse_line("  <idle>-0 [001] d.h1. 100.000300: irq_handler_exit: irq=45 ret=handled")
                .unwrap();
        assert_eq!(r.ev, Ev::IrqExit { irq: 45 });
        let r =
            parse_line("  client-200 [001] ..s1. 100.000400: softirq_entry: vec=1 [action=TIMER]")
                .unwrap();
        assert_eq!(
            r.ev,
            Ev::SoftirqEntry {
                vec: 1,
                action: "TIMER".into()
            }
        );
        let r =
            parse_line("  client-200 [001] ..s1. 100.000500: softirq_exit: vec=1 [action=TIMER]")
                .unwrap();
        assert_eq!(r.ev, Ev::SoftirqExit { vec: 1 });
    }

    #[test]
    fn switch_line() {
        let r = parse_line("     hog 1-2-122   [001] d..2.  53.803264: sched_switch: prev_comm=hog 1-2 prev_pid=122 prev_prio=0 prev_state=R+ ==> next_comm=owner next_pid=115 next_prio=9").unwrap();
        assert_eq!(r.comm, "hog 1-2");
        assert_eq!(r.pid, 122);
        assert_eq!(r.cpu, 1);
        assert_eq!(r.ts_ns, 53_803_264_000);
        assert_eq!(r.flags, "d..2.");
        assert_eq!(
            r.ev,
            Ev::Switch {
                prev_pid: 122,
                prev_prio: 0,
                prev_state: "R+".into(),
                next_pid: 115,
                next_prio: 9
            }
        );
        assert!(!r.in_hardirq());
        assert_eq!(r.migrate_disable(), Some(0));
    }

    #[test]
    fn migrate_pi_and_ipi_lines() {
        let m = parse_line("hog-122 [001] d.h2. 53.803264: sched_migrate_task: comm=owner pid=115 prio=9 orig_cpu=1 dest_cpu=3").unwrap();
        assert!(m.in_hardirq());
        assert_eq!(
            m.ev,
            Ev::Migrate {
                pid: 115,
                prio: 9,
                orig_cpu: 1,
                dest_cpu: 3
            }
        );
        let p = parse_line("  waiter-114 [002] d..3. 52.286120: sched_pi_setprio: comm=owner pid=115 oldprio=89 newprio=9").unwrap();
        assert_eq!(
            p.ev,
            Ev::PiSetprio {
                pid: 115,
                oldprio: 89,
                newprio: 9
            }
        );
        let i = parse_line("  bash-10143   [001] ...1.   927.126945: ipi_send_cpu: cpu=0 callsite=irq_work_queue_on+0x20/0x60 callback=rto_push_irq_work_func+0x0/0x10").unwrap();
        assert_eq!(
            i.ev,
            Ev::IpiSend {
                targets: vec![0],
                callsite: "irq_work_queue_on".into(),
                callback: "rto_push_irq_work_func".into()
            }
        );
        let md = parse_line("pgrep-9 [001] d..21 10.000001: sched_switch: prev_comm=pgrep prev_pid=9 prev_prio=89 prev_state=R+ ==> next_comm=w next_pid=8 next_prio=9").unwrap();
        assert_eq!(md.migrate_disable(), Some(1));
    }

    #[test]
    fn junk_is_counted_not_fatal() {
        let (r, bad) = parse_text(
            "# tracer: nop\n\ngarbage line\nx-1 [000] .... 1.5: sched_wakeup: comm=a pid=3 prio=120 target_cpu=001\n",
        );
        assert_eq!(bad, 1);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].ts_ns, 1_500_000_000);
    }
}
