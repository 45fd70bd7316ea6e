//! What a thread was doing, read from a sched trace: its state at a moment, how it
//! spent a window (running, runnable behind whom, asleep, interrupts on its CPU,
//! migrations), the PI owner it blocked on, and the owner's story (boosted or not,
//! queued behind whom, how it got out). One explainer for every thread, whoever made
//! it: the livefx rig's misses (`livefx::why`) and a musician's xruns (`watch`) both
//! tell their stories with it. Pure functions over parsed records.

use super::intervals::prio_text;
use super::parse::{Ev, Record};
use std::collections::HashMap;

/// A trace sorted by time, with each pid's command name as the trace saw it.
pub struct Trace<'a> {
    pub recs: &'a [Record],
    comms: HashMap<i32, &'a str>,
}

impl<'a> Trace<'a> {
    pub fn new(recs: &'a [Record]) -> Trace<'a> {
        let comms = recs.iter().map(|r| (r.pid, r.comm.as_str())).collect();
        Trace { recs, comms }
    }

    /// The command name the trace saw for `pid` ("pid N" if it never ran in it).
    pub fn comm(&self, pid: i32) -> String {
        self.comms
            .get(&pid)
            .map_or(format!("pid {pid}"), |c| c.to_string())
    }

    /// The records in `[a, b]`.
    pub fn between(&self, a: u64, b: u64) -> &'a [Record] {
        let i = self.recs.partition_point(|r| r.ts_ns < a);
        let j = self.after(b).max(i);
        &self.recs[i..j]
    }

    /// Index of the first record after `t`.
    fn after(&self, t: u64) -> usize {
        self.recs.partition_point(|r| r.ts_ns <= t)
    }
}

/// A kernel priority as a policy and priority ("FIFO 60", "nice 0"): the trace does not
/// tell FIFO from RR, and audio threads are FIFO far more often.
pub fn fifo(prio: i32) -> String {
    prio_text(prio).replace("RT ", "FIFO ")
}

/// A thread's state at one moment.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    Running {
        cpu: u32,
        since: u64,
    },
    /// Ready to run on `cpu` but not running: preempted or woken and waiting.
    Runnable {
        cpu: u32,
        since: u64,
    },
    /// Off CPU by its own doing: `S` (waiting for something), `D` (uninterruptible).
    Asleep {
        cpu: u32,
        state: String,
        since: u64,
    },
    /// The trace has nothing on it before that moment.
    Unknown,
}

/// Replays `tid`'s transitions up to `at` (inclusive).
pub fn state_at(t: &Trace, tid: i32, at: u64) -> State {
    let mut s = State::Unknown;
    for r in &t.recs[..t.after(at)] {
        step(&mut s, tid, r);
    }
    s
}

/// One record's effect on `tid`'s state.
fn step(s: &mut State, tid: i32, r: &Record) {
    // A record in the context of a woken tid: it got on that CPU (its switch-in may be
    // lost). Only from runnable: a record of a task never seen switched is no story.
    if r.pid == tid && !matches!(r.ev, Ev::Switch { .. }) && matches!(s, State::Runnable { .. }) {
        *s = State::Running {
            cpu: r.cpu,
            since: r.ts_ns,
        };
    }
    match &r.ev {
        Ev::Switch {
            prev_pid,
            prev_state,
            next_pid,
            ..
        } => {
            if *prev_pid == tid {
                *s = if prev_state.starts_with('R') {
                    State::Runnable {
                        cpu: r.cpu,
                        since: r.ts_ns,
                    }
                } else {
                    State::Asleep {
                        cpu: r.cpu,
                        state: prev_state.clone(),
                        since: r.ts_ns,
                    }
                };
            }
            if *next_pid == tid {
                *s = State::Running {
                    cpu: r.cpu,
                    since: r.ts_ns,
                };
            }
        }
        Ev::Waking {
            pid, target_cpu, ..
        }
        | Ev::Wakeup {
            pid, target_cpu, ..
        } if *pid == tid => {
            // Waking comes first (the waker's decision); wakeup only places it.
            match s {
                State::Asleep { .. } | State::Unknown => {
                    *s = State::Runnable {
                        cpu: *target_cpu,
                        since: r.ts_ns,
                    }
                }
                State::Runnable { cpu, .. } => *cpu = *target_cpu,
                State::Running { .. } => {}
            }
        }
        Ev::Migrate { pid, dest_cpu, .. } if *pid == tid => match s {
            State::Runnable { cpu, .. } | State::Asleep { cpu, .. } => *cpu = *dest_cpu,
            _ => {}
        },
        _ => {}
    }
}

