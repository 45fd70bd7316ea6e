//! The real-time side of livefx: the process callback and its worker threads.
//!
//! Each cycle the callback publishes a sequence number; W pinned FIFO workers wake on it,
//! run their plugins (calibrated CPU work, some under shared PI mutexes) and report back;
//! the callback waits for all of them, bounded by the cycle deadline, then returns. What
//! the cycle looked like leaves through an `rtrb` queue to a normal-priority writer.
//! Rules here: no allocation, no I/O, no printing, no non-PI locks, every wait bounded.

use super::config::{PluginCfg, WorkerCfg};
use super::loopback::{Checker, Generator};
use crate::audio::{Cycle, Process};
use crate::engine::pimutex::PiMutex;
use crate::engine::sync::{futex_wait_until, futex_wake_all};
use crate::engine::thread::{Sched, apply_current};
use crate::rig::Protocol;
use crate::sys::{gettid, now_ns, thread_cpu_ns};
use crossbeam::utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

// A cycle's flags, as cycles/*.bin stores them (the results format owns the bits).
pub const FLAG_MISS: u32 = results::livefx::cycles::F_MISS;
pub const FLAG_XRUN: u32 = results::livefx::cycles::F_XRUN;
pub const FLAG_INJECTED: u32 = results::livefx::cycles::F_INJECTED;
pub const FLAG_DISCONTINUITY: u32 = results::livefx::cycles::F_DISCONTINUITY;
pub const NO_WORKER: u8 = results::livefx::cycles::NO_WORKER;

/// The RT threads' hook (the engine's, shared): the callback and each worker mark
/// themselves when they enter their RT loop.
pub use crate::engine::thread::RT_HOOK;
use crate::engine::thread::rt_mark;

/// One cycle as measured on the RT thread (all times CLOCK_MONOTONIC ns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rec {
    pub index: u64,
    pub start_ns: u64,
    pub wake_ns: u64,
    pub end_ns: u64,
    pub deadline_ns: u64,
    pub flags: u32,
    pub last_worker: u8,
    pub max_wake_ns: u32,
    /// Xruns the backend found on its RT path that belong to this cycle.
    pub xruns: u32,
    pub injected_ns: u32,
    /// On a miss: the waited worker the cycle waited for (NO_WORKER: none), the lock it
    /// waited for (0: none, else index + 1), that lock's holder (tid, 0: unknown) and how
    /// long it had waited for it (ns).
    pub cause_worker: u8,
    pub cause_lock: u8,
    pub holder_tid: i32,
    pub lock_wait_ns: u64,
    /// When that wait began (CLOCK_MONOTONIC ns, 0: no wait).
    pub lock_since_ns: u64,
    /// The worker had not started this cycle: 1 = it had finished the previous one and
    /// was not awake yet, 2 = it was still busy with an earlier one; 0 = it had started.
    pub cause_behind: u8,
}

impl Default for Rec {
    /// A cycle with nothing to blame: no cause worker.
    fn default() -> Rec {
        Rec {
            index: 0,
            start_ns: 0,
            wake_ns: 0,
            end_ns: 0,
            deadline_ns: 0,
            flags: 0,
            last_worker: 0,
            max_wake_ns: 0,
            xruns: 0,
            injected_ns: 0,
            cause_worker: NO_WORKER,
            cause_lock: 0,
            holder_tid: 0,
            lock_wait_ns: 0,
            lock_since_ns: 0,
            cause_behind: 0,
        }
    }
}

/// One hold of a lock by a worker: which bursts of background load caught a holder.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Hold {
    pub acquired_ns: u64,
    pub released_ns: u64,
    pub worker: u8,
    pub lock: u8,
    /// The CPU it held the lock on when it took it.
    pub cpu: u16,
}

/// Per worker hold queue length: the writer drains every 5 ms.
pub const HOLD_QUEUE: usize = 1 << 14;

