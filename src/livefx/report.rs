//! Livefx results: per setting and variant rows for summary.json (the contract shared with
//! the reports), histograms.json from the merged HdrHistograms, and the printed table.

use super::writer::new_hist;
use hdrhistogram::Histogram;
use serde_json::{Value, json};

/// Everything measured for one setting and variant, summed over its trials.
pub struct Group {
    pub setting: String,
    pub variant: String,
    pub backend: String,
    pub backend_note: String,
    pub rate: u32,
    pub period: u32,
    pub trials: u32,
    pub duration_s: f64,
    pub cycles: u64,
    pub xruns: u64,
    pub misses: u64,
    pub injected: u64,
    pub misses_not_injected: u64,
    pub injected_missed: u64,
    pub dropped: u64,
    pub discontinuities: Option<u64>,
    /// Discontinuities with no xrun or miss just before them: clicks nothing reported.
    pub unexplained: Option<u64>,
    pub roundtrip: Option<u32>,
    pub callback: Histogram<u64>,
    pub lateness: Histogram<u64>,
    pub wake: Histogram<u64>,
}

impl Group {
    pub fn new(setting: &str, variant: &str) -> Group {
        Group {
            setting: setting.into(),
            variant: variant.into(),
            backend: String::new(),
            backend_note: String::new(),
            rate: 0,
            period: 0,
            trials: 0,
            duration_s: 0.0,
            cycles: 0,
            xruns: 0,
            misses: 0,
            injected: 0,
            misses_not_injected: 0,
            injected_missed: 0,
            dropped: 0,
            discontinuities: None,
            unexplained: None,
            roundtrip: None,
            callback: new_hist(),
            lateness: new_hist(),
            wake: new_hist(),
        }
    }
}

fn per_hour(n: u64, secs: f64) -> Option<f64> {
    (secs > 0.0).then(|| n as f64 * 3600.0 / secs)
}

fn pcts(h: &Histogram<u64>) -> Value {
    if h.is_empty() {
        return json!({"p50": null, "p99": null, "p999": null, "max": null});
    }
    let us = |v: u64| v as f64 / 1e3;
    json!({
        "p50": us(h.value_at_quantile(0.5)),
        "p99": us(h.value_at_quantile(0.99)),
        "p999": us(h.value_at_quantile(0.999)),
        "max": us(h.max()),
    })
}

pub fn row_json(g: &Group) -> Value {
    json!({
        "setting": g.setting,
        "variant": g.variant,
        "backend": g.backend,
        "backend_note": g.backend_note,
        "rate": g.rate,
        "period": g.period,
        "trials": g.trials,
        "duration_s": g.duration_s,
        "cycles": g.cycles,
        "xruns": g.xruns,
        "deadline_misses": g.misses,
        "injected": g.injected,
        "injected_undetected": g.injected_missed,
        "misses_not_injected": g.misses_not_injected,
        "records_dropped": g.dropped,
        "misses_per_hour": per_hour(g.misses, g.duration_s),
        "xruns_per_hour": per_hour(g.xruns, g.duration_s),
        "discontinuities": g.discontinuities,
        "discontinuities_unexplained": g.unexplained,
        "roundtrip_frames": g.roundtrip,
        "callback_us": pcts(&g.callback),
        "lateness_us": pcts(&g.lateness),
        "wake_us": pcts(&g.wake),
    })
}

pub fn hist_json(g: &Group) -> Vec<Value> {
    [
        ("callback_duration", &g.callback),
        ("lateness", &g.lateness),
        ("wake_latency", &g.wake),
    ]
    .into_iter()
    .map(|(m, h)| {
        let buckets: Vec<Value> = h
            .iter_recorded()
            .map(|v| json!([v.value_iterated_to() as f64 / 1e3, v.count_at_value()]))
            .collect();
        json!({
            "setting": g.setting,
            "variant": g.variant,
            "metric": m,
            "unit": "us",
            "count": h.len(),
            "max": if h.is_empty() { 0.0 } else { h.max() as f64 / 1e3 },
            "buckets": buckets,
        })
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
            g.cycles.to_string(),
            g.xruns.to_string(),
            g.misses.to_string(),
            if g.injected_missed > 0 {
                format!("{} ({} undetected)", g.injected, g.injected_missed)
            } else {
                g.injected.to_string()
            },
            g.misses_not_injected.to_string(),
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
        if g.discontinuities.is_some() && g.roundtrip.is_none() && g.cycles > 0 {
            out.push_str(&format!(
                "{} / {}: the loopback signal never came back: check the wiring (playback and capture ports)\n",
                g.setting, g.variant
            ));
        }
        if let Some(u) = g.unexplained
            && u > 0
        {
            out.push_str(&format!(
                "{} / {}: {u} discontinuities with no xrun or deadline miss before them: clicks nothing reported\n",
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
        g.misses = 3;
        g.xruns = 2;
        g.cycles = 100;
        for v in [1000u64, 2000, 3000, 400_000] {
            g.callback.record(v).unwrap();
        }
        let r = row_json(&g);
        for k in [
            "setting",
            "variant",
            "backend",
            "backend_note",
            "rate",
            "period",
            "trials",
            "duration_s",
            "cycles",
            "xruns",
            "deadline_misses",
            "injected",
            "misses_per_hour",
            "xruns_per_hour",
            "discontinuities",
            "roundtrip_frames",
            "callback_us",
            "lateness_us",
            "wake_us",
        ] {
            assert!(r.get(k).is_some(), "missing {k}");
        }
        assert_eq!(r["misses_per_hour"], 6.0);
        assert_eq!(r["discontinuities"], Value::Null);
        let max = r["callback_us"]["max"].as_f64().unwrap();
        assert!((399.0..=401.0).contains(&max), "{max}");
        assert_eq!(r["wake_us"]["p50"], Value::Null);
        let h = hist_json(&g);
        assert_eq!(h.len(), 3);
        assert_eq!(h[0]["count"], 4);
        assert_eq!(h[0]["buckets"].as_array().unwrap().len(), 4);
        let t = render(&[g]);
        assert!(t.lines().nth(2).unwrap().starts_with("as-is"), "{t}");
    }
}
