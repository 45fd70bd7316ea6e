//! One trial of a plan: create every thread, let each raise and pin itself, release
//! them together, run their steps under a hard deadline, and collect the marks.
//! Rig threads allocate nothing, print nothing and block only with a deadline once
//! released; everything they produce is preallocated before the start.

use super::pimutex::{LockError, PiMutex};
use super::sync::{Abort, Barrier, Latch, WaitResult};
use super::thread::{Sched, apply_current, demote};
use crate::rig::{EarlyEnd, Op, Plan};
use crate::sys::{gettid, now_ns, thread_cpu_ns};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Timestamps of one mark slot, preallocated to its capacity.
pub struct MarkBuf {
    times: Box<[AtomicU64]>,
    count: AtomicUsize,
}

impl MarkBuf {
    fn new(cap: usize) -> Self {
        MarkBuf {
            times: (0..cap.max(1)).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicUsize::new(0),
        }
    }
    #[inline]
    fn take(&self, t: u64) {
        let i = self.count.fetch_add(1, Ordering::Relaxed);
        if let Some(slot) = self.times.get(i) {
            slot.store(t, Ordering::Relaxed);
        }
    }
    /// The first timestamp, once it is taken (0: not yet). Read by the controlling
    /// thread while the trial runs: each slot is written once, so a read sees 0 or it.
    fn first(&self) -> u64 {
        self.times[0].load(Ordering::Relaxed)
    }
    /// Whether the mark has been taken: its time was read before the count went up.
    fn taken(&self) -> bool {
        self.count.load(Ordering::Acquire) > 0
    }
    fn collect(&self) -> Vec<u64> {
        let n = self.count.load(Ordering::Acquire).min(self.times.len());
        self.times[..n]
            .iter()
            .map(|t| t.load(Ordering::Relaxed))
            .collect()
    }
}

/// How one thread's run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ThreadEnd {
    Finished,
    /// The trial deadline passed in this step (static: nothing allocates on the rig thread).
    TimedOut(&'static str),
    Aborted,
    Failed(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum TrialStatus {
    Ok,
    /// The trial hit its deadline; the named threads had not finished.
    TimedOut(Vec<String>),
    /// Stopped from outside (Ctrl-C, the run's hard bound).
    Aborted,
    /// A thread could not be set up or failed.
    Failed(String),
    /// Threads did not exit even after abort and demotion: the process must end.
    Stuck(Vec<String>),
}

pub struct TrialResult {
    pub status: TrialStatus,
    /// Per mark slot of the plan: times in ns since the trial's start.
    pub marks: Vec<Vec<u64>>,
    pub threads: Vec<(String, ThreadEnd)>,
    pub duration_ns: u64,
    /// Per thread with a loop: the innermost loop bodies it completed (rt-app's loop
    /// count), to compare what ran with what the rig asked for.
    pub cycles: Vec<(String, u64)>,
    /// CLOCK_MONOTONIC ns of the release: the marks' zero (0 when never released).
    pub t0_ns: u64,
    /// The trial was ended early by the plan's `early_ends` (its status stays `Ok`:
    /// nothing went wrong; a metric had already failed its bound, or every metric was
    /// measured).
    pub ended_early: Option<EndedEarly>,
}

/// Why and when a trial was ended early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndedEarly {
    /// When the controlling thread ended the trial, ns since the release.
    pub at_ns: u64,
    pub why: EarlyWhy,
}

/// What ended a trial early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EarlyWhy {
    /// The rig's metric `metric` (`EarlyEnd::metric`) had passed its bound. `to_taken`:
    /// its `to` mark was taken after all, in the moment between the controlling
    /// thread's look and the release: its value is a measurement, nothing is censored.
    PastBound { metric: usize, to_taken: bool },
    /// Every metric was measured (`Plan::end_when_measured`): nothing was left to wait
    /// for.
    Measured,
}

struct Shared {
    locks: Vec<PiMutex>,
    latches: Vec<Latch>,
    barriers: Vec<Barrier>,
    marks: Vec<MarkBuf>,
    abort: Abort,
    start: Latch,
    ready: AtomicU32,
    done: AtomicU32,
    all_done: Latch,
    deadline: AtomicU64,
    tids: Vec<AtomicI32>,
    cycles: Vec<AtomicU64>,
    failed_setup: AtomicBool,
    n: u32,
}

