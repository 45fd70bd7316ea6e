//! Instruments sampled around each trial: IPI counters, sched tracing. (Being filled in.)

use std::collections::BTreeMap;
use std::path::Path;

/// What a rig's `[instruments]` table asks for, running across a whole run.
#[derive(Default)]
pub struct Instruments {}

/// What instruments found in one trial.
#[derive(Default)]
pub struct TrialFindings {
    /// Extra metric values, in the unit the instrument states, keyed by metric name.
    pub metrics: BTreeMap<String, Vec<f64>>,
    /// One-line evidence (e.g. "boost 10->90 at +1.0 ms; never migrated").
    pub evidence: Vec<String>,
}

impl Instruments {
    /// Parses the rig's `[instruments]` table (`offset`: its byte offset in `rig_text`,
    /// for error positions). `dir` is the results directory for raw captures.
    pub fn from_rig(
        _table: Option<&(toml::Table, usize)>,
        _rig_text: &str,
        _dir: &Path,
    ) -> Result<Instruments, String> {
        Ok(Instruments::default())
    }
    /// Before the first trial; may change tracing state (and must restore it in `after_run`
    /// and on every exit path).
    pub fn before_run(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// All rig threads exist (name, tid) and are about to be released.
    pub fn start_trial(&mut self, _setting: &str, _variant: &str, _trial: u32, _tids: &[(String, i32)]) {}
    /// The trial's threads have finished.
    pub fn end_trial(&mut self) -> TrialFindings {
        TrialFindings::default()
    }
    /// After the last trial: restore state; returns what goes into run.json under "instruments".
    pub fn after_run(&mut self) -> serde_json::Value {
        serde_json::Value::Null
    }
}
