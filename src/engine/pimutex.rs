//! A pthread mutex with a chosen protocol: `PTHREAD_PRIO_INHERIT` (a PI futex in the
//! kernel: a blocked waiter lends its priority to the owner) or `PTHREAD_PRIO_NONE`
//! (the control). Error-checking type, so an unlock by a non-owner is an error, not UB.

use crate::rig::Protocol;
use std::cell::UnsafeCell;
use std::io;
use std::ops::{Deref, DerefMut};

/// A mutual-exclusion lock over `T` whose protocol is fixed at creation.
pub struct PiMutex<T = ()> {
    // Boxed: a pthread mutex must not move once initialised.
    raw: Box<UnsafeCell<libc::pthread_mutex_t>>,
    protocol: Protocol,
    data: UnsafeCell<T>,
}

// SAFETY: the pthread mutex serialises access to `data`; T must be Send to cross threads.
unsafe impl<T: Send> Send for PiMutex<T> {}
// SAFETY: as above; shared references only reach `data` through a guard.
unsafe impl<T: Send> Sync for PiMutex<T> {}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// The deadline passed before the lock was acquired.
    #[error("the PI lock was not acquired before its deadline")]
    TimedOut,
    /// Any other error from pthreads (errno).
    #[error("pthread_mutex_timedlock: {}", std::io::Error::from_raw_os_error(*.0))]
    Os(i32),
}

fn check(r: i32) -> io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(r))
    }
}

impl PiMutex<()> {
    pub fn new(protocol: Protocol) -> io::Result<Self> {
        PiMutex::with_data(protocol, ())
    }
}

impl<T> PiMutex<T> {
    pub fn with_data(protocol: Protocol, data: T) -> io::Result<Self> {
        // SAFETY: zeroed pthread types are valid storage for *_init.
        let raw = Box::new(UnsafeCell::new(unsafe {
            std::mem::zeroed::<libc::pthread_mutex_t>()
        }));
        let mut attr: libc::pthread_mutexattr_t = unsafe { std::mem::zeroed() };
        // SAFETY: attr is valid storage; each call is checked; attr is destroyed below.
        unsafe {
            check(libc::pthread_mutexattr_init(&mut attr))?;
            let proto = match protocol {
                Protocol::Inherit => libc::PTHREAD_PRIO_INHERIT,
                Protocol::None => libc::PTHREAD_PRIO_NONE,
            };
            let r = check(libc::pthread_mutexattr_setprotocol(&mut attr, proto)).and_then(|_| {
                check(libc::pthread_mutexattr_settype(
                    &mut attr,
                    libc::PTHREAD_MUTEX_ERRORCHECK,
                ))
            });
            let r = r.and_then(|_| check(libc::pthread_mutex_init(raw.get(), &attr)));
            libc::pthread_mutexattr_destroy(&mut attr);
            r?;
        }
        Ok(PiMutex {
            raw,
            protocol,
            data: UnsafeCell::new(data),
        })
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Blocks until the lock is held.
    pub fn lock(&self) -> Result<PiGuard<'_, T>, LockError> {
        // SAFETY: raw points to an initialised mutex that lives as long as self.
        match unsafe { libc::pthread_mutex_lock(self.raw.get()) } {
            0 => Ok(PiGuard { m: self }),
            e => Err(LockError::Os(e)),
        }
    }

