//! SYNTHETIC test inputs, clearly labelled as such in every file they write: results
//! directories shaped exactly like `xrunrig run` writes them, for golden tests, plots
//! and the benchmark. Deterministic for a given seed.

pub mod livefx;
pub mod trials;

/// xorshift64*: small, fast and deterministic.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in (0, 1].
    #[inline]
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
    /// Exponential with the given mean.
    #[inline]
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * self.unit().ln()
    }
}

pub const LABEL: &str = "SYNTHETIC TEST INPUT made by analysis::synth, not a measurement";

pub(crate) fn write(path: &std::path::Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// run.json of a synthetic run: every field a report reads, marked synthetic.
pub fn run_json(
    rig: &str,
    kind: &str,
    settings: &[(&str, &str, &str)],
    variants: &[(&str, &str)],
    trials: u32,
) -> serde_json::Value {
    serde_json::json!({
        "xrunrig_version": "synthetic",
        "command": ["analysis-synth", rig, kind],
        "started": "2026-01-01T00:00:00Z",
        "ended": "2026-01-01T00:10:00Z",
        "host": "synthetic-host",
        "kernel": {
            "release": "0.0.0-synthetic",
            "version": "#1 SMP PREEMPT_DYNAMIC synthetic",
            "machine": "x86_64",
            "cmdline": "synthetic=1",
            "preemption": "PREEMPT_DYNAMIC (synthetic)"
        },
        "cpus": {"model": "synthetic CPU", "count": 4, "online": "{0-3}"},
        "rig": {"name": rig, "path": null, "sha256": "0000000000000000", "description": LABEL, "text": ""},
        "profile": {"name": "rt-push-ipi", "path": null, "sha256": null},
        "trials": trials,
        "variants": variants.iter().map(|(n, d)| serde_json::json!({"name": n, "description": d})).collect::<Vec<_>>(),
        "settings_applied": true,
        "settings_note": LABEL,
        "settings": settings.iter().map(|(n, d, feat)| serde_json::json!({
            "name": n, "description": d, "requested": [feat], "in_force": {"sched_features": feat}
        })).collect::<Vec<_>>(),
        "knobs_original": [],
        "sched_features_before": {"unreadable": "synthetic"},
        "sched_features_after": {"unreadable": "synthetic"},
        "interrupted": false,
        "error": null,
        "doctor": null,
        "instruments": null,
        "some_future_field": {"reports": "must ignore this"}
    })
}
