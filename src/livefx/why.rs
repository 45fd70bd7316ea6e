//! Why each deadline miss happened (rtla's auto-analysis, done for audio): what the RT
//! side saw at the miss (the worker the cycle waited for, the lock, its holder) joined
//! with the sched trace around it: was the holder PI-boosted, where did it sit queued and
//! behind whom, and how did it get out (the push IPI in hardirq, a pull, or the CPU's
//! other task going to sleep). Misses with the same cause get the same sentence, so a
//! report can group them; the numbers that differ (how long) are kept apart.

use super::writer::Cause;
pub use crate::instruments::story::Trace;
use crate::instruments::story::holder_story;

/// Names for what the RT side reports by index or tid.
pub struct Names<'a> {
    pub workers: &'a [String],
    pub locks: &'a [String],
    /// (tid, worker name).
    pub tids: &'a [(i32, String)],
}

impl Names<'_> {
    fn tid(&self, tid: i32) -> Option<&str> {
        self.tids
            .iter()
            .find(|(t, _)| *t == tid)
            .map(|(_, n)| n.as_str())
    }
}

/// One miss, explained.
#[derive(Debug, Clone, PartialEq)]
pub struct Why {
    /// The cause sentence: identical for misses with the same cause.
    pub why: String,
    pub worker: Option<String>,
    pub lock: Option<String>,
    pub holder: Option<String>,
    /// How long the worker had waited for the lock at the miss (or in the cycle).
    pub wait_ns: Option<u64>,
    /// How long the holder was kept off CPU (from the trace), when it was.
    pub stuck_ns: Option<u64>,
}

