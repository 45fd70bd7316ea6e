//! The normal-priority side of a trial: drains the RT queue, writes the raw cycles file
//! (`results::livefx::cycles` records), counts the cycles (`results::livefx::Counters`),
//! fills the HdrHistograms, keeps the event log and the running counts the progress line
//! shows.

use super::rt::{FLAG_DISCONTINUITY, FLAG_INJECTED, FLAG_MISS, FLAG_XRUN, Hold, NO_WORKER, Rec};
use hdrhistogram::Histogram;
pub use results::livefx::cycles::RECORD_BYTES;
use results::livefx::events::{DEADLINE_MISS, DISCONTINUITY, INJECTED, XRUN};
use results::livefx::{Counters, Record};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

/// Events kept per trial; past it they are only counted.
pub const EVENT_CAP: usize = 100_000;
/// Lock holds kept per trial (for rigs with bursts); past it they are only counted.
pub const HOLD_CAP: usize = 2_000_000;

/// One record of cycles/*.bin: times relative to the trial's start `t0`.
pub fn encode(r: &Rec, t0: u64) -> [u8; RECORD_BYTES] {
    Record {
        start_ns: r.start_ns.saturating_sub(t0),
        callback_ns: r.end_ns.saturating_sub(r.wake_ns).min(u32::MAX as u64) as u32,
        lateness_ns: (r.wake_ns as i64 - r.start_ns as i64).clamp(i32::MIN as i64, i32::MAX as i64)
            as i32,
        flags: Record::pack_flags(r.flags, r.last_worker),
        wake_ns: r.max_wake_ns,
    }
    .encode()
}

/// A stored record, decoded.
pub fn decode(b: &[u8]) -> Record {
    Record::decode(b)
}

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub kind: &'static str,
    pub cycle: u64,
    pub t_s: f64,
    pub usecs: Option<f64>,
    /// CLOCK_MONOTONIC ns, the trace's clock: a miss's deadline, else the cycle's start.
    pub mono_ns: u64,
    /// On a deadline miss: what the cycle waited for.
    pub cause: Option<Cause>,
}

/// What a missed cycle waited for, as the RT side saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cause {
    /// Worker index (the rig's order of instances).
    pub worker: usize,
    /// Lock index, if it waited for one.
    pub lock: Option<usize>,
    /// The lock's holder when the wait began (0: unknown).
    pub holder_tid: i32,
    pub wait_ns: u64,
    /// When the wait began (CLOCK_MONOTONIC ns).
    pub since_ns: u64,
    /// The worker had not started the missed cycle: 1 = not awake yet after finishing
    /// the one before, 2 = still busy with an earlier one.
    pub behind: u8,
}

impl Cause {
    fn of(r: &Rec) -> Option<Cause> {
        (r.cause_worker != NO_WORKER).then(|| Cause {
            worker: r.cause_worker as usize,
            lock: (r.cause_lock > 0).then(|| r.cause_lock as usize - 1),
            holder_tid: r.holder_tid,
            wait_ns: r.lock_wait_ns,
            since_ns: r.lock_since_ns,
            behind: r.cause_behind,
        })
    }
}

/// Writes a line into the trace at each miss and xrun (the tracefs instance's
/// `trace_marker`), so the raw trace shows them where they happened. Written by the
/// writer within milliseconds of the cycle; the line carries the cycle's own times.
pub struct Marker {
    pub file: std::fs::File,
    /// Worker names by index, lock names by index, and (tid, name) of every worker.
    pub workers: Vec<String>,
    pub locks: Vec<String>,
    pub tids: Vec<(i32, String)>,
}

impl Marker {
    pub fn name_of(&self, tid: i32) -> Option<&str> {
        self.tids
            .iter()
            .find(|(t, _)| *t == tid)
            .map(|(_, n)| n.as_str())
    }

    fn write(&mut self, e: &Event) {
        let mut line = format!(
            "xrunrig {} cycle={} at={}.{:06}",
            e.kind,
            e.cycle,
            e.mono_ns / 1_000_000_000,
            e.mono_ns % 1_000_000_000 / 1000
        );
        if let Some(c) = &e.cause {
            if let Some(w) = self.workers.get(c.worker) {
                line.push_str(&format!(" worker={w}"));
            }
            if let Some(l) = c.lock.and_then(|l| self.locks.get(l)) {
                line.push_str(&format!(" lock={l} waited_us={}", c.wait_ns / 1000));
            }
            if let Some(h) = self.name_of(c.holder_tid) {
                line.push_str(&format!(" holder={h}"));
            }
        }
        line.push('\n');
        // A marker that cannot be written only loses the marker, not the run.
        let _ = self.file.write_all(line.as_bytes());
    }
}