struct Slot {
    /// The callback waits for this worker.
    waited: bool,
    seq: AtomicU32,
    wake_ns: AtomicU64,
    end_ns: AtomicU64,
    tid: AtomicI32,
    /// While blocked on a lock: its index + 1 (0: not waiting), holder tid, since when.
    wait_lock: AtomicU32,
    wait_holder: AtomicI32,
    wait_since: AtomicU64,
    /// The cycle's longest lock wait (lock index + 1, holder tid, ns), set before `seq`.
    cyc_lock: AtomicU32,
    cyc_holder: AtomicI32,
    cyc_wait_ns: AtomicU64,
    cyc_since: AtomicU64,
    /// The cycle it is working on (set on wake-up).
    started: AtomicU32,
}

/// What the callback and the workers share. Written by the callback (`go` and what it
/// publishes with it), by the workers (`done`) and per worker (each slot): each on its
/// own cache line, so a worker reporting does not take the line the others read.
pub struct Shared {
    go: CachePadded<AtomicU32>,
    /// Workers asleep (or about to sleep) on `go`: the callback makes the wake system
    /// call only when there is one.
    go_sleepers: AtomicU32,
    publish_ns: AtomicU64,
    /// Bound on a cycle's plugin work: past it a worker gives the cycle up.
    hard_ns: AtomicU64,
    done: CachePadded<AtomicU32>,
    /// 1 while the callback is asleep (or about to sleep) on `done`: workers make the
    /// wake system call only then.
    done_sleeping: AtomicU32,
    abort: CachePadded<AtomicBool>,
    slots: Box<[CachePadded<Slot>]>,
    locks: Vec<PiMutex>,
    ready: AtomicU32,
    setup_error: Mutex<Option<String>>,
}

impl Shared {
    /// `waited`: per worker, whether the callback waits for it.
    pub fn new(waited: &[bool], protocols: &[Protocol]) -> Result<Arc<Shared>, String> {
        let locks = protocols
            .iter()
            .map(|p| PiMutex::new(*p).map_err(|e| format!("cannot create a lock: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Arc::new(Shared {
            go: CachePadded::new(AtomicU32::new(0)),
            go_sleepers: AtomicU32::new(0),
            publish_ns: AtomicU64::new(0),
            hard_ns: AtomicU64::new(0),
            done: CachePadded::new(AtomicU32::new(0)),
            done_sleeping: AtomicU32::new(0),
            abort: CachePadded::new(AtomicBool::new(false)),
            slots: waited
                .iter()
                .map(|&w| {
                    CachePadded::new(Slot {
                        waited: w,
                        seq: AtomicU32::new(0),
                        wake_ns: AtomicU64::new(0),
                        end_ns: AtomicU64::new(0),
                        tid: AtomicI32::new(0),
                        wait_lock: AtomicU32::new(0),
                        wait_holder: AtomicI32::new(0),
                        wait_since: AtomicU64::new(0),
                        cyc_lock: AtomicU32::new(0),
                        cyc_holder: AtomicI32::new(0),
                        cyc_wait_ns: AtomicU64::new(0),
                        cyc_since: AtomicU64::new(0),
                        started: AtomicU32::new(0),
                    })
                })
                .collect(),
            locks,
            ready: AtomicU32::new(0),
            setup_error: Mutex::new(None),
        }))
    }

    pub fn tids(&self) -> Vec<i32> {
        self.slots
            .iter()
            .map(|s| s.tid.load(Ordering::SeqCst))
            .collect()
    }
}

/// Busy for `ns` of this thread's CPU time, as the engine's `run` step; gives up at `hard_ns`.
#[inline]
fn burn_cpu(ns: u64, hard_ns: u64, abort: &AtomicBool) {
    let target = thread_cpu_ns() + ns;
    while thread_cpu_ns() < target {
        if abort.load(Ordering::Relaxed) || now_ns() >= hard_ns {
            return;
        }
    }
}

#[inline]
fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// The CPU this thread runs on now (vDSO, no system call on x86).
#[inline]
fn this_cpu() -> u16 {
    // SAFETY: no arguments; returns -1 on error.
    let c = unsafe { libc::sched_getcpu() };
    c.clamp(0, u16::MAX as i32) as u16
}

