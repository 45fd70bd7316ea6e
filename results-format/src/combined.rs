//! combined.json: the rows of several kernels' runs of one rig side by side, written in
//! the parent directory when `xrunrig run` is given more than one `--kernel`: a thread
//! rig's rows in `rows`, an audio rig's in `livefx_rows`.

use crate::trials::Row;
use serde::{Deserialize, Serialize};

pub const COMBINED_JSON: &str = "combined.json";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Combined {
    pub rig: String,
    pub kernels: Vec<KernelEntry>,
    pub rows: Vec<KernelRow>,
    /// Audio rigs: each kernel's summary rows (setting × variant: cycles, xruns,
    /// misses...). Absent in files written before audio rigs had a combined table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub livefx_rows: Vec<LivefxKernelRow>,
    /// `--boots N`: each kernel booted N times, interleaved; `kernels` lists the boots in
    /// the order they ran. Absent for one boot each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boots_per_kernel: Option<u32>,
    /// `--until-decided --boots N`: the second kernel's boots judged against the first's
    /// after each round of boots, and where it stopped. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boots_decided: Option<BootsDecided>,
}

/// `--until-decided` across boots: compare's judgement of the boots so far after each
/// round, at a level the looks share, until one decides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BootsDecided {
    /// The rule in words: the looks, each look's level, the overall error rate.
    pub rule: String,
    /// Each direction's level at each look, before Holm over the metrics.
    pub one_sided_per_look: f64,
    /// The largest number of looks (rounds 2 to N).
    pub looks_max: u32,
    pub looks: Vec<BootsLook>,
    /// compare's answer at the look that decided ("worse", "better", "the same"); None:
    /// undecided after the last round.
    pub answer: Option<String>,
}

/// One look: after `round` boots of each kernel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BootsLook {
    pub round: u32,
    /// compare's answer ("worse", "better", "the same", "inconclusive").
    pub answer: String,
    /// compare's one-sentence verdict.
    pub summary: String,
    /// The comparison's directory (compare.json, compare.txt, plots).
    pub comparison: String,
}

/// An audio rig's summary row with the kernel it came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LivefxKernelRow {
    pub kernel: String,
    #[serde(flatten)]
    pub row: crate::livefx::Row,
}

/// One kernel's run: where its results are and how it went.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KernelEntry {
    /// The kernel as asked for ("debian:6.12").
    pub kernel: String,
    pub release: String,
    /// Its results directory.
    pub dir: String,
    pub accel: Option<String>,
    pub emulated: bool,
    /// The guest run's exit code.
    pub exit: i32,
    pub error: Option<String>,
    pub boot_s: Option<f64>,
    /// The kernel's provenance when xrunrig built it from source: which row is patched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<crate::kbuild::KernelBuild>,
    /// `--until-decided`: this kernel's rule and comparisons (its summary.json's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_decided: Option<crate::trials::Decided>,
    /// `--boots N`: which boot of this kernel (from 1); its directory is
    /// `<kernel>/boot-<n>` under the run's base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<u32>,
}

/// A summary row with the kernel it came from (its release, and for a kernel built
/// from source, what was applied: `6.12.117-src+0001-fix`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelRow {
    pub kernel: String,
    #[serde(flatten)]
    pub row: Row,
}
