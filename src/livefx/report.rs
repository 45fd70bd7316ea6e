//! Livefx results: per setting and variant rows for summary.json and histograms.json
//! (the `results::livefx` types), from the merged counters and HdrHistograms, and the
//! printed table.

use super::bursts::{BurstCounts, poisson_ci95};
use super::writer::new_hist;
use hdrhistogram::Histogram;
use results::livefx::hist::{CALLBACK_DURATION, LATENESS, UNIT_US, WAKE_LATENCY};
use results::livefx::{Cause, Causes, Counters, HistEntry, Pcts, Row};
use std::collections::BTreeMap;

/// Misses with one cause: how many, and the ranges of how long.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WhyAgg {
    pub count: u64,
    /// (min, max) ns the holder was off CPU, and the lock wait.
    pub stuck: Option<(u64, u64)>,
    pub wait: Option<(u64, u64)>,
}

fn widen(r: &mut Option<(u64, u64)>, v: Option<u64>) {
    if let Some(v) = v {
        *r = Some(r.map_or((v, v), |(a, b)| (a.min(v), b.max(v))));
    }
}

impl WhyAgg {
    pub fn add(&mut self, stuck: Option<u64>, wait: Option<u64>) {
        self.count += 1;
        widen(&mut self.stuck, stuck);
        widen(&mut self.wait, wait);
    }
}

/// Everything measured for one setting and variant, summed over its trials.
pub struct Group {
    pub setting: String,
    pub variant: String,
    pub backend: String,
    pub backend_note: String,
    /// The server or driver the stream reported (run.json's livefx notes).
    pub server: Option<results::livefx::AudioServer>,
    pub rate: u32,
    pub period: u32,
    pub trials: u32,
    pub duration_s: f64,
    /// Summed over the trials; `xruns` are each trial's outcome's (RT path and JACK's).
    pub counts: Counters,
    pub dropped: u64,
    pub discontinuities: Option<u64>,
    /// Discontinuities with no xrun, miss or skipped cycle just before them: clicks nothing
    /// reported.
    pub unexplained: Option<u64>,
    pub roundtrip: Option<u32>,
    pub callback: Histogram<u64>,
    pub lateness: Histogram<u64>,
    pub wake: Histogram<u64>,
    /// With a rig's `bursts`: what the bursts of background load did.
    pub bursts: Option<BurstCounts>,
    /// Misses grouped by cause sentence (`why`).
    pub why: BTreeMap<String, WhyAgg>,
}

impl Group {
    pub fn new(setting: &str, variant: &str) -> Group {
        Group {
            setting: setting.into(),
            variant: variant.into(),
            backend: String::new(),
            backend_note: String::new(),
            server: None,
            rate: 0,
            period: 0,
            trials: 0,
            duration_s: 0.0,
            counts: Counters::default(),
            dropped: 0,
            discontinuities: None,
            unexplained: None,
            roundtrip: None,
            callback: new_hist(),
            lateness: new_hist(),
            wake: new_hist(),
            bursts: None,
            why: BTreeMap::new(),
        }
    }

    /// Causes, most frequent first.
    pub fn why_sorted(&self) -> Vec<(&String, &WhyAgg)> {
        let mut v: Vec<_> = self.why.iter().collect();
        v.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
        v
    }
}

fn per_hour(n: u64, secs: f64) -> Option<f64> {
    (secs > 0.0).then(|| n as f64 * 3600.0 / secs)
}

fn pcts(h: &Histogram<u64>) -> Pcts {
    if h.is_empty() {
        return Pcts::default();
    }
    let us = |v: u64| Some(v as f64 / 1e3);
    Pcts {
        p50: us(h.value_at_quantile(0.5)),
        p99: us(h.value_at_quantile(0.99)),
        p999: us(h.value_at_quantile(0.999)),
        max: us(h.max()),
    }
}

fn ms_range(r: Option<(u64, u64)>) -> Option<(f64, f64)> {
    r.map(|(a, b)| (a as f64 / 1e6, b as f64 / 1e6))
}