/// Running counts for the live progress line.
#[derive(Default)]
pub struct Progress {
    pub cycles: AtomicU64,
    pub misses: AtomicU64,
    pub xruns: AtomicU64,
}

/// What the writer gathered over one trial. `counts.xruns` are the xruns the RT side
/// saw (JACK's notifications come on top, in the trial's outcome).
pub struct Stats {
    pub counts: Counters,
    pub callback: Histogram<u64>,
    pub lateness: Histogram<u64>,
    pub wake: Histogram<u64>,
    pub events: Vec<Event>,
    pub events_dropped: u64,
    /// Lock holds by workers, kept when the rig has bursts to classify.
    pub holds: Vec<Hold>,
    pub holds_dropped: u64,
    pub io_error: Option<String>,
}

pub fn new_hist() -> Histogram<u64> {
    // 1 ns .. 60 s at 3 significant digits.
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds")
}

impl Default for Stats {
    fn default() -> Stats {
        Stats::new()
    }
}

impl Stats {
    pub fn new() -> Stats {
        Stats {
            counts: Counters::default(),
            callback: new_hist(),
            lateness: new_hist(),
            wake: new_hist(),
            events: Vec::new(),
            events_dropped: 0,
            holds: Vec::new(),
            holds_dropped: 0,
            io_error: None,
        }
    }

    pub fn event(&mut self, e: Event) {
        if self.events.len() < EVENT_CAP {
            self.events.push(e);
        } else {
            self.events_dropped += 1;
        }
    }

    /// Accounts one cycle record.
    pub fn add(&mut self, r: &Rec, t0: u64, has_workers: bool) {
        self.counts.add_cycle(r.start_ns, r.flags, r.xruns as u64);
        let t_s = r.start_ns.saturating_sub(t0) as f64 / 1e9;
        let _ = self
            .callback
            .record(r.end_ns.saturating_sub(r.wake_ns).max(1));
        let _ = self
            .lateness
            .record(r.wake_ns.saturating_sub(r.start_ns).max(1));
        if has_workers {
            let _ = self.wake.record((r.max_wake_ns as u64).max(1));
        }
        let inj = r.flags & FLAG_INJECTED != 0;
        let miss = r.flags & FLAG_MISS != 0;
        if inj {
            self.event(Event {
                kind: INJECTED,
                cycle: r.index,
                t_s,
                usecs: Some(r.injected_ns as f64 / 1e3),
                mono_ns: r.start_ns,
                cause: None,
            });
        }
        if miss {
            self.event(Event {
                kind: DEADLINE_MISS,
                cycle: r.index,
                t_s,
                usecs: Some((r.end_ns as f64 - r.deadline_ns as f64) / 1e3),
                mono_ns: r.deadline_ns,
                cause: Cause::of(r),
            });
        }
        if r.flags & FLAG_XRUN != 0 {
            let period_us = r.deadline_ns.saturating_sub(r.start_ns) as f64 / 1e3;
            self.event(Event {
                kind: XRUN,
                cycle: r.index,
                t_s,
                usecs: Some(r.xruns as f64 * period_us),
                mono_ns: r.start_ns,
                cause: None,
            });
        }
        if r.flags & FLAG_DISCONTINUITY != 0 {
            self.event(Event {
                kind: DISCONTINUITY,
                cycle: r.index,
                t_s,
                usecs: None,
                mono_ns: r.start_ns,
                cause: None,
            });
        }
    }
}

/// What the writer drains besides the cycles: the workers' lock holds (kept only with
/// `keep_holds`) and the trace marker to write misses and xruns into.
pub struct Side {
    pub holds: Vec<rtrb::Consumer<Hold>>,
    pub keep_holds: bool,
    pub marker: Option<Marker>,
}