/// Runs worker `me`'s plugins once. Returns the cycle's longest lock wait: (lock index
/// + 1 or 0, the holder's tid when the wait began, ns, when it began).
fn run_plugins(
    sh: &Shared,
    me: usize,
    plugins: &[PluginCfg],
    hard: u64,
    rng: &mut u64,
    holds: &mut rtrb::Producer<Hold>,
) -> (u32, i32, u64, u64) {
    let slot = &sh.slots[me];
    let mut worst = (0u32, 0i32, 0u64, 0u64);
    for p in plugins {
        let work = p.work_ns
            + if p.jitter_ns > 0 {
                xorshift(rng) % p.jitter_ns
            } else {
                0
            };
        let Some(l) = p.lock else {
            burn_cpu(work, hard, &sh.abort);
            continue;
        };
        let m = &sh.locks[l];
        let t_try = now_ns();
        let got = match m.raw_trylock() {
            Ok(true) => true,
            Ok(false) => {
                // Published before blocking, so a callback that gives up on this
                // worker can say what it waits for and who holds it.
                let holder = m.owner_tid();
                slot.wait_holder.store(holder, Ordering::Relaxed);
                slot.wait_since.store(t_try, Ordering::Relaxed);
                slot.wait_lock.store(l as u32 + 1, Ordering::Release);
                // A lock not had by the bound means the cycle is lost anyway: skip the work.
                let ok = m.raw_lock_until(hard).is_ok();
                slot.wait_lock.store(0, Ordering::Release);
                let waited = now_ns().saturating_sub(t_try);
                if waited >= worst.2 {
                    worst = (l as u32 + 1, holder, waited, t_try);
                }
                ok
            }
            Err(_) => false,
        };
        if got {
            let (acquired, cpu) = (now_ns(), this_cpu());
            burn_cpu(work, hard, &sh.abort);
            // Read before the unlock: after it the next holder may stamp its acquire
            // first, and the two holds would seem to overlap.
            let released = now_ns();
            let _ = m.raw_unlock();
            // A full queue loses a hold, never blocks: the writer counts what it got.
            let _ = holds.push(Hold {
                acquired_ns: acquired,
                released_ns: released,
                worker: me.min(254) as u8,
                lock: l.min(254) as u8,
                cpu,
            });
        }
    }
    worst
}

fn worker_main(sh: Arc<Shared>, i: usize, cfg: WorkerCfg, mut holds: rtrb::Producer<Hold>) {
    let slot = &sh.slots[i];
    slot.tid.store(gettid(), Ordering::SeqCst);
    // Raised while still on the creator's free CPU, then pinned (engine::thread's order).
    // Unpinned means any online CPU, not the control thread's CPU it inherited.
    let cpus = if cfg.cpus.is_empty() {
        crate::sys::online_cpus()
    } else {
        cfg.cpus.clone()
    };
    if let Err(e) = apply_current(&Sched::fifo(cfg.priority, cpus)) {
        if let Ok(mut g) = sh.setup_error.lock() {
            g.get_or_insert(format!("worker {}: {e}", cfg.name));
        }
        sh.ready.fetch_add(1, Ordering::SeqCst);
        return;
    }
    let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (i as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D);
    let plugins = &cfg.plugins[..];
    let mut last = sh.go.load(Ordering::Acquire);
    crate::sys::prefault_stack();
    sh.ready.fetch_add(1, Ordering::SeqCst);
    rt_mark(true);
    loop {
        if sh.abort.load(Ordering::Acquire) {
            break;
        }
        let seq = sh.go.load(Ordering::Acquire);
        if seq == last {
            // Announced before the re-check (both SeqCst): either this sees the callback's
            // new `go`, or the callback sees a sleeper and wakes it.
            sh.go_sleepers.fetch_add(1, Ordering::SeqCst);
            if sh.go.load(Ordering::SeqCst) == last {
                // Bounded: wakes at least every 100 ms to look at the abort flag.
                futex_wait_until(&sh.go, last, now_ns() + 100_000_000);
            }
            sh.go_sleepers.fetch_sub(1, Ordering::SeqCst);
            continue;
        }
        last = seq;
        slot.started.store(seq, Ordering::Release);
        let wake = now_ns();
        slot.wake_ns.store(wake, Ordering::Relaxed);
        let hard = sh.hard_ns.load(Ordering::Acquire);
        let (lk, holder, waited, since) = run_plugins(&sh, i, plugins, hard, &mut rng, &mut holds);
        slot.cyc_since.store(since, Ordering::Relaxed);
        slot.cyc_lock.store(lk, Ordering::Relaxed);
        slot.cyc_holder.store(holder, Ordering::Relaxed);
        slot.cyc_wait_ns.store(waited, Ordering::Relaxed);
        slot.end_ns.store(now_ns(), Ordering::Relaxed);
        slot.seq.store(seq, Ordering::Release);
        sh.done.fetch_add(1, Ordering::SeqCst);
        if sh.done_sleeping.load(Ordering::SeqCst) != 0 {
            futex_wake_all(&sh.done);
        }
    }
    rt_mark(false);
}

