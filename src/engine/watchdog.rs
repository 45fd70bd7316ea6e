//! The run's hard time bound and its answer to Ctrl-C. A FIFO 99 thread, pinned off the
//! rig's CPUs where it can be, that (1) raises the stop flag when the bound passes and
//! (2) if the main thread has not wound down a few seconds after the stop flag was
//! raised, runs the emergency restore and ends the process. So a wedged run always
//! gives the machine back, with its knobs restored.

use crate::sys::now_ns;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct Watchdog {
    finished: Arc<AtomicBool>,
    /// Set when the hard bound, not Ctrl-C, stopped the run.
    reached: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

/// How long the main thread gets to wind down after the stop flag, before the
/// watchdog restores and exits on its own.
pub const GRACE_NS: u64 = 8_000_000_000;

impl Watchdog {
    /// `hard_bound_ns`: the run's whole budget from now. `emergency` restores knobs; it
    /// runs on the watchdog thread just before the process exits.
    pub fn start(
        hard_bound_ns: u64,
        stop: Arc<AtomicBool>,
        cpu: Option<usize>,
        emergency: Box<dyn Fn() + Send>,
    ) -> Watchdog {
        let finished = Arc::new(AtomicBool::new(false));
        let fin = finished.clone();
        let reached = Arc::new(AtomicBool::new(false));
        let reached_here = reached.clone();
        let handle = std::thread::Builder::new()
            .name("xrunrig-watchdog".into())
            .spawn(move || {
                let sched = super::thread::Sched::fifo(99, cpu.into_iter().collect());
                // Without RT rights it still works, only later under load.
                let _ = super::thread::apply_current(&sched);
                let bound = now_ns() + hard_bound_ns;
                let mut stop_seen: Option<u64> = None;
                loop {
                    if fin.load(Ordering::SeqCst) {
                        return;
                    }
                    let t = now_ns();
                    if t >= bound && !stop.load(Ordering::SeqCst) {
                        eprintln!(
                            "\nxrunrig: the run's hard time bound ({}) passed: stopping",
                            seconds(hard_bound_ns)
                        );
                        reached_here.store(true, Ordering::SeqCst);
                        stop.store(true, Ordering::SeqCst);
                    }
                    if stop.load(Ordering::SeqCst) {
                        let since = *stop_seen.get_or_insert(t);
                        if t - since > GRACE_NS {
                            eprintln!(
                                "xrunrig: the run did not stop within {} s: restoring settings and exiting",
                                GRACE_NS / 1_000_000_000
                            );
                            emergency();
                            // SAFETY: _exit ends the process without running more Rust code.
                            unsafe { libc::_exit(124) };
                        }
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            })
            .expect("spawn watchdog");
        Watchdog {
            finished,
            reached,
            handle: Some(handle),
        }
    }

    /// Whether the hard bound stopped the run (else Ctrl-C did, or nothing).
    pub fn bound_reached(&self) -> bool {
        self.reached.load(Ordering::SeqCst)
    }
}

/// A bound as the user gave it: "1.5 s", "600 s" (not rounded to whole seconds).
pub fn seconds(ns: u64) -> String {
    let s = ns as f64 / 1e9;
    if s < 10.0 {
        format!("{} s", (s * 1000.0).round() / 1000.0)
    } else {
        format!("{s:.0} s")
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.finished.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Routes SIGINT, SIGTERM and SIGHUP to the stop flag. A second signal while stopping
/// is left to the watchdog's grace period, so the restore still runs.
pub fn install_signal_flag(stop: &Arc<AtomicBool>) -> std::io::Result<()> {
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_said_as_given() {
        assert_eq!(seconds(1_500_000_000), "1.5 s");
        assert_eq!(seconds(2_000_000_000), "2 s");
        assert_eq!(seconds(600_000_000_000), "600 s");
    }

    #[test]
    fn bound_raises_stop() {
        let stop = Arc::new(AtomicBool::new(false));
        let w = Watchdog::start(100_000_000, stop.clone(), None, Box::new(|| {}));
        let t0 = now_ns();
        while !stop.load(Ordering::SeqCst) && now_ns() - t0 < 3_000_000_000 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(stop.load(Ordering::SeqCst));
        drop(w);
    }
}
