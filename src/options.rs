//! Run options as the core sees them: typed and checked. The command line (`cli.rs`)
//! turns into these at its edge, so nothing below it parses a flag's text again, and a
//! bad value is refused before a results directory exists or a knob is touched.

use crate::audio::BackendChoice;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `xrunrig watch`, decided.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// The JACK server's name (None: `$JACK_DEFAULT_SERVER`, else the default one).
    pub server: Option<String>,
    /// None: until Ctrl-C.
    pub duration_ns: Option<u64>,
    pub out: Option<PathBuf>,
    /// The trace window kept around each xrun report.
    pub before_ns: u64,
    pub after_ns: u64,
    /// Cycles of room in the ring between the process callback and the reader.
    pub ring: usize,
    /// Trace windows kept on disk at most (every xrun is still counted and explained).
    pub keep: u32,
    /// The flight recorder's ring per CPU (KiB).
    pub buffer_kb: u32,
    /// Read windows by stopping tracing even where the kernel has a snapshot buffer.
    pub no_snapshot: bool,
}

/// `xrunrig check`, decided.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub rig: PathBuf,
    pub profile: Option<PathBuf>,
    /// Check for a guest kernel with this many vCPUs instead of this machine.
    pub cpus: Option<u32>,
}

/// `xrunrig doctor`, decided.
#[derive(Debug, Clone, Default)]
pub struct DoctorOptions {
    /// Exit non-zero when a check this rig needs fails.
    pub rig: Option<PathBuf>,
    /// With `rig`: the profile it will run with.
    pub profile: Option<PathBuf>,
    /// The findings as JSON on stdout.
    pub json: bool,
}

/// `xrunrig run`, decided.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub rig: PathBuf,
    pub profile: Option<PathBuf>,
    pub out: Option<PathBuf>,
    /// What to run of the rig and profile (`sweep::Plan` decides from it).
    pub choices: Choices,
    /// Set when the run goes into guest kernels (`--kernel`).
    pub guest: Option<GuestOptions>,
}

/// What the user chose beyond the rig and the profile: which settings and variants, how
/// many trials, the stopping rule, the audio overrides and the bound. `sweep::Plan` is
/// built from it with the rig and profile, on the host and (given in the plan file) in
/// a guest kernel alike.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Choices {
    /// Trials per setting and variant; None: the rig's. Never 0.
    pub trials: Option<u32>,
    /// Only these variants / settings; empty: all.
    pub variants: Vec<String>,
    pub settings: Vec<String>,
    pub settings_as_is: bool,
    /// Hard bound on the whole run; None: estimate × 2 + 60 s.
    pub max_time_ns: Option<u64>,
    /// `--until-decided`: trials per variant stop once its two settings' comparison is
    /// decided (or can no longer be); `trials` is the maximum.
    pub until_decided: bool,
    pub audio: AudioOptions,
}

/// Command-line overrides of an audio rig's settings; None: the profile's or the rig's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AudioOptions {
    pub backend: Option<BackendChoice>,
    pub device: Option<String>,
    pub period: Option<u32>,
    pub rate: Option<u32>,
    /// Each audio trial's length; never 0.
    pub duration_ns: Option<u64>,
    pub inject_every: Option<u64>,
    pub inject_factor: Option<f64>,
    pub loopback: bool,
}

/// Where the QEMU guest acceleration comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AccelChoice {
    /// KVM when /dev/kvm works, else TCG (and TCG again when KVM does not boot).
    Auto,
    Kvm,
    Tcg,
}

/// The JACK driver a guest's jackd runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GuestJack {
    /// The snd-aloop card: a real ALSA driver.
    Alsa,
    /// jackd's dummy driver: a timer, no card.
    Dummy,
}

/// One `--kernel` and the `--patch`es written right after it.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelChoice {
    /// A path, .deb, package name, debian:X, src:PATH or debian-src:X.
    pub spec: String,
    /// Applied in order to this kernel (which must be built from source).
    pub patches: Vec<PathBuf>,
}

/// `--kernel` and the guest machine.
#[derive(Debug, Clone)]
pub struct GuestOptions {
    /// At least one (none only when a --patch came alone, which is refused).
    pub kernels: Vec<KernelChoice>,
    /// `--patch`es written before any `--kernel`: refused, with the rule named.
    pub stray_patches: Vec<PathBuf>,
    pub cpus: Option<u32>,
    /// QEMU's -m, checked: e.g. 1G, 512M.
    pub memory: Option<String>,
    pub modules: Option<PathBuf>,
    pub accel: AccelChoice,
    pub append: Option<String>,
    pub jack: GuestJack,
    /// `xrunrig watch` beside the rig in the guest's JACK session.
    pub watch: bool,
}

/// A duration given on the command line: a bare number is seconds (as cyclictest's
/// `-D 10`); otherwise a number and a unit (ns, us, ms, s, m or min, h, d: `m` is
/// minutes as in cyclictest's `-D 10m`, `ms` stays milliseconds). Negative: refused.
pub fn parse_cli_duration(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!(
            "'{s}': must be positive (a duration such as 10, 500 ms or 10m)"
        ));
    }
    if let Ok(secs) = t.parse::<f64>() {
        return crate::rig::units::parse_duration(&format!("{secs} s"));
    }
    crate::rig::units::parse_duration(t)
}

/// A QEMU memory size: digits with an optional M or G.
pub fn valid_memory(m: &str) -> bool {
    let digits = m.trim_end_matches(['M', 'G', 'm', 'g']);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) && m.len() - digits.len() <= 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_durations_take_bare_seconds_and_units() {
        assert_eq!(parse_cli_duration("10"), Ok(10_000_000_000));
        assert_eq!(parse_cli_duration("1.5"), Ok(1_500_000_000));
        assert_eq!(parse_cli_duration("250 ms"), Ok(250_000_000));
        assert_eq!(parse_cli_duration("1234567ns"), Ok(1_234_567));
        assert!(parse_cli_duration("ten").is_err());
        // cyclictest's -D 10m: minutes; ms stays milliseconds.
        assert_eq!(parse_cli_duration("10m"), Ok(600_000_000_000));
        assert_eq!(parse_cli_duration("10 m"), Ok(600_000_000_000));
        assert_eq!(parse_cli_duration("10ms"), Ok(10_000_000));
        assert_eq!(parse_cli_duration("1d"), Ok(86_400_000_000_000));
        let e = parse_cli_duration("-5").unwrap_err();
        assert!(e.contains("must be positive"), "{e}");
        assert!(parse_cli_duration("10 parsecs").is_err());
    }

    #[test]
    fn memory_sizes() {
        assert!(valid_memory("512M") && valid_memory("2048") && valid_memory("1G"));
        assert!(!valid_memory("G") && !valid_memory("lots") && !valid_memory("1GG"));
    }
}
