//! The kernel: preemption model, threaded IRQs, timer frequency, PI futexes,
//! high-resolution timers and lockdown.

use super::ctx::{CHECK_LOCKDOWN, Ctx, bracketed};
use super::source::{ProbeError, Source, describe_err};
use super::{Check, data_of};
use serde::{Deserialize, Serialize};

const AREA: &str = "kernel";

pub fn checks(src: &dyn Source, ctx: &Ctx) -> Vec<Check> {
    vec![
        preemption(src, ctx),
        threadirqs(ctx),
        hz(ctx),
        pi_futex(src, ctx),
        hrtimers(src, ctx),
        lockdown(ctx),
    ]
}

/// The preemption model and how it was learnt (kernel.preemption's data).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// "rt", "full", "lazy", "voluntary", "none", or "" when unknown.
    pub model: String,
    pub dynamic: bool,
    pub source: String,
}

pub fn model(src: &dyn Source, ctx: &Ctx) -> Model {
    let version = ctx.version.clone().unwrap_or_default();
    let dynamic = version.split_whitespace().any(|w| w == "PREEMPT_DYNAMIC")
        || ctx
            .config
            .as_ref()
            .is_ok_and(|c| c.is_y("CONFIG_PREEMPT_DYNAMIC"));
    if ctx.preempt_rt {
        return Model {
            model: "rt".into(),
            dynamic,
            source: "PREEMPT_RT kernel (/sys/kernel/realtime, uname -v or config)".into(),
        };
    }
    let dbg = "/sys/kernel/debug/sched/preempt";
    let dbg_err = match src.read(dbg) {
        Ok(t) => match bracketed(&t.replace('(', "[").replace(')', "]")) {
            Some(m) => {
                return Model {
                    model: m,
                    dynamic: true,
                    source: dbg.into(),
                };
            }
            None => format!("{dbg}: no (mode) in '{}'", t.trim()),
        },
        Err(e) => format!("{dbg} unreadable: {}", short_err(&e)),
    };
    if dynamic {
        if let Some(m) = ctx.param("preempt").filter(|m| !m.is_empty()) {
            return Model {
                model: m.clone(),
                dynamic,
                source: format!("preempt={m} on the command line; {dbg_err}"),
            };
        }
        if let Ok(c) = &ctx.config {
            for (k, m) in [
                ("CONFIG_PREEMPT_NONE", "none"),
                ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
                ("CONFIG_PREEMPT_LAZY", "lazy"),
                ("CONFIG_PREEMPT", "full"),
            ] {
                if c.is_y(k) {
                    return Model {
                        model: m.into(),
                        dynamic,
                        source: format!(
                            "boot default {k}=y in {}, no preempt= on the command line; {dbg_err}",
                            c.source
                        ),
                    };
                }
            }
        }
        return Model {
            model: String::new(),
            dynamic,
            source: format!("PREEMPT_DYNAMIC, but the mode in force is unknown: {dbg_err}"),
        };
    }
    let words: Vec<&str> = version.split_whitespace().collect();
    for (w, m) in [("PREEMPT_LAZY", "lazy"), ("PREEMPT", "full")] {
        if words.contains(&w) {
            return Model {
                model: m.into(),
                dynamic,
                source: format!("{w} in uname -v"),
            };
        }
    }
    if let Ok(c) = &ctx.config
        && c.is_y("CONFIG_PREEMPT_VOLUNTARY")
    {
        return Model {
            model: "voluntary".into(),
            dynamic,
            source: c.source.clone(),
        };
    }
    match &ctx.version {
        Ok(_) => Model {
            model: "none/voluntary".into(),
            dynamic,
            source: "uname -v names no PREEMPT model".into(),
        },
        Err(e) => Model {
            model: String::new(),
            dynamic,
            source: e.clone(),
        },
    }
}

/// "does not exist" / "Operation not permitted (EPERM)" without the path.
fn short_err(e: &std::io::Error) -> String {
    describe_err("", e).trim_start_matches(": ").to_string()
}