impl Shared {
    fn poke_all(&self) {
        self.start.poke();
        self.all_done.poke();
        for l in &self.latches {
            l.poke();
        }
        for b in &self.barriers {
            b.poke();
        }
    }
}

/// Runs `ops`; `held` tracks locks for release on early exit.
fn exec(
    sh: &Shared,
    ops: &[Op],
    held: &mut [bool],
    deadline: u64,
    cycles: &AtomicU64,
) -> Result<(), ThreadEnd> {
    let wait_res = |r: WaitResult, what: &'static str| match r {
        WaitResult::Done => Ok(()),
        WaitResult::Aborted => Err(ThreadEnd::Aborted),
        WaitResult::TimedOut => Err(ThreadEnd::TimedOut(what)),
    };
    for op in ops {
        match *op {
            Op::Run(ns) => {
                let target = thread_cpu_ns() + ns;
                while thread_cpu_ns() < target {
                    if sh.abort.is_set() {
                        return Err(ThreadEnd::Aborted);
                    }
                    if now_ns() >= deadline {
                        return Err(ThreadEnd::TimedOut("run"));
                    }
                }
            }
            Op::RunMigrateDisabled(ns) => {
                let target = thread_cpu_ns() + ns;
                while thread_cpu_ns() < target {
                    super::migrate_disable::burst();
                    if sh.abort.is_set() {
                        return Err(ThreadEnd::Aborted);
                    }
                    if now_ns() >= deadline {
                        return Err(ThreadEnd::TimedOut("run"));
                    }
                }
            }
            Op::Spin(ns) => {
                let end = now_ns() + ns;
                loop {
                    let t = now_ns();
                    if t >= end {
                        break;
                    }
                    if sh.abort.is_set() {
                        return Err(ThreadEnd::Aborted);
                    }
                    if t >= deadline {
                        return Err(ThreadEnd::TimedOut("spin"));
                    }
                    std::hint::spin_loop();
                }
            }
            Op::SpinUntil(e) => loop {
                if sh.latches[e].is_set() {
                    break;
                }
                if sh.abort.is_set() {
                    return Err(ThreadEnd::Aborted);
                }
                if now_ns() >= deadline {
                    return Err(ThreadEnd::TimedOut("spin_until"));
                }
                std::hint::spin_loop();
            },
            Op::Sleep(ns) => {
                let end = (now_ns() + ns).min(deadline);
                if !sh.abort.sleep_until(end) {
                    return Err(ThreadEnd::Aborted);
                }
            }
            Op::Lock(i) => match sh.locks[i].raw_lock_until(deadline) {
                Ok(()) => held[i] = true,
                Err(LockError::TimedOut) => return Err(ThreadEnd::TimedOut("lock")),
                Err(LockError::Os(e)) => {
                    return Err(ThreadEnd::Failed(format!("lock failed: errno {e}")));
                }
            },
            Op::Unlock(i) => {
                if held[i] {
                    held[i] = false;
                    if let Err(e) = sh.locks[i].raw_unlock() {
                        return Err(ThreadEnd::Failed(format!("unlock failed: {e:?}")));
                    }
                }
            }
            Op::Signal(e) => sh.latches[e].signal(),
            Op::Wait(e) => wait_res(sh.latches[e].wait_until(deadline, Some(&sh.abort)), "wait")?,
            Op::Barrier(b) => wait_res(
                sh.barriers[b].wait_until(deadline, Some(&sh.abort)),
                "barrier",
            )?,
            Op::Mark(m) => {
                // A mark after the trial was stopped (an early end, Ctrl-C) would time
                // the threads' release, not the rig: it is not taken.
                if sh.abort.is_set() {
                    return Err(ThreadEnd::Aborted);
                }
                sh.marks[m].take(now_ns())
            }
            Op::Repeat { times, ref body } => {
                let inner = u64::from(!has_loop(body));
                for _ in 0..times {
                    exec(sh, body, held, deadline, cycles)?;
                    cycles.fetch_add(inner, Ordering::Relaxed);
                }
            }
            Op::RepeatFor { ns, ref body } => {
                let inner = u64::from(!has_loop(body));
                let end = now_ns() + ns;
                while now_ns() < end {
                    exec(sh, body, held, deadline, cycles)?;
                    cycles.fetch_add(inner, Ordering::Relaxed);
                }
            }
        }
    }
    Ok(())
}