/// The group's row of summary.json.
pub fn row(g: &Group) -> Row {
    let minutes = g.duration_s / 60.0;
    let mut row = Row {
        backend: g.backend.clone(),
        backend_note: Some(g.backend_note.clone()),
        driver: g.server.as_ref().and_then(|s| s.driver.clone()),
        rate: Some(g.rate),
        period: Some(g.period),
        trials: Some(g.trials),
        duration_s: Some(g.duration_s),
        records_dropped: Some(g.dropped),
        misses_per_hour: per_hour(g.counts.deadline_misses, g.duration_s),
        xruns_per_hour: per_hour(g.counts.xruns, g.duration_s),
        callback_us: pcts(&g.callback),
        lateness_us: pcts(&g.lateness),
        wake_us: pcts(&g.wake),
        misses_per_min: (minutes > 0.0).then(|| g.counts.deadline_misses as f64 / minutes),
        misses_per_min_ci95: poisson_ci95(g.counts.deadline_misses, minutes),
        why: Causes::Listed(
            g.why_sorted()
                .iter()
                .map(|(c, a)| Cause {
                    cause: Some(c.to_string()),
                    count: Some(a.count),
                    stuck_ms: ms_range(a.stuck),
                    wait_ms: ms_range(a.wait),
                })
                .collect(),
        ),
        ..Row::new(&g.setting, &g.variant)
    };
    row.counts.set(&g.counts);
    row.counts
        .set_loopback(g.discontinuities, g.unexplained, g.roundtrip);
    if let Some(b) = &g.bursts {
        row.set_bursts(b);
    }
    row
}

fn pct(a: u64, b: u64) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:.0} %", 100.0 * a as f64 / b as f64)
    }
}

fn ms_text(r: (u64, u64)) -> String {
    let f = |v: u64| crate::output::table::fmt_val(v as f64 / 1e6);
    if r.0 == r.1 {
        format!("{} ms", f(r.0))
    } else {
        format!("{}–{} ms", f(r.0), f(r.1))
    }
}

/// Per group: what the bursts did and why the misses happened, grouped by cause.
pub fn render_why(groups: &[Group]) -> String {
    let mut out = String::new();
    for g in groups {
        if let Some(b) = &g.bursts {
            let minutes = g.duration_s / 60.0;
            let ci = poisson_ci95(g.counts.deadline_misses, minutes)
                .map_or(String::new(), |(a, b)| format!(" [95 % {a:.1}–{b:.1}]"));
            out.push_str(&format!(
                "{} / {}: {} bursts; {} caught the lock holder, {} of those cost cycles ({}); \
                 {} bursts with misses in all; {:.1} misses/min{ci}\n",
                g.setting,
                g.variant,
                b.bursts,
                b.caught,
                b.caught_missed,
                pct(b.caught_missed, b.caught),
                b.missed,
                if minutes > 0.0 {
                    g.counts.deadline_misses as f64 / minutes
                } else {
                    0.0
                },
            ));
        }
        for (cause, a) in g.why_sorted() {
            let how_long = match (a.stuck, a.wait) {
                (Some(s), _) => format!(" (holder off CPU {})", ms_text(s)),
                (None, Some(w)) => format!(" (waited {})", ms_text(w)),
                _ => String::new(),
            };
            out.push_str(&format!(
                "{} / {}: {} of {} misses: {cause}{how_long}\n",
                g.setting, g.variant, a.count, g.counts.deadline_misses
            ));
        }
    }
    out
}

/// The group's entries of histograms.json.
pub fn hists(g: &Group) -> Vec<HistEntry> {
    [
        (CALLBACK_DURATION, &g.callback),
        (LATENESS, &g.lateness),
        (WAKE_LATENCY, &g.wake),
    ]
    .into_iter()
    .map(|(m, h)| HistEntry {
        setting: g.setting.clone(),
        variant: g.variant.clone(),
        metric: m.into(),
        unit: UNIT_US.into(),
        count: h.len(),
        max: if h.is_empty() {
            0.0
        } else {
            h.max() as f64 / 1e3
        },
        buckets: h
            .iter_recorded()
            .map(|v| (v.value_iterated_to() as f64 / 1e3, v.count_at_value()))
            .collect(),
    })
    .collect()
}

