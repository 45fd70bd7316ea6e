//! Why one xrun happened, for threads xrunrig did not make: which audio thread was
//! still in its cycle at the deadline (woken for it and not done: running, runnable, or
//! blocked on a PI lock), and what kept it there — its own work ("self"), another task
//! on its CPU, interrupt handlers, or a lock holder that could not run (and why not).
//! The trace side is `instruments::story`, the same explainer the livefx rig's misses
//! use.

use crate::instruments::parse::Ev;
use crate::instruments::story::{self, PiWait, State, Trace};
use results::watch::{Cause, Task};

/// An audio thread, as watch found it.
#[derive(Debug, Clone)]
pub struct AudioThread {
    pub task: Task,
    /// The client (JACK name) or process it belongs to, for the counts per client.
    pub client: String,
    /// The server's own thread (considered after the clients').
    pub server: bool,
}

/// One cycle: its start and deadline (CLOCK_MONOTONIC ns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cycle {
    pub start_ns: u64,
    pub deadline_ns: u64,
    pub frame: Option<u64>,
}

/// One xrun explained.
#[derive(Debug, Clone, PartialEq)]
pub struct Explained {
    pub cause: Cause,
    pub why: String,
    pub cycle: Option<Cycle>,
    pub late: Option<Task>,
    pub client: Option<String>,
    /// The thread of the late thread's process it waited for (a worker it drives).
    pub waited_for: Option<Task>,
    pub culprit: Option<Task>,
    pub interrupt: Option<String>,
    pub holder: Option<Task>,
    pub boost: Option<String>,
    pub spent: story::Spent,
    pub culprit_ns: Option<u64>,
    /// How the sentence names the late thread (the start of `why`).
    pub subject: String,
    /// The live line's short form: "late 1.9 ms: CPU2 ran 'irq/45-nvme' (FIFO 50)".
    pub short: String,
}

/// A task seen in the trace, named with what /proc still says of it.
fn task_of(t: &Trace, tid: i32, prio: i32, known: &[AudioThread]) -> Task {
    if let Some(a) = known.iter().find(|a| a.task.tid == tid) {
        return a.task.clone();
    }
    let now =
        crate::watch::threads::pid_of(tid).and_then(|pid| crate::watch::threads::thread(pid, tid));
    let policy = match &now {
        // /proc knows FIFO from RR; the trace's priority is the one at that moment.
        Some(th) if th.is_rt() && prio < 100 => {
            let name = if th.policy == 2 { "RR" } else { "FIFO" };
            format!("{name} {}", 99 - prio)
        }
        _ => story::fifo(prio),
    };
    Task {
        comm: t.comm(tid),
        tid,
        pid: now.as_ref().map(|th| th.pid),
        process: now.map(|th| th.process),
        policy,
    }
}

fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

/// Whether `th` was still in the cycle at the deadline: (state there, PI owner). The
/// state is read just before the deadline (threads the next cycle wakes are not late
/// for this one), and a thread running or runnable must have spent a tenth of the cycle
/// so (one that just woke near the boundary is not what the cycle waited for).
fn in_cycle(t: &Trace, th: &AudioThread, c: &Cycle, woke: u64) -> Option<(State, Option<PiWait>)> {
    let tid = th.task.tid;
    let window = c.deadline_ns.saturating_sub(c.start_ns);
    let at = c.deadline_ns - (window / 50).min(100_000);
    let st = story::state_at(t, tid, at);
    match st {
        State::Running { .. } | State::Runnable { .. } => {
            let s = story::spent(t, tid, c.start_ns, at);
            (s.running_ns + s.runnable_ns >= window / 10).then_some((st, None))
        }
        // The cycle's start is the server's nominal one (JACK's DLL): its threads may
        // wake a little before it. A thread still in a cycle set going earlier fell
        // asleep after that wake.
        State::Asleep { since, .. } if since + window / 10 >= c.start_ns || since >= woke => {
            // Asleep mid-cycle on a PI lock: the kernel boosted the owner for it.
            let from = since.min(c.start_ns.saturating_sub(window / 10));
            story::pi_owner(t, tid, from, at).map(|o| (st, Some(o)))
        }
        _ => None,
    }
}

