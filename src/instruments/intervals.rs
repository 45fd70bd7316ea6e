//! What a sched trace says about the rig's threads: runtime intervals (switch-in to
//! switch-out), migrations with from/to CPU, PI boosts with old/new priority.
//! Pure functions over parsed records, so they are tested against recorded text.

use super::parse::{Ev, Record};
use std::collections::BTreeMap;

/// One stretch a thread ran on a CPU without being switched out.
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    pub tid: i32,
    pub cpu: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// The thread's state at switch-out: `R`/`R+` preempted, `S` slept, `X` exited...
    pub end_state: String,
    /// Migrate-disable depth at switch-out, from the latency column (None: not shown).
    pub end_migrate_disable: Option<u32>,
}

impl Interval {
    pub fn len_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Migration {
    pub tid: i32,
    pub ts_ns: u64,
    pub orig_cpu: u32,
    pub dest_cpu: u32,
    /// Done in hard interrupt context: the RT push IPI path.
    pub hardirq: bool,
    /// The task that was current where the migration ran.
    pub by_pid: i32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Boost {
    pub tid: i32,
    pub ts_ns: u64,
    pub oldprio: i32,
    pub newprio: i32,
}

/// Everything derived for a set of threads.
#[derive(Debug, Clone, Default)]
pub struct Derived {
    /// Per tid, in time order. Stretches cut by the capture's start or end are left out:
    /// their length is unknown.
    pub intervals: BTreeMap<i32, Vec<Interval>>,
    pub migrations: Vec<Migration>,
    pub boosts: Vec<Boost>,
    /// Every switch-in of a traced thread: (tid, time, cpu), complete or not.
    pub switch_ins: Vec<(i32, u64, u32)>,
    /// Switch-ins with no matching switch-out, or the reverse (lost events, capture edges).
    pub unmatched: usize,
}

/// Derives intervals, migrations and boosts of `tids` from time-ordered records.
pub fn derive(records: &[Record], tids: &[i32]) -> Derived {
    let mut d = Derived::default();
    let mut open: BTreeMap<i32, (u64, u32)> = BTreeMap::new();
    for &t in tids {
        d.intervals.insert(t, Vec::new());
    }
    for r in records {
        match &r.ev {
            Ev::Switch {
                prev_pid,
                prev_state,
                next_pid,
                ..
            } => {
                if tids.contains(prev_pid) {
                    match open.remove(prev_pid) {
                        Some((start, cpu)) if cpu == r.cpu && r.ts_ns >= start => {
                            if let Some(v) = d.intervals.get_mut(prev_pid) {
                                v.push(Interval {
                                    tid: *prev_pid,
                                    cpu,
                                    start_ns: start,
                                    end_ns: r.ts_ns,
                                    end_state: prev_state.clone(),
                                    end_migrate_disable: r.migrate_disable(),
                                });
                            }
                        }
                        _ => d.unmatched += 1,
                    }
                }
                if tids.contains(next_pid) {
                    d.switch_ins.push((*next_pid, r.ts_ns, r.cpu));
                }
                if tids.contains(next_pid) && open.insert(*next_pid, (r.ts_ns, r.cpu)).is_some() {
                    d.unmatched += 1;
                }
            }
            Ev::Migrate {
                pid,
                orig_cpu,
                dest_cpu,
                ..
            } if tids.contains(pid) => d.migrations.push(Migration {
                tid: *pid,
                ts_ns: r.ts_ns,
                orig_cpu: *orig_cpu,
                dest_cpu: *dest_cpu,
                hardirq: r.in_hardirq(),
                by_pid: r.pid,
            }),
            Ev::PiSetprio {
                pid,
                oldprio,
                newprio,
            } if tids.contains(pid) => d.boosts.push(Boost {
                tid: *pid,
                ts_ns: r.ts_ns,
                oldprio: *oldprio,
                newprio: *newprio,
            }),
            _ => {}
        }
    }
    d.unmatched += open.len();
    d
}

/// Interval lengths of the given tids, in ns.
pub fn lengths(d: &Derived, tids: &[i32]) -> Vec<u64> {
    tids.iter()
        .filter_map(|t| d.intervals.get(t))
        .flat_map(|v| v.iter().map(|i| i.len_ns()))
        .collect()
}

/// The q-quantile (0..=1) of values, nearest rank; None when empty.
pub fn quantile(values: &[u64], q: f64) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

/// A histogram of lengths in 1 ms buckets: (upper bound ms, count), only non-empty ones.
pub fn histogram_ms(values: &[u64]) -> Vec<(u64, usize)> {
    let mut h: BTreeMap<u64, usize> = BTreeMap::new();
    for &v in values {
        *h.entry(v / 1_000_000 + 1).or_default() += 1;
    }
    h.into_iter().collect()
}

/// A kernel prio as people read it: `FIFO 90` (RT, 0..=98) or `nice 0` (120 + nice).
pub fn prio_text(p: i32) -> String {
    if p < 100 {
        format!("RT {}", 99 - p)
    } else {
        format!("nice {}", p - 120)
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse_text;
    use super::*;

    const T: &str = "\
 a-10 [001] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=R+ ==> next_comm=b next_pid=11 next_prio=120
 b-11 [001] d..2. 1.003000: sched_switch: prev_comm=b prev_pid=11 prev_prio=120 prev_state=R+ ==> next_comm=a next_pid=10 next_prio=120
 a-10 [001] d..2. 1.012500: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=R+ ==> next_comm=b next_pid=11 next_prio=120
 b-11 [001] d..2. 1.016500: sched_switch: prev_comm=b prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";

    #[test]
    fn intervals_between_switches() {
        let (r, bad) = parse_text(T);
        assert_eq!(bad, 0);
        let d = derive(&r, &[10, 11]);
        let a: Vec<u64> = d.intervals[&10].iter().map(|i| i.len_ns()).collect();
        let b: Vec<u64> = d.intervals[&11].iter().map(|i| i.len_ns()).collect();
        // a's first stretch started before the capture: unknown length, left out.
        assert_eq!(a, vec![9_500_000]);
        assert_eq!(b, vec![3_000_000, 4_000_000]);
        assert_eq!(d.intervals[&11][1].end_state, "S");
        assert_eq!(d.unmatched, 1);
        assert_eq!(
            lengths(&d, &[10, 11])
                .iter()
                .filter(|&&l| l > 8_000_000)
                .count(),
            1
        );
    }

    #[test]
    fn quantiles_and_histogram() {
        let v = [1_500_000, 3_000_000, 9_000_000, 2_000_000];
        assert_eq!(quantile(&v, 0.5), Some(2_000_000));
        assert_eq!(quantile(&v, 1.0), Some(9_000_000));
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(histogram_ms(&v), vec![(2, 1), (3, 1), (4, 1), (10, 1)]);
        assert_eq!(prio_text(9), "RT 90");
        assert_eq!(prio_text(120), "nice 0");
    }
}
