//! What differs between rig kinds, behind one trait. Each kind implements `RigKind`
//! once (`src/trials/kind.rs` `Threads`, `src/livefx/kind.rs` `Livefx`) and is registered
//! once, in `src/kinds.rs` `of()`; a plan carries its kind's implementation
//! (`Plan::kind`), so no code outside that registration matches on `rig::Kind`.

use super::Prepared;
use super::decide::{Criterion, Rule};
use crate::knobs::profile::Setting;
use crate::options::AudioOptions;
use crate::output::summary::{Row, TrialRecord};
use crate::rig::Rig;
use crate::rig::livefx::Asked;
use results::run::RunDoc;
use std::path::Path;

/// How the edge finds a kind's implementation (`crate::kinds::of`): handed down to the
/// plan, which sits below the kinds.
pub type Kinds = fn(crate::rig::Kind) -> &'static dyn RigKind;

/// The defaults are a kind's that plays no audio and has no table of its own.
pub trait RigKind: Sync {
    /// The name rigs and results give it (a rig's `kind`, summary.json's `kind`).
    fn name(&self) -> &'static str;

    /// One trial's share of the run's estimate: [the trial itself at its bound, opening
    /// and closing what it needs, the gap after it].
    fn per_trial_ns(&self, rig: &Rig, audio: &AudioOptions) -> [u64; 3];

    /// `--until-decided` (and a bisect) needs each trial to pass or fail: what `rig`'s
    /// trials must keep to pass, or why they have no pass or fail (what to add).
    fn trial_verdict(&self, rig: &Rig) -> Result<Criterion, String>;

    /// Whether it plays audio: a guest kernel then gets sound cards and a JACK server.
    fn plays_audio(&self) -> bool {
        false
    }

    /// One setting's audio as the run asks for it (`audio`: the command line's), or None
    /// for a kind that plays none; Err says what is out of range.
    fn audio(
        &self,
        _rig: &Rig,
        _audio: &AudioOptions,
        _setting: &Setting,
    ) -> Result<Option<Asked>, String> {
        Ok(None)
    }

    /// `xrunrig check`: lines that describe the kind's own part of `rig` (printed first).
    fn check_lines(&self, _rig: &Rig, _path: &str) -> Vec<String> {
        vec![]
    }

    /// `xrunrig check`: what the kind's own threads need of the `online` CPUs, as its
    /// run checks them (the rig's threads' CPUs are every kind's: `Rig::check_machine`).
    fn check_cpus(&self, _rig: &Rig, _online: &[usize]) -> Result<(), String> {
        Ok(())
    }

    /// `xrunrig check` on this machine: what `run` would refuse in each setting (its
    /// audio parameters, the backends it names), one problem a line.
    fn check_settings(&self, _rig: &Rig, _settings: &[Setting]) -> Vec<String> {
        vec![]
    }

    /// Runs a prepared plan: its own last checks, the results directory, the sweep, its
    /// results; the exit code.
    fn run(&self, p: Prepared) -> i32;

    /// A guest run resumed over boots: the kind's own files rebuilt from the parts'
    /// merged records (samples.jsonl, events.jsonl and run.json are every kind's).
    fn rebuild(&self, r: &Rebuild) -> Result<(), String>;

    /// A guest kernel's summary.json as it came home: its table, and its rows for the
    /// table across kernels. None when there is none, or it is another kind's.
    fn brought(&self, dir: &Path) -> Option<Brought>;
}

/// What a resumed guest run's merge hands a kind to rebuild its files from.
pub struct Rebuild<'a> {
    /// The merged results directory.
    pub dir: &'a Path,
    pub rig: &'a Rig,
    pub settings: &'a [String],
    pub variants: &'a [String],
    /// Every finished trial, in the sweep's order.
    pub records: &'a [TrialRecord],
    /// The stopping rule the guest's sweep ran under.
    pub until: Option<&'a Rule>,
    /// The merged run.json (written after the kind's files).
    pub doc: &'a RunDoc,
}

/// One guest kernel's results as they came home.
#[derive(Default)]
pub struct Brought {
    /// Its table, as the kind prints it.
    pub table: String,
    /// A thread rig's rows, for the table across kernels.
    pub rows: Vec<Row>,
    /// An audio rig's rows, for the table across kernels.
    pub livefx_rows: Vec<results::livefx::Row>,
    /// `--until-decided`: the rule's decisions.
    pub decided: Option<results::trials::Decided>,
}

/// `dir`'s summary.json as kind `name` writes it; None when it is missing, unreadable or
/// another kind's (reading is lenient, so either kind's type would read the other's file).
pub fn summary_of<T: serde::de::DeserializeOwned>(dir: &Path, name: &str) -> Option<T> {
    let text = std::fs::read_to_string(dir.join(results::SUMMARY_JSON)).ok()?;
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(default)]
        kind: String,
    }
    let head: Head = serde_json::from_str(&text).ok()?;
    (head.kind == name)
        .then(|| serde_json::from_str(&text).ok())
        .flatten()
}