fn preemption(src: &dyn Source, ctx: &Ctx) -> Check {
    let c = Check::new(
        AREA,
        "kernel.preemption",
        "preemption model",
        "how soon the kernel lets a woken audio thread run: with 'none' or 'voluntary' a \
         long system call on the same CPU delays it by milliseconds",
    );
    let m = model(src, ctx);
    let c = c.with_data(data_of(&m));
    let found = format!(
        "{}{} ({})",
        if m.model == "rt" {
            "PREEMPT_RT"
        } else {
            &m.model
        },
        if m.dynamic && m.model != "rt" {
            ", PREEMPT_DYNAMIC"
        } else {
            ""
        },
        m.source
    );
    let fix = if m.dynamic {
        let boot = "add preempt=full to the kernel command line (GRUB_CMDLINE_LINUX_DEFAULT in \
                    /etc/default/grub, then update-grub and reboot)";
        if ctx.lockdown.locked == Some(true) {
            boot.to_string()
        } else {
            format!(
                "{boot}, or for a test without reboot: echo full > /sys/kernel/debug/sched/preempt"
            )
        }
    } else {
        "install a kernel with full preemption or PREEMPT_RT (Debian: linux-image-rt-amd64; \
         Ubuntu: linux-lowlatency)"
            .to_string()
    };
    match m.model.as_str() {
        "" => c.na(m.source),
        "rt" | "full" | "lazy" => c.pass(found),
        "voluntary" => c.warn(found, fix),
        _ => c.fail(found, fix),
    }
}

fn threadirqs(ctx: &Ctx) -> Check {
    let c = Check::new(
        AREA,
        "kernel.threadirqs",
        "threaded IRQs",
        "with threadirqs every interrupt handler runs in a kernel thread whose priority can \
         be set, so the sound card's IRQ can be put above the rest (rtirq)",
    );
    if ctx.preempt_rt {
        return c.pass("forced on by PREEMPT_RT");
    }
    let Ok(p) = &ctx.cmdline else {
        return c.na(ctx.cmdline.clone().err().unwrap_or_default());
    };
    if p.iter().any(|w| w == "threadirqs") {
        return c.pass("threadirqs on the kernel command line");
    }
    if let Ok(cfg) = &ctx.config
        && cfg.get("CONFIG_IRQ_FORCED_THREADING") == Some("n")
    {
        return c.fail(
            "off, and the kernel is built without CONFIG_IRQ_FORCED_THREADING",
            "use a kernel with CONFIG_IRQ_FORCED_THREADING=y (all distribution kernels)",
        );
    }
    c.warn(
        "off: threadirqs is not on the kernel command line",
        "add threadirqs to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, run update-grub \
         and reboot",
    )
}

/// kernel.hz's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hz {
    pub hz: u32,
}

fn hz(ctx: &Ctx) -> Check {
    let c = Check::new(
        AREA,
        "kernel.hz",
        "timer frequency",
        "the scheduler tick: RT throttling, time slices and timer-less wake-ups are accounted \
         per tick, so at 250 Hz they can be late by up to 4 ms",
    );
    let cfg = match &ctx.config {
        Ok(c) => c,
        Err(e) => return c.na(e.clone()),
    };
    let Some(v) = cfg.get("CONFIG_HZ") else {
        return c.na(format!("no CONFIG_HZ in {}", cfg.source));
    };
    let Ok(hz) = v.parse::<u32>() else {
        return c.na(format!("CONFIG_HZ={v} in {} is not a number", cfg.source));
    };
    let tickless = if cfg.is_y("CONFIG_NO_HZ_FULL") {
        ", NO_HZ_FULL"
    } else if cfg.is_y("CONFIG_NO_HZ_IDLE") {
        ", NO_HZ_IDLE"
    } else {
        ""
    };
    let found = format!(
        "CONFIG_HZ={hz} (a tick every {:.1} ms{tickless}; from {})",
        1000.0 / hz.max(1) as f64,
        cfg.source
    );
    let c = c.with_data(data_of(Hz { hz }));
    if hz >= 1000 {
        c.pass(found)
    } else {
        c.warn(
            found,
            "a kernel built with CONFIG_HZ_1000 (Debian's -rt and Ubuntu's lowlatency kernels)",
        )
    }
}

