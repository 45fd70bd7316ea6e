//! Facts several checks share, read once: the kernel command line, version and build
//! configuration, mounts, processes, capabilities and the kernel lockdown state.

use super::source::{Source, describe_err, read_trim};
use std::collections::BTreeMap;
use std::io::Read;

/// The kernel's build configuration (`CONFIG_X` -> "y", "m", "250", or "n" when
/// "is not set"), and where it was read.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub source: String,
    pub map: BTreeMap<String, String>,
}

impl Config {
    pub fn parse(source: &str, text: &str) -> Config {
        let mut map = BTreeMap::new();
        for l in text.lines().map(str::trim) {
            if let Some(rest) = l.strip_prefix("# ")
                && let Some(name) = rest.strip_suffix(" is not set")
            {
                map.insert(name.to_string(), "n".to_string());
            } else if l.starts_with("CONFIG_")
                && let Some((k, v)) = l.split_once('=')
            {
                map.insert(k.to_string(), v.trim_matches('"').to_string());
            }
        }
        Config {
            source: source.to_string(),
            map,
        }
    }
    pub fn get(&self, k: &str) -> Option<&str> {
        self.map.get(k).map(String::as_str)
    }
    pub fn is_y(&self, k: &str) -> bool {
        self.get(k) == Some("y")
    }
}

#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: u32,
    pub comm: String,
}

#[derive(Debug, Clone)]
pub struct Mount {
    pub dir: String,
    pub fstype: String,
}

/// What is known about kernel lockdown, and from where.
#[derive(Debug, Clone, Default)]
pub struct Lockdown {
    /// The mode in force when /sys/kernel/security/lockdown could be read.
    pub mode: Option<String>,
    /// The least mode the kernel is known to have (build config, command line).
    pub at_least: Option<String>,
    /// Whether the kernel is locked down at all, when known.
    pub locked: Option<bool>,
    /// One line: what was found and where.
    pub found: String,
    pub securityfs_mounted: bool,
}

impl Lockdown {
    /// "kernel lockdown 'integrity'" or "kernel lockdown (at least 'integrity')".
    pub fn name(&self) -> String {
        match (&self.mode, &self.at_least) {
            (Some(m), _) => format!("kernel lockdown '{m}'"),
            (None, Some(m)) => format!("kernel lockdown (at least '{m}')"),
            (None, None) => "kernel lockdown".into(),
        }
    }
}

pub const CHECK_LOCKDOWN: &str =
    "mount -t securityfs none /sys/kernel/security; cat /sys/kernel/security/lockdown";

pub struct Ctx {
    /// Kernel parameters (what follows `--` goes to init and is left out).
    pub cmdline: Result<Vec<String>, String>,
    pub release: Result<String, String>,
    /// `uname -v`.
    pub version: Result<String, String>,
    pub config: Result<Config, String>,
    pub procs: Vec<Proc>,
    /// Whether /proc could be listed at all (an empty `procs` then means none match).
    pub procs_listed: bool,
    pub mounts: Result<Vec<Mount>, String>,
    /// /proc/filesystems (what the kernel could mount).
    pub filesystems: Result<String, String>,
    pub lockdown: Lockdown,
    /// CapEff of this process, when readable.
    pub caps: Option<u64>,
    pub uid: Option<u32>,
    pub online: Result<Vec<usize>, String>,
    pub preempt_rt: bool,
}

pub const CAP_IPC_LOCK: u32 = 14;
pub const CAP_SYS_NICE: u32 = 23;