fn has_loop(ops: &[Op]) -> bool {
    ops.iter()
        .any(|o| matches!(o, Op::Repeat { .. } | Op::RepeatFor { .. }))
}

fn uses_md(ops: &[Op]) -> bool {
    ops.iter().any(|o| match o {
        Op::RunMigrateDisabled(_) => true,
        Op::Repeat { body, .. } | Op::RepeatFor { body, .. } => uses_md(body),
        _ => false,
    })
}

fn thread_main(sh: &Shared, idx: usize, sched: &Sched, ops: &[Op]) -> ThreadEnd {
    sh.tids[idx].store(gettid(), Ordering::SeqCst);
    let setup = apply_current(sched).and_then(|_| {
        // Filters go on this thread only, before the start: installing them allocates.
        if uses_md(ops) {
            super::migrate_disable::install_on_current_thread()
        } else {
            Ok(())
        }
    });
    // Preallocated before the start: nothing below allocates on the success path.
    let mut held = vec![false; sh.locks.len()];
    if setup.is_err() {
        sh.failed_setup.store(true, Ordering::SeqCst);
    }
    sh.ready.fetch_add(1, Ordering::SeqCst);
    if let Err(e) = setup {
        finish(sh);
        return ThreadEnd::Failed(e);
    }
    // From here to the end nothing allocates (tests/livefx_noalloc.rs counts).
    super::thread::rt_mark(true);
    let end = match sh
        .start
        .wait_until(now_ns() + 30_000_000_000, Some(&sh.abort))
    {
        WaitResult::Done => {
            let deadline = sh.deadline.load(Ordering::SeqCst);
            match exec(sh, ops, &mut held, deadline, &sh.cycles[idx]) {
                Ok(()) => ThreadEnd::Finished,
                Err(e) => e,
            }
        }
        _ => ThreadEnd::Aborted,
    };
    for (i, h) in held.iter().enumerate() {
        if *h {
            let _ = sh.locks[i].raw_unlock();
        }
    }
    finish(sh);
    super::thread::rt_mark(false);
    end
}

fn finish(sh: &Shared) {
    if sh.done.fetch_add(1, Ordering::SeqCst) + 1 == sh.n {
        sh.all_done.signal();
    }
}

/// How often the controlling thread looks at the marks a plan's `early_ends` watch,
/// at most: so that a `from` mark is seen before its bound runs out and the trial is
/// ended at `from + after_ns` itself (with a bound under 1 ms, up to 1 ms later).
fn watch_period(ends: &[EarlyEnd]) -> u64 {
    ends.iter()
        .map(|e| e.after_ns)
        .min()
        .map_or(CONTROL_STEP_NS, |a| a.clamp(1_000_000, CONTROL_STEP_NS))
}

/// The controlling thread's wake-up period while a trial runs (stop flag, deadline).
const CONTROL_STEP_NS: u64 = 50_000_000;

/// The early end due at `now` (the index into `ends`): a watched metric whose `from`
/// mark was taken at least `after_ns` ago and whose `to` mark has not come. Otherwise
/// the earliest moment one can become due, for the next look. Reads only the marks'
/// atomics, from the controlling thread: the rig's threads do nothing for it.
fn early_end_due(ends: &[EarlyEnd], marks: &[MarkBuf], now: u64) -> Result<usize, Option<u64>> {
    let mut next: Option<u64> = None;
    for (i, e) in ends.iter().enumerate() {
        let from = marks[e.from].first();
        if from == 0 || marks[e.to].taken() {
            continue;
        }
        let due = from.saturating_add(e.after_ns);
        if now >= due {
            return Ok(i);
        }
        next = Some(next.map_or(due, |n: u64| n.min(due)));
    }
    Err(next)
}

/// Runs one trial of `plan` with a hard bound of `timeout_ns`. `stop` is the run's
/// abort flag (Ctrl-C, hard bound): it is polled while the trial runs.
pub fn run_trial(plan: &Plan, timeout_ns: u64, stop: &AtomicBool) -> TrialResult {
    run_trial_with(plan, timeout_ns, stop, &mut |_| {})
}

/// Called with every rig thread's (name, kernel tid) before the threads are released.
pub type OnReady<'a> = dyn FnMut(&[(String, i32)]) + 'a;