fn pi_futex(src: &dyn Source, ctx: &Ctx) -> Check {
    let c = Check::new(
        AREA,
        "kernel.pi_futex",
        "PI mutexes",
        "priority inheritance lets a low-priority thread holding a lock the audio thread \
         needs run at the audio thread's priority; without it, priority inversion",
    );
    let cfg = match &ctx.config {
        Ok(c) => c
            .get("CONFIG_FUTEX_PI")
            .map(|v| format!(" (CONFIG_FUTEX_PI={v})")),
        Err(_) => None,
    }
    .unwrap_or_default();
    match src.pi_futex() {
        Ok(s) => c.pass(format!("work: {s}{cfg}")),
        Err(e @ ProbeError::NotRecorded(_)) => c.na(e.to_string()),
        Err(e) => c.fail(
            format!("{e}{cfg}"),
            "use a kernel built with CONFIG_FUTEX_PI=y (all distribution kernels)",
        ),
    }
}

fn hrtimers(src: &dyn Source, ctx: &Ctx) -> Check {
    let c = Check::new(
        AREA,
        "kernel.hrtimers",
        "high-resolution timers",
        "without them every sleep and timer rounds up to the next tick: a 1 ms audio or \
         clock period becomes 4 ms at 250 Hz",
    );
    let cfg = match &ctx.config {
        Ok(c) => c
            .get("CONFIG_HIGH_RES_TIMERS")
            .map(|v| format!(", CONFIG_HIGH_RES_TIMERS={v}")),
        Err(_) => None,
    }
    .unwrap_or_default();
    match src.clock_res_ns() {
        Ok(1) => c.pass(format!("clock_getres(CLOCK_MONOTONIC) = 1 ns{cfg}")),
        Ok(ns) => c.fail(
            format!("clock_getres(CLOCK_MONOTONIC) = {ns} ns: timers run at tick resolution{cfg}"),
            "use a kernel with CONFIG_HIGH_RES_TIMERS=y, and do not boot with highres=off",
        ),
        Err(e) => c.na(e.to_string()),
    }
}

/// kernel.lockdown's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockdownData {
    pub at_least: Option<String>,
    pub locked: Option<bool>,
    pub mode: Option<String>,
    pub securityfs_mounted: bool,
}

fn lockdown(ctx: &Ctx) -> Check {
    let c = Check::new(
        AREA,
        "kernel.lockdown",
        "kernel lockdown",
        "lockdown (switched on by Secure Boot on many distributions) forbids debugfs even to \
         root: sched features, the preemption mode and the fair server cannot be read or set",
    );
    let l = &ctx.lockdown;
    let fix = format!(
        "boot with lockdown=none / Secure Boot off, or measure settings in a guest kernel \
         (xrunrig run RIG --kernel debian:6.12){}",
        if l.mode.is_none() {
            format!("; see the exact mode with: {CHECK_LOCKDOWN}")
        } else {
            String::new()
        }
    );
    let c = c.with_data(data_of(LockdownData {
        at_least: l.at_least.clone(),
        locked: l.locked,
        mode: l.mode.clone(),
        securityfs_mounted: l.securityfs_mounted,
    }));
    match l.locked {
        Some(false) => c.pass(if l.mode.is_some() {
            l.found.clone()
        } else {
            format!("none: {}", l.found)
        }),
        Some(true) => c.warn(format!("locked down: {}", l.found), fix),
        None => c.na(format!(
            "unknown: {}; check with: {CHECK_LOCKDOWN}",
            l.found
        )),
    }
}
