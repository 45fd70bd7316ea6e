//! events.jsonl (livefx): xruns, deadline misses, injected overruns, discontinuities.
//! Streamed twice (extent, then bins) into a fixed number of time bins per lane, so a
//! run with millions of events plots from a few kilobytes.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

pub const KINDS: [&str; 5] = [
    "xrun",
    "deadline_miss",
    "injected",
    "discontinuity",
    "server_gone",
];
pub const BINS: usize = 600;
/// More lanes than this and trials are merged into one lane per setting and variant.
pub const MAX_LANES: usize = 16;

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(default)]
pub struct Event {
    pub setting: String,
    pub variant: String,
    pub trial: Option<u32>,
    pub kind: String,
    pub cycle: Option<u64>,
    pub t_s: Option<f64>,
    pub usecs: Option<f64>,
}

pub fn kind_index(k: &str) -> Option<usize> {
    KINDS.iter().position(|x| *x == k)
}

#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// (setting, variant, trial or None when trials are merged).
    pub lanes: Vec<(String, String, Option<u32>)>,
    pub t_max: f64,
    /// counts[lane][kind][bin]
    pub counts: Vec<Vec<Vec<u32>>>,
    /// Events per (setting, variant) and kind.
    pub totals: BTreeMap<(String, String), [u64; KINDS.len()]>,
    /// The first few events that were not injected on purpose, for the report.
    pub first: Vec<Event>,
    pub bad_lines: usize,
}

impl Timeline {
    pub fn total(&self, kind: &str) -> u64 {
        let Some(k) = kind_index(kind) else { return 0 };
        self.totals.values().map(|t| t[k]).sum()
    }
    pub fn bin_width(&self) -> f64 {
        (self.t_max / BINS as f64).max(1e-9)
    }
}

fn each_event(path: &Path, mut f: impl FnMut(Event)) -> Result<usize, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut bad = 0;
    let mut r = std::io::BufReader::with_capacity(1 << 16, file);
    let mut line = String::new();
    loop {
        line.clear();
        let n = r
            .read_line(&mut line)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Event>(&line) {
            Ok(e) => f(e),
            Err(_) => bad += 1,
        }
    }
    Ok(bad)
}

/// `t_hint`: the trials' known length in s, so the time axis covers the whole trial;
/// `known`: every trial of the run, so a trial without events still gets its lane.
pub fn load(
    path: &Path,
    t_hint: f64,
    known: &[(String, String, Option<u32>)],
) -> Result<Timeline, String> {
    let mut tl = Timeline::default();
    let mut last_injected: Option<(String, String, Option<u32>, Option<u64>)> = None;
    let mut lanes: Vec<(String, String, Option<u32>)> = known.to_vec();
    tl.bad_lines = each_event(path, |e| {
        let key = (e.setting.clone(), e.variant.clone(), e.trial);
        if !lanes.contains(&key) {
            lanes.push(key);
        }
        tl.t_max = tl.t_max.max(e.t_s.unwrap_or(0.0));
        let tot = tl
            .totals
            .entry((e.setting.clone(), e.variant.clone()))
            .or_insert([0; KINDS.len()]);
        if let Some(k) = kind_index(&e.kind) {
            tot[k] += 1;
        }
        let here = (e.setting.clone(), e.variant.clone(), e.trial, e.cycle);
        // A miss on a cycle overrun on purpose is not news.
        let explained = e.kind == "deadline_miss" && last_injected.as_ref() == Some(&here);
        if e.kind == "injected" {
            last_injected = Some(here);
        } else if !explained && tl.first.len() < 10 {
            tl.first.push(e);
        }
    })?;
    if lanes.len() > MAX_LANES {
        let mut merged: Vec<(String, String, Option<u32>)> = Vec::new();
        for (s, v, _) in lanes {
            if !merged.iter().any(|m| m.0 == s && m.1 == v) {
                merged.push((s, v, None));
            }
        }
        lanes = merged;
    }
    tl.t_max = tl.t_max.max(t_hint);
    tl.t_max = if tl.t_max > 0.0 {
        tl.t_max * 1.0001
    } else {
        1.0
    };
    tl.counts = vec![vec![vec![0u32; BINS]; KINDS.len()]; lanes.len()];
    let width = tl.bin_width();
    let merged = lanes.first().is_some_and(|l| l.2.is_none());
    each_event(path, |e| {
        let Some(k) = kind_index(&e.kind) else { return };
        let trial = if merged { None } else { e.trial };
        let Some(li) = lanes
            .iter()
            .position(|l| l.0 == e.setting && l.1 == e.variant && l.2 == trial)
        else {
            return;
        };
        let b = ((e.t_s.unwrap_or(0.0) / width) as usize).min(BINS - 1);
        tl.counts[li][k][b] += 1;
    })?;
    tl.lanes = lanes;
    Ok(tl)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_events_and_skips_bad_lines() {
        let dir = std::env::temp_dir().join(format!("analysis-events-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("events.jsonl");
        let mut s = String::new();
        for i in 0..10 {
            s += &format!(
                "{{\"setting\":\"A\",\"variant\":\"v\",\"trial\":0,\"kind\":\"deadline_miss\",\"cycle\":{i},\"t_s\":{},\"usecs\":3000,\"extra\":[1]}}\n",
                i as f64
            );
        }
        s += "{\"setting\":\"B\",\"variant\":\"v\",\"trial\":1,\"kind\":\"xrun\",\"cycle\":5,\"t_s\":2.5,\"usecs\":null}\n";
        s += "not json\n";
        std::fs::write(&p, s).unwrap();
        let tl = load(&p, 0.0, &[]).unwrap();
        assert_eq!(tl.lanes.len(), 2);
        assert_eq!(tl.bad_lines, 1);
        assert_eq!(tl.total("deadline_miss"), 10);
        assert_eq!(tl.total("xrun"), 1);
        let sum: u32 = tl.counts[0][1].iter().sum();
        assert_eq!(sum, 10);
        assert_eq!(tl.counts[1][0].iter().sum::<u32>(), 1);
        assert_eq!(tl.first.len(), 10);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
