//! Command-line interface.

use crate::audio::BackendChoice;
pub use crate::options::GuestJack;
use crate::options::{
    AccelChoice, AudioOptions, GuestOptions, RunOptions, parse_cli_duration, valid_memory,
};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "xrunrig",
    version = crate::output::provenance::VERSION,
    about = "Does this kernel, with these scheduler settings, keep my audio running?",
    long_about = "Runs real-time workloads (rigs) under kernel scheduler settings (profiles), \
                  counts xruns, deadline misses and latencies, and writes results that \
                  reports and kernel regression bugs can use."
)]
pub struct Cli {
    /// Print only warnings and errors (and --json's document): no progress, no tables.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Run a rig, optionally swept across a profile's settings.
    Run(Box<RunArgs>),
    /// Parse and validate a rig (and profile) without running anything.
    Check(CheckArgs),
    /// Restore kernel settings (and a JACK server's period) left changed by a run that
    /// was killed.
    Restore(RestoreArgs),
    /// Check this machine's real-time setup; changes nothing.
    Doctor(DoctorArgs),
    /// Write report.txt, report.md, report.html and plots into a results directory.
    Report(ReportArgs),
    /// Compare results directories (kernels or settings) with statistics.
    Compare(CompareArgs),
    /// Write results directories in another system's format.
    #[command(subcommand)]
    Export(ExportCmd),
    /// Print a shell completion script (e.g. `xrunrig completions bash >
    /// /etc/bash_completion.d/xrunrig`).
    Completions(CompletionsArgs),
    /// Print the man page (roff), or write one per command into a directory.
    Man(ManArgs),
}

