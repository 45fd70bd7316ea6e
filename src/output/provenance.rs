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
