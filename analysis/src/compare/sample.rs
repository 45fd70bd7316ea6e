//! What compare sets side by side: each metric of a directory as a sample (trial values,
//! a latency distribution or an event rate), its value for the table, and the test
//! between two samples.

use crate::dist::Dist;
use crate::load::{Kind, Results};
use crate::stats::{cv_percent, mann_whitney, mann_whitney_hist, median, rate_p, sorted};

/// (setting, variant, metric name)
pub type Key = (String, String, String);

/// One metric of one directory.
#[derive(Clone)]
pub enum Sample {
    /// Trial values (unit), with bound counts.
    Values {
        vals: Vec<f64>,
        /// Trials without a value (timed out): the slowest, for the test.
        missing: usize,
        unit: String,
        within: Option<(usize, usize)>,
        bound: Option<String>,
    },
    /// A latency distribution (ns), compared at its p99.
    Hist(Dist),
    /// Events over hours of audio.
    Rate { events: u64, hours: f64 },
}

/// Every metric of one directory, in its order.
pub fn samples(r: &Results) -> Vec<(Key, Sample)> {
    let mut out = Vec::new();
    match &r.kind {
        Kind::Trials(t) => {
            for row in &t.rows {
                out.push((
                    (row.setting.clone(), row.variant.clone(), row.metric.clone()),
                    Sample::Values {
                        vals: row.values.clone(),
                        missing: row.missing,
                        unit: row.unit.clone(),
                        within: row.within_bound.map(|w| (w, row.n.max(w))),
                        bound: row.bound.clone(),
                    },
                ));
            }
        }
        Kind::Livefx(d) => {
            for c in crate::report::livefx::cases(d) {
                let k = |m: &str| (c.setting.clone(), c.variant.clone(), m.to_string());
                if let Some(s) = c.audio_s {
                    out.push((
                        k("dropouts"),
                        Sample::Rate {
                            events: c.trouble(),
                            hours: s / 3600.0,
                        },
                    ));
                }
                for (name, h) in [
                    ("callback p99", c.callback),
                    ("lateness p99", c.lateness),
                    ("wake p99", c.wake),
                ] {
                    if let Some(h) = h {
                        out.push((k(name), Sample::Hist(h.clone())));
                    }
                }
            }
        }
    }
    out
}

/// (value, spread text, unit) for the table.
pub fn value_of(s: &Sample) -> (Option<f64>, String, String) {
    match s {
        Sample::Values { vals, unit, .. } => {
            let so = sorted(vals);
            (
                median(&so),
                cv_percent(vals).map_or(String::new(), |c| format!(" ±{c:.0}%")),
                unit.clone(),
            )
        }
        Sample::Hist(h) => (
            h.quantile(0.99).map(|v| v as f64 / 1e3),
            String::new(),
            "us".into(),
        ),
        Sample::Rate { events, hours } => (
            (*hours > 0.0).then(|| *events as f64 / hours),
            format!(" ({events} in {hours:.2} h)"),
            "/h".into(),
        ),
    }
}

/// The two-sided p of the candidate against the baseline; None for samples of
/// different kinds.
pub fn p_of(base: &Sample, cand: &Sample) -> Option<f64> {
    match (base, cand) {
        (
            Sample::Values {
                vals: a,
                missing: ma,
                ..
            },
            Sample::Values {
                vals: b,
                missing: mb,
                ..
            },
        ) => {
            let with = |v: &[f64], m: usize| -> Vec<f64> {
                v.iter()
                    .copied()
                    .chain(std::iter::repeat_n(f64::INFINITY, m))
                    .collect()
            };
            mann_whitney(&with(b, *mb), &with(a, *ma)).map(|m| m.p)
        }
        (Sample::Hist(a), Sample::Hist(b)) => mann_whitney_hist(b, a).map(|m| m.p),
        (
            Sample::Rate {
                events: ka,
                hours: ta,
            },
            Sample::Rate {
                events: kb,
                hours: tb,
            },
        ) => Some(rate_p(*ka, *ta, *kb, *tb)),
        _ => None,
    }
}