    /// Blocks until the lock is held or CLOCK_MONOTONIC passes `deadline_ns`.
    pub fn lock_until(&self, deadline_ns: u64) -> Result<PiGuard<'_, T>, LockError> {
        self.raw_lock_until(deadline_ns)?;
        Ok(PiGuard { m: self })
    }

    /// Lock without a guard, for the rig engine whose lock and unlock are separate steps.
    /// The mutex is error-checking, so misuse returns an error instead of corrupting it.
    pub fn raw_lock_until(&self, deadline_ns: u64) -> Result<(), LockError> {
        // PI futexes time out against CLOCK_REALTIME: translate the monotonic deadline.
        let now_mono = crate::sys::now_ns();
        let mut rt = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: rt is a valid timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut rt) };
        // Saturating: a deadline of "never" (u64::MAX) stays far in the future instead of
        // wrapping into the past (an overflow panic in a debug build).
        let abs = (rt.tv_sec as u64 * 1_000_000_000 + rt.tv_nsec as u64)
            .saturating_add(deadline_ns.saturating_sub(now_mono));
        let ts = libc::timespec {
            tv_sec: (abs / 1_000_000_000) as libc::time_t,
            tv_nsec: (abs % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: raw is initialised; ts is a valid absolute time.
        match unsafe { libc::pthread_mutex_timedlock(self.raw.get(), &ts) } {
            0 => Ok(()),
            libc::ETIMEDOUT => Err(LockError::TimedOut),
            e => Err(LockError::Os(e)),
        }
    }

    /// Takes the lock only if it is free now (`false`: someone holds it). No kernel call
    /// for an uncontended PI mutex either: glibc tries the futex word in user space.
    pub fn raw_trylock(&self) -> Result<bool, LockError> {
        // SAFETY: raw is initialised.
        match unsafe { libc::pthread_mutex_trylock(self.raw.get()) } {
            0 => Ok(true),
            libc::EBUSY => Ok(false),
            e => Err(LockError::Os(e)),
        }
    }

    /// The thread id that holds the lock now (0: free or unknown), read without locking:
    /// a snapshot for reports of who blocked whom. glibc's mutex starts with the futex
    /// word (`__lock`), which for a PI mutex holds the owner's tid, set by the kernel
    /// even on a hand-over; `__owner`, the third int, is glibc's own record for every
    /// protocol but is cleared before an unlock completes.
    #[inline]
    pub fn owner_tid(&self) -> i32 {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            // SAFETY: the mutex is initialised and at least 3 ints long; a racy read of
            // an aligned int is only a snapshot, read through an atomic.
            let int = |i: usize| unsafe {
                let p = self.raw.get() as *const std::sync::atomic::AtomicI32;
                (*p.add(i)).load(std::sync::atomic::Ordering::Relaxed)
            };
            const FUTEX_TID_MASK: i32 = 0x3fff_ffff;
            match self.protocol {
                Protocol::Inherit => match int(0) & FUTEX_TID_MASK {
                    0 => int(2),
                    t => t,
                },
                Protocol::None => int(2),
            }
        }
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        {
            0
        }
    }

    /// Unlocks a lock taken with `raw_lock_until` by this thread.
    pub fn raw_unlock(&self) -> Result<(), LockError> {
        // SAFETY: raw is initialised; error-checking type rejects a non-owner.
        match unsafe { libc::pthread_mutex_unlock(self.raw.get()) } {
            0 => Ok(()),
            e => Err(LockError::Os(e)),
        }
    }
}

impl<T> Drop for PiMutex<T> {
    fn drop(&mut self) {
        // SAFETY: no guard can outlive self; destroying an unlocked mutex is defined.
        unsafe { libc::pthread_mutex_destroy(self.raw.get()) };
    }
}

pub struct PiGuard<'a, T> {
    m: &'a PiMutex<T>,
}

impl<T> Deref for PiGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held by this thread.
        unsafe { &*self.m.data.get() }
    }
}

impl<T> DerefMut for PiGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in deref, and &mut self makes the borrow unique.
        unsafe { &mut *self.m.data.get() }
    }
}

impl<T> Drop for PiGuard<'_, T> {
    fn drop(&mut self) {
        let _ = self.m.raw_unlock();
    }
}