/// Explains a miss whose deadline was `deadline_ns` (CLOCK_MONOTONIC = trace clock).
/// The trace is read at the deadline, or where the lock wait ended if it ended before.
pub fn explain(
    cause: Option<&Cause>,
    injected: bool,
    deadline_ns: u64,
    names: &Names,
    trace: Option<&Trace>,
) -> Why {
    let mut w = Why {
        why: String::new(),
        worker: None,
        lock: None,
        holder: None,
        wait_ns: None,
        stuck_ns: None,
    };
    if injected {
        w.why = "an injected overrun (--inject-every)".into();
        return w;
    }
    let Some(c) = cause else {
        w.why = "no worker kept it: the callback itself ran past the deadline".into();
        return w;
    };
    w.worker = names.workers.get(c.worker).cloned();
    let worker = w.worker.clone().unwrap_or_else(|| format!("#{}", c.worker));
    let Some(lock) = c.lock.and_then(|l| names.locks.get(l)).cloned() else {
        w.why = match c.behind {
            0 => format!("'{worker}' was still working at the deadline, with no lock wait"),
            1 => format!("'{worker}' had not woken up for the cycle by the deadline"),
            _ => format!("'{worker}' had not started the cycle: still busy with an earlier one"),
        };
        return w;
    };
    w.lock = Some(lock.clone());
    w.wait_ns = Some(c.wait_ns);
    w.holder = names.tid(c.holder_tid).map(str::to_string);
    let holder = match (&w.holder, c.holder_tid) {
        (Some(h), _) => format!("holder '{h}'"),
        (None, 0) => "holder unknown (released as the wait began)".into(),
        (None, t) => format!("holder tid {t}"),
    };
    let mut s = format!("'{lock}' {holder}");
    match trace {
        None => {
            s.push_str(" (no sched trace: add [instruments.trace] to the rig for where it sat)")
        }
        Some(t) if c.holder_tid > 0 => {
            // The holder as it was while the worker waited: at the deadline if the wait
            // was still on, else just before it ended.
            let wait_end = c.since_ns.saturating_add(c.wait_ns);
            let at = if c.since_ns > 0 && wait_end < deadline_ns {
                wait_end.saturating_sub(1000)
            } else {
                deadline_ns
            };
            let (text, stuck) = holder_story(t, c.holder_tid, at);
            s.push_str(&text);
            w.stuck_ns = stuck;
        }
        Some(_) => {}
    }
    w.why = s;
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instruments::parse::parse_text;

    // render (pid 20, FIFO 10) holds the lock on CPU1; hog (pid 30, FIFO 99) preempts it;
    // live.1 (pid 11) blocks and boosts render to FIFO 60.
    const STUCK: &str = "\
 render-20 [001] d..2. 10.000000: sched_switch: prev_comm=fx-render prev_pid=20 prev_prio=89 prev_state=R+ ==> next_comm=hog next_pid=30 next_prio=0
 fx-live.1-11 [002] d..3. 10.002000: sched_pi_setprio: comm=fx-render pid=20 oldprio=89 newprio=39
 hog-30 [001] d..2. 10.150000: sched_switch: prev_comm=hog prev_pid=30 prev_prio=0 prev_state=S ==> next_comm=fx-render next_pid=20 next_prio=39
";
    const PUSHED: &str = "\
 render-20 [001] d..2. 10.000000: sched_switch: prev_comm=fx-render prev_pid=20 prev_prio=89 prev_state=R+ ==> next_comm=hog next_pid=30 next_prio=0
 fx-live.1-11 [002] d..3. 10.002000: sched_pi_setprio: comm=fx-render pid=20 oldprio=89 newprio=39
 hog-30 [001] d.h2. 10.025000: sched_migrate_task: comm=fx-render pid=20 prio=39 orig_cpu=1 dest_cpu=3
 spare-40 [003] d..2. 10.025100: sched_switch: prev_comm=spare prev_pid=40 prev_prio=69 prev_state=R+ ==> next_comm=fx-render next_pid=20 next_prio=39
";

    fn names() -> (Vec<String>, Vec<String>, Vec<(i32, String)>) {
        (
            vec!["live.0".into(), "live.1".into(), "render".into()],
            vec!["bus".into()],
            vec![
                (10, "live.0".into()),
                (11, "live.1".into()),
                (20, "render".into()),
            ],
        )
    }

    fn as_names<'a>(w: &'a [String], l: &'a [String], t: &'a [(i32, String)]) -> Names<'a> {
        Names {
            workers: w,
            locks: l,
            tids: t,
        }
    }

    fn cause() -> Cause {
        Cause {
            worker: 1,
            lock: Some(0),
            holder_tid: 20,
            wait_ns: 19_000_000,
            since_ns: 0,
            behind: 0,
        }
    }

    #[test]
    fn a_holder_stuck_behind_the_hog_until_it_slept() {
        let (w, l, t) = names();
        let n = as_names(&w, &l, &t);
        let (r, _) = parse_text(STUCK);
        let tr = Trace::new(&r);
        let y = explain(Some(&cause()), false, 10_021_000_000, &n, Some(&tr));
        assert_eq!(
            y.why,
            "'bus' holder 'render' boosted to FIFO 60 but queued on CPU1 behind 'hog' (FIFO 99); \
             got out when 'hog' slept and it ran again on CPU1"
        );
        assert_eq!(y.stuck_ns, Some(150_000_000));
        assert_eq!(y.holder.as_deref(), Some("render"));
        assert_eq!(y.worker.as_deref(), Some("live.1"));
        // A later miss of the same episode has the same sentence (one group).
        let y2 = explain(Some(&cause()), false, 10_042_000_000, &n, Some(&tr));
        assert_eq!(y2.why, y.why);
    }

    #[test]
    fn a_holder_rescued_by_the_push_ipi() {
        let (w, l, t) = names();
        let n = as_names(&w, &l, &t);
        let (r, _) = parse_text(PUSHED);
        let tr = Trace::new(&r);
        let y = explain(Some(&cause()), false, 10_021_000_000, &n, Some(&tr));
        assert_eq!(
            y.why,
            "'bus' holder 'render' boosted to FIFO 60 but queued on CPU1 behind 'hog' (FIFO 99); \
             got out when the push IPI moved it CPU1->CPU3 (in hardirq)"
        );
        assert_eq!(y.stuck_ns, Some(25_100_000));
    }

    #[test]
    fn the_trace_is_read_where_the_wait_ended() {
        let (w, l, t) = names();
        let n = as_names(&w, &l, &t);
        let (r, _) = parse_text(STUCK);
        let tr = Trace::new(&r);
        // The wait ended at 10.001 s, before the deadline (and before the boost at
        // 10.002 s): the holder is told as it was then.
        let ended = Cause {
            since_ns: 9_990_000_000,
            wait_ns: 11_000_000,
            ..cause()
        };
        let y = explain(Some(&ended), false, 10_021_000_000, &n, Some(&tr));
        assert!(
            y.why
                .starts_with("'bus' holder 'render' never boosted but queued on CPU1"),
            "{}",
            y.why
        );
        // A wait that ended at the deadline itself is read at the deadline, where the
        // boost at 10.002 s is already in.
        let at_deadline = Cause {
            wait_ns: 12_000_000,
            ..ended
        };
        let y = explain(Some(&at_deadline), false, 10_002_000_000, &n, Some(&tr));
        assert!(
            y.why
                .starts_with("'bus' holder 'render' boosted to FIFO 60"),
            "{}",
            y.why
        );
    }

    #[test]
    fn an_unknown_holder_gets_no_trace_story() {
        let (w, l, t) = names();
        let n = as_names(&w, &l, &t);
        let (r, _) = parse_text(STUCK);
        let tr = Trace::new(&r);
        // The lock was released as the wait began: no tid to look up in the trace.
        let c = Cause {
            holder_tid: 0,
            ..cause()
        };
        let y = explain(Some(&c), false, 10_021_000_000, &n, Some(&tr));
        assert_eq!(y.why, "'bus' holder unknown (released as the wait began)");
        assert_eq!((y.holder, y.stuck_ns), (None, None));
    }

    #[test]
    fn without_a_trace_or_a_lock() {
        let (w, l, t) = names();
        let n = as_names(&w, &l, &t);
        let y = explain(Some(&cause()), false, 1, &n, None);
        assert!(
            y.why.starts_with("'bus' holder 'render' (no sched trace"),
            "{}",
            y.why
        );
        let c = Cause {
            lock: None,
            ..cause()
        };
        let y = explain(Some(&c), false, 1, &n, None);
        assert_eq!(
            y.why,
            "'live.1' was still working at the deadline, with no lock wait"
        );
        let y = explain(Some(&Cause { behind: 1, ..c }), false, 1, &n, None);
        assert_eq!(
            y.why,
            "'live.1' had not woken up for the cycle by the deadline"
        );
        let y = explain(Some(&Cause { behind: 2, ..c }), false, 1, &n, None);
        assert!(
            y.why.contains("still busy with an earlier one"),
            "{}",
            y.why
        );
        assert!(explain(None, true, 1, &n, None).why.contains("injected"));
    }
}
