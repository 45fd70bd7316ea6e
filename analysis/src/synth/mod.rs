//! SYNTHETIC test inputs, clearly labelled as such in every file they write: results
//! directories shaped exactly like `xrunrig run` writes them, for golden tests, plots
//! and the benchmark. Deterministic for a given seed.

pub mod bisect;
pub mod livefx;
pub mod trials;
pub mod watch;

use results::run::{
    Cpus, KernelInfo, ProfileInfo, RigInfo, RunDoc, SchedFeatures, SettingInfo, VariantInfo,
};

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

/// run.json's kernel in every synthetic directory.
pub(crate) fn kernel() -> KernelInfo {
    KernelInfo {
        release: Some("0.0.0-synthetic".into()),
        version: Some("#1 SMP PREEMPT_DYNAMIC synthetic".into()),
        machine: Some("x86_64".into()),
        cmdline: Some("synthetic=1".into()),
        preemption: Some("PREEMPT_DYNAMIC (synthetic)".into()),
    }
}

/// run.json of a synthetic run: every field a report reads, marked synthetic, and one
/// field no version knows (readers must ignore it).
pub fn run_json(
    rig: &str,
    kind: &str,
    settings: &[(&str, &str, &str)],
    variants: &[(&str, &str)],
    trials: u32,
) -> serde_json::Value {
    let run = RunDoc {
        format: results::FORMAT_VERSION,
        xrunrig_version: Some("synthetic".into()),
        command: vec!["analysis-synth".into(), rig.into(), kind.into()],
        started: Some("2026-01-01T00:00:00Z".into()),
        ended: Some("2026-01-01T00:10:00Z".into()),
        host: Some("synthetic-host".into()),
        kernel: Some(kernel()),
        cpus: Some(Cpus {
            model: Some("synthetic CPU".into()),
            count: Some(4),
            online: Some("{0-3}".into()),
        }),
        rig: Some(RigInfo {
            name: Some(rig.into()),
            path: None,
            sha256: Some("0000000000000000".into()),
            description: Some(LABEL.into()),
            text: Some(String::new()),
        }),
        profile: Some(ProfileInfo {
            name: Some("rt-push-ipi".into()),
            path: None,
            sha256: None,
            text: None,
        }),
        trials: Some(trials.into()),
        variants: variants
            .iter()
            .map(|(n, d)| VariantInfo {
                name: n.to_string(),
                description: d.to_string(),
            })
            .collect(),
        settings_applied: Some(true),
        settings_note: Some(LABEL.into()),
        settings: settings
            .iter()
            .map(|(n, d, feat)| SettingInfo {
                name: Some(n.to_string()),
                description: Some(d.to_string()),
                requested: Some(vec![feat.to_string()]),
                in_force: Some([("sched_features".to_string(), feat.to_string())].into()),
            })
            .collect(),
        sched_features_before: Some(SchedFeatures::Unreadable {
            unreadable: "synthetic".into(),
        }),
        sched_features_after: Some(SchedFeatures::Unreadable {
            unreadable: "synthetic".into(),
        }),
        ..Default::default()
    };
    let mut v = serde_json::to_value(&run).expect("run.json serialises");
    v["some_future_field"] = serde_json::json!({"reports": "must ignore this"});
    v
}