/// Time stolen on a CPU by one interrupt source.
#[derive(Debug, Clone, PartialEq)]
pub struct Stolen {
    /// `irq 45 nvme0q1` or `softirq TIMER`.
    pub what: String,
    pub ns: u64,
}

/// A task that held a CPU while the thread waited for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Behind {
    pub pid: i32,
    pub comm: String,
    /// Kernel priority (as the trace prints it: 0..99 RT, 100..139 normal).
    pub prio: i32,
    pub cpu: u32,
    pub ns: u64,
}

/// How a thread spent a window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spent {
    pub running_ns: u64,
    pub runnable_ns: u64,
    pub asleep_ns: u64,
    pub unknown_ns: u64,
    /// Who ran on its CPU while it was runnable, most time first.
    pub behind: Vec<Behind>,
    /// Interrupt handlers on its CPU while it ran or waited there, most time first.
    pub stolen: Vec<Stolen>,
    /// (time, from, to, in hardirq, by pid).
    pub migrations: Vec<(u64, u32, u32, bool, i32)>,
    /// When it was last woken inside the window (sched_waking), and by whom.
    pub woken: Option<(u64, i32)>,
}

/// How `tid` spent `[a, b]`.
pub fn spent(t: &Trace, tid: i32, a: u64, b: u64) -> Spent {
    let mut out = Spent::default();
    if b <= a {
        return out;
    }
    // Each CPU's current task (pid, prio), and open interrupt handlers per CPU.
    let mut cur: HashMap<u32, (i32, i32)> = HashMap::new();
    let mut prio_of: HashMap<i32, i32> = HashMap::new();
    let mut irq_open: HashMap<u32, Vec<(String, u64)>> = HashMap::new();
    let mut behind: HashMap<(i32, u32), (i32, u64)> = HashMap::new();
    let mut stolen: HashMap<String, u64> = HashMap::new();
    let mut s = State::Unknown;
    let mut last = a;
    let end = t.after(b);
    let account = |s: &State,
                   cur: &HashMap<u32, (i32, i32)>,
                   behind: &mut HashMap<(i32, u32), (i32, u64)>,
                   out: &mut Spent,
                   from: u64,
                   to: u64| {
        if to <= from {
            return;
        }
        let d = to - from;
        match s {
            State::Running { .. } => out.running_ns += d,
            State::Runnable { cpu, .. } => {
                out.runnable_ns += d;
                if let Some(&(pid, prio)) = cur.get(cpu) {
                    let e = behind.entry((pid, *cpu)).or_insert((prio, 0));
                    e.0 = prio;
                    e.1 += d;
                }
            }
            State::Asleep { .. } => out.asleep_ns += d,
            State::Unknown => out.unknown_ns += d,
        }
    };
    for r in &t.recs[..end] {
        let ts = r.ts_ns;
        if ts > a {
            account(&s, &cur, &mut behind, &mut out, last.max(a), ts.min(b));
            last = ts;
        }
        let my_cpu = match &s {
            State::Running { cpu, .. } | State::Runnable { cpu, .. } => Some(*cpu),
            _ => None,
        };
        match &r.ev {
            Ev::Switch {
                prev_pid,
                prev_prio,
                next_pid,
                next_prio,
                ..
            } => {
                prio_of.insert(*prev_pid, *prev_prio);
                prio_of.insert(*next_pid, *next_prio);
                cur.insert(r.cpu, (*next_pid, *next_prio));
            }
            // Every record names the task current on its CPU. A switch out of idle the
            // trace lost (seen here: a FIFO task a timer woke on an idle CPU, its
            // switch-in missing while its own records follow) is known from the next
            // record on that CPU. Only from idle or unknown: switches are trusted first.
            _ if r.pid != 0 && cur.get(&r.cpu).is_none_or(|c| c.0 == 0) => {
                let prio = prio_of.get(&r.pid).copied().unwrap_or(120);
                cur.insert(r.cpu, (r.pid, prio));
            }
            _ => {}
        }
        match &r.ev {
            Ev::Waking { pid, prio, .. } | Ev::Wakeup { pid, prio, .. } => {
                prio_of.insert(*pid, *prio);
            }
            _ => {}
        }
        match &r.ev {
            Ev::IrqEntry { irq, name } => irq_open
                .entry(r.cpu)
                .or_default()
                .push((format!("irq {irq} {name}"), ts)),
            Ev::SoftirqEntry { action, .. } => irq_open
                .entry(r.cpu)
                .or_default()
                .push((format!("softirq {action}"), ts)),
            Ev::IrqExit { .. } | Ev::SoftirqExit { .. } => {
                if let Some((what, since)) = irq_open.entry(r.cpu).or_default().pop()
                    && my_cpu == Some(r.cpu)
                    && ts > a
                {
                    *stolen.entry(what).or_default() += ts - since.max(a);
                }
            }
            Ev::Waking { pid, .. } if *pid == tid && ts >= a => {
                out.woken = Some((ts, r.pid));
            }
            Ev::Migrate {
                pid,
                orig_cpu,
                dest_cpu,
                ..
            } if *pid == tid && ts >= a => {
                out.migrations
                    .push((ts, *orig_cpu, *dest_cpu, r.in_hardirq(), r.pid));
            }
            _ => {}
        }
        step(&mut s, tid, r);
    }
    account(&s, &cur, &mut behind, &mut out, last.max(a), b);
    let mut bv: Vec<Behind> = behind
        .into_iter()
        .filter(|((pid, _), _)| *pid != tid)
        .map(|((pid, cpu), (prio, ns))| Behind {
            pid,
            comm: t.comm(pid),
            prio,
            cpu,
            ns,
        })
        .collect();
    bv.sort_by(|x, y| y.ns.cmp(&x.ns).then(x.pid.cmp(&y.pid)));
    out.behind = bv;
    let mut sv: Vec<Stolen> = stolen
        .into_iter()
        .map(|(what, ns)| Stolen { what, ns })
        .collect();
    sv.sort_by(|x, y| y.ns.cmp(&x.ns).then(x.what.cmp(&y.what)));
    out.stolen = sv;
    out
}