/// Starts the writer. It ends when `done` is set and the queue is empty.
pub fn spawn(
    mut rx: rtrb::Consumer<Rec>,
    path: PathBuf,
    t0: u64,
    has_workers: bool,
    progress: Arc<Progress>,
    done: Arc<AtomicBool>,
    mut side: Side,
) -> JoinHandle<Stats> {
    std::thread::Builder::new()
        .name("livefx-writer".into())
        .spawn(move || {
            let mut st = Stats::new();
            let mut out = match std::fs::File::create(&path) {
                Ok(f) => Some(std::io::BufWriter::with_capacity(1 << 16, f)),
                Err(e) => {
                    st.io_error = Some(format!("cannot create {}: {e}", path.display()));
                    None
                }
            };
            loop {
                let finishing = done.load(Ordering::SeqCst);
                let mut n = 0;
                while let Ok(r) = rx.pop() {
                    n += 1;
                    if let Some(o) = &mut out
                        && let Err(e) = o.write_all(&encode(&r, t0))
                    {
                        st.io_error = Some(format!("cannot write {}: {e}", path.display()));
                        out = None;
                    }
                    let before = st.events.len();
                    st.add(&r, t0, has_workers);
                    if let Some(m) = &mut side.marker {
                        for e in &st.events[before..] {
                            if matches!(e.kind, DEADLINE_MISS | XRUN) {
                                m.write(e);
                            }
                        }
                    }
                }
                for q in &mut side.holds {
                    while let Ok(h) = q.pop() {
                        if side.keep_holds && st.holds.len() < HOLD_CAP {
                            st.holds.push(h);
                        } else if side.keep_holds {
                            st.holds_dropped += 1;
                        }
                    }
                }
                if n > 0 {
                    progress.cycles.store(st.counts.cycles, Ordering::Relaxed);
                    progress
                        .misses
                        .store(st.counts.deadline_misses, Ordering::Relaxed);
                    progress.xruns.store(st.counts.xruns, Ordering::Relaxed);
                }
                if finishing && rx.is_empty() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            if let Some(mut o) = out
                && let Err(e) = o.flush()
            {
                st.io_error = Some(format!("cannot write {}: {e}", path.display()));
            }
            st
        })
        .expect("spawning the writer thread")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_have_the_contract_layout() {
        let r = Rec {
            index: 7,
            start_ns: 1_000_500,
            wake_ns: 1_000_600,
            end_ns: 1_003_600,
            deadline_ns: 2_000_000,
            flags: FLAG_MISS | FLAG_INJECTED,
            last_worker: 3,
            max_wake_ns: 42,
            xruns: 0,
            injected_ns: 0,
            ..Default::default()
        };
        let b = encode(&r, 500);
        assert_eq!(b.len(), 24);
        assert_eq!(
            decode(&b),
            Record {
                start_ns: 1_000_000,
                callback_ns: 3000,
                lateness_ns: 100,
                flags: 5 | (3 << 8),
                wake_ns: 42
            }
        );
        // A callback that started before its nominal start has negative lateness.
        let early = Rec {
            wake_ns: 1_000_400,
            ..r
        };
        assert_eq!(decode(&encode(&early, 500)).lateness_ns, -100);
    }

    #[test]
    fn stats_count_injected_and_spurious_misses_apart() {
        let mut s = Stats::new();
        let base = Rec {
            start_ns: 1000,
            wake_ns: 1100,
            end_ns: 2000,
            deadline_ns: 5000,
            ..Default::default()
        };
        s.add(&Rec { index: 0, ..base }, 0, true);
        s.add(
            &Rec {
                index: 1,
                flags: FLAG_INJECTED | FLAG_MISS,
                end_ns: 9000,
                ..base
            },
            0,
            true,
        );
        s.add(
            &Rec {
                index: 2,
                flags: FLAG_MISS,
                end_ns: 6000,
                ..base
            },
            0,
            true,
        );
        s.add(
            &Rec {
                index: 3,
                flags: FLAG_INJECTED,
                ..base
            },
            0,
            true,
        );
        let c = &s.counts;
        assert_eq!((c.cycles, c.deadline_misses, c.injected), (4, 2, 2));
        assert_eq!((c.injected_undetected, c.misses_not_injected), (1, 1));
        let kinds: Vec<_> = s.events.iter().map(|e| (e.kind, e.cycle)).collect();
        assert_eq!(
            kinds,
            vec![
                ("injected", 1),
                ("deadline_miss", 1),
                ("deadline_miss", 2),
                ("injected", 3)
            ]
        );
        assert_eq!(s.events[1].usecs, Some(4.0));
        assert_eq!(
            s.events[1].mono_ns, 5000,
            "a miss is placed at its deadline"
        );
        assert_eq!(s.events[1].cause, None, "no worker named: no cause");
        s.add(
            &Rec {
                index: 4,
                flags: FLAG_MISS,
                cause_worker: 1,
                cause_lock: 1,
                holder_tid: 77,
                lock_wait_ns: 9000,
                ..base
            },
            0,
            true,
        );
        assert_eq!(
            s.events.last().unwrap().cause,
            Some(Cause {
                worker: 1,
                lock: Some(0),
                holder_tid: 77,
                wait_ns: 9000,
                since_ns: 0,
                behind: 0
            })
        );
    }
}
