//! The sweep every rig kind runs through: check everything before touching anything
//! (`prepare`), apply the profile's settings interleaved (A B A B) across trials with a
//! watchdog and the knob journal, restore (`rounds`), and write run.json and summary.json
//! (`finish`). `trials` (thread rigs) and `livefx` (audio rigs) sit above it; `guest`
//! runs the same `xrunrig run` inside the guest kernel.

pub mod decide;
mod finish;
pub mod kind;
pub mod plan;
mod prepare;
mod rounds;

pub use finish::{RunExtra, finish, finish_with, run_json, sweep_exit};
pub use kind::{Brought, Kinds, Rebuild, RigKind};
pub use plan::{Plan, PlanFile};
pub use prepare::{Machine, prepare, prepare_file, prepare_on};
pub use rounds::sweep;

use crate::knobs::InForce;
use crate::knobs::knob::Knob;
use crate::output::summary::TrialRecord;
use results::run::SchedFeatures;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Everything checked and decided before the first knob is touched: the run's plan
/// and what this machine adds to it.
pub struct Prepared {
    /// The run as decided from its inputs (`Plan`): rig, profile, settings, variants,
    /// trials, stopping rule, the choices it was made from.
    pub plan: Plan,
    /// Where the results go. The directory exists (marked INCOMPLETE) only once
    /// `create_dir` has run, which each rig kind calls after its last check that can
    /// refuse: a refused run leaves nothing behind.
    pub dir: PathBuf,
    /// `--out` was given: that directory exactly (else `dir`, `dir-2`, ... when taken).
    dir_named: bool,
    dir_created: bool,
    pub knobs: Vec<Knob>,
    pub stop: Arc<AtomicBool>,
    /// The run's time estimate (`Plan::estimate_ns`): its watchdog bound comes from it.
    pub estimate_ns: u64,
}

impl Prepared {
    /// Creates the results directory (`output::new_results_dir`): called once every
    /// check that can refuse the run has passed. `dir` may change (`-2`) when taken.
    pub fn create_dir(&mut self) -> Result<(), String> {
        if !self.dir_created {
            self.dir = crate::output::new_results_dir(&self.dir, self.dir_named)?;
            self.dir_created = true;
        }
        Ok(())
    }

    pub fn dir_created(&self) -> bool {
        self.dir_created
    }

    /// A run refused after `create_dir`: its directory goes again when nothing but the
    /// INCOMPLETE mark (and empty folders) was written into it.
    pub fn discard_dir(&self) {
        if !self.dir_created {
            return;
        }
        let _ = std::fs::remove_file(self.dir.join(results::INCOMPLETE));
        if let Ok(rd) = std::fs::read_dir(&self.dir) {
            for e in rd.flatten() {
                // remove_dir removes only empty folders.
                let _ = std::fs::remove_dir(e.path());
            }
        }
        if std::fs::remove_dir(&self.dir).is_err() {
            // Something was written: keep it, marked again as not a result.
            let _ = std::fs::write(
                self.dir.join(results::INCOMPLETE),
                "this run was refused before it measured anything\n",
            );
        }
    }
}

/// What a sweep produced.
pub struct Swept {
    pub records: Vec<TrialRecord>,
    pub in_force: Vec<(String, InForce)>,
    pub restored: Vec<String>,
    pub interrupted: bool,
    pub fatal: Option<String>,
    pub started: String,
    pub ended: String,
    pub features_before: SchedFeatures,
    pub features_after: SchedFeatures,
    /// mlockall's outcome, for run.json.
    pub mlockall: Result<(), String>,
    /// Other processes' share of all CPUs' time during the sweep (run.json's environment).
    pub others_cpu_percent: Option<f64>,
}