impl Ctx {
    pub fn read(src: &dyn Source) -> Ctx {
        let cmdline = read_trim(src, "/proc/cmdline").map(|s| parse_cmdline(&s));
        let release = read_trim(src, "/proc/sys/kernel/osrelease");
        let version = read_trim(src, "/proc/sys/kernel/version");
        let config = read_config(src, release.as_deref().ok());
        let mounts = src
            .read("/proc/mounts")
            .map(|t| parse_mounts(&t))
            .map_err(|e| describe_err("/proc/mounts", &e));
        let filesystems = src
            .read("/proc/filesystems")
            .map_err(|e| describe_err("/proc/filesystems", &e));
        let status = src.read("/proc/self/status").unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
                .map(str::to_string)
        };
        let caps = field("CapEff:").and_then(|h| u64::from_str_radix(&h, 16).ok());
        let uid = field("Uid:").and_then(|u| u.split_whitespace().nth(1)?.parse().ok());
        let online = read_trim(src, "/sys/devices/system/cpu/online").and_then(|s| {
            let v = crate::sys::parse_cpu_list(&s)
                .map_err(|e| format!("/sys/devices/system/cpu/online: {e}: '{s}'"))?;
            if v.is_empty() {
                Err("/sys/devices/system/cpu/online is empty".into())
            } else {
                Ok(v)
            }
        });
        let preempt_rt = read_trim(src, "/sys/kernel/realtime").is_ok_and(|s| s == "1")
            || version
                .as_ref()
                .is_ok_and(|v| v.split_whitespace().any(|w| w == "PREEMPT_RT"))
            || config.as_ref().is_ok_and(|c| c.is_y("CONFIG_PREEMPT_RT"));
        let lockdown = read_lockdown(src, &cmdline, &config, &mounts);
        Ctx {
            cmdline,
            release,
            version,
            config,
            procs_listed: src.list("/proc").is_ok(),
            procs: scan_procs(src),
            mounts,
            filesystems,
            lockdown,
            caps,
            uid,
            online,
            preempt_rt,
        }
    }

    pub fn has_cap(&self, bit: u32) -> bool {
        self.caps.is_some_and(|c| c & (1u64 << bit) != 0)
    }

    /// The value of `name=` on the kernel command line (`Some("")` for a bare flag).
    pub fn param(&self, name: &str) -> Option<String> {
        let p = self.cmdline.as_ref().ok()?;
        p.iter().rev().find_map(|w| {
            if w == name {
                Some(String::new())
            } else {
                w.strip_prefix(name)?.strip_prefix('=').map(str::to_string)
            }
        })
    }

    pub fn mount_of(&self, fstype: &str) -> Option<String> {
        self.mounts
            .as_ref()
            .ok()?
            .iter()
            .find(|m| m.fstype == fstype)
            .map(|m| m.dir.clone())
    }

    pub fn procs_named(&self, names: &[&str]) -> Vec<&Proc> {
        self.procs
            .iter()
            .filter(|p| names.contains(&p.comm.as_str()))
            .collect()
    }
}

pub fn parse_cmdline(s: &str) -> Vec<String> {
    s.split_whitespace()
        .take_while(|w| *w != "--")
        .map(str::to_string)
        .collect()
}

pub fn parse_mounts(t: &str) -> Vec<Mount> {
    t.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let _dev = f.next()?;
            let dir = f.next()?.replace("\\040", " ");
            let fstype = f.next()?.to_string();
            Some(Mount { dir, fstype })
        })
        .collect()
}

fn read_config(src: &dyn Source, release: Option<&str>) -> Result<Config, String> {
    let mut why = Vec::new();
    match src.read_bytes("/proc/config.gz") {
        Ok(gz) => {
            let mut text = String::new();
            match flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut text) {
                Ok(_) => return Ok(Config::parse("/proc/config.gz", &text)),
                Err(e) => why.push(format!("/proc/config.gz: cannot decompress: {e}")),
            }
        }
        Err(e) => why.push(describe_err("/proc/config.gz", &e)),
    }
    match release {
        Some(r) => {
            let p = format!("/boot/config-{r}");
            match src.read(&p) {
                Ok(t) => return Ok(Config::parse(&p, &t)),
                Err(e) => why.push(describe_err(&p, &e)),
            }
        }
        None => why.push("kernel release unknown, so no /boot/config-*".into()),
    }
    Err(format!("no kernel config: {}", why.join("; ")))
}