/// The running workers of one trial.
pub struct Workers {
    pub shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Starts every worker and waits (bounded) until each is raised and pinned. Returns
    /// the workers and, per worker, the queue its lock holds arrive on.
    pub fn start(
        sh: Arc<Shared>,
        cfgs: &[WorkerCfg],
    ) -> Result<(Workers, Vec<rtrb::Consumer<Hold>>), String> {
        let mut handles = Vec::new();
        let mut consumers = Vec::new();
        for (i, c) in cfgs.iter().enumerate() {
            let (sh2, c2) = (sh.clone(), c.clone());
            let (tx, rx) = rtrb::RingBuffer::new(HOLD_QUEUE);
            consumers.push(rx);
            let h = std::thread::Builder::new()
                .name(format!("fx-{}", c.name).chars().take(15).collect())
                .spawn(move || worker_main(sh2, i, c2, tx));
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    let w = Workers {
                        shared: sh.clone(),
                        handles,
                    };
                    w.stop();
                    return Err(format!("cannot start worker {}: {e}", c.name));
                }
            }
        }
        let w = Workers {
            shared: sh.clone(),
            handles,
        };
        let t_end = now_ns() + 10_000_000_000;
        while (sh.ready.load(Ordering::SeqCst) as usize) < cfgs.len() && now_ns() < t_end {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let err = sh.setup_error.lock().ok().and_then(|g| g.clone());
        if let Some(e) = err {
            w.stop();
            return Err(e);
        }
        if (sh.ready.load(Ordering::SeqCst) as usize) < cfgs.len() {
            w.stop();
            return Err("workers did not start within 10 s".into());
        }
        Ok((w, consumers))
    }

    /// Ends the workers: they see the flag within their bounded waits and work.
    pub fn stop(self) {
        self.shared.abort.store(true, Ordering::SeqCst);
        self.shared.go.fetch_add(1, Ordering::SeqCst);
        futex_wake_all(&self.shared.go);
        let t_end = now_ns() + 3_000_000_000;
        for h in self.handles {
            while !h.is_finished() && now_ns() < t_end {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            if h.is_finished() {
                let _ = h.join();
            } else {
                // Last resort against a runaway FIFO worker: take its RT policy away.
                for t in self.shared.tids() {
                    crate::engine::thread::demote(t);
                }
            }
        }
    }
}

/// Counters the writer and the progress line read; updated by the RT side with relaxed
/// atomics only.
#[derive(Default)]
pub struct RtCounters {
    pub dropped: AtomicU64,
}

/// The livefx process callback.
pub struct LivefxProcess {
    sh: Arc<Shared>,
    tx: rtrb::Producer<Rec>,
    counters: Arc<RtCounters>,
    pending: Option<Rec>,
    inject_every: u64,
    inject_factor: f64,
    seq: u32,
    signal: Option<Generator>,
    check: Option<Checker>,
    /// Shared with the trial so it can read the loopback result after the run.
    loop_result: Arc<LoopResult>,
}

