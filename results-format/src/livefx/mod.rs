//! The livefx side of the results format: summary.json rows (`rows`), events.jsonl lines
//! (`events`), the cycles/*.bin record (`cycles`), histograms.json (`hist`), run.json's
//! `livefx` section (`LivefxSection`), and the counters both the engine and analysis
//! sum cycles with (`counters`).

pub mod counters;
pub mod cycles;
pub mod events;
pub mod hist;
pub mod rows;

pub use counters::{BurstCounts, Counters};
pub use cycles::Record;
pub use events::Event;
pub use hist::HistEntry;
pub use rows::{Cause, Causes, Pcts, Row, RowCounts, Summary, TrialRow};

use crate::lenient;
use serde::{Deserialize, Serialize};

/// The `livefx` section of run.json: what each setting ran on and the worker layout.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LivefxSection {
    /// One trial's length.
    #[serde(deserialize_with = "lenient::number")]
    pub duration_s: Option<f64>,
    pub backends: Vec<BackendUsed>,
    pub notes: Vec<BackendNote>,
    pub callback: CallbackInfo,
    pub workers: Vec<WorkerInfo>,
}

/// The audio parameters one setting ran with, and why that backend.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackendUsed {
    pub setting: String,
    pub backend: String,
    pub why: String,
    #[serde(deserialize_with = "lenient::count")]
    pub period: Option<u32>,
    #[serde(deserialize_with = "lenient::count")]
    pub rate: Option<u32>,
    #[serde(deserialize_with = "lenient::count")]
    pub nperiods: Option<u32>,
    #[serde(deserialize_with = "lenient::text")]
    pub device: Option<String>,
    #[serde(deserialize_with = "lenient::count")]
    pub inject_every: Option<u64>,
    #[serde(deserialize_with = "lenient::number")]
    pub inject_factor: Option<f64>,
    pub loopback: bool,
}

/// The backend's own note per setting and variant (what its xruns mean).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackendNote {
    pub setting: String,
    pub variant: String,
    pub backend_note: String,
}

/// The process callback's thread (the clock backend's; servers set their own).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CallbackInfo {
    #[serde(deserialize_with = "lenient::integer")]
    pub priority: Option<i64>,
    #[serde(deserialize_with = "lenient::counts")]
    pub cpus: Vec<u64>,
}

/// One worker thread instance.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerInfo {
    #[serde(deserialize_with = "lenient::text")]
    pub name: Option<String>,
    /// FIFO priority.
    #[serde(deserialize_with = "lenient::integer")]
    pub priority: Option<i64>,
    #[serde(deserialize_with = "lenient::counts")]
    pub cpus: Vec<u64>,
    /// The callback waits for it each cycle.
    pub waited: bool,
    pub plugins: Vec<PluginInfo>,
}

/// One plugin of a worker: CPU work, optionally under a lock.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PluginInfo {
    #[serde(deserialize_with = "lenient::number")]
    pub run_us: Option<f64>,
    #[serde(deserialize_with = "lenient::number")]
    pub jitter_us: Option<f64>,
    #[serde(deserialize_with = "lenient::text")]
    pub lock: Option<String>,
}
