//! Scheduler knobs: RT throttling, the fair server, RT_PUSH_IPI and HRTICK, and
//! whether sched features can be read and written (and if not, why).

use super::ctx::{CHECK_LOCKDOWN, Ctx};
use super::source::{Source, describe_err, read_trim};
use super::{Check, data_of};
use crate::knobs::knob::{FEATURES_PATHS, parse_features};
use serde::{Deserialize, Serialize};
use std::io;

const AREA: &str = "sched";
const MOUNT_DEBUGFS: &str = "mount -t debugfs none /sys/kernel/debug";

/// What became of reading the sched features file.
#[derive(Debug, Clone)]
pub enum Features {
    Read {
        path: String,
        list: Vec<(String, bool)>,
        /// Err: why a write would be refused.
        writable: Result<(), String>,
    },
    Unreadable {
        reason: String,
        /// The reason is kernel lockdown (so mounting or root would not help).
        lockdown: bool,
        fix: String,
    },
}

fn lockdown_fix() -> String {
    "boot with lockdown=none / Secure Boot off, or change sched features in a guest kernel: \
     xrunrig run RIG --profile PROFILE --kernel debian:6.12"
        .to_string()
}

/// Why a debugfs access failed with `e`, naming lockdown when that is the cause.
fn denied(ctx: &Ctx, path: &str, e: &io::Error) -> (String, bool, String) {
    let l = &ctx.lockdown;
    match e.raw_os_error() {
        Some(libc::EPERM) if l.locked != Some(false) => {
            let known = if l.locked == Some(true) {
                format!("{} forbids debugfs even to root", l.name())
            } else {
                format!(
                    "Operation not permitted even to root: this is what kernel lockdown does (check: {CHECK_LOCKDOWN})"
                )
            };
            (format!("{path}: {known}"), true, lockdown_fix())
        }
        Some(libc::EACCES) | Some(libc::EPERM) if ctx.uid != Some(0) => (
            format!("{path}: not root ({e})"),
            false,
            "run as root (sudo)".into(),
        ),
        _ => (describe_err(path, e), false, "run as root (sudo)".into()),
    }
}

/// Why debugfs files cannot be reached when none of them exist.
fn no_debugfs(ctx: &Ctx, path: &str) -> (String, bool, String) {
    let mounted = ctx.mount_of("debugfs").is_some();
    let missing = if mounted {
        format!("{path} does not exist on this kernel")
    } else {
        "debugfs is not mounted".to_string()
    };
    if ctx.lockdown.locked == Some(true) {
        (
            format!(
                "{} forbids debugfs even to root (also: {missing})",
                ctx.lockdown.name()
            ),
            true,
            lockdown_fix(),
        )
    } else if !mounted {
        (
            format!("{missing}; {}", ctx.lockdown_note()),
            false,
            format!("{MOUNT_DEBUGFS} (as root; the doctor mounts nothing itself)"),
        )
    } else {
        (missing, false, "a kernel with CONFIG_SCHED_DEBUG".into())
    }
}

impl Ctx {
    fn lockdown_note(&self) -> String {
        match self.lockdown.locked {
            Some(false) => "no kernel lockdown".into(),
            _ => format!("lockdown unknown: {}", self.lockdown.found),
        }
    }
}

pub fn features(src: &dyn Source, ctx: &Ctx) -> Features {
    let mut first_err: Option<(String, io::Error)> = None;
    for p in FEATURES_PATHS {
        let path = format!("/{p}");
        match src.read(&path) {
            Ok(t) => {
                let list = parse_features(&t);
                if list.is_empty() {
                    return Features::Unreadable {
                        reason: format!("{path} is empty"),
                        lockdown: false,
                        fix: "none known".into(),
                    };
                }
                let writable = if ctx.uid.is_some_and(|u| u != 0) {
                    Err("not root".to_string())
                } else {
                    src.probe_write(&path).map_err(|e| denied(ctx, &path, &e).0)
                };
                return Features::Read {
                    path,
                    list,
                    writable,
                };
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                if first_err.is_none() {
                    first_err = Some((path, e));
                }
            }
        }
    }
    let (reason, lockdown, fix) = match first_err {
        Some((p, e)) => denied(ctx, &p, &e),
        None => no_debugfs(ctx, &format!("/{}", FEATURES_PATHS[0])),
    };
    Features::Unreadable {
        reason,
        lockdown,
        fix,
    }
}