fn scan_procs(src: &dyn Source) -> Vec<Proc> {
    let Ok(names) = src.list("/proc") else {
        return Vec::new();
    };
    names
        .iter()
        .filter_map(|n| n.parse::<u32>().ok())
        .filter_map(|pid| {
            let comm = src.read(&format!("/proc/{pid}/comm")).ok()?;
            Some(Proc {
                pid,
                comm: comm.trim().to_string(),
            })
        })
        .collect()
}

/// The mode in brackets, e.g. "none [integrity] confidentiality" -> "integrity".
pub fn bracketed(s: &str) -> Option<String> {
    let a = s.find('[')?;
    let b = s[a..].find(']')?;
    let m = s[a + 1..a + b].trim();
    (!m.is_empty()).then(|| m.to_string())
}

fn read_lockdown(
    src: &dyn Source,
    cmdline: &Result<Vec<String>, String>,
    config: &Result<Config, String>,
    mounts: &Result<Vec<Mount>, String>,
) -> Lockdown {
    let mut l = Lockdown {
        securityfs_mounted: mounts
            .as_ref()
            .is_ok_and(|m| m.iter().any(|m| m.fstype == "securityfs")),
        ..Default::default()
    };
    let file = "/sys/kernel/security/lockdown";
    match src.read(file) {
        Ok(t) => {
            if let Some(m) = bracketed(&t) {
                l.locked = Some(m != "none");
                l.found = format!("'{m}' (from {file})");
                l.mode = Some(m);
                return l;
            }
            l.found = format!("{file} has no [mode] in '{}'", t.trim());
        }
        Err(e) => {
            l.found = if l.securityfs_mounted || e.kind() != std::io::ErrorKind::NotFound {
                describe_err(file, &e)
            } else {
                "securityfs is not mounted, so the exact mode is unknown".into()
            }
        }
    }
    let mut evidence = Vec::new();
    let rank = |m: &str| match m {
        "confidentiality" => 2,
        "integrity" => 1,
        _ => 0,
    };
    let raise = |m: &str, l: &mut Lockdown| {
        if rank(m) > l.at_least.as_deref().map_or(0, rank) {
            l.at_least = Some(m.to_string());
            l.locked = Some(true);
        }
    };
    if let Ok(p) = cmdline
        && let Some(m) = p.iter().rev().find_map(|w| w.strip_prefix("lockdown="))
    {
        evidence.push(format!("lockdown={m} on the command line"));
        raise(m, &mut l);
    }
    if let Ok(c) = config {
        if c.get("CONFIG_SECURITY_LOCKDOWN_LSM") == Some("n") {
            l.locked = Some(false);
            evidence.push("kernel built without the lockdown LSM".into());
        }
        for (k, m) in [
            ("CONFIG_LOCK_DOWN_KERNEL_FORCE_INTEGRITY", "integrity"),
            (
                "CONFIG_LOCK_DOWN_KERNEL_FORCE_CONFIDENTIALITY",
                "confidentiality",
            ),
        ] {
            if c.is_y(k) {
                evidence.push(format!("{k}=y"));
                raise(m, &mut l);
            }
        }
    }
    if let Ok(log) = src.kernel_log() {
        if let Some(line) = log
            .lines()
            .find(|x| x.contains("Kernel is locked down from"))
        {
            let msg = line
                .split_once("Kernel is locked down from")
                .map_or("", |(_, r)| r)
                .split(';')
                .next()
                .unwrap_or("")
                .trim();
            evidence.push(format!("boot log: locked down from {msg}"));
            l.locked = Some(true);
        } else if log.contains("Lockdown: ") {
            evidence.push("kernel log: 'Lockdown: ... is restricted'".into());
            l.locked = Some(true);
        }
    }
    if !evidence.is_empty() {
        l.found = format!("{}; {}", evidence.join("; "), l.found);
    }
    l
}
