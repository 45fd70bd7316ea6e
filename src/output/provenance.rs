//! run.json: what ran, where, under which settings — everything a kernel developer
//! asks before reading a number.

use serde::Serialize;
use sha2::{Digest, Sha256};

pub fn sha256_hex(text: &str) -> String {
    let d = Sha256::digest(text.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct Kernel {
    pub release: String,
    pub version: String,
    pub machine: String,
    pub cmdline: String,
    pub preemption: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cpus {
    pub model: String,
    pub count: usize,
    pub online: String,
}

pub fn kernel() -> Kernel {
    let (_, _, release, version, machine) = crate::sys::uname();
    Kernel {
        release,
        version,
        machine,
        cmdline: crate::sys::read_trim(std::path::Path::new("/proc/cmdline")).unwrap_or_default(),
        preemption: crate::sys::preemption_model(),
    }
}

pub fn cpus() -> Cpus {
    let online = crate::sys::online_cpus();
    Cpus {
        model: crate::sys::cpu_model(),
        count: online.len(),
        online: crate::sys::format_cpu_set(&online),
    }
}

pub fn hostname() -> String {
    crate::sys::uname().1
}