/// The loopback check's result, published by the RT thread with atomics.
#[derive(Default)]
pub struct LoopResult {
    pub enabled: AtomicBool,
    pub discontinuities: AtomicU64,
    /// Round trip + 1, 0 while unknown.
    pub roundtrip_plus1: AtomicU32,
}

impl LivefxProcess {
    pub fn new(
        sh: Arc<Shared>,
        tx: rtrb::Producer<Rec>,
        counters: Arc<RtCounters>,
        inject_every: u64,
        inject_factor: f64,
        loopback: bool,
        loop_result: Arc<LoopResult>,
    ) -> LivefxProcess {
        loop_result.enabled.store(loopback, Ordering::SeqCst);
        LivefxProcess {
            sh,
            tx,
            counters,
            pending: None,
            inject_every,
            inject_factor,
            seq: 0,
            signal: loopback.then(Generator::default),
            check: loopback.then(Checker::default),
            loop_result,
        }
    }

    #[inline]
    fn push(&mut self, r: Rec) {
        if self.tx.push(r).is_err() {
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Waits until every worker reported `seq`, at most until `deadline`.
    #[inline]
    fn wait_workers(&self, seq: u32, deadline: u64) -> bool {
        loop {
            let snap = self.sh.done.load(Ordering::Acquire);
            if self
                .sh
                .slots
                .iter()
                .all(|s| !s.waited || s.seq.load(Ordering::Acquire) == seq)
            {
                return true;
            }
            if now_ns() >= deadline {
                return false;
            }
            // Announced before the re-check (both SeqCst): either this sees a worker's
            // new `done`, or that worker sees the flag and wakes this.
            self.sh.done_sleeping.store(1, Ordering::SeqCst);
            if self.sh.done.load(Ordering::SeqCst) == snap {
                futex_wait_until(&self.sh.done, snap, deadline);
            }
            self.sh.done_sleeping.store(0, Ordering::Relaxed);
        }
    }
}

/// Where a worker that has not reported cycle `seq` stands: see `Rec::cause_behind`.
#[inline]
fn behind_of(s: &Slot, seq: u32) -> u8 {
    let started = s.started.load(Ordering::Acquire);
    if started == seq {
        0
    } else if s.seq.load(Ordering::Acquire) == started {
        1
    } else {
        2
    }
}

/// Whether cycle `index` gets the injected overrun: every Nth, never the first.
#[inline]
pub fn injected(index: u64, every: u64) -> bool {
    every > 0 && (index + 1).is_multiple_of(every)
}

impl Process for LivefxProcess {
    fn rt_init(&mut self) {
        rt_mark(true);
    }

    fn cycle(&mut self, c: &mut Cycle) -> bool {
        if let Some(mut p) = self.pending.take() {
            if c.xruns_before > 0 {
                p.flags |= FLAG_XRUN;
                p.xruns += c.xruns_before;
            }
            self.push(p);
        }
        let period_ns = c.deadline_ns.saturating_sub(c.start_ns).max(1);
        let mut flags = 0;
        let mut injected_ns = 0u32;
        if injected(c.index, self.inject_every) {
            flags |= FLAG_INJECTED;
            // Wall-clock burn: a known overrun whatever else runs.
            let burn = (period_ns as f64 * self.inject_factor) as u64;
            injected_ns = burn.min(u32::MAX as u64) as u32;
            let until = c.wake_ns + burn;
            while now_ns() < until {
                std::hint::spin_loop();
            }
        }
        self.seq = self.seq.wrapping_add(1).max(1);
        let seq = self.seq;
        let publish = now_ns();
        self.sh.hard_ns.store(
            c.deadline_ns.max(publish) + 2 * period_ns,
            Ordering::Release,
        );
        self.sh.publish_ns.store(publish, Ordering::Release);
        self.sh.go.store(seq, Ordering::SeqCst);
        if self.sh.go_sleepers.load(Ordering::SeqCst) != 0 {
            futex_wake_all(&self.sh.go);
        }
        if let (Some(g), Some(ch)) = (&mut self.signal, &mut self.check) {
            g.fill(c.output);
            if ch.feed(c.input) > 0 {
                flags |= FLAG_DISCONTINUITY;
            }
            self.loop_result
                .discontinuities
                .store(ch.discontinuities, Ordering::Relaxed);
            if let Some(rt) = ch.roundtrip {
                self.loop_result
                    .roundtrip_plus1
                    .store(rt + 1, Ordering::Relaxed);
            }
        }
        let all = self.wait_workers(seq, c.deadline_ns);
        let mut max_wake = 0u64;
        let (mut last, mut last_end) = (NO_WORKER, 0u64);
        for (i, s) in self.sh.slots.iter().enumerate() {
            if s.waited && s.seq.load(Ordering::Acquire) == seq {
                max_wake = max_wake.max(s.wake_ns.load(Ordering::Relaxed).saturating_sub(publish));
                let e = s.end_ns.load(Ordering::Relaxed);
                if e >= last_end {
                    last_end = e;
                    last = i.min(254) as u8;
                }
            }
        }
        let end = now_ns();
        let (mut cw, mut cl, mut ch, mut cwait) = (NO_WORKER, 0u32, 0i32, 0u64);
        let (mut csince, mut behind) = (0u64, 0u8);
        if end > c.deadline_ns || !all {
            flags |= FLAG_MISS;
            // The worker the cycle waited for: one still at work (blocked on a lock if
            // any is), else the last to finish, with its longest lock wait.
            for (i, s) in self.sh.slots.iter().enumerate() {
                if s.waited && s.seq.load(Ordering::Acquire) != seq {
                    let wl = s.wait_lock.load(Ordering::Acquire);
                    if wl > 0 {
                        let since = s.wait_since.load(Ordering::Relaxed);
                        (cw, cl) = (i.min(254) as u8, wl);
                        ch = s.wait_holder.load(Ordering::Relaxed);
                        (cwait, csince) = (end.saturating_sub(since), since);
                        behind = behind_of(s, seq);
                        break;
                    }
                    if cw == NO_WORKER {
                        cw = i.min(254) as u8;
                        behind = behind_of(s, seq);
                    }
                }
            }
            if cw == NO_WORKER && last != NO_WORKER {
                let s = &self.sh.slots[last as usize];
                cw = last;
                cl = s.cyc_lock.load(Ordering::Relaxed);
                ch = s.cyc_holder.load(Ordering::Relaxed);
                cwait = s.cyc_wait_ns.load(Ordering::Relaxed);
                csince = s.cyc_since.load(Ordering::Relaxed);
            }
        }
        self.pending = Some(Rec {
            index: c.index,
            start_ns: c.start_ns,
            wake_ns: c.wake_ns,
            end_ns: end,
            deadline_ns: c.deadline_ns,
            flags,
            last_worker: last,
            max_wake_ns: max_wake.min(u32::MAX as u64) as u32,
            xruns: 0,
            injected_ns,
            cause_worker: cw,
            cause_lock: cl.min(255) as u8,
            holder_tid: ch,
            lock_wait_ns: cwait,
            lock_since_ns: csince,
            cause_behind: behind,
        });
        true
    }

    fn end(&mut self) {
        if let Some(p) = self.pending.take() {
            self.push(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injection_every_nth_never_first() {
        let hits: Vec<u64> = (0..200).filter(|&i| injected(i, 50)).collect();
        assert_eq!(hits, vec![49, 99, 149, 199]);
        assert!(!(0..100).any(|i| injected(i, 0)));
    }

    #[test]
    fn burn_respects_the_hard_bound() {
        let t0 = now_ns();
        burn_cpu(10_000_000_000, t0 + 20_000_000, &AtomicBool::new(false));
        assert!(now_ns() - t0 < 2_000_000_000);
        let c0 = thread_cpu_ns();
        burn_cpu(5_000_000, u64::MAX, &AtomicBool::new(false));
        assert!(thread_cpu_ns() - c0 >= 5_000_000);
    }

    /// A waited FIFO 10 worker with one plugin of `work_ns` under lock 0.
    fn locked_worker(work_ns: u64) -> WorkerCfg {
        WorkerCfg {
            name: "w".into(),
            priority: 10,
            cpus: vec![],
            waited: true,
            plugins: vec![PluginCfg {
                work_ns,
                jitter_ns: 0,
                lock: Some(0),
            }],
        }
    }

    #[test]
    fn callback_waits_for_workers_and_records_them() {
        let _g = crate::engine::test_lock();
        let cfg = locked_worker(200_000);
        if !crate::testkit::root() {
            return;
        }
        let sh = Shared::new(&[true, true], &[Protocol::Inherit]).unwrap();
        let (w, holds) = Workers::start(sh.clone(), &[cfg.clone(), cfg]).unwrap();
        let (tx, mut rx) = rtrb::RingBuffer::new(64);
        let mut p = LivefxProcess::new(
            sh,
            tx,
            Arc::new(RtCounters::default()),
            3,
            0.5,
            false,
            Arc::new(LoopResult::default()),
        );
        let (inp, mut out) = (vec![0.0f32; 64], vec![0.0f32; 64]);
        for i in 0..6u64 {
            let start = now_ns();
            let mut c = Cycle {
                index: i,
                frames: 64,
                start_ns: start,
                deadline_ns: start + 100_000_000,
                wake_ns: start,
                xruns_before: u32::from(i == 4),
                input: &inp,
                output: &mut out,
            };
            assert!(p.cycle(&mut c));
        }
        p.end();
        w.stop();
        let recs: Vec<Rec> = std::iter::from_fn(|| rx.pop().ok()).collect();
        assert_eq!(recs.len(), 6);
        for r in &recs {
            assert_ne!(r.last_worker, NO_WORKER, "both workers reported: {r:?}");
            // Two 200 us plugins under one lock: at least 400 us for the callback.
            assert!(r.end_ns - r.wake_ns >= 400_000, "{r:?}");
            assert_eq!(r.flags & FLAG_MISS, 0, "{r:?}");
        }
        assert_eq!(recs[2].flags & FLAG_INJECTED, FLAG_INJECTED);
        assert!(recs[2].injected_ns >= 49_000_000);
        assert_eq!(
            recs[3].flags & FLAG_XRUN,
            FLAG_XRUN,
            "xrun before cycle 4 is cycle 3's"
        );
        assert_eq!(recs[3].xruns, 1);
        // Every cycle each worker held the lock once, and never both at the same time.
        let mut all: Vec<Hold> = holds
            .into_iter()
            .flat_map(|mut h| std::iter::from_fn(move || h.pop().ok()))
            .collect();
        assert_eq!(all.len(), 12, "{all:?}");
        all.sort_by_key(|h| h.acquired_ns);
        for w in all.windows(2) {
            assert!(w[0].released_ns <= w[1].acquired_ns, "overlap: {w:?}");
            assert!(w[0].released_ns - w[0].acquired_ns >= 200_000, "{w:?}");
        }
        assert_eq!(all.iter().filter(|h| h.worker == 1).count(), 6);
    }

    #[test]
    fn workers_and_the_callback_write_separate_cache_lines() {
        let sh = Shared::new(&[true, true, true], &[]).unwrap();
        // crossbeam pads to the line pair the CPU prefetches together (128 B on x86_64).
        let line = std::mem::align_of::<CachePadded<u8>>();
        let lines = |p: usize, len: usize| p / line..=(p + len - 1) / line;
        let slot = std::mem::size_of::<Slot>();
        let at: Vec<_> = sh
            .slots
            .iter()
            .map(|s| lines(&**s as *const Slot as usize, slot))
            .collect();
        for w in at.windows(2) {
            assert!(w[0].end() < w[1].start(), "slots share a line: {at:?}");
        }
        let go = &*sh.go as *const AtomicU32 as usize / line;
        let done = &*sh.done as *const AtomicU32 as usize / line;
        assert_ne!(go, done);
        assert!(at.iter().all(|r| !r.contains(&go) && !r.contains(&done)));
    }

    #[test]
    fn no_wake_up_is_lost_over_many_cycles() {
        // Each side makes the wake call only when the other announced it sleeps: a
        // lost wake-up would leave the callback (or a worker) asleep to the deadline.
        let _g = crate::engine::test_lock();
        if !crate::testkit::root() {
            return;
        }
        let idle = |name: &str| WorkerCfg {
            name: name.into(),
            priority: 10,
            cpus: vec![],
            waited: true,
            plugins: vec![],
        };
        // The callback at FIFO, as on a backend: a time-shared thread on a loaded machine
        // can wait out a deadline in the run queue, which is not a lost wake-up. (This
        // test's own thread, which ends with the test.)
        apply_current(&Sched::fifo(20, vec![])).unwrap();
        let sh = Shared::new(&[true, true], &[]).unwrap();
        let (w, _holds) = Workers::start(sh.clone(), &[idle("a"), idle("b")]).unwrap();
        let (tx, mut rx) = rtrb::RingBuffer::new(4096);
        let mut p = LivefxProcess::new(
            sh,
            tx,
            Arc::new(RtCounters::default()),
            0,
            0.0,
            false,
            Arc::new(LoopResult::default()),
        );
        let (inp, mut out) = (vec![0.0f32; 16], vec![0.0f32; 16]);
        for i in 0..3000u64 {
            let start = now_ns();
            let mut c = Cycle {
                index: i,
                frames: 16,
                start_ns: start,
                deadline_ns: start + 50_000_000,
                wake_ns: start,
                xruns_before: 0,
                input: &inp,
                output: &mut out,
            };
            assert!(p.cycle(&mut c));
            // Some cycles back to back (workers still awake), some after a pause
            // (workers asleep): both paths of each handshake.
            if i % 3 == 0 {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        }
        p.end();
        w.stop();
        let recs: Vec<Rec> = std::iter::from_fn(|| rx.pop().ok()).collect();
        assert_eq!(recs.len(), 3000);
        let missed: Vec<_> = recs.iter().filter(|r| r.flags & FLAG_MISS != 0).collect();
        assert!(
            missed.is_empty(),
            "{} cycles waited to their deadline: {:?}",
            missed.len(),
            missed.first()
        );
        // Well under a 50 ms deadline each: a lost wake would cost 50 ms (callback) or
        // up to 100 ms (worker).
        let slow = recs
            .iter()
            .filter(|r| r.end_ns - r.wake_ns > 40_000_000)
            .count();
        assert_eq!(slow, 0);
    }

    #[test]
    fn a_miss_names_the_lock_and_its_holder() {
        let _g = crate::engine::test_lock();
        if !crate::testkit::root() {
            return;
        }
        let sh = Shared::new(&[true], &[Protocol::Inherit]).unwrap();
        let (w, _holds) = Workers::start(sh.clone(), &[locked_worker(100_000)]).unwrap();
        let (tx, mut rx) = rtrb::RingBuffer::new(8);
        let mut p = LivefxProcess::new(
            sh.clone(),
            tx,
            Arc::new(RtCounters::default()),
            0,
            0.0,
            false,
            Arc::new(LoopResult::default()),
        );
        // This thread holds the worker's lock across the cycle's deadline.
        sh.locks[0].raw_lock_until(u64::MAX).unwrap();
        let (inp, mut out) = (vec![0.0f32; 64], vec![0.0f32; 64]);
        let start = now_ns();
        let mut c = Cycle {
            index: 0,
            frames: 64,
            start_ns: start,
            deadline_ns: start + 20_000_000,
            wake_ns: start,
            xruns_before: 0,
            input: &inp,
            output: &mut out,
        };
        assert!(p.cycle(&mut c));
        sh.locks[0].raw_unlock().unwrap();
        p.end();
        w.stop();
        let r = rx.pop().unwrap();
        assert_eq!(r.flags & FLAG_MISS, FLAG_MISS, "{r:?}");
        assert_eq!((r.cause_worker, r.cause_lock), (0, 1), "{r:?}");
        assert_eq!(r.holder_tid, gettid(), "{r:?}");
        assert!(r.lock_wait_ns >= 10_000_000, "{r:?}");
    }
}