/// As `run_trial`, calling `on_ready` with every thread's name and kernel tid once all
/// are set up and before they are released (instruments filter on those tids).
pub fn run_trial_with(
    plan: &Plan,
    timeout_ns: u64,
    stop: &AtomicBool,
    on_ready: &mut OnReady,
) -> TrialResult {
    let n = plan.threads.len() as u32;
    let mut locks = Vec::new();
    for l in &plan.locks {
        match PiMutex::new(l.protocol) {
            Ok(m) => locks.push(m),
            Err(e) => {
                return TrialResult {
                    status: TrialStatus::Failed(format!("cannot create lock {}: {e}", l.name)),
                    marks: vec![],
                    threads: vec![],
                    duration_ns: 0,
                    cycles: vec![],
                    t0_ns: 0,
                    ended_early: None,
                };
            }
        }
    }
    let sh = Arc::new(Shared {
        locks,
        latches: plan.events.iter().map(|_| Latch::new()).collect(),
        barriers: plan
            .barriers
            .iter()
            .map(|(_, c)| Barrier::new(*c))
            .collect(),
        marks: plan
            .marks
            .iter()
            .map(|m| MarkBuf::new(m.capacity))
            .collect(),
        abort: Abort::new(),
        start: Latch::new(),
        ready: AtomicU32::new(0),
        done: AtomicU32::new(0),
        all_done: Latch::new(),
        deadline: AtomicU64::new(u64::MAX),
        tids: (0..n).map(|_| AtomicI32::new(0)).collect(),
        cycles: (0..n).map(|_| AtomicU64::new(0)).collect(),
        failed_setup: AtomicBool::new(false),
        n,
    });
    let mut handles = Vec::new();
    for (i, t) in plan.threads.iter().enumerate() {
        let sh2 = sh.clone();
        let sched = Sched {
            policy: t.policy,
            priority: t.priority,
            cpus: t.cpus.clone(),
        };
        let ops = t.ops.clone();
        let h = std::thread::Builder::new()
            .name(t.name.chars().take(15).collect())
            .spawn(move || thread_main(&sh2, i, &sched, &ops));
        match h {
            Ok(h) => handles.push(h),
            Err(e) => {
                sh.abort.set();
                sh.poke_all();
                return TrialResult {
                    status: TrialStatus::Failed(format!("cannot spawn thread {}: {e}", t.name)),
                    marks: vec![],
                    threads: vec![],
                    duration_ns: 0,
                    cycles: vec![],
                    t0_ns: 0,
                    ended_early: None,
                };
            }
        }
    }
    // Every thread raised and pinned, or the setup failed.
    let setup_end = now_ns() + 10_000_000_000;
    while sh.ready.load(Ordering::SeqCst) < n && now_ns() < setup_end {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let mut t0 = now_ns();
    let mut status = TrialStatus::Ok;
    let mut ended_early: Option<(Option<usize>, u64)> = None;
    if sh.failed_setup.load(Ordering::SeqCst) || sh.ready.load(Ordering::SeqCst) < n {
        sh.abort.set();
        sh.poke_all();
    } else {
        let tids: Vec<(String, i32)> = plan
            .threads
            .iter()
            .zip(&sh.tids)
            .map(|(t, id)| (t.name.clone(), id.load(Ordering::SeqCst)))
            .collect();
        on_ready(&tids);
        t0 = now_ns();
        let deadline = t0 + timeout_ns;
        sh.deadline.store(deadline, Ordering::SeqCst);
        sh.start.signal();
        let period = watch_period(&plan.early_ends);
        loop {
            let now = now_ns();
            let mut step = (now + period).min(deadline);
            if plan.end_when_measured && plan.early_ends.iter().all(|e| sh.marks[e.to].taken()) {
                ended_early = Some((None, now - t0));
                break;
            }
            match early_end_due(&plan.early_ends, &sh.marks, now) {
                // The metric has failed its bound: end the trial as the timeout does.
                Ok(i) => {
                    ended_early = Some((Some(i), now - t0));
                    break;
                }
                Err(Some(due)) => step = step.min(due),
                Err(None) => {}
            }
            if sh.all_done.wait_until(step, None) == WaitResult::Done {
                break;
            }
            if stop.load(Ordering::SeqCst) {
                status = TrialStatus::Aborted;
                break;
            }
            if now_ns() >= deadline {
                status = TrialStatus::TimedOut(vec![]);
                break;
            }
        }
    }
    if !sh.all_done.is_set() {
        sh.abort.set();
        sh.poke_all();
        if sh.all_done.wait_until(now_ns() + 1_000_000_000, None) != WaitResult::Done {
            // Last resort: take the RT policy away so a runaway thread cannot hold a CPU.
            for t in &sh.tids {
                let tid = t.load(Ordering::SeqCst);
                if tid > 0 {
                    demote(tid);
                }
            }
            if sh.all_done.wait_until(now_ns() + 2_000_000_000, None) != WaitResult::Done {
                let names = plan.threads.iter().map(|t| t.name.clone()).collect();
                return TrialResult {
                    status: TrialStatus::Stuck(names),
                    marks: vec![],
                    threads: vec![],
                    duration_ns: now_ns() - t0,
                    cycles: vec![],
                    t0_ns: 0,
                    ended_early: None,
                };
            }
        }
    }
    let duration_ns = now_ns() - t0;
    let mut threads = Vec::new();
    for (h, t) in handles.into_iter().zip(&plan.threads) {
        let end = h
            .join()
            .unwrap_or_else(|_| ThreadEnd::Failed("thread panicked".into()));
        threads.push((t.name.clone(), end));
    }
    if let Some((name, ThreadEnd::Failed(e))) = threads
        .iter()
        .find(|(_, e)| matches!(e, ThreadEnd::Failed(_)))
    {
        status = TrialStatus::Failed(format!("thread {name}: {e}"));
    } else if status == TrialStatus::Ok
        && threads
            .iter()
            .any(|(_, e)| matches!(e, ThreadEnd::TimedOut(_)))
    {
        status = TrialStatus::TimedOut(vec![]);
    }
    if let TrialStatus::TimedOut(v) = &mut status {
        *v = threads
            .iter()
            .filter(|(_, e)| *e != ThreadEnd::Finished)
            .map(|(n, e)| match e {
                ThreadEnd::TimedOut(step) => format!("{n} (in {step})"),
                _ => n.clone(),
            })
            .collect();
    }
    let marks = sh
        .marks
        .iter()
        .map(|m| {
            m.collect()
                .into_iter()
                .map(|t| t.saturating_sub(t0))
                .collect()
        })
        .collect();
    let cycles = plan
        .threads
        .iter()
        .zip(&sh.cycles)
        .filter(|(t, _)| has_loop(&t.ops))
        .map(|(t, c)| (t.name.clone(), c.load(Ordering::Relaxed)))
        .collect();
    let ended_early = ended_early.map(|(i, at_ns)| EndedEarly {
        at_ns,
        why: i.map_or(EarlyWhy::Measured, |i| {
            let e = plan.early_ends[i];
            EarlyWhy::PastBound {
                metric: e.metric,
                to_taken: sh.marks[e.to].taken(),
            }
        }),
    });
    TrialResult {
        status,
        marks,
        threads,
        duration_ns,
        cycles,
        t0_ns: t0,
        ended_early,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(text: &str) -> Plan {
        crate::rig::parse(Path::new("t.toml"), text)
            .unwrap()
            .variants
            .remove(0)
            .plan
    }

    const OTHER_RIG: &str = r#"
trial_timeout = "2 s"
[locks.M]
protocol = "inherit"
[[threads]]
name = "a"
policy = "other"
steps = [ { lock = "M" }, { signal = "go" }, { mark = "t0" }, { sleep = "30 ms" }, { unlock = "M" } ]
[[threads]]
name = "b"
policy = "other"
steps = [ { wait = "go" }, { lock = "M" }, { mark = "got" }, { unlock = "M" },
          { repeat = 3, steps = [ { mark = "loop" }, { run = "1 ms" } ] } ]
[metrics.w]
from = "a.t0"
to = "b.got"
"#;

    #[test]
    fn steps_run_in_order_and_marks_are_kept() {
        let p = plan(OTHER_RIG);
        let r = run_trial(&p, 2_000_000_000, &AtomicBool::new(false));
        assert_eq!(r.status, TrialStatus::Ok, "{:?}", r.threads);
        let idx = |t: &str, m: &str| {
            p.marks
                .iter()
                .position(|s| s.thread == t && s.mark == m)
                .unwrap()
        };
        let t0 = r.marks[idx("a", "t0")][0];
        let got = r.marks[idx("b", "got")][0];
        assert!(got >= t0 + 25_000_000, "b waited for a's 30 ms hold");
        assert_eq!(r.marks[idx("b", "loop")].len(), 3);
    }

    #[test]
    fn loop_cycles_count_innermost_bodies_of_looping_threads() {
        let p = plan(
            r#"
trial_timeout = "2 s"
[[threads]]
name = "a"
policy = "other"
steps = [ { repeat = 2, steps = [ { repeat = 3, steps = [ { run = "10 us" } ] } ] } ]
[[threads]]
name = "b"
policy = "other"
steps = [ { run = "10 us" } ]
[[threads]]
name = "c"
policy = "other"
steps = [ { mark = "s" }, { repeat_for = "20 ms", steps = [ { sleep = "1 ms" } ] }, { mark = "e" } ]
[metrics.w]
from = "c.s"
to = "c.e"
"#,
        );
        let r = run_trial(&p, 2_000_000_000, &AtomicBool::new(false));
        assert_eq!(r.status, TrialStatus::Ok, "{:?}", r.threads);
        assert_eq!(r.cycles.len(), 2, "b has no loop: {:?}", r.cycles);
        assert_eq!(r.cycles[0], ("a".to_string(), 6));
        let (name, c) = &r.cycles[1];
        // 1 ms sleeps in 20 ms: at most 20, at least one.
        assert!(name == "c" && (1..=20).contains(c), "{:?}", r.cycles);
    }

    #[test]
    fn deadline_ends_a_stuck_trial() {
        let p = plan(
            r#"
[[threads]]
name = "a"
policy = "other"
steps = [ { mark = "s" }, { wait = "never" }, { mark = "e" } ]
[[threads]]
name = "b"
policy = "other"
steps = [ { spin = "10 s" }, { signal = "never" } ]
[metrics.w]
from = "a.s"
to = "a.e"
"#,
        );
        let t0 = now_ns();
        let r = run_trial(&p, 200_000_000, &AtomicBool::new(false));
        assert!(now_ns() - t0 < 2_000_000_000);
        match r.status {
            TrialStatus::TimedOut(v) => assert_eq!(v.len(), 2, "{v:?}"),
            s => panic!("expected a timeout, got {s:?}"),
        }
    }

    /// A holder keeps M for `hold` while the waiter's wait for it is bounded at 100 ms
    /// and ends the trial early; a spinner runs for `tail`; `more` adds metrics.
    fn held_rig(hold: &str, tail: &str, more: &str) -> Plan {
        plan(&format!(
            r#"
trial_timeout = "5 s"
[locks.M]
protocol = "inherit"
[[threads]]
name = "holder"
policy = "other"
steps = [ {{ lock = "M" }}, {{ signal = "locked" }}, {{ mark = "locked" }}, {{ sleep = "{hold}" }}, {{ unlock = "M" }} ]
[[threads]]
name = "spinner"
policy = "other"
steps = [ {{ wait = "locked" }}, {{ spin = "{tail}" }} ]
[[threads]]
name = "waiter"
policy = "other"
steps = [ {{ wait = "locked" }}, {{ mark = "want" }}, {{ lock = "M" }}, {{ mark = "got" }},
          {{ unlock = "M" }} ]
[metrics.wait]
from = "waiter.want"
to = "waiter.got"
bound = "< 100 ms"
end_early = true
{more}
"#
        ))
    }

    #[test]
    fn a_wait_past_its_bound_ends_the_trial_there() {
        let _g = crate::engine::test_lock();
        let p = held_rig("3 s", "3 s", "");
        let t0 = now_ns();
        let r = run_trial(&p, 5_000_000_000, &AtomicBool::new(false));
        let took = now_ns() - t0;
        // Released as a timeout releases: the sleep, the spin and the lock wait all end.
        assert_eq!(r.status, TrialStatus::Ok, "{:?}", r.threads);
        assert!(
            took < 1_500_000_000,
            "ended at the bound, not after 3 s: {took} ns"
        );
        let e = r.ended_early.expect("ended early");
        assert_eq!(
            e.why,
            EarlyWhy::PastBound {
                metric: 0,
                to_taken: false
            }
        );
        let slot = |m: &str| p.marks.iter().position(|s| s.mark == m).unwrap();
        let want = r.marks[slot("want")][0];
        assert!(e.at_ns >= want + 100_000_000, "{e:?}, want at {want}");
        assert!(e.at_ns < want + 600_000_000, "{e:?}, want at {want}");
        // The waiter got M only in the release: that is not a measurement, no mark.
        assert!(r.marks[slot("got")].is_empty(), "{:?}", r.marks);
        assert!(
            r.threads.iter().all(|(_, end)| *end == ThreadEnd::Aborted),
            "{:?}",
            r.threads
        );
    }

    #[test]
    fn a_wait_within_its_bound_ends_the_trial_once_measured() {
        let _g = crate::engine::test_lock();
        let p = held_rig("20 ms", "3 s", "");
        assert!(p.end_when_measured);
        let t0 = now_ns();
        let r = run_trial(&p, 5_000_000_000, &AtomicBool::new(false));
        let took = now_ns() - t0;
        assert_eq!(r.status, TrialStatus::Ok, "{:?}", r.threads);
        let e = r.ended_early.expect("ended early");
        assert_eq!(e.why, EarlyWhy::Measured);
        let got = p.marks.iter().position(|s| s.mark == "got").unwrap();
        assert_eq!(r.marks[got].len(), 1, "the wait is measured");
        assert!(e.at_ns >= r.marks[got][0], "{e:?} before {:?}", r.marks);
        assert!(
            took < 1_500_000_000,
            "the spinner's 3 s were not sat out: {took} ns"
        );
        let spinner = r.threads.iter().find(|(n, _)| n == "spinner").unwrap();
        assert_eq!(spinner.1, ThreadEnd::Aborted, "{:?}", r.threads);
    }

    #[test]
    fn a_metric_without_end_early_keeps_the_trial_to_its_end() {
        let _g = crate::engine::test_lock();
        let more = "[metrics.held]\nfrom = \"holder.locked\"\nto = \"waiter.got\"\n";
        let p = held_rig("20 ms", "300 ms", more);
        assert!(!p.end_when_measured);
        let r = run_trial(&p, 5_000_000_000, &AtomicBool::new(false));
        assert_eq!(r.status, TrialStatus::Ok, "{:?}", r.threads);
        assert_eq!(r.ended_early, None);
        assert!(r.threads.iter().all(|(_, end)| *end == ThreadEnd::Finished));
        let got = p.marks.iter().position(|s| s.mark == "got").unwrap();
        assert_eq!(r.marks[got].len(), 1);
    }

    #[test]
    fn an_early_end_is_due_at_from_plus_bound_unless_to_came() {
        let marks: Vec<MarkBuf> = (0..2).map(|_| MarkBuf::new(1)).collect();
        let ends = [EarlyEnd {
            metric: 3,
            from: 0,
            to: 1,
            after_ns: 100,
        }];
        assert_eq!(
            early_end_due(&ends, &marks, 1_000),
            Err(None),
            "from not taken"
        );
        marks[0].take(1_000);
        assert_eq!(early_end_due(&ends, &marks, 1_050), Err(Some(1_100)));
        assert_eq!(early_end_due(&ends, &marks, 1_100), Ok(0));
        marks[1].take(1_200);
        assert_eq!(early_end_due(&ends, &marks, 1_300), Err(None), "to came");
        assert_eq!(watch_period(&ends), 1_000_000, "at least 1 ms");
        assert_eq!(watch_period(&[]), CONTROL_STEP_NS);
        let long = EarlyEnd {
            after_ns: 100_000_000,
            ..ends[0]
        };
        let mid = EarlyEnd {
            after_ns: 20_000_000,
            ..ends[0]
        };
        assert_eq!(watch_period(&[long]), CONTROL_STEP_NS);
        assert_eq!(watch_period(&[long, mid]), 20_000_000);
    }

    #[test]
    fn stop_flag_aborts() {
        let p = plan(
            r#"
[[threads]]
name = "a"
policy = "other"
steps = [ { mark = "s" }, { sleep = "10 s" }, { mark = "e" } ]
[metrics.w]
from = "a.s"
to = "a.e"
"#,
        );
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            s2.store(true, Ordering::SeqCst);
        });
        let t0 = now_ns();
        let r = run_trial(&p, 20_000_000_000, &stop);
        assert_eq!(r.status, TrialStatus::Aborted);
        assert!(now_ns() - t0 < 2_000_000_000);
    }
}