/// The process (thread group) of a thread: from what watch found, else /proc now.
fn pid_of(audio: &[AudioThread], tid: i32) -> Option<i32> {
    audio
        .iter()
        .find(|a| a.task.tid == tid)
        .and_then(|a| a.task.pid)
        .or_else(|| crate::watch::threads::pid_of(tid))
}

/// The last time in `[a, b]` another process woke `th`: how JACK (the server, or the
/// client before it in the graph) and PipeWire (the driver) start a client's process
/// thread each cycle. A thread only its own process wakes (an app's worker, a
/// render-ahead thread) is never that.
fn graph_wake(t: &Trace, th: &AudioThread, audio: &[AudioThread], a: u64, b: u64) -> Option<u64> {
    let own = th.task.pid?;
    t.between(a, b).iter().rev().find_map(|r| match &r.ev {
        // A timer's or a device's wake-up runs in interrupt context on whatever task
        // was current: not a wake by that task's process.
        Ev::Waking { pid, .. }
            if *pid == th.task.tid && !r.in_interrupt() && pid_of(audio, r.pid) != Some(own) =>
        {
            Some(r.ts_ns)
        }
        _ => None,
    })
}

/// Whether a process thread was still at cycle `c` at its deadline: set going in it (or
/// still at the one before, never having slept), and not done. When; None if not.
fn started(t: &Trace, th: &AudioThread, audio: &[AudioThread], c: &Cycle) -> Option<u64> {
    let window = c.deadline_ns.saturating_sub(c.start_ns);
    let from = c.start_ns.saturating_sub(window / 10);
    if let Some(w) = graph_wake(t, th, audio, from, c.deadline_ns) {
        return Some(w);
    }
    // Still in a cycle set going earlier and never finished: running or runnable all
    // along (an overrun), or asleep on a PI lock whose holder cannot run (JACK counts
    // an xrun for every cycle it finds that client unfinished). Finishing a cycle is a
    // sleep that is not on a PI lock.
    let tid = th.task.tid;
    let look = window.saturating_mul(64).min(250_000_000);
    let before = graph_wake(t, th, audio, from.saturating_sub(look), from)?;
    let at = c.deadline_ns - (window / 50).min(100_000);
    let sleeps = t
        .between(before, at)
        .iter()
        .filter(|r| {
            matches!(&r.ev, Ev::Switch { prev_pid, prev_state, .. }
                if *prev_pid == tid && !prev_state.starts_with('R'))
        })
        .count();
    match story::state_at(t, tid, at) {
        State::Running { .. } | State::Runnable { .. } => (sleeps == 0).then_some(before),
        State::Asleep { since, .. } => {
            (sleeps == 1 && story::pi_owner(t, tid, since, at).is_some()).then_some(before)
        }
        State::Unknown => None,
    }
}

/// The threads of `p`'s own process that `p` woke in `[from, to]`, in order (the
/// workers a process callback hands its cycle to).
fn helpers<'a>(
    t: &Trace,
    p: &AudioThread,
    audio: &'a [AudioThread],
    from: u64,
    to: u64,
) -> Vec<&'a AudioThread> {
    let mut out: Vec<&AudioThread> = Vec::new();
    for r in t.between(from, to) {
        if let Ev::Waking { pid, .. } = &r.ev
            && r.pid == p.task.tid
            && !r.in_interrupt()
            && let Some(h) = audio.iter().find(|a| {
                a.task.tid == *pid && a.task.pid == p.task.pid && a.task.tid != p.task.tid
            })
            && !out.iter().any(|o| o.task.tid == h.task.tid)
        {
            out.push(h);
        }
    }
    out
}