/// A PI wait: the owner a waiter boosted, its priority before and after, and when.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PiWait {
    pub owner: i32,
    pub oldprio: i32,
    pub newprio: i32,
    pub at: u64,
}

/// The PI owner `tid` blocked on at or before `at`: the task a `sched_pi_setprio` fired
/// in `tid`'s context boosted (the kernel boosts the lock's owner when a
/// higher-priority waiter blocks on a PI futex), with the boost (old, new prio) and
/// when. None when no boost was needed or the lock is not PI.
pub fn pi_owner(t: &Trace, tid: i32, since: u64, at: u64) -> Option<PiWait> {
    t.recs[..t.after(at)]
        .iter()
        .rev()
        .find_map(|r| match &r.ev {
            Ev::PiSetprio {
                pid,
                oldprio,
                newprio,
            } if r.pid == tid
                && *pid != tid
                && r.ts_ns + 1_000_000 >= since
                && newprio < oldprio =>
            {
                Some(PiWait {
                    owner: *pid,
                    oldprio: *oldprio,
                    newprio: *newprio,
                    at: r.ts_ns,
                })
            }
            _ => None,
        })
}

/// What the trace says of a lock holder at `deadline`: boost, where it sat behind whom,
/// how it got out; and how long it was off CPU. The text starts with a space.
pub fn holder_story(t: &Trace, tid: i32, deadline: u64) -> (String, Option<u64>) {
    let before = t.after(deadline);
    let (past, after) = t.recs.split_at(before);
    let mut s = String::new();
    let boost = past.iter().rev().find_map(|r| match &r.ev {
        Ev::PiSetprio {
            pid,
            oldprio,
            newprio,
        } if *pid == tid => Some((*oldprio, *newprio)),
        _ => None,
    });
    match boost {
        Some((o, n)) if n < o => s.push_str(&format!(" boosted to {}", fifo(n))),
        Some((o, n)) => s.push_str(&format!(
            " not boosted (back to {} from {})",
            fifo(n),
            fifo(o)
        )),
        None => s.push_str(" never boosted"),
    }
    // The holder's last switch before the deadline: out (queued or asleep) or in.
    let last = past
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, r)| match &r.ev {
            Ev::Switch {
                prev_pid,
                prev_state,
                next_pid,
                next_prio,
                ..
            } if *prev_pid == tid => Some((i, Some((prev_state.clone(), *next_pid, *next_prio)))),
            Ev::Switch { next_pid, .. } if *next_pid == tid => Some((i, None)),
            _ => None,
        });
    let Some((at_i, out)) = last else {
        s.push_str(", not seen switching in the trace");
        return (s, None);
    };
    let at = &past[at_i];
    let Some((state, next_pid, next_prio)) = out else {
        s.push_str(&format!(" and running on CPU{} at the deadline", at.cpu));
        return (s, None);
    };
    if !state.starts_with('R') {
        s.push_str(&format!(" but asleep (state {state}) on CPU{}", at.cpu));
        return (s, None);
    }
    // Moved while queued (before the deadline): it sat on the CPU it was moved to.
    let moved = past[at_i..].iter().rev().find_map(|r| match &r.ev {
        Ev::Migrate { pid, dest_cpu, .. } if *pid == tid => Some(*dest_cpu),
        _ => None,
    });
    let queued_on = moved.unwrap_or(at.cpu);
    if moved.is_some() {
        s.push_str(&format!(" but queued on CPU{queued_on}"));
    } else {
        s.push_str(&format!(
            " but queued on CPU{} behind '{}' ({})",
            at.cpu,
            t.comm(next_pid),
            fifo(next_prio)
        ));
    }
    // How it got out: the first move or switch-in after the switch-out.
    let out = t.recs[at_i + 1..].iter().find_map(|r| match &r.ev {
            Ev::Migrate {
                pid,
                orig_cpu,
                dest_cpu,
                ..
            } if *pid == tid && r.ts_ns > deadline => Some(if r.in_hardirq() {
                format!("; got out when the push IPI moved it CPU{orig_cpu}->CPU{dest_cpu} (in hardirq)")
            } else {
                format!(
                    "; got out when '{}' moved it CPU{orig_cpu}->CPU{dest_cpu} (not in hardirq: a pull or wake-up placement)",
                    t.comm(r.pid)
                )
            }),
            Ev::Switch {
                prev_pid,
                prev_state,
                next_pid,
                ..
            } if *next_pid == tid => Some(format!(
                "; got out when '{}' {} and it ran again on CPU{}",
                t.comm(*prev_pid),
                if prev_state.starts_with('R') {
                    "was preempted"
                } else {
                    "slept"
                },
                r.cpu
            )),
            _ => None,
        });
    let back_in = after.iter().find_map(|r| match &r.ev {
        Ev::Switch { next_pid, .. } if *next_pid == tid => Some(r.ts_ns),
        _ => None,
    });
    match out {
        Some(o) => s.push_str(&o),
        None => s.push_str("; still off CPU when the capture ended"),
    }
    (s, back_in.map(|b| b - at.ts_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instruments::parse::parse_text;

    // client (pid 200, FIFO 65 = prio 34) on CPU1: woken at 100.000, runs 1 ms, then the
    // spinner (pid 300, FIFO 99 = prio 0) takes CPU1 for 10 ms; an nvme irq hits CPU1
    // while the client waits.
    const PREEMPTED: &str = "\
 jackd-100 [000] d..3. 100.000000: sched_waking: comm=client pid=200 prio=34 target_cpu=001
 <idle>-0 [001] d..2. 100.000010: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=client next_pid=200 next_prio=34
 client-200 [001] d..2. 100.001000: sched_switch: prev_comm=client prev_pid=200 prev_prio=34 prev_state=R+ ==> next_comm=spinner next_pid=300 next_prio=0
 spinner-300 [001] d.h1. 100.002000: irq_handler_entry: irq=45 name=nvme0q1
 spinner-300 [001] d.h1. 100.002500: irq_handler_exit: irq=45 ret=handled
 spinner-300 [001] d..2. 100.011000: sched_switch: prev_comm=spinner prev_pid=300 prev_prio=0 prev_state=S ==> next_comm=client next_pid=200 next_prio=34
 client-200 [001] d..2. 100.011500: sched_switch: prev_comm=client prev_pid=200 prev_prio=34 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";

    #[test]
    fn a_preempted_thread_is_runnable_behind_the_spinner() {
        let (r, bad) = parse_text(PREEMPTED);
        assert_eq!(bad, 0);
        let t = Trace::new(&r);
        let s = spent(&t, 200, 100_000_000_000, 100_005_333_000);
        assert_eq!(s.running_ns, 990_000);
        assert_eq!(s.runnable_ns, 10_000 + 4_333_000);
        assert_eq!(s.behind[0].pid, 300);
        assert_eq!(s.behind[0].comm, "spinner");
        assert_eq!(s.behind[0].prio, 0);
        assert_eq!(s.behind[0].ns, 4_333_000);
        assert_eq!(s.woken, Some((100_000_000_000, 100)));
        assert_eq!(
            s.stolen,
            vec![Stolen {
                what: "irq 45 nvme0q1".into(),
                ns: 500_000
            }]
        );
        assert_eq!(
            state_at(&t, 200, 100_005_333_000),
            State::Runnable {
                cpu: 1,
                since: 100_001_000_000
            }
        );
        assert_eq!(
            state_at(&t, 200, 100_011_200_000),
            State::Running {
                cpu: 1,
                since: 100_011_000_000
            }
        );
        assert!(matches!(
            state_at(&t, 200, 100_012_000_000),
            State::Asleep { .. }
        ));
        assert_eq!(state_at(&t, 200, 99_000_000_000), State::Unknown);
    }

    #[test]
    fn a_pi_wait_names_the_owner() {
        let t = "\
 client-200 [001] d..3. 50.000100: sched_pi_setprio: comm=holder pid=400 oldprio=89 newprio=34
 client-200 [001] d..2. 50.000110: sched_switch: prev_comm=client prev_pid=200 prev_prio=34 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
        let (r, _) = parse_text(t);
        let tr = Trace::new(&r);
        assert_eq!(
            pi_owner(&tr, 200, 50_000_000_000, 50_005_000_000),
            Some(PiWait {
                owner: 400,
                oldprio: 89,
                newprio: 34,
                at: 50_000_100_000
            })
        );
        // Not for another thread, and not before the window's start (less a ms).
        assert_eq!(pi_owner(&tr, 201, 50_000_000_000, 50_005_000_000), None);
        assert_eq!(pi_owner(&tr, 200, 50_002_000_000, 50_005_000_000), None);
    }
}
