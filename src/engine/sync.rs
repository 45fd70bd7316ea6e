//! Futex-based latches and barriers for rig threads. Every wait has an absolute
//! CLOCK_MONOTONIC deadline and wakes on abort: no unbounded waits on an RT path.

use std::sync::atomic::{AtomicU32, Ordering};

/// Sleeps while `*word == expected`, at most until the absolute CLOCK_MONOTONIC
/// `deadline_ns` (or a wake). Shared by the rig engine and the livefx RT threads.
pub fn futex_wait_until(word: &AtomicU32, expected: u32, deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time (no CLOCK_REALTIME flag).
    // SAFETY: word is a valid aligned u32 for the duration of the call; ts is valid.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            libc::FUTEX_BITSET_MATCH_ANY,
        );
    }
}

/// Wakes every waiter on `word`.
pub fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: word is a valid aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
}

/// Set when a trial or the whole run must stop; sleeping threads wait on it so an
/// abort wakes them at once.
#[derive(Default)]
pub struct Abort {
    word: AtomicU32,
}

impl Abort {
    pub fn new() -> Self {
        Self::default()
    }
    #[inline]
    pub fn is_set(&self) -> bool {
        self.word.load(Ordering::Relaxed) != 0
    }
    pub fn set(&self) {
        self.word.store(1, Ordering::SeqCst);
        futex_wake_all(&self.word);
    }
    /// Sleeps until `deadline_ns` unless aborted first. Returns false on abort.
    pub fn sleep_until(&self, deadline_ns: u64) -> bool {
        loop {
            if self.is_set() {
                return false;
            }
            if crate::sys::now_ns() >= deadline_ns {
                return true;
            }
            futex_wait_until(&self.word, 0, deadline_ns);
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum WaitResult {
    Done,
    TimedOut,
    Aborted,
}

/// A one-shot event: once signalled it stays set for the rest of the trial.
#[derive(Default)]
pub struct Latch {
    word: AtomicU32,
}

impl Latch {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn is_set(&self) -> bool {
        self.word.load(Ordering::Acquire) != 0
    }
    pub fn signal(&self) {
        self.word.store(1, Ordering::Release);
        futex_wake_all(&self.word);
    }
    /// Wakes waiters without setting, so they re-check the abort flag.
    pub fn poke(&self) {
        futex_wake_all(&self.word);
    }
    pub fn wait_until(&self, deadline_ns: u64, abort: Option<&Abort>) -> WaitResult {
        loop {
            if self.is_set() {
                return WaitResult::Done;
            }
            if abort.is_some_and(Abort::is_set) {
                return WaitResult::Aborted;
            }
            if crate::sys::now_ns() >= deadline_ns {
                return WaitResult::TimedOut;
            }
            futex_wait_until(&self.word, 0, deadline_ns);
        }
    }
}

/// A reusable barrier for a fixed number of threads.
pub struct Barrier {
    count: u32,
    arrived: AtomicU32,
    generation: AtomicU32,
}

impl Barrier {
    pub fn new(count: u32) -> Self {
        Barrier {
            count: count.max(1),
            arrived: AtomicU32::new(0),
            generation: AtomicU32::new(0),
        }
    }
    pub fn poke(&self) {
        futex_wake_all(&self.generation);
    }
    pub fn wait_until(&self, deadline_ns: u64, abort: Option<&Abort>) -> WaitResult {
        let g = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.count {
            self.arrived.store(0, Ordering::Release);
            self.generation.fetch_add(1, Ordering::AcqRel);
            futex_wake_all(&self.generation);
            return WaitResult::Done;
        }
        loop {
            if self.generation.load(Ordering::Acquire) != g {
                return WaitResult::Done;
            }
            if abort.is_some_and(Abort::is_set) {
                return WaitResult::Aborted;
            }
            if crate::sys::now_ns() >= deadline_ns {
                return WaitResult::TimedOut;
            }
            futex_wait_until(&self.generation, g, deadline_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::now_ns;
    use std::sync::Arc;

    #[test]
    fn latch_signals_and_times_out() {
        let l = Arc::new(Latch::new());
        assert_eq!(
            l.wait_until(now_ns() + 20_000_000, None),
            WaitResult::TimedOut
        );
        let l2 = l.clone();
        let h = std::thread::spawn(move || l2.wait_until(now_ns() + 5_000_000_000, None));
        std::thread::sleep(std::time::Duration::from_millis(20));
        l.signal();
        assert_eq!(h.join().unwrap(), WaitResult::Done);
    }

    #[test]
    fn abort_wakes_waiters_and_sleepers() {
        let a = Arc::new(Abort::new());
        let l = Arc::new(Latch::new());
        let (a1, l1) = (a.clone(), l.clone());
        let t0 = now_ns();
        let w = std::thread::spawn(move || l1.wait_until(now_ns() + 5_000_000_000, Some(&a1)));
        let a2 = a.clone();
        let s = std::thread::spawn(move || a2.sleep_until(now_ns() + 5_000_000_000));
        std::thread::sleep(std::time::Duration::from_millis(20));
        a.set();
        l.poke();
        assert_eq!(w.join().unwrap(), WaitResult::Aborted);
        assert!(!s.join().unwrap());
        assert!(now_ns() - t0 < 2_000_000_000);
    }

    #[test]
    fn barrier_releases_all_and_reuses() {
        let b = Arc::new(Barrier::new(3));
        let hs: Vec<_> = (0..3)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || {
                    (0..5)
                        .map(|_| b.wait_until(now_ns() + 5_000_000_000, None))
                        .filter(|r| *r == WaitResult::Done)
                        .count()
                })
            })
            .collect();
        for h in hs {
            assert_eq!(h.join().unwrap(), 5);
        }
    }
}
