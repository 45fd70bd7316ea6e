//! events.jsonl: a line per event of a trial (xrun, deadline miss with its explanation
//! and burst, injected overrun…) and per burst of background load, each stamped with
//! monotonic and wall-clock time.

use super::Told;
use super::config::Config;
use super::trial::Outcome;
use crate::rig::Variant;
use results::EVENTS_JSONL;
use results::livefx::events::{BURST, DEADLINE_MISS, Event};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

pub struct Log {
    w: BufWriter<File>,
    /// CLOCK_MONOTONIC to Unix time (ns): the wall-clock time of each event, for users
    /// who line xruns up with their own logs.
    wall_off: i64,
    /// The first write error: the run goes on, and fails at its end.
    error: Option<String>,
}

impl Log {
    pub fn create(dir: &Path) -> Result<Log, String> {
        let f = File::create(dir.join(EVENTS_JSONL))
            .map_err(|e| format!("cannot create {EVENTS_JSONL}: {e}"))?;
        Ok(Log {
            w: BufWriter::new(f),
            wall_off: crate::sys::mono_to_unix_ns(),
            error: None,
        })
    }

    /// One trial's lines: its events in order (each deadline miss with the next of
    /// `told`'s explanations), then its bursts.
    pub fn trial(
        &mut self,
        setting: &str,
        var: &Variant,
        t: u32,
        o: &Outcome,
        told: &Told,
        cfg: &Config,
    ) {
        let wall_off = self.wall_off;
        let stamp = |mono: u64| {
            let wall = (mono as i64 + wall_off).max(0) as u64;
            (Some(mono as f64 / 1e9), Some(crate::sys::utc_at_ns(wall)))
        };
        let line = |kind: &str, mono: u64| {
            let (mono_s, wall) = stamp(mono);
            Event {
                setting: setting.to_string(),
                variant: var.name.clone(),
                trial: Some(t),
                kind: kind.into(),
                mono_s,
                wall,
                ..Default::default()
            }
        };
        let mut misses = told.misses.iter();
        for e in &o.stats.events {
            let mut ev = Event {
                cycle: Some(e.cycle),
                t_s: Some(e.t_s),
                usecs: e.usecs,
                ..line(e.kind, e.mono_ns)
            };
            if e.kind == DEADLINE_MISS
                && let Some((y, b)) = misses.next()
            {
                ev.worker = y.worker.clone();
                ev.lock = y.lock.clone();
                ev.holder = y.holder.clone();
                ev.wait_us = y.wait_ns.map(|w| w as f64 / 1e3);
                ev.why = Some(y.why.clone());
                ev.stuck_ms = y.stuck_ns.map(|w| w as f64 / 1e6);
                ev.burst = b.map(|b| b as u64);
            }
            self.write(&ev);
        }
        for (i, b) in told.bursts.iter().enumerate() {
            let ev = Event {
                cycle: None,
                t_s: Some(b.start_ns.saturating_sub(o.t0_ns) as f64 / 1e9),
                usecs: Some((b.end_ns - b.start_ns) as f64 / 1e3),
                index: Some(i as u64),
                caught: b
                    .caught
                    .and_then(|(w, _)| cfg.workers.get(w).map(|x| x.name.clone())),
                lock: b
                    .caught
                    .and_then(|(_, l)| var.plan.locks.get(l).map(|x| x.name.clone())),
                misses: Some(b.misses),
                ..line(BURST, b.start_ns)
            };
            self.write(&ev);
        }
    }

    fn write(&mut self, e: &Event) {
        let r = serde_json::to_writer(&mut self.w, e)
            .map_err(std::io::Error::from)
            .and_then(|_| self.w.write_all(b"\n"));
        if let Err(e) = r {
            self.error
                .get_or_insert(format!("cannot write {EVENTS_JSONL}: {e}"));
        }
    }

    /// Flushes the file; the run's first write error, if any.
    pub fn finish(mut self) -> Option<String> {
        if let Err(e) = self.w.flush() {
            self.error
                .get_or_insert(format!("cannot write {EVENTS_JSONL}: {e}"));
        }
        self.error
    }
}
