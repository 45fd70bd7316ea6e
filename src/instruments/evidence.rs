//! One-line mechanism summaries from a derived trace: for the PI-boost rig, when the
//! owner was boosted (old -> new prio), whether and how it migrated, and on which CPU
//! it resumed. Times are relative to the trial's start.

use super::intervals::{Derived, histogram_ms, lengths, prio_text, quantile};

fn ms(ns: u64, t0: u64) -> String {
    format!("+{:.2} ms", (ns as i64 - t0 as i64) as f64 / 1e6)
}

fn name_of(names: &[(String, i32)], pid: i32) -> String {
    names
        .iter()
        .find(|(_, t)| *t == pid)
        .map(|(n, _)| n.clone())
        .unwrap_or_else(|| format!("pid {pid}"))
}

/// The mechanism line for thread `tid` called `name`: its first PI boost, the
/// migrations after it, and the CPU it next ran on. `t0` is the trial start
/// (trace clock ns); `names` maps the rig's tids to thread names.
/// The end of a mechanism line whose thread did not run again.
pub const NOT_RESUMED: &str = "did not run again in the capture";

pub fn mechanism(d: &Derived, tid: i32, name: &str, t0: u64, names: &[(String, i32)]) -> String {
    let boost = d
        .boosts
        .iter()
        .find(|b| b.tid == tid && b.newprio < b.oldprio);
    let since = boost.map_or(t0, |b| b.ts_ns);
    let mut parts = Vec::new();
    match boost {
        Some(b) => parts.push(format!(
            "boosted prio {}->{} ({} -> {}) at {}",
            b.oldprio,
            b.newprio,
            prio_text(b.oldprio),
            prio_text(b.newprio),
            ms(b.ts_ns, t0)
        )),
        None => parts.push("never boosted".into()),
    }
    // The first time it ran after the boost (or after the start).
    let resumed = d
        .switch_ins
        .iter()
        .find(|(t, ts, _)| *t == tid && *ts >= since);
    let until = resumed.map_or(u64::MAX, |r| r.1);
    let migs: Vec<_> = d
        .migrations
        .iter()
        .filter(|m| m.tid == tid && m.ts_ns >= since && m.ts_ns <= until)
        .collect();
    match migs.first() {
        None => parts.push("never migrated".into()),
        Some(m) => {
            let mut s = format!(
                "migrated CPU{}->CPU{} at {} ({}, in {}'s context)",
                m.orig_cpu,
                m.dest_cpu,
                ms(m.ts_ns, t0),
                if m.hardirq {
                    "in hardirq: push IPI"
                } else {
                    "not in hardirq"
                },
                name_of(names, m.by_pid)
            );
            if migs.len() > 1 {
                s.push_str(&format!(" and {} more time(s)", migs.len() - 1));
            }
            parts.push(s);
        }
    }
    match resumed {
        Some((_, ts, cpu)) => parts.push(format!("resumed on CPU{cpu} at {}", ms(*ts, t0))),
        None => parts.push(NOT_RESUMED.into()),
    }
    format!("{name}: {}", parts.join("; "))
}

/// A one-line interval distribution for threads `tids` called `label`.
pub fn distribution(d: &Derived, tids: &[i32], label: &str, above_ns: Option<u64>) -> String {
    let v = lengths(d, tids);
    let q = |p| quantile(&v, p).map_or("-".into(), |x| format!("{:.2}", x as f64 / 1e6));
    let mut s = format!(
        "{label}: {} runtime intervals, p50 {} ms, p99 {} ms, max {} ms",
        v.len(),
        q(0.5),
        q(0.99),
        q(1.0)
    );
    if let Some(a) = above_ns {
        s.push_str(&format!(
            "; {} above {} ms",
            v.iter().filter(|&&x| x > a).count(),
            a as f64 / 1e6
        ));
    }
    let h: Vec<String> = histogram_ms(&v)
        .iter()
        .map(|(ub, n)| format!("<{ub}:{n}"))
        .collect();
    if !h.is_empty() {
        s.push_str(&format!("; ms buckets {}", h.join(" ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::intervals::derive;
    use super::super::parse::parse_text;
    use super::*;

    const PUSH: &str = "\
 waiter-114 [002] d..3. 52.286120: sched_pi_setprio: comm=owner pid=115 oldprio=89 newprio=9
 hog-122 [001] d.h2. 52.286900: sched_migrate_task: comm=owner pid=115 prio=9 orig_cpu=1 dest_cpu=3
 spare-116 [003] d..2. 52.287000: sched_switch: prev_comm=spare prev_pid=116 prev_prio=39 prev_state=R+ ==> next_comm=owner next_pid=115 next_prio=9
 owner-115 [003] d..2. 52.287300: sched_switch: prev_comm=owner prev_pid=115 prev_prio=9 prev_state=S ==> next_comm=spare next_pid=116 next_prio=39
";

    #[test]
    fn push_mechanism_line() {
        let (r, _) = parse_text(PUSH);
        let names = vec![("owner".to_string(), 115), ("hog".to_string(), 122)];
        let d = derive(&r, &[115, 122]);
        let l = mechanism(&d, 115, "owner", 52_285_120_000, &names);
        assert_eq!(
            l,
            "owner: boosted prio 89->9 (RT 10 -> RT 90) at +1.00 ms; migrated CPU1->CPU3 at +1.78 ms (in hardirq: push IPI, in hog's context) ; resumed on CPU3 at +1.88 ms"
                .replace(" ;", ";")
        );
    }

    #[test]
    fn never_migrated_line() {
        let t = "\
 waiter-114 [002] d..3. 52.286120: sched_pi_setprio: comm=owner pid=115 oldprio=89 newprio=9
 hog-122 [001] d..2. 53.786000: sched_switch: prev_comm=hog prev_pid=122 prev_prio=0 prev_state=X ==> next_comm=owner next_pid=115 next_prio=9
";
        let (r, _) = parse_text(t);
        let d = derive(&r, &[115, 122]);
        let l = mechanism(&d, 115, "owner", 52_285_120_000, &[]);
        assert!(l.contains("never migrated"), "{l}");
        assert!(l.contains("resumed on CPU1 at +1500.88 ms"), "{l}");
    }
}
