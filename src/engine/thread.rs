//! Scheduling a thread: policy and priority first, then CPU affinity. The order matters:
//! a thread pinned onto a CPU where a FIFO thread spins must already be FIFO itself, so
//! it is raised while still on its creator's (free) CPU, then pinned.

use crate::rig::Policy;
use thread_priority::{
    RealtimeThreadSchedulePolicy, ThreadPriority, ThreadPriorityValue, ThreadSchedulePolicy,
    unix::{set_thread_priority_and_policy, thread_native_id},
};

/// Called with `true` when a thread enters its RT loop and `false` when it leaves (the
/// engine's rig threads, livefx's callback and workers): lets a test's counting
/// allocator watch exactly the RT threads. Unset in normal runs.
pub static RT_HOOK: std::sync::OnceLock<fn(bool)> = std::sync::OnceLock::new();

#[inline]
pub fn rt_mark(on: bool) {
    if let Some(h) = RT_HOOK.get() {
        h(on);
    }
}

#[derive(Debug, Clone)]
pub struct Sched {
    pub policy: Policy,
    /// rt priority for fifo/rr; nice value for other.
    pub priority: i32,
    /// Empty: leave the affinity as inherited.
    pub cpus: Vec<usize>,
}

impl Sched {
    pub fn fifo(priority: i32, cpus: Vec<usize>) -> Sched {
        Sched {
            policy: Policy::Fifo,
            priority,
            cpus,
        }
    }
}

/// Pins thread `tid` (0 = the caller) to `cpus`.
pub fn set_affinity(tid: i32, cpus: &[usize]) -> Result<(), String> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes within it for cpu < CPU_SETSIZE.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(format!("CPU {c} is beyond CPU_SETSIZE"));
        }
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: set is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&set), &set) };
    if r == 0 {
        Ok(())
    } else {
        Err(format!(
            "cannot pin to CPUs {}: {}",
            crate::sys::format_cpu_set(cpus),
            std::io::Error::last_os_error()
        ))
    }
}

/// The CPUs the caller may run on now.
pub fn current_affinity() -> Vec<usize> {
    // SAFETY: set is valid storage for sched_getaffinity.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if r != 0 {
        return crate::sys::online_cpus();
    }
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Applies `s` to the calling thread: policy and priority, then affinity.
pub fn apply_current(s: &Sched) -> Result<(), String> {
    apply_policy(s)?;
    if !s.cpus.is_empty() {
        set_affinity(0, &s.cpus)?;
    }
    Ok(())
}

fn apply_policy(s: &Sched) -> Result<(), String> {
    match s.policy {
        Policy::Other => {
            // SAFETY: plain syscall on the calling thread.
            let p = libc::sched_param { sched_priority: 0 };
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) } != 0 {
                return Err(format!(
                    "cannot set SCHED_OTHER: {}",
                    std::io::Error::last_os_error()
                ));
            }
            // Per-thread nice: setpriority on the tid.
            let tid = crate::sys::gettid();
            if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, s.priority) } != 0
            {
                return Err(format!(
                    "cannot set nice {}: {}",
                    s.priority,
                    std::io::Error::last_os_error()
                ));
            }
            Ok(())
        }
        Policy::Fifo | Policy::Rr => {
            let rt = if s.policy == Policy::Fifo {
                RealtimeThreadSchedulePolicy::Fifo
            } else {
                RealtimeThreadSchedulePolicy::RoundRobin
            };
            let v = ThreadPriorityValue::try_from(s.priority as u8)
                .map_err(|e| format!("priority {}: {e}", s.priority))?;
            set_thread_priority_and_policy(
                thread_native_id(),
                ThreadPriority::Crossplatform(v),
                ThreadSchedulePolicy::Realtime(rt),
            )
            .map_err(|e| {
                format!(
                    "cannot make the thread {:?} {}: {e:?} (needs root or an RLIMIT_RTPRIO of at least {}; see `xrunrig doctor`)",
                    s.policy, s.priority, s.priority
                )
            })
        }
    }
}

/// Drops thread `tid` to SCHED_OTHER: the watchdog's last resort against a runaway RT thread.
pub fn demote(tid: i32) -> bool {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: plain syscall; a stale tid just fails.
    unsafe { libc::sched_setscheduler(tid, libc::SCHED_OTHER, &p) == 0 }
}

/// Picks a CPU for the control and watchdog threads that no rig thread uses, if any.
pub fn free_cpu(used: &[usize]) -> Option<usize> {
    current_affinity().into_iter().find(|c| !used.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_round_trips() {
        let mine = current_affinity();
        assert!(!mine.is_empty());
        let first = mine[0];
        std::thread::spawn(move || {
            set_affinity(0, &[first]).unwrap();
            assert_eq!(current_affinity(), vec![first]);
        })
        .join()
        .unwrap();
        assert!(set_affinity(0, &[5000]).is_err());
    }

    #[test]
    fn fifo_is_applied_when_root() {
        if !crate::testkit::root() {
            return;
        }
        std::thread::spawn(|| {
            apply_current(&Sched::fifo(7, vec![])).unwrap();
            // SAFETY: plain syscalls on the calling thread.
            assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_FIFO);
            let mut p = libc::sched_param { sched_priority: 0 };
            unsafe { libc::sched_getparam(0, &mut p) };
            assert_eq!(p.sched_priority, 7);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn free_cpu_avoids_used() {
        let all = current_affinity();
        assert_eq!(free_cpu(&all), None);
        if all.len() > 1 {
            assert_eq!(free_cpu(&all[1..]), Some(all[0]));
        }
    }
}
