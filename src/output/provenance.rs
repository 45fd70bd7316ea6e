//! run.json: what ran, where, under which settings — everything a kernel developer
//! asks before reading a number.

use results::run::{Cpus, GitInfo, KernelInfo};
use sha2::{Digest, Sha256};

pub fn sha256_hex(text: &str) -> String {
    let d = Sha256::digest(text.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// This machine's kernel, as run.json records it.
pub fn kernel() -> KernelInfo {
    let (_, _, release, version, machine) = crate::sys::uname();
    KernelInfo {
        release: Some(release),
        version: Some(version),
        machine: Some(machine),
        cmdline: Some(
            crate::sys::read_trim(std::path::Path::new("/proc/cmdline")).unwrap_or_default(),
        ),
        preemption: Some(crate::sys::preemption_model()),
    }
}

/// This machine's online CPUs, as run.json records them.
pub fn cpus() -> Cpus {
    let online = crate::sys::online_cpus();
    Cpus {
        model: Some(crate::sys::cpu_model()),
        count: Some(online.len() as u64),
        online: Some(crate::sys::format_cpu_set(&online)),
    }
}

pub fn hostname() -> String {
    crate::sys::uname().1
}

/// The version with the commit it was built from: `0.1.0 (commit <sha>[, dirty])`, or
/// `(commit unknown)` when built outside a git checkout (build.rs).
pub const VERSION: &str = env!("XRUNRIG_VERSION");

/// The commit and dirty flag embedded at build, as run.json records them.
pub fn git() -> GitInfo {
    GitInfo {
        commit: Some(env!("XRUNRIG_GIT_COMMIT"))
            .filter(|c| *c != "unknown")
            .map(String::from),
        dirty: match env!("XRUNRIG_GIT_DIRTY") {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        },
    }
}

/// The hypervisor this machine runs under, or None on bare metal: the DMI vendor and
/// product when they name one, else the CPU's `hypervisor` flag (which one unknown).
pub fn virtualisation() -> Option<String> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let dmi = format!(
        "{} {}",
        read("/sys/class/dmi/id/sys_vendor").trim(),
        read("/sys/class/dmi/id/product_name").trim()
    );
    let flag = read("/proc/cpuinfo")
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    hypervisor_of(&dmi, read("/sys/hypervisor/type").trim(), flag)
}

/// `virtualisation` from what it read: the DMI vendor and product, /sys/hypervisor/type,
/// the cpuinfo flag.
pub fn hypervisor_of(dmi: &str, hv_type: &str, flag: bool) -> Option<String> {
    const KNOWN: [(&str, &str); 8] = [
        ("QEMU", "QEMU/KVM"),
        ("KVM", "KVM"),
        ("VMware", "VMware"),
        ("VirtualBox", "VirtualBox"),
        ("innotek", "VirtualBox"),
        ("Microsoft Corporation Virtual Machine", "Hyper-V"),
        ("Xen", "Xen"),
        ("Amazon EC2", "Amazon EC2"),
    ];
    if let Some((_, name)) = KNOWN.iter().find(|(k, _)| dmi.contains(k)) {
        return Some((*name).to_string());
    }
    if !hv_type.is_empty() {
        return Some(hv_type.to_string());
    }
    flag.then(|| "a hypervisor (the CPU's hypervisor flag is set; which one is not said)".into())
}

/// CPU time so far: all CPUs' busy and total time (/proc/stat) and this process's own
/// (its threads and waited-for children, /proc/self/stat), all in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuTimes {
    pub busy: u64,
    pub total: u64,
    pub own: u64,
}

impl CpuTimes {
    pub fn now() -> Option<CpuTimes> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let own = std::fs::read_to_string("/proc/self/stat").ok()?;
        CpuTimes::parse(&stat, &own)
    }

    pub fn parse(stat: &str, self_stat: &str) -> Option<CpuTimes> {
        let f: Vec<u64> = stat
            .lines()
            .next()?
            .strip_prefix("cpu ")?
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        // user nice system idle iowait irq softirq steal (guest is counted in user).
        let total: u64 = f.iter().take(8).sum();
        let idle = f.get(3).copied().unwrap_or(0) + f.get(4).copied().unwrap_or(0);
        // After the command name (which may hold spaces): fields 14-17, utime stime
        // cutime cstime, are the 12th to 15th after the ')'.
        let rest = &self_stat[self_stat.rfind(')')? + 1..];
        let own: u64 = rest
            .split_whitespace()
            .skip(11)
            .take(4)
            .map(|x| x.parse::<u64>().unwrap_or(0))
            .sum();
        Some(CpuTimes {
            busy: total.saturating_sub(idle),
            total,
            own,
        })
    }

    /// The other processes' share of all CPUs' time from `self` to `later`, in percent.
    pub fn others_percent(&self, later: &CpuTimes) -> Option<f64> {
        let total = later.total.checked_sub(self.total)?;
        if total == 0 {
            return None;
        }
        let busy = later.busy.saturating_sub(self.busy);
        let own = later.own.saturating_sub(self.own);
        Some((busy.saturating_sub(own) as f64 / total as f64 * 100.0).clamp(0.0, 100.0))
    }
}

#[cfg(test)]
mod environment_tests {
    use super::*;

    #[test]
    fn hypervisors_by_dmi_then_type_then_flag() {
        assert_eq!(
            hypervisor_of("QEMU Standard PC (Q35 + ICH9, 2009)", "", true).as_deref(),
            Some("QEMU/KVM")
        );
        assert_eq!(hypervisor_of("", "xen", true).as_deref(), Some("xen"));
        assert!(
            hypervisor_of("", "", true)
                .unwrap()
                .contains("hypervisor flag")
        );
        assert_eq!(hypervisor_of("Dell Inc. Precision 5820", "", false), None);
    }

    #[test]
    fn others_share_is_the_busy_time_less_our_own() {
        let stat =
            |user: u64, idle: u64| format!("cpu  {user} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 2 3\n");
        // comm with a space and a ')': the fields are counted after the last ')'.
        let me = |t: u64| format!("42 (x) y) S 1 1 1 0 -1 0 0 0 0 0 {t} 0 0 0 20 0 1 0");
        let a = CpuTimes::parse(&stat(100, 100), &me(10)).unwrap();
        let b = CpuTimes::parse(&stat(200, 200), &me(40)).unwrap();
        assert_eq!((a.busy, a.total, a.own), (100, 200, 10));
        // 100 busy ticks of 200, 30 of them ours: 35 % others.
        assert_eq!(a.others_percent(&b), Some(35.0));
        assert_eq!(a.others_percent(&a), None);
    }
}