pub fn checks(src: &dyn Source, ctx: &Ctx) -> Vec<Check> {
    let f = features(src, ctx);
    vec![
        rt_throttling(src),
        fair_server(src, ctx),
        feature(
            &f,
            "sched.rt_push_ipi",
            "RT_PUSH_IPI",
            "with it off, a PI-boosted or woken RT thread that cannot run where it is queued \
             waits until that CPU frees up, instead of being pushed to a free CPU by an IPI \
             (seed 001: waits of 0.7-1.5 s instead of 1 ms)",
        ),
        feature(
            &f,
            "sched.hrtick",
            "HRTICK",
            "with it on, the scheduler uses high-resolution timers for slice ends instead of \
             the tick; it has re-armed timers in a loop on some kernels (seed 004)",
        ),
        features_access(&f),
    ]
}

/// sched.rt_throttling's data (-1: throttling off).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RtThrottling {
    pub sched_rt_period_us: Option<i64>,
    pub sched_rt_runtime_us: i64,
}

fn rt_throttling(src: &dyn Source) -> Check {
    let c = Check::new(
        AREA,
        "sched.rt_throttling",
        "RT throttling",
        "RT threads together may use only sched_rt_runtime_us of every sched_rt_period_us; \
         past it they are stopped, which a long busy RT phase (or a rig's hog) runs into",
    );
    let rt = match read_trim(src, "/proc/sys/kernel/sched_rt_runtime_us") {
        Ok(v) => v,
        Err(e) => return c.na(e),
    };
    let period = read_trim(src, "/proc/sys/kernel/sched_rt_period_us").ok();
    let Ok(rt) = rt.parse::<i64>() else {
        return c.na(format!("sched_rt_runtime_us is not a number: '{rt}'"));
    };
    let period_us = period.as_deref().and_then(|p| p.parse::<i64>().ok());
    let c = c.with_data(data_of(RtThrottling {
        sched_rt_period_us: period_us,
        sched_rt_runtime_us: rt,
    }));
    if rt < 0 {
        return c.pass(
            "off (sched_rt_runtime_us = -1): RT threads may take a whole CPU; a runaway one \
             can hang it",
        );
    }
    let Some(per) = period_us.filter(|p| *p > 0) else {
        return c.pass(format!(
            "sched_rt_runtime_us = {rt} (sched_rt_period_us unreadable)"
        ));
    };
    let pct = rt as f64 * 100.0 / per as f64;
    let found = format!(
        "on: sched_rt_runtime_us = {rt} of sched_rt_period_us = {per} ({pct:.0}% for RT threads, \
         the rest of each period for others)"
    );
    if rt == 0 {
        c.fail(
            found,
            "sysctl -w kernel.sched_rt_runtime_us=950000 (RT threads cannot run at all)",
        )
    } else if pct < 50.0 {
        c.warn(found, "sysctl -w kernel.sched_rt_runtime_us=950000")
    } else {
        c.pass(found)
    }
}

/// One CPU's fair server, as read (sched.fair_server's data is a list of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FairServer {
    pub cpu: String,
    pub period_ns: String,
    pub runtime_ns: String,
}

