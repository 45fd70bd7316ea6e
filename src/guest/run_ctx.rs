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
