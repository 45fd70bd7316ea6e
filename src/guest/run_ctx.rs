//! What one kernel's guest run works with (`Ctx`: the plan, the options, the emulator
//! and the stop flag) and what it produces (`KernelRun`), shared by the run
//! (`kernel_run`), its boots (`boot`), its record (`record`) and its table (`tables`).

use super::HostPlan;
use super::kernel::Kernel;
use super::qemu::Accel;
use crate::options::{GuestOptions, RunOptions};
use crate::output::summary::Row;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// One kernel's guest run's inputs.
pub struct Ctx<'a> {
    pub plan: &'a HostPlan,
    pub args: &'a RunOptions,
    pub guest: &'a GuestOptions,
    pub qemu: &'a Path,
    pub qemu_version: &'a str,
    pub xrunrig: &'a Path,
    pub stop: &'a AtomicBool,
    /// With `--boots N`: this boot's place in the interleaved order (run.json's
    /// `guest.boot_place`).
    pub place: Option<results::run::BootPlace>,
}

/// Whose a failed guest run's failure is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Blame {
    /// The kernel under test's: it crashed (after its one more boot), reset itself,
    /// never reached its ready marker, or ran past the run's bound.
    Kernel,
    /// The machine's, which says nothing of the kernel: an emulator fault (past its
    /// fresh boots), QEMU killed (the OOM killer's SIGKILL) or exiting with an error,
    /// the results lost on the way home, the host's own disk or memory.
    Machine,
}

/// What one kernel's run produced.
pub struct KernelRun {
    pub kernel: Kernel,
    pub dir: PathBuf,
    pub code: i32,
    pub accel: Option<Accel>,
    pub rows: Vec<Row>,
    /// An audio rig's summary rows, as they came home.
    pub livefx_rows: Vec<results::livefx::Row>,
    pub error: Option<String>,
    /// Whose the failure in `error` is (`kernel_run::blame`): a bisection skips a
    /// commit for its kernel's failure and stops on the machine's.
    pub blame: Option<Blame>,
    pub boot_s: Option<f64>,
    pub wall_s: f64,
    /// `--until-decided`: the rule and comparisons of the summary.json that came home.
    pub decided: Option<results::trials::Decided>,
    /// With `--boots N`: which boot of its kernel this was.
    pub place: Option<results::run::BootPlace>,
}

impl KernelRun {
    /// The kernel's name, and with `--boots` which boot: a row's label.
    pub fn label(&self) -> String {
        match &self.place {
            Some(p) => format!("{} boot {}", self.kernel.name(), p.boot),
            None => self.kernel.name(),
        }
    }
}