fn fair_server(src: &dyn Source, ctx: &Ctx) -> Check {
    let c = Check::new(
        AREA,
        "sched.fair_server",
        "fair server",
        "since 6.12 a deadline server gives normal tasks runtime/period of each CPU even \
         under RT load; it can interrupt a busy RT thread, and rescues starved ones",
    );
    let dir = "/sys/kernel/debug/sched/fair_server";
    let cpus = match src.list(dir) {
        Ok(v) => v,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if ctx.mount_of("debugfs").is_some() || src.list("/sys/kernel/debug/sched").is_ok() {
                return c.na(format!(
                    "{dir} does not exist: no fair server (kernels before 6.12)"
                ));
            }
            let (reason, _, fix) = no_debugfs(ctx, dir);
            return c.na(reason).with_fix(fix);
        }
        Err(e) => {
            let (reason, _, fix) = denied(ctx, dir, &e);
            return c.na(reason).with_fix(fix);
        }
    };
    let mut vals: Vec<(String, String, String)> = Vec::new();
    for cpu in cpus.iter().filter(|n| n.starts_with("cpu")) {
        let rp = format!("{dir}/{cpu}/runtime");
        let r = match src.read(&rp) {
            Ok(t) => t.trim().to_string(),
            Err(e) => {
                let (reason, _, fix) = denied(ctx, &rp, &e);
                return c.na(reason).with_fix(fix);
            }
        };
        let p = read_trim(src, &format!("{dir}/{cpu}/period")).unwrap_or_else(|_| "?".into());
        vals.push((cpu.clone(), r, p));
    }
    if vals.is_empty() {
        return c.na(format!("{dir} has no cpu* entries"));
    }
    let ms = |s: &str| {
        s.parse::<u64>()
            .map_or(s.to_string(), |n| format!("{} ms", n as f64 / 1e6))
    };
    let mut groups: Vec<(String, String, Vec<String>)> = Vec::new();
    for (cpu, r, p) in &vals {
        match groups.iter_mut().find(|g| g.0 == *r && g.1 == *p) {
            Some(g) => g.2.push(cpu.clone()),
            None => groups.push((r.clone(), p.clone(), vec![cpu.clone()])),
        }
    }
    let found = groups
        .iter()
        .map(|(r, p, cs)| {
            let which = if groups.len() == 1 {
                format!("all {} CPUs", cs.len())
            } else {
                cs.join(",")
            };
            format!("runtime {} per {} on {which}", ms(r), ms(p))
        })
        .collect::<Vec<_>>()
        .join("; ");
    let off = vals.iter().all(|v| v.1 == "0");
    c.pass(if off { format!("off: {found}") } else { found })
        .with_data(data_of(
            vals.into_iter()
                .map(|(cpu, runtime_ns, period_ns)| FairServer {
                    cpu,
                    period_ns,
                    runtime_ns,
                })
                .collect::<Vec<_>>(),
        ))
}

/// A sched feature's data (sched.rt_push_ipi, sched.hrtick).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeatureOn {
    pub on: bool,
}

fn feature(f: &Features, id: &'static str, name: &'static str, why: &'static str) -> Check {
    let c = Check::new(AREA, id, name, why);
    match f {
        Features::Unreadable { reason, fix, .. } => c
            .na(format!("sched features unreadable: {reason}"))
            .with_fix(fix.clone()),
        Features::Read { path, list, .. } => {
            let Some((_, on)) = list.iter().find(|(n, _)| n == name) else {
                return c.na(format!("this kernel has no {name} feature in {path}"));
            };
            let c = c.with_data(data_of(FeatureOn { on: *on }));
            match (name, on) {
                ("RT_PUSH_IPI", true) => c.pass(format!("on ({path})")),
                ("RT_PUSH_IPI", false) => c.warn(
                    format!("off: NO_RT_PUSH_IPI ({path})"),
                    format!("echo RT_PUSH_IPI > {path} (as root, until reboot)"),
                ),
                (_, true) => c.pass(format!("on ({path})")),
                (_, false) => c.pass(format!("off: NO_{name}, the default ({path})")),
            }
        }
    }
}

/// sched.features' data: whether the features file could be read and written, and
/// when not, why (and whether lockdown is the reason).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeaturesAccess {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lockdown: Option<bool>,
    pub readable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub writable: bool,
}

fn features_access(f: &Features) -> Check {
    let c = Check::new(
        AREA,
        "sched.features",
        "sched features",
        "profiles that compare scheduler settings (RT_PUSH_IPI, HRTICK) write this file; \
         where it cannot be written they cannot run here",
    );
    match f {
        Features::Read {
            path,
            writable: Ok(()),
            list,
        } => c
            .pass(format!(
                "readable and writable ({path}, {} features)",
                list.len()
            ))
            .with_data(data_of(FeaturesAccess {
                lockdown: None,
                readable: true,
                reason: None,
                writable: true,
            })),
        Features::Read {
            path,
            writable: Err(e),
            ..
        } => c
            .warn(
                format!("readable but not writable ({path}): {e}"),
                "run as root (sudo)",
            )
            .with_data(data_of(FeaturesAccess {
                lockdown: None,
                readable: true,
                reason: Some(e.clone()),
                writable: false,
            })),
        Features::Unreadable {
            reason,
            lockdown,
            fix,
        } => {
            let c = c.with_data(data_of(FeaturesAccess {
                lockdown: Some(*lockdown),
                readable: false,
                reason: Some(reason.clone()),
                writable: false,
            }));
            let found = format!("not readable or writable: {reason}");
            if *lockdown {
                c.fail(found, fix.clone())
            } else {
                c.warn(found, fix.clone())
            }
        }
    }
}
