//! events.jsonl (livefx): xruns, deadline misses, injected overruns, discontinuities.
//! Streamed twice (extent, then bins) into a fixed number of time bins per lane, so a
//! run with millions of events plots from a few kilobytes.

use results::livefx::BurstCounts;
pub use results::livefx::Event;
pub use results::livefx::events::BURST;
use results::livefx::events::{DEADLINE_MISS, DISCONTINUITY, INJECTED, SERVER_GONE, XRUN};
use std::collections::BTreeMap;
use std::path::Path;

/// The kinds drawn as lanes of marks, in legend order (bursts are drawn behind them).
pub const KINDS: [&str; 5] = [XRUN, DEADLINE_MISS, INJECTED, DISCONTINUITY, SERVER_GONE];
pub const BINS: usize = 600;
/// More lanes than this and trials are merged into one lane per setting and variant.
pub const MAX_LANES: usize = 16;

/// Shading of a time bin: no burst, a burst, a burst that caught the lock holder.
pub const SHADE_NONE: u8 = 0;
pub const SHADE_BURST: u8 = 1;
pub const SHADE_CAUGHT: u8 = 2;

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
    /// shade[lane][bin]: SHADE_* of the hog bursts that overlap the bin (the stronger
    /// wins). Empty when events.jsonl has no bursts.
    pub shade: Vec<Vec<u8>>,
    /// Hog bursts per (setting, variant), counted from their lines.
    pub bursts: BTreeMap<(String, String), BurstCounts>,
}

impl Timeline {
    pub fn total(&self, kind: &str) -> u64 {
        let Some(k) = kind_index(kind) else { return 0 };
        self.totals.values().map(|t| t[k]).sum()
    }
    pub fn bin_width(&self) -> f64 {
        (self.t_max / BINS as f64).max(1e-9)
    }
    /// (all bursts, bursts that caught the lock holder) over the run.
    pub fn burst_total(&self) -> (u64, u64) {
        let mut all = BurstCounts::default();
        for b in self.bursts.values() {
            all.merge(b);
        }
        (all.bursts, all.caught)
    }
}

fn each_event(path: &Path, f: impl FnMut(Event)) -> Result<usize, String> {
    super::each_line(path, f)
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
        tl.t_max = tl.t_max.max(e.t_end());
        if e.kind == BURST {
            tl.bursts
                .entry((e.setting.clone(), e.variant.clone()))
                .or_default()
                .add(e.caught.is_some(), e.misses.unwrap_or(0));
            return;
        }
        let tot = tl
            .totals
            .entry((e.setting.clone(), e.variant.clone()))
            .or_insert([0; KINDS.len()]);
        if let Some(k) = kind_index(&e.kind) {
            tot[k] += 1;
        }
        let here = (e.setting.clone(), e.variant.clone(), e.trial, e.cycle);
        // A miss on a cycle overrun on purpose is not news.
        let explained = e.kind == DEADLINE_MISS && last_injected.as_ref() == Some(&here);
        if e.kind == INJECTED {
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
    if !tl.bursts.is_empty() {
        tl.shade = vec![vec![SHADE_NONE; BINS]; lanes.len()];
    }
    let merged = lanes.first().is_some_and(|l| l.2.is_none());
    let bin = |t: f64| ((t.max(0.0) / width) as usize).min(BINS - 1);
    each_event(path, |e| {
        let trial = if merged { None } else { e.trial };
        let lane = || {
            lanes
                .iter()
                .position(|l| l.0 == e.setting && l.1 == e.variant && l.2 == trial)
        };
        if e.kind == BURST {
            let Some(li) = lane() else { return };
            let level = if e.caught.is_some() {
                SHADE_CAUGHT
            } else {
                SHADE_BURST
            };
            for s in &mut tl.shade[li][bin(e.t_s.unwrap_or(0.0))..=bin(e.t_end())] {
                *s = (*s).max(level);
            }
            return;
        }
        let Some(k) = kind_index(&e.kind) else { return };
        let Some(li) = lane() else { return };
        tl.counts[li][k][bin(e.t_s.unwrap_or(0.0))] += 1;
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
        let p = dir.join(results::EVENTS_JSONL);
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
        assert!(tl.shade.is_empty() && tl.bursts.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bursts_shade_their_bins_and_are_not_events() {
        let dir = std::env::temp_dir().join(format!("analysis-bursts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(results::EVENTS_JSONL);
        // 60 s trials: 0.1 s bins. A caught burst 10.0-10.5 s, a plain one 30.0-30.25 s
        // (its index and count written as floats), a miss in the first.
        let s = [
            r#"{"setting":"A","variant":"v","trial":0,"kind":"burst","cycle":null,"t_s":10.0,"usecs":500000,"caught":"render","lock":"bus","misses":1}"#,
            r#"{"setting":"A","variant":"v","trial":0,"kind":"deadline_miss","cycle":3750,"t_s":10.2,"usecs":900,"mono_s":812.25,"wall":"2026-11-30T13:50:01.123456Z","worker":"fx.1","lock":"bus","holder":"render","wait_us":41000.5,"why":"held","stuck_ms":38.5,"burst":0.0}"#,
            r#"{"setting":"A","variant":"v","trial":1,"kind":"burst","cycle":null,"t_s":30.0,"usecs":250000,"caught":null,"lock":null,"misses":0.0}"#,
        ]
        .join("\n");
        std::fs::write(&p, s).unwrap();
        let tl = load(&p, 59.994, &[]).unwrap();
        assert_eq!(tl.bad_lines, 0);
        assert_eq!(tl.lanes.len(), 2);
        assert_eq!(tl.total("deadline_miss"), 1);
        let b = tl.bursts[&("A".to_string(), "v".to_string())];
        assert_eq!((b.bursts, b.caught, b.misses_in_bursts), (2, 1, 1));
        assert_eq!(tl.burst_total(), (2, 1));
        // Only the miss is a first event, with its lock and cause.
        assert_eq!(tl.first.len(), 1);
        let m = &tl.first[0];
        assert_eq!(m.kind, "deadline_miss");
        assert_eq!(m.mono_s, Some(812.25));
        assert_eq!(m.wall.as_deref(), Some("2026-11-30T13:50:01.123456Z"));
        assert_eq!(
            (m.worker.as_deref(), m.lock.as_deref(), m.holder.as_deref()),
            (Some("fx.1"), Some("bus"), Some("render"))
        );
        assert_eq!(
            (m.wait_us, m.stuck_ms, m.burst),
            (Some(41000.5), Some(38.5), Some(0))
        );
        assert_eq!(m.why.as_deref(), Some("held"));
        let w = tl.bin_width();
        let shaded = |lane: usize, level: u8| -> Vec<usize> {
            (0..BINS).filter(|b| tl.shade[lane][*b] == level).collect()
        };
        let caught = shaded(0, SHADE_CAUGHT);
        assert_eq!(caught.first().copied(), Some((10.0 / w) as usize));
        assert_eq!(caught.last().copied(), Some((10.5 / w) as usize));
        assert!(shaded(0, SHADE_BURST).is_empty());
        let plain = shaded(1, SHADE_BURST);
        assert_eq!(plain.first().copied(), Some((30.0 / w) as usize));
        assert_eq!(plain.last().copied(), Some((30.25 / w) as usize));
        assert!(shaded(1, SHADE_CAUGHT).is_empty());
        // The miss sits inside the caught burst's bins.
        let mb = (0..BINS).find(|b| tl.counts[0][1][*b] > 0).unwrap();
        assert!(caught.contains(&mb));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
