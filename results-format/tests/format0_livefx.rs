//! Livefx results written before the format had types or a version (format 0) read
//! through the types: summary rows and trials, every events.jsonl line, histograms.json,
//! run.json's `livefx` section, and cycle files whose counts match the summary's.

use results::livefx::{Causes, Counters, Event, HistEntry, LivefxSection, Summary, cycles};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn read<T: serde::de::DeserializeOwned>(p: &Path) -> T {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Checks one directory; returns (rows, events) read.
fn check(dir: &Path) -> (Summary, Vec<Event>) {
    let s: Summary = read(&dir.join("summary.json"));
    assert_eq!((s.kind.as_str(), s.format), ("livefx", None));
    assert!(!s.rows.is_empty() && !s.trials.is_empty());
    for t in &s.trials {
        let f = dir.join(t.cycles_file.as_ref().expect("cycles_file"));
        let mut c = Counters::default();
        let torn = cycles::stream(std::fs::File::open(&f).unwrap(), |r| c.add_record(r)).unwrap();
        assert_eq!(torn, 0);
        assert_eq!(
            (c.cycles, c.deadline_misses, c.injected),
            (t.counts.cycles, t.counts.deadline_misses, t.counts.injected),
            "{}",
            f.display()
        );
    }
    let events: Vec<Event> = std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let h: Vec<HistEntry> = read(&dir.join("histograms.json"));
    assert_eq!(h.len(), 3 * s.rows.len());
    for e in &h {
        assert_eq!(e.count, e.buckets.iter().map(|b| b.1).sum::<u64>());
    }
    (s, events)
}

#[test]
fn synthetic_format0_reads() {
    let (s, ev) = check(&fixture("format0-livefx"));
    let r = &s.rows[1];
    assert_eq!(
        (r.setting.as_str(), r.counts.deadline_misses, r.counts.xruns),
        ("NO_RT_PUSH_IPI", 13, 8)
    );
    // An older writer: no misses_not_injected, no causes, no per-minute rate.
    assert_eq!(
        (r.counts.misses_not_injected, &r.why, r.misses_per_min),
        (None, &Causes::Absent, None)
    );
    assert_eq!(r.misses_per_hour, Some(5850.0));
    assert_eq!(ev.len(), 30);
    assert!(ev.iter().all(|e| e.mono_s.is_none() && e.why.is_none()));
}

#[test]
fn real_clock_run_format0_reads() {
    let dir = fixture("format0-livefx-clock");
    let (s, ev) = check(&dir);
    assert_eq!(s.rows.len(), 2);
    for r in &s.rows {
        assert_eq!(r.backend, "clock");
        assert_eq!(
            (r.counts.injected, r.counts.injected_undetected),
            (3, Some(0))
        );
        let why = r.why.list().expect("why");
        assert_eq!(why[0].count, Some(3));
        assert!(r.misses_per_min.is_some() && r.callback_us.max.is_some());
    }
    let misses: Vec<&Event> = ev.iter().filter(|e| e.kind == "deadline_miss").collect();
    assert_eq!(misses.len(), 6);
    assert!(misses.iter().all(|e| e.why.is_some() && e.mono_s.is_some()));
    // Written again, a miss line has the same fields as the file's.
    let line = std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .find(|l| l.contains("deadline_miss"))
        .unwrap()
        .to_string();
    let orig: serde_json::Value = serde_json::from_str(&line).unwrap();
    let e: Event = serde_json::from_str(&line).unwrap();
    assert_eq!(serde_json::to_value(&e).unwrap(), orig);
    let run: serde_json::Value = read(&dir.join("run.json"));
    let lf: LivefxSection = serde_json::from_value(run["livefx"].clone()).unwrap();
    assert_eq!(lf.backends[0].backend, "clock");
    assert_eq!(lf.workers.len(), 2);
    assert_eq!(lf.workers[1].plugins[1].lock.as_deref(), Some("bus"));
    assert_eq!(serde_json::to_value(&lf).unwrap(), run["livefx"]);
    // The summary written again from the types is the file's, field for field.
    let orig: serde_json::Value = read(&dir.join("summary.json"));
    assert_eq!(serde_json::to_value(&s).unwrap(), orig);
}
