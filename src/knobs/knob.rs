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
