//! Command-line interface.

use crate::audio::BackendChoice;
pub use crate::options::GuestJack;
use crate::options::{
    AccelChoice, AudioOptions, BisectOptions, CheckOptions, Choices, DoctorOptions, GuestOptions,
    KernelChoice, KernelSpec, RunOptions, parse_cli_duration, valid_memory,
};
use crate::rig::limits::{
    GUEST_MAX_CPUS, MAX_PERIOD, MAX_RATE, MAX_RUN_NS, MAX_TRIAL_NS, MAX_TRIALS,
};
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
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
    /// Parse and validate a rig (and profile) without running anything; exit 2 on what
    /// `xrunrig run` would refuse (on this machine, or in a guest with --cpus N).
    Check(CheckArgs),
    /// Restore kernel settings (and a JACK server's period) left changed by a run that
    /// was killed.
    Restore(RestoreArgs),
    /// Check this machine's real-time setup; changes nothing.
    Doctor(DoctorArgs),
    /// Watch your own JACK or PipeWire session and say why each xrun happened: a passive
    /// client counts xruns, a flight recorder (tracefs) keeps the scheduler's story
    /// around each one. Changes nothing; root for the explanations.
    Watch(WatchArgs),
    /// Write report.txt, report.md, report.html and plots into a results directory.
    Report(ReportArgs),
    /// Compare results directories (kernels or settings) with statistics.
    Compare(CompareArgs),
    /// Measure how much a rig's figures move from run to run on this machine (A/A
    /// pairs), and keep it for `xrunrig compare` with one run a side.
    Calibrate(Box<CalibrateArgs>),
    /// Write results directories in another system's format.
    #[command(subcommand)]
    Export(ExportCmd),
    /// Print a shell completion script (e.g. `xrunrig completions bash >
    /// /etc/bash_completion.d/xrunrig`).
    Completions(CompletionsArgs),
    /// Print the man page (roff), or write one per command into a directory.
    Man(ManArgs),
    /// Run a plan file as `xrunrig run --kernel` writes one for each guest kernel (the
    /// run decided on the host: rig, profile and choices). Not for people: hidden.
    #[command(name = "run-plan", hide = true)]
    RunPlan(RunPlanArgs),
    /// Find the commit between two kernels where a rig's behaviour changed: each step
    /// built from one tree checked out in place, booted in a QEMU guest, and decided
    /// good, bad or undecided by Fisher's exact test against the two ends; the first
    /// bad commit is confirmed by reverting it.
    Bisect(Box<BisectArgs>),
}

#[derive(Debug, Clone, Args)]
pub struct BisectArgs {
    /// The rig file (rigs/*.toml): a thread rig with one bounded metric, or an audio
    /// rig that states a per-trial pass.
    pub rig: PathBuf,
    /// Profile of settings (profiles/*.toml); --setting picks the one every step runs.
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// The kernel tree: a git checkout (read only; steps are built in a worktree in the
    /// build cache).
    #[arg(long)]
    pub tree: PathBuf,
    /// A commit that behaves well (an ancestor of --bad).
    #[arg(long)]
    pub good: String,
    /// A commit that shows the regression.
    #[arg(long)]
    pub bad: String,
    /// The profile's setting every step runs (needed when it has several).
    #[arg(long)]
    pub setting: Option<String>,
    /// The rig's variant every step runs (needed when it has several).
    #[arg(long)]
    pub variant: Option<String>,
    /// Do not apply the profile's settings in the guests.
    #[arg(long)]
    pub settings_as_is: bool,
    /// Most trials a step gets before it is called undecided and skipped.
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub trials: u32,
    /// Trials per boot: a step is looked at after each batch.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub batch: u32,
    /// A patch applied at every step (repeatable, in order); a step it does not apply
    /// to is skipped.
    #[arg(long, value_name = "FILE")]
    pub patch: Vec<PathBuf>,
    /// Where bisect.json, bisect.log and each boot's results go (default:
    /// results/bisect-<rig>-<UTC time>); the same --out resumes a killed bisection.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Guest vCPUs (default: what the rig pins, at least 4).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=GUEST_MAX_CPUS as i64))]
    pub cpus: Option<u32>,
    /// Guest memory, e.g. 1G or 512M.
    #[arg(long, value_parser = memory_arg)]
    pub memory: Option<String>,
    /// Guest acceleration.
    #[arg(long, value_enum, default_value_t = AccelChoice::Auto)]
    pub accel: AccelChoice,
    /// Extra guest kernel command line.
    #[arg(long)]
    pub append: Option<String>,
    /// Audio backend for audio rigs.
    #[arg(long, value_enum)]
    pub backend: Option<BackendChoice>,
    /// Audio period in frames (1 to 16384).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_PERIOD)))]
    pub period: Option<u32>,
    /// How long each audio trial runs ("2 s", "10").
    #[arg(long, value_name = "DURATION", value_parser = positive_duration, allow_hyphen_values = true)]
    pub duration: Option<u64>,
    /// With --backend jack: the driver of the jackd the guest starts.
    #[arg(long, value_enum, default_value_t = GuestJack::Alsa)]
    pub guest_jack: GuestJack,
}

