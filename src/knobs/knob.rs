//! The fixed list of kernel knobs xrunrig may ever write, and how each is read and written.
//! Nothing outside this list is written, whatever a profile says.

use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};

/// Sysctls under /proc/sys that profiles may set.
pub const SYSCTLS: &[&str] = &[
    "kernel.sched_rt_runtime_us",
    "kernel.sched_rt_period_us",
    "kernel.sched_rr_timeslice_ms",
    "kernel.watchdog",
    "kernel.soft_watchdog",
    "kernel.nmi_watchdog",
    "kernel.timer_migration",
];

/// Scheduler tunables under /sys/kernel/debug/sched. `cpu*` expands to every CPU.
pub const DEBUGFS: &[&str] = &[
    "base_slice_ns",
    // CFS (before 6.6): the period a CPU's runnable tasks share, and its floor per task.
    "latency_ns",
    "min_granularity_ns",
    "migration_cost_ns",
    "nr_migrate",
    "fair_server/cpu*/runtime",
];

/// The sched features of the kernels xrunrig runs as guests, for naming a feature that
/// cannot be read on this kernel (lockdown): `sched_feat_names` as the strings of
/// Debian's vmlinux hold it (decompressed from linux-image-6.1.0-57-amd64-unsigned
/// 6.1.192-3 and linux-image-6.12.117+deb12-amd64-unsigned, `strings vmlinux`, the run
/// from GENTLE_FAIR_SLEEPERS / PLACE_LAG to the last name before `rate_limit_us`).
pub const KNOWN_FEATURES: &[(&str, &[&str])] = &[
    (
        "6.1",
        &[
            "GENTLE_FAIR_SLEEPERS",
            "START_DEBIT",
            "NEXT_BUDDY",
            "LAST_BUDDY",
            "CACHE_HOT_BUDDY",
            "WAKEUP_PREEMPTION",
            "HRTICK",
            "HRTICK_DL",
            "DOUBLE_TICK",
            "NONTASK_CAPACITY",
            "TTWU_QUEUE",
            "SIS_PROP",
            "SIS_UTIL",
            "WARN_DOUBLE_CLOCK",
            "RT_PUSH_IPI",
            "RT_RUNTIME_SHARE",
            "LB_MIN",
            "ATTACH_AGE_LOAD",
            "WA_IDLE",
            "WA_WEIGHT",
            "WA_BIAS",
            "UTIL_EST",
            "UTIL_EST_FASTUP",
            "LATENCY_WARN",
            "NI_RANDOM",
            "ALT_PERIOD",
            "BASE_SLICE",
        ],
    ),
    (
        "6.12",
        &[
            "PLACE_LAG",
            "PLACE_DEADLINE_INITIAL",
            "PLACE_REL_DEADLINE",
            "RUN_TO_PARITY",
            "PREEMPT_SHORT",
            "NEXT_BUDDY",
            "PICK_BUDDY",
            "CACHE_HOT_BUDDY",
            "DELAY_DEQUEUE",
            "DELAY_ZERO",
            "WAKEUP_PREEMPTION",
            "HRTICK",
            "HRTICK_DL",
            "DOUBLE_TICK",
            "NONTASK_CAPACITY",
            "TTWU_QUEUE",
            "SIS_UTIL",
            "WARN_DOUBLE_CLOCK",
            "RT_PUSH_IPI",
            "RT_RUNTIME_SHARE",
            "LB_MIN",
            "ATTACH_AGE_LOAD",
            "WA_IDLE",
            "WA_WEIGHT",
            "WA_BIAS",
            "UTIL_EST",
            "LATENCY_WARN",
            "NI_RANDOM",
        ],
    ),
];

/// The known kernels that have sched feature `name` ("6.1", "6.12").
pub fn known_in(name: &str) -> Vec<&'static str> {
    KNOWN_FEATURES
        .iter()
        .filter(|(_, names)| names.contains(&name))
        .map(|(k, _)| *k)
        .collect()
}

/// Names within two edits of `name`, for "did you mean".
pub fn close_names<'a>(name: &str, among: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    fn dist(a: &str, b: &str) -> usize {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.iter().enumerate() {
            let mut cur = vec![i + 1; b.len() + 1];
            for (j, cb) in b.iter().enumerate() {
                cur[j + 1] = (prev[j] + usize::from(ca != cb))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1);
            }
            prev = cur;
        }
        prev[b.len()]
    }
    let mut out: Vec<&str> = among
        .into_iter()
        .filter(|n| *n != name && dist(n, name) <= 2)
        .collect();
    out.sort();
    out.dedup();
    out
}

pub const FEATURES_PATHS: &[&str] = &[
    "sys/kernel/debug/sched/features",
    "sys/kernel/debug/sched_features",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KnobKind {
    Feature,
    Sysctl,
    Debugfs,
    /// A JACK server's buffer size (`name` is the server; no path). Not a file: put
    /// back as a JACK client.
    #[serde(rename = "jack-period")]
    JackPeriod,
}

/// One knob: for a feature, `name` is the feature without `NO_` and its value is
/// "on" or "off"; otherwise the value is the file's text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Knob {
    pub kind: KnobKind,
    pub name: String,
    /// Absolute path on the machine (relative to the IO's root).
    pub path: PathBuf,
}