/// Explains an xrun reported in the window `recs` covers, trying `cycles` from the
/// latest: the first whose deadline finds a client's process thread (one the server or
/// an upstream client set going) still in its cycle, itself or through a worker of its
/// own process it waits for; then the server's own threads.
pub fn explain(
    recs: &[crate::instruments::parse::Record],
    cycles: &[Cycle],
    audio: &[AudioThread],
) -> Explained {
    let t = Trace::new(recs);
    for c in cycles.iter().rev() {
        // Process threads set going in this cycle, the earliest first (upstream).
        let mut procs: Vec<(u64, &AudioThread)> = audio
            .iter()
            .filter(|a| !a.server)
            .filter_map(|a| started(&t, a, audio, c).map(|w| (w, a)))
            .collect();
        procs.sort_by_key(|(w, a)| (*w, a.task.tid));
        for (woke, p) in &procs {
            if let Some((st, pi)) = in_cycle(&t, p, c, *woke) {
                return story_of(&t, p, st, pi, *c, audio);
            }
            let window = c.deadline_ns.saturating_sub(c.start_ns);
            let at = c.deadline_ns - (window / 50).min(100_000);
            if matches!(story::state_at(&t, p.task.tid, at), State::Asleep { .. }) {
                for h in helpers(&t, p, audio, *woke, at) {
                    if let Some((st, pi)) = in_cycle(&t, h, c, *woke) {
                        return through(p, story_of(&t, h, st, pi, *c, audio));
                    }
                }
            }
        }
        // The server's own threads (its driver thread late, say).
        for a in audio.iter().filter(|a| a.server) {
            if let Some((st, pi)) = in_cycle(&t, a, c, c.start_ns) {
                return story_of(&t, a, st, pi, *c, audio);
            }
        }
    }
    let c = cycles.last().copied();
    Explained {
        cause: Cause::Unexplained,
        why: "no client's process thread was still in its cycle at the deadline, nor the \
              server's (a late driver or timer, or a cause outside the trace)"
            .into(),
        cycle: c,
        late: None,
        client: None,
        waited_for: None,
        culprit: None,
        interrupt: None,
        holder: None,
        boost: None,
        spent: story::Spent::default(),
        culprit_ns: None,
        subject: String::new(),
        short: "no audio thread behind at the deadline".into(),
    }
}

/// `h`'s story told as the reason `p` (the process thread waiting for it) was late.
fn through(p: &AudioThread, h: Explained) -> Explained {
    let Some(hl) = h.late.clone() else {
        return h;
    };
    let rest = h
        .why
        .strip_prefix(&h.subject)
        .unwrap_or(&h.why)
        .trim_start();
    let subject = if p.client != p.task.comm {
        format!("{} of '{}'", p.task.named(), p.client)
    } else {
        p.task.named()
    };
    Explained {
        why: format!("{subject} waited for {}, which {rest}", hl.named()),
        subject,
        short: format!("{} waited for {}: {}", p.task.comm, hl.comm, h.short),
        late: Some(p.task.clone()),
        client: Some(p.client.clone()),
        waited_for: Some(hl),
        ..h
    }
}

/// An xrun counted and timestamped with no trace to explain it (`reason` says why).
pub fn no_trace(cycles: &[Cycle], reason: &str) -> Explained {
    Explained {
        cause: Cause::NoTrace,
        why: format!("not explained: {reason}"),
        cycle: cycles.last().copied(),
        late: None,
        client: None,
        waited_for: None,
        culprit: None,
        interrupt: None,
        holder: None,
        boost: None,
        spent: story::Spent::default(),
        culprit_ns: None,
        subject: String::new(),
        short: format!("not explained: {reason}"),
    }
}

