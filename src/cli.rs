//! Command-line interface.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "xrunrig",
    version,
    about = "Does this kernel, with these scheduler settings, keep my audio running?",
    long_about = "Runs real-time workloads (rigs) under kernel scheduler settings (profiles), \
                  counts xruns, deadline misses and latencies, and writes results that \
                  reports and kernel regression bugs can use."
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Run a rig, optionally swept across a profile's settings.
    Run(Box<RunArgs>),
    /// Parse and validate a rig (and profile) without running anything.
    Check(CheckArgs),
    /// Restore kernel settings left changed by a run that was killed.
    Restore,
    /// Check this machine's real-time setup; changes nothing.
    Doctor(DoctorArgs),
    /// Write report.txt, report.md, report.html and plots into a results directory.
    Report(ReportArgs),
    /// Compare results directories (kernels or settings) with statistics.
    Compare(CompareArgs),
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The rig file (rigs/*.toml).
    pub rig: PathBuf,
    /// Profile of settings to sweep (profiles/*.toml). Without it, nothing is changed.
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Trials per setting and variant (default: the rig's).
    #[arg(long)]
    pub trials: Option<u32>,
    /// Results directory (default: results/<rig>-<UTC time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run only these variants of the rig (repeatable).
    #[arg(long)]
    pub variant: Vec<String>,
    /// Run only these settings of the profile (repeatable).
    #[arg(long)]
    pub setting: Vec<String>,
    /// Do not apply the profile: measure with the machine's settings as they are, and
    /// record that in run.json.
    #[arg(long)]
    pub settings_as_is: bool,
    /// Hard bound on the whole run, e.g. "10 min" is not accepted, "600 s" is.
    #[arg(long)]
    pub max_time: Option<String>,

    /// Run inside a guest kernel in QEMU: a vmlinuz/bzImage path, a Debian linux-image
    /// .deb, a Debian package name, or debian:6.12 / debian:6.12-rt / debian:6.1.
    /// Repeat to compare kernels.
    #[arg(long)]
    pub kernel: Vec<String>,
    /// Guest vCPUs.
    #[arg(long)]
    pub cpus: Option<u32>,
    /// Guest memory, e.g. 1G.
    #[arg(long)]
    pub memory: Option<String>,
    /// Modules directory for a bare kernel image.
    #[arg(long)]
    pub modules: Option<PathBuf>,
    /// Guest acceleration: auto, kvm or tcg.
    #[arg(long, default_value = "auto")]
    pub accel: String,
    /// Extra guest kernel command line.
    #[arg(long)]
    pub append: Option<String>,

    /// Audio backend for audio rigs: auto, jack, alsa or clock.
    #[arg(long)]
    pub backend: Option<String>,
    /// Audio device (ALSA name such as hw:1) or JACK server name.
    #[arg(long)]
    pub device: Option<String>,
    /// Audio period in frames.
    #[arg(long)]
    pub period: Option<u32>,
    /// Sample rate in Hz.
    #[arg(long)]
    pub rate: Option<u32>,
    /// How long each audio trial runs, e.g. "10 s".
    #[arg(long)]
    pub duration: Option<String>,
    /// Inject an overrun every Nth cycle (audio rigs), to check the counters.
    #[arg(long)]
    pub inject_every: Option<u64>,
    /// The injected overrun's length as a multiple of the period.
    #[arg(long)]
    pub inject_factor: Option<f64>,
    /// Play a test signal out and check it comes back in (audio rigs).
    #[arg(long)]
    pub loopback: bool,
    /// With --kernel and --backend jack: the driver of the jackd the guest starts:
    /// alsa (the snd-aloop card, a real ALSA driver) or dummy (a timer, no card).
    #[arg(long, value_enum, default_value_t = GuestJack::Alsa)]
    pub guest_jack: GuestJack,
}

/// The JACK driver a guest's jackd runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GuestJack {
    Alsa,
    Dummy,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    pub rig: PathBuf,
    #[arg(long)]
    pub profile: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Exit non-zero when a check this rig needs fails.
    #[arg(long)]
    pub rig: Option<PathBuf>,
    /// With --rig: the profile it will run with; its sched features and debugfs knobs
    /// must then be writable.
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    pub dir: PathBuf,
    /// Leave out host name, user name and home paths.
    #[arg(long)]
    pub redact: bool,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Two or more results directories; the first is the baseline.
    #[arg(required = true, num_args = 2..)]
    pub dirs: Vec<PathBuf>,
    /// Relative change (percent) beyond which a significant regression fails the command.
    #[arg(long, default_value_t = 10.0)]
    pub threshold: f64,
    /// Where to write the comparison's files (default: the first directory).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long)]
    pub redact: bool,
}