/// The effective priority the scheduler uses for a thread, from `/proc/<pid>/task/<tid>/sched`
/// (`prio` there is the kernel's internal value: 99 - rt_priority for RT tasks). A PI
/// boost shows here and not in `sched_getparam`.
pub fn kernel_prio(tid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/sched")).ok()?;
    s.lines()
        .find(|l| l.starts_with("prio "))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::thread::{Sched, apply_current};
    use crate::sys::{gettid, now_ns};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI32, Ordering};

    #[test]
    fn guard_protects_data_and_unlocks() {
        let m = Arc::new(PiMutex::with_data(Protocol::Inherit, 0u64).unwrap());
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        *m.lock().unwrap() += 1;
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*m.lock().unwrap(), 4000);
    }

    #[test]
    fn trylock_and_owner_name_the_holder() {
        for proto in [Protocol::Inherit, Protocol::None] {
            let m = Arc::new(PiMutex::new(proto).unwrap());
            assert_eq!(m.owner_tid(), 0);
            assert_eq!(m.raw_trylock(), Ok(true));
            assert_eq!(m.owner_tid(), gettid(), "{proto:?}");
            let m2 = m.clone();
            let other = std::thread::spawn(move || (m2.raw_trylock(), m2.owner_tid()))
                .join()
                .unwrap();
            assert_eq!(other, (Ok(false), gettid()), "{proto:?}");
            m.raw_unlock().unwrap();
            assert_eq!(m.owner_tid(), 0);
        }
    }

    #[test]
    fn unlock_by_non_owner_is_an_error() {
        let m = PiMutex::new(Protocol::Inherit).unwrap();
        assert_eq!(m.raw_unlock(), Err(LockError::Os(libc::EPERM)));
        m.raw_lock_until(now_ns() + 1_000_000_000).unwrap();
        m.raw_unlock().unwrap();
    }

    #[test]
    fn timed_lock_times_out() {
        let m = Arc::new(PiMutex::new(Protocol::Inherit).unwrap());
        let g = m.lock().unwrap();
        let m2 = m.clone();
        let t0 = now_ns();
        let r = std::thread::spawn(move || m2.raw_lock_until(now_ns() + 50_000_000))
            .join()
            .unwrap();
        assert_eq!(r, Err(LockError::TimedOut));
        assert!(now_ns() - t0 >= 45_000_000);
        drop(g);
    }

    /// The boost itself: a FIFO 30 waiter blocked on an inherit mutex held by a FIFO 10
    /// owner lifts the owner's kernel prio from 89 to 69; with protocol none it stays 89.
    /// Needs root (SCHED_FIFO): the test skips (see `testkit`) without it.
    fn boost_seen(protocol: Protocol) -> (i32, i32) {
        let m = Arc::new(PiMutex::new(protocol).unwrap());
        let owner_tid = Arc::new(AtomicI32::new(0));
        let release = Arc::new(crate::engine::sync::Latch::new());
        let held = Arc::new(crate::engine::sync::Latch::new());
        let (m1, ot, rel, hl) = (m.clone(), owner_tid.clone(), release.clone(), held.clone());
        let owner = std::thread::spawn(move || {
            apply_current(&Sched::fifo(10, vec![])).unwrap();
            ot.store(gettid(), Ordering::SeqCst);
            m1.raw_lock_until(now_ns() + 5_000_000_000).unwrap();
            hl.signal();
            rel.wait_until(now_ns() + 5_000_000_000, None);
            m1.raw_unlock().unwrap();
        });
        held.wait_until(now_ns() + 5_000_000_000, None);
        let tid = owner_tid.load(Ordering::SeqCst);
        let before = kernel_prio(tid).unwrap();
        let m2 = m.clone();
        let waiter = std::thread::spawn(move || {
            apply_current(&Sched::fifo(30, vec![])).unwrap();
            m2.raw_lock_until(now_ns() + 5_000_000_000).unwrap();
            m2.raw_unlock().unwrap();
        });
        // Give the waiter time to block on the futex.
        let mut during = before;
        for _ in 0..200 {
            std::thread::sleep(std::time::Duration::from_millis(2));
            during = kernel_prio(tid).unwrap();
            if during != before {
                break;
            }
        }
        release.signal();
        owner.join().unwrap();
        waiter.join().unwrap();
        (before, during)
    }

    #[test]
    fn inherit_boosts_owner_and_none_does_not() {
        let _g = crate::engine::test_lock();
        if !crate::testkit::root() {
            return;
        }
        let (before, during) = boost_seen(Protocol::Inherit);
        assert_eq!(before, 89, "owner at FIFO 10 has kernel prio 89");
        assert_eq!(during, 69, "boosted to the FIFO 30 waiter's kernel prio 69");
        let (before, during) = boost_seen(Protocol::None);
        assert_eq!(before, 89);
        assert_eq!(during, 89, "PRIO_NONE must not boost");
    }
}
