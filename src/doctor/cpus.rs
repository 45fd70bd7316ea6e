//! CPUs: how many are online, frequency governor, SMT, isolated CPUs, irqbalance.

use super::ctx::Ctx;
use super::source::{Source, read_trim};
use super::{Check, data_of};
use crate::sys::{format_cpu_set, parse_cpu_list};
use serde::{Deserialize, Serialize};

const AREA: &str = "cpus";
const CPU: &str = "/sys/devices/system/cpu";

pub fn checks(src: &dyn Source, ctx: &Ctx) -> Vec<Check> {
    vec![
        online(src, ctx),
        governor(src, ctx),
        smt(src),
        isolated(src, ctx),
        irqbalance(ctx),
    ]
}

/// cpus.online's data: the online CPUs (what rigs pin to), and the present ones that
/// are not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Online {
    pub count: usize,
    pub model: Option<String>,
    pub offline: Vec<usize>,
    pub online: Vec<usize>,
}

fn online(src: &dyn Source, ctx: &Ctx) -> Check {
    let c = Check::new(
        AREA,
        "cpus.online",
        "CPUs",
        "rigs pin threads to given CPUs; the seed scenarios need 4, and an audio thread wants \
         a CPU that the rest of the system leaves alone",
    );
    let on = match &ctx.online {
        Ok(v) => v.clone(),
        Err(e) => return c.na(e.clone()),
    };
    let model = src.read("/proc/cpuinfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    });
    let present = read_trim(src, &format!("{CPU}/present"))
        .ok()
        .and_then(|s| parse_cpu_list(&s).ok())
        .unwrap_or_default();
    let offline: Vec<usize> = present
        .iter()
        .copied()
        .filter(|c| !on.contains(c))
        .collect();
    let found = format!(
        "{} online {}{}",
        on.len(),
        format_cpu_set(&on),
        model
            .as_deref()
            .map_or(String::new(), |m| format!(" ({m})"))
    );
    let c = c.with_data(data_of(Online {
        count: on.len(),
        model,
        offline: offline.clone(),
        online: on,
    }));
    if offline.is_empty() {
        c.pass(found)
    } else {
        c.warn(
            format!("{found}; present but offline: {}", format_cpu_set(&offline)),
            format!(
                "bring them online: echo 1 > {CPU}/cpuN/online (as root) for N in {}",
                format_cpu_set(&offline)
            ),
        )
    }
}

/// One CPU's frequency governor (cpus.governor's data is a list of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Governor {
    pub cpu: usize,
    pub governor: String,
}

fn governor(src: &dyn Source, ctx: &Ctx) -> Check {
    let c = Check::new(
        AREA,
        "cpus.governor",
        "frequency governor",
        "a power-saving governor lowers the clock while the machine looks idle, so an audio \
         callback that suddenly needs the CPU runs slow until it ramps up",
    );
    let cpus = ctx.online.clone().unwrap_or_default();
    let mut govs: Vec<(usize, String)> = Vec::new();
    for n in &cpus {
        if let Ok(g) = read_trim(src, &format!("{CPU}/cpu{n}/cpufreq/scaling_governor")) {
            govs.push((*n, g));
        }
    }
    if govs.is_empty() {
        return c.na(format!(
            "no {CPU}/cpu*/cpufreq: frequency is not under the kernel's control here (a VM, or \
             firmware-managed)"
        ));
    }
    let slow: Vec<String> = govs
        .iter()
        .filter(|(_, g)| g != "performance")
        .map(|(n, g)| format!("cpu{n}={g}"))
        .collect();
    let c = c.with_data(data_of(
        govs.iter()
            .map(|(n, g)| Governor {
                cpu: *n,
                governor: g.clone(),
            })
            .collect::<Vec<_>>(),
    ));
    if slow.is_empty() {
        c.pass(format!("performance on all {} CPUs", govs.len()))
    } else {
        c.warn(
            slow.join(", "),
            "cpupower frequency-set -g performance (package linux-cpupower), or echo \
             performance | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
        )
    }
}

fn smt(src: &dyn Source) -> Check {
    let c = Check::new(
        AREA,
        "cpus.smt",
        "SMT (hyper-threading)",
        "two hardware threads share one core: an audio thread's timing depends on what its \
         sibling runs",
    );
    let active = read_trim(src, &format!("{CPU}/smt/active"));
    let control = read_trim(src, &format!("{CPU}/smt/control")).ok();
    let ctl = control
        .as_deref()
        .map_or(String::new(), |c| format!(" (control: {c})"));
    match active.as_deref() {
        Ok("0") => c.pass(format!("inactive{ctl}")),
        Ok("1") => c.warn(
            format!("active{ctl}"),
            "boot with nosmt, or echo off > /sys/devices/system/cpu/smt/control (as root), or \
             keep the audio thread's sibling idle",
        ),
        Ok(v) => c.na(format!("{CPU}/smt/active reads '{v}'")),
        Err(e) => c.na(e.clone()),
    }
}

/// cpus.isolated's data: as the kernel reports them, and as asked for on its command line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Isolated {
    pub isolated: Option<String>,
    pub isolcpus_param: Option<String>,
    pub nohz_full: Option<String>,
    pub nohz_full_param: Option<String>,
}

fn isolated(src: &dyn Source, ctx: &Ctx) -> Check {
    let c = Check::new(
        AREA,
        "cpus.isolated",
        "isolated CPUs",
        "CPUs kept free of other tasks (isolcpus) and of the tick (nohz_full) give audio \
         threads pinned there fewer interruptions; optional",
    );
    let iso = read_trim(src, &format!("{CPU}/isolated"));
    let nohz = read_trim(src, &format!("{CPU}/nohz_full")).ok();
    let p_iso = ctx.param("isolcpus");
    let p_nohz = ctx.param("nohz_full");
    if iso.is_err() && ctx.cmdline.is_err() {
        return c.na(format!(
            "{}; {}",
            iso.err().unwrap_or_default(),
            ctx.cmdline.clone().err().unwrap_or_default()
        ));
    }
    let show = |s: &Option<String>| match s.as_deref().map(str::trim) {
        None | Some("") | Some("(null)") => "none".to_string(),
        Some(v) => v.to_string(),
    };
    let found = format!(
        "isolated: {}; nohz_full: {}; command line: isolcpus={} nohz_full={}",
        show(&iso.clone().ok()),
        show(&nohz),
        p_iso.as_deref().unwrap_or("-"),
        p_nohz.as_deref().unwrap_or("-")
    );
    c.pass(found).with_data(data_of(Isolated {
        isolated: iso.ok(),
        isolcpus_param: p_iso,
        nohz_full: nohz,
        nohz_full_param: p_nohz,
    }))
}

fn irqbalance(ctx: &Ctx) -> Check {
    let c = Check::new(
        AREA,
        "cpus.irqbalance",
        "irqbalance",
        "irqbalance moves interrupts between CPUs now and then, the sound card's too, so its \
         IRQ may land on the CPU of the audio thread",
    );
    if !ctx.procs_listed {
        return c.na("cannot list processes in /proc");
    }
    let found = ctx.procs_named(&["irqbalance"]);
    match found.first() {
        None => c.pass("not running"),
        Some(p) => c.warn(
            format!("running (pid {})", p.pid),
            "ban the audio CPUs (IRQBALANCE_BANNED_CPULIST in /etc/default/irqbalance) or stop \
             it: systemctl disable --now irqbalance",
        ),
    }
}