fn story_of(
    t: &Trace,
    a: &AudioThread,
    st: State,
    pi: Option<PiWait>,
    c: Cycle,
    audio: &[AudioThread],
) -> Explained {
    let late = a.task.clone();
    // The client says whose thread it is where the thread's name does not.
    let subject = if a.client != late.comm && a.client != late.process.clone().unwrap_or_default() {
        format!("{} of '{}'", late.named(), a.client)
    } else {
        late.named()
    };
    let window = c.deadline_ns.saturating_sub(c.start_ns).max(1);
    let s = story::spent(t, late.tid, c.start_ns, c.deadline_ns);
    let stolen: u64 = s.stolen.iter().map(|x| x.ns).sum();
    let mut e = Explained {
        cause: Cause::Unexplained,
        why: String::new(),
        cycle: Some(c),
        late: Some(late.clone()),
        client: Some(a.client.clone()),
        waited_for: None,
        culprit: None,
        interrupt: None,
        holder: None,
        boost: None,
        spent: s.clone(),
        culprit_ns: None,
        subject: subject.clone(),
        short: String::new(),
    };
    if let Some(PiWait {
        owner,
        oldprio: old,
        newprio: new,
        at: since,
    }) = pi
    {
        // The holder named at its own priority; the boost is said apart.
        let holder = task_of(t, owner, old, audio);
        let (text, _stuck) = story::holder_story(t, owner, c.deadline_ns);
        let hs = story::spent(t, owner, since, c.deadline_ns);
        e.cause = Cause::PiChain;
        e.boost = Some(story::fifo(new));
        // The holder could not run because of whoever held its CPU; if it ran, its own
        // work with the lock held is what the waiter waited for.
        match hs.behind.first().filter(|b| b.ns >= hs.running_ns) {
            Some(b) => {
                e.culprit = Some(task_of(t, b.pid, b.prio, audio));
                e.culprit_ns = Some(b.ns);
            }
            None => {
                e.culprit = Some(holder.clone());
                e.culprit_ns = Some(hs.running_ns);
            }
        }
        e.why = format!(
            "{} waited on a PI lock held by {}:{}",
            subject,
            holder.named(),
            text
        );
        e.short =
            format!(
                "{} waited {} on a lock held by '{}'{}",
                late.comm,
                ms(c.deadline_ns.saturating_sub(since)),
                holder.comm,
                e.culprit.as_ref().filter(|x| x.tid != holder.tid).map_or(
                    String::new(),
                    |x| format!(", itself behind '{}' ({})", x.comm, x.policy)
                )
            );
        e.holder = Some(holder);
        return e;
    }
    let cpu = match st {
        State::Running { cpu, .. } | State::Runnable { cpu, .. } => cpu,
        _ => 0,
    };
    let preempted = matches!(st, State::Runnable { .. }) || s.runnable_ns * 2 >= window;
    // The idle task is never a culprit: a thread runnable while its CPU stayed idle
    // was woken late (the CPU leaving a deep idle state, the wake-up's IPI or timer
    // delayed), and that is what is said.
    let idle_ns: u64 = s.behind.iter().filter(|b| b.pid == 0).map(|b| b.ns).sum();
    let busy = s.behind.iter().find(|b| b.pid != 0);
    if preempted && idle_ns > 0 && busy.is_none_or(|b| b.ns < idle_ns) {
        let idle_cpu = s.behind.iter().find(|b| b.pid == 0).map_or(cpu, |b| b.cpu);
        let by = s.woken.map(|(ts, pid)| {
            format!(
                "; woken {} into the cycle by {}",
                ms(ts.saturating_sub(c.start_ns)),
                if pid == 0 {
                    "an interrupt on an idle CPU".to_string()
                } else {
                    format!("'{}' (tid {pid})", t.comm(pid))
                }
            )
        });
        e.cause = Cause::LateWakeup;
        e.why = format!(
            "{} was woken but did not run: its CPU{} stayed idle {} (a late wake-up: the \
             CPU leaving a deep idle state, or the wake-up's IPI or timer delayed){}",
            subject,
            idle_cpu,
            ms(idle_ns),
            by.unwrap_or_default()
        );
        e.short = format!(
            "{} woken late: CPU{} idle {}",
            late.comm,
            idle_cpu,
            ms(idle_ns)
        );
        e.culprit_ns = Some(idle_ns);
        return e;
    }
    if preempted && let Some(b) = busy {
        let culprit = task_of(t, b.pid, b.prio, audio);
        e.cause = Cause::Preempted;
        e.why = format!(
            "{} was runnable but not running: CPU{} ran {}",
            subject,
            b.cpu,
            culprit.named()
        );
        e.short = format!(
            "{} late {}: CPU{} ran '{}' ({})",
            late.comm,
            ms(s.runnable_ns),
            b.cpu,
            culprit.comm,
            culprit.policy
        );
        e.culprit_ns = Some(b.ns);
        e.culprit = Some(culprit);
        return e;
    }
    if stolen * 10 >= window * 3
        && let Some(x) = s.stolen.first()
    {
        e.cause = Cause::Interrupt;
        e.why = format!(
            "{}: its CPU{} was taken by interrupt handlers: {}",
            subject, cpu, x.what
        );
        e.short = format!(
            "{} lost {} to {} on CPU{}",
            late.comm,
            ms(stolen),
            x.what,
            cpu
        );
        e.interrupt = Some(x.what.clone());
        e.culprit_ns = Some(x.ns);
        return e;
    }
    e.cause = Cause::SelfWork;
    e.why = format!(
        "{} was running its own work through the deadline (self)",
        subject
    );
    e.short = format!(
        "{} ran {} of its {} cycle itself (self)",
        late.comm,
        ms(s.running_ns),
        ms(window)
    );
    e.culprit_ns = Some(s.running_ns);
    e.culprit = Some(late);
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instruments::parse::parse_text;

    fn thread(comm: &str, tid: i32, policy: &str, server: bool) -> AudioThread {
        AudioThread {
            task: Task {
                comm: comm.into(),
                tid,
                pid: Some(tid),
                process: Some(comm.into()),
                policy: policy.into(),
            },
            client: comm.into(),
            server,
        }
    }

    fn audio() -> Vec<AudioThread> {
        vec![
            thread("jackd", 100, "FIFO 70", true),
            thread("victim", 200, "FIFO 65", false),
        ]
    }

    // The server wakes the client at 100.000; the client runs 0.2 ms, then a FIFO 99
    // spinner (pid 999999 so /proc has nothing on it) takes CPU1 past the deadline.
    const SPUN: &str = "\
 jackd-100 [000] d..3. 100.000000: sched_waking: comm=victim pid=200 prio=34 target_cpu=001
 <idle>-0 [001] d..2. 100.000010: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=victim next_pid=200 next_prio=34
 victim-200 [001] d..2. 100.000200: sched_switch: prev_comm=victim prev_pid=200 prev_prio=34 prev_state=R+ ==> next_comm=spin next_pid=999999 next_prio=0
 jackd-100 [000] d..2. 100.000300: sched_switch: prev_comm=jackd prev_pid=100 prev_prio=29 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
 spin-999999 [001] d..2. 100.020000: sched_switch: prev_comm=spin prev_pid=999999 prev_prio=0 prev_state=S ==> next_comm=victim next_pid=200 next_prio=34
";

    fn cycle() -> Cycle {
        Cycle {
            start_ns: 100_000_000_000,
            deadline_ns: 100_005_333_000,
            frame: Some(4096),
        }
    }

    #[test]
    fn a_spinner_on_the_clients_cpu_is_named() {
        let (r, _) = parse_text(SPUN);
        let e = explain(&r, &[cycle()], &audio());
        assert_eq!(e.cause, Cause::Preempted);
        assert_eq!(e.late.as_ref().unwrap().comm, "victim");
        let c = e.culprit.as_ref().unwrap();
        assert_eq!(
            (c.comm.as_str(), c.tid, c.policy.as_str()),
            ("spin", 999999, "FIFO 99")
        );
        assert_eq!(
            e.why,
            "'victim' (tid 200, FIFO 65) was runnable but not running: CPU1 ran 'spin' (tid 999999, FIFO 99)"
        );
        assert_eq!(e.culprit_ns, Some(5_133_000));
        assert!(
            e.short
                .starts_with("victim late 5.1 ms: CPU1 ran 'spin' (FIFO 99)"),
            "{}",
            e.short
        );
    }

    /// The kernel lost the spinner's switch-in (seen on this host: a FIFO 99 task a
    /// timer woke on an idle CPU, its sched_switch missing while records in its own
    /// context follow): the spinner is still who held the CPU, not the idle task.
    #[test]
    fn a_spinner_whose_switch_in_was_lost_is_still_named() {
        let lost = "\
 <idle>-0 [001] d.h3. 99.999000: sched_waking: comm=spin pid=999999 prio=0 target_cpu=001
 jackd-100 [000] d..3. 100.000000: sched_waking: comm=victim pid=200 prio=34 target_cpu=001
 spin-999999 [001] d.h1. 100.000500: ipi_send_cpu: cpu=0 callsite=generic_exec_single+0x36/0x150 callback=x+0x0/0x10
 spin-999999 [001] ..s.. 100.004000: softirq_entry: vec=7 [action=SCHED]
 spin-999999 [001] ..s.. 100.004003: softirq_exit: vec=7 [action=SCHED]
 spin-999999 [001] d..2. 100.020000: sched_switch: prev_comm=spin prev_pid=999999 prev_prio=0 prev_state=S ==> next_comm=victim next_pid=200 next_prio=34
";
        let (r, _) = parse_text(lost);
        let e = explain(&r, &[cycle()], &audio());
        assert_eq!(e.cause, Cause::Preempted, "{}", e.why);
        let c = e.culprit.as_ref().unwrap();
        assert_eq!((c.tid, c.policy.as_str()), (999999, "FIFO 99"), "{}", e.why);
    }

    /// The case: "jackd late 5.5 ms: CPU0 ran '<idle>'". A client woken while
    /// its CPU is idle that is switched in only after the deadline was woken late; the
    /// idle task is not named a culprit.
    #[test]
    fn an_idle_cpu_is_never_the_culprit() {
        let t = "\
 victim-200 [001] d..2. 99.999000: sched_switch: prev_comm=victim prev_pid=200 prev_prio=34 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 jackd-100 [000] d..3. 100.000000: sched_waking: comm=victim pid=200 prio=34 target_cpu=001
 <idle>-0 [001] d..2. 100.008000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=victim next_pid=200 next_prio=34
";
        let (r, _) = parse_text(t);
        let e = explain(&r, &[cycle()], &audio());
        assert_eq!(e.cause, Cause::LateWakeup, "{}", e.why);
        assert!(e.culprit.is_none(), "{:?}", e.culprit);
        assert!(
            !e.why.contains("<idle>") && !e.why.contains("tid 0"),
            "{}",
            e.why
        );
        assert!(e.why.contains("CPU1 stayed idle"), "{}", e.why);
        assert!(
            e.short.starts_with("victim woken late: CPU1 idle"),
            "{}",
            e.short
        );
    }

    #[test]
    fn a_client_running_through_the_deadline_is_self() {
        let t = "\
 jackd-100 [000] d..3. 100.000000: sched_waking: comm=victim pid=200 prio=34 target_cpu=001
 <idle>-0 [001] d..2. 100.000010: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=victim next_pid=200 next_prio=34
 victim-200 [001] d..2. 100.008000: sched_switch: prev_comm=victim prev_pid=200 prev_prio=34 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
        let (r, _) = parse_text(t);
        let e = explain(&r, &[cycle()], &audio());
        assert_eq!(e.cause, Cause::SelfWork);
        assert_eq!(e.culprit.as_ref().unwrap().tid, 200);
        assert!(e.why.ends_with("(self)"), "{}", e.why);
    }

    #[test]
    fn a_pi_chain_names_holder_boost_and_hog() {
        // victim blocks on a PI lock held by holder (FIFO 10 -> boosted to 65), which a
        // FIFO 90 hog keeps off CPU0.
        let t = "\
 holder-999300 [000] d..2. 99.990000: sched_switch: prev_comm=holder prev_pid=999300 prev_prio=89 prev_state=R+ ==> next_comm=hog next_pid=999301 next_prio=9
 jackd-100 [000] d..3. 100.000000: sched_waking: comm=victim pid=200 prio=34 target_cpu=001
 <idle>-0 [001] d..2. 100.000010: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=victim next_pid=200 next_prio=34
 victim-200 [001] d..3. 100.000100: sched_pi_setprio: comm=holder pid=999300 oldprio=89 newprio=34
 victim-200 [001] d..2. 100.000110: sched_switch: prev_comm=victim prev_pid=200 prev_prio=34 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 hog-999301 [000] d..2. 100.010000: sched_switch: prev_comm=hog prev_pid=999301 prev_prio=9 prev_state=S ==> next_comm=holder next_pid=999300 next_prio=34
";
        let (r, _) = parse_text(t);
        // The hog and holder are gone from /proc (made-up tids): named from the trace.
        let e = explain(&r, &[cycle()], &audio());
        assert_eq!(e.cause, Cause::PiChain, "{}", e.why);
        assert_eq!(e.holder.as_ref().unwrap().tid, 999300);
        assert_eq!(e.boost.as_deref(), Some("FIFO 65"));
        assert_eq!(e.culprit.as_ref().unwrap().tid, 999301);
        assert!(
            e.why.contains("held by 'holder' (tid 999300")
                && e.why.contains("behind 'hog' (FIFO 90)"),
            "{}",
            e.why
        );
    }

    /// A DAW in one process: the callback (set going by jackd) hands the cycle to a
    /// worker, which blocks on a PI bus held by a render-ahead thread that a FIFO 99 hog
    /// keeps off CPU1. The render thread is busy at the deadline too, but nothing from
    /// outside its process set it going: the story is the callback's, through the worker.
    #[test]
    fn a_callback_waiting_for_its_worker_tells_the_workers_story() {
        let daw = |comm: &str, tid: i32, policy: &str| AudioThread {
            task: Task {
                comm: comm.into(),
                tid,
                pid: Some(500),
                process: Some("daw".into()),
                policy: policy.into(),
            },
            client: "daw".into(),
            server: false,
        };
        let audio = vec![
            thread("jackd", 100, "FIFO 70", true),
            daw("daw", 501, "FIFO 65"),
            daw("live", 502, "FIFO 60"),
            daw("render", 503, "FIFO 10"),
        ];
        let t = "\
 render-503 [001] d..2. 99.990000: sched_switch: prev_comm=render prev_pid=503 prev_prio=89 prev_state=R+ ==> next_comm=hog next_pid=999301 next_prio=0
 jackd-100 [000] d..3. 100.000000: sched_waking: comm=daw pid=501 prio=34 target_cpu=000
 <idle>-0 [000] d..2. 100.000010: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=daw next_pid=501 next_prio=34
 daw-501 [000] d..3. 100.000020: sched_waking: comm=live pid=502 prio=39 target_cpu=002
 daw-501 [000] d..2. 100.000030: sched_switch: prev_comm=daw prev_pid=501 prev_prio=34 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
 <idle>-0 [002] d..2. 100.000040: sched_switch: prev_comm=swapper/2 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=live next_pid=502 next_prio=39
 live-502 [002] d..3. 100.000100: sched_pi_setprio: comm=render pid=503 oldprio=89 newprio=39
 live-502 [002] d..2. 100.000110: sched_switch: prev_comm=live prev_pid=502 prev_prio=39 prev_state=S ==> next_comm=swapper/2 next_pid=0 next_prio=120
 hog-999301 [001] d..2. 100.020000: sched_switch: prev_comm=hog prev_pid=999301 prev_prio=0 prev_state=S ==> next_comm=render next_pid=503 next_prio=39
";
        let (r, _) = parse_text(t);
        let e = explain(&r, &[cycle()], &audio);
        assert_eq!(e.cause, Cause::PiChain, "{}", e.why);
        assert_eq!(e.late.as_ref().unwrap().tid, 501);
        assert_eq!(e.waited_for.as_ref().unwrap().tid, 502);
        assert_eq!(e.holder.as_ref().unwrap().tid, 503);
        assert_eq!(e.culprit.as_ref().unwrap().tid, 999301);
        assert!(
            e.why.starts_with("'daw' (tid 501, FIFO 65) waited for 'live' (tid 502, FIFO 60), which waited on a PI lock held by 'render' (tid 503, FIFO 10): boosted to FIFO 60"),
            "{}",
            e.why
        );
    }

    /// JACK finds a client unfinished cycle after cycle while it waits on a PI lock
    /// whose holder a hog keeps off its CPU: the xrun of a cycle after the one that set
    /// it going is that wait, not "nothing behind". Without the lock wait (the client
    /// slept: done) it stays unexplained.
    #[test]
    fn a_client_stuck_on_a_pi_lock_since_an_earlier_cycle_is_that_chain() {
        let stuck = "\
 holder-999300 [000] d..2. 99.990000: sched_switch: prev_comm=holder prev_pid=999300 prev_prio=89 prev_state=R+ ==> next_comm=hog next_pid=999301 next_prio=9
 jackd-100 [002] d..3. 99.994667: sched_waking: comm=victim pid=200 prio=34 target_cpu=001
 <idle>-0 [001] d..2. 99.994677: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=victim next_pid=200 next_prio=34
 victim-200 [001] d..3. 99.994800: sched_pi_setprio: comm=holder pid=999300 oldprio=89 newprio=34
 victim-200 [001] d..2. 99.994810: sched_switch: prev_comm=victim prev_pid=200 prev_prio=34 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 hog-999301 [000] d..2. 100.020000: sched_switch: prev_comm=hog prev_pid=999301 prev_prio=9 prev_state=S ==> next_comm=holder next_pid=999300 next_prio=34
";
        let (r, _) = parse_text(stuck);
        let e = explain(&r, &[cycle()], &audio());
        assert_eq!(e.cause, Cause::PiChain, "{}", e.why);
        assert_eq!(e.late.as_ref().unwrap().tid, 200);
        assert_eq!(e.holder.as_ref().unwrap().tid, 999300);
        assert_eq!(e.culprit.as_ref().unwrap().tid, 999301);
        // The same client done with its cycle before this one: nothing of it is late.
        let done = stuck.replace(
            " victim-200 [001] d..3. 99.994800: sched_pi_setprio: comm=holder pid=999300 oldprio=89 newprio=34\n",
            "",
        );
        let (r, _) = parse_text(&done);
        let e = explain(&r, &[cycle()], &audio());
        assert_eq!(e.cause, Cause::Unexplained, "{}", e.why);
    }

    #[test]
    fn nothing_behind_at_the_deadline_is_unexplained() {
        let t = "\
 jackd-100 [000] d..3. 100.000000: sched_waking: comm=victim pid=200 prio=34 target_cpu=001
 <idle>-0 [001] d..2. 100.000010: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=victim next_pid=200 next_prio=34
 victim-200 [001] d..2. 100.000500: sched_switch: prev_comm=victim prev_pid=200 prev_prio=34 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
        let (r, _) = parse_text(t);
        let e = explain(&r, &[cycle()], &audio());
        assert_eq!(e.cause, Cause::Unexplained);
        assert!(e.late.is_none());
    }
}