impl Knob {
    pub fn label(&self) -> String {
        match self.kind {
            KnobKind::Feature => format!("sched feature {}", self.name),
            KnobKind::Sysctl => self.name.clone(),
            KnobKind::Debugfs => format!("debug/sched/{}", self.name),
            KnobKind::JackPeriod => format!("JACK server '{}' period", self.name),
        }
    }
}

/// File access for knobs; a fake one in tests simulates the kernel's features file.
pub trait KnobIo: Send + Sync {
    fn read(&self, path: &Path) -> io::Result<String>;
    fn write(&self, path: &Path, value: &str) -> io::Result<()>;
    /// Opens for writing without writing, to learn whether a write would be allowed.
    fn probe_write(&self, path: &Path) -> io::Result<()>;
    fn exists(&self, path: &Path) -> bool;
    /// Expands `*` in one path component (fair_server/cpu*/runtime).
    fn glob(&self, pattern: &Path) -> Vec<PathBuf>;
    /// This boot's id, written into the journal.
    fn boot_id(&self) -> Option<String> {
        crate::sys::boot_id()
    }
    /// A JACK server's period; NotFound when no server of that name answers.
    fn jack_period(&self, server: &str) -> io::Result<u32> {
        let _ = server;
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
    fn set_jack_period(&self, server: &str, frames: u32) -> io::Result<()> {
        let _ = (server, frames);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// The real machine.
pub struct RealIo;

impl KnobIo for RealIo {
    fn read(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }
    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
        f.write_all(value.as_bytes())
    }
    fn probe_write(&self, path: &Path) -> io::Result<()> {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map(|_| ())
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn glob(&self, pattern: &Path) -> Vec<PathBuf> {
        glob_dirs(pattern, |d| {
            std::fs::read_dir(d)
                .map(|r| {
                    r.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default()
        })
        .into_iter()
        .filter(|p| p.exists())
        .collect()
    }
    fn jack_period(&self, server: &str) -> io::Result<u32> {
        crate::audio::jack::period::server_period(server)
    }
    fn set_jack_period(&self, server: &str, frames: u32) -> io::Result<()> {
        crate::audio::jack::period::set_server_period(server, frames)
    }
}

/// Expands a single `prefix*` component using `list` to read a directory's entries.
pub fn glob_dirs(pattern: &Path, list: impl Fn(&Path) -> Vec<String>) -> Vec<PathBuf> {
    let comps: Vec<_> = pattern.components().collect();
    let Some(star) = comps
        .iter()
        .position(|c| c.as_os_str().to_string_lossy().contains('*'))
    else {
        return vec![pattern.to_path_buf()];
    };
    let dir: PathBuf = comps[..star].iter().collect();
    let pat = comps[star].as_os_str().to_string_lossy().into_owned();
    let (pre, post) = pat.split_once('*').unwrap_or((&pat, ""));
    let rest: PathBuf = comps[star + 1..].iter().collect();
    let mut names: Vec<String> = list(&dir)
        .into_iter()
        .filter(|n| n.starts_with(pre) && n.ends_with(post) && n.len() >= pre.len() + post.len())
        .collect();
    // cpu2 before cpu10.
    names.sort_by_key(|n| {
        let digits: String = n.chars().filter(|c| c.is_ascii_digit()).collect();
        (digits.parse::<u64>().unwrap_or(u64::MAX), n.clone())
    });
    names.into_iter().map(|n| dir.join(n).join(&rest)).collect()
}

/// Parses a features file into (name, on) pairs.
pub fn parse_features(text: &str) -> Vec<(String, bool)> {
    text.split_whitespace()
        .map(|t| match t.strip_prefix("NO_") {
            Some(n) => (n.to_string(), false),
            None => (t.to_string(), true),
        })
        .collect()
}

/// Normalises a value for comparison: sysctls print multi-values tab separated.
pub fn norm(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_features_and_close_names() {
        assert_eq!(known_in("RT_PUSH_IPI"), vec!["6.1", "6.12"]);
        assert_eq!(known_in("PLACE_LAG"), vec!["6.12"]);
        assert!(known_in("RT_PUSH_IPII").is_empty());
        let all = KNOWN_FEATURES.iter().flat_map(|(_, n)| n.iter().copied());
        assert_eq!(close_names("RT_PUSH_IPII", all), vec!["RT_PUSH_IPI"]);
        assert!(close_names("NOTHING_LIKE_IT", ["RT_PUSH_IPI"]).is_empty());
    }

    #[test]
    fn features_parse() {
        let f = parse_features("GENTLE_FAIR_SLEEPERS NO_HRTICK RT_PUSH_IPI\n");
        assert_eq!(f[1], ("HRTICK".into(), false));
        assert_eq!(f[2], ("RT_PUSH_IPI".into(), true));
    }

    #[test]
    fn glob_expands_one_component() {
        let got = glob_dirs(Path::new("/d/fair_server/cpu*/runtime"), |d| {
            assert_eq!(d, Path::new("/d/fair_server"));
            vec!["cpu10".into(), "cpu2".into(), "other".into()]
        });
        assert_eq!(
            got,
            vec![
                PathBuf::from("/d/fair_server/cpu2/runtime"),
                PathBuf::from("/d/fair_server/cpu10/runtime")
            ]
        );
        assert_eq!(
            glob_dirs(Path::new("/a/b"), |_| vec![]),
            vec![PathBuf::from("/a/b")]
        );
    }
}