fn us(h: &Histogram<u64>, q: Option<f64>) -> String {
    if h.is_empty() {
        return "-".into();
    }
    let v = match q {
        Some(q) => h.value_at_quantile(q),
        None => h.max(),
    };
    crate::output::table::fmt_val(v as f64 / 1e3)
}

/// The table printed at the end of a run.
pub fn render(groups: &[Group]) -> String {
    let head = [
        "setting", "variant", "backend", "period", "cycles", "xruns", "misses", "injected",
        "other", "cb p99", "cb max", "late p99", "late max", "wake p99", "clicks",
    ];
    let mut lines: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for g in groups {
        lines.push(vec![
            g.setting.clone(),
            g.variant.clone(),
            g.backend.clone(),
            g.period.to_string(),
            g.counts.cycles.to_string(),
            g.counts.xruns.to_string(),
            g.counts.deadline_misses.to_string(),
            if g.counts.injected_undetected > 0 {
                format!(
                    "{} ({} undetected)",
                    g.counts.injected, g.counts.injected_undetected
                )
            } else {
                g.counts.injected.to_string()
            },
            g.counts.misses_not_injected.to_string(),
            us(&g.callback, Some(0.99)),
            us(&g.callback, None),
            us(&g.lateness, Some(0.99)),
            us(&g.lateness, None),
            us(&g.wake, Some(0.99)),
            g.discontinuities.map_or("-".into(), |d| d.to_string()),
        ]);
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|i| lines.iter().map(|l| l[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (n, l) in lines.iter().enumerate() {
        let cells: Vec<String> = l
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i < 3 {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
        if n == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
            out.push('\n');
        }
    }
    out.push_str(
        "times in µs; misses = callbacks that ended after their deadline; other = misses on \
         cycles without an injected overrun; clicks = loopback discontinuities (- = no loopback)\n",
    );
    for g in groups {
        if g.discontinuities.is_some() && g.roundtrip.is_none() && g.counts.cycles > 0 {
            out.push_str(&format!(
                "{} / {}: the loopback signal never came back: check the wiring (playback and capture ports)\n",
                g.setting, g.variant
            ));
        }
        if let Some(u) = g.unexplained
            && u > 0
        {
            out.push_str(&format!(
                "{} / {}: {u} discontinuities with no xrun, deadline miss or skipped cycle before them: clicks nothing reported\n",
                g.setting, g.variant
            ));
        }
        if g.roundtrip.is_some() || g.dropped > 0 {
            out.push_str(&format!(
                "{} / {}: {}{}\n",
                g.setting,
                g.variant,
                g.roundtrip
                    .map_or(String::new(), |r| format!("loopback round trip {r} frames")),
                if g.dropped > 0 {
                    format!("; {} cycle records dropped (writer too slow)", g.dropped)
                } else {
                    String::new()
                }
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_follow_the_contract() {
        let mut g = Group::new("as-is", "pi");
        g.duration_s = 1800.0;
        g.counts.deadline_misses = 3;
        g.counts.xruns = 2;
        g.counts.cycles = 100;
        for v in [1000u64, 2000, 3000, 400_000] {
            g.callback.record(v).unwrap();
        }
        let r = row(&g);
        assert_eq!(
            (r.setting.as_str(), r.counts.cycles, r.counts.xruns),
            ("as-is", 100, 2)
        );
        assert_eq!(r.misses_per_hour, Some(6.0));
        assert_eq!(r.counts.discontinuities, None);
        let max = r.callback_us.max.unwrap();
        assert!((399.0..=401.0).contains(&max), "{max}");
        assert_eq!(r.wake_us.p50, None);
        assert_eq!(
            (r.why.list().map(|w| w.len()), r.burst.bursts),
            (Some(0), None)
        );
        let h = hists(&g);
        assert_eq!(h.len(), 3);
        assert_eq!(h[0].count, 4);
        assert_eq!(h[0].buckets.len(), 4);
        let t = render(&[g]);
        assert!(t.lines().nth(2).unwrap().starts_with("as-is"), "{t}");
    }
}
