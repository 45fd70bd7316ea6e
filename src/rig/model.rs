//! The rig file as written: TOML structures with source spans kept for error messages.
//! `deny_unknown_fields` everywhere, so a misspelt key is an error, not a silent default.

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RigFile {
    pub name: Option<Spanned<String>>,
    pub description: Option<String>,
    /// "trials" (default): threads run their steps once per trial.
    /// "livefx": an audio process (see `[livefx]`) plus optional background threads.
    pub kind: Option<Spanned<String>>,
    pub trials: Option<Spanned<u32>>,
    /// Hard bound on one trial; past it the watchdog aborts the trial.
    pub trial_timeout: Option<Spanned<String>>,
    /// Pause between trials, so RT throttling periods and caches settle.
    pub trial_gap: Option<Spanned<String>>,
    #[serde(default)]
    pub locks: BTreeMap<String, Spanned<LockDef>>,
    #[serde(default)]
    pub threads: Vec<Spanned<ThreadDef>>,
    #[serde(default)]
    pub metrics: BTreeMap<String, Spanned<MetricDef>>,
    #[serde(default)]
    pub variants: Vec<Spanned<VariantDef>>,
    /// The audio process of a `kind = "livefx"` rig (`super::livefx`).
    pub livefx: Option<Spanned<super::livefx::LivefxDef>>,
    /// Instruments sampled during each trial: IPI counters, trace (`super::instruments`).
    pub instruments: Option<Spanned<super::instruments::InstrumentsDef>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockDef {
    pub protocol: Spanned<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum CpuSpec {
    List(Vec<i64>),
    Text(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadDef {
    pub name: Spanned<String>,
    pub policy: Option<Spanned<String>>,
    /// 1..=99 for fifo and rr; for `other` this is the nice value (-20..=19).
    pub priority: Option<Spanned<i64>>,
    pub cpus: Option<Spanned<CpuSpec>>,
    pub instances: Option<Spanned<u32>>,
    /// Do this thread's `run` steps as syscalls under long seccomp filters, so the
    /// thread is migrate-disabled while it runs (crate::engine::migrate_disable).
    pub migrate_disable: Option<Spanned<bool>>,
    #[serde(default)]
    pub steps: Vec<Spanned<StepDef>>,
}

/// One step: exactly one action key (`run`, `spin`, `lock`, ...), checked by validation.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepDef {
    pub run: Option<Spanned<String>>,
    pub spin: Option<Spanned<String>>,
    pub spin_until: Option<Spanned<String>>,
    pub sleep: Option<Spanned<String>>,
    pub lock: Option<Spanned<String>>,
    pub unlock: Option<Spanned<String>>,
    pub signal: Option<Spanned<String>>,
    pub wait: Option<Spanned<String>>,
    pub barrier: Option<Spanned<String>>,
    pub mark: Option<Spanned<String>>,
    pub repeat: Option<Spanned<u64>>,
    pub repeat_for: Option<Spanned<String>>,
    pub steps: Option<Vec<Spanned<StepDef>>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricDef {
    pub from: Spanned<String>,
    pub to: Spanned<String>,
    pub bound: Option<Spanned<String>>,
    pub unit: Option<Spanned<String>>,
    pub description: Option<String>,
    /// End the trial once this metric has passed its bound: its `from` mark taken and
    /// its `to` mark not come within the bound (recorded as censored at the bound).
    pub end_early: Option<Spanned<bool>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantDef {
    pub name: Spanned<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub locks: BTreeMap<String, Spanned<LockDef>>,
    #[serde(default)]
    pub threads: BTreeMap<String, Spanned<ThreadOverride>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadOverride {
    pub policy: Option<Spanned<String>>,
    pub priority: Option<Spanned<i64>>,
    pub cpus: Option<Spanned<CpuSpec>>,
    pub migrate_disable: Option<Spanned<bool>>,
}
