//! Tracing: tracefs mounted and the sched events the trace instrument uses.

use super::ctx::Ctx;
use super::source::{Source, describe_err};
use super::{Check, data_of};
use serde::{Deserialize, Serialize};

const AREA: &str = "tracing";
/// The events the trace instrument enables.
pub const EVENTS: &[&str] = &[
    "sched_switch",
    "sched_wakeup",
    "sched_migrate_task",
    "sched_pi_setprio",
];

pub fn checks(src: &dyn Source, ctx: &Ctx) -> Vec<Check> {
    let (tfs, dir) = tracefs(ctx);
    vec![tfs, sched_events(src, dir.as_deref())]
}

fn tracefs(ctx: &Ctx) -> (Check, Option<String>) {
    let c = Check::new(
        AREA,
        "tracing.tracefs",
        "tracefs",
        "rigs with a trace instrument record sched_switch/sched_pi_setprio events to show \
         why a thread was late (who ran, which boost, which migration)",
    );
    if let Some(dir) = ctx.mount_of("tracefs") {
        return (c.pass(format!("mounted at {dir}")), Some(dir));
    }
    if let Err(e) = &ctx.mounts {
        return (c.na(e.clone()), None);
    }
    // debugfs/tracing would mount tracefs on first access (an automount): the doctor
    // changes nothing, so it does not look there.
    let via_debugfs = ctx.mount_of("debugfs").map_or(String::new(), |d| {
        format!("; {d}/tracing would mount it on first access")
    });
    let known = ctx.filesystems.as_ref().map(|f| {
        f.lines()
            .any(|l| l.split_whitespace().last() == Some("tracefs"))
    });
    match known {
        Ok(true) => (
            c.warn(
                format!("not mounted (the kernel has tracefs){via_debugfs}"),
                "mount -t tracefs none /sys/kernel/tracing (as root; the doctor mounts nothing itself)",
            ),
            None,
        ),
        Ok(false) => (
            c.fail(
                "the kernel has no tracefs (not in /proc/filesystems)",
                "a kernel with CONFIG_FTRACE and CONFIG_EVENT_TRACING (all distribution kernels)",
            ),
            None,
        ),
        Err(e) => (c.na(format!("not mounted; {e}")), None),
    }
}

/// tracing.sched_events' data: the events directory, how many sched events it has and
/// which of `EVENTS` it lacks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchedEvents {
    pub count: usize,
    pub dir: String,
    pub missing: Vec<String>,
}

fn sched_events(src: &dyn Source, dir: Option<&str>) -> Check {
    let c = Check::new(
        AREA,
        "tracing.sched_events",
        "sched trace events",
        "the trace instrument needs these events to derive runtime intervals, migrations and \
         PI boosts",
    );
    let Some(dir) = dir else {
        return c.na("tracefs is not mounted");
    };
    let ev = format!("{dir}/events/sched");
    let have = match src.list(&ev) {
        Ok(v) => v,
        Err(e) => {
            return c.fail(
                describe_err(&ev, &e),
                "a kernel with CONFIG_EVENT_TRACING; run as root",
            );
        }
    };
    let missing: Vec<&str> = EVENTS
        .iter()
        .copied()
        .filter(|e| !have.iter().any(|h| h == e))
        .collect();
    let n = have.iter().filter(|h| h.starts_with("sched_")).count();
    let c = c.with_data(data_of(SchedEvents {
        count: n,
        dir: ev.clone(),
        missing: missing.iter().map(|m| m.to_string()).collect(),
    }));
    if missing.is_empty() {
        c.pass(format!("{ev}: {n} events, including {}", EVENTS.join(", ")))
    } else {
        c.fail(
            format!("{ev}: missing {}", missing.join(", ")),
            "a newer kernel (sched_pi_setprio needs 4.18+)",
        )
    }
}
