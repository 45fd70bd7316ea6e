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

/// `xrunrig bisect`, decided.
#[derive(Debug, Clone)]
pub struct BisectOptions {
    pub rig: PathBuf,
    pub profile: Option<PathBuf>,
    /// The user's git checkout (read only).
    pub tree: PathBuf,
    pub good: String,
    pub bad: String,
    pub setting: Option<String>,
    pub variant: Option<String>,
    pub settings_as_is: bool,
    /// Most trials per step.
    pub trials: u32,
    /// Trials per boot (a look after each).
    pub batch: u32,
    /// Applied at every step, in order.
    pub patches: Vec<PathBuf>,
    pub out: Option<PathBuf>,
    pub audio: AudioOptions,
    /// The guest machine; `kernels` is empty (each step is its own kernel).
    pub guest: GuestOptions,
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
    /// `run --from DIR`: the run this one repeats (recorded in run.json).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_of: Option<results::run::RerunOf>,
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

/// A `--kernel` value, parsed once at the command line's edge: one grammar for every
/// form, so nothing below it looks at the text again.
#[derive(Debug, Clone, PartialEq)]
pub enum KernelSpec {
    /// `src:PATH`: a kernel tree or tarball, built here.
    SourcePath(PathBuf),
    /// `debian-src:VERSION`: Debian's linux-source-VERSION, built here.
    DebianSource(String),
    /// A kernel image (vmlinuz, bzImage) or a linux-image .deb on disk.
    File(PathBuf),
    /// `debian:VERSION[-FLAVOUR]`: the newest Debian linux-image package of that
    /// version (flavour `amd64`, or e.g. `rt-amd64` for debian:6.12-rt).
    Debian { version: String, flavour: String },
    /// `linux-image-…`: a Debian package by name.
    Package(String),
}

impl KernelSpec {
    /// The forms, in the order they are told apart: the source forms, a file that
    /// exists, debian:X, a package name. Err says what the forms are.
    pub fn parse(s: &str) -> Result<KernelSpec, String> {
        if let Some(p) = s.strip_prefix("src:") {
            if p.is_empty() {
                return Err("src: needs a path: a kernel tree or a tarball (src:/usr/src/linux, src:linux-6.12.tar.xz)".into());
            }
            return Ok(KernelSpec::SourcePath(PathBuf::from(p)));
        }
        if let Some(v) = s.strip_prefix("debian-src:") {
            if !is_version(v) {
                return Err(format!(
                    "{s}: give Debian's source version, e.g. debian-src:6.12 (the package linux-source-6.12)"
                ));
            }
            return Ok(KernelSpec::DebianSource(v.to_string()));
        }
        if std::path::Path::new(s).exists() {
            return Ok(KernelSpec::File(PathBuf::from(s)));
        }
        if let Some(rest) = s.strip_prefix("debian:") {
            let (version, flavour) = match rest.split_once('-') {
                Some((v, f)) => (v, format!("{f}-amd64")),
                None => (rest, "amd64".to_string()),
            };
            if is_version(version) {
                return Ok(KernelSpec::Debian {
                    version: version.to_string(),
                    flavour,
                });
            }
        }
        if s.starts_with("linux-image-") && !s.contains('/') {
            return Ok(KernelSpec::Package(s.to_string()));
        }
        Err(format!(
            "{s}: no such file, and not a Debian package name (linux-image-…), a short form \
             such as debian:6.12, debian:6.12-rt, debian:6.1, or a kernel to build \
             (src:PATH, debian-src:6.12)"
        ))
    }

    /// Built here from source (the forms `--patch` may follow).
    pub fn is_source(&self) -> bool {
        matches!(
            self,
            KernelSpec::SourcePath(_) | KernelSpec::DebianSource(_)
        )
    }
}

/// As it is written on the command line (labels, provenance, messages).
impl std::fmt::Display for KernelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            KernelSpec::SourcePath(p) => write!(f, "src:{}", p.display()),
            KernelSpec::DebianSource(v) => write!(f, "debian-src:{v}"),
            KernelSpec::File(p) => write!(f, "{}", p.display()),
            KernelSpec::Debian { version, flavour } => match flavour.strip_suffix("-amd64") {
                Some(fl) => write!(f, "debian:{version}-{fl}"),
                None => write!(f, "debian:{version}"),
            },
            KernelSpec::Package(p) => f.write_str(p),
        }
    }
}

fn is_version(v: &str) -> bool {
    !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// One `--kernel` and the `--patch`es written right after it.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelChoice {
    pub spec: KernelSpec,
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
    /// Boots of each kernel (`--boots`), interleaved A B B A ...: each boot a run of its
    /// own, one unit of `compare`. 1: each kernel booted once (resumes aside).
    pub boots: u32,
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

    /// Every `--kernel` form parses to its variant and prints back as written.
    #[test]
    fn kernel_specs_parse_one_grammar() {
        let d = crate::testkit::private_dir("kernel-spec");
        let img = d.join("vmlinuz");
        std::fs::write(&img, b"x").unwrap();
        let img_s = img.display().to_string();
        let cases: Vec<(&str, KernelSpec)> = vec![
            (
                "src:/usr/src/linux",
                KernelSpec::SourcePath("/usr/src/linux".into()),
            ),
            ("debian-src:6.12", KernelSpec::DebianSource("6.12".into())),
            (&img_s, KernelSpec::File(img.clone())),
            (
                "debian:6.12",
                KernelSpec::Debian {
                    version: "6.12".into(),
                    flavour: "amd64".into(),
                },
            ),
            (
                "debian:6.12-rt",
                KernelSpec::Debian {
                    version: "6.12".into(),
                    flavour: "rt-amd64".into(),
                },
            ),
            (
                "linux-image-6.1.0-28-amd64",
                KernelSpec::Package("linux-image-6.1.0-28-amd64".into()),
            ),
        ];
        for (s, want) in cases {
            let k = KernelSpec::parse(s).unwrap();
            assert_eq!(k, want, "{s}");
            assert_eq!(k.to_string(), s);
            assert_eq!(k.is_source(), s.contains("src:"), "{s}");
        }
        for bad in [
            "src:",
            "debian-src:latest",
            "debian:",
            "6.12",
            "/no/such/kernel",
            "a/linux-image-x",
        ] {
            let e = KernelSpec::parse(bad).unwrap_err();
            assert!(e.contains("debian") || e.contains("src:"), "{bad}: {e}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

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
