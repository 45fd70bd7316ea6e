//! An audio rig's samples for `xrunrig compare` (from the report's cases: dropouts, each
//! latency's per-trial p99s, the trials that finished) and what makes two livefx runs
//! not one experiment; the samples' types are `crate::sample`'s.

pub use crate::sample::*;

use crate::load::livefx::LivefxData;
use results::trials::TrialStatus;

/// A livefx rig's: dropouts, each latency's per-trial p99s, and the trials that
/// finished.
pub fn livefx_samples(d: &LivefxData) -> Vec<(Key, Sample)> {
    let mut out = Vec::new();
    for c in crate::report::livefx::cases(d) {
        let k = |m: &str| (c.setting.clone(), c.variant.clone(), m.to_string());
        let dropouts = crate::report::livefx::trial_dropouts(d, &c.setting, &c.variant);
        if !dropouts.is_empty() {
            let episodes = crate::report::livefx::trial_episodes(d, &c.setting, &c.variant);
            out.push((k("dropouts"), Sample::Events { dropouts, episodes }));
        }
        let per = d
            .trial_latency
            .get(&(c.setting.clone(), c.variant.clone()))
            .cloned()
            .unwrap_or_default();
        for (i, (name, h)) in [
            ("callback p99", c.callback),
            ("lateness p99", c.lateness),
            ("wake p99", c.wake),
        ]
        .into_iter()
        .enumerate()
        {
            let Some(h) = h else { continue };
            let p99_us: Vec<f64> = per
                .iter()
                .filter_map(|t| [t.callback_p99_ns, t.lateness_p99_ns, t.wake_p99_ns][i])
                .map(|ns| ns as f64 / 1e3)
                .collect();
            out.push((
                k(name),
                Sample::Tails {
                    p99_us,
                    pooled: h.clone(),
                },
            ));
        }
        let trials: Vec<_> = d
            .trials
            .iter()
            .filter(|t| t.setting == c.setting && t.variant == c.variant)
            .collect();
        if !trials.is_empty() {
            let ok = trials
                .iter()
                .filter(|t| t.status.is_none_or(|s| s == TrialStatus::Ok))
                .count();
            out.push((
                k("trials finished"),
                Sample::Finished {
                    ok,
                    n: trials.len(),
                },
            ));
        }
    }
    out
}

/// Two livefx runs, A and `label`, where a (setting, variant) ran with another backend,
/// period or rate: what differs, in the words
/// `load.rs` `same_experiment()` refuses with.
pub fn audio_differs(x: &LivefxData, y: &LivefxData, label: &str) -> Option<String> {
    for r in &x.rows {
        let Some(o) = y.row(&r.setting, &r.variant) else {
            continue;
        };
        let (pa, pb) = (
            (&r.backend, r.period, r.rate),
            (&o.backend, o.period, o.rate),
        );
        if pa != pb {
            let show = |p: (&String, Option<u32>, Option<u32>)| {
                format!(
                    "backend {}, period {}, {} Hz",
                    p.0,
                    p.1.map_or("?".into(), |v| v.to_string()),
                    p.2.map_or("?".into(), |v| v.to_string())
                )
            };
            return Some(format!(
                "{} / {} ran with {} in A and {} in {label}",
                r.setting,
                r.variant,
                show(pa),
                show(pb)
            ));
        }
    }
    None
}