impl BisectArgs {
    /// The edge: typed options from here on.
    pub fn into_options(self) -> BisectOptions {
        BisectOptions {
            rig: self.rig,
            profile: self.profile,
            tree: self.tree,
            good: self.good,
            bad: self.bad,
            setting: self.setting,
            variant: self.variant,
            settings_as_is: self.settings_as_is,
            trials: self.trials,
            batch: self.batch,
            patches: self.patch,
            out: self.out,
            audio: AudioOptions {
                backend: self.backend,
                period: self.period,
                duration_ns: self.duration,
                ..Default::default()
            },
            guest: GuestOptions {
                kernels: vec![],
                stray_patches: vec![],
                cpus: self.cpus,
                memory: self.memory,
                modules: None,
                accel: self.accel,
                append: self.append,
                jack: self.guest_jack,
                watch: false,
                boots: 1,
            },
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct RunPlanArgs {
    /// The plan file (JSON, `sweep::PlanFile`).
    pub plan: PathBuf,
    /// Results directory.
    #[arg(long)]
    pub out: PathBuf,
}

/// The command line's definition: the derive's, with each command's exit codes after
/// its help (`exit::help`). `--help`, the completions and the man pages come from it.
pub fn command() -> clap::Command {
    let mut c = Cli::command().after_help(crate::exit::help(""));
    let names: Vec<String> = c
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for n in names {
        let h = crate::exit::help(&n);
        // `export kcidb --help` too: a nested command's codes are its parent's.
        c = c.mut_subcommand(&n, |mut s| {
            let inner: Vec<String> = s
                .get_subcommands()
                .map(|x| x.get_name().to_string())
                .collect();
            for i in inner {
                s = s.mut_subcommand(&i, |x| x.after_help(h.clone()));
            }
            s.after_help(h)
        });
    }
    c
}

impl Cli {
    /// Parses the process's arguments (`command()`), exiting with clap's message and
    /// code 2 on bad input.
    pub fn parse_args() -> Cli {
        Cli::try_parse_args(std::env::args_os()).unwrap_or_else(|e| e.exit())
    }

    /// Parses `args` as the program does: each `--patch` bound to the `--kernel` before
    /// it (`RunArgs::bind_patches`).
    pub fn try_parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let m = command()
            .try_get_matches_from(args)
            .map_err(suggest_subcommand)?;
        let mut cli = Cli::from_arg_matches(&m)?;
        match (&mut cli.cmd, m.subcommand()) {
            (Cmd::Run(a), Some(("run", rm))) => a.bind_patches(rm),
            (Cmd::Calibrate(a), Some(("calibrate", rm))) => a.run.bind_patches(rm),
            _ => {}
        }
        Ok(cli)
    }
}

/// clap suggests a subcommand only above its similarity cut, which a swapped pair of
/// letters ("rnu") misses: a subcommand within two edits (a swap counted as one) is
/// named as its tip.
fn suggest_subcommand(mut e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::InvalidSubcommand || e.get(ContextKind::SuggestedSubcommand).is_some()
    {
        return e;
    }
    let Some(ContextValue::String(typed)) = e.get(ContextKind::InvalidSubcommand).cloned() else {
        return e;
    };
    let best = command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| (edits(&typed, c.get_name()), c.get_name().to_string()))
        .filter(|(d, _)| *d <= 2)
        .min();
    if let Some((_, name)) = best {
        e.insert(ContextKind::SuggestedSubcommand, ContextValue::String(name));
    }
    e
}

/// Edits between `a` and `b`: insertions, deletions, substitutions and swaps of two
/// neighbours (optimal string alignment).
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

impl Cmd {
    /// Whether the subcommand was asked for its summary document on stdout (`--json`).
    pub fn json(&self) -> bool {
        match self {
            Cmd::Run(a) => a.json,
            Cmd::Doctor(a) => a.json,
            Cmd::Compare(a) => a.json,
            Cmd::Watch(a) => a.json,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct CalibrateArgs {
    /// The runs, as `xrunrig run` takes them (rig, profile, settings, variants, trials,
    /// duration, backend, --kernel ...); --out is where the runs go.
    #[command(flatten)]
    pub run: RunArgs,
    /// A/A pairs to run: 2 x N runs, nothing changed between them (2 to 200).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub pairs: u32,
    /// Start the calibration anew: by default the runs are added to a calibration kept of
    /// this rig on this machine (calibrating again on another day widens it to what the
    /// machine does between sessions).
    #[arg(long)]
    pub fresh: bool,
}

impl CalibrateArgs {
    pub fn into_options(self) -> crate::calibrate::CalibrateOptions {
        crate::calibrate::CalibrateOptions {
            pairs: self.pairs,
            fresh: self.fresh,
            run: self.run.into_options(),
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
    #[arg(long, default_value = analysis::export::kcidb::DEFAULT_ORIGIN)]
    pub origin: String,
    /// Where the results directories are published (BASE/<dir name>/report.txt);
    /// default: file:// URLs of the local directories.
    #[arg(long)]
    pub url_base: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct RestoreArgs {
    /// Drop journals without writing anything back (for one that cannot be restored: a
    /// feature gone, lockdown on, a damaged file). With JOURNAL (a file in the state
    /// directory, as `xrunrig restore` names it) only that one; bare, every journal not of
    /// a live run. Prints each journal dropped and every entry in it.
    #[arg(long, num_args = 0..=1, value_name = "JOURNAL")]
    pub discard: Option<Option<PathBuf>>,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The rig file (rigs/*.toml); not with --from.
    #[arg(required_unless_present = "from")]
    pub rig: Option<PathBuf>,
    /// Run again a run recorded in DIR (its run.json): the rig and profile as they ran
    /// (their recorded text), its options and backend. Only --out, --json, --max-time
    /// and --kernel (with its --patch) may be given beside it; --kernel runs it on that
    /// kernel instead of the recorded one.
    #[arg(long, value_name = "DIR", conflicts_with_all = FROM_CONFLICTS)]
    pub from: Option<PathBuf>,
    /// Set by `--from`: the run repeated (recorded in run.json).
    #[arg(skip)]
    pub rerun_of: Option<results::run::RerunOf>,
    /// Profile of settings to sweep (profiles/*.toml). Without it, nothing is changed.
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Trials per setting and variant (default: the rig's; 1 to 10000). Compare needs 3
    /// or more a side to give a verdict.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_TRIALS)))]
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
    /// Hard bound on the whole run: seconds, or a number and a unit ("600", "10m",
    /// "1 h"; m is minutes, ms milliseconds).
    #[arg(long, value_name = "DURATION", value_parser = max_time_arg, allow_hyphen_values = true)]
    pub max_time: Option<u64>,
    /// Stop giving a variant trials once its two settings differ (Fisher's exact test on
    /// the trials that pass, p ≤ 0.01 overall across the looks) or can no longer be told
    /// apart; --trials (or the rig's) is the maximum per setting. Thread rigs with one
    /// bounded metric, livefx rigs with a [livefx] pass; profiles with two settings.
    #[arg(long)]
    pub until_decided: bool,

    /// Run inside a guest kernel in QEMU: a vmlinuz/bzImage path, a Debian linux-image
    /// .deb, a Debian package name, or debian:6.12 / debian:6.12-rt / debian:6.1; or
    /// one built from source: src:PATH (a kernel tree or tarball) or debian-src:6.12
    /// (Debian's linux-source-6.12). Repeat to compare kernels.
    #[arg(long, value_parser = KernelSpec::parse)]
    pub kernel: Vec<KernelSpec>,
    /// Guest vCPUs (1 to 64; default: what the rig pins, at least 4).
    #[arg(long, requires = "kernel", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=GUEST_MAX_CPUS as i64))]
    pub cpus: Option<u32>,
    /// Guest memory, e.g. 1G or 512M.
    #[arg(long, requires = "kernel", value_parser = memory_arg)]
    pub memory: Option<String>,
    /// Modules directory for a bare kernel image.
    #[arg(long, requires = "kernel")]
    pub modules: Option<PathBuf>,
    /// A patch for the --kernel src:/debian-src: written just before it (repeatable,
    /// applied in order): `--kernel debian-src:6.12 --kernel debian-src:6.12 --patch
    /// fix.patch` runs it without, then with the patch. A --patch before any --kernel,
    /// or after a kernel not built from source, is refused.
    #[arg(long, value_name = "FILE")]
    pub patch: Vec<PathBuf>,
    /// For each --patch, the index of the --kernel written before it (None: before any):
    /// filled by `bind_patches` from the order on the command line.
    #[arg(skip)]
    pub patch_kernel: Vec<Option<usize>>,
    /// Guest acceleration.
    #[arg(long, value_enum, default_value_t = AccelChoice::Auto)]
    pub accel: AccelChoice,
    /// Extra guest kernel command line.
    #[arg(long, requires = "kernel")]
    pub append: Option<String>,
    /// Boot each --kernel this many times (1 to 50), interleaved (A B B A A B ...), each
    /// boot a run of its own in `<out>/<kernel>/boot-<n>/`: a boot is what varies between
    /// runs of a kernel, so `xrunrig compare OUT` judges each kernel's boots as its runs.
    #[arg(long, default_value_t = 1, requires = "kernel", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub boots: u32,

    /// Audio backend for audio rigs (default: the profile's, else the rig's).
    #[arg(long, value_enum)]
    pub backend: Option<BackendChoice>,
    /// Audio device (ALSA name such as hw:1) or JACK server name.
    #[arg(long)]
    pub device: Option<String>,
    /// Audio period in frames (1 to 16384).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_PERIOD)))]
    pub period: Option<u32>,
    /// Sample rate in Hz (1 to 768000).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_RATE)))]
    pub rate: Option<u32>,
    /// How long each audio trial runs: seconds, or a number and a unit ("10", "500 ms",
    /// "10m"; m is minutes, ms milliseconds; at most 24 h).
    #[arg(long, value_name = "DURATION", value_parser = positive_duration, allow_hyphen_values = true)]
    pub duration: Option<u64>,
    /// Inject an overrun every Nth cycle (audio rigs), to check the counters.
    #[arg(long, allow_negative_numbers = true)]
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
    /// With --kernel and --backend jack: run `xrunrig watch` beside the rig in the
    /// guest's JACK session; its explanation of each xrun lands in the results' watch/
    /// folder, beside the rig's own (a check of one against the other).
    #[arg(long, requires = "kernel")]
    pub guest_watch: bool,
    /// Print summary.json's document to stdout when the run ends (combined.json's for
    /// several kernels); tables and messages go to stderr.
    #[arg(long)]
    pub json: bool,
}

/// What `--from` repeats from the recorded run, so it is not given beside it.
const FROM_CONFLICTS: [&str; 23] = [
    "rig",
    "profile",
    "trials",
    "variant",
    "setting",
    "settings_as_is",
    "until_decided",
    "cpus",
    "memory",
    "modules",
    "accel",
    "append",
    "boots",
    "backend",
    "device",
    "period",
    "rate",
    "duration",
    "inject_every",
    "inject_factor",
    "loopback",
    "guest_jack",
    "guest_watch",
];

/// A trial's length: more than 0, at most `MAX_TRIAL_NS`.
fn positive_duration(s: &str) -> Result<u64, String> {
    match parse_cli_duration(s)? {
        0 => Err("must be positive (more than 0)".into()),
        ns if ns > MAX_TRIAL_NS => Err(format!(
            "'{s}': a trial may last at most {} h",
            MAX_TRIAL_NS / 3_600_000_000_000
        )),
        ns => Ok(ns),
    }
}

/// The whole run's bound: more than 0, at most `MAX_RUN_NS`.
fn max_time_arg(s: &str) -> Result<u64, String> {
    match parse_cli_duration(s)? {
        0 => Err("must be positive (more than 0)".into()),
        ns if ns > MAX_RUN_NS => Err(format!(
            "'{s}': a run may last at most {} days",
            MAX_RUN_NS / 86_400_000_000_000
        )),
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
    /// Binds each --patch to the --kernel written just before it, from the positions
    /// clap saw them at (`m`: the matches these arguments were read from).
    pub fn bind_patches(&mut self, m: &ArgMatches) {
        let kernels: Vec<usize> = m
            .indices_of("kernel")
            .map(|i| i.collect())
            .unwrap_or_default();
        let patches: Vec<usize> = m
            .indices_of("patch")
            .map(|i| i.collect())
            .unwrap_or_default();
        self.patch_kernel = patches
            .iter()
            .map(|p| kernels.iter().rposition(|k| k < p))
            .collect();
    }

    /// The edge: from here on the run sees typed options only.
    pub fn into_options(self) -> RunOptions {
        let mut kernels: Vec<KernelChoice> = self
            .kernel
            .iter()
            .map(|k| KernelChoice {
                spec: k.clone(),
                patches: vec![],
            })
            .collect();
        let mut stray_patches = Vec::new();
        for (i, p) in self.patch.iter().enumerate() {
            // Unbound (parsed without `bind_patches`): before any kernel, refused.
            match self.patch_kernel.get(i).copied().flatten() {
                Some(k) if k < kernels.len() => kernels[k].patches.push(p.clone()),
                _ => stray_patches.push(p.clone()),
            }
        }
        RunOptions {
            // --patch alone still goes to the guest path, which refuses it with a reason.
            guest: (!self.kernel.is_empty() || !self.patch.is_empty()).then_some(GuestOptions {
                kernels,
                stray_patches,
                cpus: self.cpus,
                memory: self.memory,
                modules: self.modules,
                accel: self.accel,
                append: self.append,
                jack: self.guest_jack,
                watch: self.guest_watch,
                boots: self.boots,
            }),
            // Present unless --from, which `rerun::resolve` replaces by the recorded rig.
            rig: self.rig.unwrap_or_default(),
            profile: self.profile,
            out: self.out,
            choices: Choices {
                rerun_of: self.rerun_of,
                trials: self.trials,
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
            },
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    pub rig: PathBuf,
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Check for a guest kernel with this many vCPUs (as `run --kernel ... --cpus N`)
    /// instead of this machine: CPUs against 0..N, sched feature names against the
    /// kernels xrunrig knows; no backend probed.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub cpus: Option<u32>,
}

impl CheckArgs {
    /// The edge: typed options for `check`.
    pub fn into_options(self) -> CheckOptions {
        CheckOptions {
            rig: self.rig,
            profile: self.profile,
            cpus: self.cpus,
        }
    }
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

impl DoctorArgs {
    /// The edge: typed options for `doctor`.
    pub fn into_options(self) -> DoctorOptions {
        DoctorOptions {
            rig: self.rig,
            profile: self.profile,
            json: self.json,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct WatchArgs {
    /// The JACK server to watch (as `jack_lsp -s NAME`); default `$JACK_DEFAULT_SERVER`,
    /// else the default server. PipeWire's JACK is watched when its libjack is the one
    /// loaded (`pw-jack xrunrig watch`).
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,
    /// How long to watch (`90`, `10m`, `1 h`...); default until Ctrl-C.
    #[arg(long, value_parser = positive_duration, allow_hyphen_values = true)]
    pub duration: Option<u64>,
    /// The results directory (default `watch-<UTC time>` here).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Trace kept before each xrun report.
    #[arg(long, default_value = "500 ms", value_parser = parse_window)]
    pub before: u64,
    /// Trace kept after each xrun report (the report comes a cycle or two after the
    /// late cycle).
    #[arg(long, default_value = "100 ms", value_parser = parse_window)]
    pub after: u64,
    /// Cycles of room between the process callback and the reader.
    #[arg(long, default_value_t = 16384, value_parser = clap::value_parser!(u32).range(64..=1_048_576))]
    pub ring: u32,
    /// Trace windows kept on disk at most; every xrun is still counted and explained.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    pub keep: u32,
    /// The flight recorder's ring per CPU, KiB (a larger ring reaches further back).
    #[arg(long, default_value_t = 2048, value_parser = clap::value_parser!(u32).range(64..=262_144))]
    pub buffer_kb: u32,
    /// Stop tracing to read each window even where the kernel has a snapshot buffer or
    /// can read the ring while it records.
    #[arg(long)]
    pub no_snapshot: bool,
    /// Print summary.json's document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// A trace window: a duration of at most 60 s.
fn parse_window(s: &str) -> Result<u64, String> {
    let ns = parse_cli_duration(s)?;
    if ns > 60_000_000_000 {
        return Err("at most 60 s".into());
    }
    Ok(ns)
}

impl WatchArgs {
    pub fn into_options(self) -> crate::options::WatchOptions {
        crate::options::WatchOptions {
            server: self.server,
            duration_ns: self.duration,
            out: self.out,
            before_ns: self.before,
            after_ns: self.after,
            ring: self.ring as usize,
            keep: self.keep,
            buffer_kb: self.buffer_kb,
            no_snapshot: self.no_snapshot,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    pub dir: PathBuf,
    /// Leave out host name, user name, home paths and the command line's paths, and
    /// write run.redacted.json and summary.redacted.json to attach instead of the
    /// originals.
    #[arg(long)]
    pub redact: bool,
    /// Where to write the report (made if missing; default: into DIR itself), for a
    /// results directory that cannot be written.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The baseline's results directories, then (after `--`) the candidate's: `A1 A2 A3
    /// -- B1 B2 B3` compares runs with runs (each run, one boot, is a unit). Without
    /// `--`, one directory a side, the first the baseline: `A B [C ...]`. One directory
    /// of a run over several kernels (`results/RIG-TIME-kernels`) compares its kernels'
    /// boots.
    #[arg(required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// The candidate's runs, after `--`.
    #[arg(last = true)]
    pub candidates: Vec<PathBuf>,
    /// Relative change (percent) beyond which a change counts: worse or better when its
    /// 95 % interval lies wholly beyond it, the same when wholly inside.
    #[arg(long, default_value_t = 10.0)]
    pub threshold: f64,
    /// Where to write the comparison's files (default: a new `compare-A-vs-B` beside
    /// the first directory; never into A or B).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A calibration file (`xrunrig calibrate`) to use for one run a side, instead of
    /// the one the cache holds for the baseline's rig, kernel and machine.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    #[arg(long)]
    pub redact: bool,
    /// Print compare.json's document to stdout; the text goes to stderr.
    #[arg(long)]
    pub json: bool,
}

impl CompareArgs {
    /// The sides: `A.. -- B..`, or one directory each.
    pub fn request(&self) -> analysis::compare::Request {
        let sides = if self.candidates.is_empty() {
            self.dirs.iter().map(|d| vec![d.clone()]).collect()
        } else {
            vec![self.dirs.clone(), self.candidates.clone()]
        };
        analysis::compare::Request {
            sides,
            threshold: self.threshold,
            out: self.out.clone(),
            redact: self.redact,
            calibration: self.calibration.clone(),
            one_sided: analysis::judge::answer::ONE_SIDED,
            only: vec![],
        }
    }
}