impl Cmd {
    /// Whether the subcommand was asked for its summary document on stdout (`--json`).
    pub fn json(&self) -> bool {
        match self {
            Cmd::Run(a) => a.json,
            Cmd::Doctor(a) => a.json,
            Cmd::Compare(a) => a.json,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// Write xrunrig.1, xrunrig-run.1, ... into this directory instead of xrunrig.1 to
    /// stdout.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ExportCmd {
    /// KCIDB I/O JSON (KernelCI's report database) on stdout: a checkout and build per
    /// kernel, a test per summary row.
    Kcidb(KcidbArgs),
    /// LAVA test cases, one per line: NAME RESULT [MEASUREMENT UNITS] (lava/ uses it).
    Lava(LavaArgs),
}

#[derive(Debug, Clone, Args)]
pub struct LavaArgs {
    /// Results directories.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct KcidbArgs {
    /// Results directories.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The lab's name in KCIDB: lower-case letters, digits and _.
    #[arg(long, default_value = analysis::kcidb::DEFAULT_ORIGIN)]
    pub origin: String,
    /// Where the results directories are published (BASE/<dir name>/report.txt);
    /// default: file:// URLs of the local directories.
    #[arg(long)]
    pub url_base: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct RestoreArgs {
    /// Drop the journal without writing anything back (for one that cannot be
    /// restored: a feature gone, lockdown on, a damaged file). Prints every entry dropped.
    #[arg(long)]
    pub discard: bool,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The rig file (rigs/*.toml).
    pub rig: PathBuf,
    /// Profile of settings to sweep (profiles/*.toml). Without it, nothing is changed.
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Trials per setting and variant (default: the rig's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
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
    /// Hard bound on the whole run: seconds, or a number and a unit ("600", "10 min", "1 h").
    #[arg(long, value_name = "DURATION", value_parser = parse_cli_duration)]
    pub max_time: Option<u64>,
    /// Stop giving a variant trials once its two settings differ (Fisher's exact test on
    /// the trials within the rig's bound, p ≤ 0.01 overall across the looks) or can no
    /// longer be told apart; --trials (or the rig's) is the maximum per setting. Thread
    /// rigs with one bounded metric, profiles with two settings.
    #[arg(long)]
    pub until_decided: bool,

    /// Run inside a guest kernel in QEMU: a vmlinuz/bzImage path, a Debian linux-image
    /// .deb, a Debian package name, or debian:6.12 / debian:6.12-rt / debian:6.1; or
    /// one built from source: src:PATH (a kernel tree or tarball) or debian-src:6.12
    /// (Debian's linux-source-6.12). Repeat to compare kernels.
    #[arg(long)]
    pub kernel: Vec<String>,
    /// Guest vCPUs (1 to 64; default: what the rig pins, at least 4).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub cpus: Option<u32>,
    /// Guest memory, e.g. 1G or 512M.
    #[arg(long, value_parser = memory_arg)]
    pub memory: Option<String>,
    /// Modules directory for a bare kernel image.
    #[arg(long)]
    pub modules: Option<PathBuf>,
    /// A patch for the last --kernel src:/debian-src: kernel (repeatable, applied in
    /// order): `--kernel debian-src:6.12 --kernel debian-src:6.12 --patch fix.patch`
    /// runs it without, then with the patch.
    #[arg(long, value_name = "FILE")]
    pub patch: Vec<PathBuf>,
    /// Guest acceleration.
    #[arg(long, value_enum, default_value_t = AccelChoice::Auto)]
    pub accel: AccelChoice,
    /// Extra guest kernel command line.
    #[arg(long)]
    pub append: Option<String>,

    /// Audio backend for audio rigs (default: the profile's, else the rig's).
    #[arg(long, value_enum)]
    pub backend: Option<BackendChoice>,
    /// Audio device (ALSA name such as hw:1) or JACK server name.
    #[arg(long)]
    pub device: Option<String>,
    /// Audio period in frames.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub period: Option<u32>,
    /// Sample rate in Hz.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate: Option<u32>,
    /// How long each audio trial runs: seconds, or a number and a unit ("10", "500 ms").
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub duration: Option<u64>,
    /// Inject an overrun every Nth cycle (audio rigs), to check the counters.
    #[arg(long)]
    pub inject_every: Option<u64>,
    /// The injected overrun's length as a multiple of the period (0 to 100).
    #[arg(long, value_parser = inject_factor_arg)]
    pub inject_factor: Option<f64>,
    /// Play a test signal out and check it comes back in (audio rigs).
    #[arg(long)]
    pub loopback: bool,
    /// With --kernel and --backend jack: the driver of the jackd the guest starts:
    /// alsa (the snd-aloop card, a real ALSA driver) or dummy (a timer, no card).
    #[arg(long, value_enum, default_value_t = GuestJack::Alsa)]
    pub guest_jack: GuestJack,
    /// Print summary.json's document to stdout when the run ends (combined.json's for
    /// several kernels); tables and messages go to stderr.
    #[arg(long)]
    pub json: bool,
}

fn positive_duration(s: &str) -> Result<u64, String> {
    match parse_cli_duration(s)? {
        0 => Err("must be more than 0".into()),
        ns => Ok(ns),
    }
}

fn memory_arg(s: &str) -> Result<String, String> {
    if valid_memory(s) {
        Ok(s.to_string())
    } else {
        Err(format!("'{s}': give a size such as 1G or 512M"))
    }
}

fn inject_factor_arg(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if (0.0..=100.0).contains(&f) => Ok(f),
        _ => Err(format!(
            "'{s}': use a multiple of the period between 0 and 100"
        )),
    }
}

impl RunArgs {
    /// The edge: from here on the run sees typed options only.
    pub fn into_options(self) -> RunOptions {
        RunOptions {
            // --patch alone still goes to the guest path, which refuses it with a reason.
            guest: (!self.kernel.is_empty() || !self.patch.is_empty()).then_some(GuestOptions {
                kernels: self.kernel,
                cpus: self.cpus,
                memory: self.memory,
                modules: self.modules,
                patches: self.patch,
                accel: self.accel,
                append: self.append,
                jack: self.guest_jack,
            }),
            rig: self.rig,
            profile: self.profile,
            trials: self.trials,
            out: self.out,
            variants: self.variant,
            settings: self.setting,
            settings_as_is: self.settings_as_is,
            max_time_ns: self.max_time,
            until_decided: self.until_decided,
            audio: AudioOptions {
                backend: self.backend,
                device: self.device,
                period: self.period,
                rate: self.rate,
                duration_ns: self.duration,
                inject_every: self.inject_every,
                inject_factor: self.inject_factor,
                loopback: self.loopback,
            },
        }
    }
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
    /// Machine-readable output: the findings as JSON on stdout.
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
    /// Print compare.json's document to stdout; the text goes to stderr.
    #[arg(long)]
    pub json: bool,
}
