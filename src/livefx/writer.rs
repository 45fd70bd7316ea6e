//! The normal-priority side of a trial: drains the RT queue, writes the raw cycles file
//! (24-byte little-endian records, the results contract), fills the HdrHistograms, keeps
//! the event log and the running counts the progress line shows.

use super::rt::{FLAG_DISCONTINUITY, FLAG_INJECTED, FLAG_MISS, FLAG_XRUN, Hold, NO_WORKER, Rec};
use hdrhistogram::Histogram;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

pub const RECORD_BYTES: usize = 24;
/// Events kept per trial; past it they are only counted.
pub const EVENT_CAP: usize = 100_000;
/// Lock holds kept per trial (for rigs with bursts); past it they are only counted.
pub const HOLD_CAP: usize = 2_000_000;

/// One record of cycles/*.bin.
pub fn encode(r: &Rec, t0: u64) -> [u8; RECORD_BYTES] {
    let mut b = [0u8; RECORD_BYTES];
    b[0..8].copy_from_slice(&r.start_ns.saturating_sub(t0).to_le_bytes());
    let dur = r.end_ns.saturating_sub(r.wake_ns).min(u32::MAX as u64) as u32;
    b[8..12].copy_from_slice(&dur.to_le_bytes());
    let late =
        (r.wake_ns as i64 - r.start_ns as i64).clamp(i32::MIN as i64, i32::MAX as i64) as i32;
    b[12..16].copy_from_slice(&late.to_le_bytes());
    let flags = (r.flags & 0xff) | ((r.last_worker as u32) << 8);
    b[16..20].copy_from_slice(&flags.to_le_bytes());
    b[20..24].copy_from_slice(&r.max_wake_ns.to_le_bytes());
    b
}

/// A decoded record: (start ns since trial start, duration, lateness, flags, max wake).
pub fn decode(b: &[u8]) -> (u64, u32, i32, u32, u32) {
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or([0; 4]));
    (
        u64_at(0),
        u32_at(8),
        u32_at(12) as i32,
        u32_at(16),
        u32_at(20),
    )
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

pub struct Stats {
    pub cycles: u64,
    pub misses: u64,
    pub injected: u64,
    /// Injected cycles not flagged as a miss: a counter that lost the truth.
    pub injected_missed: u64,
    pub misses_not_injected: u64,
    pub xruns_rt: u64,
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
            cycles: 0,
            misses: 0,
            injected: 0,
            injected_missed: 0,
            misses_not_injected: 0,
            xruns_rt: 0,
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
        self.cycles += 1;
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
            self.injected += 1;
            self.event(Event {
                kind: "injected",
                cycle: r.index,
                t_s,
                usecs: Some(r.injected_ns as f64 / 1e3),
                mono_ns: r.start_ns,
                cause: None,
            });
            if !miss {
                self.injected_missed += 1;
            }
        }
        if miss {
            self.misses += 1;
            if !inj {
                self.misses_not_injected += 1;
            }
            self.event(Event {
                kind: "deadline_miss",
                cycle: r.index,
                t_s,
                usecs: Some((r.end_ns as f64 - r.deadline_ns as f64) / 1e3),
                mono_ns: r.deadline_ns,
                cause: Cause::of(r),
            });
        }
        if r.flags & FLAG_XRUN != 0 {
            self.xruns_rt += r.xruns as u64;
            let period_us = r.deadline_ns.saturating_sub(r.start_ns) as f64 / 1e3;
            self.event(Event {
                kind: "xrun",
                cycle: r.index,
                t_s,
                usecs: Some(r.xruns as f64 * period_us),
                mono_ns: r.start_ns,
                cause: None,
            });
        }
        if r.flags & FLAG_DISCONTINUITY != 0 {
            self.event(Event {
                kind: "discontinuity",
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
                            if matches!(e.kind, "deadline_miss" | "xrun") {
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
                    progress.cycles.store(st.cycles, Ordering::Relaxed);
                    progress.misses.store(st.misses, Ordering::Relaxed);
                    progress.xruns.store(st.xruns_rt, Ordering::Relaxed);
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
        assert_eq!(decode(&b), (1_000_000, 3000, 100, 5 | (3 << 8), 42));
        // A callback that started before its nominal start has negative lateness.
        let early = Rec {
            wake_ns: 1_000_400,
            ..r
        };
        assert_eq!(decode(&encode(&early, 500)).2, -100);
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
        assert_eq!((s.cycles, s.misses, s.injected), (4, 2, 2));
        assert_eq!((s.injected_missed, s.misses_not_injected), (1, 1));
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
